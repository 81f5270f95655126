"""Converting a lake of format 1 (mdframes 0.2: Parquet files beside a ``_manifest.json``, no
Delta log) to Delta tables, every stored version and its ``_fetched_at`` kept.

Each dataset is one Delta commit holding every row 0.2 stored (a compaction journal of 0.2 is
resolved as 0.2 resolved it). The commit carries the application transaction
``mdframes-lake-format1``, so a conversion interrupted after its commit is never repeated:
the next writer only removes the old files. The old ``_manifest.json`` goes last; while it is
there (and no Delta log), reads raise ``LakeDamagedError`` saying to run
``mdframes lake upgrade``.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads

from .store.faults import damaged
from .store.storage import Storage
from .table.commit import writer_properties
from .table.frames import schema_of
from .table.layout import FORMAT1_MANIFEST, FORMAT_VERSION, DtypeRecord, dir_name
from .table.log import FORMAT1_APP, deltalake_module
from .table.table import DatasetTable
from .tables import Tables

__all__ = ["upgrade_lake", "FORMAT1_APP"]

_JOURNAL = "_compacting.json"  # 0.2's journal of a compaction in progress


def _format1_files(storage: Storage, folder: str) -> list[str]:
    """The data files 0.2 would have read (its folder listing, its journal resolved)."""
    names = [
        e.name
        for e in storage.listdir(folder)
        if e.name.endswith(".parquet") and not e.name.startswith(("_", "."))
    ]
    journal = storage.read_json(folder, _JOURNAL)
    if journal:
        done = all(t in names for t in journal["targets"])
        hide = set(journal["sources"] if done else journal["targets"])
        names = [n for n in names if n not in hide]
    return sorted(names)


def upgrade_lake(tables: Tables, lease: Any) -> list[str]:
    """Convert every format-1 dataset of the lake (under the writer lease); returns their
    names. Already converted datasets are left alone."""
    storage = tables.storage
    done = []
    for ds in tables.folders():
        if storage.read_bytes(dir_name(ds.name), FORMAT1_MANIFEST) is None:
            continue
        _convert(storage, tables.get(ds), lease)
        done.append(ds.name)
    if done:
        from .sync.state import RootState

        root = RootState.load(storage)
        root.stamp_format()
        root.save(storage)
    return done


def _convert(storage: Storage, table: DatasetTable, lease: Any) -> None:
    dl = deltalake_module()
    folder = table.folder
    raw = storage.read_bytes(folder, FORMAT1_MANIFEST)
    assert raw is not None
    try:
        old = DtypeRecord.from_json(raw, accept=1)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise damaged(table.ds.name, f"{folder}/{FORMAT1_MANIFEST}", exc) from None
    names = _format1_files(storage, folder)
    delta = table.begin_writes()
    converted = delta is not None and (delta.transaction_version(FORMAT1_APP) or 0) >= 1
    if not converted:
        schema = schema_of(old, table.meta)
        try:
            rows = pads.dataset(
                [storage.path(folder, n) for n in names],
                schema=schema,
                format="parquet",
                filesystem=storage.fs,
            ).to_table()
        except (OSError, pa.ArrowInvalid) as exc:
            raise damaged(table.ds.name, folder, exc) from None
        state = table.state()
        for n in names:  # 0.2 kept cross-section summaries in the data files' metadata
            meta = _file_meta(storage, folder, n)
            for sync_id, by_scope in meta.get("summaries", {}).items():
                state.setdefault("summaries", {}).setdefault(sync_id, {}).update(by_scope)
        new = DtypeRecord(old.dataset, old.mode, old.key, old.time, old.columns, FORMAT_VERSION)
        table.save_manifest(new)
        if delta is None:
            delta = table.create_table(table.stored_schema())
        out = table.conform(rows, pa.schema(delta.schema().to_arrow()))
        out = out.sort_by(table.mode.sort_keys(new))
        table.writer.commit(
            lease,
            lambda props: dl.write_deltalake(
                delta,
                out,
                mode="append",
                writer_properties=writer_properties(),
                commit_properties=props,
            ),
            also=[dl.Transaction(FORMAT1_APP, 1)],
        )
        if state.get("summaries"):
            table.save_state(state)
    for n in names:
        storage.delete(folder, n)
    storage.delete(folder, _JOURNAL)
    storage.delete(folder, FORMAT1_MANIFEST)


def _file_meta(storage: Storage, folder: str, name: str) -> dict[str, Any]:
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(storage.path(folder, name), filesystem=storage.fs).metadata or {}
        raw = meta.get(b"mdframes.lake")
        return json.loads(raw) if raw else {}
    except (OSError, pa.ArrowInvalid, ValueError):
        return {}
