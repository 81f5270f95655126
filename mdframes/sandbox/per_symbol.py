"""Per-symbol v2 payloads: whole histories generated once (memoised), then windowed.

Each history function returns every record up to the sandbox's day (the trailing 24 months),
newest first by the dataset's window field, as a tuple of dicts that are never mutated.
Daily series are pure functions of (symbol, date) and event histories lie on a fixed
timeline, so moving the clock adds records and never moves old ones; ``count`` (from the
sandbox's ``record_counts``) instead lays out exactly that many records back from the
sandbox's anchor day. Builders in :data:`BUILDERS` turn a validated
:class:`~mdframes.sandbox.context.Ctx` into the ``data`` object of the envelope; the filed
datasets (insider, congress, lobbying, contracts, patents) live in
:mod:`~mdframes.sandbox.filings`.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache
from typing import Any

from ..registry import REGISTRY
from .context import Ctx, HttpError
from .filings import (
    Records,
    arrival,
    congress,
    congress_revisions,
    contract_revisions,
    contracts_history,
    insider_history,
    lobbying_history,
    newest_first,
    patent_history,
    served_from,
)
from .synth import (
    EPOCH,
    Profile,
    events,
    history_days,
    history_start,
    price_on,
    profile,
    put_call_on,
    rng,
    seed_of,
    sentiment_on,
    sentiment_revision,
    stamp,
    trading_days,
    unit,
)
from .world import Revision, revisions_of, window

__all__ = [
    "BUILDERS",
    "REVISABLE",
    "forecast",
    "sentiment_history",
    "analyst_history",
    "app_records",
    "app_views",
    "news_entry",
]

APP_START = dt.date.fromisoformat(REGISTRY["app_ratings"].history_start or "")
History = Callable[[str, dt.date, "int | None", dt.date], Records]


def _head(p: Profile) -> dict[str, Any]:
    return {"symbol": p.symbol, "name": p.name}


def _days(
    today: dt.date, count: int | None, anchor: dt.date, weekdays: bool = False
) -> list[dt.date]:
    """The days of a daily series, newest first: the trailing 24 months, or ``count`` days back
    from the anchor (a sized fixture) that have come by ``today``."""
    pick = trading_days if weekdays else history_days
    if count is None:
        return list(pick(today))
    return [d for d in pick(anchor, count) if d <= today]


# --- forecasts ---------------------------------------------------------------------------------


def forecast_dates(today: dt.date, type: str) -> list[dt.date]:
    """Daily: the next 10 weekdays after ``today``; monthly: the next 12 month-ends."""
    if type == "daily":
        out: list[dt.date] = []
        day = today
        while len(out) < 10:
            day += dt.timedelta(days=1)
            if day.weekday() < 5:
                out.append(day)
        return out
    out = []
    year, month = today.year, today.month
    while len(out) < 12:
        month += 1
        if month == 13:
            year, month = year + 1, 1
        end = dt.date(year, month, 1) - dt.timedelta(days=1)
        if end > today:
            out.append(end)
    return out


@lru_cache(maxsize=8192)
def forecast(symbol: str, type: str, today: dt.date) -> dict[str, Any]:
    """The forecast object: ``lower < mid < upper`` widening with the horizon."""
    p = profile(symbol)
    r = rng("forecast", type, symbol, today)
    now = price_on(p, today)
    drift = (r.random() - 0.45) * (0.004 if type == "daily" else 0.02)
    vol = (0.01 + r.random() * 0.02) * (1 if type == "daily" else 3.5)
    digits = 2 if now >= 10 else (4 if now >= 1 else 6)
    preds = []
    level = now
    for k, day in enumerate(forecast_dates(today, type), start=1):
        level *= 1 + drift + (r.random() - 0.5) * vol * 0.3
        band = now * vol * (k**0.5)
        preds.append(
            {
                "date": day.isoformat(),
                "mid": round(level, digits),
                "lower": round(level - band, digits),
                "upper": round(level + band, digits),
            }
        )

    def change(i: int, key: str = "mid") -> float:
        return round((preds[i][key] / now - 1) * 100, 2)

    short, mid, long_ = (2, 4, 9) if type == "daily" else (2, 5, 11)
    return {
        "symbol": p.symbol,
        "name": p.name,
        "type": type,
        "predictions": preds,
        "metadata": {
            "expectedShortTerm": change(short),
            "expectedMidTerm": change(mid),
            "expectedLongTerm": change(long_),
            "lowerBoundChange": change(len(preds) - 1, "lower"),
            "upperBoundChange": change(len(preds) - 1, "upper"),
        },
        "lastUpdated": stamp(today, 6, 0),
    }


def _forecast(ctx: Ctx) -> dict[str, Any]:
    _, delisted = ctx.listed
    if delisted is not None and ctx.today >= delisted:  # no forward forecast once delisted
        raise HttpError(404, f"no forecast for {ctx.part('symbol')!r}: delisted on {delisted}")
    return forecast(ctx.part("symbol"), ctx.part("type"), ctx.today)


# --- daily series ------------------------------------------------------------------------------


@lru_cache(maxsize=2048)
def sentiment_history(symbol: str, today: dt.date, count: int | None, anchor: dt.date) -> Records:
    """Daily scores; a few are first published with another value and revised days later."""
    p = profile(symbol)
    out = []
    for d in _days(today, count, anchor):
        rec: dict[str, Any] = {"date": d.isoformat(), "score": sentiment_on(p, d)}
        revision = sentiment_revision(p, d)
        if revision is not None:
            on, first = revision
            rec = {
                "date": rec["date"],
                "score": first,
                "_r": ((on.isoformat(), "score", rec["score"]),),
            }
        out.append(rec)
    return tuple(out)


def sentiment_revisions(
    symbol: str, start: dt.date, end: dt.date, count: int | None, anchor: dt.date
) -> list[Revision]:
    history = sentiment_history(symbol, end, count, anchor)
    return revisions_of("sentiment", symbol, history, ("date",), start, end)


@lru_cache(maxsize=2048)
def put_call_history(symbol: str, today: dt.date, count: int | None, anchor: dt.date) -> Records:
    p = profile(symbol)
    return tuple(put_call_on(p, d) for d in _days(today, count, anchor, weekdays=True))


def _series(history: History) -> Callable[[Ctx], dict]:
    """A builder: header plus the windowed history under the registry's record key."""

    def build(ctx: Ctx) -> dict[str, Any]:
        symbol = ctx.part("symbol")
        records = history(*ctx.history_args(symbol))
        return {**_head(profile(symbol)), ctx.ds.records or "data": window(ctx, records)}

    return build


# --- analyst ratings and news ------------------------------------------------------------------

INSTITUTIONS = (
    "Morgan Stanley", "Goldman Sachs", "JP Morgan", "Barclays", "UBS", "Citigroup", "Jefferies",
    "Wedbush", "Piper Sandler", "Bernstein", "Evercore ISI", "Mizuho", "BofA Securities",
    "Wells Fargo", "RBC Capital", "Deutsche Bank", "Needham", "Oppenheimer",
)  # fmt: skip
RATING_LADDER = (
    "Sell",
    "Underperform",
    "Hold",
    "Mkt Perform",
    "Neutral",
    "Outperform",
    "Buy",
    "Strong Buy",
)
ACTIONS = ("Reiterated", "Resumed", "Upgrade", "Downgrade", "Initiated")


def analyst_entry(r: Any, p: Profile, day: dt.date) -> dict[str, Any]:
    action = r.choices(ACTIONS, weights=(50, 5, 15, 12, 10))[0]
    idx = r.randrange(2, len(RATING_LADDER))
    if action == "Downgrade":
        idx = r.randrange(0, len(RATING_LADDER) - 2)
    target = None if r.random() < 0.15 else f"${price_on(p, day) * (0.9 + r.random() * 0.45):,.2f}"
    return {
        "date": day.isoformat(),
        "institution": r.choice(INSTITUTIONS),
        "action": action,
        "rating": RATING_LADDER[idx],
        "targetPrice": target,
    }


@lru_cache(maxsize=2048)
def analyst_history(symbol: str, today: dt.date, count: int | None, anchor: dt.date) -> Records:
    p = profile(symbol)
    stream = events("analyst-ratings", symbol, today, (24, 48), count, anchor, ties=0.2)
    first = served_from(today, count)
    out: list[dict[str, Any]] = []
    for day, seed in stream:
        if day < first:
            continue
        entry = analyst_entry(random.Random(seed), p, day)
        last = out[-1] if out else {}
        if [last.get(k) for k in _RATING_ID] == [entry[k] for k in _RATING_ID]:
            # One firm, one action a day: a second rating that day is another firm's.
            entry["institution"] = INSTITUTIONS[
                (INSTITUTIONS.index(entry["institution"]) + 1) % len(INSTITUTIONS)
            ]
        out.append(entry)
    return newest_first(out, "date", today, count, REGISTRY["analyst_ratings"])


_RATING_ID = ("date", "institution", "action")


SOURCES = (
    "Reuters",
    "Bloomberg",
    "MarketWatch",
    "Barron's",
    "CNBC",
    "Financial Times",
    "Seeking Alpha",
)
HEADLINES = (
    "{name} shares {move} after quarterly results",
    "Analysts weigh {name}'s outlook as {sector} demand shifts",
    "{name} announces new product line",
    "{name} {move} as investors rotate into {sector}",
    "What {name}'s latest filing says about margins",
)


def news_entry(r: Any, p: Profile, day: dt.date, i: int) -> dict[str, Any]:
    sentiment = round(max(-1.0, min(1.0, sentiment_on(p, day) + (r.random() - 0.5) * 0.4)), 3)
    text = r.choice(HEADLINES).format(
        name=p.name,
        move="rise" if sentiment > 0 else "slip",
        sector=r.choice(("cloud", "consumer", "energy", "chip", "health")),
    )
    slug = p.symbol.lower().replace("^", "").replace(".", "-")
    return {
        "date": day.isoformat(),
        "headline": text,
        "source": r.choice(SOURCES),
        "url": f"https://news.sandbox.invalid/{slug}/{day:%Y/%m/%d}/{p.seed % 100_000:05d}-{i}",
        "sentiment": sentiment,
    }


@lru_cache(maxsize=2048)
def news_history(symbol: str, today: dt.date, count: int | None, anchor: dt.date) -> Records:
    p = profile(symbol)
    stream = events("news", symbol, today, (100, 140), count, anchor, ties=0.25)
    first = served_from(today, count)
    out = [
        news_entry(random.Random(seed), p, d, i) for i, (d, seed) in enumerate(stream) if d >= first
    ]
    return newest_first(out, "date", today, count, REGISTRY["news"])


# --- professional network, forum mentions ------------------------------------------------------


@lru_cache(maxsize=2048)
def professionalnet_history(
    symbol: str, today: dt.date, count: int | None, anchor: dt.date
) -> Records:
    """Weekly snapshots; head counts walk forward from the timeline's start."""
    r = rng("professionalnet", symbol)
    employees = r.randint(50, 200_000)
    followers = employees * r.randint(3, 40)
    if count is not None:  # evenly spaced over the 24 months before the anchor
        span = (anchor - history_start(anchor)).days + 1
        days = sorted(anchor - dt.timedelta(days=i * span // max(count, 1)) for i in range(count))
    else:
        first = EPOCH + dt.timedelta(days=rng("professionalnet-day", symbol).randrange(7))
        days = [first + dt.timedelta(weeks=w) for w in range((today - first).days // 7 + 1)]
    out: list[dict[str, Any]] = []
    for d in days:
        out.append(
            {
                "date": d.isoformat(),
                "employeeCount": employees,
                "followerCount": followers,
                "jobCount": None if r.random() < 0.08 else r.randint(0, max(1, employees // 40)),
            }
        )
        employees = max(1, int(employees * (1 + r.uniform(-0.002, 0.006))))
        followers = max(1, int(followers * (1 + r.uniform(0.0, 0.01))))
    kept = [rec for rec in out if rec["date"] <= today.isoformat()]
    return newest_first(kept, "date", today, count, REGISTRY["professionalnet"])


SUBREDDITS = ("wallstreetbets", "stocks", "investing", "options", "StockMarket", "SecurityAnalysis")
_FORUM_HOURS = (20, 14, 8, 2)  # UTC, newest first


@lru_cache(maxsize=512)
def forum_history(symbol: str, today: dt.date, count: int | None, anchor: dt.date) -> Records:
    """Mention counts every six hours (UTC timestamps), each a pure function of its time; on
    a quarter of the days the night's count comes with the morning's, for another forum (two
    records of one time)."""
    seed = rng("forum-mentions", symbol).getrandbits(63)
    ties = seed_of("forum-mentions-ties", symbol)
    popularity = 1 + seed % 300
    last = anchor if count is not None else today
    n = count if count is not None else ((today - history_start(today)).days + 1) * 4
    out: list[dict[str, Any]] = []
    for i in range(n):
        day = last - dt.timedelta(days=i // 4)
        if day > today:
            continue
        hour = _FORUM_HOURS[i % 4]
        k = day.toordinal() * 4 + hour // 6
        forum = SUBREDDITS[int(unit(seed, 2 * k) * len(SUBREDDITS))]
        if hour == _FORUM_HOURS[-1] and unit(ties, day.toordinal()) < 0.25 and out:
            hour = _FORUM_HOURS[-2]
            if out[-1]["date"].startswith(day.isoformat()) and out[-1]["subreddit"] == forum:
                forum = SUBREDDITS[(SUBREDDITS.index(forum) + 1) % len(SUBREDDITS)]
        out.append(
            {
                "date": f"{day.isoformat()}T{hour:02d}:00:00Z",
                "subreddit": forum,
                "mentions": int(popularity * unit(seed, 2 * k + 1) * 2) + 1,
            }
        )
    return tuple(arrival(out, "date", REGISTRY["forum_mentions"]))


# --- app ratings -------------------------------------------------------------------------------


_APP_WORDS = ("Mobile", "Pay", "TV", "Studio", "Go", "Health", "Music", "Connect")


@lru_cache(maxsize=1024)
def app_catalogue(symbol: str, count: int | None, anchor: dt.date) -> tuple[dict[str, Any], ...]:
    """The company's apps, most-rated first: platform, id, name, first day, size. Apps start
    on the history's first day or later (never backfilled); sized fixtures lay theirs out
    back from the anchor."""
    p = profile(symbol)
    r = rng("app-ratings", symbol)
    slug = "".join(ch for ch in p.name.split()[0].lower() if ch.isalnum()) or "app"
    firsts: list[dt.date]
    if count is None:
        platforms = r.choice((("ios", "android"),) * 4 + (("ios",), ("android",)))
        firsts = [APP_START] * sum(r.randint(1, 3) for _ in platforms)
        if r.random() < 0.6:
            firsts[-1] = APP_START + dt.timedelta(days=r.randint(10, 200))  # an app added later
    else:
        platforms = ("ios", "android")
        days = max(0, (anchor - APP_START).days + 1)
        full, rest = divmod(count, days) if days else (0, 0)
        lengths = [days] * full + ([rest] if rest else [])
        firsts = [anchor - dt.timedelta(days=length - 1) for length in lengths]
    apps = []
    for i, first in enumerate(firsts):
        platform = platforms[i % len(platforms)]
        size = int(4_000_000 / (i + 1) ** 2 * (0.5 + r.random()))
        app_id = (
            str(r.randint(300_000_000, 1_999_999_999))
            if platform == "ios"
            else f"com.{slug}.app{i or ''}"
        )
        apps.append(
            {
                "platform": platform,
                "appId": app_id,
                "appName": p.name.split(",")[0]
                if i == 0
                else f"{slug.title()} {_APP_WORDS[i % len(_APP_WORDS)]}",
                "first": first,
                "size": size,
                "score": 3.2 + r.random() * 1.6,
                "seed": r.getrandbits(32),
                "installs": platform == "android" and r.random() < 0.85,
            }
        )
    return tuple(apps)


@lru_cache(maxsize=1024)
def app_records(symbol: str, today: dt.date, count: int | None, anchor: dt.date) -> Records:
    """Every app-date record, newest date first, most-rated app first within a date."""
    apps = app_catalogue(symbol, count, anchor if count is not None else EPOCH)
    out: list[dict[str, Any]] = []
    day = min(today, anchor) if count is not None else today
    while day >= APP_START:
        age_total = (day - APP_START).days
        todays: list[dict[str, Any]] = []
        for a in apps:
            if day < a["first"]:
                continue
            age = (day - a["first"]).days
            wobble = 0.05 * ((a["seed"] >> (age % 24)) & 7) / 7
            ratings = int(a["size"] * (1 + 0.002 * age_total)) + age * 37
            todays.append(
                {
                    "platform": a["platform"],
                    "appId": a["appId"],
                    "appName": a["appName"],
                    "date": day.isoformat(),
                    "score": round(min(5.0, max(1.0, a["score"] + wobble)), 2),
                    "ratingsCount": ratings,
                    "installCount": (ratings * 40 // 1_000_000 + 1) * 1_000_000
                    if a["installs"]
                    else None,
                }
            )
        # Most-rated first, so a limit that cuts a date keeps each platform's biggest app.
        out.extend(sorted(todays, key=lambda rec: -rec["ratingsCount"]))
        day -= dt.timedelta(days=1)
    return tuple(out)


def _platform_obj(rec: dict[str, Any] | None, platform: str) -> dict[str, Any] | None:
    if rec is None:
        return None
    obj = {"score": rec["score"], "ratingsCount": rec["ratingsCount"]}
    if platform == "android":
        obj["installCount"] = rec["installCount"]
    return obj


def app_views(records: list[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    """(``data``, ``apps``) from the same records: the biggest app per platform per date."""
    by_date: dict[str, dict[str, dict]] = {}
    apps: dict[tuple[str, str], dict[str, Any]] = {}
    for rec in records:
        best = by_date.setdefault(rec["date"], {})
        cur = best.get(rec["platform"])
        if cur is None or rec["ratingsCount"] > cur["ratingsCount"]:
            best[rec["platform"]] = rec
        key = (rec["platform"], rec["appId"])
        if key not in apps:
            apps[key] = {
                "platform": rec["platform"],
                "appId": rec["appId"],
                "appName": rec["appName"],
                "observations": [],
            }
        apps[key]["observations"].append(
            {k: rec[k] for k in ("date", "score", "ratingsCount", "installCount")}
        )
    data = [
        {
            "date": d,
            "ios": _platform_obj(b.get("ios"), "ios"),
            "android": _platform_obj(b.get("android"), "android"),
        }
        for d, b in by_date.items()
    ]
    return data, sorted(apps.values(), key=lambda a: -a["observations"][0]["ratingsCount"])


def _app_ratings(ctx: Ctx) -> dict[str, Any]:
    symbol = ctx.part("symbol")
    p = profile(symbol)
    records = app_records(*ctx.history_args(symbol))
    start, end = ctx.start, ctx.end
    if start is None and end is None and ctx.limit is None:  # the most recent week
        start = ctx.today - dt.timedelta(days=6)
    if "app_ratings" in ctx.legacy:
        return _app_ratings_legacy(ctx, p, records, start, end)
    data, apps = app_views(window(replace(ctx, start=start, end=end), records, "date"))
    return {**_head(p), "cik": p.cik, "data": data, "apps": apps}


def _app_ratings_legacy(
    ctx: Ctx, p: Profile, records: Records, start: dt.date | None, end: dt.date | None
) -> dict[str, Any]:
    """The older shape: weekly snapshots, both platforms always objects, no ``apps``."""
    weekly = [r for r in records if (dt.date.fromisoformat(r["date"]) - APP_START).days % 7 == 0]
    lo = start.isoformat() if start else ""
    hi = end.isoformat() if end else "9999"
    data, _ = app_views([r for r in weekly if lo <= r["date"] <= hi])
    empty = {"score": None, "ratingsCount": None}
    for entry in data:
        entry["ios"] = entry["ios"] or dict(empty)
        entry["android"] = entry["android"] or {**empty, "installCount": None}
    cap = ctx.limit if ctx.limit is not None else ctx.ds.limit_bounds[1] or len(data) * 2
    return {**_head(p), "data": data[: (cap + 1) // 2]}


# --- the tables the server dispatches on --------------------------------------------------------


BUILDERS: dict[str, Callable[[Ctx], Any]] = {
    "forecast": _forecast,
    "sentiment": _series(sentiment_history),
    "put_call_ratio": _series(put_call_history),
    "analyst_ratings": _series(analyst_history),
    "insider_trading": _series(insider_history),
    "congress_trades": congress,
    "lobbying": _series(lobbying_history),
    "government_contracts": _series(contracts_history),
    "patent_filings": _series(patent_history),
    "news": _series(news_history),
    "professionalnet": _series(professionalnet_history),
    "forum_mentions": _series(forum_history),
    "app_ratings": _app_ratings,
}

# Datasets whose records the service revises in place: (symbol, start, end, count, anchor) ->
# the revisions made between start and end (see world.REVISION_RULES).
REVISABLE: dict[str, Callable[[str, dt.date, dt.date, int | None, dt.date], list[Revision]]] = {
    "government_contracts": contract_revisions,
    "congress_trades": congress_revisions,
    "sentiment": sentiment_revisions,
}
