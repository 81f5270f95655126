"""md.features.audit (CONTRACT §13): a clean set on a lake synced over several sandbox days
passes every check; each planted defect is caught by exactly its check; cv_overlap judges
any splitter against the definition.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import KFold, TimeSeriesSplit

import mdframes as md
from mdframes.features.training.trainset import TrainingSet
from mdframes.sandbox import Sandbox

from .conftest import KEY

SYMBOLS = ["AAPL", "KO", "MSFT"]
DATASETS = ["sentiment", "put_call_ratio", "news"]
FEATURES = ["sentiment_mean_7d", "sentiment_change_30d", "put_call_ratio_last", "news_count_7d"]
START, END = "2026-08-03", "2026-09-25"

pytestmark = pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")


def peek_next_ratio(df: pd.DataFrame) -> pd.Series:
    """A planted look-ahead: each row's value is the next row's ratio (of the same symbol), a
    row the panel's date may not know yet."""
    return df.groupby(df["symbol"].astype(str), sort=False)["ratio"].shift(-1)


def never(df: pd.DataFrame) -> pd.Series:
    return pd.Series(False, index=df.index)


@pytest.fixture(scope="module")
def lake_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A lake synced on five sandbox days, a week apart (the sandbox revises sentiment)."""
    root = tmp_path_factory.mktemp("audit") / "lake"
    with Sandbox(today="2026-09-01") as world:
        client = md.Client(api_key=KEY, base_url=world.url, cache=False, progress=False)
        client.sandbox = world
        lake = md.Lake(root, client=client)
        lake.sync(DATASETS, SYMBOLS, start="2026-05-01", progress=False)
        for _ in range(4):
            world.advance(days=7)
            lake.sync(DATASETS, SYMBOLS, progress=False)
        client.close()
    yield root


@pytest.fixture(scope="module")
def clean(lake_root: Path) -> TrainingSet:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return md.features.training_set(
            SYMBOLS, START, END, FEATURES, source=md.Lake(lake_root), known_at="row"
        )


def _statuses(report: md.features.AuditReport) -> dict[str, str]:
    return dict(zip(report.checks["check"], report.checks["status"], strict=True))


def _only_failed(report: md.features.AuditReport, check: str) -> None:
    statuses = _statuses(report)
    assert statuses[check] == "fail", report
    others = {k: v for k, v in statuses.items() if k != check}
    assert "fail" not in others.values(), report
    assert set(report.failures["check"]) == {check}
    assert not report.ok


def test_a_clean_set_passes_every_check(clean: TrainingSet, lake_root: Path) -> None:
    report = md.features.audit(clean, source=md.Lake(lake_root), sample=120)
    assert _statuses(report) == dict.fromkeys(md.features.audit.__globals__["CHECKS"], "pass")
    assert report.ok and report.failures.empty
    assert list(report.checks.columns) == ["check", "status", "detail", "rows"]
    assert list(report.failures.columns) == ["check", "date", "symbol", "feature", "expected",
                                             "got"]  # fmt: skip
    # Some rows are dated after the first sync: their knowledge is observed, not backfilled.
    knowledge = clean.X.attrs["knowledge"]["sentiment"]["rows"]
    assert 0 < knowledge < len(clean.X)
    text = str(report)
    assert text.startswith("audit: ok") and "look_ahead" in text and "<" not in text
    assert "<table>" in report._repr_html_()
    # Nothing of the set changed; the set's own lake is found from info.
    assert clean.content_hash() == clean.info["content_hash"]
    assert _statuses(md.features.audit(clean, sample=20))["look_ahead"] == "pass"


def test_a_look_ahead_feature_is_caught_by_look_ahead_only(lake_root: Path) -> None:
    peek = md.features.Feature("ratio_peek", "put_call_ratio", value=peek_next_ratio,
                               window=None, agg="last")  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = md.features.training_set(SYMBOLS, START, END, [*FEATURES, peek],
                                      source=md.Lake(lake_root), known_at="row")  # fmt: skip
    report = md.features.audit(ts, source=md.Lake(lake_root), sample=60)
    _only_failed(report, "look_ahead")
    assert set(report.failures["feature"]) == {"ratio_peek"}


def test_the_service_cannot_be_cut(clean: TrainingSet) -> None:
    service = TrainingSet(clean.X, clean.y, clean.t1, {**clean.info, "source": "service"})
    report = md.features.audit(service)
    assert _statuses(report)["look_ahead"] == "skipped"
    assert "source=" in report.checks.set_index("check").loc["look_ahead", "detail"]


def test_a_copy_of_the_label_is_caught_by_label_leak_only(
    clean: TrainingSet, lake_root: Path
) -> None:
    X = clean.X.assign(leak=clean.y * 3.0 + 1.0)
    X.attrs = clean.X.attrs
    leaky = TrainingSet(X, clean.y, clean.t1, clean.info, clean.features)
    report = md.features.audit(leaky, source=md.Lake(lake_root), sample=20)
    _only_failed(report, "label_leak")
    assert set(report.failures["feature"]) == {"leak"}


def test_a_later_price_is_caught_by_label_leak(clean: TrainingSet, lake_root: Path) -> None:
    prices = md.Lake(lake_root).read("put_call_ratio", SYMBOLS)[["date", "symbol", "price"]]
    wide = prices.pivot_table(index="date", columns="symbol", values="price")
    dates = clean.X.index.get_level_values(0)
    later = dates + pd.offsets.BDay(3)
    symbols = clean.X.index.get_level_values(1).astype(str)
    future = wide.stack().reindex(pd.MultiIndex.from_arrays([later, symbols])).to_numpy()
    X = clean.X.assign(price_in_3_days=future)
    X.attrs = clean.X.attrs
    report = md.features.audit(TrainingSet(X, clean.y, clean.t1, clean.info, clean.features),
                               source=md.Lake(lake_root), sample=20)  # fmt: skip
    _only_failed(report, "label_leak")
    assert "3 period(s) after" in report.checks.set_index("check").loc["label_leak", "detail"]


def test_leaky_splitters_are_caught_by_cv_overlap_only(clean: TrainingSet, lake_root: Path) -> None:
    report = md.features.audit(clean, source=md.Lake(lake_root), sample=10,
                               cv=KFold(5, shuffle=True, random_state=0))  # fmt: skip
    _only_failed(report, "cv_overlap")
    assert report.checks.set_index("check").loc["cv_overlap", "rows"] > 0
    # A hand-made fold list: train on the first half, test on the rows just after, no purge.
    n = len(clean.X)
    half = n // 2
    folds = [(np.arange(half), np.arange(half, half + len(clean.X) // 6))]
    report = md.features.audit(clean, source=md.Lake(lake_root), sample=10, cv=folds)
    _only_failed(report, "cv_overlap")
    # scikit-learn's TimeSeriesSplit does not purge either: labels reach into the test.
    assert (
        _statuses(md.features.audit(clean, sample=0, cv=TimeSeriesSplit(4)))["cv_overlap"] == "fail"
    )


@pytest.mark.parametrize(
    ("method", "embargo"), [("walk_forward", 3), ("kfold", 3), ("combinatorial", 1)]
)
def test_our_splitters_pass_cv_overlap(clean: TrainingSet, method: str, embargo: int) -> None:
    cv = clean.cv(method, n_splits=4, embargo=embargo)
    report = md.features.audit(clean, sample=0, cv=cv)
    assert _statuses(report)["cv_overlap"] == "pass", report
    # The same folds without their purge and embargo: training rows moved back in fail.
    leaky = [(np.setdiff1d(np.arange(len(clean.X)), test), test)
             for _, test in cv.split(clean.X, clean.y)]  # fmt: skip
    assert _statuses(md.features.audit(clean, sample=0, cv=leaky))["cv_overlap"] == "fail"


def test_rows_whose_t1_is_nat_are_in_no_fold(clean: TrainingSet, lake_root: Path) -> None:
    """The unlabelled latest rows with no t1 (NaT): any splitter's folds are judged without
    them (no crash formatting their dates), and our splitters never put them in a fold."""
    unknown = clean.y.isna().to_numpy()
    assert unknown.any() and not unknown.all()
    t1 = clean.t1.mask(clean.y.isna())
    ts = TrainingSet(clean.X, clean.y, t1, clean.info, clean.features)
    assert len(ts.X[ts.y.isna()]) == int(t1.isna().sum())
    report = md.features.audit(ts, source=md.Lake(lake_root), sample=10,
                               cv=KFold(5, shuffle=True, random_state=0))  # fmt: skip
    _only_failed(report, "cv_overlap")  # shuffled k-fold leaks; the NaT rows are not why
    listed = report.failures.set_index(["date", "symbol"]).index
    assert not t1.reindex(listed).isna().any()
    # The same failing rows as the set whose t1 is known, with those rows left out.
    nat_rows = set(np.flatnonzero(unknown))
    folds = [(np.setdiff1d(a, list(nat_rows)), np.setdiff1d(b, list(nat_rows)))
             for a, b in KFold(5, shuffle=True, random_state=0).split(ts.X)]  # fmt: skip
    without = md.features.audit(clean, sample=0, cv=folds)
    rows = report.checks.set_index("check").loc["cv_overlap", "rows"]
    assert rows == without.checks.set_index("check").loc["cv_overlap", "rows"] > 0
    # Hand-made folds training on the NaT rows only, testing the labelled rows whose labels
    # span their dates (the issue: listing them crashed formatting their t1): none trains.
    labelled = np.flatnonzero(~unknown)
    folds = [(np.flatnonzero(unknown), labelled[-len(SYMBOLS) * 10 :])]
    report = md.features.audit(ts, sample=0, cv=folds)
    assert _statuses(report)["cv_overlap"] == "pass", report
    assert (
        "overlapping training rows [0]"
        in report.checks.set_index("check").loc["cv_overlap", "detail"]
    )
    everything = np.arange(len(ts.X))  # and every row on both sides: fails, listing no NaT
    report = md.features.audit(ts, sample=0, cv=[(everything, everything)])
    assert _statuses(report)["cv_overlap"] == "fail"
    assert not t1.reindex(report.failures.set_index(["date", "symbol"]).index).isna().any()
    for method, embargo in (("walk_forward", 3), ("kfold", 3), ("combinatorial", 1)):
        cv = ts.cv(method, n_splits=4, embargo=embargo)
        for X, y in ((ts.X, None), (ts.X, ts.y), (ts.X.to_numpy(), None)):
            for train, test in cv.split(X, y):
                assert not nat_rows & set(train) and not nat_rows & set(test)
        assert _statuses(md.features.audit(ts, sample=0, cv=cv))["cv_overlap"] == "pass"


def test_a_feature_never_known_is_caught_by_coverage_only(lake_root: Path) -> None:
    empty = md.features.Feature("never_mean", "sentiment", value="score", where=never,
                                window="7D", agg="mean")  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = md.features.training_set(SYMBOLS, START, END, [*FEATURES, empty],
                                      source=md.Lake(lake_root), known_at="row")  # fmt: skip
    report = md.features.audit(ts, source=md.Lake(lake_root), sample=40)
    _only_failed(report, "coverage")
    assert "never_mean" in report.checks.set_index("check").loc["coverage", "detail"]


def test_misstated_knowledge_is_caught_by_knowledge_only(
    clean: TrainingSet, lake_root: Path
) -> None:
    X = clean.X.copy()
    X.attrs = {**clean.X.attrs, "knowledge": {**clean.X.attrs["knowledge"]}}
    X.attrs["knowledge"]["sentiment"] = {**X.attrs["knowledge"]["sentiment"], "rows": 0}
    report = md.features.audit(TrainingSet(X, clean.y, clean.t1, clean.info, clean.features),
                               source=md.Lake(lake_root), sample=20)  # fmt: skip
    _only_failed(report, "knowledge")
    assert set(report.failures["feature"]) == {"sentiment"}


def test_bad_arguments(clean: TrainingSet) -> None:
    with pytest.raises(md.InvalidParameterError):
        md.features.audit(clean.X)
    with pytest.raises(md.InvalidParameterError):
        md.features.audit(clean, sample=-1)
    with pytest.raises(md.InvalidParameterError):
        md.features.audit(clean, cv=5)


def test_the_audit_command_exits_1_on_a_failed_check(
    clean: TrainingSet, lake_root: Path, tmp_path: Path
) -> None:
    good = tmp_path / "clean.parquet"
    clean.to_parquet(good)
    X = clean.X.assign(leak=clean.y)
    X.attrs = clean.X.attrs
    bad = tmp_path / "leak.parquet"
    TrainingSet(X, clean.y, clean.t1, clean.info).to_parquet(bad)
    command = [sys.executable, "-m", "mdframes", "audit"]
    ok = subprocess.run([*command, str(good), "--sample", "30"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("audit: ok") and "look_ahead  pass" in ok.stdout
    failed = subprocess.run([*command, str(bad), "--lake", str(lake_root), "--sample", "5"],
                            capture_output=True, text=True)  # fmt: skip
    assert failed.returncode == 1, failed.stderr
    assert "label_leak  fail" in failed.stdout and "leak" in failed.stdout
    missing = subprocess.run([*command, str(tmp_path / "nope.parquet")], capture_output=True,
                             text=True)  # fmt: skip
    assert missing.returncode != 0 and "no such file" in missing.stderr


def test_a_set_known_at_a_time_passes(lake_root: Path) -> None:
    """known_at=T: every row recomputed from the versions fetched by T (the third sync)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = md.features.training_set(SYMBOLS, START, END, FEATURES, source=md.Lake(lake_root),
                                      known_at="2026-09-15")  # fmt: skip
    report = md.features.audit(ts, source=md.Lake(lake_root), sample=60)
    assert report.ok, report
    assert _statuses(report)["knowledge"] == "skipped"
    assert "2026-09-15" in report.checks.set_index("check").loc["look_ahead", "detail"]
    # A set made from the latest versions that claims known_at=T has seen later versions.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        latest = md.features.training_set(SYMBOLS, START, END, FEATURES,
                                          source=md.Lake(lake_root))  # fmt: skip
    claims = TrainingSet(latest.X, latest.y, latest.t1,
                         {**latest.info, "known_at": ts.info["known_at"]})  # fmt: skip
    _only_failed(md.features.audit(claims, source=md.Lake(lake_root), sample=200), "look_ahead")


@pytest.fixture(scope="module")
def frames(lake_root: Path) -> dict[str, pd.DataFrame]:
    """The lake's latest rows as a dict source, plus a symbol the sets do not have (its rows
    are left out of each cut) and, per symbol, a second put/call row at the same time as
    another, later in the frame (so the latest of the two)."""
    lake = md.Lake(lake_root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {name: lake.read(name, SYMBOLS) for name in DATASETS}
    for name, frame in out.items():
        other = frame[frame["symbol"] == "AAPL"].assign(symbol="ZZZZ")
        out[name] = pd.concat([frame, other], ignore_index=True).astype(
            {"symbol": frame["symbol"].dtype}
        )
    ratios = out["put_call_ratio"]
    again = ratios.groupby("symbol", observed=True).tail(30).assign(ratio=lambda f: f["ratio"] + 1)
    out["put_call_ratio"] = pd.concat([ratios, again], ignore_index=True)
    return out


def test_look_ahead_from_frames_in_any_order(frames: dict[str, pd.DataFrame]) -> None:
    """From a dict source: rows in no particular order, rows sharing a time, a symbol that
    is not in the set; a clean set passes every recomputed cell (the frames and the warning
    filters left as they were), and a feature that reads the next row (``shift(-1)``) is
    caught by look_ahead only."""
    shuffled = {name: f.sample(frac=1, random_state=0) for name, f in frames.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clean = md.features.training_set(SYMBOLS, START, END, FEATURES, source=shuffled)
    before = list(warnings.filters)
    indexes = {name: f.index.copy() for name, f in shuffled.items()}
    report = md.features.audit(clean, source=shuffled, sample=90)
    assert warnings.filters == before
    assert all(shuffled[n].index.equals(i) for n, i in indexes.items())  # frames untouched
    assert report.ok, report
    assert report.checks.set_index("check").loc["look_ahead", "rows"] == 90 * len(FEATURES)
    # The rows sharing a time: the later of the two in the frame is what the set knows.
    ratios = shuffled["put_call_ratio"]
    ratios = ratios[ratios["date"] <= pd.Timestamp(END)]
    on_last = ratios[
        ratios["date"] == ratios.groupby("symbol", observed=True)["date"].transform("max")
    ]
    assert (on_last.groupby("symbol", observed=True).size().loc[SYMBOLS] == 2).all()
    expected = on_last.groupby("symbol", observed=True)["ratio"].last()  # in frame order
    got = clean.X["put_call_ratio_last"].xs(pd.Timestamp(END), level=0)
    assert np.allclose(got.loc[SYMBOLS].to_numpy(), expected.loc[SYMBOLS].to_numpy())

    peek = md.features.Feature("ratio_peek", "put_call_ratio", value=peek_next_ratio,
                               window=None, agg="last")  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = md.features.training_set(SYMBOLS, START, END, [*FEATURES, peek], source=frames)
    report = md.features.audit(ts, source=frames, sample=60)
    _only_failed(report, "look_ahead")
    assert set(report.failures["feature"]) == {"ratio_peek"}


def _masked_value(
    agg: str, n: int | None, vals: np.ndarray, ok: np.ndarray, days: np.ndarray, day: int
) -> float:
    """A cell by CONTRACT §11 over the whole cut, row by row with masks (the reference)."""

    def latest(mask: np.ndarray) -> float:
        picks = np.flatnonzero(mask)
        return float(vals[picks[-1]]) if len(picks) else np.nan

    if not len(vals):
        return 0.0 if agg in ("count", "sum") else np.nan
    if agg == "change":
        assert n is not None
        return latest(ok) - latest(ok & (days <= day - n))
    window = ok if n is None else ok & (days > day - n)
    if agg == "last":
        return latest(window)
    count = int(np.count_nonzero(window))
    if agg == "count":
        return float(count)
    if agg == "sum":
        return float(vals[window].sum()) if count else 0.0
    return float(vals[window].sum()) / count if count else np.nan


def test_a_cells_window_by_bisection_equals_the_masks_bit_for_bit() -> None:
    """look_ahead reads only a window's rows (the cut's public days never fall); each cell
    equals the masks over the whole cut, also with long runs of rows that do not count."""
    from mdframes.features.proof.recompute import _row_value

    rng = np.random.default_rng(7)
    for _ in range(300):
        m = int(rng.integers(0, 400))
        days = np.sort(rng.integers(19_000, 19_400, m))
        vals = rng.normal(size=m) * 10.0 ** rng.integers(-3, 6)
        ok = rng.random(m) < rng.choice([0.02, 0.5, 1.0])
        rows = rng.permutation(m + 5)[:m]  # the cut's rows among a dataset's
        spread = np.full(m + 5, np.nan)
        spread[rows] = vals
        counted = np.zeros(m + 5, dtype=bool)
        counted[rows] = ok
        day = int(days[-1]) if m else 19_000
        for agg, n in [("mean", 7), ("sum", 30), ("count", 1), ("last", None), ("last", 5),
                       ("change", 30), ("mean", None), ("sum", 400)]:  # fmt: skip
            want = _masked_value(agg, n, vals, ok, days, day)
            for got in (
                _row_value(agg, n, vals, ok, days, day),
                _row_value(agg, n, spread, counted, days, day, rows),
            ):
                assert got == want or (np.isnan(got) and np.isnan(want)), (agg, n, m)


def test_positions_counted_per_interval_from_runs_equal_the_gather() -> None:
    """cv_overlap counts a fold's rows per [D, t1] interval run by run when the positions
    increase (a splitter's); any other positions (shuffled, repeated, negative) by a gather."""
    from mdframes.features.proof.folds import _Counts

    rng = np.random.default_rng(3)
    codes = np.repeat(rng.integers(0, 40, 300), rng.integers(1, 30, 300))
    counts = _Counts(codes, 40)
    assert counts.runs is not None
    n = len(codes)
    cases = [
        np.sort(rng.choice(n, n // 2, replace=False)),
        np.sort(rng.integers(0, n, n)),  # repeated positions
        rng.permutation(n)[: n // 3],  # not increasing
        np.array([-3, -2, -1]),  # from the end, as numpy reads them
        np.arange(n),
        np.arange(0),
    ]
    for p in cases:
        assert counts.of(p).tolist() == np.bincount(codes[p], minlength=40).tolist()
    with pytest.raises(IndexError):
        counts.of(np.array([0, n]))


def test_a_frame_in_runs_is_ranked_as_any_frame(frames: dict[str, pd.DataFrame]) -> None:
    """A frame as loaders give it (one run per symbol, in rank order) takes each symbol's
    run as its rows; they equal what the sort of rows in any order gives."""
    from mdframes.features.proof.recompute import AuditInput, _runs

    seen = set()
    for name, frame in frames.items():
        for rows in (frame, frame.sort_values(["symbol", "date"], kind="stable")):
            data = AuditInput(rows, name, ["KO", "AAPL", "NOPE"], row=False)
            _, lengths, run_codes, uniques = _runs(rows["symbol"].iloc[data.mine])
            place = {"KO": 0, "AAPL": 1}
            run_symbol = np.asarray([place[str(u)] for u in uniques], dtype=np.int64)[run_codes]
            ns = data.days * 86_400 * 10**9  # the rank key's order within each day
            fast = data._one_ranked_run_each(["KO", "AAPL", "NOPE"], run_symbol, lengths, ns, None)
            seen.add(fast)
            ranked, rows_of = data.ranked, data.rows_of
            data._by_symbol(["KO", "AAPL", "NOPE"], run_symbol, lengths, ns, None)
            for s in ["KO", "AAPL", "NOPE"]:
                assert ranked[s].tolist() == data.ranked[s].tolist(), (name, s)
                assert rows_of[s].tolist() == data.rows_of[s].tolist(), (name, s)
    assert seen == {True, False}  # both ways taken


@pytest.mark.parametrize("shape", [(500, 1), (500, 8), (500, 9), (300, 17), (200, 70)])
def test_na_patterns_group_rows_by_their_na_columns(shape: tuple[int, int]) -> None:
    from mdframes.features.proof.reports import _na_patterns

    rng = np.random.default_rng(shape[1])
    isna = rng.random(shape) < 0.3
    isna[: len(isna) // 2] = isna[0]  # a common pattern
    pattern, na_of = _na_patterns(isna)
    assert (na_of[pattern] == isna).all()  # each row's pattern has its NA columns
    assert len(np.unique(isna, axis=0)) == len(na_of)  # one code per distinct pattern


def test_day_positions_are_get_indexers() -> None:
    from mdframes.features.proof.leaks import _day_positions

    rng = np.random.default_rng(4)
    days = rng.integers(19_990, 20_120, 2_000)
    for calendar in (
        pd.bdate_range("2024-12-02", periods=60).to_numpy("datetime64[D]").astype(np.int64),
        np.array([20_000]),
        np.array([20_050, 20_010, 20_100]),  # not increasing: pandas' lookup
        np.array([], dtype=np.int64),
    ):
        want = pd.Index(calendar).get_indexer(pd.Index(days))
        assert _day_positions(calendar, days).tolist() == want.tolist()
