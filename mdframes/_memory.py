"""Freed memory handed back to the system between the big steps of a panel.

numpy's arrays come from the C heap (glibc's ``malloc`` on Linux), Arrow's from its own
allocator (mimalloc by default). Each keeps the pages it freed for its own reuse, and the
one's free pages cannot serve the other: a panel that decodes (Arrow), computes (numpy) and
decodes again peaked a fifth higher than what it held. :func:`give_back` asks both to return
their free pages to the system, after each dataset's computation.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["give_back"]


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
    return trim  # type: ignore[no-any-return]


_TRIM = _malloc_trim()


def give_back() -> None:
    """Return the free pages of Arrow's allocator and of the C heap to the system (a
    fraction of a millisecond when there is little to return)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    if _TRIM is not None:
        _TRIM(0)
