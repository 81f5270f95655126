"""One dataset's Delta table: open a version, append (one commit), its files, the dtype record,
check and repair, compaction and vacuum.

Settings, and why:

- ``delta.checkpointInterval = 10``: a checkpoint every 10 commits keeps the log a reader
  replays short (an append at 301 commits took 13 ms, 26 ms at the default 100).
- ``delta.logRetentionDuration = interval 30 days``: log entries of versions a reader may hold
  are never cleaned from under it (readers pin a version for one call; a month is ample).
- ``delta.deletedFileRetentionDuration = interval 7 days``, and :meth:`DatasetTable.vacuum`
  removes only files that no version of the last ``retain_hours`` (default 168) needs, so a
  reader that started before a compaction keeps reading.
- Data files: zstd, sorted by (filter,) symbol, time and key, in row groups of 16k rows, so
  a one-symbol read skips all but one or two row groups by their statistics. Measured on a
  compacted 3M-row file: one symbol 1.6 ms with 16k-row groups against 5.4 ms with 64k (8k:
  1.1 ms), a full read no slower.
- Every commit carries the Delta application transaction ``mdframes-lake`` numbered from the
  value read when the writer started: a writer that lost its lease while another committed
  finds its commit refused (``CommitFailedError``) and nothing of it becomes visible.
- Data files are never listed from the folder: readers take one version's file list from the
  log, so stray copies and files a compaction retired are never read.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from ..errors import LakeBusyError, LakeDamagedError, MdframesError
from ..registry import Dataset
from .frames import arrow_type, schema_of
from .layout import DELTA_LOG, FORMAT1_MANIFEST, MANIFEST, STATE, Manifest, dir_name, time_column
from .modes import Mode, mode_of
from .storage import Storage, checkpoint

__all__ = [
    "DatasetTable",
    "Snapshot",
    "TABLE_CONFIG",
    "APP_ID",
    "ROW_GROUP",
    "damaged",
    "write_failed",
]

APP_ID = "mdframes-lake"
ROW_GROUP = 16 * 1024
COMPACT_FILE_BYTES = 512 * 1024 * 1024  # a compacted dataset is one file up to this size
TABLE_CONFIG = {
    "delta.checkpointInterval": "10",
    "delta.logRetentionDuration": "interval 30 days",
    "delta.deletedFileRetentionDuration": "interval 7 days",
}


def deltalake_module() -> Any:
    from .._deps import require

    return require("deltalake", "lake", "md.Lake")


def writer_properties() -> Any:
    return deltalake_module().WriterProperties(compression="ZSTD", max_row_group_size=ROW_GROUP)


def damaged(ds: str, file: str, why: Any) -> LakeDamagedError:
    """The error for a lake file that is missing or unreadable."""
    return LakeDamagedError(
        f"{ds}: {file} is missing or unreadable ({why}); run lake.repair() "
        "(or `mdframes lake repair`) to drop what is lost and sync it again",
        dataset=ds,
        file=file,
    )


def write_failed(ds: str, exc: Any) -> MdframesError:
    """A write that the storage refused (a full disk, a lost connection), in one line;
    nothing of it is visible."""
    text = " ".join(str(exc).split())
    return MdframesError(
        f"{ds}: cannot write to the lake ({text}); nothing of this write is visible"
    )


@dataclass
class Snapshot:
    """One table version: its data files (URIs as the log lists them), sizes and row counts."""

    version: int
    files: list[str]
    sizes: list[int] = field(default_factory=list)
    rows: list[int | None] = field(default_factory=list)
    stats: pa.Table | None = None  # the log's add actions (flattened statistics)


# Data files a dataset keeps open for reads: file descriptors are few (256 by default on
# macOS); a version of more files is read whole through an Arrow dataset, which opens each
# file only while it reads it.
_OPEN_FILES = 64


@dataclass
class _Groups:
    """One data file's row groups: symbol ranges and highest ``_version`` (statistics)."""

    handle: Any  # pyarrow.parquet.ParquetFile, opened once (a listed file never changes)
    names: set[str]
    ranges: list[tuple[Any, Any]]
    versions: list[Any]
    picked: list[int] = field(default_factory=list)

    def pick(self, picked: list[int]) -> _Groups:
        return _Groups(self.handle, self.names, self.ranges, self.versions, picked)


class DatasetTable:
    """Read and write one dataset of a lake (its Delta table and the lake's files beside it)."""

    def __init__(self, storage: Storage, ds: Dataset) -> None:
        self.storage = storage
        self.ds = ds
        self.mode: Mode = mode_of(ds)
        self.folder = dir_name(ds.name)
        self.uri = storage.uri(self.folder)
        self._manifest: Manifest | None = None
        self._dt: Any = None  # the readers' table object, refreshed per read
        self._lock = threading.Lock()
        # The writer's own table object, opened when it starts and never refreshed but by its
        # own commits, and the application transaction number it read then: a commit made
        # after another writer's conflicts with it and fails.
        self._writer: Any = None
        self._txn: int | None = None
        self._seen = -1  # the version the cached dtype record was read at
        self._datasets: tuple[Any, pads.Dataset] | None = None
        self._snap: Snapshot | None = None
        self._handles: OrderedDict[str, _Groups] = OrderedDict()
        self._last_picked: tuple[Any, list[_Groups]] | None = None

    @property
    def meta(self) -> tuple[str, ...]:
        return self.mode.meta

    # -- the dtype record and state -------------------------------------------------------------
    @property
    def manifest(self) -> Manifest | None:
        if self._manifest is None:
            raw = self._read(MANIFEST)
            if raw is not None:
                try:
                    self._manifest = Manifest.from_json(raw)
                except MdframesError:
                    raise
                except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
                    raise damaged(
                        self.ds.name, f"{self.folder}/{MANIFEST}", self.storage.scrub(exc)
                    ) from None
        return self._manifest

    def _read(self, name: str) -> bytes | None:
        try:
            return self.storage.read_bytes(self.folder, name)
        except OSError as exc:
            raise damaged(self.ds.name, f"{self.folder}/{name}", self.storage.scrub(exc)) from None

    def new_manifest(self) -> Manifest:
        self._manifest = Manifest(self.ds.name, self.ds.lake, list(self.ds.lake_key), None, [])
        return self._manifest

    def save_manifest(self, manifest: Manifest) -> None:
        if manifest.time is None:
            manifest.time = time_column(self.ds, manifest.names())
        self.storage.write_bytes(manifest.to_json(), self.folder, MANIFEST)
        self._manifest = manifest

    def state(self) -> dict[str, Any]:
        raw = self._read(STATE)
        if raw is None:
            return {"units": {}, "failed": {}}
        try:
            state = json.loads(raw)
            state["units"]  # noqa: B018 - its presence is the check
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise damaged(self.ds.name, f"{self.folder}/{STATE}", self.storage.scrub(exc)) from None
        return dict(state)

    def save_state(self, state: dict[str, Any]) -> None:
        self.storage.write_json(state, self.folder, STATE)

    def is_format1(self) -> bool:
        """A dataset folder of mdframes 0.2 not converted yet (a manifest, no Delta log)."""
        return self._read(FORMAT1_MANIFEST) is not None and not self.has_log()

    def has_log(self) -> bool:
        import pyarrow.fs as pafs

        info = self.storage.fs.get_file_info(self.storage.path(self.folder, DELTA_LOG))
        return info.type == pafs.FileType.Directory

    # -- versions and files ---------------------------------------------------------------------
    def delta(self) -> Any:
        """The opened Delta table, refreshed to its latest version (opened once)."""
        dl = deltalake_module()
        from deltalake.exceptions import DeltaError, TableNotFoundError

        with self._lock:
            try:
                if self._dt is None:
                    self._dt = dl.DeltaTable(self.uri, storage_options=self.storage.delta_options())
                elif not self._at_latest(self._dt.version()):
                    self._dt.update_incremental()
            except TableNotFoundError:
                self._dt = None
                return None
            except (DeltaError, OSError, ValueError) as exc:
                self._dt = None
                raise damaged(
                    self.ds.name, f"{self.folder}/{DELTA_LOG}", self.storage.scrub(exc)
                ) from None
            return self._dt

    def _at_latest(self, version: int) -> bool:
        """Whether ``version`` is still the latest, known without reading the log: commits are
        numbered one after another and each is created only if absent, so on a local disk
        the next number's missing file says so (a stat, not the ~1 ms of a log refresh, which
        a one-symbol read cannot afford). An object store is asked by the refresh itself."""
        if not self.storage.local:
            return False
        name = f"{version + 1:020d}.json"
        return not os.path.exists(self.storage.path(self.folder, DELTA_LOG, name))

    def snapshot(self) -> Snapshot | None:
        """The latest version and its file list (None: no table yet); the list is read from
        the log once per version."""
        table = self.delta()
        if table is None:
            return None
        with self._lock:
            version = table.version()
            if self._snap is not None and self._snap.version == version:
                return self._snap
            actions = pa.table(table.get_add_actions(flatten=True))
        if version != self._seen:  # another writer may have widened the dtype record
            self._manifest, self._seen = None, version
        actions = _in_stored_order(actions, self.mode.cross)
        files = [self._file_uri(p) for p in actions["path"].to_pylist()]
        rows = actions["num_records"].to_pylist() if "num_records" in actions.column_names else []
        self._snap = Snapshot(version, files, actions["size_bytes"].to_pylist(), rows, actions)
        listed = set(files)
        with self._lock:
            # Files a compaction or repair took out of the table: closed now, so that a vacuum
            # that deletes them later frees their disk space (an open file keeps it).
            for uri in [u for u in self._handles if u not in listed]:
                del self._handles[uri]
        return self._snap

    def in_stored_order(self, snap: Snapshot | None) -> bool:
        """Whether reading the version's files one after another gives rows in stored order:
        every file is written sorted (appends, compactions and conversions sort), and the
        log's statistics show the files in order with disjoint symbol (or filter) ranges."""
        if snap is None or len(snap.files) < 2:
            return True
        stats = snap.stats
        key = "_scope" if self.mode.cross else "symbol"
        if stats is None or f"min.{key}" not in stats.column_names:
            return False
        lows, highs = stats[f"min.{key}"].to_pylist(), stats[f"max.{key}"].to_pylist()
        if None in lows or None in highs:
            return False
        return all(highs[i] < lows[i + 1] for i in range(len(lows) - 1))

    def _file_uri(self, path: str) -> str:
        if "://" in path or path.startswith("/"):
            return path
        return f"{self.uri}/{path}"

    def _fs_path(self, uri: str) -> str:
        return uri if self.storage.local else uri.split("://", 1)[1]

    def stored_schema(self) -> pa.Schema:
        assert self.manifest is not None
        return schema_of(self.manifest, self.meta, stored=True)

    def scan(
        self,
        snap: Snapshot | None,
        filter: Any = None,
        columns: list[str] | None = None,
        symbols: list[str] | None = None,
    ) -> pa.Table:
        """Stored rows of one version (every version of each record), typed by the record.
        Columns the record knows but no row has set come back as nulls. ``symbols``: only
        rows of these symbols, read from the row groups whose statistics may hold them (files
        are sorted by symbol in row groups of 16k rows, so a chunk of a panel's symbols
        decodes its share of the table, not all of it)."""
        manifest = self.manifest
        full = schema_of(manifest, self.meta) if manifest is not None else pa.schema([])
        wanted = list(columns) if columns is not None else full.names
        schema = self.stored_schema() if manifest is not None else pa.schema([])
        stored = [c for c in wanted if c in schema.names]
        if snap is None or not snap.files or manifest is None:
            table = pa.schema([full.field(c) for c in stored]).empty_table()
        else:
            try:
                if symbols and "symbol" in schema.names:
                    table = self._scan_groups(snap, schema, symbols, filter, stored)
                elif filter is None and len(snap.files) <= _OPEN_FILES:
                    table = self._scan_files(snap, schema, stored)
                else:
                    table = self._dataset(snap, schema).to_table(filter=filter, columns=stored)
            except (OSError, pa.ArrowInvalid) as exc:
                raise self._which_damaged(snap, exc) from None
        for i, name in enumerate(wanted):
            if name not in table.column_names:
                col = manifest.column(name) if manifest is not None else None
                kind = col.kind if col is not None else "null"
                table = table.add_column(i, name, pa.nulls(table.num_rows, arrow_type(kind)))
        return table.select(wanted)

    def _dataset(self, snap: Snapshot, schema: pa.Schema) -> pads.Dataset:
        """The Arrow dataset of one version's files, kept while that version is the latest:
        its files' footers are then read once, not per read."""
        key = (snap.version, tuple(snap.files), schema)
        cached = self._datasets
        if cached is not None and cached[0] == key:
            return cached[1]
        dataset = pads.dataset(
            [self._fs_path(f) for f in snap.files],
            schema=schema,
            format="parquet",
            filesystem=self.storage.fs,
        )
        self._datasets = (key, dataset)
        return dataset

    def _scan_files(self, snap: Snapshot, schema: pa.Schema, stored: list[str]) -> pa.Table:
        """Every row of the version, file by file through the opened handles (no scanner to
        set up, footers read once per version)."""
        fields = [schema.field(c) for c in stored]
        parts = [
            _conform(g.handle.read(columns=[f.name for f in fields if f.name in g.names]), fields)
            for g in self._groups(snap)
        ]
        table = pa.concat_tables(parts) if len(parts) != 1 else parts[0]
        return _plain_strings(table, fields)

    def _scan_groups(
        self, snap: Snapshot, schema: pa.Schema, symbols: list[str], filter: Any, stored: list[str]
    ) -> pa.Table:
        """The few row groups that may hold ``symbols`` (by their statistics), read directly:
        for a one-symbol read this skips the dataset scanner's set-up, most of its cost. Only
        ``stored`` columns are read (the filter's among them)."""
        fields = [
            schema.field(c) for c in [*stored, *(["symbol"] if "symbol" not in stored else [])]
        ]
        parts = [
            _conform(
                g.handle.read_row_groups(
                    g.picked,
                    columns=[f.name for f in fields if f.name in g.names],
                    use_threads=len(g.picked) > 4,  # threads cost more than one group's read
                ),
                fields,
            )
            for g in self._picked(snap, symbols)
        ]
        if not parts:
            return pa.schema(fields).empty_table()
        table = pa.concat_tables(parts) if len(parts) != 1 else parts[0]
        # A mask, not an expression: filtering by an expression sets up an Acero plan, which
        # cost a one-symbol read a fifth of its time.
        table = table.filter(_symbol_mask(table["symbol"], symbols))
        table = table.filter(filter) if filter is not None else table
        return _plain_strings(table, fields).select(stored)

    def revised(self, snap: Snapshot | None, symbols: list[str] | None) -> bool:
        """Whether some row a read of ``symbols`` (None: all) may see has a second version,
        by statistics alone (row groups for a few symbols, the log's file statistics else).
        When none has, the latest versions are simply all rows, and a read needs neither
        ``_version`` nor ``_n``: a third of a full read's decoding."""
        if snap is None or not snap.files or "_version" not in self.meta:
            return False
        if symbols:
            try:
                groups = self._picked(snap, symbols)  # opens files: a missing one is damage
            except (OSError, pa.ArrowInvalid) as exc:
                raise self._which_damaged(snap, exc) from None
            return any(
                v is None or v > 1 for g in groups for v in (g.versions[i] for i in g.picked)
            )
        stats = snap.stats
        if stats is None or "max._version" not in stats.column_names:
            return True
        highest = stats["max._version"].to_pylist()
        return any(v is None or v > 1 for v in highest)

    def _picked(self, snap: Snapshot, symbols: list[str]) -> list[_Groups]:
        """Per file, the row groups whose symbol range may hold one of ``symbols`` (the last
        answer kept: a read asks twice, for its versions and for its rows)."""
        key = (snap.version, tuple(snap.files), tuple(symbols))
        if self._last_picked is not None and self._last_picked[0] == key:
            return self._last_picked[1]
        wanted = sorted(symbols)
        out = []
        for group in self._groups(snap, symbols):
            picked = [i for i, (lo, hi) in enumerate(group.ranges) if _may_hold(wanted, lo, hi)]
            if picked:
                out.append(group.pick(picked))
        self._last_picked = (key, out)
        return out

    def _groups(self, snap: Snapshot, symbols: list[str] | None = None) -> list[_Groups]:
        """The version's files (those whose log statistics may hold ``symbols``), each opened
        with its row groups' symbol ranges and highest ``_version``."""
        uris = snap.files
        stats = snap.stats
        if symbols and stats is not None and "min.symbol" in stats.column_names:
            wanted = sorted(symbols)
            lows, highs = stats["min.symbol"].to_pylist(), stats["max.symbol"].to_pylist()
            paths = [self._file_uri(p) for p in stats["path"].to_pylist()]
            keep = {
                uri
                for uri, lo, hi in zip(paths, lows, highs, strict=True)
                if _may_hold(wanted, lo, hi)
            }
            uris = [u for u in uris if u in keep]
        return [self._opened(uri) for uri in uris]

    def _opened(self, uri: str) -> _Groups:
        """One data file, opened once and kept open (a file never changes once listed): at
        most _OPEN_FILES per dataset, the least recently read closed first."""
        import pyarrow.parquet as pq

        with self._lock:
            got = self._handles.get(uri)
            if got is not None:
                self._handles.move_to_end(uri)
                return got
        path = self._fs_path(uri)
        meta = pq.read_metadata(path, filesystem=self.storage.fs)
        schema = meta.schema.to_arrow_schema()
        texts = [f.name for f in schema if pa.types.is_string(f.type)]
        # Text read as its dictionary (see _plain_strings); the footer is parsed once.
        handle = pq.ParquetFile(
            path, filesystem=self.storage.fs, metadata=meta, read_dictionary=texts or None
        )
        names = schema.names
        symbol = names.index("symbol") if "symbol" in names else -1
        version = names.index("_version") if "_version" in names else -1
        ranges: list[tuple[Any, Any]] = []
        versions: list[Any] = []
        for i in range(meta.num_row_groups):
            group = meta.row_group(i)
            stats = group.column(symbol).statistics if symbol >= 0 else None
            if stats is not None and stats.has_min_max:
                ranges.append((stats.min, stats.max))
            else:
                ranges.append((None, None))
            stats = group.column(version).statistics if version >= 0 else None
            versions.append(stats.max if stats is not None and stats.has_min_max else None)
        opened = _Groups(handle, set(names), ranges, versions)
        with self._lock:
            self._handles[uri] = opened
            while len(self._handles) > _OPEN_FILES:
                self._handles.popitem(last=False)  # closed when its last reader lets go
        return opened

    def _which_damaged(self, snap: Snapshot, exc: BaseException) -> LakeDamagedError:
        for uri in snap.files:
            problem = self.probe(uri)
            if problem:
                return damaged(self.ds.name, self._name(uri), problem)
        return damaged(self.ds.name, self.folder, self.storage.scrub(exc))

    def _name(self, uri: str) -> str:
        return f"{self.folder}/{uri.rsplit('/', 1)[-1]}"

    def probe(self, uri: str, rows: int | None = None) -> str | None:
        """Why a listed data file cannot be read (None: it reads)."""
        import pyarrow.fs as pafs
        import pyarrow.parquet as pq

        path = self._fs_path(uri)
        try:
            if self.storage.fs.get_file_info(path).type == pafs.FileType.NotFound:
                return "missing"
            meta = pq.read_metadata(path, filesystem=self.storage.fs)
        except FileNotFoundError:
            return "missing"
        except (OSError, pa.ArrowInvalid) as exc:
            return f"unreadable: {exc}"
        if rows is not None and meta.num_rows != rows:
            return f"holds {meta.num_rows} rows where the log says {rows}"
        return None

    # -- writing (under the writer lease) -------------------------------------------------------
    def begin_writes(self) -> Any:
        """Open the writer's table object and read the application transaction number it
        starts from (once: never refreshed but by its own commits). None: no table yet."""
        dl = deltalake_module()
        from deltalake.exceptions import DeltaError, TableNotFoundError

        try:
            self._writer = dl.DeltaTable(self.uri, storage_options=self.storage.delta_options())
        except TableNotFoundError:
            self._writer, self._txn = None, None
            return None
        except (DeltaError, OSError, ValueError) as exc:
            raise damaged(
                self.ds.name, f"{self.folder}/{DELTA_LOG}", self.storage.scrub(exc)
            ) from None
        self._txn = int(self._writer.transaction_version(APP_ID) or 0)
        return self._writer

    def _writer_table(self) -> Any:
        return self._writer if self._writer is not None else self.begin_writes()

    def _commit_properties(self) -> Any:
        dl = deltalake_module()
        self._txn = (self._txn or 0) + 1
        return dl.CommitProperties(app_transactions=[dl.Transaction(APP_ID, self._txn)])

    def create_table(self, schema: pa.Schema) -> Any:
        dl = deltalake_module()
        from deltalake.exceptions import CommitFailedError, DeltaError

        try:
            dl.DeltaTable.create(
                self.uri,
                schema,
                mode="error",
                configuration=TABLE_CONFIG,
                storage_options=self.storage.delta_options(),
            )
        except (CommitFailedError, DeltaError) as exc:
            if "exists" not in str(exc).lower():
                raise
            # Another writer created it first: its commits count from its own start.
        return self.begin_writes()

    def conform(self, table: pa.Table, current: pa.Schema | None) -> pa.Table:
        """The rows in the stored schema: the table's columns in its order, then new ones."""
        target = self.stored_schema()
        order = [n for n in (current.names if current is not None else []) if n in target.names]
        order += [n for n in target.names if n not in order]
        arrays = []
        for name in order:
            f = target.field(name)
            if name in table.column_names:
                col = table[name]
                arrays.append(col if col.type == f.type else col.cast(f.type))
            else:
                arrays.append(pa.nulls(table.num_rows, type=f.type))
        return pa.Table.from_arrays(arrays, schema=pa.schema([target.field(n) for n in order]))

    def append(self, table: pa.Table, lease: Any) -> None:
        """Commit ``table`` (sorted in stored order) as one Delta commit."""
        dl = deltalake_module()
        delta = self._writer_table()
        if delta is None:
            delta = self.create_table(self.stored_schema())
        current = _arrow_schema(delta)
        table = self.conform(table, current)
        table = table.sort_by(self.mode.sort_keys(self.manifest))  # type: ignore[arg-type]
        merge = "merge" if set(table.column_names) - set(current.names) else None
        props = self._commit_properties()
        lease.assert_held()
        checkpoint("commit-ready")  # the batch is whole in memory; nothing written
        self.commit_write(
            lambda: dl.write_deltalake(
                delta,
                table,
                mode="append",
                schema_mode=merge,
                writer_properties=writer_properties(),
                commit_properties=props,
            )
        )
        checkpoint("committed")  # visible to readers; the state does not say so yet

    def commit_write(self, write: Any) -> None:
        from deltalake.exceptions import CommitFailedError, DeltaError

        try:
            with self._lock:
                write()
        except CommitFailedError as exc:
            self._writer = self._txn = None
            raise LakeBusyError(
                f"{self.ds.name}: another writer committed to this dataset since this one "
                "started (its lease was lost); nothing of this commit is visible "
                f"({self.storage.scrub(exc)})"
            ) from None
        except (DeltaError, OSError) as exc:  # a full disk, a lost connection: one line
            self._writer = self._txn = None
            raise write_failed(self.ds.name, self.storage.scrub(exc)) from None

    def compact(self, lease: Any) -> tuple[int, int]:
        """Rewrite the current version's files as one sorted file set, in one commit.

        Delta's ``optimize.compact`` bin-packs files without sorting them (and ``z_order`` on
        one column is not a plain sort), so the rows are read, sorted in stored order and
        written back as one overwrite commit: the same rows, ordered so that one-symbol
        reads prune by row-group statistics."""
        dl = deltalake_module()
        snap = self.snapshot()
        if snap is None or len(snap.files) <= 1 or self.manifest is None:
            n = 0 if snap is None else len(snap.files)
            return n, n
        delta = self._writer_table()
        if delta.version() != snap.version:  # pragma: no cover - another writer: fail early
            raise LakeBusyError(f"{self.ds.name}: another writer committed during compaction")
        table = self.scan(snap, columns=self.stored_schema().names)
        table = self.conform(table, _arrow_schema(delta))
        table = table.sort_by(self.mode.sort_keys(self.manifest))
        props = self._commit_properties()
        lease.assert_held()
        checkpoint("compact-ready")
        self.commit_write(
            lambda: dl.write_deltalake(
                delta,
                table,
                mode="overwrite",
                writer_properties=writer_properties(),
                target_file_size=COMPACT_FILE_BYTES,
                commit_properties=props,
            )
        )
        checkpoint("compacted")
        after = self.snapshot()
        return len(snap.files), len(after.files) if after is not None else 0

    def vacuum(self, retain_hours: float) -> list[str]:
        """Remove files no version of the last ``retain_hours`` needs (and orphans of killed
        writers and stray copies older than that)."""
        delta = self._writer_table()
        if delta is None:
            return []
        with self._lock:
            return list(
                delta.vacuum(
                    retention_hours=int(retain_hours),
                    enforce_retention_duration=False,
                    dry_run=False,
                    full=True,
                )
            )

    # -- check and repair -----------------------------------------------------------------------
    def problems(self) -> tuple[Snapshot | None, list[tuple[str, str]]]:
        """(version, [(file, problem)]) for what the log cannot vouch for."""
        out: list[tuple[str, str]] = []
        if self.manifest is None and self.is_format1():
            why = "a dataset of lake format 1 (mdframes 0.2) not converted: run lake.upgrade()"
            return None, [(f"{self.folder}/{FORMAT1_MANIFEST}", why)]
        try:
            manifest = self.manifest
            self.state()
            snap = self.snapshot()
        except LakeDamagedError as exc:
            return None, [(exc.file or self.folder, str(exc))]
        if snap is None:
            return None, out
        rows = snap.rows or [None] * len(snap.files)
        for uri, n in zip(snap.files, rows, strict=True):
            problem = self.probe(uri, n)
            if problem:
                out.append((self._name(uri), problem))
        if manifest is not None:
            expected = self.stored_schema()
            stored = _arrow_schema(self._dt)
            for f in stored:
                if f.name in expected.names and expected.field(f.name).type != f.type:
                    out.append(
                        (
                            f"{self.folder}/{MANIFEST}",
                            f"column {f.name} is stored as {f.type}, recorded as "
                            f"{expected.field(f.name).type}",
                        )
                    )
                elif f.name not in expected.names:
                    out.append((f"{self.folder}/{MANIFEST}", f"column {f.name} is not recorded"))
        return snap, out

    def repair(self, lease: Any) -> list[dict[str, Any]]:
        """Drop listed files that are missing or unreadable (one commit), mark their symbols'
        windows not synced; returns what was lost."""
        snap, problems = self.problems()
        if snap is None:
            return []
        stats = snap.stats
        by_name = {self._name(u): i for i, u in enumerate(snap.files)}
        lost = []
        state = self.state()
        for name, problem in problems:
            i = by_name.get(name)
            if i is None:
                continue
            uri = snap.files[i]
            if problem != "missing":  # set aside, so that the log's repair drops it
                path = self._fs_path(uri)
                self.storage.fs.move(
                    path, path.rsplit("/", 1)[0] + "/_damaged-" + path.rsplit("/", 1)[1]
                )
            symbols = self._symbols_of(stats, i, state)
            for unit in list(state["units"]):
                if self._unit_symbol(unit) in symbols or not symbols:
                    del state["units"][unit]
            lost.append(
                {
                    "dataset": self.ds.name,
                    "file": name,
                    "symbols": sorted(symbols),
                    "rows": snap.rows[i] if snap.rows else None,
                }
            )
        if not lost:
            return []
        delta = self._writer_table()
        props = self._commit_properties()
        lease.assert_held()
        self.commit_write(lambda: delta.repair(dry_run=False, commit_properties=props))
        self.save_state(state)
        return lost

    def _unit_symbol(self, unit: str) -> str | None:
        if self.mode.name == "window":
            return unit
        return unit.split(" ", 1)[0] or None

    def _symbols_of(self, stats: pa.Table | None, i: int, state: dict[str, Any]) -> set[str]:
        """The symbols a lost file may have held, from the log's statistics (empty: all)."""
        if stats is None or "min.symbol" not in stats.column_names:
            return set()
        lo, hi = stats["min.symbol"][i].as_py(), stats["max.symbol"][i].as_py()
        if lo is None or hi is None:
            return set()
        known = {self._unit_symbol(u) for u in state["units"]}
        return {s for s in known if s is not None and lo <= s <= hi} | {lo, hi}

    def first_fetched(self, snap: Snapshot | None) -> dt.datetime | None:
        """When the dataset's oldest stored row was fetched (the log's statistics)."""
        if snap is None or not snap.files:
            return None
        stats = snap.stats
        if stats is not None and "min._fetched_at" in stats.column_names:
            values = [v for v in stats["min._fetched_at"].to_pylist() if v is not None]
            if len(values) == len(snap.files):
                return min(values)
        import pyarrow.compute as pc

        return pc.min(self.scan(snap, columns=["_fetched_at"])["_fetched_at"]).as_py()


def _in_stored_order(actions: pa.Table, cross: bool) -> pa.Table:
    """Files ordered by their first rows (the log's statistics): files of separate symbol
    ranges then read back already in stored order, and a read needs no sort."""
    keys = [f"min.{k}" for k in (["_scope"] if cross else []) + ["symbol"]]
    keys = [k for k in keys if k in actions.column_names]
    if not keys or actions.num_rows < 2:
        return actions
    return actions.sort_by([(k, "ascending") for k in keys])


def _arrow_schema(delta: Any) -> pa.Schema:
    return pa.schema(delta.schema().to_arrow())


def _conform(part: pa.Table, fields: list[pa.Field]) -> pa.Table:
    """A file's columns in ``fields`` order and types (text may stay dictionary-encoded for
    _plain_strings), null where an older file lacks a column."""
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


def _plain_strings(table: pa.Table, fields: list[pa.Field]) -> pa.Table:
    """Text columns decoded from their dictionaries. Reading text through its dictionary and
    expanding it in a thread per column takes about 60% of the time of Parquet's own string
    decoding (a company name repeated on every row of its symbol: most of a full read)."""
    coded = [i for i, c in enumerate(table.columns) if pa.types.is_dictionary(c.type)]
    if not coded:
        return table.cast(pa.schema(fields)) if table.schema != pa.schema(fields) else table

    def plain(i: int) -> pa.ChunkedArray:
        return table.column(i).cast(fields[i].type)

    if len(coded) > 1 and table.num_rows > 100_000:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(len(coded), os.cpu_count() or 1)) as pool:
            decoded = dict(zip(coded, pool.map(plain, coded), strict=True))
    else:
        decoded = {i: plain(i) for i in coded}
    arrays = [decoded.get(i, c) for i, c in enumerate(table.columns)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _symbol_mask(column: pa.ChunkedArray, symbols: list[str]) -> pa.Array:
    """Rows of ``symbols``. Text read as its dictionary is matched by code: ``is_in`` on a
    dictionary column decodes it first, 30 times slower for one symbol's row group."""
    import numpy as np

    wanted = pa.array(symbols, pa.string())
    masks = []
    for chunk in column.chunks:
        if pa.types.is_dictionary(chunk.type):
            codes = np.flatnonzero(
                pc.is_in(chunk.dictionary, value_set=wanted).to_numpy(zero_copy_only=False)
            )
            indices = chunk.indices.to_numpy(zero_copy_only=False)  # symbols are never null
            masks.append(indices == codes[0] if len(codes) == 1 else np.isin(indices, codes))
        else:
            masks.append(pc.is_in(chunk, value_set=wanted).to_numpy(zero_copy_only=False))
    return pa.array(np.concatenate(masks) if masks else np.zeros(0, bool))


def _may_hold(wanted: list[str], lo: Any, hi: Any) -> bool:
    """Whether a range of symbols ``lo..hi`` (statistics; None: unknown) may hold one of the
    sorted ``wanted``: the first wanted at or after ``lo`` is in range, or none is."""
    import bisect

    if lo is None or hi is None:
        return True
    at = bisect.bisect_left(wanted, lo)
    return at < len(wanted) and wanted[at] <= hi
