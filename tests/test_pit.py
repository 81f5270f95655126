"""Tests of point_in_time and asof_join: nothing is visible before it was public."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mdframes as md
from mdframes.errors import InvalidParameterError
from mdframes.pit import asof_join, point_in_time, public_times

FAST = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _dates(values: list) -> pd.DatetimeIndex:
    # An index, not a Series: a Series would align on the frame's index.
    return pd.to_datetime(values).astype("datetime64[ns]")


def _insider() -> pd.DataFrame:
    df = pd.DataFrame(
        {
            "symbol": pd.Categorical(["AAPL", "AAPL", "MSFT", "AAPL"]),
            "name": pd.array(["Apple", "Apple", "Microsoft", "Apple"], dtype="string"),
            "date": _dates(["2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05"]),
            "shares": pd.array([100, 200, 300, 400], dtype="Int64"),
            # the second trade is planted with a disclosure far in the future
            "filing_date": _dates(["2024-01-04", "2024-03-01", "2024-01-05", None]),
        },
        index=[10, 11, 12, 13],
    )
    df.attrs["dataset"] = "insider_trading"
    return df


def _congress() -> pd.DataFrame:
    df = pd.DataFrame(
        {
            "symbol": pd.array(["NVDA"] * 3, dtype="string"),
            "chamber": pd.Categorical(["house", "senate", "house"], categories=["house", "senate"]),
            "date": _dates(["2024-01-01", "2024-01-02", "2024-01-03"]),
            "amount": pd.array(["$1,001 - $15,000"] * 3, dtype="string"),
            # trade 2 is disclosed after the as-of dates below; trade 3 never was
            "disclosure_date": _dates(["2024-01-10", "2024-02-20", None]),
        }
    )
    df.attrs["dataset"] = "congress_trades"
    return df


# --- point_in_time ----------------------------------------------------------------------------


def test_point_in_time_uses_filing_date_not_trade_date():
    df = _insider()
    before = df.copy(deep=True)
    out = point_in_time(df, "2024-01-04")
    pd.testing.assert_frame_equal(df, before)
    assert out.index.tolist() == [10]  # the trade of 01-03 is filed on 03-01: not public yet
    assert out.attrs == {"dataset": "insider_trading"}
    assert out.dtypes.equals(df.dtypes)
    assert point_in_time(df, "2024-03-01").index.tolist() == [10, 11, 12]  # null anchor: dropped


@pytest.mark.parametrize(
    "as_of",
    [
        "2024-01-05",
        dt.date(2024, 1, 5),
        dt.datetime(2024, 1, 5),
        pd.Timestamp("2024-01-05"),
        np.datetime64("2024-01-05"),
        "2024-01-05T00:00:00+00:00",
    ],
)
def test_point_in_time_as_of_types(as_of):
    assert point_in_time(_insider(), as_of).index.tolist() == [10, 12]


def test_point_in_time_congress_planted_future_disclosure_and_45_days():
    df = _congress()
    assert point_in_time(df, "2024-02-01")["date"].astype(str).tolist() == ["2024-01-01"]
    # trade 3 (null disclosure, traded 01-03) counts as public on 02-17, not at the trade date
    assert len(point_in_time(df, "2024-02-16")) == 1
    assert point_in_time(df, "2024-02-17")["date"].astype(str).tolist() == [
        "2024-01-01",
        "2024-01-03",
    ]
    assert len(point_in_time(df, "2024-02-20")) == 3
    # The rule follows the anchor too: no dataset name, explicit anchor.
    bare = df.copy()
    bare.attrs = {}
    assert len(point_in_time(bare, "2024-02-17", anchor="disclosure_date")) == 2
    # Overriding the anchor with the trade date is the user's explicit choice.
    assert len(point_in_time(df, "2024-01-03", anchor="date")) == 3


def test_public_times_congress():
    times = public_times(_congress())
    assert times.astype(str).tolist() == ["2024-01-10", "2024-02-20", "2024-02-17"]


def test_point_in_time_aware_timestamps():
    df = pd.DataFrame(
        {
            "symbol": ["GME"] * 3,
            "date": pd.to_datetime(
                ["2024-01-05T09:00:00Z", "2024-01-05T15:30:00Z", "2024-01-06T00:00:00Z"], utc=True
            ),
        }
    )
    df.attrs["dataset"] = "forum_mentions"
    # naive as_of is UTC; a bare date means the start of that day
    assert len(point_in_time(df, "2024-01-05")) == 0
    assert len(point_in_time(df, "2024-01-05 15:30")) == 2
    assert len(point_in_time(df, pd.Timestamp("2024-01-05 10:30", tz="America/New_York"))) == 2
    assert len(point_in_time(df, "2024-01-06")) == 3
    # a date-anchored frame with an aware as_of: the instant is read in UTC
    assert point_in_time(_insider(), "2024-01-04T23:00:00-05:00").index.tolist() == [10, 12]


def test_point_in_time_string_anchor_column():
    df = pd.DataFrame({"date": ["2024-01-01", "2024-01-03", None]})
    assert point_in_time(df, "2024-01-02", anchor="date").index.tolist() == [0]
    with pytest.raises(InvalidParameterError, match="not dates"):
        point_in_time(pd.DataFrame({"date": ["soon"]}), "2024-01-02", anchor="date")


def test_point_in_time_errors():
    df = _insider()
    bare = df.copy()
    bare.attrs = {}
    with pytest.raises(InvalidParameterError, match="anchor"):
        point_in_time(bare, "2024-01-01")
    forecast = pd.DataFrame({"date": _dates(["2024-01-01"])})
    forecast.attrs["dataset"] = "forecast"
    with pytest.raises(InvalidParameterError, match="no point-in-time anchor"):
        point_in_time(forecast, "2024-01-01")
    with pytest.raises(InvalidParameterError, match="nope"):
        point_in_time(df, "2024-01-01", anchor="nope")
    for bad in (None, "not a date", "NaT", 5):
        with pytest.raises(InvalidParameterError, match="as_of"):
            point_in_time(df, bad)


def test_point_in_time_v1_insider_aware_filing_date():
    df = pd.DataFrame(
        {
            "symbol": ["AAPL", "AAPL"],
            "filing_date": pd.to_datetime(
                ["2024-01-04T21:05:00Z", "2024-01-05T01:00:00Z"], utc=True
            ),
        }
    )
    df.attrs["dataset"] = "v1/insider_transactions"
    assert point_in_time(df, "2024-01-05").index.tolist() == [0]


_day = st.integers(min_value=0, max_value=60)


@FAST
@given(
    st.lists(st.tuples(_day, st.one_of(st.none(), _day)), min_size=0, max_size=20),
    _day,
    st.sampled_from(["congress_trades", "insider_trading"]),
)
def test_point_in_time_never_returns_future_rows(rows, as_of_day, dataset):
    start = pd.Timestamp("2024-01-01")
    trade = [start + pd.Timedelta(days=t) for t, _ in rows]
    anchor = [None if a is None else start + pd.Timedelta(days=t + a) for t, a in rows]
    column = "disclosure_date" if dataset == "congress_trades" else "filing_date"
    df = pd.DataFrame({"date": _dates(trade), column: _dates(anchor)})
    df.attrs["dataset"] = dataset
    as_of = start + pd.Timedelta(days=as_of_day)
    out = point_in_time(df, as_of)
    public = df[column]
    if dataset == "congress_trades":
        public = public.fillna(df["date"] + pd.Timedelta(days=45))
    expected = df.index[public.notna() & (public <= as_of)]
    assert out.index.equals(expected)  # exactly the public rows, none from the future


# --- asof_join --------------------------------------------------------------------------------


def _prices() -> pd.DataFrame:
    # unsorted on purpose, with a symbol the right side lacks and a missing date
    return pd.DataFrame(
        {
            "symbol": pd.array(["MSFT", "AAPL", "AAPL", "TSLA", "AAPL", "AAPL"], dtype="string"),
            "date": _dates(
                ["2024-01-06", "2024-03-05", "2024-01-03", "2024-01-06", None, "2024-01-04"]
            ),
            "close": [400.0, 170.0, 185.0, 240.0, 180.0, 184.0],
        },
        index=list("abcdef"),
    )


def test_asof_join_insider_planted_future_filing():
    left, right = _prices(), _insider()
    left_before, right_before = left.copy(deep=True), right.copy(deep=True)
    out = asof_join(left, right)
    pd.testing.assert_frame_equal(left, left_before)
    pd.testing.assert_frame_equal(right, right_before)
    assert out.index.tolist() == list("abcdef")
    assert out["close"].tolist() == left["close"].tolist()
    assert list(out.columns) == [
        "symbol",
        "date",
        "close",
        "name",
        "date_right",
        "shares",
        "filing_date",
    ]
    # a: MSFT 01-06 sees its 01-05 filing; b: AAPL 03-05 sees the 01-03 trade filed 03-01;
    # c: AAPL 01-03 sees nothing (first filing 01-04); d: TSLA has no data; e: no date;
    # f: AAPL 01-04 sees the 01-02 trade filed that same day, not the 01-03 one filed later.
    assert out["shares"].tolist()[:2] == [300, 200]
    assert out["shares"].isna().tolist() == [False, False, True, True, True, False]
    assert out.loc["f", "shares"] == 100
    assert str(out["shares"].dtype) == "Int64"
    assert isinstance(out["name"].dtype, pd.StringDtype)
    assert out.attrs == left.attrs


def test_asof_join_congress_45_day_rule_and_suffixes():
    left = pd.DataFrame(
        {
            "symbol": pd.Categorical(["NVDA"] * 4),
            "date": _dates(["2024-01-09", "2024-02-01", "2024-02-17", "2024-02-25"]),
        }
    )
    out = asof_join(left, _congress(), suffixes=("_px", "_trade"))
    assert out["date_trade"].dt.strftime("%Y-%m-%d").fillna("none").tolist() == [
        "none",
        "2024-01-01",
        "2024-01-03",  # null disclosure: public 45 days after its trade
        "2024-01-02",  # disclosed 02-20, after the 45-day point of trade 3
    ]
    assert "date_px" in out.columns and "symbol" in out.columns


def test_asof_join_category_vs_string_by_and_no_by():
    left = _prices().assign(symbol=lambda d: d["symbol"].astype("category"))
    right = _insider().assign(symbol=lambda d: d["symbol"].astype("string"))
    plain = asof_join(_prices(), _insider())
    pd.testing.assert_series_equal(asof_join(left, right)["shares"], plain["shares"])
    pooled = asof_join(_prices(), _insider().drop(columns="symbol"), by=None)
    # without grouping, TSLA on 01-06 sees the latest filing of anyone (MSFT's, filed 01-05)
    assert pooled.loc["d", "shares"] == 300


def test_asof_join_ties_take_latest_trade_and_aware_right():
    right = pd.DataFrame(
        {
            "symbol": ["AAPL"] * 3,
            "date": _dates(["2024-01-03", "2024-01-02", "2024-01-01"]),
            "filing_date": _dates(["2024-01-05"] * 3),
            "shares": [3, 2, 1],
        }
    )
    right.attrs["dataset"] = "insider_trading"
    left = pd.DataFrame({"symbol": ["AAPL"], "date": _dates(["2024-01-05"])})
    assert asof_join(left, right)["shares"].tolist() == [3]

    forum = pd.DataFrame(
        {
            "symbol": ["GME", "GME"],
            "date": pd.to_datetime(["2024-01-04T12:00:00Z", "2024-01-05T12:00:00Z"], utc=True),
            "mentions": [5, 9],
        }
    )
    forum.attrs["dataset"] = "forum_mentions"
    labels = pd.DataFrame({"symbol": ["GME", "GME"], "date": _dates(["2024-01-05", "2024-01-06"])})
    out = asof_join(labels, forum)
    assert out["mentions"].tolist() == [5, 9]  # the 01-05 noon post is not visible at 01-05 00:00


def test_asof_join_errors():
    with pytest.raises(InvalidParameterError, match="anchor"):
        asof_join(_prices(), _insider().drop(columns="filing_date"))
    with pytest.raises(InvalidParameterError, match="by column"):
        asof_join(_prices(), _insider(), by="ticker")
    with pytest.raises(InvalidParameterError, match="'when'"):
        asof_join(_prices(), _insider(), on="when")
    with pytest.raises(InvalidParameterError, match="suffixes"):
        asof_join(_prices(), _insider(), suffixes=("", ""))


@FAST
@given(
    st.lists(st.tuples(st.sampled_from("AB"), st.one_of(st.none(), _day)), max_size=12),
    st.lists(st.tuples(st.sampled_from("ABC"), _day, st.one_of(st.none(), _day)), max_size=12),
    st.booleans(),
)
def test_asof_join_never_attaches_a_row_public_later(left_rows, right_rows, congress):
    start = pd.Timestamp("2024-01-01")

    def day(n):
        return None if n is None else start + pd.Timedelta(days=n)

    left = pd.DataFrame(
        {"symbol": [s for s, _ in left_rows], "date": _dates([day(d) for _, d in left_rows])}
    )
    anchor = "disclosure_date" if congress else "filing_date"
    right = pd.DataFrame(
        {
            "symbol": pd.Categorical([s for s, _, _ in right_rows]),
            "date": _dates([day(t) for _, t, _ in right_rows]),
            anchor: _dates([None if a is None else day(t + a) for _, t, a in right_rows]),
            "rid": np.arange(len(right_rows)),
        }
    )
    right.attrs["dataset"] = "congress_trades" if congress else "insider_trading"
    out = asof_join(left, right)
    public = public_times(right)
    assert out.index.equals(left.index)
    for i, row in out.iterrows():
        when, symbol = left.loc[i, "date"], left.loc[i, "symbol"]
        seen = public[(right["symbol"].astype(object) == symbol) & (public <= when)]
        if pd.isna(row["rid"]):
            assert pd.isna(when) or seen.empty
            continue
        rid = int(row["rid"])
        assert right.loc[rid, "symbol"] == symbol
        assert public[rid] <= when  # never from the future
        assert public[rid] == seen.max()  # and the latest that was public


def test_pit_is_exported():
    assert md.point_in_time is point_in_time
    assert md.asof_join is asof_join
