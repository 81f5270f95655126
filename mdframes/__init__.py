"""mdframes: typed, validated, cached, point-in-time pandas DataFrames from a market-data service.

>>> import mdframes as md
>>> client = md.sandbox.start()
>>> df = md.load_insider_trading(["AAPL", "MSFT"])

The package reads top to bottom as the data flow: ``registry`` (what each dataset is) ->
``params`` -> ``client``/``envelope`` -> ``fetch`` -> ``records`` -> ``frame`` -> ``schemas``,
tied together by ``pipeline.load``; ``loaders`` and ``v1`` are the public functions; then the
helpers, point-in-time tools and exports. pandera, requests-cache and the plotting stack load
on first use, so ``import mdframes`` costs little more than ``import pandas``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import registry
from .client import Client, get_default_client, set_default_client
from .errors import (
    ApiError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    DataQualityWarning,
    DataValidationError,
    InvalidParameterError,
    KnowledgeTimeWarning,
    LakeBusyError,
    LakeDamagedError,
    LakeUnavailableError,
    MdframesError,
    NetworkError,
    NotFoundError,
    NotInLakeError,
    PermissionDeniedError,
    RateLimitError,
    ResponseFormatError,
    ServerError,
    SkippedSymbolsWarning,
)
from .loaders import *  # noqa: F403  (the public loaders: loaders.__all__, listed once)
from .loaders import __all__ as _loader_names

# Public functions a load does not need: their modules (and importlib.metadata, for
# __version__) load on first use, so `import mdframes` and a loader cost what loading needs.
_LAZY = {
    "app_ratings_long": "appratings",
    "datasets": "catalog",
    "describe": "catalog",
    "read_parquet": "io",
    "to_csv": "io",
    "to_excel": "io",
    "to_parquet": "io",
    "analyst_changes": "helpers",
    "congress_amount_bounds": "helpers",
    "expand_v1_forecast": "helpers",
    "insider_groups": "helpers",
    "to_arrow": "io",
    "to_polars": "io",
    "search": "lookup",
    "asof_join": "pit",
    "point_in_time": "pit",
}

# Submodules that pull in optional or heavy dependencies load on first attribute access.
_SUBMODULES = {
    "v1",  # md.v1: the v1 loaders
    "aio",  # md.aio: a coroutine for every loader
    "sandbox",
    "schemas",
    "plot",
    "cli",
    "demo",
    "docgen",
    "interop",  # now md.io (Excel, CSV, Parquet, Arrow, polars), never in __all__: stdlib's io
    "catalog",
    "features",  # md.features: point-in-time feature panels
    "lake",
}
# Modules that moved into a package: the old name still reaches it (md.export.to_excel).
_MOVED = {"export": "io", "interop": "io", "demo": "cli.demo"}
# md.Lake needs the lake extra (pyarrow, DuckDB): imported on first use.
_LAKE = {"Lake", "SyncReport"}

__all__ = [
    "ApiError",
    "AuthenticationError",
    "BadRequestError",
    "Client",
    "ConfigurationError",
    "DataQualityWarning",
    "DataValidationError",
    "InvalidParameterError",
    "KnowledgeTimeWarning",
    "Lake",
    "LakeBusyError",
    "LakeDamagedError",
    "LakeUnavailableError",
    "MdframesError",
    "NetworkError",
    "NotFoundError",
    "NotInLakeError",
    "PermissionDeniedError",
    "RateLimitError",
    "ResponseFormatError",
    "ServerError",
    "SkippedSymbolsWarning",
    "SyncReport",
    "analyst_changes",
    "app_ratings_long",
    "asof_join",
    "congress_amount_bounds",
    "datasets",
    "describe",
    "expand_v1_forecast",
    "get_default_client",
    "insider_groups",
    "point_in_time",
    "read_parquet",
    "registry",
    "search",
    "set_default_client",
    "to_csv",
    "to_excel",
    "to_parquet",
    "to_arrow",
    "to_polars",
    *_loader_names,
    *sorted(_SUBMODULES),
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value  # found once
        return value
    if name == "__version__":
        from ._version import __version__

        globals()[name] = __version__
        return __version__
    if name in _LAKE:
        return getattr(importlib.import_module(".lake", __name__), name)
    if name in _SUBMODULES or name in _MOVED:
        return importlib.import_module(f".{_MOVED.get(name, name)}", __name__)
    if not name.startswith("__"):
        # Any other module of the package (md.pit, md.export, ...): they were attributes
        # when the package imported them at once, and code written then still says so.
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise  # the module exists; something it imports is missing
    raise AttributeError(f"module 'mdframes' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from . import v1  # noqa: F401
    from .appratings import app_ratings_long  # noqa: F401
    from .catalog import datasets, describe  # noqa: F401
    from .helpers import (  # noqa: F401
        analyst_changes,
        congress_amount_bounds,
        expand_v1_forecast,
        insider_groups,
    )
    from .io import read_parquet, to_arrow, to_csv, to_excel, to_parquet, to_polars  # noqa: F401
    from .lake import Lake, SyncReport  # noqa: F401
    from .lookup import search  # noqa: F401
    from .pit import asof_join, point_in_time  # noqa: F401

    __version__: str
