"""Reading a lake back as the loaders' frames: latest versions, as known at a time, or all."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidParameterError, KnowledgeTimeWarning, LakeDamagedError, warn
from .sync.plan import ReadRequest
from .sync.versions import without_rows
from .table.frames import to_frame
from .table.layout import DtypeRecord
from .table.order import either
from .table.scan import Published, RowFilter, plain_text, time_number
from .table.table import DatasetTable, TableVersion, damaged, once_more_if_overtaken
from .tables import Tables

__all__ = ["read", "scope_of", "opened"]


def opened(table: DatasetTable) -> TableVersion | None:
    """The version a read reads (resolved once), after the lake's own checks: a format-1
    dataset not converted yet, or a dataset never synced."""
    if table.manifest is None:
        if table.is_format1():
            raise damaged(
                table.ds.name,
                f"{table.folder}/_manifest.json",
                "a lake of format 1 (mdframes 0.2) not converted yet: run `mdframes lake "
                "upgrade` or lake.upgrade(), or sync",
            )
        raise never_synced(table.ds.name)
    return table.snapshot()


def never_synced(dataset: str) -> InvalidParameterError:
    """The error of a read of a dataset the lake never synced (an agent's clamp: not by
    then)."""
    return InvalidParameterError(
        f"the lake holds no {dataset} yet: run lake.sync({dataset!r}, ...)", parameter="dataset"
    )


def scope_of(market: str | None, region: str | None) -> str:
    """The filter a cross-section snapshot was taken with."""
    if market:
        return f"market={market}"
    return f"region={region}" if region else ""


def _columns(columns: tuple[str, ...] | None, names: list[str], ds: str) -> list[str]:
    if columns is None:
        return names
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise InvalidParameterError(
            f"{ds} has no column(s) {unknown}; it has {', '.join(names)}", parameter="columns"
        )
    return list(columns)


def read(tables: Tables, request: ReadRequest) -> pd.DataFrame:
    """See :meth:`mdframes.Lake.read`. A read overtaken by a compaction reads once more,
    on the new version (:func:`~mdframes.lake.table.table.once_more_if_overtaken`)."""
    table = tables.get(request.dataset)
    if request.version is not None:  # an earlier version: its files are its own
        try:
            frame, decoded = _read(table, request)
        except LakeDamagedError as exc:
            raise _version_gone(table, request.version, exc) from None
    else:
        frame, decoded = once_more_if_overtaken([table], lambda: _read(table, request))
    # The read's decoded, filtered and sorted tables are gone now: their pages go back to
    # the system (Arrow's allocator keeps freed pages for reuse). A panel reads several
    # datasets, then computes: their pages would count in its peak. A small read's few
    # pages stay for the next read: handing them back and faulting them in again cost a
    # one-symbol read ~1 ms, a sixth of it.
    if decoded >= _GIVE_BACK_FROM:
        pa.default_memory_pool().release_unused()
    return frame


# Bytes a read decodes from which it hands its freed Arrow pages back to the system.
_GIVE_BACK_FROM = 4 << 20


def _version_gone(store: DatasetTable, version: int, exc: LakeDamagedError) -> LakeDamagedError:
    """A read of an earlier version that could not read one of its files: when the table no
    longer lists the file, a vacuum removed it (not damage); say which version and why."""
    latest = store.snapshot()
    if not store.overtaken(exc) or latest is None:
        return exc  # a file the current version lists too: real damage
    name = exc.file
    return LakeDamagedError(
        f"{store.ds.name}: version {version} of the table is gone: its file {name} was "
        "removed by a vacuum (lake.compact(retain_hours=...) removes the files that no "
        f"version of the last retain_hours needs); the table is now at version {latest.version}",
        dataset=store.ds.name,
        file=name,
    )


def _read(store: DatasetTable, request: ReadRequest) -> tuple[pd.DataFrame, int]:
    """See :func:`read`; also the bytes it decoded: the plan, the scan, the rows chosen and
    ordered, the frame."""
    plan = _Plan.of(store, request)
    # Text comes as its dictionary until the rows are chosen and ordered (scan's coded=).
    table = store.scan(
        plan.scanned,
        filter=plan.filter,
        columns=plan.needed,
        symbols=plan.symbols,
        coded=True,
        span=plan.span,
        published=plan.published,
    )
    # The buffers the scan holds (nbytes of a sliced table walks every chunk's slices:
    # ~0.5 ms for a 3-month sentiment read's 26 chunks).
    decoded = table.get_total_buffer_size()
    table = store.without_copies(plan.vouching, table)
    if request.known_at is not None and table.num_rows == 0:
        _warn_before_every_version(store, plan.snap, request.known_at)
    table = _chosen(store, plan, request, table)
    frame = to_frame(plain_text(table.select(plan.keep)), plan.manifest)
    frame.attrs["dataset"] = store.ds.name
    if table.num_rows and not request.history:
        _attach_summary(frame, store, table)
    if request.as_of is not None:
        from ..pit import point_in_time

        frame = point_in_time(frame, request.as_of).reset_index(drop=True)
    return frame, decoded


@dataclass
class _Plan:
    """How one read reads a table version: what it filters, decodes and keeps, and whether
    its rows need choosing (``revised``) and ordering (not ``ordered``)."""

    snap: TableVersion | None
    manifest: DtypeRecord
    symbols: list[str] | None
    filter: RowFilter | None
    span: tuple[Any, Any] | None
    published: Published | None
    scanned: TableVersion | None  # None: no row of the version lies in the range
    vouching: TableVersion | None
    revised: bool
    in_files: bool
    ordered: bool
    needed: list[str]
    keep: list[str]

    @classmethod
    def of(cls, store: DatasetTable, request: ReadRequest) -> _Plan:
        ds = store.ds
        snap = opened(store)
        if request.version is not None:
            snap = _at_version(store, snap, request.version)
        manifest = store.manifest
        assert manifest is not None
        wanted = _columns(request.columns, manifest.names(), ds.name)
        syms = None if request.symbols is None else list(request.symbols)
        if syms is not None and "symbol" not in manifest.names():
            raise InvalidParameterError(f"{ds.name} has no symbols", parameter="symbols")
        between = _between(ds.name, manifest, request.start, request.end)
        filter_ = _where(store, snap, between, request.known_at, request.market, request.region)
        span = _span(between)
        published = None
        if request.public_from is not None:
            until = None if request.history else request.public_until
            published = _published(ds, manifest, request.public_from, until)
        scanned = None if _wholly_outside(manifest, snap, between) else snap
        # else another program committed: copies are dropped (an earlier version is trusted
        # when the latest is: the lake vouches for its log up to the latest)
        vouching = snap if request.version is None else store.snapshot()
        revised = (
            request.history
            or not store.trusted(vouching)
            or store.revised(snap, syms, span, published)
        )
        # Rows come in stored order when the version's files hold disjoint symbol ranges (the
        # log's statistics say so) and the row groups read hold ascending ones in each file
        # (theirs), or, where the files overlap, when the row groups read do from file to
        # file (a short window's read often reads one file): no sort, no check then.
        in_files = store.in_stored_order(scanned)
        ordered = (syms is None or syms == sorted(syms)) and (
            store.groups_in_order(scanned, syms, span, across=not in_files, published=published)
        )
        # A read neither sorted nor choosing versions needs no identity column it does not
        # return (a news read's urls: most of its decoding).
        meta = store.mode.read_meta(revised, request.history)
        needed = _needed(wanted, manifest, meta, ordered and not revised)
        if published is not None:  # the columns that say when a row became public
            rule = ds.deadline.event if ds.deadline is not None else None
            needed += [c for c in (published.column, rule) if c and c not in needed]
        keep = wanted + ["_fetched_at"] + (["_sync_id", "_version"] if request.history else [])
        return cls(
            snap, manifest, syms, filter_, span, published, scanned, vouching, revised,
            in_files, ordered, needed, keep,
        )  # fmt: skip


def _chosen(store: DatasetTable, plan: _Plan, request: ReadRequest, table: pa.Table) -> pa.Table:
    """The rows the read returns, in the loaders' order: rows left out (older versions, rows
    public before ``public_from``) are cut out once, in the sort's gather, which copies every
    row anyway, else by one filter or cut. A sort tells the older versions itself (its keys
    hold each record's identity)."""
    manifest, history = plan.manifest, request.history
    latest = not history and plan.revised
    drop = store.mode.superseded(table, manifest) if latest and plan.ordered else None
    if request.public_from is not None:
        if history:  # every version of a record one version of which is public then
            table = _public_from(table, store.ds, request.public_from, manifest)
        else:  # of the latest versions, row by row: drop those of the others too
            early = _public_mask(table, store.ds, request.public_from)
            if early is not None:
                early_rows = np.flatnonzero(~early)
                drop = early_rows if drop is None else either(drop, early_rows)
    if plan.ordered:
        return table if drop is None else without_rows(table, drop)
    # Files in order each hold each symbol's rows in order (slice after slice when laid out
    # in time slices): ordering the symbols, stably, is enough then. Only the columns kept
    # are gathered (a summary's come too).
    summary = [c for c in ("_sync_id", "_scope") if c in table.column_names]
    return store.mode.sort(
        table,
        manifest,
        plan.symbols,
        by_symbol=plan.in_files,
        drop=drop,
        latest=latest,
        columns=list(dict.fromkeys(plan.keep + summary)),
    )


def _published(ds: Any, manifest: Any, since: dt.date, until: dt.date | None = None) -> Published:
    """The row groups a read of the rows public from ``since`` (and, of first versions, by
    ``until``) skips (by the statistics of the dataset's read bound,
    :attr:`~mdframes.registry.Dataset.read_bound`)."""
    column = ds.read_bound
    if column is None or manifest.column(column) is None:
        raise InvalidParameterError(
            f"{ds.name} is read by its time column, not by when its rows became public",
            parameter="public_from",
        )
    rule = ds.deadline
    due = None  # a null anchor's deadline is judged by the time column's statistics
    if rule is not None and rule.event == manifest.time:
        due = _first_number(manifest, rule.event, since - dt.timedelta(days=rule.calendar_days))
    after = due_after = None
    if until is not None:  # public after ``until``: then its next day's first instant or later
        after = _first_number(manifest, column, until + dt.timedelta(days=1))
        if rule is not None and rule.event == manifest.time:
            due_after = _first_number(manifest, rule.event, until + dt.timedelta(days=1))
    return Published(column, _first_number(manifest, column, since), due, after, due_after)


def _first_number(manifest: Any, column: str, day: dt.date) -> int:
    """The :func:`~.scan.time_number` of ``day``'s first instant in ``column``'s kind."""
    if manifest.column(column).kind == "timestamp":
        return int(time_number(dt.datetime.combine(day, dt.time(), tzinfo=dt.timezone.utc)) or 0)
    return int(time_number(day) or 0)


def _public_mask(table: pa.Table, ds: Any, since: dt.date) -> np.ndarray | None:
    """The rows of ``table`` public on or after ``since`` (None: all): their anchor (the
    read bound) then or later, or, null, their event no more than the legal deadline's
    calendar days before (a superset of those whose deadline falls then or later,
    mdframes.pit)."""
    column, rule = ds.read_bound, ds.deadline
    keep = pc.greater_equal(table[column], _day_scalar(table[column].type, since))
    if rule is not None and rule.event in table.column_names:
        earliest = since - dt.timedelta(days=rule.calendar_days)
        due = pc.greater_equal(table[rule.event], _day_scalar(table[rule.event].type, earliest))
        keep = pc.or_kleene(keep, pc.and_kleene(pc.is_null(table[column]), due))
    keep = pc.fill_null(keep, False)
    if pc.all(keep).as_py() is not False:
        return None
    return np.asarray(keep.to_numpy(zero_copy_only=False), dtype=bool)


def _public_from(table: pa.Table, ds: Any, since: dt.date, whole: Any) -> pa.Table:
    """The rows of ``table`` (every version read) public on or after ``since``
    (:func:`_public_mask`), with every version of a record one of whose versions is (an
    amended anchor: the earlier version alone would never be superseded; ``whole``: the
    manifest)."""
    keep = _public_mask(table, ds, since)
    if keep is None or not table.num_rows:
        return table
    from .sync.versions import record_numbers

    records = record_numbers(table, whole)
    return table.filter(pa.array(np.isin(records, records[keep])))


def _day_scalar(kind: pa.DataType, day: dt.date) -> pa.Scalar:
    """The first instant of ``day`` as a scalar of ``kind`` (a date, or a time: UTC)."""
    if pa.types.is_timestamp(kind):
        at = dt.datetime.combine(day, dt.time(), tzinfo=dt.timezone.utc if kind.tz else None)
        return pa.scalar(at, type=kind)
    return pa.scalar(day, type=kind)


def _at_version(
    store: DatasetTable, latest: TableVersion | None, version: int
) -> TableVersion | None:
    """The table as it was at ``version`` (Delta time travel): the latest when it is."""
    current = None if latest is None else latest.version
    if current is None or version > current:
        raise InvalidParameterError(
            f"{store.ds.name} has no table version {version} (latest: {current})",
            parameter="version",
        )
    return latest if version == current else store.log.snapshot_at(version)


def _where(
    store: DatasetTable,
    snap: TableVersion | None,
    between: tuple[Any, Any] | None,
    known: Any,
    market: str | None,
    region: str | None,
) -> Any:
    """The read's row filter (symbols aside: the scan takes them), None for every row. A
    bound that the log's statistics show every row meets is left out: it would filter
    nothing, and filtering by an expression sets up an Acero plan (a fifth of a one-symbol
    read; the agent server's clamp at now asks for such bounds on every call)."""
    bounds = _time_bounds(store.manifest, snap, between)
    if known is not None and not _every_row_within(snap, "_fetched_at", None, known):
        stamp = pa.scalar(known.to_pydatetime(), pa.timestamp("us", "UTC"))
        bounds.append(("_fetched_at", "le", stamp))
    rest = None
    for cond in store.mode.scope_where(
        market, region, lambda: _pick_scope(store, snap, market, region)
    ):
        rest = cond if rest is None else rest & cond
    return RowFilter(tuple(bounds), rest) if bounds or rest is not None else None


def _between(name: str, manifest: Any, start: Any, end: Any) -> tuple[Any, Any] | None:
    """``start``/``end`` in the kind of the dataset's time column, both inclusive: UTC
    Timestamps (a date alone: from its first instant, to its last) or dates; None for no
    bound."""
    from ..params import to_date, to_utc

    if start is None and end is None:
        return None
    if manifest.time is None:
        raise InvalidParameterError(f"{name} has no time column", parameter="start")
    timestamp = manifest.column(manifest.time).kind == "timestamp"

    def at(value: Any, arg: str) -> Any:
        if value is None:
            return None
        if timestamp:
            return to_utc(value, arg, dataset=name, date_means=arg)
        return to_date(value, arg)

    return at(start, "start"), at(end, "end")


def _time_bounds(
    manifest: Any, snap: TableVersion | None, between: tuple[Any, Any] | None
) -> list[tuple[str, str, Any]]:
    """``between`` as bounds on the dataset's time column, those every row meets left out."""
    if between is None:
        return []
    out = []
    for at, op in zip(between, ("ge", "le"), strict=True):
        low, high = (at, None) if op == "ge" else (None, at)
        if at is not None and not _every_row_within(snap, manifest.time, low, high):
            bound = (
                pa.scalar(at.to_pydatetime(), pa.timestamp("us", "UTC"))
                if isinstance(at, pd.Timestamp)
                else pa.scalar(at, type=pa.date32())
            )
            out.append((manifest.time, op, bound))
    return out


def _span(between: tuple[Any, Any] | None) -> tuple[Any, Any] | None:
    """``between`` as the least and greatest :func:`~.scan.time_number` of the time column
    a read keeps (as :func:`_time_bounds` filters), for row groups' statistics."""
    if between is None:
        return None
    low, high = (at.to_pydatetime() if isinstance(at, pd.Timestamp) else at for at in between)
    return time_number(low), time_number(high)


def _wholly_outside(
    manifest: Any, snap: TableVersion | None, between: tuple[Any, Any] | None
) -> bool:
    """Whether the log's statistics show no row of the version within ``between`` on the
    dataset's time column (a panel's seek for older rows before a lake's first)."""
    if between is None or snap is None:
        return False
    extent = snap.extent(manifest.time)
    if extent is None:
        return False
    low, high = extent
    if manifest.column(manifest.time).kind == "timestamp":
        if not isinstance(low, dt.datetime) or low.tzinfo is None:
            return False
        low, high = pd.Timestamp(low) - _STATS_SLACK, pd.Timestamp(high) + _STATS_SLACK
    elif isinstance(low, dt.datetime) or isinstance(high, dt.datetime):
        return False
    start, end = between
    return (start is not None and high < start) or (end is not None and low > end)


# Delta statistics keep times to the millisecond (cut, not rounded, by delta-rs): a stored
# time is within this of the version's least and greatest (TableVersion.extent).
_STATS_SLACK = dt.timedelta(milliseconds=1)


def _every_row_within(snap: TableVersion | None, column: str, low: Any, high: Any) -> bool:
    """Whether the log's statistics show every row of the version with ``column`` set and
    at or after ``low``, at or before ``high`` (None: no bound); False when they cannot
    tell."""
    extent = None if snap is None else snap.extent(column)
    if extent is None:
        return False
    for bound, edge, side in ((low, extent[0], "min"), (high, extent[1], "max")):
        if bound is None:
            continue
        if isinstance(edge, dt.datetime) and isinstance(bound, dt.datetime):
            edge, bound = pd.Timestamp(edge), pd.Timestamp(bound)
            if edge.tz is None or bound.tz is None:
                return False
            edge = edge - _STATS_SLACK if side == "min" else edge + _STATS_SLACK
        elif isinstance(edge, dt.datetime) or isinstance(bound, dt.datetime):
            return False  # a time against a date: cannot tell
        if (edge < bound) if side == "min" else (edge > bound):
            return False
    return True


def _warn_before_every_version(store: DatasetTable, snap: TableVersion | None, known: Any) -> None:
    first = store.first_fetched(snap)
    if first is None or known < first:
        since = "holds nothing yet" if first is None else f"was first synced at {first}"
        warn(
            f"{store.ds.name}: known_at={known} is earlier than every stored version (the "
            f"dataset {since}); the frame is empty",
            KnowledgeTimeWarning,
        )


def _attach_summary(frame: pd.DataFrame, store: DatasetTable, table: pa.Table) -> None:
    """A cross-section's summary (what the service said of the whole snapshot), as synced
    (a read of a cross section reads the sync id and filter; other reads do not)."""
    if not {"_sync_id", "_scope"} <= set(table.column_names):
        return
    summaries = store.state().get("summaries", {})
    summary = summaries.get(table["_sync_id"][0].as_py(), {}).get(table["_scope"][0].as_py())
    if summary is not None:
        frame.attrs["summary"] = summary


def _needed(wanted: list[str], manifest: Any, meta: Any, ordered: bool = False) -> list[str]:
    """The columns a read decodes: ``wanted``, the symbol and time (the scan's filters), the
    record identity (the order's keys, and what latest versions are told apart by) unless
    the rows need neither (``ordered``), and ``meta``."""
    identity = [] if ordered else manifest.identity.names
    extra = ["symbol", manifest.time or "", *identity]
    out = list(wanted)
    for name in extra + list(meta):
        if name and name not in out and (name in manifest.names() or name in meta):
            out.append(name)
    return out


def _pick_scope(
    store: DatasetTable, snap: TableVersion | None, market: str | None, region: str | None
) -> str:
    if market or region:
        return scope_of(market, region)
    scopes = pc.unique(store.scan(snap, columns=["_scope"])["_scope"]).to_pylist()
    if "" in scopes or not scopes:
        return ""
    if len(scopes) == 1:
        return str(scopes[0])
    raise InvalidParameterError(
        f"{store.ds.name} holds snapshots of several filters ({', '.join(map(str, scopes))}): "
        "pass market= or region=",
        parameter="market",
    )
