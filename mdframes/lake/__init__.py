"""``md.Lake``: a point-in-time history of the service in Delta Lake tables.

Modules, in the order data flows: ``core`` (the facade: checks arguments, delegates),
``plan`` (the frozen ``SyncRequest`` and the units of work), ``pacer`` (requests within the
budget and the rate limit), ``sync`` (the driver and one dataset's run), ``modes`` (window vs
snapshot, chosen once per dataset), ``key`` (the record key, parsed once), ``versions`` (new
records, new versions, latest versions), ``frames`` (loader frames <-> Arrow), ``table`` (one
dataset's Delta table: versions, files, commits, check/repair, compaction), ``storage``
(durable files at the root; the lock until ``lease`` lands), ``layout`` (names and the dtype
record), ``upgrade`` (format-1 lakes), ``read``, ``sql`` (DuckDB views over pinned file lists),
``maintenance`` (compact, check, repair, info), ``cli``.

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
    "SyncReport": "report",
    "LakeBusyError": "storage",
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
    from .report import SyncReport  # noqa: F401
    from .storage import LakeBusyError  # noqa: F401
