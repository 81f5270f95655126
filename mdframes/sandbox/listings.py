"""The ticker universe: which symbols exist, in which markets, and from when to when.

The universe is synthetic but shaped like the real one: every market of the registry's
``MARKETS`` has members, US markets overlap (DOW 30 within the S&P 500 within NASDAQ/NYSE),
and the US region alone holds more than 20,000 tickers so that the largest screener page
can be served. It also moves: from :data:`CHANGES_FROM` on, every weekday one NASDAQ or NYSE
member is delisted and a new symbol is listed (:func:`listing_changes`). A delisted symbol
keeps its per-symbol history (records before its delisting day) but leaves ``/v2/tickers``
and the screeners; a new one answers 404 before its listing day and has no records before
it. Symbols outside the universe answer 404, as the real service would.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from .._typing import DateLike
from ..registry import MARKETS
from .synth import KNOWN_SYMBOLS, SUFFIX_MARKETS, profile, seed_of
from .world import DEFAULT_TODAY, as_day

__all__ = [
    "MARKET_REGION",
    "REGIONS",
    "CHANGES_FROM",
    "CHANGES_UNTIL",
    "ListingChange",
    "listing_changes",
    "span",
    "is_served",
    "served_symbols",
    "universe",
    "universe_symbols",
    "select",
]

MARKET_REGION = dict(MARKETS)
REGIONS = tuple(dict.fromkeys(region for _, region in MARKETS))
CHANGES_FROM = dt.date(2025, 1, 6)  # the first weekday with a listing change
CHANGES_UNTIL = dt.date(2027, 12, 31)  # the last one (the schedule is finite and documented)

# Members per market (primary listings). US sums to 20,600 unique tickers.
_SIZES = {
    "NASDAQ": 3300,
    "NYSE": 2700,
    "ETFs": 2600,
    "OTC Market": 12000,
    "UK FTSE 100": 100,
    "Germany DAX": 40,
    "Canada TSX": 600,
    "Australia ASX": 800,
    "HK Hang Seng": 80,
    "Mexico BMV": 150,
    "Foreign Exchange": 60,
    "Commodities": 40,
    "Crypto Currencies": 300,
    "Index Futures": 30,
    "Tadawul TASI": 250,
    "Russia MOEX": 200,
    "Brazil BOVESPA": 400,
    "Tel Aviv TASE": 500,
}
_ALPHA = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SUFFIX_OF = {market: suffix for suffix, market in SUFFIX_MARKETS.items()}
_CURRENCIES = ("USD", "EUR", "JPY", "GBP", "CHF", "CAD", "AUD", "NZD", "SEK", "NOK", "MXN", "HKD")


def _letters(i: int, width: int, salt: int) -> str:
    # 7919 is coprime to 26, so i -> 7919 * i + salt is a bijection mod 26**width:
    # scattered-looking codes, unique within a market.
    n = (i * 7_919 + salt) % 26**width
    return "".join(_ALPHA[n // 26**k % 26] for k in range(width))  # its base-26 digits


# Market -> the name of its i-th synthetic member (each market its own alphabet and suffix).
_MEMBER_NAME: dict[str, Callable[[int], str]] = {
    "NASDAQ": lambda i: _letters(i, 4, 11),
    "NYSE": lambda i: _letters(i, 3, 5),
    "ETFs": lambda i: _letters(i, 4, 300_001),
    "OTC Market": lambda i: _letters(i, 4, 150_007) + "F",
    "Commodities": lambda i: _letters(i, 2, 3) + "=F",
    "Crypto Currencies": lambda i: _letters(i, 3, 17) + "-USD",
    "Index Futures": lambda i: "^" + _letters(i, 3, 29),
}


def _foreign_member(market: str) -> Callable[[int], str]:
    """Numbered codes (Hong Kong, Saudi Arabia) or letters, with the exchange's suffix."""
    suffix = _SUFFIX_OF[market]
    if market in ("HK Hang Seng", "Tadawul TASI"):
        return lambda i: f"{1000 + i * 7:04d}{suffix}"
    return lambda i: _letters(i, 3, 41 + len(market)) + suffix


def _member_symbols(market: str, n: int) -> list[str]:
    if market == "Foreign Exchange":
        return [f"{a}{b}=X" for a in _CURRENCIES for b in _CURRENCIES if a != b][:n]
    name = _MEMBER_NAME.get(market) or _foreign_member(market)
    return [name(i) for i in range(n)]


@lru_cache(maxsize=1)
def _base() -> dict[str, list[str]]:
    """Symbol -> markets (primary first) of the universe before any listing change."""
    entries: dict[str, list[str]] = {}
    for market in (m for m, _ in MARKETS if m in _SIZES):
        own = [s for s in KNOWN_SYMBOLS if profile(s).exchange == market]
        for symbol in own + _member_symbols(market, _SIZES[market] - len(own)):
            entries.setdefault(symbol, [market])
    # Index memberships on top of the primary listings.
    us_large = [s for s, ms in entries.items() if ms[0] in ("NASDAQ", "NYSE")]
    sp500 = [s for s in KNOWN_SYMBOLS if s in entries and entries[s][0] in ("NASDAQ", "NYSE")]
    sp500 += [s for s in us_large if s not in sp500][: 500 - len(sp500)]
    for i, symbol in enumerate(sp500):
        entries[symbol].append("S&P 500")
        if i < 30:
            entries[symbol].append("DOW 30")
    return entries


@dataclass(frozen=True)
class ListingChange:
    """One entry of the listing schedule: ``symbol`` joins (``"listed"``) or leaves
    (``"delisted"``) ``market`` on ``date`` (from that day on)."""

    date: dt.date
    symbol: str
    market: str
    event: str  # "listed" or "delisted"


def _weekdays(first: dt.date, last: dt.date) -> list[dt.date]:
    days = (first + dt.timedelta(days=i) for i in range((last - first).days + 1))
    return [d for d in days if d.weekday() < 5]


@lru_cache(maxsize=1)
def _schedule() -> tuple[ListingChange, ...]:
    base = _base()
    days = _weekdays(CHANGES_FROM, CHANGES_UNTIL)
    out: list[ListingChange] = []
    taken = set(base)
    for market, width, salt in (("NASDAQ", 4, 700_001), ("NYSE", 3, 9_001)):
        mine = days[0 if market == "NASDAQ" else 1 :: 2]
        # Never a famous name or an index member: DOW 30 and S&P 500 keep their sizes.
        leaving = sorted(
            (s for s, ms in base.items() if ms == [market] and s not in KNOWN_SYMBOLS),
            key=lambda s: seed_of("delisting", s),
        )
        fresh: list[str] = []
        i = 0
        while len(fresh) < len(mine):
            candidate = _letters(i, width, salt)
            i += 1
            if candidate not in taken:
                taken.add(candidate)
                fresh.append(candidate)
        for day, gone, new in zip(mine, leaving, fresh, strict=False):
            out.append(ListingChange(day, gone, market, "delisted"))
            out.append(ListingChange(day, new, market, "listed"))
    return tuple(sorted(out, key=lambda c: (c.date, c.event, c.symbol)))


def listing_changes(
    start: DateLike | None = None, end: DateLike | None = None
) -> list[ListingChange]:
    """The listing schedule between ``start`` and ``end`` (inclusive), oldest first.

    >>> first = listing_changes(CHANGES_FROM, CHANGES_FROM)
    >>> sorted(c.event for c in first)
    ['delisted', 'listed']
    """
    lo = dt.date.min if start is None else as_day(start)
    hi = dt.date.max if end is None else as_day(end)
    return [c for c in _schedule() if lo <= c.date <= hi]


@lru_cache(maxsize=1)
def _spans() -> dict[str, tuple[dt.date | None, dt.date | None]]:
    spans: dict[str, tuple[dt.date | None, dt.date | None]] = {}
    for c in _schedule():
        listed, delisted = spans.get(c.symbol, (None, None))
        spans[c.symbol] = (c.date, delisted) if c.event == "listed" else (listed, c.date)
    return spans


def span(symbol: str) -> tuple[dt.date | None, dt.date | None]:
    """``(listed, delisted)``: the day a symbol joined the universe (None: before the schedule)
    and the first day it is no longer listed (None: still listed)."""
    return _spans().get(symbol, (None, None))


@lru_cache(maxsize=1)
def universe() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """``(symbol, name, markets)`` for every ticker ever listed, primary market first; the
    schedule's new listings follow the base universe in listing order."""
    entries = {s: tuple(ms) for s, ms in _base().items()}
    entries.update((c.symbol, (c.market,)) for c in _schedule() if c.event == "listed")
    return tuple((s, profile(s).name, ms) for s, ms in entries.items())


def is_served(symbol: str, today: dt.date) -> bool:
    """Does the per-symbol side know ``symbol`` on ``today``? (Delisted symbols keep their
    history; a new listing is unknown before its listing day.)"""
    if symbol not in _base() and symbol not in _spans():
        return False
    listed, _ = span(symbol)
    return listed is None or listed <= today


def served_symbols(today: dt.date) -> frozenset[str]:
    """Every symbol the per-symbol endpoints answer on ``today``: the universe as listed
    then, plus the delisted symbols (their history stays)."""
    return frozenset(s for s in set(_base()) | set(_spans()) if is_served(s, today))


def _active(symbol: str, today: dt.date) -> bool:
    listed, delisted = span(symbol)
    return (listed is None or listed <= today) and (delisted is None or today < delisted)


@lru_cache(maxsize=256)
def select(
    today: dt.date, market: str | None = None, region: str | None = None, type: str | None = None
) -> tuple[int, ...]:
    """Indexes into :func:`universe` of the tickers listed on ``today`` that match the
    filters."""
    out = []
    for i, (symbol, _, markets) in enumerate(universe()):
        if not _active(symbol, today):
            continue
        if market and market not in markets:
            continue
        if region and not any(MARKET_REGION[m] == region for m in markets):
            continue
        # Monthly forecasts are not published for currency pairs and index futures.
        if type == "monthly" and markets[0] in ("Foreign Exchange", "Index Futures"):
            continue
        out.append(i)
    return tuple(out)


def universe_symbols(today: DateLike | None = None) -> tuple[str, ...]:
    """Every symbol listed on ``today`` (default: the sandbox's first day,
    :data:`~mdframes.sandbox.DEFAULT_TODAY`), in universe order (what ``/v2/tickers`` lists).

    >>> "AAPL" in universe_symbols(dt.date(2026, 11, 20))
    True
    >>> universe_symbols() == universe_symbols("2026-11-20")
    True
    """
    rows = universe()
    return tuple(rows[i][0] for i in select(DEFAULT_TODAY if today is None else as_day(today)))
