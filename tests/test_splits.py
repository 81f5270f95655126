"""md.features splitters: purged, embargoed folds by date as scikit-learn cross-validators.

The folds equal a plain-Python brute force written from CONTRACT §12 and §12.1 (the embargo
after the test labels end, AFML 7.4.2) on random calendars, horizons, lags, embargoes,
training windows, split counts, and shuffled subsets of the rows; every scikit-learn use the
contract names runs on ``ts.labelled()`` with each splitter; ``path_ids()`` is skfolio's.
"""

from __future__ import annotations

import itertools
import re
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import mdframes as md
from mdframes.features.training.labels import long_prices
from mdframes.features.training.splits import _PairRows, _sorted_codes
from mdframes.features.training.trainset import TrainingSet

# --- the brute force --------------------------------------------------------------------------


def blocks_of(dates: list[pd.Timestamp], n: int) -> list[list[pd.Timestamp]]:
    """Consecutive blocks of equal size, the first ones one date longer (as documented)."""
    size, extra = divmod(len(dates), n)
    out, at = [], 0
    for b in range(n):
        take = size + (b < extra)
        out.append(dates[at : at + take])
        at += take
    return out


def brute_force_splits(
    index: list[tuple[pd.Timestamp, str]],
    t1: dict[tuple[pd.Timestamp, str], pd.Timestamp],
    y: list[float] | None,
    freq: str,
    method: str,
    n: int,
    k: int,
    embargo: int,
    window: int | None,
) -> list[tuple[list[int], list[int]]] | None:
    """Expected (train, test) positions into the rows ``index`` (any order, any subset of
    t1's rows), row by row from the definitions; None: the split must raise."""
    rows = [
        (i, date, t1[(date, symbol)])
        for i, (date, symbol) in enumerate(index)
        if not pd.isna(t1[(date, symbol)]) and (y is None or y[i] == y[i])
    ]
    dates = sorted({date for _, date, _ in rows})
    n_blocks = n + 1 if method == "walk_forward" else n
    if len(dates) < n_blocks:
        return None
    blocks = blocks_of(dates, n_blocks)
    if method == "walk_forward":
        chosen_sets = [(b,) for b in range(1, n_blocks)]
    elif method == "kfold":
        chosen_sets = [(b,) for b in range(n_blocks)]
    else:
        chosen_sets = list(itertools.combinations(range(n_blocks), k))
    # Per block: the latest t1 of its rows, and the end of its embargo (`embargo` periods
    # of freq after that latest t1).
    latest = [max(e for _, d, e in rows if d in set(block)) for block in blocks]
    embargo_end = [pd.date_range(hi, periods=embargo + 1, freq=freq)[-1] for hi in latest]
    out = []
    for chosen in chosen_sets:
        test_dates = {d for b in chosen for d in blocks[b]}
        test = sorted(i for i, date, _ in rows if date in test_dates)
        allowed = set(dates)
        if method == "walk_forward":
            start = dates.index(blocks[chosen[0]][0])
            allowed = set(
                dates[:start] if window is None else dates[max(0, start - window) : start]
            )
        train = []
        for i, date, end in rows:
            if date in test_dates or date not in allowed:
                continue
            dropped = False
            for b in chosen:
                if date <= latest[b] and end >= blocks[b][0]:  # purge: [date, t1] meets the test's
                    dropped = True
                if embargo and blocks[b][-1] < date <= embargo_end[b]:  # after the block
                    dropped = True
            if not dropped:
                train.append(i)
        if not train:
            return None
        out.append((sorted(train), test))
    return out


def random_set(data: Any, symbols: tuple[int, int] = (1, 3)) -> TrainingSet:
    """A training set over a random calendar, horizon and lag, with holes in the prices
    (stale or unknown labels) and a data end (the last labels not known yet)."""
    freq = data.draw(st.sampled_from(["B", "D", "W-FRI", "2D", "MS"]), label="freq")
    n_dates = data.draw(st.integers(6, 50), label="dates")
    n_symbols = data.draw(st.integers(*symbols), label="symbols")
    horizon = data.draw(st.integers(1, 6), label="horizon")
    lag = data.draw(st.integers(0, 3), label="lag")
    start = pd.Timestamp("2020-01-01") + pd.Timedelta(days=data.draw(st.integers(0, 2500)))
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    dates = pd.date_range(start, periods=n_dates, freq=freq).as_unit("ns")
    symbols = [f"S{i}" for i in range(n_symbols)]
    calendar = pd.date_range(dates[0] - pd.Timedelta(days=10), dates[-1] + pd.Timedelta(days=400))
    wide = pd.DataFrame(
        np.exp(rng.normal(0, 0.01, (len(calendar), n_symbols)).cumsum(axis=0)) * 100,
        index=calendar,
        columns=symbols,
    )
    wide = wide.mask(rng.random(wide.shape) < data.draw(st.sampled_from([0.0, 0.2, 0.6])))
    wide = wide.iloc[: rng.integers(len(calendar) // 2, len(calendar) + 1)]
    label = md.features.forward_return(horizon, lag=lag, prices=wide)
    offset = pd.tseries.frequencies.to_offset(freq)
    y, t1 = label.compute(dates, symbols, offset, long_prices(wide))
    index = pd.MultiIndex.from_product(
        [dates, pd.Index(symbols, dtype="string")], names=["date", "symbol"]
    )
    X = pd.DataFrame({"x": rng.normal(size=len(index))}, index=index)
    info = {"freq": offset.freqstr, "label": label.definition()}
    return TrainingSet(
        X,
        pd.Series(y, index=index, name=label.name),
        pd.Series(np.repeat(t1.to_numpy(), n_symbols), index=index, name="t1"),
        info,
    )


def check_properties(
    ts: TrainingSet, folds: list[tuple[np.ndarray, np.ndarray]], embargo: int
) -> None:
    """What must hold of any fold, whatever the block layout."""
    day = ts.X.index.get_level_values("date")
    t1 = ts.t1.to_numpy()
    known = np.flatnonzero(ts.y.notna().to_numpy())
    label_dates = np.unique(day[known])
    for train, test in folds:
        assert len(train) and len(test)
        assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)
        assert set(train) <= set(known) and set(test) <= set(known)
        # All symbols of a date on one side: no date in both, and a test date is whole.
        assert not set(day[train]) & set(day[test])
        test_dates = set(day[test])
        assert set(test) == {i for i in known if day[i] in test_dates}
        # Test blocks: maximal runs of consecutive label dates in the test.
        flags = np.isin(label_dates, list(test_dates))
        runs, current = [], []
        for date, flag in zip(label_dates, flags, strict=True):
            if flag:
                current.append(date)
            elif current:
                runs.append(current)
                current = []
        if current:
            runs.append(current)
        for run in runs:
            lo, hi = run[0], max(t1[i] for i in test if day[i] in set(run))
            for i in train:
                assert not (day[i] <= hi and t1[i] >= lo), "a training label overlaps a test"
            if embargo:
                end = pd.date_range(hi, periods=embargo + 1, freq=ts.info["freq"])[-1]
                for i in train:
                    assert not (run[-1] < day[i] <= end), "a training row inside an embargo"


def _draw_splitter(data: Any) -> tuple[str, int, int, int, int | None]:
    method = data.draw(st.sampled_from(["walk_forward", "kfold", "combinatorial"]), label="method")
    n = data.draw(st.integers(1 if method == "walk_forward" else 2, 6), label="n_splits")
    k = data.draw(st.integers(1, n - 1), label="n_test_splits") if method == "combinatorial" else 2
    embargo = data.draw(st.integers(0, 8), label="embargo")
    window = None
    if method == "walk_forward":
        window = data.draw(st.none() | st.integers(1, 12), label="train_window")
    return method, n, k, embargo, window


def _brute_force_case(data: Any, ts: Any) -> tuple[str, dict[str, Any], Any]:
    """A drawn splitter, its settings and the brute force's folds (``None``: it must refuse,
    which is checked here)."""
    method, n, k, embargo, window = _draw_splitter(data)
    t1 = dict(zip(ts.X.index, ts.t1, strict=True))
    want = brute_force_splits(
        list(ts.X.index), t1, list(ts.y), ts.info["freq"], method, n, k, embargo, window
    )
    args = {"n_splits": n, "n_test_splits": k, "embargo": embargo, "train_window": window}
    if want is None:
        with pytest.raises(md.InvalidParameterError, match="too few|no training row"):
            ts.splits(method, **args)
    return method, args, want


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_splits_are_purged_and_embargoed_exactly_as_the_brute_force(data: Any) -> None:
    ts = random_set(data)
    method, args, want = _brute_force_case(data, ts)
    if want is None:
        return
    got = ts.splits(method, **args)
    assert [(list(a), list(b)) for a, b in got] == want
    assert all(a.dtype.kind == "i" and b.dtype.kind == "i" for a, b in got)
    check_properties(ts, got, args["embargo"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rows_grouped_by_date_split_as_the_brute_force(data: Any) -> None:
    """Many symbols a date, in the set's order: the rows come in runs of one (date, t1)
    pair and a fold's positions are built from the runs (not a gather of every row)."""
    ts = random_set(data, symbols=(8, 16))
    method, args, want = _brute_force_case(data, ts)
    if want is None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row_pair = ts.cv(method, **args)._prepare(ts.X, ts.y)[0].row_pair
    assume(_PairRows(row_pair).runs is not None)  # most do: holes in prices split some runs
    got = ts.splits(method, **args)
    assert [(list(a), list(b)) for a, b in got] == want


@pytest.mark.parametrize(
    "values",
    [
        pd.to_datetime(["2026-03-02", "2024-01-05", "2026-03-02", "2025-07-01"]).asi8,
        pd.to_datetime(["2026-03-02 10:00", "2026-03-02 00:00", "2026-03-02 10:00"]).asi8,
        np.array([5, -3, 5, 2**40, -(2**40), 7], dtype=np.int64),
        np.array([9, 9, 9], dtype=np.int64),
        np.array([], dtype=np.int64),
    ],
    ids=["midnights", "times of day", "wide range", "one value", "none"],
)
def test_sorted_codes_are_pandas_sorted_factorize(values: np.ndarray) -> None:
    codes, uniques = _sorted_codes(values)
    want_codes, want_uniques = pd.factorize(values, sort=True)
    assert codes.tolist() == want_codes.tolist()
    assert uniques.tolist() == np.asarray(want_uniques).tolist()


def test_sorted_codes_of_values_in_a_known_range() -> None:
    values = np.random.default_rng(2).integers(0, 50, 300) * 7
    codes, uniques = _sorted_codes(values, 350)
    want_codes, want_uniques = pd.factorize(values, sort=True)
    assert codes.tolist() == want_codes.tolist()
    assert uniques.tolist() == np.asarray(want_uniques).tolist()


def test_a_folds_positions_from_runs_equal_the_gather() -> None:
    rng = np.random.default_rng(0)
    row_pair = np.repeat(rng.integers(-1, 30, 200), rng.integers(1, 40, 200))  # runs, some -1
    rows = _PairRows(row_pair)
    assert rows.runs is not None
    for _ in range(20):
        pairs = rng.random(30) < 0.5
        want = np.flatnonzero(np.append(pairs, False)[row_pair])
        assert rows.positions(pairs).tolist() == want.tolist()
    scattered = _PairRows(rng.integers(-1, 30, 500))  # no runs: the gather
    assert scattered.runs is None
    pairs = rng.random(30) < 0.5
    want = np.flatnonzero(np.append(pairs, False)[scattered.row_pair])
    assert scattered.positions(pairs).tolist() == want.tolist()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_split_of_a_shuffled_subset_gives_positions_into_that_subset(data: Any) -> None:
    """Any subset of the rows, in any order (a fold's training rows inside a nested search,
    a shuffled frame), with or without y: positions into the X given, equal to the brute
    force over those rows."""
    ts = random_set(data)
    method, n, k, embargo, window = _draw_splitter(data)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="subset seed"))
    keep = rng.permutation(len(ts.X))[: data.draw(st.integers(1, len(ts.X)), label="rows")]
    X = ts.X.iloc[keep]
    y = ts.y.iloc[keep] if data.draw(st.booleans(), label="with y") else None
    cv = ts.cv(method, n, k, embargo, window)
    t1 = dict(zip(ts.X.index, ts.t1, strict=True))
    want = brute_force_splits(
        list(X.index), t1, None if y is None else list(y), ts.info["freq"], method, n, k,
        embargo, window,
    )  # fmt: skip
    if want is None:
        with pytest.raises(md.InvalidParameterError, match="too few|no training row"):
            list(cv.split(X, y))
        return
    got = list(cv.split(X, y))
    assert [(list(a), list(b)) for a, b in got] == want
    assert len(got) == cv.get_n_splits()


def _ten_days() -> TrainingSet:
    """Ten business days, one symbol, 2-day labels (lag 0)."""
    dates = pd.bdate_range("2026-03-02", periods=10).as_unit("ns")
    index = pd.MultiIndex.from_product([dates, pd.Index(["A"])], names=["date", "symbol"])
    t1 = pd.Series(pd.bdate_range("2026-03-04", periods=10).as_unit("ns"), index=index, name="t1")
    return TrainingSet(
        pd.DataFrame({"x": np.arange(10.0)}, index=index),
        pd.Series(np.arange(10.0), index=index, name="fwd_return_2"),
        t1,
        {"freq": "B", "label": {"horizon": 2, "lag": 0}},
    )


def test_the_embargo_counts_from_the_end_of_the_test_labels() -> None:
    """The rows after a test block whose labels reach into it are purged; the embargo then
    drops the rows dated within `embargo` periods after the block's latest t1 (AFML 7.4.2),
    not after its last date (which, with embargo <= the label's reach, drops nothing)."""
    ts = _ten_days()
    folds = ts.splits("kfold", n_splits=2, embargo=1)
    # Fold 1 tests rows 0-4, whose labels reach row 6's date: rows 5 and 6 are purged, and
    # the embargo (one period after row 6's date) takes row 7.
    assert folds[0][1].tolist() == [0, 1, 2, 3, 4]
    assert folds[0][0].tolist() == [8, 9]
    # Fold 2 tests rows 5-9: rows 3 and 4 have labels that reach row 5's date.
    assert folds[1][1].tolist() == [5, 6, 7, 8, 9]
    assert folds[1][0].tolist() == [0, 1, 2]
    walk = ts.splits("walk_forward", n_splits=1, embargo=1)
    assert walk[0][0].tolist() == [0, 1, 2] and walk[0][1].tolist() == [5, 6, 7, 8, 9]
    # A rolling window of 2 dates before the test block: rows 3 and 4, both purged, so none.
    with pytest.raises(md.InvalidParameterError, match="no training row"):
        ts.splits("walk_forward", n_splits=1, train_window=2)
    assert ts.splits("walk_forward", n_splits=1, train_window=4)[0][0].tolist() == [1, 2]


# --- arguments --------------------------------------------------------------------------------


def _tiny() -> TrainingSet:
    """Two dates only: any real split of it fails, so an argument error must come first."""
    dates = pd.bdate_range("2026-03-02", periods=2).as_unit("ns")
    index = pd.MultiIndex.from_product([dates, pd.Index(["A"])], names=["date", "symbol"])
    return TrainingSet(
        pd.DataFrame({"x": [1.0, 2.0]}, index=index),
        pd.Series([0.1, 0.2], index=index, name="fwd_return_1"),
        pd.Series(dates + pd.offsets.BDay(2), index=index, name="t1"),
        {"freq": "B", "label": {"horizon": 1}},
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "purged"}, "method='purged' is not one of"),
        ({"method": "combinatorial", "n_splits": 4, "n_test_splits": 4}, "less than n_splits"),
        ({"method": "combinatorial", "n_splits": 3, "n_test_splits": 0}, "n_test_splits=0"),
        ({"method": "combinatorial", "n_splits": 60, "n_test_splits": 30}, "folds; use fewer"),
        ({"embargo": -1}, "embargo=-1"),
        ({"embargo": 1.5}, "embargo=1.5"),
        ({"embargo": True}, "embargo=True"),
        ({"embargo": 2**63}, "larger than numpy's int64"),
        ({"embargo": 10**9}, "embargo=1000000000 periods of B after 2026-03-05 is past what"),
        ({"n_splits": 0}, "n_splits=0"),
        ({"method": "kfold", "n_splits": 1}, "n_splits=1"),
        ({"n_splits": "5"}, "n_splits='5'"),
        ({"n_splits": 2**70}, "larger than numpy's int64"),
        ({"train_window": 0}, "train_window=0"),
        ({"train_window": 2**64}, "larger than numpy's int64"),
        ({"method": "kfold", "train_window": 5}, "train_window is for walk_forward only"),
    ],
)
def test_bad_split_arguments_are_refused_before_any_work(kwargs: dict, match: str) -> None:
    with pytest.raises(md.InvalidParameterError, match=match):
        _tiny().cv(**kwargs)
    with pytest.raises(md.InvalidParameterError, match=match):
        _tiny().splits(**kwargs)


def test_a_splitter_refuses_what_it_cannot_split() -> None:
    ts = _tiny()
    with pytest.raises(md.InvalidParameterError, match="t1 must be a Series of naive dates"):
        md.features.PurgedKFold(2, t1=ts.t1.to_numpy())
    with pytest.raises(md.InvalidParameterError, match="freq='X' is not a pandas frequency"):
        md.features.PurgedKFold(2, t1=ts.t1, freq="X")
    cv = md.features.PurgedWalkForward(1, t1=ts.t1)
    other = ts.X.rename(index={"A": "B"}, level="symbol")
    with pytest.raises(md.InvalidParameterError, match="not in t1's index"):
        list(cv.split(other))
    with pytest.raises(md.InvalidParameterError, match="an array must have t1's 2 rows"):
        list(cv.split(np.zeros((3, 1))))
    with pytest.raises(md.InvalidParameterError, match="2 dates have a label: too few"):
        ts.splits("kfold", n_splits=3)
    with pytest.raises(
        md.InvalidParameterError, match=r"fold 0 \(of 1, from 0\).* no training row"
    ):
        ts.splits("walk_forward", n_splits=1)  # the one training date's label reaches in
    with pytest.raises(md.InvalidParameterError, match="has no parameter 'shuffle'"):
        cv.set_params(shuffle=True)


def test_an_array_x_is_split_as_t1s_rows() -> None:
    ts = _ten_days()
    cv = ts.cv("kfold", n_splits=2, embargo=1)
    by_frame = list(cv.split(ts.X, ts.y))
    by_array = list(cv.split(ts.X.to_numpy(), ts.y.to_numpy()))
    assert [(a.tolist(), b.tolist()) for a, b in by_array] == [
        (a.tolist(), b.tolist()) for a, b in by_frame
    ]


# --- a feature without values in a fold's training rows ---------------------------------------


def test_a_feature_na_on_every_training_row_of_a_fold_warns_once_naming_folds() -> None:
    ts = _ten_days()
    X = ts.X.assign(late=np.where(np.arange(10) >= 5, 1.0, np.nan), early=np.arange(10.0))
    ts = TrainingSet(X, ts.y, ts.t1, ts.info)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ts.splits("kfold", n_splits=2, embargo=1)
    found = [w for w in caught if issubclass(w.category, md.DataQualityWarning)]
    # Fold 1 trains on rows 0-2 only, where `late` has no value; fold 0 trains on 8-9.
    assert len(found) == 1
    text = str(found[0].message)
    assert "kfold fold (of 2, numbered from 0): 'late' in fold(s) 1." in text
    assert found[0].filename == __file__  # points at the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _ten_days().splits("kfold", n_splits=2, embargo=1)  # no warning without such feature


# --- scikit-learn -----------------------------------------------------------------------------

SYMBOLS = ["AAPL", "KO", "GME", "JPM"]


@pytest.fixture(scope="module")
def known() -> TrainingSet:
    """A real training set (md.features.training_set over given frames: news and put/call
    prices made up from a fixed seed), its labelled rows."""
    rng = np.random.default_rng(3)
    days = pd.bdate_range("2025-06-02", "2026-03-31")
    prices = pd.DataFrame(
        {
            "symbol": pd.array(np.tile(SYMBOLS, len(days)), dtype="string"),
            "date": np.repeat(days, len(SYMBOLS)),
            "ratio": rng.uniform(0.5, 1.5, len(days) * len(SYMBOLS)),
            "price": 100 * np.exp(rng.normal(0, 0.01, (len(days), len(SYMBOLS))).cumsum(0)).ravel(),
        }
    )
    n = 2000
    news = pd.DataFrame(
        {
            "symbol": pd.array(rng.choice(SYMBOLS, n), dtype="string"),
            "date": pd.Timestamp("2025-05-01") + pd.to_timedelta(rng.integers(0, 330, n), "D"),
            "sentiment": rng.normal(size=n),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", md.DataQualityWarning)
        ts = md.features.training_set(
            SYMBOLS, "2025-07-01", "2026-03-31",
            ["put_call_ratio_mean_20d", "news_count_7d", "news_sentiment_mean_7d"],
            source={"put_call_ratio": prices, "news": news},
        )  # fmt: skip
    assert ts.y.isna().any()  # the last labels are not known: labelled() drops them
    out = ts.labelled()
    assert out.y.notna().all() and out.info is ts.info and len(out.X) < len(ts.X)
    return out


SPLITTERS = [
    ("walk_forward", {"n_splits": 4, "embargo": 3, "train_window": 80}),
    ("kfold", {"n_splits": 4, "embargo": 3}),
    ("combinatorial", {"n_splits": 5, "n_test_splits": 2, "embargo": 3}),
]


def _model() -> Any:
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline

    return make_pipeline(SimpleImputer(), Ridge())


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", md.DataQualityWarning)
        yield


@pytest.mark.parametrize(("method", "kw"), SPLITTERS, ids=[m for m, _ in SPLITTERS])
def test_grid_search_with_refit_and_cross_validate(
    known: TrainingSet, method: str, kw: dict
) -> None:
    from sklearn.model_selection import GridSearchCV, cross_validate

    cv = known.cv(method, **kw)
    search = GridSearchCV(_model(), {"ridge__alpha": [0.1, 10.0]}, cv=cv).fit(known.X, known.y)
    assert search.n_splits_ == cv.get_n_splits() and len(search.predict(known.X)) == len(known.X)
    result = cross_validate(_model(), known.X, known.y, cv=cv, return_indices=True)
    assert np.isfinite(result["test_score"]).all()
    want = list(cv.split(known.X, known.y))
    assert [list(a) for a in result["indices"]["train"]] == [list(a) for a, _ in want]
    assert [list(b) for b in result["indices"]["test"]] == [list(b) for _, b in want]


@pytest.mark.parametrize(("method", "kw"), SPLITTERS, ids=[m for m, _ in SPLITTERS])
def test_permutation_test_learning_curve_nested_cv_and_clone(
    known: TrainingSet, method: str, kw: dict
) -> None:
    from sklearn.base import clone
    from sklearn.model_selection import (
        GridSearchCV,
        cross_val_score,
        learning_curve,
        permutation_test_score,
    )

    cv = known.cv(method, **kw)
    score, permuted, p = permutation_test_score(
        _model(), known.X, known.y, cv=cv, n_permutations=3, random_state=0
    )
    assert np.isfinite(score) and len(permuted) == 3 and 0 < p <= 1
    sizes, train_scores, _ = learning_curve(
        _model(), known.X, known.y, cv=cv, train_sizes=[0.5, 1.0]
    )
    assert len(sizes) == 2 and train_scores.shape == (2, cv.get_n_splits())
    # Nested: the inner search splits each outer fold's training rows (a subset, with gaps).
    inner = known.cv("kfold", n_splits=3, embargo=3)
    search = GridSearchCV(_model(), {"ridge__alpha": [0.1, 10.0]}, cv=inner)
    nested = cross_val_score(search, known.X, known.y, cv=cv)
    assert len(nested) == cv.get_n_splits() and np.isfinite(nested).all()
    copy = clone(cv)
    assert type(copy) is type(cv) and repr(copy) == repr(cv)
    assert copy.get_params()["t1"].equals(cv.get_params()["t1"])
    assert [(list(a), list(b)) for a, b in copy.split(known.X)] == [
        (list(a), list(b)) for a, b in cv.split(known.X)
    ]
    assert clone(search).cv is not inner and repr(clone(search).cv) == repr(inner)


def test_cross_val_predict_with_the_purged_kfold(known: TrainingSet) -> None:
    """Every labelled row is in exactly one test fold: each prediction is the fold's model's."""
    from sklearn.model_selection import cross_val_predict

    cv = known.cv("kfold", n_splits=4, embargo=3)
    predicted = cross_val_predict(_model(), known.X, known.y, cv=cv)
    tests = np.concatenate([test for _, test in cv.split(known.X, known.y)])
    assert sorted(tests) == list(range(len(known.X)))
    for train, test in cv.split(known.X, known.y):
        model = _model().fit(known.X.iloc[train], known.y.iloc[train])
        np.testing.assert_allclose(predicted[test], model.predict(known.X.iloc[test]))


def test_the_splitters_read_as_their_arguments(known: TrainingSet) -> None:
    cv = md.features.CombinatorialPurgedCV(6, n_test_splits=2, embargo=5, t1=known.t1)
    assert repr(cv) == (
        f"CombinatorialPurgedCV(n_splits=6, n_test_splits=2, embargo=5, "
        f"t1=<t1 of {len(known.t1):,} rows>, freq=None)"
    )
    assert cv.get_n_splits() == 15 and cv.path_ids().shape == (6, 5)
    assert known.cv("walk_forward", n_splits=3).get_n_splits() == 3
    assert repr(known.cv("walk_forward", n_splits=3, train_window=20)).startswith(
        "PurgedWalkForward(n_splits=3, embargo=0, train_window=20,"
    )
    assert cv.set_params(embargo=2) is cv and cv.embargo == 2


# --- skfolio's paths ----------------------------------------------------------------------------


def test_path_ids_are_skfolios() -> None:
    """skfolio's CombinatorialPurgedCV: ``recombined_paths`` (block x path -> split) is
    ``path_ids()``, its ``get_path_ids`` (split x test block -> path) the inverse, and on
    dates that divide evenly into blocks the test sets are the same rows."""
    skfolio = pytest.importorskip("skfolio.model_selection", reason="in the dev extra")
    t1 = _ten_days().t1
    for n in range(3, 9):
        for k in range(2, n):
            ours = md.features.CombinatorialPurgedCV(n, n_test_splits=k, t1=t1)
            theirs = skfolio.CombinatorialPurgedCV(n_folds=n, n_test_folds=k)
            ids = ours.path_ids()
            np.testing.assert_array_equal(ids, theirs.recombined_paths)
            assert ids.shape[1] == theirs.n_test_paths == k * ours.get_n_splits() // n
            inverse = theirs.get_path_ids()
            for split, blocks in enumerate(itertools.combinations(range(n), k)):
                for j, b in enumerate(blocks):
                    assert ids[b, inverse[split, j]] == split
    # The same test rows: one symbol, 24 dates, 4 blocks of 6.
    dates = pd.bdate_range("2026-01-05", periods=24).as_unit("ns")
    index = pd.MultiIndex.from_product([dates, pd.Index(["A"])], names=["date", "symbol"])
    t1 = pd.Series(dates + pd.offsets.BDay(1), index=index)
    X = pd.DataFrame({"x": np.arange(24.0)}, index=index)
    ours_cv = md.features.CombinatorialPurgedCV(4, n_test_splits=2, t1=t1)
    theirs_cv = skfolio.CombinatorialPurgedCV(n_folds=4, n_test_folds=2)
    for (_, test), (_, tests) in zip(ours_cv.split(X), theirs_cv.split(X.to_numpy()), strict=True):
        assert test.tolist() == sorted(np.concatenate(tests).tolist())


# --- a hand-made splitter's calendar (freq=None) ------------------------------------------------


def _hand_made(cv: Any) -> Any:
    """The splitter ``cv`` made by hand, as a user would: the same arguments, no ``freq``."""
    params = {k: v for k, v in cv.get_params().items() if k != "freq"}
    return type(cv)(**params)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_hand_made_splitter_counts_its_embargo_on_the_sets_own_calendar(data: Any) -> None:
    """Without ``freq`` the embargo steps along the dates t1 holds: on any calendar (weekly,
    daily, every 2 days, monthly) the folds are ts.cv's, which counts the set's ``freq``,
    on the whole set and on a shuffled subset of it."""
    ts = random_set(data)
    method, n, k, embargo, window = _draw_splitter(data)
    cv = ts.cv(method, n, k, embargo, window)
    mine = _hand_made(cv)
    assert mine.freq is None
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="subset seed"))
    keep = rng.permutation(len(ts.X))[: data.draw(st.integers(1, len(ts.X)), label="rows")]
    for X, y in ((ts.X, ts.y), (ts.X.iloc[keep], ts.y.iloc[keep])):
        try:
            want = [(list(a), list(b)) for a, b in cv.split(X, y)]
        except md.InvalidParameterError as exc:
            with pytest.raises(md.InvalidParameterError, match=re.escape(str(exc))):
                list(mine.split(X, y))
            continue
        assert [(list(a), list(b)) for a, b in mine.split(X, y)] == want


@pytest.fixture(scope="module")
def weekly() -> Any:
    """A weekly training set (W-FRI) built against the sandbox: labels of 2 weeks."""
    from mdframes.sandbox import Sandbox

    from .conftest import KEY

    with Sandbox(today="2026-11-30") as server:
        client = md.Client(api_key=KEY, base_url=server.url, cache=False, progress=False)
        with client:
            return md.features.training_set(
                ["AAPL", "KO", "GME"], "2025-06-06", "2026-11-27", ["put_call_ratio_last"],
                label=md.features.forward_return(2), freq="W-FRI", client=client,
            )  # fmt: skip


@pytest.mark.parametrize(("method", "kw"), SPLITTERS, ids=[m for m, _ in SPLITTERS])
def test_a_hand_made_splitter_on_a_weekly_set_gives_the_sets_folds(
    weekly: TrainingSet, method: str, kw: dict
) -> None:
    """The issue: a hand-made splitter assumed business days, so on a weekly set an embargo
    of 3 covered 3 business days (less than a week) and kept rows ts.cv drops."""
    assert weekly.info["freq"] == "W-FRI"
    cv = weekly.cv(method, **kw)
    mine = _hand_made(cv)
    want = [(a.tolist(), b.tolist()) for a, b in cv.split(weekly.X, weekly.y)]
    assert [(a.tolist(), b.tolist()) for a, b in mine.split(weekly.X, weekly.y)] == want
    known = weekly.labelled()  # the labelled rows only: the same folds by position
    got = [(a.tolist(), b.tolist()) for a, b in _hand_made(known.cv(method, **kw)).split(known.X)]
    assert got == [(a.tolist(), b.tolist()) for a, b in known.cv(method, **kw).split(known.X)]
    if method == "walk_forward":
        return  # trains before its tests only: an embargo (after them) never drops a row
    # Business days (the old default) keep more training rows: the embargo was too short.
    days = type(cv)(**{**cv.get_params(), "freq": "B"})
    kept = [len(a) for a, _ in days.split(weekly.X, weekly.y)]
    assert sum(kept) > sum(len(a) for a, _ in want)
    assert all(k >= len(a) for k, (a, _) in zip(kept, want, strict=True))
