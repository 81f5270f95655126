"""Panels that scale out: chunks of symbols computed on any ``concurrent.futures.Executor``.

Features are windows per symbol, so a panel shards by symbol with no shuffle. Each task is
:func:`run_chunk` (or :func:`write_chunk`), a top-level function of plain, picklable
arguments: where to read (a lake's root and storage options, or the chunk's rows of the given
frames), the symbols, the dates and the feature definitions. A task reads its inputs itself;
the service is never a source here, so no API key is shipped to a worker.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Mapping
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InvalidParameterError
from .chunk import ChunkResult, Request, compute, index_of
from .sources import lake_spec, open_lake

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


def check_executor(executor: Any, request: Request) -> None:
    """An executor the panel can use with this request, or InvalidParameterError."""
    if not isinstance(executor, Executor):
        raise InvalidParameterError(
            f"executor must be a concurrent.futures.Executor (a ProcessPoolExecutor, Dask's "
            f"Client.get_executor(), ...), not {type(executor).__name__}",
            parameter="executor",
        )
    if request.source is None:
        raise InvalidParameterError(
            "executor= needs source= a lake or a dict of frames: each worker reads its own "
            "inputs, and an API key is never shipped to workers (sync a lake first)",
            parameter="executor",
        )
    if isinstance(executor, ProcessPoolExecutor) and not isinstance(request.source, Mapping):
        context = getattr(executor, "_mp_context", None)
        method = context.get_start_method() if context is not None else None
        if method == "fork":
            raise InvalidParameterError(
                "a lake cannot be read in forked worker processes (its Delta tables' runtime "
                "does not survive fork): create the pool with "
                "ProcessPoolExecutor(mp_context=multiprocessing.get_context('spawn'))",
                parameter="executor",
            )
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


def _chunks(symbols: list[str], size: int) -> list[list[str]]:
    return [symbols[i : i + size] for i in range(0, len(symbols), size)]


def _normalised(frame: pd.DataFrame) -> np.ndarray:
    return frame["symbol"].astype("string").str.strip().str.upper().to_numpy(dtype=object)


def _shipments(request: Request, parts: list[list[str]]) -> list[Any]:
    """Per chunk, the source a worker opens: the lake's spec, or the chunk's rows."""
    if not isinstance(request.source, Mapping):
        spec = lake_spec(request.source)
        return [spec] * len(parts)
    keys = {name: _normalised(frame) for name, frame in request.source.items()}
    out = []
    for part in parts:
        wanted = set(part)
        rows = {}
        for name, frame in request.source.items():
            mask = np.fromiter((k in wanted for k in keys[name]), dtype=bool, count=len(frame))
            rows[name] = frame[mask]
        out.append(rows)
    return out


def run_chunk(
    source: Any,
    symbols: list[str],
    dates: pd.DatetimeIndex,
    features: list[Any],
    known_at: Any,
    errors: str,
) -> ChunkResult:
    """One chunk of a panel (run on a worker): opens the lake itself, or takes the frames.

    Examples
    --------
    >>> import pandas as pd
    >>> from mdframes.features.definitions import by_name
    >>> r = run_chunk({"news": pd.DataFrame({"symbol": [], "date": []})}, ["AAPL"],
    ...               pd.DatetimeIndex([]), [by_name("news_count_7d")], None, "raise")
    >>> r.frame.shape
    (0, 1)
    """
    opened = source if isinstance(source, Mapping) else open_lake(source)
    request = Request(list(symbols), dates, list(features), opened, known_at, errors, None)
    return compute(request, request.symbols)


def _fs(target: str) -> tuple[Any, str]:
    import pyarrow.fs as pafs

    if "://" in target:
        return pafs.FileSystem.from_uri(target)
    return pafs.LocalFileSystem(), target


def _write(target: str, name: str, result: ChunkResult) -> ChunkResult:
    import pyarrow as pa
    import pyarrow.parquet as pq

    assert result.frame is not None
    frame = result.frame.reset_index()
    frame.attrs = {}
    fs, base = _fs(target)
    pq.write_table(
        pa.Table.from_pandas(frame, preserve_index=False),
        f"{base.rstrip('/')}/{name}",
        filesystem=fs,
        compression="zstd",
    )
    result.frame = None
    return result


def write_chunk(target: str, name: str, *args: Any) -> ChunkResult:
    """One chunk of :func:`run_chunk`, written to ``target/name`` (Parquet) where it was
    computed; returns its result without the rows."""
    return _write(target, name, run_chunk(*args))


def check_target(path: Any) -> str:
    """``path`` as a folder or URI every worker can open; created, and refused when it is a
    file or already holds files."""
    import pyarrow.fs as pafs

    if not isinstance(path, (str, os.PathLike)):
        raise InvalidParameterError(
            f"path must be a folder or an object-store URI, not {type(path).__name__}",
            parameter="path",
        )
    text = os.fspath(path)
    target = text if "://" in text else os.path.abspath(text)
    try:
        fs, base = _fs(target)
        info = fs.get_file_info(base)
        if info.type == pafs.FileType.File:
            raise InvalidParameterError(f"{text} is a file, not a folder", parameter="path")
        if info.type == pafs.FileType.Directory and fs.get_file_info(pafs.FileSelector(base)):
            raise InvalidParameterError(
                f"{text} already holds files: give a new or empty folder", parameter="path"
            )
        fs.create_dir(base, recursive=True)
    except (OSError, ValueError) as exc:
        if isinstance(exc, InvalidParameterError):
            raise
        raise InvalidParameterError(f"cannot write to {text}: {exc}", parameter="path") from None
    return target


def _args(request: Request, part: list[str], shipped: Any) -> tuple[Any, ...]:
    return (
        shipped,
        part,
        request.dates,
        request.features,
        request.known_at,
        request.errors,
    )


def _gather(futures: list[Future[ChunkResult]]) -> list[ChunkResult]:
    try:
        return [f.result() for f in futures]
    except BaseException:
        for f in futures:
            f.cancel()
        raise


def run_panel(executor: Executor, request: Request) -> tuple[pd.DataFrame, list[ChunkResult]]:
    """The whole panel from chunks computed on ``executor``, in the serial panel's order."""
    n = len(request.symbols)
    size = min(_MAX_CHUNK, max(1, -(-n // _workers(executor))))
    parts = _chunks(request.symbols, size)
    shipped = _shipments(request, parts)
    futures = [
        executor.submit(run_chunk, *_args(request, part, ship))
        for part, ship in zip(parts, shipped, strict=True)
    ]
    results = _gather(futures)
    # Chunk c holds (date j, its symbol i) at j * len(c) + i; the panel at j * n + offset + i.
    n_dates = len(request.dates)
    positions, offset = [], 0
    for part in parts:
        j, i = np.divmod(np.arange(n_dates * len(part)), len(part))
        positions.append(j * n + offset + i)
        offset += len(part)
    order = np.argsort(np.concatenate(positions), kind="stable")
    frames = [r.frame for r in results]
    whole = pd.concat(frames).iloc[order]
    whole.index = index_of(request.dates, request.symbols)
    for r in results:
        r.frame = None
    return whole, results


def run_writes(
    executor: Executor | None, request: Request, target: str, chunk: int
) -> list[ChunkResult]:
    """Each chunk computed and written as ``part-NNNNN.parquet`` (serially when no executor:
    one chunk in memory at a time)."""
    parts = _chunks(request.symbols, chunk)
    names = [f"part-{k:05d}.parquet" for k in range(len(parts))]
    if executor is None:
        results = []
        for part, name in zip(parts, names, strict=True):
            req = Request(
                part,
                request.dates,
                request.features,
                request.source,
                request.known_at,
                request.errors,
                request.client,
            )
            results.append(_write_local(target, name, req))
        return results
    shipped = _shipments(request, parts)
    futures = [
        executor.submit(write_chunk, target, name, *_args(request, part, ship))
        for part, name, ship in zip(parts, names, shipped, strict=True)
    ]
    return _gather(futures)


def _write_local(target: str, name: str, request: Request) -> ChunkResult:
    """A chunk computed here (any source, the service included) and written."""
    return _write(target, name, compute(request, request.symbols))
