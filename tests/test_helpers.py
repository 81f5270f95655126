"""Tests of the pure helpers: congress amounts, insider groups, app ratings, v1 forecasts."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mdframes as md
from mdframes import helpers
from mdframes.appratings import app_ratings_long
from mdframes.errors import InvalidParameterError, ResponseFormatError
from mdframes.helpers import (
    analyst_changes,
    congress_amount_bounds,
    expand_v1_forecast,
    insider_groups,
)
from mdframes.registry import INSIDER_GROUPS, INSIDER_TYPES

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- congress amounts -------------------------------------------------------------------------

BRACKETS = [
    ("$1,001 - $15,000", 1_001, 15_000),
    ("$15,001 - $50,000", 15_001, 50_000),
    ("$50,001 - $100,000", 50_001, 100_000),
    ("$100,001 - $250,000", 100_001, 250_000),
    ("$250,001 - $500,000", 250_001, 500_000),
    ("$500,001 - $1,000,000", 500_001, 1_000_000),
    ("$1,000,001 - $5,000,000", 1_000_001, 5_000_000),
]

# Every rule of the issue with its exact expected bounds (None: NA).
AMOUNT_TABLE = [
    *BRACKETS,
    ("Over $5,000,000", 5_000_001, None),
    ("Over $1,000,000", 1_000_001, None),
    ("Over $50,000,000", 50_000_001, None),
    ("Under $1,000", 0, 999),
    ("Under $15,000", 0, 14_999),
    ("$12,345", 12_345, 12_345),
    ("$12,345.67", 12_346, 12_346),  # cents round half up
    ("$12,345.49", 12_345, 12_345),
    ("12345", 12_345, 12_345),
    ("$0", 0, 0),
    # formatting variants of a bracket
    ("1,001 - 15,000", 1_001, 15_000),
    ("$1001 - $15000", 1_001, 15_000),
    ("1001-15000", 1_001, 15_000),
    ("$1,001-$15,000", 1_001, 15_000),
    ("$1,001   -   $15,000", 1_001, 15_000),
    ("$1,001 \u2013 $15,000", 1_001, 15_000),  # en dash
    ("$1,001\u2014$15,000", 1_001, 15_000),  # em dash
    ("$1,001 to $15,000", 1_001, 15_000),
    ("$1,001 TO $15,000", 1_001, 15_000),
    ("  $15,001 - $50,000\n", 15_001, 50_000),
    ("$15,001 -- $50,000", 15_001, 50_000),
    ("Between $1,001 and $15,000", 1_001, 15_000),
    ("over $5,000,000", 5_000_001, None),
    ("OVER  5000000", 5_000_001, None),
    ("under $1,000", 0, 999),
    ("UNDER 1000", 0, 999),
    ("\u00a0$12,345\u00a0", 12_345, 12_345),  # non-breaking spaces
    # NA rules
    ("Unknown", None, None),
    ("unknown", None, None),
    ("", None, None),
    ("   ", None, None),
    ("see filing", None, None),
    ("$1,001 - $15,000 (spouse)", None, None),
    ("$1,00,1", None, None),  # broken thousands grouping
    ("$15,000 - $1,001", None, None),  # min > max: never swapped
    ("Under $0", None, None),
    ("$-5", None, None),
    ("9" * 40, None, None),  # beyond any amount
    ("\u0661\u0662\u0663", None, None),  # digits of another script
    (None, None, None),
]


def _frame(amounts: list, **extra: list) -> pd.DataFrame:
    df = pd.DataFrame({"symbol": "AAPL", "amount": pd.array(amounts, dtype="string"), **extra})
    df.attrs["dataset"] = "congress_trades"
    return df


def _bounds(df: pd.DataFrame) -> list[tuple]:
    out = congress_amount_bounds(df)
    return [
        (None if pd.isna(lo) else int(lo), None if pd.isna(hi) else int(hi))
        for lo, hi in zip(out["amount_min"], out["amount_max"], strict=True)
    ]


@pytest.mark.parametrize(("text", "lo", "hi"), AMOUNT_TABLE)
def test_amount_table(text, lo, hi):
    assert _bounds(_frame([text])) == [(lo, hi)]


def test_amount_columns_dtypes_attrs_and_no_mutation():
    df = _frame([t for t, _, _ in AMOUNT_TABLE])
    before = df.copy(deep=True)
    out = congress_amount_bounds(df)
    pd.testing.assert_frame_equal(df, before)
    assert "amount_min" not in df.columns
    assert str(out["amount_min"].dtype) == "Int64" and str(out["amount_max"].dtype) == "Int64"
    assert list(out.columns) == [*df.columns, "amount_min", "amount_max"]
    assert out.attrs == {"dataset": "congress_trades"}
    expected = [(lo, hi) for _, lo, hi in AMOUNT_TABLE]
    assert _bounds(df) == expected


def test_amount_flags_raw_and_category_column():
    df = _frame(
        [
            "$1,001 - $15,000",  # clean bracket
            "$1,001 - $15,000",  # rewritten bracket: amount is the authority, not the raw text
            "Unknown",  # review: NA even with readable raw text
            "$1,000 - $15,000 or $15,001",  # ambiguous: NA
            "Unknown",  # unflagged Unknown: the filed text is used
            "Over $1,000,000",
        ],
        amount_raw=pd.array(
            [None, "1001 to 15000", "$50,001 - $100,000", None, "$15,001 - $50,000", None],
            dtype="string",
        ),
        amount_flag=pd.array([None, None, "review", "ambiguous", None, ""], dtype="string"),
    )
    expected = [
        (1_001, 15_000),
        (1_001, 15_000),
        (None, None),
        (None, None),
        (15_001, 50_000),
        (1_000_001, None),
    ]
    assert _bounds(df) == expected
    as_category = df.assign(amount=df["amount"].astype("category"))
    assert _bounds(as_category) == expected


def test_amount_works_on_v1_house_trades_text():
    # v1 keeps the filed text, without amount_raw or amount_flag columns.
    df = pd.DataFrame({"amount": ["$1,001 -$15,000", "15,001 - 50,000", "$100,001 to $250,000"]})
    df.attrs["dataset"] = "v1/house_trades"
    assert _bounds(df) == [(1_001, 15_000), (15_001, 50_000), (100_001, 250_000)]


def test_amount_parses_each_distinct_string_once(monkeypatch):
    calls: list = []
    real = helpers._parse_amount

    def counting(value):
        calls.append(value)
        return real(value)

    monkeypatch.setattr(helpers, "_parse_amount", counting)
    df = _frame(["$1,001 - $15,000", "Over $5,000,000", None] * 2000)
    out = congress_amount_bounds(df)
    assert sorted(calls) == sorted(["$1,001 - $15,000", "Over $5,000,000"])
    assert out["amount_min"].isna().sum() == 2000


def test_amount_needs_amount_column():
    with pytest.raises(InvalidParameterError, match="amount"):
        congress_amount_bounds(pd.DataFrame({"x": [1]}))


@FAST
@given(st.lists(st.one_of(st.none(), st.text(max_size=40)), min_size=1, max_size=8))
def test_amount_never_raises_and_min_le_max(texts):
    out = congress_amount_bounds(pd.DataFrame({"amount": pd.Series(texts, dtype=object)}))
    for lo, hi in zip(out["amount_min"], out["amount_max"], strict=True):
        if not pd.isna(lo) and not pd.isna(hi):
            assert 0 <= lo <= hi
        if pd.isna(lo):
            assert pd.isna(hi)  # never a max without a min


@st.composite
def _bracket_variant(draw):
    text, lo, hi = draw(st.sampled_from(BRACKETS + [("Over $5,000,000", 5_000_001, None)]))
    numbers = [lo, hi] if hi is not None else [lo - 1]
    dollar = draw(st.sampled_from(["$", ""]))
    commas = draw(st.booleans())
    fmt = [f"{dollar}{n:,}" if commas else f"{dollar}{n}" for n in numbers]
    pad = st.sampled_from(["", " ", "  ", "\t"])
    if hi is None:
        word = draw(st.sampled_from(["Over", "over", "OVER"]))
        variant = f"{draw(pad)}{word} {draw(pad)}{fmt[0]}{draw(pad)}"
    else:
        dash = draw(st.sampled_from(["-", "\u2013", "\u2014", "to", "TO", "To"]))
        if dash.isalpha():  # a word needs a space on each side
            variant = f"{draw(pad)}{fmt[0]} {dash} {fmt[1]}{draw(pad)}"
        else:
            variant = f"{draw(pad)}{fmt[0]}{draw(pad)}{dash}{draw(pad)}{fmt[1]}{draw(pad)}"
    return variant, lo, hi


@FAST
@given(_bracket_variant())
def test_every_bracket_variant_gives_exact_bounds(case):
    text, lo, hi = case
    assert _bounds(_frame([text])) == [(lo, hi)]


# --- insider groups ---------------------------------------------------------------------------


def test_insider_groups_spec_types():
    df = pd.DataFrame(
        {"transaction_type": pd.Categorical(list(INSIDER_TYPES), categories=INSIDER_TYPES)}
    )
    df.attrs["dataset"] = "insider_trading"
    before = df.copy(deep=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = insider_groups(df)
    pd.testing.assert_frame_equal(df, before)
    expected = {t: g for g, types in INSIDER_GROUPS.items() for t in types}
    assert out["group"].tolist() == [expected[t] for t in INSIDER_TYPES]
    assert isinstance(out["group"].dtype, pd.CategoricalDtype)
    assert list(out["group"].cat.categories) == ["acquisition", "disposition", "neutral"]
    assert out.attrs == {"dataset": "insider_trading"}


@pytest.mark.parametrize(
    ("text", "group"),
    [
        ("Buy", "acquisition"),  # screener
        ("Purchase", "acquisition"),
        ("Sale", "disposition"),
        ("Option Exercise", "acquisition"),  # v1
        ("Derivative Purchase", "acquisition"),
        ("derivative-sale", "disposition"),
        ("  OTHER_ACQUISITION ", "acquisition"),
        ("other disposition", "disposition"),
        ("conversion", "neutral"),
        ("Sell", "disposition"),
        ("GIFT", "disposition"),
        ("tax", "disposition"),
    ],
)
def test_insider_groups_variants(text, group):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = insider_groups(pd.DataFrame({"transaction_type": [text]}))
    assert out["group"].tolist() == [group]


def test_insider_groups_unknown_types_one_warning():
    df = pd.DataFrame(
        {"transaction_type": pd.array(["Buy", "Mystery", "Mystery", "Swap", None], dtype="string")}
    )
    with pytest.warns(UserWarning) as record:
        out = insider_groups(df)
    assert len(record) == 1
    message = str(record[0].message)
    assert "Mystery" in message and "Swap" in message and "Buy" not in message
    assert out["group"].isna().tolist() == [False, True, True, True, True]
    assert list(out["group"].cat.categories) == ["acquisition", "disposition", "neutral"]


def test_insider_groups_needs_column():
    with pytest.raises(InvalidParameterError, match="transaction_type"):
        insider_groups(pd.DataFrame({"type": ["Sale"]}))


# --- analyst changes --------------------------------------------------------------------------

NA = None
# (rating text, from, to): every documented spelling, and what must read as NA.
RATING_TABLE = [
    ("Buy", "Buy", "Buy"),
    ("Strong Buy", "Strong Buy", "Strong Buy"),
    ("  Mkt   Perform ", "Mkt Perform", "Mkt Perform"),
    ("Hold -> Buy", "Hold", "Buy"),
    ("Hold->Buy", "Hold", "Buy"),
    ("Underperform  ->  Outperform", "Underperform", "Outperform"),
    ("Hold \u2192 Buy", "Hold", "Buy"),
    ("Hold\u2192Buy", "Hold", "Buy"),
    ("Neutral to Outperform", "Neutral", "Outperform"),
    ("Neutral TO Outperform", "Neutral", "Outperform"),
    ("Sector Perform to Strong Buy", "Sector Perform", "Strong Buy"),
    ("Hold\u00a0->\u00a0Buy", "Hold", "Buy"),
    (None, NA, NA),
    ("", NA, NA),
    ("   ", NA, NA),
    ("-> Buy", NA, NA),
    ("Hold ->", NA, NA),
    ("Hold -> Buy -> Sell", NA, NA),
    ("Hold to Buy \u2192 Sell", NA, NA),
    ("to Buy", NA, NA),
]
PRICE_TABLE = [
    ("$200.73", 200.73, 200.73),
    ("$200", 200.0, 200.0),
    ("200.5", 200.5, 200.5),
    ("$1,234.50", 1234.5, 1234.5),
    ("US$ 99.99", 99.99, 99.99),
    ("$180.00 -> $200.00", 180.0, 200.0),
    ("$180.00->$200.00", 180.0, 200.0),
    ("$184.67 \u2192 $200.73", 184.67, 200.73),
    ("$180 to $200", 180.0, 200.0),
    ("$2,180.10 \u2192 2,200", 2180.1, 2200.0),
    (None, NA, NA),
    ("", NA, NA),
    ("n/a", NA, NA),
    ("$180.00 -> n/a", NA, NA),
    ("-> $200.00", NA, NA),
    ("$1,00.00", NA, NA),
    ("-$5", NA, NA),
    ("$1 -> $2 -> $3", NA, NA),
    ("$180 - $200", NA, NA),  # a hyphen is a range or a sign, never a change
]


def _na_or(value):
    return None if pd.isna(value) else value


@pytest.mark.parametrize(("text", "lo", "hi"), RATING_TABLE)
def test_analyst_rating_table(text, lo, hi):
    out = analyst_changes(pd.DataFrame({"rating": pd.array([text], dtype="string")}))
    assert [_na_or(out["rating_from"][0]), _na_or(out["rating_to"][0])] == [lo, hi]


@pytest.mark.parametrize(("text", "lo", "hi"), PRICE_TABLE)
def test_analyst_price_table(text, lo, hi):
    out = analyst_changes(pd.DataFrame({"target_price": pd.array([text], dtype="string")}))
    got = [_na_or(out["target_price_from"][0]), _na_or(out["target_price_to"][0])]
    assert got == [lo, hi]


def test_analyst_changes_dtypes_attrs_index_and_no_mutation():
    df = pd.DataFrame(
        {
            "rating": pd.Categorical(["Hold -> Buy", None, "Sell"]),
            "target_price": np.array(["$1 -> $2", "$3", None], dtype=object),
        },
        index=[7, 7, 3],  # a duplicated label must not misalign anything
    )
    df.attrs["dataset"] = "recent/analyst-ratings"
    before = df.copy(deep=True)
    out = analyst_changes(df)
    pd.testing.assert_frame_equal(df, before)
    assert list(out.columns) == [
        "rating",
        "target_price",
        "rating_from",
        "rating_to",
        "target_price_from",
        "target_price_to",
    ]
    assert isinstance(out["rating_from"].dtype, pd.StringDtype)
    assert isinstance(out["rating_to"].dtype, pd.StringDtype)
    assert str(out["target_price_from"].dtype) == str(out["target_price_to"].dtype) == "float64"
    assert out.index.tolist() == [7, 7, 3] and out.attrs == df.attrs
    assert out["rating_to"].tolist()[::2] == ["Buy", "Sell"] and pd.isna(out["rating_to"].iloc[1])
    assert out["target_price_from"].tolist()[:2] == [1.0, 3.0]
    assert np.isnan(out["target_price_to"].iloc[2])


def test_analyst_changes_missing_columns():
    only_rating = analyst_changes(pd.DataFrame({"rating": ["Buy"]}))
    assert only_rating["target_price_from"].isna().all()
    assert str(only_rating["target_price_to"].dtype) == "float64"
    only_price = analyst_changes(pd.DataFrame({"target_price": ["$5"]}))
    assert only_price["rating_from"].isna().all()
    assert isinstance(only_price["rating_to"].dtype, pd.StringDtype)
    with pytest.raises(InvalidParameterError, match="'rating' or 'target_price'"):
        analyst_changes(pd.DataFrame({"score": [0.1]}))
    empty = analyst_changes(pd.DataFrame({"rating": pd.Series([], dtype="string")}))
    assert len(empty) == 0 and str(empty["target_price_from"].dtype) == "float64"


_word = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz&%.", min_size=1)
_rating = (
    st.lists(_word, min_size=1, max_size=3)
    .map(" ".join)
    .filter(lambda r: not re.search(r"(?:^|\s)to(?:\s|$)", r, flags=re.I))
)
_space = st.sampled_from(["", " ", "  ", "\u00a0", "\t"])
_arrow = st.sampled_from(["->", "\u2192"])
_price = st.decimals(min_value=0, max_value=10**7, places=2, allow_nan=False)


def _separator(draw):
    if draw(st.booleans()):
        return draw(_space) + draw(_arrow) + draw(_space)
    return draw(_space.filter(bool)) + draw(st.sampled_from(["to", "To", "TO"])) + " "


@st.composite
def _rating_change(draw):
    old, new = draw(_rating), draw(_rating)
    return old, new, draw(_space) + old + _separator(draw) + new + draw(_space)


@st.composite
def _price_change(draw):
    old, new = draw(_price), draw(_price)

    def text(value):
        grouped = draw(st.booleans())
        number = f"{value:,.2f}" if grouped else f"{value:.2f}"
        return draw(st.sampled_from(["$", "", "US$", "$ "])) + number

    return float(old), float(new), text(old) + _separator(draw) + text(new)


@FAST
@given(st.lists(_rating_change(), min_size=1, max_size=8), st.sampled_from(["string", object]))
def test_every_rating_spelling_reads_both_sides(cases, dtype):
    df = pd.DataFrame({"rating": pd.Series([t for _, _, t in cases], dtype=dtype)})
    out = analyst_changes(df)
    assert out["rating_from"].tolist() == [o for o, _, _ in cases]
    assert out["rating_to"].tolist() == [n for _, n, _ in cases]
    single = analyst_changes(pd.DataFrame({"rating": [o for o, _, _ in cases]}))
    assert (
        single["rating_from"].tolist() == single["rating_to"].tolist() == single["rating"].tolist()
    )


@FAST
@given(st.lists(_price_change(), min_size=1, max_size=8))
def test_every_price_spelling_reads_both_sides(cases):
    out = analyst_changes(pd.DataFrame({"target_price": [t for _, _, t in cases]}))
    assert out["target_price_from"].tolist() == [o for o, _, _ in cases]
    assert out["target_price_to"].tolist() == [n for _, n, _ in cases]


@FAST
@given(st.lists(st.one_of(st.none(), st.text(max_size=30)), min_size=1, max_size=10))
def test_analyst_changes_never_raises_and_pairs_are_whole(texts):
    out = analyst_changes(pd.DataFrame({"rating": texts, "target_price": texts}))
    for a, b in (("rating_from", "rating_to"), ("target_price_from", "target_price_to")):
        assert (out[a].isna() == out[b].isna()).all()
    assert (out["target_price_from"].dropna() >= 0).all()


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("analyst_ratings", {"symbols": ["AAPL", "MSFT"]}),
        ("recent/analyst-ratings", {}),
        ("screener/analyst-ratings", {"region": "US"}),
        ("v1/analyst_ratings", {"market": "S&P 500", "ticker": "AAPL"}),
    ],
)
def test_analyst_changes_on_sandbox_frames(client, name, params):
    params = dict(params)
    df = md.load(name, params.pop("symbols", None), client=client, **params)
    out = analyst_changes(df)
    assert len(out) == len(df) > 0 and out.attrs == df.attrs
    rating, price = df["rating"].astype(object), df["target_price"].astype(object)
    for i in range(len(df)):
        r, p = rating.iloc[i], price.iloc[i]
        old, new = out["rating_from"].iloc[i], out["rating_to"].iloc[i]
        if isinstance(r, str) and "->" in r:
            assert f"{old} -> {new}" == r
        else:
            assert old == new == r
        lo, hi = out["target_price_from"].iloc[i], out["target_price_to"].iloc[i]
        if not isinstance(p, str) or not p:
            assert np.isnan(lo) and np.isnan(hi)
            continue
        texts = p.split(" \u2192 ") if "\u2192" in p else [p, p]
        assert [lo, hi] == [float(t.lstrip("$").replace(",", "")) for t in texts]
    assert out["target_price_from"].notna().any()


# --- app ratings ------------------------------------------------------------------------------

# Same observations, in every shape: (date, platform) -> (score, ratings, installs).
OBS = {
    ("2026-09-05", "ios"): (4.7, 1200, None),
    ("2026-09-05", "android"): (4.4, 900, 50_000),
    ("2026-09-04", "ios"): (4.6, 1190, None),
    ("2026-09-04", "android"): None,  # null platform that day
    ("2026-09-03", "ios"): (4.6, 1180, None),
    ("2026-09-03", "android"): (4.3, 880, None),  # install count unknown
}
DATES = ["2026-09-05", "2026-09-04", "2026-09-03"]


def _current_payload() -> dict:
    apps = []
    for platform, app_id, app_name in [
        ("ios", "284882215", "Example"),
        ("android", "com.example.app", "Example"),
    ]:
        observations = []
        for d in DATES:
            obs = OBS[(d, platform)]
            score, count, installs = obs if obs else (None, None, None)
            observations.append(
                {"date": d, "score": score, "ratingsCount": count, "installCount": installs}
            )
        apps.append(
            {
                "platform": platform,
                "appId": app_id,
                "appName": app_name,
                "observations": observations,
            }
        )
    data = {"symbol": "EXM", "name": "Example Inc", "cik": "0000123456", "data": [], "apps": apps}
    return {"success": True, "data": data, "meta": {"timestamp": "2026-09-06T00:00:00Z"}}


def _weekly_data() -> dict:
    entries = []
    for d in DATES:
        entry: dict = {"date": d}
        for platform in ("ios", "android"):
            obs = OBS[(d, platform)]
            if obs is None:
                entry[platform] = None
                continue
            entry[platform] = {"score": obs[0], "ratingsCount": obs[1]}
            if platform == "android":
                entry[platform]["installCount"] = obs[2]
        entries.append(entry)
    return {"symbol": "EXM", "name": "Example Inc", "cik": None, "data": entries}


def _v1_payload() -> dict:
    records = []
    for d in DATES:
        ios = OBS[(d, "ios")] or (None, None, None)
        android = OBS[(d, "android")] or (None, None, None)
        records.append(
            {
                "date": d,
                "appStoreScore": ios[0],
                "appStoreRatingsCount": ios[1],
                "playStoreScore": android[0],
                "playStoreRatingsCount": android[1],
                "playStoreInstallCount": android[2],
            }
        )
    return {"ticker": "EXM", "name": "Example Inc", "appRatings": records}


def _daily_frame() -> pd.DataFrame:
    def col(platform: str, i: int) -> list:
        return [(OBS[(d, platform)] or (None, None, None))[i] for d in DATES]

    df = pd.DataFrame(
        {
            "symbol": pd.array(["EXM"] * 3, dtype="string"),
            "name": pd.array(["Example Inc"] * 3, dtype="string"),
            "date": pd.to_datetime(DATES).astype("datetime64[ns]"),
            "ios_score": pd.array(col("ios", 0), dtype="float64"),
            "ios_ratings_count": pd.array(col("ios", 1), dtype="Int64"),
            "android_score": pd.array([np.nan if v is None else v for v in col("android", 0)]),
            "android_ratings_count": pd.array(col("android", 1), dtype="Int64"),
            "android_install_count": pd.array(col("android", 2), dtype="Int64"),
        }
    )
    df.attrs["dataset"] = "app_ratings_daily"
    return df


APP_DTYPES = {
    "symbol": "string",
    "name": "string",
    "cik": "string",
    "platform": "category",
    "app_id": "string",
    "app_name": "string",
    "date": "datetime64[ns]",
    "score": "float64",
    "ratings_count": "Int64",
    "install_count": "Int64",
}


def test_app_ratings_long_columns_dtypes_order():
    out = app_ratings_long(_current_payload())
    assert {c: str(t) for c, t in out.dtypes.items()} == APP_DTYPES
    assert list(out["platform"].cat.categories) == ["ios", "android"]
    # five observations: the null android day gives no row; oldest first, as the loaders
    # order rows (CONTRACT §2), ties by platform (ios first) and app
    assert out[["platform", "date"]].astype(str).values.tolist() == [
        ["ios", "2026-09-03"],
        ["android", "2026-09-03"],
        ["ios", "2026-09-04"],
        ["ios", "2026-09-05"],
        ["android", "2026-09-05"],
    ]
    ios, android = "284882215", "com.example.app"
    assert out["app_id"].tolist() == [ios, android, ios, ios, android]
    assert out["cik"].unique().tolist() == ["0000123456"]
    assert out["install_count"].isna().tolist() == [True, True, True, True, False]
    assert out.attrs["dataset"] == "app_ratings"
    assert out.index.equals(pd.RangeIndex(5))


def test_app_ratings_long_shapes_agree():
    daily = _daily_frame()
    before = daily.copy(deep=True)
    from_daily = app_ratings_long(daily)
    pd.testing.assert_frame_equal(daily, before)
    from_weekly = app_ratings_long(_weekly_data())
    from_weekly_env = app_ratings_long({"success": True, "data": _weekly_data(), "meta": {}})
    from_v1 = app_ratings_long(_v1_payload())
    from_current = app_ratings_long(_current_payload())
    from_current_data = app_ratings_long(_current_payload()["data"])

    assert len(from_daily) == 5
    pd.testing.assert_frame_equal(from_weekly, from_daily)
    pd.testing.assert_frame_equal(from_weekly_env, from_daily)
    pd.testing.assert_frame_equal(from_v1, from_daily)
    pd.testing.assert_frame_equal(from_current, from_current_data)
    # The current shape adds app identity and cik; the observations are the same.
    same = ["symbol", "name", "platform", "date", "score", "ratings_count", "install_count"]
    pd.testing.assert_frame_equal(from_current[same], from_daily[same])


def test_app_ratings_long_several_payloads_in_the_callers_order_oldest_first():
    other = _v1_payload()
    other["ticker"] = "ABC"
    out = app_ratings_long([_v1_payload(), other])
    assert out["symbol"].tolist() == ["EXM"] * 5 + ["ABC"] * 5
    for _, rows in out.groupby("symbol", sort=False):
        assert rows["date"].is_monotonic_increasing


def test_app_ratings_long_two_apps_on_one_platform():
    payload = _current_payload()
    second = {
        "platform": "ios",
        "appId": "111",
        "appName": "Example Lite",
        "observations": [
            {"date": "2026-09-03", "score": 4.0, "ratingsCount": 10, "installCount": None},
            {"date": "2026-09-05", "score": None, "ratingsCount": 0, "installCount": None},
        ],
    }
    payload["data"]["apps"].append(second)
    out = app_ratings_long(payload)
    ios = out[out["platform"] == "ios"]
    assert ios["app_id"].tolist() == ["111", "284882215", "284882215", "111", "284882215"]
    assert (
        ios["date"].astype(str).tolist() == ["2026-09-03"] * 2 + ["2026-09-04"] + ["2026-09-05"] * 2
    )
    # unrated but counted (0 ratings): kept, score NA
    unrated = ios[(ios["app_id"] == "111") & (ios["date"] == "2026-09-05")]
    assert pd.isna(unrated["score"].iloc[0]) and unrated["ratings_count"].iloc[0] == 0


def test_app_ratings_long_empty_and_errors():
    empty = app_ratings_long(
        {"symbol": "EXM", "name": "Example", "cik": None, "data": [], "apps": []}
    )
    assert len(empty) == 0
    assert {c: str(t) for c, t in empty.dtypes.items()} == APP_DTYPES
    with pytest.raises(ResponseFormatError, match="platform"):
        bad = _current_payload()
        bad["data"]["apps"][0]["platform"] = "windows"
        app_ratings_long(bad)
    with pytest.raises(ResponseFormatError):
        app_ratings_long({"symbol": "EXM"})
    with pytest.raises(InvalidParameterError):
        app_ratings_long("not a payload")


# --- v1 forecast ------------------------------------------------------------------------------

V1_FORECAST = {
    "ticker": "AAPL",
    "name": "Apple Inc.",
    "prediction": {
        "2024-03-07": "172.5,170.1,175.0",
        "2024-03-06": "171.25,169.5,173.75",
        "expectedShort": "1.2",
        "expectedMid": "2.1",
        "expectedLong": "3.3",
        "technicalAnalysis": "Uptrend, 1,2,3 pattern",
        "type": "daily",
        "lastUpdate": "2024-03-05T21:00:00Z",
        "comment": "x",
    },
}


def test_expand_v1_forecast():
    before = {**V1_FORECAST, "prediction": dict(V1_FORECAST["prediction"])}
    out = expand_v1_forecast(V1_FORECAST)
    assert before == V1_FORECAST
    assert list(out.columns) == ["date", "main", "lower", "upper"]
    assert {c: str(t) for c, t in out.dtypes.items()} == {
        "date": "datetime64[ns]",
        "main": "float64",
        "lower": "float64",
        "upper": "float64",
    }
    assert out["date"].astype(str).tolist() == ["2024-03-06", "2024-03-07"]
    assert out["main"].tolist() == [171.25, 172.5]
    assert out["lower"].tolist() == [169.5, 170.1]
    assert out["upper"].tolist() == [173.75, 175.0]
    pd.testing.assert_frame_equal(expand_v1_forecast(V1_FORECAST["prediction"]), out)


def test_expand_v1_forecast_empty():
    out = expand_v1_forecast({"type": "monthly", "lastUpdate": "2024-03-05T21:00:00Z"})
    assert len(out) == 0 and list(out.columns) == ["date", "main", "lower", "upper"]
    assert str(out["date"].dtype) == "datetime64[ns]" and str(out["main"].dtype) == "float64"


@pytest.mark.parametrize("value", ["1,2", "a,b,c", "1,2,3,4", "", "1,,3", None, 7])
def test_expand_v1_forecast_malformed_names_the_date(value):
    with pytest.raises(ResponseFormatError, match="2024-03-06"):
        expand_v1_forecast({"2024-03-05": "1,0.5,2", "2024-03-06": value})


def test_expand_v1_forecast_impossible_date_and_non_object():
    with pytest.raises(ResponseFormatError):
        expand_v1_forecast({"2024-02-30": "1,0.5,2"})
    with pytest.raises(ResponseFormatError):
        expand_v1_forecast(["2024-03-05"])  # type: ignore[arg-type]


_finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@FAST
@given(
    st.dictionaries(
        st.dates(
            min_value=pd.Timestamp("2000-01-01").date(), max_value=pd.Timestamp("2100-12-31").date()
        ),
        st.tuples(_finite, _finite, _finite),
        max_size=12,
    )
)
def test_expand_v1_forecast_round_trips(forecast):
    prediction = {d.isoformat(): ",".join(repr(v) for v in vals) for d, vals in forecast.items()}
    prediction |= {"type": "daily", "expectedShort": "0.5", "lastUpdate": "2024-01-01T00:00:00Z"}
    out = expand_v1_forecast({"ticker": "T", "name": "T", "prediction": prediction})
    expected = sorted(forecast.items())
    assert [d.date() for d in out["date"]] == [d for d, _ in expected]
    assert out[["main", "lower", "upper"]].values.tolist() == [list(v) for _, v in expected]


def test_helpers_are_exported():
    assert md.congress_amount_bounds is congress_amount_bounds
    assert md.app_ratings_long is app_ratings_long
    assert md.expand_v1_forecast is expand_v1_forecast
    assert md.insider_groups is insider_groups
    assert md.analyst_changes is analyst_changes


def test_amount_text_is_parsed_once_per_process_with_the_same_bounds():
    # Each panel of congress features parses its amounts again: the text's bounds are
    # remembered, and a second frame of the same texts gets the first's answers.
    texts = [t for t, _, _ in AMOUNT_TABLE if isinstance(t, str)]
    helpers._parse_text.cache_clear()
    first = _bounds(_frame(texts))
    misses = helpers._parse_text.cache_info().misses
    assert misses == len(set(texts))
    assert _bounds(_frame(texts)) == first == [(lo, hi) for t, lo, hi in AMOUNT_TABLE if t in texts]
    assert helpers._parse_text.cache_info().misses == misses  # nothing parsed twice
