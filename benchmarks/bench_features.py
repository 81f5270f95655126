"""Feature panels: the vectorised engine against a cell-by-cell loop, against reading the inputs,
per-row knowledge time against one known_at, serial against a two-worker Dask cluster, and the
driver's memory when write_panel writes chunks.

    python benchmarks/bench_features.py [--symbols 500] [--repeat 5] [--quick]
                                        [--lake-symbols 2000] [--row-symbols 200] [--no-lake]
                                        [--only-lake | --only-dask | --only-splits | --only-audit |
                                         --only-window | --only-memory | --only-evaluate |
                                         --only-known [--against REF]]

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
  labels from the put/call prices) over the same inputs, timed alternately with the panel;
- a 3-month panel / the 24-month panel of the same symbols (a panel should cost its window).

Then, from a real ``md.Lake`` built in a fresh folder, synced from the sandbox on three
simulated days, three apart (``--lake-symbols`` symbols each time, so that the sandbox's
revisions are stored as versions, the lake uncompacted as syncs leave it):

- ``known_at="row"`` panel / scalar ``known_at`` panel (``--row-symbols`` x two years);
- serial / two-worker Dask (``LocalCluster``, ``Client.get_executor()``) panel time for
  ``--lake-symbols`` symbols, each worker reading its chunk from the lake; then the same with
  the lake copied to a local S3 server (moto, as the tests run it), as a team's cluster would
  read it. In the same rounds, per core (whether Dask scales with cores, whatever this
  machine's count, which is printed beside the goal): the serial panel in a child process
  confined to one core (its threads by ``os.sched_setaffinity``, mdframes' pools and Arrow's
  to one thread) / the same cluster with each worker confined to a core of its own (at most
  2.0x); and for both pairs the Dask CPU (driver + workers) / the serial CPU and the workers'
  idle share of the wall;
- a 3-month panel / the 24-month panel of the same 500 symbols from the lake (``--only-window``
  runs this part alone, on a lake of its own, and gives the CPU-time ratio too);
- the serial panel's peak RSS above its process's baseline / the size of the panel it returns
  (a fresh subprocess; ``--only-memory`` runs this part alone, ``--repeat`` fresh processes,
  on a lake of its own, and gives the median and spread);
- write_panel's driver peak memory with 4 chunks / the whole panel in memory (tracemalloc, each
  in a fresh subprocess);
- training set / panel: ``md.features.training_set`` / the scalar ``known_at`` panel, from
  the lake (``--row-symbols`` x two years).

With ``--only-known`` (alone): the scalar ``known_at`` and ``known_at="row"`` panels of
``--row-symbols`` symbols from a lake synced three times, whose coverage is as it stood at
the time (folded from the lake's ledger) / the same panels by the code of ``--against`` (a
git ref, by default the last commit before the ledger), each round one fresh process of
each, alternating; the first panel of a process (cold: the ledger read) and the second.
Then the splitters (``--only-splits`` runs this part alone): ``CombinatorialPurgedCV(10, 2)``
(45 folds, every fold's positions built) on 2,000 symbols x 500 business days, 6-period
labels (``lag=1``, ``horizon=5``), a 5-period embargo, against skfolio's
``CombinatorialPurgedCV(n_folds=10, n_test_folds=2)`` on the same rows (its purge and embargo
in rows: 6 and 5 dates' worth), alternating round by round.

Then the audit (``--only-audit`` runs this part alone): ``md.features.audit(ts, sample=200)``
/ ``md.features.training_set`` for ``--symbols`` symbols x two years x the whole catalog,
inputs given as a dict (the audit recomputes 200 rows cell by cell from the frames cut at
each row's date, checks label copies against the prices, the three splitters' overlap and
coverage).

Then feature evaluation (``--only-evaluate`` runs this part alone; it needs the reference
extra): ``md.features.evaluate(ts)`` / alphalens-reloaded computing the same per-date IC and
demeaned quantile returns (``quantize_factor``, ``factor_information_coefficient``,
``mean_return_by_quantile``) feature by feature, fed its factor-data frame directly, for 20
features of 2,000 symbols x 500 dates, alternating round by round.

Goals: panel >= 100x faster than the brute force; panel <= 1x the read time (features add at
most as much time again as reading the inputs); 3-month / 24-month panel <= 0.3x; row / scalar
<= 1.5x; serial / Dask >= 1.6x on two cores (local and S3); panel RSS above baseline / panel
size <= 4x; write_panel / whole panel memory <= 0.5x; training set <= 1.2x the panel;
splitters / skfolio <= 1x; audit(sample=200) / training set <= 1x; evaluate / alphalens
<= 0.1x. Ratios
are medians of per-round ratios (contenders alternating within each round), the lowest and
highest round in brackets. This machine is noisy; only ratios mean something.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

import mdframes as md
from mdframes.registry import APP_RATINGS_HISTORY_START

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    fresh_folder,
    ratio_text,
    rounds,
    sandbox_process,
    stop_process,
)

from tests.conftest import KEY  # noqa: E402
from tests.feature_reference import DEFINITIONS, reference  # noqa: E402

TODAY = dt.date(2026, 11, 30)
START, END = "2024-12-02", "2026-11-30"  # two years of business days
# In the sandbox's ticker universe (the newer sandbox answers 404 outside it).
BASE = [
    "AAPL", "MSFT", "NVDA", "TSLA", "AMZN", "GOOGL", "META", "JPM", "XOM", "GME",
    "KO", "INTC", "AMD", "NFLX", "DIS", "BAC", "IBM", "CTRA", "FAT", "DDH",
]  # fmt: skip


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


# The lake part: the datasets whose features it computes (those the sandbox revises among them).
LAKE_DATASETS = [
    "sentiment", "put_call_ratio", "insider_trading", "congress_trades", "news",
    "government_contracts",
]  # fmt: skip
LAKE_FEATURES = [n for n, (d, _, _) in DEFINITIONS.items() if d in LAKE_DATASETS]
SYNC_DAYS = [TODAY, TODAY + dt.timedelta(days=3), TODAY + dt.timedelta(days=6)]


def build_lake(root: Path, symbols: list[str]) -> None:
    """``symbols`` synced on each day of SYNC_DAYS (a sandbox process per day, the lake's
    clock on that day)."""
    for day in SYNC_DAYS:
        wanted = symbols
        noon = dt.datetime.combine(day, dt.time(12), tzinfo=dt.timezone.utc)
        with sandbox_process(today=day.isoformat(), extra_symbols=symbols) as url:
            client = md.Client(api_key=KEY, base_url=url, cache=False, progress=False)
            lake = md.Lake(root, client=client, clock=lambda noon=noon: noon)
            started = time.perf_counter()
            report = lake.sync(LAKE_DATASETS, wanted, start=START, progress=False)
            client.close()
        print(f"  sync {day} ({len(wanted)} symbols): {report.requests} requests, "
              f"{report.rows_added:,} rows, {report.versions_added:,} versions, "
              f"{time.perf_counter() - started:.0f} s")  # fmt: skip


def _rss_status(field: str) -> int:
    """A memory figure of this process from /proc (bytes), 0 where there is none."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _memory_child(root: str, symbols: list[str], mode: str, out: str) -> None:
    """Run in a fresh process: the peak traced memory of the whole panel or of write_panel;
    or (``rss``) the panel's peak RSS above the process's baseline and the panel's size."""
    import gc

    lake = md.Lake(root)
    warnings.simplefilter("ignore")
    if mode == "rss":
        md.features.panel(symbols[:1], START, END, LAKE_FEATURES, source=lake)  # imports
        gc.collect()
        baseline = _rss_status("VmRSS")
        # The kernel's high-water mark, reset to the current RSS (Linux: clear_refs 5).
        Path("/proc/self/clear_refs").write_text("5")
        frame = md.features.panel(symbols, START, END, LAKE_FEATURES, source=lake)
        peak = _rss_status("VmHWM")
        size = int(frame.memory_usage(deep=True).sum())
        print(json.dumps({"peak": peak - baseline, "size": size}))
        return
    tracemalloc.start()
    if mode == "panel":
        frame = md.features.panel(symbols, START, END, LAKE_FEATURES, source=lake)
        del frame
    else:
        chunk = -(-len(symbols) // 4)
        md.features.write_panel(out, symbols, START, END, LAKE_FEATURES, source=lake, chunk=chunk)
    _, peak = tracemalloc.get_traced_memory()
    print(json.dumps({"peak": peak}))


def peak_memory(root: Path, symbols: list[str], mode: str, tmp: Path) -> dict[str, int]:
    code = (
        "import sys, json; sys.path[:0] = json.loads(sys.argv[1]); "
        "import bench_features as b; b._memory_child(*json.loads(sys.argv[2]))"
    )
    paths = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
    argv = [str(root), symbols, mode, str(tmp / f"written-{mode}")]
    run = subprocess.run(
        [sys.executable, "-c", code, json.dumps(paths), json.dumps(argv)],
        capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths + [os.environ.get("PYTHONPATH", "")])},
    )  # fmt: skip
    return dict(json.loads(run.stdout.strip().splitlines()[-1]))


def s3_copy(root: Path, tmp: Path) -> tuple[str, subprocess.Popen]:  # type: ignore[type-arg]
    """The lake copied to a local S3 server (moto, as the tests run it; its process is
    returned to be stopped). The AWS variables name its test credentials for this process
    and the Dask workers it starts."""
    import boto3

    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.s3server"], stdout=subprocess.PIPE, text=True, cwd=repo
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        stop_process(proc)
        raise RuntimeError(f"the S3 server did not start: {line!r}")
    endpoint = f"127.0.0.1:{line.split()[1]}"
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_REGION="us-east-1"
    )
    s3 = boto3.client("s3", endpoint_url=f"http://{endpoint}", region_name="us-east-1")
    s3.create_bucket(Bucket="bench")
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        s3.upload_file(str(path), "bench", f"lake/{path.relative_to(root).as_posix()}")
    return f"s3://bench/lake?endpoint_override={endpoint}&scheme=http&region=us-east-1", proc


def _process_cpu() -> float:
    return time.process_time()


def _confine(cores: set[int]) -> None:
    """Every thread of this process (and the threads it starts later) on ``cores`` only."""
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(tid), cores)


def _one_core_panels(conn: Any, spec: Any, symbols: list[str], core: int) -> None:
    """A child process that computes the serial panel on one core, as often as asked: its
    threads confined to ``core``, mdframes' pools to one thread (``sharing``: one task per
    core) and Arrow's to one (as Dask's nanny sizes a worker's); it answers each request
    with the panel's wall and CPU seconds."""
    import pyarrow as pa

    from mdframes._threads import cores, sharing
    from mdframes.features.panels.pinned import open_lake

    _confine({core})
    pa.set_cpu_count(1)
    warnings.simplefilter("ignore")
    lake = open_lake(spec)  # as a worker opens it (an S3 lake's options too)
    with sharing(cores()):
        while conn.recv():
            cpu, wall = time.process_time(), time.perf_counter()
            md.features.panel(symbols, START, END, LAKE_FEATURES, source=lake)
            conn.send((time.perf_counter() - wall, time.process_time() - cpu))


def dask_rounds(lake: Any, symbols: list[str], rounds_: int) -> tuple[dict[str, list[float]], str]:
    """Serial and two-worker Dask panels of ``symbols`` from ``lake``, and the same per core
    (the serial panel in a child process confined to one core, the two workers each
    confined to a core of its own), alternating; and what shows whether the parallel path
    is efficient (medians over the rounds): the serial panel's CPU seconds and the cores it
    kept busy, the Dask panel's driver CPU, its workers' CPU (their whole processes), its
    CPU / the serial CPU, the sum of the tasks' times, the workers' idle share of the wall
    time and the machine's load."""
    import multiprocessing

    from distributed import Client, LocalCluster, get_task_stream

    from mdframes.features.panels.pinned import lake_spec

    def panel(**kw: Any) -> Callable[[], Any]:
        return lambda: md.features.panel(symbols, START, END, LAKE_FEATURES, source=lake, **kw)

    stats: dict[str, list[float]] = {}

    def note(**values: float) -> None:
        for key, value in values.items():
            stats.setdefault(key, []).append(value)

    cores = sorted(os.sched_getaffinity(0))
    parent, child_end = multiprocessing.get_context("spawn").Pipe()
    child = multiprocessing.get_context("spawn").Process(
        target=_one_core_panels, args=(child_end, lake_spec(lake), symbols, cores[0]), daemon=True
    )
    child.start()
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,  # fmt: skip
        Client(cluster) as dask_client,
    ):
        executor = dask_client.get_executor()
        serial, parallel = panel(), panel(executor=executor)
        workers = sorted(dask_client.scheduler_info()["workers"])

        def timed_serial() -> None:
            cpu = time.process_time()
            wall = time.perf_counter()
            serial()
            wall = time.perf_counter() - wall
            note(
                serial_cpu=time.process_time() - cpu,
                serial_cores=(time.process_time() - cpu) / wall,
            )

        def timed_one_core() -> None:
            parent.send(True)
            wall, cpu = parent.recv()
            note(one_core_cpu=cpu)

        def timed_dask(prefix: str = "") -> None:
            before = sum(dask_client.run(_process_cpu).values())
            cpu, own = time.process_time(), time.thread_time()
            with get_task_stream(dask_client) as stream:
                wall = time.perf_counter()
                parallel()
                wall = time.perf_counter() - wall
            tasks = [s["stop"] - s["start"] for t in stream.data for s in t["startstops"]
                     if s["action"] == "compute"]  # fmt: skip
            note(**{
                f"{prefix}driver_cpu": time.process_time() - cpu,
                f"{prefix}driver_own": time.thread_time() - own,
                f"{prefix}workers_cpu": sum(dask_client.run(_process_cpu).values()) - before,
                f"{prefix}tasks": sum(tasks),
                f"{prefix}idle": 1 - sum(tasks) / (2 * wall),
                "load": os.getloadavg()[0],
            })  # fmt: skip

        def timed_pinned() -> None:
            for k, worker in enumerate(workers):  # each worker on a core of its own
                dask_client.run(_confine, {cores[k % len(cores)]}, workers=[worker])
            try:
                timed_dask("pinned_")
            finally:
                dask_client.run(_confine, set(cores))

        try:
            times = rounds(
                {"serial": timed_serial, "dask": timed_dask,
                 "one core": timed_one_core, "pinned": timed_pinned},
                rounds_,
            )  # fmt: skip
        finally:
            parent.send(False)
            child.join(60)
            if child.is_alive():
                child.kill()
        for key in stats:  # the warm-up round is not measured
            stats[key] = stats[key][-rounds_:]
    mid = {k: statistics.median(v) for k, v in stats.items()}

    def total(prefix: str) -> float:
        return mid[f"{prefix}driver_cpu"] + mid[f"{prefix}workers_cpu"]

    text = (
        f"serial CPU {mid['serial_cpu']:.2f} s ({mid['serial_cores']:.2f} cores: on "
        f"{len(cores)} cores no split of that CPU beats {len(cores) / mid['serial_cores']:.2f}x); "
        f"Dask: driver CPU {mid['driver_cpu']:.2f} s ({mid['driver_own']:.2f} s the panel's "
        f"own thread, the rest the cluster's scheduler and client threads), workers' CPU "
        f"{mid['workers_cpu']:.2f} s; Dask CPU / serial CPU {total('') / mid['serial_cpu']:.2f}x "
        f"(goal <= 1.1x); tasks {mid['tasks']:.2f} s in all, workers idle {mid['idle']:.0%} of "
        f"the wall; load {min(stats['load']):.1f}-{max(stats['load']):.1f}\n"
        f"  per core: serial on 1 core / 2 workers on a core each "
        f"{ratio_text(times, 'one core', 'pinned', 'two cores for one: at most 2.0x')}\n"
        f"    serial on 1 core: CPU {mid['one_core_cpu']:.2f} s; pinned workers: Dask CPU "
        f"{total('pinned_'):.2f} s ({total('pinned_') / mid['one_core_cpu']:.2f}x the "
        f"one-core serial CPU), workers idle {mid['pinned_idle']:.0%} of the wall"
    )
    return times, text


def lake_part(args: argparse.Namespace) -> None:
    symbols = [f"L{k:04d}" for k in range(args.lake_symbols)]
    row_symbols = symbols[: args.row_symbols]
    print(f"lake: {len(LAKE_DATASETS)} datasets, {len(symbols)} symbols from the sandbox, "
          f"synced on {len(SYNC_DAYS)} days; {len(LAKE_FEATURES)} features")  # fmt: skip
    warnings.simplefilter("ignore")  # coverage warnings: the figures are what matters here
    root = fresh_folder(args.lake, "lake")
    tmp = root.parent
    build_lake(root, symbols)
    lake = md.Lake(root)
    last_sync = dt.datetime.combine(SYNC_DAYS[-1], dt.time(23), tzinfo=dt.timezone.utc)

    def at(known_at: Any, who: list[str] = row_symbols, **kw: Any) -> Callable[[], Any]:
        return lambda: md.features.panel(
            who, START, END, LAKE_FEATURES, source=lake, known_at=known_at, **kw
        )

    small = rounds(
        {
            "scalar": at(last_sync),
            "row": at("row"),
            "training": lambda: md.features.training_set(
                row_symbols, START, END, LAKE_FEATURES, source=lake, known_at=last_sync
            ),
        },
        args.repeat,
    )
    few = max(2, args.repeat // 2)
    local, local_text = dask_rounds(lake, symbols, few)
    # How much of the two cores the serial panel already uses (pyarrow decodes in its
    # threads, features are computed in a thread pool): two workers can at best bring
    # its wall time down to its CPU time / 2.
    whole = at(None, symbols)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    whole()
    serial_cores = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    reads = rounds(
        {"panel": whole, "read": lambda: {n: lake.read(n, symbols) for n in LAKE_DATASETS}},
        few,
        warmup=0,
    )
    # A panel costs its window from a lake too: 3 months / 24 months of the same symbols.
    part = symbols[:500]
    windows, _ = window_rounds(lake, part, args.repeat)
    uri, server = s3_copy(root, tmp)
    try:
        remote = md.Lake(uri)
        assert remote.read("sentiment", symbols[:3]).equals(lake.read("sentiment", symbols[:3]))
        on_s3, s3_text = dask_rounds(remote, symbols, few)
    finally:
        stop_process(server)
    rss = peak_memory(root, symbols, "rss", tmp)
    whole_peak = peak_memory(root, symbols, "panel", tmp)["peak"]
    written_peak = peak_memory(root, symbols, "write", tmp)["peak"]
    shutil.rmtree(tmp, ignore_errors=True)

    cpus = os.cpu_count()
    n_row, n_all = len(row_symbols), len(symbols)
    print(f"row / scalar known_at    {ratio_text(small, 'row', 'scalar', 'goal <= 1.5x')}")
    print(f"training set / panel     {ratio_text(small, 'training', 'scalar', 'goal <= 1.2x')}"
          f"  ({n_row} symbols, from the lake)")  # fmt: skip
    print(f"serial panel / lake read {ratio_text(reads, 'panel', 'read')}  ({n_all} symbols)")
    print(f"3-month / 24-month, lake {ratio_text(windows, '3 months', '24 months', 'goal <= 0.3x')}"
          f"  ({len(part)} symbols)")  # fmt: skip
    print(f"serial / Dask, local     {ratio_text(local, 'serial', 'dask', 'goal >= 1.6x')}"
          f"  ({cpus} CPUs on this machine)")  # fmt: skip
    print(f"  {local_text}")
    print(f"serial / Dask, S3 (moto) {ratio_text(on_s3, 'serial', 'dask', 'goal >= 1.6x')}")
    print(f"  {s3_text}")
    print(f"serial panel's CPU/wall  {serial_cores:8.2f}    (cores it already keeps busy; the "
          f"best two workers can give is {2 / serial_cores:.2f}x)")  # fmt: skip
    print(f"panel RSS above baseline {rss['peak'] / 2**20:8.0f} MiB; the panel "
          f"{rss['size'] / 2**20:.0f} MiB -> {rss['peak'] / rss['size']:.2f}x   (goal <= 4x)")  # fmt: skip
    print(f"whole panel peak memory  {whole_peak / 2**20:8.0f} MiB (tracemalloc, driver)")
    print(f"write_panel, 4 chunks    {written_peak / 2**20:8.0f} MiB")
    print(f"write_panel / whole      {written_peak / whole_peak:8.2f}x   (goal <= 0.5x)")


def window_rounds(
    lake: Any, part: list[str], repeat: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """3-month and 24-month panels of ``part`` from ``lake``, alternating: wall seconds per
    round and the process's CPU seconds per round (steadier on a loaded machine)."""
    short_start = (pd.Timestamp(END) - pd.DateOffset(months=3)).date().isoformat()
    cpu: dict[str, list[float]] = {"24 months": [], "3 months": []}

    def timed(name: str, first: str) -> Callable[[], None]:
        def run() -> None:
            started = _process_cpu()
            md.features.panel(part, first, END, LAKE_FEATURES, source=lake)
            cpu[name].append(_process_cpu() - started)

        return run

    wall = rounds(
        {"24 months": timed("24 months", START), "3 months": timed("3 months", short_start)},
        repeat,
    )
    return wall, {name: values[-repeat:] for name, values in cpu.items()}  # no warm-up


def window_part(args: argparse.Namespace) -> None:
    """3-month / 24-month panel alone, from a fresh lake of 500 symbols synced three times."""
    symbols = [f"L{k:04d}" for k in range(min(500, args.lake_symbols))]
    warnings.simplefilter("ignore")
    root = fresh_folder(args.lake, "lake")
    build_lake(root, symbols)
    wall, cpu = window_rounds(md.Lake(root), symbols, args.repeat)
    shutil.rmtree(root.parent, ignore_errors=True)
    print(f"3-month / 24-month, lake {ratio_text(wall, '3 months', '24 months', 'goal <= 0.3x')}"
          f"  ({len(symbols)} symbols, wall)")  # fmt: skip
    print(f"  same, CPU time         {ratio_text(cpu, '3 months', '24 months', 'goal <= 0.3x')}"
          f"  (24 months: median {statistics.median(cpu['24 months']) * 1000:.0f} ms CPU, "
          f"3 months: {statistics.median(cpu['3 months']) * 1000:.0f} ms)")  # fmt: skip


def memory_part(args: argparse.Namespace) -> None:
    """The serial panel's peak RSS above baseline / its size alone: ``--repeat`` fresh
    processes on a fresh lake of ``--lake-symbols`` symbols synced three times."""
    symbols = [f"L{k:04d}" for k in range(args.lake_symbols)]
    warnings.simplefilter("ignore")
    root = fresh_folder(args.lake, "lake")
    build_lake(root, symbols)
    runs = [peak_memory(root, symbols, "rss", root.parent) for _ in range(args.repeat)]
    shutil.rmtree(root.parent, ignore_errors=True)
    ratios = sorted(r["peak"] / r["size"] for r in runs)
    peaks = sorted(r["peak"] / 2**20 for r in runs)
    print(f"panel RSS above baseline {statistics.median(peaks):8.0f} MiB "
          f"[{peaks[0]:.0f}-{peaks[-1]:.0f}]; the panel {runs[0]['size'] / 2**20:.0f} MiB -> "
          f"{statistics.median(ratios):.2f}x [{ratios[0]:.2f}-{ratios[-1]:.2f} over {len(runs)} "
          f"processes]   (goal <= 4x; load {os.getloadavg()[0]:.1f})")  # fmt: skip


def dask_part(args: argparse.Namespace) -> None:
    """Serial / two-worker Dask alone, from a fresh lake synced three times, local and on S3."""
    symbols = [f"L{k:04d}" for k in range(args.lake_symbols)]
    warnings.simplefilter("ignore")
    root = fresh_folder(args.lake, "lake")
    build_lake(root, symbols)
    few = max(2, args.repeat // 2)
    local, local_text = dask_rounds(md.Lake(root), symbols, few)
    uri, server = s3_copy(root, root.parent)
    try:
        on_s3, s3_text = dask_rounds(md.Lake(uri), symbols, few)
    finally:
        stop_process(server)
    shutil.rmtree(root.parent, ignore_errors=True)
    print(f"serial / Dask, local     {ratio_text(local, 'serial', 'dask', 'goal >= 1.6x')}"
          f"  ({len(symbols)} symbols, {os.cpu_count()} CPUs on this machine)")  # fmt: skip
    print(f"  {local_text}")
    print(f"serial / Dask, S3 (moto) {ratio_text(on_s3, 'serial', 'dask', 'goal >= 1.6x')}")
    print(f"  {s3_text}")


_KNOWN_CHILD = """
import json, sys, time, warnings
import mdframes as md
warnings.simplefilter("ignore")
root, symbols, start, end, at, features = json.loads(sys.argv[1])
lake = md.Lake(root)
out = {}
for name, known_at in (("scalar", at), ("row", "row")):
    for when in ("cold", "warm"):  # cold: the first panel of the process (the ledger read)
        t = time.perf_counter()
        md.features.panel(symbols, start, end, features, source=lake, known_at=known_at)
        out[f"{name} {when}"] = time.perf_counter() - t
print(json.dumps(out))
"""


def known_part(args: argparse.Namespace) -> None:
    """Panels known at a time, coverage as it stood (the ledger) / the same panels by the code
    of ``--against`` (coverage judged from the state), each round a fresh process of each on
    the same lake, alternating."""
    symbols = [f"L{k:04d}" for k in range(args.row_symbols)]
    warnings.simplefilter("ignore")
    root = fresh_folder(args.lake, "lake")
    build_lake(root, symbols)
    old = root.parent / "against"
    old.mkdir()
    here = Path(__file__).resolve().parent.parent
    archive = subprocess.run(["git", "-C", str(here), "archive", args.against, "mdframes"],
                             check=True, capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    last_sync = dt.datetime.combine(SYNC_DAYS[-1], dt.time(23), tzinfo=dt.timezone.utc)
    spec = json.dumps([str(root), symbols, START, END, last_sync.isoformat(), LAKE_FEATURES])
    times: dict[str, list[float]] = {}
    for r in range(args.repeat):
        for who, tree in sorted([("now", here), ("then", old)], reverse=bool(r % 2)):
            env = {**os.environ, "PYTHONPATH": str(tree)}
            done = subprocess.run([sys.executable, "-c", _KNOWN_CHILD, spec], env=env,
                                  check=True, capture_output=True, text=True)  # fmt: skip
            for case, seconds in json.loads(done.stdout).items():
                times.setdefault(f"{who} {case}", []).append(seconds)
    shutil.rmtree(root.parent, ignore_errors=True)
    print(
        f"known_at panels, coverage as it stood / as judged by {args.against} "
        f"({len(symbols)} symbols x two years, lake synced {len(SYNC_DAYS)} times):"
    )
    for case in ("scalar cold", "scalar warm", "row cold", "row warm"):
        text = ratio_text(times, f"now {case}", f"then {case}", "goal <= 1.1x")
        print(f"  {case:<22} {text}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--symbols", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5, help="rounds per comparison")
    parser.add_argument("--sample", type=int, default=4, help="symbols for the brute force")
    parser.add_argument("--lake-symbols", type=int, default=2000)
    parser.add_argument("--row-symbols", type=int, default=200)
    parser.add_argument("--no-lake", action="store_true", help="skip the lake part")
    parser.add_argument(
        "--lake", help="build this run's lake in a new folder under this one (default: temp)"
    )
    parser.add_argument("--only-lake", action="store_true", help="only the lake part")
    parser.add_argument("--only-splits", action="store_true", help="only the splitters")
    parser.add_argument(
        "--only-dask", action="store_true", help="only serial / Dask from the lake (local, S3)"
    )
    parser.add_argument("--only-audit", action="store_true", help="only the audit")
    parser.add_argument(
        "--only-evaluate", action="store_true", help="only evaluate / alphalens-reloaded"
    )
    parser.add_argument(
        "--only-window", action="store_true", help="only 3-month / 24-month from a 500-symbol lake"
    )
    parser.add_argument(
        "--only-memory",
        action="store_true",
        help="only the serial lake panel's peak RSS / its size (--repeat fresh processes)",
    )
    parser.add_argument(
        "--only-known",
        action="store_true",
        help="only known_at panels (coverage as it stood) / the same by the code of --against",
    )
    parser.add_argument(
        "--against", default="8a075ad", help="the commit --only-known compares with (git ref)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes (a few minutes): 100 symbols, a lake of 200 (40 of them row symbols)",
    )
    args = parser.parse_args()
    if args.quick:
        args.symbols, args.lake_symbols, args.row_symbols = 100, 200, 40
        args.repeat = min(args.repeat, 3)
    if args.only_splits:
        splits_part(args)
        return
    if args.only_dask:
        dask_part(args)
        return
    if args.only_audit:
        audit_part(args)
        return
    if args.only_evaluate:
        evaluate_part(args)
        return
    if args.only_window:
        window_part(args)
        return
    if args.only_memory:
        memory_part(args)
        return
    if args.only_known:
        known_part(args)
        return
    if not args.only_lake:
        dict_part(args)
    if not args.no_lake:
        lake_part(args)
    if not args.only_lake:
        splits_part(args)
        audit_part(args)


def audit_part(args: argparse.Namespace) -> None:
    """audit(sample=200) / training_set, over the same frames (``--symbols`` x two years)."""
    frames, symbols = inputs(args.symbols)
    label = md.features.forward_return(5)
    made: list[Any] = []
    cpu: dict[str, list[float]] = {"training": [], "audit": []}  # process CPU, every thread

    def training() -> Any:
        started = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            made[:] = [md.features.training_set(symbols, START, END, source=frames, label=label)]
        cpu["training"].append(time.process_time() - started)
        return made[-1]

    def audit() -> Any:
        started = time.process_time()
        report = md.features.audit(made[-1], source=frames, sample=200)
        cpu["audit"].append(time.process_time() - started)
        assert report.ok, report
        return report

    training()
    times = rounds({"training": training, "audit": audit}, args.repeat)
    cpu = {name: values[-args.repeat :] for name, values in cpu.items()}  # no warm-up
    ts = made[-1]
    print(f"audit: {len(symbols)} symbols x {ts.X.index.get_level_values(0).nunique()} dates "
          f"= {len(ts.X):,} rows x {ts.X.shape[1]} features, 200 rows recomputed")  # fmt: skip
    print(f"training set               {statistics.median(times['training']):8.2f} s")
    print(f"audit(sample=200)          {statistics.median(times['audit']):8.2f} s")
    print(f"audit / training set       {ratio_text(times, 'audit', 'training', 'goal <= 1x')}")
    print(f"  in CPU time              {ratio_text(cpu, 'audit', 'training')}")
    print(f"  load average             {os.getloadavg()[0]:.1f}")


def evaluate_part(args: argparse.Namespace) -> None:
    """md.features.evaluate / alphalens-reloaded's IC and quantile returns, 20 features of
    2,000 symbols x 500 dates (a label on all but the last 5 dates)."""
    import numpy as np
    from alphalens import performance, utils

    n_symbols, n_dates, n_features = 2000, 500, 20
    dates = pd.bdate_range("2024-01-01", periods=n_dates)
    index = pd.MultiIndex.from_product(
        [dates, [f"S{k:04d}" for k in range(n_symbols)]], names=["date", "symbol"]
    )
    rng = np.random.default_rng(0)
    y = rng.normal(size=len(index)) / 100
    y[-5 * n_symbols :] = np.nan
    X = pd.DataFrame(
        {f"f{j:02d}": j * y + rng.normal(size=len(index)) / 100 for j in range(n_features)},
        index=index,
    )
    X.iloc[::13, 1] = np.nan
    t1 = pd.Series(index.get_level_values(0), index=index, name="t1")
    info = {"label": {"horizon": 5, "lag": 1}, "freq": "B", "source": "frames"}
    ts = md.features.TrainingSet(X, pd.Series(y, index=index, name="fwd_return_5"), t1, info)
    found: dict[str, Any] = {}

    def ours() -> Any:
        found["ours"] = md.features.evaluate(ts, horizons=(5,))
        return found["ours"]

    def alphalens() -> Any:
        out = {}
        for name in X.columns:
            data = pd.DataFrame({"5D": ts.y, "factor": X[name]}).dropna()
            data.index = data.index.set_names(["date", "asset"])
            data["factor_quantile"] = utils.quantize_factor(data, quantiles=5)
            ic = performance.factor_information_coefficient(data)["5D"]
            mean = performance.mean_return_by_quantile(data, demeaned=True)[0]["5D"]
            out[name] = (ic, mean)
        found["alphalens"] = out
        return out

    times = rounds({"evaluate": ours, "alphalens": alphalens}, args.repeat, warmup=0)
    for name, (ic, mean) in found["alphalens"].items():  # the same numbers, to 1e-9
        assert np.allclose(found["ours"].ic[name].dropna(), ic, rtol=0, atol=1e-9), name
        q = found["ours"].quantile_returns
        assert np.allclose(q[q["feature"] == name]["mean_return"], mean, rtol=0, atol=1e-9)
    print(f"evaluate: {n_symbols} symbols x {n_dates} dates x {n_features} features")
    print(
        f"evaluate / alphalens       {ratio_text(times, 'evaluate', 'alphalens', 'goal <= 0.1x')}"
    )


def splits_part(args: argparse.Namespace) -> None:
    """mdframes' combinatorial splitter / skfolio's on the same rows (2,000 x 500)."""
    import numpy as np
    from skfolio.model_selection import CombinatorialPurgedCV

    n_symbols, n_dates, reach, embargo = 2000, 500, 6, 5
    dates = pd.bdate_range("2024-01-01", periods=n_dates)
    index = pd.MultiIndex.from_product(
        [dates, pd.Index([f"S{k:04d}" for k in range(n_symbols)], dtype="string")],
        names=["date", "symbol"],
    )
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(len(index), 3)), index=index, columns=["a", "b", "c"])
    t1 = pd.Series(
        np.repeat((dates + reach * pd.offsets.BDay()).to_numpy(), n_symbols), index=index
    )
    y = pd.Series(rng.normal(size=len(index)), index=index)
    ours = md.features.CombinatorialPurgedCV(10, n_test_splits=2, embargo=embargo, t1=t1)
    theirs = CombinatorialPurgedCV(
        n_folds=10, n_test_folds=2, purged_size=reach * n_symbols, embargo_size=embargo * n_symbols
    )

    def run(cv: Any) -> int:
        return sum(len(train) for train, _ in cv.split(X, y))

    times = rounds({"mdframes": lambda: run(ours), "skfolio": lambda: run(theirs)}, args.repeat)
    print(f"splitters: combinatorial 10/2 ({ours.get_n_splits()} folds) on {n_symbols:,} symbols "
          f"x {n_dates} dates = {len(X):,} rows")  # fmt: skip
    print(f"mdframes / skfolio       {ratio_text(times, 'mdframes', 'skfolio', 'goal <= 1x')}")


def dict_part(args: argparse.Namespace) -> None:
    frames, symbols = inputs(args.symbols)
    # The training set's warning of mostly-missing app scores, once per round: the figures
    # are what matters here.
    warnings.simplefilter("ignore", md.DataQualityWarning)
    dates = pd.bdate_range(START, END)
    rows = sum(len(f) for f in frames.values())
    cells = len(dates) * len(symbols)
    print(f"inputs: {len(frames)} datasets, {rows:,} rows; panel: {len(symbols)} symbols x "
          f"{len(dates)} dates = {cells:,} rows x {len(DEFINITIONS)} features")  # fmt: skip
    short_start = (pd.Timestamp(END) - pd.DateOffset(months=3)).date().isoformat()
    label = md.features.forward_return(5)

    def build() -> pd.DataFrame:
        return md.features.panel(symbols, START, END, source=frames)

    cpu: dict[str, list[float]] = {"panel": [], "training": []}  # process CPU, every thread

    def timed(name: str, fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            started = time.process_time()
            out = fn()
            cpu[name].append(time.process_time() - started)
            return out

        return run

    with tempfile.TemporaryDirectory() as tmp:
        for name, frame in frames.items():
            frame.to_parquet(Path(tmp) / f"{name}.parquet")
        times = rounds(
            {
                "panel": timed("panel", build),
                "read": lambda: {n: pd.read_parquet(Path(tmp) / f"{n}.parquet") for n in frames},
                "3 months": lambda: md.features.panel(symbols, short_start, END, source=frames),
                "training": timed(
                    "training",
                    lambda: md.features.training_set(
                        symbols, START, END, source=frames, label=label
                    ),
                ),
            },
            args.repeat,
        )
    cpu = {name: values[-args.repeat :] for name, values in cpu.items()}  # no warm-up
    panel_s = statistics.median(times["panel"])

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

    print(
        f"panel (vectorised)         {panel_s:8.2f} s   {cells * len(DEFINITIONS) / panel_s:,.0f} cells/s"
    )
    print(f"brute force (scaled)       {brute_s:8.1f} s   ({len(sample)} symbols x {len(dates)} dates measured: {brute_sample_s:.1f} s)")  # fmt: skip
    print(f"speed-up vs brute force    {brute_s / panel_s:8.0f}x   (goal >= 100x)")
    print(f"panel / read inputs        {ratio_text(times, 'panel', 'read', 'goal <= 1x')}")
    print(f"3-month / 24-month panel   {ratio_text(times, '3 months', 'panel', 'goal <= 0.3x')}")
    print(f"training set / panel       {ratio_text(times, 'training', 'panel', 'goal <= 1.2x')}")
    print(f"  in CPU time              {ratio_text(cpu, 'training', 'panel')}")
    print(f"  load average             {os.getloadavg()[0]:.1f}")
    print(f"panel peak memory          {peak / 2**20:8.0f} MiB (tracemalloc); process peak RSS {rss:.0f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()
