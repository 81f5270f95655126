"""The error tree.

Every error carries the context a user needs to act on it (dataset, status, code, URL) and
also subclasses the matching builtin, so ``except ValueError`` / ``except LookupError`` in
existing code keeps working. URLs are stored already redacted: an error may end up in a
log, a notebook output or a bug report, and the API key must never travel with it.

::

    MdframesError
    ├── ConfigurationError          (also RuntimeError)
    ├── InvalidParameterError       (also ValueError)
    ├── ApiError                    .status .code .message .url
    │   ├── BadRequestError         400
    │   ├── AuthenticationError     401
    │   ├── PermissionDeniedError   403
    │   ├── NotFoundError           404
    │   ├── RateLimitError          429 .reset_at
    │   └── ServerError             5xx
    ├── NetworkError                (also ConnectionError) .host .reason
    ├── ResponseFormatError         (also ValueError)
    ├── DataValidationError         (also ValueError)
    ├── LakeBusyError               another writer holds the lake's writer lease
    ├── LakeDamagedError            a lake file is missing or unreadable
    ├── LakeUnavailableError        (also ConnectionError) .endpoint .reason: the lake's
    │                               object store cannot be reached
    └── NotInLakeError              (also LookupError) the lake never synced what a panel needs
    DataQualityWarning              (UserWarning) soft rules failed
    SkippedSymbolsWarning           (UserWarning) errors="skip" dropped symbols
    KnowledgeTimeWarning            (UserWarning) a known_at before every stored version
    CacheWarning                    (UserWarning)

Every warning goes through :func:`warn`, which points it at the caller's line (the user's
cell or script), not at a line inside mdframes.

Every error pickles with its attributes (``__reduce__``), so it survives a process pool.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any
from urllib.parse import quote, quote_plus

__all__ = [
    "DataQualityWarning",
    "MdframesError",
    "ConfigurationError",
    "InvalidParameterError",
    "ApiError",
    "BadRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "RateLimitError",
    "ServerError",
    "NetworkError",
    "ResponseFormatError",
    "DataValidationError",
    "LakeBusyError",
    "LakeDamagedError",
    "LakeUnavailableError",
    "NotInLakeError",
    "SkippedSymbolsWarning",
    "KnowledgeTimeWarning",
    "CacheWarning",
    "find_stack_level",
    "warn",
    "warnings_from_threads",
    "warnings_from_workers",
    "redact",
    "scrub",
    "error_for_status",
]

# Query parameters and header-like fragments that may carry a key, in any text: a URL
# (`?token=...`), an echoed header (`X-API-Key: ...`, `"apiKey": "..."`) or a bearer token.
_SECRET_QUERY = re.compile(r"(?i)\b(token|apikey|api_key|access_token|key)=([^&#\s\"'<>)\]}]+)")
_SECRET_FIELD = re.compile(
    r"(?i)\b(x-api-key|api[-_]?key|access_token|token)([\"']?\s*:\s*[\"']?)([^\s\"',;&<>)\]}]+)"
)
_SECRET_BEARER = re.compile(r"(?i)(bearer\s+)([^\s,;'\"<>]+)")
# A key this long is masked wherever it occurs; a shorter one only as a whole token, so that
# a one-letter key does not turn "Max retries exceeded" into "Ma*** retries e***ceeded".
_ANYWHERE = 12


@lru_cache(maxsize=64)
def _secret_pattern(secret: str) -> re.Pattern[str]:
    forms = sorted({secret, quote(secret, safe=""), quote_plus(secret)}, key=len, reverse=True)
    alternatives = "|".join(re.escape(form) for form in forms)
    if len(secret) >= _ANYWHERE:
        return re.compile(alternatives)
    return re.compile(rf"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])")


def redact(text: str, *secrets: str | None) -> str:
    """Remove API keys from ``text``: the given secrets (as they are, or percent-encoded),
    and any value of a key-like query parameter, header or bearer token.

    Examples
    --------
    >>> redact("GET /v1/x?token=abc123&limit=5")
    'GET /v1/x?token=***&limit=5'
    >>> redact("Max retries exceeded: key x", "x")
    'Max retries exceeded: key ***'
    """
    out = str(text)
    for secret in secrets:
        if secret and secret.strip():
            out = _secret_pattern(secret).sub("***", out)
    out = _SECRET_QUERY.sub(lambda m: f"{m.group(1)}=***", out)
    out = _SECRET_FIELD.sub(lambda m: f"{m.group(1)}{m.group(2)}***", out)
    return _SECRET_BEARER.sub(lambda m: f"{m.group(1)}***", out)


def _clean(value: Any, secrets: tuple[str | None, ...]) -> Any:
    if isinstance(value, str):
        return redact(value, *secrets)
    if isinstance(value, tuple):
        return tuple(_clean(v, secrets) for v in value)
    return value


def scrub(exc: BaseException, *secrets: str | None) -> BaseException:
    """Redact ``exc`` in place and return it: its arguments and text attributes, and those of
    every exception chained to it (``__cause__``, ``__context__``). A context the raiser
    suppressed (``raise ... from None``) is dropped, since it is never shown but would still
    travel with the error (an orjson error holds the whole body). Attributes holding a
    request or response (which carry the key in a header) are cleared."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        link.args = _clean(link.args, secrets)
        for name, value in list(vars(link).items()):
            if name in ("request", "response", "pool", "_pool"):
                setattr(link, name, None)
            elif isinstance(value, (str, tuple)):
                setattr(link, name, _clean(value, secrets))
        if link.__suppress_context__:
            link.__context__ = None
        link = link.__cause__ or link.__context__
    return exc


def _rebuild(cls: type[BaseException], args: tuple, state: dict[str, Any]) -> BaseException:
    obj = cls.__new__(cls, *args)
    obj.args = args
    obj.__dict__.update(state)
    return obj


class MdframesError(Exception):
    """Base class of every error raised by mdframes.

    ``sources`` holds the planned requests whose answers produced the failing data, so the
    load can evict exactly those answers from the HTTP cache (empty when none).
    """

    sources: Sequence[Any] = ()

    def __reduce__(self) -> tuple[Any, ...]:
        # The default would call ``cls(*args)``, which the keyword-only constructors below
        # refuse or re-format; rebuild from the finished message and attributes instead.
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


class ConfigurationError(MdframesError, RuntimeError):
    """The client lacks something it needs (key, base URL) or was given something unsafe."""


class InvalidParameterError(MdframesError, ValueError):
    """An argument the service would reject; raised before any request is made."""

    def __init__(self, message: str, *, parameter: str | None = None, dataset: str | None = None):
        self.parameter = parameter
        self.dataset = dataset
        prefix = f"{dataset}: " if dataset else ""
        super().__init__(prefix + message)


class ApiError(MdframesError):
    """The service answered with an error (or ``success: false``).

    Attributes
    ----------
    status : int | None
        HTTP status code.
    code : str | None
        The service's machine-readable code (``UNAUTHORIZED``, ...), when it sent one.
    message : str
        The service's human-readable message.
    url : str | None
        The request URL with any key redacted.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        url: str | None = None,
    ):
        self.status = status
        self.code = code
        self.message = message
        self.url = url
        parts = [str(status) if status is not None else None, code]
        head = " ".join(p for p in parts if p)
        text = f"{head}: {message}" if head else message
        if url:
            text += f" (GET {url})"
        super().__init__(text)


class BadRequestError(ApiError, ValueError):
    """400: the service rejected the parameters."""


class AuthenticationError(ApiError, PermissionError):
    """401: missing, invalid, expired or revoked API key."""


class PermissionDeniedError(ApiError, PermissionError):
    """403: a valid key without access to this resource."""


class NotFoundError(ApiError, LookupError):
    """404: unknown ticker, symbol, market or endpoint."""


class RateLimitError(ApiError):
    """429: rate limit exceeded and not recoverable within the client's limits.

    ``reset_at`` is the (UTC-aware) time the window resets, when the response named one.
    """

    def __init__(self, message: str, *, reset_at: datetime | None = None, **kw: Any):
        self.reset_at = reset_at
        super().__init__(message, **kw)
        if reset_at is None:
            when = "The service named no reset time: retry in a minute"
        else:
            left = max(0.0, (reset_at - datetime.now(reset_at.tzinfo)).total_seconds())
            when = (
                f"The window resets at {reset_at:%Y-%m-%d %H:%M:%S} UTC (in {_span(left)}): "
                "retry after it, or let the client wait that long (md.Client(max_wait=seconds); "
                "a sync waits with wait=True)"
            )
        self.args = (f"{self.args[0]}. {when}",)


def _span(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


class ServerError(ApiError):
    """5xx from the service, after the client's retries."""


class NetworkError(MdframesError, ConnectionError):
    """The service could not be reached (refused, dropped, timed out, TLS, DNS) after the
    retries. The message names the host and the cause in one line, with a hint where one
    helps.

    Attributes
    ----------
    host : str | None
        ``host:port`` that failed.
    reason : str | None
        A short cause: ``"connection refused"``, ``"timed out"``, ...
    """

    def __init__(self, message: str, *, host: str | None = None, reason: str | None = None):
        self.host = host
        self.reason = reason
        super().__init__(message)


class ResponseFormatError(MdframesError, ValueError):
    """The body is not the documented JSON / envelope / record shape."""

    def __init__(self, message: str, *, url: str | None = None, dataset: str | None = None):
        self.url = url
        self.dataset = dataset
        prefix = f"{dataset}: " if dataset else ""
        suffix = f" (GET {url})" if url else ""
        super().__init__(prefix + message + suffix)


class DataValidationError(MdframesError, ValueError):
    """A frame broke its schema.

    Attributes
    ----------
    dataset : str
        Registry name of the dataset.
    failures : pandas.DataFrame | None
        One row per failed check: ``check, columns, rows`` (how many), ``symbols``,
        ``sample`` (failing values) and ``index`` (the first failing row labels).
    symbols : list of str
        The symbols whose rows fail (empty for cross-ticker datasets).
    """

    def __init__(
        self,
        message: str,
        *,
        dataset: str | None = None,
        failures: Any = None,
        symbols: list[str] | None = None,
    ):
        self.dataset = dataset
        self.failures = failures
        self.symbols = list(symbols or [])
        super().__init__(message)


class DataQualityWarning(UserWarning):
    """Soft rules failed (cross-field consistency, vocabulary, duplicates, unexpected nulls):
    the data is kept as loaded and each failed check is listed in ``df.attrs["quality"]``."""


_STATUS_CLASSES: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    429: RateLimitError,
}
_CODE_STATUS = {
    "UNAUTHORIZED": 401,
    "FORBIDDEN": 403,
    "NOT_FOUND": 404,
    "RATE_LIMIT_EXCEEDED": 429,
    "BAD_REQUEST": 400,
    "INVALID_PARAMETER": 400,
    "INTERNAL_ERROR": 500,
}


def error_for_status(
    status: int | None,
    message: str,
    *,
    code: str | None = None,
    url: str | None = None,
    reset_at: datetime | None = None,
) -> ApiError:
    """Build the ApiError subclass for an HTTP status (or, for ``success: false`` on a 200,
    for the error code)."""
    effective = status or 0
    if effective < 400 and code:
        effective = _CODE_STATUS.get(code.upper(), effective)
    cls = ServerError if effective >= 500 else _STATUS_CLASSES.get(effective, ApiError)
    if cls is RateLimitError:
        return RateLimitError(message, reset_at=reset_at, status=status, code=code, url=url)
    return cls(message, status=status, code=code, url=url)


class CacheWarning(UserWarning):
    """The cache file cannot be used (corrupt, unreadable or unwritable): the load goes on
    without it. ``mdframes cache clear`` removes the file."""


class SkippedSymbolsWarning(UserWarning):
    """``errors="skip"`` dropped some symbols: ``df.attrs["failed"]`` maps each to its error."""


class KnowledgeTimeWarning(UserWarning):
    """A ``known_at`` earlier than every stored version of a lake dataset: the frame is empty."""


class LakeBusyError(MdframesError):
    """Another writer holds the lake's writer lease (its holder and expiry are in the message)."""


class LakeDamagedError(MdframesError):
    """A lake file (data file, log, dtype record or state) is missing or unreadable.

    The message names the dataset and the file; ``lake.repair()`` fixes what can be fixed.
    """

    def __init__(self, message: str, *, dataset: str | None = None, file: str | None = None):
        super().__init__(message)
        self.dataset = dataset
        self.file = file


class LakeUnavailableError(MdframesError, ConnectionError):
    """The lake's object store cannot be reached (connection refused, a name that does not
    resolve, a timeout, a TLS failure). Nothing in the lake is damaged: run the call again
    once the store answers.

    Attributes
    ----------
    endpoint : str
        The store's address as the lake was given it (never with credentials).
    reason : str
        A short cause: ``"connection refused"``, ``"host name not resolved"``, ...
    """

    def __init__(self, message: str, *, endpoint: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.reason = reason


class NotInLakeError(MdframesError, LookupError):
    """A panel's lake never synced a dataset for some symbols (or its last sync of them
    failed, or the service did not know them): ``.symbols`` and ``.datasets`` name them.

    Sync them (``lake.sync(datasets, symbols)``) or pass ``errors="skip"`` to keep their rows
    with those features NA.
    """

    def __init__(
        self, message: str, *, symbols: Sequence[str] = (), datasets: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.symbols = list(symbols)
        self.datasets = list(datasets)


def find_stack_level() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside mdframes.

    As pandas' ``find_stack_level``: walk up from the caller of ``warnings.warn`` until the
    frame's file is not inside the package (tests and user code are outside it). A frame
    outside the package that mdframes itself called (``contextlib``'s ``__enter__`` of a
    ``with`` block inside mdframes) is plumbing, not the caller, and is walked past too; so is
    asyncio's event loop, which runs an ``md.aio`` coroutine awaited by ``asyncio.run(...)``
    directly (the warning then points at that line, not at asyncio's).
    """
    import asyncio
    import inspect
    import os

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    event_loop = os.path.dirname(os.path.abspath(asyncio.__file__)) + os.sep

    def inside(frame: Any, where: str = package) -> bool:
        return os.path.abspath(frame.f_code.co_filename).startswith(where)

    frame = inspect.currentframe()
    level = 0
    try:
        while frame is not None:
            called_by_us = frame.f_back is not None and inside(frame.f_back)
            if not inside(frame) and not called_by_us and not inside(frame, event_loop):
                break
            frame = frame.f_back
            level += 1
    finally:
        del frame
    return level


# Warnings of work run in threads, held for the thread that started the work: a worker
# thread's stack ends in concurrent.futures, not at the user's line.
_HELD: contextvars.ContextVar[list[tuple[str, type[Warning]]] | None] = contextvars.ContextVar(
    "mdframes_held_warnings", default=None
)


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` pointed at the caller's line: every warning of mdframes goes here.
    Inside :func:`warnings_from_threads`, held and raised when it ends."""
    import warnings

    held = _HELD.get()
    if held is not None:
        held.append((message, category))
        return
    # find_stack_level counts its own frame too, which makes up for warnings.warn's
    # stacklevel=1 being this function: the count lands exactly on the first outside frame.
    warnings.warn(message, category, stacklevel=find_stack_level())


@contextlib.contextmanager
def held_warnings() -> Iterator[list[tuple[str, type[Warning]]]]:
    """Hold the warnings of the block (and of the threads it submits with the context
    copied) in the list it yields, as ``(message, category)``, for the caller to raise
    where it wants (``md.aio`` raises them in the event loop's thread, at the ``await``)."""
    held: list[tuple[str, type[Warning]]] = []
    token = _HELD.set(held)
    try:
        yield held
    finally:
        _HELD.reset(token)


@contextlib.contextmanager
def warnings_from_threads() -> Iterator[None]:
    """Hold the warnings of work started within (submitted with ``contextvars.copy_context``,
    so that its threads see the same list), and raise them in this thread when it ends: they
    then point at the user's line, as a warning of the calling thread does."""
    failed = False
    try:
        with held_warnings() as held:
            yield
    except BaseException:
        failed = True
        raise
    finally:
        raise_held(held, failed)


@contextlib.contextmanager
def warnings_from_workers() -> Iterator[Callable[[], contextvars.Context]]:
    """As :func:`warnings_from_threads`, for work this thread submits while it goes on
    with its own, whose warnings it may catch itself: only the submitted work's warnings
    are held. Submit it in a context the yielded function makes
    (``pool.submit(context().run, fn, ...)``)."""
    held: list[tuple[str, type[Warning]]] = []

    def context() -> contextvars.Context:
        made = contextvars.copy_context()
        made.run(_HELD.set, held)
        return made

    failed = False
    try:
        yield context
    except BaseException:
        failed = True
        raise
    finally:
        raise_held(held, failed)


def raise_held(held: list[tuple[str, type[Warning]]], failed: bool = False) -> None:
    """Held warnings, raised in this thread (they point at the user's line)."""
    for message, category in held:
        try:
            warn(message, category)
        except Warning:
            if not failed:  # a warning filtered into an error: raised, unless it would
                raise  # hide the error already on its way
