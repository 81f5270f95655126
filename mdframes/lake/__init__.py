"""``md.Lake``: a point-in-time history of the service in Delta Lake tables.

The reader-facing rooms are here: ``core`` (the ``Lake`` facade: checks arguments, delegates),
``read``, ``changes``, ``sql`` (DuckDB views over pinned file lists), ``coverage``, ``tables``,
``maintenance`` (compact, check, repair, info), ``upgrade`` (format-1 lakes), ``panels`` (the
features' role), ``display``, ``cli``. Three sub-wings hold the rest: ``table/`` (one dataset's
Delta table: the ``DatasetTable`` facade and its roles), ``sync/`` (the requests, the modes
window vs snapshot, versions, the run's state, the pacer, the report) and ``store/`` (where the
lake lives and who may write: location, storage, lease, faults).

Needs the ``lake`` extra: ``pip install 'mdframes[lake]'`` (deltalake, pyarrow and DuckDB).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["Lake", "SyncReport", "LakeBusyError", "default_root"]

# Lazy, so that ``mdframes.lake.cli`` can register its commands without pyarrow installed.
_NAMES = {
    "Lake": "core",
    "default_root": "core",
    "SyncReport": "sync.report",
    "LakeBusyError": "store.storage",
}


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module 'mdframes.lake' has no attribute {name!r}")
    from .._deps import require

    require("pyarrow", "lake", "md.Lake")  # the core install stays light
    value = getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover
    from .core import Lake, default_root  # noqa: F401
    from .store.storage import LakeBusyError  # noqa: F401
    from .sync.report import SyncReport  # noqa: F401
