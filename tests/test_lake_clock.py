"""A lake's knowledge time only moves forward (CONTRACT §10.2, revised 2026-12-07): a sync
whose clock is earlier than the latest sync the lake holds is refused before any request and
before any write; a clock at or after it syncs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

import mdframes as md
from mdframes.cli import main
from mdframes.sandbox import Sandbox

from .conftest import KEY, lake_client

T = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.timezone.utc)
SYMBOLS = ["AAPL", "MSFT"]
DATASETS = ["sentiment", "insider_trading"]


@pytest.fixture
def world() -> Iterator[Sandbox]:
    with Sandbox(today=T.date()) as server:
        yield server


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under the lake root with its bytes (the lock file included)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


Seen = tuple[pd.DataFrame, dict[str, pd.DataFrame], dict[str, list[str]]]


def _at(t: dt.datetime) -> Callable[[], dt.datetime]:
    return lambda: t


def _seen(lake: md.Lake) -> Seen:
    """What a reader sees of the lake: coverage, every dataset's history and its files."""
    cov = lake.coverage(DATASETS, SYMBOLS)
    history = {name: lake.read(name, history=True) for name in DATASETS}
    return cov, history, {name: lake.files(name) for name in DATASETS}


def _assert_same(before: Seen, after: Seen) -> None:
    pd.testing.assert_frame_equal(before[0], after[0])
    for name in DATASETS:
        pd.testing.assert_frame_equal(before[1][name], after[1][name])
    assert before[2] == after[2]


def test_an_earlier_clock_is_refused_before_any_request_or_write(
    tmp_path: Path, world: Sandbox
) -> None:
    root = tmp_path / "lake"
    with lake_client(world) as client:
        md.Lake(root, client=client, clock=lambda: T).sync(DATASETS, SYMBOLS, progress=False)
        seen, files = _seen(md.Lake(root)), _tree(root)
        for earlier in (T - dt.timedelta(microseconds=1), T - dt.timedelta(days=3)):
            world.clear_log()
            late = md.Lake(root, client=client, clock=_at(earlier))
            with pytest.raises(md.InvalidParameterError) as info:
                late.sync(DATASETS, SYMBOLS, progress=False)
            message = str(info.value)
            # Both times, ISO in UTC, and what to do.
            assert earlier.isoformat().replace("+00:00", "Z") in message
            assert "2026-11-20T12:00:00Z" in message
            assert "only moves forward" in message and "at or after" in message
            assert world.count() == 0  # not one request
            assert _tree(root) == files  # no run on record, no lock written, no data
            _assert_same(seen, _seen(md.Lake(root)))


def test_a_clock_at_or_after_the_latest_sync_syncs(tmp_path: Path, world: Sandbox) -> None:
    root = tmp_path / "lake"
    now = [T]
    with lake_client(world) as client:
        lake = md.Lake(root, client=client, clock=lambda: now[0])
        lake.sync(DATASETS, SYMBOLS, progress=False)
        assert lake.sync(DATASETS, SYMBOLS, progress=False).complete  # the same time
        world.advance(1)
        now[0] = T + dt.timedelta(days=1)
        assert lake.sync(DATASETS, SYMBOLS, progress=False).complete
        now[0] = T + dt.timedelta(hours=12)  # after the first syncs, before the latest
        world.clear_log()
        with pytest.raises(md.InvalidParameterError, match="2026-11-21T12:00:00Z"):
            lake.sync(DATASETS, SYMBOLS, progress=False)
        assert world.count() == 0
    stamps = lake.read("sentiment", SYMBOLS, history=True)["_fetched_at"]
    assert stamps.max() == pd.Timestamp(T + dt.timedelta(days=1))


def test_a_killed_sync_still_counts_as_the_latest(tmp_path: Path, world: Sandbox) -> None:
    """A sync that dies after its run is on record logs nothing: its time is kept apart
    from the log, so an earlier clock is still refused after it."""
    from mdframes.lake.store.storage import Storage
    from mdframes.lake.sync.state import RootState

    root = tmp_path / "lake"
    with lake_client(world) as client:
        md.Lake(root, client=client, clock=lambda: T).sync("sentiment", SYMBOLS, progress=False)
        # What run_sync saves before any work, as a kill right after would leave it.
        storage = Storage(root, None)
        state = RootState.load(storage)
        later = T + dt.timedelta(hours=1)
        state.begin_run({"datasets": ["sentiment"]}, state.next_sync_id(later), later.isoformat())
        state.save(storage)
        assert RootState.load(storage).latest_sync_time() == later
        with pytest.raises(md.InvalidParameterError, match="2026-11-20T13:00:00Z"):
            md.Lake(root, client=client, clock=lambda: T).sync("sentiment", SYMBOLS, progress=False)


def test_cli_sync_with_an_earlier_machine_clock_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line syncs on the machine's clock: a lake synced at a time after it (here
    in 2100, whatever the machine's date) is refused with exit 2 and both times named."""
    future = dt.datetime(2100, 1, 1, tzinfo=dt.timezone.utc)
    lake = tmp_path / "lake"
    with Sandbox() as server:
        monkeypatch.setenv("MDFRAMES_BASE_URL", server.url)
        monkeypatch.setenv("MDFRAMES_API_KEY", KEY)
        client = md.Client(api_key=KEY, base_url=server.url, cache=False)
        with client:
            md.Lake(lake, client=client, clock=lambda: future).sync("markets", progress=False)
        server.clear_log()
        files = _tree(lake)
        assert main(["sync", "markets", "--lake", str(lake)]) == 2
        err = capsys.readouterr().err
        assert server.count() == 0
    assert "mdframes sync: error:" in err and "2100-01-01T00:00:00Z" in err
    assert "only moves forward" in err and "Traceback" not in err
    assert _tree(lake) == files


def test_a_sync_that_waited_for_the_lease_takes_its_time_once_it_holds_it(
    tmp_path: Path, world: Sandbox
) -> None:
    """Two syncs on the machine's clock: this one read the time first, another started a
    moment later and took the lease; once this one holds it, its time is read again, later
    than the other's, and it syncs (it is not refused for a time it never stored under)."""
    import sys
    import threading

    from mdframes.lake.store.lease import open_lease
    from mdframes.lake.sync.state import RootState

    root = tmp_path / "lake"
    with lake_client(world) as client:
        md.Lake(root, client=client, clock=_at(T)).sync("sentiment", SYMBOLS, progress=False)
        later = threading.Event()

        def machine() -> dt.datetime:  # the time moves on while this sync waits
            return T + dt.timedelta(seconds=10 if later.is_set() else 1)

        lake = md.Lake(root, client=client, clock=machine)
        outcome: list[object] = []
        with open_lease(lake.storage.location, owner="another sync").hold():
            waiting = threading.Thread(
                target=lambda: outcome.append(
                    lake.sync("sentiment", SYMBOLS, wait=True, progress=False)
                )
            )
            waiting.start()
            # Until the sync waits for the lease (past its check before the lease).
            for _ in range(2000):
                frame = sys._current_frames().get(waiting.ident or -1)
                names = []
                while frame is not None:
                    names.append(frame.f_code.co_name)
                    frame = frame.f_back
                if "hold" in names and "run_sync" in names:
                    break
                waiting.join(0.01)
            # The other sync, started after this one read the time, stamps the lake.
            state = RootState.load(lake.storage)
            state.next_sync_id(T + dt.timedelta(seconds=5))
            state.save(lake.storage)
            later.set()
        waiting.join(60)
    assert len(outcome) == 1 and outcome[0].complete, outcome  # type: ignore[attr-defined]
    assert outcome[0].sync_id.endswith("T120010Z")  # type: ignore[attr-defined]
