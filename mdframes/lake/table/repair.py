"""Repairing one dataset: every case :meth:`~.health.Health.examine` reports is brought back
to a table that syncs and reads, and what could not be restored is said with what to do.

- A lost dtype record is rebuilt from the table's columns and the registry; a lost state
  starts again (every window is fetched again; stored records are not stored twice).
- A log that lost its newest versions (or all of them) is taken as it is: the windows those
  versions held are marked not synced, so the next sync fetches them again.
- Another program's delete or overwrite is undone by restoring the version before it (the
  files it removed are still there until a vacuum); rows another program appended are
  dropped (copies of the lake's rows, or rows the lake never fetched).
- Listed files that are missing, unreadable or replaced by another file are dropped and their
  windows marked not synced.
- A log that cannot be opened while its commit files can be read: its checkpoints (copies of
  what the commit files say) and ``_last_checkpoint`` are set aside, and a newest commit file
  that is not JSON with them (its version is then lost, as above).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ...errors import LakeDamagedError
from .commit import Writer
from .health import Findings, Health, commit_file
from .layout import DELTA_LOG, MANIFEST, STATE
from .log import TableLog, TableVersion, arrow_schema, deltalake_module
from .place import TablePlace
from .sidecar import Sidecar

__all__ = ["Repair", "LOST_COLUMNS"]

LOST_COLUMNS = ["dataset", "file", "symbols", "rows", "note"]
_REFETCH = "the next sync fetches their windows again"


@dataclass(eq=False)
class Repair:
    """Repair one dataset's table (a role of :class:`~.table.DatasetTable`)."""

    place: TablePlace
    sidecar: Sidecar
    log: TableLog
    writer: Writer
    health: Health
    lost: list[dict[str, Any]] = field(default_factory=list, init=False)

    def run(self, lease: Any) -> list[dict[str, Any]]:
        """Mend what :meth:`Health.examine` finds; returns one row per thing lost or mended:
        ``dataset, file, symbols, rows, note`` (``note``: what was done, what to do)."""
        self.lost = []
        self._mend_log()
        self.writer.begin()
        found = self.health.examine()
        self.dropping: dict[str, str] = {}  # listed file -> why it goes
        if found.format1 or not found.problems:
            return self.lost
        state = found.state if found.state is not None else {"units": {}, "failed": {}}
        if found.manifest_lost and self.log.table is not None:
            self.sidecar.rebuild_manifest(arrow_schema(self.log.table))
            self._note(MANIFEST, [], None, "rebuilt from the table's columns and the registry")
        if found.state_lost:
            self._note(
                STATE,
                [],
                None,
                "the record of synced windows was lost: the next sync fetches every window "
                "again (stored records are not stored twice); pass start= to reach as far "
                "back as before",
            )
        if found.log_lost:
            symbols = self.health.lose(state, state["units"])
            self._note(
                DELTA_LOG,
                symbols,
                None,
                "the Delta log was gone: the table starts again and the next sync fetches "
                "every window again; older versions and past snapshots are lost (restore "
                "_delta_log/ from a backup before repair() to keep them)",
            )
            state["committed"] = state["reviewed"] = -1
        elif found.lost_versions is not None:
            self._lost_versions(found, state)
        self._foreign(found, state, lease)
        self._drop_files(state, lease)
        latest = self.log.latest_version()
        state["committed"] = state["reviewed"] = -1 if latest is None else latest
        self.sidecar.session = {}
        self.sidecar.save_state(state)
        return self.lost

    def _mend_log(self) -> None:
        """A log that does not open: a newest commit file that is not JSON and, when every
        commit since the table's creation is left, the checkpoints are set aside (renamed
        ``_damaged-<name>`` beside the table); ``_last_checkpoint`` always (delta-rs then
        finds the newest checkpoint itself)."""
        try:
            self.log.forget()
            self.log.reopen()
            return
        except LakeDamagedError:
            pass
        place, storage = self.place, self.place.storage
        names = [e.name for e in storage.listdir(place.folder, DELTA_LOG)]
        commits = sorted(int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json"))
        while commits and not self._readable(commits[-1]):
            name = f"{commits.pop():020d}.json"
            self._set_aside(name, "not a commit (garbled): set aside, its version is lost")
        whole = commits == list(range(len(commits)))
        for name in names:
            if name == "_last_checkpoint" or (whole and ".checkpoint." in name):
                self._set_aside(name, "set aside: the log is read from its commit files")

    def _readable(self, version: int) -> bool:
        try:
            return self.log.commit(version) is not None
        except LakeDamagedError:
            return False

    def _set_aside(self, name: str, note: str) -> None:
        fs, folder = self.place.storage.fs, self.place.storage.path(self.place.folder)
        fs.move(f"{folder}/{DELTA_LOG}/{name}", f"{folder}/_damaged-{name}")
        self._note(f"{DELTA_LOG}/{name}", [], None, note)

    def _note(self, file: str, symbols: list[str], rows: int | None, note: str) -> None:
        name = file if file.startswith(self.place.folder) else f"{self.place.folder}/{file}"
        self.lost.append(
            {
                "dataset": self.place.ds.name,
                "file": name,
                "symbols": symbols,
                "rows": rows,
                "note": note,
            }
        )

    def _lost_versions(self, found: Findings, state: dict[str, Any]) -> None:
        """Versions gone from the log: their rows are in data files no version lists, written
        after the last version left; the windows of those files' symbols are synced again."""
        assert found.lost_versions is not None and found.latest is not None
        first, last = found.lost_versions
        commit = self.log.commit(found.latest)
        since = commit.timestamp if commit is not None and commit.timestamp else 0
        symbols, rows = self._orphans(found.snap, since)
        of = self.health.unit_symbol
        self.health.lose(state, [u for u in state["units"] if not symbols or of(u) in symbols])
        which = f"version {first}" if first == last else f"versions {first}..{last}"
        self._note(
            commit_file(self.place.folder, first),
            sorted(symbols),
            rows,
            f"{which} gone from the log: {_REFETCH} (snapshots they held cannot be fetched "
            "again; restore the commit files from a backup before repair() to keep them)",
        )
        state["committed"] = found.latest

    def _orphans(self, snap: TableVersion | None, since_ms: int) -> tuple[set[str], int | None]:
        """Symbols and rows of the data files no version lists, written since ``since_ms``
        (a second's slack: object stores keep modification times in whole seconds; an older
        file taken too costs a window fetched again, nothing more)."""
        import pyarrow.fs as pafs
        import pyarrow.parquet as pq

        storage = self.place.storage
        listed = {self.place.fs_path(u) for u in (snap.files if snap is not None else [])}
        selector = pafs.FileSelector(storage.path(self.place.folder), recursive=True)
        symbols: set[str] = set()
        rows = 0
        for info in storage.fs.get_file_info(selector):
            rel = info.path[len(storage.path(self.place.folder)) + 1 :]
            hidden = any(p.startswith(("_", ".")) for p in rel.split("/"))
            if info.type != pafs.FileType.File or hidden or info.path in listed:
                continue
            if not rel.endswith(".parquet") or info.mtime_ns // 1_000_000 < since_ms - 2000:
                continue
            with contextlib.suppress(OSError, pa.ArrowInvalid):
                part = pq.read_table(info.path, columns=["symbol"], filesystem=storage.fs)
                symbols |= {s for s in part["symbol"].to_pylist() if s is not None}
                rows += part.num_rows
        return symbols, rows or None

    def _foreign(self, found: Findings, state: dict[str, Any], lease: Any) -> None:
        """Another program's commits: a delete or overwrite undone by restoring the version
        before it; files it appended dropped."""
        removing = [c for c in found.foreign if c.removed]
        undone: set[int] = set()
        if removing and found.latest is not None:
            first = removing[0]
            later = self.log.commits(first.version, found.latest)
            if not any(c.ours for c in later):
                self._restore(first.version - 1, first.describe(), state, lease)
                undone = {c.version for c in later} | {first.version}
        snap = self.log.snapshot()
        listed = {self.place.name(u) for u in (snap.files if snap is not None else [])}
        for c in found.foreign:
            if c.version in undone:
                continue
            names = [self.place.name(p) for p in c.added]
            for name in [n for n in names if n in listed]:
                self.dropping[name] = f"added by {c.describe()}, another program: dropped"
            why = None
            if c.removed:
                why = (
                    f"{c.describe()}, another program, took rows out and mdframes committed "
                    "after it: what it took out is not restored; sync those symbols with "
                    "start= to fetch their windows again"
                )
            elif not any(n in listed for n in names):
                why = f"{c.describe()}, another program: nothing of it is listed now"
            if why is not None:
                self._note(commit_file(self.place.folder, c.version), [], None, why)

    def _restore(self, version: int, what: str, state: dict[str, Any], lease: Any) -> None:
        """Restore ``version`` (one commit); files it listed that are gone are lost, their
        windows marked not synced."""
        dl = deltalake_module()
        storage = self.place.storage
        old = dl.DeltaTable(
            self.place.uri, version=version, storage_options=storage.delta_options()
        )
        stats = pa.table(old.get_add_actions(flatten=True))
        uris = [self.place.file_uri(p) for p in stats["path"].to_pylist()]
        gone = [i for i, u in enumerate(uris) if self.health.records.probe(u) == "missing"]
        units = {u for i in gone for u in self.health.units_of(stats, i, state)}
        delta = self.writer.table()
        self.writer.commit(
            lease,
            lambda props: delta.restore(
                version, ignore_missing_files=True, commit_properties=props
            ),
        )
        note = f"{what} and later commits of other programs undone (version {version} restored)"
        rows: int | None = None
        symbols = self.health.lose(state, units)
        if gone:
            counts = stats["num_records"].to_pylist() if "num_records" in stats.column_names else []
            rows = sum(int(counts[i] or 0) for i in gone) if counts else None
            note += f"; {len(gone)} of its files were vacuumed already: {_REFETCH}"
        self._note(commit_file(self.place.folder, version + 1), symbols, rows, note)

    def _drop_files(self, state: dict[str, Any], lease: Any) -> None:
        """Drop listed files that are missing, unreadable, replaced or another program's
        (one commit); the lake's own lost rows have their windows marked not synced."""
        snap = self.log.snapshot()
        if snap is None:
            return
        bad = self.health.listed_problems(snap)
        by_name = {self.place.name(u): i for i, u in enumerate(snap.files)}
        drop = []
        for name, problem in {**bad, **self.dropping}.items():
            i = by_name.get(name)
            if i is None:
                continue
            uri = snap.files[i]
            rows = snap.rows[i] if snap.rows else None
            if name in self.dropping:
                self._note(name, [], rows, self.dropping[name])
            else:
                symbols = self.health.lose(state, self.health.units_of(snap.stats, i, state))
                self._note(name, symbols, rows, f"{problem}: dropped; {_REFETCH}")
            drop.append((uri, problem))
        self.dropping = {}
        if not drop:
            return
        storage = self.place.storage
        for uri, problem in drop:
            if problem != "missing":  # set aside, so that the log's repair drops it
                path = self.place.fs_path(uri)
                head, tail = path.rsplit("/", 1)
                storage.fs.move(path, f"{head}/_damaged-{tail}")
        delta = self.writer.table()
        self.writer.commit(
            lease, lambda props: delta.repair(dry_run=False, commit_properties=props)
        )
