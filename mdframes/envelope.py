"""Response bodies -> payloads or errors.

v2 wraps everything in ``{success, data, meta}`` / ``{success: false, error: {code, message}}``;
v1 returns bare objects and flat ``{error, message}`` errors. Anything else is a
:class:`ResponseFormatError`: a body we cannot read must never turn into an empty frame.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import orjson

from .errors import ApiError, ResponseFormatError, error_for_status, redact
from .ratelimit import reset_from_headers

__all__ = ["Payload", "decode", "snippet"]


@dataclass
class Payload:
    """A decoded response: the envelope's ``data`` (or the v1 body)."""

    data: Any
    url: str  # redacted
    from_cache: bool = False
    request: Any = None  # the PreparedRequest, to evict the cached response if unusable


_UNPARSED = object()

_V1_ERROR_STATUS = {
    "unauthorized": 401,
    "forbidden": 403,
    "not found": 404,
    "too many requests": 429,
    "bad request": 400,
}


def snippet(content: bytes, secret: str | None) -> str:
    """The start of a body for an error message, on one line, with ``secret`` redacted.

    >>> snippet(b'{"data": [1, 2', None)
    '{"data": [1, 2'
    """
    text = content[:120].decode("utf-8", "replace").replace("\n", " ").strip()
    return redact(text, secret) or "<empty>"


def decode(
    response: Any,
    *,
    version: str,
    url: str,
    dataset: str | None = None,
    secret: str | None = None,
) -> Payload:
    """Decode a ``requests.Response`` into a :class:`Payload`.

    Everything the server sends back that ends up in an error (its message, an HTML page,
    a ``Location``) is redacted with ``secret``: a server may echo the request URL, which
    carries the v1 key.

    Examples
    --------
    >>> import requests
    >>> response = requests.get(client.base_url + "/v2/markets",
    ...                         headers={"X-API-Key": md.sandbox.SANDBOX_KEY})
    >>> payload = decode(response, version="v2", url="/v2/markets")
    >>> payload.data["markets"][0]
    {'name': 'DOW 30', 'region': 'US'}
    """
    status = response.status_code
    reset = reset_from_headers(response.headers) if status == 429 else None
    if 300 <= status < 400:
        raise ApiError(
            f"redirect to {redact(response.headers.get('Location', '?'), secret)} not followed "
            "(a redirect could carry the key to another host)",
            status=status,
            url=url,
        )
    body = _json(response, url, dataset, reset, secret)
    decoder = _decode_v1 if version == "v1" else _decode_v2
    payload = decoder(body, status, url, dataset, reset, secret)
    payload.from_cache = bool(getattr(response, "from_cache", False))
    return payload


def _json(response: Any, url: str, dataset: str | None, reset: Any, secret: str | None) -> Any:
    """The body as JSON; a body that is not JSON is the status' error, or unreadable."""
    content = response.content or b""
    # The transport parsed a 200 already, to know it was whole (transport.JSON_ATTR).
    body = response.__dict__.get("mdframes_json", _UNPARSED)
    if body is not _UNPARSED:
        return body
    with contextlib.suppress(orjson.JSONDecodeError):
        return orjson.loads(content)
    if response.status_code >= 400:
        raise error_for_status(
            response.status_code,
            f"non-JSON error body: {snippet(content, secret)}",
            url=url,
            reset_at=reset,
        )
    kind = response.headers.get("Content-Type", "unknown content type")
    raise ResponseFormatError(
        f"body is not JSON ({kind}, {len(content)} bytes: {snippet(content, secret)!r})",
        url=url,
        dataset=dataset,
    )


def _decode_v2(
    body: Any, status: int, url: str, dataset: str | None, reset: Any, secret: str | None
) -> Payload:
    if not isinstance(body, dict) or "success" not in body:
        if status >= 400:
            raise error_for_status(
                status,
                f"error body without envelope: {redact(str(body)[:120], secret)}",
                url=url,
                reset_at=reset,
            )
        raise ResponseFormatError(
            "body lacks the v2 envelope ({success, data, meta})", url=url, dataset=dataset
        )
    if body.get("success") is not True or status >= 400:
        raise _v2_error(body, status, url, reset, secret)
    if "data" not in body or not isinstance(body["data"], (dict, list)):
        raise ResponseFormatError("envelope has no `data` object", url=url, dataset=dataset)
    return Payload(body["data"], url)


def _v2_error(
    body: dict[str, Any], status: int, url: str, reset: Any, secret: str | None
) -> Exception:
    err = body.get("error")
    if isinstance(err, dict):
        code, message = err.get("code"), err.get("message") or "no message"
        code = redact(str(code), secret) if code is not None else None
    else:
        code, message = None, str(err or body.get("message") or "request failed")
    return error_for_status(
        status if status >= 400 else None,
        redact(str(message), secret),
        code=code,
        url=url,
        reset_at=reset,
    )


def _decode_v1(
    body: Any, status: int, url: str, dataset: str | None, reset: Any, secret: str | None
) -> Payload:
    is_error = isinstance(body, dict) and set(body) <= {"error", "message"} and "error" in body
    if status >= 400 or is_error:
        err = body if isinstance(body, dict) else {}
        label = str(err.get("error") or "")
        code_status = status if status >= 400 else _V1_ERROR_STATUS.get(label.lower())
        raise error_for_status(
            code_status,
            redact(str(err.get("message") or label or "request failed"), secret),
            code=redact(label, secret) or None,
            url=url,
            reset_at=reset,
        )
    if isinstance(body, dict) and "success" in body and "data" in body:
        raise ResponseFormatError("a v2 envelope came from a v1 path", url=url, dataset=dataset)
    return Payload(body, url)
