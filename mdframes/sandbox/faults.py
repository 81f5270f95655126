"""Fault injection: a queue of damaged answers for the next matching requests, and how each
kind of damage looks on the wire (5xx, HTML, dropped connections, truncated or unwrapped
bodies, 429s, redirects, an exhausted rate limit).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from .context import status
from .wire import Outcome

__all__ = ["FAULT_KINDS", "FaultQueue", "damage"]

FAULT_KINDS = (
    500,
    502,
    503,
    "html500",
    "drop",
    "truncate",
    "html",
    "no_envelope",
    "success_false",
    "429",
    "retry_after",
    "redirect",
    "remaining0",
)
_HTML = b"<!DOCTYPE html><html><head><title>Service</title></head><body><h1>%s</h1></body></html>"


@dataclass
class _Fault:
    kind: Any
    path: str | None


class FaultQueue:
    """Faults waiting for the next requests whose path starts with their prefix."""

    def __init__(self) -> None:
        self._items: list[_Fault] = []
        self._lock = threading.Lock()

    def add(self, faults: tuple[Any, ...], path: str | None) -> None:
        for fault in faults:
            kind = fault[0] if isinstance(fault, tuple) else fault
            if kind not in FAULT_KINDS:
                raise ValueError(f"unknown fault {fault!r}; known: {FAULT_KINDS}")
        with self._lock:
            self._items.extend(_Fault(f, path) for f in faults)

    def take(self, path: str, raw: str) -> Any:
        """The first queued fault for ``path`` (decoded) or ``raw`` (as sent), removed."""
        with self._lock:
            for i, fault in enumerate(self._items):
                if fault.path is None or path.startswith(fault.path) or raw.startswith(fault.path):
                    return self._items.pop(i).kind
        return None


def damage(
    fault: Any,
    rate: dict[str, str],
    *,
    error: Callable[..., Outcome],
    real: Callable[[], Outcome],
    location: str,
    reset_in: Callable[[float], dict[str, str]],
) -> Outcome:
    """The outcome of one fault (all but ``"remaining0"``, which the server applies to a real
    answer): ``error(status, message, **headers)`` renders an error body, ``real()`` the real
    answer, ``reset_in(seconds)`` rate headers announcing a reset that far ahead."""
    kind, arg = (fault[0], float(fault[1])) if isinstance(fault, tuple) else (fault, 0.0)
    if isinstance(kind, int):
        return error(kind, "injected server error", **rate)
    if kind == "html500":
        return Outcome(500, _HTML % b"500 Internal Server Error", "text/html", rate)
    if kind == "drop":
        return Outcome(0, drop=True)
    if kind == "html":
        return Outcome(200, _HTML % b"Maintenance", "text/html; charset=utf-8", rate)
    if kind == "success_false":
        body = orjson.dumps(
            {"success": False, "error": {"code": "FORBIDDEN", "message": status(403).message}}
        )
        return Outcome(200, body, headers=rate)
    if kind == "429":
        return error(429, None, **reset_in(arg))
    if kind == "retry_after":
        return error(429, None, **{"Retry-After": str(math.ceil(arg))})
    if kind == "redirect":
        return Outcome(302, b"", headers={**rate, "Location": location})
    # truncate / no_envelope: a real body, damaged.
    body = real().body
    if kind == "truncate":
        return Outcome(200, body[: max(1, len(body) // 2)], headers=rate)
    data = orjson.loads(body)
    if isinstance(data, dict) and "data" in data:
        data = data["data"]
    return Outcome(200, orjson.dumps(data), headers=rate)
