"""mdframes: typed, validated, cached, point-in-time pandas DataFrames from a market-data service.

>>> import mdframes as md
>>> with md.sandbox.running() as client:           # doctest: +SKIP
...     df = md.load_insider_trading(["AAPL", "MSFT"], client=client)

Names are imported lazily so that ``import mdframes`` costs little more than
``import pandas``; pandera, requests-cache and the plotting stack load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    ApiError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    DataValidationError,
    InvalidParameterError,
    MdframesError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ResponseFormatError,
    ServerError,
)

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "Client": "client",
    "set_default_client": "client",
    "get_default_client": "client",
    "load_forecast": "loaders",
    "load_sentiment": "loaders",
    "load_news": "loaders",
    "load_analyst_ratings": "loaders",
    "load_put_call_ratio": "loaders",
    "load_insider_trading": "loaders",
    "load_congress_trades": "loaders",
    "load_lobbying": "loaders",
    "load_government_contracts": "loaders",
    "load_patent_filings": "loaders",
    "load_app_ratings": "loaders",
    "load_professionalnet": "loaders",
    "load_forum_mentions": "loaders",
    "load_tickers": "loaders",
    "load_markets": "loaders",
    "load_regions": "loaders",
    "load_screener": "loaders",
    "load_recent": "loaders",
    "load": "loaders",
    "congress_amount_bounds": "helpers",
    "insider_groups": "helpers",
    "app_ratings_long": "helpers",
    "expand_v1_forecast": "helpers",
    "point_in_time": "pit",
    "asof_join": "pit",
    "to_excel": "export",
    "to_csv": "export",
    "to_parquet": "export",
    "read_parquet": "export",
    "Lake": "lake",
    "SyncReport": "lake",
}
_SUBMODULES = {"sandbox", "schemas", "registry", "v1", "plot", "export", "helpers", "pit", "cli"}

__all__ = [
    "ApiError",
    "AuthenticationError",
    "BadRequestError",
    "ConfigurationError",
    "DataValidationError",
    "InvalidParameterError",
    "MdframesError",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitError",
    "ResponseFormatError",
    "ServerError",
    *sorted(_LAZY),
    *sorted(_SUBMODULES),
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'mdframes' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from . import export, helpers, pit, registry, sandbox, schemas, v1  # noqa: F401
    from .client import Client, get_default_client, set_default_client  # noqa: F401
    from .export import read_parquet, to_csv, to_excel, to_parquet  # noqa: F401
    from .helpers import (  # noqa: F401
        app_ratings_long,
        congress_amount_bounds,
        expand_v1_forecast,
        insider_groups,
    )
    from .lake import Lake, SyncReport  # noqa: F401
    from .loaders import (  # noqa: F401
        load,
        load_analyst_ratings,
        load_app_ratings,
        load_congress_trades,
        load_forecast,
        load_forum_mentions,
        load_government_contracts,
        load_insider_trading,
        load_lobbying,
        load_markets,
        load_news,
        load_patent_filings,
        load_professionalnet,
        load_put_call_ratio,
        load_recent,
        load_regions,
        load_screener,
        load_sentiment,
        load_tickers,
    )
    from .pit import asof_join, point_in_time  # noqa: F401
