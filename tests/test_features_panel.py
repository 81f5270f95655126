"""md.features.panel: coverage, errors="skip", argument checks, known_at="row", executors and
write_panel.

The sandbox runs with a fixed clock (as in test_features.py) so its history is the same on
every run. The planted-future tests sync a real lake on several simulated sandbox days and
compare the per-row panel with a brute-force reference (per date: the lake as known at the end
of that date, then the scalar panel).
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import warnings
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import mdframes as md
from mdframes.features import Feature
from mdframes.sandbox import Sandbox

from .conftest import KEY
from .feature_reference import StandInLake, row_reference

TODAY = dt.date(2026, 11, 30)
HERE = Path(__file__).resolve()
SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture(scope="module")
def server() -> Iterator[Sandbox]:
    with Sandbox(today=TODAY) as s:
        yield s


def _client(server: Sandbox) -> md.Client:
    return md.Client(api_key=KEY, base_url=server.url, cache=False, progress=False)


def _only(
    caught: list[warnings.WarningMessage], category: type[Warning]
) -> warnings.WarningMessage:
    mine = [w for w in caught if issubclass(w.category, category)]
    assert len(mine) == 1, [str(w.message) for w in caught]
    assert Path(mine[0].filename).resolve() == HERE  # pointed at the caller's line
    return mine[0]


# --- coverage --------------------------------------------------------------------------------


def test_whole_catalog_before_app_history_gives_na_and_one_warning(server: Sandbox) -> None:
    """The issue's first backtest: app ratings start on 2026-09-03, the panel ends before."""
    with _client(server) as client, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = md.features.panel(["AAPL"], "2026-01-05", "2026-03-31", client=client)
    assert list(got.columns) == md.features.catalog()["name"].tolist()
    apps = ["app_ios_score_last", "app_android_score_last"]
    assert got[apps].isna().all().all()
    coverage = got.attrs["coverage"]
    assert set(coverage) == set(got.columns)
    for name in apps:
        assert coverage[name] == {"first": None, "non_null": 0.0, "uncovered": 0}
    assert coverage["news_count_7d"] == {"first": "2026-01-05", "non_null": 1.0, "uncovered": 0}
    message = str(_only(caught, md.DataQualityWarning).message)
    assert all(name in message for name in apps)
    assert "news_count_7d" not in message


def test_coverage_starts_where_the_dataset_does(server: Sandbox) -> None:
    week = Feature("app_days_7d", "app_ratings_daily", window=7, agg="count")
    names: list[Any] = ["app_ios_score_last", week, "news_count_7d"]
    with _client(server) as client:
        got = md.features.panel(["AAPL", "KO"], "2026-08-24", "2026-09-30", names, client=client)
    ios = got["app_ios_score_last"].unstack("symbol")
    assert ios.loc[:"2026-09-02"].isna().all().all() and ios.loc["2026-09-03":].notna().all().all()
    # A count over 7 days needs all 7 inside the history: NA until 2026-09-09.
    days = got["app_days_7d"].unstack("symbol")
    assert days.loc[:"2026-09-08"].isna().all().all()
    assert (days.loc["2026-09-09":] == 7).all().all()
    coverage = got.attrs["coverage"]
    assert coverage["app_ios_score_last"]["first"] == "2026-09-03"
    assert coverage["app_days_7d"]["first"] == "2026-09-09"
    share = got["app_ios_score_last"].notna().mean()
    assert coverage["app_ios_score_last"]["non_null"] == pytest.approx(share) and 0 < share < 1


def test_symbol_level_has_the_loaders_string_dtype(server: Sandbox) -> None:
    with _client(server) as client:
        got = md.features.panel(
            ["aapl"], "2026-04-01", "2026-04-03", "news_count_7d", client=client
        )
        loaded = md.load_news("AAPL", start="2026-03-01", end="2026-04-03", client=client)
    assert got.index.get_level_values("symbol").dtype == loaded["symbol"].dtype == "string"
    assert list(got.index.get_level_values("symbol").unique()) == ["AAPL"]


# --- errors="skip" -----------------------------------------------------------------------------


def test_errors_skip_keeps_the_rows_of_an_unknown_symbol(server: Sandbox) -> None:
    names = ["insider_net_value_90d", "news_count_7d", "sentiment_mean_7d"]
    with _client(server) as client:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = md.features.panel(
                ["AAPL", "ZZZZQ", "KO"], "2026-04-01", "2026-04-30", names, errors="skip",
                client=client,
            )  # fmt: skip
        alone = md.features.panel(["AAPL", "KO"], "2026-04-01", "2026-04-30", names, client=client)
    assert list(got.index.get_level_values("symbol").unique()) == ["AAPL", "ZZZZQ", "KO"]
    assert got.xs("ZZZZQ", level="symbol").isna().all().all()
    pd.testing.assert_frame_equal(got.drop(index="ZZZZQ", level="symbol"), alone, check_like=False)
    assert list(got.attrs["failed"]) == ["ZZZZQ"] and "404" in got.attrs["failed"]["ZZZZQ"]
    assert "ZZZZQ" in str(_only(caught, md.SkippedSymbolsWarning).message)


def test_errors_raise_names_the_symbol_and_the_way_out(server: Sandbox) -> None:
    with _client(server) as client, pytest.raises(md.NotFoundError) as info:
        md.features.panel(["AAPL", "ZZZZQ"], "2026-04-01", "2026-04-30", "news_count_7d",
                          client=client)  # fmt: skip
    assert "ZZZZQ" in str(info.value) and "errors='skip'" in str(info.value)


# --- argument checks ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"features": 42}, "features must be"),
        ({"features": ["news_count_7d", 3]}, "each must be a catalog name"),
        ({"features": {"news_count_7d": 1}}, "features must be"),
        ({"errors": "ignore"}, "errors="),
        ({"known_at": "yesterday", "source": StandInLake({}, {})}, "known_at="),
        ({"executor": "pool", "source": {}}, "concurrent.futures.Executor"),
        ({"executor": ThreadPoolExecutor(1)}, "API key is never shipped"),
    ],
)
def test_bad_arguments_are_refused_before_any_request(
    server: Sandbox, kwargs: dict, match: str
) -> None:
    before = server.count()
    with _client(server) as client:
        args: dict[str, Any] = {"client": client if "source" not in kwargs else None}
        with pytest.raises(md.InvalidParameterError, match=match):
            md.features.panel(["AAPL"], "2026-04-01", "2026-04-30", **{**args, **kwargs})
    assert server.count() == before


def test_a_date_alone_as_known_at_is_the_end_of_that_day(server: Sandbox) -> None:
    with _client(server) as client:
        news = md.load_news(["AAPL"], start="2026-05-01", end="2026-06-30", client=client)
    fetched = pd.Timestamp("2026-06-30 18:00", tz="UTC")
    lake = StandInLake({"news": news.assign(_fetched_at=fetched)}, {"news": ["symbol", "url"]})
    by_date = md.features.panel("AAPL", "2026-06-01", "2026-06-30", "news_count_7d",
                                source=lake, known_at="2026-06-30")  # fmt: skip
    by_time = md.features.panel("AAPL", "2026-06-01", "2026-06-30", "news_count_7d",
                                source=lake, known_at=dt.datetime(2026, 6, 30, 23, 59, 59))  # fmt: skip
    pd.testing.assert_frame_equal(by_date, by_time, check_like=True)
    assert by_date["news_count_7d"].sum() > 0
    assert by_date.attrs["known_at"] == "2026-06-30T23:59:59.999999+00:00"


# --- known_at="row" ----------------------------------------------------------------------------

ROW_DATASETS = ["sentiment", "put_call_ratio", "congress_trades", "government_contracts"]
ROW_FEATURES: list[Any] = [
    "sentiment_mean_7d",
    "sentiment_change_30d",
    "put_call_ratio_last",
    "congress_net_buy_90d",
    "contracts_award_365d",
    Feature(
        "contracts_last_60d", "government_contracts", value="award_amount", agg="last", window=60
    ),  # fmt: skip
    Feature("sentiment_count_10d", "sentiment", agg="count", window=10),
]
ROW_SYMBOLS = ["AAPL", "KO", "GME", "JPM", "XOM", "MSFT", "NVDA", "TSLA"]


@pytest.fixture(scope="module")
def synced_lake(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[md.Lake, list[dt.date]]]:
    """A lake synced on seven simulated days, three apart: the sandbox revises sentiment
    scores, contract amounts and congress trades as its clock moves."""
    root = tmp_path_factory.mktemp("row") / "lake"
    days = []
    with Sandbox(today="2026-10-01") as world:
        client = md.Client(api_key=KEY, base_url=world.url, cache=False, progress=False)
        client.sandbox = world  # each sync's _fetched_at is on the sandbox's day
        lake = md.Lake(root, client=client)
        lake.sync(ROW_DATASETS, ROW_SYMBOLS, start="2025-06-01", progress=False)
        days.append(world.today)
        for _ in range(6):
            world.advance(days=3)
            lake.sync(ROW_DATASETS, ROW_SYMBOLS, progress=False)
            days.append(world.today)
        client.close()
    yield md.Lake(root), days


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_row_knowledge_equals_the_lake_as_known_each_day(
    synced_lake: tuple[md.Lake, list[dt.date]],
) -> None:
    lake, days = synced_lake
    start, end = "2026-09-14", "2026-10-21"
    got = md.features.panel(ROW_SYMBOLS, start, end, ROW_FEATURES, source=lake, known_at="row",
                            freq="D")  # fmt: skip
    want = row_reference(lake, ROW_SYMBOLS, pd.date_range(start, end), ROW_FEATURES)
    assert got.index.equals(want.index)
    for name in want.columns:
        a = got[name].to_numpy(dtype="float64", na_value=np.nan)
        b = want[name].to_numpy(dtype="float64", na_value=np.nan)
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=name)
        np.testing.assert_allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=1e-9, err_msg=name)
    knowledge = got.attrs["knowledge"]
    assert set(knowledge) == {"sentiment", "put_call_ratio", "congress_trades",
                              "government_contracts"}  # fmt: skip
    before_first = (pd.date_range(start, end) < pd.Timestamp(days[0])).sum()
    for entry in knowledge.values():
        assert pd.Timestamp(entry["first_sync"]).date() == days[0]
        assert entry["rows"] == before_first * len(ROW_SYMBOLS)


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_a_revision_never_reaches_a_row_before_the_day_it_was_fetched(
    synced_lake: tuple[md.Lake, list[dt.date]],
) -> None:
    """Each revision the sandbox made, taken out of the lake's history one at a time: rows
    before the day it was fetched do not change; rows from that day on (while the revised
    score is in their window) move by exactly new - old."""
    lake, days = synced_lake
    history = lake.read("sentiment", ROW_SYMBOLS, history=True)
    revised = history.index[(history["_version"] > 1).to_numpy()]
    assert len(revised), "the sandbox revised no sentiment score in these days"
    total = Feature("score_sum_60d", "sentiment", value="score", agg="sum", window=60)
    ids = {"sentiment": ["symbol", "date"]}
    args = (ROW_SYMBOLS, "2026-09-01", days[-1], [total])
    got = md.features.panel(*args, source=StandInLake({"sentiment": history}, ids),
                            known_at="row", freq="D")["score_sum_60d"]  # fmt: skip
    # The lake also knows how far each sync reached: rows dated between two syncs (their
    # window past the last one) are NA there; every other row is the stand-in's.
    by_lake = md.features.panel(*args, source=lake, known_at="row", freq="D")["score_sum_60d"]
    dates = got.index.get_level_values("date")
    between = ~dates.isin(pd.DatetimeIndex([pd.Timestamp(d) for d in days]))
    assert by_lake[between & (dates > pd.Timestamp(days[0]))].isna().all()
    pd.testing.assert_series_equal(got[by_lake.notna()], by_lake.dropna())
    for at in revised:
        rev = history.loc[at]
        old = history[(history["symbol"] == rev["symbol"]) & (history["date"] == rev["date"])
                      & (history["_version"] == rev["_version"] - 1)]["score"].iloc[0]  # fmt: skip
        without = StandInLake({"sentiment": history.drop(index=at)}, ids)
        other = md.features.panel(*args, source=without, known_at="row", freq="D")
        diff = (got - other["score_sum_60d"]).xs(rev["symbol"], level="symbol")
        k = rev["_fetched_at"].tz_convert("UTC").tz_localize(None).normalize()
        assert k > rev["date"]  # fetched after the day it is for: a planted future
        assert (diff[diff.index < k] == 0).all()
        seen = diff[(diff.index >= k) & (diff.index < rev["date"] + pd.Timedelta(days=60))]
        assert len(seen) and np.allclose(seen, rev["score"] - old)
        assert (diff[diff.index >= rev["date"] + pd.Timedelta(days=60)] == 0).all()


def _planted() -> tuple[StandInLake, list[str]]:
    """Versions planted by hand: values revised, anchors moved (a congress disclosure date
    backfilled), a record first fetched long after it became public, revisions inside the
    first sync, and NA values."""
    rng = np.random.default_rng(7)
    symbols = ["AAA", "BBB"]
    t0 = pd.Timestamp("2026-03-10 09:00", tz="UTC")
    rows = []
    for s in symbols:
        for _ in range(60):
            day = pd.Timestamp("2026-01-01") + pd.Timedelta(days=int(rng.integers(0, 120)))
            first = max(t0, day.tz_localize("UTC") + pd.Timedelta(hours=int(rng.integers(1, 200))))
            score = float(rng.normal())
            rows.append((s, day, score, first))
            for _ in range(int(rng.integers(0, 3))):  # revisions, some inside the first sync
                first = first + pd.Timedelta(hours=int(rng.integers(0, 400)))
                score = float("nan") if rng.random() < 0.1 else float(rng.normal())
                rows.append((s, day, score, first))
    sentiment = pd.DataFrame(rows, columns=["symbol", "date", "score", "_fetched_at"])
    sentiment = sentiment.drop_duplicates(["symbol", "date", "_fetched_at"], keep="last")
    sentiment["score"] = sentiment["score"].astype("Float64")
    rows = []
    for s in symbols:
        for i in range(25):
            trade = pd.Timestamp("2026-01-01") + pd.Timedelta(days=int(rng.integers(0, 110)))
            fetched = max(
                t0, trade.tz_localize("UTC") + pd.Timedelta(days=int(rng.integers(0, 50)))
            )
            disclosed = trade + pd.Timedelta(days=int(rng.integers(1, 60)))
            base = {"symbol": s, "chamber": "house", "date": trade, "politician": f"P{i}",
                    "transaction_type": ["Purchase", "Sale"][i % 2],
                    "amount": "$1,001 - $15,000"}  # fmt: skip
            if rng.random() < 0.5:  # first without a disclosure date, backfilled later
                rows.append({**base, "disclosure_date": pd.NaT, "_fetched_at": fetched})
                fetched = fetched + pd.Timedelta(days=int(rng.integers(1, 30)))
            rows.append({**base, "disclosure_date": disclosed, "_fetched_at": fetched})
    congress = pd.DataFrame(rows)
    lake = StandInLake(
        {"sentiment": sentiment, "congress_trades": congress},
        {
            "sentiment": ["symbol", "date"],
            "congress_trades": [
                "symbol",
                "chamber",
                "date",
                "politician",
                "transaction_type",
                "amount",
            ],  # fmt: skip
        },
    )
    return lake, symbols


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_row_knowledge_with_planted_versions_equals_brute_force() -> None:
    lake, symbols = _planted()
    features: list[Any] = [
        "sentiment_mean_7d",
        "sentiment_change_30d",
        Feature("score_last_5d", "sentiment", value="score", agg="last", window=5),
        Feature("score_last", "sentiment", value="score", agg="last", window=None),
        Feature("scores_10d", "sentiment", agg="count", window=10),
        Feature("score_sum", "sentiment", value="score", agg="sum", window=None),
        "congress_net_buy_90d",
        Feature(
            "congress_last",
            "congress_trades",
            value=lambda df: df["date"].dt.day * 1.0,
            agg="last",
            window=20,
        ),  # fmt: skip
        Feature("trades_30d", "congress_trades", agg="count", window=30),
    ]
    start, end = "2026-02-20", "2026-05-20"
    got = md.features.panel(symbols, start, end, features, source=lake, known_at="row", freq="D")
    want = row_reference(lake, symbols, pd.date_range(start, end), features)
    for name in want.columns:
        a = got[name].to_numpy(dtype="float64", na_value=np.nan)
        b = want[name].to_numpy(dtype="float64", na_value=np.nan)
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=name)
        np.testing.assert_allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=1e-9, atol=1e-9,
                                   err_msg=name)  # fmt: skip
    assert got.attrs["knowledge"]["sentiment"]["rows"] == 2 * len(
        pd.date_range(start, "2026-03-09")
    )


# --- executors and write_panel ----------------------------------------------------------------


def _lake_frames(lake: md.Lake) -> dict[str, pd.DataFrame]:
    return {n: lake.read(n, ROW_SYMBOLS).drop(columns="_fetched_at") for n in ROW_DATASETS}


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_a_process_pool_gives_the_serial_panel(synced_lake: tuple[md.Lake, list[dt.date]]) -> None:
    lake, _ = synced_lake
    frames = _lake_frames(lake)
    names = [f for f in ROW_FEATURES if isinstance(f, str)]
    cases: list[tuple[Any, Any, list[Any]]] = [
        (lake, "row", ROW_FEATURES[:5]),
        (lake, None, names),
        (lake, "2026-10-07", names),
        (frames, None, names),
    ]
    # Spawned workers: a lake's Delta tables cannot be read in forked processes.
    with ProcessPoolExecutor(2, mp_context=SPAWN) as pool:
        for source, known_at, features in cases:
            args = (ROW_SYMBOLS, "2026-06-01", "2026-10-20", features)
            serial = md.features.panel(*args, source=source, known_at=known_at)
            parallel = md.features.panel(*args, source=source, known_at=known_at, executor=pool)
            pd.testing.assert_frame_equal(parallel, serial)
            assert parallel.attrs == serial.attrs


def test_a_process_pool_refuses_what_it_cannot_send(
    synced_lake: tuple[md.Lake, list[dt.date]],
) -> None:
    with (
        ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool,
        pytest.raises(md.InvalidParameterError, match="get_context\\('spawn'\\)"),
    ):
        md.features.panel("AAPL", "2026-04-01", "2026-04-30", "news_count_7d",
                          source=synced_lake[0], executor=pool)  # fmt: skip
    lambda_feature = Feature("x", "news", value=lambda df: df["sentiment"], agg="mean")
    with ProcessPoolExecutor(1) as pool, pytest.raises(md.InvalidParameterError, match="'x'"):
        md.features.panel("AAPL", "2026-04-01", "2026-04-30", [lambda_feature],
                          source={"news": pd.DataFrame({"symbol": []})}, executor=pool)  # fmt: skip


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_write_panel_reads_back_equal_with_pandas_duckdb_and_polars(
    synced_lake: tuple[md.Lake, list[dt.date]], tmp_path: Path
) -> None:
    import duckdb
    import polars as pl

    lake, _ = synced_lake
    args = (ROW_SYMBOLS, "2026-06-01", "2026-10-20", ROW_FEATURES[:5])
    want = md.features.panel(*args, source=lake, known_at="row").reset_index()
    order = {s: i for i, s in enumerate(ROW_SYMBOLS)}

    def panel_order(df: pd.DataFrame) -> pd.DataFrame:
        rank = df["symbol"].map(order).astype("int64")
        return (
            df.assign(_r=rank).sort_values(["date", "_r"]).drop(columns="_r").reset_index(drop=True)
        )

    with ProcessPoolExecutor(2, mp_context=SPAWN) as pool:
        path = md.features.write_panel(tmp_path / "out", *args, source=lake, known_at="row",
                                       executor=pool, chunk=3)  # fmt: skip
    assert Path(path) == tmp_path / "out"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "_SUCCESS", "part-00000.parquet", "part-00001.parquet", "part-00002.parquet"
    ]  # fmt: skip
    pd.testing.assert_frame_equal(panel_order(pd.read_parquet(path)), want)
    back = md.features.read_panel(path)  # the panel itself: index, order, dtypes, attrs
    pd.testing.assert_frame_equal(back, want.set_index(["date", "symbol"]))
    assert back.attrs == md.features.panel(*args, source=lake, known_at="row").attrs
    glob = str(tmp_path / "out" / "*.parquet")
    from_duckdb = duckdb.sql(f"select * from read_parquet('{glob}')").df()
    from_polars = pl.read_parquet(glob).to_pandas()
    for other in (from_duckdb, from_polars):
        other = panel_order(other)
        assert list(other.columns) == list(want.columns) and len(other) == len(want)
        for col in want.columns[2:]:
            np.testing.assert_array_equal(
                other[col].to_numpy(dtype="float64", na_value=np.nan),
                want[col].to_numpy(dtype="float64", na_value=np.nan),
            )
        assert (other["symbol"].astype(str) == want["symbol"].astype(str)).all()
        assert (pd.to_datetime(other["date"]) == want["date"]).all()
    # Serially (no executor): one chunk in memory at a time, the same files' rows.
    serial = md.features.write_panel(str(tmp_path / "serial"), *args, source=lake,
                                     known_at="row", chunk=5)  # fmt: skip
    pd.testing.assert_frame_equal(panel_order(pd.read_parquet(serial)), want)
    with pytest.raises(md.InvalidParameterError, match="already holds files: a finished panel"):
        md.features.write_panel(path, *args, source=lake)
    with pytest.raises(md.InvalidParameterError, match="chunk"):
        md.features.write_panel(tmp_path / "x", *args, source=lake, chunk=0)


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_rows_before_the_first_sync_see_what_it_fetched(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every date before the first sync: the panel as that sync left the lake. With nothing
    revised within the panel, the cheaper anchor-only engine computes it (the version engine
    is not called)."""
    import sys

    lake, symbols = _planted()
    floor = min(pd.Timestamp(f["_fetched_at"].min()) for f in lake.frames.values())
    names = ["sentiment_mean_7d", "sentiment_change_30d", "congress_net_buy_90d"]
    args = (symbols, "2026-01-15", "2026-03-06", names)
    want = md.features.panel(*args, source=lake, known_at=floor)

    def refuse(*_: Any) -> None:
        raise AssertionError("the version engine ran")

    monkeypatch.setattr(sys.modules["mdframes.features.panels.chunk"], "compute_row", refuse)
    got = md.features.panel(*args, source=lake, known_at="row")
    pd.testing.assert_frame_equal(got, want, check_like=True)
    assert got.attrs["knowledge"]["sentiment"]["rows"] == len(got)


@pytest.mark.parametrize("grouped", [True, False])
def test_next_versions_are_found_as_record_ids_tell_records_apart(grouped: bool) -> None:
    # The versions' order is found without a sort where a lake read's rows come grouped by
    # their identity; records sharing a key in one sync, alternatives and missing values
    # (each a value of its own) keep the meaning record_ids gives them.
    from mdframes.features.panels.knowledge import (
        NEVER,
        _batches,
        _fetched_ns,
        _following,
        record_ids,
    )

    rng = np.random.default_rng(7)
    n = 400
    frame = pd.DataFrame(
        {
            "symbol": pd.array(rng.choice(["A", "B", None], n), dtype="string[pyarrow]"),
            "date": pd.to_datetime(rng.choice(["2026-01-02", "2026-01-05", None], n)),
            "chamber": pd.Categorical(rng.choice(["house", "senate", None], n)),
            "amount_raw": pd.array(rng.choice(["1", "2", None], n), dtype="string"),
            "amount": pd.array(rng.choice(["1", "3", None], n), dtype="string[pyarrow]"),
            "_fetched_at": pd.to_datetime("2026-01-06", utc=True)
            + pd.to_timedelta(rng.integers(0, 4, n), unit="D"),
        }
    )
    frame["_sync_id"] = pd.array(frame["_fetched_at"].astype(str), dtype="string[pyarrow]")
    if grouped:
        frame = frame.sort_values(["symbol", "date"], kind="stable").reset_index(drop=True)
    for key in (["symbol", "date"], ["symbol", "chamber", "date", "amount_raw|amount"]):
        ids, fetched = record_ids(frame, key), _fetched_ns(frame)
        order = np.lexsort((np.arange(n), fetched, ids))
        expected = np.full(n, NEVER, dtype=np.int64)
        same = ids[order][1:] == ids[order][:-1]
        expected[order[:-1][same]] = fetched[order[1:][same]]
        assert (expected != NEVER).any()
        np.testing.assert_array_equal(_following(frame, key, fetched, _batches(frame)), expected)
