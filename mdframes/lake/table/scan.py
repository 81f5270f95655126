"""Reading one version's stored rows: three scan paths (the few row groups some symbols need,
every file through kept-open handles, an Arrow dataset for many files) over a cache of opened
data files, and the probes that name a listed file that cannot be read."""

from __future__ import annotations

import datetime as dt
import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from ..._threads import shared_pool, threads
from ...errors import LakeDamagedError
from ..store.faults import damaged, unreachable
from .frames import arrow_type, schema_of
from .log import TableVersion
from .order import dictionary_key
from .place import TablePlace
from .sidecar import Sidecar

__all__ = ["StoredRecords", "RowFilter", "Published", "plain_text"]

# Data files a dataset keeps open for reads: file descriptors are few (256 by default on
# macOS); a version of more files is read whole through an Arrow dataset, which opens each
# file only while it reads it.
_OPEN_FILES = 64
_FOOTERS = 4096  # parsed footers kept per dataset (a few kB each)
# From this many files on, a read opens and reads them in _THREADS threads (the caller's
# and the process's pool's, mdframes._threads.shared_pool).
_PARALLEL = 8
_THREADS = 4
# From this many files on, a read of some symbols reads them side by side (_each): a warm
# one-symbol read after many syncs is mostly a few files' fixed costs, ~0.3 ms each.
_SIDE_BY_SIDE = 2
# Reads of at most this many rows of a file (a daily sync's) are kept decoded with its open
# handle, at most _KEPT_READS (column sets) a file: at most ~16 MB for _OPEN_FILES files of
# 16 columns, a few kB a file in practice.
_KEEP_ROWS = 1024
_KEPT_READS = 2
_T = TypeVar("_T")


@dataclass(frozen=True)
class RowFilter:
    """A read's row conditions: ``bounds``, each ``(column, "ge" | "le", Arrow scalar)``,
    and ``rest``, an expression for anything else (None: nothing), all to hold. Rows read
    directly are filtered by masks: filtering by an expression sets up an Acero plan per
    read (a fixed cost of each dataset's read in a short panel)."""

    bounds: tuple[tuple[str, str, Any], ...] = ()
    rest: Any = None

    @property
    def expression(self) -> Any:
        """The same conditions as one expression (for a dataset scan)."""
        out = self.rest
        for name, op, value in self.bounds:
            cond = getattr(pc.field(name), f"__{op}__")(value)
            out = cond if out is None else out & cond
        return out

    def mask(self, table: pa.Table) -> Any:
        """The rows of ``table`` within ``bounds`` (null where a value is null); None when
        there is no bound."""
        mask = None
        for name, op, value in self.bounds:
            met = (pc.greater_equal if op == "ge" else pc.less_equal)(table[name], value)
            mask = met if mask is None else pc.and_(mask, met)
        return mask

    def apply(self, table: pa.Table, mask: np.ndarray | None = None) -> pa.Table:
        """The rows of ``table`` that meet every condition (a null meets none) and ``mask``
        (a read's other condition: one cut for both, :func:`_kept`)."""
        bounds = self.mask(table)
        if bounds is not None:  # null: dropped, as an expression's filter drops it
            met = pc.fill_null(bounds, False).to_numpy(zero_copy_only=False)
            mask = met if mask is None else mask & met
        if mask is not None:
            table = _kept(table, mask)
        return table.filter(self.rest) if self.rest is not None else table


def _kept(table: pa.Table, mask: np.ndarray) -> pa.Table:
    """The rows of ``table`` where ``mask`` is true. Where they lie in no more runs than the
    table has chunks (one symbol's rows in each row group read: they are stored together),
    they are sliced out, not copied: a filter of every column cost a one-symbol read of 16k
    rows ~170 us."""
    if mask.all():
        return table
    edges = np.flatnonzero(mask[1:] != mask[:-1]) + 1
    chunks = table.column(0).num_chunks if table.num_columns else 0
    if len(edges) > 2 * chunks:
        return table.filter(pa.array(mask))
    bounds = [0, *edges.tolist(), len(mask)]
    pieces = [table.slice(a, b - a) for a, b in zip(bounds, bounds[1:], strict=False) if mask[a]]
    return pa.concat_tables(pieces) if pieces else table.slice(0, 0)


@dataclass(frozen=True)
class Published:
    """A read of the rows public from ``since`` on (a :func:`time_number` of ``column``, the
    dataset's :attr:`~mdframes.registry.Dataset.read_bound`): a row group whose rows have
    ``column`` before ``since``, or null with the time column (the deadline's event) before
    ``due_since`` (their legal deadline before ``since``; None: a null is not judged),
    holds none of them. So does one whose rows all became public at or after ``after``
    (a panel's read: rows public after its last date never enter it; None: no such
    bound), their anchors then or later, or null with the time column (the deadline's
    event) at or after ``due_after`` (a legal deadline is never before its event; None:
    a null is not judged). A row group is skipped only when it holds
    first versions alone (``_version`` 1): a later version skipped could leave an earlier
    one of its record to stand as the latest; an earlier one skipped never does."""

    column: str
    since: int
    due_since: int | None = None
    after: int | None = None
    due_after: int | None = None

    def skips(self, anchors: tuple[Any, Any, Any], times: tuple[Any, Any], version: Any) -> bool:
        """Whether a row group of ``anchors`` (least, greatest, null count), ``times`` (the
        time column's least and greatest) and highest ``version`` (statistics; None:
        unknown) holds no row this read needs."""
        low, high, nulls = anchors
        if version != 1:
            return False
        if self.after is not None and low is not None and low >= self.after:
            earliest = times[0]
            if nulls == 0 or (
                self.due_after is not None and earliest is not None and earliest >= self.due_after
            ):
                return True
        if high is None or high >= self.since:
            return False
        if nulls == 0:
            return True
        latest = times[1]
        return self.due_since is not None and latest is not None and latest < self.due_since


@dataclass
class _Groups:
    """One data file's row groups as its footer says (parsed once, :meth:`footer`): symbol
    ranges, time ranges (as :func:`time_number`s), highest ``_version`` and the read bound's
    (anchor's) ranges and nulls (statistics); opened, its handle."""

    meta: Any  # pyarrow.parquet.FileMetaData
    texts: list[str]  # text columns, read as their dictionaries
    names: set[str]
    ranges: list[tuple[Any, Any]]
    versions: list[Any]
    times: list[tuple[Any, Any]]
    anchors: list[tuple[Any, Any, Any]]
    rows: list[int]
    handle: Any = None  # pyarrow.parquet.ParquetFile, opened once (a listed file never changes)
    # Small reads of the file, decoded (see read); shared with its picks.
    kept: dict[tuple[Any, ...], pa.Table] = field(default_factory=dict)
    picked: list[int] = field(default_factory=list)

    def read(self, columns: list[str], use_threads: bool, groups: list[int] | None) -> pa.Table:
        """``columns`` of row groups ``groups`` (None: all). A read of a few rows (a daily
        sync's file) is decoded once and kept while the file is open (a listed file never
        changes): its cost is ~40 us a column whatever its rows, most of a warm one-symbol
        read after many syncs."""
        every = range(len(self.rows)) if groups is None else groups
        if sum(self.rows[i] for i in every) > _KEEP_ROWS:
            return self._decoded(columns, use_threads, groups)
        key = (None if groups is None else tuple(groups), tuple(columns))
        table = self.kept.get(key)
        if table is None:
            table = self._decoded(columns, use_threads, groups)
            if len(self.kept) >= _KEPT_READS:
                self.kept.clear()
            self.kept[key] = table
        return table

    def conformed(
        self, fields: list[pa.Field], use_threads: bool, groups: list[int] | None = None
    ) -> pa.Table:
        """The ``fields`` of row groups ``groups`` (None: all), in their declared types (a
        column the file lacks: nulls)."""
        return _conform(
            self.read([f.name for f in fields if f.name in self.names], use_threads, groups), fields
        )

    def _decoded(self, columns: list[str], use_threads: bool, groups: list[int] | None) -> Any:
        if groups is None:
            return self.handle.read(columns=columns, use_threads=use_threads)
        return self.handle.read_row_groups(groups, columns=columns, use_threads=use_threads)

    def in_order(self) -> bool:
        """Whether the picked row groups (all, when none is picked) hold ascending symbol
        ranges: read one after another, their rows are in stored order. A file laid out in
        time slices (:func:`~.order.time_sliced`) holds each block's symbols once per slice."""
        groups = self.picked or range(len(self.ranges))
        ranges = [self.ranges[i] for i in groups]
        return all(
            a[1] is not None and b[0] is not None and a[1] <= b[0]
            for a, b in zip(ranges, ranges[1:], strict=False)
        )

    @classmethod
    def footer(cls, path: str, fs: Any, time: str | None, anchor: str | None = None) -> _Groups:
        import pyarrow.parquet as pq

        meta = pq.read_metadata(path, filesystem=fs)
        schema = meta.schema.to_arrow_schema()
        names = schema.names
        at = {c: names.index(c) for c in ("symbol", "_version", time, anchor) if c in names}

        def minmax(group: Any, column: str | None) -> Any:
            """The column's statistics in the row group where they hold a min and max."""
            stats = group.column(at[column]).statistics if column in at else None
            return stats if stats is not None and stats.has_min_max else None

        ranges: list[tuple[Any, Any]] = []
        versions: list[Any] = []
        times: list[tuple[Any, Any]] = []
        anchors: list[tuple[Any, Any, Any]] = []
        for i in range(meta.num_row_groups):
            group = meta.row_group(i)
            symbol, version = minmax(group, "symbol"), minmax(group, "_version")
            when, bound = minmax(group, time), minmax(group, anchor)
            if bound is not None and bound.has_null_count:
                anchors.append((time_number(bound.min), time_number(bound.max), bound.null_count))
            else:
                anchors.append((None, None, None))
            times.append(
                (None, None) if when is None else (time_number(when.min), time_number(when.max))
            )
            ranges.append((None, None) if symbol is None else (symbol.min, symbol.max))
            versions.append(None if version is None else version.max)
        texts = [f.name for f in schema if pa.types.is_string(f.type)]
        rows = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        return cls(meta, texts, set(names), ranges, versions, times, anchors, rows)


def time_number(value: Any) -> int | None:
    """A date as days since 1970-01-01, a time as microseconds since then (UTC; a naive
    one read as UTC): how row groups' time statistics and a read's bounds are compared."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return (value - _EPOCH) // dt.timedelta(microseconds=1)
    if isinstance(value, dt.date):
        return (value - _EPOCH.date()).days
    return None


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class StoredRecords:
    """The stored rows of a dataset's table versions, typed by its dtype record."""

    def __init__(self, place: TablePlace, sidecar: Sidecar) -> None:
        self.place = place
        self.sidecar = sidecar
        self._datasets: tuple[Any, pads.Dataset] | None = None
        self._handles: OrderedDict[str, _Groups] = OrderedDict()
        self._footers: OrderedDict[str, _Groups] = OrderedDict()
        self._last_picked: tuple[Any, list[_Groups]] | None = None

    @property
    def _waits(self) -> bool:
        """Whether a file's open or read mostly waits for an object store's answer."""
        return not self.place.storage.location.local

    def stored_schema(self) -> pa.Schema:
        manifest = self.sidecar.manifest
        assert manifest is not None
        return schema_of(manifest, self.place.mode.meta, stored=True)

    def keep_listed(self, snap: TableVersion) -> None:
        """Close the files a compaction or repair took out of the table, so that a vacuum
        that deletes them later frees their disk space (an open file keeps it)."""
        listed = set(snap.files)
        with self.place.lock:
            for uri in [u for u in self._handles if u not in listed]:
                del self._handles[uri]
            for uri in [u for u in self._footers if u not in listed]:
                del self._footers[uri]

    def scan(
        self,
        snap: TableVersion | None,
        filter: Any = None,
        columns: list[str] | None = None,
        symbols: list[str] | None = None,
        coded: bool = False,
        span: tuple[Any, Any] | None = None,
        published: Published | None = None,
    ) -> pa.Table:
        """Stored rows of one version (every version of each record), typed by the record.
        Columns the record knows but no row has set come back as nulls. ``filter``: an
        expression or a :class:`RowFilter`. ``symbols``: only rows of these symbols, read
        from the row groups whose statistics may hold them (files are sorted by symbol, or
        in time slices of blocks of symbols, so a chunk of a panel's symbols decodes its
        share of the table, not all of it). ``coded``: text may come as its
        dictionary, for a caller that filters and orders rows before it decodes them
        (:func:`plain_text`): moving codes costs less than moving text. ``span``: the
        least and greatest :func:`time_number` of the dataset's time column that ``filter``
        keeps (None: no bound), so that row groups wholly outside are not read.
        ``published``: row groups of ``symbols`` that hold no row public from a point are
        not read either (:class:`Published`; the rows of those read are all returned)."""
        manifest = self.sidecar.manifest
        meta = self.place.mode.meta
        full = schema_of(manifest, meta) if manifest is not None else pa.schema([])
        wanted = list(columns) if columns is not None else full.names
        schema = self.stored_schema() if manifest is not None else pa.schema([])
        stored = [c for c in wanted if c in schema.names]
        rows = filter if isinstance(filter, RowFilter) else None
        if rows is not None:
            filter = rows.expression
        if snap is None or not snap.files or manifest is None:
            table = pa.schema([full.field(c) for c in stored]).empty_table()
        else:
            try:
                if symbols and "symbol" in schema.names:
                    table = self._scan_groups(
                        snap, schema, symbols, rows or filter, stored, coded, span, published
                    )
                elif filter is None and len(snap.files) <= _OPEN_FILES:
                    table = self._scan_files(snap, schema, stored, coded)
                else:
                    table = self._dataset(snap, schema).to_table(
                        filter=filter, columns=stored, use_threads=threads() > 1
                    )
            except (OSError, pa.ArrowInvalid) as exc:
                raise self.which_damaged(snap, exc) from None
        for i, name in enumerate(wanted):
            if name not in table.column_names:
                col = manifest.column(name) if manifest is not None else None
                kind = col.kind if col is not None else "null"
                table = table.add_column(i, name, pa.nulls(table.num_rows, arrow_type(kind)))
        return table.select(wanted)

    def _dataset(self, snap: TableVersion, schema: pa.Schema) -> pads.Dataset:
        """The Arrow dataset of one version's files, kept while that version is the latest:
        its files' footers are then read once, not per read."""
        key = (snap.version, tuple(snap.files), schema)
        cached = self._datasets
        if cached is not None and cached[0] == key:
            return cached[1]
        dataset = pads.dataset(
            [self.place.fs_path(f) for f in snap.files],
            schema=schema,
            format="parquet",
            filesystem=self.place.storage.fs,
        )
        self._datasets = (key, dataset)
        return dataset

    def _scan_files(
        self, snap: TableVersion, schema: pa.Schema, stored: list[str], coded: bool = False
    ) -> pa.Table:
        """Every row of the version, file by file through the opened handles (no scanner to
        set up, footers read once per version)."""
        fields = [schema.field(c) for c in stored]
        parts = _each(lambda g: g.conformed(fields, threads() > 1), self._groups(snap), self._waits)
        table = pa.concat_tables(parts) if len(parts) != 1 else parts[0]
        return table if coded else _plain_strings(table, fields)

    def _scan_groups(
        self,
        snap: TableVersion,
        schema: pa.Schema,
        symbols: list[str],
        filter: Any,
        stored: list[str],
        coded: bool = False,
        span: tuple[Any, Any] | None = None,
        published: Published | None = None,
    ) -> pa.Table:
        """The few row groups that may hold ``symbols`` (by their statistics), read directly:
        for a one-symbol read this skips the dataset scanner's set-up, most of its cost. Only
        ``stored`` columns are read (the filter's among them)."""
        fields = [
            schema.field(c) for c in [*stored, *(["symbol"] if "symbol" not in stored else [])]
        ]
        picked = self._picked(snap, symbols, span, published)
        # Files are read side by side (_each; a file's handle is never shared between
        # threads), and a file of more than two row groups in Arrow's threads too (threads
        # cost more than one group's read): a read of a big file and a later sync's small
        # ones decoded the big one on one thread while the others had nothing to do.
        arrow_threads = threads() > 1
        parts = _each(
            lambda g: g.conformed(fields, arrow_threads and len(g.picked) > 2, g.picked),
            picked,
            self._waits,
            least=_SIDE_BY_SIDE,
        )
        if not parts:
            return pa.schema(fields).empty_table()
        table = pa.concat_tables(parts) if len(parts) != 1 else parts[0]
        # A mask, not an expression: filtering by an expression sets up an Acero plan, which
        # cost a one-symbol read a fifth of its time. The symbols' and the bounds' masks
        # filter once, and not at all where they keep every row (a panel of a lake's every
        # symbol over row groups wholly within its window).
        mine = _symbol_mask(table["symbol"], symbols)
        if isinstance(filter, RowFilter):
            table = filter.apply(table, mine)
        else:
            table = _kept(table, mine)
            if filter is not None:
                table = table.filter(filter)
        return (table if coded else _plain_strings(table, fields)).select(stored)

    def in_order(
        self,
        snap: TableVersion | None,
        symbols: list[str] | None,
        span: tuple[Any, Any] | None,
        across: bool = False,
        published: Published | None = None,
    ) -> bool:
        """Whether the row groups a read of ``symbols`` (None: all) over ``span`` reads hold
        ascending symbol ranges file by file (the log tells whether the files do among them):
        one symbol's rows always do, every file's row groups do unless laid out in time
        slices. ``across`` (a read of ``symbols``): whether they also do from one file's
        groups to the next's, no symbol in two files: the rows then come in stored order
        although the version's files overlap (a later sync's file holds recent dates only,
        so a read of older months often reads one file)."""
        if across and not symbols:
            return False
        if snap is None or not snap.files or (not across and symbols and len(symbols) == 1):
            return True
        try:
            groups = self._picked(snap, symbols, span, published) if symbols else self._groups(snap)
        except (OSError, pa.ArrowInvalid) as exc:
            raise self.which_damaged(snap, exc) from None
        if not all(g.in_order() for g in groups):
            return False
        if not across:
            return True
        for a, b in zip(groups, groups[1:], strict=False):
            high, low = a.ranges[a.picked[-1]][1], b.ranges[b.picked[0]][0]
            if high is None or low is None or not high < low:
                return False
        return True

    def revised(
        self,
        snap: TableVersion | None,
        symbols: list[str] | None,
        span: tuple[Any, Any] | None = None,
        published: Published | None = None,
    ) -> bool:
        """Whether some row a read of ``symbols`` (None: all) may see has a second version,
        by statistics alone (row groups for a few symbols, the log's file statistics else).
        When none has, the latest versions are simply all rows, and a read needs neither
        ``_version`` nor ``_n``: a third of a full read's decoding."""
        if snap is None or not snap.files or "_version" not in self.place.mode.meta:
            return False
        if symbols:
            try:
                # Opens files: missing is damage.
                groups = self._picked(snap, symbols, span, published)
            except (OSError, pa.ArrowInvalid) as exc:
                raise self.which_damaged(snap, exc) from None
            return any(
                v is None or v > 1 for g in groups for v in (g.versions[i] for i in g.picked)
            )
        stats = snap.stats
        if stats is None or "max._version" not in stats.column_names:
            return True
        highest = stats["max._version"].to_pylist()
        return any(v is None or v > 1 for v in highest)

    def _picked(
        self,
        snap: TableVersion,
        symbols: list[str],
        span: tuple[Any, Any] | None = None,
        published: Published | None = None,
    ) -> list[_Groups]:
        """Per file, the row groups whose symbol range may hold one of ``symbols``, whose
        time range may meet ``span`` and that ``published`` does not skip (the last answer
        kept: a read asks more than once)."""
        key = (snap.version, tuple(snap.files), tuple(symbols), span, published)
        last = self._last_picked
        if last is not None and last[0] == key:
            return last[1]
        wanted = sorted(symbols)
        low, high = span if span is not None else (None, None)
        out = []
        for group in self._groups(snap, symbols):
            picked = [
                i
                for i, (lo, hi) in enumerate(group.ranges)
                if _may_hold(wanted, lo, hi)
                and _may_meet(group.times[i], low, high)
                and not (
                    published is not None
                    and published.skips(group.anchors[i], group.times[i], group.versions[i])
                )
            ]
            if picked:
                out.append(replace(group, picked=picked))  # kept: shared
        self._last_picked = (key, out)
        return out

    def _groups(self, snap: TableVersion, symbols: list[str] | None = None) -> list[_Groups]:
        """The version's files (those whose log statistics may hold ``symbols``), each opened
        with its row groups' symbol ranges and highest ``_version``."""
        uris = snap.files
        stats = snap.stats
        if symbols and stats is not None and "min.symbol" in stats.column_names:
            wanted = sorted(symbols)
            lows, highs = stats["min.symbol"].to_pylist(), stats["max.symbol"].to_pylist()
            paths = [self.place.file_uri(p) for p in stats["path"].to_pylist()]
            keep = {
                uri
                for uri, lo, hi in zip(paths, lows, highs, strict=True)
                if _may_hold(wanted, lo, hi)
            }
            uris = [u for u in uris if u in keep]
        return _each(self._opened, uris, self._waits)

    def _opened(self, uri: str) -> _Groups:
        """One data file, opened once and kept open (a file never changes once listed): at
        most _OPEN_FILES per dataset, the least recently read closed first. Its footer is
        kept longer (_FOOTERS): a file closed to spare descriptors reopens without reading
        it again, so a version of more files than that is not read from scratch each time."""
        import pyarrow.parquet as pq

        lock = self.place.lock
        with lock:
            got = self._handles.get(uri)
            if got is not None:
                self._handles.move_to_end(uri)
                return got
            footer = self._footers.get(uri)
        path = self.place.fs_path(uri)
        fs = self.place.storage.fs
        if footer is None:
            manifest = self.sidecar.manifest
            time = manifest.time if manifest is not None else None
            footer = _Groups.footer(path, fs, time, self.place.ds.read_bound)
        # Text read as its dictionary (see _plain_strings); the footer is parsed once.
        handle = pq.ParquetFile(
            path, filesystem=fs, metadata=footer.meta, read_dictionary=footer.texts or None
        )
        opened = replace(footer, handle=handle, kept={})
        with lock:
            self._handles[uri] = opened
            while len(self._handles) > _OPEN_FILES:
                self._handles.popitem(last=False)  # closed when its last reader lets go
            self._footers[uri] = footer
            self._footers.move_to_end(uri)
            while len(self._footers) > _FOOTERS:
                self._footers.popitem(last=False)
        return opened

    def which_damaged(self, snap: TableVersion, exc: BaseException) -> LakeDamagedError:
        """The error naming the listed file a failed read could not read."""
        place = self.place
        for uri in snap.files:
            problem = self.probe(uri)
            if problem:
                return damaged(place.ds.name, place.name(uri), problem)
        return damaged(place.ds.name, place.folder, place.storage.scrub(exc))

    def probe(self, uri: str, rows: int | None = None, size: int | None = None) -> str | None:
        """Why a listed data file cannot be read, or is not the file the log lists with
        ``rows`` and ``size`` bytes (None: it reads)."""
        import pyarrow.fs as pafs
        import pyarrow.parquet as pq

        path = self.place.fs_path(uri)
        fs = self.place.storage.fs
        try:
            info = fs.get_file_info(path)
            if info.type == pafs.FileType.NotFound:
                return "missing"
            if size is not None and info.size is not None and info.size != size:
                return f"holds {info.size} bytes where the log says {size}"
            meta = pq.read_metadata(path, filesystem=fs)
        except FileNotFoundError:
            return "missing"
        except (OSError, pa.ArrowInvalid) as exc:
            gone = unreachable(self.place.storage.location, exc)
            if gone is not None:  # the store did not answer: says nothing of the file
                raise gone from None
            return f"unreadable: {exc}"
        if rows is not None and meta.num_rows != rows:
            return f"holds {meta.num_rows} rows where the log says {rows}"
        return None

    def first_fetched(self, snap: TableVersion | None) -> dt.datetime | None:
        """When the dataset's oldest stored row was fetched (the log's statistics)."""
        if snap is None or not snap.files:
            return None
        stats = snap.stats
        if stats is not None and "min._fetched_at" in stats.column_names:
            values = [v for v in stats["min._fetched_at"].to_pylist() if v is not None]
            if len(values) == len(snap.files):
                return min(values)
        return pc.min(self.scan(snap, columns=["_fetched_at"])["_fetched_at"]).as_py()


def _each(
    fn: Callable[[Any], _T], items: list[Any], waits: bool = False, least: int | None = None
) -> list[_T]:
    """``fn`` of each item, in order; from ``least`` items on (default _PARALLEL) in a few
    threads (one version's small files after many syncs: each open or read is mostly I/O
    and Parquet decoding outside the GIL, and on one thread they were read one after
    another). Local files are decoded in this task's share of the cores
    (:func:`~mdframes._threads.threads`); ``waits`` (an object store): threads that mostly
    wait for answers, not counted against it. The calling thread takes items too, and the
    others come from the process's pool: no thread started per call, one hand-off per
    helper (a one-symbol read of four files)."""
    count = min(_THREADS if waits else threads(_THREADS), len(items))
    if len(items) < (_PARALLEL if least is None else max(least, 2)) or count < 2:
        return [fn(item) for item in items]
    import contextvars

    out: list[Any] = [None] * len(items)
    failed: dict[int, Exception] = {}
    queue = iter(range(len(items)))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                i = next(queue, None)
            if i is None:
                return
            try:
                out[i] = fn(items[i])
            except Exception as exc:  # raised below, the first item's first
                failed[i] = exc

    pool = shared_pool()
    # Each helper in this task's context (its share).
    helpers = [pool.submit(contextvars.copy_context().run, work) for _ in range(count - 1)]
    work()
    for helper in helpers:
        if not helper.cancel():  # not started (the pool busy elsewhere): nothing left for it
            helper.result()
    if failed:
        raise failed[min(failed)]
    return out


def _conform(part: pa.Table, fields: list[pa.Field]) -> pa.Table:
    """A file's columns in ``fields`` order and types (text may stay dictionary-encoded for
    _plain_strings), null where an older file lacks a column."""
    if part.schema.equals(_as_read(tuple(fields)), check_metadata=True):
        return part  # as a file holding every column reads them: ~70 us a file otherwise
    arrays = []
    for f in fields:
        if f.name not in part.column_names:
            arrays.append(pa.chunked_array([pa.nulls(part.num_rows, f.type)]))
            continue
        col = part[f.name]
        if col.type != f.type and not (
            pa.types.is_dictionary(col.type) and col.type.value_type == f.type
        ):
            col = col.cast(f.type)
        arrays.append(col)
    names = [f.name for f in fields]
    return pa.Table.from_arrays(arrays, names=names)


@functools.lru_cache(maxsize=256)
def _as_read(fields: tuple[pa.Field, ...]) -> pa.Schema:
    """The schema of ``fields`` as read from a file that holds them all in their types (text
    as its dictionary, :attr:`_Groups.texts`)."""
    return pa.schema(
        [
            pa.field(
                f.name, pa.dictionary(pa.int32(), f.type) if pa.types.is_string(f.type) else f.type
            )
            for f in fields
        ]
    )


def plain_text(table: pa.Table) -> pa.Table:
    """``table`` with the text a ``scan(coded=True)`` left as its dictionary decoded."""
    fields = [
        f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f
        for f in table.schema
    ]
    return _plain_strings(table, fields)


def _plain_strings(table: pa.Table, fields: list[pa.Field]) -> pa.Table:
    """Text columns decoded from their dictionaries. Reading text through its dictionary and
    expanding it in a thread per column takes about 60% of the time of Parquet's own string
    decoding (a company name repeated on every row of its symbol: most of a full read)."""
    coded = [i for i, c in enumerate(table.columns) if pa.types.is_dictionary(c.type)]
    if not coded:
        return table.cast(pa.schema(fields)) if table.schema != pa.schema(fields) else table

    def plain(i: int) -> pa.ChunkedArray:
        return table.column(i).cast(fields[i].type)

    if len(coded) > 1 and table.num_rows > 100_000 and threads() > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(len(coded), threads())) as pool:
            decoded = dict(zip(coded, pool.map(plain, coded), strict=True))
    else:
        decoded = {i: plain(i) for i in coded}
    arrays = [decoded.get(i, c) for i, c in enumerate(table.columns)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _symbol_mask(column: pa.ChunkedArray, symbols: list[str]) -> np.ndarray:
    """Rows of ``symbols``. Text read as its dictionary is matched by code: ``is_in`` on a
    dictionary column decodes it first, 30 times slower for one symbol's row group."""
    wanted = None
    members = set(symbols)
    masks = []
    # A row group's dictionary (its chunks share it): which values are wanted, and where.
    known: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}
    for chunk in column.chunks:
        if pa.types.is_dictionary(chunk.type):
            # A row group's dictionary holds its few symbols: looked up in a set, not an
            # is_in that hashes every wanted symbol again for each of a read's row groups.
            dictionary = chunk.dictionary
            key = dictionary_key(dictionary)
            got = known.get(key)
            if got is None:
                member = np.fromiter(
                    (v in members for v in dictionary.to_pylist()), bool, len(dictionary)
                )
                got = known[key] = (member, np.flatnonzero(member))
            member, hits = got
            if len(hits) == len(member):
                masks.append(np.ones(len(chunk), bool))
            elif len(hits) == 0:
                masks.append(np.zeros(len(chunk), bool))
            else:
                indices = chunk.indices.to_numpy(zero_copy_only=False)  # never null
                # One symbol's code compared: a lookup of every row's costs ten times more.
                masks.append(indices == hits[0] if len(hits) == 1 else member[indices])
        else:
            if wanted is None:
                wanted = pa.array(symbols, pa.string())
            masks.append(pc.is_in(chunk, value_set=wanted).to_numpy(zero_copy_only=False))
    return np.concatenate(masks) if masks else np.zeros(0, bool)


def _may_hold(wanted: list[str], lo: Any, hi: Any) -> bool:
    """Whether a range of symbols ``lo..hi`` (statistics; None: unknown) may hold one of the
    sorted ``wanted``: the first wanted at or after ``lo`` is in range, or none is."""
    import bisect

    if lo is None or hi is None:
        return True
    at = bisect.bisect_left(wanted, lo)
    return at < len(wanted) and wanted[at] <= hi


def _may_meet(times: tuple[Any, Any], low: Any, high: Any) -> bool:
    """Whether a row group's time range (statistics; None: unknown) may meet ``low..high``
    (None: unbounded). A null time meets no bound, and statistics leave nulls out."""
    lo, hi = times
    if lo is None or hi is None:
        return True
    return (low is None or hi >= low) and (high is None or lo <= high)
