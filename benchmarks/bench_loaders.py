"""Side-by-side timings: the floor, the official SDK and mdframes, in one run.

    pip install "finbrain-python[async]==0.3.1"   # only for this benchmark; not a dependency
    python benchmarks/bench_loaders.py [--repeat 7]

Prints medians and ratios (this machine is noisy; only the ratios mean something). The
contenders of each case alternate round by round (their order rotating), so that a load
change hits them alike; each ratio is the median of the per-round ratios, the lowest and
highest round in brackets.

- floor: requests + orjson + DataFrame.from_records (no typing, no validation);
- sdk: finbrain-python 0.3.1 with as_dataframe=True, pointed at the sandbox's /v2/;
- mdframes: the loader, typed and validated, cache off (the SDK has none);
- md.aio: 100 symbols through ``await md.aio.load_insider_trading`` against the threaded
  loader on the same client (goal <= 1.1x) and against the SDK's ``finbrain.aio`` with the 100
  calls gathered at once (goal: faster).

The SDK is not a dependency (``pip install "finbrain-python[async]==0.3.1"`` for this
benchmark): without it the SDK's columns say "not installed" and every other case runs.

Goals: 20k screener <= 0.8x the SDK; 500-row insider <= 1.0x the SDK; 100 symbols with 20 ms
latency >= 6x faster than the SDK (called sequentially, as its users do) and within 1.3x of
the ideal (requests x latency / workers); the batch of 64 symbols at 30 ms latency, typed and
validated, >= 6x faster than 64 sequential plain GETs (issue 18); `import mdframes` within
0.15 s of `import pandas`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import orjson
import pandas as pd
import requests
from _common import ratio, rounds, sandbox_process  # benchmarks/_common.py (the script's folder)

import mdframes as md
from mdframes.sandbox import SANDBOX_KEY

SYMBOLS_100 = [f"B{i:03d}" for i in range(100)]
LATENCY = 0.02
SYMBOLS_64 = SYMBOLS_100[:64]
BATCH_LATENCY = 0.03


def floor_get(session: requests.Session, url: str, params: dict, key: str) -> pd.DataFrame:
    body = orjson.loads(
        session.get(url, params=params, headers={"Authorization": f"Bearer {SANDBOX_KEY}"}).content
    )
    return pd.DataFrame.from_records(body["data"][key])


SDK_MISSING = 'not installed (pip install "finbrain-python[async]==0.3.1")'


def sdk_client(base: str):  # type: ignore[no-untyped-def]
    """The SDK's client on the sandbox, or None when the SDK is not installed."""
    try:
        from finbrain import FinBrainClient
    except ImportError:
        return None
    return FinBrainClient(api_key=SANDBOX_KEY, base_url=base + "/v2/")


def import_time(statement: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                f"import time; t=time.perf_counter(); {statement}; print(time.perf_counter()-t)",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(float(out.stdout))
    return statistics.median(times)


def row(label: str, times: dict[str, list[float]], extra: str = "") -> None:
    """One case: medians in ms, ours against the SDK and (where there is one) the floor."""
    floor = statistics.median(times["floor"]) if "floor" in times else None
    ours = statistics.median(times["md"])
    floor_txt = f"{floor * 1000:8.1f}" if floor is not None else " " * 8
    sdk_txt = f"{statistics.median(times['sdk']) * 1000:9.1f}" if "sdk" in times else f"{'-':>9}"

    def against(other: str) -> str:
        if other not in times:
            return f"{other}: {SDK_MISSING}"
        mid, low, high = ratio(times, "md", other)
        return f"{mid:5.2f}x {other} [{low:.2f}-{high:.2f}]"

    print(
        f"{label:<34}{floor_txt} {sdk_txt} {ours * 1000:9.1f}   {against('floor') if floor else ''}"
        f"  {against('sdk')} {extra}"
    )


def batch(base: str, repeat: int) -> None:
    """64 symbols at 30 ms: one typed, validated load against 64 plain GETs in a row."""
    client = md.Client(api_key=SANDBOX_KEY, base_url=base, cache=False, progress=False)
    session = requests.Session()
    headers = {"Authorization": f"Bearer {SANDBOX_KEY}"}
    url = base + "/v2/insider-trading/{}"

    def sequential() -> None:
        for sym in SYMBOLS_64:
            session.get(url.format(sym), headers=headers).content  # noqa: B018

    got = md.load_insider_trading(SYMBOLS_64, client=client)
    assert got["symbol"].nunique() == 64
    times = rounds(
        {"plain": sequential, "md": lambda: md.load_insider_trading(SYMBOLS_64, client=client)},
        repeat,
        warmup=0,
    )
    plain, ours = statistics.median(times["plain"]), statistics.median(times["md"])
    faster, low, high = ratio(times, "plain", "md")
    ideal = len(SYMBOLS_64) * BATCH_LATENCY / client.max_workers
    print(
        f"{'64 symbols, 30 ms, vs plain GETs':<34}{plain * 1000:8.1f} {'':>9} {ours * 1000:9.1f}"
        f"   {faster:4.1f}x [{low:.1f}-{high:.1f}] faster than 64 sequential GETs (goal >= 6x); "
        f"{ours / ideal:4.2f}x ideal {ideal * 1000:.0f} ms"
    )
    client.close()


def asynchronous(client: md.Client, base: str, repeat: int) -> None:
    """100 symbols through ``md.aio`` against the threaded loader and against the SDK's
    ``finbrain.aio`` (one ``AsyncFinBrainClient`` kept open, the 100 calls gathered at once, as
    its README shows), on one event loop (as an async service keeps it), interleaved round by
    round."""
    loop = asyncio.new_event_loop()

    def through_aio() -> None:
        loop.run_until_complete(md.aio.load_insider_trading(SYMBOLS_100, client=client))

    def threaded() -> None:
        md.load_insider_trading(SYMBOLS_100, client=client)

    cases = {"aio": through_aio, "threaded": threaded}
    sdk = None
    if _has_sdk():
        from finbrain.aio import AsyncFinBrainClient

        sdk = AsyncFinBrainClient(api_key=SANDBOX_KEY, base_url=base + "/v2/")
        loop.run_until_complete(sdk.__aenter__())

        async def gathered() -> None:
            calls = (sdk.insider_transactions.ticker(s, as_dataframe=True) for s in SYMBOLS_100)
            pd.concat(await asyncio.gather(*calls))

        cases["sdk_aio"] = lambda: loop.run_until_complete(gathered())
    try:
        times = rounds(cases, max(5, repeat))
    finally:
        if sdk is not None:
            loop.run_until_complete(sdk.__aexit__(None, None, None))
        loop.close()
    mid, low, high = ratio(times, "aio", "threaded")
    aio_ms, threaded_ms = (statistics.median(times[k]) * 1000 for k in ("aio", "threaded"))
    versus = SDK_MISSING
    if "sdk_aio" in times:
        s_mid, s_low, s_high = ratio(times, "aio", "sdk_aio")
        versus = (
            f"{statistics.median(times['sdk_aio']) * 1000:.1f} ms: md.aio / finbrain.aio "
            f"{s_mid:4.2f}x [{s_low:.2f}-{s_high:.2f}] (goal < 1.00x)"
        )
    print(
        f"{'md.aio, 100 symbols, 20 ms':<34}threaded {threaded_ms:.1f} ms, md.aio {aio_ms:.1f} "
        f"ms: {mid:4.2f}x threaded [{low:.2f}-{high:.2f}] (goal <= 1.10x); finbrain.aio " + versus
    )


def _has_sdk() -> bool:
    import importlib.util

    return importlib.util.find_spec("finbrain") is not None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    repeat = args.repeat

    print(f"{'case (median ms)':<34}{'floor':>8} {'sdk':>9} {'mdframes':>9}   ratios")
    with sandbox_process(record_counts={"BENCH500": 500}) as base:
        session = requests.Session()
        sdk = sdk_client(base)
        client = md.Client(api_key=SANDBOX_KEY, base_url=base, cache=False)

        # 1. 20,000-record sentiment screener
        url = base + "/v2/screener/sentiment"
        q = {"region": "US", "limit": 20000}
        check = md.load_screener("sentiment", region="US", limit=20000, client=client)
        assert len(check) == 20000, len(check)
        cases = {
            "floor": lambda: floor_get(session, url, q, "data"),
            "md": lambda: md.load_screener("sentiment", region="US", limit=20000, client=client),
        }
        if sdk is not None:
            cases["sdk"] = lambda: sdk.screener.sentiment(
                region="US", limit=20000, as_dataframe=True
            )
        times = rounds(cases, repeat)
        row("screener sentiment 20,000 rows", times, "(goal <= 0.80x SDK)" if sdk else "")

        # 2. one symbol, 500 insider transactions
        url = base + "/v2/insider-trading/BENCH500"
        assert len(md.load_insider_trading("BENCH500", client=client)) == 500
        cases = {
            "floor": lambda: floor_get(session, url, {}, "transactions"),
            "md": lambda: md.load_insider_trading("BENCH500", client=client),
        }
        if sdk is not None:
            cases["sdk"] = lambda: sdk.insider_transactions.ticker("BENCH500", as_dataframe=True)
        times = rounds(cases, repeat, inner=3)
        row("insider 500 transactions", times, "(goal <= 1.00x SDK)" if sdk else "")
        client.close()

    with sandbox_process(latency=LATENCY, extra_symbols=SYMBOLS_100) as base:
        sdk = sdk_client(base)
        client = md.Client(api_key=SANDBOX_KEY, base_url=base, cache=False, progress=False)
        workers = client.max_workers
        ideal = len(SYMBOLS_100) * LATENCY / workers

        def sdk_sequential() -> None:
            for sym in SYMBOLS_100:
                sdk.insider_transactions.ticker(sym, as_dataframe=True)

        session = requests.Session()
        url = base + "/v2/insider-trading/{}"

        def floor_threaded() -> None:
            # The floor for this case: same workers, no typing, no validation.
            with ThreadPoolExecutor(workers) as pool:
                frames = list(
                    pool.map(
                        lambda sym: floor_get(session, url.format(sym), {}, "transactions"),
                        SYMBOLS_100,
                    )
                )
            pd.concat(frames)

        few = max(3, repeat // 2)
        cases = {
            "floor": floor_threaded,
            "md": lambda: md.load_insider_trading(SYMBOLS_100, client=client),
        }
        if sdk is not None:
            cases["sdk"] = sdk_sequential
        times = rounds(cases, few)
        o = statistics.median(times["md"])
        faster = (
            f"{statistics.median(times['sdk']) / o:4.1f}x faster than SDK (goal >= 6x); "
            if "sdk" in times
            else ""
        )
        row(
            f"100 symbols, {LATENCY * 1000:.0f} ms latency",
            times,
            f"| {faster}{o / ideal:4.2f}x ideal {ideal * 1000:.0f} ms (goal <= 1.30x)",
        )
        asynchronous(client, base, repeat)
        client.close()

    with sandbox_process(latency=BATCH_LATENCY, extra_symbols=SYMBOLS_64) as base:
        batch(base, max(3, repeat // 2))

    # `import mdframes` is lazy; touching a loader pulls in pandas, requests and the pipeline
    # (pandera and requests-cache still wait for the first validation / cached session).
    pandas_t = import_time("import pandas", 7)
    ours_t = import_time("import mdframes; mdframes.load_insider_trading", 7)
    print(
        f"{'import time':<34}pandas {pandas_t * 1000:.0f} ms, mdframes + a loader "
        f"{ours_t * 1000:.0f} ms: +{(ours_t - pandas_t) * 1000:.0f} ms (goal <= +150 ms)"
    )


if __name__ == "__main__":
    main()
