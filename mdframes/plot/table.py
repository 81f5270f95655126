"""Which chart draws which dataset: one declarative entry per registry name.

:func:`mdframes.plot.chart` reads a frame's ``attrs["dataset"]``, finds its :class:`Chart`
here and hands it to the drawer of its ``kind`` for the chosen backend. A new per-symbol
dataset or screener in :mod:`mdframes.registry` needs an entry here; a test checks that the
keys are exactly the registry's per-symbol v2 datasets and screeners. Private to
:mod:`mdframes.plot`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..registry import RECENT_DATASETS, SCREENER_DATASETS

__all__ = ["Chart", "CHARTS", "KINDS"]

# What each kind draws (both backends); the docs' gallery quotes these.
KINDS: dict[str, str] = {
    "fan": "the forecast mid line and its lower..upper band, per symbol (and type)",
    "bands": "the score per symbol over the five sentiment bands",
    "ratio": "the put/call ratio with the 0.7 and 1.2 levels and the price on a second axis "
    "(interactive: a panel per symbol)",
    "insider": "one panel per symbol: buying above zero, selling below (matplotlib: summed "
    "per month; interactive: each transaction)",
    "congress": "one panel per symbol: each trade's amount range, purchases and sales",
    "apps": "one panel per symbol: each platform's biggest app over the rating bands",
    "events": "one marker per record at its date, a colour per symbol",
    "metrics": "one panel per measure, a line per symbol",
    "totals": "the sum per symbol per week, a line per symbol",
    "ranking": "a bar per symbol (or per value of a column), the largest first, at most 25",
}


@dataclass(frozen=True)
class Chart:
    """How one dataset is drawn.

    ``time``: the x column; ``value``: the y column(s) (for a ranking, candidates: the first
    the frame has wins, else rows are counted); ``hover``: the record's main fields shown on
    hover (interactive backend); ``label``: the y axis; ``log``: a log y axis; ``bands``:
    ``"sentiment"`` draws the sentiment bands behind the markers; ``running``: y is each
    symbol's running count of records (``value`` unused); ``agg``: how a ranking combines a
    symbol's rows (``"mean"``, ``"sum"``, ``"last"``, ``"count"``); ``by``: what a ranking's
    bars are (a symbol, or e.g. a politician where a screener lists one row per symbol).
    """

    kind: str
    title: str
    time: str = "date"
    value: tuple[str, ...] = ()
    hover: tuple[str, ...] = ()
    label: str = ""
    log: bool = False
    bands: str = ""
    running: bool = False
    agg: str = "mean"
    by: str = "symbol"


# The daily view of app ratings is the same chart of the same columns.
_APPS = Chart("apps", "app ratings", hover=("app_name", "score", "ratings_count"))

_PER_SYMBOL: dict[str, Chart] = {
    "forecast": Chart(
        "fan",
        "forecast",
        value=("mid", "lower", "upper"),
        hover=("type", "mid", "lower", "upper"),
        label="price",
    ),
    "sentiment": Chart("bands", "sentiment", value=("score",), hover=("score",)),
    "news": Chart(
        "events",
        "news sentiment per article",
        value=("sentiment",),
        hover=("headline", "source", "sentiment"),
        label="article sentiment (-1 .. 1)",
        bands="sentiment",
    ),
    "analyst_ratings": Chart(
        "events",
        "analyst price targets",
        value=("target_price_to",),
        hover=("institution", "action", "rating", "target_price"),
        label="price target (USD)",
    ),
    "put_call_ratio": Chart(
        "ratio",
        "put/call ratio",
        value=("ratio", "price"),
        hover=("ratio", "call_volume", "put_volume", "price"),
    ),
    "insider_trading": Chart(
        "insider",
        "insider transactions",
        value=("total_value",),
        hover=("insider", "relationship", "transaction_type", "shares", "price_per_share"),
        label="total value (USD; sales below zero)",
    ),
    "congress_trades": Chart(
        "congress",
        "congress trades",
        hover=("politician", "chamber", "transaction_type", "amount", "owner", "disclosure_date"),
        label="amount (USD, min..max)",
        log=True,
    ),
    "lobbying": Chart(
        "events",
        "lobbying filings",
        value=("income", "expenses"),
        hover=("quarter", "client_name", "registrant_name", "income", "expenses"),
        label="income or expenses per filing (USD)",
        log=True,
    ),
    "government_contracts": Chart(
        "events",
        "government contract awards",
        time="start_date",
        value=("award_amount",),
        hover=("award_id", "awarding_agency", "recipient_name", "award_amount", "end_date"),
        label="award amount (USD)",
        log=True,
    ),
    "patent_filings": Chart(
        "events",
        "patents granted",
        time="patent_date",
        hover=("patent_id", "title", "type", "num_claims"),
        label="patents granted (running count)",
        running=True,
    ),
    "app_ratings": _APPS,
    "app_ratings_daily": _APPS,
    "professionalnet": Chart(
        "metrics",
        "professional network",
        value=("employee_count", "follower_count", "job_count"),
    ),
    "forum_mentions": Chart(
        "totals",
        "forum mentions per week",
        value=("mentions",),
        label="mentions per week (all forums)",
    ),
}

# Screeners: the cross-section's measure per symbol, from the columns the service sends.
# (value candidates, aggregation, label[, bars by]): a screener of one row per symbol and no
# number (the latest action per symbol) counts its rows by a column that repeats instead.
_SCREENER_MEASURES: dict[str, tuple[Any, ...]] = {
    "sentiment": (("score",), "mean", "sentiment score"),
    "professionalnet": (("employee_count",), "last", "employees"),
    "app-ratings": (("ios_score", "android_score"), "mean", "app score"),
    "analyst-ratings": ((), "count", "symbols by latest rating action", "action"),
    "news": (("sentiment",), "mean", "mean article sentiment"),
    "put-call-ratio": (("ratio",), "mean", "put/call ratio"),
    "forum-mentions": (("mentions",), "sum", "forum mentions"),
    "predictions/daily": (("expected_short_term",), "mean", "expected short-term change (%)"),
    "predictions/monthly": (("expected_short_term",), "mean", "expected short-term change (%)"),
    "insider-trading": (("total_value",), "sum", "insider transaction value (USD)"),
    "congress/house": ((), "count", "latest House trades by member", "politician"),
    "congress/senate": ((), "count", "latest Senate trades by member", "politician"),
    "lobbying": (("income",), "sum", "lobbying income (USD)"),
    "government-contracts": (("award_amount",), "sum", "contract awards (USD)"),
    "patent-filings": ((), "count", "latest patents by type", "type"),
}

# ``load_recent``'s cross-ticker frames (the latest records of many symbols) rank as the
# screeners do.
_RECENT_MEASURES: dict[str, tuple[Any, ...]] = {
    "news": (("sentiment",), "mean", "mean article sentiment"),
    "analyst-ratings": ((), "count", "rating actions by action", "action"),
}


def _ranking(kind: str, measures: dict[str, tuple[Any, ...]], tails: tuple[str, ...]) -> dict:
    return {
        f"{kind}/{tail}": Chart(
            "ranking",
            f"{kind}: {label}",
            value=value,
            agg=agg,
            label=label,
            hover=("name",),
            by=by[0] if by else "symbol",
        )
        for tail, (value, agg, label, *by) in measures.items()
        if tail in tails
    }


CHARTS: dict[str, Chart] = {
    **_PER_SYMBOL,
    **_ranking("screener", _SCREENER_MEASURES, SCREENER_DATASETS),
    **_ranking("recent", _RECENT_MEASURES, RECENT_DATASETS),
}
