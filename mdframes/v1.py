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


def _dated(
    name: str, market: str, ticker: str, date_from: Any, date_to: Any, **kw: Any
) -> pd.DataFrame:
    return load(name, market=market, ticker=ticker, date_from=date_from, date_to=date_to, **kw)


def load_sentiments(
    market: str,
    ticker: str,
    date_from: Any = None,
    date_to: Any = None,
    *,
    client: Client | None = None,
    validate: bool = True,
) -> pd.DataFrame:
    """Daily sentiment scores: ``symbol, name, date, score``.

    Examples
    --------
    >>> v1.load_sentiments("S&P 500", "AAPL", date_from="2026-01-01")  # doctest: +SKIP
    """
    return _dated(
        "v1/sentiments", market, ticker, date_from, date_to, client=client, validate=validate
    )


def load_app_ratings(
    market: str,
    ticker: str,
    date_from: Any = None,
    date_to: Any = None,
    *,
    client: Client | None = None,
    validate: bool = True,
) -> pd.DataFrame:
    """App ratings in the v2 daily-view columns (``ios_score``, ``android_install_count``, ...);
    :func:`mdframes.app_ratings_long` turns the raw payload into the per-app long form.

    Examples
    --------
    >>> v1.load_app_ratings("S&P 500", "AAPL")  # doctest: +SKIP
    """
    return _dated(
        "v1/app_ratings", market, ticker, date_from, date_to, client=client, validate=validate
    )


def load_analyst_ratings(
    market: str,
    ticker: str,
    date_from: Any = None,
    date_to: Any = None,
    *,
    client: Client | None = None,
    validate: bool = True,
) -> pd.DataFrame:
    """Analyst ratings: ``symbol, name, date, institution, action, rating, target_price``.

    Examples
    --------
    >>> v1.load_analyst_ratings("S&P 500", "AAPL")  # doctest: +SKIP
    """
    return _dated(
        "v1/analyst_ratings", market, ticker, date_from, date_to, client=client, validate=validate
    )


def load_house_trades(
    market: str,
    ticker: str,
    date_from: Any = None,
    date_to: Any = None,
    *,
    client: Client | None = None,
    validate: bool = True,
) -> pd.DataFrame:
    """US House trades: ``symbol, name, date, politician, transaction_type, amount`` (amount as
    filed; :func:`mdframes.congress_amount_bounds` reads it).

    Examples
    --------
    >>> md.congress_amount_bounds(v1.load_house_trades("S&P 500", "NVDA"))  # doctest: +SKIP
    """
    return _dated(
        "v1/house_trades", market, ticker, date_from, date_to, client=client, validate=validate
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
