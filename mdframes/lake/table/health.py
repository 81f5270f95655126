"""A dataset's health: what the log, the data files and the lake's own files cannot vouch
for, found by :meth:`Health.examine` (for ``check()`` and ``repair()``) and by
:meth:`Health.guard` before a writer starts.

The lake keeps two versions in the dataset's state: ``committed``, the last table version it
committed (a log that no longer reaches it lost versions: a deleted commit file or
``_delta_log/``), and ``reviewed``, up to which every commit is the lake's own or was repaired
(a later commit without the lake's application transaction is another program's). Reads of a
version past ``reviewed`` keep one row per record and fetch time, so rows another writer
appended never double a record.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ...errors import LakeDamagedError
from ..store.faults import damaged, unreachable
from .commit import Writer
from .layout import DELTA_LOG, FORMAT1_MANIFEST, MANIFEST, STATE
from .log import LogCommit, TableLog, TableVersion, arrow_schema
from .place import TablePlace
from .scan import StoredRecords
from .sidecar import Sidecar

__all__ = ["Health", "Findings", "commit_file"]

_MS = dt.timedelta(milliseconds=1)
_time = dt.datetime.fromisoformat
REPAIR = "run lake.repair() (or `mdframes lake repair`)"


def commit_file(folder: str, version: int) -> str:
    return f"{folder}/{DELTA_LOG}/{version:020d}.json"


@dataclass
class Findings:
    """What :meth:`Health.examine` found in one dataset."""

    snap: TableVersion | None = None
    latest: int | None = None  # the log's latest version (None: no table)
    state: dict[str, Any] | None = None  # as stored (None: absent or unreadable)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (file, problem)
    format1: bool = False
    manifest_lost: bool = False
    state_lost: bool = False
    log_lost: bool = False
    lost_versions: tuple[int, int] | None = None  # first and last version gone
    foreign: list[LogCommit] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # listed file -> its problem


@dataclass(eq=False)
class Health:
    """Check one dataset's table (a role of :class:`~.table.DatasetTable`)."""

    place: TablePlace
    sidecar: Sidecar
    log: TableLog
    records: StoredRecords
    writer: Writer

    def examine(self) -> Findings:
        """Everything ``check()`` reports, and what ``repair()`` needs to mend it."""
        place, sidecar, out = self.place, self.sidecar, Findings()
        folder = place.folder
        sidecar.forget()  # as stored now, not as this object last read it
        self.log.forget()
        try:
            if sidecar.stored_manifest() is None and sidecar.is_format1():
                why = "a dataset of lake format 1 (mdframes 0.2) not converted: run lake.upgrade()"
                out.format1, out.problems = True, [(f"{folder}/{FORMAT1_MANIFEST}", why)]
                return out
        except LakeDamagedError as exc:
            out.manifest_lost = True
            out.problems.append(self._finding(exc))
        try:
            out.state = sidecar.stored_state()
        except LakeDamagedError as exc:
            out.state_lost = True
            out.problems.append(self._finding(exc))
        try:
            out.snap = self.log.reopen()
        except LakeDamagedError as exc:
            out.problems.append(self._finding(exc))
            return out
        out.latest = None if out.snap is None else out.snap.version
        state = out.state or {}
        committed, reviewed = int(state.get("committed", -1)), int(state.get("reviewed", -1))
        if out.latest is not None:
            if not out.manifest_lost and sidecar.stored_manifest() is None:
                out.manifest_lost = True
                out.problems.append((f"{folder}/{MANIFEST}", "missing: the dtype record is gone"))
            if out.state is None and not out.state_lost:
                out.state_lost = True
                out.problems.append(
                    (f"{folder}/{STATE}", "missing: the record of what was synced is gone")
                )
        if out.latest is None and committed >= 0:
            out.log_lost = True
            out.problems.append((f"{folder}/{DELTA_LOG}", _log_gone(committed)))
        elif out.latest is not None and out.latest < committed:
            out.lost_versions = (out.latest + 1, committed)
            out.problems.append((commit_file(folder, out.latest + 1), _versions_gone(out)))
        if out.latest is not None:
            out.foreign = [c for c in self.log.commits(reviewed, out.latest) if c.foreign]
            out.problems += [(commit_file(folder, c.version), _foreign(c)) for c in out.foreign]
        out.files = self.listed_problems(out.snap)
        out.problems += list(out.files.items()) + self._metaless(out.snap)
        if out.snap is not None and not out.manifest_lost:
            out.problems += self._columns()
        return out

    def _finding(self, exc: LakeDamagedError) -> tuple[str, str]:
        """``exc`` as a (file, problem) finding; :class:`~mdframes.LakeUnavailableError`
        raised when it says the store did not answer: that is no finding about the lake."""
        gone = unreachable(self.place.storage.location, exc)
        if gone is not None:
            raise gone from None
        return exc.file or self.place.folder, str(exc)

    def problems(self) -> tuple[TableVersion | None, list[tuple[str, str]]]:
        """(version, [(file, problem)]) for what the lake cannot vouch for."""
        found = self.examine()
        return found.snap, found.problems

    def listed_problems(self, snap: TableVersion | None) -> dict[str, str]:
        """Listed files that are missing, unreadable, or not the size or row count the log
        says (another file put in the place of one)."""
        out: dict[str, str] = {}
        if snap is None:
            return out
        rows = snap.rows or [None] * len(snap.files)
        sizes: list[int | None] = list(snap.sizes) or [None] * len(snap.files)
        for uri, n, size in zip(snap.files, rows, sizes, strict=True):
            problem = self.records.probe(uri, n, size)
            if problem:
                out[self.place.name(uri)] = problem
        return out

    def _metaless(self, snap: TableVersion | None) -> list[tuple[str, str]]:
        """Listed files with rows that lack the lake's meta columns (another program's
        append, by the log's statistics): reads never count them."""
        stats, column = None if snap is None else snap.stats, "null_count._fetched_at"
        if snap is None or stats is None or column not in stats.column_names:
            return []
        why = "rows without the lake's meta columns (another program's): never read or counted"
        nulls = stats[column].to_pylist()  # in the order of snap.files (TableLog._version)
        return [
            (self.place.name(u), f"{n} {why}") for u, n in zip(snap.files, nulls, strict=True) if n
        ]

    def _columns(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        record = f"{self.place.folder}/{MANIFEST}"
        expected = self.records.stored_schema()
        for f in arrow_schema(self.log.table):
            if f.name in expected.names and expected.field(f.name).type != f.type:
                want = expected.field(f.name).type
                out.append((record, f"column {f.name} is stored as {f.type}, recorded as {want}"))
            elif f.name not in expected.names:
                out.append((record, f"column {f.name} is not recorded"))
        return out

    def vouched(self, snap: TableVersion | None) -> bool:
        """Whether every commit up to ``snap`` is the lake's own or repaired (its rows need
        no check for copies). Raises :class:`LakeDamagedError` when the log lost versions
        the lake committed: a read never gets older data silently."""
        state = self.sidecar.stored_state()
        if state is None:
            return snap is None
        committed = int(state.get("committed", -1))
        folder, name = self.place.folder, self.place.ds.name
        if snap is None:
            if committed >= 0:
                raise damaged(name, f"{folder}/{DELTA_LOG}", _log_gone(committed))
            return True
        if snap.version < committed:
            lost = Findings(latest=snap.version, lost_versions=(snap.version + 1, committed))
            raise damaged(name, commit_file(folder, snap.version + 1), _versions_gone(lost))
        return int(state.get("reviewed", -1)) >= snap.version

    def guard(self, lease: Any, *, strict: bool = False) -> None:
        """Before a writer's first commit: refuse a table the lake cannot vouch for (lost
        versions or metadata, another program's delete or overwrite, a file not the one the
        log lists; with ``strict``, any commit of another program), then vouch for the log up
        to its latest version and set ``delta.appendOnly`` where it is missing."""
        place, sidecar, name = self.place, self.sidecar, self.place.ds.name
        sidecar.forget()
        sidecar.manifest  # noqa: B018 - a lost dtype record raises here
        state = sidecar.stored_state()
        snap = self.log.reopen()
        latest = None if snap is None else snap.version
        committed = int((state or {}).get("committed", -1))
        if latest is None:
            if committed >= 0:
                raise damaged(name, f"{place.folder}/{DELTA_LOG}", _log_gone(committed))
            return
        if state is None:
            raise damaged(name, f"{place.folder}/{STATE}", "missing: the record of what was synced")
        self.vouched(snap)
        reviewed = int(state.get("reviewed", -1))
        foreign = [c for c in self.log.commits(reviewed, latest) if c.foreign]
        for c in foreign:
            if c.removed or strict:
                raise LakeDamagedError(
                    f"{name}: {_foreign(c)}; {REPAIR} to undo it and sync again",
                    dataset=name,
                    file=commit_file(place.folder, c.version),
                )
        for file, problem in self._sizes().items():
            raise damaged(name, file, problem)
        sidecar.vouch(max(committed, latest), foreign[0].version - 1 if foreign else latest)
        self.writer.protect(lease)

    def _sizes(self) -> dict[str, str]:
        """Listed files missing or not of the size the log says (one listing of the folder)."""
        import pyarrow.fs as pafs

        snap, storage = self.log.snapshot(), self.place.storage
        if snap is None or not snap.files:
            return {}
        selector = pafs.FileSelector(storage.path(self.place.folder), recursive=True)
        found = {
            i.path: i.size
            for i in storage.fs.get_file_info(selector)
            if i.type == pafs.FileType.File
        }
        out = {}
        sizes: list[int | None] = list(snap.sizes) or [None] * len(snap.files)
        for uri, size in zip(snap.files, sizes, strict=True):
            held = found.get(self.place.fs_path(uri))
            if held is None:
                out[self.place.name(uri)] = "missing"
            elif size is not None and held != size:
                out[self.place.name(uri)] = f"holds {held} bytes where the log says {size}"
        return out

    def unit_symbol(self, unit: str) -> str | None:
        """The symbol a unit of the state is about (None: a cross-section)."""
        return self.place.mode.unit_symbol(unit)

    def units_of(self, stats: pa.Table | None, i: int, state: dict[str, Any]) -> list[str]:
        """The synced units whose rows file ``i`` of ``stats`` (the log's add actions) may
        hold: of a symbol in its symbol range, fetched within its range of fetch times (all
        units where the log's statistics cannot tell)."""
        lo, hi = _range(stats, i, "symbol")
        first, last = _range(stats, i, "_fetched_at")
        out = []
        for unit, entry in state["units"].items():
            symbol = self.unit_symbol(unit)
            if symbol is not None and lo is not None and not lo <= symbol <= hi:
                continue
            since, until = entry.get("first_fetched_at"), entry.get("fetched_at")
            fetched = (_time(since), _time(until)) if since and until else None
            # Delta keeps times to the millisecond, cut: a millisecond's slack.
            if first is None or fetched is None or fetched[1] >= first and fetched[0] <= last + _MS:
                out.append(unit)
        return out

    def lose(self, state: dict[str, Any], units: Iterable[str]) -> list[str]:
        """Mark ``units`` not synced in a dataset's state (:func:`.state.mark_not_synced`):
        the next sync fetches them again, coverage calls them pending until then. Returns
        their symbols, sorted."""
        from ..sync.state import mark_not_synced as mark

        units = list(units)
        mark(state, units)
        return sorted({s for u in units if (s := self.unit_symbol(u)) is not None})


def _range(stats: pa.Table | None, i: int, column: str) -> tuple[Any, Any]:
    """The least and greatest value of ``column`` in file ``i`` by the log's statistics
    (None, None: they do not say)."""
    if stats is None or f"min.{column}" not in stats.column_names:
        return None, None
    lo, hi = stats[f"min.{column}"][i].as_py(), stats[f"max.{column}"][i].as_py()
    return (None, None) if lo is None or hi is None else (lo, hi)


def _log_gone(committed: int) -> str:
    return f"the Delta log is gone while the lake committed versions up to {committed}"


def _versions_gone(found: Findings) -> str:
    assert found.lost_versions is not None
    first, last = found.lost_versions
    which = f"version {first}" if first == last else f"versions {first}..{last}"
    return f"{which}, committed by the lake, gone from the log (it ends at {found.latest})"


def _foreign(c: LogCommit) -> str:
    did = "took stored rows out or rewrote them" if c.removed else "added rows"
    if not c.added and not c.removed:
        did = "changed the table's metadata"
    return f"{c.describe()} was written by another program, not mdframes; it {did}"
