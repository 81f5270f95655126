"""The sandbox server, driven with raw ``requests`` over loopback: every registry endpoint,
the spec's parameter rules, auth, rate limits, faults and the data rules."""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from urllib.parse import quote

import pytest
import requests

import mdframes as md
from mdframes.registry import (
    APP_RATINGS_HISTORY_START,
    CONGRESS_BRACKETS,
    DATE_RANGE,
    INSIDER_TYPES,
    MARKETS,
    REGISTRY,
    SCREEN,
    SCREENER_DATASETS,
    Dataset,
    Field,
)
from mdframes.sandbox import (
    DEFAULT_TODAY,
    KNOWN_SYMBOLS,
    MISSING_SYMBOLS,
    REVISION_RULES,
    Sandbox,
    listing_changes,
    running,
    universe_symbols,
)
from mdframes.sandbox.world import QUIRKS

KEY = "sandbox-key"
BEARER = {"Authorization": f"Bearer {KEY}"}
TODAY = dt.date(2026, 11, 20)  # a Friday: daily forecasts must skip the weekend
APP_START = dt.date.fromisoformat(APP_RATINGS_HISTORY_START)
BRACKETS = set(CONGRESS_BRACKETS)


@pytest.fixture(scope="module")
def server() -> Iterator[Sandbox]:
    with Sandbox(today=TODAY, record_counts={"BIGCO": 1234}, extra_symbols=("7203.T", "a")) as s:
        yield s


@pytest.fixture(scope="module")
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session


@pytest.fixture
def fresh() -> Iterator[Sandbox]:
    with Sandbox(today=TODAY) as s:
        yield s


def get(server: Sandbox, http: requests.Session, path: str, **params: object) -> requests.Response:
    """GET with the right key placement for the path's version."""
    if path.startswith("/v1/"):
        return http.get(server.url + path, params={**params, "token": KEY}, timeout=10)
    return http.get(server.url + path, params=params, headers=BEARER, timeout=10)


def data(server: Sandbox, http: requests.Session, path: str, **params: object) -> dict:
    r = get(server, http, path, **params)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["success"] is True
    assert body["meta"]["timestamp"].startswith(server.today.isoformat())
    return body["data"]


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


# --- determinism ---------------------------------------------------------------------------------


def test_same_request_same_bytes_across_servers(server: Sandbox, http: requests.Session) -> None:
    paths = [
        "/v2/insider-trading/AAPL",
        "/v2/app-ratings/MSFT",
        "/v2/screener/news",
        "/v1/insidertransactions/NYSE/IBM",
    ]
    first = [get(server, http, p).content for p in paths]
    with Sandbox(today=TODAY) as other, requests.Session() as s2:
        second = [get(other, s2, p).content for p in paths]
    assert first == second
    assert first == [get(server, http, p).content for p in paths]


def test_today_anchors_the_data(http: requests.Session) -> None:
    with Sandbox(today=dt.date(2026, 10, 1)) as other:
        payload = data_at(other, http, "/v2/sentiment/AAPL", limit=1)
    assert payload["data"][0]["date"] == "2026-10-01"


def data_at(server: Sandbox, http: requests.Session, path: str, **params: object) -> dict:
    r = get(server, http, path, **params)
    assert r.status_code == 200
    return r.json()["data"]


# --- authentication ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "params", "placement"),
    [
        ({"Authorization": f"Bearer {KEY}"}, {}, "bearer"),
        ({"X-API-Key": KEY}, {}, "header"),
        ({}, {"apiKey": KEY}, "apiKey"),
        ({}, {"token": KEY}, "token"),
    ],
)
def test_four_key_placements(fresh: Sandbox, headers: dict, params: dict, placement: str) -> None:
    r = requests.get(fresh.url + "/v2/markets", headers=headers, params=params, timeout=10)
    assert r.status_code == 200
    logged = fresh.requests[-1]
    assert logged.auth == placement and logged.status == 200
    assert KEY not in repr(fresh.requests)  # the log never holds key values


@pytest.mark.parametrize(
    ("headers", "params", "status"),
    [
        ({"Authorization": "Bearer wrong"}, {"apiKey": KEY}, 401),  # first present decides
        ({"Authorization": f"Basic {KEY}"}, {}, 401),
        ({"X-API-Key": "wrong"}, {"token": KEY}, 401),
        ({"X-API-Key": KEY}, {"apiKey": "wrong"}, 200),
        ({}, {"apiKey": "wrong", "token": KEY}, 401),
        ({}, {"apiKey": KEY, "token": "wrong"}, 200),
        ({}, {"apiKey": ""}, 401),
        ({}, {}, 401),
        ({"Authorization": "Bearer forbidden-key"}, {}, 403),
    ],
)
def test_key_precedence(fresh: Sandbox, headers: dict, params: dict, status: int) -> None:
    r = requests.get(fresh.url + "/v2/sentiment/AAPL", headers=headers, params=params, timeout=10)
    assert r.status_code == status
    if status != 200:
        code = {401: "UNAUTHORIZED", 403: "FORBIDDEN"}[status]
        assert r.json() == {
            "success": False,
            "error": {"code": code, "message": r.json()["error"]["message"]},
        }


def test_v1_accepts_only_the_token(fresh: Sandbox) -> None:
    url = fresh.url + "/v1/available/markets"
    r = requests.get(url, headers={"Authorization": f"Bearer {KEY}", "X-API-Key": KEY}, timeout=10)
    assert r.status_code == 401
    assert r.json() == {"error": "Unauthorized", "message": "Invalid or missing API key"}
    assert requests.get(url, params={"apiKey": KEY}, timeout=10).status_code == 401
    assert requests.get(url, params={"token": KEY}, timeout=10).status_code == 200
    r = requests.get(url, params={"token": "forbidden-key"}, timeout=10)
    assert r.status_code == 403 and r.json()["error"] == "Forbidden"


# --- rate limits -------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["iso", "unix"])
def test_rate_limit_headers_and_exhaustion(fmt: str) -> None:
    with Sandbox(rate_limit=3, reset_format=fmt, today=TODAY) as s:
        seen = [requests.get(s.url + "/v2/markets", headers=BEARER, timeout=10) for _ in range(4)]
        v1 = requests.get(s.url + "/v1/available/markets", params={"token": KEY}, timeout=10)
        other = requests.get(s.url + "/v2/markets", headers={"X-API-Key": "second"}, timeout=10)
    assert [r.status_code for r in seen] == [200, 200, 200, 429]
    assert [r.headers["X-RateLimit-Remaining"] for r in seen] == ["2", "1", "0", "0"]
    assert all(r.headers["X-RateLimit-Limit"] == "3" for r in seen)
    reset = seen[0].headers["X-RateLimit-Reset"]
    if fmt == "iso":
        assert re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$", reset)
        when = dt.datetime.strptime(reset, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    else:
        assert reset.isdigit()
        when = dt.datetime.fromtimestamp(int(reset), dt.timezone.utc)
    assert when > dt.datetime.now(dt.timezone.utc)
    assert seen[3].json()["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    assert v1.status_code == 429 and v1.json()["error"] == "Too Many Requests"
    assert other.status_code == 401 and "X-RateLimit-Remaining" in other.headers


# --- faults ------------------------------------------------------------------------------------


def _get(s: Sandbox, path: str = "/v2/insider-trading/AAPL", **kw: object) -> requests.Response:
    return requests.get(s.url + path, headers=BEARER, timeout=10, allow_redirects=False, **kw)


@pytest.mark.parametrize("status", [500, 502, 503])
def test_fault_status(fresh: Sandbox, status: int) -> None:
    fresh.inject(status)
    r = _get(fresh)
    assert r.status_code == status and r.json()["success"] is False
    assert _get(fresh).status_code == 200  # consumed


def test_fault_html500_html_and_no_envelope(fresh: Sandbox) -> None:
    fresh.inject("html500", "html", "no_envelope")
    r = _get(fresh)
    assert r.status_code == 500 and r.headers["Content-Type"].startswith("text/html")
    r = _get(fresh)
    assert r.status_code == 200 and r.text.lstrip().startswith("<!DOCTYPE html>")
    r = _get(fresh)
    assert r.status_code == 200 and "success" not in r.json() and r.json()["symbol"] == "AAPL"


def test_fault_truncate(fresh: Sandbox) -> None:
    whole = _get(fresh).content
    fresh.inject("truncate")
    r = _get(fresh)
    assert r.status_code == 200 and int(r.headers["Content-Length"]) == len(r.content)
    assert r.content == whole[: len(whole) // 2]
    with pytest.raises(ValueError):
        r.json()


def test_fault_success_false(fresh: Sandbox) -> None:
    fresh.inject("success_false")
    r = _get(fresh)
    assert (
        r.status_code == 200
        and r.json()["error"]["code"] == "FORBIDDEN"
        and not r.json()["success"]
    )


def test_fault_drop(fresh: Sandbox) -> None:
    fresh.inject("drop")
    with pytest.raises(requests.ConnectionError):
        _get(fresh)
    assert fresh.requests[-1].status == 0
    assert _get(fresh).status_code == 200


@pytest.mark.parametrize("fmt", ["iso", "unix"])
def test_fault_429_with_reset(fresh: Sandbox, fmt: str) -> None:
    fresh.reset_format = fmt
    fresh.inject(("429", 30))
    r = _get(fresh)
    assert r.status_code == 429 and r.headers["X-RateLimit-Remaining"] == "0"
    reset = r.headers["X-RateLimit-Reset"]
    if fmt == "unix":
        seconds = int(reset) - dt.datetime.now(dt.timezone.utc).timestamp()
    else:
        when = dt.datetime.strptime(reset, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
        seconds = (when - dt.datetime.now(dt.timezone.utc)).total_seconds()
    assert 25 < seconds <= 31


def test_fault_retry_after(fresh: Sandbox) -> None:
    fresh.inject(("retry_after", 2))
    r = _get(fresh)
    assert r.status_code == 429 and r.headers["Retry-After"] == "2"
    assert "X-RateLimit-Reset" not in r.headers


def test_fault_redirect_keeps_path_and_query(fresh: Sandbox) -> None:
    fresh.inject("redirect", path="/v1/")
    r = requests.get(
        fresh.url + "/v1/available/tickers/daily",
        params={"token": KEY},
        timeout=10,
        allow_redirects=False,
    )
    assert r.status_code == 302
    assert r.headers["Location"] == f"{fresh.url}/v1/available/tickers/daily?token={KEY}"


def test_fault_remaining0(fresh: Sandbox) -> None:
    fresh.reset_seconds = 45
    fresh.reset_format = "unix"
    fresh.inject("remaining0")
    r = _get(fresh)
    assert r.status_code == 200 and r.json()["success"]
    assert r.headers["X-RateLimit-Remaining"] == "0"
    assert (
        40
        < int(r.headers["X-RateLimit-Reset"]) - dt.datetime.now(dt.timezone.utc).timestamp()
        <= 46
    )


def test_faults_match_path_prefix_in_order(fresh: Sandbox) -> None:
    fresh.inject(503, path="/v2/markets")
    fresh.inject(500)
    assert _get(fresh, "/v2/regions").status_code == 500
    assert _get(fresh, "/v2/regions").status_code == 200
    assert _get(fresh, "/v2/markets").status_code == 503
    assert fresh.count("/v2/regions") == 2 and fresh.count() == 3
    fresh.clear_log()
    assert fresh.count() == 0
    with pytest.raises(ValueError):
        fresh.inject("explode")


# --- data rules ----------------------------------------------------------------------------------


def test_forecasts_run_forward_skipping_weekends(server: Sandbox, http: requests.Session) -> None:
    daily = data(server, http, "/v2/predictions/daily/AAPL")
    dates = [dt.date.fromisoformat(p["date"]) for p in daily["predictions"]]
    assert len(dates) == 10 and dates[0] == dt.date(2026, 11, 23)  # Friday -> Monday
    assert all(d > TODAY and d.weekday() < 5 for d in dates) and dates == sorted(dates)
    assert (dates[-1] - dates[0]).days == 11  # ten consecutive trading days: Mon..Fri next week
    monthly = data(server, http, "/v2/predictions/monthly/AAPL")
    months = [dt.date.fromisoformat(p["date"]) for p in monthly["predictions"]]
    assert len(months) == 12 and months[0] == dt.date(2026, 11, 30)
    assert all((m + dt.timedelta(days=1)).day == 1 for m in months)
    for p in daily["predictions"] + monthly["predictions"]:
        assert p["lower"] < p["mid"] < p["upper"]
    assert set(daily["metadata"]) == {
        "expectedShortTerm",
        "expectedMidTerm",
        "expectedLongTerm",
        "lowerBoundChange",
        "upperBoundChange",
    }
    assert daily["lastUpdated"].startswith(TODAY.isoformat())


def test_v1_ticker_forecast(server: Sandbox, http: requests.Session) -> None:
    body = get(server, http, "/v1/ticker/AAPL/predictions/daily").json()
    pred = body["prediction"]
    dated = {k: v for k, v in pred.items() if re.match(r"^\d{4}-\d{2}-\d{2}$", k)}
    assert len(dated) == 10 and min(dated) > TODAY.isoformat()
    for text in dated.values():
        main, lower, upper = map(float, text.split(","))
        assert lower < main < upper
    assert {
        "expectedShort",
        "expectedMid",
        "expectedLong",
        "technicalAnalysis",
        "type",
        "lastUpdate",
    } <= set(pred)
    assert all(isinstance(v, str) for v in body["sentimentAnalysis"].values())


def test_put_call_totals_and_trading_days(server: Sandbox, http: requests.Session) -> None:
    rows = data(server, http, "/v2/put-call-ratio/TSLA")["data"]
    assert len(rows) > 500
    for row in rows:
        assert row["totalVolume"] == row["callVolume"] + row["putVolume"]  # quirks off
        assert row["ratio"] == round(row["ratio"], 2) > 0
        assert abs(row["ratio"] - row["putVolume"] / row["callVolume"]) < 0.01
        assert dt.date.fromisoformat(row["date"]).weekday() < 5
    assert [r["date"] for r in rows] == sorted((r["date"] for r in rows), reverse=True)


def test_sentiment_daily_within_bounds(server: Sandbox, http: requests.Session) -> None:
    rows = data(server, http, "/v2/sentiment/NVDA", startDate="2026-01-01", endDate="2026-01-31")[
        "data"
    ]
    assert [r["date"] for r in rows] == [f"2026-01-{d:02d}" for d in range(31, 0, -1)]
    assert all(-1 <= r["score"] <= 1 for r in rows)


def test_history_covers_24_months(server: Sandbox, http: requests.Session) -> None:
    rows = data(server, http, "/v2/sentiment/AAPL")["data"]
    assert rows[0]["date"] == TODAY.isoformat() and rows[-1]["date"] == "2024-11-21"


def test_insider_transactions_rules(server: Sandbox, http: requests.Session) -> None:
    types = set()
    for symbol in ("AAPL", "MSFT", "NVDA", "TSLA", "AMZN"):
        rows = data(server, http, f"/v2/insider-trading/{symbol}")["transactions"]
        assert 40 <= len(rows) <= 80
        for row in rows:
            day, filed = (
                dt.date.fromisoformat(row["date"]),
                dt.date.fromisoformat(row["filingDate"]),
            )
            weekdays = sum(
                (day + dt.timedelta(days=i)).weekday() < 5 for i in range(1, (filed - day).days + 1)
            )
            assert day <= filed <= TODAY and weekdays <= 2
            assert re.match(r"^\d{10}$", row["cik"])
            assert all(isinstance(row[k], int) for k in ("shares", "totalValue", "sharesOwned"))
        types |= {r["transactionType"] for r in rows}
    assert types == set(INSIDER_TYPES)
    crypto = data(server, http, "/v2/insider-trading/BTC-USD")["transactions"]
    assert all(r["cik"] is None for r in crypto)


def test_congress_rules(server: Sandbox, http: requests.Session) -> None:
    flags, owners = set(), set()
    for symbol in ("AAPL", "MSFT", "NVDA", "TSLA", "AMZN", "META", "GOOGL"):
        for chamber in ("house", "senate"):
            payload = data(server, http, f"/v2/congress/{chamber}/{symbol}")
            assert payload["chamber"] == chamber
            trades = payload["trades"]
            assert [t["date"] for t in trades] == sorted((t["date"] for t in trades), reverse=True)
            for t in trades:
                assert t["transactionType"] in ("Purchase", "Sale")
                if t["disclosureDate"] is not None:
                    lag = (
                        dt.date.fromisoformat(t["disclosureDate"])
                        - dt.date.fromisoformat(t["date"])
                    ).days
                    assert 0 < lag <= 45
                if t["amountRaw"] is not None:
                    assert t["amount"] in BRACKETS and t["amountRaw"] != t["amount"]
                if t["amountFlag"] == "review":
                    assert t["amountRaw"] is None
                flags.add(t["amountFlag"])
                owners.add((chamber, t["owner"]))
    assert flags == {None, "review", "ambiguous"}
    assert {("house", "SELF"), ("senate", "UNKNOWN"), ("house", "SP")} <= owners
    assert ("house", "UNKNOWN") not in owners


def test_congress_window_filters_on_trade_date(server: Sandbox, http: requests.Session) -> None:
    trades = data(server, http, "/v2/congress/house/AAPL")["trades"]
    late = next(t for t in trades if t["disclosureDate"] and t["disclosureDate"] > t["date"])
    day = late["date"]
    inside = data(server, http, "/v2/congress/house/AAPL", startDate=day, endDate=day)["trades"]
    assert late in inside and all(t["date"] == day for t in inside)
    by_disclosure = data(
        server,
        http,
        "/v2/congress/house/AAPL",
        startDate=late["disclosureDate"],
        endDate=late["disclosureDate"],
    )["trades"]
    assert all(t["date"] == late["disclosureDate"] for t in by_disclosure)


def test_capped_datasets_unique_ids_and_windows(server: Sandbox, http: requests.Session) -> None:
    for path, key, idf, window in [
        ("/v2/lobbying/AAPL", "filings", "filingUuid", "date"),
        ("/v2/government-contracts/AAPL", "contracts", "awardId", "startDate"),
        ("/v2/patent-filings/AAPL", "patents", "patentId", "patentDate"),
    ]:
        rows = data(server, http, path)[key]
        assert len({r[idf] for r in rows}) == len(rows)
        assert [r[window] for r in rows] == sorted((r[window] for r in rows), reverse=True)
        part = data(server, http, path, startDate="2026-01-01", endDate="2026-06-30")[key]
        assert part and all("2026-01-01" <= r[window] <= "2026-06-30" for r in part)
        assert data(server, http, path, limit=2)[key] == rows[:2]  # the newest
    contracts = data(server, http, "/v2/government-contracts/MSFT")["contracts"]
    assert all(c["awardType"] == "" and c["contractAwardType"] == "" for c in contracts)
    filings = data(server, http, "/v2/lobbying/MSFT")["filings"]
    for f in filings:
        month = int(f["date"][5:7])
        assert f["quarter"] == f"Q{(month - 1) // 3 + 1}" and f["filingYear"] == int(f["date"][:4])


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/v2/insider-trading/BIGCO", "transactions"),
        ("/v2/congress/senate/BIGCO", "trades"),
        ("/v2/analyst-ratings/BIGCO", "ratings"),
        ("/v2/sentiment/BIGCO", "data"),
        ("/v2/news/BIGCO", "articles"),
    ],
)
def test_record_counts_uncapped(
    server: Sandbox, http: requests.Session, path: str, key: str
) -> None:
    assert len(data(server, http, path)[key]) == 1234


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/v2/lobbying/BIGCO", "filings"),
        ("/v2/government-contracts/BIGCO", "contracts"),
        ("/v2/patent-filings/BIGCO", "patents"),
    ],
)
def test_record_counts_capped(server: Sandbox, http: requests.Session, path: str, key: str) -> None:
    assert len(data(server, http, path)[key]) == 500  # the cap without a limit
    total, month = 0, dt.date(2024, 11, 1)
    while month <= TODAY:
        nxt = (month + dt.timedelta(days=32)).replace(day=1)
        end = nxt - dt.timedelta(days=1)
        total += len(
            data(server, http, path, startDate=month.isoformat(), endDate=end.isoformat())[key]
        )
        month = nxt
    assert total == 1234


def test_app_ratings_default_window_and_views(server: Sandbox, http: requests.Session) -> None:
    payload = data(server, http, "/v2/app-ratings/AAPL")
    dates = [e["date"] for e in payload["data"]]
    assert dates == [(TODAY - dt.timedelta(days=i)).isoformat() for i in range(7)]
    assert re.match(r"^\d{10}$", payload["cik"])
    counts = [a["observations"][0]["ratingsCount"] for a in payload["apps"]]
    assert counts == sorted(counts, reverse=True)
    for entry in payload["data"]:
        for platform in ("ios", "android"):
            obs = [
                o["ratingsCount"]
                for a in payload["apps"]
                if a["platform"] == platform
                for o in a["observations"]
                if o["date"] == entry["date"]
            ]
            shown = entry[platform]
            assert (shown is None) == (not obs)
            if shown:
                assert shown["ratingsCount"] == max(obs) and 1 <= shown["score"] <= 5
    for app in payload["apps"]:
        obs_dates = [o["date"] for o in app["observations"]]
        assert obs_dates == sorted(obs_dates, reverse=True)
        if app["platform"] == "ios":
            assert all(o["installCount"] is None for o in app["observations"])


def test_app_ratings_history_start_and_limit(server: Sandbox, http: requests.Session) -> None:
    before = data(
        server, http, "/v2/app-ratings/AAPL", startDate="2025-01-01", endDate="2026-09-02"
    )
    assert before["data"] == [] and before["apps"] == []
    everything = data(server, http, "/v2/app-ratings/AAPL", startDate="2020-01-01")
    assert min(e["date"] for e in everything["data"]) == APP_RATINGS_HISTORY_START
    limited = data(server, http, "/v2/app-ratings/AAPL", limit=7)
    assert sum(len(a["observations"]) for a in limited["apps"]) == 7


def test_app_added_later_is_not_backfilled(http: requests.Session) -> None:
    days = (TODAY - APP_START).days + 1
    with Sandbox(today=TODAY, record_counts={"APPCO": days + 5}) as s:
        payload = data(s, http, "/v2/app-ratings/APPCO", startDate="2026-01-01")
        total = sum(len(a["observations"]) for a in payload["apps"])
        assert total == days + 5
        newest = min(payload["apps"], key=lambda a: len(a["observations"]))
        assert [o["date"] for o in newest["observations"]][-1] == (
            TODAY - dt.timedelta(days=4)
        ).isoformat()
        # The app's start inside a window that begins before it: still no earlier records.
        early = data(s, http, "/v2/app-ratings/APPCO", startDate="2026-09-01", endDate="2026-10-01")
        assert len(early["apps"]) == 1


def test_news_professionalnet_forum(server: Sandbox, http: requests.Session) -> None:
    news = data(server, http, "/v2/news/AAPL", limit=5)
    assert {"date", "headline", "source", "url", "sentiment"} <= set(news["articles"][0])
    net = data(server, http, "/v2/professionalnet/AAPL")["data"]
    assert {"date", "employeeCount", "followerCount", "jobCount"} <= set(net[0])
    forum = data(
        server, http, "/v2/forum-mentions/AAPL", startDate="2026-11-19", endDate="2026-11-19"
    )["data"]
    assert len(forum) == 4 and all(re.match(r"^2026-11-19T\d{2}:00:00Z$", r["date"]) for r in forum)
    assert all(set(r) == {"date", "subreddit", "mentions"} for r in forum)
    assert all(isinstance(r["mentions"], int) for r in forum)
    assert set(net[0]) == {"date", "employeeCount", "followerCount", "jobCount"}


def test_discovery(server: Sandbox, http: requests.Session) -> None:
    markets = data(server, http, "/v2/markets")["markets"]
    assert [(m["name"], m["region"]) for m in markets] == list(MARKETS)
    regions = data(server, http, "/v2/regions")["regions"]
    assert sum(len(r["markets"]) for r in regions) == len(MARKETS)
    dow = data(server, http, "/v2/tickers", market="DOW 30")["tickers"]
    assert len(dow) == 30 and {"AAPL", "MSFT"} <= {t["symbol"] for t in dow}
    assert len(data(server, http, "/v2/tickers", region="UK", limit=7)["tickers"]) == 7


def test_screener_pages_of_20000(server: Sandbox, http: requests.Session) -> None:
    page = data(server, http, "/v2/screener/sentiment", region="US", limit=20000)
    assert len(page["data"]) == 20000 and page["summary"]["totalTickers"] == 20000
    s = page["summary"]
    assert s["bullishCount"] + s["bearishCount"] + s["neutralCount"] == 20000
    assert len(data(server, http, "/v2/screener/put-call-ratio", limit=20000)["data"]) == 20000


def test_screener_filters_and_summaries(server: Sandbox, http: requests.Session) -> None:
    dax = data(server, http, "/v2/screener/sentiment", market="Germany DAX", limit=20000)["data"]
    assert len(dax) == 40 and all(r["symbol"].endswith(".DE") for r in dax)
    insider = data(server, http, "/v2/screener/insider-trading", limit=500)
    kinds = {r["transactionType"] for r in insider["data"]}
    assert {"Sale", "Buy"} <= kinds
    summary = insider["summary"]
    assert set(summary) == {"totalTransactions", "totalTickers", "buyCount", "sellCount"}
    assert summary["buyCount"] == sum(r["transactionType"] == "Buy" for r in insider["data"])
    for tail in SCREENER_DATASETS:
        rows = data(server, http, f"/v2/screener/{tail}", region="Canada", limit=3)["data"]
        assert len(rows) == 3 and all({"symbol", "name", "date"} <= set(r) for r in rows)


def test_recent_entries_sorted_by_date(server: Sandbox, http: requests.Session) -> None:
    news = data(server, http, "/v2/recent/news", limit=300)
    dates = [r["date"] for r in news["data"]]
    assert dates == sorted(dates, reverse=True) and len(dates) == 300
    assert set(news["summary"]) == {"totalArticles", "totalTickers", "averageSentiment"}
    ratings = data(server, http, "/v2/recent/analyst-ratings", market="NYSE")
    assert len(ratings["data"]) == 100
    assert set(ratings["summary"]) == {
        "totalRatings",
        "totalTickers",
        "upgradeCount",
        "downgradeCount",
    }


def test_v1_bodies(server: Sandbox, http: requests.Session) -> None:
    insider = get(server, http, "/v1/insidertransactions/NASDAQ/AAPL").json()["insiderTransactions"]
    assert all(re.match(r"^[A-Z][a-z]{2} \d{2} '\d{2}$", r["date"]) for r in insider)
    assert all(
        re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$", r["SECForm4Date"]) for r in insider
    )
    assert all(
        isinstance(r[k], int) for r in insider for k in ("shares", "USDValue", "totalShares")
    )
    house = get(
        server, http, "/v1/housetrades/NASDAQ/AAPL", dateFrom="2026-01-01", dateTo="2026-06-30"
    )
    rows = house.json()["houseTrades"]
    assert rows and all("2026-01-01" <= r["date"] <= "2026-06-30" for r in rows)
    amounts = {
        r["amount"]
        for s in ("MSFT", "NVDA", "TSLA", "AMZN", "META", "GOOGL")
        for r in get(server, http, f"/v1/housetrades/NASDAQ/{s}").json()["houseTrades"]
    }
    assert amounts - BRACKETS  # filed variants appear as filed
    apps = get(server, http, "/v1/appratings/NASDAQ/AAPL", dateTo="2026-09-05").json()["appRatings"]
    assert [r["date"] for r in apps] == ["2026-09-05", "2026-09-04", "2026-09-03"]


def test_legacy_shapes(fresh: Sandbox) -> None:
    fresh.legacy_shapes = {"app_ratings", "congress"}
    with requests.Session() as http:
        payload = data_at(fresh, http, "/v2/app-ratings/AAPL", startDate="2026-09-01")
        assert "apps" not in payload
        days = [dt.date.fromisoformat(e["date"]) for e in payload["data"]]
        assert all((a - b).days == 7 for a, b in zip(days[:-1], days[1:], strict=True))
        assert all(
            isinstance(e["ios"], dict) and isinstance(e["android"], dict) for e in payload["data"]
        )
        trades = data_at(fresh, http, "/v2/congress/house/AAPL")["trades"]
        assert trades and not any({"owner", "amountRaw", "amountFlag"} & set(t) for t in trades)


def test_running_yields_a_client_pointed_at_the_sandbox() -> None:
    with running(today=TODAY, max_retries=0, record_counts={"X": 3}) as client:
        assert client.sandbox.url == client.base_url and client.max_retries == 0
        assert client.sandbox.record_counts == {"X": 3} and client.cache_path is None
        payload = client.get("/v2/insider-trading/X")
        assert len(payload.data["transactions"]) == 3
    assert client.sandbox.count() == 1


def test_sandbox_is_independent_of_the_frame_code() -> None:
    # An oracle must not share the code it checks: the sandbox reads the registry (paths,
    # parameters) but none of the pipeline, and no pandas.
    import ast
    from pathlib import Path

    import mdframes.sandbox as package

    pipeline = {"fetch", "records", "frame", "schemas", "pipeline", "loaders", "kinds", "v1"}
    for path in Path(package.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 2 and node.module:
                assert node.module.split(".")[0] not in pipeline, (path.name, node.module)
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            assert not {n.split(".")[0] for n in names} & {"pandas", "numpy"}, path.name


def test_stop_closes_idle_keep_alive_connections() -> None:
    with requests.Session() as http:
        s = Sandbox(today=TODAY).start()
        assert http.get(s.url + "/v2/markets", headers=BEARER, timeout=10).status_code == 200
        s.stop()
        with pytest.raises(requests.ConnectionError):
            http.get(s.url + "/v2/markets", headers=BEARER, timeout=10)


def test_request_log_is_bounded() -> None:
    with Sandbox(today=TODAY, max_log=3) as s, requests.Session() as http:
        for path in (
            "/v2/markets",
            "/v2/regions",
            "/v2/tickers?limit=1",
            "/v2/markets",
            "/v2/regions",
        ):
            http.get(s.url + path, headers=BEARER, timeout=10)
        assert [r.path for r in s.requests] == ["/v2/tickers", "/v2/markets", "/v2/regions"]
        assert s.requests[0].query == {"limit": "1"}


# --- live-service facts (fidelity issue) -------------------------------------------------------


def test_put_call_volumes_as_the_live_service_derives_them(http: requests.Session) -> None:
    with Sandbox(today=TODAY, quirks=["volume_off_by_one"]) as s:
        rows = data(s, http, "/v2/put-call-ratio/TSLA")["data"]
        screener = data(s, http, "/v2/screener/put-call-ratio", limit=500)["data"]
    gaps = [r["totalVolume"] - r["callVolume"] - r["putVolume"] for r in rows + screener]
    assert set(gaps) == {0, 1}  # both occur
    for row in rows:
        hundredths = round(row["ratio"] * 100)
        total = row["totalVolume"]
        # Calls and puts come from the total and the two-decimal ratio, truncated separately.
        assert row["callVolume"] == total * 100 // (100 + hundredths)
        assert row["putVolume"] == total * hundredths // (100 + hundredths)


def test_the_published_put_call_rows_follow_the_same_arithmetic() -> None:
    for total, hundredths, calls, puts in [
        (931034, 50, 620689, 310344),
        (1070205, 142, 442233, 627971),
    ]:
        assert total * 100 // (100 + hundredths) == calls
        assert total * hundredths // (100 + hundredths) == puts


def test_quirks_are_off_by_default_and_switch_on_one_by_one(http: requests.Session) -> None:
    symbols = ("AAPL", "MSFT", "NVDA", "TSLA", "AMZN", "META", "GOOGL")
    with Sandbox(today=TODAY) as plain, Sandbox(today=TODAY, quirks=True) as live:
        assert live.quirks == set(QUIRKS) and plain.quirks == frozenset()
        nulls = unknown = titled = 0
        for symbol in symbols:
            a = data(plain, http, f"/v2/insider-trading/{symbol}")["transactions"]
            b = data(live, http, f"/v2/insider-trading/{symbol}")["transactions"]
            assert len(a) == len(b)
            assert all(r["filingDate"] and r["transactionType"] in INSIDER_TYPES for r in a)
            assert all("securityTitle" not in r for r in a)
            nulls += sum(r["filingDate"] is None for r in b)
            unknown += sum(r["transactionType"] not in INSIDER_TYPES for r in b)
            titled += sum(r["securityTitle"] == "Common Stock" for r in b)
            for x, y in zip(a, b, strict=True):  # nothing else changes
                assert {
                    k: v
                    for k, v in y.items()
                    if k not in ("filingDate", "transactionType", "securityTitle")
                } == {k: v for k, v in x.items() if k not in ("filingDate", "transactionType")}
        assert (
            nulls
            and unknown
            and titled
            == sum(
                len(data(live, http, f"/v2/insider-trading/{s}")["transactions"]) for s in symbols
            )
        )
        awards = [
            c
            for symbol in symbols
            for c in data(live, http, f"/v2/government-contracts/{symbol}")["contracts"]
        ]
        assert any(c["awardType"] for c in awards) and any(not c["awardType"] for c in awards)
        assert all(bool(c["awardType"]) == bool(c["contractAwardType"]) for c in awards)
        # Switched at run time, one at a time.
        plain.quirks = ["award_type"]
        assert plain.quirks == {"award_type"}
        switched = [
            c
            for symbol in symbols
            for c in data(plain, http, f"/v2/government-contracts/{symbol}")["contracts"]
        ]
        assert switched == awards
        insider = data(plain, http, "/v2/insider-trading/AAPL")["transactions"]
        assert all(r["filingDate"] and "securityTitle" not in r for r in insider)
    with pytest.raises(ValueError, match="unknown quirks"):
        Sandbox(quirks=["typo"])


def test_bare_lists(http: requests.Session) -> None:
    with Sandbox(today=TODAY, bare_lists=True) as s:
        markets = data(s, http, "/v2/markets")
        assert [(m["name"], m["region"]) for m in markets] == list(MARKETS)
        page = data(s, http, "/v2/screener/sentiment", region="US", limit=5)
        recent = data(s, http, "/v2/recent/news", limit=5)
        assert isinstance(page, list) and len(page) == 5 and isinstance(recent, list)
        assert isinstance(data(s, http, "/v2/tickers", limit=2), dict)  # not among the defaults
        assert isinstance(data(s, http, "/v2/sentiment/AAPL", limit=2), dict)
        s.bare_lists = ["recent"]
        assert isinstance(data(s, http, "/v2/recent/news", limit=5), list)
        assert isinstance(data(s, http, "/v2/markets"), dict)
    with pytest.raises(ValueError, match="one record list"):
        Sandbox(bare_lists=["sentiment"])


# --- the first hour (issue 12) -------------------------------------------------------------------


def test_symbols_outside_the_universe_are_404(server: Sandbox, http: requests.Session) -> None:
    served = server.symbols()
    listed = universe_symbols(TODAY)
    assert set(KNOWN_SYMBOLS) <= set(listed) <= served
    assert {"BIGCO", "7203.T", "a"} <= served  # named in options
    assert not set(MISSING_SYMBOLS) & served
    assert "QQQQQ" not in served and "aapl" not in served
    for path in ("/v2/sentiment/QQQQQ", "/v2/predictions/daily/aapl", "/v2/congress/house/IBMX"):
        r = get(server, http, path)
        assert r.status_code == 404 and r.json()["error"]["code"] == "NOT_FOUND", path
    r = get(server, http, "/v1/sentiments/NASDAQ/QQQQQ")
    assert r.status_code == 404 and r.json()["error"] == "Not Found"
    some = [s for s in listed if s not in KNOWN_SYMBOLS][::4000]
    for symbol in some:  # synthetic members are served like the famous ones
        assert data(server, http, "/v2/sentiment/" + quote(symbol, safe=""), limit=1)["data"]
    tickers = {t["symbol"] for t in data(server, http, "/v2/tickers", limit=100000)["tickers"]}
    assert tickers == set(listed)


def test_missing_symbols_stay_unknown_when_named_in_options(http: requests.Session) -> None:
    with Sandbox(today=TODAY, record_counts={"NOTFOUND": 3}, extra_symbols=["FAKE"]) as s:
        assert get(s, http, "/v2/sentiment/NOTFOUND").status_code == 404
        assert get(s, http, "/v2/sentiment/FAKE").status_code == 404
        s.missing_symbols = set()
        assert len(data(s, http, "/v2/sentiment/NOTFOUND")["data"]) == 3


def test_running_sets_and_restores_the_default_client() -> None:
    before = md.Client(api_key="outer-key", base_url="https://api.example.com", cache=False)
    md.set_default_client(before)
    try:
        with running(today=TODAY) as client:
            assert md.get_default_client() is client
            assert len(md.load_sentiment("AAPL", start="2026-11-01")) == 20  # no client=
        assert md.get_default_client() is before
    finally:
        md.set_default_client(None)


def test_start_gives_one_client_for_the_process() -> None:
    md.sandbox.stop()  # whatever an earlier test left running
    try:
        client = md.sandbox.start(today=TODAY)
        assert md.get_default_client() is client and client.sandbox.today == TODAY
        md.set_default_client(None)
        assert md.sandbox.start(today=TODAY) is client  # the same, and the default again
        assert md.get_default_client() is client
        assert len(md.load_sentiment("MSFT", start="2026-11-10")) == 11
        with pytest.raises(ValueError, match="already running"):
            md.sandbox.start(today="2026-01-02")
        server = client.sandbox
    finally:
        md.sandbox.stop()
    assert md.get_default_client() is not client
    with pytest.raises(requests.ConnectionError):
        requests.get(server.url + "/v2/markets", headers=BEARER, timeout=5)
    again = md.sandbox.start(today="2026-01-02")
    try:
        assert again is not client and again.sandbox.today == dt.date(2026, 1, 2)
    finally:
        md.sandbox.stop()


def test_start_stops_the_server_when_the_process_exits() -> None:
    code = (
        "import mdframes as md, requests\n"
        "client = md.sandbox.start()\n"
        "assert requests.get(client.base_url + '/v2/markets', timeout=5,"
        " headers={'X-API-Key': 'sandbox-key'}).status_code == 200\n"
        "print(client.base_url)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, timeout=120, capture_output=True, text=True
    )
    url = done.stdout.strip().splitlines()[-1]
    assert url.startswith("http://127.0.0.1:")
    with pytest.raises(requests.ConnectionError):
        requests.get(url + "/v2/markets", timeout=5)


# --- the moving world (CONTRACT 7, lake issue) ---------------------------------------------------

FIVE = ("AAPL", "MSFT", "NVDA", "TSLA", "AMZN")


def test_the_clock_is_settable_and_moves(http: requests.Session) -> None:
    assert Sandbox().today == DEFAULT_TODAY == dt.date(2026, 11, 20)
    with Sandbox(today="2026-06-30") as s:
        assert s.today == dt.date(2026, 6, 30)
        body = get(s, http, "/v2/sentiment/AAPL", limit=1).json()
        assert body["meta"]["timestamp"].startswith("2026-06-30")
        assert body["data"]["data"][0]["date"] == "2026-06-30"
        assert s.advance(days=2) == dt.date(2026, 7, 2) == s.today
        assert data_at(s, http, "/v2/sentiment/AAPL", limit=1)["data"][0]["date"] == "2026-07-02"
        assert s.set_today(dt.datetime(2026, 5, 1, 12)) == dt.date(2026, 5, 1)
        s.today = "2026-05-03"
        assert data_at(s, http, "/v2/sentiment/AAPL", limit=1)["data"][0]["date"] == "2026-05-03"
        with pytest.raises(ValueError, match="not a day"):
            s.set_today("soon")
        # Thread-safe: no step is lost when many threads move the clock at once.
        threads = [
            threading.Thread(target=lambda: [s.advance() for _ in range(50)]) for _ in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert s.today == dt.date(2026, 5, 3) + dt.timedelta(days=400)


def test_a_moved_clock_serves_what_a_new_sandbox_of_that_day_serves(
    http: requests.Session,
) -> None:
    paths = ["/v2/insider-trading/AAPL", "/v2/congress/senate/MSFT", "/v2/screener/news"]
    with Sandbox(today="2026-06-30") as moved, Sandbox(today="2026-07-15") as fresh:
        moved.advance(days=15)
        assert [get(moved, http, p).content for p in paths] == [
            get(fresh, http, p).content for p in paths
        ]


def _by(rows: list[dict], *key: str) -> dict[tuple, dict]:
    return {tuple(r[k] for k in key): r for r in rows}


def test_records_appear_as_days_pass_and_old_ones_stay(http: requests.Session) -> None:
    day = dt.date(2026, 6, 30)
    with Sandbox(today=day) as s:
        since = {"startDate": "2025-01-01"}  # old records leave the trailing 24 months
        before = {
            sym: data(s, http, f"/v2/insider-trading/{sym}", **since)["transactions"]
            for sym in FIVE
        }
        lobbying = data(s, http, "/v2/lobbying/MSFT", **since)["filings"]
        s.advance(days=30)
        new_rows = 0
        for sym in FIVE:
            after = data(s, http, f"/v2/insider-trading/{sym}", **since)["transactions"]
            assert all(r["filingDate"] <= "2026-07-30" for r in after)
            old = _by(before[sym], "filingUrl")
            now = _by(after, "filingUrl")
            assert {k: v for k, v in now.items() if k in old} == old  # unchanged
            assert set(old) <= set(now)
            fresh = [r for k, r in now.items() if k not in old]
            assert all(r["filingDate"] > day.isoformat() for r in fresh)  # nothing backdated
            new_rows += len(fresh)
        assert new_rows > 0
        later = data(s, http, "/v2/lobbying/MSFT", **since)["filings"]
        assert _by(later, "filingUuid").keys() >= _by(lobbying, "filingUuid").keys()
        # Nothing exists after today.
        assert data(s, http, "/v2/news/AAPL", startDate="2026-07-31")["articles"] == []
        assert data(s, http, "/v2/put-call-ratio/AAPL", limit=1)["data"][0]["date"] <= "2026-07-30"


def test_congress_trades_are_disclosed_late(http: requests.Session) -> None:
    day = dt.date(2026, 6, 30)
    window = {"startDate": "2026-05-01", "endDate": day.isoformat()}  # on the trade date
    key = ("date", "politician", "transactionType")
    late = []
    with Sandbox(today=day) as s:
        first = {
            (sym, ch): data(s, http, f"/v2/congress/{ch}/{sym}", **window)["trades"]
            for sym in FIVE
            for ch in ("house", "senate")
        }
        assert all(
            t["disclosureDate"] is None or t["disclosureDate"] <= day.isoformat()
            for rows in first.values()
            for t in rows
        )
        s.advance(days=45)
        for (sym, ch), rows in first.items():
            now = data(s, http, f"/v2/congress/{ch}/{sym}", **window)["trades"]
            known = _by(rows, *key)
            assert set(known) <= set(_by(now, *key))
            late += [t for k, t in _by(now, *key).items() if k not in known]
    assert late and all(t["date"] <= day.isoformat() for t in late)
    assert all(t["disclosureDate"] > day.isoformat() for t in late if t["disclosureDate"])
    lags = [
        (dt.date.fromisoformat(t["disclosureDate"]) - dt.date.fromisoformat(t["date"])).days
        for t in late
        if t["disclosureDate"]
    ]
    assert lags and max(lags) <= 45


def _record(s: Sandbox, http: requests.Session, rev: object) -> dict:
    if rev.dataset == "government_contracts":
        rows = data(s, http, f"/v2/government-contracts/{rev.symbol}", limit=500)["contracts"]
        (row,) = [r for r in rows if r["awardId"] == rev.key["awardId"]]
        return row
    if rev.dataset == "sentiment":
        day = rev.key["date"]
        (row,) = data(s, http, f"/v2/sentiment/{rev.symbol}", startDate=day, endDate=day)["data"]
        return row
    k = rev.key
    rows = data(
        s, http, f"/v2/congress/{k['chamber']}/{rev.symbol}", startDate=k["date"], endDate=k["date"]
    )["trades"]
    (row,) = [
        t
        for t in rows
        if (t["politician"], t["transactionType"], t["amountRaw"] or t["amount"])
        == (k["politician"], k["transactionType"], k["filedAmount"])
    ]
    return row


def test_records_are_revised_in_place_on_schedule(http: requests.Session) -> None:
    symbols = FIVE + ("META", "GOOGL", "JPM", "IBM", "KO")
    with Sandbox(today="2026-06-30") as s:
        revisions = {
            ds: s.revisions(ds, symbols, "2026-01-01", "2026-06-30")
            for ds in ("government_contracts", "congress_trades", "sentiment")
        }
        fields = {(r.dataset, r.field) for rs in revisions.values() for r in rs}
        assert fields == {(rule.dataset, f) for rule in REVISION_RULES for f in rule.fields}
        picked = [revisions["government_contracts"][0], revisions["sentiment"][0]]
        picked += [
            next(r for r in revisions["congress_trades"] if r.field == f)
            for f in ("amount", "owner", "disclosureDate")
        ]
        for rev in picked:
            assert rev.before != rev.after
            s.set_today(rev.on - dt.timedelta(days=1))
            assert _record(s, http, rev)[rev.field] == rev.before, rev
            s.set_today(rev.on)
            assert _record(s, http, rev)[rev.field] == rev.after, rev
        amounts = [r for r in revisions["congress_trades"] if r.field == "amount"]
        assert all(
            r.after in CONGRESS_BRACKETS and r.before == r.key["filedAmount"] for r in amounts
        )
        backfilled = [r for r in revisions["congress_trades"] if r.field != "amount"]
        assert all(r.before is None and r.after for r in backfilled if r.field != "amountRaw")
        s.set_today("2026-06-30")
        today_only = s.revisions("sentiment", symbols)
        assert all(r.on == dt.date(2026, 6, 30) for r in today_only)
        with pytest.raises(ValueError, match="never revised"):
            s.revisions("lobbying", "AAPL")


def test_forecasts_roll_forward(http: requests.Session) -> None:
    with Sandbox(today="2026-06-30") as s:
        first = data(s, http, "/v2/predictions/daily/AAPL")
        s.advance(days=1)
        second = data(s, http, "/v2/predictions/daily/AAPL")
    assert first["predictions"][0]["date"] == "2026-07-01"
    assert second["predictions"][0]["date"] == "2026-07-02"
    assert all(p["date"] > "2026-07-01" for p in second["predictions"])
    assert first["lastUpdated"].startswith("2026-06-30")
    assert second["lastUpdated"].startswith("2026-07-01")


def test_the_ticker_list_changes_and_delisted_history_stays(http: requests.Session) -> None:
    changes = listing_changes(dt.date(2026, 7, 1), dt.date(2026, 7, 10))
    assert len(changes) == 2 * 8 and {c.event for c in changes} == {"listed", "delisted"}
    gone = next(c for c in changes if c.event == "delisted")
    new = next(c for c in changes if c.event == "listed" and c.date == gone.date)
    eve = gone.date - dt.timedelta(days=1)

    def tickers(s: Sandbox) -> set[str]:
        rows = data(s, http, "/v2/tickers", market=gone.market, limit=100000)["tickers"]
        return {t["symbol"] for t in rows}

    def screened(s: Sandbox) -> set[str]:
        rows = data(s, http, "/v2/screener/sentiment", market=new.market, limit=20000)["data"]
        return {r["symbol"] for r in rows}

    with Sandbox(today=eve) as s:
        assert gone.symbol in tickers(s) and new.symbol not in tickers(s)
        assert gone.symbol in screened(s) and new.symbol not in screened(s)
        assert get(s, http, f"/v2/sentiment/{new.symbol}").status_code == 404
        history = data(s, http, f"/v2/sentiment/{gone.symbol}")["data"]
        s.set_today(gone.date + dt.timedelta(days=20))
        assert gone.symbol not in tickers(s) and new.symbol in tickers(s)
        assert gone.symbol not in screened(s) and new.symbol in screened(s)
        kept = data(s, http, f"/v2/sentiment/{gone.symbol}")["data"]
        assert kept[0]["date"] == eve.isoformat()  # nothing after the delisting
        assert {r["date"] for r in kept} >= {r["date"] for r in history[:300]}
        assert get(s, http, f"/v2/predictions/daily/{gone.symbol}").status_code == 404
        fresh = data(s, http, f"/v2/sentiment/{new.symbol}")["data"]
        assert fresh[-1]["date"] == new.date.isoformat() and len(fresh) == 21
        assert gone.symbol in s.symbols() and new.symbol in s.symbols()
    assert new.symbol in universe_symbols(gone.date) and gone.symbol not in universe_symbols(
        gone.date
    )


def test_sized_fixtures_do_not_move_with_the_clock(http: requests.Session) -> None:
    with Sandbox(today=TODAY, record_counts={"BIGCO": 40}) as s:
        before = data(s, http, "/v2/congress/house/BIGCO")["trades"]
        s.advance(days=60)
        assert data(s, http, "/v2/congress/house/BIGCO")["trades"] == before
        assert len(before) == 40
