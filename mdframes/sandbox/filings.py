"""Filed records: insider transactions, congress trades, lobbying filings, contract awards and
patents. Each is an event history on the fixed timeline of :func:`~mdframes.sandbox.synth.events`
(oldest first while generating, so running state such as an insider's holdings is stable),
served newest first. Records carry when the service first shows them (``_from``: the filing
or disclosure day) and what it rewrites in place later (``_r``), see
:data:`~mdframes.sandbox.world.REVISION_RULES`.
"""

from __future__ import annotations

import datetime as dt
import random
from functools import lru_cache
from typing import Any

from ..registry import (
    CHAMBERS,
    CONGRESS_BRACKETS,
    INSIDER_GROUPS,
    INSIDER_TYPES,
    PATENT_TYPES,
    REGISTRY,
    Dataset,
)
from .context import Ctx, HttpError
from .synth import (
    Event,
    business_days_after,
    events,
    history_start,
    person,
    price_on,
    profile,
    rng,
    unit,
)
from .world import Revision, revisions_of, window

__all__ = [
    "Records",
    "insider_history",
    "congress_history",
    "lobbying_history",
    "contracts_history",
    "patent_history",
    "filed_amount",
    "newest_first",
    "arrival",
    "served_from",
    "congress",
    "congress_revisions",
    "contract_revisions",
]

Records = tuple[dict[str, Any], ...]
Changes = tuple[tuple[str, str, Any], ...]  # (day, wire field, value) or (quirk, field, value)


def newest_first(
    out: list[dict[str, Any]], field: str, today: dt.date, count: int | None, ds: Dataset
) -> Records:
    """Records sorted newest first on ``field`` (same-day ones as :func:`arrival` sends
    them); without ``count`` only the trailing 24 months (sized fixtures keep every record)."""
    if count is None:
        lo = history_start(today).isoformat()
        out = [rec for rec in out if rec[field] >= lo]
    return tuple(arrival(sorted(out, key=lambda rec: rec[field], reverse=True), field, ds))


def arrival(records: list[dict[str, Any]], field: str, ds: Dataset) -> list[dict[str, Any]]:
    """Records (newest first on ``field``) with those that share its value in an order that
    is not their identity's, whichever way a reader walks the answer: the service sends them
    in the order it indexed them, so a reader that kept that order, instead of ordering ties
    by ``ds``'s record identity as the loaders and the lake do, disagrees with them.

    Two records come in identity order (read oldest first, as loaders do, they are the other
    way round); of three or more, the first two are swapped (neither order either way).
    """
    by_name = {f.name: f.wire for f in ds.all_fields}
    time = ds.time_column
    wires = [by_name.get(c, c) for c in ds.merge_id.names if c != time]
    if not wires:
        return records

    def rank(rec: dict[str, Any]) -> tuple:
        return tuple(
            (rec.get(w) is None, rec.get(w) if rec.get(w) is not None else 0) for w in wires
        )

    out: list[dict[str, Any]] = []
    i = 0
    while i < len(records):
        j = i + 1
        while j < len(records) and records[j][field] == records[i][field]:
            j += 1
        group = sorted(records[i:j], key=rank) if j - i > 1 else records[i:j]
        if len(group) > 2:
            group[0], group[1] = group[1], group[0]
        out.extend(group)
        i = j
    return out


def _stream(
    name: str,
    symbol: str,
    today: dt.date,
    rate: tuple[int, int],
    count: int | None,
    anchor: dt.date | None,
    lag: int = 0,
    ties: float = 0.2,
) -> tuple[Event, ...]:
    at = anchor if count is not None else None
    return events(name, symbol, today, rate, count, at, lag, ties)


def served_from(today: dt.date, count: int | None) -> dt.date:
    """The oldest day a history shows: the trailing 24 months (sized fixtures: all)."""
    return dt.date.min if count is not None else history_start(today) - dt.timedelta(days=7)


def _later(r: random.Random, day: dt.date, lo: int, hi: int) -> str:
    return (day + dt.timedelta(days=r.randint(lo, hi))).isoformat()


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
def insider_history(symbol: str, today: dt.date, count: int | None, anchor: dt.date) -> Records:
    """Form 4 transactions, each shown from its filing day (due within 2 business days)."""
    p = profile(symbol)
    setup = rng("insider-trading", symbol)
    # Conversion happens on NASDAQ only (spec); everything else anywhere.
    types = [t for t in INSIDER_TYPES if t != "Conversion" or p.exchange == "NASDAQ"]
    weights = [_INSIDER_WEIGHTS[t] for t in types]
    people = insider_people(symbol)
    holdings = {name: setup.randint(20_000, 3_000_000) for name, _ in people}
    cik_num = int(p.cik) if p.cik else 1_000_000 + p.seed % 999_999
    out = []
    first = served_from(today, count)
    stream = _stream("insider-trading", symbol, today, (50, 70), count, anchor)
    for i, (day, seed) in enumerate(stream):
        # Who, what and how many come from cheap draws: every event moves the holdings, but
        # only the served ones are built.
        name, relationship = people[int(unit(seed, 3) * len(people))]
        kind = _pick(types, weights, unit(seed, 4))
        shares = 100 + int(unit(seed, 5) * 59_901)
        if kind != "Conversion":
            holdings[name] = max(0, holdings[name] + (shares if kind in _ACQUIRE else -shares))
        if day < first:
            continue
        r = random.Random(seed)
        free = kind in ("Award", "Gift", "Conversion")
        pps = 0.0 if free else round(price_on(p, day) * (0.97 + r.random() * 0.06), 2)
        filed = business_days_after(day, r.randint(0, 2))
        if count is not None:  # a sized fixture is wholly filed by its anchor
            filed = min(filed, anchor)
        quirks, late = _insider_quirks(seed), None
        if count is None and unit(seed, 6) < LATE_SHARE:
            late = (day + dt.timedelta(days=380 + int(unit(seed, 7) * 200))).isoformat()
            quirks += (("late_filing", "filingDate", late),)
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
                "_from": filed.isoformat(),
                "_q": quirks,
                **({} if late is None else {"_qfrom": (("late_filing", late),)}),
            }
        )
    return newest_first(out, "date", today, count, REGISTRY["insider_trading"])


def _pick(items: list[str], weights: list[int], u: float) -> str:
    """The item at ``u`` of the cumulative weights (a weighted choice from one uniform)."""
    target, total = u * sum(weights), 0
    for item, weight in zip(items, weights, strict=True):
        total += weight
        if target < total:
            return item
    return items[-1]


def _insider_quirks(seed: int) -> Changes:
    """The live service's drift on one insider record (served only with those quirks on)."""
    out: list[tuple[str, str, Any]] = [("new_vocabulary", "securityTitle", "Common Stock")]
    if unit(seed, 1) < 0.04:
        out.append(("null_filing_date", "filingDate", None))
    if unit(seed, 2) < 0.03:
        out.append(("new_vocabulary", "transactionType", UNLISTED_INSIDER_TYPE))
    return tuple(out)


# The share of Form 4s filed 380 to 580 days late (quirk ``late_filing``): later than the
# year a load by transaction date reaches back for late filers (registry slack_days).
LATE_SHARE = 0.05
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
def congress_history(
    chamber: str, symbol: str, today: dt.date, count: int | None, anchor: dt.date
) -> Records:
    """Member trades, each shown from its disclosure (1 to 45 days after the trade) and some
    rewritten later (:data:`~mdframes.sandbox.world.REVISION_RULES`)."""
    setup = rng("congress", chamber, symbol)
    pool = members(chamber)[: setup.randint(4, 12)]
    blank_owner = "SELF" if chamber == "house" else "UNKNOWN"
    out: list[dict[str, Any]] = []
    taken: set[tuple[Any, ...]] = set()
    stream = _stream(f"congress/{chamber}", symbol, today, (24, 36), count, anchor, lag=1)
    first = served_from(today, count)
    for day, seed in stream:
        if day < first:
            continue
        r = random.Random(seed)
        amount, raw, flag = congress_amount(r)
        owner = r.choices(("SELF", "SP", "DC", "JT", "", "OT"), weights=(45, 25, 6, 12, 10, 2))[0]
        disclosed = day + dt.timedelta(days=r.randint(1, 45))
        if count is not None:  # a sized fixture is wholly disclosed by its anchor
            disclosed = min(disclosed, anchor)
        trade: dict[str, Any] = {
            "date": day.isoformat(),
            "politician": r.choice(pool),
            "transactionType": "Purchase" if r.random() < 0.52 else "Sale",
            "amount": amount,
            "owner": owner or blank_owner,
            "amountRaw": raw,
            "amountFlag": flag,
            # ~2% never get one.
            "disclosureDate": None if r.random() < 0.02 else disclosed.isoformat(),
            "_from": disclosed.isoformat(),
        }
        changes: list[tuple[str, str, Any]] = []
        if raw is not None and r.random() < 0.4:  # re-normalised after disclosure
            trade["amount"], trade["amountRaw"] = raw, None
            on = _later(r, disclosed, 3, 60)
            changes += [(on, "amount", amount), (on, "amountRaw", raw)]
        if r.random() < 0.1:  # owner backfilled
            changes.append((_later(r, disclosed, 3, 60), "owner", trade["owner"]))
            trade["owner"] = None
        if trade["disclosureDate"] is not None and r.random() < 0.08:  # date backfilled
            changes.append((_later(r, disclosed, 3, 60), "disclosureDate", trade["disclosureDate"]))
            trade["disclosureDate"] = None
        if changes:
            trade["_r"] = tuple(sorted(changes))
        # One identity, one record (as the service sends them), before and after its
        # revisions, among every trade of the day (ties included): else another member.
        for _ in pool:
            if not _identities(trade) & taken:
                break
            trade["politician"] = pool[(pool.index(trade["politician"]) + 1) % len(pool)]
        taken |= _identities(trade)
        out.append(trade)
    return newest_first(out, "date", today, count, REGISTRY["congress_trades"])


def _identities(trade: dict[str, Any]) -> set[tuple[Any, ...]]:
    """The trade's record identity (the registry's: date, member, type, ``amountRaw`` or
    else ``amount``) as first disclosed and as revised."""
    revised = {**trade, **{name: value for _, name, value in trade.get("_r", ())}}
    return {
        (t["date"], t["politician"], t["transactionType"], t["amountRaw"] or t["amount"])
        for t in (trade, revised)
    }


def filed_amount(trade: dict[str, Any]) -> str:
    """The amount text as originally filed (older shapes and v1 serve this)."""
    return trade["amountRaw"] or trade["amount"]


def congress(ctx: Ctx) -> dict[str, Any]:
    """``/v2/congress/{chamber}/{symbol}``: the window filters on the trade date."""
    chamber, symbol = ctx.part("chamber"), ctx.part("symbol")
    if chamber not in CHAMBERS:
        raise HttpError(404, f"unknown chamber {chamber!r}; use house or senate")
    trades = window(ctx, congress_history(chamber, *ctx.history_args(symbol)))
    if "congress" in ctx.legacy:
        trades = [
            {
                k: (filed_amount(t) if k == "amount" else v)
                for k, v in t.items()
                if k not in _NEW_CONGRESS
            }
            for t in trades
        ]
    p = profile(symbol)
    return {"symbol": p.symbol, "name": p.name, "chamber": chamber, "trades": trades}


_NEW_CONGRESS = {"owner", "amountRaw", "amountFlag"}
_CONGRESS_KEY = ("date", "politician", "transactionType", "filedAmount")


def congress_revisions(
    symbol: str, start: dt.date, end: dt.date, count: int | None, anchor: dt.date
) -> list[Revision]:
    out = []
    for chamber in CHAMBERS:
        history = congress_history(chamber, symbol, end, count, anchor)
        out += revisions_of(
            "congress_trades", symbol, history, _CONGRESS_KEY, start, end, {"chamber": chamber}
        )
    return sorted(out, key=lambda r: (r.on, str(r.key), r.field))


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
def lobbying_history(symbol: str, today: dt.date, count: int | None, anchor: dt.date) -> Records:
    p = profile(symbol)
    out: list[dict[str, Any]] = []
    first = served_from(today, count)
    for day, seed in _stream("lobbying", symbol, today, (16, 24), count, anchor):
        if day < first:
            continue
        r = random.Random(seed)
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
    return newest_first(out, "date", today, count, REGISTRY["lobbying"])


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
def contracts_history(symbol: str, today: dt.date, count: int | None, anchor: dt.date) -> Records:
    """Awards by start date; about a third are modified later (a new ``awardAmount``)."""
    p = profile(symbol)
    out = []
    stream = _stream("government-contracts", symbol, today, (20, 30), count, anchor)
    first = served_from(today, count)
    for i, (day, seed) in enumerate(stream):
        if day < first:
            continue
        r = random.Random(seed)
        agency, subs = r.choice(AGENCIES)
        code, desc = r.choice(NAICS)
        indefinite = r.random() < 0.2
        end = "" if indefinite else (day + dt.timedelta(days=r.randint(90, 1800))).isoformat()
        amount = round(r.uniform(25_000, 40_000_000), 2)
        award: dict[str, Any] = {
            "awardId": f"{agency[:2].upper()}{p.seed % 99991:05d}{day:%y}C{i:05d}",
            "awardAmount": amount,
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
        if r.random() < 0.35:  # modified once or twice, 15 to 400 days after the start
            changes, on = [], day
            for _ in range(r.randint(1, 2)):
                on += dt.timedelta(days=r.randint(15, 200))
                amount = round(amount * r.uniform(0.85, 1.6), 2)
                changes.append((on.isoformat(), "awardAmount", amount))
            award["_r"] = tuple(changes)
        out.append(award)
    return newest_first(out, "startDate", today, count, REGISTRY["government_contracts"])


def contract_revisions(
    symbol: str, start: dt.date, end: dt.date, count: int | None, anchor: dt.date
) -> list[Revision]:
    history = contracts_history(symbol, end, count, anchor)
    return revisions_of("government_contracts", symbol, history, ("awardId",), start, end)


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
def patent_history(symbol: str, today: dt.date, count: int | None, anchor: dt.date) -> Records:
    """Grants (on Tuesdays), the window on the grant date."""
    p = profile(symbol)
    out = []
    seen: set[int] = set()
    first = served_from(today, count)
    # Grants issue weekly, so patents share their grant day without ties of their own.
    stream = _stream("patent-filings", symbol, today, (50, 70), count, anchor, ties=0.0)
    for day, seed in stream:
        # Unique within the symbol; across symbols a hash collision is vanishingly rare.
        number = 10_000_000 + seed % 89_000_000
        while number in seen:
            number += 1
        seen.add(number)
        if day < first:
            continue
        r = random.Random(seed)
        grant = day - dt.timedelta(days=(day.weekday() - 1) % 7)  # grants issue on Tuesdays
        kind = r.choices(PATENT_TYPES, weights=(85, 10, 1, 4))[0]
        days = r.randint(400, 1500)
        sections = r.sample(sorted(CPC), r.randint(1, 2))
        inventors = [person(r) for _ in range(r.randint(1, 5))]
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
    return newest_first(out, "patentDate", today, count, REGISTRY["patent_filings"])
