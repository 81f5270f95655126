"""A logging filter that removes API keys, installed when a :class:`~mdframes.Client` is made.

urllib3 logs request URLs (at DEBUG, and at WARNING for a malformed response header), and a
v1 URL carries the key in ``?token=``; requests-cache logs URLs too. A filter on a logger
only sees records created on that very logger (not those propagated from its children), so
it goes on every module logger of the libraries that can see a URL. Nothing is installed on
import: a program that never creates a client keeps its logging untouched.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from pathlib import Path

from .errors import redact

__all__ = ["RedactingFilter", "install", "logger_names"]

# Packages whose loggers can see a URL or a header.
PACKAGES = ("urllib3", "requests", "requests_cache", "mdframes")


class RedactingFilter(logging.Filter):
    """Redact known keys and key-like URL parameters from a record's message, arguments,
    exception text and stack text.

    Examples
    --------
    >>> f = RedactingFilter()
    >>> f.add_secret("s3cr3t-key-value-0001")
    >>> record = logging.LogRecord("x", 20, "", 0, "GET /v1/a?token=%s", ("s3cr3t",), None)
    >>> f.filter(record) and record.getMessage()
    'GET /v1/a?token=***'
    """

    def __init__(self) -> None:
        super().__init__()
        self._secrets: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def add_secret(self, secret: str) -> None:
        with self._lock:
            if secret not in self._secrets:
                self._secrets = (*self._secrets, secret)

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = self._secrets
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is not ours to fix
            return True
        cleaned = redact(message, *secrets)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            # Formatters reuse exc_text when it is set, so the traceback they print is this one.
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info), *secrets)
        elif record.exc_text:
            record.exc_text = redact(record.exc_text, *secrets)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, *secrets)
        return True


_filter = RedactingFilter()
_installed = False
_install_lock = threading.Lock()


def logger_names(packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Every module logger name of ``packages`` (found on disk, without importing them)."""
    names: list[str] = []
    for package in packages:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        names.append(package)
        for root in spec.submodule_search_locations or ():
            for path in sorted(Path(root).rglob("*.py")):
                parts = path.relative_to(root).with_suffix("").parts
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                if parts:
                    names.append(".".join((package, *parts)))
    return names


def install(secret: str | None = None) -> RedactingFilter:
    """Put the filter on every logger that can see a URL (once) and teach it ``secret``.

    Examples
    --------
    >>> install("my-key-0123456789")
    <mdframes.logfilter.RedactingFilter object at ...>
    """
    global _installed
    if secret:
        _filter.add_secret(secret)
    if not _installed:
        with _install_lock:
            if not _installed:
                for name in logger_names():
                    logging.getLogger(name).addFilter(_filter)
                _installed = True
    return _filter
