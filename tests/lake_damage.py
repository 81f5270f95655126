"""The damage campaign of issue 25, as scenarios run on a real lake on disk
(tests/test_lake_damage.py) and on the moto S3 server (tests/test_lake_damage_s3.py): commit
files, the whole log, the dtype record or the state deleted, a listed file replaced by another
valid Parquet file, and another process appending, overwriting and deleting through the plain
``deltalake`` package. Each scenario checks what the lake says (check, read, sync), then that
``repair()`` leaves a lake whose check is ok, whose next sync works and whose reads equal a
lake that never met the damage."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import mdframes as md

SYMBOLS = ["AAPL", "MSFT", "NVDA"]
NAME = "sentiment"  # windowed: a window marked not synced is fetched again


@dataclass
class Site:
    """A lake's files, local or in a bucket, for damaging them as a user or a tool would."""

    lake: md.Lake
    delete: Callable[[str], None]  # one file, path relative to the lake root
    delete_tree: Callable[[str], None]  # every file under a folder
    read: Callable[[str], bytes]
    write: Callable[[str, bytes], None]
    names: Callable[[str], list[str]]  # file names in a folder (not recursive)
    fresh: Callable[[], md.Lake]  # another, empty lake on the same kind of storage

    def relative(self, uri: str) -> str:
        """A data file's path relative to the lake root, from its URI."""
        return uri.split("/lake/", 1)[1] if "/lake/" in uri else uri

    def log(self) -> list[str]:
        return sorted(n for n in self.names(f"{NAME}/_delta_log") if n.endswith(".json"))


def local_site(root: Path, client: md.Client, fresh_root: Path) -> Site:
    def delete_tree(rel: str) -> None:
        import shutil

        shutil.rmtree(root / rel)

    def write(rel: str, data: bytes) -> None:
        (root / rel).write_bytes(data)

    return Site(
        lake=md.Lake(root, client=client),
        delete=lambda rel: (root / rel).unlink(),
        delete_tree=delete_tree,
        read=lambda rel: (root / rel).read_bytes(),
        write=write,
        names=lambda rel: sorted(p.name for p in (root / rel).iterdir() if p.is_file()),
        fresh=lambda: md.Lake(fresh_root, client=client),
    )


def s3_site(s3: Any, bucket: str, uri: str, client: md.Client, fresh_uri: str) -> Site:
    api = s3.client()

    def key(rel: str) -> str:
        return f"lake/{rel}"

    def delete_tree(rel: str) -> None:
        listed = api.list_objects_v2(Bucket=bucket, Prefix=key(rel) + "/")
        for obj in listed.get("Contents", []):
            api.delete_object(Bucket=bucket, Key=obj["Key"])

    def names(rel: str) -> list[str]:
        listed = api.list_objects_v2(Bucket=bucket, Prefix=key(rel) + "/", Delimiter="/")
        return sorted(o["Key"].rsplit("/", 1)[1] for o in listed.get("Contents", []))

    return Site(
        lake=md.Lake(uri, client=client),
        delete=lambda rel: api.delete_object(Bucket=bucket, Key=key(rel)),
        delete_tree=delete_tree,
        read=lambda rel: api.get_object(Bucket=bucket, Key=key(rel))["Body"].read(),
        write=lambda rel, data: api.put_object(Bucket=bucket, Key=key(rel), Body=data),
        names=names,
        fresh=lambda: md.Lake(fresh_uri, client=client),
    )


# --- what every scenario checks ------------------------------------------------------------------


def _synced(site: Site) -> pd.DataFrame:
    """The lake before the damage: two syncs, so the log holds several versions."""
    lake = site.lake
    assert lake.sync(NAME, SYMBOLS[:2], progress=False).complete
    assert lake.sync(NAME, SYMBOLS[2:], progress=False).complete
    return lake.read(NAME, history=True)


def _reference(site: Site) -> pd.DataFrame:
    fresh = site.fresh()
    assert fresh.sync(NAME, SYMBOLS, progress=False).complete
    return fresh.read(NAME).drop(columns=["_fetched_at"])


def _problems(lake: md.Lake) -> list[str]:
    checked = lake.check().set_index("dataset")
    assert not checked.loc[NAME, "ok"]
    return [str(p) for p in checked.loc[NAME, "problems"]]


def _repaired_then_synced(site: Site, reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """``repair()``, then ``check()`` is ok, the next sync works and reads give what a lake
    that never met the damage gives. Returns what repair reported."""
    lake = site.lake
    lost = lake.repair()
    assert len(lost) and (lost["dataset"] == NAME).all() and lost["note"].notna().all()
    assert md.Lake(lake.root).check()["ok"].all(), md.Lake(lake.root).check()["problems"]
    assert lake.sync(NAME, SYMBOLS, progress=False).complete
    assert md.Lake(lake.root).check()["ok"].all()
    got = md.Lake(lake.root).read(NAME).drop(columns=["_fetched_at"])
    want = reference if reference is not None else _reference(site)
    pd.testing.assert_frame_equal(got, want)
    return lost


# --- the scenarios ----------------------------------------------------------------------------------


def newest_commit_deleted(site: Site) -> None:
    _synced(site)
    newest = site.log()[-1]
    site.delete(f"{NAME}/_delta_log/{newest}")
    version = int(newest.split(".")[0])
    with pytest.raises(md.LakeDamagedError, match=f"version {version}.*gone from the log"):
        md.Lake(site.lake.root).read(NAME)  # never the older version silently
    assert any(f"version {version}" in p for p in _problems(site.lake))
    with pytest.raises(md.LakeDamagedError, match="gone from the log"):
        site.lake.sync(NAME, SYMBOLS[:1], progress=False)
    lost = _repaired_then_synced(site)
    assert "NVDA" in lost["symbols"].iloc[0]  # what the lost commit held is fetched again


def log_deleted(site: Site) -> None:
    _synced(site)
    site.delete_tree(f"{NAME}/_delta_log")
    with pytest.raises(md.LakeDamagedError, match="Delta log is gone"):
        md.Lake(site.lake.root).read(NAME)  # not an empty frame, not "holds no"
    assert any("Delta log is gone" in p for p in _problems(site.lake))
    with pytest.raises(md.LakeDamagedError, match="Delta log is gone"):
        site.lake.sync(NAME, SYMBOLS[:1], progress=False)
    lost = _repaired_then_synced(site)
    assert sorted(lost["symbols"].iloc[0]) == SYMBOLS
    assert "backup" in lost["note"].iloc[0]  # what it cannot restore, and what to do


def record_deleted(site: Site) -> None:
    history = _synced(site)
    before = site.lake.read(NAME)
    site.delete(f"{NAME}/_mdframes.json")
    with pytest.raises(md.LakeDamagedError, match="_mdframes.json"):
        md.Lake(site.lake.root).read(NAME)  # never "the lake holds no sentiment"
    assert any("_mdframes.json" in p for p in _problems(site.lake))
    with pytest.raises(md.LakeDamagedError, match="_mdframes.json"):
        site.lake.sync(NAME, SYMBOLS, progress=False)  # would store every record twice
    lost = site.lake.repair()
    assert "rebuilt" in lost["note"].iloc[0]
    pd.testing.assert_frame_equal(md.Lake(site.lake.root).read(NAME), before)  # dtypes too
    report = site.lake.sync(NAME, SYMBOLS, progress=False)
    assert report.complete and report.rows_added == 0 and report.versions_added == 0
    assert len(md.Lake(site.lake.root).read(NAME, history=True)) == len(history)
    assert md.Lake(site.lake.root).check()["ok"].all()


def state_deleted(site: Site) -> None:
    history = _synced(site)
    site.delete(f"{NAME}/_state.json")
    assert any("_state.json" in p for p in _problems(site.lake))
    with pytest.raises(md.LakeDamagedError, match="_state.json"):
        site.lake.sync(NAME, SYMBOLS, progress=False)
    lost = _repaired_then_synced(site)
    assert "fetches every window again" in lost["note"].iloc[0]
    assert len(md.Lake(site.lake.root).read(NAME, history=True)) == len(history)


def file_replaced(site: Site) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    _synced(site)
    victim = site.relative(site.lake.files(NAME)[0])
    rows = pq.read_table(io.BytesIO(site.read(victim)))
    out = io.BytesIO()
    pq.write_table(rows.slice(1), out)  # a valid Parquet file of the table, one row short
    site.write(victim, out.getvalue())
    assert pa.BufferReader(out.getvalue()).size() > 0
    name = victim.rsplit("/", 1)[1]
    assert any(name in p and "the log says" in p for p in _problems(site.lake))
    with pytest.raises(md.LakeDamagedError, match="the log says") as caught:
        site.lake.sync(NAME, SYMBOLS, progress=False)
    assert name in str(caught.value.file)
    lost = _repaired_then_synced(site)
    assert lost["file"].str.contains(name).any() and lost["rows"].iloc[0] > 0


def checkpoint_damaged(site: Site, how: str) -> None:
    """The checkpoint deleted, truncated or garbled, or ``_last_checkpoint`` naming a version
    with none: every commit file is intact, so repair() reads the log from them (CONTRACT
    §10.2); before, repair() failed as the read it was advised by did."""
    from deltalake import DeltaTable

    _synced(site)
    options = site.lake.storage.delta_options()
    DeltaTable(site.lake.path(NAME), storage_options=options).create_checkpoint()
    log = f"{NAME}/_delta_log"
    (name,) = [n for n in site.names(log) if ".checkpoint." in n]
    if how == "deleted":
        site.delete(f"{log}/{name}")
    elif how == "truncated":
        site.write(f"{log}/{name}", site.read(f"{log}/{name}")[:100])
    elif how == "garbled":
        site.write(f"{log}/{name}", b"garbage " * 64)
    else:
        site.write(f"{log}/_last_checkpoint", json.dumps({"version": 99, "size": 9}).encode())
    with pytest.raises(md.LakeDamagedError, match="repair"):
        md.Lake(site.lake.root).read(NAME)
    assert _problems(site.lake)
    lost = _repaired_then_synced(site)
    assert lost["note"].str.contains("set aside").all()


def newest_commit_garbled(site: Site) -> None:
    """Garbage in the newest commit file and in the dtype record at once."""
    _synced(site)
    newest = site.log()[-1]
    site.write(f"{NAME}/_delta_log/{newest}", b"\x00garbage{{\n")
    site.write(f"{NAME}/_mdframes.json", b"{garbled")
    with pytest.raises(md.LakeDamagedError, match="repair"):
        md.Lake(site.lake.root).read(NAME)
    with pytest.raises(md.LakeDamagedError, match="repair"):
        site.lake.sync(NAME, SYMBOLS, progress=False)
    lost = _repaired_then_synced(site)
    assert lost["file"].str.endswith(newest).any() and lost["file"].str.endswith(".json").all()
    assert any("NVDA" in symbols for symbols in lost["symbols"])  # what it held comes again


def unknown_kind(site: Site) -> None:
    """A dtype record naming a column kind this mdframes does not know: damage, not a
    KeyError."""
    _synced(site)
    record = json.loads(site.read(f"{NAME}/_mdframes.json"))
    record["columns"][-1]["kind"] = "decimal9"
    site.write(f"{NAME}/_mdframes.json", json.dumps(record).encode())
    with pytest.raises(md.LakeDamagedError, match="unknown kind 'decimal9'"):
        md.Lake(site.lake.root).read(NAME)
    assert any("decimal9" in p for p in _problems(site.lake))
    lost = _repaired_then_synced(site)
    assert lost["note"].str.contains("rebuilt").all()


# --- another process writing through the plain deltalake package ----------------------------------

_WRITER = """
import json, sys
from deltalake import DeltaTable, write_deltalake
uri, options, action = sys.argv[1], json.loads(sys.argv[2]) or None, sys.argv[3]
table = DeltaTable(uri, storage_options=options)
if action.endswith("-forced"):  # a writer that ignores the append-only property
    table.alter.set_table_properties({"delta.appendOnly": "false"})
if action == "append-bare":  # the data columns only: no _fetched_at, no _sync_id
    rows = table.to_pyarrow_table()
    rows = rows.select([n for n in rows.column_names if not n.startswith("_")])
    write_deltalake(table, rows, mode="append", schema_mode="merge")
elif action.startswith("append"):
    write_deltalake(table, table.to_pyarrow_table(), mode="append")
elif action.startswith("overwrite"):
    rows = table.to_pyarrow_table()
    write_deltalake(table, rows.slice(0, rows.num_rows // 2), mode="overwrite")
elif action.startswith("delete"):
    table.delete("symbol = 'AAPL'")
print("version", DeltaTable(uri, storage_options=options).version())
"""


def foreign(site: Site, action: str) -> subprocess.CompletedProcess[str]:
    """``action`` through ``deltalake`` in another process: append (a copy of every row),
    overwrite (half of them), delete (one symbol); ``-forced`` unsets append-only first."""
    options = json.dumps(site.lake.storage.delta_options() or {})
    return subprocess.run(
        [sys.executable, "-c", _WRITER, site.lake.path(NAME), options, action],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _counted(lake: md.Lake) -> tuple[pd.DataFrame, pd.DataFrame, list[int]]:
    """What info(), changes() and the SQL views say of the dataset (counts, not files)."""
    info = lake.info().set_index("dataset").loc[[NAME], ["rows", "versions", "symbols"]]
    sql = f"select (select count(*) from {NAME}), (select count(*) from {NAME}_history)"
    return info, lake.changes(NAME), [int(n) for n in lake.sql(sql).iloc[0]]


def foreign_append(site: Site) -> None:
    history = _synced(site)
    latest = site.lake.read(NAME)
    counted = _counted(site.lake)
    assert counted[2] == [len(latest), len(history)]
    done = foreign(site, "append")
    assert done.returncode == 0, done.stderr
    # A copy of every row: reads, info(), changes() and the SQL views keep one version per
    # record and fetch time.
    reader = md.Lake(site.lake.root)
    pd.testing.assert_frame_equal(reader.read(NAME), latest)
    pd.testing.assert_frame_equal(reader.read(NAME, history=True), history)
    pd.testing.assert_frame_equal(reader.read(NAME, SYMBOLS[1]), _of(latest, SYMBOLS[1]))
    after = _counted(reader)
    pd.testing.assert_frame_equal(after[0], counted[0])
    pd.testing.assert_frame_equal(after[1], counted[1])
    assert after[2] == counted[2]
    problems = _problems(site.lake)
    assert any("WRITE" in p and "another program" in p and "delta-rs" in p for p in problems)
    report = site.lake.sync(NAME, SYMBOLS, progress=False)  # an append does not stop a sync
    assert report.complete and report.rows_added == 0
    lost = _repaired_then_synced(site)
    assert lost["note"].str.contains("another program: dropped").any()
    pd.testing.assert_frame_equal(md.Lake(site.lake.root).read(NAME, history=True), history)


def foreign_bare_append(site: Site) -> None:
    """Rows another program appended without the lake's meta columns: check() names them;
    reads, info() and the SQL views never count them; repair() drops them."""
    history = _synced(site)
    latest = site.lake.read(NAME)
    done = foreign(site, "append-bare")
    assert done.returncode == 0, done.stderr
    reader = md.Lake(site.lake.root)
    pd.testing.assert_frame_equal(reader.read(NAME), latest)
    pd.testing.assert_frame_equal(reader.read(NAME, history=True), history)
    assert _counted(reader)[2] == [len(latest), len(history)]
    problems = _problems(site.lake)
    assert any(f"{len(latest)} rows without the lake's meta columns" in p for p in problems)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # their null _n and _version not cast
        report = site.lake.sync(NAME, SYMBOLS, progress=False)  # not compared with them
    assert report.complete and report.rows_added == report.versions_added == 0
    lost = _repaired_then_synced(site)
    assert lost["note"].str.contains("another program: dropped").any()


def foreign_refused(site: Site, action: str) -> None:
    """A plain delete or overwrite: the table is append-only, so deltalake refuses it."""
    history = _synced(site)
    done = foreign(site, action)
    assert done.returncode != 0 and "append-only" in done.stderr
    pd.testing.assert_frame_equal(md.Lake(site.lake.root).read(NAME, history=True), history)
    assert site.lake.check()["ok"].all()


def foreign_forced(site: Site, action: str) -> None:
    """A writer that unsets append-only, then deletes or overwrites: the sync refuses to go
    on naming the commit, repair undoes it (the removed files are still there)."""
    history = _synced(site)
    done = foreign(site, f"{action}-forced")
    assert done.returncode == 0, done.stderr
    version = int(done.stdout.split()[-1])
    operation = "DELETE" if action == "delete" else "WRITE"
    problems = _problems(site.lake)
    assert any(f"version {version} ({operation}" in p for p in problems)
    with pytest.raises(md.LakeDamagedError, match=f"version {version} \\({operation}") as caught:
        site.lake.sync(NAME, SYMBOLS, progress=False)
    assert f"{version:020d}.json" in str(caught.value.file)
    lost = site.lake.repair()
    assert lost["note"].str.contains("undone").any()
    reader = md.Lake(site.lake.root)
    assert reader.check()["ok"].all()
    pd.testing.assert_frame_equal(reader.read(NAME, history=True), history)
    assert site.lake.sync(NAME, SYMBOLS, progress=False).complete
    from deltalake import DeltaTable

    table = DeltaTable(site.lake.path(NAME), storage_options=site.lake.storage.delta_options())
    assert table.metadata().configuration["delta.appendOnly"] == "true"  # set again
    assert md.Lake(site.lake.root).check()["ok"].all()


def _of(frame: pd.DataFrame, symbol: str) -> pd.DataFrame:
    return frame[frame["symbol"] == symbol].reset_index(drop=True)


SCENARIOS: dict[str, Callable[[Site], None]] = {
    "newest commit file deleted": newest_commit_deleted,
    "_delta_log deleted": log_deleted,
    "_mdframes.json deleted": record_deleted,
    "_state.json deleted": state_deleted,
    "listed file replaced": file_replaced,
    "checkpoint deleted": lambda site: checkpoint_damaged(site, "deleted"),
    "checkpoint truncated": lambda site: checkpoint_damaged(site, "truncated"),
    "checkpoint garbled": lambda site: checkpoint_damaged(site, "garbled"),
    "_last_checkpoint names a missing version": lambda site: checkpoint_damaged(site, "hint"),
    "newest commit and dtype record garbled": newest_commit_garbled,
    "dtype record names an unknown kind": unknown_kind,
    "foreign append": foreign_append,
    "foreign append without meta columns": foreign_bare_append,
    "foreign delete refused": lambda site: foreign_refused(site, "delete"),
    "foreign overwrite refused": lambda site: foreign_refused(site, "overwrite"),
    "foreign delete forced": lambda site: foreign_forced(site, "delete"),
    "foreign overwrite forced": lambda site: foreign_forced(site, "overwrite"),
}
