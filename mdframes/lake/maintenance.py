"""Compaction, crash recovery and the per-dataset summary of a lake."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..registry import REGISTRY
from .layout import COMPACTING, LAKE_STATE, Manifest
from .store import DatasetStore, is_cross
from .writes import sort_keys

if TYPE_CHECKING:  # pragma: no cover
    from .core import Lake

__all__ = ["compact", "recover", "info", "stores"]

COMPACT_ROWS = 8_000_000  # rows per compacted file: large, sorted, with small row groups


def stores(lake: Lake) -> list[DatasetStore]:
    """A store for every dataset folder that has a manifest."""
    by_folder = {ds.name.replace("/", "__"): ds for ds in REGISTRY.values() if ds.lake}
    out = []
    for folder in lake.storage.dirs():
        ds = by_folder.get(folder)
        if ds is not None:
            store = DatasetStore(lake.storage, ds)
            if store.manifest is not None:
                out.append(store)
    return out


def recover(lake: Lake) -> None:
    """Undo what a crashed writer left: hidden temporary files and half-done compactions."""
    for folder in lake.storage.dirs():
        lake.storage.clean_temporaries(folder)
        journal = lake.storage.read_json(folder, COMPACTING)
        if not journal:
            continue
        names = {e.name for e in lake.storage.listdir(folder)}
        if all(t in names for t in journal["targets"]):
            gone = journal["sources"]  # the new files are whole: finish the swap
        else:
            gone = journal["targets"]  # not all written: the old files still hold everything
        for name in gone:
            lake.storage.delete(folder, name)
        lake.storage.delete(folder, COMPACTING)


def compact(lake: Lake, store: DatasetStore, stamp: str) -> tuple[int, int]:
    """Rewrite a dataset's files as few sorted files; every stored row is kept as it was.
    Returns (files before, files after)."""
    files = store.files()
    manifest = store.manifest
    if manifest is None or len(files) <= 1:
        return len(files), len(files)
    summaries: dict[str, Any] = {}
    for entry in files:
        for sync_id, by_scope in store.file_metadata(entry).get("summaries", {}).items():
            summaries.setdefault(sync_id, {}).update(by_scope)
    table = store.scan()
    table = table.sort_by(sort_keys(manifest, store.meta, is_cross(store.ds)))
    targets = [
        f"compact-{stamp}-{k:04d}.parquet"
        for k in range(max(1, -(-table.num_rows // COMPACT_ROWS)))
    ]
    journal = {"sources": [e.name for e in files], "targets": targets}
    lake.storage.write_json(journal, store.folder, COMPACTING)
    for k, name in enumerate(targets):
        part = table.slice(k * COMPACT_ROWS, COMPACT_ROWS)
        store.write(part, name, {"summaries": summaries} if summaries else {})
    for entry in files:
        lake.storage.delete(store.folder, entry.name)
    lake.storage.delete(store.folder, COMPACTING)
    return len(files), len(targets)


def _sync_times(lake: Lake) -> dict[str, str]:
    root = lake.storage.read_json(LAKE_STATE) or {}
    return {s["id"]: s["started"] for s in root.get("syncs", [])}


def info(lake: Lake) -> pd.DataFrame:
    """One row per dataset: records, stored rows, symbols, time range, last sync, files."""
    rows = []
    started = _sync_times(lake)
    for store in stores(lake):
        manifest: Manifest = store.manifest  # type: ignore[assignment]
        files = store.files()
        cols = [c for c in ("symbol", manifest.time) if c and c in manifest.names()]
        table = store.scan(columns=cols + list(store.meta))
        latest_rows = _latest_count(table, store)
        first = last = None
        if manifest.time and table.num_rows:
            bounds = pc.min_max(table[manifest.time]).as_py()
            first, last = bounds["min"], bounds["max"]
        last_sync = started.get(store.state().get("last_sync", ""))
        if last_sync is None and table.num_rows:
            last_sync = pc.max(table["_fetched_at"]).as_py()
        rows.append(
            {
                "dataset": store.ds.name,
                "rows": latest_rows,
                "versions": table.num_rows,
                "symbols": len(pc.unique(table["symbol"])) if "symbol" in cols else 0,
                "first": first,
                "last": last,
                "last_sync": last_sync,
                "files": len(files),
                "bytes": sum(e.size for e in files),
            }
        )
    frame = pd.DataFrame(
        rows,
        columns=[
            "dataset",
            "rows",
            "versions",
            "symbols",
            "first",
            "last",
            "last_sync",
            "files",
            "bytes",
        ],
    )
    for name in ("first", "last"):
        frame[name] = pd.to_datetime(frame[name].map(_naive), errors="coerce")
    frame["last_sync"] = pd.to_datetime(frame["last_sync"], utc=True)
    for name in ("rows", "versions", "symbols", "files", "bytes"):
        frame[name] = frame[name].astype("Int64")
    frame["dataset"] = frame["dataset"].astype(pd.StringDtype())
    return frame


def _naive(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def _latest_count(table: pa.Table, store: DatasetStore) -> int:
    if table.num_rows == 0:
        return 0
    if store.ds.lake == "window":
        # Every record has exactly one first version.
        return int(pc.sum(pc.equal(table["_version"], 1)).as_py() or 0)
    unit = ["_scope"] if is_cross(store.ds) else ["symbol", "_scope"]
    grouped = table.group_by(unit).aggregate([("_version", "max")])
    joined = table.join(grouped, unit)
    return int(pc.sum(pc.equal(joined["_version"], joined["_version_max"])).as_py() or 0)
