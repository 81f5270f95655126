"""One dataset folder: its manifest, its sync state, its data files and their scans."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads

from ..registry import Dataset
from .frames import schema_of
from .layout import COMPACTING, MANIFEST, STATE, Manifest, dir_name, is_data_file, time_column
from .storage import FileEntry, Storage

__all__ = ["DatasetStore", "WINDOW_META", "SNAPSHOT_META", "WRITE_OPTIONS", "is_cross"]

WINDOW_META = ("_fetched_at", "_sync_id", "_version", "_n")
SNAPSHOT_META = ("_fetched_at", "_sync_id", "_version", "_scope")
# zstd for size; row groups small enough that a one-symbol read skips most of a file by the
# row groups' min/max statistics of the sorted ``symbol`` column.
WRITE_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "row_group_size": 64 * 1024,
    "write_statistics": True,
}


def is_cross(ds: Dataset) -> bool:
    """A snapshot of a cross section (screener, recent, discovery), not of one symbol."""
    return "{symbol}" not in ds.path


class DatasetStore:
    """Read and write one dataset's folder of a lake."""

    def __init__(self, storage: Storage, ds: Dataset) -> None:
        self.storage = storage
        self.ds = ds
        self.folder = dir_name(ds.name)
        self.meta = SNAPSHOT_META if ds.lake == "snapshot" else WINDOW_META
        self._manifest: Manifest | None = None

    # -- manifest and state -------------------------------------------------------------------
    @property
    def manifest(self) -> Manifest | None:
        if self._manifest is None:
            raw = self.storage.read_bytes(self.folder, MANIFEST)
            if raw is not None:
                self._manifest = Manifest.from_json(raw)
        return self._manifest

    def new_manifest(self) -> Manifest:
        self._manifest = Manifest(self.ds.name, self.ds.lake, list(self.ds.lake_key), None, [])
        return self._manifest

    def save_manifest(self, manifest: Manifest) -> None:
        if manifest.time is None:
            manifest.time = time_column(self.ds, manifest.names())
        self.storage.write_bytes(manifest.to_json(), self.folder, MANIFEST)
        self._manifest = manifest

    def state(self) -> dict[str, Any]:
        return self.storage.read_json(self.folder, STATE) or {"units": {}, "failed": {}}

    def save_state(self, state: dict[str, Any]) -> None:
        self.storage.write_json(state, self.folder, STATE)

    # -- files --------------------------------------------------------------------------------
    def files(self) -> list[FileEntry]:
        """The data files a reader should see (a compaction in progress is resolved)."""
        entries = [e for e in self.storage.listdir(self.folder) if is_data_file(e.name)]
        journal = self.storage.read_json(self.folder, COMPACTING)
        if journal:
            names = {e.name for e in entries}
            done = all(t in names for t in journal["targets"])
            hide = set(journal["sources"] if done else journal["targets"])
            entries = [e for e in entries if e.name not in hide]
        return entries

    def schema(self) -> pa.Schema:
        assert self.manifest is not None
        return schema_of(self.manifest, self.meta)

    def scan(self, filter: Any = None, columns: list[str] | None = None) -> pa.Table:
        """Stored rows (every version), typed by the manifest's schema."""
        files = self.files()
        if self.manifest is None or not files:
            schema = self.schema() if self.manifest is not None else pa.schema([])
            table = schema.empty_table()
            return table.select(columns) if columns else table
        dataset = pads.dataset(
            [e.path for e in files],
            schema=self.schema(),
            format="parquet",
            filesystem=self.storage.fs,
        )
        return dataset.to_table(filter=filter, columns=columns)

    def write(self, table: pa.Table, name: str, extra: dict[str, Any]) -> FileEntry:
        """Write one finished data file (temporary name, fsync, rename)."""
        metadata = dict(table.schema.metadata or {})
        metadata[b"mdframes.lake"] = json.dumps(extra).encode()
        table = table.replace_schema_metadata(metadata)
        size = self.storage.write_parquet(table, self.folder, name, **WRITE_OPTIONS)
        return FileEntry(name, self.storage.path(self.folder, name), size)

    def file_metadata(self, entry: FileEntry) -> dict[str, Any]:
        import pyarrow.parquet as pq

        meta = pq.read_schema(entry.path, filesystem=self.storage.fs).metadata or {}
        raw = meta.get(b"mdframes.lake")
        return json.loads(raw) if raw else {}
