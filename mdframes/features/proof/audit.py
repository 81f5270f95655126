"""A leakage audit of a training set (CONTRACT §13): recompute sampled rows from the source
cut at each row's knowledge, look for label copies, measure any splitter's fold overlap, and
report coverage and knowledge.

``look_ahead`` shares nothing with the vectorised engine (:mod:`.engine`, :mod:`.knowledge`):
each sampled cell is computed from the rows of its symbol that the row may know, filtered by
plain comparisons and aggregated with plain numpy, so that a bug in the engine cannot hide
itself. What it shares is the point-in-time rule (``mdframes.pit.public_times``), the
feature's own value/sign/where and the lake's coverage, which define the cell.
"""

from __future__ import annotations

import datetime as dt
import html
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd

from ...errors import InvalidParameterError
from ...identity import Identity
from ...pit import public_times
from ...registry import REGISTRY
from ..panels.reach import read_columns
from ..panels.sources import (
    ROW,
    FramesSource,
    LakeLike,
    LakeSource,
    Source,
    base_name,
    load_start,
    public_start,
    record_key,
)
from ..panels.spec import Feature
from ..panels.unseen import Coverage, read_coverage
from ..training.replay import features_of, pinned

__all__ = ["AuditReport", "audit", "CHECKS", "fold_overlaps"]

CHECKS: Final = ("look_ahead", "label_leak", "cv_overlap", "coverage", "knowledge")
CHECK_COLUMNS: Final = ["check", "status", "detail", "rows"]
FAILURE_COLUMNS: Final = ["check", "date", "symbol", "feature", "expected", "got"]
_CORRELATED = 0.99  # |corr(feature, y)| above this is a copy of the label
_PRICE_MATCH = 0.9  # a feature equal to a later price on this share of its rows copies it
_PRICE_ROWS = 20_000  # labelled rows compared with later prices (a sample when more)
_LISTED = 50  # offending rows listed per check
_RTOL = 1e-9
_NS_PER_DAY = 86_400 * 10**9
_ROW_RULES: set[int] = set()  # filled on first use (the catalog imports this package)


@dataclass
class AuditReport:
    """What :func:`audit` found.

    Attributes
    ----------
    ok : bool
        No check failed.
    checks : DataFrame
        ``check, status`` (``"pass"``, ``"fail"`` or ``"skipped"``), ``detail``, ``rows``
        (rows or cells that failed; what was examined when it passed).
    failures : DataFrame
        ``check, date, symbol, feature, expected, got``: the offending cells and rows (at
        most 50 per check).
    """

    checks: pd.DataFrame
    failures: pd.DataFrame

    @property
    def ok(self) -> bool:
        return bool((self.checks["status"] != "fail").all())

    def __repr__(self) -> str:
        failed = self.checks.loc[self.checks["status"] == "fail", "check"].tolist()
        return f"<AuditReport ok={self.ok}{' failed: ' + ', '.join(failed) if failed else ''}>"

    def __str__(self) -> str:
        lines = [f"audit: {'ok' if self.ok else 'FAILED'}"]
        for row in self.checks.itertuples(index=False):
            lines.append(f"  {row.check:<11} {row.status:<7} {row.detail}")
        if len(self.failures):
            lines.append(f"failures ({len(self.failures)} listed):")
            lines.extend(
                "  " + line for line in self.failures.head(10).to_string(index=False).splitlines()
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        colour = {"pass": "#1a7f37", "fail": "#cf222e", "skipped": "#6e7781"}
        rows = "".join(
            f"<tr><td>{html.escape(str(check))}</td>"
            f"<td style='color:{colour.get(str(status), '')};font-weight:bold'>{status}</td>"
            f"<td style='text-align:left'>{html.escape(str(detail))}</td><td>{n}</td></tr>"
            for check, status, detail, n in self.checks[CHECK_COLUMNS].itertuples(index=False)
        )
        head = f"<b>AuditReport</b>: {'ok' if self.ok else 'failed'}"
        table = (
            "<table><tr><th>check</th><th>status</th><th>detail</th><th>rows</th></tr>"
            f"{rows}</table>"
        )
        more = ""
        if len(self.failures):
            more = (
                f"<details><summary>{len(self.failures)} failures</summary>"
                f"{self.failures.head(20).to_html(index=False)}</details>"
            )
        return f"<div>{head}{table}{more}</div>"


@dataclass
class _Outcome:
    status: str
    detail: str
    rows: int
    failures: list[dict[str, Any]]


def _skip(reason: str) -> _Outcome:
    return _Outcome("skipped", reason, 0, [])


# --- the source ---------------------------------------------------------------------------------


def _open_source(ts: Any, source: Any) -> Source | None:
    """The source to cut: the one given (a lake read at the set's recorded versions), else
    the set's own lake when ``info`` names a local folder that is one; ``None``: none."""
    if source is None:
        root = str(ts.info.get("source") or "")
        if root in ("", "service", "frames") or "://" in root or "***" in root:
            return None
        import os

        if not os.path.isdir(root):
            return None
        from ...lake import Lake

        source = Lake(root)
    if isinstance(source, Source):
        return source
    if isinstance(source, dict):
        return FramesSource(source)
    if isinstance(source, LakeLike):
        return LakeSource(pinned(source, ts.info))
    raise InvalidParameterError(
        f"source must be a lake or a dict of frames, not {type(source).__name__}",
        parameter="source",
    )


# --- look_ahead: plain per-row recomputation ------------------------------------------------------


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


def _row_rules() -> set[int]:
    """The catalog's row rules (functions of one row's fields: insider groups, congress
    amount bounds, ...): their value on a row does not depend on the other rows."""
    from ..panels.definitions import CATALOG

    return {id(x) for f in CATALOG for x in (f.value, f.sign, f.where) if callable(x)}


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


class _Dataset:
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
        self.days = ns // _NS_PER_DAY
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
            self.fetched = _fetched(frame)
            if "_sync_id" in frame.columns:
                self.syncs = frame["_sync_id"].to_numpy(dtype=object)
            key = record_key(dataset)  # a view's own identity (daily app ratings: symbol, date)
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
        back = ns[1:] < ns[:-1]
        if ev is not None:
            back |= (ns[1:] == ns[:-1]) & (ev[1:] < ev[:-1])
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
        c, t = codes[order], ns[order]
        back = t[1:] < t[:-1]
        if ev is not None:
            e = ev[order]
            back |= (t[1:] == t[:-1]) & (e[1:] < e[:-1])
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


class _Known:
    """One symbol's rows known at a row's knowledge, in rank order, with their public days.
    A row dated D sees the prefix of them public by the end of D: its cut. A column or a
    catalog row rule is taken row by row from the dataset's rows (its value on a row does
    not depend on the other rows); any other function of the frame runs on each cut's rows
    only, so that one reading later rows is caught."""

    def __init__(
        self, data: _Dataset, rows: np.ndarray, span: tuple[int, int] | None = None
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


def _fetched(frame: pd.DataFrame) -> np.ndarray:
    stamps = pd.to_datetime(frame["_fetched_at"], utc=True)
    return stamps.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]").view(np.int64)


def _first_sync_ends(history: pd.DataFrame) -> dict[str, int]:
    """Per symbol of ``history`` (every stored version): when the sync that stored its
    earliest version ended (that sync's latest fetch of the symbol), in ns."""
    if not len(history):
        return {}
    codes, names = pd.factorize(history["symbol"].astype(str))
    fetched = _fetched(history)
    # Each symbol's earliest fetched row (the first in the frame of equal times).
    order = np.lexsort((np.arange(len(codes)), fetched, codes))
    heads = order[np.r_[0, np.flatnonzero(np.diff(codes[order])) + 1]]
    first = np.empty(len(names), dtype=np.int64)
    first[codes[heads]] = heads
    ends = fetched[first].copy()
    if "_sync_id" in history.columns:
        sync = pd.factorize(history["_sync_id"], use_na_sentinel=True)[0]
        same = (sync == sync[first][codes]) & (sync >= 0)
        np.maximum.at(ends, codes[same], fetched[same])
    return {str(name): int(end) for name, end in zip(names, ends, strict=True)}


def _look_ahead(
    ts: Any,
    attrs: dict[str, Any],
    source: Source | None,
    features: list[Feature],
    sample: int,
    seed: int,
) -> _Outcome:
    if source is None:
        return _skip(
            "no source that can be cut at each row's knowledge (the service keeps no "
            "history): pass source= the lake or the frames the set was made from"
        )
    names = [f.name for f in features if f.name in ts.X.columns]
    extra = [c for c in ts.X.columns if c not in names]
    if not len(ts.X) or not names or sample == 0:
        return _skip("no rows, no known features or sample=0: nothing recomputed")
    rng = np.random.default_rng(seed)
    picks = np.sort(rng.choice(len(ts.X), size=min(int(sample), len(ts.X)), replace=False))
    index = ts.X.index[picks]
    dates = pd.DatetimeIndex(index.get_level_values(0))
    symbols = [str(s) for s in index.get_level_values(1)]
    wanted = list(dict.fromkeys(symbols))
    known_at = ts.info.get("known_at")
    row = known_at == ROW
    cut_known = None if known_at in (None, ROW) else pd.Timestamp(known_at)
    failed = set(attrs.get("failed", {}))
    rows = ts.X.iloc[picks]  # the sampled rows only, before any conversion
    recorded = {name: rows[name].to_numpy(dtype="float64", na_value=np.nan) for name in names}
    by_dataset: dict[str, list[Feature]] = {}
    for f in features:
        if f.name in names:
            by_dataset.setdefault(f.dataset, []).append(f)
    coverage = None
    if isinstance(source, LakeSource):
        bases = list(dict.fromkeys(base_name(d) for d in by_dataset))
        table = read_coverage(source.lake, bases, wanted)
        coverage = (
            None if table is None else Coverage(table, bases, wanted, ROW if row else cut_known)
        )
    first_date, last_date = dates.min().date(), dates.max().date()
    stamps = dates.asi8  # ns since the epoch (UTC)
    row_days = stamps // _NS_PER_DAY
    place = {s: i for i, s in enumerate(wanted)}
    columns = np.asarray([place[s] for s in symbols], dtype=np.int64)
    failures: list[dict[str, Any]] = []
    bad = 0
    for dataset, mine in by_dataset.items():
        lookback: int | None = 0
        for f in mine:
            lookback = None if lookback is None or f.lookback is None else max(lookback, f.lookback)
        start = load_start(dataset, first_date, lookback)
        readable = wanted if coverage is None else coverage.readable(dataset, wanted)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frame, _ = source.read(
                dataset,
                readable,
                start,
                last_date,
                known_at=ROW if row else cut_known,
                errors="skip",
                columns=read_columns(dataset, mine),  # what the features and pit read
                public_from=public_start(dataset, first_date, lookback),
            )
        data = _Dataset(frame, dataset, readable, row)
        floors = {s: data.first_sync_end(s) for s in readable} if row else {}
        # Which cells may have a value at all: the window inside the dataset's history and,
        # with a lake, its coverage (else NA by definition, CONTRACT §11, §11.1).
        allowed = np.ones((len(picks), len(mine)), dtype=bool)
        for j, f in enumerate(mine):
            allowed[:, j] = _covered(f, coverage, wanted, row_days, columns)
        allowed[[s in failed or s not in data.ranked for s in symbols]] = False
        expected = np.full((len(picks), len(mine)), np.nan)
        known: dict[tuple[str, int | None], _Known] = {}
        for k in np.flatnonzero(allowed.any(axis=1)):
            symbol, day = symbols[k], int(row_days[k])
            cutoff = None
            if row:
                end_of_day = int(stamps[k]) + _NS_PER_DAY - 1
                floor = floors.get(symbol)
                cutoff = max(end_of_day, floor if floor is not None else end_of_day)
            key = (symbol, cutoff)
            if key not in known:
                span = data.spans.get(symbol) if cutoff is None and data.spans else None
                known[key] = _Known(data, data.known(symbol, cutoff), span)
            for j, f in enumerate(mine):
                if allowed[k, j]:
                    expected[k, j] = known[key].value(f, day)
        got = np.column_stack([recorded[f.name] for f in mine])
        with np.errstate(invalid="ignore"):
            close = np.abs(expected - got) <= _RTOL * np.maximum(1.0, np.abs(expected))
        differ = ~((np.isnan(expected) & np.isnan(got)) | (close & ~np.isnan(got)))
        bad += int(differ.sum())
        for k, j in np.argwhere(differ)[: max(0, _LISTED - len(failures))]:
            failures.append(
                {"check": "look_ahead", "date": dates[k], "symbol": symbols[k],
                 "feature": mine[j].name, "expected": float(expected[k, j]),
                 "got": float(got[k, j])}
            )  # fmt: skip
    cells = len(picks) * len(names)
    note = f"; not recomputed (not features of the set): {', '.join(extra)}" if extra else ""
    if bad:
        named = sorted({str(f["feature"]) for f in failures})
        return _Outcome(
            "fail",
            f"{bad} of {cells} cells ({len(picks)} rows) differ from the source cut at each "
            f"row's knowledge: {', '.join(named)}{note}",
            bad,
            failures,
        )
    return _Outcome(
        "pass",
        f"{len(picks)} rows x {len(names)} features recomputed from the source cut at each "
        f"row's knowledge ({'versions known by the end of each row' if row else known_at or 'latest versions'}){note}",
        cells,
        [],
    )


def _covered(
    feature: Feature,
    coverage: Coverage | None,
    symbols: list[str],
    days: np.ndarray,
    columns: np.ndarray,
) -> np.ndarray:
    """Per sampled row (its day and its symbol's place in ``symbols``): whether the row's
    window is inside the dataset's history and, with a lake, its coverage (else the cell is
    NA by definition, CONTRACT §11, §11.1)."""
    from ..panels.chunk import covered_from

    first = covered_from(feature)
    out = np.ones(len(days), dtype=bool)
    if first is not None:
        out &= days >= (first - dt.date(1970, 1, 1)).days
    if coverage is not None:
        out &= coverage.covered(feature, symbols, days)[np.arange(len(days)), columns]
    return out


# --- label_leak ---------------------------------------------------------------------------------


def _close(a: np.ndarray, b: np.ndarray, rtol: float) -> np.ndarray:
    """``np.isclose(a, b, rtol=rtol, atol=0)`` without its checks (NaN: not close)."""
    with np.errstate(invalid="ignore"):
        return (np.abs(a - b) <= rtol * np.abs(b)) | (a == b)


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Every value of ``a`` equals ``b``'s (relative 1e-12); a column that is not a copy
    differs within its first rows, so those are looked at first."""
    head = min(len(a), 1024)
    if not _close(a[:head], b[:head], 1e-12).all():
        return False
    return bool(_close(a, b, 1e-12).all())


def _correlation(x: np.ndarray, yc: np.ndarray, syy: float | None = None) -> float | None:
    """Pearson's correlation of ``x`` and ``y`` (no NaN; ``yc``: ``y`` minus its mean;
    ``syy``: the sum of its squares, when known); ``None`` when one is constant."""
    xc = x - x.mean()
    # einsum, not BLAS's dot: its threads spin against a busy machine's other work.
    sxx = float(np.einsum("i,i->", xc, xc))
    if syy is None:
        syy = float(np.einsum("i,i->", yc, yc))
    if not (sxx > 0 and syy > 0):
        return None
    return float(np.einsum("i,i->", xc, yc)) / np.sqrt(sxx * syy)


def _label_leak(ts: Any, source: Source | None) -> _Outcome:
    y = ts.y.to_numpy(dtype="float64", na_value=np.nan)
    known = ~np.isnan(y)
    if not known.any():
        return _skip("no row has a label")
    failures: list[dict[str, Any]] = []
    found: list[str] = []
    # Later prices on a sample of the labelled rows: a copy of one shows on any sample.
    labelled = np.flatnonzero(known)
    if len(labelled) > _PRICE_ROWS:
        labelled = np.sort(np.random.default_rng(0).choice(labelled, _PRICE_ROWS, replace=False))
    prices = _later_prices(ts, source, labelled)
    # The label over its rows, centred once: most features have a value on every one.
    y_known = y[known]
    y_centred = y_known - y_known.mean()
    y_squares = float(np.einsum("i,i->", y_centred, y_centred))
    for name in ts.X.columns:
        x = ts.X[name].to_numpy(dtype="float64", na_value=np.nan)
        x_known = x[known]
        valid = ~np.isnan(x_known)
        count = int(np.count_nonzero(valid))
        if count < 2:
            continue
        why = None
        syy: float | None = None
        if count == len(x_known):
            xs, ys, yc, syy = x_known, y_known, y_centred, y_squares
        else:
            xs, ys = x_known[valid], y_known[valid]
            yc = ys - ys.mean()
        if _equal(xs, ys):
            why = "equal to the label"
        else:
            corr = _correlation(xs, yc, syy)
            if corr is not None and abs(corr) > _CORRELATED:
                why = f"correlation {corr:+.4f} with the label"
        both: np.ndarray | None = None  # the rows listed (made when listed)
        expected = y
        if why is None and prices is not None:
            share, k = _price_copy(x[labelled], prices)
            if share > _PRICE_MATCH:
                future = prices[k - 1]
                why = f"equal to the price {k} period(s) after its date on {share:.0%} of rows"
                expected = np.full(len(x), np.nan)
                expected[labelled] = future
                both = np.zeros(len(x), dtype=bool)
                both[labelled] = ~np.isnan(future) & ~np.isnan(x[labelled])
        if why is None:
            continue
        found.append(f"{name} ({why})")
        if both is None:
            both = known & ~np.isnan(x)
        rows = np.flatnonzero(both)[:10]
        for i in rows:
            date, symbol = ts.X.index[i]
            failures.append(
                {"check": "label_leak", "date": date, "symbol": str(symbol), "feature": name,
                 "expected": float(expected[i]), "got": float(x[i])}
            )  # fmt: skip
    checked = "; prices after each date checked" if prices is not None else ""
    if found:
        return _Outcome("fail", "; ".join(found), len(found), failures)
    return _Outcome(
        "pass",
        f"{ts.X.shape[1]} features against the label over {int(known.sum())} labelled "
        f"rows{checked}",
        int(known.sum()),
        [],
    )


def _set_dates_symbols(ts: Any) -> tuple[pd.DatetimeIndex, list[str]]:
    """The set's dates and symbols, each in order of first appearance (read off the index's
    codes, not its 260,000 values)."""
    index = ts.X.index
    dates = pd.DatetimeIndex(index.levels[0].take(pd.unique(index.codes[0])))
    symbols = [str(s) for s in index.levels[1].take(pd.unique(index.codes[1]))]
    return dates, symbols


def _later_prices(ts: Any, source: Source | None, rows: np.ndarray) -> np.ndarray | None:
    """Row k - 1 for k = 1..lag+horizon: the price k periods after the date of each of
    ``rows`` (positions; NaN where none); ``None`` when the source has no prices."""
    from ..training.labels import long_prices, periods_after

    label = ts.info.get("label") or {}
    reach = int(label.get("horizon", 1)) + int(label.get("lag", 0))
    if source is None or not len(ts.X) or reach < 1:
        return None
    freq = ts.info.get("freq", "B")
    dates, symbols = _set_dates_symbols(ts)
    calendar = periods_after(dates, freq, reach)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw = source.prices(symbols, dates[0].date(), calendar[-1].date(), "skip")
        if isinstance(raw, pd.DataFrame):
            raw = pd.DataFrame(raw)  # without its attrs, which pandas copies with each column
            raw.attrs = {}
        prices = long_prices(raw, parameter="source")
    except Exception:  # noqa: BLE001 - no prices (a dict without them): the check says so
        return None
    # One price per (symbol, calendar date): long_prices keeps the last given of each day.
    place = {s: i for i, s in enumerate(symbols)}
    categories = prices["symbol"].cat.categories
    of_category = np.asarray([place.get(str(c), -1) for c in categories], dtype=np.int64)
    symbol = of_category[prices["symbol"].cat.codes.to_numpy()]
    cal_days = calendar.to_numpy(dtype="datetime64[D]").astype(np.int64)
    day = _day_positions(cal_days, prices["day"].to_numpy(dtype=np.int64))
    on = (symbol >= 0) & (day >= 0)
    grid = np.full((len(symbols), len(cal_days)), np.nan)
    grid[symbol[on], day[on]] = prices["price"].to_numpy(dtype="float64")[on]
    index = ts.X.index
    level_dates = dates.get_indexer(index.levels[0])
    level_symbols = np.asarray([place.get(str(s), -1) for s in index.levels[1]], dtype=np.int64)
    position = level_dates[index.codes[0][rows]]
    row_symbols = level_symbols[index.codes[1][rows]]
    return np.stack([grid[row_symbols, position + k] for k in range(1, reach + 1)])


def _day_positions(calendar: np.ndarray, days: np.ndarray) -> np.ndarray:
    """``pd.Index(calendar).get_indexer(days)`` (day numbers; -1: not in it): through a
    table over the calendar's span when its days increase (a set's calendar does), one
    slot before and after it for the days outside."""
    if not len(calendar) or not (calendar[1:] > calendar[:-1]).all():
        return pd.Index(calendar).get_indexer(pd.Index(days))
    lo, hi = int(calendar[0]), int(calendar[-1])
    table = np.full(hi - lo + 3, -1, dtype=np.intp)
    table[calendar - lo + 1] = np.arange(len(calendar))
    return table[np.clip(days - (lo - 1), 0, hi - lo + 2)]


def _price_copy(x: np.ndarray, prices: np.ndarray) -> tuple[float, int]:
    """The largest share of ``x`` equal to the price k periods later when it is above
    ``_PRICE_MATCH``, and that k; ``(0.0, 0)`` when no k comes above it (with two values
    to compare)."""
    both = ~np.isnan(x)[None, :] & ~np.isnan(prices)
    counts = both.sum(axis=1)
    # A share above the bar allows few misses: a k with more among the first rows is out
    # (with a row's margin for rounding), and most features are out after 2,048 rows.
    head = min(len(x), 2048)
    misses = (both[:, :head] & ~_close(x[None, :head], prices[:, :head], 1e-9)).sum(axis=1)
    best = (0.0, 0)
    for k in np.flatnonzero((counts >= 2) & (misses <= (1 - _PRICE_MATCH) * counts + 1)):
        hits = int(np.count_nonzero(_close(x, prices[k], 1e-9) & both[k]))
        share = hits / int(counts[k])
        if share > _PRICE_MATCH and share > best[0]:
            best = (share, int(k) + 1)
    return best


# --- cv_overlap ---------------------------------------------------------------------------------


def _folds(cv: Any, ts: Any) -> list[tuple[str, Any, list[tuple[np.ndarray, np.ndarray]]]]:
    """(name, splitter or None, folds as positions into ts.X) for each splitter to check."""
    if cv is None:
        out = []
        # The rows without their columns: the same folds, without the splitters' count of
        # features left NA per fold (a warning, silenced here; coverage reports it).
        rows = ts.X.iloc[:, :0]
        for method in ("walk_forward", "kfold", "combinatorial"):
            splitter = ts.cv(method)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    folds = list(splitter.split(rows, ts.y))
            except InvalidParameterError:
                continue  # too few dates for its defaults
            out.append((method, splitter, folds))
        return out
    if hasattr(cv, "split"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            folds = [(np.asarray(a), np.asarray(b)) for a, b in cv.split(ts.X, ts.y)]
        return [(type(cv).__name__, cv, folds)]
    if isinstance(cv, Iterable):
        folds = [(np.asarray(a), np.asarray(b)) for a, b in cv]
        return [("folds", None, folds)]
    raise InvalidParameterError(
        "cv must be a scikit-learn splitter (with .split) or a list of (train, test) positions",
        parameter="cv",
    )


def fold_overlaps(
    starts: np.ndarray,
    ends: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
    embargo_until: np.ndarray | None = None,
) -> np.ndarray:
    """The training positions whose label interval ``[starts, ends]`` (int day numbers)
    overlaps some test row's, or whose date lies in an embargo interval ``(a, b]`` of
    ``embargo_until`` (an (m, 2) array)."""
    train = np.asarray(train, dtype=np.int64)
    test = np.asarray(test, dtype=np.int64)
    if not len(train) or not len(test):
        return train[:0]
    ts_, te = starts[test], ends[test]
    order = np.argsort(ts_, kind="stable")
    ts_, te = ts_[order], np.maximum.accumulate(te[order])  # reach of tests starting so far
    a, b = starts[train], ends[train]
    k = np.searchsorted(ts_, b, side="right") - 1  # the last test starting on or before b
    hit = (k >= 0) & (te[np.maximum(k, 0)] >= a)
    if embargo_until is not None and len(embargo_until):
        lo, hi = embargo_until[:, 0], embargo_until[:, 1]
        inside = (a[:, None] > lo[None, :]) & (a[:, None] <= hi[None, :])
        hit |= inside.any(axis=1)
    return train[hit]


def _embargoes(
    splitter: Any, test: np.ndarray, starts: np.ndarray, ends: np.ndarray, freq: Any
) -> np.ndarray | None:
    """The embargo intervals ``(latest t1 of a test block, + embargo periods]`` of one of our
    splitters (a block: a run of consecutive test dates); ``None`` for others."""
    periods = int(getattr(splitter, "embargo", 0) or 0)
    if splitter is None or periods <= 0 or not len(test):
        return None
    offset = pd.tseries.frequencies.to_offset(getattr(splitter, "freq", None) or freq)
    days = np.unique(starts[test])
    grid = np.unique(starts)
    where = np.searchsorted(grid, days)
    breaks = np.flatnonzero(np.diff(where) > 1) + 1
    out = []
    for block in np.split(days, breaks):
        inside = np.isin(starts[test], block)
        latest = int(ends[test][inside].max())
        stamp = pd.Timestamp(latest, unit="D")
        until = pd.date_range(stamp, periods=periods + 1, freq=offset)[-1]
        if not offset.is_on_offset(stamp):
            until = pd.date_range(stamp, periods=periods, freq=offset)[-1]
        out.append((latest, int(until.value // _NS_PER_DAY)))
    return np.asarray(out, dtype=np.int64)


class _Counts:
    """How many of some positions fall in each code of the rows' ``codes`` (rows of one
    code come in runs, in a set's own order). Positions in increasing order (what
    splitters give) are counted run by run, by bisection; any others by a gather."""

    def __init__(self, codes: np.ndarray, n_codes: int) -> None:
        self.codes, self.n_codes = codes, n_codes
        n = len(codes)
        heads = np.flatnonzero(codes[1:] != codes[:-1]) + 1 if n else codes[:0]
        self.runs: tuple[np.ndarray, np.ndarray] | None = None
        if 8 * (len(heads) + 1) <= n:
            self.runs = (codes[np.r_[0, heads]], np.r_[0, heads, n])

    def of(self, positions: np.ndarray) -> np.ndarray:
        """Per code, the positions in it (as ``np.bincount(codes[positions])``)."""
        p = positions
        if (
            self.runs is not None
            and len(p)
            and p[0] >= 0
            and p[-1] < len(self.codes)
            and bool((p[1:] >= p[:-1]).all())
        ):
            run_code, bounds = self.runs
            per_run = np.diff(np.searchsorted(p, bounds))
            return np.bincount(run_code, weights=per_run, minlength=self.n_codes).astype(np.int64)
        return np.bincount(self.codes[p], minlength=self.n_codes)


def _cv_overlap(ts: Any, splits: list[tuple[str, Any, list[Any]]]) -> _Outcome:
    if not len(ts.X):
        return _skip("no rows")
    starts = ts.X.index.get_level_values(0).to_numpy(dtype="datetime64[D]").astype(np.int64)
    ends = ts.t1.to_numpy(dtype="datetime64[D]").astype(np.int64)
    ends = np.where(ends < starts, starts, ends)  # NaT t1: the row's own date
    # Whether a row overlaps depends on its [D, t1] only: the folds are judged on the
    # distinct intervals (a few hundred), then each training row takes its interval's verdict.
    pair, keys = pd.factorize((starts << 32) + (ends - starts))  # day numbers: 32 bits each
    pair = pair.astype(np.int32)  # half the bytes to gather per fold
    pairs = np.asarray(keys, dtype=np.int64)
    first = pairs >> 32
    last = first + (pairs & 0xFFFFFFFF)
    freq = ts.info.get("freq", "B")
    per_interval = _Counts(pair, len(pairs))
    failures: list[dict[str, Any]] = []
    parts, bad = [], 0
    for name, splitter, folds in splits:
        counts = []
        for k, (train, test) in enumerate(folds):
            train = np.asarray(train, dtype=np.int64)
            test = np.asarray(test, dtype=np.int64)
            per_pair = per_interval.of(train)
            tested = np.flatnonzero(per_interval.of(test))
            embargo = _embargoes(splitter, tested, first, last, freq)
            overlapping = fold_overlaps(first, last, np.flatnonzero(per_pair), tested, embargo)
            counts.append(int(per_pair[overlapping].sum()))
            if not len(overlapping) or len(failures) >= _LISTED:
                continue
            hit = np.zeros(len(pairs), dtype=bool)
            hit[overlapping] = True
            for i in train[hit[pair[train]]][: _LISTED - len(failures)]:
                date, symbol = ts.X.index[i]
                failures.append(
                    {"check": "cv_overlap", "date": date, "symbol": str(symbol),
                     "feature": f"{name} fold {k}", "expected": "no overlap",
                     "got": f"trains on [{date:%Y-%m-%d}, {ts.t1.iloc[i]:%Y-%m-%d}], "
                            "overlapping a test label or in the embargo"}
                )  # fmt: skip
        bad += sum(counts)
        parts.append(f"{name}: {len(folds)} folds, overlapping training rows {counts}")
    if not parts:
        return _skip("no splitter could split this set (too few dates for the defaults)")
    return _Outcome("fail" if bad else "pass", "; ".join(parts), bad, failures)


# --- coverage and knowledge ---------------------------------------------------------------------


def _na_patterns(isna: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's pattern of NA columns (a code) and each pattern's NA columns."""
    if not isna.shape[1]:
        return np.zeros(len(isna), dtype=np.int64), isna[:1]
    # packbits(isna, axis=1), packed as one flat run of rows padded to whole bytes (numpy
    # packs a flat array several times faster than row by row).
    width = -(-isna.shape[1] // 8) * 8
    whole = np.zeros((len(isna), width), dtype=bool)
    whole[:, : isna.shape[1]] = isna
    bits = np.packbits(whole.reshape(-1)).reshape(len(isna), width // 8)
    padded = np.zeros((len(bits), -(-bits.shape[1] // 8) * 8), dtype=np.uint8)
    padded[:, : bits.shape[1]] = bits
    words = padded.view(np.uint64)
    if words.shape[1] == 1:
        pattern = pd.factorize(words[:, 0])[0]
    else:
        pattern = np.unique(words, axis=0, return_inverse=True)[1].reshape(-1)
    one = np.zeros(int(pattern.max(initial=-1)) + 1, dtype=np.int64)
    one[pattern] = np.arange(len(pattern))  # any row of a pattern stands for it
    return pattern.astype(np.int32), isna[one]


def _coverage(
    ts: Any, attrs: dict[str, Any], splits: list[tuple[str, Any, list[Any]]], given: bool
) -> _Outcome:
    if not len(ts.X):
        return _skip("no rows")
    isna = ts.X.isna().to_numpy(dtype=bool)
    empty = [c for c, na in zip(ts.X.columns, isna.all(axis=0), strict=True) if na]
    # Rows by their pattern of NA features (a few hundred patterns): a feature is NA on
    # every training row when it is NA in every pattern the training rows have.
    pattern, na_of = _na_patterns(isna)
    fold_na: dict[str, list[str]] = {}
    # Every splitter given; of the defaults, the walk-forward one (the others train on all).
    checked = (splits if given else splits[:1]) if isna.shape[1] else []
    for name, _, pairs in checked:
        for k, (train, _test) in enumerate(pairs):
            if not len(train):
                continue
            present = np.bincount(pattern[np.asarray(train)], minlength=len(na_of)) > 0
            na = na_of[present].all(axis=0)
            for column in ts.X.columns[na]:
                if column not in empty:
                    fold_na.setdefault(str(column), []).append(f"{name} {k}")
    stats = attrs.get("coverage", {})
    uncovered = {n: int(v.get("uncovered", 0)) for n, v in stats.items() if v.get("uncovered")}
    parts = []
    if empty:
        parts.append(f"NA on every row: {', '.join(empty)}")
    if fold_na:
        parts.append(
            "NA on every training row of a fold: "
            + "; ".join(f"{c} ({', '.join(f)})" for c, f in fold_na.items())
        )
    if uncovered:
        parts.append(
            "rows left NA for lack of the lake's coverage: "
            + ", ".join(f"{n} {k}" for n, k in uncovered.items())
        )
    failures = [
        {"check": "coverage", "date": pd.NaT, "symbol": None, "feature": c,
         "expected": "some value", "got": "NA on every row"}
        for c in empty
    ]  # fmt: skip
    detail = "; ".join(parts) or f"every feature has values ({ts.X.shape[1]} features)"
    return _Outcome("fail" if empty else "pass", detail, len(empty), failures)


def _knowledge(ts: Any, attrs: dict[str, Any], source: Source | None) -> _Outcome:
    if ts.info.get("known_at") != ROW:
        return _skip("the set was not made with known_at='row'")
    recorded = attrs.get("knowledge")
    if not isinstance(recorded, dict):
        return _Outcome("fail", "known_at='row' but the set records no knowledge", 1, [])
    n_rows = len(ts.X)
    shares = [
        f"{ds} {int(v.get('rows', 0)) / n_rows if n_rows else 0:.0%} of rows"
        for ds, v in recorded.items()
    ]
    detail = "rows dated before their symbol's first sync (backfilled, not observed): " + (
        ", ".join(shares) or "none"
    )
    if not isinstance(source, LakeSource):
        return _Outcome("pass", detail + " (not recounted: no lake source)", n_rows, [])
    # Recount from the lake: per symbol, the end of the sync that stored its first version.
    dates = pd.DatetimeIndex(ts.X.index.get_level_values(0).unique())
    symbols = [str(s) for s in ts.X.index.get_level_values(1).unique()]
    days = np.sort(dates.to_numpy(dtype="datetime64[D]").astype(np.int64))
    failures = []
    for ds, v in recorded.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            history = source.lake.read(base_name(ds), symbols, history=True,
                                       columns=["symbol"])  # fmt: skip
        ends = _first_sync_ends(history)
        count = 0
        for s in symbols:
            floor = ends.get(s)
            if floor is not None:  # the dates before the day that sync ended
                count += int(np.searchsorted(days, floor // _NS_PER_DAY, side="left"))
        if count != int(v.get("rows", -1)):
            failures.append(
                {"check": "knowledge", "date": pd.NaT, "symbol": None, "feature": ds,
                 "expected": count, "got": v.get("rows")}
            )  # fmt: skip
    if failures:
        named = ", ".join(f"{f['feature']} (recorded {f['got']}, lake {f['expected']})"
                          for f in failures)  # fmt: skip
        return _Outcome("fail", f"the set misstates its backfilled rows: {named}", len(failures),
                        failures)  # fmt: skip
    return _Outcome("pass", detail, n_rows, [])


# --- the audit ----------------------------------------------------------------------------------


def audit(
    ts: Any,
    *,
    source: Any = None,
    sample: int = 200,
    cv: Any = None,
    seed: int = 0,
) -> AuditReport:
    """Check a training set for leaks, without changing it (CONTRACT §13).

    - ``look_ahead``: ``sample`` rows drawn with ``seed`` are recomputed, one cell at a time,
      from the source cut to what each row may know (anchors on or before its date; with a
      lake, the versions fetched by the set's ``known_at``, by the end of the row's date for
      ``"row"``, read at the table versions the set recorded). A differing cell fails.
    - ``label_leak``: a feature equal to ``y``, with ``|corr| > 0.99`` over labelled rows, or
      equal to a price dated after its row (within the label's reach) fails.
    - ``cv_overlap``: per fold of ``cv`` (any scikit-learn splitter or list of ``(train,
      test)`` positions into ``ts.X``; default: the three purged splitters), the training
      rows whose ``[D, t1]`` overlaps a test row's or lies in the embargo. Any fails.
    - ``coverage``: features NA on every training row of a fold and rows left NA for lack of
      the lake's coverage (reported); a feature NA on every row fails.
    - ``knowledge``: with ``known_at="row"``, the share of rows per dataset that relied on
      the first sync; fails when the lake counts otherwise than the set records.

    Parameters
    ----------
    ts : TrainingSet
    source : Lake or dict of frames, optional
        Where the set was made from (default: its lake, when ``info`` names a local one).
        Without one, ``look_ahead`` is skipped.
    sample : int
        Rows ``look_ahead`` recomputes.
    cv : splitter or list of (train, test), optional
    seed : int

    Returns
    -------
    AuditReport

    Examples
    --------
    >>> from sklearn.model_selection import KFold
    >>> report = md.features.audit(ts, source=lake, cv=KFold(5, shuffle=True))
    >>> report.ok, report.checks.set_index("check")["status"]["cv_overlap"]
    (False, 'fail')
    """
    from ..training.trainset import TrainingSet

    if not isinstance(ts, TrainingSet):
        raise InvalidParameterError(
            f"audit takes a TrainingSet, not {type(ts).__name__}", parameter="ts"
        )
    if isinstance(sample, bool) or not isinstance(sample, (int, np.integer)) or sample < 0:
        raise InvalidParameterError(
            f"sample is a number of rows >= 0, got {sample!r}", parameter="sample"
        )
    if cv is not None and not (hasattr(cv, "split") or isinstance(cv, Iterable)):
        raise InvalidParameterError(
            "cv must be a scikit-learn splitter or a list of (train, test) positions",
            parameter="cv",
        )
    if not _ROW_RULES:
        _ROW_RULES.update(_row_rules())
    cut = _open_source(ts, source)
    features = features_of(ts)
    # The checks read X without its attrs (pandas copies them with every column taken).
    attrs: dict[str, Any] = {str(k): v for k, v in ts.X.attrs.items()}
    X = ts.X.copy(deep=False)
    X.attrs = {}
    view = TrainingSet(X, ts.y, ts.t1, ts.info, ts.features)
    splits = _folds(cv, view) if len(view.X) else []
    outcomes = {
        "look_ahead": _look_ahead(view, attrs, cut, features, int(sample), int(seed)),
        "label_leak": _label_leak(view, cut),
        "cv_overlap": _cv_overlap(view, splits) if len(view.X) else _skip("no rows"),
        "coverage": _coverage(view, attrs, splits, cv is not None),
        "knowledge": _knowledge(view, attrs, cut),
    }
    checks = pd.DataFrame(
        [(name, outcomes[name].status, outcomes[name].detail, outcomes[name].rows)
         for name in CHECKS],
        columns=CHECK_COLUMNS,
    ).astype({"rows": "int64"})  # fmt: skip
    failures = pd.DataFrame(
        [f for name in CHECKS for f in outcomes[name].failures], columns=FAILURE_COLUMNS
    )
    return AuditReport(checks, failures)
