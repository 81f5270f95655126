"""The error tree.

Every error carries the context a user needs to act on it (dataset, status, code, URL) and
also subclasses the matching builtin, so ``except ValueError`` / ``except LookupError`` in
existing code keeps working. URLs are stored already redacted: an error may end up in a
log, a notebook output or a bug report, and the API key must never travel with it.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

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
    "ResponseFormatError",
    "DataValidationError",
    "redact",
    "error_for_status",
]

# Query parameters and header-like fragments that may carry a key.
_SECRET_QUERY = re.compile(r"(?i)\b(token|apikey|api_key|access_token|key)=([^&#\s]+)")
_SECRET_BEARER = re.compile(r"(?i)(bearer\s+)([^\s,;'\"]+)")


def redact(text: str, *secrets: str | None) -> str:
    """Remove API keys from ``text``: known secrets anywhere, and any value of a key-like
    query parameter or bearer token."""
    out = str(text)
    for secret in secrets:
        if secret:
            out = out.replace(secret, "***")
    out = _SECRET_QUERY.sub(lambda m: f"{m.group(1)}=***", out)
    return _SECRET_BEARER.sub(lambda m: f"{m.group(1)}***", out)


class MdframesError(Exception):
    """Base class of every error raised by mdframes."""


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


class ServerError(ApiError):
    """5xx from the service, after the client's retries."""


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
        pandera's failure cases (column, check, failure_case, index).
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
    effective = status
    if (effective is None or effective < 400) and code:
        effective = _CODE_STATUS.get(code.upper(), effective)
    cls: type[ApiError]
    if effective is not None and effective >= 500:
        cls = ServerError
    else:
        cls = _STATUS_CLASSES.get(effective or 0, ApiError)
    if cls is RateLimitError:
        return RateLimitError(message, reset_at=reset_at, status=status, code=code, url=url)
    return cls(message, status=status, code=code, url=url)
