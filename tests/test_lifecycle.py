"""A client's life: no request outlives a failed load, close() never closes the session (and
its SQLite cache) under a running request, and the public surface that guards, copies and
times a client (replace, loading, interrupt, clock, get_default_client(create=False))."""

from __future__ import annotations

import contextlib
import datetime as dt
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import requests

import mdframes as md
from mdframes.sandbox import Sandbox

from .conftest import KEY

SYMBOLS = [f"S{i:03d}" for i in range(60)]

# The issue-18 crash: a cached client, 60 symbols with one 404, no retries, the client closed
# right after the raise. Before the fix the interpreter died (SIGSEGV, exit -11): the pool was
# shut down without waiting and close() closed SQLite under the requests still in flight.
# Thirty trials, five to a process: each a new client and cache closed right after the raise,
# and each process ends (as the reported one did) after its last close.
CHILD = """
import sys
import mdframes as md

for trial in sys.argv[3:]:
    symbols = [f"S{i:03d}" for i in range(60)]
    symbols[int(trial) % 7] = "NOTFOUND"
    client = md.Client(api_key="sandbox-key", base_url=sys.argv[1],
                       cache=f"{sys.argv[2]}-{trial}.sqlite", max_retries=0, progress=False)
    try:
        md.load_insider_trading(symbols, client=client)
    except md.NotFoundError:
        pass
    else:
        sys.exit(3)
    client.close()
"""


@pytest.fixture(scope="module")
def server() -> Sandbox:
    with Sandbox(extra_symbols=SYMBOLS) as sandbox:
        yield sandbox


def _client(server: Sandbox, **options: object) -> md.Client:
    options = {"cache": False, "progress": False, **options}
    return md.Client(api_key=KEY, base_url=server.url, **options)  # type: ignore[arg-type]


def test_closing_a_cached_client_right_after_a_failed_load_never_crashes(
    server: Sandbox, tmp_path: Path
) -> None:
    codes = []
    for first in range(0, 30, 5):
        trials = [str(k) for k in range(first, first + 5)]
        done = subprocess.run(
            [sys.executable, "-c", CHILD, server.url, str(tmp_path / "c"), *trials],
            capture_output=True,
            text=True,
            timeout=120,
        )
        codes.append(done.returncode)
        assert done.returncode == 0, (trials, done.returncode, done.stderr[-2000:])
    assert codes == [0] * 6
    assert len(list(tmp_path.glob("c-*.sqlite"))) == 30  # every trial had a cache of its own


def test_no_worker_thread_is_left_running_when_a_load_raises(
    server: Sandbox, tmp_path: Path
) -> None:
    symbols = list(SYMBOLS)
    symbols[3] = "NOTFOUND"
    client = _client(server, cache=tmp_path / "c.sqlite", max_retries=0)
    with client, pytest.raises(md.NotFoundError):
        md.load_insider_trading(symbols, client=client)
    # The error reached us only after every request in flight ended: no worker is alive.
    assert [t.name for t in threading.enumerate() if t.name.startswith("mdframes")] == []


def test_close_waits_for_a_request_running_on_the_session(tmp_path: Path) -> None:
    with Sandbox(latency=0.3) as slow:
        sent = threading.Event()
        client = _client(slow, cache=tmp_path / "c.sqlite", before_send=sent.set)
        got: list[object] = []
        worker = threading.Thread(target=lambda: got.append(md.load_markets(client=client)))
        worker.start()
        assert sent.wait(30)  # the request has left; the server holds it for 0.3 s
        client.close()
        # close() returned only once the request had its answer, stored in the cache.
        with contextlib.closing(sqlite3.connect(tmp_path / "c.sqlite")) as db:
            assert db.execute("select count(*) from responses").fetchone()[0] == 1
        worker.join()
        assert len(got) == 1 and len(got[0]) == 20  # type: ignore[arg-type]
        assert len(md.load_markets(client=client)) == 20  # a new session after close
        assert slow.count("/v2/markets") == 1  # ... reading the cache the first one filled
        client.close()


# --- the public surface --------------------------------------------------------------------------


def test_replace_copies_settings_not_the_session(server: Sandbox) -> None:
    seen: list[int] = []
    client = _client(server, timeout=7.0, max_retries=1)
    copy = client.replace(max_workers=3, after_send=lambda r: seen.append(r.status_code))
    assert isinstance(copy, md.Client) and copy is not client
    assert (copy.timeout, copy.max_retries, copy.max_workers) == (7.0, 1, 3)
    assert copy.base_url == client.base_url and copy.clock is client.clock
    assert repr(copy).count("***") == 1  # the key came along, masked
    assert copy.session is not client.session
    assert len(md.load_markets(client=copy)) == 20 and seen == [200]
    copy.close()  # the original's session is untouched
    assert len(md.load_markets(client=client)) == 20
    with pytest.raises(md.InvalidParameterError, match="sesion"):
        client.replace(sesion=None)


def test_hooks_see_every_attempt_and_every_response_including_429s(server: Sandbox) -> None:
    attempts: list[int] = []
    statuses: list[int] = []
    client = _client(
        server,
        backoff_factor=0.01,
        before_send=lambda: attempts.append(1),
        after_send=lambda r: statuses.append(r.status_code),
    )
    server.inject(("429", 0.2), 503, path="/v2/markets")
    assert len(md.load_markets(client=client)) == 20
    assert statuses == [429, 503, 200] and len(attempts) == 3
    assert all(isinstance(s, int) for s in statuses)


def test_before_send_may_refuse_a_request(server: Sandbox) -> None:
    class Spent(md.MdframesError):
        pass

    def budget() -> None:
        raise Spent("budget spent")

    server.clear_log()
    with pytest.raises(Spent):
        md.load_markets(client=_client(server, before_send=budget))
    assert server.count("/v2/markets") == 0


def test_loading_checks_configuration_and_resets_the_interrupt(server: Sandbox) -> None:
    with pytest.raises(md.ConfigurationError, match="MDFRAMES_API_KEY"):
        with md.Client(base_url=server.url).loading():
            pass  # pragma: no cover - never entered
    client = _client(server)
    client.interrupt()
    with pytest.raises(md.MdframesError, match="interrupted"):
        client.get("/v2/markets")  # outside a loading block the interrupt holds
    with client.loading():
        assert len(client.get("/v2/markets").data) > 0


def test_ctrl_c_inside_loading_interrupts_the_client(server: Sandbox) -> None:
    client = _client(server)
    with pytest.raises(KeyboardInterrupt):
        with client.loading():
            raise KeyboardInterrupt
    with pytest.raises(md.MdframesError, match="interrupted"):
        client.get("/v2/markets")  # pending work stops: nothing is sent
    assert len(md.load_markets(client=client)) == 20  # the next load starts clean


def test_clock_is_real_utc_by_default_and_the_sandboxs_day_in_a_sandbox() -> None:
    now = md.Client(api_key=KEY, base_url="http://127.0.0.1:1").clock()
    assert now.tzinfo is not None and now.utcoffset() == dt.timedelta(0)
    assert abs(now - dt.datetime.now(dt.timezone.utc)) < dt.timedelta(minutes=1)
    with md.sandbox.running(today="2026-06-30") as client:
        assert client.clock().date() == dt.date(2026, 6, 30)
        client.sandbox.advance(days=2)
        assert client.clock().date() == dt.date(2026, 7, 2)
        assert client.replace(cache=False).clock().date() == dt.date(2026, 7, 2)
    fixed = dt.datetime(2026, 1, 2, tzinfo=dt.timezone.utc)
    assert md.Client(clock=lambda: fixed).clock() == fixed
    with pytest.raises(md.ConfigurationError, match="clock"):
        md.Client(clock="now")  # type: ignore[arg-type]


def test_get_default_client_can_look_without_creating(monkeypatch: pytest.MonkeyPatch) -> None:
    assert md.get_default_client(create=False) is None
    assert md.get_default_client(create=False) is None  # still nothing was created
    monkeypatch.setenv("MDFRAMES_BASE_URL", "http://127.0.0.1:1")
    created = md.get_default_client()
    assert md.get_default_client(create=False) is created


def test_a_response_is_a_requests_response_for_after_send(server: Sandbox) -> None:
    got: list[object] = []
    md.load_markets(client=_client(server, after_send=got.append))
    assert isinstance(got[0], requests.Response) and "X-RateLimit-Remaining" in got[0].headers


def test_the_environments_proxy_is_read_once_and_still_used(
    server: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mdframes.sandbox.faults import FaultProxy

    with FaultProxy(server.port) as proxy:  # forwards what it gets: a plain HTTP proxy here
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        client = _client(server)
        assert len(md.load_markets(client=client)) == 20
        assert proxy.count() == 1 and proxy.log[0].target.startswith("http://127.0.0.1")
        # Read when the session was built: not on every request.
        assert client.session.trust_env is False
        assert client.session.proxies.get("http") == proxy.url
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        direct = _client(server)
        assert len(md.load_markets(client=direct)) == 20
        assert proxy.count() == 1  # bypassed, as NO_PROXY says
