"""Runs resumable per request (CONTRACT §10.1): an unfinished run is kept per request key and
survives any number of other syncs; the same request resumes it and asks nothing it finished
again. Requests are counted at the sandbox, not in the report."""

from __future__ import annotations

import datetime as dt
import json
import math
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import mdframes as md
from mdframes.sandbox import Sandbox

from .conftest import KEY, lake_client, sync_env

BACKFILL = ["congress_trades", "insider_trading"]  # 2 requests (both chambers) + 1 per symbol
PATHS = ("/v2/congress/", "/v2/insider-trading/")


@pytest.fixture
def world() -> Iterator[Sandbox]:
    with Sandbox() as server:
        yield server


def _universe(server: Sandbox, n: int) -> list[str]:
    with lake_client(server) as client:
        listed = md.load_tickers(market="S&P 500", client=client)
    return sorted(listed["symbol"].astype(str))[:n]


def _backfill_requests(server: Sandbox) -> list[str]:
    return [r.path for r in server.requests if r.path.startswith(PATHS)]


def test_a_budgeted_backfill_between_daily_syncs_finishes_in_ceil_needed_by_budget_runs(
    world: Sandbox, tmp_path: Path
) -> None:
    symbols = _universe(world, 40)
    budget = 30  # even: a congress unit (two requests) never straddles two runs
    with lake_client(world) as client:
        reference = md.Lake(tmp_path / "reference", client=client)
        world.clear_log()
        assert reference.sync(BACKFILL, symbols, start="2020-01-01", progress=False).complete
        needed = len(_backfill_requests(world))
        assert needed == 3 * len(symbols)

        lake = md.Lake(tmp_path / "lake", client=client)
        world.clear_log()
        reports = []
        for day in range(20):
            # The campaign's schedule: the backfill twice, then a sentiment sync and a
            # screener snapshot between its runs, every day.
            for _ in range(2 if day == 0 else 1):
                report = lake.sync(
                    BACKFILL, symbols, start="2020-01-01", budget=budget, progress=False
                )
                reports.append(report)
                assert report.requests <= budget
                if report.complete:
                    break
            if reports[-1].complete:
                break
            assert lake.sync("sentiment", ["AAPL"], progress=False).complete
            assert lake.sync("screener/news", progress=False).complete
            world.set_today(world.today + dt.timedelta(days=1))
    asked = _backfill_requests(world)
    assert len(reports) == math.ceil(needed / budget) == 4
    assert len(asked) == needed  # counted at the sandbox
    assert not [p for p, n in Counter(asked).items() if n > 1]  # no unit asked twice
    done_before = 0
    for report in reports:
        assert report.resumed == done_before  # units this request's run had finished
        done_before += sum(len(v) for v in report.done.values()) - report.resumed
    assert "resumed: " in str(reports[-1])
    held = lake.read("insider_trading", symbols).drop(columns="_fetched_at")
    assert set(held["symbol"]) <= set(symbols) and len(held)


def test_an_unfinished_run_survives_other_requests_and_keeps_its_universe(
    world: Sandbox, tmp_path: Path
) -> None:
    with lake_client(world) as client:
        lake = md.Lake(tmp_path / "lake", client=client)
        first = lake.sync("sentiment", market="S&P 500", budget=5, progress=False)
        assert first.pending and first.requests == 5  # the universe and 4 symbols
        other = lake.sync("sentiment", ["AAPL", "MSFT"], budget=1, progress=False)
        assert other.pending  # a second unfinished run, of another request
        world.clear_log()
        again = lake.sync("sentiment", market="S&P 500", budget=3, progress=False)
        assert again.resumed == 4 and not world.count("/v2/tickers")  # its universe kept
        rest = lake.sync("sentiment", ["AAPL", "MSFT"], progress=False)
        assert rest.complete and rest.resumed == 1 and rest.requests == 1


def test_a_run_that_left_failures_retries_them_once_then_closes(
    world: Sandbox, tmp_path: Path
) -> None:
    with lake_client(world) as client:
        lake = md.Lake(tmp_path / "lake", client=client)
        assert set(lake.sync("sentiment", ["AAPL", "NEWCO"], progress=False).failed["sentiment"])
        world.clear_log()
        retry = lake.sync("sentiment", ["AAPL", "NEWCO"], progress=False)
        assert retry.resumed == 1 and [r.path for r in world.requests] == ["/v2/sentiment/NEWCO"]
        world.clear_log()
        # The run closed after its retry: a symbol that always fails does not keep the
        # request from refreshing the others.
        fresh = lake.sync("sentiment", ["AAPL", "NEWCO"], progress=False)
        assert fresh.resumed == 0 and world.count() == 2


def _cli_sync(root: Path, env: dict[str, str], *words: str) -> int:
    command = [sys.executable, "-m", "mdframes", "sync", *words, "--lake", str(root)]
    proc = subprocess.run(command, env=env, capture_output=True, timeout=300)
    if proc.returncode not in (0, -signal.SIGKILL):
        print(proc.stderr.decode(errors="replace"))  # shown by pytest when the test fails
    return proc.returncode


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="SIGKILL exists on POSIX systems only")
def test_a_killed_run_resumed_after_another_sync_asks_nothing_it_committed(
    world: Sandbox, tmp_path: Path
) -> None:
    root = tmp_path / "lake"
    datasets = ["insider_trading", "congress_trades", "sentiment"]
    symbols = ["AAPL", "MSFT", "NVDA"]
    words = [*datasets, *symbols, "--start", "2024-01-01"]
    # Killed right after the second dataset's state was written: two datasets committed.
    assert _cli_sync(root, sync_env(world, "state-written:2"), *words) == -signal.SIGKILL
    runs = json.loads((root / "_lake.json").read_text())["runs"]
    (run,) = runs.values()
    committed = {
        name
        for name in datasets
        if (root / name / "_state.json").exists()
        and all(
            run["id"] in entry["runs"]
            for entry in json.loads((root / name / "_state.json").read_text())["units"].values()
        )
    }
    assert len(committed) == 2
    # Another request in between, on the machine's clock as the command's syncs: the sandbox's
    # day is earlier, and a lake's knowledge time never goes backward (CONTRACT §10.2).
    with md.Client(api_key=KEY, base_url=world.url, cache=False) as client:
        assert md.Lake(root, client=client).sync("forecast", ["AAPL"], progress=False).complete
    world.clear_log()
    assert _cli_sync(root, sync_env(world), *words) == 0
    paths = {
        "insider_trading": "/v2/insider-trading/",
        "congress_trades": "/v2/congress/",
        "sentiment": "/v2/sentiment/",
    }
    for name in committed:
        assert not world.count(paths[name])  # nothing it had committed is asked again
    (left,) = set(datasets) - committed
    assert (
        world.count()
        == world.count(paths[left])
        == len(symbols) * (2 if left == "congress_trades" else 1)
    )
    assert json.loads((root / "_lake.json").read_text())["runs"] == {}  # finished and closed
