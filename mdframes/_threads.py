"""How many threads mdframes' own pools may use: the machine's cores, or a share of them.

A panel run serially uses every core (a thread per dataset, files and text decoded in
threads). A chunk of a panel on an executor shares its machine with the executor's other
tasks: with as many tasks as cores, more threads per task only make the tasks take turns
(more CPU for the same work). :func:`sharing` sets the share for the code it runs, and every
pool of the package sizes itself with :func:`threads` (a context variable: the threads a
pool starts with ``contextvars.copy_context()`` see the same share).
"""

from __future__ import annotations

import contextvars
import functools
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

__all__ = ["cores", "threads", "sharing", "shared_pool"]

_SHARE: contextvars.ContextVar[int] = contextvars.ContextVar("mdframes_threads", default=0)


@functools.cache
def cores() -> int:
    """This machine's cores (``os.cpu_count()``, asked once: it reads ``/sys`` each time, and
    every pool of every read asks)."""
    return os.cpu_count() or 1


def threads(most: int | None = None) -> int:
    """Threads a pool may start here: the cores, or this task's share of them (at least 1),
    at most ``most``."""
    share = _SHARE.get()
    budget = share if share > 0 else cores()
    return max(1, min(budget, most) if most is not None else budget)


@contextmanager
def sharing(tasks: int) -> Iterator[int]:
    """Run the block as one of ``tasks`` tasks that run at once on this machine: its pools
    use ``cores() // tasks`` threads (at least 1). ``tasks <= 1``: every core. Yields the
    threads the block may use."""
    budget = max(1, cores() // tasks) if tasks > 1 else 0
    token = _SHARE.set(budget)
    try:
        yield threads()
    finally:
        _SHARE.reset(token)


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def shared_pool() -> ThreadPoolExecutor:
    """A thread pool kept for the process, for work split among a few threads per call (a
    read's files): its threads start once, not per read. A forked child makes its own
    (threads do not survive a fork); callers size their share with :func:`threads`."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            # Not named "mdframes...": those are a load's, which ends them all.
            _POOL = ThreadPoolExecutor(max(cores(), 4), thread_name_prefix="md-pool")
        return _POOL


def _forget_pool() -> None:
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)
