"""HTTP on loopback: a threaded HTTP/1.1 server with keep-alive (so a client's connection
pool is exercised as against the real service) that hands every request to one function and
writes back the :class:`Outcome` it returns. Stdlib only.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .context import status

__all__ = ["Outcome", "Handle", "LoopbackServer"]


@dataclass
class Outcome:
    """What to send back: a status, body and headers, or a dropped connection."""

    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False


Handle = Callable[[str, str, Any], Outcome]  # (method, target, headers) -> outcome


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # TCP_NODELAY on every accepted socket
    server: LoopbackServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # silent: request lines may carry a key in the query string

    def _any(self) -> None:
        self._send(self.server.respond(self.command, self.path, self.headers))

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any  # noqa: N815

    def _send(self, out: Outcome) -> None:
        if out.drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        head = [f"HTTP/1.1 {out.status} {status(out.status).reason}"]
        head.append(f"Content-Type: {out.content_type}")
        head.append(f"Content-Length: {len(out.body)}")
        head.extend(f"{k}: {v}" for k, v in out.headers.items())
        if self.close_connection:
            head.append("Connection: close")
        # One write for head and body: with TCP_NODELAY, fewer packets.
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + out.body)


class LoopbackServer(ThreadingHTTPServer):
    """Serves ``handle`` (as ``respond``) on 127.0.0.1:``port`` in a daemon thread until :meth:`close`."""

    daemon_threads = True
    request_queue_size = 256

    def __init__(self, port: int, handle: Handle) -> None:
        self.respond = handle
        self.open_sockets: set[socket.socket] = set()
        self.sockets_lock = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)
        self.port = int(self.server_address[1])
        self._thread = threading.Thread(
            target=self.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"sandbox:{self.port}",
            daemon=True,
        )
        self._thread.start()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.sockets_lock:
            self.open_sockets.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.sockets_lock:
            self.open_sockets.discard(request)
        super().shutdown_request(request)

    def close(self) -> None:
        """Stop serving and close every open connection."""
        self.shutdown()
        with self.sockets_lock:
            sockets = list(self.open_sockets)
        for sock in sockets:  # idle keep-alive connections would otherwise live on
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self.server_close()
        self._thread.join(timeout=5)
