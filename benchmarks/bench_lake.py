"""The lake, measured in one run against the sandbox (in its own process, like a service).

    python benchmarks/bench_lake.py [--symbols 2000] [--rows 3000000] [--rate 25] [--window 10]

Prints, side by side (this machine is shared and noisy; the ratios are what mean something):

(a) a sync of N symbols x 3 datasets under a rate limit: requests used / requests needed (goal
    1.0 plus paging), achieved rate / allowed rate (goal >= 0.95), 429 answers (goal <= 1 per
    window). The service announces resets in whole seconds, and a window opens at the first
    request after the last reset (the sandbox does both), so a window lasts at best its
    nominal length + 1 s and no client can send more than limit / (window + 1 s): that is the
    allowed rate, measured over the full windows; the whole run's rate against limit / window
    is printed too;
(b) a re-sync with nothing new: requests per (dataset, symbol) window (goal 1.0), rows added
    (goal 0);
(c) lake.read of one symbol and of a whole dataset of about 3M rows, against a bare
    pyarrow.dataset read of the same files (``lake.files()``; goal for all rows <= 1.2x) and,
    compacted, against the loader through a warm HTTP cache (one symbol: lake time / loader
    time <= 1.0; all rows: >= 50x faster);
(d) files and bytes per million stored rows before and after compact(), and the compaction's
    seconds per million rows;
(e) the latency of one append (one batch, one Delta commit) to the 3M-row table.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as pads
from _common import median_time, sandbox_process  # benchmarks/_common.py (the script's folder)

import mdframes as md
from mdframes.sandbox import DEFAULT_TODAY, SANDBOX_KEY, universe_symbols

DATASETS = ["sentiment", "insider_trading", "put_call_ratio"]
BIG = "sentiment"  # about 730 rows per symbol


def client_for(url: str, cache: bool | str = False) -> md.Client:
    return md.Client(api_key=SANDBOX_KEY, base_url=url, cache=cache, max_workers=8)


def fixed_clock() -> Callable[[], object]:
    import datetime as dt

    day = DEFAULT_TODAY

    def clock() -> dt.datetime:
        now = dt.datetime.now(dt.timezone.utc)
        return dt.datetime.combine(day, now.timetz())

    return clock


def _record_windows() -> list[tuple[float, float]]:
    """(answer time, announced reset) of every answer the sync's pacer sees: instrumentation
    around the real pacer, nothing replaced."""
    from mdframes.client import reset_from_headers
    from mdframes.lake.pacer import Pacer

    seen: list[tuple[float, float]] = []
    original = Pacer.after_response

    def after_response(self: Pacer, response: object) -> None:
        reset = reset_from_headers(response.headers)  # type: ignore[attr-defined]
        if reset is not None:
            seen.append((time.time(), reset.timestamp()))
        original(self, response)

    Pacer.after_response = after_response  # type: ignore[method-assign]
    return seen


def part_a(root: Path, symbols: list[str], rate: int, window: float) -> md.Lake:
    limit = int(rate * window)
    seen = _record_windows()
    with sandbox_process(rate_limit=limit, rate_window=window) as url:
        lake = md.Lake(root, client=client_for(url), clock=fixed_clock())
        started = time.perf_counter()
        report = lake.sync(DATASETS, symbols, wait=True, progress=False)
        elapsed = time.perf_counter() - started
    needed = len(DATASETS) * len(symbols)
    windows = max(1.0, elapsed / window)
    achieved = report.requests / elapsed
    print(f"(a) sync {len(symbols)} symbols x {len(DATASETS)} datasets, limit {limit}/{window:g}s")
    print(f"    {report.requests} requests in {elapsed:.1f} s; complete: {report.complete}")
    print(f"    requests used / needed      {report.requests / needed:6.3f}   (goal 1.0)")
    print(f"    achieved / nominal rate     {achieved / rate:6.3f}   (limit / window, whole run)")
    # The service's windows, told apart by their announced resets. A window opens at the first
    # request after the last reset and its reset is announced in whole seconds, so a window
    # lasts at best window + 1 s: the best any client can do is limit / (window + 1 s). Full
    # windows only (from the first reset to the last full window's): the first and last are
    # partial and would flatter the figure.
    resets = sorted({r for _, r in seen})
    full = resets[1:-1]
    if len(full) >= 2:
        sent = sum(1 for _, r in seen if r in set(full[1:]))
        span = full[-1] - full[0]
        best = limit / (window + 1.0)
        print(
            f"    achieved / allowed rate     {sent / span / best:6.3f}   (goal >= 0.95; full "
            f"windows: {len(full) - 1}, allowed = limit per window + 1 s)"
        )
        used = [sum(1 for _, r in seen if r == w) / limit for w in full[1:]]
        print(f"    allowance used per window   {min(used):6.3f}   (the least of the full windows)")
    print(
        f"    429 answers                 {report.throttled:6d}   "
        f"({report.throttled / windows:.2f} per window; goal <= 1)"
    )
    return lake


def part_b(lake: md.Lake, url: str, symbols: list[str]) -> None:
    lake.client = client_for(url)
    started = time.perf_counter()
    report = lake.sync(DATASETS, symbols, progress=False)
    elapsed = time.perf_counter() - started
    assert report.complete, str(report)
    windows = len(DATASETS) * len(symbols)
    print(f"(b) re-sync with nothing new: {report.requests} requests in {elapsed:.1f} s")
    print(f"    requests per window         {report.requests / windows:6.3f}   (goal 1.0)")
    print(f"    rows added                  {report.rows_added:6d}   (goal 0)")
    print(f"    versions added              {report.versions_added:6d}")


def sync_big(lake: md.Lake, big_symbols: list[str]) -> None:
    started = time.perf_counter()
    assert lake.sync(BIG, big_symbols, progress=False).complete
    rows = lake.info().set_index("dataset").loc[BIG, "versions"]
    print(
        f"(c) {BIG}: {rows:,} rows for {len(big_symbols)} symbols (synced in "
        f"{time.perf_counter() - started:.0f} s)"
    )


def part_c(lake: md.Lake, one: str, repeat: int, label: str) -> tuple[float, float]:
    """lake.read against a bare pyarrow.dataset read of the same files."""
    files = lake.files(BIG)

    def bare_one() -> object:
        table = pads.dataset(files, format="parquet").to_table(filter=pc.field("symbol") == one)
        return table.to_pandas()

    def bare_all() -> object:
        return pads.dataset(files, format="parquet").to_table().to_pandas()

    # Short reads are noisier: more repeats.
    t_lake_one = median_time(lambda: lake.read(BIG, one), 4 * repeat)
    t_bare_one = median_time(bare_one, 4 * repeat)
    t_lake_all = median_time(lambda: lake.read(BIG), repeat)
    t_bare_all = median_time(bare_all, repeat)
    print(f"    {label} ({len(files)} files):")
    print(
        f"      one symbol:  lake.read {t_lake_one * 1e3:8.1f} ms, pyarrow "
        f"{t_bare_one * 1e3:8.1f} ms -> {t_lake_one / t_bare_one:5.2f}x"
    )
    print(
        f"      all rows:    lake.read {t_lake_all * 1e3:8.1f} ms, pyarrow "
        f"{t_bare_all * 1e3:8.1f} ms -> {t_lake_all / t_bare_all:5.2f}x   (goal <= 1.2x)"
    )
    return t_lake_one, t_lake_all


def against_loader(
    url: str, big_symbols: list[str], one: str, times: tuple[float, float], repeat: int
) -> None:
    cache = Path(tempfile.mkdtemp()) / "http-cache.sqlite"
    with client_for(url, cache=str(cache)) as warm:
        md.load_sentiment(big_symbols, client=warm)  # warm the HTTP cache
        t_loader_one = median_time(lambda: md.load_sentiment(one, client=warm), 4 * repeat)
        t_loader_all = median_time(lambda: md.load_sentiment(big_symbols, client=warm), 1)
    t_lake_one, t_lake_all = times
    print("    against the loader through a warm HTTP cache (compacted lake):")
    print(
        f"      one symbol:  loader {t_loader_one * 1e3:8.1f} ms, lake.read "
        f"{t_lake_one * 1e3:8.1f} ms -> lake/loader {t_lake_one / t_loader_one:5.2f}   "
        "(goal <= 1.0)"
    )
    print(
        f"      all rows:    loader {t_loader_all * 1e3:8.1f} ms -> lake.read "
        f"{t_loader_all / t_lake_all:6.1f}x faster   (goal >= 50x)"
    )


def part_d(lake: md.Lake) -> None:
    before = lake.info().set_index("dataset")
    started = time.perf_counter()
    lake.compact()
    took = time.perf_counter() - started
    after = lake.info().set_index("dataset")
    rows = before["versions"].sum()
    print(
        f"(d) compact(): {took:.1f} s for {rows:,} rows -> {took / (rows / 1e6):.2f} s per "
        "million rows"
    )
    print("    files and MB per million stored rows, before -> after compact()")
    for name in before.index:
        million = before.loc[name, "versions"] / 1e6
        if million == 0:
            continue
        print(
            f"    {name:16s} {before.loc[name, 'files'] / million:8.1f} -> "
            f"{after.loc[name, 'files'] / million:6.1f} files, "
            f"{before.loc[name, 'bytes'] / 1e6 / million:6.1f} -> "
            f"{after.loc[name, 'bytes'] / 1e6 / million:6.1f} MB"
        )


def part_e(lake: md.Lake, repeat: int) -> None:
    """One batch of 500 rows committed to the big table (as a sync's flush does)."""
    import pyarrow as pa

    from mdframes.lake.lease import open_lease
    from mdframes.registry import REGISTRY

    table = lake._table(REGISTRY[BIG])
    rows = table.scan(table.snapshot(), columns=table.stored_schema().names).slice(0, 500)
    rows = rows.set_column(
        rows.schema.get_field_index("_sync_id"), "_sync_id", pa.repeat(pa.scalar("bench"), 500)
    )
    with open_lease(lake.storage.location, owner="benchmark").hold() as lease:
        table.begin_writes()
        took = median_time(lambda: table.append(rows, lease), repeat)
    print(f"(e) append of one 500-row batch (one Delta commit): {took * 1e3:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--symbols", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=3_000_000, help="size of the (c) dataset")
    parser.add_argument(
        "--rate",
        type=int,
        default=25,
        help="allowed requests per second (below what the machine sends unlimited, part b, so that the pacer is measured, not the CPU)",
    )
    parser.add_argument("--window", type=float, default=10.0, help="rate-limit window, seconds")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--lake", help="keep the lake here (default: a temporary folder)")
    args = parser.parse_args()

    universe = sorted(universe_symbols(DEFAULT_TODAY))
    symbols = universe[: args.symbols]
    big_symbols = universe[: max(args.symbols, args.rows // 730)]
    root = Path(args.lake) if args.lake else Path(tempfile.mkdtemp()) / "lake"
    lake = part_a(root, symbols, args.rate, args.window)
    one = big_symbols[len(big_symbols) // 2]
    with sandbox_process() as url:
        part_b(lake, url, symbols)
        sync_big(lake, big_symbols)
        part_c(lake, one, args.repeat, "before compact")
        part_d(lake)
        times = part_c(lake, one, args.repeat, "after compact")
        against_loader(url, big_symbols, one, times, args.repeat)
        part_e(lake, args.repeat)


if __name__ == "__main__":
    main()
