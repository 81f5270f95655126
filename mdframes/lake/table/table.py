"""One dataset's Delta table, a facade over its roles (as delta-rs's ``DeltaTable`` is over
its optimizer, merger and the rest):

- :class:`~.sidecar.Sidecar`: the lake's files beside the table (dtype record, state);
- :class:`~.log.TableLog`: the log as readers see it (the latest version, its file list);
- :class:`~.scan.StoredRecords`: the stored rows of a version (scan paths, opened files);
- :class:`~.commit.Writer`: one fenced commit under the writer lease, compaction, vacuum;
- :class:`~.health.Health` and :class:`~.repair.Repair`: check, guard and repair.

Data files are never listed from the folder: readers take one version's file list from the
log, so stray copies and files a compaction retired are never read.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pyarrow as pa

from ...errors import LakeDamagedError
from ...registry import Dataset
from ..store.faults import damaged, write_failed
from ..store.storage import Storage
from .commit import APP_ID, ROW_GROUP, TABLE_CONFIG, Writer, writer_properties
from .health import Health
from .layout import DtypeRecord
from .log import TableLog, TableVersion, deltalake_module
from .place import TablePlace
from .repair import Repair
from .scan import Published, StoredRecords
from .sidecar import Sidecar

__all__ = [
    "DatasetTable",
    "TableVersion",
    "TABLE_CONFIG",
    "APP_ID",
    "ROW_GROUP",
    "damaged",
    "deltalake_module",
    "write_failed",
    "writer_properties",
    "once_more_if_overtaken",
]

T = TypeVar("T")


def once_more_if_overtaken(tables: Sequence[DatasetTable], run: Callable[[], T]) -> T:
    """``run()``, once more when a compaction overtook it (a vacuum with ``retain_hours=0``
    removed files of the version it picked before it read them): a file the table no
    longer lists is not damage. Reads, SQL and ``info`` go through here."""
    try:
        return run()
    except LakeDamagedError as exc:
        if not any(t.overtaken(exc) for t in tables):
            raise
    return run()


class DatasetTable:
    """Read and write one dataset of a lake (its Delta table and the lake's files beside it)."""

    def __init__(self, storage: Storage, ds: Dataset) -> None:
        place = self.place = TablePlace(storage, ds)
        self.storage, self.ds, self.mode = storage, ds, place.mode  # the place's, fixed
        self.folder, self.uri, self.meta = place.folder, place.uri, place.mode.meta
        self.sidecar = Sidecar(self.place)
        self.records = StoredRecords(self.place, self.sidecar)
        self.scan = self.records.scan  # the records' own (one signature, one docstring)
        self.log = TableLog(self.place, self._on_version)
        self.writer = Writer(self.place, self.sidecar, self.log, self.records)
        self.health = Health(self.place, self.sidecar, self.log, self.records, self.writer)
        self.repairer = Repair(self.place, self.sidecar, self.log, self.writer, self.health)
        self._vouched: tuple[int | None, bool] | None = None  # (version, vouched) last read
        # What lake.coverage() made of the state file's bytes last time (coverage.py): a
        # panel asks it before each read, and the state changes only when a sync saves it.
        self.coverage_memo: Any = None
        # The ledger's parsed files (they never change) and its folds per time (ledger.py).
        self.ledger_files: dict[str, Any] = {}
        self.ledger_memos: dict[Any, Any] = {}

    def _on_version(self, snap: TableVersion) -> None:
        self.sidecar.forget()  # another writer may have widened the dtype record
        self.records.keep_listed(snap)

    # -- the lake's files beside the table ------------------------------------------------------
    @property
    def manifest(self) -> DtypeRecord | None:
        return self.sidecar.manifest

    def new_manifest(self) -> DtypeRecord:
        return self.sidecar.new_manifest()

    def save_manifest(self, manifest: DtypeRecord) -> None:
        self.sidecar.save_manifest(manifest)

    def state(self) -> dict[str, Any]:
        return self.sidecar.state()

    def save_state(self, state: dict[str, Any]) -> None:
        self.sidecar.save_state(state)

    def is_format1(self) -> bool:
        return self.sidecar.is_format1()

    def has_log(self) -> bool:
        return self.sidecar.has_log()

    # -- versions and reads ---------------------------------------------------------------------
    def delta(self) -> Any:
        return self.log.delta()

    def snapshot(self) -> TableVersion | None:
        """The latest version, once per version checked against the versions the lake
        committed (:class:`~mdframes.LakeDamagedError` when the log lost some)."""
        snap = self.log.snapshot()
        version = None if snap is None else snap.version
        if self._vouched is None or self._vouched[0] != version:
            self._vouched = (version, self.health.vouched(snap))
        return snap

    def trusted(self, snap: TableVersion | None) -> bool:
        """Whether every commit up to ``snap`` is the lake's own or repaired (else a read
        keeps one row per record and fetch time)."""
        if snap is None:
            return True
        if self._vouched is None or self._vouched[0] != snap.version:
            self._vouched = (snap.version, self.health.vouched(snap))
        return self._vouched[1]

    def without_copies(self, snap: TableVersion | None, rows: pa.Table) -> pa.Table:
        """``rows`` of ``snap`` with one version per record and fetch time when another
        program committed to the table (copies it appended never double a record); as they
        are otherwise. Reads, ``info``, ``changes`` and the SQL views all go through here.
        ``rows`` holds ``_fetched_at`` and the record identity with ``_n`` (windowed) or
        every column (snapshots)."""
        if self.trusted(snap) or self.manifest is None:
            return rows
        if "_fetched_at" in rows.column_names and rows["_fetched_at"].null_count:
            # Rows without the lake's meta columns: another program's, never read or counted.
            rows = rows.filter(rows["_fetched_at"].is_valid())
        return self.mode.one_per_fetch(rows, self.manifest)

    def in_stored_order(self, snap: TableVersion | None) -> bool:
        """Whether the log shows the version's files in order, with disjoint symbol ranges."""
        return self.log.in_stored_order(snap)

    def groups_in_order(
        self,
        snap: TableVersion | None,
        symbols: list[str] | None,
        span: tuple[Any, Any] | None,
        across: bool = False,
        published: Published | None = None,
    ) -> bool:
        """Whether the row groups a read of ``symbols`` (None: all) over ``span`` (see
        :meth:`~.scan.StoredRecords.scan`) reads are in order within each file (``across``: and
        from one file to the next, see :meth:`~.scan.StoredRecords.in_order`)."""
        return self.records.in_order(snap, symbols, span, across, published)

    def overtaken(self, exc: LakeDamagedError) -> bool:
        """Whether the data file ``exc`` names is this table's and has left it since (Delta
        names data files ``*.parquet``; the lake's own files and the log are never
        vacuumed)."""
        name = exc.file or ""
        if not (name.startswith(f"{self.folder}/") and name.endswith(".parquet")):
            return False
        latest = self.snapshot()
        return latest is not None and name not in {self.place.name(u) for u in latest.files}

    def stored_schema(self) -> pa.Schema:
        return self.records.stored_schema()

    def revised(
        self,
        snap: TableVersion | None,
        symbols: list[str] | None,
        span: tuple[Any, Any] | None = None,
        published: Published | None = None,
    ) -> bool:
        return self.records.revised(snap, symbols, span, published)

    def probe(self, uri: str, rows: int | None = None) -> str | None:
        return self.records.probe(uri, rows)

    def first_fetched(self, snap: TableVersion | None) -> dt.datetime | None:
        return self.records.first_fetched(snap)

    # -- writing (under the writer lease) -------------------------------------------------------
    def begin_writes(self, lease: Any = None, *, strict: bool = False) -> Any:
        """Open the writer's table object; with the ``lease`` of a sync or compaction, after
        :meth:`~.health.Health.guard` (``strict``: no other program's commit allowed)."""
        delta = self.writer.begin()
        if lease is not None:
            self.health.guard(lease, strict=strict)
        return delta

    def create_table(self, schema: pa.Schema) -> Any:
        return self.writer.create(schema)

    def conform(self, table: pa.Table, current: pa.Schema | None) -> pa.Table:
        return self.writer.conform(table, current)

    def append(self, table: pa.Table, lease: Any) -> None:
        self.writer.append(table, lease)

    def compact(self, lease: Any) -> tuple[int, int]:
        return self.writer.compact(lease)

    def vacuum(self, retain_hours: float) -> list[str]:
        return self.writer.vacuum(retain_hours)

    # -- check and repair -----------------------------------------------------------------------
    def problems(self) -> tuple[TableVersion | None, list[tuple[str, str]]]:
        return self.health.problems()

    def repair(self, lease: Any) -> list[dict[str, Any]]:
        return self.repairer.run(lease)
