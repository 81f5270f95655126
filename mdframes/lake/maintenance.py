"""Compaction with vacuum, check and repair, and the per-dataset summary of a lake."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

import pandas as pd
import pyarrow.compute as pc

from .store.storage import Storage
from .table.repair import LOST_COLUMNS
from .table.table import DatasetTable, once_more_if_overtaken

__all__ = [
    "compact",
    "auto_compact",
    "info",
    "check",
    "repair",
    "INFO_COLUMNS",
    "AUTO_COMPACT_FILES",
    "SMALL_FILE_BYTES",
]

# A sync compacts a dataset it synced when the table holds more than AUTO_COMPACT_FILES
# files smaller than SMALL_FILE_BYTES (Delta's auto-compaction, with a lower count; written
# down in docs/lake.md): each sync adds files holding every symbol it synced, so a read of one
# symbol opens every one of them, and files of several syncs overlap in symbols, so that a
# read of all rows merges them. The rewrite is lake.compact()'s, vacuum with its default
# retention included.
AUTO_COMPACT_FILES = 16
SMALL_FILE_BYTES = 64 * 1024 * 1024
_AUTO_RETAIN_HOURS = 168.0

INFO_COLUMNS = [
    "dataset",
    "rows",
    "versions",
    "symbols",
    "first",
    "last",
    "last_sync",
    "files",
    "bytes",
]


def compact(table: DatasetTable, lease: Any, retain_hours: float) -> tuple[int, int]:
    """One dataset: its files rewritten in one commit, then a vacuum of what no version of
    the last ``retain_hours`` needs."""
    table.begin_writes(lease, strict=True)  # never folds another program's rows in
    counts = table.compact(lease)
    table.vacuum(retain_hours)
    return counts


def auto_compact(tables: Iterable[DatasetTable], lease: Any) -> dict[str, tuple[int, int]]:
    """Compact each of ``tables`` that holds more than AUTO_COMPACT_FILES small files, under
    the sync's lease (the same fenced commit and crash points as ``lake.compact()``).
    Returns dataset -> (files before, files after) of those compacted."""
    out = {}
    for table in tables:
        snap = table.snapshot()
        if snap is None:
            continue
        small = sum(1 for size in snap.sizes if size < SMALL_FILE_BYTES)
        if small > AUTO_COMPACT_FILES:
            out[table.ds.name] = compact(table, lease, _AUTO_RETAIN_HOURS)
    return out


def check(tables: list[DatasetTable]) -> pd.DataFrame:
    """``dataset, ok, files, problems`` per dataset."""
    rows = []
    for table in tables:
        snap, problems = table.problems()
        rows.append(
            {
                "dataset": table.ds.name,
                "ok": not problems,
                "files": 0 if snap is None else len(snap.files),
                "problems": [f"{f}: {p}" for f, p in problems],
            }
        )
    frame = pd.DataFrame(rows, columns=["dataset", "ok", "files", "problems"])
    return frame.astype({"dataset": "string", "ok": "boolean", "files": "Int64"})


def repair(tables: list[DatasetTable], lease: Any) -> pd.DataFrame:
    """``dataset, file, symbols, rows, note`` of what was dropped or mended (``note``: what
    was done and what is left to do)."""
    lost: list[dict[str, Any]] = []
    for table in tables:
        lost += table.repair(lease)
    frame = pd.DataFrame(lost, columns=LOST_COLUMNS)
    return frame.astype({"dataset": "string", "file": "string", "rows": "Int64", "note": "string"})


def info(storage: Storage, tables: list[DatasetTable]) -> pd.DataFrame:
    """One row per dataset: records, stored rows, symbols, time range, last sync, files;
    counted once more on the new versions when a compaction overtook it."""
    return once_more_if_overtaken(tables, lambda: _info(storage, tables))


def _info(storage: Storage, tables: list[DatasetTable]) -> pd.DataFrame:
    from .sync.state import RootState

    rows = []
    started = RootState.load(storage).sync_times()
    for table in tables:
        snap = table.snapshot()  # a log that lost versions raises here
        manifest = table.manifest
        if manifest is None:  # nothing stored, only a state: check() tells of it
            continue
        cols = [c for c in ("symbol", manifest.time) if c and c in manifest.names()]
        # Rows another program appended are told from the lake's by every column.
        needed = cols + list(table.meta) if table.trusted(snap) else None
        stored = table.without_copies(snap, table.scan(snap, columns=needed))
        first = last = None
        if manifest.time and stored.num_rows:
            bounds = pc.min_max(stored[manifest.time]).as_py()
            first, last = bounds["min"], bounds["max"]
        last_sync = started.get(table.state().get("last_sync", ""))
        if last_sync is None and stored.num_rows:
            last_sync = pc.max(stored["_fetched_at"]).as_py()
        rows.append(
            {
                "dataset": table.ds.name,
                "rows": table.mode.latest_count(stored) if stored.num_rows else 0,
                "versions": stored.num_rows,
                "symbols": len(pc.unique(stored["symbol"])) if "symbol" in cols else 0,
                "first": first,
                "last": last,
                "last_sync": last_sync,
                "files": 0 if snap is None else len(snap.files),
                "bytes": 0 if snap is None else sum(snap.sizes),
            }
        )
    frame = pd.DataFrame(rows, columns=INFO_COLUMNS)
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
