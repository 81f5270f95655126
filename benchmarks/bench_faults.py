"""The fault campaign of the reliability work: 200 symbols x 4 datasets through a proxy that
breaks 20 % of the answers with every retryable fault kind (a 200 cut short included), with
the client's default settings and ``errors="raise"``.

    python benchmarks/bench_faults.py [--rate 0.2] [--seed 2026]

Prints, per dataset and in total: rows and duplicates against a fault-free run (the frames
must be equal), the requests used against the requests needed (one per answer without
faults), and the faults by kind. "stall" is left out of the mix: each hit costs a whole client
timeout (30 s by default); tests/test_faults.py covers it with a short timeout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import tempfile
import time
from pathlib import Path

import pandas as pd

import mdframes as md
from mdframes.sandbox import SANDBOX_KEY, Sandbox
from mdframes.sandbox.faults import RETRYABLE, FaultProxy

SYMBOLS = [f"S{i:03d}" for i in range(200)]
DATASETS = ("insider_trading", "sentiment", "congress_trades", "lobbying")
TODAY = dt.date(2026, 6, 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()

    with Sandbox(today=TODAY, extra_symbols=SYMBOLS) as server:
        clean_client = md.Client(api_key=SANDBOX_KEY, base_url=server.url, cache=False)
        clean = {}
        needed = {}
        for name in DATASETS:
            before = server.count()
            clean[name] = md.load(name, SYMBOLS, client=clean_client)
            needed[name] = server.count() - before
        clean_client.close()
        print(f"fault mix: {len(SYMBOLS)} symbols x {len(DATASETS)} datasets, rate {args.rate}")
        print(f"kinds: {', '.join(RETRYABLE)}; default client settings, errors='raise'\n")
        print(f"{'dataset':<18}{'rows':>8}{'clean':>8}{'dups':>6}  equal  requests used/needed")
        with FaultProxy(server.port, rate=args.rate, seed=args.seed) as proxy:
            # Default settings (3 retries, 0.5 s backoff, 8 workers, cache on), the cache in a
            # fresh file rather than the user's own.
            cache = Path(tempfile.mkdtemp()) / "http-cache.sqlite"
            with md.Client(api_key=SANDBOX_KEY, base_url=proxy.url, cache=cache) as client:
                started = time.monotonic()
                total_used = 0
                for name in DATASETS:
                    before = proxy.count()
                    got = md.load(name, SYMBOLS, client=client, errors="raise")
                    used = proxy.count() - before
                    total_used += used
                    key = [c for c in got.columns if got[c].map(type).ne(list).all()]
                    dups = int(got.duplicated(key).sum())
                    try:
                        pd.testing.assert_frame_equal(got, clean[name])
                        equal = "yes"
                    except AssertionError:
                        equal = "NO"
                    print(
                        f"{name:<18}{len(got):>8}{len(clean[name]):>8}{dups:>6}  {equal:<5}  "
                        f"{used}/{needed[name]} ({used / needed[name]:.2f}x)"
                    )
                seconds = time.monotonic() - started
            figures = proxy.figures()
    rows = sum(len(df) for df in clean.values())
    need = sum(needed.values())
    print(
        f"\ntotal: {rows} rows (100 % of the fault-free run), requests used/needed "
        f"{total_used}/{need} ({total_used / need:.2f}x), {figures['faults']} faults "
        f"({figures['faults'] / figures['requests']:.1%} of requests), deepest retry "
        f"{figures['deepest']}, {seconds:.1f} s"
    )
    print(f"faults by kind: {figures['by_kind']}")


if __name__ == "__main__":
    main()
