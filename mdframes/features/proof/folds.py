"""The audit's ``cv_overlap`` check: per fold of a splitter, the training rows whose label
interval ``[D, t1]`` overlaps a test row's or lies in the embargo."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InvalidParameterError
from .outcome import NS_PER_DAY, CheckResult, skip

__all__ = ["fold_overlaps"]


def split_folds(cv: Any, ts: Any) -> list[tuple[str, Any, list[tuple[np.ndarray, np.ndarray]]]]:
    """(name, splitter or None, folds as positions into ts.X) for each splitter to check.
    A row whose ``t1`` is NaT (its label's end unknown) is in no fold: a splitter that knows
    nothing of labels (scikit-learn's) puts it in some; it is left out of them here."""
    unknown = ts.t1.isna().to_numpy()
    found = _splits(cv, ts)
    if not unknown.any():
        return found
    return [
        (name, splitter, [(_known(train, unknown), _known(test, unknown)) for train, test in folds])
        for name, splitter, folds in found
    ]


def _known(positions: np.ndarray, unknown: np.ndarray) -> np.ndarray:
    """``positions`` without those of rows whose ``t1`` is unknown."""
    positions = np.asarray(positions, dtype=np.int64)
    return positions[~unknown[positions]]


def _splits(cv: Any, ts: Any) -> list[tuple[str, Any, list[tuple[np.ndarray, np.ndarray]]]]:
    """:func:`split_folds`, every row as the splitter placed it."""
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
    splitter: Any, test: np.ndarray, starts: np.ndarray, ends: np.ndarray, calendar: np.ndarray
) -> np.ndarray | None:
    """The embargo intervals ``(latest t1 of a test block, + embargo periods]`` of one of our
    splitters (a block: a run of consecutive test dates); ``None`` for others. The periods
    are the splitter's ``freq``'s or, with ``freq=None``, steps along ``calendar`` (the set's
    dates and t1s), as the splitter counts them."""
    periods = int(getattr(splitter, "embargo", 0) or 0)
    if splitter is None or periods <= 0 or not len(test):
        return None
    freq = getattr(splitter, "freq", None)
    offset = None if freq is None else pd.tseries.frequencies.to_offset(freq)
    days = np.unique(starts[test])
    grid = np.unique(starts)
    where = np.searchsorted(grid, days)
    breaks = np.flatnonzero(np.diff(where) > 1) + 1
    out = []
    for block in np.split(days, breaks):
        inside = np.isin(starts[test], block)
        latest = int(ends[test][inside].max())
        if offset is None:  # the k-th date of the calendar after it, as the splitter counts
            at = int(np.searchsorted(calendar, latest, side="right")) - 1 + periods
            out.append((latest, calendar[at] if at < len(calendar) else np.iinfo(np.int64).max))
            continue
        stamp = pd.Timestamp(latest, unit="D")
        until = pd.date_range(stamp, periods=periods + 1, freq=offset)[-1]
        if not offset.is_on_offset(stamp):
            until = pd.date_range(stamp, periods=periods, freq=offset)[-1]
        out.append((latest, int(until.value // NS_PER_DAY)))
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


def cv_overlap(ts: Any, splits: list[tuple[str, Any, list[Any]]]) -> CheckResult:
    if not len(ts.X):
        return skip("no rows")
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
    calendar = np.unique(np.concatenate([first, last]))
    per_interval = _Counts(pair, len(pairs))
    listed: list[tuple[str, np.ndarray]] = []
    parts, bad = [], 0
    for name, splitter, folds in splits:
        counts = []
        for k, (train, test) in enumerate(folds):
            train = np.asarray(train, dtype=np.int64)
            test = np.asarray(test, dtype=np.int64)
            per_pair = per_interval.of(train)
            tested = np.flatnonzero(per_interval.of(test))
            embargo = _embargoes(splitter, tested, first, last, calendar)
            overlapping = fold_overlaps(first, last, np.flatnonzero(per_pair), tested, embargo)
            counts.append(int(per_pair[overlapping].sum()))
            if len(overlapping):
                hit = np.zeros(len(pairs), dtype=bool)
                hit[overlapping] = True
                listed.append((f"{name} fold {k}", train[hit[pair[train]]]))
        bad += sum(counts)
        parts.append(f"{name}: {len(folds)} folds, overlapping training rows {counts}")
    if not parts:
        return skip("no splitter could split this set (too few dates for the defaults)")
    failures: Any = _overlap_rows(ts.X.index, listed, pair, first, last) if listed else []
    return CheckResult("fail" if bad else "pass", "; ".join(parts), bad, failures)


def _overlap_rows(
    index: Any, listed: list[tuple[str, np.ndarray]], pair: np.ndarray, first: Any, last: Any
) -> pd.DataFrame:
    """Every training row of each fold that overlaps (``listed``: the fold's name and the
    rows), one failure each; the text made once per distinct ``[D, t1]``, not per row."""
    rows = np.concatenate([r for _, r in listed])
    spans = [np.datetime_as_string(d.astype("datetime64[D]")).astype(object) for d in (first, last)]
    end = "], overlapping a test label or in the embargo"
    texts = "trains on [" + spans[0] + ", " + spans[1] + end
    return pd.DataFrame({
        "check": "cv_overlap", "date": index.levels[0].take(index.codes[0][rows]),
        "symbol": index.levels[1].take(index.codes[1][rows]).astype(str),
        "feature": np.repeat([n for n, _ in listed], [len(r) for _, r in listed]),
        "expected": "no overlap", "got": texts[pair[rows]],
    })  # fmt: skip
