"""``lake.coverage()`` and ``mdframes lake coverage`` (CONTRACT §10.1): what a real lake synced,
per dataset and symbol, read from its state files only."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import mdframes as md
from mdframes.sandbox import Sandbox

from .conftest import KEY

COLUMNS = [
    "dataset",
    "symbol",
    "status",
    "first",
    "last",
    "gaps",
    "first_fetched_at",
    "last_fetched_at",
    "rows",
    "error",
]


@pytest.fixture
def world() -> Iterator[Sandbox]:
    with Sandbox() as server:
        yield server


@pytest.fixture
def client(world: Sandbox) -> Iterator[md.Client]:
    with md.Client(api_key=KEY, base_url=world.url, cache=False, max_retries=0) as c:
        c.sandbox = world  # the lake's clock follows the sandbox's day
        yield c


def _at(frame: pd.DataFrame, dataset: str, symbol: str | None) -> pd.Series:
    hit = frame[(frame["dataset"] == dataset) & (frame["symbol"].fillna("") == (symbol or ""))]
    assert len(hit) == 1, (dataset, symbol, frame)
    return hit.iloc[0]


def test_coverage_says_what_was_synced_pending_failed_not_found_or_never(
    tmp_path: Path, client: md.Client, world: Sandbox
) -> None:
    lake = md.Lake(tmp_path / "lake", client=client)
    today = pd.Timestamp(world.today)
    lake.sync(["insider_trading", "forecast"], ["AAPL", "MSFT", "NEWCO"], start="2025-01-01")
    # An older window that does not touch the first: a gap between them.
    lake.sync("insider_trading", "AAPL", start="2023-01-01", end="2023-06-30", progress=False)
    lake.sync("screener/news", progress=False)
    world.inject(500, path="/v2/sentiment/IBM")
    lake.sync("sentiment", ["KO", "IBM"], progress=False)
    assert lake.sync("sentiment", ["AAPL", "NVDA"], budget=1, progress=False).pending

    cov = lake.coverage()
    assert list(cov.columns) == COLUMNS
    assert cov.dtypes.astype(str).to_dict() == {
        "dataset": "string",
        "symbol": "string",
        "status": "category",
        "first": "datetime64[ns]",
        "last": "datetime64[ns]",
        "gaps": "object",
        "first_fetched_at": "datetime64[us, UTC]",
        "last_fetched_at": "datetime64[us, UTC]",
        "rows": "Int64",
        "error": "string",
    }
    assert list(cov["status"].cat.categories) == [
        "synced",
        "pending",
        "failed",
        "not_found",
        "never",
    ]
    aapl = _at(cov, "insider_trading", "AAPL")
    assert aapl["status"] == "synced"
    assert (aapl["first"], aapl["last"]) == (pd.Timestamp("2023-01-01"), today)
    assert aapl["gaps"] == [(pd.Timestamp("2023-07-01"), pd.Timestamp("2024-12-31"))]
    assert _at(cov, "insider_trading", "MSFT")["gaps"] == []
    newco = _at(cov, "insider_trading", "NEWCO")
    assert newco["status"] == "not_found" and "404" in newco["error"]
    assert pd.isna(newco["first"]) and pd.isna(newco["rows"])
    ibm = _at(cov, "sentiment", "IBM")
    assert ibm["status"] == "failed" and "500" in ibm["error"]
    assert _at(cov, "sentiment", "KO")["status"] == "synced"
    assert pd.isna(_at(cov, "sentiment", "KO")["first"])  # synced without start: all history
    pending = [_at(cov, "sentiment", s)["status"] for s in ("AAPL", "NVDA")]
    assert sorted(pending) == ["pending", "synced"]  # the budget allowed one
    news = _at(cov, "screener/news", None)
    assert news["status"] == "synced" and news["first"] == news["last"] == today
    # What was synced is what the lake holds: records and fetch times.
    for dataset in ("insider_trading", "forecast", "sentiment"):
        for row in cov[(cov["dataset"] == dataset) & (cov["status"] == "synced")].itertuples():
            held = lake.read(dataset, row.symbol, history=True)
            assert row.rows == len(lake.read(dataset, row.symbol)), (dataset, row.symbol)
            assert row.first_fetched_at == held["_fetched_at"].min()
            # The latest fetch, though it may have found nothing new to store.
            assert row.last_fetched_at >= held["_fetched_at"].max()

    asked = lake.coverage(
        ["insider_trading", "screener/news", "screener/lobbying"], ["aapl", "ZZZ"]
    )
    found = zip(asked["dataset"], asked["symbol"].fillna("-"), asked["status"], strict=True)
    assert list(found) == [
        ("insider_trading", "AAPL", "synced"),
        ("insider_trading", "ZZZ", "never"),
        ("screener/news", "-", "synced"),  # a cross section's row covers every symbol
        ("screener/lobbying", "-", "never"),
    ]
    assert asked.loc[1, "rows"] == 0
    with pytest.raises(md.InvalidParameterError, match="lake dataset"):
        lake.coverage("no_such_dataset")
    assert md.Lake(tmp_path / "empty").coverage().empty
    assert not (tmp_path / "empty").exists()  # a look creates nothing


def test_coverage_reads_the_state_not_the_data(tmp_path: Path, client: md.Client) -> None:
    lake = md.Lake(tmp_path / "lake", client=client)
    lake.sync(["insider_trading", "sentiment"], ["AAPL", "MSFT"], progress=False)
    before = lake.coverage()
    for name in ("insider_trading", "sentiment"):
        for file in lake.files(name):
            os.unlink(file)  # every data file gone: a scan would fail or see nothing
    pd.testing.assert_frame_equal(md.Lake(tmp_path / "lake").coverage(), before)


def test_coverage_kept_between_calls_follows_another_writers_sync(
    tmp_path: Path, client: md.Client, world: Sandbox
) -> None:
    # A lake object keeps what it made of each state file (a panel asks the coverage before
    # its reads); another object's sync rewrites the file, and the next answer follows it.
    lake = md.Lake(tmp_path / "lake", client=client)
    lake.sync("sentiment", ["AAPL"], start="2025-01-01", progress=False)
    reader = md.Lake(tmp_path / "lake")
    first = reader.coverage("sentiment", ["AAPL", "MSFT"])
    assert first["status"].astype(str).tolist() == ["synced", "never"]
    first["gaps"].iloc[0].append("the caller's")  # its own list, not the kept one
    first.loc[0, "rows"] = -5  # and its own frame
    again = reader.coverage("sentiment", ["AAPL", "MSFT"])
    assert again["gaps"].iloc[0] == [] and again.loc[0, "rows"] > 0
    assert again["status"].astype(str).tolist() == ["synced", "never"]
    world.set_today(world.today + dt.timedelta(days=5))
    lake.sync("sentiment", ["MSFT"], start="2025-01-01", progress=False)
    after = reader.coverage("sentiment", ["AAPL", "MSFT"])
    assert after["status"].astype(str).tolist() == ["synced", "synced"]
    fresh = md.Lake(tmp_path / "lake").coverage("sentiment", ["AAPL", "MSFT"])
    pd.testing.assert_frame_equal(after, fresh)


def test_rows_follow_incremental_syncs_and_revisions(
    tmp_path: Path, client: md.Client, world: Sandbox
) -> None:
    lake = md.Lake(tmp_path / "lake", client=client)
    symbols = ["AAPL", "MSFT", "NVDA"]
    for _ in range(3):
        lake.sync(["congress_trades", "insider_trading"], symbols, start="2024-06-01")
        world.set_today(world.today + dt.timedelta(days=40))
    cov = lake.coverage(["congress_trades", "insider_trading"], symbols)
    assert set(cov["status"]) == {"synced"}
    for row in cov.itertuples():
        assert row.rows == len(lake.read(row.dataset, row.symbol)), (row.dataset, row.symbol)
        assert row.gaps == [] and row.first == pd.Timestamp("2024-06-01")


def test_a_repaired_symbol_is_pending_until_synced_again(tmp_path: Path, client: md.Client) -> None:
    lake = md.Lake(tmp_path / "lake", client=client)
    lake.sync("sentiment", ["AAPL"], progress=False)
    lake.sync("sentiment", ["MSFT"], progress=False)
    victim = next(f for f in lake.files("sentiment") if "AAPL" in set(pd.read_parquet(f)["symbol"]))
    os.unlink(victim)
    lost = lake.repair()
    assert list(lost["symbols"].iloc[0]) == ["AAPL"]
    cov = lake.coverage("sentiment")
    aapl = _at(cov, "sentiment", "AAPL")
    assert aapl["status"] == "pending" and pd.isna(aapl["last"])  # nothing vouched for
    assert _at(cov, "sentiment", "MSFT")["status"] == "synced"
    lake.sync("sentiment", ["AAPL", "MSFT"], progress=False)
    assert set(lake.coverage("sentiment")["status"]) == {"synced"}


def test_a_lake_of_mdframes_0_2_has_coverage_without_counts(tmp_path: Path) -> None:
    lake_root = tmp_path / "lake"
    shutil.copytree(Path(__file__).parent / "fixtures" / "lake-format1", lake_root)
    lake = md.Lake(lake_root)
    lake.upgrade()
    cov = lake.coverage("insider_trading")
    assert set(cov["status"]) == {"synced"} and cov["rows"].isna().all()
    assert (cov["first"] == pd.Timestamp("2026-06-01")).all()
    assert (cov["last_fetched_at"] == pd.Timestamp("2026-11-05 12:00", tz="UTC")).all()


def test_cli_prints_coverage(tmp_path: Path, client: md.Client, world: Sandbox) -> None:
    root = tmp_path / "lake"
    md.Lake(root, client=client).sync(
        "insider_trading", ["AAPL"], start="2025-01-01", progress=False
    )
    md.Lake(root, client=client).sync(
        "insider_trading", ["AAPL"], start="2023-01-01", end="2023-06-30", progress=False
    )
    env = dict(os.environ, MDFRAMES_BASE_URL=world.url, MDFRAMES_API_KEY=KEY)
    command = [sys.executable, "-m", "mdframes", "lake", "coverage"]
    done = subprocess.run(
        [*command, "insider_trading", "AAPL", "NEWCO", "--lake", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "synced" in done.stdout and "never" in done.stdout
    assert "2023-07-01..2024-12-31" in done.stdout
    out = tmp_path / "coverage.csv"
    done = subprocess.run(
        [*command, "--lake", str(root), "--out", str(out)],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0 and pd.read_csv(out)["status"].tolist() == ["synced"]
    # As known the day before the first sync: as a copy taken then, nothing at all.
    done = subprocess.run(
        [*command, "--lake", str(root), "--known-at", "2026-11-04", "--out", str(out)],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0 and pd.read_csv(out)["status"].tolist() == []
