"""Client configuration checks: the service root, the API key and how a key is shown.

Checked when a :class:`~mdframes.Client` is created, so a wrong setting fails at once with
:class:`~mdframes.ConfigurationError` instead of as a network error later.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from .errors import ConfigurationError, redact

__all__ = ["ENV_KEY", "ENV_URL", "check_base_url", "check_key", "is_loopback", "mask"]

ENV_KEY = "MDFRAMES_API_KEY"
ENV_URL = "MDFRAMES_BASE_URL"


def is_loopback(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ::1."""
    if host in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_base_url(url: str) -> str:
    """Validate a service root: https anywhere, plain http only on loopback, and the root
    itself (the client adds ``/v2/...`` and ``/v1/...``).

    Examples
    --------
    >>> check_base_url("http://127.0.0.1:8765/")
    'http://127.0.0.1:8765'
    """
    text = str(url).strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        guess = f"; did you mean 'http://{text}'?" if "://" not in text and text else ""
        raise ConfigurationError(
            f"base URL {redact(text)!r} is not an http:// or https:// URL{guess} "
            f"(set {ENV_URL} to the service root)"
        )
    path = parts.path.rstrip("/")
    if path.lower().endswith(("/v2", "/v1")):
        root = f"{parts.scheme}://{parts.netloc}{path[:-3]}"
        raise ConfigurationError(
            f"base URL {redact(text)!r} ends in {path[-3:]}: give the service root "
            f"({root!r}); the client adds /v2/... and /v1/... itself"
        )
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise ConfigurationError(
            f"refusing plain http:// to {parts.hostname}: the API key would travel unencrypted. "
            "Use https:// (plain http is allowed only for localhost/127.0.0.0/8/::1)."
        )
    return text.rstrip("/")


def check_key(key: object) -> str | None:
    """The key as it will be sent, or None when none is given.

    Surrounding whitespace (a pasted newline) is dropped; a key that is empty, only
    whitespace, not a string, or holds whitespace or control characters inside is refused:
    it cannot be a key, and sent in a header it would make requests echo it in an error.

    Examples
    --------
    >>> check_key("  sk-123\\n")
    'sk-123'
    """
    if key is None:
        return None
    if not isinstance(key, str):
        raise ConfigurationError(f"api_key must be a string, not {type(key).__name__}")
    stripped = key.strip()
    if not stripped:
        raise ConfigurationError(
            f"api_key is empty or only whitespace; pass the key or set {ENV_KEY}"
        )
    if any(ch.isspace() or not ch.isprintable() for ch in stripped):
        raise ConfigurationError(
            "api_key holds whitespace or control characters inside; it cannot be a key "
            "(check for a pasted line break)"
        )
    return stripped


def mask(key: str | None) -> str:
    """How a key is shown: never more than its last two characters, and only when long."""
    if not key:
        return "None"
    return f"'***{key[-2:]}'" if len(key) >= 12 else "'***'"
