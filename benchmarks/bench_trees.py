"""Two source trees side by side on the loaders' small and large cases, in one run.

    pip install finbrain-python==0.3.1      # only for this benchmark; not a dependency
    git worktree add /tmp/before <commit>
    python benchmarks/bench_trees.py /tmp/before . [--rounds 16]

One sandbox process serves both; each tree runs in its own worker process (its own
``mdframes``), and the rounds alternate between them, so both see the same machine load. Each
round times the floor (requests + orjson + DataFrame.from_records), the official SDK and
mdframes on the 500-row insider load (and, every fifth repetition, the 20,000-row sentiment
screener). Printed: per tree, the medians over rounds and the median of the per-round ratios
(a noisy machine moves the milliseconds, much less the ratios).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from _common import sandbox_process  # benchmarks/_common.py (the script's folder)

WORKER = r"""
import statistics, sys, time
import orjson, pandas as pd, requests
import mdframes as md
from mdframes.sandbox import SANDBOX_KEY
from finbrain import FinBrainClient
base = sys.argv[1]
session = requests.Session()
sdk = FinBrainClient(api_key=SANDBOX_KEY, base_url=base + "/v2/")
client = md.Client(api_key=SANDBOX_KEY, base_url=base, cache=False)
url = base + "/v2/insider-trading/BENCH500"
def floor():
    body = session.get(url, headers={"Authorization": f"Bearer {SANDBOX_KEY}"}).content
    return pd.DataFrame.from_records(orjson.loads(body)["data"]["transactions"])
cases = {
    "floor": floor,
    "sdk": lambda: sdk.insider_transactions.ticker("BENCH500", as_dataframe=True),
    "md": lambda: md.load_insider_trading("BENCH500", client=client),
    "sdk20k": lambda: sdk.screener.sentiment(region="US", limit=20000, as_dataframe=True),
    "md20k": lambda: md.load_screener("sentiment", region="US", limit=20000, client=client),
}
for case in cases.values():
    case()
print("ready", flush=True)
for line in sys.stdin:
    times = {k: [] for k in cases}
    for i in range(int(line)):
        for k, case in cases.items():
            if k.endswith("20k") and i % 5:
                continue
            started = time.perf_counter()
            case()
            times[k].append(time.perf_counter() - started)
    print(" ".join(f"{k}={statistics.median(v) * 1000:.3f}" for k, v in times.items()), flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("trees", nargs=2, type=Path, help="two source trees (the repo roots)")
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=10, help="loads per case per round")
    args = parser.parse_args()
    names = [str(t) for t in args.trees]
    with sandbox_process(record_counts={"BENCH500": 500}) as base:
        workers = {}
        for name, tree in zip(names, args.trees, strict=True):
            env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
            worker = subprocess.Popen(
                [sys.executable, "-c", WORKER, base],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            assert worker.stdin is not None and worker.stdout is not None
            if worker.stdout.readline().strip() != "ready":
                sys.exit(f"the worker for {name} did not start")
            workers[name] = worker
        rounds: dict[str, list[dict[str, float]]] = {n: [] for n in names}
        for r in range(args.rounds):
            order = names if r % 2 == 0 else names[::-1]  # neither tree always goes first
            for name in order:
                worker = workers[name]
                worker.stdin.write(f"{args.repeat}\n")  # type: ignore[union-attr]
                worker.stdin.flush()  # type: ignore[union-attr]
                line = worker.stdout.readline()  # type: ignore[union-attr]
                rounds[name].append(
                    {k: float(v) for k, v in (kv.split("=") for kv in line.split())}
                )
        for worker in workers.values():
            worker.stdin.close()  # type: ignore[union-attr]
            worker.wait(30)

    def ratio(rows: list[dict[str, float]], a: str, b: str) -> float:
        return statistics.median(row[a] / row[b] for row in rows)

    print(
        f"{'tree (median ms, ' + str(args.rounds) + ' rounds)':<34}{'floor':>8}{'sdk':>8}"
        f"{'mdframes':>10}   insider 500: md/sdk md/floor | screener 20k: md/sdk"
    )
    for name, rows in rounds.items():
        med = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
        print(
            f"{name:<34}{med['floor']:8.2f}{med['sdk']:8.2f}{med['md']:10.2f}   "
            f"{ratio(rows, 'md', 'sdk'):13.2f}x {ratio(rows, 'md', 'floor'):7.2f}x | "
            f"{ratio(rows, 'md20k', 'sdk20k'):11.2f}x"
        )


if __name__ == "__main__":
    main()
