"""Each sync's windows with their time: coverage as it stood (CONTRACT §10.2, §11.2).

A dataset's state (``_state.json``) says what its units cover now, merged: it cannot tell how
far a window reached at an earlier time. Beside the state, ``_ledger/`` keeps one small file
per committed batch, written before the state that counts it and never changed::

    {"sync": sync id, "events": [[fetched at, start, end, [unit ids]], ...],
     "rows": {unit id: records}, "failed": {unit id: [status, error, at]}}

(``start`` None: from the history's start; a snapshot's event spans its first day to this
one.) The coverage at T is folded from the events at or before T, so later syncs,
compactions, repairs and vacuums (the folder is hidden from Delta and from repair) leave it
as it was. A lake synced before the ledger gets a first file made from its state at its next
sync (a unit's windows known from its first fetch up to that day, the rest from its latest
fetch, backfills from their own time): before that, as near as the state can tell; a lake with
no ledger yet is read through the same file, made in memory.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from dataclasses import dataclass
from typing import Any, Final

from .store.faults import damaged
from .sync.state import windows_of

__all__ = ["LEDGER", "Folded", "write_batch", "seed_if_needed", "fold", "read_ledger", "OPEN"]

LEDGER: Final = "_ledger"
OPEN: Final = -(2**40)  # the day before every day: a window from the history's start
_EPOCH: Final = dt.date(1970, 1, 1).toordinal()
_SEED_SYNC: Final = "000000-seed"
_SEED: Final = f"{_SEED_SYNC}.json"  # sorts before every sync's files


def _day(text: str | None) -> int:
    return OPEN if text is None else dt.date.fromisoformat(text).toordinal() - _EPOCH


def _iso_day(day: int) -> str | None:
    return None if day == OPEN else dt.date.fromordinal(day + _EPOCH).isoformat()


@functools.lru_cache(maxsize=4096)
def _when(text: str) -> dt.datetime:
    t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return t.replace(tzinfo=dt.timezone.utc) if t.tzinfo is None else t.astimezone(dt.timezone.utc)


def _order(item: tuple[tuple[str, str | None, str], list[str]]) -> tuple[str, str, str]:
    at, a, b = item[0]
    return at, a or "", b


def write_batch(table: Any, sync_id: str, batch: int, state: dict[str, Any],
                done: list[tuple[str, tuple[str | None, str] | None]],
                failed: list[str]) -> None:  # fmt: skip
    """Record one committed batch: ``done`` (unit id, window or None for a snapshot) as the
    state now holds them after ``record_done``; ``failed`` unit ids as ``record_failed``
    left them. Written before the state is saved (a crash between leaves the ledger ahead
    of the state: the next sync fetches those units again and finds the same rows)."""
    storage, folder = table.storage, table.folder
    events: dict[tuple[str, str | None, str], list[str]] = {}
    rows: dict[str, int] = {}
    for unit_id, window in done:
        entry = state["units"][unit_id]
        at = entry.get("fetched_at")
        if not isinstance(at, str):
            continue
        if window is None:  # a snapshot: the days from its first to this one
            window = (_when(entry.get("first_fetched_at", at)).date().isoformat(),
                      _when(at).date().isoformat())  # fmt: skip
        events.setdefault((at, window[0], window[1]), []).append(unit_id)
        if isinstance(entry.get("rows"), int):
            rows[unit_id] = entry["rows"]
    fails = {}
    for unit_id in failed:
        f = state.get("failed", {}).get(unit_id)
        if isinstance(f, dict) and isinstance(f.get("at"), str):
            fails[unit_id] = [f.get("status", "failed"), f.get("error", ""), f["at"]]
    if not events and not fails:
        return
    body = {"sync": sync_id, "events": [[*k, ids] for k, ids in sorted(events.items(), key=_order)],
            "rows": rows, "failed": fails}  # fmt: skip
    storage.write_json(body, folder, LEDGER, f"{sync_id}-{batch:04d}.json")


def seed_if_needed(table: Any, state: dict[str, Any]) -> None:
    """Before a lake's first ledger file for a dataset, the file its state makes."""
    if state.get("units") and not table.storage.listdir(table.folder, LEDGER):
        table.storage.write_json(_seed(state), table.folder, LEDGER, _SEED)


def _seed(state: dict[str, Any]) -> dict[str, Any]:
    events: dict[tuple[str, str | None, str], list[str]] = {}
    for unit_id, entry in state.get("units", {}).items():
        last = entry.get("fetched_at")
        if not isinstance(last, str):
            continue
        first = entry.get("first_fetched_at", last)
        windows = windows_of(entry) or [[_when(first).date().isoformat(),
                                         _when(last).date().isoformat()]]  # fmt: skip
        first_day = _when(first).date().isoformat()
        for a, b in windows:
            assert b is not None  # a window always ends
            if a is None or a <= first_day:  # the part the first fetch can have reached
                events.setdefault((first, a, min(b, first_day)), []).append(unit_id)
            events.setdefault((last, a, b), []).append(unit_id)
        for a, b, at in entry.get("filled", ()):
            events.setdefault((at, a, b), []).append(unit_id)
    rows = {
        u: e["rows"] for u, e in state.get("units", {}).items() if isinstance(e.get("rows"), int)
    }
    return {"sync": _SEED_SYNC, "events": [[*k, ids] for k, ids in sorted(events.items(), key=_order)],
            "rows": rows, "failed": {}}  # fmt: skip


def read_ledger(table: Any, state: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The ledger's files in order (parsed files kept on ``table``: they never change);
    none yet: the file the state would seed."""
    storage, folder = table.storage, table.folder
    kept: dict[str, dict[str, Any]] = table.ledger_files
    out = []
    for entry in storage.listdir(folder, LEDGER):
        if not entry.name.endswith(".json") or entry.name.startswith("."):
            continue
        body = kept.get(entry.name)
        if body is None:
            raw = storage.read_bytes(folder, LEDGER, entry.name)
            try:
                body = json.loads(raw or b"")
                body["events"]  # noqa: B018 - its presence is the check
            except (ValueError, KeyError, TypeError) as exc:
                name = f"{folder}/{LEDGER}/{entry.name}"
                raise damaged(table.ds.name, name, storage.scrub(exc)) from None
            kept[entry.name] = body
        out.append(body)
    if not out and state and state.get("units"):
        out.append(_seed(state))
    return out


@dataclass(frozen=True)
class _Node:
    """One unit's coverage after some events: windows (merged day ranges), the fills (days
    first covered after the day of the dataset's first sync, with the day they became
    known), the first and latest fetch times. Units with the same history share nodes."""

    windows: tuple[tuple[int, int], ...]
    fills: tuple[tuple[int, int, int], ...]
    first: str
    last: str


@dataclass
class Folded:
    """A dataset's coverage at a time, in the state's own form (``units``, ``failed``) for
    the coverage frame, and ``fills`` per unit for rows judged at their own date."""

    units: dict[str, dict[str, Any]]
    failed: dict[str, dict[str, Any]]
    fills: dict[str, tuple[tuple[int, int, int], ...]]


def fold(entries: list[dict[str, Any]], upto: dt.datetime | None) -> Folded:
    """The coverage the events at or before ``upto`` (None: all) made."""
    nodes: dict[str, _Node] = {}
    failed: dict[str, dict[str, Any]] = {}
    rows: dict[str, int] = {}
    seen: set[str] = set()  # units of the file folded so far
    step = functools.lru_cache(maxsize=None)(_step)
    # Rows dated before the day of the dataset's first sync are judged as that day left it
    # (no record of knowledge is older), as they take its versions.
    first_day = min((_known(e[0]) for body in entries for e in body["events"]), default=0)
    for body in entries:
        for at, a, b, ids in body["events"]:
            if upto is not None and _when(at) > upto:
                continue
            window = (_day(a), _day(b))
            known = _known(at) if _known(at) > first_day else None
            for unit_id in ids:
                nodes[unit_id] = step(nodes.get(unit_id), window, at, known)
                failed.pop(unit_id, None)
                seen.add(unit_id)
        for unit_id, n in body.get("rows", {}).items():
            if unit_id in seen:
                rows[unit_id] = n
        seen.clear()
        for unit_id, (status, error, at) in body.get("failed", {}).items():
            if upto is None or _when(at) <= upto:
                failed[unit_id] = {"status": status, "error": error, "at": at}
    units = {u: _entry(node, rows.get(u)) for u, node in nodes.items()}
    return Folded(units, failed, {u: node.fills for u, node in nodes.items() if node.fills})


def _known(at: str) -> int:
    """The day (since 1970) from whose end on a fetch at ``at`` is known."""
    return _when(at).date().toordinal() - _EPOCH


def _step(node: _Node | None, window: tuple[int, int], at: str, known: int | None) -> _Node:
    """A unit's node after one more fetch of ``window`` at ``at`` (``known``: the day it is
    known from; None on the day of the dataset's first sync)."""
    lo, hi = window
    new = [(lo, hi)] if node is None else _uncovered(node.windows, lo, hi)
    fills = () if node is None else node.fills
    if known is not None:
        fills = fills + tuple((a, b, known) for a, b in new)
    if node is None:
        return _Node(((lo, hi),), fills, at, at)
    merged = _merge([*node.windows, (lo, hi)])
    first = min(node.first, at, key=_when)
    last = max(node.last, at, key=_when)
    return _Node(merged, fills, first, last)


def _uncovered(windows: tuple[tuple[int, int], ...], lo: int, hi: int) -> list[tuple[int, int]]:
    out, at = [], lo
    for a, b in windows:
        if a > at and at <= hi:
            out.append((at, min(a - 1, hi)))
        at = max(at, b + 1)
    if at <= hi:
        out.append((at, hi))
    return out


def _merge(windows: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(windows):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _entry_of(node: _Node) -> dict[str, Any]:
    windows = [[_iso_day(a), _iso_day(b)] for a, b in node.windows]
    return {"windows": windows, "first_fetched_at": node.first, "fetched_at": node.last}


def _entry(node: _Node, rows: int | None) -> dict[str, Any]:
    entry = dict(_entry_of(node))
    if rows is not None:
        entry["rows"] = rows
    return entry
