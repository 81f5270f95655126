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

from .errors import InvalidParameterError
from .registry import Dataset

__all__ = ["check_symbol", "check_symbols", "to_date", "build_request", "Request"]

_BAD_SYMBOL = re.compile(r"[/?#\s\x00-\x1f\x7f]|\.\.")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def check_symbol(symbol: Any, *, dataset: str | None = None) -> str:
    """Return ``symbol`` if the service could accept it in a path, else raise.

    >>> check_symbol("BRK.B")
    'BRK.B'
    """
    if not isinstance(symbol, str):
        raise InvalidParameterError(
            f"symbol must be a string, got {type(symbol).__name__}",
            parameter="symbol",
            dataset=dataset,
        )
    if not symbol or _BAD_SYMBOL.search(symbol):
        raise InvalidParameterError(
            f"invalid symbol {symbol!r}: it must be non-empty and hold no '/', '?', '#', "
            "whitespace or '..'",
            parameter="symbol",
            dataset=dataset,
        )
    return symbol


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


class Request:
    """One planned GET: the percent-encoded path and the query string values."""

    __slots__ = ("path", "query", "label")

    def __init__(self, path: str, query: dict[str, Any], label: str = "") -> None:
        self.path, self.query, self.label = path, query, label

    def __repr__(self) -> str:
        return f"Request({self.path!r}, {self.query!r})"


def build_request(ds: Dataset, values: dict[str, Any], *, symbol: str | None = None) -> Request:
    """Check ``values`` against ``ds.params`` and build the request.

    Raises :class:`InvalidParameterError` for anything the service would reject.
    """
    path_parts: dict[str, str] = {}
    query: dict[str, Any] = {}
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
            check_symbol(value, dataset=ds.name)
        else:
            if not isinstance(value, str) or not value.strip():
                raise InvalidParameterError(
                    f"{p.name} must be a non-empty string, got {value!r}",
                    parameter=p.name,
                    dataset=ds.name,
                )
        if p.wire.startswith("{"):
            path_parts[p.wire[1:-1]] = quote(str(value), safe="")
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
        path_parts["symbol"] = quote(check_symbol(symbol, dataset=ds.name), safe="")
    try:
        path = ds.path.format(**path_parts)
    except KeyError as missing:
        raise InvalidParameterError(
            f"missing {missing.args[0]}", parameter=missing.args[0], dataset=ds.name
        ) from None
    return Request(path, query, symbol or "")
