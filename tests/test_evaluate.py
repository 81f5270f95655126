"""md.features.evaluate (CONTRACT §16): the per-date rank IC, quantiles and quantile returns
equal alphalens-reloaded's (the engine step, which installs the reference extra); the summary
equals a brute force; decay and revisions equal evaluations of sets built separately from a
lake synced weekly while the sandbox revised its data; the command writes a report."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mdframes as md
from mdframes.features import TrainingSet
from mdframes.sandbox import Sandbox

from .conftest import lake_client

ev_module = importlib.import_module("mdframes.features.proof.evaluate")
SYMBOLS = ["AAPL", "MSFT", "TSLA", "NVDA", "AMZN", "GOOGL", "META", "JPM", "GME", "KO"]
DATASETS = ["sentiment", "put_call_ratio"]
FEATURES = ["sentiment_mean_7d", "sentiment_change_30d", "put_call_ratio_last"]
START, END = "2026-07-06", "2026-08-31"


def synthetic(n: int = 60, m: int = 40, horizon: int = 5, seed: int = 0) -> TrainingSet:
    """A set of ``n`` dates x ``m`` symbols: one feature that predicts y, one with ties and
    holes, one of noise; y missing on the last dates and here and there."""
    rng = np.random.default_rng(seed)
    dates = pd.bdate_range("2026-01-05", periods=n)
    index = pd.MultiIndex.from_product([dates, [f"S{i:02d}" for i in range(m)]],
                                       names=["date", "symbol"])  # fmt: skip
    y = rng.normal(size=n * m) / 100
    good = y * 50 + rng.normal(size=n * m)
    ties = np.round(good * 2 + rng.normal(size=n * m), 1)
    ties[rng.random(n * m) < 0.15] = np.nan
    X = pd.DataFrame({"good": good, "ties": ties, "noise": rng.normal(size=n * m)}, index=index)
    y[rng.random(n * m) < 0.05] = np.nan
    y[-horizon * m :] = np.nan
    t1 = pd.Series(index.get_level_values(0), index=index, name="t1")
    info = {"label": {"horizon": horizon, "lag": 1}, "freq": "B", "source": "frames"}
    return TrainingSet(X, pd.Series(y, index=index, name=f"fwd_return_{horizon}"), t1, info)


@pytest.mark.engines
def test_ic_quantiles_and_returns_equal_alphalens() -> None:
    al = pytest.importorskip(
        "alphalens", reason="alphalens-reloaded comes with the reference extra"
    )
    ts = synthetic()
    ev = md.features.evaluate(ts)
    for name in ts.X.columns:
        factor_data = pd.DataFrame({"1D": ts.y, "factor": ts.X[name]}).dropna()
        factor_data.index = factor_data.index.set_names(["date", "asset"])
        factor_data["factor_quantile"] = al.utils.quantize_factor(factor_data, quantiles=5)
        ic = al.performance.factor_information_coefficient(factor_data)["1D"]
        ours = ev.ic[name].dropna()
        assert len(ours) == len(ic) == 55
        np.testing.assert_allclose(ours.to_numpy(), ic.to_numpy(), rtol=0, atol=1e-9)
        mean, _ = al.performance.mean_return_by_quantile(factor_data, demeaned=True)
        q = ev.quantile_returns[ev.quantile_returns["feature"] == name]
        np.testing.assert_allclose(q["mean_return"], mean["1D"], rtol=0, atol=1e-9)
        sizes = factor_data.groupby("factor_quantile").size()
        assert q["count"].tolist() == sizes.tolist()
        # Row by row, the quantile alphalens assigns.
        f = ev_module._matrix(ts.X[name].where(ts.y.notna()), _grid(ts))
        quant = ev_module._quantile_of(f, ev_module._ranks(f)[1], 5)
        index = ts.X.index.remove_unused_levels()
        at = index.get_indexer(factor_data.index)
        assert quant.ravel()[at].tolist() == factor_data["factor_quantile"].astype(int).tolist()


def _grid(ts: TrainingSet) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    index = ts.X.index.remove_unused_levels()
    return index.codes[0], index.codes[1], (len(index.levels[0]), len(index.levels[1]))


def test_summary_equals_a_brute_force() -> None:
    ts = synthetic()
    before = (ts.X.copy(), ts.y.copy(), ts.t1.copy(), dict(ts.info))
    ev = md.features.evaluate(ts)
    assert ts.X.equals(before[0]) and ts.y.equals(before[1]) and ts.t1.equals(before[2])
    assert ts.info == before[3]
    assert list(ev.summary.columns) == ["feature", "rows", "coverage", "ic_mean", "ic_std",
                                        "ic_ir", "ic_t", "ic_t_nw", "ic_hit", "q_spread",
                                        "turnover", "autocorr"]  # fmt: skip
    labelled = int(ts.y.notna().sum())
    assert ev.summary.attrs["labelled_rows"] == labelled
    for row in ev.summary.itertuples(index=False):
        frame = pd.DataFrame({"f": ts.X[row.feature], "y": ts.y}).dropna()
        assert row.rows == len(frame)
        assert ev.summary.attrs["na_rows"][row.feature] == labelled - len(frame)
        assert row.coverage == pytest.approx(len(frame) / labelled)
        ic = {}
        for date, g in frame.groupby(level="date"):
            ok = len(g) >= 5 and g["f"].nunique() > 1 and g["y"].nunique() > 1
            ic[date] = g["f"].corr(g["y"], method="spearman") if ok else np.nan
        brute = pd.Series(ic).dropna()
        assert ev.summary.attrs["ic_dates"][row.feature] == len(brute)
        assert ev.summary.attrs["dates_without_ic"][row.feature] == 60 - len(brute)
        x, n = brute.to_numpy(), len(brute)
        assert row.ic_mean == pytest.approx(x.mean(), abs=1e-12)
        assert row.ic_std == pytest.approx(x.std(ddof=1), abs=1e-12)
        assert row.ic_ir == pytest.approx(x.mean() / x.std(ddof=1), abs=1e-10)
        assert row.ic_t == pytest.approx(x.mean() / (x.std(ddof=1) / n**0.5), abs=1e-10)
        assert row.ic_t_nw == pytest.approx(x.mean() / _newey_west_se(x, lag=4), abs=1e-10)
        assert row.ic_hit == pytest.approx((x > 0).mean())
        q = ev.quantile_returns[ev.quantile_returns["feature"] == row.feature]
        assert row.q_spread == q["mean_return"].iloc[-1] - q["mean_return"].iloc[0]
        turnover, autocorr = _turnover_autocorr(frame)
        assert row.turnover == pytest.approx(turnover, abs=1e-12)
        assert row.autocorr == pytest.approx(autocorr, abs=1e-12)
    by = ev.summary.set_index("feature")
    assert by.loc["good", "ic_mean"] > 0.3 and abs(by.loc["noise", "ic_mean"]) < 0.1


def _newey_west_se(x: np.ndarray, lag: int) -> float:
    """The standard error of the mean with Bartlett weights, term by term."""
    n, mean = len(x), x.mean()
    var = sum((x[t] - mean) ** 2 for t in range(n)) / n
    for k in range(1, lag + 1):
        gamma = sum((x[t] - mean) * (x[t - k] - mean) for t in range(k, n)) / n
        var += 2 * (1 - k / (lag + 1)) * gamma
    return float(np.sqrt(var / n))


def _turnover_autocorr(frame: pd.DataFrame) -> tuple[float, float]:
    """Per pair of consecutive dates: the share of new names in the top and bottom quantile
    (pandas.qcut), and the correlation of the dates' ranks over the symbols in both."""
    dates = frame.index.get_level_values("date").unique()
    quant, ranks = {}, {}
    for date in dates:
        f = frame.loc[date, "f"]
        quant[date] = pd.qcut(f, 5, labels=False) + 1
        ranks[date] = f.rank()
    shares: dict[int, list[float]] = {1: [], 5: []}
    corr = []
    for before, date in zip(dates[:-1], dates[1:], strict=True):
        for q in (1, 5):
            now = set(quant[date].index[quant[date] == q])
            was = set(quant[before].index[quant[before] == q])
            shares[q].append(len(now - was) / len(now))
        pair = pd.concat([ranks[date], ranks[before]], axis=1, join="inner")
        if len(pair) >= 5:
            corr.append(pair.iloc[:, 0].corr(pair.iloc[:, 1]))
    return (np.mean(shares[5]) + np.mean(shares[1])) / 2, float(np.nanmean(corr))


def test_few_dates_with_an_ic_warn() -> None:
    with pytest.warns(md.DataQualityWarning, match=r"fewer than 20 dates have an IC.*good \(15\)"):
        md.features.evaluate(synthetic(n=20))
    with warnings.catch_warnings():
        warnings.simplefilter("error", md.DataQualityWarning)
        md.features.evaluate(synthetic(n=30))


def test_plots_and_notebook_view() -> None:
    ev = md.features.evaluate(synthetic())
    fig = ev.plot("good")
    assert [t.name for t in fig.data] == ["IC", "21-date mean", "mean return", "IC mean"]
    assert len(ev.plot("good", backend="matplotlib").axes) == 3
    assert "ic_t_nw" in ev._repr_html_() and "good" in ev._repr_html_()
    with pytest.raises(md.InvalidParameterError, match="not an evaluated feature"):
        ev.plot("nope")


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[md.Lake]:
    """Synced weekly from START to END, stamped with the sandbox's day: the sandbox revises
    sentiment scores in place."""
    root = tmp_path_factory.mktemp("evaluate") / "lake"
    with Sandbox(today=START) as world:
        client = lake_client(world)
        lake = md.Lake(root, client=client)
        lake.sync(DATASETS, SYMBOLS, start="2025-05-01", progress=False)
        for _ in range(8):
            world.advance(days=7)
            lake.sync(DATASETS, SYMBOLS, progress=False)
        client.close()
    yield md.Lake(root)


def _set(lake: md.Lake, horizon: int = 5, **options: object) -> TrainingSet:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        label = md.features.forward_return(horizon)
        return md.features.training_set(SYMBOLS, START, END, FEATURES, source=lake, label=label,
                                         **options)  # fmt: skip


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_decay_and_revisions_equal_sets_built_separately(lake: md.Lake) -> None:
    ts = _set(lake, known_at="row")
    ev = md.features.evaluate(ts, horizons=(1, 5, 10), source=lake)
    by = ev.summary.set_index("feature")
    assert list(ev.decay.columns) == [1, 5, 10]
    assert ev.decay[5].to_dict() == by["ic_mean"].to_dict()
    for horizon in (1, 10):  # rebuilt from the set's label definition and the lake's prices
        other = md.features.evaluate(_set(lake, horizon, known_at="row"))
        expected = other.summary.set_index("feature")["ic_mean"]
        np.testing.assert_allclose(ev.decay[horizon], expected[ev.decay.index], atol=1e-12)
    latest = md.features.evaluate(_set(lake)).summary.set_index("feature")["ic_mean"]
    rev = ev.revisions.set_index("feature")
    assert list(ev.revisions.columns) == ["feature", "ic_mean_as_known", "ic_mean_latest",
                                          "ic_inflation"]  # fmt: skip
    np.testing.assert_allclose(rev["ic_mean_as_known"], by["ic_mean"], atol=0)
    np.testing.assert_allclose(rev["ic_mean_latest"], latest[rev.index], atol=1e-12)
    np.testing.assert_allclose(rev["ic_inflation"], latest[rev.index] - by["ic_mean"], atol=1e-12)
    # The sandbox's revisions and the weekly syncs' backfills reach the IC.
    assert (rev["ic_inflation"].abs() > 1e-6).all(), rev
    # Without a lake: no revisions, and decay only at the set's own horizon (its labelled
    # rows alone: the same ICs).
    known = ts.labelled()
    alone = md.features.evaluate(TrainingSet(known.X, known.y, known.t1,
                                             {**ts.info, "source": "service"}))  # fmt: skip
    assert alone.revisions is None
    assert alone.decay[5].to_dict() == pytest.approx(ev.decay[5].to_dict())
    assert alone.decay[1].isna().all()


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_command_writes_a_report(lake: md.Lake, tmp_path: Path) -> None:
    path = _set(lake, known_at="row").to_parquet(tmp_path / "train.parquet")
    out = tmp_path / "report.html"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(
        [sys.executable, "-m", "mdframes", "evaluate", path, "--lake", str(lake.root),
         "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "ic_t_nw" in done.stdout and "ic_inflation" in done.stdout
    assert f"wrote {out}" in done.stdout
    report = out.read_text()
    assert report.count("Plotly.newPlot(") == len(FEATURES)
    assert "<script src=" not in report  # self-contained: plotly.js inline, once
    one = md.features.evaluate(md.features.read_training_set(path)).plot(FEATURES[0])
    assert report.count("plotly.js v") == one.to_html().count("plotly.js v") >= 1
    bad = subprocess.run(
        [sys.executable, "-m", "mdframes", "evaluate", path, "--out", str(tmp_path / "r.txt")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert bad.returncode == 2 and "HTML" in bad.stderr


def test_bad_arguments_fail_before_any_work() -> None:
    ts = synthetic()
    for bad, match in (({"quantiles": 1}, "quantiles"), ({"horizons": (5, 0)}, "horizons"),
                       ({"horizons": "5d"}, "horizons"), ({"source": 3}, "source")):  # fmt: skip
        with pytest.raises(md.InvalidParameterError, match=match):
            md.features.evaluate(ts, **bad)  # type: ignore[arg-type]
    with pytest.raises(md.InvalidParameterError, match="TrainingSet"):
        md.features.evaluate(ts.X)  # type: ignore[arg-type]
    assert list(md.features.evaluate(ts, horizons=5).decay.columns) == [5]
    with pytest.raises(md.InvalidParameterError, match="backend"):
        md.features.evaluate(ts).plot("good", backend="bokeh")
