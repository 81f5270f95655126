"""Registry-driven routing, parameter checks and body rendering.

:func:`build_routes` turns every ``Dataset.path`` template of a registry into a route when a
sandbox is constructed, so an entry added at run time is served by the next sandbox. Its
``params`` (kinds, bounds, choices) decide what is a 400. A dataset with a hand-written
generator (field names written by hand: the sandbox is an oracle, not a mirror of the
registry) is served by it; any other entry by :mod:`~mdframes.sandbox.declared`, from its
declared fields.
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

from ..registry import REGISTRY, Dataset, Param
from . import declared
from .context import Ctx, HttpError, status
from .cross import DISCOVERY, recent_builder, screener_builder
from .listings import MARKET_REGION, REGIONS
from .per_symbol import BUILDERS
from .synth import stamp
from .v1 import V1_BUILDERS

__all__ = ["Route", "build_routes", "match", "make_ctx", "render", "error_body", "SYMBOL_PARTS"]

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_INT = re.compile(r"^[+-]?\d+$")
# The service's own rule for a path symbol: non-empty, no separators, blanks or "..".
_BAD_SYMBOL = re.compile(r"[/?#\s\x00-\x1f\x7f]|\.\.")
_START_NAMES = ("start", "date_from")
_END_NAMES = ("end", "date_to")
SYMBOL_PARTS = ("symbol", "ticker")  # path placeholders that name a symbol


@dataclass(frozen=True)
class Route:
    dataset: Dataset
    segments: tuple[str, ...]  # literal text, or "{name}" for a placeholder
    build: Callable[[Ctx], Any]
    declared: bool = False  # served from the entry's declared fields

    @property
    def symbol_part(self) -> str | None:
        """The placeholder holding a symbol, if any."""
        return next((s[1:-1] for s in self.segments if s[1:-1] in SYMBOL_PARTS), None)


def _hand_written(ds: Dataset) -> Callable[[Ctx], Any] | None:
    if ds.version == "v1":
        return V1_BUILDERS.get(ds.name)
    if ds.scope == "screener":
        return screener_builder(ds.name.split("/", 1)[-1])
    if ds.scope == "recent":
        return recent_builder(ds.name.split("/", 1)[-1])
    if ds.scope == "discovery":
        return DISCOVERY.get(ds.name)
    return BUILDERS.get(ds.name)


def build_routes(registry: Mapping[str, Dataset] | None = None) -> tuple[Route, ...]:
    """One route per path template of ``registry`` (default: the registry as it is now).

    >>> any(r.dataset.name == "lobbying" for r in build_routes())
    True
    """
    routes: dict[str, Route] = {}
    for ds in (REGISTRY if registry is None else registry).values():
        if ds.path in routes:  # several views of one endpoint (app ratings): first one serves
            continue
        build = _hand_written(ds)
        segments = tuple(ds.path.strip("/").split("/"))
        routes[ds.path] = Route(ds, segments, build or declared.build, declared=build is None)
    # Literal segments win over placeholders where two templates could both match.
    return tuple(sorted(routes.values(), key=lambda r: sum(s.startswith("{") for s in r.segments)))


def match(routes: tuple[Route, ...], raw_path: str) -> tuple[Route, dict[str, str]] | None:
    """The route of a percent-encoded path and its decoded placeholders."""
    segments = [unquote(s) for s in raw_path.strip("/").split("/")]
    for route in routes:
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


def check_parts(ds: Dataset, parts: Mapping[str, str]) -> None:
    """Path placeholders: a well-formed symbol, a known market, a listed choice."""
    for name, value in parts.items():
        if name in SYMBOL_PARTS:
            if not value or _BAD_SYMBOL.search(value):
                raise HttpError(
                    400,
                    f"invalid symbol {value!r}: it must be non-empty and hold no '/', '?', '#', "
                    "whitespace or '..'",
                )
        elif name == "market":
            if value not in MARKET_REGION:
                raise HttpError(404, f"market {value!r} not found")
        else:
            param = next((p for p in ds.params if p.wire == "{" + name + "}"), None)
            if param is not None and param.choices and value not in param.choices:
                raise HttpError(
                    400, f"{name} must be one of {', '.join(param.choices)}, got {value!r}"
                )


def _choice(p: Param, text: str) -> str:
    if text not in p.choices:
        raise HttpError(400, f"{p.wire} must be one of {', '.join(p.choices)}, got {text!r}")
    return text


def _text(p: Param, text: str) -> str:
    if p.name == "market" and text not in MARKET_REGION:
        raise HttpError(400, f"unknown market {text!r}; see /v2/markets")
    if p.name == "region" and text not in REGIONS:
        raise HttpError(400, f"unknown region {text!r}; see /v2/regions")
    return text


# Parameter kind -> the value the service reads from the query text, or a 400.
_QUERY_VALUE: dict[str, Callable[[Param, str], Any]] = {
    "date": lambda p, text: _date(p.wire, text),
    "int": lambda p, text: _int(p.wire, text, p.lo, p.hi),
    "choice": _choice,
    "str": _text,
}


def check_query(ds: Dataset, query: Mapping[str, str]) -> dict[str, Any]:
    """Query parameters against the entry's ``params``: their values by Python name."""
    values: dict[str, Any] = {
        p.name: _QUERY_VALUE[p.kind](p, text)
        for p in ds.params
        if not p.in_path and (text := query.get(p.wire))  # absent or empty: not given
    }
    start = next((values[n] for n in _START_NAMES if n in values), None)
    end = next((values[n] for n in _END_NAMES if n in values), None)
    if start is not None and end is not None and start > end:
        raise HttpError(400, f"start date {start} is after end date {end}")
    if ds.needs_market_or_region and not (values.get("market") or values.get("region")):
        raise HttpError(400, "this endpoint needs a market or a region parameter")
    values["start"], values["end"] = start, end
    return values


def make_ctx(
    route: Route, parts: Mapping[str, str], values: Mapping[str, Any], **world: Any
) -> Ctx:
    """The request as builders see it: checked values plus the sandbox's state (``world``:
    ``today``, ``anchor``, ``counts``, ``legacy``, ``quirks``, ``bare``, ``listed``)."""
    return Ctx(
        dataset=route.dataset.name,
        ds=route.dataset,
        parts=tuple(sorted(parts.items())),
        start=values.get("start"),
        end=values.get("end"),
        limit=values.get("limit"),
        market=values.get("market"),
        region=values.get("region"),
        type=values.get("type"),
        **world,
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
    key = (route.dataset.path, route.declared, ctx)
    body = _BODIES.get(key)
    if body is None:
        data = route.build(ctx)
        if route.dataset.version == "v1":
            body = orjson.dumps(data)
        else:
            if ctx.bare and isinstance(data, dict):  # the live service's bare-list form
                data = data[route.dataset.records or "data"]
            body = orjson.dumps(
                {"success": True, "data": data, "meta": {"timestamp": stamp(ctx.today)}}
            )
        _BODIES.put(key, body)
    return body


def error_body(version: str, status_code: int, message: str | None = None) -> bytes:
    """The v2 error envelope, or v1's flat ``{error, message}``."""
    row = status(status_code)
    text = message or row.message
    if version == "v1":
        return orjson.dumps({"error": row.v1_label, "message": text})
    return orjson.dumps({"success": False, "error": {"code": row.code, "message": text}})
