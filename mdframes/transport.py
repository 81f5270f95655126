"""Bytes in: the retry policy, the adapter every request goes through, and network errors.

Retries are urllib3's own, driven by :class:`ServiceRetry` (which knows the service's reset
header). One attempt is the whole exchange, body included: :class:`ServiceAdapter` reads the
body inside the attempt, so a connection dropped mid-body is retried like any dropped
connection and a body not read whole never reaches the cache. A 200 whose body begins as
JSON but is not complete JSON was cut short in transfer whatever its framing said: retried
the same way, and :class:`BodyCutShort` (a ``ResponseFormatError`` for the caller) once the
retries are spent. The hooks of :class:`Link` see every attempt and every response. The adapter also holds the
client's rate-limit gate and its cancel event: after an interrupt no request is started, the
waits end, and open sockets are shut so that threads blocked on a stalled server return.

Imported when a client builds its session (it imports requests and urllib3).
"""

from __future__ import annotations

import contextlib
import errno
import socket
import ssl
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson
import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    MaxRetryError,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    ResponseError,
)
from urllib3.poolmanager import ProxyManager
from urllib3.util.retry import Retry

from .cancel import current as current_scope
from .config import is_loopback
from .errors import NetworkError, redact
from .ratelimit import Cancelled, RateGate, pause, reset_from_headers, seconds_until

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Self

__all__ = ["Link", "ServiceRetry", "ServiceAdapter", "BodyCutShort", "network_error", "JSON_ATTR"]

# The parsed body of a 200 that the adapter already had to parse to see that it is whole,
# kept on the response so the envelope is not parsed twice.
JSON_ATTR = "mdframes_json"

SANDBOX_HINT = "is the sandbox running? (md.sandbox.start())"


class _CutShort(ProtocolError):
    """One attempt's 200 body was not complete JSON (whatever its Content-Length said)."""

    def __init__(self, content: bytes, content_type: str) -> None:
        super().__init__(f"body cut short: {len(content)} bytes that are not complete JSON")
        self.content, self.content_type = content, content_type


class BodyCutShort(requests.exceptions.RequestException):
    """A 200 whose body is not complete JSON, still so when the retries were spent. The
    client turns it into :class:`~mdframes.ResponseFormatError`; it is never cached."""

    def __init__(self, cut: _CutShort) -> None:
        super().__init__(str(cut))
        self.content, self.content_type = cut.content, cut.content_type


Hook = Callable[..., None]


class Link:
    """What one client's connections share: its cancel event, its open connections and the
    hooks around each attempt (``before_send()``, ``after_send(response)``)."""

    def __init__(
        self,
        cancel: threading.Event,
        before_send: Hook | None = None,
        after_send: Hook | None = None,
    ) -> None:
        self.cancel = cancel
        self.before_send = before_send
        self.after_send = after_send
        self._connections: weakref.WeakSet[HTTPConnection] = weakref.WeakSet()
        self._lock = threading.Lock()

    def check(self) -> None:
        """Raise :class:`Cancelled` once the client is interrupted, or the load running in
        this context is cancelled (:mod:`mdframes.cancel`)."""
        scope = current_scope()
        if self.cancel.is_set() or (scope is not None and scope.cancelled):
            raise Cancelled("the load was interrupted; no request is sent after it")

    def track(self, connection: HTTPConnection) -> None:
        with self._lock:
            self._connections.add(connection)

    def abort(self) -> None:
        """Shut every open socket: a thread blocked reading a stalled answer returns at once
        (and, seeing the cancel event, retries nothing)."""
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            sock = getattr(connection, "sock", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


class TrackedConnection(HTTPConnection):
    """An urllib3 connection its :class:`Link` sees: checked before it connects and before
    each send, tracked once connected, so that a cancel reaches its socket."""

    link: Link  # the adapter's: set by the subclass _pool_classes makes for it

    def connect(self) -> None:
        self.link.check()
        super().connect()
        self.link.track(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        # Every attempt (urllib3's own retries included) passes here once.
        if self.link.before_send is not None:
            self.link.before_send()
        self.link.check()  # the last moment before bytes leave: nothing is sent after Ctrl-C
        scope = current_scope()
        if scope is not None:  # a cancelled load cuts this socket (done: adapter.send)
            scope.sending(self)
        super().request(*args, **kwargs)


def _pool_classes(adapters_link: Link) -> dict[str, type]:
    class Connection(TrackedConnection):
        link = adapters_link

    class TLSConnection(Connection, HTTPSConnection):
        pass

    class Pool(HTTPConnectionPool):
        ConnectionCls = Connection

    class TLSPool(HTTPSConnectionPool):
        ConnectionCls = TLSConnection

    return {"http": Pool, "https": TLSPool}


class ServiceRetry(Retry):
    """urllib3 Retry that waits for ``X-RateLimit-Reset`` (ISO or Unix) on 429, gives up at
    once when that reset lies beyond ``max_wait``, and sleeps interruptibly."""

    max_wait: float = 120.0
    gate: RateGate | None = None
    cancel: threading.Event | None = None
    # Called with each response urllib3 retries on (a 429, a 5xx): the adapter passes it on
    # to the client's ``after_send`` hook, which otherwise only sees the final answer.
    observe: Hook | None = None

    def new(self, **kw: Any) -> ServiceRetry:
        fresh = super().new(**kw)
        fresh.max_wait, fresh.gate, fresh.cancel = self.max_wait, self.gate, self.cancel
        fresh.observe = self.observe
        return fresh

    def get_retry_after(self, response: Any) -> float | None:
        if response.status == 429:
            wait = seconds_until(reset_from_headers(response.headers))
            if wait is not None:
                return max(wait, 0.001)
        return super().get_retry_after(response)

    def sleep(self, response: Any = None) -> None:
        delay = None
        if self.respect_retry_after_header and response is not None:
            delay = self.get_retry_after(response)
        pause(delay or self.get_backoff_time(), self.cancel)

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> Self:
        if response is not None and self.observe is not None:
            self.observe(response)
        if response is not None and response.status == 429:
            reset = reset_from_headers(response.headers)
            if self.gate is not None:
                self.gate.hold(reset)
            wait = seconds_until(reset)
            if wait is not None and wait > self.max_wait:
                # Hand the 429 back to the client, which raises RateLimitError with reset_at.
                raise MaxRetryError(_pool, url, ResponseError("reset beyond max_wait"))
        return super().increment(method, url, response, error, _pool, _stacktrace)


class ServiceAdapter(HTTPAdapter):
    """The stock adapter plus: the rate-limit gate around each network send (cache hits
    never get here), the body read inside the retried attempt, and the cancel event."""

    def __init__(
        self, *, retry: ServiceRetry, gate: RateGate, max_wait: float, link: Link, pool_size: int
    ) -> None:
        self.gate, self.max_wait, self.link = gate, max_wait, link
        self._local = threading.local()
        self._pool_classes = _pool_classes(link)
        retry.observe = self._observe_retried
        super().__init__(max_retries=retry, pool_connections=4, pool_maxsize=pool_size)

    # requests reads ``self.max_retries`` for each send; a thread retrying a body read hands
    # urllib3 what is left of its retries instead of a fresh budget. (A property over the
    # plain attribute requests declares: mypy calls that an override.)
    @property  # type: ignore[override]
    def max_retries(self) -> Retry:
        return getattr(self._local, "retries", None) or self._retries

    @max_retries.setter
    def max_retries(self, value: Retry) -> None:
        self._retries = value

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(self._pool_classes)

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **kwargs)
        if type(manager) is ProxyManager:  # SOCKS managers keep their own pool classes
            manager.pool_classes_by_scheme = dict(self._pool_classes)
        return manager

    def send(self, request: Any, *args: Any, **kwargs: Any) -> requests.Response:
        retries: Retry = self._retries
        shown = redact(request.url or "")
        self._local.request = request
        try:
            while True:
                self.link.check()
                self.gate.wait(self.max_wait, url=shown)
                self.link.check()
                self._local.retries = retries
                response = super().send(request, *args, **kwargs)
                self.gate.observe(response.headers)
                cut = _read_whole(response)
                if self.link.after_send is not None:
                    self.link.after_send(response)
                if cut is None:
                    return response
                response.close()
                spent = getattr(response.raw, "retries", None) or retries
                try:
                    retries = spent.increment(request.method, shown, error=cut)
                except (MaxRetryError, ProtocolError, ReadTimeoutError) as exc:
                    if isinstance(cut, _CutShort):
                        raise BodyCutShort(cut) from None
                    raise requests.ConnectionError(exc) from None
                retries.sleep()
        finally:
            self._local.retries = None
            self._local.request = None
            scope = current_scope()
            if scope is not None:
                scope.done()

    def _observe_retried(self, raw: Any) -> None:
        """A response urllib3 is about to retry on (429, 5xx), shown to ``after_send``."""
        request = getattr(self._local, "request", None)
        if self.link.after_send is not None and request is not None:
            self.link.after_send(self.build_response(request, raw))


def _read_whole(response: requests.Response) -> Exception | None:
    """Read the body now, as part of the attempt; return the error if it was cut short."""
    try:
        response.content  # noqa: B018 - reading is the point
    except (requests.exceptions.ChunkedEncodingError, requests.ConnectionError) as exc:
        cause = exc.args[0] if exc.args else None
        if isinstance(cause, (ProtocolError, ReadTimeoutError)):
            return cause
        return ProtocolError(f"connection broken while reading the body: {exc}")
    return _cut_short(response)


_JSON_START = frozenset(b"{[")


def _cut_short(response: requests.Response) -> _CutShort | None:
    """A 200 answer whose body begins as JSON but is not complete JSON was cut short in
    transfer, however it was framed (a Content-Length that matches the short body, or none):
    a transfer fault, retried like a dropped connection. A body that is not JSON at all (an
    HTML page) or complete JSON of the wrong shape is the server's answer, not a fault."""
    if response.status_code != 200 or response.request.method != "GET":
        return None
    content = response.content or b""
    head = content.lstrip(b" \t\r\n")[:1]
    if head and head[0] not in _JSON_START:
        return None
    try:
        setattr(response, JSON_ATTR, orjson.loads(content))
    except orjson.JSONDecodeError:
        return _CutShort(content, response.headers.get("Content-Type", "no content type"))
    return None


# --- network errors ------------------------------------------------------------------------------


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo:
        item = todo.pop(0)
        if any(item is s for s in seen) or len(seen) > 20:
            continue
        seen.append(item)
        linked = (getattr(item, "reason", None), *item.args, item.__cause__, item.__context__)
        todo.extend(e for e in linked if isinstance(e, BaseException))
    return seen


def _cause(exc: BaseException, *, scheme: str, port: int | None, timeout: float) -> tuple[str, str]:
    """(reason, hint) for a failed exchange, from the whole chain of errors."""
    chain = _chain(exc)
    text = " ".join(str(e) for e in chain).lower()

    def has(*types: type) -> bool:
        return any(isinstance(e, types) for e in chain)

    if has(ConnectionRefusedError) or any(
        isinstance(e, OSError) and e.errno == errno.ECONNREFUSED for e in chain
    ):
        return "connection refused (nothing is listening on that port)", ""
    if has(NameResolutionError, socket.gaierror):
        return "the host name could not be resolved (DNS)", "check the host in MDFRAMES_BASE_URL"
    if has(ssl.SSLError, requests.exceptions.SSLError):
        if any(
            w in text
            for w in ("wrong version", "record layer", "unknown protocol", "packet length")
        ):
            return (
                "the server does not speak TLS",
                "is the scheme right? The sandbox serves plain http://",
            )
        if "certificate" in text:
            return "the TLS certificate could not be verified", ""
        return "the TLS handshake failed", ""
    if has(ReadTimeoutError, ConnectTimeoutError, TimeoutError, requests.Timeout) and not has(
        NewConnectionError
    ):
        return f"no answer within {timeout:g} s (timed out)", ""
    hint = ""
    if scheme == "http" and port == 443:
        hint = "is the scheme right? Port 443 expects https://"
    return "the connection was dropped before the answer was complete", hint


def network_error(
    exc: BaseException, *, base_url: str, timeout: float, retries: int, secret: str | None
) -> NetworkError:
    """One line: which host failed, why, and a hint where one helps.

    Examples
    --------
    >>> import requests
    >>> try:
    ...     requests.get("http://127.0.0.1:9/v2/markets", timeout=5)
    ... except requests.ConnectionError as exc:
    ...     err = exc
    >>> str(network_error(err, base_url="http://127.0.0.1:9", timeout=30, retries=0,
    ...                   secret=None))
    'cannot reach 127.0.0.1:9: connection refused (nothing is listening on that port) - is the
    sandbox running? (md.sandbox.start())'
    """
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    host = parts.netloc or base_url
    reason, hint = _cause(exc, scheme=parts.scheme, port=parts.port, timeout=timeout)
    if reason.startswith("connection refused") and is_loopback(parts.hostname or ""):
        hint = SANDBOX_HINT
    gave_up = any(isinstance(e, MaxRetryError) for e in _chain(exc)) and retries > 0
    after = f" after {retries} retr{'y' if retries == 1 else 'ies'}" if gave_up else ""
    message = f"cannot reach {host}{after}: {reason}" + (f" - {hint}" if hint else "")
    return NetworkError(redact(message, secret), host=host, reason=reason)
