"""Fault injection: a standard-library proxy between the client and the sandbox breaks
answers the way networks and servers do (resets before and mid-body, short bodies, cut
chunked streams, truncated close-delimited 200s, 5xx, 429 with a reset, stalls), seeded, and
the loads must come out row for row as without faults. Also Ctrl-C during a load, measured
in a subprocess and counted at the proxy.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import http.client
import json
import random
import signal
import socket
import socketserver
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

import mdframes as md
from mdframes.errors import NetworkError
from mdframes.sandbox import Sandbox

from .conftest import KEY

TODAY = dt.date(2026, 6, 1)  # fixed, so the clean and the faulty run see the same data
# The connection breaks before the framed body is whole: a dropped connection.
CONNECTION_CUTS = ("reset_mid", "short_body", "cut_chunked")
# A 200 whose body is not complete JSON although the transfer looks whole: ended by closing
# the connection, or (cut_200) with a Content-Length that matches the short body.
CUT_200S = ("truncated_200", "cut_200")
BODY_CUTS = (*CONNECTION_CUTS, *CUT_200S)
# Every kind the client must survive by retrying. "stall" is one too, but each hit costs a
# whole client timeout (30 s by default), so it has its own test with a short timeout.
RETRYABLE = ("reset_before", *BODY_CUTS, "status_503", "html_502", "429")
ALL_KINDS = (*RETRYABLE, "stall", "wrong_shape", "status_404")


@dataclass
class Hit:
    at: float  # time.monotonic() when the request head was read
    target: str
    attempt: int
    kind: str | None


class FaultProxy:
    """A keep-alive HTTP/1.1 proxy to a sandbox that injects faults.

    A request's fate depends only on (seed, target, attempt number), never on thread timing:
    each attempt is faulted with probability ``rate`` (kind drawn from ``kinds``), at most
    ``max_in_a_row`` times for one target. ``always`` maps a path prefix to a kind applied to
    every attempt; ``script`` lists kinds for the next requests, whatever their target.
    """

    def __init__(
        self,
        upstream_port: int,
        *,
        rate: float = 0.0,
        kinds: tuple[str, ...] = RETRYABLE,
        seed: int = 0,
        max_in_a_row: int = 3,
        stall: float = 5.0,
    ) -> None:
        self.upstream_port = upstream_port
        self.rate, self.kinds, self.seed = rate, kinds, seed
        self.max_in_a_row, self.stall = max_in_a_row, stall
        self.always: dict[str, str] = {}
        self.script: list[str] = []
        self.log: list[Hit] = []
        self.closing = threading.Event()
        self._lock = threading.Lock()
        self._attempts: Counter[str] = Counter()
        proxy = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                proxy._serve(self)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True
            request_queue_size = 128

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closing.set()  # ends every stall at once
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def count(self) -> int:
        with self._lock:
            return len(self.log)

    def figures(self) -> dict[str, object]:
        with self._lock:
            hits = list(self.log)
        faults = Counter(h.kind for h in hits if h.kind)
        return {
            "requests": len(hits),
            "distinct": len({h.target for h in hits}),
            "retries": len(hits) - len({h.target for h in hits}),
            "faults": sum(faults.values()),
            "by_kind": dict(sorted(faults.items())),
            "deepest": max((h.attempt for h in hits), default=0),
        }

    # -- one connection --------------------------------------------------------------------
    def _decide(self, target: str) -> tuple[int, str | None]:
        with self._lock:
            attempt = self._attempts[target]
            self._attempts[target] += 1
            if self.script:
                return attempt, self.script.pop(0)
        for prefix, kind in self.always.items():
            if target.startswith(prefix):
                return attempt, kind
        if attempt >= self.max_in_a_row:
            return attempt, None
        rng = random.Random(f"{self.seed}|{target}|{attempt}")
        if rng.random() < self.rate:
            return attempt, rng.choice(self.kinds)
        return attempt, None

    def _serve(self, handler: socketserver.StreamRequestHandler) -> None:
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=30)
        sock = handler.connection
        try:
            while not self.closing.is_set():
                line = handler.rfile.readline(65537)
                if not line.strip():
                    return
                method, target, _ = line.decode("latin-1").split(" ", 2)
                headers = http.client.parse_headers(handler.rfile)
                attempt, kind = self._decide(target)
                with self._lock:
                    self.log.append(Hit(time.monotonic(), target, attempt, kind))
                if kind == "reset_before":
                    return _reset(sock)
                if kind == "stall":
                    self.closing.wait(self.stall)
                    return _reset(sock)
                upstream.request(method, target, headers=dict(headers.items()))
                answer = upstream.getresponse()
                body = answer.read()
                keep = {
                    k: v
                    for k, v in answer.getheaders()
                    if k.lower() not in ("content-length", "connection", "transfer-encoding")
                }
                if not _send(sock, kind, answer.status, keep, body, target):
                    return
        except OSError:
            return
        finally:
            upstream.close()


def _reset(sock: socket.socket) -> None:
    """Close with RST instead of FIN: the client sees 'connection reset by peer'."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()


def _head(status: int, headers: dict[str, str], reason: str = "X") -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _error(status: int, code: str, message: str) -> bytes:
    return json.dumps({"success": False, "error": {"code": code, "message": message}}).encode()


def _send(
    sock: socket.socket, kind: str | None, status: int, headers: dict, body: bytes, target: str
) -> bool:
    """Write the answer, damaged as ``kind`` says; False when the connection is gone."""
    half = body[: max(1, len(body) // 2)]
    json_type = {"Content-Type": "application/json"}
    if kind is None:
        sock.sendall(_head(status, {**headers, "Content-Length": str(len(body))}) + body)
        return True
    if kind == "reset_mid":
        sock.sendall(_head(status, {**headers, "Content-Length": str(len(body))}) + half)
        _reset(sock)
        return False
    if kind == "short_body":
        sock.sendall(_head(status, {**headers, "Content-Length": str(len(body))}) + half)
        sock.shutdown(socket.SHUT_RDWR)
        return False
    if kind == "cut_chunked":
        chunk = f"{len(half):x}\r\n".encode() + half + b"\r\n"
        sock.sendall(_head(status, {**headers, "Transfer-Encoding": "chunked"}) + chunk)
        sock.shutdown(socket.SHUT_RDWR)  # no terminating zero-length chunk
        return False
    if kind == "truncated_200":
        sock.sendall(_head(status, {**headers, "Connection": "close"}) + half)
        sock.shutdown(socket.SHUT_RDWR)  # the body ends where the connection does
        return False
    if kind == "cut_200":  # well framed, Content-Length met, the JSON cut short
        sock.sendall(_head(200, {**headers, "Content-Length": str(len(half))}) + half)
        return True
    if kind == "wrong_shape":  # complete JSON, not the envelope: the server's answer
        wrong = json.dumps({"rows": []}).encode()
        sock.sendall(_head(200, {**headers, "Content-Length": str(len(wrong))}) + wrong)
        return True
    if kind == "status_503":
        error = _error(503, "SERVICE_UNAVAILABLE", "injected")
        fault = {**json_type, "Content-Length": str(len(error))}
    elif kind == "html_502":
        error = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
        fault = {"Content-Type": "text/html", "Content-Length": str(len(error))}
    elif kind == "status_404":
        error = _error(404, "NOT_FOUND", f"no such symbol in {target.split('?')[0]}")
        fault = {**json_type, "Content-Length": str(len(error))}
    elif kind in ("429", "429_long"):
        ahead = 0.3 if kind == "429" else 60.0
        reset = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=ahead)
        error = _error(429, "RATE_LIMIT_EXCEEDED", "slow down")
        fault = {
            **json_type,
            "Content-Length": str(len(error)),
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": reset.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }
    else:
        raise AssertionError(f"unknown fault {kind}")
    code = {"status_503": 503, "html_502": 502, "status_404": 404}.get(kind, 429)
    sock.sendall(_head(code, fault) + error)
    return True


# Test symbols S000..S199 lie outside the sandbox's universe: named as extra symbols.
EXTRA = [f"S{i:03d}" for i in range(200)] + ["AAA", "BBB"]


@pytest.fixture
def server() -> Sandbox:
    with Sandbox(today=TODAY, extra_symbols=EXTRA) as sandbox:
        yield sandbox


def _direct(server: Sandbox) -> md.Client:
    return md.Client(api_key=KEY, base_url=server.url, cache=False, progress=False)


def _entries(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute("select count(*) from responses").fetchone()[0]


# --- each kind alone ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [*RETRYABLE, "stall"])
def test_each_fault_kind_is_retried_and_only_the_whole_body_is_cached(
    server: Sandbox, tmp_path: Path, kind: str
) -> None:
    expected = md.load_insider_trading("AAPL", client=_direct(server))
    path = tmp_path / "c.sqlite"
    # Only the stall needs a short timeout; everything else runs at the defaults.
    options = {"timeout": 0.5} if kind == "stall" else {}
    with FaultProxy(server.port, stall=5) as proxy:
        proxy.script = [kind]
        with md.Client(api_key=KEY, base_url=proxy.url, cache=path, **options) as client:
            got = md.load_insider_trading("AAPL", client=client)
            pd.testing.assert_frame_equal(got, expected)
            assert proxy.count() == 2  # the faulted attempt and one retry
            assert _entries(path) == 1
            again = md.load_insider_trading("AAPL", client=client)
        assert proxy.count() == 2  # from the cache: the stored body is the whole one
    pd.testing.assert_frame_equal(again, expected)


@pytest.mark.parametrize("kind", BODY_CUTS)
def test_a_body_cut_past_the_retries_is_an_error_and_never_cached(
    server: Sandbox, tmp_path: Path, kind: str
) -> None:
    # A broken connection ends as NetworkError; a 200 that is not complete JSON as
    # ResponseFormatError (CONTRACT section 3): both only once the retries are spent.
    error, words = (
        (md.ResponseFormatError, "not complete JSON")
        if kind in CUT_200S
        else (NetworkError, "dropped")
    )
    path = tmp_path / "c.sqlite"
    with FaultProxy(server.port) as proxy:
        proxy.always["/v2/insider-trading/"] = kind
        with md.Client(api_key=KEY, base_url=proxy.url, cache=path, max_retries=1) as client:
            with pytest.raises(error, match=words) as info:
                md.load_insider_trading("AAPL", client=client)
            assert proxy.count() == 2
            assert "\n" not in str(info.value) and "127.0.0.1" in str(info.value)
            assert _entries(path) == 0
            del proxy.always["/v2/insider-trading/"]
            md.load_insider_trading("AAPL", client=client)
        assert proxy.count() == 3  # nothing was replayed from the cache


def test_complete_json_of_the_wrong_shape_is_not_retried(server: Sandbox) -> None:
    # Content-Length met, complete JSON, not the envelope: the server sent bad data.
    with FaultProxy(server.port) as proxy:
        proxy.script = ["wrong_shape"]
        with pytest.raises(md.ResponseFormatError, match="envelope"):
            md.load_insider_trading("AAPL", client=md.Client(api_key=KEY, base_url=proxy.url))
        assert proxy.count() == 1


# --- the sandbox's own "truncate" fault: a 200 cut short, Content-Length matching ----------------


def _cached_bodies(path: Path) -> list[bytes]:
    from requests_cache.backends.sqlite import SQLiteCache

    backend = SQLiteCache(str(path))
    try:
        return [response.content for response in backend.responses.values()]
    finally:
        backend.close()


def test_a_cut_short_200_then_a_good_one_loads_the_whole_frame_and_caches_only_it(
    server: Sandbox, tmp_path: Path
) -> None:
    expected = md.load_insider_trading("AAPL", client=_direct(server))
    path = tmp_path / "c.sqlite"
    server.clear_log()
    server.inject("truncate", path="/v2/insider-trading/AAPL")
    with md.Client(api_key=KEY, base_url=server.url, cache=path, backoff_factor=0.01) as client:
        got = md.load_insider_trading("AAPL", client=client)
    pd.testing.assert_frame_equal(got, expected)
    assert server.count("/v2/insider-trading/AAPL") == 2
    bodies = _cached_bodies(path)  # the real cache file: one entry, the whole answer
    assert len(bodies) == 1 and json.loads(bodies[0])["success"] is True


@pytest.mark.parametrize("retries", [0, 2])
def test_always_cut_short_is_a_response_format_error_after_every_retry(
    server: Sandbox, tmp_path: Path, retries: int
) -> None:
    path = tmp_path / "c.sqlite"
    server.clear_log()
    server.inject(*["truncate"] * (retries + 1), path="/v2/insider-trading/AAPL")
    with md.Client(
        api_key=KEY, base_url=server.url, cache=path, max_retries=retries, backoff_factor=0.01
    ) as client:
        with pytest.raises(md.ResponseFormatError, match="not complete JSON") as info:
            md.load_insider_trading("AAPL", client=client)
    assert f"{retries + 1} attempt" in str(info.value)
    assert server.count("/v2/insider-trading/AAPL") == retries + 1
    assert _cached_bodies(path) == []


# --- the mix --------------------------------------------------------------------------------------

SYMBOLS = EXTRA[:200]
DATASETS = ("insider_trading", "sentiment", "congress_trades", "lobbying")


def test_fault_mix_load_completes_with_default_settings(
    server: Sandbox, record_property: pytest.RecordProperty
) -> None:
    clean = {name: md.load(name, SYMBOLS, client=_direct(server)) for name in DATASETS}
    with FaultProxy(server.port, rate=0.2, seed=2026) as proxy:
        # Default settings: cache in MDFRAMES_CACHE, 3 retries, backoff 0.5 s, 8 workers.
        with md.Client(api_key=KEY, base_url=proxy.url) as client:
            started = time.monotonic()
            for name in DATASETS:
                pd.testing.assert_frame_equal(md.load(name, SYMBOLS, client=client), clean[name])
            seconds = time.monotonic() - started
        figures = proxy.figures()
    figures["rows"] = sum(len(df) for df in clean.values())
    figures["seconds"] = round(seconds, 1)
    record_property("fault_mix", figures)
    print(f"\nfault mix (200 symbols x {len(DATASETS)} datasets): {figures}")
    # The mix really held every kind, at about the rate asked, up to the full retry depth.
    assert set(figures["by_kind"]) == set(RETRYABLE)  # type: ignore[arg-type]
    assert 0.15 < figures["faults"] / figures["requests"] < 0.25  # type: ignore[operator]
    assert figures["deepest"] == 3
    assert figures["retries"] == figures["faults"]  # one retry per fault, none lost or extra


def test_skip_reports_exactly_the_symbols_whose_faults_cannot_be_retried(server: Sandbox) -> None:
    symbols = SYMBOLS[:60]
    clean = md.load_insider_trading(symbols, client=_direct(server))
    broken = {"S007": "reset_mid", "S021": "status_404", "S042": "wrong_shape", "S055": "stall"}
    with FaultProxy(server.port, rate=0.2, seed=7, stall=5) as proxy:
        for symbol, kind in broken.items():
            proxy.always[f"/v2/insider-trading/{symbol}"] = kind
        client = md.Client(api_key=KEY, base_url=proxy.url, cache=False, timeout=1)
        with pytest.warns(UserWarning, match="4 symbol"):
            got = md.load_insider_trading(symbols, client=client, errors="skip")
    failed = got.attrs["failed"]
    assert set(failed) == set(broken)
    assert "dropped" in failed["S007"] and "timed out" in failed["S055"]
    assert "404" in failed["S021"] and "envelope" in failed["S042"]
    kept = clean[~clean["symbol"].isin(list(broken))].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, kept, check_categorical=False)


# --- Ctrl-C ---------------------------------------------------------------------------------------

CHILD = """
import sys
import mdframes as md

client = md.Client(api_key="sandbox-key", base_url=sys.argv[1], cache=sys.argv[2])
md.load_sentiment(["AAA", "BBB"], client=client)  # cached before the interrupt
print("loading", flush=True)
md.load_insider_trading([f"S{i:03d}" for i in range(64)], client=client)
"""


@pytest.mark.parametrize("hold", ["stall", "429"])
def test_ctrl_c_returns_within_two_seconds_and_sends_nothing_after(
    server: Sandbox, tmp_path: Path, hold: str, record_property: pytest.RecordProperty
) -> None:
    path = tmp_path / "c.sqlite"
    with FaultProxy(server.port, stall=60) as proxy:
        if hold == "stall":  # every request hangs: threads block reading
            proxy.always["/v2/insider-trading/"] = "stall"
        else:  # a 429 whose reset is 60 s ahead (within max_wait): threads sleep
            proxy.always["/v2/insider-trading/"] = "429_long"
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, proxy.url, str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # Stall: every worker holds a request. 429: the first answer holds the gate, so
            # the others wait without sending.
            ready = 2 + 8 if hold == "stall" else 2 + 1
            deadline = time.monotonic() + 60
            while proxy.count() < ready and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.5)
            sent = proxy.count()
            signalled = time.monotonic()
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
            seconds = time.monotonic() - signalled
            time.sleep(0.5)  # a request the child had started would have arrived by now
            late = [h for h in proxy.log if h.at > signalled]
        finally:
            if proc.poll() is None:
                proc.kill()
            _, stderr = proc.communicate()
    record_property(f"sigint_{hold}_seconds", round(seconds, 2))
    print(f"\nCtrl-C ({hold}): exit {seconds:.2f} s after the signal; {sent} requests before it")
    assert "KeyboardInterrupt" in stderr
    assert late == [] and proxy.count() == sent
    assert seconds < 2.0
    with contextlib.closing(sqlite3.connect(path)) as db:  # the cache is intact
        assert db.execute("pragma integrity_check").fetchone()[0] == "ok"
        assert db.execute("select count(*) from responses").fetchone()[0] == 2
