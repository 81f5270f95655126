"""Reading a lake back as the loaders' frames: latest versions, as known at a time, or all."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidParameterError, KnowledgeTimeWarning, warn
from .frames import to_frame
from .plan import normalise_symbols, resolve
from .table import DatasetTable, Snapshot, damaged

__all__ = ["read", "scope_of", "opened", "sort_table"]


def opened(table: DatasetTable) -> Snapshot | None:
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
        raise InvalidParameterError(
            f"the lake holds no {table.ds.name} yet: run lake.sync({table.ds.name!r}, ...)",
            parameter="dataset",
        )
    return table.snapshot()


def scope_of(market: str | None, region: str | None) -> str:
    """The filter a cross-section snapshot was taken with."""
    if market:
        return f"market={market}"
    return f"region={region}" if region else ""


def _date_bound(value: Any, name: str) -> pa.Scalar:
    from ..params import to_date

    return pa.scalar(to_date(value, name), type=pa.date32())


def _columns(columns: Any, names: list[str], ds: str) -> list[str]:
    if columns is None:
        return names
    if isinstance(columns, str) or not isinstance(columns, Iterable):
        raise InvalidParameterError(
            f"columns= is a list of column names, got {columns!r}", parameter="columns"
        )
    wanted = list(columns)
    bad = [c for c in wanted if not isinstance(c, str)]
    if bad:
        raise InvalidParameterError(f"column names are strings, got {bad}", parameter="columns")
    repeated = sorted({c for c in wanted if wanted.count(c) > 1})
    if repeated:
        raise InvalidParameterError(f"columns {repeated} given twice", parameter="columns")
    unknown = [c for c in wanted if c not in names]
    if unknown:
        raise InvalidParameterError(
            f"{ds} has no column(s) {unknown}; it has {', '.join(names)}", parameter="columns"
        )
    return wanted


def read(
    tables: Callable[[Any], DatasetTable],
    dataset: str,
    symbols: str | Iterable[str] | None = None,
    *,
    start: Any = None,
    end: Any = None,
    as_of: Any = None,
    known_at: Any = None,
    columns: list[str] | None = None,
    history: bool = False,
    market: str | None = None,
    region: str | None = None,
) -> pd.DataFrame:
    """See :meth:`mdframes.Lake.read`."""
    from ..params import to_utc

    ds = resolve(dataset)
    if not isinstance(history, bool):
        raise InvalidParameterError(f"history= is True or False, got {history!r}", "history")
    known = None if known_at is None else to_utc(known_at, "known_at", dataset=ds.name)
    store = tables(ds)
    snap = opened(store)
    manifest = store.manifest
    assert manifest is not None
    names = manifest.names()
    wanted = _columns(columns, names, ds.name)
    syms = None if symbols is None else normalise_symbols(symbols, ds.name)
    if syms is not None and "symbol" not in names:
        raise InvalidParameterError(f"{ds.name} has no symbols", parameter="symbols")
    cross = store.mode.cross
    filter_ = _where(store, snap, start, end, known, market, region)
    revised = history or store.revised(snap, syms)
    needed = _needed(wanted, manifest, _meta(store, revised, history))
    table = store.scan(snap, filter=filter_, columns=needed, symbols=syms)
    if known is not None and table.num_rows == 0:
        _warn_before_every_version(store, snap, known)
    if not history and revised:
        table = store.mode.latest(table, manifest)  # a filter: the order stays
    # Rows come in stored order when the version's files hold disjoint symbol ranges (the
    # log's statistics say so): no sort, no check then.
    ordered = store.in_stored_order(snap) and (syms is None or syms == sorted(syms))
    if not ordered:
        table = sort_table(table, manifest, syms, cross)
    keep = wanted + ["_fetched_at"] + (["_sync_id", "_version"] if history else [])
    frame = to_frame(table.select(keep), manifest)
    frame.attrs["dataset"] = ds.name
    if cross and table.num_rows and not history:
        _attach_summary(frame, store, table)
    if as_of is not None:
        from ..pit import point_in_time

        frame = point_in_time(frame, as_of).reset_index(drop=True)
    return frame


def _where(
    store: DatasetTable,
    snap: Snapshot | None,
    start: Any,
    end: Any,
    known: Any,
    market: str | None,
    region: str | None,
) -> Any:
    """The read's row filter (symbols aside: the scan takes them), None for every row."""
    manifest = store.manifest
    where = _time_bounds(store.ds.name, manifest, start, end)
    if known is not None:
        stamp = pa.scalar(known.to_pydatetime(), pa.timestamp("us", "UTC"))
        where.append(pc.field("_fetched_at") <= stamp)
    if store.mode.cross:
        where.append(pc.field("_scope") == _pick_scope(store, snap, market, region))
    elif market or region:
        raise InvalidParameterError(
            "market=/region= select a cross-section snapshot; read per-symbol data by symbols",
            parameter="market",
        )
    filter_ = None
    for cond in where:
        filter_ = cond if filter_ is None else filter_ & cond
    return filter_


def _time_bounds(name: str, manifest: Any, start: Any, end: Any) -> list[Any]:
    """``start``/``end`` as filters on the dataset's time column, both inclusive."""
    from ..params import to_utc

    if start is None and end is None:
        return []
    if manifest.time is None:
        raise InvalidParameterError(f"{name} has no time column", parameter="start")
    time_field = pc.field(manifest.time)
    kind = manifest.column(manifest.time).kind
    out = []
    for value, arg, op in ((start, "start", "ge"), (end, "end", "le")):
        if value is None:
            continue
        if kind == "timestamp":
            # A date alone: from its first instant (start) to its last (end), inclusive.
            stamp = to_utc(value, arg, dataset=name, date_means=arg)
            bound = pa.scalar(stamp.to_pydatetime(), pa.timestamp("us", "UTC"))
        else:
            bound = _date_bound(value, arg)
        out.append(getattr(time_field, f"__{op}__")(bound))
    return out


def _meta(store: DatasetTable, revised: bool, history: bool) -> list[str]:
    """Meta columns a read needs, only where they serve: versions to choose the latest (when
    some row in reach has a second one) or to show, the sync id to show or to find a
    summary. Each one left out is a column not decoded."""
    cross = store.mode.cross
    meta = ["_fetched_at"]
    meta += list(store.mode.latest_needs) if revised else []
    meta += ["_version"] if history else []
    meta += ["_sync_id"] if history or cross else []
    meta += ["_scope"] if cross else []
    return [m for m in store.meta if m in meta]


def _warn_before_every_version(store: DatasetTable, snap: Snapshot | None, known: Any) -> None:
    first = store.first_fetched(snap)
    if first is None or known < first:
        since = "holds nothing yet" if first is None else f"was first synced at {first}"
        warn(
            f"{store.ds.name}: known_at={known} is earlier than every stored version (the "
            f"dataset {since}); the frame is empty",
            KnowledgeTimeWarning,
        )


def _attach_summary(frame: pd.DataFrame, store: DatasetTable, table: pa.Table) -> None:
    """A cross-section's summary (what the service said of the whole snapshot), as synced."""
    if "_sync_id" not in table.column_names:
        return
    summaries = store.state().get("summaries", {})
    summary = summaries.get(table["_sync_id"][0].as_py(), {}).get(table["_scope"][0].as_py())
    if summary is not None:
        frame.attrs["summary"] = summary


def _needed(wanted: list[str], manifest: Any, meta: Any) -> list[str]:
    extra = ["symbol", manifest.time or "", *manifest.record_key.names]
    out = list(wanted)
    for name in extra + list(meta):
        if name and name not in out and (name in manifest.names() or name in meta):
            out.append(name)
    return out


def _pick_scope(
    store: DatasetTable, snap: Snapshot | None, market: str | None, region: str | None
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


def sort_table(table: pa.Table, manifest: Any, syms: list[str] | None, cross: bool) -> pa.Table:
    """Rows as the loaders order them: symbol (in the order given), time, record key, then
    ``_n`` and ``_version``."""
    if table.num_rows == 0:
        return table
    keys: list[tuple[str, str]] = []
    if syms is not None and len(syms) > 1:
        rank = pc.index_in(table["symbol"], value_set=pa.array(syms))
        table = table.append_column("__rank", rank)
        keys.append(("__rank", "ascending"))
    elif "symbol" in table.column_names:
        keys.append(("symbol", "ascending"))
    names = manifest.names()
    for name in [manifest.time or "", *manifest.record_key.firsts]:
        if name and name in names and (name, "ascending") not in keys:
            keys.append((name, "ascending"))
    if not manifest.key and cross:
        keys = [k for k in keys if k[0] != "__rank"] or keys
    keys += [(m, "ascending") for m in ("_n", "_version") if m in table.column_names]
    if not keys:
        return table
    if not _is_sorted(table, keys):
        table = table.take(pa.array(_order(table, [k for k, _ in keys])))
    return table.drop_columns(["__rank"]) if "__rank" in table.column_names else table


def _order(table: pa.Table, keys: list[str]) -> np.ndarray:
    """Row positions in ``keys`` order, nulls last, ties stable (as ``Table.sort_by``).

    Most keys fit one 63-bit integer together (symbol rank, day, version, ...) with the row's
    position in the lowest bits (which keeps ties stable): sorting those integers is several
    times faster than Arrow's multi-column sort, which remains for the rest."""
    n = table.num_rows
    position_bits = max((n - 1).bit_length(), 1)
    packed = np.zeros(n, dtype=np.int64)
    bits = position_bits
    for name in keys:
        col = table[name].combine_chunks() if table[name].num_chunks != 1 else table[name].chunk(0)
        if pa.types.is_floating(col.type) and bits + position_bits > 62:
            break  # its distinct values could need as many bits as the positions
        values = _rank(col)
        if values.dtype.kind == "f":
            _, values = np.unique(values, return_inverse=True)  # NaN ranks last
        low = int(values.min())
        width = max((int(values.max()) - low).bit_length(), 1)
        bits += width
        if bits > 62:
            break
        packed = (packed << width) | (values.astype(np.int64) - low)
    else:
        packed = (packed << position_bits) | np.arange(n, dtype=np.int64)
        packed.sort()
        return packed & ((1 << position_bits) - 1)
    sort_keys = [(k, "ascending") for k in keys]
    return np.asarray(pc.sort_indices(table, sort_keys=sort_keys))  # as Table.sort_by


def _rank(col: pa.Array) -> np.ndarray:
    t = col.type
    if pa.types.is_dictionary(t):
        col, t = col.cast(t.value_type), t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_boolean(t):
        encoded = pc.dictionary_encode(col)
        order = np.asarray(pc.sort_indices(encoded.dictionary))
        rank = np.empty(len(order) + 1, dtype=np.int64)
        rank[order] = np.arange(len(order))
        rank[-1] = len(order)  # nulls last
        codes = pc.fill_null(encoded.indices, len(order)).to_numpy()
        return rank[codes]
    if pa.types.is_floating(t):
        return col.to_numpy(zero_copy_only=False)  # NaN (null) sorts last
    if pa.types.is_temporal(t) or pa.types.is_integer(t):
        width = pa.int32() if pa.types.is_date32(t) else pa.int64()
        ints = col.cast(width, safe=False) if not pa.types.is_integer(t) else col.cast(pa.int64())
        return pc.fill_null(ints.cast(pa.int64()), np.iinfo(np.int64).max).to_numpy()
    return np.asarray(
        pc.rank(col, sort_keys="ascending", null_placement="at_end", tiebreaker="dense")
    )


def _is_sorted(table: pa.Table, keys: list[tuple[str, str]]) -> bool:
    """Whether rows already come in ``keys`` order (a compacted file does): a linear check
    saves a sort of millions of rows."""
    n = table.num_rows
    if n < 2:
        return True
    head = table.slice(0, n - 1)
    tail = table.slice(1)
    ok = None  # rows i, i+1 ordered by the keys seen so far
    equal = None
    for name, _ in keys:
        a, b = head[name], tail[name]
        if pa.types.is_list(a.type) or pa.types.is_null(a.type):
            return False
        less = pc.fill_null(pc.less(a, b), False)
        same = pc.fill_null(pc.equal(a, b), False)
        # Nulls sort last: null after a value is ordered, two nulls are equal.
        less = pc.or_(less, pc.and_(pc.is_valid(a), pc.is_null(b)))
        same = pc.or_(same, pc.and_(pc.is_null(a), pc.is_null(b)))
        if ok is None:
            ok, equal = less, same
        else:
            ok = pc.or_(ok, pc.and_(equal, less))
            equal = pc.and_(equal, same)
    total = pc.or_(ok, equal)  # type: ignore[arg-type]
    return bool(np.all(total.to_numpy(zero_copy_only=False)))
