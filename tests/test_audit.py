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
from typing import Any

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
    # On 3 symbols x 36 labelled dates, sentiment_mean_7d happens to correlate 0.56 with the
    # label (on notebook 06's 6 symbols, -0.07): the proxy check says so, as a warning.
    checks = md.features.audit.__globals__["CHECKS"]
    assert _statuses(report) == {**dict.fromkeys(checks, "pass"), "proxy": "warn"}
    proxy = report.checks.set_index("check").loc["proxy", "detail"]
    corr = clean.X["sentiment_mean_7d"].corr(clean.y)
    assert f"sentiment_mean_7d (mean rank IC n/a, correlation {corr:+.2f})" in proxy
    assert not any(f in proxy for f in FEATURES[1:])
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
    leaky = TrainingSet(X, clean.y, clean.t1, clean.info)
    leaky.info = {**clean.info, "content_hash": leaky.content_hash()}
    leaky.to_parquet(bad)
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


def _peek(column: str) -> md.features.Feature:
    """A planted look-ahead: each row's value is the next record's ``column``."""

    def value(df: pd.DataFrame) -> pd.Series:
        return df.groupby(df["symbol"].astype(str), sort=False)[column].shift(-1)

    dataset = "sentiment" if column == "score" else "put_call_ratio"
    return md.features.Feature(f"peek_{column}", dataset, value=value, window=None, agg="last")


def test_failures_list_every_cell_and_the_detail_every_feature(
    clean: TrainingSet, lake_root: Path
) -> None:
    """CONTRACT §13.1: no cap. Five leaking features, hundreds of failing cells: each is
    listed, and the detail names all five (it named 2 of 5 when 50 cells were listed)."""
    peeks = [_peek(c) for c in ("ratio", "total_volume", "call_volume", "put_volume", "score")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = md.features.training_set(SYMBOLS, START, END, [*FEATURES, *peeks],
                                      source=md.Lake(lake_root), known_at="row")  # fmt: skip
    report = md.features.audit(ts, source=md.Lake(lake_root), sample=120)
    _only_failed(report, "look_ahead")
    counted = report.checks.set_index("check").loc["look_ahead", "rows"]
    listed = report.failures
    assert len(listed) == counted > 50
    assert set(listed["feature"]) == {p.name for p in peeks}
    assert not listed.duplicated(["date", "symbol", "feature"]).any()
    detail = report.checks.set_index("check").loc["look_ahead", "detail"]
    assert all(p.name in detail for p in peeks)
    # Each listed cell is the set's value, and the set's value differs from the expected one.
    for row in listed.head(40).itertuples():
        value = ts.X.loc[(row.date, row.symbol), row.feature]
        assert (pd.isna(value) and np.isnan(row.got)) or value == pytest.approx(row.got)
        assert not np.isnan(row.expected) or not np.isnan(row.got)
        assert row.expected != pytest.approx(row.got)
    assert f"failures ({counted}, the first 10)" in str(report)
    # Every overlapping training row of a shuffled k-fold, one failure each.
    report = md.features.audit(clean, sample=0, cv=KFold(5, shuffle=True, random_state=0))
    rows = report.checks.set_index("check").loc["cv_overlap", "rows"]
    assert len(report.failures) == rows > 50
    assert report.failures["got"].str.startswith("trains on [").all()
    # A copy of the label lists every labelled row it copies.
    X = clean.X.assign(leak=clean.y)
    X.attrs = clean.X.attrs
    report = md.features.audit(TrainingSet(X, clean.y, clean.t1, clean.info), sample=0)
    assert len(report.failures) == int(clean.y.notna().sum()) > 50


def _proxies(ts: TrainingSet, lake_root: Path) -> dict[str, np.ndarray]:
    """The five label proxies a user tried, each passing every check of the audit of
    2026-11-26: made from the set's label and from the lake's prices."""
    y = ts.y
    dates = ts.X.index.get_level_values(0)
    symbols = ts.X.index.get_level_values(1).astype(str)
    prices = md.Lake(lake_root).read("put_call_ratio", SYMBOLS)
    wide = prices.pivot_table(index="date", columns="symbol", values="price")
    wide = wide.reindex(pd.bdate_range(wide.index.min(), wide.index.max())).ffill()
    momentum = (wide.shift(-1) / wide.shift(4) - 1).stack()  # 5 days to D + 1: off by one
    noise = np.random.default_rng(0).normal(scale=0.33 * y.std(), size=len(y))
    return {
        "centred_mean": y.groupby(level=1).transform(
            lambda s: s.rolling(5, center=True, min_periods=1).mean()).to_numpy(),
        "momentum_off_by_one": momentum.reindex(pd.MultiIndex.from_arrays([dates, symbols])
                                                ).to_numpy(),
        "target_encoding": y.groupby([symbols, dates.to_period("M")]).transform("mean"
                                                                              ).to_numpy(),
        "label_plus_noise": (y + noise).to_numpy(),
        "rank_of_y": y.groupby(level=0).rank().to_numpy(),
    }  # fmt: skip


@pytest.mark.parametrize(
    "name",
    ["centred_mean", "momentum_off_by_one", "target_encoding", "label_plus_noise", "rank_of_y"],
)
def test_a_label_proxy_warns(clean: TrainingSet, lake_root: Path, name: str) -> None:
    """CONTRACT §13.1: each proxy passed every check; the proxy check names it, and a warning
    leaves the set ok."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        feature = _proxies(clean, lake_root)[name]
    X = clean.X.assign(**{name: feature})
    X.attrs = clean.X.attrs
    report = md.features.audit(TrainingSet(X, clean.y, clean.t1, clean.info, clean.features),
                               source=md.Lake(lake_root), sample=20)  # fmt: skip
    statuses = _statuses(report)
    assert statuses["proxy"] == "warn" and "fail" not in statuses.values(), report
    assert report.ok and report.failures.empty
    detail = report.checks.set_index("check").loc["proxy", "detail"]
    assert f"{name} (mean rank IC" in detail and "too good to be true" in detail
    corr = pd.Series(feature, index=clean.y.index).corr(clean.y)
    assert 0.5 < abs(corr) < 0.99, corr  # not a copy for label_leak; too close for markets
    assert "proxy       warn" in str(report) and "proxy warn" in repr(report)
    assert "#9a6700" in report._repr_html_()


def test_the_audit_command_prints_a_proxy_warning_and_exits_0(
    clean: TrainingSet, lake_root: Path, tmp_path: Path
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X = clean.X.assign(rank_of_y=_proxies(clean, lake_root)["rank_of_y"])
    X.attrs = clean.X.attrs
    ts = TrainingSet(X, clean.y, clean.t1, clean.info)
    ts.info = {**clean.info, "content_hash": ts.content_hash()}
    path = ts.to_parquet(tmp_path / "proxy.parquet")
    done = subprocess.run([sys.executable, "-m", "mdframes", "audit", path, "--sample", "10"],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("audit: ok")
    assert "proxy       warn" in done.stdout and "rank_of_y (mean rank IC" in done.stdout


def test_the_audit_command_refuses_a_file_whose_recorded_hash_was_edited(
    clean: TrainingSet, tmp_path: Path
) -> None:
    """CONTRACT §13.1: an audit of a file (the command, or of a set read from one) checks its
    content hash against its rows first."""
    edited = TrainingSet(clean.X, clean.y, clean.t1, {**clean.info, "content_hash": "0" * 64})
    path = edited.to_parquet(tmp_path / "edited.parquet")
    done = subprocess.run([sys.executable, "-m", "mdframes", "audit", path],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 1 and not done.stdout
    assert "do not match the content hash it records (000000000000..." in done.stderr
    assert "Traceback" not in done.stderr
    with pytest.raises(md.DataValidationError, match="do not match the content hash"):
        md.features.audit(md.features.read_training_set(path), sample=0)
    # A set made in memory is audited as it is (the tests above plant defects that way).
    assert md.features.audit(edited, sample=0).ok


def test_an_embargo_without_freq_counts_along_the_sets_dates(clean: TrainingSet) -> None:
    """A splitter's freq=None counts its embargo along the set's own dates and t1s (CONTRACT
    §12.2): on a set of every fifth business day, an embargo of 2 is two of those steps.
    The audit judged it in the set's business days, and passed a splitter that trained
    inside it."""
    dates = clean.X.index.get_level_values(0)
    keep = dates.isin(dates.unique()[::5])
    sparse = TrainingSet(clean.X[keep], clean.y[keep], clean.t1[keep], clean.info)
    assert sparse.info["freq"] == "B"
    own = md.features.PurgedKFold(3, embargo=2, t1=sparse.t1)  # freq=None: the set's dates
    assert _statuses(md.features.audit(sparse, sample=0, cv=own))["cv_overlap"] == "pass"

    class DaysEmbargo:
        """Says freq=None, but embargoes two business days."""

        freq, embargo = None, 2

        def split(self, X: Any, y: Any = None, groups: Any = None) -> Any:
            return md.features.PurgedKFold(3, embargo=2, t1=sparse.t1, freq="B").split(X, y)

    report = md.features.audit(sparse, sample=0, cv=DaysEmbargo())
    assert _statuses(report)["cv_overlap"] == "fail", report
    assert "in the embargo" in report.failures.set_index("check").loc["cv_overlap", "got"].iloc[0]


@pytest.fixture(scope="module")
def notebook06(tmp_path_factory: pytest.TempPathFactory) -> TrainingSet:
    """The clean set notebook 06 (06-prove-it.ipynb) builds: six symbols, five weekly syncs."""
    import datetime as dt

    root = tmp_path_factory.mktemp("nb06") / "lake"
    symbols = ["AAPL", "MSFT", "NVDA", "KO", "XOM", "GME"]
    features = ["sentiment_mean_7d", "sentiment_change_30d", "put_call_ratio_last",
                "congress_net_buy_90d", "contracts_award_365d", "news_count_7d"]  # fmt: skip
    datasets = sorted({f.dataset for f in md.features.CATALOG if f.name in features})
    with Sandbox(today="2026-09-07") as world, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = md.Client(api_key=KEY, base_url=world.url, cache=False, progress=False)
        client.sandbox = world
        clock = lambda: dt.datetime.combine(world.today, dt.time(18), dt.timezone.utc)  # noqa: E731
        lake = md.Lake(root, client=client, clock=clock)
        for week in range(5):
            if week:
                world.advance(days=7)
            lake.sync(datasets, symbols, start="2025-06-01", progress=False)
        client.close()
        return md.features.training_set(symbols, "2026-07-01", world.today, features,
                                        source=lake, known_at="row")  # fmt: skip


def test_notebook_06s_clean_set_does_not_warn_and_a_rank_proxy_does(
    notebook06: TrainingSet,
) -> None:
    report = md.features.audit(notebook06, sample=20)
    assert _statuses(report)["proxy"] == "pass" and report.ok, report
    assert "no mean rank IC above 0.3 nor correlation above 0.5" in str(report)
    # The per-date rank of y in units that drift from date to date: its correlation with y
    # is low, its rank IC on each date is 1 (six symbols: the rank rule applies).
    y = notebook06.y
    dates = notebook06.X.index.get_level_values(0)
    drift = pd.Series(np.exp(np.random.default_rng(0).normal(scale=3, size=dates.nunique())),
                      index=dates.unique())  # fmt: skip
    X = notebook06.X.assign(drifting_rank=y.groupby(level=0).rank() * drift.reindex(dates).values)
    X.attrs = notebook06.X.attrs
    report = md.features.audit(TrainingSet(X, y, notebook06.t1, notebook06.info), sample=0)
    assert abs(X["drifting_rank"].corr(y)) < 0.5
    assert "drifting_rank (mean rank IC +1.00" in report.checks.set_index("check").loc[
        "proxy", "detail"]  # fmt: skip


def test_the_rank_ic_is_the_mean_per_date_spearman_of_pandas() -> None:
    """The vectorised rank IC against pandas, date by date: ties (averaged), NA on either
    side (left out pairwise), dates with fewer than 5 pairs or a constant side left out."""
    from mdframes.features.proof.leaks import _RankSample

    rng = np.random.default_rng(1)
    index = pd.MultiIndex.from_product([pd.bdate_range("2026-01-01", periods=30),
                                        [f"S{i}" for i in range(8)]])  # fmt: skip
    y = rng.normal(size=len(index))
    y[:10], y[50:60] = np.nan, 0.0
    X = np.round(rng.normal(size=(len(index), 4)) * 2)  # ties
    X[rng.random(X.shape) < 0.2] = np.nan
    X[:, 2] = y + rng.normal(size=len(index)) * 0.5
    X[16:24, 3] = 1.0  # a constant date
    sample = _RankSample(index, y, ~np.isnan(y))
    for j in range(X.shape[1]):
        sample.add(X[:, j])
    frame = pd.DataFrame(X, index=index).assign(y=y)
    expected = []
    for j in range(X.shape[1]):
        ics = []
        for _, g in frame.groupby(level=0):
            g = g[[j, "y"]].dropna()
            if len(g) >= 5 and g[j].nunique() > 1 and g["y"].nunique() > 1:
                ics.append(g[j].rank().corr(g["y"].rank()))
        expected.append(np.mean(ics))
    assert sample.ics() == pytest.approx(expected, abs=1e-12)
