"""The sandbox's routes, driven with raw ``requests`` over loopback: every registry endpoint and
the spec's parameter rules."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
import requests

from mdframes.registry import DATE_RANGE, MARKETS, REGISTRY, SCREEN, Dataset, Field
from mdframes.sandbox import Sandbox

from .conftest import BEARER, KEY, TODAY, data, get

# --- the registry walk ---------------------------------------------------------------------------

_FILL = {
    "symbol": "AAPL",
    "ticker": "AAPL",
    "type": "daily",
    "chamber": "house",
    "market": "S&P 500",
}
ENDPOINTS = {d.path: d for d in reversed(REGISTRY.values())}  # one dataset per path (the first)


def _path(ds: Dataset, **override: str) -> str:
    values = {**_FILL, **override}
    return re.sub(r"\{(\w+)\}", lambda m: quote(values[m.group(1)], safe=""), ds.path)


def _valid_query(ds: Dataset) -> dict[str, str]:
    return {"region": "US"} if ds.needs_market_or_region else {}


def test_every_registry_endpoint_has_a_hand_written_generator(server: Sandbox) -> None:
    assert {r.dataset.path for r in server.routes} == {d.path for d in REGISTRY.values()}
    assert [r.dataset.name for r in server.routes if r.declared] == []


@pytest.mark.parametrize("ds", ENDPOINTS.values(), ids=lambda d: d.path)
def test_valid_request_has_the_documented_shape(
    server: Sandbox, http: requests.Session, ds: Dataset
) -> None:
    r = get(server, http, _path(ds), **_valid_query(ds))
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/json"
    body = r.json()
    if ds.version == "v1":
        assert not (isinstance(body, dict) and "success" in body)
        payload = body
    else:
        assert body["success"] is True and set(body) == {"success", "data", "meta"}
        payload = body["data"]
    if ds.shape == "v1_ticker_forecast":
        return  # checked in test_v1_ticker_forecast
    records = payload
    if isinstance(payload, dict) and ds.records:
        records = payload[ds.records]
    elif isinstance(payload, dict):  # shape not shown in the spec: its one list
        (records,) = [v for v in payload.values() if isinstance(v, list)]
    if ds.name == "v1/available_markets":
        assert records == [name for name, _ in MARKETS]
        return
    if isinstance(records, dict):  # v1 sentiments: date -> score text
        assert records and all(re.match(r"^\d{4}-\d{2}-\d{2}$", k) for k in records)
        return
    assert isinstance(records, list) and records, f"no records under {ds.records!r}"
    first = dict(records[0])
    if ds.shape == "app_ratings_apps":
        first.update(first.pop("observations")[0])
    if ds.shape == "v1_market_forecasts":
        first.update(first.pop("prediction"))
    wires = {f.wire for f in ds.fields}
    assert wires <= set(first), f"missing {wires - set(first)}"
    if ds.scope in ("screener", "recent"):
        assert isinstance(payload["summary"], dict) and payload["summary"]
        assert len(records) == 100  # the default page


WIDGETS = Dataset(
    name="widgets",
    path="/v2/widgets/{symbol}",
    params=DATE_RANGE,
    records="widgets",
    header=(Field("symbol", nullable=False), Field("name"), Field("cik", "cik")),
    fields=(
        Field("date", "date"),
        Field("widgetId"),
        Field("colour", "cat", ("red", "blue")),
        Field("size", "int", ge=1, le=9),
        Field("weight", "float", ge=0, le=2.5),
        Field("tags", "list"),
        Field("seenAt", "ts"),
        Field("active", "bool"),
    ),
    filter_field="date",
)


def test_a_registry_entry_added_at_run_time_is_served(
    monkeypatch: pytest.MonkeyPatch, http: requests.Session
) -> None:
    before = Sandbox(today=TODAY)  # routes are taken from the registry at construction
    monkeypatch.setitem(REGISTRY, "widgets", WIDGETS)
    screener = Dataset(
        name="screener/widgets",
        path="/v2/screener/widgets",
        scope="screener",
        params=SCREEN,
        records="data",
        fields=(Field("symbol"), Field("date", "date"), Field("score", "float", ge=-1, le=1)),
    )
    monkeypatch.setitem(REGISTRY, "screener/widgets", screener)
    with Sandbox(today=TODAY) as s, before:
        assert get(before, http, "/v2/widgets/AAPL").status_code == 404
        assert {"widgets", "screener/widgets"} == {r.dataset.name for r in s.routes if r.declared}
        payload = data(s, http, "/v2/widgets/AAPL", startDate="2025-01-01", endDate="2025-12-31")
        assert payload["symbol"] == "AAPL" and payload["cik"] == "0000320193"
        rows = payload["widgets"]
        assert len(rows) > 5 and len({r["widgetId"] for r in rows}) == len(rows)
        assert [r["date"] for r in rows] == sorted((r["date"] for r in rows), reverse=True)
        for row in rows:
            assert "2025-01-01" <= row["date"] <= "2025-12-31"
            assert row["colour"] in ("red", "blue") and 1 <= row["size"] <= 9
            assert 0 <= row["weight"] <= 2.5 and isinstance(row["tags"], list)
            assert re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:00Z$", row["seenAt"])
            assert isinstance(row["active"], bool)
        everything = data(s, http, "/v2/widgets/AAPL")["widgets"]
        assert everything[0]["date"] <= TODAY.isoformat()
        assert data(s, http, "/v2/widgets/AAPL", limit=3)["widgets"] == everything[:3]
        assert get(s, http, "/v2/widgets/AAPL", limit=0).status_code == 400
        page = data(s, http, "/v2/screener/widgets", region="UK")
        assert len(page["data"]) == 100 and page["summary"]["totalTickers"] == 100
        assert all(-1 <= r["score"] <= 1 and r["date"] == TODAY.isoformat() for r in page["data"])
    with Sandbox(today=TODAY, record_counts={"AAPL": 37}) as sized:
        assert len(data(sized, http, "/v2/widgets/AAPL")["widgets"]) == 37


def test_one_status_table_for_reasons_codes_and_v1_labels(fresh: Sandbox) -> None:
    r = requests.post(fresh.url + "/v2/markets", headers=BEARER, timeout=10)
    assert (r.status_code, r.reason, r.headers["Allow"]) == (405, "Method Not Allowed", "GET")
    assert r.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    r = requests.post(fresh.url + "/v1/available/markets", params={"token": KEY}, timeout=10)
    assert r.json()["error"] == "Method Not Allowed"
    r = requests.get(fresh.url + "/v2/markets", timeout=10)
    assert r.reason == "Unauthorized" and r.json()["error"]["code"] == "UNAUTHORIZED"


def _bad_queries(ds: Dataset) -> list[dict[str, str]]:
    bad: list[dict[str, str]] = []
    lo, hi = ds.limit_bounds
    if ds.param("limit"):
        bad += [{"limit": str((lo or 1) - 1)}, {"limit": "ten"}, {"limit": "2.5"}]
        if hi is not None:
            bad.append({"limit": str(hi + 1)})
    dates = [p.wire for p in ds.params if p.kind == "date"]
    if dates:
        start, end = dates
        bad += [
            {start: "2026-05-02", end: "2026-05-01"},
            {start: "2026/05/01"},
            {end: "2026-02-30"},
            {start: "yesterday"},
        ]
    if ds.param("market") and not ds.param("market").wire.startswith("{"):
        bad += [{"market": "Atlantis"}, {"region": "Mars"}]
    if ds.param("type") and not ds.param("type").wire.startswith("{"):
        bad.append({"type": "weekly"})
    return [{**_valid_query(ds), **q} for q in bad]


BAD = [(ds, q) for ds in ENDPOINTS.values() for q in _bad_queries(ds)]


@pytest.mark.parametrize(("ds", "query"), BAD, ids=[f"{d.path}-{q}" for d, q in BAD])
def test_out_of_bounds_parameters_are_400(
    server: Sandbox, http: requests.Session, ds: Dataset, query: dict[str, str]
) -> None:
    r = get(server, http, _path(ds), **query)
    assert r.status_code == 400, r.text
    body = r.json()
    if ds.version == "v1":
        assert body["error"] == "Bad Request" and body["message"]
    else:
        assert body["success"] is False and body["error"]["code"] == "BAD_REQUEST"


def test_limit_bounds_edges_are_accepted(server: Sandbox, http: requests.Session) -> None:
    assert len(data(server, http, "/v2/lobbying/AAPL", limit=1)["filings"]) == 1
    assert len(data(server, http, "/v2/lobbying/BIGCO", limit=500)["filings"]) == 500
    assert len(data(server, http, "/v2/sentiment/AAPL", limit=3)["data"]) == 3


@pytest.mark.parametrize("tail", ["sentiment", "professionalnet", "app-ratings"])
def test_screeners_needing_market_or_region(
    server: Sandbox, http: requests.Session, tail: str
) -> None:
    assert get(server, http, f"/v2/screener/{tail}").status_code == 400
    assert get(server, http, f"/v2/screener/{tail}", market="NASDAQ").status_code == 200
    assert get(server, http, f"/v2/screener/{tail}", region="UK").status_code == 200


def test_forecast_type_and_chamber_in_path(server: Sandbox, http: requests.Session) -> None:
    assert get(server, http, "/v2/predictions/weekly/AAPL").status_code == 400
    assert get(server, http, "/v1/ticker/AAPL/predictions/hourly").status_code == 400
    assert get(server, http, "/v2/congress/both/AAPL").status_code == 404


@pytest.mark.parametrize("symbol", ["BTC-USD", "BRK.B", "^GSPC", "7203.T", "a"])
def test_unusual_valid_symbols(server: Sandbox, http: requests.Session, symbol: str) -> None:
    payload = data(server, http, "/v2/sentiment/" + quote(symbol, safe=""), limit=1)
    assert payload["symbol"] == symbol


@pytest.mark.parametrize(
    "raw", ["%20", "A%20B", "A%2FB", "%2E%2E", "A..B", "A%3FB", "A%23B", "%09"]
)
def test_invalid_symbols_are_400(server: Sandbox, http: requests.Session, raw: str) -> None:
    assert get(server, http, "/v2/sentiment/" + raw).status_code == 400
    assert get(server, http, "/v1/sentiments/NASDAQ/" + raw).status_code == 400


def test_missing_symbols_unknown_paths_and_markets(server: Sandbox, http: requests.Session) -> None:
    r = get(server, http, "/v2/insider-trading/NOTFOUND")
    assert r.status_code == 404 and r.json()["error"]["code"] == "NOT_FOUND"
    assert get(server, http, "/v2/no-such-dataset/AAPL").status_code == 404
    assert get(server, http, "/v2/sentiment").status_code == 404
    r = get(server, http, "/v1/market/Atlantis/predictions/daily")
    assert r.status_code == 404 and r.json()["error"] == "Not Found"
    r = get(server, http, "/v1/housetrades/NASDAQ/ZZZZ")
    assert r.status_code == 404 and set(r.json()) == {"error", "message"}


def test_unknown_query_parameters_are_ignored(server: Sandbox, http: requests.Session) -> None:
    plain = get(server, http, "/v2/sentiment/AAPL", limit=5)
    extra = get(server, http, "/v2/sentiment/AAPL", limit=5, colour="blue", DAYS=3)
    assert plain.content == extra.content


def test_market_names_are_percent_encoded_in_v1_paths(
    server: Sandbox, http: requests.Session
) -> None:
    r = get(server, http, "/v1/market/S%26P%20500/predictions/monthly")
    entries = r.json()
    assert r.status_code == 200 and len(entries) == 500
    first = entries[0]
    assert (
        first["prediction"]["type"] == "monthly" and "technicalAnalysis" not in first["prediction"]
    )
    assert all(
        isinstance(first["prediction"][k], str)
        for k in ("expectedShort", "expectedMid", "expectedLong")
    )
    float(first["prediction"]["expectedMid"])
