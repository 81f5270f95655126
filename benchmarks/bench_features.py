"""Feature panels: the vectorised engine against a cell-by-cell loop and against reading the inputs.

    python benchmarks/bench_features.py [--symbols 500] [--repeat 5]

The inputs are every dataset the catalog reads, loaded once from the sandbox for 20
symbols over its two years of history and repeated under new names up to ``--symbols``
(so sizes and dtypes are the loaders'), then written to Parquet. It prints, side by side:

- read: reading those Parquet files back (what a lake or a cache costs before any feature);
- panel: ``md.features.panel`` for every symbol x two years of business days x the whole
  catalog, inputs given as a dict;
- brute force: the tests' reference (for each date and symbol, filter by anchor and window,
  aggregate) on a sample of symbols over every date, scaled up to the whole panel;
- peak memory of the panel (tracemalloc, in a separate run) and the process's peak RSS;
- training set / panel: ``md.features.training_set`` (the panel plus the forward-return
  labels from the put/call prices) over the same inputs, timed alternately with the panel.

Goals: panel >= 100x faster than the brute force; panel <= 1x the read time (features add at
most as much time again as reading the inputs); training set <= 1.2x the panel. This machine
is noisy; only ratios mean something.
"""

from __future__ import annotations

import argparse
import datetime as dt
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pandas as pd

import mdframes as md
from mdframes.registry import APP_RATINGS_HISTORY_START

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.feature_reference import DEFINITIONS, reference  # noqa: E402

TODAY = dt.date(2026, 11, 30)
START, END = "2024-12-02", "2026-11-30"  # two years of business days
# In the sandbox's ticker universe (the newer sandbox answers 404 outside it).
BASE = [
    "AAPL", "MSFT", "NVDA", "TSLA", "AMZN", "GOOGL", "META", "JPM", "XOM", "GME",
    "KO", "INTC", "AMD", "NFLX", "DIS", "BAC", "IBM", "CTRA", "FAT", "DDH",
]  # fmt: skip


def seconds(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def inputs(n_symbols: int) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """Every dataset of the catalog for ``n_symbols`` symbols, loader-shaped."""
    datasets = sorted({d for d, _, _ in DEFINITIONS.values()})
    copies = -(-n_symbols // len(BASE))
    symbols = [f"{s}{k:02d}" for k in range(copies) for s in BASE][:n_symbols]
    out = {}
    with md.sandbox.running(today=TODAY, progress=False) as client:
        for name in datasets:
            start = APP_RATINGS_HISTORY_START if name.startswith("app_ratings") else None
            base = md.load(name, BASE, start=start, client=client)
            parts = [
                base.assign(symbol=base["symbol"].astype(str) + f"{k:02d}") for k in range(copies)
            ]
            frame = pd.concat(parts, ignore_index=True)
            frame = frame[frame["symbol"].isin(symbols)].reset_index(drop=True)
            frame["symbol"] = frame["symbol"].astype(base["symbol"].dtype)
            out[name] = frame
    return out, symbols


# --- training set / panel (a self-contained block: the labels' cost on top of the panel) ------


def training_set_ratio(
    frames: dict[str, pd.DataFrame], symbols: list[str], repeat: int
) -> tuple[float, float]:
    """Median seconds of ``panel`` and of ``training_set`` (forward_return(5)) on the same
    inputs, run alternately so that a load change on the machine hits both."""
    label = md.features.forward_return(5)
    panel_times, training_times = [], []
    md.features.training_set(symbols, START, END, source=frames, label=label)  # warm-up
    for _ in range(repeat):
        panel_times.append(seconds(lambda: md.features.panel(symbols, START, END, source=frames)))
        training_times.append(
            seconds(
                lambda: md.features.training_set(symbols, START, END, source=frames, label=label)
            )
        )
    return statistics.median(panel_times), statistics.median(training_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--symbols", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sample", type=int, default=4, help="symbols for the brute force")
    args = parser.parse_args()

    frames, symbols = inputs(args.symbols)
    dates = pd.bdate_range(START, END)
    rows = sum(len(f) for f in frames.values())
    cells = len(dates) * len(symbols)
    print(f"inputs: {len(frames)} datasets, {rows:,} rows; panel: {len(symbols)} symbols x "
          f"{len(dates)} dates = {cells:,} rows x {len(DEFINITIONS)} features")  # fmt: skip

    def build() -> pd.DataFrame:
        return md.features.panel(symbols, START, END, source=frames)

    # Read and panel alternate, so that a load change on this shared machine hits both.
    read_times, panel_times = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name, frame in frames.items():
            frame.to_parquet(Path(tmp) / f"{name}.parquet")
        build()  # warm-up: imports and first-touch allocations
        for _ in range(args.repeat):
            read_times.append(
                seconds(lambda: {n: pd.read_parquet(Path(tmp) / f"{n}.parquet") for n in frames})
            )
            panel_times.append(seconds(build))
    read_s, panel_s = statistics.median(read_times), statistics.median(panel_times)

    sample = symbols[:: max(1, len(symbols) // args.sample)][: args.sample]
    started = time.perf_counter()
    reference(frames, sample, dates, list(DEFINITIONS))
    brute_sample_s = time.perf_counter() - started
    brute_s = brute_sample_s * len(symbols) / len(sample)

    tracemalloc.start()
    build()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux

    print(f"read inputs (Parquet)      {read_s:8.2f} s")
    print(
        f"panel (vectorised)         {panel_s:8.2f} s   {cells * len(DEFINITIONS) / panel_s:,.0f} cells/s"
    )
    print(f"brute force (scaled)       {brute_s:8.1f} s   ({len(sample)} symbols x {len(dates)} dates measured: {brute_sample_s:.1f} s)")  # fmt: skip
    print(f"speed-up vs brute force    {brute_s / panel_s:8.0f}x   (goal >= 100x)")
    print(f"panel / read inputs        {panel_s / read_s:8.2f}x   (goal <= 1x)")
    print(f"panel peak memory          {peak / 2**20:8.0f} MiB (tracemalloc); process peak RSS {rss:.0f} MiB")  # fmt: skip
    panel_alone_s, training_s = training_set_ratio(frames, symbols, args.repeat)
    print(f"training set / panel       {training_s / panel_alone_s:8.2f}x   ({training_s:.2f} s / {panel_alone_s:.2f} s; goal <= 1.2x)")  # fmt: skip


if __name__ == "__main__":
    main()
