"""The lake's storage meets the writer lease: :func:`open_lease` over a ``Storage``."""

from __future__ import annotations

from typing import Any

from .lease import Lease
from .lease import open_lease as _open_lease
from .location import parse_root

__all__ = ["open_lease"]


def open_lease(storage: Any, owner: str = "") -> Lease:
    """The writer lease of the lake ``storage`` is rooted at (its root and object-store
    options resolved the way the lease reads them)."""
    return _open_lease(parse_root(storage.root, storage.options or None), owner=owner or "writer")
