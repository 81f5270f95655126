"""md.features training sets: labels equal a brute force over the served prices, the splits'
purge and embargo equal a brute force written from CONTRACT §12, and a set survives a file.

The sandbox runs with a fixed clock, so its prices are the same on every run.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import mdframes as md
from mdframes import _memory
from mdframes.features.training.trainset import TrainingSet
from mdframes.sandbox import Sandbox

from .conftest import KEY
from .feature_reference import StandInLake

TODAY = dt.date(2026, 11, 30)  # a Monday
SYMBOLS = ["AAPL", "KO", "GME"]
FEATURES = ["put_call_ratio_last", "sentiment_mean_7d", "news_count_7d"]


@pytest.fixture(scope="module")
def server() -> Iterator[Sandbox]:
    with Sandbox(today=TODAY) as s:
        yield s


def _client(server: Sandbox) -> md.Client:
    return md.Client(api_key=KEY, base_url=server.url, cache=False, progress=False)


@pytest.fixture(scope="module")
def served_prices(server: Sandbox) -> pd.DataFrame:
    """The put/call dataset's whole served history, loaded independently of the label."""
    with _client(server) as client:
        return md.load_put_call_ratio(SYMBOLS, client=client)


# --- labels: a brute force from the served prices ---------------------------------------------


def brute_force_labels(
    prices: pd.DataFrame, symbols: list[str], dates: pd.DatetimeIndex, freq: str, h: int, lag: int
) -> tuple[list[float], list[pd.Timestamp]]:
    """y and t1 row by row from CONTRACT §12, dates outer, symbols inner."""
    data_end = prices["date"].max()
    history = {
        s: [
            (r.date, r.price)
            for r in prices[prices["symbol"] == s].itertuples()
            if r.price == r.price
        ]
        for s in symbols
    }

    def price(symbol: str, day: pd.Timestamp) -> float:
        if day > data_end:  # not in the data yet
            return float("nan")
        seen = [(d, p) for d, p in history[symbol] if d <= day]
        if not seen:
            return float("nan")
        latest, value = max(seen)
        return value if (day - latest).days <= 7 else float("nan")

    ys, t1s = [], []
    for date in dates:
        following = pd.date_range(date, periods=lag + h + 1, freq=freq)  # D, d_1, d_2, ...
        for s in symbols:
            first, last = price(s, following[lag]), price(s, following[lag + h])
            ys.append(last / first - 1 if first > 0 else float("nan"))
            t1s.append(following[lag + h])
    return ys, t1s


@pytest.mark.parametrize(("freq", "horizon", "lag"), [("B", 5, 1), ("D", 3, 0), ("W-FRI", 2, 2)])
def test_labels_equal_a_brute_force_over_the_served_prices(
    server: Sandbox, served_prices: pd.DataFrame, freq: str, horizon: int, lag: int
) -> None:
    label = md.features.forward_return(horizon, lag=lag)
    with _client(server) as client:
        ts = md.features.training_set(
            SYMBOLS, "2026-06-01", TODAY, ["put_call_ratio_last"], label=label, freq=freq,
            client=client,
        )  # fmt: skip
    dates = pd.date_range("2026-06-01", TODAY, freq=freq)
    ys, t1s = brute_force_labels(served_prices, SYMBOLS, dates, freq, horizon, lag)
    np.testing.assert_array_equal(ts.y.to_numpy(), np.array(ys))
    assert ts.t1.tolist() == t1s
    assert ts.y.name == f"fwd_return_{horizon}" and ts.y.dtype == "float64"
    assert ts.t1.dtype == "datetime64[ns]" and ts.t1.dt.tz is None
    assert ts.y.index.equals(ts.X.index) and ts.t1.index.equals(ts.X.index)
    # Real labels, and the rows whose dates are not served yet (after TODAY) are NA.
    assert ts.y.notna().mean() > 0.8
    assert ts.y[ts.t1 > pd.Timestamp(TODAY)].isna().all()
    assert ts.y[ts.t1 <= pd.Timestamp(TODAY)].notna().all()  # weekdays: never a stale price


def _put_call(symbol: str, days: list[str], prices: list[float]) -> pd.DataFrame:
    """A put/call frame as the loader shapes it (only the columns the panel and label read)."""
    return pd.DataFrame(
        {
            "symbol": pd.array([symbol] * len(days), dtype="string"),
            "date": pd.to_datetime(days),
            "ratio": np.linspace(0.5, 1.5, len(days)),
            "price": prices,
        }
    )


def test_a_price_at_most_7_days_old_counts_and_an_older_one_does_not() -> None:
    days = ["2026-03-02", "2026-03-03", "2026-03-13", "2026-03-16", "2026-03-31"]
    frame = _put_call("AAA", days, [100.0, 110.0, 121.0, 121.0, 133.1])
    ts = md.features.training_set(
        "AAA", "2026-03-02", "2026-03-31", ["put_call_ratio_last"],
        label=md.features.forward_return(1, lag=0), freq="D", source={"put_call_ratio": frame},
    )  # fmt: skip
    y = ts.y.droplevel("symbol")
    assert y["2026-03-02"] == pytest.approx(0.1)
    assert y["2026-03-09"] == 0.0  # P(03-10) is the 03-03 price, exactly 7 days old
    assert np.isnan(y["2026-03-10"])  # P(03-11) would be 8 days old
    assert np.isnan(y["2026-03-12"])  # P(03-12) too
    assert y["2026-03-13"] == 0.0  # the weekend keeps the Friday price
    assert y["2026-03-22"] == 0.0 and np.isnan(y["2026-03-23"])  # 03-16's price, 7 then 8 days
    assert np.isnan(y["2026-03-30"])  # P(03-30) is 14 days old
    # 03-31 is the last date of the data: its label needs 04-01, not in the data yet (though
    # the latest price on or before it is one day old).
    assert np.isnan(y["2026-03-31"])
    assert ts.t1.droplevel("symbol")["2026-03-31"] == pd.Timestamp("2026-04-01")


def test_an_unadjusted_split_in_the_default_prices_warns_once_naming_symbol_and_date() -> None:
    days = [d.strftime("%Y-%m-%d") for d in pd.bdate_range("2026-03-02", "2026-03-20")]
    prices = [100.0 + i for i in range(len(days))]
    prices[7:] = [p / 2 for p in prices[7:]]  # a 2:1 split on 2026-03-11
    split = pd.concat([_put_call("AAA", days, prices), _put_call("BBB", days, [50.0] * 15)])
    source = {"put_call_ratio": split}
    with pytest.warns(md.DataQualityWarning) as record:
        ts = md.features.training_set(
            ["AAA", "BBB"], "2026-03-02", "2026-03-13", ["put_call_ratio_last"], source=source
        )
    assert len(record) == 1
    message = str(record[0].message)
    assert "AAA on 2026-03-11" in message and "BBB" not in message
    assert record[0].filename == __file__
    assert ts.y.notna().any()
    # Prices the caller gives are the caller's: no warning.
    label = md.features.forward_return(5, prices=split.drop(columns="ratio"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        md.features.training_set(
            ["AAA", "BBB"], "2026-03-02", "2026-03-13", ["put_call_ratio_last"], source=source,
            label=label,
        )  # fmt: skip


def test_given_prices_long_or_wide_give_the_default_labels(
    server: Sandbox, served_prices: pd.DataFrame
) -> None:
    wide = served_prices.pivot(index="date", columns="symbol", values="price")
    wide.columns = wide.columns.astype(str)
    long = served_prices[["date", "symbol", "price"]]
    with _client(server) as client:
        base = md.features.training_set(
            SYMBOLS, "2026-09-01", TODAY, ["put_call_ratio_last"], client=client
        )
    for frame in (long, wide):
        label = md.features.forward_return(5, prices=frame)
        ts = md.features.training_set(
            SYMBOLS, "2026-09-01", TODAY, ["put_call_ratio_last"], label=label,
            source={"put_call_ratio": served_prices},
        )  # fmt: skip
        pd.testing.assert_series_equal(ts.y, base.y)
        pd.testing.assert_series_equal(ts.t1, base.t1)
        assert ts.info["label"]["prices"] == "given"


def test_given_prices_end_per_symbol_whatever_other_symbols_run_later(
    server: Sandbox, served_prices: pd.DataFrame
) -> None:
    """A wide frame whose benchmark column runs later than the others, AAPL's prices ending
    two weeks before the frame's and GME's one week before: a label whose t1 is after its own
    symbol's last price is NA (its data is not in yet), never a return over a stale price."""
    wide = served_prices.pivot(index="date", columns="symbol", values="price")
    wide.columns = wide.columns.astype(str)
    later = pd.bdate_range(wide.index[-1] + pd.offsets.BDay(1), periods=8)
    wide = wide.reindex(wide.index.append(later))
    wide["SPY"] = np.linspace(400.0, 450.0, len(wide))  # the benchmark, to the frame's end
    ends = {"AAPL": pd.Timestamp("2026-11-13"), "GME": pd.Timestamp("2026-11-20")}
    for symbol, end in ends.items():
        wide.loc[wide.index > end, symbol] = np.nan
    long = wide.stack().rename("price").rename_axis(["date", "symbol"]).reset_index()
    long = long[(long["symbol"] != "SPY") & long["price"].notna()]
    start = "2026-09-01"
    ts = md.features.training_set(
        SYMBOLS, start, TODAY, ["put_call_ratio_last"],
        label=md.features.forward_return(5, prices=wide), source={"put_call_ratio": served_prices},
    )  # fmt: skip
    dates = pd.date_range(start, TODAY, freq="B")
    # The brute force, one symbol at a time: that symbol's prices only, so its data end is
    # its own.
    want = pd.Series(np.nan, index=ts.y.index)
    for symbol in SYMBOLS:
        ys, _ = brute_force_labels(long[long["symbol"] == symbol], [symbol], dates, "B", 5, 1)
        want.loc[(slice(None), symbol)] = ys
    np.testing.assert_array_equal(ts.y.to_numpy(), want.to_numpy())
    t1, y = ts.t1.unstack("symbol"), ts.y.unstack("symbol")
    for symbol, end in ends.items():
        assert (
            y[symbol][t1[symbol] > end].isna().all() and y[symbol][t1[symbol] <= end].notna().all()
        )
    # KO's prices run to TODAY: labels up to it are known, later ones NA (the frame's later
    # days hold only the benchmark).
    assert y["KO"][t1["KO"] <= pd.Timestamp(TODAY)].notna().all()
    assert y["KO"][t1["KO"] > pd.Timestamp(TODAY)].isna().all()
    # Rows whose t1 is within each symbol's data are the labels of the frame without the cut.
    whole = md.features.training_set(
        SYMBOLS, start, TODAY, ["put_call_ratio_last"],
        label=md.features.forward_return(5, prices=served_prices[["date", "symbol", "price"]]),
        source={"put_call_ratio": served_prices},
    )  # fmt: skip
    inside = ts.y.notna()
    pd.testing.assert_series_equal(ts.y[inside], whole.y[inside])
    assert ts.y.isna().sum() > whole.y.isna().sum()


# --- arguments --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: md.features.forward_return(0), "horizon=0"),
        (lambda: md.features.forward_return(2.5), "horizon=2.5"),
        (lambda: md.features.forward_return(True), "horizon=True"),
        (lambda: md.features.forward_return(5, lag=-1), "lag=-1"),
        (lambda: md.features.forward_return(5, prices=[1, 2]), "prices must be a DataFrame"),
        (lambda: md.features.forward_return(5, prices=pd.DataFrame({"a": [1]})), "long frame"),
    ],
)
def test_bad_labels_are_refused(make: Any, match: str) -> None:
    with pytest.raises(md.InvalidParameterError, match=match):
        make()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"label": "fwd_return_5"}, "label must be"),
        ({"errors": "ignore"}, "errors='ignore'"),
        ({"features": [md.features.Feature("fwd_return_5", "news")]}, "named 'fwd_return_5'"),
        ({"features": ["news_count_7"]}, "did you mean"),
        ({"start": "2026-05-01", "end": "2026-04-01"}, "after end"),
    ],
)
def test_bad_training_set_input_is_refused_before_any_request(
    server: Sandbox, kwargs: dict, match: str
) -> None:
    args = {"symbols": ["AAPL"], "start": "2026-04-01", "end": "2026-04-30", **kwargs}
    before = server.count()
    with _client(server) as client, pytest.raises(md.InvalidParameterError, match=match):
        md.features.training_set(**args, client=client)
    assert server.count() == before


def test_frames_without_prices_are_refused_before_the_panel() -> None:
    news = pd.DataFrame({"symbol": pd.array([], dtype="string"), "date": pd.to_datetime([])})
    with pytest.raises(md.InvalidParameterError, match="no 'put_call_ratio' frame"):
        md.features.training_set("AAPL", "2026-04-01", "2026-04-30", ["news_count_7d"],
                                 source={"news": news})  # fmt: skip


# --- files, models, lakes, the command line ---------------------------------------------------


@pytest.fixture(scope="module")
def served_set(server: Sandbox) -> TrainingSet:
    with _client(server) as client:
        return md.features.training_set(SYMBOLS, "2026-01-05", TODAY, FEATURES, client=client)


def test_a_training_set_survives_its_file(served_set: TrainingSet, tmp_path: Path) -> None:
    ts = served_set
    ts.X.attrs["when"] = {"first": pd.Timestamp("2026-01-05"), "day": dt.date(2026, 1, 5)}
    path = ts.to_parquet(tmp_path / "train.parquet")
    back = md.features.read_training_set(path)
    pd.testing.assert_frame_equal(back.X, ts.X)
    pd.testing.assert_series_equal(back.y, ts.y)
    pd.testing.assert_series_equal(back.t1, ts.t1)
    assert back.info == ts.info
    assert back.X.dtypes.equals(ts.X.dtypes) and back.X.index.dtypes.equals(ts.X.index.dtypes)
    assert back.X.attrs == ts.X.attrs
    assert str(back.X["news_count_7d"].dtype) == "Int64"
    del ts.X.attrs["when"]
    plain = ts.X.copy()
    plain.attrs = {}
    plain.to_parquet(tmp_path / "x.parquet")
    with pytest.raises(md.InvalidParameterError, match="not a training set"):
        md.features.read_training_set(tmp_path / "x.parquet")


def test_info_says_how_the_set_was_made(served_set: TrainingSet) -> None:
    info = served_set.info
    assert info["symbols"] == SYMBOLS and info["start"] == "2026-01-05"
    assert info["end"] == TODAY.isoformat() and info["freq"] == "B"
    assert list(info["features"]) == FEATURES
    assert info["features"]["news_count_7d"] == {
        "dataset": "news", "value": None, "window": "7D", "agg": "count", "where": None,
        "sign": None, "dtype": "Int64", "description": "Count of per-symbol news articles.",
    }  # fmt: skip
    assert info["label"] == {
        "name": "fwd_return_5", "kind": "forward_return", "horizon": 5, "lag": 1,
        "max_price_age_days": 7, "prices": "put_call_ratio.price",
    }  # fmt: skip
    assert info["source"] == "service" and info["versions"] == {} and info["known_at"] is None
    assert info["errors"] == "raise"
    assert info["content_hash"] == served_set.content_hash() == canonical_hash(served_set)
    assert info["mdframes"] == md.__version__
    created = pd.Timestamp(info["created_at"])
    assert created.tz is not None and abs(pd.Timestamp.now(tz="UTC") - created).days < 1


def test_scikit_learn_takes_the_splits_as_cv(served_set: TrainingSet) -> None:
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.model_selection import cross_val_score
    from threadpoolctl import threadpool_limits

    ts = served_set
    assert ts.y.isna().any()  # the last week's labels are not known: in no fold
    for method, kw in [("walk_forward", {}), ("kfold", {}), ("combinatorial", {"n_splits": 4})]:
        cv = ts.splits(method, embargo=5, **kw)
        model = HistGradientBoostingRegressor(max_iter=20, random_state=0)
        # One OpenMP thread: on a busy machine spinning threads cost seconds per fit.
        with threadpool_limits(1):
            scores = cross_val_score(model, ts.X, ts.y, cv=cv)
        assert len(scores) == len(cv) and np.isfinite(scores).all()


def test_a_lake_gives_the_services_set_and_labels_ignore_known_at(tmp_path: Path) -> None:
    """Synced on three sandbox days; the features as known on the first day, the labels from
    the latest prices (the later syncs brought the prices the last labels need)."""
    with Sandbox(today=TODAY) as server, _client(server) as client:
        clock = lambda: dt.datetime.combine(server.today, dt.time(21), dt.timezone.utc)  # noqa: E731
        lake = md.Lake(tmp_path / "lake", client=client, clock=clock)
        for step in range(3):
            if step:
                server.advance(days=1)
            lake.sync(["put_call_ratio", "sentiment"], SYMBOLS[:2], start="2026-06-01",
                      progress=False)  # fmt: skip
        args = (SYMBOLS[:2], "2026-09-01", "2026-12-02", ["put_call_ratio_last"])
        from_lake = md.features.training_set(*args, source=lake)
        from_service = md.features.training_set(*args, client=client)
        first_sync = pd.Timestamp("2026-11-30 23:00", tz="UTC")
        first_day = md.features.training_set(*args, source=lake, known_at=first_sync)
        # A symbol never synced fails in the panel: skipped, its labels are NA and the
        # others' are the whole set's; with errors="raise" the panel's error is raised.
        never = ([*SYMBOLS[:2], "NEVER"], *args[1:])
        with pytest.warns(md.SkippedSymbolsWarning, match="NEVER"):
            skipped = md.features.training_set(*never, source=lake, errors="skip")
        with pytest.raises(md.NotInLakeError, match="NEVER"):
            md.features.training_set(*never, source=lake)
    assert list(skipped.X.attrs["failed"]) == ["NEVER"]
    assert skipped.y.xs("NEVER", level="symbol").isna().all()
    for symbol in SYMBOLS[:2]:
        pd.testing.assert_series_equal(
            skipped.y.xs(symbol, level="symbol"), from_lake.y.xs(symbol, level="symbol")
        )
    pd.testing.assert_frame_equal(from_lake.X, from_service.X)
    pd.testing.assert_series_equal(from_lake.y, from_service.y)
    pd.testing.assert_series_equal(from_lake.t1, from_service.t1)
    assert from_lake.info["source"] == str(tmp_path / "lake")
    # Each dataset's Delta table version, as deltalake reads it.
    from deltalake import DeltaTable

    version = DeltaTable(lake.path("put_call_ratio")).version()
    assert from_lake.info["versions"] == {"put_call_ratio": version} and version >= 2
    # Known on the first day: the features stop there (no sync by then reached a later
    # day: NA, CONTRACT §11.1's coverage as known at known_at), the labels do not.
    assert first_day.X.loc["2026-12-01":, "put_call_ratio_last"].isna().all()
    pd.testing.assert_frame_equal(
        first_day.X.loc[:"2026-11-30"], from_lake.X.loc[:"2026-11-30"], check_freq=False
    )
    pd.testing.assert_series_equal(first_day.y, from_lake.y)
    assert from_lake.y.loc["2026-11-24"].notna().all()  # its label needs 2026-12-02's price
    assert first_day.info["known_at"] == "2026-11-30T23:00:00+00:00"


def test_known_at_row_limits_the_features_and_never_the_labels(
    served_prices: pd.DataFrame,
) -> None:
    """Prices and ratios known on their day, then revised 20 days later (planted versions):
    with known_at="row" the features of a row never see a later revision, while the labels
    use the revised (latest) prices everywhere."""
    first = served_prices.assign(
        _fetched_at=(served_prices["date"] + pd.Timedelta(hours=18)).dt.tz_localize("UTC")
    )
    revised = first[first["date"].between("2026-09-01", "2026-09-30")].assign(
        ratio=lambda df: df["ratio"] * 2,
        price=lambda df: df["price"] * 1.1,
        _fetched_at=lambda df: df["_fetched_at"] + pd.Timedelta(days=20),
    )
    lake = StandInLake(
        {"put_call_ratio": pd.concat([first, revised], ignore_index=True)},
        {"put_call_ratio": ["symbol", "date"]},
    )
    lake.root = "s3://AKIAEXAMPLE:SECRETEXAMPLE@bucket/lake?secret_key=SECRETEXAMPLE"
    args = (SYMBOLS, "2026-08-03", "2026-10-30", ["put_call_ratio_last"])
    by_row = md.features.training_set(*args, source=lake, known_at="row")
    assert by_row.info["source"] == "s3://***@bucket/lake?secret_key=***"  # no credential
    latest = md.features.training_set(*args, source=lake)
    pd.testing.assert_frame_equal(
        by_row.X, md.features.panel(*args, source=lake, known_at="row"), check_like=True
    )
    september = by_row.X.loc["2026-09-01":"2026-09-30", "put_call_ratio_last"]
    assert (september * 2).equals(latest.X.loc["2026-09-01":"2026-09-30", "put_call_ratio_last"])
    # The labels are the latest prices' labels, revised ones included.
    pd.testing.assert_series_equal(by_row.y, latest.y)
    label = md.features.forward_return(5, prices=lake.read("put_call_ratio"))
    given = md.features.training_set(*args, source=lake, label=label)
    pd.testing.assert_series_equal(by_row.y, given.y)
    assert by_row.info["known_at"] == "row"


def test_errors_skip_keeps_an_unknown_symbol_with_na_features_and_labels(server: Sandbox) -> None:
    symbols = ["AAPL", "ZZZZQ", "KO"]
    with _client(server) as client:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ts = md.features.training_set(
                symbols, "2026-04-01", "2026-04-30", ["put_call_ratio_last"], errors="skip",
                client=client,
            )  # fmt: skip
        with pytest.raises(md.NotFoundError, match="ZZZZQ"):
            md.features.training_set(
                symbols, "2026-04-01", "2026-04-30", ["put_call_ratio_last"], client=client
            )
    skipped = [w for w in caught if issubclass(w.category, md.SkippedSymbolsWarning)]
    assert len(skipped) == 1 and "ZZZZQ" in str(skipped[0].message)
    assert list(ts.X.attrs["failed"]) == ["ZZZZQ"]
    assert ts.y.xs("ZZZZQ", level="symbol").isna().all()
    assert ts.y.xs("AAPL", level="symbol").notna().all()
    assert list(ts.X.index.get_level_values("symbol")[:3]) == symbols


def test_an_executor_gives_the_serial_training_set(served_prices: pd.DataFrame) -> None:
    from concurrent.futures import ProcessPoolExecutor

    source = {"put_call_ratio": served_prices}
    args = (SYMBOLS, "2026-03-02", "2026-10-30", ["put_call_ratio_last", "put_call_ratio_mean_20d"])
    serial = md.features.training_set(*args, source=source)
    with ProcessPoolExecutor(2) as pool:
        parallel = md.features.training_set(*args, source=source, executor=pool)
    pd.testing.assert_frame_equal(parallel.X, serial.X)
    pd.testing.assert_series_equal(parallel.y, serial.y)
    pd.testing.assert_series_equal(parallel.t1, serial.t1)


def _cli_env(server: Sandbox, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MDFRAMES_BASE_URL": server.url,
        "MDFRAMES_API_KEY": KEY,
        "MDFRAMES_CACHE": str(tmp_path / "cache.sqlite"),
    }


def test_cli_writes_a_training_set(server: Sandbox, tmp_path: Path) -> None:
    out = tmp_path / "train.parquet"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mdframes",
            "training-set",
            "AAPL,KO",
            "GME",
            "--start",
            "2026-04-01",
            "--end",
            "2026-05-29",
            "--features",
            "put_call_ratio_last,news_count_7d",
            "--label",
            "fwd_return_3",
            "--out",
            str(out),
        ],  # fmt: skip
        env=_cli_env(server, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "with a label" in run.stdout
    got = md.features.read_training_set(out)
    with _client(server) as client:
        want = md.features.training_set(
            SYMBOLS[:2] + ["GME"], "2026-04-01", "2026-05-29",
            ["put_call_ratio_last", "news_count_7d"],
            label=md.features.forward_return(3), client=client,
        )  # fmt: skip
    pd.testing.assert_frame_equal(got.X, want.X)
    pd.testing.assert_series_equal(got.y, want.y)
    pd.testing.assert_series_equal(got.t1, want.t1)
    assert {k: v for k, v in got.info.items() if k != "created_at"} == {
        k: v for k, v in want.info.items() if k != "created_at"
    }


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--label", "fwd_ret_5", "--out", "t.parquet"], "is not a label"),
        (["--out", "t.csv"], "written as Parquet"),
        (["--known-at", "row", "--out", "t.parquet"], "--known-at needs --lake"),
        (["--features", "news_count_7", "--out", "t.parquet"], "did you mean"),
    ],
)
def test_cli_refuses_bad_input_with_exit_2(
    server: Sandbox, tmp_path: Path, extra: list[str], match: str
) -> None:
    before = server.count()
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mdframes",
            "training-set",
            "AAPL",
            "--start",
            "2026-04-01",
            "--end",
            "2026-04-30",
            *extra,
        ],  # fmt: skip
        env=_cli_env(server, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert run.returncode == 2, run.stderr
    assert match in run.stderr and "Traceback" not in run.stderr
    assert server.count() == before


# --- the canonical content hash, written again from the docs ----------------------------------


def canonical_hash(ts: TrainingSet) -> str:
    """SHA-256 of X, y and t1 in the canonical form as docs/training.md writes it down,
    in plain Python (struct, no numpy buffers)."""
    import hashlib
    import struct

    digest = hashlib.sha256(b"mdframes.training_set.content/1\n")

    def integer(n: int) -> None:
        digest.update(struct.pack("<q", n))

    def text(s: str) -> None:
        raw = s.encode("utf-8")
        integer(len(raw))
        digest.update(raw)

    def column(name: Any, values: list[Any], dtype: Any) -> None:
        text("" if name is None else str(name))
        is_text = pd.api.types.is_string_dtype(dtype) or pd.api.types.is_object_dtype(dtype)
        if pd.api.types.is_datetime64_any_dtype(dtype):
            kind = "datetime64[ns, UTC]" if getattr(dtype, "tz", None) else "datetime64[ns]"
        else:
            kind = "text" if is_text else str(dtype)
        text(kind)
        missing = [v is None or v is pd.NA or v is pd.NaT or v != v for v in values]
        bits = bytearray((len(values) + 7) // 8)
        for i, m in enumerate(missing):
            if m:
                bits[i // 8] |= 0x80 >> (i % 8)  # numpy.packbits: the first row is the high bit
        digest.update(bytes(bits))
        if kind == "text":
            distinct = sorted({v for v, m in zip(values, missing, strict=True) if not m})
            integer(len(distinct))
            for s in distinct:
                text(s)
            for v, m in zip(values, missing, strict=True):
                integer(-1 if m else distinct.index(v))
        elif kind.startswith("datetime64[ns"):  # an aware time's value is UTC's
            for v, m in zip(values, missing, strict=True):
                integer(0 if m else pd.Timestamp(v).as_unit("ns").value)
        elif kind == "float64":
            for v, m in zip(values, missing, strict=True):
                digest.update(struct.pack("<d", 0.0 if m else float(v)))
        elif kind == "Int64":
            for v, m in zip(values, missing, strict=True):
                integer(0 if m else int(v))
        else:
            raise AssertionError(f"no canonical form written here for {kind}")

    index = ts.X.index
    integer(len(ts.X))
    integer(index.nlevels)
    for i in range(index.nlevels):
        level = index.get_level_values(i)
        column(level.name, list(level), level.dtype)
    integer(ts.X.shape[1])
    for name in ts.X.columns:
        column(name, list(ts.X[name]), ts.X[name].dtype)
    column(ts.y.name, list(ts.y), ts.y.dtype)
    column(ts.t1.name, list(ts.t1), ts.t1.dtype)
    return digest.hexdigest()


def test_the_content_hash_is_the_documented_canonical_form(
    served_set: TrainingSet, tmp_path: Path
) -> None:
    ts = served_set
    assert ts.X["news_count_7d"].dtype == "Int64" and ts.y.isna().any()
    holes = ts.X.copy()
    holes.iloc[3, 2], holes.iloc[4, 0] = pd.NA, np.nan  # missing Int64 and float64 values
    with_holes = TrainingSet(holes, ts.y, ts.t1, ts.info)
    assert with_holes.content_hash() == canonical_hash(with_holes) != ts.content_hash()
    back = md.features.read_training_set(ts.to_parquet(tmp_path / "t.parquet"))
    assert back.content_hash() == ts.info["content_hash"]
    # In another process, from the file: the same hash.
    code = (
        "import sys, mdframes as md; "
        "print(md.features.read_training_set(sys.argv[1]).content_hash())"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "t.parquet")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.stdout.strip() == ts.info["content_hash"], run.stderr
    # The text flavour of the symbols (pandas' str or string) is not content.
    plain = ts.X.copy()
    plain.index = plain.index.set_levels(plain.index.levels[1].astype(object), level=1)
    same = TrainingSet(plain, ts.y.set_axis(plain.index), ts.t1.set_axis(plain.index), ts.info)
    assert same.content_hash() == ts.content_hash()
    # Any change of a value, an NA, the order or a name is a different set.
    y = ts.y.copy()
    y.iloc[5] += 1e-12
    changed = [
        TrainingSet(ts.X, y, ts.t1, ts.info),
        TrainingSet(ts.X.iloc[::-1], ts.y.iloc[::-1], ts.t1.iloc[::-1], ts.info),
        TrainingSet(ts.X.rename(columns={"news_count_7d": "n"}), ts.y, ts.t1, ts.info),
        TrainingSet(ts.X, ts.y.rename("fwd_return_6"), ts.t1, ts.info),
        TrainingSet(ts.X.astype({"news_count_7d": "float64"}), ts.y, ts.t1, ts.info),
    ]
    hashes = {c.content_hash() for c in changed}
    assert len(hashes) == len(changed) and ts.content_hash() not in hashes
    assert ts.labelled().info is ts.info  # the whole set's hash, not the labelled rows'


def test_the_hash_of_an_index_with_unused_reordered_and_missing_entries_is_canonical() -> None:
    """The index is hashed from its levels and codes: a level's unused entries, its order,
    a row without a date or a symbol (code -1) and an aware date level give the canonical
    bytes of the rows' own values."""
    dates = pd.date_range("2026-01-05", periods=4, tz="America/New_York")
    index = pd.MultiIndex(
        levels=[dates[::-1], pd.Index(["MSFT", "AAPL", "KO"], dtype="string")],
        codes=[[3, 3, 1, -1, 0, 1], [1, 2, -1, 0, 2, 1]],
        names=["date", "symbol"],
    )
    X = pd.DataFrame(
        {"a": [1.5, np.nan, -0.0, 2.0, np.nan, 3.0],
         "n": pd.array([1, None, 3, 0, 5, None], dtype="Int64")}, index=index,
    )  # fmt: skip
    X.attrs = {"coverage": {"news": "partial"}}
    y = pd.Series([0.1, np.nan, 0.2, 0.3, np.nan, 0.0], index=index, name="fwd_return_1")
    t1 = pd.Series(pd.to_datetime(["2026-01-13"] * 3 + [None] + ["2026-01-14"] * 2), index=index,
                   name="t1")  # fmt: skip
    ts = TrainingSet(X, y, t1, {})
    assert ts.content_hash() == canonical_hash(ts)
    naive = X.set_axis(index.set_levels(dates[::-1].tz_convert("UTC").tz_localize(None), level=0))
    assert TrainingSet(naive, y.set_axis(naive.index), t1.set_axis(naive.index), {}).content_hash(
    ) != ts.content_hash()  # fmt: skip


@pytest.mark.parametrize("piece", [None, 4])
def test_the_bytes_written_here_and_hashed_in_a_thread_give_the_content_hash(
    piece: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A training set writes the canonical bytes from its own thread and hashes them in
    another (small ones handed over together): the same hash as hashing them at once, and a
    closed hasher frees its thread, abandoned or not. Gathers and zeroed values are made a
    piece at a time (``piece``: 4 values, so that every column spans several)."""
    from concurrent.futures import ThreadPoolExecutor

    from mdframes.features.training.trainfile import (
        Hasher,
        content_hash,
        write_features,
        write_labels,
    )

    if piece is not None:
        monkeypatch.setattr(_memory, "PIECE", piece)

    index = pd.MultiIndex(
        levels=[pd.date_range("2026-01-05", periods=3), pd.Index(["KO", "AAPL"], dtype="string")],
        codes=[[0, 0, 1, 1, 2, -1], [0, 1, 0, 1, 1, 0]],
        names=["date", "symbol"],
    )
    X = pd.DataFrame(
        {"a": [1.5, np.nan, -0.0, 2.0, np.nan, 3.0],
         "n": pd.array([1, None, 3, 0, 5, None], dtype="Int64"),
         "s": pd.array(["x", None, "é", "x", "b" * 5000, "a"], dtype="string")}, index=index,
    )  # fmt: skip
    y = pd.Series([0.1, np.nan, 0.2, 0.3, np.nan, 0.0], index=index, name="fwd_return_1")
    t1 = pd.Series(pd.to_datetime(["2026-01-13"] * 5 + [None]), index=index, name="t1")
    expected = canonical_hash(TrainingSet(X, y, t1, {}))
    assert content_hash(X, y, t1) == expected
    with ThreadPoolExecutor(1) as pool:
        hasher = Hasher(pool)
        missing = write_features(hasher, X)
        write_labels(hasher, y, t1)
        assert hasher.hexdigest() == expected
        assert sorted(missing) == ["a", "n", "s"] and missing["n"].tolist() == [0, 1, 0, 0, 0, 1]
        abandoned = Hasher(pool)
        write_features(abandoned, X)
        abandoned.close(abandon=True)
        assert pool.submit(lambda: "free").result(timeout=60) == "free"


def test_a_set_whose_labels_fail_while_its_rows_are_hashed_raises_and_frees_the_thread() -> None:
    """The label's prices fail after X's bytes went to the hashing thread: the error comes
    back (no hang waiting for that thread) and the next set is made as usual."""
    import threading

    days = [f"{d:%Y-%m-%d}" for d in pd.bdate_range("2026-03-02", "2026-03-31")]
    bad = _put_call("AAA", days, [100.0] * len(days)).astype({"price": object})
    bad.loc[3, "price"] = "n/a"
    outcome: list[BaseException | TrainingSet] = []

    def make(frame: pd.DataFrame) -> None:
        try:
            outcome.append(
                md.features.training_set(
                    ["AAA"],
                    "2026-03-02",
                    "2026-03-31",
                    ["put_call_ratio_mean_20d"],
                    source={"put_call_ratio": frame},
                )  # fmt: skip
            )
        except BaseException as exc:
            outcome.append(exc)

    for frame in (bad, _put_call("AAA", days, [100.0] * len(days))):
        worker = threading.Thread(target=make, args=(frame,), daemon=True)
        worker.start()
        worker.join(timeout=60)
        assert not worker.is_alive(), "training_set hung after its labels failed"
    assert isinstance(outcome[0], md.InvalidParameterError), outcome[0]
    assert "cannot be read" in str(outcome[0])
    assert isinstance(outcome[1], TrainingSet) and outcome[1].info["content_hash"]


def test_a_feature_na_on_most_labelled_rows_warns_once() -> None:
    days = pd.bdate_range("2026-01-01", "2026-06-30")
    prices = pd.concat(
        [_put_call(s, [f"{d:%Y-%m-%d}" for d in days], list(np.linspace(10, 12, len(days))))
         for s in ["AAPL", "KO"]],
        ignore_index=True,
    )  # fmt: skip
    late = pd.DataFrame(  # news on three days only: its 7-day mean is NA almost everywhere
        {
            "symbol": pd.array(["AAPL", "KO"] * 3, dtype="string"),
            "date": pd.to_datetime(["2026-06-10"] * 2 + ["2026-06-11"] * 2 + ["2026-06-12"] * 2),
            "sentiment": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        }
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ts = md.features.training_set(
            ["AAPL", "KO"], "2026-01-05", "2026-06-30",
            ["put_call_ratio_last", "news_sentiment_mean_7d", "news_count_7d"],
            source={"put_call_ratio": prices, "news": late},
        )  # fmt: skip
    mostly = [w for w in caught if "more than 90%" in str(w.message)]
    assert len(mostly) == 1 and mostly[0].filename == __file__
    text = str(mostly[0].message)
    assert re.search(r"news_sentiment_mean_7d \(9\d%\)", text)  # not all: 90-99 %
    assert "news_count_7d" not in text and "put_call_ratio_last" not in text
    assert ts.info["errors"] == "raise"
    # The share is of the labelled rows: with prices up to June 12 no row with news has a
    # label, though news has values on 6 % of all rows.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        early = md.features.training_set(
            ["AAPL", "KO"], "2026-01-05", "2026-06-30", ["news_sentiment_mean_7d"],
            source={"put_call_ratio": prices[prices["date"] <= "2026-06-12"], "news": late},
        )  # fmt: skip
    assert early.X["news_sentiment_mean_7d"].notna().any()
    assert re.search(r"news_sentiment_mean_7d \(100%\)", str(caught[-1].message))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"freq": None}, "freq=None is not a pandas frequency"),
        ({"freq": 5}, "freq=5 is not a pandas frequency"),
        ({"label": "L62"}, "lag \\+ horizon = 4611686018427387905 periods of B .* past what"),
        ({"label": "H63"}, "horizon=9223372036854775808 is larger than numpy's int64"),
        ({"label": "LAG63"}, "lag=9223372036854775808 is larger than numpy's int64"),
    ],
)
def test_arguments_beyond_what_pandas_holds_are_refused(kwargs: dict, match: str) -> None:
    """InvalidParameterError before any work, never AttributeError or OverflowError."""
    frames = {"put_call_ratio": _put_call("AAPL", ["2026-04-01"], [10.0])}
    args = ("AAPL", "2026-04-01", "2026-04-30", ["put_call_ratio_last"])
    labels = {
        "L62": lambda: md.features.forward_return(2**62),
        "H63": lambda: md.features.forward_return(2**63),
        "LAG63": lambda: md.features.forward_return(5, lag=2**63),
    }
    with pytest.raises(md.InvalidParameterError, match=match):
        if "label" in kwargs:
            kwargs = {"label": labels[kwargs["label"]]()}
        md.features.training_set(*args, source=frames, **kwargs)
    if "freq" in kwargs:
        with pytest.raises(md.InvalidParameterError, match=match):
            md.features.panel(*args, source=frames, **kwargs)


@pytest.mark.parametrize("piece", [None, 3])
def test_long_prices_in_order_or_not_keep_the_last_given_of_each_day(
    piece: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A price frame by symbol and date (the loaders') is taken in its order; any other
    order is sorted; either way one row per symbol and day, the last given of a day. Its
    order is checked a piece of rows at a time (``piece``: 3 rows, a repeat across two)."""
    from mdframes.features.training.labels import long_prices

    if piece is not None:
        monkeypatch.setattr(_memory, "PIECE", piece)

    rng = np.random.default_rng(5)
    days = pd.bdate_range("2026-01-05", periods=40)
    frame = pd.DataFrame(
        {
            "date": np.tile(days, 3),
            "symbol": np.repeat([" aapl", "KO", "MSFT"], len(days)),
            "price": rng.normal(100, 5, 3 * len(days)),
        }
    )
    frame.loc[7, "price"] = np.nan  # dropped
    again = frame.iloc[[3, 50, 90]].assign(price=[-1.0, -2.0, -3.0])  # the last given of a day
    ordered = pd.concat([frame.iloc[:4], again.iloc[[0]], frame.iloc[4:51], again.iloc[[1]],
                         frame.iloc[51:91], again.iloc[[2]], frame.iloc[91:]])  # fmt: skip
    shuffled = pd.concat([frame, again]).iloc[rng.permutation(len(frame) + 3)]
    shuffled = pd.concat([shuffled[~shuffled["price"].lt(0)], again])  # the repeats still last
    # Runs of Arrow text: one with no symbol (its rows dropped) and a symbol's rows in two
    # runs written two ways (one symbol, one category).
    runs = pd.concat([frame, frame.iloc[:5].assign(symbol=None, price=1.0),
                      frame.iloc[40:45].assign(symbol="AAPL", date=days[-5:] + pd.Timedelta(days=7))],
                     ignore_index=True)  # fmt: skip
    runs["symbol"] = runs["symbol"].astype("string[pyarrow]")
    for given in (ordered, shuffled, runs):
        got = long_prices(given)
        want = (
            given.dropna(subset=["price"])
            .assign(symbol=lambda f: f["symbol"].str.strip().str.upper())
            .groupby(["symbol", "date"])["price"]
            .last()
        )
        day = (want.index.get_level_values(1) - pd.Timestamp("1970-01-01")).days
        keys = zip(want.index.get_level_values(0), day, strict=True)
        want_rows = dict(zip(keys, want, strict=True))
        keys = zip(got["symbol"].astype(str), got["day"], strict=True)
        got_rows = dict(zip(keys, got["price"], strict=True))
        assert got_rows == want_rows and len(got) == len(want)
        key = got["symbol"].cat.codes.to_numpy().astype(np.int64) * 100_000 + got["day"].to_numpy()
        assert (np.diff(key) > 0).all()  # by symbol, then day
        assert sorted(got["symbol"].cat.categories) == ["AAPL", "KO", "MSFT"]
    assert set(long_prices(ordered)["price"]) >= {-1.0, -2.0, -3.0}


def test_the_synced_ranges_of_every_symbol_are_found_in_one_search() -> None:
    """A label's price counts only where one synced range of its symbol holds the day and
    the price's day: the ranges of all symbols searched at once give what a search per
    symbol gives (no range, some, none synced at all, every day)."""
    from mdframes.features.training import labels

    rng = np.random.default_rng(11)
    days = np.arange(19_000, 19_120, dtype=np.int64)
    found_day = days[:, None] - rng.integers(0, 9, (len(days), 6))

    def ranges(k: int) -> tuple[np.ndarray, np.ndarray]:
        edges = np.sort(rng.choice(np.arange(18_990, 19_130), 2 * k, replace=False))
        return edges[::2], edges[1::2]

    def open_start(k: int) -> tuple[np.ndarray, np.ndarray]:
        # Synced from the history's start: coverage's open first day, far before any date.
        starts, ends = ranges(k)
        starts[0] = -(2**40)
        return starts, ends

    empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    for spans in (
        [None, ranges(3), empty, ranges(1), None, ranges(6)],
        [empty, None] * 3,
        [open_start(1), open_start(2), ranges(2), open_start(3), empty, open_start(1)],
    ):
        ok = rng.random((len(days), 6)) < 0.8
        want = ok.copy()
        for j, synced in enumerate(spans):  # one search per symbol
            if synced is None:
                continue
            starts, ends = synced
            k = np.searchsorted(starts, days, side="right") - 1
            at = np.maximum(k, 0)
            hit = (
                (k >= 0) & (days <= ends[at]) & (found_day[:, j] >= starts[at])
                if len(starts)
                else False
            )
            want[:, j] &= hit
        labels._within_spans(ok, found_day, days, spans)
        np.testing.assert_array_equal(ok, want)
        assert want.any() and not want.all()


def test_prices_looked_up_by_table_and_by_search_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """A label's prices come from a (symbol, day) count table, or from binary searches
    where that table would dwarf the lookups: the same rows, also for prices before and
    after the days asked and for symbols without prices (code -1)."""
    from mdframes.features.training import labels

    rng = np.random.default_rng(5)
    n_codes = 7
    p_code = np.sort(rng.integers(0, n_codes, 400))
    p_day = np.concatenate(
        [np.sort(rng.integers(19_000, 19_400, k)) for k in np.bincount(p_code, minlength=n_codes)]
    )
    q_code = rng.integers(-1, n_codes + 1, 3000)
    q_code[q_code == n_codes] = 2  # a code with prices, asked often
    q_day = rng.integers(19_100, 19_300, 3000)
    args = (p_code, p_day, q_code, q_day, n_codes)
    keys = (p_code << 32) | (p_day + 2**31)
    searched = np.searchsorted(keys, (q_code << 32) | (q_day + 2**31), side="right")
    table = labels._rows_up_to(*args)
    mine = q_code >= 0
    np.testing.assert_array_equal(table[mine], searched[mine])
    # Whole label prices: every (day, symbol) from the table, and from the searches.
    prices = pd.DataFrame(
        {"symbol": pd.Categorical.from_codes(p_code, [f"S{c}" for c in range(n_codes)]),
         "day": p_day, "price": rng.uniform(1, 2, len(p_code))}
    ).drop_duplicates(["symbol", "day"], keep="last", ignore_index=True)  # fmt: skip
    symbols = ["S3", "NONE", "S0", "S6", "S2"]
    days = np.arange(19_050, 19_450, dtype=np.int64)  # before, within and after the prices
    spans = [None, None, (np.array([19_100, 19_250]), np.array([19_200, 19_300])), None,
             (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))]  # fmt: skip
    by_table = [labels._price_at(prices, symbols, days, 5, s) for s in (None, spans)]
    assert np.isnan(by_table[0]).any() and not np.isnan(by_table[0]).all()
    label = labels.forward_return(3)
    dates = pd.bdate_range("2022-03-01", periods=180)
    whole = label.compute(dates, symbols, "B", prices, spans)
    with monkeypatch.context() as small:  # the table's look-ups made a day at a time
        small.setattr(_memory, "PIECE", 3)
        for got, s in zip(by_table, (None, spans), strict=True):
            np.testing.assert_array_equal(got, labels._price_at(prices, symbols, days, 5, s))
        pieces = label.compute(dates, symbols, "B", prices, spans)  # y a few values at a time
    np.testing.assert_array_equal(whole[0], pieces[0])
    assert np.isfinite(whole[0]).any() and np.isnan(whole[0]).any()
    monkeypatch.setattr(labels, "DENSE_CELLS", 0)
    monkeypatch.setattr(labels, "DENSE_PER_QUERY", 0)
    np.testing.assert_array_equal(labels._rows_up_to(*args), searched)
    for got, s in zip(by_table, (None, spans), strict=True):
        np.testing.assert_array_equal(got, labels._price_at(prices, symbols, days, 5, s))


# --- features without values in a fold: named, or dropped when asked --------------------------


def test_every_feature_empty_in_a_fold_is_named_and_drop_empty_lets_hgb_fit(
    server: Sandbox,
) -> None:
    """The app ratings start on 2026-09-03: the first walk-forward folds train on dates
    without any of them, and HistGradientBoosting fails on such a column ('window shape
    cannot be larger than input array shape'). The one warning of the splits names both,
    with the folds numbered as Python numbers them; drop_empty drops them and the model fits."""
    pytest.importorskip("sklearn", reason="the ml extra")
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.model_selection import cross_val_score

    features = ["app_ios_score_last", "app_android_score_last", "sentiment_mean_7d"]
    with _client(server) as client:
        ts = md.features.training_set(SYMBOLS, "2026-06-01", TODAY, features, client=client)
    known = ts.labelled()
    cv = known.cv("walk_forward", n_splits=4, embargo=5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        folds = list(cv.split(known.X, known.y))
    (text,) = [str(w.message) for w in caught if issubclass(w.category, md.DataQualityWarning)]
    for name in features[:2]:  # each with the folds (from 0) whose training has none of it
        empty = [i for i, (train, _) in enumerate(folds) if known.X[name].iloc[train].isna().all()]
        assert empty and f"'{name}' in fold(s) {', '.join(map(str, empty))}" in text
    assert "sentiment_mean_7d" not in text
    usable = known.drop_empty(cv)
    assert list(usable.X.columns) == ["sentiment_mean_7d"]
    assert set(usable.X.attrs["dropped"]) == set(features[:2])
    model = HistGradientBoostingRegressor(max_iter=5)
    scores = cross_val_score(model, usable.X, usable.y, cv=cv, error_score="raise")
    assert len(scores) == 4
