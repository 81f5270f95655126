"""Soft rules complete, malformed data typed (issue 18): a null in a field the spec does not
mark nullable warns and is recorded naming its column, for every dataset the registry holds
(a new entry included); malformed app ratings and foreign symbols are typed errors or
recorded warnings, never a TypeError or a silent drop; a number beyond Int64 says so.
Payloads are replayed through the real client over loopback."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import mdframes as md
from mdframes import schemas
from mdframes.registry import REGISTRY, Dataset, Field

from .replay import ABSENT, envelope, insider_trade, replay


def _quality_columns(df: Any) -> dict[str, list[str]]:
    return {c: [q["check"] for q in df.attrs["quality"] if c in q["columns"]] for c in df}


# "cik" is "string or null": a null gives no warning either.
def _trade(**over: Any) -> dict[str, Any]:
    return insider_trade(**{"cik": None, **over})


_ABSENT = ABSENT

# (path, body, column that must be named): each a null the spec does not announce.
CASES = {
    "insider shares": (
        "/v2/insider-trading/AAA",
        envelope({"symbol": "AAA", "name": "A", "transactions": [_trade(shares=None)]}),
        "shares",
    ),
    "insider name": (
        "/v2/insider-trading/AAA",
        envelope({"symbol": "AAA", "name": "A", "transactions": [_trade(insider=None)]}),
        "insider",
    ),
    "missing pricePerShare": (
        "/v2/insider-trading/AAA",
        envelope({"symbol": "AAA", "name": "A", "transactions": [_trade(pricePerShare=_ABSENT)]}),
        "price_per_share",
    ),
    "congress politician": (
        "/v2/congress/house/AAA",
        envelope(
            {
                "symbol": "AAA",
                "name": "A",
                "chamber": "house",
                "trades": [
                    {
                        "date": "2026-03-02",
                        "politician": None,
                        "transactionType": "Sale",
                        "amount": "$1,001 - $15,000",
                        "owner": None,
                        "amountRaw": None,
                        "amountFlag": None,
                        "disclosureDate": None,
                    }
                ],
            }
        ),
        "politician",
    ),
    "sentiment score": (
        "/v2/sentiment/AAA",
        envelope({"symbol": "AAA", "name": "A", "data": [{"date": "2026-03-02", "score": None}]}),
        "score",
    ),
}


def _load(path: str, client: md.Client, **kw: Any) -> Any:
    if path.startswith("/v2/congress"):
        return md.load_congress_trades("AAA", chamber="house", client=client, **kw)
    name = {"insider-trading": "insider_trading", "sentiment": "sentiment"}[path.split("/")[2]]
    return md.load(name, "AAA", client=client, **kw)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_null_the_spec_does_not_announce_warns_and_names_its_column(case: str) -> None:
    path, body, column = CASES[case]
    with replay({path: body}) as (client, _):
        with pytest.warns(md.DataQualityWarning, match="not_null"):
            df = _load(path, client)
        assert len(df) == 1  # kept as loaded
        named = _quality_columns(df)
        assert named[column] == ["not_null"], df.attrs["quality"]
        # Only that column: nullable fields (cik, owner, amount_raw, ...) stay quiet.
        assert [c for c, checks in named.items() if checks] == [column]
        entry = next(q for q in df.attrs["quality"] if column in q["columns"])
        assert entry["rows"] == 1 and entry["symbols"] == ["AAA"]
        with pytest.raises(md.DataValidationError, match=column):
            _load(path, client, validate="strict")


def test_every_field_a_stated_dataset_declares_is_not_null_unless_marked() -> None:
    for ds in REGISTRY.values():
        for f in ds.all_fields:
            kinds = {r.name for r in schemas.rules(ds.name) if r.columns == (f.name,)}
            if ds.fields_stated and f.nullable is None:
                assert kinds & {"not_null", "required"}, (ds.name, f.name)
            if ds.nullable(f):
                assert "not_null" not in kinds, (ds.name, f.name)


def test_a_dataset_added_at_run_time_gets_the_not_null_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = REGISTRY["sentiment"]
    new = dataclasses.replace(
        base, name="mood", fields=(Field("date", "date"), Field("mood", "float"))
    )
    monkeypatch.setitem(REGISTRY, "mood", new)
    assert ("mood",) in {r.columns for r in schemas.rules("mood") if r.name == "not_null"}
    optional = dataclasses.replace(new, name="mood_open", fields_stated=False)
    monkeypatch.setitem(REGISTRY, "mood_open", optional)
    assert [r.name for r in schemas.rules("mood_open") if r.columns == ("mood",)] == [
        "dtype_is_float"
    ]
    assert isinstance(new, Dataset)


# --- malformed app ratings ------------------------------------------------------------------


def _apps(*apps: dict[str, Any]) -> dict[str, Any]:
    return envelope({"symbol": "AAA", "name": "A", "cik": None, "data": [], "apps": list(apps)})


def _app(app_id: str, dates: list[Any], platform: str = "ios") -> dict[str, Any]:
    return {
        "platform": platform,
        "appId": app_id,
        "appName": f"App {app_id}",
        "observations": [
            {"date": d, "score": 4.0, "ratingsCount": 10, "installCount": None} for d in dates
        ],
    }


@pytest.mark.parametrize("bad", [["2026-10-01"], {"day": "2026-10-01"}])
@pytest.mark.parametrize("limit", [None, 10])  # walked window, and one page as asked
def test_an_observation_date_that_is_a_list_or_object_is_a_typed_error(
    bad: Any, limit: int | None
) -> None:
    body = _apps(_app("1", ["2026-10-02", bad]))
    with replay({"/v2/app-ratings/AAA": body}) as (client, _):
        with pytest.raises(md.ResponseFormatError, match="'date'"):
            md.load_app_ratings("AAA", start="2026-10-01", limit=limit, client=client)


def test_an_app_without_observations_is_a_recorded_warning_naming_it() -> None:
    silent = {"platform": "android", "appId": "com.a.quiet", "appName": "Quiet"}
    body = _apps(_app("1", ["2026-10-02"]), silent)
    with replay({"/v2/app-ratings/AAA": body}) as (client, _):
        with pytest.warns(md.DataQualityWarning, match="app_observations"):
            df = md.load_app_ratings("AAA", start="2026-10-01", client=client)
        assert len(df) == 1
        (entry,) = df.attrs["quality"]
        assert entry["check"] == "app_observations" and entry["symbols"] == ["AAA"]
        assert entry["sample"] == [
            {"platform": "android", "app_id": "com.a.quiet", "app_name": "Quiet"}
        ]
        with pytest.raises(md.DataValidationError, match="com.a.quiet"):
            md.load_app_ratings("AAA", start="2026-10-01", client=client, validate="strict")
        assert (
            md.load_app_ratings("AAA", start="2026-10-01", client=client, validate=False).attrs[
                "quality"
            ]
            == []
        )


def test_a_forecast_prediction_naming_another_symbol_is_a_hard_failure() -> None:
    body = envelope(
        {
            "symbol": "AAA",
            "name": "A",
            "type": "daily",
            "predictions": [
                {"date": "2026-11-23", "mid": 1.0, "lower": 0.5, "upper": 2.0},
                {"date": "2026-11-24", "mid": 1.0, "lower": 0.5, "upper": 2.0, "symbol": "BBB"},
            ],
            "metadata": {},
            "lastUpdated": "2026-11-20T00:00:00Z",
        }
    )
    with replay({"/v2/predictions/daily/AAA": body}) as (client, _):
        with pytest.raises(md.DataValidationError, match="BBB") as info:
            md.load_forecast("AAA", client=client)
    assert info.value.symbols == ["AAA"]


@pytest.mark.parametrize("volume", [2**63, 2**64, 2**70])
def test_a_volume_beyond_int64_names_the_reason_and_a_sample(volume: int) -> None:
    row = {
        "date": "2026-03-03",
        "ratio": 1.0,
        "callVolume": volume,
        "putVolume": 1,
        "totalVolume": 1,
        "price": 1.0,
    }
    body = envelope({"symbol": "AAA", "name": "A", "data": [row]})
    with replay({"/v2/put-call-ratio/AAA": body}) as (client, _):
        with pytest.raises(md.ResponseFormatError) as info:
            md.load_put_call_ratio("AAA", client=client)
    text = str(info.value)
    assert "'call_volume'" in text and "outside the Int64 range" in text
    assert str(int(float(volume))) in text or str(volume) in text  # a sample, not "e.g. )"
    assert "e.g. )" not in text
