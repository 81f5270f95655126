"""Freed memory handed back to the system between the big steps of a panel.

numpy's arrays come from the C heap (glibc's ``malloc`` on Linux), Arrow's from its own
allocator (mimalloc by default). Each keeps the pages it freed for its own reuse, and the
one's free pages cannot serve the other: a panel that decodes (Arrow), computes (numpy) and
decodes again peaked a fifth higher than what it held. :func:`give_back` asks both to return
their free pages to the system, after each dataset's computation.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

__all__ = ["give_back", "give_back_arrow", "reused_heap", "pieces", "PIECE"]


def _malloc_trim() -> Callable[[int], Any] | None:
    """glibc's ``malloc_trim`` (every arena's free pages back to the system), where the C
    library has it (Linux with glibc; not musl, macOS or Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    typed: Callable[[int], Any] = trim  # what argtypes and restype make of it
    return typed


_TRIM = _malloc_trim()


def give_back() -> None:
    """Return the free pages of Arrow's allocator and of the C heap to the system (a
    fraction of a millisecond when there is little to return)."""
    give_back_arrow()
    if _TRIM is not None:
        _TRIM(0)


def give_back_arrow() -> None:
    """Return the free pages of Arrow's allocator to the system, those of this thread's
    allocations: mimalloc (Arrow's default) takes back only the calling thread's pages, so
    Arrow memory allocated in one thread (a read) and freed in another (the engine's) goes
    back when the thread that allocated it calls this (~0.25 ms). Nothing to do where
    pyarrow was never imported (the core install has none)."""
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()


# glibc's mallopt parameters (malloc.h) and its default mmap threshold, which a fixed
# MALLOC_TRIM_THRESHOLD_ leaves in place (it turns off the dynamic threshold).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_DEFAULT_MMAP_THRESHOLD = 128 * 1024
_CHUNK_MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest on 64 bits
_CHUNK_TRIM_THRESHOLD = 64 * 1024 * 1024


def _mallopt() -> Callable[[int, int], int] | None:
    if _TRIM is None:
        return None
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    typed: Callable[[int, int], int] = mallopt  # what argtypes and restype make of it
    return typed


_MALLOPT = _mallopt()
_HEAP_LOCK = threading.Lock()
_HEAP_USERS = 0


def _env_bytes(name: str, default: int) -> int:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return default


@contextmanager
def reused_heap() -> Iterator[None]:
    """Run the block with the C heap keeping the pages it frees (for reuse by the block's
    next arrays), then give them all back (:func:`give_back`).

    Only where the process was started with a fixed ``MALLOC_TRIM_THRESHOLD_`` (Dask's nanny
    starts its workers with 65536): glibc then maps every allocation above 128 KiB afresh and
    unmaps it when freed, so each large NumPy temporary of a chunk faults its pages in again
    (a 250-symbol chunk: twice the page faults, 15-60 % more CPU). The process's own
    thresholds come back when the last block running in it ends."""
    global _HEAP_USERS
    fixed = "MALLOC_TRIM_THRESHOLD_" in os.environ
    if _MALLOPT is None or not fixed:
        yield
        return
    with _HEAP_LOCK:
        _HEAP_USERS += 1
        if _HEAP_USERS == 1:
            _MALLOPT(_M_MMAP_THRESHOLD, _CHUNK_MMAP_THRESHOLD)
            _MALLOPT(_M_TRIM_THRESHOLD, _CHUNK_TRIM_THRESHOLD)
    try:
        yield
    finally:
        with _HEAP_LOCK:
            _HEAP_USERS -= 1
            if _HEAP_USERS == 0:
                _MALLOPT(_M_TRIM_THRESHOLD, _env_bytes("MALLOC_TRIM_THRESHOLD_", 128 * 1024))
                _MALLOPT(
                    _M_MMAP_THRESHOLD,
                    _env_bytes("MALLOC_MMAP_THRESHOLD_", _DEFAULT_MMAP_THRESHOLD),
                )
                give_back()


# Arrays of a result's length are made this many values at a time where a whole-length
# temporary is not needed (a label's values, a hash's canonical bytes): a fresh array costs
# ~1 ms a MB in page faults on the machines measured, more than the arithmetic on it.
PIECE: Final = 1 << 15


def pieces(n: int) -> Iterator[slice]:
    """Slices of ``range(n)`` of :data:`PIECE` values each (the last shorter)."""
    return (slice(s, min(s + PIECE, n)) for s in range(0, n, PIECE))
