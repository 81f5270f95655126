"""Where the writer lease comes from: :mod:`mdframes.lake.lease` (kept as a module so the
callers' imports stay as they are)."""

from __future__ import annotations

from .lease import open_lease

__all__ = ["open_lease"]
