"""Where the writer lease comes from: :mod:`mdframes.lake.lease` when it is installed, else
the lock of :mod:`mdframes.lake.storage` behind the same interface."""

from __future__ import annotations

try:
    from .lease import open_lease
except ImportError:  # pragma: no cover - until lease.py lands
    from .storage import open_lease

__all__ = ["open_lease"]
