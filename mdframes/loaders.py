"""The public v2 loaders: one explicit function per endpoint, each a thin call into
:func:`mdframes.pipeline.load`.

Signatures, defaults and bounds mirror the registry (``tests/test_structure.py`` checks that
they agree), so editors and type checkers see real parameters and the docs need no plugin.
"""

from __future__ import annotations

import pandas as pd

from ._typing import DateLike, Errors, Symbols, Validate
from .client import Client
from .pipeline import load
from .registry import RECENT_DATASETS, SCREENER_DATASETS, resolve_name, views

# Each loader's body is ``load(<dataset>, **locals())``: its arguments are exactly the
# pipeline's keywords, so nothing can be forgotten on the way through.

__all__ = [
    "load",
    "load_forecast",
    "load_sentiment",
    "load_news",
    "load_analyst_ratings",
    "load_put_call_ratio",
    "load_insider_trading",
    "load_congress_trades",
    "load_lobbying",
    "load_government_contracts",
    "load_patent_filings",
    "load_app_ratings",
    "load_professionalnet",
    "load_forum_mentions",
    "load_tickers",
    "load_markets",
    "load_regions",
    "load_screener",
    "load_recent",
]


def load_sentiment(
    symbols: Symbols,
    start: DateLike | None = None,
    end: DateLike | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Daily news-sentiment scores in [-1, 1].

    Columns ``symbol, name, date, score``.

    Parameters
    ----------
    symbols : str or list of str
        Whose scores; a list is fetched concurrently, in this order.
    start, end : str, date, datetime or Timestamp, optional
        Inclusive window on the score date.
    limit : int, optional
        At most this many scores per symbol (>= 1).
    client, validate, errors
        As for :func:`mdframes.load` (``validate="strict"`` raises on soft rules too).

    Examples
    --------
    >>> df = md.load_sentiment("AAPL", start="2026-01-01")
    >>> df.dtypes
    symbol            string
    name              string
    date      datetime64[ns]
    score            float64
    dtype: object
    """
    return load("sentiment", **locals())


def load_news(
    symbols: Symbols,
    start: DateLike | None = None,
    end: DateLike | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """News articles for one or many symbols.

    Columns ``symbol, name, date, headline, source, url, sentiment`` plus every field the
    service adds.

    Parameters
    ----------
    symbols : str or list of str
        Whose articles; a list is fetched concurrently, in this order.
    start, end : str, date, datetime or Timestamp, optional
        Inclusive window on the article date.
    limit : int, optional
        At most this many articles per symbol (>= 1).
    client, validate, errors
        As for :func:`mdframes.load` (``validate="strict"`` raises on soft rules too).

    Examples
    --------
    >>> df = md.load_news(["AAPL", "MSFT"], limit=50)
    >>> df.groupby("symbol").size()
    symbol
    AAPL    50
    MSFT    50
    dtype: int64
    """
    return load("news", **locals())


def load_analyst_ratings(
    symbols: Symbols,
    start: DateLike | None = None,
    end: DateLike | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Analyst rating actions with price targets (as currency text).

    Columns ``symbol, name, date, institution, action, rating, target_price``;
    :func:`mdframes.analyst_changes` parses the text into numbers.

    Parameters
    ----------
    symbols : str or list of str
        Whose rating actions; a list is fetched concurrently, in this order.
    start, end : str, date, datetime or Timestamp, optional
        Inclusive window on the action date.
    limit : int, optional
        At most this many rating actions per symbol (>= 1).
    client, validate, errors
        As for :func:`mdframes.load` (``validate="strict"`` raises on soft rules too).

    Examples
    --------
    >>> df = md.load_analyst_ratings("AAPL")
    >>> df[["date", "institution", "action", "rating", "target_price"]].tail(2)
             date  institution      action  ...
    """
    return load("analyst_ratings", **locals())


def load_put_call_ratio(
    symbols: Symbols,
    start: DateLike | None = None,
    end: DateLike | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Daily put/call ratio with options volumes and the closing price.

    Columns ``symbol, name, date, ratio, call_volume, put_volume, total_volume, price``.
    The service truncates calls and puts separately, so ``total_volume`` may exceed their
    sum by 1 (consistent, not a warning).

    Parameters
    ----------
    symbols : str or list of str
        Whose daily ratios; a list is fetched concurrently, in this order.
    start, end : str, date, datetime or Timestamp, optional
        Inclusive window on the trading date.
    limit : int, optional
        At most this many daily ratios per symbol (>= 1).
    client, validate, errors
        As for :func:`mdframes.load` (``validate="strict"`` raises on soft rules too).

    Examples
    --------
    >>> df = md.load_put_call_ratio("TSLA", end="2026-06-30")
    >>> df.columns.tolist(), df["date"].max()
    (['symbol', 'name', 'date', 'ratio', 'call_volume', 'put_volume', 'total_volume', 'price'],
     Timestamp('2026-06-30 00:00:00'))
    """
    return load("put_call_ratio", **locals())


def load_insider_trading(
    symbols: Symbols,
    start: DateLike | None = None,
    end: DateLike | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Insider transactions from Form 4 filings.

    ``filing_date`` is when the filing became public: the point-in-time anchor
    (:func:`mdframes.point_in_time`).

    Parameters
    ----------
    symbols : str or list of str
        Whose transactions; a list is fetched concurrently, in this order.
    start, end : str, date, datetime or Timestamp, optional
        Inclusive window on the transaction date.
    limit : int, optional
        At most this many transactions per symbol (>= 1).
    client, validate, errors
        As for :func:`mdframes.load` (``validate="strict"`` raises on soft rules too).

    Examples
    --------
    >>> df = md.load_insider_trading(["AAPL", "NVDA"])
    >>> df["symbol"].unique().tolist()
    ['AAPL', 'NVDA']
    """
    return load("insider_trading", **locals())


def load_lobbying(
    symbols: Symbols,
    start: DateLike | None = None,
    end: DateLike | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Corporate lobbying filings.

    With ``limit=None`` the whole ``start``..``end`` window is returned, walked in requests
    of 500 and de-duplicated by ``filing_uuid``.

    Parameters
    ----------
    symbols : str or list of str
        Whose filings; a list is fetched concurrently, in this order.
    start, end : str, date, datetime or Timestamp, optional
        Inclusive window on the filing date.
    limit : int, optional
        At most this many filings per symbol (1 to 500).
    client, validate, errors
        As for :func:`mdframes.load` (``validate="strict"`` raises on soft rules too).

    Examples
    --------
    >>> df = md.load_lobbying("MSFT", start="2024-01-01")
    >>> df[["date", "quarter", "client_name", "income", "expenses"]].dtypes
    date           datetime64[ns]
    quarter              category
    client_name            string
    income                float64
    expenses              float64
    dtype: object
    """
    return load("lobbying", **locals())


def load_government_contracts(
    symbols: Symbols,
    start: DateLike | None = None,
    end: DateLike | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Federal contract awards, latest reported state per award.

    With ``limit=None`` the whole window (on ``start_date``) is returned, walked in requests
    of 500 and de-duplicated by ``award_id``.

    Parameters
    ----------
    symbols : str or list of str
        Whose awards; a list is fetched concurrently, in this order.
    start, end : str, date, datetime or Timestamp, optional
        Inclusive window on the award start date.
    limit : int, optional
        At most this many awards per symbol (1 to 500).
    client, validate, errors
        As for :func:`mdframes.load` (``validate="strict"`` raises on soft rules too).

    Examples
    --------
    >>> df = md.load_government_contracts("LMT")
    >>> df[["award_id", "award_amount", "start_date", "end_date"]].dtypes
    award_id                string
    award_amount           float64
    start_date      datetime64[ns]
    end_date        datetime64[ns]
    dtype: object
    """
    return load("government_contracts", **locals())


def load_patent_filings(
    symbols: Symbols,
    start: DateLike | None = None,
    end: DateLike | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Granted patents; the window filters on the grant date.

    With ``limit=None`` the whole window is returned, walked in requests of 500 and
    de-duplicated by ``patent_id``.

    Parameters
    ----------
    symbols : str or list of str
        Whose patents; a list is fetched concurrently, in this order.
    start, end : str, date, datetime or Timestamp, optional
        Inclusive window on the grant date.
    limit : int, optional
        At most this many patents per symbol (1 to 500).
    client, validate, errors
        As for :func:`mdframes.load` (``validate="strict"`` raises on soft rules too).

    Examples
    --------
    >>> df = md.load_patent_filings("AAPL", start="2025-01-01")
    >>> bool(df["patent_date"].min() >= pd.Timestamp("2025-01-01"))
    True
    """
    return load("patent_filings", **locals())


def load_professionalnet(
    symbols: Symbols,
    start: DateLike | None = None,
    end: DateLike | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Professional-network metrics: employees, followers, open jobs.

    Columns ``symbol, name, date, employee_count, follower_count, job_count`` plus every
    field the service adds.

    Parameters
    ----------
    symbols : str or list of str
        Whose daily metrics; a list is fetched concurrently, in this order.
    start, end : str, date, datetime or Timestamp, optional
        Inclusive window on the metric date.
    limit : int, optional
        At most this many daily metrics per symbol (>= 1).
    client, validate, errors
        As for :func:`mdframes.load` (``validate="strict"`` raises on soft rules too).

    Examples
    --------
    >>> md.load_professionalnet("AAPL").columns.tolist()
    ['symbol', 'name', 'date', 'employee_count', 'follower_count', 'job_count']
    """
    return load("professionalnet", **locals())


def load_forum_mentions(
    symbols: Symbols,
    start: DateLike | None = None,
    end: DateLike | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Forum mentions per subreddit, timestamped (UTC).

    Columns ``symbol, name, date`` (UTC timestamp), ``subreddit, mentions`` plus every field
    the service adds.

    Parameters
    ----------
    symbols : str or list of str
        Whose counts; a list is fetched concurrently, in this order.
    start, end : str, date, datetime or Timestamp, optional
        Inclusive window on the count time.
    limit : int, optional
        At most this many counts per symbol (>= 1).
    client, validate, errors
        As for :func:`mdframes.load` (``validate="strict"`` raises on soft rules too).

    Examples
    --------
    >>> md.load_forum_mentions("GME").columns.tolist()
    ['symbol', 'name', 'date', 'subreddit', 'mentions']
    """
    return load("forum_mentions", **locals())


def load_forecast(
    symbols: Symbols,
    type: str = "daily",
    *,
    client: Client | None = None,
    validate: Validate = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Forward price forecasts, one row per forecast date.

    Columns ``symbol, name, type, date, mid, lower, upper``, then the forecast's own numbers
    repeated on each of its rows: ``expected_short_term, expected_mid_term,
    expected_long_term, lower_bound_change, upper_bound_change`` and ``last_updated`` (UTC).
    One symbol and many give the same shape. Forecasts run forward only: keep a history with
    :class:`mdframes.Lake`.

    Parameters
    ----------
    symbols : str or list of str
        One symbol or many.
    type : {"daily", "monthly"}
        10 trading days or 12 months ahead.
    client : Client, optional
        Defaults to :func:`mdframes.get_default_client`.
    validate : bool or "strict"
        Hard rules raise; soft rules warn once and fill ``df.attrs["quality"]``
        (``"strict"``: soft rules raise too; ``False``: no checks).
    errors : {"raise", "skip"}
        What one failing symbol does.

    Examples
    --------
    >>> df = md.load_forecast("AAPL", type="monthly")
    >>> df[["date", "mid", "lower", "upper"]].dtypes
    date     datetime64[ns]
    mid             float64
    lower           float64
    upper           float64
    dtype: object
    """
    return load("forecast", **locals())


def load_congress_trades(
    symbols: Symbols,
    chamber: str = "both",
    start: DateLike | None = None,
    end: DateLike | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """US House and/or Senate member trades.

    ``start``/``end`` filter on the trade date, not the disclosure date. Older responses
    without ``owner``/``amountRaw``/``amountFlag`` load with those columns as NA.

    Parameters
    ----------
    symbols : str or list of str
        One symbol or many.
    chamber : {"both", "house", "senate"}
        ``"both"`` asks each chamber (two requests per symbol).
    start, end : str, date, datetime or Timestamp, optional
        Inclusive window on the trade date.
    limit : int, optional
        Maximum records per chamber (>= 1).
    client : Client, optional
        Defaults to :func:`mdframes.get_default_client`.
    validate : bool or "strict"
        Hard rules raise; soft rules warn once and fill ``df.attrs["quality"]``
        (``"strict"``: soft rules raise too; ``False``: no checks).
    errors : {"raise", "skip"}
        What one failing symbol does; a skipped symbol keeps neither chamber's rows.

    Examples
    --------
    >>> df = md.load_congress_trades("NVDA", chamber="senate")
    >>> md.congress_amount_bounds(df)[["amount", "amount_min", "amount_max"]].head(1)
                 amount  amount_min  amount_max
    0  $1,001 - $15,000        1001       15000
    """
    return load("congress_trades", **locals())


def load_app_ratings(
    symbols: Symbols,
    start: DateLike | None = None,
    end: DateLike | None = None,
    limit: int | None = None,
    view: str = "apps",
    *,
    client: Client | None = None,
    validate: Validate = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Mobile app ratings, in one of two views of the same records.

    ``view="apps"``: one row per app per platform per date (``symbol, name, cik, platform,
    app_id, app_name, date, score, ratings_count, install_count``). ``view="daily"``: one row
    per date (``symbol, name, date, ios_score, ios_ratings_count, android_score,
    android_ratings_count, android_install_count``). History begins 2026-09-03.

    Parameters
    ----------
    symbols : str or list of str
        One symbol or many.
    start, end : str, date, datetime or Timestamp, optional
        Inclusive window.
    limit : int, optional
        Maximum app-date records (1 to 500); without it the whole window is walked.
    view : {"apps", "daily"}
        The shape of the frame.
    client : Client, optional
        Defaults to :func:`mdframes.get_default_client`.
    validate : bool or "strict"
        Hard rules raise; soft rules warn once and fill ``df.attrs["quality"]``
        (``"strict"``: soft rules raise too; ``False``: no checks).
    errors : {"raise", "skip"}
        What one failing symbol does.

    Examples
    --------
    >>> df = md.load_app_ratings("AAPL", start="2026-09-03", view="daily")
    >>> df.columns.tolist()
    ['symbol', 'name', 'date', 'ios_score', 'ios_ratings_count', 'android_score',
     'android_ratings_count', 'android_install_count']
    """
    by_view = views("app_ratings")
    view = resolve_name(view, by_view, what="view", parameter="view", dataset="app_ratings")
    return load(
        by_view[view],
        symbols,
        start=start,
        end=end,
        limit=limit,
        client=client,
        validate=validate,
        errors=errors,
    )


def load_tickers(
    type: str | None = None,
    market: str | None = None,
    region: str | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
) -> pd.DataFrame:
    """Tickers with predictions available, optionally filtered (in the service's order).

    Parameters
    ----------
    type : {"daily", "monthly"}, optional
    market, region : str, optional
        A market or region name of :func:`load_markets`.
    limit : int, optional
        Maximum tickers (>= 1).
    client : Client, optional
        Defaults to :func:`mdframes.get_default_client`.
    validate : bool or "strict"
        Hard rules raise; soft rules warn once and fill ``df.attrs["quality"]``
        (``"strict"``: soft rules raise too; ``False``: no checks).

    Examples
    --------
    >>> md.load_tickers(market="S&P 500").columns.tolist()
    ['symbol', 'name']
    """
    return load("tickers", **locals())


def load_markets(*, client: Client | None = None, validate: Validate = True) -> pd.DataFrame:
    """Markets (``name``, the value of the ``market`` filter) and their ``region``.

    Examples
    --------
    >>> md.load_markets().head(2)
          name region
    0   DOW 30     US
    1  S&P 500     US
    """
    return load("markets", **locals())


def load_regions(*, client: Client | None = None, validate: Validate = True) -> pd.DataFrame:
    """Markets grouped by region (every field the service returns is kept).

    Examples
    --------
    >>> md.load_regions().set_index("region").loc["UK", "markets"]
    ['UK FTSE 100']
    """
    return load("regions", **locals())


def _cross(kind: str, names: tuple[str, ...], dataset: str) -> str:
    tail = resolve_name(dataset, names, what=f"{kind} dataset", parameter="dataset")
    return f"{kind}/{tail}"


def load_screener(
    dataset: str,
    market: str | None = None,
    region: str | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
) -> pd.DataFrame:
    """One dataset across many tickers; the summary goes to ``attrs["summary"]``.

    Parameters
    ----------
    dataset : str
        The path tail: ``"sentiment"``, ``"insider-trading"``, ``"congress/house"``,
        ``"predictions/daily"``, ... (``_`` and ``-`` interchangeable). Sentiment,
        professionalnet and app-ratings need ``market`` or ``region``.
    market, region : str, optional
        A market or region name of :func:`load_markets`.
    limit : int, optional
        Maximum rows (1 to 20000).
    client : Client, optional
        Defaults to :func:`mdframes.get_default_client`.
    validate : bool or "strict"
        Hard rules raise; soft rules warn once and fill ``df.attrs["quality"]``
        (``"strict"``: soft rules raise too; ``False``: no checks).

    Examples
    --------
    >>> df = md.load_screener("sentiment", region="US", limit=500)
    >>> sorted(df.attrs["summary"])
    ['average_score', 'bearish_count', 'bullish_count', 'neutral_count', 'total_tickers']
    """
    name = _cross("screener", SCREENER_DATASETS, dataset)
    return load(name, market=market, region=region, limit=limit, client=client, validate=validate)


def load_recent(
    dataset: str,
    market: str | None = None,
    region: str | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
) -> pd.DataFrame:
    """Latest entries across all tickers (``"news"`` or ``"analyst-ratings"``).

    Parameters
    ----------
    dataset : {"news", "analyst-ratings"}
    market, region : str, optional
        A market or region name of :func:`load_markets`.
    limit : int, optional
        Maximum rows (1 to 20000).
    client : Client, optional
        Defaults to :func:`mdframes.get_default_client`.
    validate : bool or "strict"
        Hard rules raise; soft rules warn once and fill ``df.attrs["quality"]``
        (``"strict"``: soft rules raise too; ``False``: no checks).

    Examples
    --------
    >>> md.load_recent("news", limit=200).attrs["summary"]
    {'total_articles': 200, 'total_tickers': ..., 'average_sentiment': ...}
    """
    name = _cross("recent", RECENT_DATASETS, dataset)
    return load(name, market=market, region=region, limit=limit, client=client, validate=validate)
