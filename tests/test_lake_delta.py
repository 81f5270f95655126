"""The lake's Delta storage: one version per read, stray and damaged files, check and repair,
a commit under a lost lease, compaction with vacuum, knowledge-time dates, arguments checked
before anything is written, and a sync's Ctrl-C with a stalled request."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import mdframes as md
from mdframes.lake.table.commit import APP_ID
from mdframes.sandbox import Sandbox

from .conftest import KEY, lake_client

SYMBOLS = ["AAPL", "0700", "MSFT"]


@pytest.fixture(scope="module")
def world() -> Iterator[Sandbox]:
    with Sandbox(extra_symbols=["0700"]) as server:
        yield server


@pytest.fixture
def client(world: Sandbox) -> Iterator[md.Client]:
    with lake_client(world) as c:
        yield c


@pytest.fixture
def lake(tmp_path: Path, client: md.Client) -> md.Lake:
    return md.Lake(tmp_path / "lake", client=client)


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes: 'byte for byte unchanged' made checkable."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


# --- one version, its file list ------------------------------------------------------------------


def test_files_and_path_name_the_current_version(lake: md.Lake) -> None:
    from deltalake import DeltaTable

    lake.sync("insider_trading", SYMBOLS, progress=False)
    files = lake.files("insider_trading")
    assert files and all(f.endswith(".parquet") and os.path.exists(f) for f in files)
    table = DeltaTable(lake.path("insider_trading"))
    assert sorted(table.file_uris()) == sorted(files)
    assert table.to_pyarrow_table().num_rows == len(lake.read("insider_trading", history=True))
    assert table.metadata().configuration["delta.checkpointInterval"] == "10"
    with pytest.raises(md.InvalidParameterError, match="holds no"):
        lake.files("lobbying")


def test_version_is_the_delta_tables_and_moves_with_each_commit(lake: md.Lake) -> None:
    from deltalake import DeltaTable

    assert lake.version("insider_trading") is None  # nothing synced yet
    lake.sync("insider_trading", SYMBOLS, progress=False)
    first = lake.version("insider-trading")  # a dataset name as sync takes it
    assert first == DeltaTable(lake.path("insider_trading")).version()
    lake.sync("insider_trading", ["NVDA"], progress=False)  # new records: one commit
    assert lake.version("insider_trading") == first + 1
    assert lake.version("lobbying") is None
    with pytest.raises(md.InvalidParameterError, match="insider_trade"):
        lake.version("insider_trade")


def test_a_stray_copy_of_a_data_file_is_ignored(lake: md.Lake) -> None:
    lake.sync("insider_trading", SYMBOLS, progress=False)
    before = lake.read("insider_trading", history=True)
    info = lake.info()
    source = Path(lake.files("insider_trading")[0])
    shutil.copy(source, source.with_name("copy of " + source.name))  # as a file manager does
    pd.testing.assert_frame_equal(lake.read("insider_trading", history=True), before)
    pd.testing.assert_frame_equal(lake.info(), info)
    assert lake.sql("select count(*) n from insider_trading_history")["n"][0] == len(before)
    assert lake.check()["ok"].all()


@pytest.mark.parametrize("damage", ["delete", "truncate", "empty"])
def test_a_damaged_file_is_named_then_repaired_and_resynced(
    tmp_path: Path, client: md.Client, damage: str
) -> None:
    names = ["insider_trading", "sentiment"]
    fresh = md.Lake(tmp_path / "fresh", client=client)
    fresh.sync(names, SYMBOLS, progress=False)
    lake = md.Lake(tmp_path / "lake", client=client)
    lake.sync(names, SYMBOLS[:1], progress=False)
    lake.sync(names, SYMBOLS, progress=False)
    victim = Path(lake.files("sentiment")[0])
    if damage == "delete":
        victim.unlink()
    elif damage == "truncate":
        victim.write_bytes(victim.read_bytes()[:100])
    else:
        victim.write_bytes(b"")
    with pytest.raises(md.LakeDamagedError, match=r"lake\.repair\(\)") as caught:
        lake.read("sentiment")
    assert caught.value.dataset == "sentiment" and victim.name in str(caught.value.file)
    with pytest.raises(md.LakeDamagedError) as caught:  # a read of symbols opens files itself
        md.Lake(lake.root).read("sentiment", SYMBOLS)
    assert victim.name in str(caught.value.file)
    with pytest.raises(md.LakeDamagedError):
        lake.sql("select count(*) from sentiment")
    checked = lake.check().set_index("dataset")
    assert not checked.loc["sentiment", "ok"] and checked.loc["insider_trading", "ok"]
    assert victim.name in checked.loc["sentiment", "problems"][0]
    lost = lake.repair()
    assert lost["file"].str.contains(victim.name).all() and len(lost) == 1
    assert lost["symbols"][0] and lost["rows"][0] > 0
    assert lake.check()["ok"].all()
    lake.read("sentiment")  # readable again, with less
    report = lake.sync(names, SYMBOLS, progress=False)
    assert report.complete
    for name in names:
        got = lake.read(name).drop(columns=["_fetched_at"])
        pd.testing.assert_frame_equal(got, fresh.read(name).drop(columns=["_fetched_at"]))


def test_a_garbage_log_entry_or_record_raises_lake_damaged(lake: md.Lake) -> None:
    lake.sync("sentiment", ["AAPL"], progress=False)
    lake.sync("sentiment", ["MSFT"], progress=False)
    log = Path(lake.path("sentiment")) / "_delta_log"
    last = sorted(log.glob("*.json"))[-1]
    last.write_text("{not json")
    with pytest.raises(md.LakeDamagedError, match="_delta_log"):
        md.Lake(lake.root).read("sentiment")
    record = Path(lake.path("sentiment")) / "_mdframes.json"
    record.write_text("[1, 2")
    with pytest.raises(md.LakeDamagedError, match="_mdframes.json"):
        md.Lake(lake.root).read("sentiment")
    (Path(lake.root) / "_lake.json").write_bytes(b"\xff\xfe")
    with pytest.raises(md.LakeDamagedError, match="_lake.json"):
        md.Lake(lake.root).info()


def test_a_newer_format_names_both_versions(lake: md.Lake) -> None:
    lake.sync("sentiment", ["AAPL"], progress=False)
    record = Path(lake.path("sentiment")) / "_mdframes.json"
    record.write_text(record.read_text().replace('"format": 2', '"format": 7'))
    with pytest.raises(md.MdframesError, match="format 7.*format 2"):
        md.Lake(lake.root).read("sentiment")


# --- one writer ------------------------------------------------------------------------------------


def test_a_commit_under_a_lost_lease_fails_and_changes_nothing(
    lake: md.Lake, client: md.Client
) -> None:
    """Writer A starts (reads the application transaction), loses its lease while writer B
    commits; A's commit is refused and nothing of it is visible."""
    from mdframes.lake.store.lease import open_lease

    lake.sync("sentiment", ["AAPL"], progress=False)
    a = md.Lake(lake.root, client=client).tables.get(md.registry.REGISTRY["sentiment"])
    a.begin_writes()  # A's sync starts here
    b = md.Lake(lake.root, client=client)
    b.sync("sentiment", ["MSFT"], progress=False)  # B holds the lease now and commits
    seen = b.read("sentiment", history=True)
    version = a.delta().version()
    rows = a.scan(a.snapshot())
    lease = open_lease(lake.storage.location, owner="writer A")
    with lease.hold(), pytest.raises(md.LakeBusyError, match="lost"):
        a.append(rows.slice(0, 5), lease)
    pd.testing.assert_frame_equal(md.Lake(lake.root).read("sentiment", history=True), seen)
    from deltalake import DeltaTable

    assert DeltaTable(lake.path("sentiment")).version() == version
    assert DeltaTable(lake.path("sentiment")).transaction_version(APP_ID) == 2


# --- compaction --------------------------------------------------------------------------------------


def test_compact_is_one_commit_then_vacuum_honours_retain_hours(
    lake: md.Lake, world: Sandbox
) -> None:
    from deltalake import DeltaTable

    for symbol in SYMBOLS:
        lake.sync("sentiment", [symbol], progress=False)
    before = lake.read("sentiment", history=True)
    old_files = lake.files("sentiment")
    version = DeltaTable(lake.path("sentiment")).version()
    assert lake.compact("sentiment") == {"sentiment": (3, 1)}
    table = DeltaTable(lake.path("sentiment"))
    writes = [
        h for h in table.history() if h["version"] > version and "VACUUM" not in h["operation"]
    ]
    assert len(writes) == 1  # the compaction is one commit
    assert all(os.path.exists(f) for f in old_files)  # younger than 168 hours: kept
    pd.testing.assert_frame_equal(lake.read("sentiment", history=True), before)
    assert lake.compact("sentiment", retain_hours=0) == {"sentiment": (1, 1)}
    assert not any(os.path.exists(f) for f in old_files)  # nothing needs them now
    pd.testing.assert_frame_equal(lake.read("sentiment", history=True), before)
    with pytest.raises(md.InvalidParameterError, match="retain_hours"):
        lake.compact(retain_hours=-1)


def test_compacted_files_are_sorted_by_symbol_with_small_row_groups(lake: md.Lake) -> None:
    import pyarrow.parquet as pq

    for symbol in SYMBOLS:
        lake.sync("sentiment", [symbol], progress=False)
    lake.compact()
    (path,) = lake.files("sentiment")
    meta = pq.ParquetFile(path).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    symbols = pq.read_table(path, columns=["symbol"])["symbol"].to_pylist()
    assert symbols == sorted(symbols)


# --- knowledge time ----------------------------------------------------------------------------------


def test_a_date_alone_means_the_end_of_that_day(lake: md.Lake, world: Sandbox) -> None:
    lake.sync("sentiment", ["AAPL"], progress=False)
    synced = lake.read("sentiment", "AAPL")["_fetched_at"].max()
    day = synced.date()
    assert len(lake.read("sentiment", "AAPL", known_at=day)) > 0
    assert len(lake.read("sentiment", "AAPL", known_at=day.isoformat())) > 0
    with pytest.warns(md.KnowledgeTimeWarning, match="first synced"):
        empty = lake.read("sentiment", "AAPL", known_at=f"{day.isoformat()}T00:00")
    assert empty.empty and "score" in empty.columns
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lake.read("sentiment", "AAPL", known_at=day - dt.timedelta(days=1))
    [warning] = [w for w in caught if issubclass(w.category, md.KnowledgeTimeWarning)]
    assert warning.filename == __file__  # a lake read's warning points at the caller's line


def test_docs_quick_start_returns_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The quick start of docs/lake.md, run as written: the lake as known when the sync's
    day ended holds the rows that sync stored (a date alone means the end of that day)."""
    import re

    page = (Path(__file__).resolve().parent.parent / "docs" / "lake.md").read_text()
    quick = page.split("## Quick start", 1)[1]
    code = re.search(r"```python\n(.*?)```", quick, flags=re.S).group(1)  # type: ignore[union-attr]
    assert 'known_at="2026-11-20"' in code
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "docs_example"}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", md.KnowledgeTimeWarning)
            exec(compile(code, "docs/lake.md", "exec"), namespace)
    finally:
        md.sandbox.stop()
        md.set_default_client(None)
    then, trades = namespace["then"], namespace["trades"]
    assert len(then) > 0  # type: ignore[arg-type]
    pd.testing.assert_frame_equal(then, trades)  # type: ignore[arg-type]


# --- arguments and roots -----------------------------------------------------------------------------


def test_bad_arguments_leave_the_lake_byte_for_byte_unchanged(
    lake: md.Lake, world: Sandbox
) -> None:
    lake.sync("sentiment", ["AAPL"], progress=False)
    root = Path(lake.root)
    before = _tree(root)
    world.clear_log()
    for call in (
        lambda: lake.sync(None),  # type: ignore[arg-type]
        lambda: lake.sync("sentiment", 5),  # type: ignore[arg-type]
        lambda: lake.sync("screener/sentiment"),
        lambda: lake.sync("tickers", market=""),
        lambda: lake.sync("sentiment", "AAPL", wait="yes"),  # type: ignore[arg-type]
        lambda: lake.read("sentiment", columns=["score", "score"]),
        lambda: lake.read("sentiment", columns="score"),  # type: ignore[arg-type]
        lambda: lake.read("sentiment", known_at="soon"),
        lambda: lake.compact(retain_hours="1"),  # type: ignore[arg-type]
        lambda: lake.sql(""),
    ):
        with pytest.raises(md.InvalidParameterError):
            call()
    assert world.count() == 0
    assert _tree(root) == before


def test_roots_are_checked_and_nothing_is_created_until_a_write(
    tmp_path: Path, client: md.Client
) -> None:
    for bad in (123, None.__class__, b"x", ""):
        with pytest.raises(md.InvalidParameterError, match="root"):
            md.Lake(bad)  # type: ignore[arg-type]
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(md.InvalidParameterError, match="is a file"):
        md.Lake(a_file)
    with pytest.raises(md.InvalidParameterError, match="scheme"):
        md.Lake("ftp://host/lake")
    root = tmp_path / "later"
    lake = md.Lake(root, client=client)
    assert lake.compact() == {}
    for call in (lake.info, lake.check, lake.repair, lambda: lake.read("sentiment")):
        with pytest.raises(md.InvalidParameterError, match="no lake exists at"):
            call()
    assert not root.exists()
    assert not root.exists()
    lake.sync("sentiment", ["AAPL"], progress=False)
    assert (root / "sentiment" / "_delta_log").is_dir()
    assert not os.path.exists(os.path.join(os.getcwd(), "123"))


def test_rows_come_in_the_loaders_order(lake: md.Lake, client: md.Client) -> None:
    symbols = ["MSFT", "AAPL", "0700"]
    lake.sync("insider_trading", symbols, progress=False)
    got = lake.read("insider_trading", symbols).drop(columns=["_fetched_at"])
    pd.testing.assert_frame_equal(got, md.load_insider_trading(symbols, client=client))


# --- the rate window belongs to the key --------------------------------------------------------------


def test_the_remembered_rate_window_belongs_to_the_key(tmp_path: Path) -> None:
    other_key = "second-sandbox-key"
    with Sandbox(rate_limit=3, rate_window=3600, api_keys=(KEY, other_key)) as server:
        root = tmp_path / "lake"
        with md.Client(api_key=KEY, base_url=server.url, cache=False) as spent:
            first = md.Lake(root, client=spent).sync("sentiment", ["AAPL", "MSFT", "NVDA", "KO"])
        assert first.requests == 3 and first.pending
        state = (root / "_lake.json").read_text()
        assert KEY not in state and hashlib.sha256(KEY.encode()).hexdigest() not in state
        # Named by an HMAC under the lake's own random salt: not the fingerprint any other
        # lake (or an unsalted hash) would give the same key.
        unsalted = spent.fingerprint("lake-rate")
        salt = bytes.fromhex(json.loads(state)["salt"])
        assert unsalted not in state and spent.fingerprint("lake-rate", salt=salt) in state
        assert spent.fingerprint("lake-rate", salt=b"another lake") != unsalted
        with md.Client(api_key=other_key, base_url=server.url, cache=False) as fresh:
            second = md.Lake(root, client=fresh).sync("sentiment", ["AAPL", "MSFT", "NVDA", "KO"])
        assert second.requests > 0  # another key's window does not stop this one
        with md.Client(api_key=KEY, base_url=server.url, cache=False) as again:
            third = md.Lake(root, client=again).sync("sentiment", ["IBM"])
        assert third.requests == 0 and third.pending  # this key's window is still spent


# --- Ctrl-C ------------------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(signal, "SIGINT"), reason="POSIX signals")
def test_ctrl_c_with_a_stalled_request_exits_long_before_the_stall_ends(tmp_path: Path) -> None:
    stall = 60.0
    with Sandbox(latency=stall) as server:
        env = dict(os.environ, MDFRAMES_BASE_URL=server.url, MDFRAMES_API_KEY=KEY)
        command = [sys.executable, "-m", "mdframes", "sync", "sentiment", "AAPL", "MSFT"]
        proc = subprocess.Popen(
            [*command, "--lake", str(tmp_path / "lake")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            line = proc.stderr.readline()  # the plan: the sync has started its requests
            assert b"sync plan" in line
            time.sleep(1.0)
            started = time.monotonic()
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=stall / 2)
            took = time.monotonic() - started
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 130
    assert took < stall / 4  # its sockets were shut: no waiting on the stalled answer


# --- a full disk -------------------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_full_disk_gives_one_line_and_leaves_no_temporary(tmp_path: Path, world: Sandbox) -> None:
    """A real process whose writes fail past a few kilobytes (``RLIMIT_FSIZE``: the kernel's
    "File too large", as a full disk's "No space left" to the writer)."""
    import resource

    root = tmp_path / "lake"
    (root).mkdir()
    (root / ".stale.json.123.abcd.tmp").write_text("left by a crashed 0.2 writer")

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (6_000, 6_000))

    env = dict(os.environ, MDFRAMES_BASE_URL=world.url, MDFRAMES_API_KEY=KEY)
    command = [sys.executable, "-m", "mdframes", "sync", "sentiment", "AAPL", "MSFT"]
    done = subprocess.run(
        [*command, "--lake", str(root)],
        env=env,
        capture_output=True,
        preexec_fn=small_files,  # noqa: PLW1509 - the limit must hold in the child only
        timeout=120,
    )
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 1, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("mdframes sync: error: sentiment: cannot write")
    assert not list(root.rglob("*.tmp"))  # the stale temporary at the root went too
    # On the machine's clock, as the command's sync: the sandbox's day is earlier, and a
    # lake's knowledge time never goes backward (CONTRACT §10.2).
    with md.Client(api_key=KEY, base_url=world.url, cache=False) as later:
        lake = md.Lake(root, client=later)
        assert lake.sync("sentiment", ["AAPL", "MSFT"], progress=False).complete
    assert lake.check()["ok"].all()


# --- the read's sort -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_the_packed_sort_orders_rows_as_arrow_does(seed: int) -> None:
    """The read's fast sort (ranks packed into one integer) gives Table.sort_by's order:
    nulls last, ties in their stored order, text, dates, times, floats and integers."""
    import numpy as np
    import pyarrow as pa

    from mdframes.lake.table.order import arrange

    rng = np.random.default_rng(seed)
    n = 2_000
    words = np.array(["a", "b", "0700", "ZZ", "é", ""])
    table = pa.table(
        {
            "symbol": pa.array(
                [None if x == 5 and seed % 2 else words[x] for x in rng.integers(0, 6, n)]
            ),
            "date": pa.array(rng.integers(19_000, 19_010, n).astype("int32")).cast(pa.date32()),
            "t": pa.array(rng.integers(0, 5, n) * 1_000_000, pa.timestamp("us", tz="UTC")),
            "x": pa.array(
                np.where(rng.random(n) < 0.2, np.nan, rng.integers(0, 4, n)), from_pandas=True
            ),
            "flag": pa.array([None if v == 2 else bool(v) for v in rng.integers(0, 3, n)]),
            "_version": pa.array(rng.integers(1, 3, n), pa.int32()),
            "row": pa.array(np.arange(n)),  # shows whether ties kept their order
        }
    )
    keys = ["symbol", "date", "t", "x", "flag", "_version"][: 2 + seed % 5]
    expected = table.sort_by([(k, "ascending") for k in keys])
    assert arrange(table, keys).equals(expected)
    _drops_as_a_filter_first(arrange, table, keys, rng)


def _drops_as_a_filter_first(arrange: Any, table: Any, keys: list[str], rng: Any) -> None:
    """A sort leaving rows out (a read's older versions) equals the sort of the others."""
    import numpy as np
    import pyarrow as pa

    for share in (0.0, 0.3, 1.0):
        out = rng.random(table.num_rows) < share
        drop = np.flatnonzero(out)
        kept = table.filter(pa.array(~out))
        want = arrange(kept, keys) if kept.num_rows else kept
        assert arrange(table, keys, drop).column("row").equals(want.column("row"))


def test_keys_too_wide_to_pack_sort_text_read_as_its_dictionary() -> None:
    """Keys that do not fit one integer (two wide integers) with text still coded as its
    dictionary, as a read of many symbols leaves it: Table.sort_by's order of the decoded
    rows (Arrow's own sort refuses dictionary columns)."""
    import numpy as np
    import pyarrow as pa

    from mdframes.lake.table.order import arrange

    rng = np.random.default_rng(7)
    n = 500
    words = pa.array([None if x == 3 else f"S{x}" for x in rng.integers(0, 6, n)])
    table = pa.table(
        {
            "symbol": words.dictionary_encode(),
            "a": pa.array(rng.integers(0, 1 << 40, n) * (rng.random(n) < 0.5)),
            "b": pa.array(rng.integers(0, 1 << 40, n)),
            "row": pa.array(np.arange(n)),
        }
    )
    decoded = table.set_column(0, "symbol", words)
    keys = ["symbol", "a", "b"]
    expected = decoded.sort_by([(k, "ascending") for k in keys])
    assert arrange(table, keys).column("row").equals(expected.column("row"))
    _drops_as_a_filter_first(arrange, table, keys, rng)


def test_text_in_many_chunks_of_a_few_dictionaries_sorts_as_decoded() -> None:
    """Text read as its dictionary in many chunks sharing a few row groups' dictionaries
    (the slices a filter or a cut leaves), dictionaries larger than the rows, nulls among
    the codes: the order and the values of Table.sort_by on the decoded rows."""
    import numpy as np
    import pyarrow as pa

    from mdframes.lake.table.order import arrange

    rng = np.random.default_rng(3)
    groups = []
    for g in range(3):
        values = pa.array([f"id{g}-{k:04d}" if k % 7 else f"id{k:04d}" for k in range(900)])
        picks = rng.integers(0, 900, 200)
        codes = pa.array([None if x % 11 == 0 else int(x) for x in picks], pa.int32())
        groups.append(pa.DictionaryArray.from_arrays(codes, values))
    chunks = [group.slice(at, 25) for group in groups for at in range(0, 200, 25)]
    order = rng.permutation(len(chunks))
    column = pa.chunked_array([chunks[i] for i in order])
    n = len(column)
    table = pa.table(
        {
            "symbol": pa.chunked_array([pa.array(rng.integers(0, 3, n).astype(str))]),
            "key": column,
            "row": pa.array(np.arange(n)),
        }
    )
    decoded = table.set_column(1, "key", column.cast(pa.string()))
    expected = decoded.sort_by([("symbol", "ascending"), ("key", "ascending")])
    got = arrange(table, ["symbol", "key"])
    assert got.column("row").equals(expected.column("row"))
    assert got.column("key").cast(pa.string()).equals(expected.column("key"))
    _drops_as_a_filter_first(arrange, table, ["symbol", "key"], rng)


def test_ties_broken_by_text_that_is_null_on_every_row_keep_their_order() -> None:
    """Rows tied on the leading keys, broken by text that no row has (an optional column):
    they keep their stored order, as Table.sort_by keeps it."""
    import pyarrow as pa

    from mdframes.lake.table.order import arrange

    n = 40
    table = pa.table(
        {
            "symbol": pa.array(["B", "A"] * (n // 2)),
            "note": pa.nulls(n, pa.string()),
            "row": pa.array(range(n)),
        }
    )
    expected = table.sort_by([("symbol", "ascending"), ("note", "ascending")])
    assert arrange(table, ["symbol", "note"]).equals(expected)
    coded = table.set_column(1, "note", table["note"].dictionary_encode())
    assert arrange(coded, ["symbol", "note"]).column("row").equals(expected.column("row"))


# --- readers during compactions in another process -------------------------------------------------


def test_readers_during_compactions_in_another_process_see_every_row_once(
    tmp_path: Path, client: md.Client
) -> None:
    """Three datasets of several commits each, compacted one after another by a real process,
    while this one reads them in a loop through the lake, DuckDB over ``lake.files()`` and
    deltalake over ``lake.path()``: no error, no wrong count. (The engine step adds Polars.)"""
    import duckdb
    from deltalake import DeltaTable

    from .compaction_race import read_during_compactions

    readers = {
        "duckdb": lambda lake, name: (
            duckdb.read_parquet(lake.files(name)).aggregate("count(*)").fetchall()[0][0]
        ),
        "delta": lambda lake, name: (
            DeltaTable(lake.path(name)).to_pyarrow_table(columns=["symbol"]).num_rows
        ),
    }
    read_during_compactions(md.Lake(tmp_path / "lake", client=client), readers)


def test_symbol_reads_pick_row_groups_by_their_statistics(
    lake: md.Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files of many small row groups (as a large table has): a read of some symbols reads
    the row groups their statistics allow and gives what filtering the whole table gives."""
    import pyarrow.parquet as pq

    import mdframes.lake.table.commit as commit_module

    monkeypatch.setattr(commit_module, "ROW_GROUP", 100)
    lake.sync("sentiment", ["AAPL", "MSFT", "NVDA", "0700"], progress=False)
    lake.compact()
    (path,) = lake.files("sentiment")
    assert pq.ParquetFile(path).metadata.num_row_groups > 20
    everything = lake.read("sentiment")
    for symbols in (["MSFT"], ["NVDA", "0700"], ["AAPL", "NVDA"]):
        got = lake.read("sentiment", symbols, start="2026-06-01", known_at=lake.clock())
        rows = everything[everything["symbol"].isin(symbols) & (everything["date"] >= "2026-06-01")]
        order = {s: i for i, s in enumerate(symbols)}
        rows = rows.sort_values("symbol", key=lambda s: s.map(order), kind="stable")
        pd.testing.assert_frame_equal(got, rows.reset_index(drop=True))


def test_batches_hold_disjoint_symbol_ranges_so_reads_need_no_sort(
    lake: md.Lake, client: md.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Commits every few thousand rows, often while an earlier unit is still running: every
    file still holds a symbol range of its own, so the version reads in stored order."""
    import mdframes.lake.maintenance as maintenance_module
    import mdframes.lake.sync.modes as modes_module
    import mdframes.lake.sync.sync as sync_module
    from mdframes.registry import REGISTRY
    from mdframes.sandbox import DEFAULT_TODAY, universe_symbols

    monkeypatch.setattr(sync_module, "FLUSH_ROWS", 1_500)
    monkeypatch.setattr(sync_module, "FLUSH_UNITS", 10**6)
    # The sync's own files are looked at, not what its auto-compaction would make of them.
    monkeypatch.setattr(maintenance_module, "AUTO_COMPACT_FILES", 10**6)
    symbols = sorted(universe_symbols(DEFAULT_TODAY))[:60]
    assert lake.sync("sentiment", symbols[::-1], progress=False).complete
    table = lake.tables.get(REGISTRY["sentiment"])
    snap = table.snapshot()
    assert snap is not None and len(snap.files) > 5 and table.in_stored_order(snap)
    sorts: list[int] = []
    original = modes_module.WindowMode.sort
    monkeypatch.setattr(
        modes_module.WindowMode, "sort", lambda *a, **k: sorts.append(1) or original(*a, **k)
    )
    frame = lake.read("sentiment")
    assert not sorts and len(frame) == 730 * len(symbols)
    assert frame["symbol"].is_monotonic_increasing


def test_reads_of_revised_and_unrevised_row_groups_give_the_latest_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read skips version columns where the statistics show no second version: row groups
    with and without revisions both read back as the latest versions of a whole-table read."""
    import mdframes.lake.table.commit as commit_module
    from mdframes.registry import REGISTRY

    monkeypatch.setattr(commit_module, "ROW_GROUP", 100)
    symbols = ["AAPL", "MSFT", "NVDA", "0700"]
    # A sandbox of its own: its clock moves.
    with (
        Sandbox(extra_symbols=["0700"]) as world,
        md.Client(api_key=KEY, base_url=world.url, cache=False) as client,
    ):
        lake = md.Lake(tmp_path / "lake", client=client)
        lake.sync("sentiment", symbols, progress=False)
        for _ in range(3):
            world.advance(days=1)
            lake.sync("sentiment", symbols, progress=False)
    lake.compact()
    table = lake.tables.get(REGISTRY["sentiment"])
    snap = table.snapshot()
    assert snap is not None
    highest = [v for g in table.records._groups(snap) for v in g.versions]
    assert max(highest) > 1 and min(highest) == 1  # both kinds of row group are read below
    everything = lake.read("sentiment")
    history = lake.read("sentiment", history=True)
    assert len(history) > len(everything)
    for symbol in symbols:
        got = lake.read("sentiment", symbol)
        want = everything[everything["symbol"] == symbol].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want)


def test_a_reader_sees_each_commit_another_lake_object_makes(
    tmp_path: Path, client: md.Client
) -> None:
    """A reader keeps its table open and skips the log refresh while the next commit file is
    absent: a commit from elsewhere (another object, as another process) is still seen."""
    writer = md.Lake(tmp_path / "lake", client=client)
    reader = md.Lake(tmp_path / "lake")
    writer.sync("sentiment", "AAPL", progress=False)
    assert set(reader.read("sentiment")["symbol"]) == {"AAPL"}
    for i, symbol in enumerate(["MSFT", "NVDA"], start=2):
        writer.sync("sentiment", symbol, progress=False)
        assert reader.read("sentiment")["symbol"].nunique() == i
        assert len(reader.read("sentiment", symbol)) > 0


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="counts file descriptors in /proc")
def test_reads_keep_a_bounded_number_of_data_files_open(
    lake: md.Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Open data files are kept for fast reads, but never more than a few per dataset:
    file descriptors are scarce (256 by default on macOS) and a lake may list thousands."""
    import mdframes.lake.maintenance as maintenance_module
    import mdframes.lake.sync.sync as sync_module
    import mdframes.lake.table.scan as scan_module
    from mdframes.registry import REGISTRY
    from mdframes.sandbox import DEFAULT_TODAY, universe_symbols

    monkeypatch.setattr(scan_module, "_OPEN_FILES", 3)
    monkeypatch.setattr(sync_module, "FLUSH_ROWS", 1_500)
    monkeypatch.setattr(maintenance_module, "AUTO_COMPACT_FILES", 10**6)  # many files kept
    symbols = sorted(universe_symbols(DEFAULT_TODAY))[:24]
    assert lake.sync("sentiment", symbols, progress=False).complete
    table = lake.tables.get(REGISTRY["sentiment"])
    snap = table.snapshot()
    assert snap is not None and len(snap.files) > 3
    before = len(os.listdir("/proc/self/fd"))
    everything = lake.read("sentiment")  # more files than may stay open: read through Arrow
    for symbol in symbols:
        got = lake.read("sentiment", symbol)
        want = everything[everything["symbol"] == symbol].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want)
    assert len(table.records._handles) <= 3
    assert len(os.listdir("/proc/self/fd")) - before <= 3
    # After a compaction, files no longer listed are closed: none of them stays open.
    lake.compact("sentiment", retain_hours=0)
    lake.read("sentiment", symbols[0])
    (kept,) = lake.files("sentiment")
    assert [Path(u).name for u in table.records._handles] == [Path(kept).name]
    assert len(os.listdir("/proc/self/fd")) - before <= 1
