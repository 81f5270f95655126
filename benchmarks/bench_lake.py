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
(e) the latency of one append (one batch, one Delta commit) to the 3M-row table;
(f) the lake in its normal state (issue 27), each lake built in a fresh folder:
    - ``--ns-symbols`` symbols of sentiment synced on 3 days (the sandbox revises some scores
      in between), uncompacted: lake.read of all rows against pyarrow -> pandas over
      ``lake.files()`` and deltalake's ``DeltaTable.to_pyarrow_table()`` -> pandas (goal
      <= 1.2x pyarrow); the same after one compaction and one more sync (goal <= 1.2x);
    - ``--daily`` daily syncs of 20 symbols (one small file each; a sync compacts once more
      than 16 small files pile up): a one-symbol read, warm (the lake open) and fresh (a new
      ``md.Lake`` each time), against the same read of the same lake compacted into one file
      (goals: warm <= 2x, fresh <= 3x).

Every ratio is the median of per-round ratios, the contenders alternating within each round,
with the lowest and highest round in brackets. ``--quick`` runs small sizes in a few minutes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as pads
from _common import (  # benchmarks/_common.py (the script's folder)
    fresh_folder,
    median_time,
    ratio_text,
    rounds,
    sandbox_process,
)

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
    from mdframes.lake.sync.pacer import Pacer

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


def part_c(lake: md.Lake, one: str, repeat: int, label: str) -> dict[str, list[float]]:
    """lake.read against a bare pyarrow.dataset read of the same files, in the same rounds."""
    files = lake.files(BIG)

    def bare_one() -> object:
        table = pads.dataset(files, format="parquet").to_table(filter=pc.field("symbol") == one)
        return table.to_pandas()

    def bare_all() -> object:
        return pads.dataset(files, format="parquet").to_table().to_pandas()

    # Short reads are noisier: several calls per round.
    short = rounds({"lake": lambda: lake.read(BIG, one), "pyarrow": bare_one}, repeat, inner=5)
    full = rounds({"lake": lambda: lake.read(BIG), "pyarrow": bare_all}, repeat)
    print(f"    {label} ({len(files)} files):")
    print(f"      one symbol, lake.read / pyarrow   {ratio_text(short, 'lake', 'pyarrow')}")
    print(
        f"      all rows,   lake.read / pyarrow   "
        f"{ratio_text(full, 'lake', 'pyarrow', 'goal <= 1.2x')}"
    )
    return {"one": short["lake"], "all": full["lake"]}


def against_loader(lake: md.Lake, url: str, big_symbols: list[str], one: str, repeat: int) -> None:
    """The compacted lake against the loader through a warm HTTP cache, in the same rounds."""
    cache = Path(tempfile.mkdtemp()) / "http-cache.sqlite"
    with client_for(url, cache=str(cache)) as warm:
        md.load_sentiment(big_symbols, client=warm)  # warm the HTTP cache
        short = rounds(
            {
                "loader": lambda: md.load_sentiment(one, client=warm),
                "lake": lambda: lake.read(BIG, one),
            },
            repeat,
            inner=5,
        )
        full = rounds(
            {
                "loader": lambda: md.load_sentiment(big_symbols, client=warm),
                "lake": lambda: lake.read(BIG),
            },
            max(2, repeat // 2),
            warmup=0,
        )
    print("    against the loader through a warm HTTP cache (compacted lake):")
    print(
        f"      one symbol, lake.read / loader    "
        f"{ratio_text(short, 'lake', 'loader', 'goal <= 1.0')}"
    )
    print(
        f"      all rows,   loader / lake.read    "
        f"{ratio_text(full, 'loader', 'lake', 'lake.read goal >= 50x faster')}"
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

    from mdframes.lake.store.lease import open_lease
    from mdframes.registry import REGISTRY

    table = lake.tables.get(REGISTRY[BIG])
    rows = table.scan(table.snapshot(), columns=table.stored_schema().names).slice(0, 500)
    rows = rows.set_column(
        rows.schema.get_field_index("_sync_id"), "_sync_id", pa.repeat(pa.scalar("bench"), 500)
    )
    with open_lease(lake.storage.location, owner="benchmark").hold() as lease:
        table.begin_writes()
        took = median_time(lambda: table.append(rows, lease), repeat)
    print(f"(e) append of one 500-row batch (one Delta commit): {took * 1e3:.1f} ms")


# --- (f) the normal state: several syncs, revisions, small files -----------------------------


def _noon(day: dt.date) -> Callable[[], dt.datetime]:
    stamp = dt.datetime.combine(day, dt.time(12), tzinfo=dt.timezone.utc)
    return lambda: stamp


def synced_on_days(root: Path, symbols: list[str], days: list[dt.date]) -> md.Lake:
    """``symbols`` of sentiment synced once on each of ``days`` (a sandbox process per day,
    the lake's clock on that day): each sync stores what is new or revised since the last."""
    for day in days:
        with sandbox_process(today=day.isoformat(), extra_symbols=symbols) as url:
            lake = md.Lake(root, client=client_for(url), clock=_noon(day))
            started = time.perf_counter()
            report = lake.sync(BIG, symbols, progress=False)
            assert report.complete, str(report)
        print(
            f"    sync {day}: {report.rows_added:,} rows, {report.versions_added:,} versions "
            f"({time.perf_counter() - started:.0f} s)"
        )
    return md.Lake(root)


def _all_rows(lake: md.Lake, repeat: int, label: str) -> None:
    """lake.read of every row against engines reading the same files, in the same rounds."""
    from deltalake import DeltaTable

    files = lake.files(BIG)
    revised = pads.dataset(files, format="parquet").count_rows(filter=pc.field("_version") > 1)
    total = pads.dataset(files, format="parquet").count_rows()
    times = rounds(
        {
            "lake": lambda: lake.read(BIG),
            "pyarrow": lambda: pads.dataset(files, format="parquet").to_table().to_pandas(),
            "deltalake": lambda: DeltaTable(lake.path(BIG)).to_pyarrow_table().to_pandas(),
        },
        repeat,
        # A call's time moves with the pages its ~150 MB frame is given (one round's ratio
        # ran 0.5-2.0x with one call each): the median of three calls per round.
        inner=3,
    )
    print(f"    {label}: {total:,} stored rows, {revised:,} of them later versions, "
          f"{len(files)} files")  # fmt: skip
    print(f"      all rows, lake.read / pyarrow     {ratio_text(times, 'lake', 'pyarrow', 'goal <= 1.2x')}")  # fmt: skip
    print(f"      all rows, lake.read / deltalake   {ratio_text(times, 'lake', 'deltalake')}")


def part_f_revised(parent: str | None, symbols: list[str], repeat: int) -> None:
    day0 = DEFAULT_TODAY
    days = [day0, day0 + dt.timedelta(days=3), day0 + dt.timedelta(days=6)]
    print(f"(f) {BIG}: {len(symbols)} symbols synced on {len(days)} days")
    root = fresh_folder(parent, "synced3")
    lake = synced_on_days(root, symbols, days)
    _all_rows(lake, repeat, "uncompacted")
    lake.compact(BIG)
    synced_on_days(root, symbols, [day0 + dt.timedelta(days=9)])
    _all_rows(md.Lake(root), repeat, "compacted, then one more sync")


def daily_syncs(root: Path, symbols: list[str], days: int) -> md.Lake:
    """``days`` daily syncs of ``symbols``: one small file holding every symbol per sync.
    The sandbox runs in this process here (its day advanced between syncs, the lake's clock
    following it); only the reads after are timed."""
    from mdframes.sandbox import Sandbox

    started = time.perf_counter()
    with Sandbox(today=DEFAULT_TODAY, extra_symbols=symbols) as world:
        client = client_for(world.url)
        client.sandbox = world  # type: ignore[attr-defined]
        lake = md.Lake(root, client=client)
        for _ in range(days):
            assert lake.sync(BIG, symbols, progress=False).complete
            world.advance(days=1)
        client.close()
    print(
        f"    {days} daily syncs of {len(symbols)} symbols in {time.perf_counter() - started:.0f} s"
    )
    return md.Lake(root)


def part_f_daily(parent: str | None, days: int, repeat: int) -> None:
    symbols = [f"D{k:03d}" for k in range(20)]
    one = symbols[7]
    print(f"(f) {BIG}: many small syncs")
    root = fresh_folder(parent, "daily")
    many = daily_syncs(root, symbols, days)
    single = root.parent / "compacted"
    shutil.copytree(root, single)
    md.Lake(single).compact(BIG)
    compacted = md.Lake(single)
    files = many.files(BIG)
    assert len(compacted.files(BIG)) == 1, compacted.files(BIG)
    warm = rounds(
        {
            "many": lambda: many.read(BIG, one),
            "one file": lambda: compacted.read(BIG, one),
            "pyarrow": lambda: (
                pads.dataset(files, format="parquet")
                .to_table(filter=pc.field("symbol") == one)
                .to_pandas()
            ),
        },
        repeat,
        inner=5,
    )
    fresh = rounds(
        {
            "many": lambda: md.Lake(root).read(BIG, one),
            "one file": lambda: md.Lake(single).read(BIG, one),
        },
        repeat,
        inner=3,
    )
    print(f"    one symbol of {len(files)} files / of the same lake compacted into one file:")
    print(f"      warm  {ratio_text(warm, 'many', 'one file', 'goal <= 2x')}")
    print(f"      fresh {ratio_text(fresh, 'many', 'one file', 'goal <= 3x')}")
    print(f"      warm, {len(files)} files: lake.read / pyarrow with the same filter "
          f"{ratio_text(warm, 'many', 'pyarrow')}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--symbols", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=3_000_000, help="size of the (c) dataset")
    parser.add_argument(
        "--rate",
        type=int,
        default=25,
        help="allowed requests per second (below what the machine sends unlimited, part b, so that the pacer is measured, not the CPU)",
    )
    parser.add_argument("--window", type=float, default=10.0, help="rate-limit window, seconds")
    parser.add_argument("--repeat", type=int, default=5, help="rounds per comparison")
    parser.add_argument("--ns-symbols", type=int, default=2000, help="(f) symbols synced 3 times")
    parser.add_argument("--daily", type=int, default=100, help="(f) daily syncs of 20 symbols")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes (a few minutes): 100 symbols, 100k rows, (f) 500 symbols and 100 days",
    )
    parser.add_argument("--only", choices=["classic", "normal"], help="run only (a)-(e) or (f)")
    parser.add_argument(
        "--lake", help="build this run's lakes in a new folder under this one (default: temp)"
    )
    args = parser.parse_args()
    if args.quick:
        args.symbols, args.rows, args.ns_symbols, args.daily = 100, 100_000, 500, 100
        args.repeat = min(args.repeat, 3)

    if args.only != "normal":
        classic(args)
    if args.only != "classic":
        ns_symbols = [f"N{k:04d}" for k in range(args.ns_symbols)]
        part_f_revised(args.lake, ns_symbols, args.repeat)
        part_f_daily(args.lake, args.daily, args.repeat)


def classic(args: argparse.Namespace) -> None:
    universe = sorted(universe_symbols(DEFAULT_TODAY))
    symbols = universe[: args.symbols]
    big_symbols = universe[: max(args.symbols, args.rows // 730)]
    root = fresh_folder(args.lake, "lake")
    lake = part_a(root, symbols, args.rate, args.window)
    one = big_symbols[len(big_symbols) // 2]
    with sandbox_process() as url:
        part_b(lake, url, symbols)
        sync_big(lake, big_symbols)
        part_c(lake, one, args.repeat, "before compact")
        part_d(lake)
        part_c(lake, one, args.repeat, "after compact")
        against_loader(lake, url, big_symbols, one, args.repeat)
        part_e(lake, args.repeat)


if __name__ == "__main__":
    main()
