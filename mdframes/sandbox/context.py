"""What every part of the sandbox shares about one request: its checked parameters (:class:`Ctx`),
the error it may end in (:class:`HttpError`) and the one table of HTTP statuses.

:data:`STATUSES` is the only place a status's reason phrase, v2 ``error.code``, v1 ``error``
label and default message are written; the server, the router and the error bodies all read it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from .synth import EPOCH

if TYPE_CHECKING:  # pragma: no cover
    from ..registry import Dataset

__all__ = ["Status", "STATUSES", "status", "HttpError", "Ctx"]


class Status(NamedTuple):
    """One HTTP status as the service speaks it."""

    reason: str  # the HTTP reason phrase
    code: str  # v2 ``error.code``
    v1_label: str  # v1 ``error``
    message: str  # the message when the caller gives none


STATUSES: dict[int, Status] = {
    200: Status("OK", "OK", "OK", ""),
    302: Status("Found", "FOUND", "Found", "Found"),
    400: Status("Bad Request", "BAD_REQUEST", "Bad Request", "Invalid parameters"),
    401: Status("Unauthorized", "UNAUTHORIZED", "Unauthorized", "Invalid or missing API key"),
    403: Status("Forbidden", "FORBIDDEN", "Forbidden", "Access denied for this resource"),
    404: Status("Not Found", "NOT_FOUND", "Not Found", "Not found"),
    405: Status(
        "Method Not Allowed", "METHOD_NOT_ALLOWED", "Method Not Allowed", "Method not allowed"
    ),
    429: Status(
        "Too Many Requests",
        "RATE_LIMIT_EXCEEDED",
        "Too Many Requests",
        "Rate limit exceeded, slow down",
    ),
    500: Status("Internal Server Error", "INTERNAL_ERROR", "Internal Server Error", "Server error"),
    502: Status("Bad Gateway", "BAD_GATEWAY", "Bad Gateway", "Bad gateway"),
    503: Status(
        "Service Unavailable", "SERVICE_UNAVAILABLE", "Service Unavailable", "Service unavailable"
    ),
}
_OTHER = Status("Status", "ERROR", "Error", "Error")


def status(code: int) -> Status:
    """The table row of ``code`` (a generic row for statuses the service never sends).

    >>> status(429).code
    'RATE_LIMIT_EXCEEDED'
    """
    return STATUSES.get(code, _OTHER)


class HttpError(Exception):
    """An error response: the server renders it as the v2 envelope or the v1 flat object."""

    def __init__(self, status_code: int, message: str | None = None) -> None:
        text = message or status(status_code).message
        super().__init__(text)
        self.status, self.message = status_code, text

    @property
    def code(self) -> str:
        return status(self.status).code


@dataclass(frozen=True)
class Ctx:
    """One validated request as the data builders see it.

    Hashable (the dataset entry itself is left out of the hash): rendered bodies are memoised
    by it, so every option that changes a body is a field here.
    """

    dataset: str  # registry name
    ds: Dataset = field(compare=False, hash=False)  # the entry itself
    parts: tuple[tuple[str, str], ...]  # decoded path placeholders
    start: dt.date | None
    end: dt.date | None
    limit: int | None
    market: str | None
    region: str | None
    type: str | None  # the /v2/tickers ``type`` filter
    today: dt.date  # the sandbox clock
    anchor: dt.date  # the day ``record_counts`` histories end on (the clock at construction)
    counts: tuple[tuple[str, int], ...] = ()
    legacy: frozenset[str] = frozenset()  # older v2 response shapes to serve
    quirks: frozenset[str] = frozenset()  # live-service facts switched on
    bare: bool = False  # ``data`` as a bare list (markets, screeners, recent)
    listed: tuple[dt.date | None, dt.date | None] = (None, None)  # the symbol's listing span

    def part(self, name: str) -> str:
        return dict(self.parts)[name]

    def history_args(self, symbol: str) -> tuple[str, dt.date, int | None, dt.date]:
        """``symbol``'s (symbol, today, count, anchor): a history function's arguments."""
        count = dict(self.counts).get(symbol)
        # The anchor only matters to sized fixtures: one memo entry per day for everything else.
        return symbol, self.today, count, self.anchor if count is not None else EPOCH
