"""The agent server (CONTRACT §15): a ``read`` of one symbol through the MCP server over stdio
against ``lake.read`` in process.

    python benchmarks/bench_agents.py [--symbols 20] [--rounds 40] [--limit 200]

Builds a lake of sentiment and insider trading (two years, ``--symbols`` symbols) from the
sandbox (in its own process), starts ``mdframes agent-server`` as a subprocess, and times in
alternating rounds:

- ``lake.read`` of one symbol in process (the lake open, as the server keeps it);
- ``Tools.call("read")`` in process: the clamp (``known_at`` and the anchor filter) plus the
  CSV and structured answer, no transport;
- the same ``read`` through the server (the ``mcp`` stdio client);
- a call the server answers without the lake (an unknown tool: a tool error): the stdio
  round trip alone.

Goal (issue 30): server read <= 3 x lake.read + the stdio round trip. Prints each case's
median and spread (quartiles), the goal on the medians, and per round the server's time over
that round's budget (median, quartiles, rounds within it): a verdict noise cannot flip shows
in the quartiles too. On a loaded machine the minima say most about the work itself.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import fresh_folder, sandbox_process  # benchmarks/_common.py

import mdframes as md
from mdframes.agents import Clock, Tools
from mdframes.sandbox import DEFAULT_TODAY, SANDBOX_KEY, universe_symbols


def build(url: str, root: Path, symbols: list[str]) -> None:
    client = md.Client(api_key=SANDBOX_KEY, base_url=url, cache=False)
    with client:
        lake = md.Lake(root, client=client)
        start = DEFAULT_TODAY.replace(year=DEFAULT_TODAY.year - 2)
        lake.sync(["sentiment", "insider_trading"], symbols, start=start, progress=False)


async def measure(root: Path, symbol: str, rounds: int, limit: int) -> dict[str, list[float]]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    lake = md.Lake(root)
    tools = Tools(md.Lake(root), Clock())
    args = {"dataset": "sentiment", "symbols": symbol, "limit": limit}
    package = Path(md.__file__).resolve().parents[1]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mdframes", "agent-server", "--lake", str(root)],
        cwd=str(package),
    )
    times: dict[str, list[float]] = {"lake.read": [], "tools": [], "server": [], "round trip": []}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()

        async def server() -> Any:
            result = await session.call_tool("read", args)
            assert not result.is_error, result.content
            return result

        async def trip() -> Any:
            return await session.call_tool("no_such_tool", {})

        async def in_lake() -> Any:
            return lake.read("sentiment", symbol)

        async def in_tools() -> Any:
            answer = tools.call("read", args)
            return answer.text(), answer.structured()

        cases = {"lake.read": in_lake, "tools": in_tools, "server": server, "round trip": trip}
        for case in cases.values():  # warm up: files open, imports done
            await case()
        names = list(cases)
        for r in range(rounds):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                started = time.perf_counter()
                await cases[name]()
                times[name].append(time.perf_counter() - started)
    return times


def main() -> None:
    import anyio

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--symbols", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--folder", default=None)
    parser.add_argument("--build", nargs=2, metavar=("ROOT", "URL"), help=argparse.SUPPRESS)
    opts = parser.parse_args()
    symbols = universe_symbols(DEFAULT_TODAY)[: opts.symbols]
    if opts.build:  # the child process that syncs the lake
        build(opts.build[1], Path(opts.build[0]), symbols)
        return
    root = fresh_folder(opts.folder, "agents-lake")
    with sandbox_process() as url:
        # Synced in a child process: the sync's threads and garbage stay out of the timings.
        command = [sys.executable, __file__, "--symbols", str(opts.symbols)]
        subprocess.run([*command, "--build", str(root), url], check=True)
    rows = len(md.Lake(root).read("sentiment", symbols[0]))
    times = anyio.run(measure, root, symbols[0], opts.rounds, opts.limit)
    print(f"one symbol of sentiment: {rows} rows, answers of at most {opts.limit} rows")
    print(f"{'':>12}  median   (quartiles)      min  (ms; {opts.rounds} alternating rounds)")
    for name, values in times.items():
        q1, q2, q3 = quartiles(values)
        print(f"{name:>12}: {q2:7.2f}   ({q1:.2f} .. {q3:.2f})  {min(values) * 1e3:7.2f}")
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    budget = 3 * med["lake.read"] + med["round trip"]
    verdict = "MET" if med["server"] <= budget else "NOT MET"
    print(
        f"goal: server <= 3 x lake.read + round trip: {med['server']:.2f} ms <= "
        f"{budget:.2f} ms -> {verdict} (server / lake.read = "
        f"{med['server'] / med['lake.read']:.2f}x, server less the round trip / lake.read = "
        f"{(med['server'] - med['round trip']) / med['lake.read']:.2f}x)"
    )
    per_round = [
        s / (3 * lr + rt)
        for s, lr, rt in zip(times["server"], times["lake.read"], times["round trip"], strict=True)
    ]
    q1, q2, q3 = (q / 1e3 for q in quartiles(per_round))
    within = sum(r <= 1 for r in per_round)
    print(
        f"per round, server / budget: median {q2:.2f} (quartiles {q1:.2f} .. {q3:.2f}); "
        f"within the budget in {within} of {len(per_round)} rounds"
    )
    print(f"in-process tools / lake.read = {med['tools'] / med['lake.read']:.2f}x")
    low = {k: min(v) * 1e3 for k, v in times.items()}  # the least disturbed by other load
    print(
        f"on the minima: server {low['server']:.2f} ms, 3 x lake.read + round trip "
        f"{3 * low['lake.read'] + low['round trip']:.2f} ms (server less the round trip / "
        f"lake.read = {(low['server'] - low['round trip']) / low['lake.read']:.2f}x)"
    )


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """The first, second and third quartiles of ``values`` (seconds), in ms."""
    q1, q2, q3 = statistics.quantiles(values, n=4)
    return q1 * 1e3, q2 * 1e3, q3 * 1e3


if __name__ == "__main__":
    main()
