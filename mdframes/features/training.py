"""Training sets: a feature panel, a label per row, and purged, embargoed splits (CONTRACT §12).

:func:`training_set` puts :func:`~mdframes.features.panel` and a label
(:func:`~mdframes.features.forward_return`) side by side; :meth:`TrainingSet.splits` gives
cross-validation folds in which no training label overlaps the period of a test label.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
from collections.abc import Iterable
from typing import Any, Final, Literal, cast

import numpy as np
import pandas as pd

from .._typing import DateLike, Errors, TimeLike
from ..errors import InvalidParameterError
from ..params import to_utc
from .definitions import resolve_features
from .labels import PRICE_DATASET, ForwardReturn, long_prices, warn_jumps
from .panels import panel
from .sources import Source, resolve_source
from .spec import check_errors
from .trainfile import feature_definition, read_parts, write_training_set

__all__ = ["TrainingSet", "training_set", "read_training_set", "METHODS"]

METHODS: Final = ("walk_forward", "kfold", "combinatorial")


def _whole(value: Any, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise InvalidParameterError(
            f"{name}={value!r} must be a whole number >= {least}", parameter=name
        )
    return int(value)


def check_split_arguments(
    method: Any, n_splits: Any, n_test_splits: Any, embargo: Any
) -> tuple[str, int, int, int]:
    """The arguments of :meth:`TrainingSet.splits`, checked before any work."""
    if method not in METHODS:
        raise InvalidParameterError(
            f"method={method!r} is not one of {', '.join(map(repr, METHODS))}",
            parameter="method",
        )
    n = _whole(n_splits, "n_splits", 1 if method == "walk_forward" else 2)
    k = _whole(n_test_splits, "n_test_splits", 1)
    if method == "combinatorial" and k >= n:
        raise InvalidParameterError(
            f"n_test_splits={k} must be less than n_splits={n} (some blocks must train)",
            parameter="n_test_splits",
        )
    return method, n, k, _whole(embargo, "embargo", 0)


class TrainingSet:
    """Features, a label and its end date per (date, symbol) row, and how they were made.

    Attributes
    ----------
    X : DataFrame
        The panel (:func:`~mdframes.features.panel`), indexed by ``(date, symbol)``.
    y : Series
        The label (``float64``, named like ``fwd_return_5``), same index; NA where it cannot
        be known (no price, or dates not in the data yet).
    t1 : Series
        Naive dates, same index: the last date each row's label reads.
    info : dict
        Plain data, enough to rebuild it: ``symbols, start, end, features`` (name ->
        definition), ``label``, ``freq``, ``known_at``, ``source`` (``"service"``,
        ``"frames"`` or the lake's root), ``versions`` (a lake's table version per dataset,
        where it exposes one), ``mdframes`` (version) and ``created_at`` (UTC, ISO 8601).

    Examples
    --------
    >>> ts = md.features.training_set(["AAPL"], "2026-01-05", "2026-06-30")  # doctest: +SKIP
    >>> for train, test in ts.splits("walk_forward", n_splits=4, embargo=5):  # doctest: +SKIP
    ...     model.fit(ts.X.iloc[train], ts.y.iloc[train])
    """

    def __init__(self, X: pd.DataFrame, y: pd.Series, t1: pd.Series, info: dict[str, Any]):
        if not isinstance(X.index, pd.MultiIndex) or X.index.nlevels != 2:
            raise InvalidParameterError("X must be indexed by (date, symbol)", parameter="X")
        if not (X.index.equals(y.index) and X.index.equals(t1.index)):
            raise InvalidParameterError("X, y and t1 must share one index", parameter="X")
        self.X = X
        self.y = y
        self.t1 = t1
        self.info = info

    def __repr__(self) -> str:
        dates = self.X.index.get_level_values(0)
        span = f"{dates.min():%Y-%m-%d}..{dates.max():%Y-%m-%d}" if len(dates) else "no dates"
        return (
            f"<TrainingSet {len(self.X):,} rows ({span}) x {self.X.shape[1]} features; "
            f"label {self.y.name}: {int(self.y.notna().sum()):,} rows known>"
        )

    # -- splits -------------------------------------------------------------------------------
    def splits(
        self,
        method: str = "walk_forward",
        n_splits: int = 5,
        n_test_splits: int = 2,
        embargo: int = 0,
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Cross-validation folds by date, purged and embargoed: ``[(train, test), ...]``.

        Positions in ``X``/``y`` (``X.iloc[train]``) of rows whose label is known; rows with an
        NA label are in no fold, so the list is scikit-learn's ``cv=`` as it is. The dates that
        have a label are cut into consecutive blocks of equal size (the first ones one date
        longer when it does not divide); all symbols of a date are on one side.

        - ``"walk_forward"``: ``n_splits + 1`` blocks; block ``i`` (from 1) is the test of fold
          ``i``, which trains only on the dates before it.
        - ``"kfold"``: ``n_splits`` blocks, each the test once, training on all the others.
        - ``"combinatorial"``: ``n_splits`` blocks; every choice of ``n_test_splits`` of them
          is a test (combinatorial purged cross-validation), in lexicographic order.

        Purging (always): a training row is dropped when its label interval ``[D, t1(D)]``
        overlaps ``[first date of a test block, latest t1 of that block]``. Embargo: training
        rows dated within ``embargo`` periods of ``freq`` after a test block's last date are
        dropped too.

        Parameters
        ----------
        method : {"walk_forward", "kfold", "combinatorial"}
        n_splits : int
            Test blocks (``walk_forward``) or blocks (the others).
        n_test_splits : int
            ``combinatorial`` only: blocks per test, less than ``n_splits``.
        embargo : int
            Periods of ``freq`` (>= 0).

        Returns
        -------
        list of (numpy.ndarray, numpy.ndarray)
            Increasing integer positions.

        Raises
        ------
        InvalidParameterError
            Bad arguments (before any work), or a fold left with no training or no test row.

        Examples
        --------
        >>> from sklearn.model_selection import cross_val_score          # doctest: +SKIP
        >>> cross_val_score(model, ts.X, ts.y, cv=ts.splits("kfold", 5, embargo=5))  # doctest: +SKIP
        """
        method, n, k, embargo = check_split_arguments(method, n_splits, n_test_splits, embargo)
        day = self.X.index.get_level_values(0).to_numpy(dtype="datetime64[ns]").view(np.int64)
        t1 = self.t1.to_numpy(dtype="datetime64[ns]").view(np.int64)
        valid = self.y.notna().to_numpy()
        dates = np.unique(day[valid])
        n_blocks = n + 1 if method == "walk_forward" else n
        if len(dates) < n_blocks:
            raise InvalidParameterError(
                f"{len(dates)} dates have a label: too few for {method} with {n_blocks} "
                "blocks; use fewer splits or more dates",
                parameter="n_splits",
            )
        sizes = [len(part) for part in np.array_split(dates, n_blocks)]
        ends = np.cumsum(sizes)
        first, last = dates[ends - np.asarray(sizes)], dates[ends - 1]
        block = np.full(len(day), -1)
        block[valid] = np.searchsorted(ends, np.searchsorted(dates, day[valid]), side="right")
        latest_t1 = np.full(n_blocks, np.iinfo(np.int64).min)
        np.maximum.at(latest_t1, block[valid], t1[valid])
        offset = pd.tseries.frequencies.to_offset(self.info["freq"])
        embargo_end = np.array(
            [(pd.Timestamp(d) + embargo * offset).value if embargo else d for d in last]
        )

        if method == "walk_forward":
            tests: list[tuple[int, ...]] = [(b,) for b in range(1, n_blocks)]
        elif method == "kfold":
            tests = [(b,) for b in range(n_blocks)]
        else:
            tests = list(itertools.combinations(range(n_blocks), k))
        label = self.info.get("label", {})
        reach = label.get("lag", 0) + label.get("horizon", 0) if label else "?"
        out = []
        for i, chosen in enumerate(tests):
            test = valid & np.isin(block, chosen)
            train = valid & ~test
            if method == "walk_forward":
                train &= day < first[chosen[0]]
            for b in chosen:
                train &= ~((day <= latest_t1[b]) & (t1 >= first[b]))  # purge
                train &= ~((day > last[b]) & (day <= embargo_end[b]))  # embargo
            if not train.any():
                span = ", ".join(
                    f"{pd.Timestamp(first[b]):%Y-%m-%d}..{pd.Timestamp(last[b]):%Y-%m-%d}"
                    for b in chosen
                )
                raise InvalidParameterError(
                    f"{method} fold {i + 1} of {len(tests)} (test {span}) has no training row "
                    f"left after purging the labels that overlap the test's (a label reads "
                    f"up to {reach} periods after its date) and the embargo of {embargo} "
                    "periods: use fewer splits, a smaller embargo or more dates",
                    parameter="n_splits",
                )
            out.append((np.flatnonzero(train), np.flatnonzero(test)))
        return out

    # -- files --------------------------------------------------------------------------------
    def to_parquet(self, path: str | os.PathLike[str]) -> str:
        """Write X, y, t1 and info to one Parquet file (info in the file's metadata).

        Examples
        --------
        >>> ts.to_parquet("train.parquet")                       # doctest: +SKIP
        >>> md.features.read_training_set("train.parquet").info  # doctest: +SKIP
        """
        return write_training_set(self.X, self.y, self.t1, self.info, path)


def read_training_set(path: str | os.PathLike[str]) -> TrainingSet:
    """A training set written by :meth:`TrainingSet.to_parquet`, equal to the one written.

    Examples
    --------
    >>> ts = md.features.read_training_set("train.parquet")  # doctest: +SKIP
    """
    return TrainingSet(*read_parts(path))


# -- building ---------------------------------------------------------------------------------


def _default_prices(
    source: Source,
    symbols: list[str],
    window: tuple[dt.date, dt.date],
    errors: str,
) -> pd.DataFrame:
    """The put/call dataset's closing prices of ``symbols`` over ``window``, latest versions."""
    first, last = window
    prices = long_prices(source.prices(symbols, first, last, errors), parameter="source")
    lo, hi = (np.datetime64(d, "D").astype(np.int64) for d in window)
    days = prices["day"].to_numpy()
    # Only the universe's prices within the window: a jump elsewhere is not this set's.
    mine = prices["symbol"].isin(symbols).to_numpy() & (days >= lo) & (days <= hi)
    return prices[mine].reset_index(drop=True)


def training_set(
    symbols: str | Iterable[str],
    start: DateLike,
    end: DateLike,
    features: Any = None,
    *,
    label: ForwardReturn | None = None,
    freq: Any = "B",
    source: Any = None,
    known_at: TimeLike | Literal["row"] | None = None,
    errors: Errors = "raise",
    executor: Any = None,
    client: Any = None,
) -> TrainingSet:
    """A feature panel and a label per row, ready for purged cross-validation.

    ``X`` is :func:`~mdframes.features.panel` with these arguments; ``y`` the label
    (default ``forward_return(5)``) on the same index, from the latest prices of the same
    source (``known_at`` limits the features only: labels measure what happened); ``t1`` the
    last date each label reads.

    Parameters
    ----------
    symbols, start, end, features, freq, source, known_at, errors, executor, client
        As :func:`~mdframes.features.panel`.
    label : ForwardReturn, optional
        :func:`~mdframes.features.forward_return` (default: ``forward_return(5)``).

    Returns
    -------
    TrainingSet

    Examples
    --------
    >>> import mdframes as md
    >>> with md.sandbox.running() as client:                              # doctest: +SKIP
    ...     ts = md.features.training_set(["AAPL", "MSFT"], "2026-01-05", "2026-06-30",
    ...                                   label=md.features.forward_return(5), client=client)
    >>> ts.y.name                                                          # doctest: +SKIP
    'fwd_return_5'
    """
    import mdframes

    label = ForwardReturn(5) if label is None else label
    if not isinstance(label, ForwardReturn):
        raise InvalidParameterError(
            f"label must be md.features.forward_return(...), not {type(label).__name__}",
            parameter="label",
        )
    errors = check_errors(errors)
    wanted = resolve_features(features)
    if any(f.name == label.name for f in wanted):
        raise InvalidParameterError(
            f"a feature is named {label.name!r} like the label", parameter="features"
        )
    resolved, _ = resolve_source(source, known_at, client)  # once, for features and labels
    if label.prices is None:
        resolved.check_prices()  # a dict without prices fails before the panel is computed
    X = panel(
        symbols,
        start,
        end,
        wanted,
        freq=freq,
        source=resolved,
        known_at=known_at,
        errors=errors,
        executor=executor,
    )

    dates, universe = _grid(cast(pd.MultiIndex, X.index))
    offset = pd.tseries.frequencies.to_offset(freq)
    if len(dates):
        window = label.price_window(dates, offset)
        if label.prices is not None:
            prices = long_prices(label.prices)
        else:
            failed = set(X.attrs.get("failed", {}))
            usable = [s for s in universe if s not in failed]
            prices = _default_prices(resolved, usable, window, errors)
            warn_jumps(prices, PRICE_DATASET)
        values, t1_dates = label.compute(dates, universe, offset, prices)
        t1 = np.repeat(t1_dates.to_numpy(dtype="datetime64[ns]"), len(universe))
    else:
        values, t1 = np.array([], dtype="float64"), np.array([], dtype="datetime64[ns]")
    y = pd.Series(values, index=X.index, name=label.name, dtype="float64")
    t1_series = pd.Series(t1, index=X.index, name="t1", dtype="datetime64[ns]")

    datasets = sorted({f.dataset for f in wanted} | {PRICE_DATASET})
    info = {
        "symbols": universe,
        "start": None if not len(dates) else f"{dates[0]:%Y-%m-%d}",
        "end": None if not len(dates) else f"{dates[-1]:%Y-%m-%d}",
        "features": {f.name: feature_definition(f, X[f.name].dtype) for f in wanted},
        "label": label.definition(),
        "freq": offset.freqstr,
        "known_at": _known_at_text(known_at),
        "source": resolved.describe(),
        "versions": resolved.versions(_lake_names(datasets)),
        "mdframes": mdframes.__version__,
        "created_at": pd.Timestamp.now(tz="UTC").isoformat(),
    }
    return TrainingSet(X, y, t1_series, info)


def _grid(index: pd.MultiIndex) -> tuple[pd.DatetimeIndex, list[str]]:
    """The dates and the symbols of a panel's index (every date x every symbol, dates
    outer), read off the codes rather than hashing every row."""
    if not len(index):
        return pd.DatetimeIndex(index.levels[0]), list(index.levels[1])
    date_codes = index.codes[0]
    m = int(np.searchsorted(date_codes, date_codes[0], side="right"))
    dates = pd.DatetimeIndex(index.levels[0].take(date_codes[::m]))
    return dates, list(index.levels[1].take(index.codes[1][:m]))


def _lake_names(datasets: list[str]) -> list[str]:
    # The daily app-ratings view is derived from the apps view a lake stores.
    return sorted({"app_ratings" if d == "app_ratings_daily" else d for d in datasets})


def _known_at_text(known_at: Any) -> str | None:
    if known_at is None or (isinstance(known_at, str) and known_at.strip() == "row"):
        return None if known_at is None else "row"
    return to_utc(known_at, "known_at").isoformat()
