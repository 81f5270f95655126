"""Legacy v1 loaders (``/v1/...``, key in ``?token=``).

The same pipeline as v2 — client, cache, retries, registry, schemas — with the v1 shapes:
bare bodies, numbers as strings, ``Mar 05 '24`` dates and flat ``{error, message}`` errors.
Where v2 has a field of the same meaning, the v1 frame uses the v2 column name
(``representative`` -> ``politician``, ``SECForm4Date`` -> ``filing_date``, ``main`` -> ``mid``).

>>> from mdframes import v1
>>> v1.load_house_trades("S&P 500", "NVDA", date_from="2025-01-01").columns.tolist()
['symbol', 'name', 'date', 'politician', 'transaction_type', 'amount']
"""

from __future__ import annotations

import pandas as pd

from ._typing import DateLike, Validate
from .client import Client
from .pipeline import load

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


def load_available_markets(
    *, client: Client | None = None, validate: Validate = True
) -> pd.DataFrame:
    """Market names the subscription covers (column ``market``).

    Examples
    --------
    >>> md.v1.load_available_markets().head(2)
        market
    0   DOW 30
    1  S&P 500
    """
    return load("v1/available_markets", **locals())


def load_available_tickers(
    type: str = "daily", *, client: Client | None = None, validate: Validate = True
) -> pd.DataFrame:
    """Tickers the subscription can access: ``symbol, name, market``.

    Examples
    --------
    >>> md.v1.load_available_tickers("monthly").shape[1]
    3
    """
    return load("v1/available_tickers", **locals())


def load_market_forecasts(
    market: str, type: str = "daily", *, client: Client | None = None, validate: Validate = True
) -> pd.DataFrame:
    """Forecast summary of every ticker in ``market``: expected moves as floats.

    Examples
    --------
    >>> md.v1.load_market_forecasts("S&P 500").shape
    (500, 9)
    """
    return load("v1/market_forecasts", **locals())


def load_ticker_forecast(
    ticker: str, type: str = "daily", *, client: Client | None = None, validate: Validate = True
) -> pd.DataFrame:
    """One ticker's forecast, one row per date: ``symbol, name, type, date, mid, lower, upper``
    (as :func:`mdframes.expand_v1_forecast` reads it), then ``expected_short_term,
    expected_mid_term, expected_long_term, last_updated`` on every row; the dated
    ``sentimentAnalysis`` scores go to ``attrs["sentiment"]`` (date -> float).

    Examples
    --------
    >>> md.v1.load_ticker_forecast("AAPL")[["symbol", "type", "mid"]].dtypes
    symbol    string
    type      category
    mid      float64
    dtype: object
    """
    return load("v1/ticker_forecast", **locals())


def load_sentiments(
    market: str,
    ticker: str,
    date_from: DateLike | None = None,
    date_to: DateLike | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
) -> pd.DataFrame:
    """Daily sentiment scores: ``symbol, name, date, score``.

    ``GET /v1/sentiments/{market}/{ticker}`` with ``dateFrom``/``dateTo``.

    Parameters
    ----------
    market : str
        A market name (``"S&P 500"``, see :func:`load_available_markets`).
    ticker : str
        The symbol (normalised to upper case).
    date_from, date_to : str, date, datetime or Timestamp, optional
        Inclusive window.
    client : Client, optional
    validate : bool or "strict"

    Examples
    --------
    >>> md.v1.load_sentiments("S&P 500", "AAPL", date_from="2026-01-01").columns.tolist()
    ['symbol', 'name', 'date', 'score']
    """
    return load("v1/sentiments", **locals())


def load_app_ratings(
    market: str,
    ticker: str,
    date_from: DateLike | None = None,
    date_to: DateLike | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
) -> pd.DataFrame:
    """App ratings in the v2 daily-view column names (``ios_score``,
    ``android_install_count``, ...); :func:`mdframes.app_ratings_long` gives the long form.

    ``GET /v1/appratings/{market}/{ticker}`` with ``dateFrom``/``dateTo``.

    Parameters
    ----------
    market : str
        A market name (``"S&P 500"``, see :func:`load_available_markets`).
    ticker : str
        The symbol (normalised to upper case).
    date_from, date_to : str, date, datetime or Timestamp, optional
        Inclusive window.
    client : Client, optional
    validate : bool or "strict"

    Examples
    --------
    >>> md.v1.load_app_ratings("S&P 500", "AAPL").columns.tolist()
    ['symbol', 'name', 'date', 'ios_score', 'ios_ratings_count', 'android_score',
     'android_ratings_count', 'android_install_count']
    """
    return load("v1/app_ratings", **locals())


def load_analyst_ratings(
    market: str,
    ticker: str,
    date_from: DateLike | None = None,
    date_to: DateLike | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
) -> pd.DataFrame:
    """Analyst ratings in v2 column names (``type`` -> ``action``, ``signal`` -> ``rating``).

    ``GET /v1/analystratings/{market}/{ticker}`` with ``dateFrom``/``dateTo``.

    Parameters
    ----------
    market : str
        A market name (``"S&P 500"``, see :func:`load_available_markets`).
    ticker : str
        The symbol (normalised to upper case).
    date_from, date_to : str, date, datetime or Timestamp, optional
        Inclusive window.
    client : Client, optional
    validate : bool or "strict"

    Examples
    --------
    >>> md.v1.load_analyst_ratings("S&P 500", "AAPL").columns.tolist()
    ['symbol', 'name', 'date', 'institution', 'action', 'rating', 'target_price']
    """
    return load("v1/analyst_ratings", **locals())


def load_house_trades(
    market: str,
    ticker: str,
    date_from: DateLike | None = None,
    date_to: DateLike | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
) -> pd.DataFrame:
    """US House trades, amounts as filed (:func:`mdframes.congress_amount_bounds` reads them).

    ``GET /v1/housetrades/{market}/{ticker}`` with ``dateFrom``/``dateTo``.

    Parameters
    ----------
    market : str
        A market name (``"S&P 500"``, see :func:`load_available_markets`).
    ticker : str
        The symbol (normalised to upper case).
    date_from, date_to : str, date, datetime or Timestamp, optional
        Inclusive window.
    client : Client, optional
    validate : bool or "strict"

    Examples
    --------
    >>> df = md.congress_amount_bounds(md.v1.load_house_trades("S&P 500", "NVDA"))
    >>> df[["amount_min", "amount_max"]].dtypes
    amount_min    Int64
    amount_max    Int64
    dtype: object
    """
    return load("v1/house_trades", **locals())


def load_insider_transactions(
    market: str, ticker: str, *, client: Client | None = None, validate: Validate = True
) -> pd.DataFrame:
    """Insider transactions in v2 column names (``insider``, ``transaction_type``,
    ``price_per_share``, ``total_value``, ``shares_owned``, ``filing_date`` (UTC), ``filing_url``).

    Examples
    --------
    >>> md.v1.load_insider_transactions("S&P 500", "AAPL")[["insider", "shares", "filing_date"]].dtypes
    insider                     string
    shares                       Int64
    filing_date    datetime64[ns, UTC]
    dtype: object
    """
    return load("v1/insider_transactions", **locals())
