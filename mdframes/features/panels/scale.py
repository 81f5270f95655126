"""Panels that scale out: chunks of symbols computed on any ``concurrent.futures.Executor``.

Features are windows per symbol, so a panel shards by symbol with no shuffle. Each task is
:func:`run_chunk` (or :func:`write_chunk`), a top-level function of one picklable request:
its symbols, the dates, the feature definitions, the lake's coverage of those symbols and its
source as the source sends itself to a worker (a lake as its root and storage options, frames
as the chunk's rows). A task reads its inputs itself; the service is never a source here, so
no API key is shipped to a worker.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from typing import Any

import numpy as np
import pandas as pd

from ..._memory import reused_heap
from ..._threads import sharing
from ...errors import InvalidParameterError
from .chunk import ChunkResult, PanelRequest, compute, index_of
from .panelfile import write_part

__all__ = ["run_chunk", "write_chunk", "run_panel", "run_writes", "check_executor"]

# A panel on an executor is cut into one task per worker: each task reads its datasets from
# the lake, and a read of a few symbols costs nearly a read of all (the files hold every
# symbol), so more tasks than workers only add reads. Tasks hold at most this many symbols.
_MAX_CHUNK = 1000
_DEFAULT_WORKERS = 2


def _workers(executor: Executor) -> int:
    """How many tasks ``executor`` runs at once, where it says (process and thread pools,
    Dask's ``Client.get_executor()``); else a small default."""
    count = getattr(executor, "_max_workers", None)
    if isinstance(count, int) and count > 0:
        return count
    client = getattr(executor, "_client", None)
    try:
        threads = client.nthreads() if client is not None else None
    except Exception:  # noqa: BLE001 - a cluster that cannot say: the default
        threads = None
    if isinstance(threads, Mapping) and threads:
        return max(1, sum(int(n) for n in threads.values()))
    return _DEFAULT_WORKERS


def _per_machine(executor: Executor) -> int:
    """How many of ``executor``'s tasks run at once on one machine: a pool's workers (all
    here), a Dask cluster's threads on its busiest host; else the small default."""
    client = getattr(executor, "_client", None)
    if client is not None and getattr(executor, "_max_workers", None) is None:
        try:
            workers = client.scheduler_info()["workers"].values()
            hosts: dict[str, int] = {}
            for info in workers:
                host = str(info.get("host", ""))
                hosts[host] = hosts.get(host, 0) + int(info.get("nthreads", 1))
            if hosts:
                return max(hosts.values())
        except Exception:  # noqa: BLE001 - a cluster that cannot say: as many as run at once
            pass
    return _workers(executor)


def check_executor(executor: Any, request: PanelRequest) -> None:
    """An executor the panel can use with this request, or InvalidParameterError."""
    if not isinstance(executor, Executor):
        raise InvalidParameterError(
            f"executor must be a concurrent.futures.Executor (a ProcessPoolExecutor, Dask's "
            f"Client.get_executor(), ...), not {type(executor).__name__}",
            parameter="executor",
        )
    request.source.check_executor(executor)
    if isinstance(executor, ProcessPoolExecutor):  # plain pickle: no lambdas
        for feature in request.features:
            try:
                pickle.dumps(feature)
            except Exception as exc:  # noqa: BLE001 - any pickling failure says the same
                raise InvalidParameterError(
                    f"feature {feature.name!r} cannot be sent to a process pool ({exc}): use "
                    "module-level functions for value/where/sign, or an executor that "
                    "uses cloudpickle (Dask)",
                    parameter="features",
                ) from None


def _chunk_size(n: int, workers: int) -> int:
    """Symbols per task for ``n`` symbols on ``workers``: a whole number of tasks per worker,
    all of about the same size and at most ``_MAX_CHUNK`` (3,000 symbols on two workers: four
    tasks of 750, not three of 1,000, of which the last would run alone)."""
    per_worker = max(1, -(-n // (workers * _MAX_CHUNK)))
    return max(1, -(-n // (workers * per_worker)))


def _chunks(symbols: list[str], size: int) -> list[list[str]]:
    return [symbols[i : i + size] for i in range(0, len(symbols), size)]


def run_chunk(request: PanelRequest) -> ChunkResult:
    """One chunk of a panel (run on a worker): the request of its symbols
    (:meth:`PanelRequest.part`), whose source a worker opens itself (a lake from its root) or
    holds (the chunk's rows of the given frames). The rows come back as Arrow columns
    (``ChunkResult.table``, no index: the driver knows it), which cross a process boundary
    as their buffers, where a pickled frame would pickle every symbol of its index.

    Examples
    --------
    >>> import pandas as pd
    >>> from mdframes.features.panels.chunk import prepare
    >>> request = prepare("AAPL", "2026-01-03", "2026-01-04", "news_count_7d", freq="B",
    ...                   source={"news": pd.DataFrame({"symbol": [], "date": []})},
    ...                   known_at=None, errors="raise", client=None)  # a weekend: no dates
    >>> run_chunk(request.part(["AAPL"])).table.shape
    (0, 1)
    """
    # reused_heap: a Dask worker's C heap otherwise maps and faults in every large array
    # afresh (its nanny fixes MALLOC_TRIM_THRESHOLD_), which cost a chunk up to 60 % more CPU.
    with sharing(request.share), reused_heap():
        result = compute(request, request.symbols)
        assert result.frame is not None
        result.table = _to_arrow(result.frame)
        result.frame = None
    return result


def _to_arrow(frame: pd.DataFrame) -> Any:
    """The feature columns as Arrow arrays over the same buffers (``Int64``: its values and
    its mask as validity; ``float64``: NaN stays NaN)."""
    import pyarrow as pa

    arrays = []
    for name in frame.columns:
        values = frame[name].array
        if isinstance(values, pd.arrays.IntegerArray):
            arrays.append(pa.array(values))  # its values and its mask as validity
        else:
            arrays.append(pa.array(np.asarray(values, dtype="float64")))
    return pa.Table.from_arrays(arrays, names=[str(c) for c in frame.columns])


class _PanelColumns:
    """The panel's feature columns, filled chunk by chunk as each comes back (the driver
    copies one chunk's block while the workers still compute the others). Chunk c holds
    (date j, its symbol i) at ``j * len(c) + i``; the panel at ``j * n + offset + i``, so
    each chunk's block is copied into its columns of a (dates, symbols) array."""

    def __init__(self, names: list[str], widths: list[int], n_dates: int) -> None:
        self.names, self.widths, self.n_dates = names, widths, n_dates
        self.offsets = np.cumsum([0, *widths[:-1]]).tolist()
        self.values: dict[str, np.ndarray] = {}
        self.missing: dict[str, np.ndarray | None] = {}
        # Every feature is int64 or float64 (8 bytes a value): its (dates, symbols) array is
        # made and its pages touched now, while the workers compute, and takes its type
        # from the first chunk back; the page faults of the last chunk's copy were the
        # driver's work after the last task ended.
        self.raw = {name: np.empty((n_dates, sum(widths)), dtype="int64") for name in names}
        for raw in self.raw.values():
            raw.fill(0)

    def add(self, k: int, table: Any) -> None:
        """Chunk ``k``'s Arrow columns copied into its block."""
        import pyarrow as pa

        n, width = sum(self.widths), self.widths[k]
        block = slice(self.offsets[k], self.offsets[k] + width)
        for name in self.names:
            piece = table.column(name)
            piece = piece.combine_chunks() if isinstance(piece, pa.ChunkedArray) else piece
            integer = pa.types.is_integer(piece.type)
            if name not in self.values:  # every chunk gives a feature the same type
                raw = self.raw.pop(name)
                self.values[name] = raw if integer else raw.view("float64")
                self.missing[name] = np.zeros((self.n_dates, n), dtype=bool) if integer else None
            values, missing = self.values[name], self.missing[name]
            if missing is not None:
                values[:, block] = piece.fill_null(0).to_numpy().reshape(self.n_dates, width)
                if piece.null_count:
                    nulls = piece.is_null().to_numpy(zero_copy_only=False)
                    missing[:, block] = nulls.reshape(self.n_dates, width)
            else:
                flat = piece.to_numpy(zero_copy_only=False)
                values[:, block] = flat.reshape(self.n_dates, width)

    def column(self, name: str) -> Any:
        values, missing = self.values.pop(name), self.missing.pop(name)
        if missing is None:
            return values.reshape(-1)
        return pd.arrays.IntegerArray(values.reshape(-1), missing.reshape(-1))


def _write(target: str, name: str, result: ChunkResult) -> ChunkResult:
    import pyarrow as pa

    assert result.frame is not None
    frame = result.frame.reset_index()
    frame.attrs = {}
    result.digest = write_part(target, name, pa.Table.from_pandas(frame, preserve_index=False))
    result.frame = None
    return result


def write_chunk(target: str, name: str, request: PanelRequest) -> ChunkResult:
    """One chunk of :func:`run_chunk`, written to ``target/name`` (Parquet) where it was
    computed; returns its result without the rows."""
    with sharing(request.share), reused_heap():
        return _write(target, name, compute(request, request.symbols))


class _Tasks:
    """How tasks go to ``executor`` and their results come back, decided once.

    Dask's ``Client.get_executor()`` hands each result to the driver through the scheduler,
    which takes it with pickle protocol 4 (the scheduler's common denominator): a chunk's
    columns were copied into one pickle on the worker and again on the driver (a 250-symbol
    chunk: 10 MB, 20 ms of a worker's CPU before any page fault). Its tasks are therefore
    submitted through its client, and each result fetched straight from its worker (as
    ``direct_to_workers=True`` does; a client made with ``direct_to_workers=False``, for
    workers the driver cannot reach, keeps the scheduler's way), its buffers out of band.
    Any other executor: its own ``submit`` and futures."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        client = getattr(executor, "_client", None)
        dask = (
            client is not None
            and getattr(executor, "_max_workers", None) is None
            and callable(getattr(client, "gather", None))
            and callable(getattr(client, "submit", None))
        )
        self.client = client if dask else None
        self.direct = getattr(client, "direct_to_workers", None) is not False

    def submit(self, fn: Callable[..., ChunkResult], *args: Any) -> Any:
        if self.client is None:
            return self.executor.submit(fn, *args)
        return self.client.submit(fn, *args, **dict(getattr(self.executor, "_kwargs", {})))

    def gather(
        self, futures: list[Any], each: Callable[[int, ChunkResult], None] | None = None
    ) -> list[ChunkResult]:
        """The futures' results in order; ``each(k, result)`` as each finishes, in any
        order."""
        try:
            if self.client is None:
                return _gather(futures, each)
            from distributed import as_completed as dask_completed

            at = {f.key: k for k, f in enumerate(futures)}
            results: list[Any] = [None] * len(futures)
            for done in dask_completed(futures):
                k = at[done.key]
                results[k] = self.client.gather(done, direct=self.direct)
                if each is not None:
                    each(k, results[k])
            return results
        except BaseException:
            if self.client is not None:
                self.client.cancel(futures)
            raise


def _gather(
    futures: list[Future[ChunkResult]], each: Callable[[int, ChunkResult], None] | None = None
) -> list[ChunkResult]:
    """The futures' results in order; ``each(k, result)`` as each finishes, in any order."""
    try:
        if each is not None:
            at = {id(f): k for k, f in enumerate(futures)}
            for done in as_completed(futures):
                each(at[id(done)], done.result())
        return [f.result() for f in futures]
    except BaseException:
        for f in futures:
            f.cancel()
        raise


def run_panel(executor: Executor, request: PanelRequest) -> tuple[pd.DataFrame, list[ChunkResult]]:
    """The whole panel from chunks computed on ``executor``, in the serial panel's order."""
    parts = _chunks(request.symbols, _chunk_size(len(request.symbols), _workers(executor)))
    request.share = min(len(parts), _per_machine(executor))
    tasks = _Tasks(executor)
    futures = [tasks.submit(run_chunk, request.part(part)) for part in parts]
    names = [f.name for f in request.features]
    # The panel's index and its columns' memory are made while the workers compute.
    index = index_of(request.dates, request.symbols)
    filled = _PanelColumns(names, [len(part) for part in parts], len(request.dates))

    def arrived(k: int, result: ChunkResult) -> None:
        filled.add(k, result.table)
        result.table = None

    results = tasks.gather(futures, arrived)
    columns = {name: filled.column(name) for name in names}
    return pd.DataFrame(columns, index=index, copy=False), results


def run_writes(
    executor: Executor | None, request: PanelRequest, target: str, chunk: int
) -> list[ChunkResult]:
    """Each chunk computed and written as ``part-NNNNN.parquet`` (serially when no executor:
    one chunk in memory at a time)."""
    parts = _chunks(request.symbols, chunk)
    names = [f"part-{k:05d}.parquet" for k in range(len(parts))]
    if executor is None:  # here, any source (the service too), one chunk in memory at a time
        return [
            write_chunk(target, name, request.part(part))
            for part, name in zip(parts, names, strict=True)
        ]
    request.share = min(len(parts), _per_machine(executor))
    tasks = _Tasks(executor)
    futures = [
        tasks.submit(write_chunk, target, name, request.part(part))
        for part, name in zip(parts, names, strict=True)
    ]
    return tasks.gather(futures)
