"""A dataset's health: what the log, the data files and the lake's own files cannot vouch
for (:meth:`Health.problems`), and the repair that drops it and marks its windows not synced."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..errors import LakeDamagedError
from .commit import Writer
from .faults import unreachable
from .layout import FORMAT1_MANIFEST, MANIFEST
from .log import Snapshot, TableLog, arrow_schema
from .place import TablePlace
from .scan import Records
from .sidecar import Sidecar

__all__ = ["Health", "mark_not_synced"]


def mark_not_synced(state: dict[str, Any], symbols: set[str], unit_symbol: Any) -> None:
    """Mark the synced windows (or snapshots) of ``symbols`` (empty: all) not synced in a
    dataset's state (:func:`.state.mark_not_synced`): the next sync fetches them again, and
    coverage calls them pending until then."""
    from .state import mark_not_synced as mark

    mark(state, [u for u in state["units"] if not symbols or unit_symbol(u) in symbols])


class Health:
    """Check and repair one dataset's table (a role of :class:`~.table.DatasetTable`)."""

    def __init__(
        self, place: TablePlace, sidecar: Sidecar, log: TableLog, records: Records, writer: Writer
    ) -> None:
        self.place = place
        self.sidecar = sidecar
        self.log = log
        self.records = records
        self.writer = writer

    def problems(self) -> tuple[Snapshot | None, list[tuple[str, str]]]:
        """(version, [(file, problem)]) for what the log cannot vouch for."""
        place, sidecar = self.place, self.sidecar
        out: list[tuple[str, str]] = []
        if sidecar.manifest is None and sidecar.is_format1():
            why = "a dataset of lake format 1 (mdframes 0.2) not converted: run lake.upgrade()"
            return None, [(f"{place.folder}/{FORMAT1_MANIFEST}", why)]
        try:
            manifest = sidecar.manifest
            sidecar.state()
            snap = self.log.snapshot()
        except LakeDamagedError as exc:
            gone = unreachable(place.storage.location, exc)
            if gone is not None:  # the store did not answer: no finding about the lake
                raise gone from None
            return None, [(exc.file or place.folder, str(exc))]
        if snap is None:
            return None, out
        rows = snap.rows or [None] * len(snap.files)
        for uri, n in zip(snap.files, rows, strict=True):
            problem = self.records.probe(uri, n)
            if problem:
                out.append((place.name(uri), problem))
        if manifest is not None:
            expected = self.records.stored_schema()
            for f in arrow_schema(self.log.table):
                if f.name in expected.names and expected.field(f.name).type != f.type:
                    out.append(
                        (
                            f"{place.folder}/{MANIFEST}",
                            f"column {f.name} is stored as {f.type}, recorded as "
                            f"{expected.field(f.name).type}",
                        )
                    )
                elif f.name not in expected.names:
                    out.append((f"{place.folder}/{MANIFEST}", f"column {f.name} is not recorded"))
        return snap, out

    def repair(self, lease: Any) -> list[dict[str, Any]]:
        """Drop listed files that are missing or unreadable (one commit), mark their symbols'
        windows not synced; returns what was lost."""
        place = self.place
        snap, problems = self.problems()
        if snap is None:
            return []
        stats = snap.stats
        by_name = {place.name(u): i for i, u in enumerate(snap.files)}
        lost = []
        state = self.sidecar.state()
        for name, problem in problems:
            i = by_name.get(name)
            if i is None:
                continue
            uri = snap.files[i]
            if problem != "missing":  # set aside, so that the log's repair drops it
                path = place.fs_path(uri)
                place.storage.fs.move(
                    path, path.rsplit("/", 1)[0] + "/_damaged-" + path.rsplit("/", 1)[1]
                )
            symbols = self._symbols_of(stats, i, state)
            mark_not_synced(state, symbols, self.unit_symbol)
            lost.append(
                {
                    "dataset": place.ds.name,
                    "file": name,
                    "symbols": sorted(symbols),
                    "rows": snap.rows[i] if snap.rows else None,
                }
            )
        if not lost:
            return []
        delta = self.writer.table()
        self.writer.commit(
            lease, lambda props: delta.repair(dry_run=False, commit_properties=props)
        )
        self.sidecar.save_state(state)
        return lost

    def unit_symbol(self, unit: str) -> str | None:
        """The symbol a unit of the state is about (None: a cross-section)."""
        if self.place.mode.name == "window":
            return unit
        return unit.split(" ", 1)[0] or None

    def _symbols_of(self, stats: pa.Table | None, i: int, state: dict[str, Any]) -> set[str]:
        """The symbols a lost file may have held, from the log's statistics (empty: all)."""
        if stats is None or "min.symbol" not in stats.column_names:
            return set()
        lo, hi = stats["min.symbol"][i].as_py(), stats["max.symbol"][i].as_py()
        if lo is None or hi is None:
            return set()
        known = {self.unit_symbol(u) for u in state["units"]}
        return {s for s in known if s is not None and lo <= s <= hi} | {lo, hi}
