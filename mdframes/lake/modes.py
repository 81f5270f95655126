"""Everything that differs by storage mode, decided once per dataset.

A windowed dataset (insider trades, congress trades, sentiment, ...) keeps one row per version
of each record; a snapshot dataset (forecasts, screeners, recent, discovery) keeps whole
answers, one per sync that saw something change, per symbol and filter or, for a cross section,
per filter. :func:`mode_of` picks the mode object from the registry entry once; the sync, the
reads, SQL and ``info`` ask it instead of branching on the entry themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..registry import Dataset
from .layout import Manifest
from .order import arrange
from .versions import diff_snapshots, diff_window, latest, snapshot_index, unit_of, window_index

__all__ = ["Mode", "WindowMode", "SnapshotMode", "mode_of", "Arrived", "symbol_filter"]

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
    cross: bool = False

    def unit_id(self, symbol: str | None, scope: str) -> str:
        raise NotImplementedError

    def stored_filter(self, arrived: Sequence[Arrived]) -> Any:
        """The stored rows a batch must be compared with."""
        if self.cross:
            return pc.field("_scope").isin(sorted({a.scope for a in arrived}))
        return symbol_filter(sorted({str(a.symbol) for a in arrived}))

    def index(self, stored: pa.Table | None, manifest: Manifest) -> Any:
        raise NotImplementedError

    def diff(
        self, table: pa.Table, arrived: Sequence[Arrived], manifest: Manifest, index: Any
    ) -> tuple[pa.Table, int, int]:
        """The rows to store (with ``_version`` and, windowed, ``_n``), new records, new
        versions."""
        raise NotImplementedError

    def latest(self, table: pa.Table, manifest: Manifest) -> pa.Table:
        return latest(table, manifest, self.cross)

    def sort_keys(self, manifest: Manifest) -> list[tuple[str, str]]:
        """The one order of the dataset's rows, stored and read, the loaders' order (CONTRACT
        §2, §10.1): (filter,) symbol, time, then the record identity's columns (ties), then
        ``_n`` (records sharing an identity in one answer) and ``_version``. Text, categories
        included, orders by its value; nulls last."""
        names = manifest.names()
        keys: list[str] = ["_scope"] if self.cross else []
        for name in ["symbol", manifest.time or "", *manifest.identity.names]:
            if name and name in names and name not in keys:
                keys.append(name)
        if len(keys) == int(self.cross):
            keys += [n for n in names if manifest.column(n).kind in _SORTABLE][:3]  # type: ignore[union-attr]
        keys += [m for m in ("_n", "_version") if m in self.meta]
        return [(k, "ascending") for k in keys]

    def sort(
        self, table: pa.Table, manifest: Manifest, symbols: Sequence[str] | None = None
    ) -> pa.Table:
        """``table`` (rows of a read) in :meth:`sort_keys` order, symbols in the order
        ``symbols`` gives them (as a loader called with that list orders them)."""
        keys = [k for k, _ in self.sort_keys(manifest) if k in table.column_names]
        ranked = symbols is not None and len(symbols) > 1 and "symbol" in keys
        if ranked:
            rank = pc.index_in(table["symbol"], value_set=pa.array(list(symbols or ())))
            table = table.append_column("__rank", rank)
            keys = ["__rank" if k == "symbol" else k for k in keys]
        table = arrange(table, keys)
        return table.drop_columns(["__rank"]) if ranked else table

    def latest_sql(self, manifest: Manifest, quote: Callable[[str], str]) -> str:
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

    def index(self, stored: pa.Table | None, manifest: Manifest) -> Any:
        return window_index(stored, manifest)

    def diff(
        self, table: pa.Table, arrived: Sequence[Arrived], manifest: Manifest, index: Any
    ) -> tuple[pa.Table, int, int]:
        d = diff_window(table.drop_columns(["_fetched_at"]), manifest, index)
        kept = table.take(pa.array(d.take, type=pa.int64()))
        kept = kept.append_column("_version", pa.array(d.version, type=pa.int32()))
        kept = kept.append_column("_n", pa.array(d.n, type=pa.int16()))
        return kept, d.added, d.revised

    def latest_sql(self, manifest: Manifest, quote: Callable[[str], str]) -> str:
        names = set(manifest.names())
        key = manifest.identity
        parts = key.sql(names, quote) if key else [quote(n) for n in manifest.names()]
        partition = ", ".join([*parts, "_n"])
        return f"row_number() over (partition by {partition} order by _version desc) = 1"

    def latest_count(self, table: pa.Table) -> int:
        # Every record has exactly one first version.
        return int(pc.sum(pc.equal(table["_version"], 1)).as_py() or 0)


class SnapshotMode(Mode):
    name = "snapshot"
    meta = SNAPSHOT_META
    latest_needs = ("_version", "_scope")

    def __init__(self, cross: bool) -> None:
        self.cross = cross

    def unit_id(self, symbol: str | None, scope: str) -> str:
        return unit_of(None if self.cross else symbol, scope)

    def index(self, stored: pa.Table | None, manifest: Manifest) -> Any:
        if stored is None:
            return {}
        return snapshot_index(stored, manifest, self.cross)

    def diff(
        self, table: pa.Table, arrived: Sequence[Arrived], manifest: Manifest, index: Any
    ) -> tuple[pa.Table, int, int]:
        ids = [a.unit_id for a in arrived for _ in range(a.table.num_rows)]
        keep, version, added, revised = diff_snapshots(
            table.drop_columns(["_fetched_at", "_scope"]), ids, manifest, index
        )
        kept = table.filter(pa.array(keep))
        kept = kept.append_column("_version", pa.array(version[keep], type=pa.int32()))
        return kept, added, revised

    def latest_sql(self, manifest: Manifest, quote: Callable[[str], str]) -> str:
        partition = "_scope" if self.cross else "symbol, _scope"
        return f"_version = max(_version) over (partition by {partition})"

    def latest_count(self, table: pa.Table) -> int:
        unit = ["_scope"] if self.cross else ["symbol", "_scope"]
        grouped = table.group_by(unit).aggregate([("_version", "max")])
        joined = table.join(grouped, unit)
        return int(pc.sum(pc.equal(joined["_version"], joined["_version_max"])).as_py() or 0)


_WINDOW = WindowMode()
_PER_SYMBOL = SnapshotMode(cross=False)
_CROSS = SnapshotMode(cross=True)


def mode_of(ds: Dataset) -> Mode:
    """The storage mode of a registry entry, chosen once.

    >>> from mdframes.registry import REGISTRY
    >>> mode_of(REGISTRY["tickers"]).name, mode_of(REGISTRY["tickers"]).cross
    ('snapshot', True)
    """
    if ds.lake == "window":
        return _WINDOW
    if ds.lake == "snapshot":
        return _CROSS if "{symbol}" not in ds.path else _PER_SYMBOL
    raise ValueError(f"{ds.name} is not a lake dataset")
