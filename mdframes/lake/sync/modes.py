"""Everything that differs by storage mode, decided once per dataset.

A windowed dataset (insider trades, congress trades, sentiment, ...) keeps one row per version
of each record; a snapshot dataset (forecasts, screeners, recent, discovery) keeps whole
answers, one per sync that saw something change, per symbol and filter or, for a cross section,
per filter. :func:`mode_of` picks the mode object from the registry entry once; the plan, the
sync, the reads, SQL, ``info``, ``changes`` and the health checks ask it instead of branching
on the entry (its name, ``lake`` or ``path``) themselves. ``tests/test_structure.py`` holds
every other module to that.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidParameterError
from ...registry import Dataset
from ..table.layout import DtypeRecord
from ..table.order import arrange, either, time_sliced
from .plan import Unit, window_units
from .versions import (
    diff_snapshots,
    diff_window,
    keys_tell_versions,
    one_per_content,
    one_per_record,
    snapshot_index,
    superseded_snapshots,
    superseded_versions,
    unit_of,
    window_index,
)

__all__ = [
    "Mode",
    "WindowMode",
    "SnapshotMode",
    "CrossMode",
    "mode_of",
    "Arrived",
    "symbol_filter",
]

WINDOW_META = ("_fetched_at", "_sync_id", "_version", "_n")
SNAPSHOT_META = ("_fetched_at", "_sync_id", "_version", "_scope")


@dataclass
class Arrived:
    """What one unit of a batch brought: its stored-form table (with ``_fetched_at``)."""

    unit_id: str
    symbol: str | None
    scope: str
    table: pa.Table


def symbol_filter(symbols: list[str]) -> Any:
    """Rows of these symbols, as a filter row-group statistics can prune by (``isin`` is
    not simplified against statistics; a few equalities are)."""
    if len(symbols) > 64:
        return pc.field("symbol").isin(symbols)
    where = pc.field("symbol") == symbols[0]
    for s in symbols[1:]:
        where = where | (pc.field("symbol") == s)
    return where


class Mode:
    """The behaviour of one storage mode (see the module docstring)."""

    name: str = ""
    meta: tuple[str, ...] = ()
    latest_needs: tuple[str, ...] = ()  # meta columns that choosing the latest versions reads
    # The leading stored-order keys: data files are ordered by their lowest values and told
    # apart by the ranges of the first one.
    file_keys: tuple[str, ...] = ("symbol",)
    read_needs: tuple[str, ...] = ()  # meta columns every read of the mode reads

    def unit_id(self, symbol: str | None, scope: str) -> str:
        raise NotImplementedError

    def unit_symbol(self, unit_id: str) -> str | None:
        """The symbol a unit of the state is about (None: a cross section)."""
        return unit_id.split(" ", 1)[0] or None

    def units(
        self,
        ds: Dataset,
        symbols: Sequence[str] | None,
        state: dict[str, Any],
        request: Any,
        today: dt.date,
    ) -> list[Unit]:
        """The units of work a sync ``request`` (start, end, market, region) makes of
        ``ds`` given its ``state``."""
        raise NotImplementedError

    def unit_ids(
        self, ds: Dataset, symbols: Sequence[str] | None, market: str | None, region: str | None
    ) -> list[str]:
        """The ids of the units a request of ``ds`` is made of (its windows or snapshots)."""
        request = SimpleNamespace(market=market, region=region, start=None, end=None)
        return [u.id for u in self.units(ds, symbols, {"units": {}}, request, dt.date.min)]

    def unit_meta(self, scope: str, n: int) -> dict[str, list[Any]]:
        """The meta columns of ``n`` arrived rows of one unit, besides ``_fetched_at``."""
        return {}

    def read_meta(self, revised: bool, history: bool) -> list[str]:
        """The meta columns a read needs, only where they serve: versions to choose the
        latest (when some row in reach has a second one) or to show, the sync id to show."""
        meta = ["_fetched_at", *self.read_needs]
        meta += list(self.latest_needs) if revised else []
        meta += ["_version", "_sync_id"] if history else []
        return [m for m in self.meta if m in meta]

    def scope_where(
        self, market: str | None, region: str | None, pick: Callable[[], str]
    ) -> list[Any]:
        """The read's filter on the snapshot filter (``pick``: the one to read when neither
        ``market`` nor ``region`` is given)."""
        if market or region:
            raise InvalidParameterError(
                "market=/region= select a cross-section snapshot; read per-symbol data by symbols",
                parameter="market",
            )
        return []

    def check_changes(self, ds: Dataset) -> None:
        """Raise unless ``changes()`` can list revisions of ``ds``'s records."""
        raise InvalidParameterError(
            f"{ds.name} is stored as whole snapshots, not versions of records: read its "
            f"history with lake.read({ds.name!r}, history=True)",
            parameter="dataset",
            dataset=ds.name,
        )

    def one_per_fetch(self, table: pa.Table, manifest: DtypeRecord) -> pa.Table:
        """One row per record and fetch time: copies another writer appended never double
        a record (reads, SQL views, ``info`` and ``changes`` of a table not trusted)."""
        return one_per_content(table, manifest)

    def stored_filter(self, arrived: Sequence[Arrived]) -> Any:
        """The stored rows a batch must be compared with."""
        return symbol_filter(sorted({str(a.symbol) for a in arrived}))

    def index(self, stored: pa.Table | None, manifest: DtypeRecord) -> Any:
        raise NotImplementedError

    def diff(
        self, table: pa.Table, arrived: Sequence[Arrived], manifest: DtypeRecord, index: Any
    ) -> tuple[pa.Table, int, int]:
        """The rows to store (with ``_version`` and, windowed, ``_n``), new records, new
        versions."""
        raise NotImplementedError

    def superseded(self, table: pa.Table, manifest: DtypeRecord) -> np.ndarray:
        """The positions (ascending) of the rows that are not their record's latest
        version: a read cuts them out (:func:`~.versions.without_rows`, or in its sort's
        gather, :meth:`sort`)."""
        raise NotImplementedError

    def sort_keys(self, manifest: DtypeRecord) -> list[tuple[str, str]]:
        """The one order of the dataset's rows, stored and read, the loaders' order (CONTRACT
        §2, §10.1): (filter,) symbol, time, then the record identity's columns (ties), then
        ``_n`` (records sharing an identity in one answer) and ``_version``. Text, categories
        included, orders by its value; nulls last."""
        names = manifest.names()
        lead = [k for k in self.file_keys if k in self.meta]  # a cross section's filter
        keys = list(lead)
        for name in ["symbol", manifest.time or "", *manifest.identity.names]:
            if name and name in names and name not in keys:
                keys.append(name)
        if len(keys) == len(lead):
            keys += [c.name for c in manifest.columns if c.kind in _SORTABLE][:3]
        keys += [m for m in ("_n", "_version") if m in self.meta]
        return [(k, "ascending") for k in keys]

    def sort(
        self,
        table: pa.Table,
        manifest: DtypeRecord,
        symbols: Sequence[str] | None = None,
        by_symbol: bool = False,
        drop: np.ndarray | None = None,
        latest: bool = False,
        columns: list[str] | None = None,
    ) -> pa.Table:
        """``table`` (rows of a read) in :meth:`sort_keys` order, symbols in the order
        ``symbols`` gives them (as a loader called with that list orders them).
        ``by_symbol``: each symbol's rows are in order already (files read in stored
        order), so the keys up to the symbol are sorted by, stably. ``drop``: positions
        of rows left out (gathered once with the others, not copied out first).
        ``latest``: each record's latest version only (:meth:`superseded`, told by the
        sort where it can, :meth:`versions_by_keys`). ``columns``: those returned."""
        keys = [k for k, _ in self.sort_keys(manifest) if k in table.column_names]
        by_keys = latest and self.versions_by_keys(table, manifest, keys)
        if by_symbol and "symbol" in keys and not by_keys:
            # (The versions told by the sort need every key: packed, they cost less than
            # the versions chosen apart.)
            keys = keys[: keys.index("symbol") + 1]
        # Symbols asked in sorted order (a read's rows hold only those) are ranked by their
        # text, as without a list: no lookup of every row's symbol among them (a panel
        # asks its symbols sorted; 1.4 ms of a 76k-row read).
        ranked = (
            symbols is not None
            and len(symbols) > 1
            and "symbol" in keys
            and any(a > b for a, b in zip(symbols, symbols[1:], strict=False))
        )
        if ranked:
            rank = pc.index_in(table["symbol"], value_set=pa.array(list(symbols or ())))
            table = table.append_column("__rank", rank)
            keys = ["__rank" if k == "symbol" else k for k in keys]
        if latest and not by_keys:
            older = self.superseded(table, manifest)
            drop = older if drop is None else either(drop, older)
        chosen = (lambda: self.superseded(table, manifest)) if by_keys else None
        out = columns if columns is not None else [c for c in table.column_names if c != "__rank"]
        return arrange(table, keys, drop, latest=chosen, columns=out)

    def versions_by_keys(self, table: pa.Table, manifest: DtypeRecord, keys: list[str]) -> bool:
        """Whether rows equal on every one of ``keys`` (:meth:`sort_keys`, those ``table``
        has) but the last are versions of one record, the last key their version (the
        sort then tells the latest, :func:`~.order.arrange`)."""
        return False

    def lay_out(self, table: pa.Table, manifest: DtypeRecord, block: int, slices: int) -> pa.Table:
        """The rows of a write (sorted in :meth:`sort_keys` order) in the order they are
        stored: as sorted, but for a windowed dataset (:meth:`WindowMode.lay_out`)."""
        return table

    def latest_sql(self, manifest: DtypeRecord, quote: Callable[[str], str]) -> str:
        """The ``qualify`` rule of the ``<name>`` view (latest versions)."""
        raise NotImplementedError

    def latest_count(self, table: pa.Table) -> int:
        raise NotImplementedError


_SORTABLE = ("string", "category", "Int64", "float64", "boolean", "date", "timestamp")


class WindowMode(Mode):
    name = "window"
    meta = WINDOW_META
    latest_needs = ("_version", "_n")

    def unit_id(self, symbol: str | None, scope: str) -> str:
        return str(symbol)

    def unit_symbol(self, unit_id: str) -> str | None:
        return unit_id

    def units(
        self,
        ds: Dataset,
        symbols: Sequence[str] | None,
        state: dict[str, Any],
        request: Any,
        today: dt.date,
    ) -> list[Unit]:
        return window_units(
            ds, symbols or [], state, request.start, request.end, today, self.unit_id
        )

    def unit_ids(
        self, ds: Dataset, symbols: Sequence[str] | None, market: str | None, region: str | None
    ) -> list[str]:
        if not symbols:
            raise InvalidParameterError(f"{ds.name} needs symbols", parameter="symbols")
        return [self.unit_id(s, "") for s in symbols]

    def check_changes(self, ds: Dataset) -> None:
        if not ds.record_id:
            raise InvalidParameterError(
                f"{ds.name} is not kept by the lake", parameter="dataset", dataset=ds.name
            )

    def one_per_fetch(self, table: pa.Table, manifest: DtypeRecord) -> pa.Table:
        return one_per_record(table, manifest)

    def superseded(self, table: pa.Table, manifest: DtypeRecord) -> np.ndarray:
        return superseded_versions(table, manifest)

    def versions_by_keys(self, table: pa.Table, manifest: DtypeRecord, keys: list[str]) -> bool:
        """Where the identity's every part is one column of exact values (no alternative
        columns, whose first value present is compared, no floats) and the table has them
        all: the keys then end with them, ``_n`` and ``_version``."""
        return keys_tell_versions(table, manifest, keys)

    def lay_out(self, table: pa.Table, manifest: DtypeRecord, block: int, slices: int) -> pa.Table:
        """Rows in time slices per block of symbols (:func:`~.order.time_sliced`): a read of
        a few months prunes row groups by time. Snapshots are read whole, latest first, and
        cross sections by filter, so only windowed datasets are sliced."""
        if manifest.time is None:
            return table
        return time_sliced(table, manifest.time, block, slices)

    def index(self, stored: pa.Table | None, manifest: DtypeRecord) -> Any:
        return window_index(stored, manifest)

    def diff(
        self, table: pa.Table, arrived: Sequence[Arrived], manifest: DtypeRecord, index: Any
    ) -> tuple[pa.Table, int, int]:
        d = diff_window(table.drop_columns(["_fetched_at"]), manifest, index)
        kept = table.take(pa.array(d.take, type=pa.int64()))
        kept = kept.append_column("_version", pa.array(d.version, type=pa.int32()))
        kept = kept.append_column("_n", pa.array(d.n, type=pa.int16()))
        return kept, d.added, d.revised

    def latest_sql(self, manifest: DtypeRecord, quote: Callable[[str], str]) -> str:
        names = set(manifest.names())
        key = manifest.identity
        parts = key.sql(names, quote) if key else [quote(n) for n in manifest.names()]
        partition = ", ".join([*parts, "_n"])
        return f"row_number() over (partition by {partition} order by _version desc) = 1"

    def latest_count(self, table: pa.Table) -> int:
        # Every record has exactly one first version.
        return int(pc.sum(pc.equal(table["_version"], 1)).as_py() or 0)


class SnapshotMode(Mode):
    """Whole answers per symbol and filter (forecasts: one per symbol and type)."""

    name = "snapshot"
    meta = SNAPSHOT_META
    latest_needs = ("_version", "_scope")
    unit_columns: tuple[str, ...] = ("symbol", "_scope")  # what tells the units apart

    def unit_id(self, symbol: str | None, scope: str) -> str:
        return unit_of(symbol, scope)

    def units(
        self,
        ds: Dataset,
        symbols: Sequence[str] | None,
        state: dict[str, Any],
        request: Any,
        today: dt.date,
    ) -> list[Unit]:
        if not symbols:
            raise InvalidParameterError(
                f"{ds.name} is per symbol: give symbols, market= or region=", parameter="symbols"
            )
        variants = ds.lake_variants()  # forecast: one snapshot per type
        return [
            Unit(ds, s, scope, dict(v), n, id=self.unit_id(s, scope))
            for s in symbols
            for v, n in variants
            for scope in [" ".join(v.values())]
        ]

    def unit_meta(self, scope: str, n: int) -> dict[str, list[Any]]:
        return {"_scope": [scope] * n}

    def index(self, stored: pa.Table | None, manifest: DtypeRecord) -> Any:
        if stored is None:
            return {}
        return snapshot_index(stored, manifest, self.unit_columns)

    def diff(
        self, table: pa.Table, arrived: Sequence[Arrived], manifest: DtypeRecord, index: Any
    ) -> tuple[pa.Table, int, int]:
        ids = [a.unit_id for a in arrived for _ in range(a.table.num_rows)]
        keep, version, added, revised = diff_snapshots(
            table.drop_columns(["_fetched_at", "_scope"]), ids, manifest, index
        )
        kept = table.filter(pa.array(keep))
        kept = kept.append_column("_version", pa.array(version[keep], type=pa.int32()))
        return kept, added, revised

    def superseded(self, table: pa.Table, manifest: DtypeRecord) -> np.ndarray:
        return superseded_snapshots(table, self.unit_columns)

    def latest_sql(self, manifest: DtypeRecord, quote: Callable[[str], str]) -> str:
        partition = ", ".join(self.unit_columns)
        return f"_version = max(_version) over (partition by {partition})"

    def latest_count(self, table: pa.Table) -> int:
        unit = list(self.unit_columns)
        grouped = table.group_by(unit).aggregate([("_version", "max")])
        joined = table.join(grouped, unit)
        return int(pc.sum(pc.equal(joined["_version"], joined["_version_max"])).as_py() or 0)


class CrossMode(SnapshotMode):
    """Whole cross sections (screeners, recent, discovery), one per filter; the service's
    summary of each is kept in the state by the sync id."""

    unit_columns = ("_scope",)
    file_keys = ("_scope", "symbol")
    read_needs = ("_sync_id", "_scope")  # the filter to read, the sync's summary

    def unit_id(self, symbol: str | None, scope: str) -> str:
        return unit_of(None, scope)

    def stored_filter(self, arrived: Sequence[Arrived]) -> Any:
        return pc.field("_scope").isin(sorted({a.scope for a in arrived}))

    def units(
        self,
        ds: Dataset,
        symbols: Sequence[str] | None,
        state: dict[str, Any],
        request: Any,
        today: dt.date,
    ) -> list[Unit]:
        market, region = request.market, request.region
        params: dict[str, Any] = {}
        if ds.whole_cross_section:
            params["limit"] = ds.limit_bounds[1]  # all the service gives in one answer
        scope = ""
        if ds.param("market") is not None and (market or region):
            params.update(market=market, region=region)
            scope = f"market={market}" if market else f"region={region}"
        elif ds.needs_market_or_region:
            raise InvalidParameterError(
                f"{ds.name} needs market= or region=", parameter="market", dataset=ds.name
            )
        return [Unit(ds, None, scope, params, id=self.unit_id(None, scope))]

    def scope_where(
        self, market: str | None, region: str | None, pick: Callable[[], str]
    ) -> list[Any]:
        return [pc.field("_scope") == pick()]


_WINDOW = WindowMode()
_PER_SYMBOL = SnapshotMode()
_CROSS = CrossMode()


def mode_of(ds: Dataset) -> Mode:
    """The storage mode of a registry entry, chosen once.

    >>> from mdframes.registry import REGISTRY
    >>> mode_of(REGISTRY["tickers"]).name, type(mode_of(REGISTRY["tickers"])).__name__
    ('snapshot', 'CrossMode')
    """
    if ds.lake == "window":
        return _WINDOW
    if ds.lake == "snapshot":
        return _PER_SYMBOL if ds.per_symbol else _CROSS
    raise ValueError(f"{ds.name} is not a lake dataset")
