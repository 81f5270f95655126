"""What the live service does that a tidy spec reading would not: quirks, and records that
become visible or change as the clock moves.

Generators write every record with its whole future: private keys (starting with ``_``) say
from which day the service shows it (``_from``; ``_qfrom``: another day, with a quirk on),
which values it revises on which later day (``_r``) and which live-service quirks touch it
(``_q``). :func:`window` (through
:func:`materialise`) turns such records into what the service sends on a given day with the
given quirks switched on, so builders need not know about time or quirks. Also here: the
default clock, the quirk and bare-list option forms, and the documented revision schedule
(:data:`REVISION_RULES`, :class:`Revision`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..registry import REGISTRY

if TYPE_CHECKING:  # pragma: no cover
    from .context import Ctx

__all__ = [
    "window",
    "Revision",
    "RevisionRule",
    "REVISION_RULES",
    "revisions_of",
    "DEFAULT_TODAY",
    "as_day",
    "QUIRKS",
    "quirk_set",
    "bare_list_set",
    "materialise",
    "visible",
]

# The clock of a sandbox made without ``today=``: a fixed Friday, so that every run, notebook
# and doc example sees the same data (the app-ratings history has begun by then).
DEFAULT_TODAY = dt.date(2026, 11, 20)


def as_day(value: object) -> dt.date:
    """A ``date`` from a date, a datetime (its date; pandas Timestamps included) or ISO text.

    >>> as_day("2026-06-30")
    datetime.date(2026, 6, 30)
    """
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return dt.date.fromisoformat(value.strip()[:10])
    raise ValueError(f"not a day: {value!r}; use a date or 'YYYY-MM-DD'")


# Facts seen in the live service's published payloads and official client (fidelity issue).
QUIRKS: dict[str, str] = {
    "volume_off_by_one": "put/call totalVolume is callVolume + putVolume + 0 or 1 (calls and "
    "puts are derived from the total and a two-decimal ratio, truncated separately)",
    "null_filing_date": "an insider filingDate is null now and then",
    "award_type": "contract awardType / contractAwardType are sometimes non-empty",
    "new_vocabulary": "an insider transaction type outside the spec's list, and a new insider "
    "field (securityTitle)",
    "late_filing": "now and then an insider files a Form 4 more than a year after the "
    "transaction (the record is shown from that filing day on)",
}


def quirk_set(value: bool | Iterable[str] | None) -> frozenset[str]:
    """``True``: every quirk; ``False``/``None``: none; or the names of some.

    >>> sorted(quirk_set(["award_type"]))
    ['award_type']
    """
    if value is None or value is False:
        return frozenset()
    if value is True:
        return frozenset(QUIRKS)
    if isinstance(value, str):
        value = [value]
    names = frozenset(value)
    unknown = names - set(QUIRKS)
    if unknown:
        raise ValueError(f"unknown quirks {sorted(unknown)}; known: {', '.join(QUIRKS)}")
    return names


def bare_list_set(value: bool | Iterable[str] | None) -> frozenset[str]:
    """``True``: markets, every screener and recent endpoint; or registry names, or the
    families ``"screener"`` and ``"recent"``.

    >>> sorted(bare_list_set(["markets", "recent"]))
    ['markets', 'recent/analyst-ratings', 'recent/news']
    """
    if value is None or value is False:
        return frozenset()
    if value is True:
        # Where the official client's fixtures send ``data`` as a bare list (fidelity issue).
        crossed = (n for n, d in REGISTRY.items() if d.scope in ("screener", "recent"))
        return frozenset(("markets", *crossed))
    if isinstance(value, str):
        value = [value]
    names: set[str] = set()
    for name in value:
        family = [n for n, d in REGISTRY.items() if d.scope == name and d.version == "v2"]
        if family and name in ("screener", "recent"):
            names.update(family)
            continue
        ds = REGISTRY.get(name)
        one_list = ds is not None and ds.version == "v2" and ds.scope != "symbol"
        if not one_list:
            raise ValueError(
                f"bare_lists: {name!r} is not a v2 dataset whose data holds one record list"
            )
        names.add(name)
    return frozenset(names)


def visible(
    records: Iterable[dict[str, Any]], today_iso: str, quirks: frozenset[str] = frozenset()
) -> Iterator[dict[str, Any]]:
    """The records the service shows on ``today`` (those whose ``_from`` day has come; a
    switched-on quirk's day of ``_qfrom`` instead, where it names one)."""
    for rec in records:
        since = rec.get("_from", "")
        for quirk, day in rec.get("_qfrom", ()):
            if quirk in quirks:
                since = day
        if since <= today_iso:
            yield rec


def materialise(rec: dict[str, Any], today_iso: str, quirks: frozenset[str]) -> dict[str, Any]:
    """The record as sent on ``today``: revisions made by then applied, quirks switched on
    applied, private keys dropped (records without private keys are returned as they are)."""
    revisions = rec.get("_r")
    overrides = rec.get("_q")
    if revisions is None and overrides is None and "_from" not in rec:
        return rec
    out = {k: v for k, v in rec.items() if k[0] != "_"}
    out.update((name, value) for day, name, value in revisions or () if day <= today_iso)
    out.update((name, value) for quirk, name, value in overrides or () if quirk in quirks)
    return out


def window(
    ctx: Ctx, records: Iterable[dict[str, Any]], field: str | None = None, *, cap: int | None = None
) -> list[dict[str, Any]]:
    """What the service sends for a windowed request on ``ctx.today``: the records it shows by
    then, inside the symbol's listing span and ``ctx.start``..``ctx.end`` on ``field`` (the
    registry's window field), the newest ``ctx.limit`` (or ``cap``; limit-capped endpoints
    use their maximum), each as revised by then and with the switched-on quirks."""
    ds = ctx.ds
    field = field or ds.filter_field or "date"
    today = ctx.today.isoformat()
    out = list(visible(records, today, ctx.quirks))
    listed, delisted = ctx.listed
    lo = max(ctx.start.isoformat() if ctx.start else "", listed.isoformat() if listed else "")
    hi = ctx.end.isoformat() if ctx.end else "9999"
    if delisted is not None:  # no records from the delisting day on
        hi = min(hi, (delisted - dt.timedelta(days=1)).isoformat())
    if lo or hi != "9999":
        out = [rec for rec in out if lo <= rec[field][:10] <= hi]
    if cap is None and ds.paged:
        cap = ds.limit_bounds[1]
    n = ctx.limit if ctx.limit is not None else cap
    return [materialise(rec, today, ctx.quirks) for rec in (out if n is None else out[:n])]


# --- revisions in place -----------------------------------------------------------------------


@dataclass(frozen=True)
class RevisionRule:
    """Which records of a dataset the service rewrites in place, and when."""

    dataset: str  # registry name
    fields: tuple[str, ...]  # wire fields that change
    key: tuple[str, ...]  # what identifies the record (see :class:`Revision`)
    share: float  # the fraction of eligible records concerned
    when: str  # in words


# The numbers are the generators' own (mdframes.sandbox.filings, .synth); tests read them here.
REVISION_RULES: tuple[RevisionRule, ...] = (
    RevisionRule(
        "government_contracts",
        ("awardAmount",),
        ("awardId",),
        0.35,
        "an award is modified once or twice, 15 to 400 days after its startDate; each "
        "modification sets a new awardAmount (latest reported state, same awardId)",
    ),
    RevisionRule(
        "congress_trades",
        ("amount", "amountRaw"),
        ("chamber", "date", "politician", "transactionType", "filedAmount"),
        0.4,
        "a trade whose filed amount is a formatting variant of a bracket is first served as "
        "filed (amount = the filed text, amountRaw null) and re-normalised 3 to 60 days after "
        "its disclosure (amount = the bracket, amountRaw = the filed text)",
    ),
    RevisionRule(
        "congress_trades",
        ("owner",),
        ("chamber", "date", "politician", "transactionType", "filedAmount"),
        0.1,
        "owner is null at first and backfilled 3 to 60 days after disclosure",
    ),
    RevisionRule(
        "congress_trades",
        ("disclosureDate",),
        ("chamber", "date", "politician", "transactionType", "filedAmount"),
        0.08,
        "disclosureDate is null at first (the trade is served from its real disclosure day) "
        "and backfilled 3 to 60 days later",
    ),
    RevisionRule(
        "sentiment",
        ("score",),
        ("date",),
        0.05,
        "a day's score is first published, then revised 1 to 3 days later",
    ),
)


@dataclass(frozen=True)
class Revision:
    """One in-place change: from ``on`` the record identified by ``key`` (wire names, plus
    ``chamber`` and ``filedAmount`` = ``amountRaw or amount`` for congress) shows ``after``
    in ``field`` where the day before it showed ``before``."""

    dataset: str
    symbol: str
    on: dt.date
    field: str
    before: Any
    after: Any
    key: dict[str, Any] = dataclasses.field(hash=False)


def revisions_of(
    dataset: str,
    symbol: str,
    records: Iterable[dict[str, Any]],
    key: Iterable[str],
    start: dt.date,
    end: dt.date,
    extra: dict[str, Any] | None = None,
) -> list[Revision]:
    """The revisions of ``records`` made between ``start`` and ``end`` (inclusive)."""
    lo, hi = start.isoformat(), end.isoformat()
    names = tuple(key)
    out = []
    for rec in records:
        changes = rec.get("_r") or ()
        for i, (day, name, value) in enumerate(changes):
            if not lo <= day <= hi:
                continue
            before = rec.get(name)
            for earlier_day, earlier_name, earlier in changes[:i]:
                if earlier_name == name and earlier_day < day:
                    before = earlier
            ident = {**(extra or {})}
            for k in names:
                if k == "filedAmount":
                    final = materialise(rec, "9999", frozenset())
                    ident[k] = final.get("amountRaw") or final.get("amount")
                elif k in rec:
                    ident[k] = rec[k]
            out.append(
                Revision(dataset, symbol, dt.date.fromisoformat(day), name, before, value, ident)
            )
    return sorted(out, key=lambda r: (r.on, str(r.key), r.field))
