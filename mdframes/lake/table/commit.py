"""Writing a dataset's Delta table under the writer lease: one fenced commit (appends,
compactions, repairs and the conversion of a 0.2 lake all go through :meth:`Writer.commit`),
and the vacuum.

Settings, and why:

- ``delta.checkpointInterval = 10``: a checkpoint every 10 commits keeps the log a reader
  replays short (an append at 301 commits took 13 ms, 26 ms at the default 100).
- ``delta.logRetentionDuration = interval 30 days``: log entries of versions a reader may hold
  are never cleaned from under it (readers pin a version for one call; a month is ample).
- ``delta.deletedFileRetentionDuration = interval 7 days``, and :meth:`Writer.vacuum` removes
  only files that no version of the last ``retain_hours`` (default 168) needs, so a reader
  that started before a compaction keeps reading.
- Data files: zstd, sorted by (filter,) symbol, time and key, in row groups of 8k rows. A
  windowed dataset's rows are laid out in time slices (:meth:`~.modes.Mode.lay_out`): blocks
  of ``SLICES * ROW_GROUP`` consecutive rows (16k, what one row group held before), each
  block stored in ``SLICES`` ranges of time of ``ROW_GROUP`` rows, each sorted as above. A
  row group is then one slice of one block (the writer cuts them every ``ROW_GROUP`` rows):
  a one-symbol read decodes the 16k rows it did, and a read of the last months skips the
  row groups of the older slice by their time statistics. Measured on a compacted 500-symbol
  2-year lake (CPU ms, 1 / 2 / 4 slices of 16k / 8k / 4k rows): one symbol of sentiment 2.5 /
  2.6 / 3.8, its last 5 months for 500 symbols 33 / 25 / 21, all 500 symbols 49 / 70 / 84
  (a sliced file's symbols are put back in order); 2 slices keep one-symbol reads as they
  were. Unsliced: one symbol 1.6 ms with 16k-row groups against 5.4 ms with 64k.
- ``delta.appendOnly = true``: engines that honour it refuse deletes and overwrites (tables
  made before 0.4 get it at their next sync or compaction). A compaction therefore rewrites
  rows without changing them: its new files are written beside the table (``compact-<id>/``)
  and committed with the old files' removal as one commit marked ``dataChange: false``.
- Every commit carries the Delta application transaction ``mdframes-lake`` numbered with the
  table version it creates: the lake's commits are told from other writers' by it, and a
  writer that lost its lease while another committed finds its commit refused
  (``CommitFailedError``) and nothing of it becomes visible.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa

from ...errors import LakeBusyError
from ..store.faults import damaged, rust_panics_hidden, write_failed
from ..store.storage import checkpoint
from .layout import DELTA_LOG
from .log import APP_ID, TableLog, arrow_schema, deltalake_module
from .place import TablePlace
from .scan import StoredRecords
from .sidecar import Sidecar

__all__ = ["Writer", "APP_ID", "ROW_GROUP", "SLICES", "TABLE_CONFIG", "STAGE", "writer_properties"]

ROW_GROUP = 8 * 1024
SLICES = 2  # time slices per block of symbols (see the module docstring)
COMPACT_FILE_BYTES = 512 * 1024 * 1024  # a compacted dataset is one file up to this size
TABLE_CONFIG = {
    "delta.checkpointInterval": "10",
    "delta.logRetentionDuration": "interval 30 days",
    "delta.deletedFileRetentionDuration": "interval 7 days",
    "delta.appendOnly": "true",
}
STAGE = "compact-"  # a compaction's new files, beside the table (not hidden: vacuum sees them)


def writer_properties() -> Any:
    return deltalake_module().WriterProperties(compression="ZSTD", max_row_group_size=ROW_GROUP)


class Writer:
    """The writer's own table object, opened when it starts and never refreshed but by its
    own commits: a commit made after another writer's conflicts with it and fails."""

    def __init__(self, place: TablePlace, sidecar: Sidecar, log: TableLog, records: StoredRecords):
        self.place = place
        self.sidecar = sidecar
        self.log = log
        self.records = records
        self.delta: Any = None

    def begin(self) -> Any:
        """Open the writer's table object (once: never refreshed but by its own commits).
        None: no table yet."""
        dl = deltalake_module()
        from deltalake.exceptions import DeltaError, TableNotFoundError

        place = self.place
        self.sidecar.session = {}
        try:
            self.delta = dl.DeltaTable(place.uri, storage_options=place.storage.delta_options())
        except TableNotFoundError:
            self.delta = None
            return None
        except (DeltaError, OSError, ValueError) as exc:
            raise damaged(
                place.ds.name, f"{place.folder}/{DELTA_LOG}", place.storage.scrub(exc)
            ) from None
        return self.delta

    def table(self) -> Any:
        """The writer's table object (opened now if the writer has not started)."""
        return self.delta if self.delta is not None else self.begin()

    def create(self, schema: pa.Schema) -> Any:
        dl = deltalake_module()
        from deltalake.exceptions import CommitFailedError, DeltaError

        if self.sidecar.stored_state() is None:
            # On record before the table: a table whose state is gone is then told from one
            # whose first sync was killed before it wrote its state.
            self.sidecar.save_state({"units": {}, "failed": {}})
        try:
            with rust_panics_hidden():
                dl.DeltaTable.create(
                    self.place.uri,
                    schema,
                    mode="error",
                    configuration=TABLE_CONFIG,
                    storage_options=self.place.storage.delta_options(),
                    commit_properties=dl.CommitProperties(
                        app_transactions=[dl.Transaction(APP_ID, 0)]
                    ),
                )
        except (CommitFailedError, DeltaError) as exc:
            if "exists" not in str(exc).lower():
                raise write_failed(self.place.ds.name, self.place.storage.scrub(exc)) from None
            # Another writer created it first: its commits count from its own start.
            return self.begin()
        delta = self.begin()
        self.sidecar.vouch(-1, -1)  # a new table: nothing before its first version
        self.sidecar.committed(-1, 0)
        return delta

    def protect(self, lease: Any) -> None:
        """Set ``delta.appendOnly`` on a table made without it (one commit)."""
        delta = self.table()
        if delta is None or delta.metadata().configuration.get("delta.appendOnly") == "true":
            return
        self.commit(
            lease,
            lambda props: delta.alter.set_table_properties(
                {"delta.appendOnly": "true"}, commit_properties=props
            ),
        )

    def commit(
        self,
        lease: Any,
        write: Callable[[Any], Any],
        *,
        ready: str | None = None,
        done: str | None = None,
        also: Iterable[Any] = (),
    ) -> None:
        """One fenced commit: ``write(commit_properties)`` under the held lease, carrying the
        ``mdframes-lake`` transaction numbered with the version it creates (and the
        transactions ``also``). ``ready`` and ``done``: crash-test checkpoints before and
        after it. The version is noted for the state when no other writer's commit came
        between (else the next sync's look at the log sorts the versions out)."""
        dl = deltalake_module()
        delta = self.table()
        before = -1 if delta is None else int(delta.version())
        txn = dl.Transaction(APP_ID, before + 1)
        props = dl.CommitProperties(app_transactions=[txn, *also])
        lease.assert_held()
        if ready:
            checkpoint(ready)
        self.run(lambda: write(props))
        if delta is not None:
            with self.place.lock:
                if delta.version() == before:  # a raw transaction leaves the object as it was
                    delta.update_incremental()
                after = int(delta.version())
            self.sidecar.committed(before, after)
        if done:
            checkpoint(done)

    def run(self, write: Callable[[], Any]) -> None:
        """Run a write, its failures in one line: another writer's commit since this writer
        started is :class:`LakeBusyError`, a full disk or lost connection a one-line error."""
        from deltalake.exceptions import CommitFailedError, DeltaError

        place = self.place
        try:
            with place.lock, rust_panics_hidden():
                write()
        except CommitFailedError as exc:
            self.delta = None
            raise LakeBusyError(
                f"{place.ds.name}: another writer committed to this dataset since this one "
                "started (its lease was lost); nothing of this commit is visible "
                f"({place.storage.scrub(exc)})"
            ) from None
        except (DeltaError, OSError) as exc:  # a full disk, a lost connection: one line
            self.delta = None
            raise write_failed(place.ds.name, place.storage.scrub(exc)) from None

    def conform(self, table: pa.Table, current: pa.Schema | None) -> pa.Table:
        """The rows in the stored schema: the table's columns in its order, then new ones."""
        target = self.records.stored_schema()
        order = [n for n in (current.names if current is not None else []) if n in target.names]
        order += [n for n in target.names if n not in order]
        arrays = []
        for name in order:
            f = target.field(name)
            if name in table.column_names:
                col = table[name]
                arrays.append(col if col.type == f.type else col.cast(f.type))
            else:
                arrays.append(pa.nulls(table.num_rows, type=f.type))
        return pa.Table.from_arrays(arrays, schema=pa.schema([target.field(n) for n in order]))

    def append(self, table: pa.Table, lease: Any) -> None:
        """Commit ``table`` (sorted in stored order) as one Delta commit."""
        dl = deltalake_module()
        delta = self.table()
        if delta is None:
            delta = self.create(self.records.stored_schema())
        current = arrow_schema(delta)
        table = self.conform(table, current)
        table = self._laid_out(table)
        merge = "merge" if set(table.column_names) - set(current.names) else None
        self.commit(
            lease,
            lambda props: dl.write_deltalake(
                delta,
                table,
                mode="append",
                schema_mode=merge,
                writer_properties=writer_properties(),
                commit_properties=props,
            ),
            ready="commit-ready",  # the batch is whole in memory; nothing written
            done="committed",  # visible to readers; the state does not say so yet
        )

    def _laid_out(self, table: pa.Table) -> pa.Table:
        """``table`` sorted and laid out as data files store rows (module docstring)."""
        manifest = self.sidecar.manifest
        assert manifest is not None
        mode = self.place.mode
        table = table.sort_by(mode.sort_keys(manifest))
        return mode.lay_out(table, manifest, SLICES * ROW_GROUP, SLICES)

    def compact(self, lease: Any) -> tuple[int, int]:
        """Rewrite the current version's files as one sorted file set, in one commit.

        Delta's ``optimize.compact`` bin-packs files without sorting them (and ``z_order`` on
        one column is not a plain sort), so the rows are read, sorted in stored order and
        written back: the same rows, ordered so that one-symbol reads prune by row-group
        statistics. The commit adds the new files and removes the old ones without a data
        change, as an append-only table allows."""
        snap = self.log.snapshot()
        manifest = self.sidecar.manifest
        if snap is None or len(snap.files) <= 1 or manifest is None:
            n = 0 if snap is None else len(snap.files)
            return n, n
        delta = self.table()
        if delta.version() != snap.version:  # pragma: no cover - another writer: fail early
            raise LakeBusyError(f"{self.place.ds.name}: another writer committed during compaction")
        self.sweep_stages()
        table = self.records.scan(snap, columns=self.records.stored_schema().names)
        table = self.conform(table, arrow_schema(delta))
        table = self._laid_out(table)
        assert snap.stats is not None
        old = list(zip(snap.stats["path"].to_pylist(), snap.sizes, strict=True))
        self.commit(
            lease,
            lambda props: self._rewrite(delta, table, old, props),
            ready="compact-ready",
            done="compacted",
        )
        self.sidecar.save_state(self.sidecar.state())  # the version committed, on record
        after = self.log.snapshot()
        return len(snap.files), len(after.files) if after is not None else 0

    def _rewrite(self, delta: Any, table: pa.Table, old: list[tuple[str, int]], props: Any) -> None:
        """Write ``table`` as new files beside the table and commit them with the removal of
        ``old`` (paths as the log lists them, sizes), rows unchanged."""
        import json

        dl = deltalake_module()
        from deltalake.transaction import AddAction, RemoveAction

        place, storage = self.place, self.place.storage
        stage = STAGE + secrets.token_hex(6)
        # The new files, written as a table of their own: its log says their statistics.
        dl.write_deltalake(
            storage.uri(place.folder, stage),
            table,
            mode="error",
            writer_properties=writer_properties(),
            target_file_size=COMPACT_FILE_BYTES,
            storage_options=storage.delta_options(),
        )
        name = f"{0:020d}.json"
        raw = storage.read_bytes(place.folder, stage, DELTA_LOG, name) or b""
        added = [json.loads(line)["add"] for line in raw.splitlines() if b'"add"' in line]
        self._drop_stage_log(stage)
        now = int(time.time() * 1000)
        actions: list[Any] = [
            AddAction(
                f"{stage}/{a['path']}", a["size"], {}, a["modificationTime"], False, a["stats"]
            )
            for a in added
        ]
        actions += [RemoveAction(path, False, now, size) for path, size in old]
        delta.create_write_transaction(actions, "append", delta.schema(), commit_properties=props)

    def _drop_stage_log(self, stage: str) -> None:
        import contextlib

        storage = self.place.storage
        with contextlib.suppress(FileNotFoundError, OSError):
            storage.fs.delete_dir(storage.path(self.place.folder, stage, DELTA_LOG))

    def sweep_stages(self) -> None:
        """Remove the logs of compactions killed after writing their new files (their files
        are orphans a vacuum removes)."""
        import pyarrow.fs as pafs

        storage = self.place.storage
        selector = pafs.FileSelector(storage.path(self.place.folder), allow_not_found=True)
        for info in storage.fs.get_file_info(selector):
            if info.type == pafs.FileType.Directory and info.base_name.startswith(STAGE):
                self._drop_stage_log(info.base_name)

    def vacuum(self, retain_hours: float) -> list[str]:
        """Remove files no version of the last ``retain_hours`` needs (and orphans of killed
        writers and stray copies older than that)."""
        delta = self.table()
        if delta is None:
            return []
        with self.place.lock, rust_panics_hidden():
            return list(
                delta.vacuum(
                    retention_hours=int(retain_hours),
                    enforce_retention_duration=False,
                    dry_run=False,
                    full=True,
                )
            )
