"""How a chunk's datasets are read and computed in time, chosen once per chunk by its source:
the next dataset read while the one before is computed (:class:`Overlapped`), one after the
other (:class:`InTurn`), or, for frames already in memory, computed side by side
(:class:`SideBySide`). The result is the same whichever runs."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import pandas as pd

from ..._threads import threads
from ...errors import warnings_from_threads, warnings_from_workers
from .sources import Source

_MAX_THREADS = 4
Reads = Iterator[tuple[str, pd.DataFrame, dict[str, str]]]


class Work(Protocol):
    """One dataset's features from its inputs, and its read's pages handed back (chunk's)."""

    def columns(self, name: str, held: list[pd.DataFrame]) -> dict[str, Any]: ...
    def hand_back_reads(self, name: str) -> None: ...


class Schedule:
    """Runs ``work`` on each dataset of ``reads``; ``failed`` takes each one's failed symbols."""

    def run(self, reads: Reads, work: Work, failed: dict[str, dict[str, str]]) -> dict[str, Any]:
        raise NotImplementedError


def schedule_for(source: Source, datasets: int) -> Schedule:
    """The schedule of a chunk reading ``datasets`` from ``source``."""
    if not source.overlaps:
        return SideBySide()
    if datasets > 1 and threads(2) > 1:
        return Overlapped()
    return InTurn()  # one thread (a chunk's share of its machine): in turn


class Overlapped(Schedule):
    """Reading and computing overlap: the next dataset is read (Arrow decodes outside the
    GIL; the service answers over the network) while the engine computes the one read
    before, in a thread. One dataset is computed at a time: a dataset's engine holds arrays
    the size of its rows and of the panel, and two big ones side by side (sentiment and
    put/call ratios) were a third of a panel's peak memory. Each dataset's inputs are freed
    as soon as its features are done."""

    def run(self, reads: Reads, work: Work, failed: dict[str, dict[str, str]]) -> dict[str, Any]:
        columns: dict[str, Any] = {}
        with (
            warnings_from_workers() as context,
            ThreadPoolExecutor(1, thread_name_prefix="mdframes-features") as pool,
        ):
            running = None
            computing = ""
            for name, inputs, bad in reads:
                failed[name] = bad
                if running is not None:
                    columns.update(running.result())
                    # The inputs were read here and freed in the worker: Arrow's allocator
                    # takes back their pages from this thread only, before the next read.
                    work.hand_back_reads(computing)
                held = [inputs]
                del inputs
                running = pool.submit(context().run, work.columns, name, held)
                computing = name
                del held
            if running is not None:
                columns.update(running.result())
            del running
        return columns


class InTurn(Schedule):
    """Each dataset read, then computed, one after the other."""

    def run(self, reads: Reads, work: Work, failed: dict[str, dict[str, str]]) -> dict[str, Any]:
        columns: dict[str, Any] = {}
        for name, inputs, bad in reads:
            failed[name] = bad
            held = [inputs]
            del inputs
            columns.update(work.columns(name, held))
        return columns


class SideBySide(Schedule):
    """Frames already in memory: nothing to read. Datasets are independent, and numpy
    releases the GIL in its sorts, searches and gathers: a thread per core computes them
    side by side (the same result in any order); a chunk sharing its machine with other
    tasks uses its share of the cores (``_threads``)."""

    def run(self, reads: Reads, work: Work, failed: dict[str, dict[str, str]]) -> dict[str, Any]:
        columns: dict[str, Any] = {}
        frames: dict[str, pd.DataFrame] = {}
        for name, inputs, bad in reads:
            frames[name], failed[name] = inputs, bad

        def next_dataset(name: str) -> dict[str, Any]:
            # The dataset's inputs leave the dict: freed as soon as its features are done.
            return work.columns(name, [frames.pop(name)])

        workers = min(len(frames), threads(_MAX_THREADS))
        if workers <= 1:
            for name in list(frames):
                columns.update(next_dataset(name))
            return columns
        # Biggest datasets first, so that no thread is left with a big one at the end.
        order = sorted(frames, key=lambda n: -len(frames[n]))
        with (
            warnings_from_threads(),
            ThreadPoolExecutor(workers, thread_name_prefix="mdframes-features") as pool,
        ):
            runs = [pool.submit(contextvars.copy_context().run, next_dataset, n) for n in order]
            for run in runs:
                columns.update(run.result())
        return columns
