"""What a lake holds, per dataset and symbol, from its state files alone (CONTRACT §10.1).

:func:`coverage` reads the root state (the unfinished runs) and each dataset's state (what
every sync recorded per unit: windows fetched, fetch times, records, the last failure); it
never reads a data file, so it costs a few small reads however large the lake is.

The frame, one row per dataset and symbol (symbol NA for a cross-section dataset), is the one
:meth:`~mdframes.lake.core.Lake.coverage` describes column by column; its dtypes: ``dataset``,
``symbol``, ``error`` string, ``status`` category, ``first``/``last`` naive datetime64[ns],
``gaps`` object (lists of Timestamp pairs), the fetch times datetime64[us, UTC], ``rows`` Int64.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import pandas as pd

from ..errors import InvalidParameterError
from ..kinds import DATE_DTYPE
from ..registry import REGISTRY, Dataset
from .sync.modes import mode_of
from .sync.plan import normalise_symbols, resolve_datasets
from .sync.state import (
    OpenRun,
    RootState,
    failure_of,
    finished_in,
    merge_windows,
    unit_symbol,
    windows_of,
)
from .tables import Tables

__all__ = [
    "coverage",
    "ledger_fills",
    "as_known_at",
    "filled_after",
    "COLUMNS",
    "STATUSES",
    "FILLED",
    "KEPT_COVERAGES",
]

COLUMNS: Final = [
    "dataset",
    "symbol",
    "status",
    "first",
    "last",
    "gaps",
    "first_fetched_at",
    "last_fetched_at",
    "rows",
    "error",
]
STATUSES: Final = ["synced", "pending", "failed", "not_found", "never"]
# attrs key: (dataset, symbol, start, end, fetched_at) of days covered only later than the
# first fetch, before the covered end (state.py's ``filled``).
FILLED: Final = "filled"
_FETCHED: Final = "datetime64[us, UTC]"


def coverage(
    tables: Tables,
    datasets: str | Iterable[str] | None = None,
    symbols: str | Iterable[str] | None = None,
    *,
    copy: bool = True,
    upto: pd.Timestamp | None = None,
    ledger: bool = False,
) -> pd.DataFrame:
    """See :meth:`mdframes.Lake.coverage`; ``copy=False``: the frame kept for the next
    same question itself (the caller must not change it), so that a panel can tell by its
    identity that nothing changed since its last coverage. ``ledger``: the coverage as it
    stood at ``upto`` (None: every sync's windows), folded from the ledger (ledger.py)."""
    wanted = None if datasets is None else resolve_datasets(datasets)
    syms = None if symbols is None else normalise_symbols(symbols)
    storage = tables.storage
    root = RootState.load(storage) if storage.exists() else RootState({})
    runs = root.open_runs()
    if wanted is None:
        named = {ds.name for ds in tables.folders()}
        named |= {n for run in runs for n in run.spec.get("datasets", [])}
        wanted = [ds for ds in REGISTRY.values() if ds.lake and ds.name in named]
    # The same question of state files holding the same bytes has the same answer: a
    # panel asks before each of its reads (every chunk's coverage comes from it).
    question = (tuple(ds.name for ds in wanted), None if syms is None else tuple(syms),
                datasets is not None, ledger, upto)  # fmt: skip
    memos = [_ledger_memo(ds, tables, upto) if ledger else _memo(ds, tables, runs)
             for ds in wanted]  # fmt: skip
    kept = tables.coverage_frames.get(question)
    if kept is not None and all(a is b for a, b in zip(kept[0], memos, strict=True)):
        return _copied(kept[1]) if copy else kept[1]
    rows: list[dict[str, Any]] = []
    for ds, memo in zip(wanted, memos, strict=True):
        rows += _dataset_rows(ds, memo, syms, explicit=datasets is not None)
    frame = _frame(rows)
    filled = [(r["dataset"], r["symbol"], *f) for r in rows for f in r["filled"]]
    if filled:  # rarely any: a window widened backwards or a gap filled
        frame.attrs[FILLED] = filled
    # A new dict put in place of the old: reads in other threads see one or the other.
    frames = dict(tables.coverage_frames)
    frames.pop(question, None)
    while len(frames) >= KEPT_COVERAGES:
        del frames[next(iter(frames))]  # the oldest
    frames[question] = (memos, frame)
    tables.coverage_frames = frames
    return _copied(frame) if copy else frame


# Coverage answers kept: frames per lake (Tables.coverage_frames) and the panels' Coverages
# made of them (features/coverage.py): a panel's question, a training set's prices', a few
# universes.
KEPT_COVERAGES = 4


def _copied(frame: pd.DataFrame) -> pd.DataFrame:
    """The caller's own copy of a kept frame (its ``gaps`` lists too)."""
    out = frame.copy()
    out["gaps"] = pd.Series([list(g) for g in frame["gaps"]], index=frame.index, dtype=object)
    return out


@dataclass
class _Memo:
    """What coverage made of one dataset's state file: valid while the file holds the same
    bytes and the same runs are unfinished (a sync saves the state at each step, and the
    root state when a run opens or closes). A lake with a symbol the service does not know
    keeps a run open for its retry: with every run it was made anew on each question."""

    raw: bytes | None
    runs: list[OpenRun]
    units: dict[str, Any]
    failed: dict[str, Any]
    pending: set[str]
    by_symbol: dict[str | None, list[str]]
    rows: dict[str | None, dict[str, Any]] = field(default_factory=dict)
    fills: dict[str | None, tuple[tuple[int, int, int], ...]] = field(default_factory=dict)


def _memo(ds: Dataset, tables: Tables, runs: list[OpenRun]) -> _Memo:
    table = tables.get(ds)
    raw = table.sidecar.state_bytes() if tables.storage.exists() else None
    memo = table.coverage_memo
    if memo is not None and memo.raw == raw and memo.runs == runs:
        return memo  # the common case: a panel's coverage of a lake no one is syncing
    state = table.sidecar.parse_state(raw) or {"units": {}, "failed": {}}
    units: dict[str, Any] = state.get("units", {})
    failed: dict[str, Any] = state.get("failed", {})
    unsynced: dict[str, Any] = state.get("unsynced", {})
    pending = set(unsynced) - set(units)
    for run in runs:
        pending |= _left_in(ds, run, units)
    by_symbol: dict[str | None, list[str]] = {}
    for unit_id in dict.fromkeys([*units, *failed, *pending]):
        by_symbol.setdefault(unit_symbol(unit_id), []).append(unit_id)
    memo = _Memo(raw, list(runs), units, failed, pending, by_symbol)
    table.coverage_memo = memo
    return memo


def _ledger_memo(ds: Dataset, tables: Tables, upto: pd.Timestamp | None) -> _Memo:
    """The coverage of ``ds`` as it stood at ``upto``: valid while the state file holds the
    same bytes (a ledger file is always followed by a save of the state)."""
    from .ledger import fold, read_ledger

    table = tables.get(ds)
    raw = table.sidecar.state_bytes() if tables.storage.exists() else None
    kept: dict[Any, _Memo] = table.ledger_memos
    memo = kept.get(upto)
    if memo is not None and memo.raw == raw:
        return memo
    state = table.sidecar.parse_state(raw)
    at = None if upto is None else upto.to_pydatetime()
    folded = fold(read_ledger(table, state) if raw is not None else [], at)
    by_symbol: dict[str | None, list[str]] = {}
    for unit_id in dict.fromkeys([*folded.units, *folded.failed]):
        by_symbol.setdefault(unit_symbol(unit_id), []).append(unit_id)
    memo = _Memo(raw, [], folded.units, folded.failed, set(), by_symbol)
    memo.fills = {s: tuple(f for u in ids for f in folded.fills.get(u, ()))
                  for s, ids in by_symbol.items()}  # fmt: skip
    kept = {k: v for k, v in kept.items() if v.raw == raw}
    kept[upto] = memo
    table.ledger_memos = dict(list(kept.items())[-KEPT_COVERAGES:])
    return memo


def ledger_fills(
    tables: Tables, datasets: list[str], upto: pd.Timestamp | None
) -> dict[tuple[str, str | None], tuple[tuple[int, int, int], ...]]:
    """Per (dataset, symbol): the day ranges a later sync than the dataset's first covered,
    each with the day (since 1970) from whose end on it was known: rows dated before that
    day did not know them (``known_at="row"``)."""
    out = {}
    for name in datasets:
        memo = _ledger_memo(REGISTRY[name], tables, upto)
        out.update({(name, s): f for s, f in memo.fills.items() if f})
    return out


def _dataset_rows(
    ds: Dataset,
    memo: _Memo,
    symbols: list[str] | None,
    explicit: bool,
) -> list[dict[str, Any]]:
    by_symbol = memo.by_symbol
    mode = mode_of(ds)
    # The row a requested symbol falls under: its own, or the cross section's (None).
    if symbols is not None:
        keys = list(dict.fromkeys(unit_symbol(mode.unit_id(s, "")) for s in symbols))
    elif explicit and not by_symbol and unit_symbol(mode.unit_id("_", "")) is None:
        keys = [None]  # a cross section asked for by name and never synced
    else:
        keys = sorted(by_symbol, key=lambda s: (s is not None, s or ""))
    out = []
    for key in keys:
        row = memo.rows.get(key)
        if row is None:
            row = memo.rows[key] = _row(ds, key, by_symbol.get(key, []), memo)
        out.append({**row, "gaps": list(row["gaps"])})  # the caller's own list
    return out


def _left_in(ds: Dataset, run: OpenRun, units: dict[str, Any]) -> set[str]:
    """The units of ``ds`` an unfinished run has still to do."""
    spec = run.spec
    if ds.name not in spec.get("datasets", []):
        return set()
    symbols = spec.get("symbols") or run.universe
    try:
        todo = mode_of(ds).unit_ids(ds, symbols, spec.get("market"), spec.get("region"))
    except InvalidParameterError:  # per symbol, and the run's universe is not known yet
        return set()
    return {u for u in todo if not finished_in(units.get(u), run.id)}


def _row(ds: Dataset, symbol: str | None, ids: list[str], memo: _Memo) -> dict[str, Any]:
    units, failed, pending = memo.units, memo.failed, memo.pending
    entries = [units[i] for i in ids if i in units]
    failures = [failure_of(failed[i]) for i in ids if i in failed]
    if failures:
        statuses = {s for s, _ in failures}
        status = "not_found" if statuses == {"not_found"} else "failed"
        error: str | None = next(t for s, t in failures if s == status)
    else:
        error = None
        if any(i in pending for i in ids):
            status = "pending"
        elif entries:
            status = "synced"
        else:
            status = "never"
    spans: list[list[str | None]] = []
    fetched: list[tuple[dt.datetime, dt.datetime]] = []
    counts: list[int | None] = []
    filled: list[tuple[str | None, str, str]] = []
    for entry in entries:
        filled += [(a, b, at) for a, b, at in entry.get("filled", ())]
        first_at, last_at = _fetch_times(entry)
        if "end" in entry or "windows" in entry:
            spans += windows_of(entry)
        elif first_at is not None and last_at is not None:
            spans.append([first_at.date().isoformat(), last_at.date().isoformat()])
        if first_at is not None and last_at is not None:
            fetched.append((first_at, last_at))
        rows = entry.get("rows")
        counts.append(rows if isinstance(rows, int) else None)
    first, last, gaps = _merged_span(tuple((a, b) for a, b in spans), ds.history_start)
    if status == "never":
        rows_held: int | None = 0
    elif counts and None not in counts:
        rows_held = sum(c for c in counts if c is not None)
    else:
        rows_held = None
    return {
        "dataset": ds.name,
        "symbol": symbol,
        "status": status,
        "first": first,
        "last": last,
        "gaps": list(gaps),
        "first_fetched_at": min((a for a, _ in fetched), default=None),
        "last_fetched_at": max((b for _, b in fetched), default=None),
        "rows": rows_held,
        "error": error,
        "filled": filled,
    }


def _fetch_times(entry: dict[str, Any]) -> tuple[dt.datetime | None, dt.datetime | None]:
    """(first, latest) fetch of a unit; entries of 0.3 say only which sync (its id holds
    the time the sync started)."""
    last = _utc(entry.get("fetched_at")) or _sync_time(entry.get("synced"))
    first = _utc(entry.get("first_fetched_at")) or last
    return first, last


def _utc(text: Any) -> dt.datetime | None:
    return _parsed_utc(text) if isinstance(text, str) else None


@functools.lru_cache(maxsize=1024)
def _parsed_utc(text: str) -> dt.datetime:
    stamp, utc = dt.datetime.fromisoformat(text), dt.timezone.utc
    return stamp.replace(tzinfo=utc) if stamp.tzinfo is None else stamp.astimezone(utc)


def _sync_time(sync_id: Any) -> dt.datetime | None:
    """The start of a sync from its id (``000012-20261120T101010Z``)."""
    if not isinstance(sync_id, str) or "-" not in sync_id:
        return None
    try:
        stamp = dt.datetime.strptime(sync_id.split("-", 1)[1], "%Y%m%dT%H%M%SZ")
    except ValueError:
        return None
    return stamp.replace(tzinfo=dt.timezone.utc)


@functools.lru_cache(maxsize=256)
def _merged_span(
    spans: tuple[tuple[str | None, str | None], ...], history_start: str | None
) -> tuple[pd.Timestamp | None, pd.Timestamp | None, tuple[tuple[pd.Timestamp, pd.Timestamp], ...]]:
    """first, last and the gaps between the merged ``spans`` (a None start: the beginning
    of the history, the registry's ``history_start`` where it says one). The symbols of one
    sync share their spans: each distinct set is merged once (a panel asks the coverage of
    thousands of symbols before it reads anything)."""
    merged = merge_windows([[a or history_start, b] for a, b in spans])
    if not merged:
        return None, None, ()
    first = None if merged[0][0] is None else pd.Timestamp(merged[0][0])
    last = pd.Timestamp(str(merged[-1][1]))
    one = pd.Timedelta(days=1)
    gaps = tuple(
        (pd.Timestamp(str(merged[i][1])) + one, pd.Timestamp(str(merged[i + 1][0])) - one)
        for i in range(len(merged) - 1)
    )
    return first, last, gaps


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["dataset"] = frame["dataset"].astype("string")
    frame["symbol"] = frame["symbol"].astype("string")
    frame["status"] = pd.Categorical(frame["status"], categories=STATUSES)
    for name in ("first", "last"):
        frame[name] = pd.to_datetime(frame[name]).astype(DATE_DTYPE)
    for name in ("first_fetched_at", "last_fetched_at"):
        frame[name] = pd.to_datetime(frame[name], utc=True).astype(_FETCHED)
    frame["gaps"] = frame["gaps"].astype(object)
    frame["rows"] = frame["rows"].astype("Int64")
    frame["error"] = frame["error"].astype("string")
    return frame


def filled_after(table: pd.DataFrame) -> list[tuple[str, str | None, Any, Any, pd.Timestamp]]:
    """``(dataset, symbol, start, end, fetched_at)`` of the days ``table`` covers that a later
    fetch than the first filled in (dates as naive Timestamps, ``start`` None: from the
    history's start; ``fetched_at`` UTC)."""
    out = []
    for dataset, symbol, a, b, at in table.attrs.get(FILLED, ()):
        out.append((str(dataset), None if symbol is None or symbol is pd.NA else str(symbol),
                    None if a is None else pd.Timestamp(a), pd.Timestamp(b),
                    pd.Timestamp(at).tz_convert("UTC") if pd.Timestamp(at).tzinfo
                    else pd.Timestamp(at, tz="UTC")))  # fmt: skip
    return out


def as_known_at(table: pd.DataFrame, at: pd.Timestamp) -> pd.DataFrame:
    """``table`` (a :func:`coverage` frame) as the lake knew it at ``at`` (UTC), as far as
    its state tells: what was first fetched later is ``never``; days a later fetch filled in
    (a window widened backwards, a gap) are gaps again; windows end on ``at``'s date at the
    latest (their advance towards the present is recorded as a span, not per fetch: the
    days between the last sync before ``at`` and ``at``'s date count as synced); fetch
    times after ``at`` are unknown (NaT)."""
    table = table.copy()
    day = pd.Timestamp(at.tz_convert("UTC").date())
    first_fetched = table["first_fetched_at"]
    later = (first_fetched.isna() | (first_fetched > at)).to_numpy()
    firsts: list[Any] = list(table["first"])
    lasts: list[Any] = list(table["last"])
    gaps: list[list[tuple[pd.Timestamp, pd.Timestamp]]] = [list(g) for g in table["gaps"]]
    symbols = table["symbol"].astype(object).where(table["symbol"].notna(), None)
    keys = zip(table["dataset"].astype(object), symbols, strict=True)
    place = {key: i for i, key in enumerate(keys)}
    kept = []
    for dataset, symbol, a, b, when in filled_after(table):
        i = place.get((dataset, symbol))
        if when <= at:
            kept.append((dataset, symbol, a, b, when))
        elif i is not None and not later[i]:  # filled in later: a gap again
            firsts[i], lasts[i], gaps[i] = _cut(firsts[i], lasts[i], gaps[i], a, b)
    for i in range(len(table)):
        if later[i]:
            firsts[i], lasts[i], gaps[i] = pd.NaT, pd.NaT, []
        elif not pd.isna(lasts[i]) and lasts[i] > day:
            # Nothing synced by then reaches past its date (a window asked ahead included).
            lasts[i] = day
            gaps[i] = [(a, b) for a, b in gaps[i] if a <= day]
    table["first"] = pd.Series(firsts, index=table.index, dtype=table["first"].dtype)
    table["last"] = pd.Series(lasts, index=table.index, dtype=table["last"].dtype)
    table["gaps"] = pd.Series(gaps, index=table.index, dtype=object)
    if kept:
        table.attrs[FILLED] = [(d, s, None if a is None else a.date().isoformat(),
                                b.date().isoformat(), w.isoformat())
                               for d, s, a, b, w in kept]  # fmt: skip
    else:
        table.attrs.pop(FILLED, None)
    for name in ("first_fetched_at", "last_fetched_at"):
        table.loc[later, name] = pd.NaT
    failed = table["status"].isin(["failed", "not_found"]).to_numpy()
    table.loc[later & ~failed, "status"] = "never"
    table.loc[later & ~failed, "error"] = pd.NA
    table.loc[later, "rows"] = 0
    since = ~later & (table["last_fetched_at"] > at).to_numpy()
    # Synced by then and again later: by then it had been synced.
    table.loc[since, "status"] = "synced"
    table.loc[since, "error"] = pd.NA
    table.loc[since, "rows"] = pd.NA
    table.loc[since, "last_fetched_at"] = pd.NaT
    return table


def _cut(
    first: Any,
    last: Any,
    gaps: list[tuple[pd.Timestamp, pd.Timestamp]],
    a: pd.Timestamp | None,
    b: pd.Timestamp,
) -> tuple[Any, Any, list[tuple[pd.Timestamp, pd.Timestamp]]]:
    """A span ``first..last`` with ``gaps`` less the days ``a..b`` (None: from the start)."""
    if pd.isna(last):
        return first, last, gaps
    one = pd.Timedelta(days=1)
    if a is None or (not pd.isna(first) and a <= first):
        # The span's start was filled in later: it begins after the filled days (and after
        # a gap right there).
        start = b + one
        rest = sorted(gaps)
        while rest and rest[0][0] <= start:
            start = max(start, rest.pop(0)[1] + one)
        return (start, last, rest) if start <= last else (pd.NaT, pd.NaT, [])
    merged: list[tuple[pd.Timestamp, pd.Timestamp]] = []
    for lo, hi in sorted([*gaps, (a, min(b, last))]):
        if merged and lo <= merged[-1][1] + one:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return first, last, merged
