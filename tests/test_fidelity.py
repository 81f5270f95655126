"""What the live service really sends, replayed through the real client over loopback:
graded validation, tolerant shapes, strict JSON types, order and symbols (issues 10 and 11)."""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd
import pytest

import mdframes as md

from .replay import envelope, insider_body, insider_trade, replay


def _pcr(symbol: str, rows: list[tuple[str, int, int, int]]) -> dict[str, Any]:
    return envelope(
        {
            "symbol": symbol,
            "name": f"{symbol} Inc.",
            "data": [
                {
                    "date": d,
                    "ratio": round(p / c, 2),
                    "callVolume": c,
                    "putVolume": p,
                    "totalVolume": t,
                    "price": 100.0,
                }
                for d, t, c, p in rows
            ],
        }
    )


# The two rows of the service's published put/call example: total = calls + puts + 1.
DOCUMENTED = [("2026-03-03", 931034, 620689, 310344), ("2026-03-02", 1070205, 442233, 627971)]


def test_documented_put_call_rows_load_without_a_warning() -> None:
    with replay({"/v2/put-call-ratio/TSLA": _pcr("TSLA", DOCUMENTED)}) as (client, _):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            df = md.load_put_call_ratio("TSLA", client=client)
    assert df.attrs["quality"] == []
    assert df["date"].is_monotonic_increasing  # oldest first, though the service sent newest
    assert df["total_volume"].tolist() == [1070205, 931034]


def test_a_gap_of_five_warns_once_and_is_recorded() -> None:
    rows = [*DOCUMENTED, ("2026-03-01", 1005, 500, 500)]
    with replay({"/v2/put-call-ratio/TSLA": _pcr("TSLA", rows)}) as (client, _):
        with pytest.warns(md.DataQualityWarning) as caught:
            df = md.load_put_call_ratio("TSLA", client=client)
        assert len([w for w in caught if w.category is md.DataQualityWarning]) == 1
        assert len(df) == 3  # nothing lost
        (entry,) = df.attrs["quality"]
        assert entry["check"] == "total_volume" and entry["rows"] == 1
        assert entry["symbols"] == ["TSLA"] and set(entry["columns"]) >= {"total_volume"}
        with pytest.raises(md.DataValidationError, match="total_volume"):
            md.load_put_call_ratio("TSLA", client=client, validate="strict")
        quiet = md.load_put_call_ratio("TSLA", client=client, validate=False)
        assert quiet.attrs["quality"] == [] and len(quiet) == 3


def _sentiment(symbol: str, scores: list[Any]) -> dict[str, Any]:
    days = pd.date_range("2026-03-01", periods=len(scores)).strftime("%Y-%m-%d")
    data = [{"date": d, "score": s} for d, s in zip(days, scores, strict=True)]
    return envelope({"symbol": symbol, "name": symbol, "data": data[::-1]})


def test_a_hard_failure_names_its_symbol_and_skip_drops_only_it() -> None:
    bodies = {
        "/v2/sentiment/GOOD": _sentiment("GOOD", [0.1, 0.2]),
        "/v2/sentiment/BAD": _sentiment("BAD", [0.3, 1.7]),
    }
    with replay(bodies) as (client, _):
        with pytest.raises(md.DataValidationError, match="BAD") as info:
            md.load_sentiment(["GOOD", "BAD"], client=client)
        assert info.value.symbols == ["BAD"] and "1.7" in str(info.value)
        with pytest.warns(UserWarning, match="BAD"):
            df = md.load_sentiment(["GOOD", "BAD"], client=client, errors="skip")
        assert df["symbol"].unique().tolist() == ["GOOD"] and len(df) == 2
        assert list(df.attrs["failed"]) == ["BAD"]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (True, "boolean"),  # JSON true is not 1.0
        ({}, "object"),  # {} is not NaN
        ([0.5], "array"),
    ],
)
def test_wrong_json_types_in_a_number_field_are_refused(bad: Any, message: str) -> None:
    bodies = {
        "/v2/sentiment/GOOD": _sentiment("GOOD", [0.1]),
        "/v2/sentiment/ODD": _sentiment("ODD", [0.3, bad]),
    }
    with replay(bodies) as (client, _):
        with pytest.raises(md.ResponseFormatError, match=message):
            md.load_sentiment("ODD", client=client)
        with pytest.warns(UserWarning, match="ODD"):
            df = md.load_sentiment(["GOOD", "ODD"], client=client, errors="skip")
        assert df["symbol"].unique().tolist() == ["GOOD"] and "ODD" in df.attrs["failed"]


_insider, _trade = insider_body, insider_trade


@pytest.mark.parametrize(
    ("records", "message"),
    [
        (None, "null"),  # a null list is not "no records"
        ([["not", "a", "record"]], "non-record"),
        (["text"], "non-record"),
        ([_trade(insider=["x"])], "array"),
        ([_trade(insider=True)], "boolean"),
        ([_trade(date=["2026-03-02"])], "array"),
        ([_trade(shares=2**70)], "shares"),
    ],
)
def test_malformed_records_are_format_errors(records: Any, message: str) -> None:
    with replay({"/v2/insider-trading/AAA": _insider("AAA", records)}) as (client, _):
        with pytest.raises(md.ResponseFormatError, match=message):
            md.load_insider_trading("AAA", client=client)


def test_an_empty_record_is_a_hard_failure_not_an_all_na_row() -> None:
    with replay({"/v2/insider-trading/AAA": _insider("AAA", [_trade(), {}])}) as (client, _):
        with pytest.raises(md.DataValidationError, match="required"):
            md.load_insider_trading("AAA", client=client)


def test_an_empty_list_is_an_empty_result() -> None:
    with replay({"/v2/insider-trading/AAA": _insider("AAA", [])}) as (client, _):
        df = md.load_insider_trading("AAA", client=client)
    assert len(df) == 0 and df["shares"].dtype == "Int64"


def test_null_filing_date_and_new_vocabulary_are_soft() -> None:
    records = [
        _trade(filingDate=None),
        _trade(date="2026-03-01", transactionType="Gift_Split", newField=3),
    ]
    with replay({"/v2/insider-trading/AAA": _insider("AAA", records)}) as (client, _):
        with pytest.warns(md.DataQualityWarning):
            df = md.load_insider_trading("AAA", client=client)
    checks = {q["check"] for q in df.attrs["quality"]}
    assert {"not_null", "in_vocabulary"} <= checks
    assert "Gift_Split" in df["transaction_type"].cat.categories  # kept as an added category
    assert df["new_field"].tolist() == [3, None] or df["new_field"].isna().sum() == 1
    assert df["filing_date"].isna().sum() == 1  # loaded as NA, counted, not dropped


def test_an_answer_about_another_symbol_is_refused() -> None:
    with replay({"/v2/insider-trading/AAPL": _insider("TSLA", [_trade()])}) as (client, _):
        with pytest.raises(md.DataValidationError, match="TSLA") as info:
            md.load_insider_trading("AAPL", client=client)
    assert info.value.symbols == ["AAPL"]


def test_symbols_are_normalised_before_anything_is_sent() -> None:
    with replay({"/v2/insider-trading/AAPL": _insider("AAPL", [_trade()])}) as (client, seen):
        df = md.load_insider_trading(" aapl ", client=client)
    assert seen == ["/v2/insider-trading/AAPL"] and df["symbol"].tolist() == ["AAPL"]


def test_duplicate_records_are_soft() -> None:
    contract = {
        "awardId": "A-1",
        "awardAmount": 5.0,
        "awardType": "",
        "awardingAgency": "DoD",
        "awardingSubAgency": "Army",
        "recipientName": "LMT",
        "startDate": "2026-01-02",
        "endDate": "",
        "description": "x",
        "naicsCode": "336411",
        "naicsDescription": "Aircraft",
        "contractAwardType": "",
        "cik": None,
    }
    body = envelope({"symbol": "LMT", "name": "LMT", "contracts": [contract, dict(contract)]})
    with replay({"/v2/government-contracts/LMT": body}) as (client, _):
        with pytest.warns(md.DataQualityWarning):
            df = md.load_government_contracts("LMT", limit=10, client=client)
    assert len(df) == 2 and [q["check"] for q in df.attrs["quality"]] == ["no_duplicates"]


def test_a_timestamp_with_an_offset_keeps_the_date_as_written() -> None:
    records = [_trade(filingDate="2026-03-04T23:30:00-05:00")]
    with replay({"/v2/insider-trading/AAA": _insider("AAA", records)}) as (client, _):
        df = md.load_insider_trading("AAA", client=client)
    assert df["filing_date"].tolist() == [pd.Timestamp("2026-03-04")]


# --- tolerant shapes ------------------------------------------------------------------------


def test_bare_lists_load_like_the_wrapped_form() -> None:
    markets = [{"name": "S&P 500", "region": "US"}]
    rows = [{"symbol": "AAPL", "name": "Apple", "date": "2026-03-02", "score": 0.4}]
    bodies = {
        "/v2/markets": envelope(markets),
        "/v2/screener/sentiment": envelope(rows),
        "/v2/recent/news": envelope([]),
    }
    with replay(bodies) as (client, _):
        assert md.load_markets(client=client)["name"].tolist() == ["S&P 500"]
        screen = md.load_screener("sentiment", region="US", client=client)
        assert screen["score"].tolist() == [0.4] and screen.attrs["summary"] == {}
        assert len(md.load_recent("news", client=client)) == 0


# --- one column name, one dtype, everywhere ----------------------------------------------------

# The documented exceptions (docs: "one name, one dtype"): forum mentions' `date` is a UTC
# timestamp (the service sends times); v1 `filing_date` is UTC-aware (v1 sends a timestamp).
EXCEPTIONS = {("date", "forum_mentions"), ("date", "screener/forum-mentions")}
EXCEPTIONS |= {("filing_date", "v1/insider_transactions")}


def test_one_column_name_has_one_dtype_across_every_frame(client: md.Client) -> None:
    from mdframes.registry import REGISTRY, example_arguments

    seen: dict[str, dict[str, list[str]]] = {}
    for name, ds in REGISTRY.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = md.load(name, client=client, **example_arguments(ds))
        for column, dtype in df.dtypes.items():
            if (column, name) in EXCEPTIONS:
                continue
            kind = "category" if isinstance(dtype, pd.CategoricalDtype) else str(dtype)
            seen.setdefault(str(column), {}).setdefault(kind, []).append(name)
    clashes = {c: k for c, k in seen.items() if len(k) > 1}
    assert clashes == {}


def test_every_dataset_loads_what_the_live_service_sends() -> None:
    from mdframes.registry import REGISTRY, example_arguments

    # The sandbox's quirks are the live service's documented facts: truncated put/call
    # volumes, null filing dates, non-empty award types, new vocabulary, bare lists.
    with md.sandbox.running(quirks=True, bare_lists=True) as client:
        for name, ds in REGISTRY.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", md.DataQualityWarning)
                df = md.load(name, client=client, **example_arguments(ds))
            checks = {q["check"] for q in df.attrs["quality"]}
            assert checks <= {"not_null", "in_vocabulary"}, (name, df.attrs["quality"])
        symbols = ["AAPL", "MSFT", "NVDA", "TSLA", "AMZN", "META", "JPM", "IBM"]
        pcr = md.load_put_call_ratio(symbols, client=client)
        gap = pcr["total_volume"] - pcr["call_volume"] - pcr["put_volume"]
        assert set(gap.unique()) == {0, 1} and pcr.attrs["quality"] == []
        with pytest.warns(md.DataQualityWarning):
            insider = md.load_insider_trading(symbols, client=client, start="2024-01-01")
        found = {(q["check"], tuple(q["columns"])) for q in insider.attrs["quality"]}
        assert ("not_null", ("filing_date",)) in found
        assert ("in_vocabulary", ("transaction_type",)) in found
        assert "Inheritance" in insider["transaction_type"].cat.categories
        assert "security_title" in insider.columns  # a field the service added is kept
        contracts = md.load_government_contracts("LMT", client=client)
        assert contracts["award_type"].notna().any() and (contracts["award_type"] != "").all()
