"""``md.Lake``: a point-in-time history of the service in plain Parquet files.

Modules, in the order data flows: ``plan`` (what a sync asks for), ``pacer`` (requests within
the budget and the rate limit), ``sync`` (fetch, compare, write, record), ``versions`` (new
records, new versions, latest versions), ``frames`` (loader frames <-> Arrow), ``store`` and
``storage`` (one dataset folder; durable file operations), ``layout`` (names and the
manifest), ``read``, ``sql`` (DuckDB views), ``maintenance`` (compact, recover, info), ``cli``.

Needs the ``lake`` extra: ``pip install 'mdframes[lake]'`` (pyarrow and DuckDB).
"""

from __future__ import annotations

try:
    import pyarrow  # noqa: F401
except ImportError as exc:  # pragma: no cover - the core install stays light
    raise ImportError(f"md.Lake needs pyarrow: pip install 'mdframes[lake]' ({exc})") from None

from .core import Lake, default_root
from .report import SyncReport
from .storage import LakeBusyError

__all__ = ["Lake", "SyncReport", "LakeBusyError", "default_root"]
