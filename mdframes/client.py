"""The HTTP client: configuration, session, cache, retries and the rate-limit gate.

One :class:`Client` owns one ``requests`` session (cached with requests-cache when asked),
shared by every thread of a multi-symbol load. Retries are urllib3's own, driven by a small
:class:`Retry` subclass that knows the service's reset header; the client never runs a
second retry loop of its own.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .errors import (
    ConfigurationError,
    MdframesError,
    RateLimitError,
    redact,
)

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["Client", "Payload", "NetworkError", "set_default_client", "get_default_client"]

ENV_KEY = "MDFRAMES_API_KEY"
ENV_URL = "MDFRAMES_BASE_URL"
ENV_CACHE = "MDFRAMES_CACHE"

log = logging.getLogger("mdframes")

# Every spelling of a key the client (or a user's URL) may carry. requests-cache matches
# these case-sensitively, and strips them from cache keys and from the stored request.
SECRET_PARAMS = (
    "Authorization",
    "authorization",
    "X-API-Key",
    "X-API-KEY",
    "x-api-key",
    "apiKey",
    "apikey",
    "token",
    "access_token",
    "api_key",
)


class NetworkError(MdframesError, ConnectionError):
    """The service could not be reached (refused, dropped, timed out) after the retries."""


@dataclass
class Payload:
    """A decoded response: the envelope's ``data`` (or the v1 body) and its ``meta``."""

    data: Any
    meta: dict
    url: str  # redacted
    from_cache: bool = False
    request: Any = None  # the PreparedRequest, to evict the cached response if unusable


# --- rate-limit arithmetic ---------------------------------------------------------------------


def parse_reset(value: str | None, now: float | None = None) -> datetime | None:
    """Parse ``X-RateLimit-Reset``: ISO 8601, Unix seconds (or milliseconds), or — when the
    number is too small to be an epoch — seconds from now. Returns an aware UTC datetime."""
    if value is None:
        return None
    value = str(value).strip()
    if not value:
        return None
    now = time.time() if now is None else now
    try:
        number = float(value)
    except ValueError:
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            try:
                dt = parsedate_to_datetime(value)
            except (TypeError, ValueError):
                return None
        return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)
    if number > 1e11:  # milliseconds since the epoch
        number /= 1000.0
    elif number < 1e9:  # a delta in seconds
        number += now
    return datetime.fromtimestamp(number, tz=timezone.utc)


def reset_from_headers(headers: Any, now: float | None = None) -> datetime | None:
    """The reset time a response names: ``X-RateLimit-Reset``, else ``Retry-After``."""
    reset = parse_reset(headers.get("X-RateLimit-Reset"), now)
    if reset is not None:
        return reset
    retry_after = headers.get("Retry-After")
    if retry_after is None:
        return None
    retry_after = str(retry_after).strip()
    if retry_after.replace(".", "", 1).isdigit():
        return datetime.fromtimestamp(
            (time.time() if now is None else now) + float(retry_after), tz=timezone.utc
        )
    return parse_reset(retry_after, now)


def _seconds_until(reset: datetime | None) -> float | None:
    return None if reset is None else reset.timestamp() - time.time()


class RateGate:
    """Shared by a client's threads: once the service says the window is spent, every
    thread waits for the reset instead of spending requests on 429s."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._until: float = 0.0  # wall-clock epoch seconds
        self._reset: datetime | None = None

    def hold(self, reset: datetime | None) -> None:
        if reset is None:
            return
        with self._lock:
            if reset.timestamp() > self._until:
                self._until = reset.timestamp()
                self._reset = reset

    def observe(self, headers: Any) -> None:
        remaining = headers.get("X-RateLimit-Remaining")
        if remaining is not None and str(remaining).strip() in ("0", "0.0"):
            self.hold(reset_from_headers(headers))

    def wait(self, max_wait: float, url: str | None = None) -> None:
        with self._lock:
            delay, reset = self._until - time.time(), self._reset
        if delay <= 0:
            return
        if delay > max_wait:
            raise RateLimitError(
                f"rate limit window spent; resets in {delay:.0f} s, beyond max_wait={max_wait:g} s",
                reset_at=reset,
                status=429,
                code="RATE_LIMIT_EXCEEDED",
                url=url,
            )
        log.info("rate limit window spent; waiting %.1f s for the reset", delay)
        time.sleep(delay)


def _make_retry_class() -> type:
    from urllib3.exceptions import MaxRetryError, ResponseError
    from urllib3.util.retry import Retry

    class ServiceRetry(Retry):
        """urllib3 Retry that waits for ``X-RateLimit-Reset`` (ISO or Unix) on 429, and gives
        up at once when that reset lies beyond ``max_wait``."""

        max_wait: float = 120.0
        gate: RateGate | None = None

        def new(self, **kw: Any) -> ServiceRetry:
            fresh = super().new(**kw)
            fresh.max_wait, fresh.gate = self.max_wait, self.gate
            return fresh

        def _wait_429(self, response: Any) -> float | None:
            return _seconds_until(reset_from_headers(response.headers))

        def get_retry_after(self, response: Any) -> float | None:
            if response.status == 429:
                wait = self._wait_429(response)
                if wait is not None:
                    return max(wait, 0.001)
            return super().get_retry_after(response)

        def increment(
            self, method=None, url=None, response=None, error=None, _pool=None, _stacktrace=None
        ):  # type: ignore[no-untyped-def,override]
            if response is not None and response.status == 429:
                reset = reset_from_headers(response.headers)
                if self.gate is not None:
                    self.gate.hold(reset)
                wait = _seconds_until(reset)
                if wait is not None and wait > self.max_wait:
                    # Hand the 429 back to the client, which raises RateLimitError with reset_at.
                    raise MaxRetryError(_pool, url, ResponseError("reset beyond max_wait"))
            return super().increment(method, url, response, error, _pool, _stacktrace)

    return ServiceRetry


def _make_adapter_class() -> type:
    from requests.adapters import HTTPAdapter

    class GatedAdapter(HTTPAdapter):
        """Stock adapter plus the client's rate-limit gate around each network send
        (cache hits never get here)."""

        def __init__(self, gate: RateGate, max_wait: float, **kw: Any) -> None:
            self.gate, self.max_wait = gate, max_wait
            super().__init__(**kw)

        def send(self, request, *args, **kwargs):  # type: ignore[no-untyped-def,override]
            self.gate.wait(self.max_wait, url=redact(request.url or ""))
            response = super().send(request, *args, **kwargs)
            self.gate.observe(response.headers)
            return response

    return GatedAdapter


# --- logging -----------------------------------------------------------------------------------


class _RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is not ours to fix
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


_FILTERED = (
    "urllib3.connectionpool",
    "urllib3.util.retry",
    "requests_cache.session",
    "requests_cache.policy.actions",
    "requests_cache.backends.base",
    "requests_cache.backends.sqlite",
    "mdframes",
)
_filter = _RedactingFilter()
for _name in _FILTERED:
    logging.getLogger(_name).addFilter(_filter)


# --- configuration -----------------------------------------------------------------------------


def _is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_base_url(url: str) -> str:
    """Validate a service root: https anywhere, plain http only on loopback."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"base URL {redact(url)!r} is not an http(s) URL; set {ENV_URL} to the service root"
        )
    if parts.scheme == "http" and not _is_loopback(parts.hostname):
        raise ConfigurationError(
            f"refusing plain http:// to {parts.hostname}: the API key would travel unencrypted. "
            "Use https:// (plain http is allowed only for localhost/127.0.0.0/8/::1)."
        )
    return url.rstrip("/")


def default_cache_path() -> Path:
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("mdframes")) / "http-cache.sqlite"


def _mask(key: str | None) -> str:
    if not key:
        return "None"
    return f"'***{key[-2:]}'" if len(key) >= 12 else "'***'"


class Client:
    """A configured connection to the service.

    Parameters
    ----------
    api_key : str, optional
        Defaults to the ``MDFRAMES_API_KEY`` environment variable.
    base_url : str, optional
        The service root (the client adds ``/v2/...``, ``/v1/...``); defaults to
        ``MDFRAMES_BASE_URL``. Plain ``http://`` is refused unless the host is loopback.
    cache : bool or str or Path
        ``True``: SQLite file in the user cache dir (or ``MDFRAMES_CACHE``); ``False``: off;
        a path: that file.
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

    Examples
    --------
    >>> import mdframes as md
    >>> client = md.Client(api_key="...", base_url="https://api.example.com")  # doctest: +SKIP
    >>> md.set_default_client(client)                                         # doctest: +SKIP
    """

    sandbox: Any = None  # set by mdframes.sandbox.running()

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
    ) -> None:
        if max_retries < 0 or max_workers < 1 or timeout <= 0 or max_wait < 0:
            raise ConfigurationError(
                "max_retries >= 0, max_workers >= 1, timeout > 0 and max_wait >= 0 are required"
            )
        self._api_key = api_key if api_key is not None else os.environ.get(ENV_KEY) or None
        url = base_url if base_url is not None else os.environ.get(ENV_URL) or None
        self.base_url = check_base_url(url) if url else None
        if cache is True:
            self.cache_path: Path | None = default_cache_path()
        elif cache is False or cache is None:
            self.cache_path = None
        else:
            self.cache_path = Path(cache).expanduser()
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.max_workers = int(max_workers)
        self.progress = progress
        self.max_wait = float(max_wait)
        self.backoff_factor = float(backoff_factor)
        self._gate = RateGate()
        self._session: requests.Session | None = None
        self._session_lock = threading.Lock()

    # -- presentation: the key never appears ----------------------------------------------
    def __repr__(self) -> str:
        cache = str(self.cache_path) if self.cache_path else "off"
        return (
            f"Client(api_key={_mask(self._api_key)}, base_url={self.base_url!r}, cache={cache!r}, "
            f"timeout={self.timeout:g}, max_retries={self.max_retries}, "
            f"max_workers={self.max_workers})"
        )

    def __getstate__(self) -> None:
        raise TypeError("a Client holds a secret and a live session; it cannot be pickled")

    def redact(self, text: str) -> str:
        """``text`` with this client's key (and any key-like parameter) removed."""
        return redact(text, self._api_key)

    # -- session ------------------------------------------------------------------------------
    @property
    def session(self) -> requests.Session:
        """The shared ``requests`` session (a ``CachedSession`` when caching is on)."""
        if self._session is None:
            with self._session_lock:
                if self._session is None:
                    self._session = self._build_session()
        return self._session

    def _build_session(self) -> requests.Session:
        import requests

        session: requests.Session
        if self.cache_path is not None:
            from requests_cache import CachedSession

            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            session = CachedSession(
                cache_name=str(self.cache_path),
                backend="sqlite",
                allowable_codes=(200,),
                allowable_methods=("GET",),
                ignored_parameters=SECRET_PARAMS,
                match_headers=False,
                expire_after=3600,
            )
        else:
            session = requests.Session()
        retry = _make_retry_class()(
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
        retry.max_wait, retry.gate = self.max_wait, self._gate
        pool = max(self.max_workers, 10)
        adapter = _make_adapter_class()(
            self._gate, self.max_wait, max_retries=retry, pool_connections=4, pool_maxsize=pool
        )
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        session.headers["User-Agent"] = "mdframes/0.1"
        session.headers["Accept"] = "application/json"
        return session

    def close(self) -> None:
        """Close the session (and the cache file)."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def clear_cache(self) -> None:
        """Delete every cached response."""
        session = self.session
        cache = getattr(session, "cache", None)
        if cache is not None:
            cache.clear()

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
        :class:`~mdframes.ResponseFormatError` or :class:`NetworkError`.

        Examples
        --------
        >>> payload = client.get("/v2/markets")          # doctest: +SKIP
        >>> payload.data["markets"][0]                   # doctest: +SKIP
        {'name': 'DOW 30', 'region': 'US'}
        """
        import requests

        from .envelope import decode

        base, key = self._require()
        query = {k: v for k, v in (params or {}).items() if v is not None}
        headers = {}
        if version == "v1":
            query["token"] = key  # v1 knows no other placement; redacted everywhere below
        else:
            headers["Authorization"] = f"Bearer {key}"
        url = base + path
        kwargs: dict[str, Any] = {}
        if self.cache_path is not None and ttl is not None:
            kwargs["expire_after"] = ttl
        shown = self.redact(_with_query(url, {k: v for k, v in query.items() if k != "token"}))
        try:
            response = self.session.get(
                url,
                params=query,
                headers=headers,
                timeout=self.timeout,
                allow_redirects=False,
                **kwargs,
            )
        except requests.RequestException as exc:
            raise NetworkError(f"{type(exc).__name__}: {self.redact(str(exc))}") from None
        log.debug("GET %s -> %s", shown, response.status_code)
        try:
            payload = decode(response, version=version, url=shown, dataset=dataset, secret=key)
        except MdframesError:
            # requests-cache stored this 200 before we could read it (a truncated body,
            # success:false): evict it, or every later call would replay the failure.
            self.evict([response.request])
            raise
        payload.request = response.request
        return payload

    def evict(self, requests: Any) -> None:
        """Drop the cached responses of these requests (no-op without a cache)."""
        cache = getattr(self._session, "cache", None)
        wanted = [r for r in requests if r is not None]
        if cache is not None and wanted:
            cache.delete(requests=wanted)


def _with_query(url: str, query: dict[str, Any]) -> str:
    from urllib.parse import urlencode

    return f"{url}?{urlencode(query)}" if query else url


# --- default client ------------------------------------------------------------------------

_default: Client | None = None
_default_lock = threading.Lock()


def set_default_client(client: Client | None) -> None:
    """Make ``client`` the one loaders use when no ``client=`` is passed.

    Examples
    --------
    >>> md.set_default_client(md.Client(api_key="...", base_url="https://..."))  # doctest: +SKIP
    """
    global _default
    with _default_lock:
        _default = client


def get_default_client() -> Client:
    """The default client, created from the environment on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Client()
        return _default


def resolve_client(client: Client | None) -> Client:
    return client if client is not None else get_default_client()
