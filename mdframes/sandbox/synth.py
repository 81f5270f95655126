"""Deterministic building blocks shared by the sandbox's data generators.

Every random choice is seeded from ``hashlib`` digests of stable strings (never Python's
salted ``hash()``), so the same request gives the same bytes in every process. Values that
screeners and per-symbol endpoints must agree on (price, sentiment, put/call) are pure
functions of ``(symbol, date)``. Event histories lie on a fixed timeline that starts at
:data:`EPOCH` (:func:`events`), so that moving the clock adds records and never moves the
old ones; only histories sized by ``record_counts`` are laid out backwards from their anchor.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "Profile",
    "profile",
    "person",
    "seed_of",
    "rng",
    "unit",
    "EPOCH",
    "Event",
    "events",
    "event_days",
    "history_start",
    "history_days",
    "trading_days",
    "price_on",
    "sentiment_on",
    "sentiment_revision",
    "sentiment_seen",
    "put_call_on",
    "stamp",
    "business_days_after",
]

_MASK = (1 << 64) - 1


def seed_of(*parts: object) -> int:
    """A 64-bit seed from the parts' text (stable across processes and platforms)."""
    digest = hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rng(*parts: object) -> random.Random:
    """A ``random.Random`` seeded from ``parts``.

    >>> rng("lobbying", "AAPL").random() == rng("lobbying", "AAPL").random()
    True
    """
    return random.Random(seed_of(*parts))


def unit(seed: int, k: int) -> float:
    """A uniform number in [0, 1) from ``(seed, k)`` via splitmix64: cheap enough to call
    once per symbol per day without building a generator."""
    z = (seed + (k + 1) * 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return ((z ^ (z >> 31)) >> 11) / float(1 << 53)


# --- calendar ----------------------------------------------------------------------------------


def history_start(today: dt.date) -> dt.date:
    """The first day of the trailing 24 months that end on ``today``."""
    try:
        first = today.replace(year=today.year - 2)
    except ValueError:  # 29 February
        first = today.replace(year=today.year - 2, day=28)
    return first + dt.timedelta(days=1)


@lru_cache(maxsize=64)
def history_days(today: dt.date, count: int | None = None) -> tuple[dt.date, ...]:
    """Calendar days of the history, newest first. ``count`` overrides the 24 months (a
    daily series asked for more records than days simply reaches further back)."""
    n = (today - history_start(today)).days + 1 if count is None else count
    return tuple(today - dt.timedelta(days=i) for i in range(n))


@lru_cache(maxsize=64)
def trading_days(today: dt.date, count: int | None = None) -> tuple[dt.date, ...]:
    """Weekdays of the history (or the newest ``count`` weekdays), newest first."""
    if count is None:
        return tuple(d for d in history_days(today) if d.weekday() < 5)
    out: list[dt.date] = []
    day = today
    while len(out) < count:
        if day.weekday() < 5:
            out.append(day)
        day -= dt.timedelta(days=1)
    return tuple(out)


EPOCH = dt.date(2023, 1, 1)  # fixed timelines start here; histories reach back 24 months
DAYS_PER_24_MONTHS = 731
Event = tuple[dt.date, int]  # a day and the seed of that event's values


def event_days(r: random.Random, end: dt.date, n: int, *, lag: int = 0) -> list[dt.date]:
    """``n`` random days of the 24 months ending on ``end`` (repeats allowed), newest first;
    ``lag`` keeps the newest ``lag`` days free (events that must be disclosed by ``end``)."""
    span = (end - history_start(end)).days + 1 - lag
    return sorted(
        (end - dt.timedelta(days=lag + r.randrange(span)) for _ in range(n)), reverse=True
    )


@lru_cache(maxsize=4096)
def events(
    name: str,
    symbol: str,
    today: dt.date,
    per_24_months: tuple[int, int],
    count: int | None = None,
    anchor: dt.date | None = None,
    lag: int = 0,
    ties: float = 0.0,
) -> tuple[Event, ...]:
    """The events of one dataset and symbol up to ``today - lag``, oldest first: each a day
    and a seed for its values (``random.Random(seed)``). A share ``ties`` of them falls on
    the day of the event before (a filing of several transactions, two firms rating on one
    day), so that every reader meets records that share symbol and date.

    Without ``count``: a renewal process on the fixed timeline from :data:`EPOCH` (gaps
    uniform between a quarter and 1.75 times the mean, so counts stay near the rate), at a
    rate drawn per symbol from ``per_24_months``; an event's day and values never
    depend on ``today``, so a later clock only adds events. With ``count``: exactly ``count`` events
    laid out over the 24 months ending on ``anchor`` (a sized fixture, frozen in time).

    >>> a = events("demo", "AAPL", dt.date(2026, 6, 1), (40, 60))
    >>> b = events("demo", "AAPL", dt.date(2026, 6, 2), (40, 60))
    >>> [d for d, _ in a] == [d for d, _ in b if d <= dt.date(2026, 6, 1)]
    True
    """
    last = today - dt.timedelta(days=lag)
    tie = seed_of(name, symbol, "ties")
    if count is not None:
        days = sorted(event_days(rng(name, symbol, "count"), anchor or today, count, lag=lag))
        for i in range(1, len(days)):
            if unit(tie, i) < ties:
                days[i] = days[i - 1]
        return tuple((d, seed_of(name, symbol, "n", i)) for i, d in enumerate(days) if d <= last)
    lo, hi = per_24_months
    mean_gap = DAYS_PER_24_MONTHS / rng(name, symbol, "rate").randint(lo, hi)
    seed = seed_of(name, symbol, "days")
    out: list[Event] = []
    t, k, end = 0.0, 0, (last - EPOCH).days + 1
    while True:
        t += mean_gap * (0.25 + 1.5 * unit(seed, k))
        if out and unit(tie, k) < ties:
            # On the day of the one before, whatever its own: it exists as soon as that one
            # does, so a later clock still only adds events, none dated before it.
            out.append((out[-1][0], seed_of(name, symbol, k)))
        elif t >= end:
            return tuple(out)
        else:
            out.append((EPOCH + dt.timedelta(days=int(t)), seed_of(name, symbol, k)))
        k += 1


def business_days_after(day: dt.date, n: int) -> dt.date:
    """``day`` moved forward by ``n`` weekdays."""
    while n > 0:
        day += dt.timedelta(days=1)
        if day.weekday() < 5:
            n -= 1
    return day


def stamp(today: dt.date, hour: int = 23, minute: int = 59) -> str:
    """An ISO 8601 UTC timestamp on ``today`` (used for meta.timestamp and lastUpdated)."""
    return f"{today.isoformat()}T{hour:02d}:{minute:02d}:00Z"


# --- symbols -----------------------------------------------------------------------------------

_KNOWN: dict[str, tuple[str, float, str | None, str]] = {
    # symbol: (name, base price, cik, exchange)
    "AAPL": ("Apple Inc.", 228.0, "0000320193", "NASDAQ"),
    "MSFT": ("Microsoft Corporation", 425.0, "0000789019", "NASDAQ"),
    "TSLA": ("Tesla, Inc.", 255.0, "0001318605", "NASDAQ"),
    "NVDA": ("NVIDIA Corporation", 138.0, "0001045810", "NASDAQ"),
    "AMZN": ("Amazon.com, Inc.", 198.0, "0001018724", "NASDAQ"),
    "GOOGL": ("Alphabet Inc.", 172.0, "0001652044", "NASDAQ"),
    "META": ("Meta Platforms, Inc.", 565.0, "0001326801", "NASDAQ"),
    "BTC-USD": ("Bitcoin USD", 67500.0, None, "Crypto Currencies"),
    "BRK.B": ("Berkshire Hathaway Inc.", 455.0, "0001067983", "NYSE"),
    "^GSPC": ("S&P 500 Index", 5850.0, None, "Index Futures"),
    "JPM": ("JPMorgan Chase & Co.", 245.0, "0000019617", "NYSE"),
    "GME": ("GameStop Corp.", 27.0, "0001326380", "NYSE"),
    "IBM": ("International Business Machines Corporation", 222.0, "0000051143", "NYSE"),
    "AMD": ("Advanced Micro Devices, Inc.", 140.0, "0000002488", "NASDAQ"),
    "NFLX": ("Netflix, Inc.", 880.0, "0001065280", "NASDAQ"),
    "INTC": ("Intel Corporation", 24.0, "0000050863", "NASDAQ"),
    "KO": ("The Coca-Cola Company", 64.0, "0000021344", "NYSE"),
    "DIS": ("The Walt Disney Company", 112.0, "0001744489", "NYSE"),
    "XOM": ("Exxon Mobil Corporation", 118.0, "0000034088", "NYSE"),
    "BAC": ("Bank of America Corporation", 46.0, "0000070858", "NYSE"),
    "LMT": ("Lockheed Martin Corporation", 470.0, "0000936468", "NYSE"),
}
KNOWN_SYMBOLS = tuple(_KNOWN)

# Suffix conventions of non-US listings -> market name (from the registry's MARKETS).
SUFFIX_MARKETS = {
    ".L": "UK FTSE 100",
    ".DE": "Germany DAX",
    ".TO": "Canada TSX",
    ".AX": "Australia ASX",
    ".HK": "HK Hang Seng",
    ".MX": "Mexico BMV",
    ".SR": "Tadawul TASI",
    ".ME": "Russia MOEX",
    ".SA": "Brazil BOVESPA",
    ".TA": "Tel Aviv TASE",
}
_COMPANY_SUFFIXES = (
    "Inc.",
    "Corp.",
    "Holdings Inc.",
    "Group Inc.",
    "Technologies Inc.",
    "Therapeutics Inc.",
    "Industries Corp.",
    "Systems Inc.",
    "Financial Corp.",
    "Energy Inc.",
    "Brands Inc.",
    "Pharmaceuticals Inc.",
)


@dataclass(frozen=True)
class Profile:
    """What every generator needs to know about a symbol."""

    symbol: str
    name: str
    kind: str  # equity, foreign, crypto, index, fx, future
    exchange: str  # a market name; NASDAQ/NYSE for plain US symbols
    base_price: float
    cik: str | None
    seed: int
    # Per-symbol constants of the value series, drawn once (series cost one draw per day).
    phase: float = 0.0
    drift: float = 0.0
    bias: float = 0.0
    swing: float = 0.0
    scale: int = 0


def _kind_of(symbol: str) -> tuple[str, str]:
    if symbol.startswith("^"):
        return "index", "Index Futures"
    if symbol.endswith("=X"):
        return "fx", "Foreign Exchange"
    if symbol.endswith("=F"):
        return "future", "Commodities"
    if "-" in symbol and not symbol.startswith("-"):
        return "crypto", "Crypto Currencies"
    for suffix, market in SUFFIX_MARKETS.items():
        if symbol.endswith(suffix):
            return "foreign", market
    return "equity", ""


def _name_for(symbol: str, kind: str, seed: int) -> str:
    if kind == "index":
        return f"{symbol[1:]} Index"
    if kind == "fx":
        pair = symbol[:-2]
        return f"{pair[:3]}/{pair[3:]}" if len(pair) == 6 else pair
    if kind == "future":
        return f"{symbol[:-2]} Futures"
    if kind == "crypto":
        return symbol.replace("-", " ")
    stem = symbol.split(".")[0] if kind == "foreign" else symbol.replace(".", " ")
    word = stem.capitalize() if stem.isalpha() else stem
    if kind == "foreign":
        return f"{word} {('plc', 'AG', 'Ltd', 'SA', 'Corp')[seed % 5]}"
    return f"{word} {_COMPANY_SUFFIXES[seed % len(_COMPANY_SUFFIXES)]}"


@lru_cache(maxsize=65536)
def profile(symbol: str) -> Profile:
    """The deterministic identity of any symbol.

    >>> profile("AAPL").name
    'Apple Inc.'
    """
    seed = seed_of("profile", symbol)
    kind, market = _kind_of(symbol)
    consts: dict[str, Any] = {
        "phase": unit(seed, 10) * 6.283,
        "drift": (unit(seed, 11) - 0.4) * 0.0004,
        "bias": (unit(seed, 20) - 0.45) * 0.5,
        "swing": unit(seed, 21) * 6.283,
        "scale": 2_000 + int(unit(seed, 30) * 400_000),
    }
    if symbol in _KNOWN:
        name, price, cik, exchange = _KNOWN[symbol]
        return Profile(symbol, name, kind, exchange, price, cik, seed, **consts)
    if kind == "equity":
        market = "NASDAQ" if seed % 2 else "NYSE"
    # Log-uniform prices: a few dollars to a few hundred (crypto and indices far higher).
    price = math.exp(math.log(4.0) + unit(seed, 1) * math.log(120.0))
    if kind == "crypto":
        price *= 20
    elif kind == "index":
        price = 1000 + unit(seed, 2) * 30000
    elif kind == "fx":
        price = 0.5 + unit(seed, 2) * 1.5
    cik = f"{int(unit(seed, 3) * 1_999_999) + 1_000_000:010d}" if kind == "equity" else None
    name = _name_for(symbol, kind, seed)
    return Profile(symbol, name, kind, market, round(price, 2), cik, seed, **consts)


# --- people -------------------------------------------------------------------------------------

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


# --- value series that screeners and per-symbol endpoints share ---------------------------------


def price_on(p: Profile, day: dt.date) -> float:
    """A smooth, deterministic closing price on ``day``."""
    t = day.toordinal()
    wave = 0.12 * math.sin(t / 58.0 + p.phase) + 0.05 * math.sin(t / 9.0 + 2 * p.phase)
    noise = (unit(p.seed, t) - 0.5) * 0.02
    level = p.base_price * math.exp(p.drift * (t - 739_000) + wave + noise)
    return round(level, 6 if level < 1 else 2)


def sentiment_on(p: Profile, day: dt.date) -> float:
    """Sentiment score in [-1, 1] on ``day``: a slow swing plus daily noise."""
    t = day.toordinal()
    swing = 0.35 * math.sin(t / 23.0 + p.swing)
    noise = (unit(p.seed ^ 0x5E47, t) - 0.5) * 0.7
    return round(max(-1.0, min(1.0, p.bias + swing + noise)), 4)


def sentiment_revision(p: Profile, day: dt.date) -> tuple[dt.date, float] | None:
    """``(revised on, first published score)`` for the ~5% of days whose score the service
    revises 1 to 3 days later (the revised score is :func:`sentiment_on`); None otherwise."""
    t = day.toordinal()
    if unit(p.seed ^ 0x2E71, t) >= 0.05:
        return None
    final = sentiment_on(p, day)
    delta = 0.02 + unit(p.seed ^ 0x2E73, t) * 0.18
    first = final - delta if final - delta >= -1 else final + delta
    return day + dt.timedelta(days=1 + int(unit(p.seed ^ 0x2E72, t) * 3)), round(first, 4)


def sentiment_seen(p: Profile, day: dt.date, today: dt.date) -> float:
    """The score of ``day`` as the service shows it on ``today`` (before or after a revision)."""
    revision = sentiment_revision(p, day)
    return revision[1] if revision is not None and today < revision[0] else sentiment_on(p, day)


def put_call_on(p: Profile, day: dt.date) -> dict[str, Any]:
    """One put/call datapoint as the live service derives it: a total volume and a two-decimal
    ratio (puts per call); calls and puts are computed from those two and truncated separately,
    so their sum is the total or the total minus 1. The served ``totalVolume`` is their sum
    unless the ``volume_off_by_one`` quirk is on (then it is the service's total)."""
    t = day.toordinal()
    hundredths = 35 + int(130 * unit(p.seed ^ 0x9017, t) ** 1.4)  # the ratio, in hundredths
    total = (100 + int(p.scale * (0.6 + unit(p.seed ^ 0xCA11, t)))) * (100 + hundredths) // 100
    calls = total * 100 // (100 + hundredths)
    puts = total * hundredths // (100 + hundredths)
    rec: dict[str, Any] = {
        "date": day.isoformat(),
        "ratio": hundredths / 100,
        "callVolume": calls,
        "putVolume": puts,
        "totalVolume": calls + puts,
        "price": price_on(p, day),
    }
    if total != calls + puts:
        rec["_q"] = (("volume_off_by_one", "totalVolume", total),)
    return rec
