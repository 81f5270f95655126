"""What a lake never saw, as a panel needs to know it (CONTRACT §10.1, §11.1).

A lake-sourced feature is computed on row (D, s) only where the lake synced the feature's
dataset for s over the whole window ``(D - n days, D]`` (a ``last``: D itself; a ``change``:
both of its dates); elsewhere it is NA, never a 0 that means "not synced". A symbol that a
dataset never synced, whose last sync of it failed, or that the service did not know is a
failure, as a 404 from the service is: :class:`Coverage` names them and builds the
``NotInLakeError`` of ``errors="raise"``.

Only :func:`~.pinned.read_coverage` and :func:`~.pinned.kept_coverage` call the lake (``lake.coverage()``, read
from the lake's state, not its data); everything else works on the frame they return, so a
chunk on a worker needs no lake call of its own.
"""

from __future__ import annotations

import datetime as dt
import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import Any, Final

import numpy as np
import pandas as pd

from ...errors import NotInLakeError
from ...registry import REGISTRY
from .pinned import kept_coverage, panels_of, read_coverage
from .spec import Feature

__all__ = ["Coverage", "lake_coverage", "window_span"]

# Statuses of lake.coverage() that make a symbol a failure of the panel, as they read.
MISSING: Final = {
    "never": "never synced",
    "failed": "last sync failed",
    "not_found": "not found by the service",
}
_NAMED = 10  # symbols named in an error message; the rest are counted


# The last few Coverages made from a lake's kept coverage frames: (that frame, weakly; the
# question; the Coverage). Panels of one universe on an unchanged lake share one; a
# training set's prices ask another question (one kept was made again on each).
_LAST: list[tuple[weakref.ref[pd.DataFrame], tuple[Any, ...], Coverage]] = []
_LAST_LOCK = threading.Lock()  # panels in threads share the list


def lake_coverage(
    lake: Any, datasets: list[str], symbols: list[str], known_at: Any = None
) -> Coverage | None:
    """``Coverage(read_coverage(lake, datasets, symbols), ...)``, made once while the lake
    keeps the same coverage frame (its state files and open runs unchanged): building it
    from 500 symbols' rows cost a panel as much as reading a month of its inputs."""
    # The lake's modules need pyarrow (the lake extra): imported for a lake only, so that
    # features from the service or frames run on the core install.
    from ...lake.coverage import KEPT_COVERAGES

    panels = panels_of(lake)
    if panels is None:
        table = read_coverage(lake, datasets, symbols, known_at)
        return None if table is None else Coverage(table, datasets, symbols, known_at)
    if known_at is None:
        frame = kept_coverage(lake, datasets, symbols)
        assert frame is not None
        fills: Any = None
        whole: Any = None
    else:  # as it stood then: the lake's ledger of every sync's windows
        frame, fills, whole = panels.coverage_then(list(datasets), list(symbols), known_at)
    question = (tuple(datasets), tuple(symbols), known_at)
    with _LAST_LOCK:
        for i, (ref, asked, made) in enumerate(_LAST):
            if ref() is frame and asked == question:
                _LAST.append(_LAST.pop(i))  # the most recent last
                return made
    made = Coverage(frame, datasets, symbols, known_at, fills=fills, whole=whole)
    with _LAST_LOCK:
        # Entries whose frame is gone can never answer again.
        _LAST[:] = [e for e in _LAST if e[0]() is not None][-(KEPT_COVERAGES - 1) :]
        _LAST.append((weakref.ref(frame), question, made))
    return made


def window_span(feature: Feature) -> int:
    """Days ending on D that the lake must have synced for ``feature``'s value on D."""
    days = feature.days
    if feature.agg == "last" or days is None:
        return 1
    return days + 1 if feature.agg == "change" else days  # a change reads D and D - n


def _day(value: Any) -> int | None:
    if isinstance(value, int):
        return value  # already a day number
    if value is None or value is pd.NaT or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value.toordinal() - _EPOCH
    stamp = pd.Timestamp(value)
    return stamp.toordinal() - _EPOCH if stamp is not pd.NaT else None


_EPOCH: Final = dt.date(1970, 1, 1).toordinal()


_OPEN: Final = -(2**40)  # a first day before any date: a window synced from the history's start


def _days(table: pd.DataFrame, name: str) -> list[int | None]:
    """A date column of ``lake.coverage()`` as day numbers (``None``: no date)."""
    if name not in table.columns:
        return [None] * len(table)
    stamps = pd.DatetimeIndex(pd.to_datetime(table[name], errors="coerce"))
    if stamps.tz is not None:
        stamps = stamps.tz_convert("UTC").tz_localize(None)
    days = stamps.as_unit("s").asi8 // 86400
    return [None if missing else int(d) for d, missing in zip(days, stamps.isna(), strict=True)]


def _spans(first: Any, last: Any, gaps: Any) -> tuple[np.ndarray, np.ndarray]:
    """The synced day ranges (inclusive starts and ends, sorted): ``first..last`` without the
    ``gaps`` (inclusive ``(start, end)`` pairs no sync fetched). No ``first`` with a ``last``:
    synced without a start, from the beginning of the service's history."""
    lo, hi = _day(first), _day(last)
    lo = _OPEN if lo is None else lo
    if hi is None or hi < lo:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    holes = []
    for gap in gaps if isinstance(gaps, Iterable) and not isinstance(gaps, str) else ():
        a, b = (_day(v) for v in gap)
        if a is not None and b is not None and a <= b:
            holes.append((a, b))
    starts, ends, at = [], [], lo
    for a, b in sorted(holes):
        if a > at:
            starts.append(at)
            ends.append(min(a - 1, hi))
        at = max(at, b + 1)
    if at <= hi:
        starts.append(at)
        ends.append(hi)
    return np.asarray(starts, np.int64), np.asarray(ends, np.int64)


# Per symbol: the first and last synced day where it has one span; the symbols of several.
_Bounds = tuple[np.ndarray, np.ndarray, list[tuple[int, tuple[np.ndarray, np.ndarray]]]]


class Coverage:
    """The spans a lake synced and the failures, per dataset and symbol of one panel.

    Built from ``lake.coverage()``'s frame (``dataset, symbol, status, first, last, gaps,
    ..., error``; a row whose symbol is NA covers every symbol of a cross-ticker dataset);
    a requested symbol without a row counts as never synced. Plain data: it pickles to the
    workers of an executor.
    """

    # Each dataset's per-symbol bounds for the last universe asked (_bounds; not pickled).
    _memo: tuple[tuple[str, ...], dict[str, _Bounds]] | None = None

    def __init__(
        self,
        table: pd.DataFrame,
        datasets: list[str],
        symbols: list[str],
        known_at: pd.Timestamp | str | None = None,
        *,
        fills: dict[tuple[str, str | None], tuple[tuple[int, int, int], ...]] | None = None,
        whole: pd.DataFrame | None = None,
    ) -> None:
        self.datasets = list(datasets)
        # known_at="row": days a later day's sync covered, per (dataset, symbol): (first
        # day, last day, the day from whose end on they are known; the ledger's fills). The
        # row for D is judged as known at the end of D. A stand-in's frame (not md.Lake's)
        # is taken as it is: it answers coverage at a time itself, if at all.
        self._fills: dict[tuple[str, str | None], Sequence[tuple[int, int, int]]] = {}
        later: dict[tuple[str, str | None], str] = {}
        if whole is not None:  # ``table`` as it stood then (md.Lake's ledger): exact
            self._fills = dict(fills or {})
            if isinstance(known_at, pd.Timestamp):
                later = _later(whole, table, known_at)
        self.later = bool(later)
        keys = list(
            zip(
                [str(d) for d in _column(table, "dataset")],
                [None if s is None else str(s) for s in _column(table, "symbol")],
                strict=True,
            )
        )
        statuses = [str(s or "never") for s in _column(table, "status")]
        errors = ["" if e is None else str(e) for e in _column(table, "error")]
        found = dict(zip(keys, zip(statuses, errors, strict=True), strict=True))
        self._table = _span_table(table, keys)
        self.missing = self._missing(found, symbols, later)

    def _missing(
        self,
        found: dict[tuple[str, str | None], tuple[str, str]],
        symbols: list[str],
        later: dict[tuple[str, str | None], str],
    ) -> dict[str, dict[str, str]]:
        """symbol -> dataset -> what the lake says of it, for the failures only: the symbols
        that fail somewhere are found by sets, then named in the universe's order."""
        wanted: set[str | None] = set(symbols)
        held: dict[str, set[str | None]] = {}
        failing: set[str | None] = set()
        for (dataset, symbol), (status, _) in found.items():
            held.setdefault(dataset, set()).add(symbol)
            if status in MISSING:
                failing.add(symbol)
        for dataset in self.datasets:
            if found.get((dataset, None), ("never", ""))[0] in MISSING:
                failing |= wanted - held.get(dataset, set())
        missing: dict[str, dict[str, str]] = {}
        if None in failing:  # a cross section's failure is every symbol's
            failing = set(symbols)
        for symbol in (s for s in symbols if s in failing):
            for dataset in self.datasets:
                status, error = found.get(
                    (dataset, symbol), found.get((dataset, None), ("never", ""))
                )
                if status in MISSING:
                    text = MISSING[status] + (f": {error}" if error and status == "failed" else "")
                    text = later.get((dataset, symbol), later.get((dataset, None), text))
                    missing.setdefault(symbol, {})[dataset] = text
        return missing

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_memo", None)  # the last universe's bounds: the worker's own
        return state

    def part(self, symbols: list[str]) -> Coverage:
        """The coverage of one chunk's symbols (what a worker is sent)."""
        out = Coverage.__new__(Coverage)
        out.datasets = self.datasets
        wanted = {*symbols, None}
        out._table = {d: spans.part(wanted) for d, spans in self._table.items()}
        out.missing = {s: v for s, v in self.missing.items() if s in wanted}
        out.later = self.later
        out._fills = {k: v for k, v in self._fills.items() if k[1] in wanted}
        return out

    def readable(self, dataset: str, symbols: list[str]) -> list[str]:
        """``symbols`` less those the lake never holds for ``dataset`` (or its base)."""
        base = REGISTRY[dataset].base
        return [s for s in symbols if base not in self.missing.get(s, {})]

    def failed(self, dataset: str) -> set[str]:
        """The symbols that are a failure of the panel for ``dataset`` (or its base)."""
        base = REGISTRY[dataset].base
        return {s for s, by in self.missing.items() if base in by}

    def reason(self, symbol: str) -> str:
        """Why ``symbol`` failed: its datasets and statuses."""
        by = self.missing.get(symbol, {})
        return "not in the lake: " + "; ".join(f"{d} {text}" for d, text in by.items())

    def spans(self, dataset: str, symbol: str) -> tuple[np.ndarray, np.ndarray]:
        """The day ranges (inclusive starts and ends, day numbers, sorted) the lake synced of
        ``dataset`` for ``symbol``; none for a symbol that is a failure."""
        base = REGISTRY[dataset].base
        table = self._table.get(base)
        row = -1 if table is None else table.row(symbol)
        if table is None or row < 0 or base in self.missing.get(symbol, {}):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        return table.pair(row)

    def covered(self, feature: Feature, symbols: list[str], days: np.ndarray) -> np.ndarray:
        """Whether the lake synced ``feature``'s whole window on each (day, symbol):
        ``(len(days), len(symbols))``, ``days`` as int64 day numbers."""
        base = REGISTRY[feature.dataset].base
        back = window_span(feature) - 1
        first, last, several = self._bounds(base, symbols)
        out = (days[:, None] - back >= first) & (days[:, None] <= last)
        for i, (starts, ends) in several:
            k = np.searchsorted(starts, days, side="right") - 1
            at = np.maximum(k, 0)
            out[:, i] = (k >= 0) & (days <= ends[at]) & (days - back >= starts[at])
        if self._fills:
            # Symbols synced together share their history: each distinct one masked once.
            groups: dict[tuple[tuple[int, int, int], ...], list[int]] = {}
            for i, symbol in enumerate(symbols):
                mine = self._fills.get((base, symbol), self._fills.get((base, None), ()))
                if mine:
                    groups.setdefault(tuple(mine), []).append(i)
            for fills, cols in groups.items():
                unknown = np.zeros(len(days), bool)
                for lo, hi, known in fills:
                    # Rows dated before the day it was synced did not know these days.
                    unknown |= (days < known) & (days >= lo) & (days - back <= hi)
                out[:, cols] &= ~unknown[:, None]
        return out

    def _bounds(self, base: str, symbols: list[str]) -> _Bounds:
        """Per symbol the first and last synced day where it has one span, and the symbols
        of several spans: once per dataset and universe (a panel asks it per feature)."""
        universe = tuple(symbols)
        memo = self._memo
        if memo is None or memo[0] != universe:  # one universe at a time: a chunk's
            memo = self._memo = (universe, {})
        if base in memo[1]:
            return memo[1][base]
        # Most symbols have one span: compared all at once; the others one by one.
        first = np.full(len(symbols), np.iinfo(np.int64).max)
        last = np.full(len(symbols), np.iinfo(np.int64).min)
        several: list[tuple[int, tuple[np.ndarray, np.ndarray]]] = []
        table = self._table.get(base)
        if table is not None and len(table.symbols) and len(symbols):
            rows = table.rows(symbols)
            if self.missing:
                failing = np.fromiter(
                    (base in self.missing.get(s, {}) for s in symbols), bool, len(symbols)
                )
                rows[failing] = -1
            held = rows >= 0
            sizes = np.where(held, np.diff(table.offsets)[np.maximum(rows, 0)], 0)
            one = sizes == 1
            at = table.offsets[rows[one]]
            first[one], last[one] = table.starts[at], table.ends[at]
            several = [(int(i), table.pair(int(rows[i]))) for i in np.flatnonzero(sizes > 1)]
        memo[1][base] = (first, last, several)
        return first, last, several

    def error(self) -> NotInLakeError | None:
        """The ``NotInLakeError`` of ``errors="raise"`` (``None``: nothing is missing)."""
        if not self.missing:
            return None
        symbols = list(self.missing)
        datasets = [d for d in self.datasets if any(d in by for by in self.missing.values())]
        named = [f"{s} ({', '.join(f'{d} {t}' for d, t in self.missing[s].items())})"
                 for s in symbols[:_NAMED]]  # fmt: skip
        more = f" and {len(symbols) - _NAMED} more (err.symbols)" if len(symbols) > _NAMED else ""
        fix = (
            f"lake.sync({datasets!r}, {symbols!r})"
            if len(symbols) <= _NAMED
            else f"lake.sync({datasets!r}, err.symbols)"
        )
        how = f"Sync them ({fix})"
        if self.later:  # a sync now does not reach back to an earlier known_at
            how = f"Pass a known_at after their first sync, sync them ({fix})"
        return NotInLakeError(
            f"the lake does not hold what this panel needs for {len(symbols)} symbol(s): "
            f"{'; '.join(named)}{more}. {how} or pass errors='skip' to keep "
            "their rows with these features NA",
            symbols=symbols,
            datasets=datasets,
        )


class _Spans:
    """One dataset's synced day ranges per symbol, flat: those of ``symbols[i]`` (``None``:
    a cross section's, every symbol's) are ``starts[offsets[i]:offsets[i + 1]]`` and the
    same slice of ``ends``. A chunk's coverage crosses to a worker as these few arrays: a
    pair of small arrays per symbol took 13-24 ms per task to pickle and to unpickle."""

    __slots__ = ("symbols", "offsets", "starts", "ends", "_at")

    def __init__(
        self, symbols: list[str | None], offsets: np.ndarray, starts: np.ndarray, ends: np.ndarray
    ) -> None:
        self.symbols, self.offsets, self.starts, self.ends = symbols, offsets, starts, ends
        self._at: dict[str | None, int] | None = None

    @classmethod
    def of(cls, symbols: list[str | None], pairs: list[tuple[np.ndarray, np.ndarray]]) -> _Spans:
        sizes = np.fromiter((len(a) for a, _ in pairs), np.int64, len(pairs))
        offsets = np.zeros(len(pairs) + 1, np.int64)
        np.cumsum(sizes, out=offsets[1:])
        starts = np.concatenate([a for a, _ in pairs]) if pairs else np.empty(0, np.int64)
        ends = np.concatenate([b for _, b in pairs]) if pairs else np.empty(0, np.int64)
        return cls(symbols, offsets, starts.astype(np.int64), ends.astype(np.int64))

    def __getstate__(self) -> tuple[Any, ...]:
        return self.symbols, self.offsets, self.starts, self.ends

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.symbols, self.offsets, self.starts, self.ends = state
        self._at = None

    def _place(self) -> dict[str | None, int]:
        if self._at is None:  # a later row of a symbol wins, as a dict of the rows would
            self._at = {s: i for i, s in enumerate(self.symbols)}
        return self._at

    def row(self, symbol: str | None) -> int:
        """The row of ``symbol``, else the cross section's; -1: neither."""
        at = self._place()
        return at.get(symbol, at.get(None, -1))

    def rows(self, symbols: list[str]) -> np.ndarray:
        at = self._place()
        none = at.get(None, -1)
        return np.fromiter((at.get(s, none) for s in symbols), np.int64, len(symbols))

    def pair(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = self.offsets[row], self.offsets[row + 1]
        return self.starts[a:b], self.ends[a:b]

    def part(self, wanted: set[str | None]) -> _Spans:
        """The rows of the ``wanted`` symbols only."""
        keep = [i for i, s in enumerate(self.symbols) if s in wanted]
        if len(keep) == len(self.symbols):
            return self
        take = np.asarray(keep, np.int64)
        sizes = np.diff(self.offsets)[take]
        offsets = np.zeros(len(take) + 1, np.int64)
        np.cumsum(sizes, out=offsets[1:])
        cells = np.repeat(self.offsets[take] - offsets[:-1], sizes) + np.arange(offsets[-1])
        symbols = [self.symbols[i] for i in keep]
        return _Spans(symbols, offsets, self.starts[cells], self.ends[cells])


def _column(table: pd.DataFrame, name: str) -> list[Any]:
    if name not in table.columns:
        return [None] * len(table)
    # pandas-stubs type no na_value with dtype=object (pandas takes it)
    values = table[name].to_numpy(dtype=object, na_value=None)  # type: ignore[call-overload]
    return list(values)


def _later(
    now: pd.DataFrame, then: pd.DataFrame, known_at: pd.Timestamp
) -> dict[tuple[str, str | None], str]:
    """Per (dataset, symbol) synced since ``known_at`` but not by then (``now`` and ``then``
    coverage frames): why it is a failure of a panel known at then."""
    first = {}
    for dataset, symbol, status, at in zip(_column(now, "dataset"), _column(now, "symbol"),
                                            _column(now, "status"), _column(now, "first_fetched_at"),
                                            strict=True):  # fmt: skip
        if status != "never":
            first[(str(dataset), None if symbol is None else str(symbol))] = at
    later: dict[tuple[str, str | None], str] = {}
    for dataset, symbol, status in zip(_column(then, "dataset"), _column(then, "symbol"),
                                       _column(then, "status"), strict=True):  # fmt: skip
        key = (str(dataset), None if symbol is None else str(symbol))
        if status == "never" and key in first:
            at = first[key]
            since = "" if at is None or pd.isna(at) else f", first synced {at:%Y-%m-%d %H:%M} UTC"
            later[key] = f"not synced by known_at={known_at.isoformat()}{since}"
    return later


def _span_table(table: pd.DataFrame, keys: list[tuple[str, str | None]]) -> dict[str, _Spans]:
    """Each dataset's synced spans per symbol. The symbols of one sync share their span: its
    arrays are made once (read-only)."""
    firsts, lasts = _days(table, "first"), _days(table, "last")
    shared: dict[tuple[int | None, int | None], tuple[np.ndarray, np.ndarray]] = {}
    spans: list[tuple[np.ndarray, np.ndarray]] = []
    for k, (first, last, gaps) in enumerate(
        zip(firsts, lasts, _column(table, "gaps"), strict=True)
    ):
        if gaps is None or not len(gaps):  # the usual case: one span, no gap
            one = shared.get((first, last))
            if one is None:
                one = shared[(first, last)] = _spans(first, last, ())
            spans.append(one)
        else:
            spans.append(_spans(table["first"].iloc[k], table["last"].iloc[k], gaps))
    by_dataset: dict[str, tuple[list[str | None], list[tuple[np.ndarray, np.ndarray]]]] = {}
    for (dataset, symbol), pair in zip(keys, spans, strict=True):
        names, pairs = by_dataset.setdefault(dataset, ([], []))
        names.append(symbol)
        pairs.append(pair)
    return {d: _Spans.of(names, pairs) for d, (names, pairs) in by_dataset.items()}
