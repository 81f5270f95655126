"""Where a lake lives: a local folder or an object-store prefix, with its settings resolved once.

A root is a folder (``str`` or path) or an object-store URI. Object-store settings come, in
this order of precedence, from ``storage_options=`` (deltalake's object-store keys), the URI's
query as pyarrow spells it (``s3://bucket/prefix?endpoint_override=127.0.0.1:9000&scheme=http
&region=us-east-1``, as in mdframes 0.2) and credentials in its user part, then the standard
AWS environment variables. :attr:`Location.options` holds them in deltalake's spelling
(``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_ALLOW_HTTP``, ``AWS_ACCESS_KEY_ID``, ...), so the
same dict serves the Delta tables and the writer lease.

Credentials never leave this object in printed form: :func:`redact_root` is the one function
that turns a root into text, and :meth:`Location.scrub` removes every secret value from a
message (an error of the object-store client may echo a request).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from ...errors import InvalidParameterError, redact

__all__ = ["Location", "parse_root", "redact_root", "SECRET_KEYS"]

OBJECT_SCHEMES = ("s3", "s3a")

# Keys whose values are secrets (deltalake spelling, upper case).
SECRET_KEYS = frozenset(
    {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_TOKEN"}
)

# Other spellings deltalake and object_store accept for the keys the lake reads itself.
_ALIASES = {
    "ENDPOINT": "AWS_ENDPOINT_URL",
    "ENDPOINT_URL": "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT": "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3": "AWS_ENDPOINT_URL",
    "REGION": "AWS_REGION",
    "AWS_DEFAULT_REGION": "AWS_REGION",
    "ACCESS_KEY_ID": "AWS_ACCESS_KEY_ID",
    "SECRET_ACCESS_KEY": "AWS_SECRET_ACCESS_KEY",
    "SESSION_TOKEN": "AWS_SESSION_TOKEN",
    "TOKEN": "AWS_SESSION_TOKEN",
    "AWS_TOKEN": "AWS_SESSION_TOKEN",
    "ALLOW_HTTP": "AWS_ALLOW_HTTP",
}

# The environment variables read for an object-store lake (the standard AWS ones).
_ENV_KEYS = (
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ALLOW_HTTP",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
)

# pyarrow's S3 URI query keys -> deltalake's keys (endpoint_override and scheme are combined).
_QUERY = {
    "region": "AWS_REGION",
    "access_key": "AWS_ACCESS_KEY_ID",
    "secret_key": "AWS_SECRET_ACCESS_KEY",
    "session_token": "AWS_SESSION_TOKEN",
}
# A scheme starts where no scheme character precedes it: tried from inside a long word, the
# match would scan the rest of the word again at every letter (quadratic in its length).
_USERINFO = re.compile(r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]*://)[^/@?#\s'\"]*@")


def redact_root(root: Any) -> str:
    """A lake root (or any text holding one) with no credential: a URI's user part and
    secret query values become ``***``. The one way a lake root becomes text.

    Examples
    --------
    >>> redact_root("s3://AKIAX:s3cr3t@bucket/lake?region=eu-west-1&secret_key=abc")
    's3://***@bucket/lake?region=eu-west-1&secret_key=***'
    >>> redact_root("cannot open s3://K:S@b/p: timeout")
    'cannot open s3://***@b/p: timeout'
    >>> redact_root("/data/lake")
    '/data/lake'
    """
    text = os.fspath(root) if isinstance(root, (str, os.PathLike)) else repr(root)
    text = _USERINFO.sub(r"\1***@", text)
    return re.sub(
        r"(?i)([?&](?:access_key|secret_key|session_token|[a-z_]*(?:secret|token|password)"
        r"[a-z_]*))=[^&#\s]*",
        r"\1=***",
        redact(text),
    )


_KNOWN = frozenset(_ENV_KEYS) | SECRET_KEYS | {"AWS_ALLOW_HTTP", "AWS_VIRTUAL_HOSTED_STYLE_REQUEST"}


def _normal_key(key: str) -> str:
    """The lake's spelling of the keys it reads itself; any other key as given (deltalake
    takes it as it is)."""
    upper = str(key).upper()
    if upper in _ALIASES:
        return _ALIASES[upper]
    return upper if upper in _KNOWN else str(key)


@dataclass(frozen=True, repr=False)
class Location:
    """A resolved lake root.

    ``local``: a folder (``path`` is its absolute path); otherwise an object store
    (``scheme``, ``bucket``, ``prefix``, ``options``). Its ``repr`` and :attr:`display` never
    show a credential.

    Examples
    --------
    >>> loc = parse_root("s3://bucket/lake?endpoint_override=127.0.0.1:9000&scheme=http")
    >>> loc.uri("insider_trading"), loc.options["AWS_ENDPOINT_URL"]
    ('s3://bucket/lake/insider_trading', 'http://127.0.0.1:9000')
    """

    display: str
    local: bool
    path: str = ""
    scheme: str = ""
    bucket: str = ""
    prefix: str = ""
    options: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Location({self.display!r})"

    def uri(self, *parts: str) -> str:
        """A path inside the lake as engines are given it (never with credentials)."""
        if self.local:
            return "/".join([self.path, *parts]) if parts else self.path
        inner = "/".join(p for p in [self.bucket, self.prefix, *parts] if p)
        return f"{self.scheme}://{inner}"

    def key(self, *parts: str) -> str:
        """An object's key inside the bucket (object stores only)."""
        return "/".join(p for p in [self.prefix, *parts] if p)

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(v for k, v in self.options.items() if k in SECRET_KEYS and v)

    def scrub(self, text: Any) -> str:
        """``text`` without any of this location's secret values."""
        from .faults import native_free

        return redact_root(redact(native_free(text), *self.secrets))

    @property
    def endpoint(self) -> str:
        """The object store's address as errors name it (never with credentials): the
        endpoint the lake was given, else AWS's endpoint for the region.

        Examples
        --------
        >>> parse_root("s3://b/p?endpoint_override=127.0.0.1:9000&scheme=http").endpoint
        'http://127.0.0.1:9000'
        >>> parse_root("s3://b/p?region=eu-west-1", environ={}).endpoint
        'https://s3.eu-west-1.amazonaws.com'
        """
        if self.local:
            return self.path
        given = self.options.get("AWS_ENDPOINT_URL")
        if given:
            return self.scrub(given)
        region = self.options.get("AWS_REGION")
        return f"https://s3.{region}.amazonaws.com" if region else "https://s3.amazonaws.com"

    def seconds(self, name: str) -> float | None:
        """A duration among the object-store client's settings (``connect_timeout``,
        ``timeout``; deltalake spells them ``"5s"``, ``"500ms"``), in seconds, so that the
        lake's other clients (pyarrow's, the lease's) keep the same limits. None: not set.

        Examples
        --------
        >>> parse_root("s3://b/p", {"connect_timeout": "500ms"}).seconds("connect_timeout")
        0.5
        """
        value = self.setting(name)
        if value is None:
            return None
        found = re.fullmatch(
            r"\s*([0-9.]+)\s*(ms|s|sec|secs|seconds?|m|min|mins|minutes?)?\s*", value
        )
        if not found:
            raise InvalidParameterError(
                f"storage option {name}={value!r} is not a duration such as '5s' or '500ms'",
                parameter="storage_options",
            )
        unit = (found[2] or "s").lower()
        scale = 0.001 if unit == "ms" else 60.0 if unit.startswith("m") else 1.0
        return float(found[1]) * scale

    def setting(self, name: str) -> str | None:
        """One of the object-store client's settings, its name in any case (None: not set)."""
        wanted = name.lower()
        return next((str(v) for k, v in self.options.items() if k.lower() == wanted), None)


def parse_root(
    root: Any,
    storage_options: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> Location:
    """Resolve a lake root, raising :class:`~mdframes.InvalidParameterError` for a value that
    cannot be one (not a path, an unsupported scheme, no bucket). Creates nothing.

    Examples
    --------
    >>> parse_root("s3://KEY:SECRET@bucket/p?region=eu-west-1")
    Location('s3://***@bucket/p?region=eu-west-1')
    >>> parse_root("s3://bucket/p", {"aws_region": "us-east-2"}).options["AWS_REGION"]
    'us-east-2'
    """
    text = _root_text(root)
    if storage_options is not None and not isinstance(storage_options, Mapping):
        raise InvalidParameterError(
            f"storage_options must be a dict, not {type(storage_options).__name__}"
        )
    if "://" not in text or text.startswith("file://"):
        path = Path(text.removeprefix("file://")).expanduser().resolve()
        if path.exists() and not path.is_dir():
            raise InvalidParameterError(f"root {str(path)!r} is a file, not a folder")
        return Location(display=str(path), local=True, path=str(path))

    display = redact_root(text)
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in OBJECT_SCHEMES:
        raise InvalidParameterError(
            f"root {display!r}: unsupported scheme {scheme!r}; use a folder or s3://bucket/prefix"
        )
    bucket = parts.hostname or ""
    if not bucket:
        raise InvalidParameterError(f"root {display!r} names no bucket")
    # Later sources win: the environment, then the URI, then storage_options.
    env = os.environ if environ is None else environ
    options = {_normal_key(n): env[n] for n in reversed(_ENV_KEYS) if env.get(n)}
    options.update(_uri_options(parts))
    for name, value in (storage_options or {}).items():
        options[_normal_key(name)] = str(value)
    if options.get("AWS_ENDPOINT_URL", "").startswith("http://"):
        options.setdefault("AWS_ALLOW_HTTP", "true")
    return Location(
        display=display,
        local=False,
        scheme="s3",
        bucket=bucket,
        prefix=parts.path.strip("/"),
        options=options,
    )


def _root_text(root: Any) -> str:
    """The root as text, or a clear error for a value that is not one."""
    if isinstance(root, bool) or not isinstance(root, (str, os.PathLike)):
        raise InvalidParameterError(
            f"root must be a folder or an object-store URI such as s3://bucket/prefix, "
            f"not {type(root).__name__} {redact_root(root)}"
        )
    text = os.fspath(root)
    if isinstance(text, bytes):
        raise InvalidParameterError("root must be text, not bytes")
    if not text.strip():
        raise InvalidParameterError("root must not be empty")
    return text


def _uri_options(parts: Any) -> dict[str, str]:
    """Settings an ``s3://`` URI carries: credentials before ``@`` and pyarrow's query names
    (``endpoint_override``, ``scheme``, ``region``, ...)."""
    out: dict[str, str] = {}
    if parts.username:
        out["AWS_ACCESS_KEY_ID"] = unquote(parts.username)
    if parts.password:
        out["AWS_SECRET_ACCESS_KEY"] = unquote(parts.password)
    query = dict(parse_qsl(parts.query))
    endpoint = query.pop("endpoint_override", None)
    scheme = query.pop("scheme", None)
    if endpoint:
        if "://" not in endpoint:
            endpoint = f"{scheme or 'https'}://{endpoint}"
        out["AWS_ENDPOINT_URL"] = endpoint
    if (scheme or "").lower() == "http" or (endpoint or "").startswith("http://"):
        out["AWS_ALLOW_HTTP"] = "true"
    out.update((_QUERY[name], value) for name, value in query.items() if name in _QUERY)
    return out
