"""Reading a lake back as the loaders' frames: latest versions, as known at a time, or all."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidParameterError
from .frames import to_frame
from .plan import resolve
from .store import DatasetStore, is_cross
from .versions import latest

if TYPE_CHECKING:  # pragma: no cover
    from .core import Lake

__all__ = ["read", "utc_time", "normalise_symbols", "scope_of"]


def utc_time(value: Any, name: str) -> pd.Timestamp:
    """A time argument as an aware UTC Timestamp; naive means UTC."""
    try:
        ts = pd.Timestamp(value)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(
            f"{name}={value!r} is not a time ({exc})", parameter=name
        ) from None
    if pd.isna(ts):
        raise InvalidParameterError(f"{name} is NaT", parameter=name)
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def normalise_symbols(symbols: str | Iterable[str], dataset: str | None = None) -> list[str]:
    """Checked symbols, stripped and upper-cased, without repeats, in the caller's order."""
    from ..params import check_symbols

    items: Any = [symbols] if isinstance(symbols, str) else symbols
    try:
        cleaned: Any = [s.strip().upper() if isinstance(s, str) else s for s in items]
    except TypeError:
        cleaned = items  # check_symbols says what is wrong
    return check_symbols(cleaned, dataset=dataset)


def scope_of(market: str | None, region: str | None) -> str:
    """The filter a cross-section snapshot was taken with."""
    if market:
        return f"market={market}"
    return f"region={region}" if region else ""


def _date_bound(value: Any, name: str) -> pa.Scalar:
    from ..params import to_date

    return pa.scalar(to_date(value, name), type=pa.date32())


def read(
    lake: Lake,
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
    ds = resolve(dataset)
    store = DatasetStore(lake.storage, ds)
    manifest = store.manifest
    if manifest is None:
        raise InvalidParameterError(
            f"the lake at {lake.root} holds no {ds.name} yet: run lake.sync({ds.name!r}, ...)",
            parameter="dataset",
        )
    names = manifest.names()
    wanted = names if columns is None else list(columns)
    unknown = [c for c in wanted if c not in names]
    if unknown:
        raise InvalidParameterError(
            f"{ds.name} has no column(s) {unknown}; it has {', '.join(names)}", parameter="columns"
        )
    where: list[Any] = []
    syms = None if symbols is None else normalise_symbols(symbols, ds.name)
    if syms is not None:
        if "symbol" not in names:
            raise InvalidParameterError(f"{ds.name} has no symbols", parameter="symbols")
        where.append(pc.field("symbol").isin(syms))
    if start is not None or end is not None:
        if manifest.time is None:
            raise InvalidParameterError(f"{ds.name} has no time column", parameter="start")
        time_field = pc.field(manifest.time)
        kind = manifest.column(manifest.time).kind  # type: ignore[union-attr]
        for value, name, op in ((start, "start", "ge"), (end, "end", "le")):
            if value is None:
                continue
            if kind == "timestamp":
                bound = pa.scalar(utc_time(value, name).to_pydatetime(), pa.timestamp("us", "UTC"))
                if name == "end":  # the whole end day, as dates are inclusive
                    bound = pa.scalar(
                        (utc_time(value, name).normalize() + pd.Timedelta(days=1)).to_pydatetime(),
                        pa.timestamp("us", "UTC"),
                    )
                    op = "lt"
            else:
                bound = _date_bound(value, name)
            where.append(getattr(time_field, f"__{op}__")(bound))
    if known_at is not None:
        t = utc_time(known_at, "known_at").to_pydatetime()
        where.append(pc.field("_fetched_at") <= pa.scalar(t, pa.timestamp("us", "UTC")))
    cross = ds.lake == "snapshot" and is_cross(ds)
    if cross:
        where.append(pc.field("_scope") == _pick_scope(store, market, region))
    elif market or region:
        raise InvalidParameterError(
            "market=/region= select a cross-section snapshot; read per-symbol data by symbols",
            parameter="market",
        )
    filter_ = None
    for cond in where:
        filter_ = cond if filter_ is None else filter_ & cond
    needed = _needed(wanted, manifest, store.meta)
    table = store.scan(filter=filter_, columns=needed)
    if not history:
        table = latest(table, manifest, cross)
    table = _sort(table, manifest, syms, history, cross)
    keep = wanted + ["_fetched_at"] + (["_sync_id", "_version"] if history else [])
    frame = to_frame(table.select(keep), manifest)
    frame.attrs["dataset"] = ds.name
    if cross and "_sync_id" in table.column_names and table.num_rows and not history:
        summary = _summary(store, table["_sync_id"][0].as_py(), table["_scope"][0].as_py())
        if summary is not None:
            frame.attrs["summary"] = summary
    if as_of is not None:
        from ..pit import point_in_time

        frame = point_in_time(frame, as_of).reset_index(drop=True)
    return frame


def _needed(wanted: list[str], manifest: Any, meta: Any) -> list[str]:
    extra = ["symbol", manifest.time or ""]
    for part in manifest.key:
        extra += part.split("|")
    out = list(wanted)
    for name in extra + list(meta):
        if name and name not in out and (name in manifest.names() or name in meta):
            out.append(name)
    return out


def _pick_scope(store: DatasetStore, market: str | None, region: str | None) -> str:
    if market or region:
        return scope_of(market, region)
    scopes = pc.unique(store.scan(columns=["_scope"])["_scope"]).to_pylist()
    if "" in scopes or not scopes:
        return ""
    if len(scopes) == 1:
        return str(scopes[0])
    raise InvalidParameterError(
        f"{store.ds.name} holds snapshots of several filters ({', '.join(map(str, scopes))}): "
        "pass market= or region=",
        parameter="market",
    )


def _sort(
    table: pa.Table, manifest: Any, syms: list[str] | None, history: bool, cross: bool
) -> pa.Table:
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
    for name in [manifest.time or ""] + [p.split("|")[0] for p in manifest.key]:
        if name and name in names and (name, "ascending") not in keys:
            keys.append((name, "ascending"))
    if not manifest.key and cross:
        keys = [k for k in keys if k[0] != "__rank"] or keys
    keys += [(m, "ascending") for m in ("_n", "_version") if m in table.column_names]
    if not keys:
        return table
    if not _is_sorted(table, keys):
        table = table.sort_by(keys)
    return table.drop_columns(["__rank"]) if "__rank" in table.column_names else table


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


def _summary(store: DatasetStore, sync_id: str, scope: str) -> Any:
    for entry in reversed(store.files()):
        summaries = store.file_metadata(entry).get("summaries", {})
        if sync_id in summaries and scope in summaries[sync_id]:
            return summaries[sync_id][scope]
    return None
