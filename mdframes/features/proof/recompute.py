"""The audit's own panel engine: a feature's value on one row recomputed from the rows of its
symbol that the row may know, filtered by plain comparisons and aggregated with plain numpy.

It shares nothing with the vectorised engine (:mod:`~mdframes.features.panels.engine`,
:mod:`~mdframes.features.panels.knowledge`), so that a bug there cannot hide itself. What it
shares is the point-in-time rule (``mdframes.pit.public_times``), the feature's own
value/sign/where and the lake's coverage, which define the cell.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ...identity import Identity
from ...pit import public_times
from ...registry import REGISTRY
from ..panels.spec import Feature
from .outcome import NS_PER_DAY

_ROW_RULES: set[int] = set()  # filled on first use (the catalog imports this package)


def _column(frame: pd.DataFrame, spec: Any) -> pd.Series:
    if isinstance(spec, str):
        return frame[spec]
    out = spec(frame)
    if isinstance(out, pd.Series):
        return out.reindex(frame.index) if not out.index.equals(frame.index) else out
    if np.ndim(out) == 0:
        return pd.Series([out] * len(frame), index=frame.index)
    return pd.Series(np.asarray(out), index=frame.index)


def _as_float(values: pd.Series) -> np.ndarray:
    if values.dtype == object:
        values = pd.to_numeric(values, errors="coerce")
    if pd.api.types.is_bool_dtype(values.dtype):
        values = values.astype("Float64")
    return values.to_numpy(dtype="float64", na_value=np.nan)


def remember_row_rules() -> None:
    """The catalog's row rules (functions of one row's fields: insider groups, congress
    amount bounds, ...), remembered once: their value on a row does not depend on the
    other rows."""
    from ..panels.definitions import CATALOG

    if not _ROW_RULES:
        _ROW_RULES.update(id(x) for f in CATALOG for x in (f.value, f.sign, f.where) if callable(x))


def _evaluate(rows: pd.DataFrame, spec: Any, flags: bool) -> np.ndarray:
    return _values(_column(rows, spec), flags)


def _values(column: pd.Series, flags: bool) -> np.ndarray:
    if flags:
        return column.astype("boolean").to_numpy(dtype=bool, na_value=False)
    return _as_float(column)


def _runs(column: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any]:
    """A symbol column as runs of equal values: each run's first row, length and code into
    the distinct values (``pd.factorize``'s; a missing value is coded -1). A frame comes
    grouped by symbol: an Arrow-backed column is compared row with row and only the runs'
    first values are hashed (a few hundred, not a string per row)."""
    n = len(column)
    values = column.array
    arrow = isinstance(column.dtype, pd.ArrowDtype) or (
        isinstance(column.dtype, pd.StringDtype) and column.dtype.storage == "pyarrow"
    )
    if arrow and n > 1 and hasattr(values, "__arrow_array__"):
        import pyarrow as pa
        import pyarrow.compute as pc

        array = pa.chunked_array(values.__arrow_array__())
        changed = pc.fill_null(pc.not_equal(array[1:], array[:-1]), True)
        heads = np.r_[0, np.flatnonzero(changed.to_numpy(zero_copy_only=False)) + 1]
        codes, uniques = pd.factorize(column.iloc[heads], use_na_sentinel=True)
    else:
        every, uniques = pd.factorize(column, use_na_sentinel=True)
        heads = np.r_[0, np.flatnonzero(every[1:] != every[:-1]) + 1] if n else every[:0]
        codes = every[heads]
    return heads, np.diff(np.r_[heads, n]), codes, uniques


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions ``starts[i], ..., starts[i] + lengths[i] - 1``, range after range."""
    before = np.cumsum(lengths) - lengths
    return np.arange(int(lengths.sum())) + np.repeat(starts - before, lengths)


def _ns(times: pd.Series) -> np.ndarray:
    """Instants as int64 ns since the epoch (aware ones in UTC; NaT: int64's minimum)."""
    if isinstance(times.dtype, pd.DatetimeTZDtype):
        times = times.dt.tz_convert(None)  # UTC, naive
    return times.to_numpy(dtype="datetime64[ns]").view(np.int64)


def _steps_back(ns: np.ndarray, ev: np.ndarray | None) -> np.ndarray:
    """Per pair of neighbouring rows, whether the second ranks before the first (public
    time ``ns``, then event date ``ev``)."""
    back = ns[1:] < ns[:-1]
    if ev is not None:
        back |= (ns[1:] == ns[:-1]) & (ev[1:] < ev[:-1])
    return back


class AuditInput:
    """One dataset's rows of the sampled symbols, with what every row has on its own: its
    public day (``mdframes.pit``'s rule), its rank key (public time, then event date, then
    frame order: the later row of equal times is the latest), and, for per-row knowledge,
    its fetch time and record. Nothing here looks at another row.

    The rows are positions ``mine`` into the frame as read (a dict source gives every
    symbol's); a column is taken for them only when a feature asks for it."""

    def __init__(self, frame: pd.DataFrame, dataset: str, symbols: list[str], row: bool):
        # A shallow copy without the read's attrs (pandas copies them with every column).
        source = pd.DataFrame(frame)
        source.index = pd.RangeIndex(len(frame))
        source.attrs = {"dataset": dataset}
        heads, lengths, run_codes, uniques = _runs(source["symbol"])
        where = {s: i for i, s in enumerate(symbols)}
        distinct = np.asarray(uniques, dtype=object)  # one conversion, not a scalar each
        lut = np.asarray([*(where.get(str(u).strip().upper(), -1) for u in distinct), -1])
        run_symbol = lut[run_codes]
        chosen = np.flatnonzero(run_symbol >= 0)
        heads, lengths, run_symbol = heads[chosen], lengths[chosen], run_symbol[chosen]
        mine = _ranges(heads, lengths)  # the sampled symbols' rows, in frame order
        self.whole = len(mine) == len(frame)
        self.source, self.mine, self.dataset = source, mine, dataset
        self._frame: pd.DataFrame | None = None
        ns = _ns(public_times(source))
        ns = ns if self.whole else ns[mine]
        self.days = ns // NS_PER_DAY
        event = REGISTRY[dataset].event
        ev: np.ndarray | None = None
        if event is not None and event in source.columns:
            ev = _ns(source[event])
            ev = ev if self.whole else ev[mine]
        self.spans: dict[str, tuple[int, int]] | None = None  # each symbol's run, if one
        if not self._one_ranked_run_each(symbols, run_symbol, lengths, ns, ev):
            self._by_symbol(symbols, run_symbol, lengths, ns, ev)
        self._columns: dict[Any, np.ndarray] = {}
        self._inputs: dict[Any, tuple[np.ndarray, np.ndarray, int | None] | None] = {}
        self.syncs: np.ndarray | None = None
        if row:
            frame = self.frame
            self.fetched = fetched_ns(frame)
            if "_sync_id" in frame.columns:
                self.syncs = frame["_sync_id"].to_numpy(dtype=object)
            key = REGISTRY[
                dataset
            ].record_id  # a view's own identity (daily app ratings: symbol, date)
            ids = Identity.parse(key).ids(frame)
            extra: np.ndarray
            if "_n" in frame.columns:
                extra = pd.factorize(frame["_n"])[0]
            elif "_sync_id" in frame.columns:
                # Records sharing an identity within one sync: told apart by their place.
                sync = pd.factorize(frame["_sync_id"])[0]
                extra = pd.Series(np.arange(len(frame))).groupby([ids, sync]).cumcount().to_numpy()
            else:
                extra = np.zeros(len(frame), dtype=np.int64)
            self.ids = ids * (int(extra.max(initial=0)) + 1) + extra

    def _one_ranked_run_each(
        self,
        symbols: list[str],
        run_symbol: np.ndarray,
        lengths: np.ndarray,
        ns: np.ndarray,
        ev: np.ndarray | None,
    ) -> bool:
        """A frame as loaders and lakes give it: each symbol's rows one run, public, in rank
        order. Each symbol's rows are then its run (no sort, no gather); ``False``: not so."""
        if len(np.unique(run_symbol)) != len(run_symbol) or (ns == np.iinfo(np.int64).min).any():
            return False
        back = _steps_back(ns, ev)
        starts = np.cumsum(lengths) - lengths
        back[starts[1:] - 1] = False  # one run's last row against the next run's first
        if back.any():
            return False
        runs = {int(code): k for k, code in enumerate(run_symbol)}
        none = np.arange(0)
        self.ranked, self.spans = {}, {}
        for i, s in enumerate(symbols):
            k = runs.get(i)
            self.ranked[s] = none if k is None else np.arange(starts[k], starts[k] + lengths[k])
            self.spans[s] = (0, 0) if k is None else (int(starts[k]), int(starts[k] + lengths[k]))
        self.rows_of = self.ranked
        return True

    def _by_symbol(
        self,
        symbols: list[str],
        run_symbol: np.ndarray,
        lengths: np.ndarray,
        ns: np.ndarray,
        ev: np.ndarray | None,
    ) -> None:
        """Each symbol's rows (``rows_of``) and its public ones in rank order (``ranked``),
        for rows in any order."""
        codes = np.repeat(run_symbol, lengths)
        # Rows by symbol (a stable sort of the runs, each run kept in frame order).
        by_run = np.argsort(run_symbol, kind="stable")
        by_code = _ranges((np.cumsum(lengths) - lengths)[by_run], lengths[by_run])
        order = by_code[ns[by_code] != np.iinfo(np.int64).min]  # public rows (NaT: never)
        # By symbol, then rank: frames usually come so already (one check); else a sort.
        c = codes[order]
        back = _steps_back(ns[order], None if ev is None else ev[order])
        if (back & (c[1:] == c[:-1])).any():
            keys = [np.arange(len(codes)), *([] if ev is None else [ev]), ns, codes]
            order = np.lexsort(keys)
            order = order[ns[order] != np.iinfo(np.int64).min]
        bounds = np.searchsorted(codes[order], np.arange(len(symbols) + 1))
        self.ranked = {s: order[bounds[i] : bounds[i + 1]] for i, s in enumerate(symbols)}
        edges = np.searchsorted(codes[by_code], np.arange(len(symbols) + 1))
        self.rows_of = {s: by_code[edges[i] : edges[i + 1]] for i, s in enumerate(symbols)}

    @property
    def frame(self) -> pd.DataFrame:
        """The rows of the sampled symbols (taken once, when needed)."""
        if self._frame is None:
            self._frame = self.source if self.whole else self.rows_frame(np.arange(len(self.mine)))
        return self._frame

    def rows_frame(self, rows: np.ndarray) -> pd.DataFrame:
        """A frame of ``rows`` (positions into this dataset's rows), indexed from 0."""
        out = self.source.take(rows if self.whole else self.mine[rows])
        out.index = pd.RangeIndex(len(out))
        out.attrs = {"dataset": self.dataset}
        return out

    def column(self, spec: Any, flags: bool) -> np.ndarray:
        """A column or a catalog row rule, for every row (evaluated once)."""
        key = (flags, spec if isinstance(spec, str) else id(spec))
        if key not in self._columns:
            if isinstance(spec, str):  # only this column taken
                values = self.source[spec]
                values = values if self.whole else values.take(self.mine)
                self._columns[key] = _values(values, flags)
            else:  # a row rule: on the columns it declares it reads (else on all)
                declared = getattr(spec, "columns", None)
                if declared is None:
                    frame = self.frame
                else:
                    some = [c for c in self.source.columns if c in set(declared)]
                    frame = self.source[some]
                    if not self.whole:
                        frame = frame.take(self.mine)
                        frame.index = pd.RangeIndex(len(frame))
                    frame.attrs = {"dataset": self.dataset}
                self._columns[key] = _evaluate(frame, spec, flags)
        return self._columns[key]

    def inputs(self, feature: Feature) -> tuple[np.ndarray, np.ndarray, int | None] | None:
        """A feature of columns and row rules: its signed values on every row, which of them
        count and its window (computed once); ``None``: it has another function."""
        key = id(feature)
        if key not in self._inputs:
            row_wise = all(_row_wise(x) for x in (feature.value, feature.sign, feature.where))
            self._inputs[key] = (
                _inputs_of(feature, len(self.days), self.column) if row_wise else None
            )
        return self._inputs[key]

    def first_sync_end(self, symbol: str) -> int | None:
        """When the sync that stored the symbol's earliest version ended (its latest fetch)."""
        rows = self.rows_of[symbol]
        if not len(rows):
            return None
        fetched = self.fetched[rows]
        first = rows[int(np.argmin(fetched))]
        if self.syncs is None:
            return int(self.fetched[first])
        same = rows[self.syncs[rows] == self.syncs[first]]
        return int(self.fetched[same].max())

    def known(self, symbol: str, cutoff: int | None) -> np.ndarray:
        """The symbol's rows in rank order; with a ``cutoff`` (ns), of every stored version
        only each record's latest fetched by then."""
        ranked = self.ranked[symbol]
        if cutoff is None:
            return ranked
        rows = self.rows_of[symbol]
        seen = rows[self.fetched[rows] <= cutoff]
        order = np.lexsort((seen, self.fetched[seen], self.ids[seen]))
        ids = self.ids[seen][order]
        last = np.r_[ids[1:] != ids[:-1], True]
        return ranked[np.isin(ranked, seen[order][last])]


class Known:
    """One symbol's rows known at a row's knowledge, in rank order, with their public days.
    A row dated D sees the prefix of them public by the end of D: its cut. A column or a
    catalog row rule is taken row by row from the dataset's rows (its value on a row does
    not depend on the other rows); any other function of the frame runs on each cut's rows
    only, so that one reading later rows is caught."""

    def __init__(
        self, data: AuditInput, rows: np.ndarray, span: tuple[int, int] | None = None
    ) -> None:
        self.data, self.rows, self.span = data, rows, span
        # Rows that are one run of the dataset's (``span``): read as views, not gathered.
        self.days = data.days[rows] if span is None else data.days[span[0] : span[1]]
        self._cut_columns: dict[Any, np.ndarray] = {}

    def value(self, feature: Feature, day: int) -> float:
        """The feature on ``day`` from the rows public by its end."""
        n = int(self.days.searchsorted(day, "right"))
        inputs = self.data.inputs(feature)
        if inputs is not None:  # the dataset's rows: the cut's are self.rows[:n]
            vals, ok, window = inputs
            if self.span is not None:
                a, b = self.span
                return _row_value(feature.agg, window, vals[a:b], ok[a:b], self.days[:n], day)
            return _row_value(feature.agg, window, vals, ok, self.days[:n], day, self.rows)
        vals, ok, window = _inputs_of(feature, n, lambda spec, flags: self._cut(spec, flags, n))
        return _row_value(feature.agg, window, vals, ok, self.days[:n], day)

    def _cut(self, spec: Any, flags: bool, n: int) -> np.ndarray:
        """A function of the frame on the cut's rows only (evaluated once per cut)."""
        if _row_wise(spec):
            return self.data.column(spec, flags)[self.rows[:n]]
        key = (flags, id(spec), n)
        if key not in self._cut_columns:
            rows = self.data.rows_frame(self.rows[:n])
            self._cut_columns[key] = _evaluate(rows, spec, flags)
        return self._cut_columns[key]


def _inputs_of(
    feature: Feature, n: int, get: Callable[[Any, bool], np.ndarray]
) -> tuple[np.ndarray, np.ndarray, int | None]:
    """The feature's signed values on ``n`` rows, which of them count (a value, a sign, its
    filter), and its window in days."""
    if not n:
        vals = np.empty(0)
    elif feature.value is None:
        vals = np.ones(n)
    else:
        vals = get(feature.value, False)
    ok = ~np.isnan(vals)
    if feature.sign is not None and n:
        sign = get(feature.sign, False)
        vals = vals * sign
        ok &= ~np.isnan(sign)
    if feature.where is not None and n:
        ok &= get(feature.where, True)
    return vals, ok, feature.days


def _row_wise(spec: Any) -> bool:
    """A column, a catalog row rule or nothing: its value on a row is the row's own."""
    return spec is None or isinstance(spec, str) or id(spec) in _ROW_RULES


def _row_value(
    agg: str,
    n: int | None,
    vals: np.ndarray,
    ok: np.ndarray,
    days: np.ndarray,
    day: int,
    rows: np.ndarray | None = None,
) -> float:
    """A feature (``agg`` over ``n`` days, ``None``: all) on ``day`` from the cut's values,
    which of them count and their public days, by CONTRACT §11's definitions. The cut's
    ``i``-th row is ``vals[rows[i]]`` (``vals[i]`` without ``rows``); its rows are in rank
    order, so their days never fall: a window is a run of them, found by bisection, and
    only its rows are read."""
    end = len(days)
    if not end:
        return 0.0 if agg in ("count", "sum") else np.nan
    # The first row public after day - n (rows public on or before it are out of a window).
    first = 0 if n is None else int(days.searchsorted(day - n, "right"))
    if agg == "change":
        assert n is not None
        return _latest(vals, ok, rows, 0, end) - _latest(vals, ok, rows, 0, first)
    if agg == "last":
        return _latest(vals, ok, rows, first, end)
    if rows is None:
        values, counts = vals[first:end], ok[first:end]
    else:
        at = rows[first:end]
        values, counts = vals[at], ok[at]
    count = int(np.count_nonzero(counts))
    if agg == "count":
        return float(count)
    if agg == "sum":
        return float(values[counts].sum()) if count else 0.0
    return float(values[counts].sum()) / count if count else np.nan  # mean


def _latest(vals: np.ndarray, ok: np.ndarray, rows: np.ndarray | None, lo: int, hi: int) -> float:
    """The value of the last row of the cut's ``[lo, hi)`` that counts (the latest): it is
    usually among the last few rows."""
    while hi > lo:
        start = max(lo, hi - 64)
        if rows is None:
            values, counts = vals[start:hi], ok[start:hi]
        else:
            at = rows[start:hi]
            values, counts = vals[at], ok[at]
        picks = counts.nonzero()[0]
        if len(picks):
            return float(values[picks[-1]])
        hi = start
    return np.nan


def fetched_ns(frame: pd.DataFrame) -> np.ndarray:
    stamps = pd.to_datetime(frame["_fetched_at"], utc=True)
    return stamps.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]").view(np.int64)
