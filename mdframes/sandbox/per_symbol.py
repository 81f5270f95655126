"""Per-symbol v2 payloads: whole histories generated once (memoised), then windowed.

Each history function returns every record of the trailing 24 months, newest first by the
dataset's window field, as a tuple of dicts that are never mutated. ``count`` (from the
sandbox's ``record_counts``) replaces the default number of records. Builders in
:data:`BUILDERS` turn a validated :class:`~mdframes.sandbox.context.Ctx` into the ``data``
object of the envelope.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache
from typing import Any

from ..registry import (
    APP_RATINGS_HISTORY_START,
    CHAMBERS,
    CONGRESS_BRACKETS,
    INSIDER_GROUPS,
    INSIDER_TYPES,
    PATENT_TYPES,
)
from .context import Ctx, HttpError
from .synth import (
    Profile,
    business_days_after,
    history_days,
    history_start,
    price_on,
    profile,
    put_call_on,
    rng,
    seed_of,
    sentiment_on,
    stamp,
    trading_days,
    unit,
)
from .world import materialise, visible

__all__ = ["BUILDERS", "window", "forecast", "Records"]

Records = tuple[dict[str, Any], ...]
APP_START = dt.date.fromisoformat(APP_RATINGS_HISTORY_START)

FIRST_NAMES = (
    "Alex", "Jordan", "Morgan", "Taylor", "Casey", "Riley", "Avery", "Quinn", "Harper", "Rowan",
    "Elena", "Marcus", "Priya", "Daniel", "Grace", "Victor", "Naomi", "Samuel", "Irene", "Felix",
)  # fmt: skip
LAST_NAMES = (
    "Whitaker", "Okafor", "Lindqvist", "Moreno", "Castellan", "Hargrove", "Ibarra", "Nakamura",
    "Brennan", "Delacroix", "Foster", "Galloway", "Kessler", "Marsh", "Pryor", "Sato", "Vance",
    "Wexley", "Yardley", "Ashford",
)  # fmt: skip


def person(r: Any) -> str:
    return f"{r.choice(FIRST_NAMES)} {r.choice(LAST_NAMES)}"


def event_days(r: Any, today: dt.date, n: int, *, lag: int = 0) -> list[dt.date]:
    """``n`` random days of the history (repeats allowed), newest first; ``lag`` keeps the
    newest ``lag`` days free (events that must be disclosed by today)."""
    span = (today - history_start(today)).days + 1 - lag
    return sorted(
        (today - dt.timedelta(days=lag + r.randrange(span)) for _ in range(n)), reverse=True
    )


def spread_days(today: dt.date, n: int) -> list[dt.date]:
    """``n`` evenly spaced days over the history, newest first (several per day if needed)."""
    span = (today - history_start(today)).days + 1
    return [today - dt.timedelta(days=i * span // max(n, 1)) for i in range(n)]


def _n(count: int | None, r: Any, lo: int, hi: int) -> int:
    return count if count is not None else r.randint(lo, hi)


def window(
    ctx: Ctx, records: Records, field: str | None = None, *, cap: int | None = None
) -> list[dict]:
    """Records inside ``ctx.start``..``ctx.end`` on ``field`` (the registry's window field),
    then the newest ``ctx.limit`` (or ``cap``: limit-capped endpoints without a limit)."""
    ds = ctx.ds
    field = field or ds.window or "date"
    today = ctx.today.isoformat()
    out: list[dict] = list(visible(records, today))
    if ctx.start is not None or ctx.end is not None:
        lo = ctx.start.isoformat() if ctx.start else ""
        hi = ctx.end.isoformat() if ctx.end else "9999"
        out = [rec for rec in out if lo <= rec[field][:10] <= hi]
    if cap is None and ds.paged:
        cap = ds.limit_bounds[1]
    n = ctx.limit if ctx.limit is not None else cap
    return [materialise(rec, today, ctx.quirks) for rec in (out if n is None else out[:n])]


def _head(p: Profile) -> dict[str, Any]:
    return {"symbol": p.symbol, "name": p.name}


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
    return forecast(ctx.part("symbol"), ctx.part("type"), ctx.today)


# --- daily series ------------------------------------------------------------------------------


@lru_cache(maxsize=2048)
def sentiment_history(symbol: str, today: dt.date, count: int | None) -> Records:
    p = profile(symbol)
    return tuple(
        {"date": d.isoformat(), "score": sentiment_on(p, d)} for d in history_days(today, count)
    )


@lru_cache(maxsize=2048)
def put_call_history(symbol: str, today: dt.date, count: int | None) -> Records:
    p = profile(symbol)
    return tuple(put_call_on(p, d) for d in trading_days(today, count))


def _series(history: Callable[[str, dt.date, int | None], Records]) -> Callable[[Ctx], dict]:
    """A builder: header plus the windowed history under the registry's record key."""

    def build(ctx: Ctx) -> dict[str, Any]:
        symbol = ctx.part("symbol")
        records = history(symbol, ctx.today, ctx.count_for(symbol))
        return {
            **_head(profile(symbol)),
            ctx.ds.records or "data": window(ctx, records),
        }

    return build


# --- analyst ratings ---------------------------------------------------------------------------

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
def analyst_history(symbol: str, today: dt.date, count: int | None) -> Records:
    p = profile(symbol)
    r = rng("analyst-ratings", symbol)
    return tuple(analyst_entry(r, p, d) for d in event_days(r, today, _n(count, r, 24, 48)))


# --- insider transactions ----------------------------------------------------------------------

RELATIONSHIPS = (
    "CEO",
    "CFO",
    "COO",
    "Director",
    "10% Owner",
    "General Counsel",
    "President",
    "CTO",
)
_INSIDER_WEIGHTS = dict(zip(INSIDER_TYPES, (10, 30, 4, 4, 10, 12, 5, 12, 3, 5, 5), strict=True))


def insider_people(symbol: str) -> list[tuple[str, str]]:
    r = rng("insiders", symbol)
    return [(person(r), RELATIONSHIPS[i % len(RELATIONSHIPS)]) for i in range(r.randint(4, 8))]


@lru_cache(maxsize=2048)
def insider_history(symbol: str, today: dt.date, count: int | None) -> Records:
    p = profile(symbol)
    r = rng("insider-trading", symbol)
    # Conversion happens on NASDAQ only (spec); everything else anywhere.
    types = [t for t in INSIDER_TYPES if t != "Conversion" or p.exchange == "NASDAQ"]
    weights = [_INSIDER_WEIGHTS[t] for t in types]
    people = insider_people(symbol)
    holdings = {name: r.randint(20_000, 3_000_000) for name, _ in people}
    cik_num = int(p.cik) if p.cik else 1_000_000 + p.seed % 999_999
    quirky = seed_of("insider-quirks", symbol)
    out = []
    for i, day in enumerate(event_days(r, today, _n(count, r, 50, 70))):
        name, relationship = people[r.randrange(len(people))]
        kind = r.choices(types, weights=weights)[0]
        shares = r.randint(100, 60_000)
        free = kind in ("Award", "Gift", "Conversion")
        pps = 0.0 if free else round(price_on(p, day) * (0.97 + r.random() * 0.06), 2)
        if kind != "Conversion":
            holdings[name] = max(0, holdings[name] + (shares if kind in _ACQUIRE else -shares))
        filed = min(business_days_after(day, r.randint(0, 2)), today)
        out.append(
            {
                "date": day.isoformat(),
                "insider": name,
                "relationship": relationship,
                "transactionType": kind,
                "shares": shares,
                "pricePerShare": pps,
                "totalValue": round(shares * pps),
                "sharesOwned": holdings[name],
                "filingDate": filed.isoformat(),
                "filingUrl": (
                    f"https://filings.sandbox.invalid/edgar/{cik_num}/"
                    f"{filed:%Y%m%d}-{p.seed % 9973:04d}-{i:05d}.xml"
                ),
                "cik": p.cik,
                "_q": _insider_quirks(quirky, i),
            }
        )
    return tuple(out)


def _insider_quirks(seed: int, i: int) -> tuple[tuple[str, str, Any], ...]:
    """The live service's drift on one insider record (served only with those quirks on)."""
    out: list[tuple[str, str, Any]] = [("new_vocabulary", "securityTitle", "Common Stock")]
    if unit(seed, 2 * i) < 0.04:
        out.append(("null_filing_date", "filingDate", None))
    if unit(seed, 2 * i + 1) < 0.03:
        out.append(("new_vocabulary", "transactionType", UNLISTED_INSIDER_TYPE))
    return tuple(out)


UNLISTED_INSIDER_TYPE = "Inheritance"  # a transaction type the spec does not list
_ACQUIRE = set(INSIDER_GROUPS["acquisition"])


# --- congress ----------------------------------------------------------------------------------

BRACKETS = CONGRESS_BRACKETS
_BRACKET_WEIGHTS = (40, 22, 12, 10, 6, 5, 3, 2)


def filed_variant(r: Any, bracket: str) -> str:
    """A formatting variant of a bracket as members actually file it."""
    if bracket.startswith("Over"):
        return r.choice(("over $5,000,000", "Over $5M", "$5,000,001+"))
    lo, hi = (s.strip().lstrip("$").replace(",", "") for s in bracket.split(" - "))
    forms = (
        f"{int(lo):,}-{int(hi):,}",
        f"${int(lo):,} \u2013 ${int(hi):,}",
        f"${int(lo):,} -${int(hi):,}",
        f"{lo} to {hi}",
        f"${int(lo):,}-${int(hi):,}",
    )
    return r.choice(forms)


AMBIGUOUS = ("$15,000 - $50,000", "$50,000 - $100,000", "$1,000 - $15,000", "$100,000-$250,000")
UNREADABLE = ("See attached", "--", "N/A", "Spouse/DC see PTR")


def congress_amount(r: Any) -> tuple[str, str | None, str | None]:
    """(amount, amountRaw, amountFlag) following the spec's amount rules."""
    roll = r.random()
    if roll < 0.62:
        return r.choices(BRACKETS, weights=_BRACKET_WEIGHTS)[0], None, None
    if roll < 0.80:
        bracket = r.choices(BRACKETS, weights=_BRACKET_WEIGHTS)[0]
        return bracket, filed_variant(r, bracket), None
    if roll < 0.88:
        return f"${r.randint(1_100, 240_000):,}", None, None
    if roll < 0.93:
        return r.choice(("Over $1,000,000", "Under $1,000", "Over $50,000,000")), None, None
    if roll < 0.97:
        text = r.choice(UNREADABLE)
        # The service usually writes Unknown; some rows keep the unreadable filed text.
        return ("Unknown" if r.random() < 0.7 else text), None, "review"
    return r.choice(AMBIGUOUS), None, "ambiguous"


def members(chamber: str) -> list[str]:
    r = rng("members", chamber)
    return [person(r) for _ in range(40)]


@lru_cache(maxsize=2048)
def congress_history(chamber: str, symbol: str, today: dt.date, count: int | None) -> Records:
    r = rng("congress", chamber, symbol)
    pool = members(chamber)[: r.randint(4, 12)]
    blank_owner = "SELF" if chamber == "house" else "UNKNOWN"
    out = []
    for day in event_days(r, today, _n(count, r, 24, 36), lag=1):
        amount, raw, flag = congress_amount(r)
        owner = r.choices(("SELF", "SP", "DC", "JT", "", "OT"), weights=(45, 25, 6, 12, 10, 2))[0]
        disclosed = day + dt.timedelta(days=r.randint(1, 45))
        out.append(
            {
                "date": day.isoformat(),
                "politician": r.choice(pool),
                "transactionType": "Purchase" if r.random() < 0.52 else "Sale",
                "amount": amount,
                "owner": owner or blank_owner,
                "amountRaw": raw,
                "amountFlag": flag,
                # Never before the trade, never after today; ~2% missing.
                "disclosureDate": None if r.random() < 0.02 else min(disclosed, today).isoformat(),
            }
        )
    return tuple(out)


def filed_amount(trade: dict[str, Any]) -> str:
    """The amount text as originally filed (older shapes and v1 serve this)."""
    return trade["amountRaw"] or trade["amount"]


def _congress(ctx: Ctx) -> dict[str, Any]:
    chamber, symbol = ctx.part("chamber"), ctx.part("symbol")
    if chamber not in CHAMBERS:
        raise HttpError(404, f"unknown chamber {chamber!r}; use house or senate")
    trades = window(ctx, congress_history(chamber, symbol, ctx.today, ctx.count_for(symbol)))
    if "congress" in ctx.legacy:
        trades = [
            {
                k: (filed_amount(t) if k == "amount" else v)
                for k, v in t.items()
                if k not in _NEW_CONGRESS
            }
            for t in trades
        ]
    return {**_head(profile(symbol)), "chamber": chamber, "trades": trades}


_NEW_CONGRESS = {"owner", "amountRaw", "amountFlag"}


# --- lobbying, contracts, patents ----------------------------------------------------------------

REGISTRANTS = (
    "Capitol Bridge Strategies LLC", "Akin & Marsh LLP", "Brownstone Public Affairs",
    "Holloway Partners", "Federal Avenue Group", "Kingsley Policy Advisors", "Ridgeline Government Relations",
)  # fmt: skip
ISSUE_CODES = (
    "TAX",
    "TRD",
    "CPI",
    "DEF",
    "HCR",
    "ENG",
    "TEC",
    "BUD",
    "FIN",
    "IMM",
    "LBR",
    "ENV",
    "TRA",
    "CSP",
)
ENTITIES = (
    "Senate", "House of Representatives", "Department of Commerce", "Department of Defense",
    "Federal Trade Commission", "Department of the Treasury", "Executive Office of the President",
)  # fmt: skip


def _uuid(r: Any) -> str:
    h = f"{r.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


@lru_cache(maxsize=2048)
def lobbying_history(symbol: str, today: dt.date, count: int | None) -> Records:
    p = profile(symbol)
    r = rng("lobbying", symbol)
    out = []
    for day in event_days(r, today, _n(count, r, 16, 24)):
        income = float(r.randint(1, 60) * 10_000)
        out.append(
            {
                "date": day.isoformat(),
                "filingUuid": _uuid(r),
                "filingYear": day.year,
                "quarter": f"Q{(day.month - 1) // 3 + 1}",
                "clientName": p.name,
                "registrantName": r.choice(REGISTRANTS),
                "income": income,
                "expenses": 0.0 if r.random() < 0.6 else float(r.randint(1, 40) * 10_000),
                "issueCodes": sorted(r.sample(ISSUE_CODES, r.randint(1, 4))),
                "governmentEntities": r.sample(ENTITIES, r.randint(1, 3)),
            }
        )
    return tuple(out)


AGENCIES = (
    (
        "Department of Defense",
        ("Department of the Army", "Department of the Navy", "Defense Logistics Agency"),
    ),
    (
        "Department of Health and Human Services",
        ("National Institutes of Health", "Centers for Disease Control"),
    ),
    ("General Services Administration", ("Federal Acquisition Service",)),
    ("Department of Energy", ("National Nuclear Security Administration",)),
    ("National Aeronautics and Space Administration", ("Goddard Space Flight Center",)),
)
NAICS = (
    ("541512", "Computer Systems Design Services"),
    ("334111", "Electronic Computer Manufacturing"),
    ("541715", "Research and Development in the Physical, Engineering, and Life Sciences"),
    ("511210", "Software Publishers"),
    ("336411", "Aircraft Manufacturing"),
)


@lru_cache(maxsize=2048)
def contracts_history(symbol: str, today: dt.date, count: int | None) -> Records:
    p = profile(symbol)
    r = rng("government-contracts", symbol)
    out = []
    for i, day in enumerate(event_days(r, today, _n(count, r, 20, 30))):
        agency, subs = r.choice(AGENCIES)
        code, desc = r.choice(NAICS)
        indefinite = r.random() < 0.2
        end = "" if indefinite else (day + dt.timedelta(days=r.randint(90, 1800))).isoformat()
        out.append(
            {
                "awardId": f"{agency[:2].upper()}{p.seed % 99991:05d}{day:%y}C{i:05d}",
                "awardAmount": round(r.uniform(25_000, 40_000_000), 2),
                "awardType": "",
                "awardingAgency": agency,
                "awardingSubAgency": r.choice(subs),
                "recipientName": p.name.upper(),
                "startDate": day.isoformat(),
                "endDate": end,
                "description": f"{desc.upper()} - {r.choice(('TASK ORDER', 'DELIVERY ORDER', 'BPA CALL'))}",
                "naicsCode": code,
                "naicsDescription": desc,
                "contractAwardType": "",
                "cik": p.cik,
                "_q": _award_type_quirk(r),
            }
        )
    return tuple(out)


# Award types as the live service's published examples show them, despite the spec's "always
# empty": (awardType, contractAwardType).
AWARD_TYPES = (
    ("DEFINITIVE CONTRACT", "D"),
    ("DELIVERY ORDER", "C"),
    ("PURCHASE ORDER", "B"),
    ("BPA CALL", "A"),
)


def _award_type_quirk(r: Any) -> tuple[tuple[str, str, Any], ...]:
    if r.random() >= 0.4:
        return ()
    award, code = r.choice(AWARD_TYPES)
    return (("award_type", "awardType", award), ("award_type", "contractAwardType", code))


CPC = {"G": ("G06", "G01", "G02"), "H": ("H04", "H01", "H05"), "A": ("A61",), "B": ("B60", "B65")}
TITLE_WORDS = (
    "System",
    "Method",
    "Apparatus",
    "Device",
    "Interface",
    "Circuit",
    "Sensor",
    "Network",
)
_KINDS = {"utility": ("B1", "B2"), "design": ("S1",), "plant": ("P2", "P3"), "reissue": ("E1",)}
_PREFIX = {"utility": "", "design": "D", "plant": "PP", "reissue": "RE"}


@lru_cache(maxsize=2048)
def patent_history(symbol: str, today: dt.date, count: int | None) -> Records:
    p = profile(symbol)
    r = rng("patent-filings", symbol)
    out = []
    seen: set[int] = set()
    for i, day in enumerate(event_days(r, today, _n(count, r, 50, 70))):
        grant = day - dt.timedelta(days=(day.weekday() - 1) % 7)  # grants issue on Tuesdays
        grant = max(grant, history_start(today))
        kind = r.choices(PATENT_TYPES, weights=(85, 10, 1, 4))[0]
        days = r.randint(400, 1500)
        sections = r.sample(sorted(CPC), r.randint(1, 2))
        inventors = [person(r) for _ in range(r.randint(1, 5))]
        # Unique within the symbol; across symbols a hash collision is vanishingly rare.
        number = 10_000_000 + seed_of("patent", symbol, i) % 89_000_000
        while number in seen:
            number += 1
        seen.add(number)
        out.append(
            {
                "patentId": f"{_PREFIX[kind]}{number}",
                "patentDate": grant.isoformat(),
                "title": f"{r.choice(TITLE_WORDS)} and {r.choice(TITLE_WORDS).lower()} for "
                f"{r.choice(('data processing', 'wireless charging', 'image capture', 'battery cooling'))}",
                "type": kind,
                "kind": r.choice(_KINDS[kind]),
                "numClaims": r.randint(1, 40) if kind != "design" else 1,
                "numCitedBy": r.randint(0, 60),
                "assigneeOrganization": p.name,
                "assigneeType": "2" if p.kind == "equity" else "3",
                "applicationFilingDate": (grant - dt.timedelta(days=days)).isoformat(),
                "filingToGrantDays": days,
                "inventors": inventors,
                "numInventors": len(inventors),
                "cpcSections": sections,
                "cpcSubsections": [r.choice(CPC[s]) for s in sections],
                "primaryCpcSection": sections[0],
                "cik": p.cik,
            }
        )
    out.sort(key=lambda rec: str(rec["patentDate"]), reverse=True)
    return tuple(out)


# --- news, professional network, forum mentions -------------------------------------------------

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
def news_history(symbol: str, today: dt.date, count: int | None) -> Records:
    p = profile(symbol)
    r = rng("news", symbol)
    return tuple(
        news_entry(r, p, d, i) for i, d in enumerate(event_days(r, today, _n(count, r, 100, 140)))
    )


@lru_cache(maxsize=2048)
def professionalnet_history(symbol: str, today: dt.date, count: int | None) -> Records:
    r = rng("professionalnet", symbol)
    n = count if count is not None else 105
    days = spread_days(today, n)
    employees = r.randint(50, 200_000)
    followers = employees * r.randint(3, 40)
    out = []
    for d in days:  # newest first: walk back, shrinking slowly
        out.append(
            {
                "date": d.isoformat(),
                "employeeCount": employees,
                "followerCount": followers,
                "jobCount": None if r.random() < 0.08 else r.randint(0, max(1, employees // 40)),
            }
        )
        employees = max(1, int(employees * (1 - r.uniform(-0.002, 0.006))))
        followers = max(1, int(followers * (1 - r.uniform(0.0, 0.01))))
    return tuple(out)


SUBREDDITS = ("wallstreetbets", "stocks", "investing", "options", "StockMarket", "SecurityAnalysis")


@lru_cache(maxsize=512)
def forum_history(symbol: str, today: dt.date, count: int | None) -> Records:
    r = rng("forum-mentions", symbol)
    days = (today - history_start(today)).days + 1
    n = count if count is not None else days * 4
    base = dt.datetime.combine(today, dt.time(20, 0))
    popularity = r.randint(1, 300)
    return tuple(
        {
            "date": (base - dt.timedelta(hours=6 * i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "subreddit": r.choice(SUBREDDITS),
            "mentions": int(popularity * r.random() * 2) + 1,
        }
        for i in range(n)
    )


# --- app ratings -------------------------------------------------------------------------------


_APP_WORDS = ("Mobile", "Pay", "TV", "Studio", "Go", "Health", "Music", "Connect")


@lru_cache(maxsize=1024)
def app_catalogue(symbol: str, today: dt.date, count: int | None) -> tuple[dict[str, Any], ...]:
    """The company's apps, most-rated first: platform, id, name, first day, size."""
    p = profile(symbol)
    r = rng("app-ratings", symbol)
    days = max(0, (today - APP_START).days + 1)
    slug = "".join(ch for ch in p.name.split()[0].lower() if ch.isalnum()) or "app"
    if count is None:
        platforms = r.choice((("ios", "android"),) * 4 + (("ios",), ("android",)))
        lengths = [days] * sum(r.randint(1, 3) for _ in platforms)
        if days > 20 and r.random() < 0.6:
            lengths[-1] = r.randint(5, days - 10)  # an app added later
    else:
        platforms = ("ios", "android")
        full, rest = divmod(count, days) if days else (0, 0)
        lengths = [days] * full + ([rest] if rest else [])
    apps = []
    for i, length in enumerate(lengths):
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
                "first": today - dt.timedelta(days=length - 1)
                if length
                else today + dt.timedelta(days=1),
                "size": size,
                "score": 3.2 + r.random() * 1.6,
                "seed": r.getrandbits(32),
                "installs": platform == "android" and r.random() < 0.85,
            }
        )
    return tuple(apps)


@lru_cache(maxsize=1024)
def app_records(symbol: str, today: dt.date, count: int | None) -> Records:
    """Every app-date record, newest date first, most-rated app first within a date."""
    apps = app_catalogue(symbol, today, count)
    out: list[dict[str, Any]] = []
    day = today
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
    ordered = sorted(apps.values(), key=lambda a: -a["observations"][0]["ratingsCount"])
    return data, ordered


def _app_ratings(ctx: Ctx) -> dict[str, Any]:
    symbol = ctx.part("symbol")
    p = profile(symbol)
    records = app_records(symbol, ctx.today, ctx.count_for(symbol))
    start, end = ctx.start, ctx.end
    if start is None and end is None and ctx.limit is None:  # the most recent week
        start = ctx.today - dt.timedelta(days=6)
    if "app_ratings" in ctx.legacy:
        return _app_ratings_legacy(ctx, p, records, start, end)
    kept = window(replace(ctx, start=start, end=end), records, "date")
    data, apps = app_views(kept)
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


# --- the table the server dispatches on ---------------------------------------------------------

BUILDERS: dict[str, Callable[[Ctx], Any]] = {
    "forecast": _forecast,
    "sentiment": _series(sentiment_history),
    "put_call_ratio": _series(put_call_history),
    "analyst_ratings": _series(analyst_history),
    "insider_trading": _series(insider_history),
    "congress_trades": _congress,
    "lobbying": _series(lobbying_history),
    "government_contracts": _series(contracts_history),
    "patent_filings": _series(patent_history),
    "news": _series(news_history),
    "professionalnet": _series(professionalnet_history),
    "forum_mentions": _series(forum_history),
    "app_ratings": _app_ratings,
}
