"""User arguments -> checked request parts, before anything touches the network.

Every bound comes from the registry entry's ``params``; this module only knows the
kinds of parameter (date, int, choice, free text) and the symbol rules.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

import pandas as pd

from .errors import InvalidParameterError
from .registry import MARKETS, Dataset

__all__ = ["check_symbol", "check_symbols", "to_date", "build_request", "plan", "Request"]

_BAD_SYMBOL = re.compile(r"[/?#\\\s\x00-\x1f\x7f]|\.\.")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# The spec lists every market and region: anything else would only earn a 400 (or, worse, a
# path the HTTP stack collapses, such as "." or "..").
_MARKET_NAMES = {m.casefold(): m for m, _ in MARKETS}
_REGION_NAMES = {r.casefold(): r for _, r in MARKETS}


def check_symbol(symbol: Any, *, dataset: str | None = None) -> str:
    """Return the normalised ``symbol`` (stripped, upper case) if the service could accept it
    in a path, else raise.

    >>> check_symbol(" brk.b")
    'BRK.B'
    """
    if not isinstance(symbol, str):
        raise InvalidParameterError(
            f"symbol must be a string, got {type(symbol).__name__}",
            parameter="symbol",
            dataset=dataset,
        )
    normal = symbol.strip().upper()
    if (
        not normal
        or _BAD_SYMBOL.search(normal)
        or normal.strip(".") == ""
        or not _encodable(normal)
    ):
        raise InvalidParameterError(
            f"invalid symbol {symbol!r}: it must be non-empty UTF-8 text and hold no '/', '\\', "
            "'?', '#', whitespace or '..'",
            parameter="symbol",
            dataset=dataset,
        )
    return normal


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")  # a lone surrogate cannot travel in a URL
    except UnicodeEncodeError:
        return False
    return True


def _canonical(table: dict[str, str], value: Any, name: str, dataset: str) -> str:
    if not isinstance(value, str) or value.strip().casefold() not in table:
        close = [v for k, v in table.items() if isinstance(value, str) and value.casefold() in k]
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InvalidParameterError(
            f"{name}={value!r} is not one of the service's {name}s{hint}: "
            + ", ".join(sorted(set(table.values()))),
            parameter=name,
            dataset=dataset,
        )
    return table[value.strip().casefold()]


def check_symbols(symbols: str | Iterable[str], *, dataset: str | None = None) -> list[str]:
    """One symbol or many -> a checked list without repeats, in the caller's order."""
    if isinstance(symbols, str):
        items: list[Any] = [symbols]
    elif symbols is None:
        raise InvalidParameterError("no symbol given", parameter="symbols", dataset=dataset)
    else:
        try:
            items = list(symbols)
        except TypeError:
            raise InvalidParameterError(
                f"symbols must be a string or a list of strings, got {type(symbols).__name__}",
                parameter="symbols",
                dataset=dataset,
            ) from None
    if not items:
        raise InvalidParameterError("empty list of symbols", parameter="symbols", dataset=dataset)
    return list(dict.fromkeys(check_symbol(s, dataset=dataset) for s in items))


def to_date(value: Any, name: str = "date", *, dataset: str | None = None) -> dt.date:
    """str / date / datetime / Timestamp -> ``datetime.date``."""
    if isinstance(value, dt.datetime):  # includes pandas.Timestamp
        if value != value:  # NaT
            raise InvalidParameterError(f"{name} is NaT", parameter=name, dataset=dataset)
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            if _ISO_DATE.match(text):
                return dt.date.fromisoformat(text)
            return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).date()
        except ValueError:
            pass
    raise InvalidParameterError(
        f"{name}={value!r} is not a date (use 'YYYY-MM-DD', datetime.date or pandas.Timestamp)",
        parameter=name,
        dataset=dataset,
    )


def to_utc(
    value: Any, name: str = "time", *, dataset: str | None = None, date_means: str = "end"
) -> pd.Timestamp:
    """An instant as an aware UTC ``Timestamp``; naive means UTC (CONTRACT §10).

    A date alone (a ``datetime.date`` that is not a ``datetime``, or a ``'YYYY-MM-DD'``
    string) means the end of that day with ``date_means="end"`` (the last microsecond before
    the next midnight UTC: everything fetched during that day) or its first instant with
    ``date_means="start"``. A ``datetime``, ``Timestamp`` or string with a time is that instant.

    >>> to_utc("2026-11-20")
    Timestamp('2026-11-20 23:59:59.999999+0000', tz='UTC')
    >>> to_utc("2026-11-20T00:00")
    Timestamp('2026-11-20 00:00:00+0000', tz='UTC')
    """
    is_date = (isinstance(value, dt.date) and not isinstance(value, dt.datetime)) or (
        isinstance(value, str) and _ISO_DATE.match(value.strip()) is not None
    )
    if is_date:
        day = pd.Timestamp(to_date(value, name, dataset=dataset)).tz_localize("UTC")
        if date_means == "end":
            return day + pd.Timedelta(days=1) - pd.Timedelta(microseconds=1)
        return day
    if isinstance(value, (str, dt.datetime)):
        try:
            stamp = pd.Timestamp(value.strip() if isinstance(value, str) else value)
        except (ValueError, TypeError):
            stamp = None
        if stamp is not None and stamp is not pd.NaT:
            return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    raise InvalidParameterError(
        f"{name}={value!r} is not a time (use 'YYYY-MM-DD' for the end of that day, "
        "'YYYY-MM-DDTHH:MM' (UTC), datetime or pandas.Timestamp)",
        parameter=name,
        dataset=dataset,
    )


class Request:
    """One planned GET: the percent-encoded path, the query values, the symbol it asks for
    ("" for cross-ticker endpoints) and the path values a payload may omit (``chamber``)."""

    __slots__ = ("path", "query", "symbol", "path_values")

    def __init__(
        self,
        path: str,
        query: dict[str, Any],
        symbol: str = "",
        path_values: dict[str, Any] | None = None,
    ) -> None:
        self.path, self.query, self.symbol = path, query, symbol
        self.path_values = path_values or {}

    def __repr__(self) -> str:
        return f"Request({self.path!r}, {self.query!r})"


def build_request(ds: Dataset, values: dict[str, Any], *, symbol: str | None = None) -> Request:
    """Check ``values`` against ``ds.params`` and build the request.

    Raises :class:`InvalidParameterError` for anything the service would reject.
    """
    path_parts: dict[str, str] = {}
    query: dict[str, Any] = {}
    checked: dict[str, Any] = {}  # the values as sent (normalised)
    dates: list[tuple[str, dt.date]] = []
    for p in ds.params:
        value = values.get(p.name, p.default)
        if value is None:
            continue
        if p.kind == "date":
            day = to_date(value, p.name, dataset=ds.name)
            dates.append((p.name, day))
            value = day.isoformat()
        elif p.kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                if hasattr(value, "__index__") and not isinstance(value, bool):
                    value = int(value)
                else:
                    raise InvalidParameterError(
                        f"{p.name} must be an integer, got {value!r}",
                        parameter=p.name,
                        dataset=ds.name,
                    )
            if (p.lo is not None and value < p.lo) or (p.hi is not None and value > p.hi):
                bounds = f"{p.lo} to {p.hi}" if p.hi is not None else f">= {p.lo}"
                raise InvalidParameterError(
                    f"{p.name}={value} is outside {bounds}", parameter=p.name, dataset=ds.name
                )
        elif p.kind == "choice":
            if value not in p.choices:
                raise InvalidParameterError(
                    f"{p.name}={value!r} is not one of {', '.join(map(repr, p.choices))}",
                    parameter=p.name,
                    dataset=ds.name,
                )
        elif p.name == "ticker":
            value = check_symbol(value, dataset=ds.name)
        elif p.name == "market":
            value = _canonical(_MARKET_NAMES, value, "market", ds.name)
        elif p.name == "region":
            value = _canonical(_REGION_NAMES, value, "region", ds.name)
        else:
            if not isinstance(value, str) or not value.strip():
                raise InvalidParameterError(
                    f"{p.name} must be a non-empty string, got {value!r}",
                    parameter=p.name,
                    dataset=ds.name,
                )
        checked[p.name] = value
        if p.in_path:
            path_parts[p.placeholder] = quote(str(value), safe="")
        else:
            query[p.wire] = value
    if len(dates) == 2 and dates[0][1] > dates[1][1]:
        raise InvalidParameterError(
            f"{dates[0][0]} ({dates[0][1]}) is after {dates[1][0]} ({dates[1][1]})",
            parameter=dates[0][0],
            dataset=ds.name,
        )
    if ds.needs_market_or_region and not (query.get("market") or query.get("region")):
        raise InvalidParameterError(
            "this screener needs market= or region= (see load_markets())",
            parameter="market",
            dataset=ds.name,
        )
    if symbol is not None:
        symbol = check_symbol(symbol, dataset=ds.name)
        path_parts["symbol"] = quote(symbol, safe="")
    try:
        path = ds.path.format(**path_parts)
    except KeyError as missing:
        raise InvalidParameterError(
            f"missing {missing.args[0]}", parameter=missing.args[0], dataset=ds.name
        ) from None
    header = {f.wire for f in ds.header}
    # Path values the payload repeats as header fields (chamber, type): known from the request
    # when a payload omits them.
    known = {p.name: checked.get(p.name) for p in ds.params if p.in_path and p.name in header}
    return Request(path, query, symbol or "", known)


def plan(ds: Dataset, symbols: Any, params: dict[str, Any]) -> list[Request]:
    """Check every argument and list the requests, before any of them is sent.

    A value that stands for several (congress ``chamber="both"``) fans out to one request per
    value, as the registry declares.

    >>> from mdframes.registry import get
    >>> [r.path for r in plan(get("congress_trades"), "nvda", {})]
    ['/v2/congress/house/NVDA', '/v2/congress/senate/NVDA']
    """
    unknown = set(params) - {p.name for p in ds.params}
    if unknown:
        raise InvalidParameterError(f"unexpected parameter(s) {sorted(unknown)}", dataset=ds.name)
    variants: list[dict[str, Any]] = [params]
    for p in ds.params:
        if p.expands:
            value = params.get(p.name, p.default)
            if p.kind == "choice" and value not in p.choices:
                raise InvalidParameterError(
                    f"{p.name}={value!r} is not one of {', '.join(map(repr, p.choices))}",
                    parameter=p.name,
                    dataset=ds.name,
                )
            variants = [dict(v, **{p.name: one}) for v in variants for one in p.fan_out(value)]
    if not ds.per_symbol:
        if symbols is not None:
            raise InvalidParameterError(
                f"{ds.name} is not asked for per symbol; got symbols={symbols!r}",
                parameter="symbols",
                dataset=ds.name,
            )
        return [build_request(ds, v) for v in variants]
    checked = check_symbols(symbols, dataset=ds.name)
    return [build_request(ds, v, symbol=s) for s in checked for v in variants]
