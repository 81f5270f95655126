"""A dataset's Delta log as readers see it: the table refreshed to its latest version, and
one version's file list with the log's statistics."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..store.faults import damaged
from .layout import DELTA_LOG
from .place import TablePlace

__all__ = [
    "TableVersion",
    "TableLog",
    "LogCommit",
    "deltalake_module",
    "arrow_schema",
    "APP_ID",
    "FORMAT1_APP",
    "OUR_APPS",
]

# The application transactions mdframes writes (see :mod:`.commit`, :mod:`.upgrade`): a
# commit that carries one of them is the lake's own.
APP_ID = "mdframes-lake"
FORMAT1_APP = "mdframes-lake-format1"
OUR_APPS = (APP_ID, FORMAT1_APP)


def deltalake_module() -> Any:
    from ..._deps import require

    return require("deltalake", "lake", "md.Lake")


def arrow_schema(delta: Any) -> pa.Schema:
    """A Delta table's schema in Arrow."""
    return pa.schema(delta.schema().to_arrow())


@dataclass
class TableVersion:
    """One table version: its data files (URIs as the log lists them), sizes and row counts."""

    version: int
    files: list[str]
    sizes: list[int] = field(default_factory=list)
    rows: list[int | None] = field(default_factory=list)
    stats: pa.Table | None = None  # the log's add actions (flattened statistics)
    _extents: dict[str, tuple[Any, Any] | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    # Whether its files are in stored order (TableLog.in_stored_order), once per version.
    ordered: bool | None = field(default=None, init=False, repr=False, compare=False)

    def extent(self, column: str) -> tuple[Any, Any] | None:
        """The least and greatest value of ``column`` over the version's rows by the log's
        statistics (once per version), None when they cannot tell: a file without them, a
        null in the column. Delta keeps times there to the millisecond, cut: a stored time
        may be up to a millisecond past the greatest."""
        if column not in self._extents:
            self._extents[column] = _extent(self.stats, len(self.files), column)
        return self._extents[column]


def _extent(stats: pa.Table | None, files: int, column: str) -> tuple[Any, Any] | None:
    names = set() if stats is None else set(stats.column_names)
    wanted = [f"null_count.{column}", f"min.{column}", f"max.{column}"]
    if stats is None or not files or stats.num_rows != files or not set(wanted) <= names:
        return None
    nulls, lows, highs = (stats[n].to_pylist() for n in wanted)
    if any(n != 0 for n in nulls) or None in lows or None in highs:
        return None
    return min(lows), max(highs)


@dataclass
class LogCommit:
    """One commit of the log as its ``<version>.json`` file says: who made it and what it
    changed."""

    version: int
    operation: str
    engine: str
    ours: bool  # carries the lake's application transaction (or created the table)
    added: list[str] = field(default_factory=list)  # data files added
    removed: list[str] = field(default_factory=list)  # data files removed
    timestamp: int | None = None  # milliseconds since the epoch

    @property
    def foreign(self) -> bool:
        """Another program's change to the table. A vacuum's commits (delta-rs logs VACUUM
        START and END around the files it deletes) list no file of any version, whoever ran
        it: no version's data changes, so they are housekeeping, not a foreign write."""
        housekeeping = self.operation.startswith("VACUUM") and not (self.added or self.removed)
        return not (self.ours or housekeeping)

    def describe(self) -> str:
        return f"version {self.version} ({self.operation or 'unknown operation'}, {self.engine})"


class TableLog:
    """The readers' table object (opened once, refreshed per read) and the latest version's
    file list (read from the log once per version). ``on_version`` is told of each new
    version read."""

    def __init__(self, place: TablePlace, on_version: Callable[[TableVersion], None]) -> None:
        self.place = place
        self.on_version = on_version
        self.table: Any = None  # the readers' Delta table object
        self._snap: TableVersion | None = None

    def delta(self) -> Any:
        """The opened Delta table, refreshed to its latest version (None: no table yet)."""
        dl = deltalake_module()
        from deltalake.exceptions import DeltaError, TableNotFoundError

        place = self.place
        with place.lock:
            try:
                if self.table is None:
                    options = place.storage.delta_options()
                    self.table = dl.DeltaTable(place.uri, storage_options=options)
                elif not self._at_latest(self.table.version()):
                    self.table.update_incremental()
            except TableNotFoundError:
                self.table = None
                return None
            except (DeltaError, OSError, ValueError) as exc:
                self.table = None
                raise damaged(
                    place.ds.name, f"{place.folder}/{DELTA_LOG}", place.storage.scrub(exc)
                ) from None
            return self.table

    def _at_latest(self, version: int) -> bool:
        """Whether ``version`` is still the latest, known without reading the log: commits are
        numbered one after another and each is created only if absent, so on a local disk
        the next number's missing file says so (a stat, not the ~1 ms of a log refresh, which
        a one-symbol read cannot afford). An object store is asked by the refresh itself."""
        storage = self.place.storage
        if not storage.local:
            return False
        name = f"{version + 1:020d}.json"
        return not os.path.exists(storage.path(self.place.folder, DELTA_LOG, name))

    def snapshot(self) -> TableVersion | None:
        """The latest version and its file list (None: no table yet)."""
        table = self.delta()
        if table is None:
            return None
        with self.place.lock:
            version = table.version()
            if self._snap is not None and self._snap.version == version:
                return self._snap
            actions = pa.table(table.get_add_actions(flatten=True))
        self._snap = self._version(version, actions)
        self.on_version(self._snap)
        return self._snap

    def _version(self, version: int, actions: pa.Table) -> TableVersion:
        """A version from the log's add actions: its files in stored order, sizes and rows."""
        actions = _in_stored_order(actions, self.place.mode.file_keys)
        files = [self.place.file_uri(p) for p in actions["path"].to_pylist()]
        rows = actions["num_records"].to_pylist() if "num_records" in actions.column_names else []
        return TableVersion(version, files, actions["size_bytes"].to_pylist(), rows, actions)

    def snapshot_at(self, version: int) -> TableVersion:
        """An earlier version and its file list, from the log (Delta time travel), for a
        read that must see the table as a training set recorded it. ``LakeDamagedError``
        naming the version when its commit is gone from the log (log retention)."""
        dl = deltalake_module()
        from deltalake.exceptions import DeltaError

        place = self.place
        try:
            table = dl.DeltaTable(
                place.uri, version=version, storage_options=place.storage.delta_options()
            )
            actions = pa.table(table.get_add_actions(flatten=True))
        except (DeltaError, OSError, ValueError) as exc:
            raise damaged(
                place.ds.name,
                f"{place.folder}/{DELTA_LOG}/{version:020d}.json",
                f"version {version} of the table cannot be read back: its commit is no "
                f"longer in the log ({place.storage.scrub(exc)})",
            ) from None
        return self._version(version, actions)

    def latest_version(self) -> int | None:
        """The latest version (None: no table)."""
        table = self.delta()
        if table is None:
            return None
        with self.place.lock:
            return int(table.version())

    def forget(self) -> None:
        """Open the table again when next asked: its checkpoint is read again, as a new
        reader would (a refresh reads only the commits after the version it holds)."""
        with self.place.lock:
            self.table = None

    def reopen(self) -> TableVersion | None:
        """The latest version as the log says now, the table opened again when the commit
        file of the version it holds is gone (a refresh never goes back a version)."""
        snap = self.snapshot()
        if snap is None:
            return None
        name = f"{snap.version:020d}.json"
        if self.place.storage.read_bytes(self.place.folder, DELTA_LOG, name) is None:
            with self.place.lock:
                self.table, self._snap = None, None
            snap = self.snapshot()
        return snap

    def commit(self, version: int) -> LogCommit | None:
        """What one commit file says (None: its file is gone, as after a log clean-up)."""
        import json

        place = self.place
        name = f"{version:020d}.json"
        try:
            raw = place.storage.read_bytes(place.folder, DELTA_LOG, name)
        except OSError as exc:
            raise damaged(
                place.ds.name, f"{place.folder}/{DELTA_LOG}/{name}", place.storage.scrub(exc)
            ) from None
        if raw is None:
            return None
        out = LogCommit(version, "", "unknown engine", False)
        try:
            actions = [json.loads(line) for line in raw.splitlines() if line.strip()]
        except (ValueError, UnicodeDecodeError) as exc:
            raise damaged(place.ds.name, f"{place.folder}/{DELTA_LOG}/{name}", exc) from None
        for action in actions:
            if "commitInfo" in action:
                info = action["commitInfo"] or {}
                out.operation = str(info.get("operation") or "")
                out.engine = str(info.get("engineInfo") or info.get("clientVersion") or "")
                out.engine = out.engine or "unknown engine"
                out.timestamp = info.get("timestamp")
            elif "txn" in action and (action["txn"] or {}).get("appId") in OUR_APPS:
                out.ours = True
            elif "add" in action:
                out.added.append(str(action["add"]["path"]))
            elif "remove" in action:
                out.removed.append(str(action["remove"]["path"]))
        # mdframes created its tables without a transaction before 0.4.
        out.ours |= version == 0 and out.operation == "CREATE TABLE" and not out.added
        return out

    def commits(self, after: int, upto: int) -> list[LogCommit]:
        """The commits after version ``after`` up to ``upto`` whose files are still there."""
        found = (self.commit(v) for v in range(max(after + 1, 0), upto + 1))
        return [c for c in found if c is not None]

    def in_stored_order(self, snap: TableVersion | None) -> bool:
        """Whether reading the version's files one after another gives rows in stored order:
        every file is written sorted (appends, compactions and conversions sort), and the
        log's statistics show the files in order with disjoint symbol (or filter) ranges."""
        if snap is None or len(snap.files) < 2:
            return True
        if snap.ordered is None:
            snap.ordered = self._in_stored_order(snap)
        return snap.ordered

    def _in_stored_order(self, snap: TableVersion) -> bool:
        stats = snap.stats
        key = self.place.mode.file_keys[0]
        if stats is None or f"min.{key}" not in stats.column_names:
            return False
        lows, highs = stats[f"min.{key}"].to_pylist(), stats[f"max.{key}"].to_pylist()
        if None in lows or None in highs:
            return False
        return all(highs[i] < lows[i + 1] for i in range(len(lows) - 1))


def _in_stored_order(actions: pa.Table, file_keys: tuple[str, ...]) -> pa.Table:
    """Files ordered by their first rows (the log's statistics): files of separate symbol
    ranges then read back already in stored order, and a read needs no sort."""
    keys = [f"min.{k}" for k in file_keys]
    keys = [k for k in keys if k in actions.column_names]
    if not keys or actions.num_rows < 2:
        return actions
    return actions.sort_by([(k, "ascending") for k in keys])
