"""Registry-driven routing and parameter checks.

Every ``Dataset.path`` template of :data:`mdframes.registry.REGISTRY` becomes a route; its
``params`` (kinds, bounds, choices) decide what is a 400. A dataset added to the registry
needs only a builder in one of the builder tables here.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import orjson

from ..errors import InvalidParameterError
from ..params import check_symbol
from ..registry import REGISTRY, Dataset
from .common import Ctx, HttpError, stamp
from .data import BUILDERS
from .legacy import V1_BUILDERS
from .universe import DISCOVERY, MARKET_REGION, RECENT, REGIONS, SCREENER

__all__ = ["Route", "ROUTES", "UNSERVED", "match", "make_ctx", "render", "error_body"]

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_INT = re.compile(r"^[+-]?\d+$")
_START_NAMES = ("start", "date_from")
_END_NAMES = ("end", "date_to")
_V1_LABELS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


@dataclass(frozen=True)
class Route:
    dataset: Dataset
    segments: tuple[str, ...]  # literal text, or "{name}" for a placeholder
    build: Callable[[Ctx], Any]


def _builder(ds: Dataset) -> Callable[[Ctx], Any] | None:
    if ds.version == "v1":
        return V1_BUILDERS.get(ds.name)
    if ds.scope == "screener":
        return SCREENER
    if ds.scope == "recent":
        return RECENT
    if ds.scope == "discovery":
        return DISCOVERY.get(ds.name)
    return BUILDERS.get(ds.name)


def _routes() -> tuple[tuple[Route, ...], tuple[str, ...]]:
    routes: dict[str, Route] = {}
    unserved = []
    for ds in REGISTRY.values():
        if ds.path in routes:  # several views of one endpoint (app ratings): first one serves
            continue
        build = _builder(ds)
        if build is None:
            unserved.append(ds.name)
            continue
        routes[ds.path] = Route(ds, tuple(ds.path.strip("/").split("/")), build)
    # Literal segments win over placeholders where two templates could both match.
    ordered = sorted(routes.values(), key=lambda r: sum(s.startswith("{") for s in r.segments))
    return tuple(ordered), tuple(unserved)


ROUTES, UNSERVED = _routes()


def match(raw_path: str) -> tuple[Route, dict[str, str]] | None:
    """The route of a percent-encoded path and its decoded placeholders."""
    segments = [unquote(s) for s in raw_path.strip("/").split("/")]
    for route in ROUTES:
        if len(route.segments) != len(segments):
            continue
        parts: dict[str, str] = {}
        for template, value in zip(route.segments, segments, strict=True):
            if template.startswith("{"):
                parts[template[1:-1]] = value
            elif template != value:
                break
        else:
            return route, parts
    return None


def _date(wire: str, text: str) -> dt.date:
    if not _DATE.match(text):
        raise HttpError(400, f"{wire} must be a date YYYY-MM-DD, got {text!r}")
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise HttpError(400, f"{wire}={text!r} is not a calendar date") from None


def _int(wire: str, text: str, lo: int | None, hi: int | None) -> int:
    if not _INT.match(text.strip()):
        raise HttpError(400, f"{wire} must be an integer, got {text!r}")
    value = int(text)
    if lo is None and hi is None:
        lo = 1
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
        raise HttpError(400, f"{wire} must be {bounds}, got {value}")
    return value


def make_ctx(
    route: Route,
    parts: Mapping[str, str],
    query: Mapping[str, str],
    *,
    today: dt.date,
    counts: tuple[tuple[str, int], ...],
    legacy: frozenset[str],
    missing: frozenset[str],
) -> Ctx:
    """Check path parts and query against the registry entry; raise :class:`HttpError`."""
    ds = route.dataset
    for name, value in parts.items():
        if name in ("symbol", "ticker"):
            try:
                check_symbol(value)
            except InvalidParameterError as exc:
                raise HttpError(400, str(exc)) from None
            if value.upper() in missing:
                raise HttpError(404, f"symbol {value!r} not found")
        elif name == "market":
            if value not in MARKET_REGION:
                raise HttpError(404, f"market {value!r} not found")
        else:
            param = next((p for p in ds.params if p.wire == "{" + name + "}"), None)
            if param is not None and param.choices and value not in param.choices:
                raise HttpError(
                    400, f"{name} must be one of {', '.join(param.choices)}, got {value!r}"
                )
    values: dict[str, Any] = {}
    for p in ds.params:
        if p.wire.startswith("{"):
            continue
        text = query.get(p.wire)
        if text is None or text == "":
            continue
        if p.kind == "date":
            values[p.name] = _date(p.wire, text)
        elif p.kind == "int":
            values[p.name] = _int(p.wire, text, p.lo, p.hi)
        elif p.kind == "choice":
            if text not in p.choices:
                raise HttpError(
                    400, f"{p.wire} must be one of {', '.join(p.choices)}, got {text!r}"
                )
            values[p.name] = text
        else:
            if p.name == "market" and text not in MARKET_REGION:
                raise HttpError(400, f"unknown market {text!r}; see /v2/markets")
            if p.name == "region" and text not in REGIONS:
                raise HttpError(400, f"unknown region {text!r}; see /v2/regions")
            values[p.name] = text
    start = next((values[n] for n in _START_NAMES if n in values), None)
    end = next((values[n] for n in _END_NAMES if n in values), None)
    if start is not None and end is not None and start > end:
        raise HttpError(400, f"start date {start} is after end date {end}")
    if ds.needs_market_or_region and not (values.get("market") or values.get("region")):
        raise HttpError(400, "this endpoint needs a market or a region parameter")
    return Ctx(
        dataset=ds.name,
        parts=tuple(sorted(parts.items())),
        start=start,
        end=end,
        limit=values.get("limit"),
        market=values.get("market"),
        region=values.get("region"),
        type=values.get("type"),
        today=today,
        counts=counts,
        legacy=legacy,
    )


# --- bodies ------------------------------------------------------------------------------------


class _BodyCache:
    """Rendered bodies by request, within a byte budget (screener pages can be megabytes)."""

    def __init__(self, budget: int = 64 << 20, largest: int = 8 << 20) -> None:
        self._items: OrderedDict[Any, bytes] = OrderedDict()
        self._size = 0
        self._budget, self._largest = budget, largest
        self._lock = threading.Lock()

    def get(self, key: Any) -> bytes | None:
        with self._lock:
            body = self._items.get(key)
            if body is not None:
                self._items.move_to_end(key)
            return body

    def put(self, key: Any, body: bytes) -> None:
        if len(body) > self._largest:
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = body
            self._size += len(body)
            while self._size > self._budget:
                _, old = self._items.popitem(last=False)
                self._size -= len(old)


_BODIES = _BodyCache()


def render(route: Route, ctx: Ctx) -> bytes:
    """The success body: the v2 envelope around the builder's ``data``, or the bare v1 body."""
    body = _BODIES.get(ctx)
    if body is None:
        data = route.build(ctx)
        if route.dataset.version == "v1":
            body = orjson.dumps(data)
        else:
            body = orjson.dumps(
                {"success": True, "data": data, "meta": {"timestamp": stamp(ctx.today)}}
            )
        _BODIES.put(ctx, body)
    return body


def error_body(version: str, status: int, message: str, code: str | None = None) -> bytes:
    """The v2 error envelope, or v1's flat ``{error, message}``."""
    if version == "v1":
        return orjson.dumps({"error": _V1_LABELS.get(status, "Error"), "message": message})
    exc = HttpError(status, message, code)
    return orjson.dumps({"success": False, "error": {"code": exc.code, "message": message}})
