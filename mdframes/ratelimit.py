"""Rate-limit arithmetic and the waits it causes.

The service names its reset in two forms (ISO 8601 or Unix seconds, both occur), or sends
``Retry-After``. :class:`RateGate` is shared by a client's threads: once the window is spent,
every thread waits for the reset instead of spending requests on 429s. Every wait here can be
cut short by the client's cancel event (Ctrl-C during a load), so no thread sleeps on after
the user has given up.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

from .cancel import current as current_scope
from .errors import MdframesError, RateLimitError
from .progress import waiting

__all__ = [
    "parse_reset",
    "reset_from_headers",
    "seconds_until",
    "pause",
    "Cancelled",
    "RateGate",
]

log = logging.getLogger("mdframes")


class Cancelled(MdframesError):
    """Raised in a worker thread whose client was interrupted: the caller already holds the
    KeyboardInterrupt, so this only ends the thread's work quickly."""


def parse_reset(value: str | None, now: float | None = None) -> datetime | None:
    """Parse ``X-RateLimit-Reset``: ISO 8601, Unix seconds (or milliseconds), or - when the
    number is too small to be an epoch - seconds from now. Returns an aware UTC datetime.

    Examples
    --------
    >>> parse_reset("2030-01-01T00:00:00Z")
    datetime.datetime(2030, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)
    >>> parse_reset("1893456000")
    datetime.datetime(2030, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)
    """
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
    """The reset time a response names: ``X-RateLimit-Reset``, else ``Retry-After``.

    Examples
    --------
    >>> reset_from_headers({"Retry-After": "30"}, now=0.0)
    datetime.datetime(1970, 1, 1, 0, 0, 30, tzinfo=datetime.timezone.utc)
    """
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


def seconds_until(reset: datetime | None) -> float | None:
    """Seconds from now to ``reset`` (negative once past), or None."""
    return None if reset is None else reset.timestamp() - time.time()


# How often a wait looks at a cancelled load's scope besides the client's own event.
_SCOPE_POLL = 0.05


def pause(seconds: float, cancel: threading.Event | None) -> None:
    """Sleep ``seconds``, or until ``cancel`` is set or the load running in this context is
    cancelled (then raise :class:`Cancelled`)."""
    scope = current_scope()
    if scope is not None:
        deadline = time.monotonic() + max(seconds, 0.0)
        while True:
            if scope.cancelled or (cancel is not None and cancel.is_set()):
                raise Cancelled("the load was cancelled")
            left = deadline - time.monotonic()
            if left <= 0:
                return
            scope.event.wait(min(left, _SCOPE_POLL))
    if cancel is None:
        if seconds > 0:
            time.sleep(seconds)
        return
    if cancel.wait(max(seconds, 0.0)) or cancel.is_set():
        raise Cancelled("the load was interrupted")


class RateGate:
    """Shared by a client's threads: once the service says the window is spent, every
    thread waits for the reset instead of spending requests on 429s.

    Examples
    --------
    >>> gate = RateGate()
    >>> gate.observe({"X-RateLimit-Remaining": "5"})
    >>> gate.wait(max_wait=120)  # nothing spent: returns at once
    """

    def __init__(self, cancel: threading.Event | None = None) -> None:
        self._lock = threading.Lock()
        self._until: float = 0.0  # wall-clock epoch seconds
        self._reset: datetime | None = None
        self.cancel = cancel

    def hold(self, reset: datetime | None) -> None:
        """Make every thread wait until ``reset``."""
        if reset is None:
            return
        with self._lock:
            if reset.timestamp() > self._until:
                self._until = reset.timestamp()
                self._reset = reset

    def observe(self, headers: Any) -> None:
        """Hold the gate when a response says the window is spent."""
        remaining = headers.get("X-RateLimit-Remaining")
        if remaining is not None and str(remaining).strip() in ("0", "0.0"):
            self.hold(reset_from_headers(headers))

    def wait(self, max_wait: float, url: str | None = None) -> None:
        """Wait for the reset, or raise :class:`RateLimitError` when it lies beyond
        ``max_wait`` (and :class:`Cancelled` when the client is interrupted)."""
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
        waiting(reset)
        try:
            pause(delay, self.cancel)
        finally:
            waiting(over=True)
