"""The sandbox's protocol: same bytes for the same request, the key placements, rate limits
and the injectable faults."""

from __future__ import annotations

import datetime as dt
import re

import pytest
import requests

from mdframes.sandbox import Sandbox

from .conftest import BEARER, KEY, TODAY, data_at, get

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
