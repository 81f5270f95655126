"""Running the sandbox: the default client it sets, starting and stopping, its request log and
its independence from the frame code; symbols it does not know."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from urllib.parse import quote

import pytest
import requests

import mdframes as md
from mdframes.sandbox import KNOWN_SYMBOLS, MISSING_SYMBOLS, Sandbox, running, universe_symbols

from .conftest import BEARER, TODAY, data, get


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
