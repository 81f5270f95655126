"""What the live service does that a tidy spec reading would not: quirks, and records that
become visible or change as the clock moves.

Generators write every record with its whole future: private keys (starting with ``_``) say
from which day the service shows it (``_from``), which values it revises on which later day
(``_r``) and which live-service quirks touch it (``_q``). :func:`materialise` turns such a
record into what the service sends on a given day with the given quirks switched on; nothing
else in the sandbox needs to know about time or quirks.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from typing import Any

from ..registry import REGISTRY

__all__ = [
    "DEFAULT_TODAY",
    "as_day",
    "QUIRKS",
    "quirk_set",
    "BARE_LIST_DATASETS",
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
        try:
            return dt.date.fromisoformat(value.strip()[:10])
        except ValueError:
            pass
    raise ValueError(f"not a day: {value!r}; use a date or 'YYYY-MM-DD'")


# Facts seen in the live service's published payloads and official client (fidelity issue).
QUIRKS: dict[str, str] = {
    "volume_off_by_one": "put/call totalVolume is callVolume + putVolume + 0 or 1 (calls and "
    "puts are derived from the total and a two-decimal ratio, truncated separately)",
    "null_filing_date": "an insider filingDate is null now and then",
    "award_type": "contract awardType / contractAwardType are sometimes non-empty",
    "new_vocabulary": "an insider transaction type outside the spec's list, and a new insider "
    "field (securityTitle)",
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


def _bare_list_datasets() -> tuple[str, ...]:
    return ("markets",) + tuple(n for n, d in REGISTRY.items() if d.scope in ("screener", "recent"))


# Where the official client's fixtures send ``data`` as a bare list (fidelity issue, fact 2).
BARE_LIST_DATASETS = _bare_list_datasets()


def bare_list_set(value: bool | Iterable[str] | None) -> frozenset[str]:
    """``True``: markets, every screener and recent endpoint; or registry names, or the
    families ``"screener"`` and ``"recent"``.

    >>> sorted(bare_list_set(["markets", "recent"]))
    ['markets', 'recent/analyst-ratings', 'recent/news']
    """
    if value is None or value is False:
        return frozenset()
    if value is True:
        return frozenset(_bare_list_datasets())
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


def visible(records: Iterable[dict[str, Any]], today_iso: str) -> Iterator[dict[str, Any]]:
    """The records the service shows on ``today`` (those whose ``_from`` day has come)."""
    for rec in records:
        if rec.get("_from", "") <= today_iso:
            yield rec


def materialise(rec: dict[str, Any], today_iso: str, quirks: frozenset[str]) -> dict[str, Any]:
    """The record as sent on ``today``: revisions made by then applied, quirks switched on
    applied, private keys dropped (records without private keys are returned as they are)."""
    revisions = rec.get("_r")
    overrides = rec.get("_q")
    if revisions is None and overrides is None and "_from" not in rec:
        return rec
    out = {k: v for k, v in rec.items() if k[0] != "_"}
    for day, name, value in revisions or ():
        if day <= today_iso:
            out[name] = value
    for quirk, name, value in overrides or ():
        if quirk in quirks:
            out[name] = value
    return out
