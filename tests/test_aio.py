"""``md.aio``: a coroutine for every loader, with the loader's signature and frame, sharing the
client; the event loop stays free while it runs; cancelling stops its requests (CONTRACT §14).
Everything runs against the sandbox over loopback."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

import mdframes as md
from mdframes.registry import REGISTRY, example_arguments
from mdframes.sandbox import Sandbox

from .conftest import KEY


def _arguments(name: str) -> tuple[list[Any], dict[str, Any]]:
    """A documented call of loader ``name``: the registry example of its first dataset."""
    if name == "load":
        return ["insider_trading", ["AAPL", "MSFT"]], {}
    ds = next(d for d in REGISTRY.values() if d.version == "v2" and d.loader == name)
    kwargs = example_arguments(ds)
    if ds.scope in ("screener", "recent"):
        return [ds.name.split("/", 1)[1]], kwargs
    return [], kwargs


def test_every_v2_loader_has_a_coroutine() -> None:
    expected = {"load"} | {d.loader for d in REGISTRY.values() if d.version == "v2"}
    assert set(md.aio.loader_names()) == expected
    assert expected <= set(md.aio.__all__)


@pytest.mark.parametrize("name", md.aio.loader_names())
def test_coroutine_has_the_signature_and_frame_of_its_loader(name: str, client: md.Client) -> None:
    sync, coro = getattr(md, name), getattr(md.aio, name)
    assert inspect.iscoroutinefunction(coro)
    assert inspect.signature(coro) == inspect.signature(sync)
    assert f":func:`mdframes.{name}`" in (coro.__doc__ or "")
    args, kwargs = _arguments(name)
    expected = sync(*args, client=client, **kwargs)
    got = asyncio.run(coro(*args, client=client, **kwargs))
    assert len(expected) > 0
    pd.testing.assert_frame_equal(got, expected)
    assert got.attrs["dataset"] == expected.attrs["dataset"]


def test_the_coroutines_are_written_out_from_the_registry() -> None:
    """md.aio's coroutines are source (type checkers and the API reference see them), and that
    source is what the registry and the loaders' signatures give now."""
    from mdframes import _aiogen

    assert _aiogen.current() == _aiogen.source(), "run `python -m mdframes._aiogen`"
    for name in md.aio.loader_names():
        assert getattr(md.aio, name).__module__ == "mdframes.aio"


def test_a_warning_points_at_the_awaiting_line(client: md.Client) -> None:
    """Raised at the ``await`` in a coroutine, or at ``asyncio.run`` called directly: the user's
    line, never asyncio's or mdframes' frames."""

    async def main() -> pd.DataFrame:
        return await md.aio.load_sentiment(["AAPL", "NOTFOUND"], errors="skip", client=client)

    with pytest.warns(md.SkippedSymbolsWarning) as direct:
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        asyncio.run(md.aio.load_sentiment(["AAPL", "NOTFOUND"], errors="skip", client=client))
    with pytest.warns(md.SkippedSymbolsWarning) as awaited:
        asyncio.run(main())
    assert (direct[0].filename, direct[0].lineno) == (__file__, line)
    awaiting = main.__code__.co_firstlineno + 1
    assert (awaited[0].filename, awaited[0].lineno) == (__file__, awaiting)


def test_same_errors_and_warnings(client: md.Client) -> None:
    with pytest.raises(md.NotFoundError, match="NOTFOUND"):
        asyncio.run(md.aio.load_sentiment("NOTFOUND", client=client))
    with pytest.raises(md.InvalidParameterError, match="limit"):  # before any request
        asyncio.run(md.aio.load_news("AAPL", limit=0, client=client))
    with pytest.warns(md.SkippedSymbolsWarning, match="NOTFOUND"):
        df = asyncio.run(md.aio.load_sentiment(["AAPL", "NOTFOUND"], errors="skip", client=client))
    assert list(df.attrs["failed"]) == ["NOTFOUND"]


def test_coroutines_and_loaders_share_the_clients_cache(
    shared_sandbox: Sandbox, tmp_path: Any
) -> None:
    with md.Client(api_key=KEY, base_url=shared_sandbox.url, cache=tmp_path / "c.sqlite") as c:
        first = md.load_forecast("AAPL", client=c)
        before = shared_sandbox.count("/v2/")
        again = asyncio.run(md.aio.load_forecast("AAPL", client=c))
        assert shared_sandbox.count("/v2/") == before  # the sync load's cached answer
        pd.testing.assert_frame_equal(again, first)


@pytest.fixture(scope="module")
def server() -> Iterator[Sandbox]:
    with Sandbox() as s:
        yield s


def test_the_event_loop_stays_responsive(server: Sandbox) -> None:
    """A heartbeat ticking every millisecond next to a 50-symbol load. The load's work runs
    in threads, so the loop only ever waits for the GIL (a 5 ms switch interval) and its own
    ticks: the largest gap stays far below the load's length. The bound is generous (0.5 s,
    ten times the contract's 50 ms) because this machine's cores are shared with other test
    runs; a loop blocked by the load shows as no tick at all while the load runs."""
    symbols = sorted(server.symbols())[:50]
    assert len(symbols) == 50
    with md.Client(api_key=KEY, base_url=server.url, cache=False) as client:

        async def main() -> tuple[float, int, pd.DataFrame]:
            done = asyncio.Event()
            gaps: list[float] = []

            async def heartbeat() -> None:
                last = time.perf_counter()
                while not done.is_set():
                    await asyncio.sleep(0.001)
                    now = time.perf_counter()
                    gaps.append(now - last)
                    last = now

            beat = asyncio.create_task(heartbeat())
            await asyncio.sleep(0)  # the heartbeat starts before the load
            ticks_before = len(gaps)
            df = await md.aio.load_insider_trading(symbols, client=client)
            ticks = len(gaps) - ticks_before
            done.set()
            await beat
            return max(gaps), ticks, df

        largest, ticks, df = asyncio.run(main())
    assert set(df["symbol"]) <= set(symbols) and len(df) > 0
    assert ticks >= 10  # the loop ran while the load did
    assert largest < 0.5, f"the event loop was blocked for {largest:.3f} s"


def _load_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mdframes")]


def test_cancelling_stops_the_requests() -> None:
    """Cancel a 50-symbol load whose answers take 2 s each (4 at a time), once its first four
    requests have reached the sandbox: the cancellation returns with none of them answered
    (their sockets were cut: nothing waited for the 2 s), no thread of the load left running,
    and no request of the load reaches the sandbox afterwards."""
    with Sandbox(latency=2.0) as slow:
        symbols = sorted(slow.symbols())[:50]
        with md.Client(api_key=KEY, base_url=slow.url, cache=False, max_workers=4) as client:

            async def main() -> list[int]:
                task = asyncio.create_task(md.aio.load_sentiment(symbols, client=client))
                while slow.count() < 4:  # the first four are at the server, unanswered
                    await asyncio.sleep(0.005)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                assert not _load_threads()  # no request of the load is running
                return [r.status for r in list(slow.requests)]

            with warnings.catch_warnings():
                warnings.simplefilter("error")  # a cancelled load warns nothing
                statuses = asyncio.run(main())
            assert statuses == [0, 0, 0, 0]  # none answered when the cancel returned
            # The sandbox finishes its four (into closed sockets); then another load on the
            # same client goes through (the cancellation was the load's, not the client's),
            # and it is the only request that came after them.
            slow.latency = 0.0
            while any(r.status == 0 for r in list(slow.requests)):
                time.sleep(0.05)
            assert len(md.load_markets(client=client)) > 0
            assert slow.count() == 5 and slow.requests[-1].path == "/v2/markets"
