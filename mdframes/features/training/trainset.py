"""Training sets: a feature panel, a label per row, and purged, embargoed splits (CONTRACT §12).

:func:`training_set` puts :func:`~mdframes.features.panel` and a label
(:func:`~mdframes.features.forward_return`) side by side; :meth:`TrainingSet.splits` gives
cross-validation folds in which no training label overlaps the period of a test label.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, Literal, cast

import numpy as np
import pandas as pd

from ..._threads import threads
from ..._typing import DateLike, Errors, TimeLike
from ...errors import DataQualityWarning, DataValidationError, InvalidParameterError, warn
from ...params import check_symbols, to_date, to_utc
from ...registry import REGISTRY
from ..panels.build import panel
from ..panels.definitions import resolve_features
from ..panels.sources import LakeLike, Source, resolve_source
from ..panels.spec import Feature, check_errors, check_offset
from .labels import PRICE_DATASET, ForwardReturn, long_parts, price_spans, source_prices, warn_jumps
from .replay import features_from_info, features_of, first_difference, pinned
from .splits import PurgedSplitter, empty_features, splitter
from .trainfile import (
    Hasher,
    content_hash,
    feature_definition,
    read_parts,
    write_features,
    write_labels,
    write_training_set,
)

__all__ = ["TrainingSet", "training_set", "read_training_set", "rebuild"]

# A feature missing on more than this share of the labelled rows is worth a warning.
_MOSTLY_NA: Final = 0.9


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
        definition), ``label``, ``freq``, ``known_at``, ``errors``, ``source``
        (``"service"``, ``"frames"`` or the lake's root), ``versions`` (a lake's table
        version per dataset read), ``content_hash`` (SHA-256 of X, y and t1 in the canonical
        form of the docs), ``mdframes`` (version) and ``created_at`` (UTC, ISO 8601).

    Examples
    --------
    >>> ts = md.features.training_set(["AAPL", "MSFT"], "2026-01-05", "2026-06-30",
    ...                               ["insider_net_value_90d", "congress_net_buy_90d"],
    ...                               source=lake)
    >>> ts
    <TrainingSet ... rows (2026-01-05..2026-06-30) x 2 features; label fwd_return_5: ... rows known>
    >>> from sklearn.ensemble import HistGradientBoostingRegressor
    >>> from sklearn.model_selection import cross_val_score
    >>> model = HistGradientBoostingRegressor(max_iter=10)
    >>> known = ts.labelled()
    >>> cross_val_score(model, known.X, known.y, cv=known.cv("kfold", embargo=5)).shape
    (5,)
    """

    def __init__(
        self,
        X: pd.DataFrame,
        y: pd.Series,
        t1: pd.Series,
        info: dict[str, Any],
        features: list[Feature] | None = None,
    ):
        if not isinstance(X.index, pd.MultiIndex) or X.index.nlevels != 2:
            raise InvalidParameterError("X must be indexed by (date, symbol)", parameter="X")
        if not (X.index.equals(y.index) and X.index.equals(t1.index)):
            raise InvalidParameterError("X, y and t1 must share one index", parameter="X")
        self.X = X
        self.y = y
        self.t1 = t1
        self.info = info
        # The Feature objects it was made with (functions included), when made in this
        # process; a set read from a file finds them again from info (replay.features_of).
        self.features = features

    def __repr__(self) -> str:
        dates = self.X.index.get_level_values(0)
        span = f"{dates.min():%Y-%m-%d}..{dates.max():%Y-%m-%d}" if len(dates) else "no dates"
        return (
            f"<TrainingSet {len(self.X):,} rows ({span}) x {self.X.shape[1]} features; "
            f"label {self.y.name}: {int(self.y.notna().sum()):,} rows known>"
        )

    def _repr_html_(self) -> str:
        """A notebook's view: shape, span, label, provenance and the features' names."""
        from ... import _html

        dates = self.X.index.get_level_values(0)
        symbols = self.X.index.get_level_values(1)
        span = f"{dates.min():%Y-%m-%d} .. {dates.max():%Y-%m-%d}" if len(dates) else "no dates"
        known = int(self.y.notna().sum())
        digest = str(self.info.get("content_hash") or "")
        pairs: list[tuple[str, object]] = [
            ("rows", len(self.X)),
            ("dates", span),
            ("symbols", symbols.nunique()),
            ("features", self.X.shape[1]),
            ("label", f"{self.y.name}: {known:,} rows known"),
            ("freq", self.info.get("freq")),
            ("known at", self.info.get("known_at")),
            ("source", self.info.get("source")),
            ("content hash", digest[:16] + "…" if len(digest) > 16 else digest),
            ("created", self.info.get("created_at")),
        ]
        names = [str(c) for c in self.X.columns]
        listed = ", ".join(names[:40]) + (f" … (+{len(names) - 40})" if len(names) > 40 else "")
        feats = f"<div style='font-size:12px'>features: {_html.text(listed)}</div>"
        return _html.box(
            "TrainingSet", _html.figures([p for p in pairs if p[1] is not None]), feats
        )

    def labelled(self) -> TrainingSet:
        """The rows whose label is known, as a training set with the same ``info`` (which
        describes, and hashes, the whole set it came from).

        ``known.X`` and ``known.y`` go into scikit-learn as they are (no NA label, so
        ``GridSearchCV``'s refit and ``cross_val_predict`` work), with
        ``cv=known.cv(...)``.

        Examples
        --------
        >>> from sklearn.ensemble import HistGradientBoostingRegressor
        >>> from sklearn.model_selection import GridSearchCV
        >>> known = ts.labelled()
        >>> search = GridSearchCV(HistGradientBoostingRegressor(max_iter=10), {"max_depth": [2, 3]},
        ...                       cv=known.cv("kfold", embargo=5)).fit(known.X, known.y)
        >>> sorted(search.best_params_)
        ['max_depth']
        """
        mask = self.y.notna().to_numpy()
        X = self.X.loc[mask]
        return TrainingSet(X, self.y.loc[mask], self.t1.loc[mask], self.info, self.features)

    def drop_empty(self, cv: PurgedSplitter) -> TrainingSet:
        """The set without the features NA on every training row of some fold of ``cv``
        (made by :meth:`cv`): nothing to learn from there, and HistGradientBoosting fails on
        them. Same ``info`` as this set (as :meth:`labelled`); ``X.attrs["dropped"]`` maps
        each dropped feature to its folds (numbered from 0).

        Examples
        --------
        >>> from sklearn.ensemble import HistGradientBoostingRegressor
        >>> from sklearn.model_selection import cross_val_score
        >>> known = ts.labelled()
        >>> cv = known.cv("walk_forward", n_splits=4)
        >>> usable = known.drop_empty(cv)
        >>> model = HistGradientBoostingRegressor(max_iter=10)
        >>> cross_val_score(model, usable.X, usable.y, cv=cv).shape
        (4,)
        """
        dropped = empty_features(cv, self.X, self.y)
        X = self.X.drop(columns=list(dropped))
        X.attrs["dropped"] = dropped
        kept = [f for f in self.features or [] if f.name not in dropped] or None
        return TrainingSet(X, self.y, self.t1, self.info, kept)

    # -- splits -------------------------------------------------------------------------------
    def cv(
        self,
        method: str = "walk_forward",
        n_splits: int = 5,
        n_test_splits: int = 2,
        embargo: int = 0,
        train_window: int | None = None,
    ) -> PurgedSplitter:
        """A scikit-learn splitter bound to this set's ``t1`` and ``freq``: purged,
        embargoed folds by date for any ``X`` of its rows (:mod:`~mdframes.features.training.splits`).

        Parameters
        ----------
        method : {"walk_forward", "kfold", "combinatorial"}
            :class:`~mdframes.features.PurgedWalkForward`,
            :class:`~mdframes.features.PurgedKFold` or
            :class:`~mdframes.features.CombinatorialPurgedCV`.
        n_splits : int
            Test blocks (``walk_forward``) or blocks (the others).
        n_test_splits : int
            ``combinatorial`` only: blocks per test, less than ``n_splits``.
        embargo : int
            Periods of ``freq`` after a test block's latest ``t1`` whose rows do not train.
        train_window : int, optional
            ``walk_forward`` only: dates each fold may train on (``None``: all before).

        Returns
        -------
        PurgedSplitter

        Raises
        ------
        InvalidParameterError
            Bad arguments, before any work.

        Examples
        --------
        >>> cv = ts.cv("combinatorial", n_splits=6, n_test_splits=2, embargo=5)
        >>> cv.get_n_splits(), cv.path_ids().shape
        (15, (6, 5))
        """
        return splitter(
            method,
            n_splits=n_splits,
            n_test_splits=n_test_splits,
            embargo=embargo,
            train_window=train_window,
            t1=self.t1,
            freq=self.info.get("freq", "B"),
        )

    def splits(self, *args: Any, **options: Any) -> list[tuple[np.ndarray, np.ndarray]]:
        """The folds of :meth:`cv` on this set as a list: ``list(ts.cv(...).split(ts.X,
        ts.y))``, positions into ``X``/``y`` of rows whose label is known.

        The dates that have a label are cut into consecutive blocks of equal size (the first
        ones one date longer when it does not divide); all symbols of a date are on one side.

        - ``"walk_forward"``: ``n_splits + 1`` blocks; fold ``i`` (from 0, as everywhere)
          tests block ``i + 1`` and trains only on the dates before it (the ``train_window``
          dates before it, when given).
        - ``"kfold"``: ``n_splits`` blocks, each the test once, training on all the others.
        - ``"combinatorial"``: ``n_splits`` blocks; every choice of ``n_test_splits`` of them
          is a test (combinatorial purged cross-validation), in lexicographic order.

        Purging (always): a training row is dropped when its label interval ``[D, t1(D)]``
        overlaps ``[first date of a test block, latest t1 of that block]``. Embargo: training
        rows dated after a test block and within ``embargo`` periods of ``freq`` after the
        block's latest ``t1`` are dropped too (AFML 7.4.2).

        The arguments are :meth:`cv`'s (``method``, ``n_splits``, ``n_test_splits``,
        ``embargo``, ``train_window``), in the same positions and with the same names.

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
        >>> from sklearn.ensemble import HistGradientBoostingRegressor
        >>> from sklearn.model_selection import cross_val_score
        >>> known = ts.labelled()
        >>> model = HistGradientBoostingRegressor(max_iter=10)
        >>> cross_val_score(model, known.X, known.y, cv=known.splits("kfold", 5, embargo=5)).shape
        (5,)
        """
        # The arguments are cv()'s, written once there.
        return list(self.cv(*args, **options).split(self.X, self.y))

    def content_hash(self) -> str:
        """The SHA-256 of X, y and t1 in the canonical form (docs: *From features to a
        model*); ``info["content_hash"]`` holds it as the set was made."""
        return content_hash(self.X, self.y, self.t1)

    def verify(self, source: Any) -> bool:
        """Rebuild the set from ``source`` at the table versions ``info`` recorded
        (:func:`~mdframes.features.rebuild`) and compare: ``True`` when the rebuilt set has
        this set's content hash.

        Raises
        ------
        DataValidationError
            The rows were changed after the set was made, or the rebuilt set differs (the
            message names the first differing cell).
        LakeDamagedError
            A recorded version is gone (a vacuum removed its files): names it and says why.

        Examples
        --------
        >>> ts.to_parquet("train.parquet")
        'train.parquet'
        >>> md.features.read_training_set("train.parquet").verify(source=lake)
        True
        """
        return _verify(self, source)

    # -- files --------------------------------------------------------------------------------
    def to_parquet(self, path: str | os.PathLike[str]) -> str:
        """Write X, y, t1 and info to one Parquet file (info in the file's metadata).

        Examples
        --------
        >>> ts.to_parquet("train.parquet")
        'train.parquet'
        >>> list(md.features.read_training_set("train.parquet").info["features"])
        ['insider_net_value_90d', 'congress_net_buy_90d']
        """
        return write_training_set(self.X, self.y, self.t1, self.info, path)


def read_training_set(path: str | os.PathLike[str]) -> TrainingSet:
    """A training set written by :meth:`TrainingSet.to_parquet`, equal to the one written.

    Examples
    --------
    >>> ts.to_parquet("train.parquet")
    'train.parquet'
    >>> md.features.read_training_set("train.parquet").X.equals(ts.X)
    True
    """
    return TrainingSet(*read_parts(path))


# -- building ---------------------------------------------------------------------------------


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
    >>> with md.sandbox.running() as client:
    ...     ts = md.features.training_set(["AAPL", "MSFT"], "2026-01-05", "2026-06-30",
    ...                                   label=md.features.forward_return(5), client=client)
    >>> ts.y.name
    'fwd_return_5'
    """
    from ..._version import __version__

    label = ForwardReturn(5) if label is None else label
    if not isinstance(label, ForwardReturn):
        raise InvalidParameterError(
            f"label must be md.features.forward_return(...), not {type(label).__name__}",
            parameter="label",
        )
    errors = check_errors(errors)
    offset = check_offset(freq)
    label.check_reach(to_date(end, "end"), offset)
    wanted = resolve_features(features)
    if any(f.name == label.name for f in wanted):
        raise InvalidParameterError(
            f"a feature is named {label.name!r} like the label", parameter="features"
        )
    resolved, _ = resolve_source(source, known_at, client)  # once, for features and labels
    if label.prices is None:
        resolved.check_prices()  # a dict without prices fails before the panel is computed
    datasets = sorted({f.dataset for f in wanted} | {PRICE_DATASET})
    # A lake's versions are fixed first and everything is read at them: info["versions"] is
    # what was read, whatever syncs run meanwhile.
    resolved, pinned_at = resolved.pin(datasets, check_symbols(symbols))
    X = panel(
        symbols, start, end, wanted, freq=freq, source=resolved, known_at=known_at,
        errors=errors, executor=executor,
    )  # fmt: skip

    dates, universe, y, t1, digest = _labelled_and_hashed(X, label, offset, resolved, errors)
    dtypes = X.dtypes  # not a column taken per feature (each a copy of X's attrs)
    info = {
        "symbols": universe,
        "start": None if not len(dates) else f"{dates[0]:%Y-%m-%d}",
        "end": None if not len(dates) else f"{dates[-1]:%Y-%m-%d}",
        "features": {f.name: feature_definition(f, dtypes[f.name]) for f in wanted},
        "label": label.definition(),
        "freq": offset.freqstr,
        "known_at": _known_at_text(known_at),
        "errors": errors,
        "source": resolved.describe(),
        "versions": resolved.versions(_lake_names(datasets)),
        "pinned_at": None if pinned_at is None else pinned_at.isoformat(),
        "content_hash": digest,
        "mdframes": __version__,
        "created_at": pd.Timestamp.now(tz="UTC").isoformat(),
    }
    return TrainingSet(X, y, t1, info, wanted)


def _labelled_and_hashed(
    X: pd.DataFrame, label: ForwardReturn, offset: Any, source: Source, errors: str
) -> tuple[pd.DatetimeIndex, list[str], pd.Series, pd.Series, str]:
    """The set's labels of ``X`` (:func:`_labels`) and its content hash. X is hashed while
    its labels are made: this thread writes the canonical bytes (X's, then y's and t1's) and
    goes on, a thread only hashes them (SHA-256 runs outside the GIL, and was the largest
    part of a set's own work beside its panel). The hash's missing-value masks count the
    mostly-missing features afterwards."""
    with ThreadPoolExecutor(1, thread_name_prefix="mdframes-hash") as pool:
        hasher = Hasher(pool if threads(2) > 1 else None)
        try:
            try:
                missing: dict[Any, np.ndarray] | None = write_features(hasher, X)
                failure = None
            except InvalidParameterError as exc:  # a dtype the hash does not cover
                missing, failure = None, exc
            dates, universe, y, t1 = _labels(X, label, offset, source, errors)
            _warn_mostly_missing(X, y, missing)  # the warning comes before the hash's error
            if failure is not None:
                raise failure
            write_labels(hasher, y, t1)
            return dates, universe, y, t1, hasher.hexdigest()
        finally:
            hasher.close(abandon=True)


def _labels(
    X: pd.DataFrame, label: ForwardReturn, offset: Any, source: Source, errors: str
) -> tuple[pd.DatetimeIndex, list[str], pd.Series, pd.Series]:
    """The panel's dates and symbols, its label ``y`` and the label's end dates ``t1``."""
    dates, universe = _grid(cast(pd.MultiIndex, X.index))
    if len(dates):
        window = label.price_window(dates, offset)
        spans = None
        if label.prices is not None:
            prices = long_parts(label.prices)
        else:
            failed = set(X.attrs.get("failed", {}))
            usable = [s for s in universe if s not in failed]
            prices = source_prices(source, usable, window, errors)
            warn_jumps(prices, PRICE_DATASET)
            spans = price_spans(source, universe)
        values, t1_dates = label.compute(dates, universe, offset, prices, spans)
        t1 = np.repeat(t1_dates.to_numpy(dtype="datetime64[ns]"), len(universe))
    else:
        values, t1 = np.array([], dtype="float64"), np.array([], dtype="datetime64[ns]")
    # Arrays made here for them: not copied (pandas 3 copies a numpy array by default).
    y = pd.Series(values, index=X.index, name=label.name, dtype="float64", copy=False)
    t1_series = pd.Series(t1, index=X.index, name="t1", dtype="datetime64[ns]", copy=False)
    return dates, universe, y, t1_series


def _warn_mostly_missing(
    X: pd.DataFrame, y: pd.Series, missing: Mapping[Any, np.ndarray] | None
) -> None:
    """One DataQualityWarning naming the features NA on more than 90 % of labelled rows.
    ``missing``: the mask of each column that has a missing value (``None``: not known)."""
    known = y.notna().to_numpy()
    if not known.any():
        return
    if missing is None:
        plain = X.copy(deep=False)
        plain.attrs = {}  # pandas would deep-copy the panel's attrs into every column taken
        missing = {name: plain[name].isna().to_numpy() for name in X.columns}
    labelled = int(np.count_nonzero(known))
    share = {  # exact counts and one division: np.mean's value
        name: np.count_nonzero(missing[name] & known) / labelled if name in missing else 0.0
        for name in X.columns
    }
    mostly = [f"{name} ({share[name]:.0%})" for name in X.columns if share[name] > _MOSTLY_NA]
    if mostly:
        warn(
            f"features NA on more than {_MOSTLY_NA:.0%} of the rows with a label: "
            f"{', '.join(mostly)}; a model learns little from them. A fold may have none of "
            "their values, or of others': the splits name each such feature "
            "(ts.drop_empty(cv) drops them; ts.X.attrs['coverage'] says where they start)",
            DataQualityWarning,
        )


def _grid(index: pd.MultiIndex) -> tuple[pd.DatetimeIndex, list[str]]:
    """The dates and the symbols of a panel's index (every date x every symbol, dates
    outer), read off the codes rather than hashing every row."""
    if not len(index):
        return pd.DatetimeIndex(index.levels[0]), list(index.levels[1])
    date_codes = index.codes[0]
    m = int(np.searchsorted(date_codes, date_codes[0], side="right"))
    dates = pd.DatetimeIndex(index.levels[0].take(date_codes[::m]))
    return dates, index.levels[1].take(index.codes[1][:m]).tolist()


def _lake_names(datasets: list[str]) -> list[str]:
    # A view (daily app ratings) is derived from the dataset a lake stores.
    return sorted({REGISTRY[d].base for d in datasets})


def _known_at_text(known_at: Any) -> str | None:
    if known_at is None or (isinstance(known_at, str) and known_at.strip() == "row"):
        return None if known_at is None else "row"
    return to_utc(known_at, "known_at").isoformat()


# -- replay -----------------------------------------------------------------------------------


def _info_of(target: Any) -> tuple[dict[str, Any], Any]:
    """``info`` and the set (if one was given) of a TrainingSet, a file or an info dict."""
    if isinstance(target, TrainingSet):
        return dict(target.info), target
    if isinstance(target, (str, os.PathLike)):
        ts = read_training_set(target)
        return dict(ts.info), ts
    if isinstance(target, Mapping):
        return dict(target), None
    raise InvalidParameterError(
        f"rebuild takes a TrainingSet, a training-set file or its info dict, not "
        f"{type(target).__name__}",
        parameter="ts",
    )


def rebuild(target: Any, *, source: Any) -> TrainingSet:
    """The set ``target`` describes, made again from ``source`` as it was: a lake is read at
    the table versions ``info["versions"]`` recorded (Delta time travel), so later syncs,
    compactions and vacuums within ``retain_hours`` do not change the result.

    Parameters
    ----------
    target : TrainingSet, path or dict
        A set, a file :meth:`TrainingSet.to_parquet` wrote, or its ``info``.
    source : Lake or dict of frames
        Where the set was made from (a lake: ``md.Lake(root)``).

    Returns
    -------
    TrainingSet
        With ``info["content_hash"]`` of the rebuilt rows (equal to the original's when
        nothing it read has gone).

    Raises
    ------
    LakeDamagedError
        A recorded version is gone (a vacuum removed its files): names it and says why.
    InvalidParameterError
        A label made from given prices, or a custom feature whose function cannot be found.

    Examples
    --------
    >>> ts.to_parquet("train.parquet")
    'train.parquet'
    >>> ts2 = md.features.rebuild("train.parquet", source=lake)
    >>> ts2.info["content_hash"] == ts.info["content_hash"]
    True
    """
    info, ts = _info_of(target)
    if source is None or not (isinstance(source, (Mapping, LakeLike))):
        raise InvalidParameterError(
            "rebuild needs source= the lake (or the dict of frames) the set was made from",
            parameter="source",
        )
    label = info.get("label") or {}
    if label.get("kind") != "forward_return" or label.get("prices") == "given":
        raise InvalidParameterError(
            "rebuild makes labels from the source's prices; this set's label was made from "
            "prices given to forward_return(prices=...), which the set does not hold",
            parameter="ts",
        )
    features = features_of(ts) if ts is not None else features_from_info(info)
    known_at = info.get("known_at")
    if info.get("start") is None:
        raise InvalidParameterError("the set has no dates to rebuild", parameter="ts")
    out = training_set(
        info["symbols"],
        info["start"],
        info["end"],
        features,
        label=ForwardReturn(int(label["horizon"]), lag=int(label["lag"])),
        freq=info.get("freq", "B"),
        source=pinned(source, info),
        known_at=known_at,
        errors=info.get("errors", "raise"),
    )
    out.info["rebuilt_from"] = info.get("content_hash")
    return out


def _verify(ts: TrainingSet, source: Any) -> bool:
    recorded = ts.info.get("content_hash")
    own = ts.content_hash()
    if recorded is not None and own != recorded:
        raise DataValidationError(
            f"the set's rows no longer match info['content_hash'] ({recorded[:12]}...): X, "
            f"y or t1 were changed after the set was made (their hash is {own[:12]}...)"
        )
    again = rebuild(ts, source=source)
    if again.info["content_hash"] != own:
        where = first_difference(ts, again) or "the canonical forms differ"
        raise DataValidationError(
            f"the set rebuilt from the lake at its recorded versions differs: {where}"
        )
    return True
