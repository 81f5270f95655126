"""The cross-ticker side of the sandbox: discovery, screeners and recent endpoints over the
ticker universe of :mod:`~mdframes.sandbox.listings` as it is listed on the sandbox's day.

Screener records are cheap per-ticker snapshots (hash-derived, no history
generation); the values shared with per-symbol endpoints (sentiment, put/call, price,
forecast) come from the same functions and therefore agree.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ..registry import MARKETS, REGISTRY
from .context import Ctx
from .filings import BRACKETS, REGISTRANTS, members
from .listings import REGIONS, select, universe
from .per_symbol import ACTIONS, INSTITUTIONS, RATING_LADDER, forecast, news_entry
from .synth import person, profile, put_call_on, rng, sentiment_seen, unit
from .world import materialise

__all__ = [
    "DISCOVERY",
    "screener_builder",
    "recent_builder",
    "screener_records",
    "DEFAULT_CROSS_LIMIT",
]

DEFAULT_CROSS_LIMIT = 100  # screener and recent endpoints without ``limit``


# --- discovery ---------------------------------------------------------------------------------


def _tickers(ctx: Ctx) -> dict[str, Any]:
    rows = universe()
    picked = select(ctx.today, ctx.market, ctx.region, ctx.type)
    if ctx.limit is not None:
        picked = picked[: ctx.limit]
    return {"tickers": [{"symbol": rows[i][0], "name": rows[i][1]} for i in picked]}


def _markets(ctx: Ctx) -> dict[str, Any]:
    return {"markets": [{"name": name, "region": region} for name, region in MARKETS]}


def _regions(ctx: Ctx) -> dict[str, Any]:
    return {
        "regions": [
            {"region": region, "markets": [m for m, r in MARKETS if r == region]}
            for region in REGIONS
        ]
    }


DISCOVERY: dict[str, Callable[[Ctx], Any]] = {
    "tickers": _tickers,
    "markets": _markets,
    "regions": _regions,
}


# --- screener records: one snapshot per ticker ---------------------------------------------------

_APP_START = dt.date.fromisoformat(REGISTRY["app_ratings"].history_start or "")


def _latest(seed: int, today: dt.date, k: int, every: int) -> dt.date:
    """The latest day up to ``today`` of a periodic event of one ticker (every 1 to ``every``
    days, at a fixed phase): the snapshot keeps it as the clock moves, until the next one."""
    period = 1 + int(unit(seed, k) * every)
    phase = int(unit(seed, k + 1) * period)
    return today - dt.timedelta(days=(today.toordinal() - phase) % period)


def _sentiment(symbol: str, today: dt.date) -> dict[str, Any]:
    return {
        "date": today.isoformat(),
        "score": sentiment_seen(profile(symbol), today, today),
    }


def _professionalnet(symbol: str, today: dt.date) -> dict[str, Any]:
    s = profile(symbol).seed
    employees = 50 + int(unit(s, 40) ** 3 * 200_000)
    return {
        "date": today.isoformat(),
        "employeeCount": employees,
        "followerCount": employees * (3 + int(unit(s, 41) * 37)),
        "jobCount": int(unit(s, 42) * employees / 40),
    }


def _app_ratings(symbol: str, today: dt.date) -> dict[str, Any] | None:
    s = profile(symbol).seed
    if today < _APP_START:
        return None
    ios = unit(s, 50) < 0.85
    android = unit(s, 51) < 0.85 or not ios
    count = int(unit(s, 52) ** 2 * 3_000_000) + 50
    return {
        "date": today.isoformat(),
        "iosScore": round(3.0 + unit(s, 53) * 2.0, 2) if ios else None,
        "iosRatingsCount": count if ios else None,
        "androidScore": round(3.0 + unit(s, 54) * 2.0, 2) if android else None,
        "androidRatingsCount": count * 2 if android else None,
    }


def _analyst(symbol: str, today: dt.date) -> dict[str, Any]:
    p = profile(symbol)
    day = _DATE_OF["analyst-ratings"](p.seed, today)
    r = rng("screener-analyst", symbol, day)
    action = r.choices(ACTIONS, (50, 5, 15, 12, 10))[0]
    before, after = r.sample(RATING_LADDER, 2)
    if action in ("Upgrade", "Downgrade"):
        low, high = sorted((before, after), key=RATING_LADDER.index)
        rating = f"{low} -> {high}" if action == "Upgrade" else f"{high} -> {low}"
    else:
        rating = after
    price = p.base_price * (0.9 + r.random() * 0.4)
    return {
        "date": day.isoformat(),
        "institution": r.choice(INSTITUTIONS),
        "action": action,
        "rating": rating,
        "targetPrice": f"${price:,.2f}" if r.random() > 0.15 else None,
    }


def _news(symbol: str, today: dt.date) -> dict[str, Any]:
    p = profile(symbol)
    return news_entry(rng("screener-news", symbol), p, _DATE_OF["news"](p.seed, today), 0)


def _put_call(symbol: str, today: dt.date) -> dict[str, Any]:
    day = today
    while day.weekday() >= 5:
        day -= dt.timedelta(days=1)
    return put_call_on(profile(symbol), day)


def _forum(symbol: str, today: dt.date) -> dict[str, Any]:
    s = profile(symbol).seed
    return {
        "date": f"{today.isoformat()}T20:00:00Z",
        "subreddit": ("wallstreetbets", "stocks", "investing", "options")[s % 4],
        "mentions": 1 + int(unit(s, 70) ** 3 * 2_000),
    }


def _predictions(type: str) -> Callable[[str, dt.date], dict[str, Any]]:
    def record(symbol: str, today: dt.date) -> dict[str, Any]:
        f = forecast(symbol, type, today)
        return {
            "type": type,
            "date": today.isoformat(),
            **f["metadata"],
            "lastUpdated": f["lastUpdated"],
        }

    return record


def _insider(symbol: str, today: dt.date) -> dict[str, Any]:
    p = profile(symbol)
    day = _latest(p.seed, today, 80, 60)
    r = rng("screener-insider", symbol, day)
    kind = r.choices(("Sale", "Buy", "Award", "Tax", "Exercise", "Gift"), (45, 20, 12, 12, 8, 3))[0]
    shares = r.randint(100, 80_000)
    return {
        "date": day.isoformat(),
        "insider": person(r),
        "relationship": r.choice(("CEO", "CFO", "Director", "10% Owner", "COO")),
        "transactionType": kind,
        "shares": shares,
        "totalValue": 0 if kind in ("Award", "Gift") else round(shares * p.base_price),
    }


def _congress(chamber: str) -> Callable[[str, dt.date], dict[str, Any]]:
    pool = members(chamber)

    def record(symbol: str, today: dt.date) -> dict[str, Any]:
        p = profile(symbol)
        disclosed = _latest(p.seed, today, 90, 120)  # the latest disclosure
        r = rng("screener-congress", chamber, symbol, disclosed)
        day = disclosed - dt.timedelta(days=r.randint(1, 45))
        return {
            "chamber": chamber,
            "date": day.isoformat(),
            "politician": r.choice(pool),
            "transactionType": "Purchase" if r.random() < 0.5 else "Sale",
            "amount": r.choice(BRACKETS[:5]),
            "owner": r.choice(("SELF", "SP", "JT")),
            "disclosureDate": disclosed.isoformat(),
        }

    return record


def _lobbying(symbol: str, today: dt.date) -> dict[str, Any]:
    p = profile(symbol)
    day = _latest(p.seed, today, 100, 90)
    return {
        "date": day.isoformat(),
        "filingYear": day.year,
        "quarter": f"Q{(day.month - 1) // 3 + 1}",
        "registrantName": REGISTRANTS[p.seed % len(REGISTRANTS)],
        "income": float(int(1 + unit(p.seed, 101) * 60) * 10_000),
    }


def _contracts(symbol: str, today: dt.date) -> dict[str, Any]:
    p = profile(symbol)
    day = _latest(p.seed, today, 110, 180)
    return {
        "date": day.isoformat(),
        "awardId": f"SB{p.seed % 999_983:06d}{day:%y%m%d}",
        "awardAmount": round(25_000 + unit(p.seed, 111) ** 2 * 40_000_000, 2),
        "awardingAgency": ("Department of Defense", "General Services Administration")[p.seed % 2],
        "startDate": day.isoformat(),
    }


def _patents(symbol: str, today: dt.date) -> dict[str, Any]:
    p = profile(symbol)
    day = _latest(p.seed, today, 120, 60)
    day -= dt.timedelta(days=(day.weekday() - 1) % 7)
    return {
        "date": day.isoformat(),
        "patentId": str(10_000_000 + p.seed % 89_000_000),
        "patentDate": day.isoformat(),
        "title": "System and method for data processing",
        "type": "utility",
    }


_RECORDS: dict[str, Callable[[str, dt.date], dict[str, Any] | None]] = {
    "sentiment": _sentiment,
    "professionalnet": _professionalnet,
    "app-ratings": _app_ratings,
    "analyst-ratings": _analyst,
    "news": _news,
    "put-call-ratio": _put_call,
    "forum-mentions": _forum,
    "predictions/daily": _predictions("daily"),
    "predictions/monthly": _predictions("monthly"),
    "insider-trading": _insider,
    "congress/house": _congress("house"),
    "congress/senate": _congress("senate"),
    "lobbying": _lobbying,
    "government-contracts": _contracts,
    "patent-filings": _patents,
}

_BUILT: dict[tuple[str, dt.date], list[Any]] = {}
_UNBUILT = object()


def _record(tail: str, today: dt.date, i: int) -> dict[str, Any] | None:
    """The screener record of universe ticker ``i``, built on first use: a page of 100 costs
    100 records, not the whole universe."""
    cache = _BUILT.get((tail, today))
    if cache is None:
        if len(_BUILT) > 64:  # many ``today`` values over a long session
            _BUILT.clear()
        cache = _BUILT.setdefault((tail, today), [_UNBUILT] * len(universe()))
    if cache[i] is _UNBUILT:
        symbol, name, _ = universe()[i]
        fields = _RECORDS[tail](symbol, today)  # every record starts with symbol and name
        cache[i] = None if fields is None else {"symbol": symbol, "name": name, **fields}
    rec: dict[str, Any] | None = cache[i]
    return rec


def screener_records(
    tail: str, today: dt.date, market: str | None, region: str | None, limit: int | None = None
) -> list[dict[str, Any]]:
    """Up to ``limit`` records, one per ticker of the filtered universe, in universe order."""
    out: list[dict[str, Any]] = []
    for i in select(today, market, region):
        rec = _record(tail, today, i)
        if rec is not None:
            out.append(rec)
            if limit is not None and len(out) >= limit:
                break
    return out


# Recent endpoints sort the whole filtered universe by date: these give each ticker's date
# without building its record (the builders above use the same draws).
_DATE_OF: dict[str, Callable[[int, dt.date], dt.date]] = {
    "news": lambda seed, today: _latest(seed, today, 61, 7),
    "analyst-ratings": lambda seed, today: _latest(seed, today, 60, 30),
}


@lru_cache(maxsize=64)
def _recent_order(
    tail: str, today: dt.date, market: str | None, region: str | None
) -> tuple[int, ...]:
    rows = universe()
    date_of = _DATE_OF[tail]
    by_symbol = sorted(select(today, market, region), key=lambda i: rows[i][0])
    # Newest first; Python's sort is stable (also with reverse=True), so symbols stay A-Z.
    return tuple(
        sorted(by_symbol, key=lambda i: date_of(profile(rows[i][0]).seed, today), reverse=True)
    )


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _tickers_in(records: list[dict]) -> int:
    return len({r["symbol"] for r in records})


Summary = Callable[[list[dict[str, Any]]], dict[str, Any]]


def _counted(total: str, **counts: tuple[str, str]) -> Summary:
    """A summary of a record total, the tickers and ``name=(field, value)`` counts."""

    def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {total: len(records), "totalTickers": _tickers_in(records)}
        for name, (field, value) in counts.items():
            out[name] = sum(r[field] == value for r in records)
        return out

    return summary


def _averaged(
    field: str, average: str, total: str | None = None, **counts: Callable[[float], bool]
) -> Summary:
    """A summary of the tickers, the mean of ``field`` and ``name=test`` counts of its
    values (``total``: the record count first)."""

    def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
        values = [r[field] for r in records]
        out: dict[str, Any] = {total: len(records)} if total else {}
        out.update({"totalTickers": _tickers_in(records), average: _mean(values)})
        out.update({name: sum(map(test, values)) for name, test in counts.items()})
        return out

    return summary


def _app_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    def scores(key: str) -> list[float]:
        return [r[key] for r in records if r[key] is not None]

    return {
        "totalTickers": _tickers_in(records),
        "averageIosScore": _mean(scores("iosScore")),
        "averageAndroidScore": _mean(scores("androidScore")),
    }


def _sum_of(total: str | None, field: str, name: str, digits: int | None = None) -> Summary:
    def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
        value = sum(r[field] for r in records)
        out: dict[str, Any] = {total: len(records)} if total else {}
        out["totalTickers"] = _tickers_in(records)
        out[name] = round(value, digits) if digits is not None else value
        return out

    return summary


_CONGRESS_SUMMARY = _counted(
    "totalTrades",
    purchaseCount=("transactionType", "Purchase"),
    saleCount=("transactionType", "Sale"),
)
_PREDICTIONS_SUMMARY = _averaged(
    "expectedMidTerm",
    "averageExpectedMidTerm",
    positiveCount=lambda m: m > 0,
    negativeCount=lambda m: m < 0,
)
SUMMARIES: dict[str, Summary] = {
    "sentiment": _averaged(
        "score",
        "averageScore",
        bullishCount=lambda s: s > 0.2,
        bearishCount=lambda s: s < -0.2,
        neutralCount=lambda s: -0.2 <= s <= 0.2,
    ),
    "insider-trading": _counted(
        "totalTransactions",
        buyCount=("transactionType", "Buy"),
        sellCount=("transactionType", "Sale"),
    ),
    "analyst-ratings": _counted(
        "totalRatings",
        upgradeCount=("action", "Upgrade"),
        downgradeCount=("action", "Downgrade"),
    ),
    "news": _averaged("sentiment", "averageSentiment", "totalArticles"),
    "put-call-ratio": _averaged(
        "ratio", "averageRatio", highPutCount=lambda x: x > 1.2, highCallCount=lambda x: x < 0.7
    ),
    "predictions/daily": _PREDICTIONS_SUMMARY,
    "predictions/monthly": _PREDICTIONS_SUMMARY,
    "congress/house": _CONGRESS_SUMMARY,
    "congress/senate": _CONGRESS_SUMMARY,
    "app-ratings": _app_summary,
    "forum-mentions": _sum_of(None, "mentions", "totalMentions"),
    "professionalnet": _sum_of(None, "employeeCount", "totalEmployees"),
    "lobbying": _sum_of("totalFilings", "income", "totalIncome"),
    "government-contracts": _sum_of("totalContracts", "awardAmount", "totalAmount", 2),
}


def _summary(tail: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    summary = SUMMARIES.get(tail)
    if summary is None:
        return {"totalRecords": len(records), "totalTickers": _tickers_in(records)}
    return summary(records)


def _tail(ctx: Ctx) -> str:
    return ctx.dataset.split("/", 1)[1]


def _screener(ctx: Ctx) -> dict[str, Any]:
    tail = _tail(ctx)
    limit = ctx.limit if ctx.limit is not None else DEFAULT_CROSS_LIMIT
    page = screener_records(tail, ctx.today, ctx.market, ctx.region, limit)
    page = [materialise(rec, ctx.today.isoformat(), ctx.quirks) for rec in page]
    return {"data": page, "summary": _summary(tail, page)}


def _recent(ctx: Ctx) -> dict[str, Any]:
    tail = _tail(ctx)
    limit = ctx.limit if ctx.limit is not None else DEFAULT_CROSS_LIMIT
    order = _recent_order(tail, ctx.today, ctx.market, ctx.region)[:limit]
    page = [
        materialise(rec, ctx.today.isoformat(), ctx.quirks)
        for i in order
        if (rec := _record(tail, ctx.today, i)) is not None
    ]
    return {"data": page, "summary": _summary(tail, page)}


def screener_builder(tail: str) -> Callable[[Ctx], dict[str, Any]] | None:
    """The hand-written screener of ``tail`` (None: serve it from its declared fields)."""
    return _screener if tail in _RECORDS else None


def recent_builder(tail: str) -> Callable[[Ctx], dict[str, Any]] | None:
    """The hand-written recent endpoint of ``tail`` (None: serve it from its declared fields)."""
    return _recent if tail in _DATE_OF and tail in _RECORDS else None
