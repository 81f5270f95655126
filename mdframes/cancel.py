"""Stopping one load among many on a shared client.

:meth:`Client.interrupt` stops everything a client does (Ctrl-C). A cancelled ``md.aio``
task must stop its own load only, while other loads on the same client go on: its work runs
inside a :class:`LoadScope`, a context variable that the load's worker threads inherit
(``pipeline`` submits each request with ``contextvars.copy_context``). Once the scope is
cancelled, no request of that load is sent (the transport checks before each connect and
send), its rate-limit and retry waits end, and the sockets its threads are reading from are
shut, so a stalled answer does not hold the cancellation up to the read timeout.
"""

from __future__ import annotations

import contextlib
import contextvars
import socket
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["LoadScope", "current", "scoped"]


class LoadScope:
    """One load's cancel event and the connections its threads are sending on right now.

    Examples
    --------
    >>> scope = LoadScope()
    >>> scope.cancelled
    False
    >>> scope.cancel()
    >>> scope.cancelled
    True
    """

    def __init__(self) -> None:
        self.event = threading.Event()
        self._lock = threading.Lock()
        self._sending: dict[int, Any] = {}  # thread id -> its connection, while it sends

    @property
    def cancelled(self) -> bool:
        return self.event.is_set()

    def sending(self, connection: Any) -> None:
        """The calling thread sends this load's request on ``connection``."""
        with self._lock:
            self._sending[threading.get_ident()] = connection

    def done(self) -> None:
        """The calling thread's request has its whole answer (the connection is the pool's
        again)."""
        with self._lock:
            self._sending.pop(threading.get_ident(), None)

    def cancel(self) -> None:
        """No request of this load starts from now on; the ones being answered are cut."""
        self.event.set()
        with self._lock:
            connections = list(self._sending.values())
        for connection in connections:
            sock = getattr(connection, "sock", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


_CURRENT: contextvars.ContextVar[LoadScope | None] = contextvars.ContextVar(
    "mdframes_load_scope", default=None
)


def current() -> LoadScope | None:
    """The scope of the load running in this context, if it runs in one."""
    return _CURRENT.get()


@contextlib.contextmanager
def scoped(scope: LoadScope) -> Iterator[LoadScope]:
    """Run the block (and the threads it submits with the context copied) in ``scope``."""
    token = _CURRENT.set(scope)
    try:
        yield scope
    finally:
        _CURRENT.reset(token)
