"""The vectorised engine: every feature of one dataset from one sorted pass.

A dataset's rows are sorted once by (symbol, public time). For each cell (symbol g, date D)
two positions in that order answer every window: ``b`` = rows of g public by the end of D,
``a`` = rows of g public by the end of D - n, so the window ``(D - n, D]`` is rows ``a..b``.
The positions come from a (symbol, day) count table accumulated in sort order (or, when that
table would dwarf the panel, from binary searches), once per dataset and window length.
Per feature, only the rows carrying a value count: sums are differences of running totals,
counts ``b - a``, means their ratio, a last value is row ``b - 1``. There is no Python loop
over dates, symbols or rows.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Final

import numpy as np
import pandas as pd
from pandas.api.types import (
    is_bool_dtype,
    is_datetime64_any_dtype,
    is_float_dtype,
    is_integer_dtype,
    is_object_dtype,
)

from ...errors import InvalidParameterError
from ...pit import public_times
from ...registry import REGISTRY
from .reach import feature_columns
from .spec import Feature

__all__ = [
    "Events",
    "Grid",
    "compute",
    "counted_rows",
    "day_numbers",
    "evaluate",
    "factorized",
    "last_per_code",
    "sort_order",
]

# Day numbers of datetime64[ns] lie within +-106,752; OFF makes them (and a window before
# them) non-negative, SPAN separates symbols.
OFF: Final = 1 << 20
SPAN: Final = 1 << 22
NS_PER_DAY: Final = 86_400 * 10**9
# A (symbol, day) count table of up to this many cells (or 4 per panel cell) replaces the
# binary searches; past it (a long range sampled sparsely, or a short panel whose longest
# window spans a year), searching is cheaper: a 2-day panel of 500 symbols searched 1,000
# cells rather than count a table of 500 x 367 days for each dataset.
DENSE_CELLS = 1 << 16
DENSE_PER_CELL = 4
# Cells of that table counted at a time (Events._table).
TABLE_BLOCK = 1 << 18
# Days before a short panel's window first searched for each symbol's latest value (then the
# rest of the history, for the symbols not found there).
_BAND: Final = 32
_NAT: Final = np.iinfo(np.int64).min


def utc_naive(values: pd.Series) -> np.ndarray:
    """datetime64[ns] values, aware ones converted to UTC (naive ones are read as UTC)."""
    if isinstance(values.dtype, pd.DatetimeTZDtype):
        values = values.dt.tz_convert("UTC").dt.tz_localize(None)
    return values.to_numpy(dtype="datetime64[ns]")


def day_numbers(times: np.ndarray) -> np.ndarray:
    """Calendar day (days since 1970-01-01) of datetime64[ns] values: a time counts on its
    date (floor division, so times before 1970 too). NaT gives a meaningless number."""
    return times.view(np.int64) // NS_PER_DAY


def symbol_codes(
    values: pd.Series, symbols: list[str], rows: np.ndarray | None = None
) -> np.ndarray:
    """Each value's position in ``symbols`` (-1: none), of the ``rows`` positions only
    (``None``: every row)."""
    if rows is not None and 2 * len(rows) >= len(values):
        # Most rows: all coded, then taken (no take of the text; a value's code is the same
        # either way).
        return symbol_codes(values, symbols)[rows]
    codes, uniques = factorized(values, rows)
    where = {s: i for i, s in enumerate(symbols)}
    # One look-up per distinct symbol, not per row; a value spelt as the universe spells it
    # (normalised: a lake's, a loader's) is found as it is, the others once normalised.
    get = where.get
    lut = [get(u, -2) for u in uniques]
    for i, code in enumerate(lut):
        if code == -2:
            lut[i] = get(str(uniques[i]).strip().upper(), -1)
    return np.asarray([*lut, -1], dtype=np.int64)[codes]


def factorized(values: pd.Series, rows: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
    """Codes (-1: missing) and distinct values of a symbol column (of ``rows`` only). A
    category's codes are taken as they are; Arrow-backed text (a lake read's) is taken and
    coded by Arrow, by its runs where rows of a symbol come together (as a read returns
    them): no row is hashed then."""
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = values.cat.codes.to_numpy(dtype=np.int64)
        return (codes if rows is None else codes[rows]), dtype.categories
    if getattr(dtype, "storage", None) == "pyarrow" or isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa
        import pyarrow.compute as pc

        arrow = pa.chunked_array(values.array.__arrow_array__())
        column = arrow.combine_chunks() if arrow.num_chunks != 1 else arrow.chunk(0)
        if rows is not None:
            column = column.take(pa.array(rows))
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            n = len(column)
            if n > 1:
                changed = pc.not_equal(column.slice(1), column.slice(0, n - 1))
                changed = pc.fill_null(changed, True).to_numpy(zero_copy_only=False)
                starts = np.concatenate([[0], np.flatnonzero(changed) + 1])
                if len(starts) * 4 <= n:  # long runs: one code per run
                    lengths = np.diff(np.concatenate([starts, [n]]))
                    firsts = column.take(pa.array(starts))
                    codes = np.arange(len(starts), dtype=np.int64)
                    codes[pc.is_null(firsts).to_numpy(zero_copy_only=False)] = -1
                    return np.repeat(codes, lengths), firsts.to_pylist()
            encoded = pc.dictionary_encode(column)
            codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)
            return codes.astype(np.int64), encoded.dictionary.to_pylist()
        values = pd.Series(pd.array(column, dtype=dtype)) if rows is not None else values
        rows = None
    if rows is not None:
        values = values.iloc[rows]
    return pd.factorize(values, use_na_sentinel=True)


def take_rows(
    frame: pd.DataFrame, rows: np.ndarray, columns: list[str] | None = None
) -> pd.DataFrame:
    """Rows ``rows`` (positions) of ``frame``'s ``columns`` (``None``: all) as a new frame
    indexed from 0, without attrs: what ``frame[columns].iloc[rows].reset_index(drop=True)``
    gives, each column taken once. Selecting columns by label, then taking rows of the
    selection, cost twice the takes of a small frame (a short panel takes a dozen)."""
    if not frame.columns.is_unique:
        part = frame if columns is None else frame[columns]
        out = part.iloc[rows].reset_index(drop=True)
        out.attrs = {}
        return out
    names = list(frame.columns) if columns is None else columns
    return pd.DataFrame({name: _taken(frame[name], rows) for name in names}, copy=False)


def _taken(column: pd.Series, rows: np.ndarray) -> Any:
    """``column``'s values at ``rows``, as the frame's constructor keeps them: object values
    in an object Series (an array of them would be inferred, text becoming strings)."""
    values = column.array.take(rows)
    return pd.Series(values, dtype=object, copy=False) if is_object_dtype(column.dtype) else values


def anchor_stamps(frame: pd.DataFrame, dataset: str) -> np.ndarray | None:
    """The anchors of ``frame``'s rows as ns since the epoch (UTC, as :func:`utc_naive`
    makes them; NaT the smallest int64), without a copy; ``None``: they are not datetimes
    in ns (or the dataset has no anchor)."""
    ds = REGISTRY.get(dataset)
    if ds is None or ds.anchor is None or ds.anchor not in frame.columns:
        return None
    column = frame[ds.anchor]
    dtype = column.dtype
    if isinstance(dtype, pd.DatetimeTZDtype) and dtype.unit == "ns":
        return np.asarray(column.array.asi8)
    if dtype == np.dtype("datetime64[ns]"):
        return column.to_numpy().view(np.int64)
    return None


def recent_rows(stamps: np.ndarray | None, first_day: int, end_day: int) -> np.ndarray | None:
    """Positions of the rows whose anchor (``stamps``: :func:`anchor_stamps`) falls from
    ``first_day`` to ``end_day``, and of those with a null anchor (public at a deadline, or
    never); ``None``: fewer than a quarter of the rows would be left out, or no stamps
    (then every row, as they are). No row is converted, coded or copied."""
    if stamps is None or not len(stamps):
        return None
    low, high = first_day * NS_PER_DAY, (end_day + 1) * NS_PER_DAY
    rows = _rows_by_runs(stamps, low, high) if len(stamps) >= RUNS_FROM else None
    if rows is None:  # a scan of the anchors as integers
        keep = stamps >= low
        keep &= stamps < high
        keep |= stamps == _NAT
        rows = np.flatnonzero(keep)
    return rows if 4 * len(rows) <= 3 * len(stamps) else None


# Rows of a frame from which its anchors' ascending runs are searched rather than scanned
# (_rows_by_runs; a scan of fewer was as fast), and rows per run at least.
RUNS_FROM: Final = 1 << 20
RUN_ROWS: Final = 16


def _rows_by_runs(stamps: np.ndarray, low: int, high: int) -> np.ndarray | None:
    """:func:`recent_rows`'s positions where the anchors come in long ascending runs (a
    frame grouped by symbol, each symbol's rows oldest first, as loaders return them): in
    a run the rows from ``low`` to ``high`` are one range, and its null anchors (NaT, the
    smallest int64) its head, found by binary searches of every run at once, so that each
    row is compared once (for the runs' ends), not three times. ``None``: runs too short."""
    n = len(stamps)
    breaks = np.flatnonzero(stamps[1:] < stamps[:-1])
    if (len(breaks) + 1) * RUN_ROWS > n:
        return None
    starts = np.concatenate([[0], breaks + 1])
    stops = np.concatenate([breaks + 1, [n]])
    nulls = _search_runs(stamps, starts, stops, _NAT + 1)
    first = _search_runs(stamps, starts, stops, low)
    last = _search_runs(stamps, starts, stops, high)
    # Per run its null head, then its range: ascending positions, as a scan finds them.
    begin = np.column_stack([starts, first]).ravel()
    end = np.column_stack([nulls, last]).ravel()
    lengths = end - begin
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(begin - offsets, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)


def _search_runs(
    stamps: np.ndarray, starts: np.ndarray, stops: np.ndarray, value: int
) -> np.ndarray:
    """Per ascending run ``starts[k]:stops[k]`` of ``stamps``, the first position holding
    ``value`` or more (``stops[k]``: none): one bisection of every run at once."""
    lo, hi = starts.copy(), stops.copy()
    last = len(stamps) - 1
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) >> 1
        right = open_ & (stamps[np.minimum(mid, last)] < value)
        lo = np.where(right, mid + 1, lo)
        hi = np.where(open_ & ~right, mid, hi)


def _public_times(frame: pd.DataFrame, dataset: str) -> np.ndarray:
    """When each row of ``frame`` became public (datetime64[ns], UTC), as
    :func:`mdframes.pit.public_times` says: a row at its anchor, a null anchor at its legal
    deadline (or never). Each row's time is its own: pit is asked of the rows with a null
    anchor only, the others' are their anchors as they are (no pass through pandas)."""
    stamps = anchor_stamps(frame, dataset)
    if stamps is None:
        return utc_naive(public_times(frame))
    nulls = np.flatnonzero(stamps == _NAT)
    if not len(nulls):
        return stamps.view("datetime64[ns]")
    ds = REGISTRY[dataset]
    assert ds.anchor is not None  # anchor_stamps found its column
    columns = [ds.anchor]
    event = ds.deadline.event if ds.deadline is not None else None
    if event is not None and event in frame.columns:
        if not is_datetime64_any_dtype(frame[event].dtype):
            return utc_naive(public_times(frame))  # text dates: parsed as a whole column is
        columns.append(event)
    part = take_rows(frame, nulls, columns)
    part.attrs = {"dataset": dataset}
    times = stamps.view("datetime64[ns]").copy()  # stamps may be the frame's own
    times[nulls] = utc_naive(public_times(part))
    return times


class Grid:
    """The panel's cells. Computed symbol-major, so that the searches' keys come sorted (numpy
    searches sorted keys much faster); :meth:`panel_order` gives the panel's date-major order.

    A cell's symbol and day are its row and column in a (symbols, dates) table: the engine
    broadcasts ``date_days`` over the symbols instead of holding two int64 arrays of every
    cell for the whole panel (``codes`` and ``days`` are made only where asked)."""

    def __init__(self, dates: pd.DatetimeIndex, n_symbols: int, max_back: int = 0) -> None:
        self.date_days = day_numbers(dates.to_numpy(dtype="datetime64[ns]"))  # one per date
        self.max_back = max_back  # the longest window that will be asked for
        self._keys: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()
        self.n_symbols, self.n_dates = n_symbols, len(self.date_days)
        self.size = n_symbols * self.n_dates
        self._codes: np.ndarray | None = None
        self._days: np.ndarray | None = None

    @property
    def codes(self) -> np.ndarray:
        """Each cell's symbol position (symbol-major)."""
        with self._lock:
            if self._codes is None:
                self._codes = np.repeat(np.arange(self.n_symbols, dtype=np.int64), self.n_dates)
            return self._codes

    @property
    def days(self) -> np.ndarray:
        """Each cell's day number (symbol-major)."""
        with self._lock:
            if self._days is None:
                self._days = np.tile(self.date_days, self.n_symbols)
            return self._days

    def per_symbol(self, values: np.ndarray) -> np.ndarray:
        """One value per symbol repeated over its cells."""
        return np.repeat(values, self.n_dates)

    def table(self, values: np.ndarray) -> np.ndarray:
        """Symbol-major cell values as a (symbols, dates) view."""
        return values.reshape(self.n_symbols, self.n_dates)

    def keys(self, back: int = 0) -> np.ndarray:
        """Sort keys of (symbol, D - back): rows up to and including that day sort before.
        Made when first asked (a dataset's count table answers without them), once for the
        threads that share the grid."""
        with self._lock:
            if back not in self._keys:
                symbol = np.arange(self.n_symbols, dtype=np.int64)[:, None] * SPAN
                day = np.maximum(self.date_days - back + OFF, 0).astype(np.int64)
                self._keys[back] = (symbol + day[None, :]).ravel()
            return self._keys[back]

    def panel_order(self, values: np.ndarray) -> np.ndarray:
        """Symbol-major ``values`` in the panel's order: by date, then symbol."""
        return values.reshape(self.n_symbols, self.n_dates).T.ravel()


class Events:
    """One dataset's rows that can enter the panel, sorted by (symbol, public time).

    ``reach``: the longest window its features ask for (``None``: the grid's, of every
    dataset's features), so that its (symbol, day) count table spans its own windows."""

    reach: int | None = None
    # The rows that enter a short panel over a long history; VersionEvents (which shares
    # ``values``) never cuts, so the class says none.
    _entering: np.ndarray | None = None

    def __init__(
        self,
        frame: pd.DataFrame,
        dataset: str,
        symbols: list[str],
        end_day: int,
        cut_day: int | None = None,
        latest: tuple[Feature, ...] = (),
        columns: list[str] | None = None,
        reach: int | None = None,
    ):
        # A short panel over a long history (frames given whole): the rows public from the
        # windows on (and the weeks before them where a latest value is sought) are picked
        # by their anchors before anything else is made of them, so that the set-up below
        # costs the window's rows, not the history's. Older rows are kept only for the
        # symbols with no latest value in those weeks (all of theirs).
        self.reach = reach
        recent = anchors = None
        if cut_day is not None:
            anchors = anchor_stamps(frame, dataset)
            recent = recent_rows(anchors, cut_day - (_BAND if latest else 0), end_day)
        whole = frame
        if recent is not None:
            frame = take_rows(whole, recent, columns)
            frame.attrs = whole.attrs
        entered = self._enter(frame, dataset, symbols, end_day, cut_day, latest)
        times, days, enters, codes, lacking = entered
        if latest and codes is None and recent is not None:  # nothing in the weeks before
            lacking = np.ones((len(latest), len(symbols)), dtype=bool)
        if lacking is not None and recent is not None:
            # Some symbol has no value in the weeks before the windows: the same once more,
            # with the older rows of those symbols.
            assert anchors is not None and cut_day is not None
            more = self._with_older(whole, symbols, latest, lacking, recent, anchors, cut_day)
            if more is not None:
                again = take_rows(whole, more, columns)
                again.attrs = whole.attrs
                entered = self._enter(again, dataset, symbols, end_day, cut_day, latest)
                times, days, enters, codes, _ = entered
        if codes is None:
            codes = self._codes(self.frame, symbols, enters)
        self._index(symbols, codes, enters, times, days, cut_day)

    def _enter(
        self, frame: pd.DataFrame, dataset: str, symbols: list[str], end_day: int,
        cut_day: int | None, latest: tuple[Feature, ...],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:  # fmt: skip
        """``frame`` as this dataset's, its rows' public times and days, which can enter,
        and, where rows before the windows are given for ``latest`` features, the entering
        rows' symbol codes and the (feature, symbol) pairs lacking a latest value."""
        frame = frame.reset_index(drop=True)
        frame.attrs = {**frame.attrs, "dataset": dataset}
        self.frame, self.dataset = frame, dataset
        # Anchors, null anchors and their legal deadlines: mdframes.pit decides, so the panel
        # and point_in_time can never disagree on when a row became public.
        times = _public_times(frame, dataset)
        days = day_numbers(times)
        enters = ~np.isnat(times) & (days <= end_day)
        # Symbols are coded for the rows that can enter only: of a short panel over a long
        # history, the window's rows and each symbol's latest value before it.
        before = None
        if cut_day is not None:
            before = enters & (days < cut_day)
            if before.any():
                enters &= ~before
            else:
                before = None
        # Per latest feature (rows), the symbols without a value of it found (columns).
        lacking: np.ndarray | None = None
        codes: np.ndarray | None = None
        if before is not None and latest:
            codes = np.full(len(frame), -1, dtype=np.int64)
            lacking = self._latest_before(
                frame, symbols, latest, before, days, times, cut_day, codes, enters
            )
        return times, days, enters, codes, lacking

    def _with_older(
        self, whole: pd.DataFrame, symbols: list[str], latest: tuple[Feature, ...],
        lacking: np.ndarray, recent: np.ndarray, anchors: np.ndarray, cut_day: int,
    ) -> np.ndarray | None:  # fmt: skip
        """The recent rows and the older rows of the symbols that ``lacking`` says have no
        latest value before the windows (the older rows' symbols are coded to find them;
        nothing else of them is made); ``None``: those symbols have no older row."""
        older = np.flatnonzero((anchors < (cut_day - _BAND) * NS_PER_DAY) & (anchors != _NAT))
        if len(older):
            older_codes = symbol_codes(whole["symbol"], symbols, older)
            mine = np.append(lacking.any(axis=0), False)[older_codes]
            older, older_codes = older[mine], older_codes[mine]
        if len(older) and all(_plain(f) for f in latest):
            # Of those, the rows that carry a value of a feature their symbol lacks: the
            # others would not be picked (a symbol with no value of a feature at all, e.g.
            # no Android app, would else take its whole history through again). Columns
            # only: a feature's function is not run twice on a row.
            older = older[self._could_fill(whole, latest, lacking, older, older_codes)]
        if not len(older):
            return None
        both = np.zeros(len(whole), dtype=bool)  # disjoint: older rows are not recent
        both[recent] = True
        both[older] = True
        return np.flatnonzero(both)

    def _index(
        self, symbols: list[str], codes: np.ndarray, enters: np.ndarray, times: np.ndarray,
        days: np.ndarray, cut_day: int | None,
    ) -> None:  # fmt: skip
        """The entering rows (``enters``, of a known symbol) sorted by (symbol, public
        time): ``take`` of the frame, their ``codes`` and ``days``, each symbol's first."""
        frame = self.frame
        enters &= codes >= 0
        keep = np.flatnonzero(enters)
        del enters
        everything = len(keep) == len(frame)  # no copies of whole columns then
        stamps = times.view(np.int64) if everything else times[keep].view(np.int64)
        del times
        order = sort_order(codes if everything else codes[keep], stamps, self._tie(keep))
        del stamps
        # A short panel over a long history: a function of the frame (a value, sign or
        # where) runs on the rows that enter only, as on a lake read of the window.
        self._entering = keep if cut_day is not None and 2 * len(keep) < len(frame) else None
        self._order: np.ndarray | slice | None = None
        if self._entering is not None:
            self._order = slice(None) if order is None else order
        self._part: pd.DataFrame | None = None
        # Rows that all enter in frame order (a lake read's): a slice, so that neither these
        # positions nor a feature's numbers are copied (``values``).
        self._identity = everything and order is None
        take: np.ndarray | slice = (
            slice(None) if self._identity else keep if order is None else keep[order]
        )
        del keep, order
        self.take = take
        self.codes = codes[take]
        self.days = days[take]
        del codes, days
        self._keys: np.ndarray | None = None
        # Each symbol's first row: one search per symbol, not per cell.
        self.starts = np.searchsorted(self.codes, np.arange(len(symbols) + 1), side="left")
        self._ends: dict[int, np.ndarray] = {}
        self._first: np.ndarray | None = None
        self._dense: tuple[int, int, np.ndarray] | None = None

    @staticmethod
    def _codes(frame: pd.DataFrame, symbols: list[str], rows: np.ndarray) -> np.ndarray:
        """Each row's position in ``symbols`` (-1: another symbol), coded where ``rows``."""
        column = frame["symbol"]
        if rows.all():
            return symbol_codes(column, symbols)
        codes = np.full(len(frame), -1, dtype=np.int64)
        where = np.flatnonzero(rows)
        codes[where] = symbol_codes(column, symbols, where)
        return codes

    def _latest_before(
        self,
        frame: pd.DataFrame,
        symbols: list[str],
        latest: tuple[Feature, ...],
        before: np.ndarray,
        days: np.ndarray,
        times: np.ndarray,
        cut_day: int | None,
        codes: np.ndarray,
        enters: np.ndarray,
    ) -> np.ndarray | None:
        """Codes the rows of ``enters`` (the window's) in ``codes``, and marks in ``enters``
        (coded too) each symbol's latest row before
        ``cut_day`` carrying a value of each ``latest`` feature. Looked for in the weeks
        before the cut, then in the rest of the history for the symbols not found there
        only (rows of an earlier day are earlier): the rows of a long history are not coded
        unless a symbol has no value in those weeks, and not evaluated but for it. Returns
        per feature the symbols it found no such row of in the frame (``None``: none)."""
        assert cut_day is not None
        stamp = times.view(np.int64)
        tie: np.ndarray | None = None
        oldest = int(days[before].min())
        lacking = [np.ones(len(symbols), dtype=bool) for _ in latest]
        reads = _reads(frame, latest)
        # Features of columns only: which rows carry a value is read off the columns, no
        # rows taken out (made once, for each band).
        plain: list[np.ndarray] | None = None
        high, width = cut_day, _BAND
        while True:
            low = high - width
            band = (
                before & (days >= low) & (days < high) if low > oldest else before & (days < high)
            )
            rows = np.flatnonzero(band)
            # The window's rows are coded with the first band's: one take of the symbols.
            coding = np.flatnonzero(band | enters) if high == cut_day else rows
            del band
            if len(coding):
                codes[coding] = symbol_codes(frame["symbol"], symbols, coding)
            del coding
            # Only the rows of symbols some feature has not found yet are evaluated.
            open_ = np.append(np.logical_or.reduce(lacking), False)  # -1: another symbol
            rows = rows[open_[codes[rows]]]
            if len(rows):
                if all(_plain(f) for f in latest):
                    if plain is None:
                        plain = [counted_rows(frame, self.dataset, f) for f in latest]
                    counted = [valid[rows] for valid in plain]
                else:  # a function runs on these rows only
                    part = take_rows(frame, rows, reads)
                    part.attrs = frame.attrs
                    counted = [counted_rows(part, self.dataset, f) for f in latest]
                    del part
                if tie is None:
                    tie = self._tie(slice(None))
                for counts, missing in zip(counted, lacking, strict=True):
                    mine = rows[counts]
                    mine = mine[missing[codes[mine]]]
                    picked = last_per_code(mine, codes, stamp, tie)
                    enters[picked] = True
                    missing[codes[picked]] = False
            if not any(m.any() for m in lacking):
                return None
            if low <= oldest:
                return np.stack(lacking)
            # The rest at once: symbols without a value for weeks are rare, and each band
            # more would be a pass over the whole frame again.
            high, width = low, high - oldest + 1

    def _could_fill(
        self,
        frame: pd.DataFrame,
        latest: tuple[Feature, ...],
        lacking: np.ndarray,
        rows: np.ndarray,
        codes: np.ndarray,
    ) -> np.ndarray:
        """Which of ``rows`` (of ``frame``; ``codes``: their symbols' positions) carry a
        value of a ``latest`` feature their symbol lacks (``lacking``: per feature, per
        symbol)."""
        part = take_rows(frame, rows, _reads(frame, latest))
        part.attrs = {**frame.attrs, "dataset": self.dataset}
        keep = np.zeros(len(rows), dtype=bool)
        for feature, missing in zip(latest, lacking, strict=True):
            if missing.any():
                keep |= counted_rows(part, self.dataset, feature) & missing[codes]
        return keep

    def first(self, grid: Grid) -> np.ndarray:
        """For each cell (g, D): the position of symbol g's first row."""
        if self._first is None:
            starts = self.starts[:-1]
            if len(self.codes) < 2**31:  # positions fit 32 bits: half the cached array
                starts = starts.astype(np.int32)
            self._first = grid.per_symbol(starts)
        return self._first

    def _tie(self, keep: np.ndarray | slice) -> np.ndarray | None:
        """Event dates, where they differ from the anchor: of rows public at the same moment,
        the one with the later event date is the latest."""
        event = REGISTRY[self.dataset].event
        if event is not None and event in self.frame.columns:
            return utc_naive(self.frame[event]).view(np.int64)[keep]  # NaT sorts first
        return None

    def ends(self, grid: Grid, back: int = 0) -> np.ndarray:
        """For each cell (g, D): the number of rows sorted before the end of day D - back, over
        all symbols (so rows of symbol g run from ``starts[g]`` to it). Shared by the
        dataset's features."""
        if back not in self._ends:
            table = self._table(grid) if back <= self._reach(grid) else None
            if table is None:
                if self._keys is None:  # made for the first search only
                    self._keys = self.codes * SPAN + (self.days + OFF)
                self._ends[back] = np.searchsorted(self._keys, grid.keys(back), side="right")
            else:
                base, span, totals = table
                # Row g of the (symbol, day) table at each date's column: no index array
                # of every cell.
                at = grid.date_days - back - base
                self._ends[back] = totals.reshape(grid.n_symbols, span)[:, at].ravel()
        return self._ends[back]

    def _reach(self, grid: Grid) -> int:
        """The longest window asked of this dataset's rows."""
        return grid.max_back if self.reach is None else min(self.reach, grid.max_back)

    def _table(self, grid: Grid) -> tuple[int, int, np.ndarray] | None:
        """Rows counted per (symbol, day) and accumulated in sort order: entry (g, D) is the
        number of rows sorted up to the end of day D of symbol g, which is what a search
        would find. Cheaper than searching when the days are not many more than the cells."""
        if self._dense is None:
            base = int(grid.date_days.min()) - self._reach(grid) - 1  # all earlier rows
            span = int(grid.date_days.max()) - base + 1
            size = grid.n_symbols * span
            if size > max(DENSE_PER_CELL * grid.size, DENSE_CELLS):
                self._dense = (0, 0, np.empty(0, dtype=np.int64))
            else:
                # In place: a big dataset's engine is made of arrays the size of its rows.
                cells = self.days - base
                np.clip(cells, 0, span - 1, out=cells)
                cells += self.codes * span
                # Positions of fewer than 2**31 rows fit 32 bits: half the table, and half
                # each cell's positions gathered from it (``ends``), while the dataset's
                # features are computed.
                small = len(self.codes) < 2**31
                totals = np.empty(size, dtype=np.int32 if small else np.int64)
                # The rows are sorted by symbol, then time: their cells ascend, so the table
                # is counted and accumulated a block of cells at a time (a 64-bit count of
                # every cell was twice the table again while it was made).
                carry = 0
                for lo in range(0, size, TABLE_BLOCK):
                    hi = min(lo + TABLE_BLOCK, size)
                    i, j = np.searchsorted(cells, (lo, hi))
                    block = totals[lo:hi]
                    np.cumsum(np.bincount(cells[i:j] - lo, minlength=hi - lo), out=block)
                    np.add(block, carry, out=block)
                    carry = int(block[-1])
                del cells
                self._dense = (base, span, totals)
        return None if self._dense[1] == 0 else self._dense

    def values(self, feature: Feature) -> tuple[np.ndarray, np.ndarray | None, bool]:
        """The feature's per-row numbers in sorted order, which rows count (``None``: all),
        and whether the numbers are integers."""
        frame, take = self.frame, self.take
        entering = self._entering
        if entering is not None and any(
            callable(getattr(feature, role)) for role in ("value", "sign", "where")
        ):
            if self._part is None:
                self._part = take_rows(frame, entering)
                self._part.attrs = frame.attrs
            assert self._order is not None  # kept wherever rows enter apart
            frame, take = self._part, self._order
        n = len(frame)
        if feature.value is None:
            vals, valid, is_int = np.ones(n, dtype=np.int64), np.ones(n, dtype=bool), True
        else:
            value = evaluate(frame, self.dataset, feature, "value")
            vals, valid, is_int = _numbers(value, feature, "value")
        if feature.sign is not None:
            sign_of = evaluate(frame, self.dataset, feature, "sign")
            sign, ok, sign_int = _numbers(sign_of, feature, "sign")
            is_int = is_int and sign_int
            vals = vals * sign if is_int else vals.astype("float64") * sign
            valid = valid & ok
        if feature.where is not None:
            valid = valid & _flags(evaluate(frame, self.dataset, feature, "where"), feature)
        counted = None if valid.all() else valid[take]  # None: all count
        return vals[take], counted, is_int  # a view where take is a slice


def _plain(feature: Feature) -> bool:
    """Whether ``feature`` reads columns only (no function for its value, sign or where)."""
    return all(getattr(feature, role) is None or isinstance(getattr(feature, role), str)
               for role in ("value", "sign", "where"))  # fmt: skip


def _reads(frame: pd.DataFrame, features: tuple[Feature, ...]) -> list[str] | None:
    """The columns of ``frame`` that ``features`` read (their functions' as they declare
    them); ``None``: all of them (a function that does not say, a column the frame lacks:
    its error names the frame's columns)."""
    named = feature_columns(features)
    if named is None:
        return None
    names = ["symbol", *named]
    return list(dict.fromkeys(names)) if set(names) <= set(frame.columns) else None


def counted_rows(frame: pd.DataFrame, dataset: str, feature: Feature) -> np.ndarray:
    """Which rows of ``frame`` (in its order) carry a value of ``feature``: its value and
    sign not null, its ``where`` true."""
    n = len(frame)
    valid = np.ones(n, dtype=bool)
    if feature.value is not None:
        valid &= _numbers(evaluate(frame, dataset, feature, "value"), feature, "value")[1]
    if feature.sign is not None:
        valid &= _numbers(evaluate(frame, dataset, feature, "sign"), feature, "sign")[1]
    if feature.where is not None:
        valid &= _flags(evaluate(frame, dataset, feature, "where"), feature)
    return valid


def last_per_code(
    rows: np.ndarray, codes: np.ndarray, stamp: np.ndarray, tie: np.ndarray | None
) -> np.ndarray:
    """Of ``rows`` (ascending positions), per code (>= 0) the one latest by (time, tie,
    position), as the engine orders them, without sorting: per-code maxima (``ufunc.at``,
    no hashing) narrowing the candidates. Returns ascending positions."""
    if not len(rows):
        return rows
    c = codes[rows]
    size = int(c.max()) + 1
    for key in (stamp, tie):
        if key is None:
            continue
        k = key[rows].astype(np.int64, copy=False)
        top = np.full(size, np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(top, c, k)
        hit = k == top[c]
        rows, c = rows[hit], c[hit]
    last = np.full(size, -1, dtype=np.int64)
    np.maximum.at(last, c, rows)
    return np.sort(last[last >= 0])


def evaluate(frame: pd.DataFrame, dataset: str, feature: Feature, role: str) -> pd.Series:
    """The column or function result of ``feature``'s ``role`` on ``frame``."""
    spec = getattr(feature, role)
    if isinstance(spec, str):
        if spec not in frame.columns:
            raise InvalidParameterError(
                f"feature {feature.name!r}: the {dataset} frame has no column {spec!r} "
                f"({role}); its columns: {', '.join(map(str, frame.columns))}",
                parameter=role,
            )
        return frame[spec]
    try:
        result = spec(frame)
    except InvalidParameterError:
        raise
    except Exception as exc:  # a user's function: say which feature and role failed
        raise InvalidParameterError(
            f"feature {feature.name!r}: its {role} function failed on the {dataset} "
            f"frame: {type(exc).__name__}: {exc}",
            parameter=role,
        ) from exc
    if isinstance(result, pd.Series):
        return result if result.index.equals(frame.index) else result.reindex(frame.index)
    if np.ndim(result) == 0:
        return pd.Series([result] * len(frame), index=frame.index)
    if len(result) != len(frame):
        raise InvalidParameterError(
            f"feature {feature.name!r}: its {role} function returned {len(result)} values "
            f"for {len(frame)} rows",
            parameter=role,
        )
    return pd.Series(result, index=frame.index)


def sort_order(codes: np.ndarray, times: np.ndarray, tie: np.ndarray | None) -> np.ndarray | None:
    """The stable order by (code, time, tie): rows with equal keys keep their frame order, so
    the later row of the frame is the latest. ``None``: the rows are in that order already
    (a lake read's), no positions made.

    Frames grouped by symbol with times ascending (oldest first) or strictly descending
    (newest first), as loaders return them, need no comparison sort: a radix sort of the
    symbol codes, then a check (and a reversal within each symbol)."""
    n = len(codes)
    by_code: np.ndarray | None = None
    if n > 1 and not (codes[1:] >= codes[:-1]).all():
        small = codes.astype(np.uint16) if codes.max() < 1 << 16 else codes
        by_code = np.argsort(small, kind="stable")  # radix sort for 16-bit keys
        c, t = codes[by_code], times[by_code]
    else:  # grouped already (a lake read): no copies of the keys
        c, t = codes, times
    same = c[1:] == c[:-1]
    rising = t[1:] >= t[:-1]
    if tie is not None:
        k = tie if by_code is None else tie[by_code]
        rising = (t[1:] > t[:-1]) | ((t[1:] == t[:-1]) & (k[1:] >= k[:-1]))
    if (~same | rising).all():
        return by_code
    if (~same | (t[1:] < t[:-1])).all():  # strictly newest first: no ties to keep in order
        bounds = np.flatnonzero(~same) + 1
        starts, stops = np.concatenate([[0], bounds]), np.concatenate([bounds, [n]])
        mirror = np.repeat(starts + stops - 1, stops - starts)  # first + last of the row's run
        mirror -= np.arange(n)
        return mirror if by_code is None else by_code[mirror]
    return np.lexsort((times, codes) if tie is None else (tie, times, codes))


def _numbers(values: pd.Series, feature: Feature, role: str) -> tuple[np.ndarray, np.ndarray, bool]:
    dtype = values.dtype
    if is_object_dtype(dtype):
        with contextlib.suppress(TypeError, ValueError):
            values = pd.to_numeric(values)
        dtype = values.dtype
    if is_bool_dtype(dtype) or is_integer_dtype(dtype):
        valid = values.notna().to_numpy(dtype=bool)
        return values.to_numpy(dtype=np.int64, na_value=0), valid, True
    if is_float_dtype(dtype):
        vals = values.to_numpy(dtype="float64", na_value=np.nan)
        return vals, ~np.isnan(vals), False
    raise InvalidParameterError(
        f"feature {feature.name!r}: its {role} is not numeric (dtype {dtype})", parameter=role
    )


def _flags(values: pd.Series, feature: Feature) -> np.ndarray:
    if is_object_dtype(values.dtype):
        with contextlib.suppress(TypeError, ValueError):
            values = values.astype("boolean")
    if not is_bool_dtype(values.dtype):
        raise InvalidParameterError(
            f"feature {feature.name!r}: where must be boolean (dtype {values.dtype})",
            parameter="where",
        )
    return values.to_numpy(dtype=bool, na_value=False)


def window_sums(
    vals: np.ndarray,
    codes: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    grid: Grid,
    panel_order: bool = False,
) -> np.ndarray:
    """Sum of rows ``a..b`` of each cell, from running totals; symbol-major, or in the
    panel's order (``panel_order``: written there, no reordered copy of the panel made)."""
    if not len(vals):
        return np.zeros(len(b), dtype=vals.dtype)
    if vals.dtype.kind == "i":  # integers: one exact running total
        totals = np.concatenate([[0], np.cumsum(vals)])
        sums = totals[b] - totals[a]
        return grid.panel_order(sums) if panel_order else sums
    padded = _symbol_totals(vals, codes, grid.n_symbols)
    # Symbol g's totals sit g places on; a block of symbols at a time, so that the positions
    # and the gathered totals are the block's size, not the panel's.
    shape = (grid.n_dates, grid.n_symbols) if panel_order else (grid.n_symbols, grid.n_dates)
    out = np.empty(shape)
    ends, starts = grid.table(b), grid.table(a)
    step = max(1, CELL_BLOCK // max(grid.n_dates, 1))
    for lo in range(0, grid.n_symbols, step):
        hi = min(lo + step, grid.n_symbols)
        shift = np.arange(lo, hi, dtype=np.int64)[:, None]
        block = padded[ends[lo:hi] + shift]
        block -= padded[starts[lo:hi] + shift]
        if panel_order:
            out[:, lo:hi] = block.T
        else:
            out[lo:hi] = block
    return out.ravel()


# Cells per block of a window's sums (window_sums): its positions and gathered totals.
CELL_BLOCK = 1 << 16
# Rows per grouped running total: the grouping's own arrays (its copy of the values, the
# group numbers, the result) stay this size instead of the dataset's.
SUM_BLOCK = 1 << 18


def _symbol_totals(vals: np.ndarray, codes: np.ndarray, n_symbols: int) -> np.ndarray:
    """Float running totals that restart at each symbol, so rounding stays at that symbol's
    scale: pandas' grouped cumsum (compensated, Kahan), computed a block of whole symbols
    at a time (the same numbers; a symbol's totals never depend on another's). Symbol g's
    totals sit after a 0 of its own, shifted by g places: row i at ``i + codes[i] + 1``.
    ``codes`` are ascending (rows sorted by symbol)."""
    n = len(vals)
    padded = np.zeros(n + n_symbols)
    starts = np.searchsorted(codes, np.arange(n_symbols + 1), side="left")
    lo = 0
    while lo < n:
        hi = n if n - lo <= SUM_BLOCK else int(starts[codes[lo + SUM_BLOCK - 1] + 1])
        part = codes[lo:hi]
        local = pd.Series(vals[lo:hi], copy=False).groupby(part, sort=False).cumsum()
        padded[np.arange(lo + 1, hi + 1) + part] = local.to_numpy()
        lo = hi
    return padded


def compute(feature: Feature, events: Events, grid: Grid) -> Any:
    """One panel column (``Int64`` array or ``float64`` ndarray) for every cell of ``grid``,
    in the panel's order."""
    vals, valid, is_int = events.values(feature)
    agg, n = feature.agg, feature.days
    # Positions among all rows -> positions among the rows that count for this feature
    # (the same positions when every row counts, the common case).
    counted = None
    if valid is not None:
        # In 32 bits where the rows allow: the positions gathered from it are panel-sized.
        counted = np.zeros(len(valid) + 1, dtype=np.int32 if len(valid) < 2**31 else np.int64)
        np.cumsum(valid, out=counted[1:])

    def position(ends: np.ndarray) -> np.ndarray:
        return ends if counted is None else counted[ends]

    # Of the rows that count: their values here, their days and symbols only where needed
    # (positions gathered, not whole columns copied).
    rows = None if valid is None else np.flatnonzero(valid)
    if rows is not None:
        vals = vals[rows]
    # Each panel-sized array is made where this aggregation needs it only: a windowed sum
    # or count never needs a symbol's first row.
    b = position(events.ends(grid))
    if agg == "change":
        first = position(events.first(grid))
        prior = position(events.ends(grid, n or 0))
        ok = b > first
        ok &= prior > first
        del first
        if not len(vals):
            return finish_values(feature, grid, np.zeros(grid.size), ~ok, False)
        out = vals[b - 1].astype("float64") - vals[prior - 1].astype("float64")
        return finish_values(feature, grid, out, ~ok, False)
    if agg == "last":
        ok = b > position(events.first(grid))
        if not len(vals):
            return finish_values(feature, grid, np.zeros(grid.size, np.int64), ~ok, is_int)
        if n is not None:
            last = b - 1 if rows is None else rows[b - 1]
            recent = grid.table(events.days[last]) > (grid.date_days - n)[None, :]
            ok &= recent.ravel()
        return finish_values(feature, grid, vals[b - 1], ~ok, is_int)
    a = position(events.first(grid) if n is None else events.ends(grid, n))
    nothing_missing = np.zeros(grid.size, dtype=bool)
    if agg == "count":
        return finish_values(feature, grid, b - a, nothing_missing, True)
    codes = events.codes if rows is None else events.codes[rows]
    # In the panel's order already: the sums become the column, no reordered copy beside them.
    sums = window_sums(vals, codes, a, b, grid, panel_order=True)
    if agg == "sum":
        return finish_ordered(feature, sums, nothing_missing, is_int)
    means = sums if sums.dtype == np.float64 else sums.astype("float64")  # sums is ours
    counts = grid.panel_order(b - a)
    del a, b
    with np.errstate(invalid="ignore", divide="ignore"):
        np.divide(means, counts, out=means)
    return finish_ordered(feature, means, counts == 0, False)


def result_dtype(feature: Feature, is_int: bool) -> str:
    if feature.dtype is not None:
        return feature.dtype
    return (
        "Int64"
        if feature.agg == "count" or (is_int and feature.agg in ("sum", "last"))
        else "float64"
    )


def finish_values(
    feature: Feature, grid: Grid, values: np.ndarray, missing: np.ndarray, is_int: bool
) -> Any:
    """The column of symbol-major ``values`` (NA where ``missing``), in the panel's order."""
    ordered = grid.panel_order(values)
    missing = grid.panel_order(missing) if missing.any() else np.zeros(len(values), dtype=bool)
    # The panel-order copy is the column itself (a view of the caller's array is not).
    return finish_ordered(
        feature, ordered, missing, is_int, not np.may_share_memory(ordered, values)
    )


def finish_ordered(
    feature: Feature, values: np.ndarray, missing: np.ndarray, is_int: bool, own: bool = True
) -> Any:
    """The column of ``values`` already in the panel's order (NA where ``missing``); ``own``:
    ``values`` is the caller's to give, made into the column in place."""
    if result_dtype(feature, is_int) == "float64":
        out = values if own and values.dtype == np.float64 else values.astype("float64")
        out[missing] = np.nan
        return out
    if values.dtype.kind == "f":
        known = values[~missing]
        if not np.array_equal(known, np.round(known)):
            raise InvalidParameterError(
                f"feature {feature.name!r}: dtype='Int64' but its values are not whole numbers",
                parameter="dtype",
            )
        ints = np.where(missing, 0, values).astype(np.int64, copy=False)
    else:
        ints = values if own and values.dtype == np.int64 else values.astype(np.int64)
        ints[missing] = 0
    return pd.arrays.IntegerArray(ints, np.ascontiguousarray(missing))
