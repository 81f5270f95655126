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
    assert out.attrs == {"dataset": "insider_trading", "imputed_anchors": 0}
    assert out.dtypes.equals(df.dtypes)
    # Row 13 (traded Friday 01-05, no filing date) counts as filed Tuesday 01-09.
    assert point_in_time(df, "2024-01-08").index.tolist() == [10, 12]
    late = point_in_time(df, "2024-03-01")
    assert late.index.tolist() == [10, 11, 12, 13]
    assert late.attrs["imputed_anchors"] == 1
    assert late["filing_date"].isna().tolist() == [False, False, False, True]  # kept as sent
    assert point_in_time(df, "2024-03-01", null_anchor="drop").index.tolist() == [10, 11, 12]


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


def _deadline_oracle(dataset: str, trade: pd.Timestamp | None) -> pd.Timestamp | None:
    """The legal deadline counted by hand, day by day (independent of numpy's busday)."""
    if trade is None or pd.isna(trade):
        return None
    if dataset == "congress_trades":
        return trade + pd.Timedelta(days=45)
    day, left = trade.normalize(), 2
    while left:
        day += pd.Timedelta(days=1)
        left -= day.weekday() < 5
    return day


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
    deadline = [_deadline_oracle(dataset, t) for t in trade]
    public = df[column].fillna(pd.Series(_dates(deadline), index=df.index))
    expected = df.index[public.notna() & (public <= as_of)]
    assert out.index.equals(expected)  # exactly the public rows, none from the future
    assert out.attrs["imputed_anchors"] == int(df.loc[expected, column].isna().sum())


# --- null anchors: legal deadlines -------------------------------------------------------------


_when = st.one_of(
    st.none(),
    st.datetimes(min_value=dt.datetime(1990, 1, 1), max_value=dt.datetime(2060, 12, 31)),
)


@FAST
@given(st.lists(_when, min_size=1, max_size=30), st.booleans())
def test_insider_deadline_is_the_second_weekday_after_the_trade(trades, aware):
    traded = _dates([None if t is None else pd.Timestamp(t).normalize() for t in trades])
    filed = pd.Series(pd.NaT, index=range(len(trades)), dtype="datetime64[ns]")
    if aware:  # v1 insider: filing_date is a UTC timestamp, the trade a naive date
        filed = filed.dt.tz_localize("UTC")
    df = pd.DataFrame({"date": traded, "filing_date": filed})
    df.attrs["dataset"] = "v1/insider_transactions" if aware else "insider_trading"
    public = public_times(df)
    assert public.dtype == df["filing_date"].dtype
    for trade, when in zip(df["date"], public, strict=True):
        if pd.isna(trade):
            assert pd.isna(when)  # nothing to count from: never public
            continue
        day = when.tz_convert(None) if aware else when
        assert day > trade and day.weekday() < 5 and day == day.normalize()
        # exactly 2 Monday-to-Friday days in (trade, deadline]
        assert (
            np.busday_count(
                (trade + pd.Timedelta(days=1)).date(), (day + pd.Timedelta(days=1)).date()
            )
            == 2
        )
        assert day == _deadline_oracle("insider_trading", trade)
    out = point_in_time(df, "2100-01-01")
    assert out.attrs["imputed_anchors"] == int(df["date"].notna().sum()) == len(out)
    assert point_in_time(df, "2100-01-01", null_anchor="drop").empty


@pytest.mark.parametrize(
    ("trade", "due"),
    [
        ("2024-01-01", "2024-01-03"),  # Monday -> Wednesday
        ("2024-01-04", "2024-01-08"),  # Thursday -> Monday
        ("2024-01-05", "2024-01-09"),  # Friday -> Tuesday
        ("2024-01-06", "2024-01-09"),  # Saturday -> Tuesday (Monday is the first)
        ("2024-01-07", "2024-01-09"),  # Sunday -> Tuesday
    ],
)
def test_insider_deadline_examples(trade, due):
    df = pd.DataFrame({"date": _dates([trade]), "filing_date": _dates([None])})
    df.attrs["dataset"] = "insider_trading"
    assert public_times(df).tolist() == [pd.Timestamp(due)]
    assert point_in_time(df, pd.Timestamp(due) - pd.Timedelta(seconds=1)).empty
    assert len(point_in_time(df, due)) == 1


@FAST
@given(st.lists(_when, min_size=1, max_size=30))
def test_congress_deadline_is_45_calendar_days(trades):
    df = pd.DataFrame({"date": _dates(trades), "disclosure_date": _dates([None] * len(trades))})
    df.attrs["dataset"] = "congress_trades"
    expected = df["date"] + pd.Timedelta(days=45)
    pd.testing.assert_series_equal(public_times(df), expected, check_names=False)
    dropped = public_times(df, null_anchor="drop")
    assert dropped.isna().all()


def test_v1_insider_aware_anchor_gets_a_utc_deadline():
    df = pd.DataFrame(
        {
            "symbol": ["AAPL", "AAPL"],
            "date": _dates(["2024-01-04", "2024-01-05"]),
            "filing_date": pd.to_datetime(["2024-01-04T21:05:00Z", None], utc=True),
        }
    )
    df.attrs["dataset"] = "v1/insider_transactions"
    assert public_times(df).tolist() == [
        pd.Timestamp("2024-01-04T21:05:00Z"),
        pd.Timestamp("2024-01-09", tz="UTC"),
    ]
    assert point_in_time(df, "2024-01-08T23:59:59Z").index.tolist() == [0]
    out = point_in_time(df, "2024-01-09")
    assert out.index.tolist() == [0, 1] and out.attrs["imputed_anchors"] == 1
    assert out["filing_date"].dtype == df["filing_date"].dtype


def test_null_anchor_without_a_deadline_is_dropped():
    lobbying = pd.DataFrame({"symbol": ["X"] * 2, "date": _dates(["2024-01-02", None])})
    lobbying.attrs["dataset"] = "lobbying"
    out = point_in_time(lobbying, "2030-01-01")
    assert out.index.tolist() == [0] and out.attrs["imputed_anchors"] == 0
    # The insider screener's anchor is the trade date: no deadline applies to it.
    screener = pd.DataFrame({"date": _dates([None]), "filing_date": _dates([None])})
    screener.attrs["dataset"] = "screener/insider-trading"
    assert point_in_time(screener, "2030-01-01").empty
    # An explicit anchor other than the rule's own: no deadline either.
    undated = _insider().assign(date=_dates([None, "2024-01-03", "2024-01-04", "2024-01-05"]))
    assert point_in_time(undated, "2030-01-01", anchor="date").index.tolist() == [11, 12, 13]
    # No trade date to count from: nothing to impute.
    no_event = _insider().drop(columns="date")
    assert point_in_time(no_event, "2030-01-01").index.tolist() == [10, 11, 12]


def test_legal_deadlines_come_from_the_registry():
    from mdframes.pit import legal_deadline
    from mdframes.registry import REGISTRY

    ruled = {n: ds for n, ds in REGISTRY.items() if ds.deadline is not None}
    for name, ds in ruled.items():
        assert ds.deadline.event in ds.columns and ds.anchor in ds.columns, name
        assert legal_deadline(name, ds.anchor) is ds.deadline
    assert {n: ds.deadline.days for n, ds in ruled.items()} == {
        "congress_trades": 45,
        "insider_trading": 2,
        "v1/insider_transactions": 2,
    }
    assert legal_deadline("lobbying", "date") is None
    assert legal_deadline(None, "filing_date") is REGISTRY["insider_trading"].deadline
    assert legal_deadline(None, "disclosure_date") is REGISTRY["congress_trades"].deadline
    assert legal_deadline("insider_trading", "date") is None


@pytest.mark.parametrize("bad", ["impute", "Drop", "", None, 0, ["drop"]])
def test_unknown_null_anchor_is_refused(bad):
    for call in (
        lambda: point_in_time(_insider(), "2024-01-05", null_anchor=bad),
        lambda: asof_join(_prices(), _insider(), null_anchor=bad),
        lambda: public_times(_insider(), null_anchor=bad),
    ):
        with pytest.raises(InvalidParameterError, match="null_anchor") as info:
            call()
        assert info.value.parameter == "null_anchor"


def test_asof_join_counts_rows_that_see_an_imputed_anchor():
    right = _insider()  # row 13: AAPL traded Friday 01-05, no filing date -> public 01-09
    left = pd.DataFrame(
        {
            "symbol": ["AAPL"] * 4,
            "date": _dates(["2024-01-08", "2024-01-09", "2024-01-10", "2024-03-02"]),
        }
    )
    out = asof_join(left, right)
    assert out["shares"].tolist() == [100, 400, 400, 200]
    assert out.attrs["imputed_anchors"] == 2
    assert out["filing_date"].isna().tolist() == [False, True, True, False]  # kept as sent
    dropped = asof_join(left, right, null_anchor="drop")
    assert dropped["shares"].tolist() == [100, 100, 100, 200]
    assert dropped.attrs["imputed_anchors"] == 0


def _loaded(client: md.Client, name: str) -> pd.DataFrame:
    if name.startswith("v1/"):
        return md.load(name, market="S&P 500", ticker="NVDA", client=client)
    return md.load(name, ["NVDA", "AAPL"], client=client)


@pytest.mark.parametrize(
    ("name", "anchor"),
    [
        ("insider_trading", "filing_date"),
        ("v1/insider_transactions", "filing_date"),
        ("congress_trades", "disclosure_date"),
    ],
)
def test_deadlines_on_sandbox_frames(client, name, anchor):
    df = _loaded(client, name)
    assert df.attrs["dataset"] == name and len(df) > 20
    # The sandbox sends few or no null anchors (congress: about 2%); null every third one
    # more so that each frame has some, as the service's own example has (issue 10, fact 3).
    df.loc[df.index[::3], anchor] = pd.NaT
    before = df.copy(deep=True)
    null = df[anchor].isna()
    public = public_times(df)
    for when, trade, is_null, sent in zip(public, df["date"], null, df[anchor], strict=True):
        if not is_null:
            assert when == sent
            continue
        due = _deadline_oracle(name, trade)
        assert when == (due.tz_localize(when.tzinfo) if when.tzinfo else due) and due > trade
    for as_of in df["date"].quantile([0.25, 0.5, 0.9]).tolist() + ["2100-01-01"]:
        out = point_in_time(df, as_of)
        cutoff = pd.Timestamp(as_of).tz_localize(public.dt.tz) if public.dt.tz else as_of
        assert out.index.equals(df.index[(public <= cutoff).to_numpy()])
        assert out.attrs["imputed_anchors"] == int(null[out.index].sum())
        assert out.attrs["dataset"] == name
        kept = point_in_time(df, as_of, null_anchor="drop")
        assert kept.index.equals(out.index[~null[out.index].to_numpy()])
        assert kept.attrs["imputed_anchors"] == 0
    assert point_in_time(df, "2100-01-01").attrs["imputed_anchors"] == int(null.sum())
    pd.testing.assert_frame_equal(df, before)  # input untouched
    days = pd.DataFrame(
        {"symbol": "NVDA", "date": pd.date_range(df["date"].min(), periods=400, freq="D")}
    )
    feats = asof_join(days, df[df["symbol"] == "NVDA"])
    seen = feats[anchor].isna() & feats["date_right"].notna()
    assert feats.attrs["imputed_anchors"] == int(seen.sum()) > 0


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
    assert out.attrs == {**left.attrs, "imputed_anchors": 0}


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
