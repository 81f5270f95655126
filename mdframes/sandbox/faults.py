"""Fault injection, two ways.

- In the sandbox: a queue of damaged answers for the next matching requests
  (:meth:`Sandbox.inject`), and how each kind of damage looks on the wire (5xx, HTML, dropped
  connections, truncated or unwrapped bodies, 429s, redirects, an exhausted rate limit).
- Between a client and any server: :class:`FaultProxy`, a keep-alive HTTP/1.1 proxy that
  breaks answers the way networks do (resets before and mid-body, short bodies, cut chunked
  streams, 200s cut short however framed, 5xx, 429 with a reset, stalls), seeded per request,
  for fault campaigns in tests and benchmarks.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import http.client
import json
import math
import random
import socket
import socketserver
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from .context import status
from .wire import Outcome

__all__ = [
    "FAULT_KINDS",
    "FaultQueue",
    "damage",
    "FaultProxy",
    "Hit",
    "CONNECTION_CUTS",
    "CUT_200S",
    "BODY_CUTS",
    "RETRYABLE",
    "PROXY_KINDS",
]

FAULT_KINDS = (
    500,
    502,
    503,
    "html500",
    "drop",
    "truncate",
    "html",
    "no_envelope",
    "success_false",
    "429",
    "retry_after",
    "redirect",
    "remaining0",
)
_HTML = b"<!DOCTYPE html><html><head><title>Service</title></head><body><h1>%s</h1></body></html>"


@dataclass
class _Fault:
    kind: Any
    path: str | None


class FaultQueue:
    """Faults waiting for the next requests whose path starts with their prefix."""

    def __init__(self) -> None:
        self._items: list[_Fault] = []
        self._lock = threading.Lock()

    def add(self, faults: tuple[Any, ...], path: str | None) -> None:
        for fault in faults:
            kind = fault[0] if isinstance(fault, tuple) else fault
            if kind not in FAULT_KINDS:
                raise ValueError(f"unknown fault {fault!r}; known: {FAULT_KINDS}")
        with self._lock:
            self._items.extend(_Fault(f, path) for f in faults)

    def take(self, path: str, raw: str) -> Any:
        """The first queued fault for ``path`` (decoded) or ``raw`` (as sent), removed."""
        with self._lock:
            for i, fault in enumerate(self._items):
                if fault.path is None or path.startswith(fault.path) or raw.startswith(fault.path):
                    return self._items.pop(i).kind
        return None


def damage(
    fault: Any,
    rate: dict[str, str],
    *,
    error: Callable[..., Outcome],
    real: Callable[[], Outcome],
    location: str,
    reset_in: Callable[[float], dict[str, str]],
) -> Outcome:
    """The outcome of one fault (all but ``"remaining0"``, which the server applies to a real
    answer): ``error(status, message, **headers)`` renders an error body, ``real()`` the real
    answer, ``reset_in(seconds)`` rate headers announcing a reset that far ahead."""
    kind, arg = (fault[0], float(fault[1])) if isinstance(fault, tuple) else (fault, 0.0)
    if isinstance(kind, int):
        return error(kind, "injected server error", **rate)
    if kind == "html500":
        return Outcome(500, _HTML % b"500 Internal Server Error", "text/html", rate)
    if kind == "drop":
        return Outcome(0, drop=True)
    if kind == "html":
        return Outcome(200, _HTML % b"Maintenance", "text/html; charset=utf-8", rate)
    if kind == "success_false":
        body = orjson.dumps(
            {"success": False, "error": {"code": "FORBIDDEN", "message": status(403).message}}
        )
        return Outcome(200, body, headers=rate)
    if kind == "429":
        return error(429, None, **reset_in(arg))
    if kind == "retry_after":
        return error(429, None, **{"Retry-After": str(math.ceil(arg))})
    if kind == "redirect":
        return Outcome(302, b"", headers={**rate, "Location": location})
    # truncate / no_envelope: a real body, damaged.
    body = real().body
    if kind == "truncate":
        return Outcome(200, body[: max(1, len(body) // 2)], headers=rate)
    data = orjson.loads(body)
    if isinstance(data, dict) and "data" in data:
        data = data["data"]
    return Outcome(200, orjson.dumps(data), headers=rate)


# --- the fault proxy ---------------------------------------------------------------------------

# The connection breaks before the framed body is whole: a dropped connection.
CONNECTION_CUTS = ("reset_mid", "short_body", "cut_chunked")
# A 200 whose body is not complete JSON although the transfer looks whole: ended by closing
# the connection, or (cut_200) with a Content-Length that matches the short body.
CUT_200S = ("truncated_200", "cut_200")
BODY_CUTS = (*CONNECTION_CUTS, *CUT_200S)
# Every kind the client must survive by retrying. "stall" is one too, but each hit costs a
# whole client timeout (30 s by default), so it has its own test with a short timeout.
RETRYABLE = ("reset_before", *BODY_CUTS, "status_503", "html_502", "429")
PROXY_KINDS = (*RETRYABLE, "stall", "wrong_shape", "status_404")


@dataclass
class Hit:
    at: float  # time.monotonic() when the request head was read
    target: str
    attempt: int
    kind: str | None


class FaultProxy:
    """A keep-alive HTTP/1.1 proxy to a local server (a sandbox) that injects faults.

    Kinds: :data:`PROXY_KINDS`. Point a client at ``proxy.url`` instead of the server.
    A request's fate depends only on (seed, target, attempt number), never on thread timing:
    each attempt is faulted with probability ``rate`` (kind drawn from ``kinds``), at most
    ``max_in_a_row`` times for one target. ``always`` maps a path prefix to a kind applied to
    every attempt; ``script`` lists kinds for the next requests, whatever their target.

    Examples
    --------
    >>> from mdframes.sandbox import Sandbox
    >>> with Sandbox() as server, FaultProxy(server.port, rate=0.2, seed=1) as proxy:
    ...     flaky = md.Client(api_key="sandbox-key", base_url=proxy.url, backoff_factor=0)
    ...     len(md.load_sentiment(["AAPL", "MSFT"], client=flaky)) > 0
    True
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
        return attempt, (rng.choice(self.kinds) if rng.random() < self.rate else None)

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
        return _framed(sock, status, headers, body)
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
        return _framed(sock, 200, headers, half)
    if kind == "wrong_shape":  # complete JSON, not the envelope: the server's answer
        return _framed(sock, 200, headers, json.dumps({"rows": []}).encode())
    if kind == "status_503":
        return _framed(sock, 503, json_type, _error(503, "SERVICE_UNAVAILABLE", "injected"))
    if kind == "html_502":
        html = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
        return _framed(sock, 502, {"Content-Type": "text/html"}, html)
    if kind == "status_404":
        message = f"no such symbol in {target.split('?')[0]}"
        return _framed(sock, 404, json_type, _error(404, "NOT_FOUND", message))
    if kind not in ("429", "429_long"):
        raise AssertionError(f"unknown fault {kind}")
    reset = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=0.3 if kind == "429" else 60.0)
    rate = {
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": reset.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }
    return _framed(sock, 429, json_type, _error(429, "RATE_LIMIT_EXCEEDED", "slow down"), rate)


def _framed(
    sock: socket.socket, status: int, headers: dict, body: bytes, extra: dict | None = None
) -> bool:
    """Send ``body`` whole, its Content-Length after ``headers`` (then ``extra``)."""
    sock.sendall(
        _head(status, {**headers, "Content-Length": str(len(body)), **(extra or {})}) + body
    )
    return True
