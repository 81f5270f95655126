"""md.features: the panel equals a brute-force reference, never looks ahead, reads every source.

The sandbox runs with a fixed clock so that its history (and the congress trades without a
disclosure date among SYMBOLS) is the same on every run. SYMBOLS are in the sandbox's ticker
universe (the sandbox branch serves only those).
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mdframes as md
from mdframes.features import Feature
from mdframes.registry import APP_RATINGS_HISTORY_START, INSIDER_TYPES
from mdframes.sandbox import Sandbox

from .conftest import KEY
from .feature_reference import DEFINITIONS, INT64, StandInLake, reference

TODAY = dt.date(2026, 11, 30)
SYMBOLS = ["AAPL", "KO", "GME", "JPM", "XOM"]
START, END = "2026-03-02", "2026-11-30"
DATASETS = sorted({d for d, _, _ in DEFINITIONS.values()} | {"app_ratings"})


@pytest.fixture(scope="module")
def server() -> Iterator[Sandbox]:
    with Sandbox(today=TODAY) as s:
        yield s


def _client(server: Sandbox) -> md.Client:
    return md.Client(api_key=KEY, base_url=server.url, cache=False, progress=False)


@pytest.fixture(scope="module")
def frames(server: Sandbox) -> dict[str, pd.DataFrame]:
    """Every input dataset, whole history, loaded independently of ``panel``."""
    out = {}
    with _client(server) as client:
        for name in DATASETS:
            start = APP_RATINGS_HISTORY_START if name.startswith("app_ratings") else None
            out[name] = md.load(name, SYMBOLS, start=start, client=client)
    return out


def test_engine_blocks_one_symbol_and_one_date_panels_match_brute_force(
    frames: dict[str, pd.DataFrame], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine counts its (symbol, day) table and gathers a window's sums a block at a
    time, and makes an Int64 column in its panel-order copy: blocks of 7 cells and of one
    symbol, a one-symbol panel and a one-date panel (where that copy is a view of the
    engine's array) give the brute force's values."""
    from mdframes.features.panels import engine

    monkeypatch.setattr(engine, "CELL_BLOCK", 1)  # one symbol per block
    monkeypatch.setattr(engine, "TABLE_BLOCK", 7)  # blocks ending within a symbol's days
    names = [n for n, (_, agg, _) in DEFINITIONS.items() if agg in ("sum", "mean", "count")]
    for symbols, first in ((SYMBOLS, START), (SYMBOLS[:1], START), (SYMBOLS, END)):
        got = md.features.panel(symbols, first, END, names, source=frames)
        assert_matches(got, reference(frames, symbols, pd.bdate_range(first, END), names))


def assert_matches(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert got.index.equals(want.index)
    assert list(got.columns) == list(want.columns)
    for name in want.columns:
        dtype = str(got[name].dtype)
        if name in DEFINITIONS:
            assert dtype == ("Int64" if name in INT64 else "float64"), name
        values = got[name].to_numpy(dtype="float64", na_value=np.nan)
        expected = want[name].to_numpy()
        na = np.isnan(expected)
        np.testing.assert_array_equal(np.isnan(values), na, err_msg=f"{name}: NA cells differ")
        # Sums of cents are cumulative-sum differences in the engine, plain sums here.
        np.testing.assert_allclose(values[~na], expected[~na], rtol=1e-9, atol=1e-6, err_msg=name)


# --- the catalog ------------------------------------------------------------------------------


def test_catalog_names_columns_and_windows_are_the_contracts() -> None:
    cat = md.features.catalog()
    assert list(cat.columns) == [
        "name",
        "dataset",
        "anchor",
        "window",
        "aggregation",
        "description",
    ]
    assert list(cat["name"]) == list(DEFINITIONS)
    for row in cat.itertuples():
        dataset, agg, days = DEFINITIONS[row.name]
        assert row.dataset == dataset and row.aggregation == agg, row.name
        assert (pd.isna(row.window) and days is None) or row.window == f"{days}D", row.name
        assert row.anchor == md.registry.REGISTRY[dataset].anchor
        assert row.description


# --- panel == brute force on sandbox data -----------------------------------------------------


def test_panel_equals_brute_force_for_every_catalog_feature(
    server: Sandbox, frames: dict[str, pd.DataFrame]
) -> None:
    with _client(server) as client:
        got = md.features.panel(SYMBOLS, START, END, client=client)
    dates = pd.bdate_range(START, END)
    assert_matches(got, reference(frames, SYMBOLS, dates, list(DEFINITIONS)))
    # The panel read each dataset once (one request per symbol and chamber), windows included.
    assert got.index.names == ["date", "symbol"]
    assert list(got.index.get_level_values("symbol")[: len(SYMBOLS)]) == SYMBOLS


def test_sandbox_data_exercises_the_hard_cases(frames: dict[str, pd.DataFrame]) -> None:
    """The comparison above covers null anchors, boundary ties, empty windows and times."""
    dates = pd.bdate_range(START, END)
    congress = frames["congress_trades"]
    null = congress["disclosure_date"].isna()
    imputed = congress.loc[null, "date"] + pd.Timedelta(days=45)
    assert imputed.between(dates[0], dates[-1]).sum() >= 2
    # Those rows count: without them the congress feature differs.
    with_null = reference(frames, SYMBOLS, dates, ["congress_net_buy_90d"])
    without = reference(
        {"congress_trades": congress[~null]}, SYMBOLS, dates, ["congress_net_buy_90d"]
    )
    assert not with_null.equals(without)
    # Rows whose anchor is exactly D - 90 for a panel date D: the excluded end of a window.
    filed = frames["insider_trading"]["filing_date"]
    assert filed.isin(dates - pd.Timedelta(days=90)).sum() > 0
    mentions = frames["forum_mentions"]["date"]
    assert isinstance(mentions.dtype, pd.DatetimeTZDtype)
    assert (mentions.dt.hour != 0).any()


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_empty_windows_give_zero_for_sums_and_counts_and_na_for_means_and_lasts(
    frames: dict[str, pd.DataFrame],
) -> None:
    got = md.features.panel(["AAPL", "ZZZZ"], "2026-08-03", "2026-09-04", source=frames)
    absent = got.xs("ZZZZ", level="symbol")
    for name, (_, agg, _) in DEFINITIONS.items():
        if agg in ("sum", "count"):
            assert (absent[name] == 0).all(), name
        else:
            assert absent[name].isna().all(), name
    nothing = md.features.panel(
        ["AAPL"], "2026-08-03", "2026-08-07", source={k: v.iloc[:0] for k, v in frames.items()}
    )
    pd.testing.assert_frame_equal(nothing.droplevel("symbol"), absent.loc[:"2026-08-07"])
    # App history begins 2026-09-03: NA before, a value from then on.
    ios = got.xs("AAPL", level="symbol")["app_ios_score_last"]
    assert ios[:"2026-09-02"].isna().all() and ios["2026-09-03":].notna().all()


def test_dict_source_gives_the_panel_the_service_gives(
    server: Sandbox, frames: dict[str, pd.DataFrame]
) -> None:
    names = ["insider_net_value_90d", "congress_net_buy_90d", "forum_mentions_7d"]
    with _client(server) as client:
        loaded = md.features.panel(SYMBOLS[:3], START, END, names, client=client)
    copies = {name: (frame.copy(), dict(frame.attrs)) for name, frame in frames.items()}
    given_frames = md.features.panel(SYMBOLS[:3], START, END, names, source=frames)
    pd.testing.assert_frame_equal(loaded, given_frames)
    for name, (copy, attrs) in copies.items():  # the caller's frames are left alone
        pd.testing.assert_frame_equal(frames[name], copy)
        assert frames[name].attrs == attrs


def test_rows_agree_with_point_in_time(frames: dict[str, pd.DataFrame]) -> None:
    """The panel's notion of 'public by D' is md.point_in_time's, null anchors included."""
    congress = frames["congress_trades"]
    for d in pd.to_datetime(["2026-04-06", "2026-06-29", "2026-09-14"]):
        got = md.features.panel(SYMBOLS, d, d, ["congress_net_buy_90d"], source=frames)
        known = md.point_in_time(congress, d)
        known = known[md.pit.public_times(known) > d - pd.Timedelta(days=90)]
        expected = reference({"congress_trades": known}, SYMBOLS, [d], ["congress_net_buy_90d"])
        assert_matches(got, expected)


# --- hand-built edge cases --------------------------------------------------------------------


def _insider(rows: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    for col in ("date", "filing_date"):
        df[col] = pd.to_datetime(df[col])
    df["total_value"] = df["total_value"].astype("Int64")
    df.attrs["dataset"] = "insider_trading"
    return df


def test_window_boundaries_are_d_minus_n_exclusive_and_d_inclusive() -> None:
    filed = ["2026-01-01", "2026-01-02", "2026-04-01", "2026-04-02"]  # D - 90, D - 89, D, D + 1
    frame = _insider(
        [
            {
                "symbol": "AAA",
                "date": f,
                "filing_date": f,
                "transaction_type": "Purchase",
                "total_value": v,
            }
            for f, v in zip(filed, [1, 10, 100, 1000], strict=True)
        ]
    )
    names = ["insider_net_value_90d", "insider_buy_count_90d"]
    got = md.features.panel(
        "AAA", "2026-04-01", "2026-04-02", names, source={"insider_trading": frame}
    )
    assert got.loc[("2026-04-01", "AAA")].tolist() == [110.0, 2]
    assert got.loc[("2026-04-02", "AAA")].tolist() == [1100.0, 2]


def test_timestamps_count_on_their_utc_date() -> None:
    times = [
        "2026-03-25T00:00:00+00:00",  # D - 7 at midnight: outside (D - 7, D]
        "2026-03-26T00:00:01+00:00",
        "2026-04-01T23:59:59+00:00",  # last second of D
        "2026-04-02T00:00:00+00:00",  # first second of D + 1
        "2026-04-01T22:30:00-05:00",  # 03:30 UTC on D + 1
    ]
    frame = pd.DataFrame(
        {
            "symbol": "AAA",
            "date": pd.to_datetime(times, utc=True, format="ISO8601"),
            "mentions": pd.array([1000, 10000, 1, 10, 100], dtype="Int64"),
        }
    )
    got = md.features.panel(
        "AAA", "2026-04-01", "2026-04-02", ["forum_mentions_7d"], source={"forum_mentions": frame}
    )["forum_mentions_7d"]
    assert got.tolist() == [10000 + 1, 1 + 10 + 100]
    assert str(got.dtype) == "Int64"


def test_null_anchors_follow_point_in_time() -> None:
    congress = pd.DataFrame(
        {
            "symbol": ["AAA", "AAA"],
            "chamber": ["house", "senate"],
            "date": pd.to_datetime(["2026-02-20", "2026-03-02"]),
            "transaction_type": ["Purchase", "Sale"],
            "amount": ["$1,001 - $15,000", "$15,001 - $50,000"],
            "disclosure_date": pd.to_datetime([None, "2026-03-10"]),
        }
    )
    got = md.features.panel(
        "AAA",
        "2026-04-03",
        "2026-04-08",
        ["congress_net_buy_90d"],
        source={"congress_trades": congress},
    )["congress_net_buy_90d"].droplevel("symbol")
    # The undisclosed purchase is public 45 days after the trade: 2026-04-06.
    assert got["2026-04-03"] == -32500.5
    assert got["2026-04-06"] == -32500.5 + 8000.5
    # Insider rows without a filing date: whatever md.point_in_time decides (a deadline or
    # dropped), the panel decides the same.
    insider = _insider(
        [
            {
                "symbol": "AAA",
                "date": "2026-04-01",
                "filing_date": None,
                "transaction_type": "Sale",
                "total_value": 5,
            },
            {
                "symbol": "AAA",
                "date": "2026-03-30",
                "filing_date": "2026-03-31",
                "transaction_type": "Sale",
                "total_value": 7,
            },
        ]
    )
    dates = pd.bdate_range("2026-03-30", "2026-04-10")
    got = md.features.panel(
        "AAA", dates[0], dates[-1], ["insider_net_value_90d"], source={"insider_trading": insider}
    )
    expected = [-float(md.point_in_time(insider, d)["total_value"].sum()) for d in dates]
    assert got["insider_net_value_90d"].tolist() == expected


# --- no look-ahead: a property ----------------------------------------------------------------

D = pd.Timestamp("2026-06-15")
LATER = {
    "insider_trading": ["insider_net_value_90d", "insider_buy_count_90d"],
    "congress_trades": ["congress_net_buy_90d"],
    "forum_mentions": ["forum_mentions_7d"],
}


def _later_rows(base: dict[str, pd.DataFrame], draw: Any) -> dict[str, pd.DataFrame]:
    """Rows for SYMBOLS[0] that all became public after the end of D."""
    ins, con, fm = (base[k] for k in LATER)
    symbol = SYMBOLS[0]
    new_ins = [
        {
            "symbol": symbol,
            "date": D + pd.Timedelta(days=after - lag),
            "filing_date": D + pd.Timedelta(days=after),
            "transaction_type": kind,
            "total_value": value,
        }
        for after, lag, kind, value in draw["insider"]
    ]
    new_con = [
        {
            "symbol": symbol,
            "chamber": "house",
            # Undisclosed: public 45 days after the trade, so traded after D - 45.
            "date": D + pd.Timedelta(days=day) if undisclosed else D - pd.Timedelta(days=10),
            "transaction_type": kind,
            "amount": amount,
            "disclosure_date": pd.NaT if undisclosed else D + pd.Timedelta(days=day + 45),
        }
        for day, kind, amount, undisclosed in draw["congress"]
    ]
    new_fm = [
        {
            "symbol": symbol,
            "date": (D + pd.Timedelta(days=1, seconds=s)).tz_localize("UTC"),
            "mentions": m,
        }
        for s, m in draw["forum"]
    ]
    out = {}
    for name, frame, rows in (
        ("insider_trading", ins, new_ins),
        ("congress_trades", con, new_con),
        ("forum_mentions", fm, new_fm),
    ):
        extra = pd.DataFrame(rows, columns=list(frame.columns)).astype(frame.dtypes.to_dict())
        out[name] = pd.concat([frame, extra], ignore_index=True) if rows else frame
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    insider=st.lists(
        st.tuples(
            st.integers(1, 120),
            st.integers(0, 30),
            st.sampled_from(INSIDER_TYPES),
            st.integers(0, 10**9),
        ),
        max_size=6,
    ),
    congress=st.lists(
        st.tuples(
            st.integers(-44, 100),
            st.sampled_from(["Purchase", "Sale"]),
            st.sampled_from(["$1,001 - $15,000", "Over $5,000,000", "Unknown", "$21,965"]),
            st.booleans(),
        ),
        max_size=6,
    ),
    forum=st.lists(st.tuples(st.integers(0, 200 * 86400), st.integers(0, 10**6)), max_size=6),
    custom_window=st.integers(1, 120),
)
def test_rows_public_after_d_never_change_row_d(
    frames: dict[str, pd.DataFrame], insider: list, congress: list, forum: list, custom_window: int
) -> None:
    base = {k: frames[k] for k in LATER}
    grown = _later_rows(base, {"insider": insider, "congress": congress, "forum": forum})
    features: list[str | Feature] = [n for names in LATER.values() for n in names]
    features.append(
        Feature(
            "last_value", "insider_trading", value="total_value", agg="last", window=custom_window
        )
    )
    features.append(
        Feature("mentions_mean", "forum_mentions", value="mentions", agg="mean", window=None)
    )
    start, end = D - pd.Timedelta(days=40), D + pd.Timedelta(days=60)
    before = md.features.panel(SYMBOLS[:2], start, end, features, source=base)
    after = md.features.panel(SYMBOLS[:2], start, end, features, source=grown)
    pd.testing.assert_frame_equal(before.loc[:D], after.loc[:D])


# --- custom features --------------------------------------------------------------------------


def test_custom_features_with_columns_and_functions(frames: dict[str, pd.DataFrame]) -> None:
    insider = frames["insider_trading"].assign(
        is_sale=lambda df: df["transaction_type"] == "Sale",
        direction=lambda df: np.where(df["transaction_type"] == "Purchase", 1, -1),
    )
    source = {**frames, "insider_trading": insider}
    custom = [
        Feature("shares_sold_30d", "insider_trading", value="shares", where="is_sale", window=30),
        Feature(
            "signed_value_60d",
            "insider_trading",
            value="total_value",
            sign="direction",
            window="60D",
        ),
        Feature(
            "mean_price_45d",
            "insider_trading",
            value=lambda df: df["price_per_share"],
            agg="mean",
            window=45,
        ),
        Feature("filings_ever", "insider-trading", agg="count", window=None),
        Feature(
            "last_price_10d", "insider_trading", value="price_per_share", agg="last", window=10
        ),
        Feature("mentions_change_14d", "forum_mentions", value="mentions", agg="change", window=14),
        Feature(
            "busy_posts_7d",
            "forum_mentions",
            where=lambda df: df["mentions"] > 100,
            agg="count",
            window="7d",
        ),
        Feature(
            "upgrades_only_30d",
            "analyst_ratings",
            where=lambda df: df["action"] == "Upgrade",
            agg="sum",
            window=30,
        ),
    ]
    got = md.features.panel(SYMBOLS, START, END, [*custom, "news_count_7d"], source=source)
    dates = pd.bdate_range(START, END)
    assert_matches(got, reference(source, SYMBOLS, dates, [*custom, "news_count_7d"]))
    dtypes = got.dtypes.astype(str).to_dict()
    assert (
        dtypes["shares_sold_30d"] == dtypes["signed_value_60d"] == dtypes["filings_ever"] == "Int64"
    )
    assert dtypes["busy_posts_7d"] == dtypes["upgrades_only_30d"] == "Int64"
    assert (
        dtypes["mean_price_45d"]
        == dtypes["last_price_10d"]
        == dtypes["mentions_change_14d"]
        == "float64"
    )
    assert got["last_price_10d"].isna().any() and got["last_price_10d"].notna().any()


# --- a lake as source -------------------------------------------------------------------------


def test_lake_source_honours_known_at(frames: dict[str, pd.DataFrame]) -> None:
    t1, t2 = pd.Timestamp("2026-07-01 12:00", tz="UTC"), pd.Timestamp("2026-12-01", tz="UTC")
    insider = frames["insider_trading"].reset_index(drop=True)
    early = insider["filing_date"] < "2026-07-01"
    first = insider.assign(_fetched_at=np.where(early, t1, t2))
    first["_fetched_at"] = pd.to_datetime(first["_fetched_at"], utc=True)
    revised = (
        first[early].iloc[::3].assign(total_value=lambda df: df["total_value"] * 2, _fetched_at=t2)
    )
    ids = ["symbol", "insider", "date", "transaction_type", "filing_date", "shares"]
    lake = StandInLake(
        {"insider_trading": pd.concat([first, revised], ignore_index=True)},
        {"insider_trading": ids},
    )
    names = ["insider_net_value_90d", "insider_buy_count_90d"]

    then = md.features.panel(SYMBOLS, START, END, names, source=lake, known_at="2026-07-01 12:00")
    now = md.features.panel(SYMBOLS, START, END, names, source=lake)
    as_known_then = {"insider_trading": insider[early]}
    as_known_now = {"insider_trading": lake.read("insider_trading")}
    pd.testing.assert_frame_equal(
        then, md.features.panel(SYMBOLS, START, END, names, source=as_known_then), check_like=True
    )
    pd.testing.assert_frame_equal(
        now, md.features.panel(SYMBOLS, START, END, names, source=as_known_now)
    )
    # The revisions reach back before July: the two differ there, not only later.
    assert not then.loc[:"2026-06-30"].equals(now.loc[:"2026-06-30"])
    # One read per dataset and panel, with the window and known_at as a UTC time.
    dataset, symbols, start, end, known_at = lake.calls[0]
    assert (dataset, symbols) == ("insider_trading", tuple(SYMBOLS))
    assert start == dt.date(2026, 3, 2) - dt.timedelta(days=90 + 365) and end == TODAY
    assert known_at == t1 and lake.calls[1][-1] is None


def test_lake_app_ratings_become_the_daily_view(
    server: Sandbox, frames: dict[str, pd.DataFrame]
) -> None:
    """A lake stores the apps view; per platform and date the app with most ratings is the
    one the service's daily view shows."""
    apps = frames["app_ratings"].assign(_fetched_at=pd.Timestamp("2026-12-01", tz="UTC"))
    lake = StandInLake(
        {"app_ratings": apps}, {"app_ratings": ["symbol", "platform", "app_id", "date"]}
    )
    names = ["app_ios_score_last", "app_android_score_last"]
    from_lake = md.features.panel(SYMBOLS, "2026-08-31", END, names, source=lake)
    with _client(server) as client:
        from_service = md.features.panel(SYMBOLS, "2026-08-31", END, names, client=client)
    pd.testing.assert_frame_equal(from_lake, from_service)
    assert lake.calls[0][0] == "app_ratings"
    daily = md.appratings.daily_from_apps(frames["app_ratings"])
    service = frames["app_ratings_daily"]
    merged = service.merge(daily, on=["symbol", "date"], suffixes=("", "_derived"))
    assert len(merged) == len(service)
    for col in ("ios_score", "ios_ratings_count", "android_score", "android_install_count"):
        pd.testing.assert_series_equal(merged[col], merged[f"{col}_derived"], check_names=False)


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_a_real_lake_gives_the_services_panel(server: Sandbox, tmp_path: Path) -> None:
    symbols = SYMBOLS[:2]
    datasets = sorted({f.dataset for f in md.features.CATALOG} - {"app_ratings_daily"})
    with _client(server) as client:
        lake = md.Lake(tmp_path / "lake", client=client)
        lake.sync([*datasets, "app_ratings"], symbols, start="2024-01-01", end=TODAY)
        from_lake = md.features.panel(symbols, START, END, source=lake)
        from_service = md.features.panel(symbols, START, END, client=client)
    pd.testing.assert_frame_equal(from_lake, from_service)
    # As known before the first sync the lake held none of these symbols: a failure, as a
    # symbol never synced is (never a 0 that means "not synced yet").
    with pytest.raises(md.NotInLakeError, match="not synced by known_at=2001-01-01") as err:
        md.features.panel(symbols, START, END, source=lake, known_at="2001-01-01")
    assert err.value.symbols == symbols and "a known_at after their first sync" in str(err.value)
    with pytest.warns(md.SkippedSymbolsWarning) as caught:
        before_any_sync = md.features.panel(
            symbols, START, END, source=lake, known_at="2001-01-01", errors="skip"
        )
    [skipped] = [w for w in caught if issubclass(w.category, md.SkippedSymbolsWarning)]
    assert Path(skipped.filename).resolve() == Path(__file__).resolve()
    assert before_any_sync.isna().all().all()
    assert list(before_any_sync.attrs["failed"]) == symbols


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"features": ["insider_net_value_9od"]}, "did you mean 'insider_net_value_90d'"),
        ({"features": ["news_count_7d", "news_count_7d"]}, "listed twice"),
        ({"features": []}, "empty"),
        ({"start": "2026-05-01", "end": "2026-04-01"}, "after end"),
        ({"freq": "fortnightly"}, "freq"),
        ({"freq": "h"}, "within a day"),
        ({"known_at": "2026-01-01"}, "known_at needs a lake"),
        ({"source": {"news": pd.DataFrame({"symbol": []})}, "client": "x"}, "client= applies"),
        ({"source": 42}, "source must be"),
        ({"symbols": ["AA/PL"]}, "symbol"),
    ],
)
def test_bad_input_is_refused_before_any_request(server: Sandbox, kwargs: dict, match: str) -> None:
    args = {"symbols": ["AAPL"], "start": "2026-04-01", "end": "2026-04-30", **kwargs}
    before = server.count()
    with _client(server) as client:
        if "client" in kwargs:
            args["client"] = client
        else:
            args.setdefault("client", client if "source" not in args else None)
        with pytest.raises(md.InvalidParameterError, match=match):
            md.features.panel(**args)
    assert server.count() == before


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Feature("x", "forecast", value="mid"), "not a dated per-symbol dataset"),
        (lambda: Feature("x", "news", window="3 weeks"), "not a window"),
        (lambda: Feature("x", "news", window=0), "not a window"),
        (lambda: Feature("x", "news", agg="median"), "agg="),
        (lambda: Feature("x", "news", agg="mean"), "needs a value"),
        (
            lambda: Feature("x", "news", value="sentiment", agg="change", window=None),
            "needs a window",
        ),
        (lambda: Feature("x", "news", value=3.5), "column name, a function"),
        (lambda: Feature("x", "news", dtype="int32"), "dtype="),
    ],
)
def test_bad_features_are_refused(make: Any, match: str) -> None:
    with pytest.raises(md.InvalidParameterError, match=match):
        make()


def test_bad_frames_and_functions_name_the_feature(frames: dict[str, pd.DataFrame]) -> None:
    news = frames["news"]
    cases = [
        ({}, ["news_count_7d"], "no 'news' frame"),
        (
            {"news": news.drop(columns="sentiment")},
            ["news_sentiment_mean_7d"],
            "no column 'sentiment'",
        ),
        ({"news": news}, [Feature("h", "news", value="headline")], "'h': its value is not numeric"),
        (
            {"news": news},
            [Feature("f", "news", value=lambda df: df["nope"])],
            "'f': its value function failed",
        ),
        ({"news": news}, [Feature("w", "news", where="headline")], "where must be boolean"),
        ({"news": frames["sentiment"]}, ["news_count_7d"], "holds 'sentiment'"),
        ({"news": news.drop(columns="date")}, ["news_count_7d"], "anchor column 'date'"),
    ]
    for source, features, match in cases:
        with pytest.raises(md.InvalidParameterError, match=match):
            md.features.panel("AAPL", "2026-04-01", "2026-04-30", features, source=source)


def test_empty_date_range_gives_typed_empty_panel() -> None:
    got = md.features.panel(["AAPL"], "2026-05-02", "2026-05-03", source={})  # a weekend
    assert got.empty and list(got.columns) == list(DEFINITIONS)
    assert (
        str(got["news_count_7d"].dtype) == "Int64" and got["sentiment_mean_7d"].dtype == "float64"
    )


# --- command line -----------------------------------------------------------------------------


def _cli_env(server: Sandbox, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MDFRAMES_BASE_URL": server.url,
        "MDFRAMES_API_KEY": KEY,
        "MDFRAMES_CACHE": str(tmp_path / "cache.sqlite"),
    }


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".xlsx"])
def test_cli_writes_the_panel(server: Sandbox, tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"features{suffix}"
    names = "insider_net_value_90d,news_count_7d,forum_mentions_7d"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mdframes",
            "features",
            "AAPL,KO",
            "GME",
            "--start",
            "2026-04-01",
            "--end",
            "2026-05-29",
            "--features",
            names,
            "--out",
            str(out),
        ],
        env=_cli_env(server, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    with _client(server) as client:
        want = md.features.panel(
            ["AAPL", "KO", "GME"], "2026-04-01", "2026-05-29", names.split(","), client=client
        )
    want = want.reset_index()
    if suffix == ".parquet":
        got = pd.read_parquet(out)
    elif suffix == ".csv":
        got = pd.read_csv(out, parse_dates=["date"])
    else:
        got = pd.read_excel(out)
    assert list(got.columns) == list(want.columns)
    assert got["symbol"].astype(str).tolist() == want["symbol"].tolist()
    for name in names.split(","):
        np.testing.assert_allclose(
            got[name].astype("float64"), want[name].astype("float64"), rtol=1e-12
        )


def test_cli_refuses_unknown_features_with_exit_2(server: Sandbox, tmp_path: Path) -> None:
    before = server.count()
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mdframes",
            "features",
            "AAPL",
            "--start",
            "2026-04-01",
            "--end",
            "2026-04-30",
            "--features",
            "news_count_7",
        ],
        env=_cli_env(server, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2
    assert "did you mean 'news_count_7d'" in run.stderr
    assert "Traceback" not in run.stderr and server.count() == before


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
@pytest.mark.parametrize("known_at", [None, "row", "2026-11-30"])
def test_cli_reads_a_lake(
    server: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str], known_at: Any
) -> None:
    """--lake PATH opens md.Lake(PATH); --known-at and --errors reach the panel."""
    names = ["insider_net_value_90d", "news_count_7d"]
    with _client(server) as client:
        client.sandbox = server  # synced on the sandbox's day
        lake = md.Lake(tmp_path / "lake", client=client)
        lake.sync(["insider_trading", "news"], ["AAPL", "KO"], start="2025-01-01", progress=False)
    out = tmp_path / "f.parquet"
    argv = ["features", "AAPL", "KO", "--start", START, "--end", END, "--features", ",".join(names),
            "--lake", str(tmp_path / "lake"), "--errors", "skip", "--out", str(out)]  # fmt: skip
    code = md.cli.main(argv + ([] if known_at is None else ["--known-at", known_at]))
    assert code == 0, capsys.readouterr().err
    want = md.features.panel(
        ["AAPL", "KO"], START, END, names, source=md.Lake(tmp_path / "lake"), known_at=known_at
    )
    pd.testing.assert_frame_equal(
        pd.read_parquet(out).set_index(["date", "symbol"]), want, check_index_type=False
    )


def test_cli_known_at_needs_a_lake(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["features", "AAPL", "--start", START, "--end", END, "--known-at", "row"]
    assert md.cli.main(argv) == 2
    assert "--known-at needs --lake" in capsys.readouterr().err


# --- docs -------------------------------------------------------------------------------------


def test_docs_page_lists_every_catalog_feature() -> None:
    from mdframes.features import docs

    page = Path(__file__).resolve().parent.parent / "docs" / "features.md"
    text = docs.fill(page.read_text(encoding="utf-8"))
    assert docs.MARKER not in text
    for f in md.features.CATALOG:
        row = next(line for line in text.splitlines() if line.startswith(f"| `{f.name}` |"))
        assert f"`{f.dataset}`" in row and f.description.replace("|", "\\|") in row
        assert f"`{f.dtype}`" in row


def test_row_order_of_the_inputs_does_not_matter(frames: dict[str, pd.DataFrame]) -> None:
    """Loaders return newest first today and oldest first soon; users shuffle. Same panel."""
    anchors = {n: md.registry.REGISTRY[n].anchor for n in frames}

    def reorder(how: str) -> dict[str, pd.DataFrame]:
        out = {}
        for name, frame in frames.items():
            if how == "shuffled":
                frame = frame.sample(frac=1.0, random_state=3)
            else:
                frame = frame.sort_values(
                    ["symbol", anchors[name]], ascending=how == "oldest first", kind="stable"
                )
            out[name] = frame.reset_index(drop=True)
        return out

    want = md.features.panel(SYMBOLS, START, END, source=frames)
    for how in ("oldest first", "newest first", "shuffled"):
        pd.testing.assert_frame_equal(
            md.features.panel(SYMBOLS, START, END, source=reorder(how)), want, obj=how
        )


def test_searching_and_the_day_table_agree(
    frames: dict[str, pd.DataFrame], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cells are answered from a (symbol, day) table, or by binary search when that table
    would be much larger than the panel (long ranges, sparse dates): the same numbers."""
    table = md.features.panel(SYMBOLS, START, END, freq="D", source=frames)
    monkeypatch.setattr(md.features.panels.engine, "DENSE_CELLS", 0)
    monkeypatch.setattr(md.features.panels.engine, "DENSE_PER_CELL", 0)
    searched = md.features.panel(SYMBOLS, START, END, freq="D", source=frames)
    pd.testing.assert_frame_equal(searched, table)
    monthly = md.features.panel(SYMBOLS, START, END, freq="MS", source=frames)
    pd.testing.assert_frame_equal(monthly, table.loc[monthly.index])


def test_running_totals_in_blocks_are_pandas_grouped_totals(
    frames: dict[str, pd.DataFrame], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Float sums and means come from running totals that restart at each symbol, computed a
    block of whole symbols at a time (memory): bit for bit pandas' grouped cumsum over all
    rows at once (compensated; a plain cumsum rounds differently), and the same panel
    whatever the block size."""
    rng = np.random.default_rng(7)
    codes = np.repeat(np.arange(5), [3, 0, 50, 1, 20])
    vals = rng.normal(size=len(codes)) * 10.0 ** rng.integers(-6, 9, size=len(codes))
    whole = pd.Series(vals).groupby(codes, sort=False).cumsum().to_numpy()
    monkeypatch.setattr(md.features.panels.engine, "SUM_BLOCK", 8)
    padded = md.features.panels.engine._symbol_totals(vals, codes, 6)
    assert len(padded) == len(vals) + 6
    np.testing.assert_array_equal(padded[np.arange(len(vals)) + codes + 1], whole)
    plain = np.concatenate([np.cumsum(vals[codes == g]) for g in range(5)])
    assert not np.array_equal(whole, plain)  # the data tells the two apart
    starts = np.searchsorted(codes, np.arange(6))
    assert (padded[starts + np.arange(6)] == 0).all()  # each symbol's own 0
    blocks = md.features.panel(SYMBOLS, START, END, source=frames)
    monkeypatch.setattr(md.features.panels.engine, "SUM_BLOCK", 1 << 30)
    pd.testing.assert_frame_equal(blocks, md.features.panel(SYMBOLS, START, END, source=frames))
