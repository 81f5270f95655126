"""``md.Lake``: a point-in-time history of the service in plain Parquet files.

Modules, in the order data flows: ``plan`` (what a sync asks for), ``pacer`` (requests within
the budget and the rate limit), ``sync`` (fetch, compare, write, record), ``versions`` (new
records, new versions, latest versions), ``frames`` (loader frames <-> Arrow), ``store`` and
``storage`` (one dataset folder; durable file operations), ``layout`` (names and the
manifest), ``read``, ``sql`` (DuckDB views), ``maintenance`` (compact, recover, info), ``cli``.

Needs the ``lake`` extra: ``pip install 'mdframes[lake]'`` (pyarrow and DuckDB).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["Lake", "SyncReport", "LakeBusyError", "default_root"]

# Lazy, so that ``mdframes.lake.cli`` can register its commands without pyarrow installed.
_NAMES = {
    "Lake": "core",
    "default_root": "core",
    "SyncReport": "report",
    "LakeBusyError": "storage",
}


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module 'mdframes.lake' has no attribute {name!r}")
    try:
        import pyarrow  # noqa: F401
    except ImportError as exc:  # the core install stays light
        raise ImportError(f"md.Lake needs pyarrow: pip install 'mdframes[lake]' ({exc})") from None
    value = getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover
    from .core import Lake, default_root  # noqa: F401
    from .report import SyncReport  # noqa: F401
    from .storage import LakeBusyError  # noqa: F401
