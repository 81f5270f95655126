"""Purged, embargoed cross-validation splitters by date (CONTRACT §12, §12.1).

Written in scikit-learn's shape (``sklearn/model_selection/_split.py``): one class per
splitter over a shared base (:class:`PurgedSplitter`). They are scikit-learn cross-validators
by duck typing (``split``, ``get_n_splits``, ``get_params``/``set_params`` for ``clone``) and
need no scikit-learn to run.

What they keep that a row-count splitter does not: blocks are consecutive *dates* (all
symbols of a date on one side), a training row is purged by its own label end ``t1`` (not a
fixed number of rows), and the embargo counts from the latest ``t1`` of a test block, as in
*Advances in Financial Machine Learning*, section 7.4.2.

An embargo counts periods of ``freq`` or, without one (the default), steps along the dates
the splitter's ``t1`` holds: the set's own calendar, never business days assumed.

Every row is reduced to its (date, t1) pair; folds are decided per pair (a few hundred of
them) and mapped back to rows in one gather, so a split of a million rows costs a few
passes over them per fold.
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import numpy as np
import pandas as pd

from ...errors import DataQualityWarning, InvalidParameterError, warn
from ...params import whole_number
from ..panels.spec import check_offset

__all__ = [
    "METHODS",
    "PurgedSplitter",
    "PurgedWalkForward",
    "PurgedKFold",
    "CombinatorialPurgedCV",
    "splitter",
]

METHODS: Final = ("walk_forward", "kfold", "combinatorial")
_NAT: Final = np.iinfo(np.int64).min
_DAY: Final = 86_400 * 10**9


def _shift(stamp_ns: int, periods: int, offset: pd.DateOffset, name: str) -> int:
    """The date ``periods`` periods of ``offset`` after ``stamp_ns`` (ns), or
    InvalidParameterError when pandas cannot hold it."""
    try:
        return int((pd.Timestamp(stamp_ns) + periods * offset).as_unit("ns").value)
    except (OverflowError, ValueError) as exc:  # OutOfBoundsDatetime is a ValueError
        raise InvalidParameterError(
            f"{name}={periods} periods of {offset.freqstr} after "
            f"{pd.Timestamp(stamp_ns):%Y-%m-%d} is past what pandas can hold ({exc})",
            parameter=name,
        ) from None


def _check_t1(t1: Any) -> pd.Series:
    if not isinstance(t1, pd.Series) or not pd.api.types.is_datetime64_dtype(t1.dtype):
        raise InvalidParameterError(
            f"t1 must be a Series of naive dates (a training set's ts.t1), not {type(t1).__name__}",
            parameter="t1",
        )
    return t1


@dataclass
class _Folds:
    """The folds of one ``split`` call, decided per (date, t1) pair of the rows given."""

    row_pair: np.ndarray  # per row of X: its pair, or -1 (t1 or y NA: in no fold)
    pair_day: np.ndarray  # int64 ns
    pair_t1: np.ndarray  # int64 ns
    dates: np.ndarray  # the distinct dates of the rows in a fold, sorted (int64 ns)
    pair_block: np.ndarray  # per pair: its block
    first: np.ndarray  # per block: its first date's position in ``dates``
    last: np.ndarray  # per block: its last date's position in ``dates``
    latest_t1: np.ndarray  # per block: the latest t1 of its rows (int64 ns)


class PurgedSplitter:
    """The shared base of the purged splitters (like scikit-learn's ``BaseCrossValidator``).

    A subclass says how many blocks the dates are cut into (:meth:`_n_blocks`), which of
    them each fold tests (:meth:`_test_blocks`) and, if it limits them, which dates may
    train (:meth:`_may_train`). Purging, the embargo, the mapping to positions of the ``X``
    given and the checks are here.
    """

    method: ClassVar[str]

    def __init__(self, *, n_splits: Any, embargo: Any, t1: Any, freq: Any) -> None:
        # Stored as given (scikit-learn's clone checks that), checked here: bad arguments fail
        # before any work.
        self.n_splits = n_splits
        self.embargo = embargo
        self.t1 = t1
        self.freq = freq
        least = 1 if self.method == "walk_forward" else 2
        self._n = whole_number(n_splits, "n_splits", least=least)
        self._embargo = whole_number(embargo, "embargo", least=0)
        self._t1 = _check_t1(t1)
        # None: the embargo counts along the dates t1 holds (:meth:`_calendar`), so a weekly
        # set's splitter never counts business days it does not have.
        self._offset = None if freq is None else check_offset(freq)
        self._dates: np.ndarray | None = None
        if self._offset is not None and self._embargo and len(t1) and t1.notna().any():
            _shift(
                pd.Timestamp(t1.max()).as_unit("ns").value, self._embargo, self._offset, "embargo"
            )

    # -- scikit-learn's estimator protocol (clone, repr) ---------------------------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        return [
            p.name
            for p in inspect.signature(cls.__init__).parameters.values()
            if p.name != "self" and p.kind != p.VAR_KEYWORD
        ]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments, as given (scikit-learn's ``clone`` uses them)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> PurgedSplitter:
        """Change arguments (checked again, as in the constructor); returns the splitter."""
        unknown = set(params) - set(self._param_names())
        if unknown:
            raise InvalidParameterError(
                f"{type(self).__name__} has no parameter {sorted(unknown)[0]!r}",
                parameter=sorted(unknown)[0],
            )
        # mypy refuses __init__ called on an instance; re-running it is how parameters are set
        type(self).__init__(self, **{**self.get_params(), **params})  # type: ignore[misc]
        return self

    def __repr__(self) -> str:
        parts = []
        for name, value in self.get_params().items():
            text = f"<t1 of {len(value):,} rows>" if name == "t1" else repr(value)
            parts.append(f"{name}={text}")
        return f"{type(self).__name__}({', '.join(parts)})"

    # -- what a subclass says ------------------------------------------------------------------
    def _n_blocks(self) -> int:
        return self._n

    def _test_blocks(self) -> list[tuple[int, ...]]:
        raise NotImplementedError

    def _may_train(self, folds: _Folds, chosen: tuple[int, ...]) -> np.ndarray | None:
        """Per pair: may it train for this fold (before purging)? ``None``: all may."""
        return None

    # -- scikit-learn's cross-validator protocol -----------------------------------------------
    def get_n_splits(self, X: Any = None, y: Any = None, groups: Any = None) -> int:
        """The number of folds (``X``, ``y``, ``groups`` are ignored)."""
        return len(self._test_blocks())

    def split(
        self, X: Any, y: Any = None, groups: Any = None
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(train, test)`` positions into ``X``, fold by fold.

        Parameters
        ----------
        X : DataFrame or array-like
            Rows indexed by ``(date, symbol)`` whose index entries are in ``t1``'s index, in
            any order and any subset (``ts.X``, ``ts.labelled().X``, a fold's training rows);
            an array without an index must have ``t1``'s rows, in its order.
        y : array-like, optional
            Rows where it is NA are in no fold (as rows whose ``t1`` is NA).
        groups : ignored
            For scikit-learn's signature.

        Yields
        ------
        (numpy.ndarray, numpy.ndarray)
            Increasing integer positions into ``X``.

        Raises
        ------
        InvalidParameterError
            Rows not in ``t1``, too few dates for the blocks, or a fold left with no
            training row (saying which), before the first fold is yielded.
        """
        folds, names, notna = self._prepare(X, y)
        out = self._folds(folds)
        if names:
            _warn_empty_features(self, out, names, notna)
        rows = _PairRows(folds.row_pair)
        for train_pairs, test_pairs in out:
            yield rows.positions(train_pairs), rows.positions(test_pairs)

    # -- the work ------------------------------------------------------------------------------
    def _rows(
        self, X: Any, y: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
        """Per row of ``X``: its date and t1 (int64 ns) and whether it may be in a fold;
        with a (date, symbol) index, also its dates as the index holds them (per row a code
        into the distinct dates, and those dates)."""
        t1 = self._t1
        index = getattr(X, "index", None)
        levels = None
        if isinstance(index, pd.MultiIndex):
            if index is t1.index or index.equals(t1.index):
                t1_values = t1.to_numpy(dtype="datetime64[ns]").view(np.int64)
            else:
                try:
                    at = t1.index.get_indexer(index)
                except pd.errors.InvalidIndexError:
                    raise InvalidParameterError(
                        "t1's index has repeated (date, symbol) entries", parameter="t1"
                    ) from None
                if (at < 0).any():
                    missing = index[np.flatnonzero(at < 0)[0]]
                    raise InvalidParameterError(
                        f"X has rows that are not in t1's index (e.g. {missing}): split the "
                        "rows of the training set the splitter was made for",
                        parameter="X",
                    )
                t1_values = t1.to_numpy(dtype="datetime64[ns]").view(np.int64)[at]
            level = index.levels[0]
            if not pd.api.types.is_datetime64_any_dtype(level.dtype):
                raise InvalidParameterError(
                    "X's index must be (date, symbol) with dates first", parameter="X"
                )
            level_ns = pd.DatetimeIndex(level).as_unit("ns").asi8
            day = np.where(index.codes[0] < 0, _NAT, level_ns[index.codes[0]])
            levels = (np.asarray(index.codes[0]), level_ns)
        elif index is None or isinstance(X, (np.ndarray, list)) or not hasattr(X, "shape"):
            n = len(X) if hasattr(X, "__len__") else -1
            if n != len(t1):
                raise InvalidParameterError(
                    f"X has {n} rows and no (date, symbol) index; an array must have t1's "
                    f"{len(t1)} rows in t1's order",
                    parameter="X",
                )
            t1_values = t1.to_numpy(dtype="datetime64[ns]").view(np.int64)
            dates = t1.index.get_level_values(0) if isinstance(t1.index, pd.MultiIndex) else None
            if dates is None:
                raise InvalidParameterError("t1 must be indexed by (date, symbol)", parameter="t1")
            day = pd.DatetimeIndex(dates).as_unit("ns").asi8
        else:
            raise InvalidParameterError(
                f"X must be indexed by (date, symbol), not by {type(index).__name__}",
                parameter="X",
            )
        valid = (t1_values != _NAT) & (day != _NAT)
        if y is not None:
            known = ~np.asarray(pd.isna(y), dtype=bool).reshape(-1)
            if len(known) != len(day):
                raise InvalidParameterError(
                    f"y has {len(known)} rows and X {len(day)}", parameter="y"
                )
            valid &= known
        return day, t1_values, valid, levels

    def _prepare(self, X: Any, y: Any) -> tuple[_Folds, list[str], np.ndarray | None]:
        day, t1, valid, levels = self._rows(X, y)
        # Rows -> (date, t1) pairs: the folds are decided per pair.
        every = bool(valid.all())
        if levels is None:
            day_codes, day_values = _sorted_codes(day if every else day[valid])
        else:  # the index's distinct dates are its level's: ranked, not found again per row
            day_codes, day_values = _level_codes(*levels, None if every else valid)
        t1_codes, t1_values = _sorted_codes(t1 if every else t1[valid])
        pair_codes, pair_keys = _sorted_codes(
            day_codes * max(1, len(t1_values)) + t1_codes, max(1, len(day_values) * len(t1_values))
        )
        row_pair = np.full(len(day), -1, dtype=np.intp)
        row_pair[valid] = pair_codes
        n_t1 = max(1, len(t1_values))
        pair_day = np.asarray(day_values)[pair_keys // n_t1].astype(np.int64)
        pair_t1 = np.asarray(t1_values)[pair_keys % n_t1].astype(np.int64)
        dates = np.asarray(day_values, dtype=np.int64)
        n_blocks = self._n_blocks()
        if len(dates) < n_blocks:
            raise InvalidParameterError(
                f"{len(dates)} dates have a label: too few for {self.method} with {n_blocks} "
                "blocks; use fewer splits or more dates",
                parameter="n_splits",
            )
        sizes = np.array([len(part) for part in np.array_split(np.arange(len(dates)), n_blocks)])
        ends = np.cumsum(sizes)
        first, last = ends - sizes, ends - 1
        pair_block = np.searchsorted(ends, np.searchsorted(dates, pair_day), side="right")
        latest_t1 = np.full(n_blocks, _NAT)
        np.maximum.at(latest_t1, pair_block, pair_t1)
        folds = _Folds(row_pair, pair_day, pair_t1, dates, pair_block, first, last, latest_t1)
        names: list[str] = []
        notna = None
        if isinstance(X, pd.DataFrame) and X.shape[1]:
            names, notna = _pair_counts(X, row_pair, len(pair_keys))
        return folds, names, notna

    def _folds(self, folds: _Folds) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per fold: which pairs train and which test."""
        dates, day, t1 = folds.dates, folds.pair_day, folds.pair_t1
        embargo_end = self._embargo_ends(folds.latest_t1) if self._embargo else []
        tests = self._test_blocks()
        out = []
        for i, chosen in enumerate(tests):
            test = np.isin(folds.pair_block, chosen)
            train = ~test
            may = self._may_train(folds, chosen)
            if may is not None:
                train &= may
            for b in chosen:
                lo, hi = dates[folds.first[b]], folds.latest_t1[b]
                train &= ~((day <= hi) & (t1 >= lo))  # purge: [D, t1] meets [lo, hi]
                if self._embargo:  # AFML 7.4.2: after the test labels end
                    train &= ~((day > dates[folds.last[b]]) & (day <= embargo_end[b]))
            if not train.any():
                self._no_training_row(folds, i, len(tests), chosen)
            out.append((train, test))
        return out

    def _embargo_ends(self, latest_t1: np.ndarray) -> list[int]:
        """Per block: the last date (ns) its embargo covers, ``embargo`` periods after the
        latest t1 of the block: of ``freq``, or (``freq=None``) steps along :meth:`_calendar`
        (past its end: every later date, none of which a row can have)."""
        if self._offset is not None:
            offset = self._offset
            return [_shift(int(hi), self._embargo, offset, "embargo") for hi in latest_t1]
        calendar = self._calendar()
        # The k-th calendar date after the latest t1, as a pandas offset rolls forward from
        # a date that is not on it.
        at = np.searchsorted(calendar, latest_t1, side="right") - 1 + self._embargo
        past = np.iinfo(np.int64).max
        return [int(calendar[i]) if i < len(calendar) else past for i in at]

    def _calendar(self) -> np.ndarray:
        """The dates ``t1`` holds, its index's and its values, sorted (int64 ns): the
        periods of a splitter without ``freq``. The whole set's, not the ``X`` given, so a
        subset (a fold's training rows) counts its embargo as the set does; the values fill
        the dates after the index's last and any date whose rows were all dropped."""
        if self._dates is None:
            t1 = self._t1
            values = t1.to_numpy(dtype="datetime64[ns]").view(np.int64)
            parts = [values[values != _NAT]]
            index = t1.index
            if isinstance(index, pd.MultiIndex) and pd.api.types.is_datetime64_any_dtype(
                index.levels[0].dtype
            ):
                codes = np.asarray(index.codes[0])
                used = np.bincount(codes[codes >= 0], minlength=len(index.levels[0])) > 0
                parts.append(pd.DatetimeIndex(index.levels[0]).as_unit("ns").asi8[used])
            self._dates = _sorted_codes(np.concatenate(parts))[1]
        return self._dates

    def _no_training_row(self, folds: _Folds, i: int, n: int, chosen: tuple[int, ...]) -> None:
        span = ", ".join(
            f"{pd.Timestamp(folds.dates[folds.first[b]]):%Y-%m-%d}.."
            f"{pd.Timestamp(folds.dates[folds.last[b]]):%Y-%m-%d}"
            for b in chosen
        )
        raise InvalidParameterError(
            f"{self.method} fold {i} (of {n}, from 0) (test {span}) has no training row left "
            f"after purging the labels that overlap the test's and the embargo of "
            f"{self._embargo} periods: use fewer splits, a smaller embargo or more dates",
            parameter="n_splits",
        )


class PurgedWalkForward(PurgedSplitter):
    """Walk-forward folds by date, purged and embargoed: ``n_splits + 1`` blocks of dates;
    fold ``i`` (from 0) tests block ``i + 1`` and trains only on dates before it (the
    ``train_window`` dates before it, when given).

    Parameters
    ----------
    n_splits : int
        Folds (test blocks), >= 1.
    embargo : int
        Periods of ``freq`` after a test block's latest ``t1`` whose rows do not train.
    train_window : int, optional
        Dates each fold may train on, counted back from its test block; ``None``: all.
    t1 : Series
        The last date each row's label reads (``ts.t1``), indexed by ``(date, symbol)``.
    freq : str, optional
        What ``embargo`` counts. ``None`` (default): steps along the calendar of the dates
        ``t1`` holds (its index's dates and its values: the set's own ``freq``, whatever it
        is; never business days assumed). A pandas frequency counts its periods (``ts.cv``
        passes the set's ``info["freq"]``, which gives the same folds).

    Examples
    --------
    >>> from sklearn.ensemble import HistGradientBoostingRegressor
    >>> from sklearn.model_selection import cross_val_score
    >>> known = ts.labelled()
    >>> cv = md.features.PurgedWalkForward(n_splits=5, embargo=5, t1=known.t1)
    >>> cross_val_score(HistGradientBoostingRegressor(max_iter=10), known.X, known.y, cv=cv).shape
    (5,)

    """

    method = "walk_forward"

    def __init__(
        self,
        n_splits: int = 5,
        *,
        embargo: int = 0,
        train_window: int | None = None,
        t1: Any,
        freq: Any = None,
    ) -> None:
        self.train_window = train_window
        self._window = (
            None if train_window is None else whole_number(train_window, "train_window", least=1)
        )
        super().__init__(n_splits=n_splits, embargo=embargo, t1=t1, freq=freq)

    def _n_blocks(self) -> int:
        return self._n + 1

    def _test_blocks(self) -> list[tuple[int, ...]]:
        return [(b,) for b in range(1, self._n + 1)]

    def _may_train(self, folds: _Folds, chosen: tuple[int, ...]) -> np.ndarray:
        start = folds.first[chosen[0]]
        lo = 0 if self._window is None else max(0, start - self._window)
        return (folds.pair_day >= folds.dates[lo]) & (folds.pair_day < folds.dates[start])


class PurgedKFold(PurgedSplitter):
    """K-fold by date, purged and embargoed: ``n_splits`` consecutive blocks of dates, each
    the test once, training on the others before and after it. Every row with a label is
    in exactly one test fold (``cross_val_predict`` takes it).

    Parameters
    ----------
    n_splits : int
        Blocks and folds, >= 2.
    embargo, t1, freq
        As :class:`PurgedWalkForward`.

    Examples
    --------
    >>> from sklearn.ensemble import HistGradientBoostingRegressor
    >>> from sklearn.model_selection import cross_val_predict
    >>> known = ts.labelled()
    >>> cv = md.features.PurgedKFold(n_splits=5, embargo=5, t1=known.t1)
    >>> cross_val_predict(HistGradientBoostingRegressor(max_iter=10), known.X, known.y, cv=cv).shape
    (254,)

    On a weekly set the embargo counts weeks (the set's calendar), as ``ts.cv`` does with
    the set's ``freq``; business days would leave the week after a test's labels training:

    >>> weekly = md.features.training_set(["AAPL", "MSFT"], "2026-01-02", "2026-06-26",
    ...                                   ["insider_net_value_90d"], freq="W-FRI", source=lake)
    >>> cv = md.features.PurgedKFold(n_splits=4, embargo=2, t1=weekly.t1)
    >>> folds = [(list(a), list(b)) for a, b in cv.split(weekly.X, weekly.y)]
    >>> folds == [(list(a), list(b)) for a, b in weekly.splits("kfold", 4, embargo=2)]
    True
    >>> days = md.features.PurgedKFold(n_splits=4, embargo=2, t1=weekly.t1, freq="B")
    >>> sum(len(a) for a, _ in days.split(weekly.X, weekly.y)) > sum(len(a) for a, _ in folds)
    True
    """

    method = "kfold"

    def __init__(self, n_splits: int = 5, *, embargo: int = 0, t1: Any, freq: Any = None) -> None:
        super().__init__(n_splits=n_splits, embargo=embargo, t1=t1, freq=freq)

    def _test_blocks(self) -> list[tuple[int, ...]]:
        return [(b,) for b in range(self._n)]


class CombinatorialPurgedCV(PurgedSplitter):
    """Combinatorial purged cross-validation by date: ``n_splits`` blocks of dates; every
    choice of ``n_test_splits`` of them is a test (lexicographic order), purged and embargoed
    on each side of each test block. :meth:`path_ids` says which folds' test predictions
    form each backtest path.

    Parameters
    ----------
    n_splits : int
        Blocks, >= 2.
    n_test_splits : int
        Blocks per test, 1 <= n_test_splits < n_splits.
    embargo, t1, freq
        As :class:`PurgedWalkForward`.

    Examples
    --------
    >>> cv = md.features.CombinatorialPurgedCV(6, n_test_splits=2, embargo=5, t1=ts.t1)
    >>> cv.get_n_splits(), cv.path_ids().shape
    (15, (6, 5))
    """

    method = "combinatorial"

    def __init__(
        self,
        n_splits: int = 6,
        *,
        n_test_splits: int = 2,
        embargo: int = 0,
        t1: Any,
        freq: Any = None,
    ) -> None:
        self.n_test_splits = n_test_splits
        self._k = whole_number(n_test_splits, "n_test_splits", least=1)
        super().__init__(n_splits=n_splits, embargo=embargo, t1=t1, freq=freq)
        if self._k >= self._n:
            raise InvalidParameterError(
                f"n_test_splits={self._k} must be less than n_splits={self._n} (some blocks "
                "must train)",
                parameter="n_test_splits",
            )
        if math.comb(self._n, self._k) > 1_000_000:
            raise InvalidParameterError(
                f"n_splits={self._n} and n_test_splits={self._k} make "
                f"{math.comb(self._n, self._k):,} folds; use fewer blocks",
                parameter="n_splits",
            )

    def _test_blocks(self) -> list[tuple[int, ...]]:
        return list(itertools.combinations(range(self._n), self._k))

    def path_ids(self) -> np.ndarray:
        """Which fold's test predictions form each backtest path: an integer array of
        ``n_splits`` blocks x ``n_test_splits / n_splits * C(n_splits, n_test_splits)``
        paths; entry ``[b, p]`` is the fold whose prediction of block ``b`` path ``p`` uses
        (the ``p``-th fold, in order, that tests block ``b``), as skfolio's
        ``CombinatorialPurgedCV.recombined_paths`` (its ``get_path_ids`` is the inverse:
        per fold and test block, the path).

        Examples
        --------
        >>> import pandas as pd
        >>> t1 = pd.Series(pd.to_datetime([]), dtype="datetime64[ns]")
        >>> CombinatorialPurgedCV(4, n_test_splits=2, t1=t1).path_ids()
        array([[0, 1, 2],
               [0, 3, 4],
               [1, 3, 5],
               [2, 4, 5]])
        """
        tests = self._test_blocks()
        return np.array(
            [[i for i, chosen in enumerate(tests) if b in chosen] for b in range(self._n)],
            dtype=np.int64,
        ).reshape(self._n, -1)


def _sorted_codes(values: np.ndarray, bound: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(values, sort=True)`` of int64 values (no NaT): through a table over
    their range when it is short (dates and day pairs: a few hundred thousand slots at
    most, counted in days when every value is a midnight), else by hashing. ``bound``:
    the values are known to lie in ``[0, bound)``."""
    values = np.asarray(values, dtype=np.int64)
    if bound is not None and bound <= 4 * len(values) + 65_536:
        present = np.zeros(bound, dtype=bool)
        present[values] = True
        code_of = np.cumsum(present, dtype=np.intp) - 1
        return code_of[values], np.flatnonzero(present).astype(np.int64)
    if len(values):
        lo, hi = int(values.min()), int(values.max())
        limit = 4 * len(values) + 65_536  # the table's size: O(rows)
        if hi - lo < 2**62:
            shifted = values - lo
            unit, span = 1, hi - lo
            if span > limit and span // _DAY <= limit:
                days = shifted // _DAY
                if np.array_equal(days * _DAY, shifted):
                    unit, span, shifted = _DAY, span // _DAY, days
            if span <= limit:
                present = np.zeros(span + 1, dtype=bool)
                present[shifted] = True
                slots = np.flatnonzero(present)
                code_of = np.cumsum(present, dtype=np.intp) - 1
                return code_of[shifted], slots.astype(np.int64) * unit + lo
    codes, uniques = pd.factorize(values, sort=True)
    return codes, np.asarray(uniques, dtype=np.int64)


def _level_codes(
    codes: np.ndarray, level: np.ndarray, valid: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """``_sorted_codes(level[codes][valid])`` from an index level's codes: the level's
    values are distinct, so the rows' distinct values are the level's used ones."""
    codes = codes if valid is None else codes[valid]
    used = np.zeros(len(level), dtype=bool)
    used[codes] = True
    at = np.flatnonzero(used)
    order = np.argsort(level[at], kind="stable")
    rank = np.full(len(level), -1, dtype=np.intp)
    rank[at[order]] = np.arange(len(at))
    return rank[codes], level[at[order]].astype(np.int64)


class _PairRows:
    """The rows of ``X`` by their pair, to turn a fold's pairs into positions. Rows come
    grouped by date (a set's own order): a fold is then its runs of rows repeated, not a
    gather of every row's pair."""

    def __init__(self, row_pair: np.ndarray) -> None:
        self.row_pair = row_pair
        n = len(row_pair)
        heads = np.flatnonzero(row_pair[1:] != row_pair[:-1]) + 1 if n else row_pair[:0]
        self.runs: tuple[np.ndarray, np.ndarray] | None = None
        if 8 * (len(heads) + 1) <= n:
            heads = np.r_[0, heads]
            self.runs = (row_pair[heads], np.diff(np.r_[heads, n]))

    def positions(self, pairs: np.ndarray) -> np.ndarray:
        """Increasing positions of the rows whose pair is in ``pairs`` (a mask per pair)."""
        chosen = np.append(pairs, False)  # pair -1 (rows in no fold) reads the False
        if self.runs is None:
            return np.flatnonzero(chosen[self.row_pair])
        run_pair, lengths = self.runs
        return np.flatnonzero(np.repeat(chosen[run_pair], lengths))


def _pair_counts(
    X: pd.DataFrame, row_pair: np.ndarray, n_pairs: int
) -> tuple[list[str], np.ndarray]:
    """The features with a missing value on some row in a fold, and per pair and such
    feature the number of its rows with a value."""
    in_fold = row_pair >= 0
    names, counts = [], []
    for name in X.columns:
        has = X[name].notna().to_numpy()
        if has[in_fold].all():
            continue
        names.append(str(name))
        counts.append(np.bincount(row_pair[in_fold & has], minlength=n_pairs))
    if not names:
        return [], np.zeros((n_pairs, 0))
    return names, np.stack(counts, axis=1).astype(np.float64)


def empty_features(cv: PurgedSplitter, X: pd.DataFrame, y: Any = None) -> dict[str, list[int]]:
    """The features of ``X`` that are NA on every training row of some fold of ``cv``,
    each with those folds (numbered from 0, as ``list(cv.split(X, y))`` numbers them)."""
    folds, names, counts = cv._prepare(X, y)
    return _empty(cv._folds(folds), names, counts)


def _empty(
    out: list[tuple[np.ndarray, np.ndarray]], names: list[str], counts: np.ndarray | None
) -> dict[str, list[int]]:
    if counts is None or not counts.shape[1]:
        return {}
    trains = np.stack([train for train, _ in out]).astype(np.float64)  # folds x pairs
    seen = trains @ counts  # folds x features: rows with a value in each fold's training
    empty = {name: np.flatnonzero(seen[:, j] == 0).tolist() for j, name in enumerate(names)}
    return {name: folds for name, folds in empty.items() if folds}


def _warn_empty_features(
    cv: PurgedSplitter,
    out: list[tuple[np.ndarray, np.ndarray]],
    names: list[str],
    counts: np.ndarray | None,
) -> None:
    """One DataQualityWarning naming every feature NA on every training row of some fold:
    all of them, before a model fails on the first (HistGradientBoosting does)."""
    empty = _empty(out, names, counts)
    if empty:
        listed = "; ".join(
            f"{name!r} in fold(s) {', '.join(map(str, folds[:10]))}{' ...' * (len(folds) > 10)}"
            for name, folds in empty.items()
        )
        warn(
            f"features NA on every training row of a {cv.method} fold (of {len(out)}, "
            f"numbered from 0): {listed}. A model learns nothing from them there and some "
            "estimators fail on them (HistGradientBoostingRegressor): drop them with "
            "ts.drop_empty(cv), or start the set where they have values "
            "(ts.X.attrs['coverage'])",
            DataQualityWarning,
        )


def splitter(
    method: Any,
    *,
    n_splits: Any = 5,
    n_test_splits: Any = 2,
    embargo: Any = 0,
    train_window: Any = None,
    t1: Any,
    freq: Any,
) -> PurgedSplitter:
    """The splitter of ``method`` (:data:`METHODS`), for :meth:`TrainingSet.cv`."""
    if not isinstance(method, str) or method not in METHODS:
        raise InvalidParameterError(
            f"method={method!r} is not one of {', '.join(map(repr, METHODS))}",
            parameter="method",
        )
    if train_window is not None and method != "walk_forward":
        raise InvalidParameterError(
            f"train_window is for walk_forward only, not {method}", parameter="train_window"
        )
    if method == "walk_forward":
        return PurgedWalkForward(
            n_splits, embargo=embargo, train_window=train_window, t1=t1, freq=freq
        )
    if method == "kfold":
        return PurgedKFold(n_splits, embargo=embargo, t1=t1, freq=freq)
    return CombinatorialPurgedCV(
        n_splits, n_test_splits=n_test_splits, embargo=embargo, t1=t1, freq=freq
    )
