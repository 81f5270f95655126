"""The HTTP cache: where it lives, who may read an entry, and keeping it healthy.

One SQLite file (requests-cache) holds 200 answers. Entries belong to the key that fetched
them: the cache key of a request mixes in a salted one-way fingerprint of the request's key
(HMAC-SHA256; the salt is a random file beside the cache, created 0600), so a key never
reads what another key cached, and neither the key nor an unsalted hash of it reaches the
file. A file that cannot be used (corrupt, unreadable, unwritable) gives one
:class:`~mdframes.errors.CacheWarning` naming it and ``mdframes cache clear``, and the load
goes on without a cache; :func:`clear` always works, deleting a file it cannot read.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import sqlite3
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .errors import CacheWarning, MdframesError, warn

__all__ = [
    "ENV_CACHE",
    "SECRET_PARAMS",
    "default_cache_path",
    "resolve_path",
    "salt_path",
    "open_session",
    "CacheInfo",
    "inspect",
    "clear",
]

ENV_CACHE = "MDFRAMES_CACHE"
DEFAULT_TTL = 3600

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
_QUERY_SECRETS = {"apikey", "token", "access_token", "api_key"}
_SIDECARS = ("-wal", "-shm", "-journal")


def default_cache_path() -> Path:
    """``$MDFRAMES_CACHE``, or ``http-cache.sqlite`` in the user cache folder.

    Examples
    --------
    >>> default_cache_path().name
    'http-cache.sqlite'
    """
    env = os.environ.get(ENV_CACHE)
    if env:
        return _sqlite_name(Path(env).expanduser())
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("mdframes")) / "http-cache.sqlite"


def _sqlite_name(path: Path) -> Path:
    # requests-cache adds this suffix to a bare name; name the file it will really use.
    return path if path.suffix else path.with_name(path.name + ".sqlite")


def resolve_path(cache: bool | str | os.PathLike[str] | None) -> Path | None:
    """The file a ``Client(cache=...)`` argument names (None: no cache)."""
    if cache is True:
        return default_cache_path()
    if cache is False or cache is None:
        return None
    return _sqlite_name(Path(cache).expanduser())


def salt_path(path: Path) -> Path:
    """The salt file beside the cache file."""
    return path.with_name(path.name + ".salt")


# --- the per-key fingerprint ---------------------------------------------------------------------


def load_salt(path: Path) -> bytes:
    """Read the salt beside ``path``, creating it (mode 0600) on first use. A malformed salt
    is replaced: entries filed under the old one are then simply never found."""
    target = salt_path(path)
    try:
        text = target.read_text("ascii").strip()
        if len(text) == 64:
            return bytes.fromhex(text)
    except FileNotFoundError:
        pass
    except (ValueError, UnicodeDecodeError):
        target.unlink(missing_ok=True)
    # Written whole under a temporary name, then linked into place: a concurrent process
    # either wins the link or reads the winner's complete salt.
    tmp = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_hex(32))
        with contextlib.suppress(FileExistsError):
            os.link(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return bytes.fromhex(target.read_text("ascii").strip())


# What requests-cache writes in place of a secret in a stored request.
_REDACTED = "REDACTED"


def credentials(request: Any) -> list[str]:
    """The key values a request carries (headers or query), in a stable order; none for a
    request read back from the cache (its secrets were replaced when it was stored)."""
    found: list[str] = []
    headers = getattr(request, "headers", None) or {}
    auth = headers.get("Authorization")
    if auth:
        scheme, _, value = str(auth).partition(" ")
        found.append(value.strip() if scheme.lower() == "bearer" else str(auth))
    if headers.get("X-API-Key"):
        found.append(str(headers.get("X-API-Key")))
    query = urlsplit(str(getattr(request, "url", "") or "")).query
    found.extend(
        v for k, v in parse_qsl(query, keep_blank_values=True) if k.lower() in _QUERY_SECRETS
    )
    return [value for value in found if value and value != _REDACTED]


def make_key_fn(salt: bytes, own_key: str | None) -> Any:
    """A requests-cache ``key_fn``: the stock key (which leaves every secret out) mixed with
    a fingerprint of the request's key. A request without one - a request read back from
    the cache, whose secrets were stripped when it was stored - belongs to ``own_key``."""
    from requests_cache.cache_keys import create_key

    fingerprints: dict[tuple[str, ...], str] = {}

    def fingerprint(keys: tuple[str, ...]) -> str:
        if keys not in fingerprints:
            message = "\0".join(keys).encode("utf-8", "surrogatepass")
            fingerprints[keys] = hmac.new(salt, message, hashlib.sha256).hexdigest()
        return fingerprints[keys]

    def key_fn(request: Any, **kwargs: Any) -> str:
        keys = tuple(credentials(request)) or ((own_key,) if own_key else ())
        base = create_key(request, **kwargs)
        return hashlib.sha256(f"{fingerprint(keys)}:{base}".encode()).hexdigest()[:32]

    return key_fn


# --- opening, and surviving a bad file ----------------------------------------------------------


class _Health:
    """Turns the first failure of the cache file into one warning, then into no cache."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.broken = False
        self._lock = threading.Lock()

    def fail(self, exc: BaseException) -> None:
        with self._lock:
            if self.broken:
                return
            self.broken = True
        warn(
            f"the cache file {self.path} cannot be used ({_describe(exc)}); loading without "
            f"the cache. To fix it, run `mdframes cache clear` (or delete {self.path}) to start a "
            "fresh cache",
            CacheWarning,
        )


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


_DB_ERRORS = (sqlite3.Error, OSError)


@cache
def _safe_backend_class() -> type:
    from requests_cache.backends.sqlite import SQLiteCache

    class SafeSQLiteCache(SQLiteCache):
        """SQLiteCache whose failures (a corrupt page, a read-only file, a full disk) turn
        into a warning and a cache miss instead of a failed load."""

        health: _Health

        def get_response(self, key: str, default: Any = None) -> Any:
            if self.health.broken:
                return default
            try:
                return super().get_response(key, default)
            except _DB_ERRORS as exc:
                self.health.fail(exc)
                return default

        def save_response(self, *args: Any, **kwargs: Any) -> None:
            if self.health.broken:
                return
            try:
                super().save_response(*args, **kwargs)
            except _DB_ERRORS as exc:
                self.health.fail(exc)

        def delete(self, *args: Any, **kwargs: Any) -> None:
            if self.health.broken:
                return
            try:
                super().delete(*args, **kwargs)
            except _DB_ERRORS as exc:
                self.health.fail(exc)

    return SafeSQLiteCache


def open_session(path: Path, own_key: str | None, *, ttl: int = DEFAULT_TTL) -> Any:
    """A ``CachedSession`` on ``path`` for requests made with ``own_key``; a plain
    ``requests.Session`` (after a :class:`CacheWarning`) when the file cannot be used."""
    import requests

    health = _Health(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        salt = load_salt(path)
        backend = _safe_backend_class()(str(path))
        backend.health = health
        len(backend.responses)  # touches the table: a file that is not SQLite fails here
    except (*_DB_ERRORS, ValueError) as exc:
        health.fail(exc)
        return requests.Session()
    from requests_cache import CachedSession

    return CachedSession(
        backend=backend,
        allowable_codes=(200,),
        allowable_methods=("GET",),
        ignored_parameters=SECRET_PARAMS,
        match_headers=False,
        expire_after=ttl,
        key_fn=make_key_fn(salt, own_key),
    )


# --- housekeeping (the CLI's `cache info` and `cache clear`) ---------------------------------------


@dataclass
class CacheInfo:
    """What ``mdframes cache info`` shows."""

    path: Path
    exists: bool
    size: int = 0
    entries: int | None = 0
    expired: int | None = 0
    problem: str | None = None  # why the file cannot be read


def _files(path: Path) -> list[Path]:
    return [path, *(path.with_name(path.name + s) for s in _SIDECARS)]


def _opened(path: Path) -> contextlib.closing[Any]:
    """The cache file's backend, closed when the ``with`` block ends."""
    from requests_cache.backends.sqlite import SQLiteCache

    return contextlib.closing(SQLiteCache(str(path)))


def inspect(path: Path) -> CacheInfo:
    """Size and entry counts of the cache file; never raises for a bad file.

    Examples
    --------
    >>> with md.Client(cache=default_cache_path()) as cached:
    ...     markets = md.load_markets(client=cached)
    >>> inspect(default_cache_path()).entries
    1
    """
    if not path.exists():
        return CacheInfo(path, exists=False)
    size = sum(f.stat().st_size for f in _files(path) if f.exists())
    try:
        with _opened(path) as backend:
            entries = len(backend.responses)
            expired = sum(1 for _ in backend.filter(valid=False, expired=True))
    except Exception as exc:  # housekeeping must report a bad file, whatever broke
        return CacheInfo(path, True, size, None, None, _describe(exc))
    return CacheInfo(path, True, size, entries, expired)


@dataclass
class Cleared:
    """What :func:`clear` did."""

    removed: int | None  # entries removed; None when the whole file was deleted
    problem: str | None = None  # why the file was deleted instead of emptied


def clear(path: Path, *, expired: bool = False) -> Cleared:
    """Remove every entry (or only the expired ones). A file that cannot be read is deleted
    with its journal files, so ``cache clear`` always recovers a broken cache.

    Examples
    --------
    >>> with md.Client(cache=default_cache_path()) as cached:
    ...     markets = md.load_markets(client=cached)
    >>> clear(default_cache_path()).removed
    1
    """
    if not path.exists():
        return Cleared(0)
    try:
        with _opened(path) as backend:
            before = len(backend.responses)
            if expired:
                backend.delete(expired=True)
            else:
                backend.responses.clear()
                backend.redirects.clear()
            return Cleared(before - len(backend.responses))
    except Exception as exc:  # a file we cannot read is a file we delete
        problem = _describe(exc)
    for file in _files(path):
        try:
            file.unlink(missing_ok=True)
        except OSError as exc:
            raise MdframesError(
                f"cannot delete the cache file {file}: {exc.strerror or exc}"
            ) from None
    return Cleared(None, problem)
