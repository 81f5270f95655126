"""Legacy v1 loaders (``/v1/...``, key in ``?token=``).

The same pipeline as v2 — client, cache, retries, registry, schemas — with the v1 shapes:
bare bodies, numbers as strings, ``Mar 05 '24`` dates and flat ``{error, message}`` errors.
Where v2 has a field of the same meaning, the v1 frame uses the v2 column name
(``representative`` -> ``politician``, ``SECForm4Date`` -> ``filing_date``, ``main`` -> ``mid``).

>>> from mdframes import v1
>>> v1.load_house_trades("S&P 500", "NVDA", date_from="2025-01-01")   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .client import Client
from .loaders import load
from .registry import REGISTRY

__all__ = [
    "load_available_markets",
    "load_available_tickers",
    "load_market_forecasts",
    "load_ticker_forecast",
    "load_sentiments",
    "load_app_ratings",
    "load_analyst_ratings",
    "load_house_trades",
    "load_insider_transactions",
]


def load_available_markets(*, client: Client | None = None, validate: bool = True) -> pd.DataFrame:
    """Market names the subscription covers (column ``market``).

    Examples
    --------
    >>> v1.load_available_markets()  # doctest: +SKIP
    """
    return load("v1/available_markets", client=client, validate=validate)


def load_available_tickers(
    type: str = "daily", *, client: Client | None = None, validate: bool = True
) -> pd.DataFrame:
    """Tickers the subscription can access: ``symbol, name, market``.

    Examples
    --------
    >>> v1.load_available_tickers("monthly")  # doctest: +SKIP
    """
    return load("v1/available_tickers", type=type, client=client, validate=validate)


def load_market_forecasts(
    market: str, type: str = "daily", *, client: Client | None = None, validate: bool = True
) -> pd.DataFrame:
    """Forecast summary of every ticker in ``market``: expected moves as floats.

    Examples
    --------
    >>> v1.load_market_forecasts("S&P 500")  # doctest: +SKIP
    """
    return load("v1/market_forecasts", market=market, type=type, client=client, validate=validate)


def load_ticker_forecast(
    ticker: str, type: str = "daily", *, client: Client | None = None, validate: bool = True
) -> pd.DataFrame:
    """One ticker's forecast, one row per date: ``symbol, name, type, date, mid, lower, upper``
    (expanded with :func:`mdframes.expand_v1_forecast`); expected moves in ``attrs["metadata"]``.

    Examples
    --------
    >>> v1.load_ticker_forecast("AAPL")  # doctest: +SKIP
    """
    return load("v1/ticker_forecast", ticker=ticker, type=type, client=client, validate=validate)


def _dated_loader(name: str, summary: str, example: str) -> Any:
    """A loader for one of the four v1 endpoints that take market, ticker and a date window."""
    ds = REGISTRY[name]

    def loader(
        market: str,
        ticker: str,
        date_from: Any = None,
        date_to: Any = None,
        *,
        client: Client | None = None,
        validate: bool = True,
    ) -> pd.DataFrame:
        return load(
            name,
            market=market,
            ticker=ticker,
            date_from=date_from,
            date_to=date_to,
            client=client,
            validate=validate,
        )

    loader.__name__ = loader.__qualname__ = "load_" + name.split("/", 1)[1]
    loader.__module__ = __name__
    loader.__doc__ = f"""{summary}

    ``GET {ds.path}`` (``dateFrom``/``dateTo``); columns: ``{", ".join(ds.columns)}``.

    Examples
    --------
    >>> {example}  # doctest: +SKIP
    """
    return loader


load_sentiments = _dated_loader(
    "v1/sentiments",
    "Daily sentiment scores.",
    'v1.load_sentiments("S&P 500", "AAPL", date_from="2026-01-01")',
)
load_app_ratings = _dated_loader(
    "v1/app_ratings",
    "App ratings in the v2 daily-view column names (``ios_score``, ``android_install_count``,\n"
    "    ...); :func:`mdframes.app_ratings_long` gives the per-app long form.",
    'v1.load_app_ratings("S&P 500", "AAPL")',
)
load_analyst_ratings = _dated_loader(
    "v1/analyst_ratings",
    "Analyst ratings in v2 column names (``type`` -> ``action``, ``signal`` -> ``rating``).",
    'v1.load_analyst_ratings("S&P 500", "AAPL")',
)
load_house_trades = _dated_loader(
    "v1/house_trades",
    "US House trades, amounts as filed (:func:`mdframes.congress_amount_bounds` reads them).",
    'md.congress_amount_bounds(v1.load_house_trades("S&P 500", "NVDA"))',
)


def load_insider_transactions(
    market: str, ticker: str, *, client: Client | None = None, validate: bool = True
) -> pd.DataFrame:
    """Insider transactions in v2 column names (``insider``, ``transaction_type``,
    ``price_per_share``, ``total_value``, ``shares_owned``, ``filing_date`` (UTC), ``filing_url``).

    Examples
    --------
    >>> v1.load_insider_transactions("S&P 500", "AAPL")  # doctest: +SKIP
    """
    return load(
        "v1/insider_transactions", market=market, ticker=ticker, client=client, validate=validate
    )
