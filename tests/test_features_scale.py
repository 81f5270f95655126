"""Feature panels on a real two-worker Dask cluster (``Client.get_executor()``).

Needs the ``lake-engines`` extra (dask with distributed); ``.ci/run`` installs it in the
engine step and runs the tests marked ``engines``. The cluster's workers are separate processes: each opens the
lake from its root and reads its own chunk of symbols.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import mdframes as md
from mdframes.features import Feature
from mdframes.sandbox import Sandbox

from .conftest import KEY, S3

pytestmark = pytest.mark.engines

SYMBOLS = ["AAPL", "KO", "GME", "JPM", "XOM", "MSFT", "NVDA"]
DATASETS = ["sentiment", "put_call_ratio", "government_contracts", "news"]
FEATURES: list[Any] = [
    "sentiment_mean_7d",
    "sentiment_change_30d",
    "put_call_ratio_last",
    "contracts_award_365d",
    "news_count_7d",
    # A lambda: Dask ships it with cloudpickle (a process pool would refuse it).
    Feature(
        "long_news_7d",
        "news",
        where=lambda df: df["headline"].str.len() > 40,
        agg="count",
        window=7,
    ),  # fmt: skip
]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[md.Lake]:
    root = tmp_path_factory.mktemp("scale") / "lake"
    with Sandbox(today="2026-10-01") as world:
        client = md.Client(api_key=KEY, base_url=world.url, cache=False, progress=False)
        client.sandbox = world
        lake = md.Lake(root, client=client)
        lake.sync(DATASETS, SYMBOLS, start="2025-09-01", progress=False)
        for _ in range(3):
            world.advance(days=4)
            lake.sync(DATASETS, SYMBOLS, progress=False)
        client.close()
    yield md.Lake(root)  # no client: nothing of a key to ship


@pytest.fixture(scope="module")
def executor() -> Iterator[Any]:
    distributed = pytest.importorskip("distributed", reason="in the lake-engines extra")
    with (
        # The local S3 server's credentials (conftest's s3_env), in the workers' environment
        # from their start: a team's cluster has its own the same way. No real account is
        # reached: every lake here names the local endpoint.
        pytest.MonkeyPatch.context() as env,
    ):
        for name, value in S3_ENV.items():
            env.setenv(name, value)
        for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
            env.delenv(name, raising=False)
        yield from _cluster(distributed)


S3_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": "us-east-1",
}


def _cluster(distributed: Any) -> Iterator[Any]:
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as dask_client,
    ):
        assert len(dask_client.scheduler_info()["workers"]) == 2
        yield dask_client.get_executor()


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
@pytest.mark.parametrize("known_at", [None, "2026-10-05", "row"])
def test_dask_gives_the_serial_panel(lake: md.Lake, executor: Any, known_at: Any) -> None:
    args = (SYMBOLS, "2026-03-02", "2026-10-13", FEATURES)
    serial = md.features.panel(*args, source=lake, known_at=known_at)
    parallel = md.features.panel(*args, source=lake, known_at=known_at, executor=executor)
    pd.testing.assert_frame_equal(parallel, serial)
    assert parallel.attrs == serial.attrs


def _opened_lakes() -> list[int]:
    from mdframes.features.panels import pinned

    return [id(lake) for lake in pinned._OPENED.values()]


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_a_dask_worker_keeps_its_lake_open_across_chunks(lake: md.Lake, executor: Any) -> None:
    """Each worker process opens the lake once: a later panel's chunks read through the
    same opened lake (its tables, log and file footers), not a fresh one."""
    args = (SYMBOLS, "2026-09-01", "2026-10-13", FEATURES[:2])
    dask_client = executor._client
    md.features.panel(*args, source=lake, executor=executor)
    before = dask_client.run(_opened_lakes)
    md.features.panel(*args, source=lake, executor=executor)
    assert dask_client.run(_opened_lakes) == before
    assert sum(len(ids) for ids in before.values()) >= 1
    assert all(len(ids) <= 1 for ids in before.values())


def _count_scheduler_gathers(dask_scheduler: Any) -> None:
    """From now on, the scheduler counts the gathers it serves (a client taking results
    through it) in ``dask_scheduler.mdframes_gathers``."""
    served = dask_scheduler.handlers["gather"]
    dask_scheduler.mdframes_gathers = 0

    async def counting(*args: Any, **kwargs: Any) -> Any:
        dask_scheduler.mdframes_gathers += 1
        return await served(*args, **kwargs)

    dask_scheduler.handlers["gather"] = counting


def _scheduler_gathers(dask_scheduler: Any) -> int:
    dask_scheduler.handlers["gather"] = type(dask_scheduler).gather.__get__(dask_scheduler)
    return int(dask_scheduler.mdframes_gathers)


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_dask_chunks_come_back_straight_from_their_workers(lake: md.Lake, executor: Any) -> None:
    """The driver takes each chunk's columns from its worker, not through the scheduler
    (which would pickle them in band, copied on both sides)."""
    args = (SYMBOLS, "2026-09-01", "2026-10-13", FEATURES[:2])
    dask_client = executor._client
    dask_client.run_on_scheduler(_count_scheduler_gathers)
    panel = md.features.panel(*args, source=lake, executor=executor)
    assert dask_client.run_on_scheduler(_scheduler_gathers) == 0
    pd.testing.assert_frame_equal(panel, md.features.panel(*args, source=lake))


def _mapped_apart(reuse: bool) -> int:
    """How many memory maps of their own (glibc's ``mallinfo2().hblks``) an 8 MB array
    takes, allocated inside ``reused_heap()`` or not."""
    import contextlib
    import ctypes

    from mdframes._memory import reused_heap

    class Info(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in "abcdefghij"]  # hblks: the 4th

    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = Info
    with reused_heap() if reuse else contextlib.nullcontext():
        before = mallinfo2().d
        held = np.ones(1 << 20)
        maps = int(mallinfo2().d - before)
        del held
    return maps


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_chunk_reuses_its_heap_on_a_dask_worker(executor: Any) -> None:
    """Dask's nanny fixes MALLOC_TRIM_THRESHOLD_, so glibc maps each large array apart (and
    faults its pages in afresh each time); inside a chunk the arrays come from the heap,
    whose freed pages serve the next one."""
    dask_client = executor._client
    assert all(dask_client.run(os.environ.get, "MALLOC_TRIM_THRESHOLD_").values())
    assert set(dask_client.run(_mapped_apart, False).values()) == {1}
    assert set(dask_client.run(_mapped_apart, True).values()) == {0}
    assert set(dask_client.run(_mapped_apart, False).values()) == {1}  # restored after


def _noting_threads(folder: Path) -> Feature:
    """A news count whose row rule notes, in ``folder``, the thread it runs on and the
    threads mdframes' pools may use there (a worker's feature runs where its chunk does)."""

    def where(df: pd.DataFrame) -> Any:
        import os
        import threading

        from mdframes._threads import threads

        note = f"{threading.current_thread().name}|{threads()}\n"
        with open(folder / f"{os.getpid()}.txt", "a") as out:
            out.write(note)
        return df["headline"].str.len() > 0

    return Feature("any_news_7d", "news", where=where, agg="count", window=7)


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_dask_chunks_share_their_machine_cores(
    lake: md.Lake, executor: Any, tmp_path: Path
) -> None:
    """Two workers of one thread on one machine: each chunk's pools use half its cores (at
    least one thread), so with as many tasks as cores a chunk computes its datasets on the
    task's own thread, not in a pool of its own beside the other worker's."""
    import os

    from mdframes.features.panels.scale import _per_machine

    assert _per_machine(executor) == 2
    args = (SYMBOLS, "2026-09-01", "2026-10-13", [*FEATURES[:4], _noting_threads(tmp_path)])
    panel = md.features.panel(*args, source=lake, executor=executor)
    notes = [line.split("|") for f in tmp_path.glob("*.txt") for line in f.read_text().split()]
    assert len(notes) == 2  # one chunk per worker
    share = max(1, (os.cpu_count() or 1) // 2)
    assert {int(n) for _, n in notes} == {share}
    if share == 1:
        assert not any(name.startswith("mdframes-features") for name, _ in notes)
    serial = md.features.panel(*args, source=lake)
    pd.testing.assert_frame_equal(panel, serial)


def test_a_share_of_the_cores_reaches_the_pools_threads() -> None:
    """Inside ``sharing(n)``, ``threads()`` is the share, in the threads a pool starts with
    the context too; outside it, every core; a thread pool's workers all count as here."""
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    from mdframes._threads import cores, sharing, threads
    from mdframes.features.panels.scale import _per_machine

    assert threads() == cores()
    with sharing(cores()) as budget, ThreadPoolExecutor(1) as pool:
        assert budget == threads() == 1
        assert pool.submit(contextvars.copy_context().run, threads).result() == 1
    with sharing(1):
        assert threads() == cores()
    assert threads(1) == 1
    with ThreadPoolExecutor(3) as pool:
        assert _per_machine(pool) == 3


def _in_panel_order(got: pd.DataFrame) -> pd.DataFrame:
    """Rows read back from written chunks, in the panel's order: date, then SYMBOLS' order."""
    rank = {s: i for i, s in enumerate(SYMBOLS)}
    return (
        got.assign(_r=got["symbol"].map(rank).astype("int64"))
        .sort_values(["date", "_r"])
        .drop(columns="_r")
        .reset_index(drop=True)
    )


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_dask_writes_the_panel_from_its_workers(
    lake: md.Lake, executor: Any, tmp_path: Path
) -> None:
    args = (SYMBOLS, "2026-03-02", "2026-10-13", FEATURES)
    want = md.features.panel(*args, source=lake, known_at="row").reset_index()
    path = md.features.write_panel(tmp_path / "panel", *args, source=lake, known_at="row",
                                   executor=executor, chunk=2)  # fmt: skip
    assert len(list(Path(path).glob("part-*.parquet"))) == 4
    got = pd.read_parquet(path)
    got = _in_panel_order(got)
    pd.testing.assert_frame_equal(got, want)
    assert np.isfinite(got["sentiment_mean_7d"].to_numpy(dtype="float64", na_value=np.nan)).any()


@pytest.fixture
def panel_uri(s3_server: S3, s3_env: None) -> str:
    """A folder in a new bucket of the session's local S3 server (conftest)."""
    return s3_server.uri(s3_server.bucket(), prefix="v1")


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_write_panel_to_an_object_store(lake: md.Lake, panel_uri: str) -> None:
    """An s3:// URI as path: each chunk's file is written to the bucket, read back equal."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    args = (SYMBOLS, "2026-06-01", "2026-09-30", FEATURES[:5])
    want = md.features.panel(*args, source=lake).reset_index()
    with ThreadPoolExecutor(2) as pool:
        uri = md.features.write_panel(panel_uri, *args, source=lake,
                                      executor=pool, chunk=3)  # fmt: skip
    fs, base = pafs.FileSystem.from_uri(uri)
    names = sorted(i.base_name for i in fs.get_file_info(pafs.FileSelector(base)))
    assert names == ["_SUCCESS", "part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    got = pq.read_table(base, filesystem=fs).to_pandas()
    got = _in_panel_order(got)
    pd.testing.assert_frame_equal(got, want)
    pd.testing.assert_frame_equal(md.features.read_panel(uri), want.set_index(["date", "symbol"]))
    assert "testing" not in uri  # no credential in what is returned


@pytest.fixture(scope="module")
def s3_lake(lake: md.Lake, s3_server: S3, executor: Any) -> md.Lake:
    """The module's lake copied file by file into a bucket of the local S3 server (a Delta
    table's log names its files relatively), as a team's cluster would read it."""
    client = s3_server.client()
    bucket = s3_server.bucket()
    root = Path(lake.root)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        client.upload_file(str(path), bucket, f"lake/{path.relative_to(root).as_posix()}")
    return md.Lake(s3_server.uri(bucket))


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
@pytest.mark.parametrize("known_at", [None, "row"])
def test_dask_reads_a_lake_on_an_object_store(
    lake: md.Lake, s3_lake: md.Lake, executor: Any, known_at: Any
) -> None:
    args = (SYMBOLS, "2026-03-02", "2026-10-13", FEATURES)
    serial = md.features.panel(*args, source=lake, known_at=known_at)
    parallel = md.features.panel(*args, source=s3_lake, known_at=known_at, executor=executor)
    pd.testing.assert_frame_equal(parallel, serial)
    assert parallel.attrs == serial.attrs


@pytest.mark.parametrize(("n", "workers"), [(7, 2), (2000, 2), (2001, 2), (3000, 2), (10000, 4)])
def test_chunks_are_a_whole_number_per_worker_and_alike(n: int, workers: int) -> None:
    """No task is left to run alone at the end: every worker gets as many tasks, of about
    the same size (the last takes the remainder), none above the largest chunk."""
    from mdframes.features.panels.scale import _MAX_CHUNK, _chunk_size, _chunks

    parts = _chunks([f"S{k}" for k in range(n)], _chunk_size(n, workers))
    sizes = [len(p) for p in parts]
    assert sum(sizes) == n and max(sizes) <= _MAX_CHUNK
    assert len(parts) % workers == 0
    assert max(sizes) - min(sizes) < len(parts)


def _failing(df: pd.DataFrame) -> Any:
    raise ValueError("a row rule that fails on the worker")


def test_a_failing_dask_chunk_raises_on_the_driver(lake: md.Lake, executor: Any) -> None:
    failing = Feature("failing_news_7d", "news", where=_failing, agg="count", window=7)
    with pytest.raises(ValueError, match="fails on the worker"):
        md.features.panel(SYMBOLS, "2026-09-01", "2026-10-13", [failing], source=lake,
                          executor=executor)  # fmt: skip
