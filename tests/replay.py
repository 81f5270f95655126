"""A tiny HTTP server on 127.0.0.1 that answers fixed bodies per path: for replaying payloads
the live service was seen to send (its published examples, odd shapes, bad values) through the
real client, over real HTTP, when the sandbox's synthetic data cannot say it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import mdframes as md

KEY = "replay-key-0123456789"


def envelope(data: Any) -> dict[str, Any]:
    return {"success": True, "data": data, "meta": {"timestamp": "2026-11-23T00:00:00Z"}}


ABSENT = object()  # insider_trade(field=ABSENT): the record lacks the field


def insider_trade(**over: Any) -> dict[str, Any]:
    """One well-formed insider transaction as the service sends it, with fields overridden."""
    rec = {
        "date": "2026-03-02",
        "insider": "A. Person",
        "relationship": "CEO",
        "transactionType": "Sale",
        "shares": 10,
        "pricePerShare": 5.0,
        "totalValue": 50,
        "sharesOwned": 100,
        "filingDate": "2026-03-04",
        "filingUrl": "https://example.org/f",
        "cik": "0000000001",
    }
    rec.update(over)
    return {k: v for k, v in rec.items() if v is not ABSENT}


def insider_body(symbol: str, records: Any, **header: Any) -> dict[str, Any]:
    """An insider-trading answer for ``symbol`` holding ``records``."""
    return envelope({"symbol": symbol, "name": symbol, "transactions": records, **header})


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:  # noqa: N802
        server: Any = self.server
        path = urlsplit(self.path).path
        server.seen.append(path)
        body = server.bodies.get(path)
        status = 200 if body is not None else 404
        if body is None:
            body = {"success": False, "error": {"code": "NOT_FOUND", "message": "not found"}}
        # stdlib json: it writes what orjson refuses (integers beyond 64 bits).
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@contextmanager
def replay(bodies: dict[str, Any]) -> Iterator[tuple[md.Client, list[str]]]:
    """Serve ``bodies`` (path -> JSON-able body or bytes) and yield a client and the list of
    paths requested."""
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.bodies, server.seen = bodies, []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with md.Client(api_key=KEY, base_url=url, cache=False, max_retries=0) as client:
            yield client, server.seen
    finally:
        server.shutdown()
        server.server_close()
