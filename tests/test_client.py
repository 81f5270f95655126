"""The HTTP client against the real sandbox over loopback: auth, errors, retries, rate limits,
cache, and the key never leaking."""

from __future__ import annotations

import logging
import sqlite3
import time
from datetime import datetime, timezone

import pandas as pd
import pytest
import requests

import mdframes as md
from mdframes.errors import NetworkError
from mdframes.ratelimit import parse_reset
from mdframes.sandbox import Sandbox

from .conftest import KEY

SECRET = "sk-live-very-secret-key-0123456789"


def _client(server: Sandbox, **kw) -> md.Client:
    kw.setdefault("cache", False)
    kw.setdefault("backoff_factor", 0.01)
    return md.Client(api_key=kw.pop("api_key", KEY), base_url=server.url, **kw)


# --- configuration ------------------------------------------------------------------------------


def test_missing_key_names_the_environment_variable(shared_sandbox: Sandbox) -> None:
    client = md.Client(base_url=shared_sandbox.url, cache=False)
    with pytest.raises(md.ConfigurationError, match="MDFRAMES_API_KEY"):
        md.load_markets(client=client)
    with pytest.raises(md.ConfigurationError, match="MDFRAMES_BASE_URL"):
        md.load_markets(client=md.Client(api_key=KEY, cache=False))


def test_environment_variables_configure_the_default_client(
    shared_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDFRAMES_API_KEY", KEY)
    monkeypatch.setenv("MDFRAMES_BASE_URL", shared_sandbox.url)
    df = md.load_markets()
    assert len(df) == 20


@pytest.mark.parametrize(
    "url", ["http://api.example.com", "http://10.0.0.5:8080", "http://[2001:db8::1]/"]
)
def test_plain_http_refused_for_non_loopback(url: str) -> None:
    with pytest.raises(md.ConfigurationError, match="unencrypted"):
        md.Client(api_key=SECRET, base_url=url)


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:1",
        "http://127.0.0.1:1",
        "http://127.8.9.10",
        "http://[::1]:80",
        "https://api.example.com",
    ],
)
def test_loopback_and_https_accepted(url: str) -> None:
    assert md.Client(api_key=SECRET, base_url=url).base_url


def test_repr_masks_the_key() -> None:
    client = md.Client(api_key=SECRET, base_url="https://api.example.com")
    assert SECRET not in repr(client)
    assert SECRET[:8] not in repr(client)
    assert "***" in repr(client)


# --- authentication and errors -----------------------------------------------------------------


def test_v2_sends_bearer_and_v1_sends_token(client: md.Client, shared_sandbox: Sandbox) -> None:
    server = shared_sandbox
    server.clear_log()
    md.load_markets(client=client)
    md.v1.load_available_markets(client=client)
    placements = [r.auth for r in server.requests]
    assert placements == ["bearer", "token"]


def test_invalid_key_is_authentication_error_not_retried(sandbox: Sandbox) -> None:
    client = _client(sandbox, api_key=SECRET)
    with pytest.raises(md.AuthenticationError) as info:
        md.load_sentiment("AAPL", client=client)
    err = info.value
    assert err.status == 401 and err.code == "UNAUTHORIZED"
    assert SECRET not in str(err) and SECRET not in (err.url or "")
    assert sandbox.count() == 1  # 4xx is never retried


def test_forbidden_key_is_permission_denied(sandbox: Sandbox) -> None:
    with pytest.raises(md.PermissionDeniedError) as info:
        md.load_markets(client=_client(sandbox, api_key="forbidden-key"))
    assert info.value.status == 403 and info.value.code == "FORBIDDEN"
    assert isinstance(info.value, PermissionError)


def test_unknown_symbol_is_not_found_and_lookup_error(sandbox: Sandbox) -> None:
    with pytest.raises(LookupError) as info:
        md.load_sentiment("NOTFOUND", client=_client(sandbox))
    assert isinstance(info.value, md.NotFoundError) and info.value.status == 404
    assert sandbox.count() == 1


def test_bad_request_from_the_server(sandbox: Sandbox) -> None:
    # Bypass the loaders' own checks to see the server's 400 mapped.
    with pytest.raises(md.BadRequestError) as info:
        _client(sandbox).get("/v2/lobbying/AAPL", {"limit": 501})
    assert info.value.status == 400 and isinstance(info.value, ValueError)
    assert sandbox.count() == 1


def test_success_false_on_http_200(sandbox: Sandbox) -> None:
    sandbox.inject("success_false")
    with pytest.raises(md.PermissionDeniedError) as info:
        md.load_markets(client=_client(sandbox))
    assert info.value.code == "FORBIDDEN"


@pytest.mark.parametrize("fault", ["html", "no_envelope"])
def test_unreadable_bodies_are_response_format_errors_at_once(sandbox: Sandbox, fault: str) -> None:
    # A whole answer that is not the documented envelope: the server's, not the transfer's.
    sandbox.inject(fault)
    with pytest.raises(md.ResponseFormatError):
        md.load_insider_trading("AAPL", client=_client(sandbox))
    assert sandbox.count("/v2/insider-trading") == 1


def test_v1_body_on_a_v2_path_is_a_format_error(sandbox: Sandbox) -> None:
    # /v1 returns bare objects; decoding one as v2 must fail loudly, not give an empty frame.
    client = _client(sandbox)
    with pytest.raises(md.ResponseFormatError, match="envelope"):
        client.get("/v1/available/markets", {"token": KEY}, version="v2")


# --- retries ------------------------------------------------------------------------------------


def test_5xx_retried_then_success(sandbox: Sandbox) -> None:
    sandbox.inject(500, 503)
    df = md.load_markets(client=_client(sandbox, max_retries=3))
    assert len(df) == 20
    assert sandbox.count("/v2/markets") == 3


def test_5xx_past_max_retries_is_server_error(sandbox: Sandbox) -> None:
    sandbox.inject(500, 500, 500)
    with pytest.raises(md.ServerError) as info:
        md.load_markets(client=_client(sandbox, max_retries=2))
    assert info.value.status == 500
    assert sandbox.count("/v2/markets") == 3  # first attempt + 2 retries


def test_html_5xx_is_server_error_with_status(sandbox: Sandbox) -> None:
    sandbox.inject("html500")
    with pytest.raises(md.ServerError) as info:
        md.load_markets(client=_client(sandbox, max_retries=0))
    assert info.value.status == 500


def test_dropped_connection_retried(sandbox: Sandbox) -> None:
    sandbox.inject("drop")
    assert len(md.load_markets(client=_client(sandbox))) == 20


def test_dropped_connections_past_retries_raise_network_error(sandbox: Sandbox) -> None:
    sandbox.inject("drop", "drop")
    with pytest.raises(NetworkError):
        md.load_markets(client=_client(sandbox, max_retries=1))


@pytest.mark.parametrize("reset_format", ["iso", "unix"])
def test_429_waits_for_the_reset(sandbox: Sandbox, reset_format: str) -> None:
    sandbox.reset_format = reset_format
    sandbox.inject(("429", 1.5))
    started = time.monotonic()
    df = md.load_markets(client=_client(sandbox))
    waited = time.monotonic() - started
    assert len(df) == 20
    # The reset is named to the second (Unix form), so the wait is at least ~0.5 s and the
    # client did not fall back to its 10 ms backoff.
    assert waited >= 0.45
    assert sandbox.count("/v2/markets") == 2


def test_429_with_retry_after_only(sandbox: Sandbox) -> None:
    sandbox.inject(("retry_after", 1))
    started = time.monotonic()
    md.load_markets(client=_client(sandbox))
    assert time.monotonic() - started >= 0.9


def test_429_reset_beyond_max_wait_raises_at_once(sandbox: Sandbox) -> None:
    sandbox.inject(("429", 3600))
    started = time.monotonic()
    with pytest.raises(md.RateLimitError) as info:
        md.load_markets(client=_client(sandbox, max_wait=5))
    assert time.monotonic() - started < 60  # did not sleep for the hour
    reset = info.value.reset_at
    assert reset is not None and reset.tzinfo is not None
    assert 3000 < (reset - datetime.now(timezone.utc)).total_seconds() < 3700
    assert sandbox.count("/v2/markets") == 1


def test_429_past_max_retries(sandbox: Sandbox) -> None:
    sandbox.inject(("429", 0.2), ("429", 0.2))
    with pytest.raises(md.RateLimitError) as info:
        md.load_markets(client=_client(sandbox, max_retries=1))
    assert info.value.status == 429 and info.value.reset_at is not None
    assert sandbox.count("/v2/markets") == 2


def test_remaining_zero_pauses_the_next_request(sandbox: Sandbox) -> None:
    sandbox.reset_seconds = 1.5
    sandbox.inject("remaining0")
    client = _client(sandbox)
    md.load_markets(client=client)
    started = time.monotonic()
    md.load_regions(client=client)
    assert time.monotonic() - started >= 0.45
    assert sandbox.count() == 2  # waited instead of spending a request on a 429


def test_remaining_zero_with_far_reset_raises_without_request(sandbox: Sandbox) -> None:
    sandbox.reset_seconds = 3600
    sandbox.inject("remaining0")
    client = _client(sandbox, max_wait=2)
    md.load_markets(client=client)
    with pytest.raises(md.RateLimitError) as info:
        md.load_regions(client=client)
    assert info.value.reset_at is not None
    assert sandbox.count() == 1


def test_rate_limit_window_exhaustion_then_reset(sandbox: Sandbox) -> None:
    sandbox.rate_limit = 2
    sandbox.rate_window = 1
    client = _client(sandbox)
    for _ in range(4):  # the third and fourth calls meet remaining=0 and wait for the window
        md.load_markets(client=client)
    statuses = [r.status for r in sandbox.requests]
    assert statuses.count(200) == 4


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2030-01-01T00:00:00Z", datetime(2030, 1, 1, tzinfo=timezone.utc)),
        ("2030-01-01T01:00:00+01:00", datetime(2030, 1, 1, tzinfo=timezone.utc)),
        ("1893456000", datetime(2030, 1, 1, tzinfo=timezone.utc)),
        ("1893456000000", datetime(2030, 1, 1, tzinfo=timezone.utc)),
    ],
)
def test_parse_reset_forms(value: str, expected: datetime) -> None:
    assert parse_reset(value) == expected


def test_parse_reset_small_number_is_a_delta() -> None:
    got = parse_reset("30", now=1_000_000_000.0)
    assert got == datetime.fromtimestamp(1_000_000_030, tz=timezone.utc)
    assert parse_reset("not a time") is None


# --- cache --------------------------------------------------------------------------------------


def test_cache_hit_makes_no_request(sandbox: Sandbox, tmp_path) -> None:
    path = tmp_path / "c.sqlite"
    with _client(sandbox, cache=path) as client:
        first = md.load_insider_trading("AAPL", client=client)
        second = md.load_insider_trading("AAPL", client=client)
    assert sandbox.count("/v2/insider-trading") == 1
    assert first.equals(second)
    assert path.exists()


def test_errors_are_not_cached(sandbox: Sandbox, tmp_path) -> None:
    sandbox.inject(500)
    with _client(sandbox, cache=tmp_path / "c.sqlite", max_retries=0) as client:
        with pytest.raises(md.ServerError):
            md.load_markets(client=client)
        assert len(md.load_markets(client=client)) == 20
    assert sandbox.count("/v2/markets") == 2


def test_key_never_reaches_the_cache_file(tmp_path) -> None:
    path = tmp_path / "c.sqlite"
    with Sandbox(api_keys=(SECRET,)) as server:
        with md.Client(api_key=SECRET, base_url=server.url, cache=path) as client:
            md.load_markets(client=client)  # Authorization: Bearer
            md.v1.load_available_markets(client=client)  # ?token=
            session = client.session
            session.get(server.url + "/v2/regions", headers={"X-API-Key": SECRET})
            session.get(server.url + "/v2/tickers", params={"apiKey": SECRET})
            session.get(server.url + "/v2/tickers", params={"token": SECRET, "limit": 5})
            server.inject("redirect")
            with pytest.raises(md.ApiError):  # redirects are not followed
                md.v1.load_available_tickers(client=client)
        placements = {r.auth for r in server.requests}
        assert {"bearer", "header", "apiKey", "token"} <= placements
    data = path.read_bytes()
    for extra in path.parent.glob(path.name + "*"):
        data += extra.read_bytes()
    assert SECRET.encode() not in data
    with sqlite3.connect(path) as db:
        assert db.execute("select count(*) from responses").fetchone()[0] >= 4


def test_key_not_in_error_text_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    with Sandbox(api_keys=(SECRET,)) as server:
        client = md.Client(api_key=SECRET, base_url=server.url, cache=False, max_retries=0)
        server.inject(500)
        with caplog.at_level(logging.DEBUG):
            with pytest.raises(md.ServerError) as info:
                md.v1.load_available_markets(client=client)
            server.inject("drop")
            with pytest.raises(NetworkError) as info2:
                md.v1.load_available_markets(client=client)
    for text in (
        str(info.value),
        repr(info.value),
        info.value.url or "",
        str(info2.value),
        caplog.text,
    ):
        assert SECRET not in text
    assert "token=" in caplog.text  # the query was logged, redacted


def test_network_error_for_a_closed_port() -> None:
    client = md.Client(
        api_key=SECRET, base_url="http://127.0.0.1:9", cache=False, max_retries=0, timeout=2
    )
    with pytest.raises(NetworkError) as info:
        md.v1.load_available_markets(client=client)
    assert SECRET not in str(info.value)
    assert isinstance(info.value, ConnectionError)


def test_shared_session_pool_is_wide_enough() -> None:
    client = md.Client(
        api_key=SECRET, base_url="https://api.example.com", cache=False, max_workers=24
    )
    adapter = client.session.get_adapter("https://api.example.com")
    assert adapter._pool_maxsize >= 24  # type: ignore[attr-defined]
    assert isinstance(client.session, requests.Session)


def test_concurrent_loads_share_one_cached_session(sandbox: Sandbox, tmp_path) -> None:
    symbols = [f"C{i:02d}" for i in range(24)]
    sandbox.extra_symbols = set(symbols)  # outside the sandbox's universe, like real new listings
    with _client(sandbox, cache=tmp_path / "c.sqlite", max_workers=8) as client:
        first = md.load_insider_trading(symbols, client=client)
        assert sandbox.count("/v2/insider-trading") == 24
        second = md.load_insider_trading(symbols, client=client)
    assert sandbox.count("/v2/insider-trading") == 24  # every response came from the cache
    pd.testing.assert_frame_equal(first, second)


@pytest.mark.parametrize("fault", ["success_false", "no_envelope"])
def test_unreadable_200_is_not_replayed_from_the_cache(
    sandbox: Sandbox, tmp_path, fault: str
) -> None:
    sandbox.inject(fault)
    with _client(sandbox, cache=tmp_path / "c.sqlite") as client:
        with pytest.raises(md.MdframesError):
            md.load_markets(client=client)
        assert len(md.load_markets(client=client)) == 20
        assert len(md.load_markets(client=client)) == 20  # now from the cache
    assert sandbox.count("/v2/markets") == 2


def test_invalid_data_is_not_replayed_from_the_cache(
    sandbox: Sandbox, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from mdframes.params import build_request
    from mdframes.registry import REGISTRY

    # The same cached answer read by an entry that expects another record list: a 200 whose
    # records are unusable. The pipeline must evict it, so the next call asks again.
    ds = REGISTRY["insider_trading"]
    wrong = dataclasses.replace(ds, name="insider_wrong_shape", records="nope")
    monkeypatch.setitem(REGISTRY, wrong.name, wrong)
    req = build_request(ds, {}, symbol="AAPL")
    with _client(sandbox, cache=tmp_path / "c.sqlite") as client:
        md.load_insider_trading("AAPL", client=client)
        assert client.get(req.path, req.query).from_cache
        with pytest.raises(md.ResponseFormatError, match="nope"):
            md.load(wrong.name, "AAPL", client=client)
        assert not client.get(req.path, req.query).from_cache  # evicted: asked again


def test_timeouts_are_retried_then_raise(tmp_path) -> None:
    with Sandbox(latency=0.6) as server:
        client = md.Client(
            api_key=KEY,
            base_url=server.url,
            cache=False,
            timeout=0.15,
            max_retries=1,
            backoff_factor=0.01,
        )
        with pytest.raises(NetworkError, match="(?i)timed out|timeout"):
            md.load_markets(client=client)
        time.sleep(0.7)  # let the server finish the slow answers before counting
        assert server.count("/v2/markets") == 2  # the first attempt and one retry
