"""The client: configuration, one shared session, and ``get`` (bytes in, Payload out).

One :class:`Client` owns one ``requests`` session (cached per key with requests-cache when
asked), shared by every thread of a multi-symbol load. The pieces live beside it:
:mod:`~mdframes.config` checks the settings, :mod:`~mdframes.transport` holds the retry
policy and the adapter (the body read is part of the retried attempt),
:mod:`~mdframes.ratelimit` the reset arithmetic and the shared gate, :mod:`~mdframes.cache`
the cache file, :mod:`~mdframes.envelope` the decoding, and :mod:`~mdframes.logfilter` the
redacting log filter, installed when a client is created.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload
from urllib.parse import urlencode

from . import cache as _cache
from . import logfilter
from .config import ENV_KEY, ENV_URL, check_base_url, check_key, mask
from .envelope import Payload
from .errors import (
    ConfigurationError,
    InvalidParameterError,
    MdframesError,
    NetworkError,
    ResponseFormatError,
    redact,
    scrub,
)
from .ratelimit import RateGate, parse_reset, reset_from_headers

if TYPE_CHECKING:  # pragma: no cover
    import requests

# Payload, NetworkError and the reset helpers moved; they stay importable from here.
__all__ = [
    "Client",
    "Payload",
    "NetworkError",
    "parse_reset",
    "reset_from_headers",
    "set_default_client",
    "get_default_client",
]

log = logging.getLogger("mdframes")


class Client:
    """A configured connection to the service.

    Parameters
    ----------
    api_key : str, optional
        Defaults to the ``MDFRAMES_API_KEY`` environment variable. An empty or
        whitespace-only key is refused.
    base_url : str, optional
        The service root (the client adds ``/v2/...``, ``/v1/...``); defaults to
        ``MDFRAMES_BASE_URL``. Plain ``http://`` is refused unless the host is loopback, and
        so is a URL ending in ``/v2`` or ``/v1``.
    cache : bool or str or Path
        ``True``: SQLite file in the user cache dir (or ``MDFRAMES_CACHE``); ``False``: off;
        a path: that file. Entries belong to the key that fetched them.
    timeout : float
        Seconds for connect and read.
    max_retries : int
        Retries after the first attempt (5xx, 429, timeouts, dropped connections).
    max_workers : int
        Concurrency of multi-symbol loads; the connection pool is at least this wide.
    progress : bool or None
        ``None``: a tqdm bar for many symbols in a terminal/notebook; True/False forces.
    max_wait : float
        Longest wait for a rate-limit reset before raising :class:`RateLimitError`.
    backoff_factor : float
        Base of the exponential backoff between retries, in seconds.
    clock : callable, optional
        Returns the current time as an aware UTC datetime; ``client.clock()``. Default: the
        real time. The sandbox sets its own (its day at the current time of day), and parts
        that stamp what they fetch (the lake) read it.
    before_send : callable, optional
        Called with no argument before each HTTP attempt, retries included (never for a
        cache hit). It may block (to pace a budget) or raise (the request is not sent).
    after_send : callable, optional
        Called with every ``requests.Response`` the service sends, those retried on (429,
        5xx) included, before its body is decoded; for watching rate-limit headers.

    Examples
    --------
    >>> import mdframes as md
    >>> client = md.Client(api_key="...", base_url="https://api.example.com")
    >>> md.set_default_client(client)
    """

    # The server behind a sandbox's client (mdframes.sandbox sets it, for tests and the
    # demo). Time comes from ``clock``; kept on the class until lake/ moves to the public
    # surface (it reads and copies this attribute).
    sandbox: Any = None

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        cache: bool | str | os.PathLike[str] = True,
        timeout: float = 30.0,
        max_retries: int = 3,
        max_workers: int = 8,
        progress: bool | None = None,
        max_wait: float = 120.0,
        backoff_factor: float = 0.5,
        clock: Callable[[], dt.datetime] | None = None,
        before_send: Callable[[], None] | None = None,
        after_send: Callable[[requests.Response], None] | None = None,
    ) -> None:
        if max_retries < 0 or max_workers < 1 or timeout <= 0 or max_wait < 0:
            raise ConfigurationError(
                "max_retries >= 0, max_workers >= 1, timeout > 0 and max_wait >= 0 are required"
            )
        self._api_key = check_key(
            api_key if api_key is not None else os.environ.get(ENV_KEY) or None
        )
        url = base_url if base_url is not None else os.environ.get(ENV_URL) or None
        self.base_url = check_base_url(url) if url else None
        self.cache_path: Path | None = _cache.resolve_path(cache)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.max_workers = int(max_workers)
        self.progress = progress
        self.max_wait = float(max_wait)
        self.backoff_factor = float(backoff_factor)
        for name, hook in (
            ("clock", clock),
            ("before_send", before_send),
            ("after_send", after_send),
        ):
            if hook is not None and not callable(hook):
                raise ConfigurationError(f"{name} must be callable, got {type(hook).__name__}")
        self.clock: Callable[[], dt.datetime] = clock or _utc_now
        self.before_send = before_send
        self.after_send = after_send
        self._cancel = threading.Event()
        self._gate = RateGate(self._cancel)
        self._link: Any = None  # the transport's view of the cancel event and open sockets
        self._session: requests.Session | None = None
        # Requests running on each session (by id): close() waits for them to end, so a
        # session (and its SQLite cache connection) is never closed under a running request.
        self._session_lock = threading.Condition(threading.Lock())
        self._using: dict[int, int] = {}
        logfilter.install(self._api_key)

    # -- copies ---------------------------------------------------------------------------------
    def _settings(self) -> dict[str, Any]:
        return {
            "api_key": self._api_key,
            "base_url": self.base_url,
            "cache": self.cache_path if self.cache_path is not None else False,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "max_workers": self.max_workers,
            "progress": self.progress,
            "max_wait": self.max_wait,
            "backoff_factor": self.backoff_factor,
            "clock": self.clock,
            "before_send": self.before_send,
            "after_send": self.after_send,
        }

    def replace(self, **overrides: Any) -> Client:
        """A new client with this one's key, service and settings except ``overrides``.

        It has its own session (connections, cache handle, rate gate and interrupt flag),
        so closing either leaves the other working. Any ``Client`` keyword may be
        overridden, including ``before_send`` and ``after_send``.

        Examples
        --------
        >>> fresh = client.replace(cache=False, max_retries=0)
        >>> fresh.max_retries, fresh.base_url == client.base_url
        (0, True)
        """
        settings = self._settings()
        unknown = sorted(set(overrides) - set(settings))
        if unknown:
            raise InvalidParameterError(
                f"Client.replace() got unknown setting(s) {', '.join(unknown)}; "
                f"known: {', '.join(settings)}",
                parameter=unknown[0],
            )
        fresh = type(self).__new__(type(self))
        Client.__init__(fresh, **(settings | overrides))
        fresh.sandbox = self.sandbox
        return fresh

    # -- presentation: the key never appears ----------------------------------------------
    def __repr__(self) -> str:
        cache = str(self.cache_path) if self.cache_path else "off"
        return (
            f"Client(api_key={mask(self._api_key)}, base_url={self.base_url!r}, cache={cache!r}, "
            f"timeout={self.timeout:g}, max_retries={self.max_retries}, "
            f"max_workers={self.max_workers})"
        )

    def __getstate__(self) -> None:
        raise TypeError("a Client holds a secret and a live session; it cannot be pickled")

    def redact(self, text: str) -> str:
        """``text`` with this client's key (and any key-like parameter) removed.

        Examples
        --------
        >>> md.Client(api_key="k-0123456789abc").redact("GET /v1/x?token=k-0123456789abc")
        'GET /v1/x?token=***'
        """
        return redact(text, self._api_key)

    # -- session ------------------------------------------------------------------------------
    @property
    def session(self) -> requests.Session:
        """The shared ``requests`` session (a ``CachedSession`` when caching is on)."""
        with self._session_lock:
            return self._open_session()

    def _open_session(self) -> requests.Session:
        # Called with the session lock held.
        if self._session is None:
            self._session = self._build_session()
        return self._session

    @contextmanager
    def _in_use(self, create: bool = True) -> Iterator[requests.Session | None]:
        """The session, counted as in use until the block ends (see :meth:`close`)."""
        with self._session_lock:
            session = self._open_session() if create else self._session
            if session is not None:
                self._using[id(session)] = self._using.get(id(session), 0) + 1
        try:
            yield session
        finally:
            if session is not None:
                with self._session_lock:
                    left = self._using.pop(id(session)) - 1
                    if left:
                        self._using[id(session)] = left
                    else:
                        self._session_lock.notify_all()

    def _build_session(self) -> requests.Session:
        import requests

        from .transport import Link, ServiceAdapter, ServiceRetry

        if self.cache_path is not None:
            session = _cache.open_session(self.cache_path, self._api_key)
        else:
            session = requests.Session()
        retry = ServiceRetry(
            total=self.max_retries,
            connect=None,
            read=None,
            status=None,
            redirect=False,
            status_forcelist=(429, 500, 502, 503, 504),
            allowed_methods=frozenset({"GET"}),
            backoff_factor=self.backoff_factor,
            backoff_jitter=self.backoff_factor / 2,
            backoff_max=min(self.max_wait, 60.0),
            raise_on_status=False,
            raise_on_redirect=False,
            respect_retry_after_header=True,
        )
        retry.max_wait, retry.gate, retry.cancel = self.max_wait, self._gate, self._cancel
        self._link = Link(self._cancel, self.before_send, self.after_send)
        adapter = ServiceAdapter(
            retry=retry,
            gate=self._gate,
            max_wait=self.max_wait,
            link=self._link,
            pool_size=max(self.max_workers, 10),
        )
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        # Proxies and the CA bundle from the environment, read once for the one host every
        # request goes to: with trust_env on, requests walks os.environ twice per request
        # (about a third of a request's own CPU time on a loopback service).
        settings = session.merge_environment_settings(self.base_url or "", {}, None, None, None)
        session.proxies.update(settings["proxies"])
        if settings["verify"] not in (None, True):
            session.verify = settings["verify"]
        session.trust_env = False
        session.headers["User-Agent"] = "mdframes/0.1"
        session.headers["Accept"] = "application/json"
        return session

    def close(self) -> None:
        """Close the session (and the cache file), once every request running on it has
        ended; a request started after this opens a new session.

        Examples
        --------
        >>> with client.replace() as own:
        ...     df = md.load_sentiment("AAPL", client=own)
        """
        with self._session_lock:
            session, self._session = self._session, None
            if session is not None:
                # Each running request is bounded by the timeout and the retries, and an
                # interrupt ends it at once: waiting here is what keeps the cache's SQLite
                # connection from being closed under a thread still using it.
                self._session_lock.wait_for(lambda: id(session) not in self._using)
        if session is not None:
            session.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def clear_cache(self) -> None:
        """Delete every cached response (a file that cannot be read is deleted).

        Examples
        --------
        >>> client.clear_cache()
        """
        if self.cache_path is not None:
            self.close()
            _cache.clear(self.cache_path)

    # -- interrupts -----------------------------------------------------------------------------
    def interrupt(self) -> None:
        """Stop this client's work now: waits end, no request starts, stalled reads are
        abandoned (their threads raise). Loads already running raise; the next
        :meth:`loading` block (every load starts one) clears it.

        Examples
        --------
        >>> client.interrupt()  # e.g. from a signal handler or another thread
        """
        self._cancel.set()
        if self._link is not None:
            self._link.abort()

    @contextmanager
    def loading(self) -> Iterator[Client]:
        """Guard one unit of work on this client (a load, a sync).

        On entry the configuration is checked (:class:`~mdframes.ConfigurationError` before
        anything starts) and an earlier interrupt is cleared; a ``KeyboardInterrupt`` inside
        the block interrupts the client, so pending requests and waits stop at once.

        Examples
        --------
        >>> with client.loading():
        ...     payload = client.get("/v2/markets")
        """
        self._require()
        self._cancel.clear()
        try:
            yield self
        except KeyboardInterrupt:
            self.interrupt()
            raise

    def cached(self, path: str, *, dataset: str | None = None) -> Payload | None:
        """The v2 answer to ``path`` (no query) that this client's HTTP cache holds for its
        key, or None: never sends a request (a 404's hint reads the ticker list this way).

        >>> client.cached("/v2/tickers") is None  # the sandbox's client has no cache
        True
        """
        from requests_cache import CachedSession

        from .envelope import decode

        session = self._session
        if not isinstance(session, CachedSession) or not self.base_url:
            return None

        try:
            base, key = self._require()
            response = session.get(
                base + path,
                headers={"Authorization": f"Bearer {key}"},
                timeout=self.timeout,
                only_if_cached=True,  # requests-cache: a 504 instead of a request when not cached
            )
            if response.status_code != 200:
                return None
            return decode(response, version="v2", url="", dataset=dataset, secret=key)
        except (MdframesError, OSError, ValueError):
            return None

    def check_configuration(self) -> None:
        """Raise :class:`ConfigurationError` (naming the environment variable to set) when the
        key or the service URL is missing. Sends nothing.

        >>> md.Client(api_key="k", base_url="", cache=False).check_configuration()
        Traceback (most recent call last):
        mdframes.errors.ConfigurationError: no service URL: pass base_url= or set the environment variable ...
        """
        self._require()

    def fingerprint(self, purpose: str, salt: bytes = b"") -> str:
        """A one-way fingerprint of this client's key at its service, for ``purpose`` (the lake
        remembers a rate-limit window per key by it). Never the key, and a different value for
        each purpose; with ``salt`` (random bytes the caller keeps, as the lake does in its
        root) an HMAC-SHA256 under it, so a table of fingerprints made elsewhere is no use.

        >>> fp = client.fingerprint("lake-rate", salt=b"0123")
        >>> len(fp), fp == client.fingerprint("lake-rate", salt=b"0124")
        (24, False)
        """
        base, key = self._require()
        message = f"mdframes-{purpose}\0{base}\0{key}".encode()
        return hmac.new(salt or b"mdframes", message, hashlib.sha256).hexdigest()[:24]

    # -- requests -----------------------------------------------------------------------------
    def _require(self) -> tuple[str, str]:
        if not self.base_url:
            raise ConfigurationError(
                f"no service URL: pass base_url= or set the environment variable {ENV_URL} "
                "(for the offline sandbox: `mdframes sandbox`)"
            )
        if not self._api_key:
            raise ConfigurationError(
                f"no API key: pass api_key= or set the environment variable {ENV_KEY}"
            )
        return self.base_url, self._api_key

    def get(
        self,
        path: str,
        params: dict[str, Any] | None = None,
        *,
        version: str = "v2",
        ttl: int | None = None,
        dataset: str | None = None,
    ) -> Payload:
        """GET ``path`` (already percent-encoded, starting with ``/v1/`` or ``/v2/``) and
        decode the body. Raises the matching :class:`~mdframes.ApiError` subclass,
        :class:`~mdframes.ResponseFormatError` or :class:`~mdframes.errors.NetworkError`,
        with the key redacted everywhere (message, attributes, chained errors).

        Examples
        --------
        >>> payload = client.get("/v2/markets")
        >>> payload.data["markets"][0]
        {'name': 'DOW 30', 'region': 'US'}
        """
        base, key = self._require()
        try:
            return self._get(base, key, path, params, version, ttl, dataset)
        except MdframesError as exc:
            scrub(exc, key)  # in place, chained errors included, then raised as it was
            raise

    def _get(
        self,
        base: str,
        key: str,
        path: str,
        params: dict[str, Any] | None,
        version: str,
        ttl: int | None,
        dataset: str | None,
    ) -> Payload:
        query = {k: v for k, v in (params or {}).items() if v is not None}
        headers: dict[str, str] = {}
        if version == "v1":
            query["token"] = key  # v1 knows no other placement; redacted everywhere below
        else:
            headers["Authorization"] = f"Bearer {key}"
        url = base + path
        with self._in_use() as session:
            assert session is not None
            return self._send(session, url, query, headers, key, base, version, ttl, dataset)

    def _send(
        self,
        session: requests.Session,
        url: str,
        query: dict[str, Any],
        headers: dict[str, str],
        key: str,
        base: str,
        version: str,
        ttl: int | None,
        dataset: str | None,
    ) -> Payload:
        import requests

        from .envelope import decode, snippet
        from .transport import BodyCutShort, network_error

        kwargs: dict[str, Any] = {}
        if ttl is not None and getattr(session, "cache", None) is not None:
            kwargs["expire_after"] = ttl  # a cache file that could not be opened has no cache
        plain = {k: v for k, v in query.items() if k != "token"}
        shown = self.redact(f"{url}?{urlencode(plain)}" if plain else url)
        try:
            response = session.get(
                url,
                params=query,
                headers=headers,
                timeout=self.timeout,
                allow_redirects=False,
                **kwargs,
            )
        except requests.exceptions.ContentDecodingError as exc:
            raise ResponseFormatError(
                f"body could not be decoded: {self.redact(str(exc))}", url=shown, dataset=dataset
            ) from None
        except BodyCutShort as exc:
            tries = self.max_retries + 1
            raise ResponseFormatError(
                f"body is not complete JSON ({exc.content_type}, {len(exc.content)} bytes: "
                f"{snippet(exc.content, key)!r}) in each of {tries} attempt"
                f"{'s' if tries > 1 else ''}: cut short in transfer, nothing cached",
                url=shown,
                dataset=dataset,
            ) from None
        except requests.RequestException as exc:
            raise network_error(
                exc,
                base_url=base,
                timeout=self.timeout,
                retries=self.max_retries,
                secret=key,
            ) from None
        log.debug("GET %s -> %s", shown, response.status_code)
        try:
            payload = decode(response, version=version, url=shown, dataset=dataset, secret=key)
        except MdframesError:
            # requests-cache stored this 200 before we could read it (success:false, a body
            # that is not JSON): evict it, or every later call would replay the failure.
            self._evict(session, [response.request])
            raise
        payload.request = response.request
        return payload

    def evict(self, requests: Any) -> None:
        """Drop the cached responses of these requests (no-op without a cache).

        Examples
        --------
        >>> payload = client.get("/v2/markets")
        >>> client.evict([payload.request])
        """
        with self._in_use(create=False) as session:
            self._evict(session, [r for r in requests if r is not None])

    @staticmethod
    def _evict(session: Any, wanted: list[Any]) -> None:
        cache = getattr(session, "cache", None)
        if cache is not None and wanted:
            cache.delete(requests=wanted)


# --- default client ------------------------------------------------------------------------

_default: Client | None = None
_default_lock = threading.Lock()


def set_default_client(client: Client | None) -> None:
    """Make ``client`` the one loaders use when no ``client=`` is passed.

    Examples
    --------
    >>> md.set_default_client(md.Client(api_key="...", base_url="https://..."))
    """
    global _default
    with _default_lock:
        _default = client


@overload
def get_default_client(create: Literal[True] = ...) -> Client: ...
@overload
def get_default_client(create: bool) -> Client | None: ...


def get_default_client(create: bool = True) -> Client | None:
    """The default client, created from the environment on first use; with
    ``create=False``, the default as it is (``None`` when there is none yet).

    Examples
    --------
    >>> md.get_default_client()
    Client(api_key='***', base_url='http://127.0.0.1:...', ...)
    >>> md.set_default_client(None)
    >>> md.get_default_client(create=False) is None  # nothing set, nothing created
    True
    """
    global _default
    with _default_lock:
        if _default is None and create:
            _default = Client()
        return _default


def resolve_client(client: Client | None) -> Client:
    """``client``, or the default one (created from the environment if need be)."""
    return client if client is not None else get_default_client()


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)
