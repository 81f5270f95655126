"""User arguments -> checked request parts, before anything touches the network.

Every bound comes from the registry entry's ``params``; this module only knows the
kinds of parameter (date, int, choice, free text) and the symbol rules. It is also the one
home of the two checks every wing asks of an argument: :func:`whole_number` and :func:`flag`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import numbers
import re
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from .errors import InvalidParameterError
from .registry import MARKETS, Dataset, Param, resolve_name

__all__ = [
    "check_symbol",
    "check_symbols",
    "to_date",
    "whole_number",
    "flag",
    "build_request",
    "plan",
    "Request",
]

_BAD_SYMBOL = re.compile(r"[/?#\\\s\x00-\x1f\x7f]|\.\.")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# The spec lists every market and region: anything else would only earn a 400 (or, worse, a
# path the HTTP stack collapses, such as "." or "..").
_MARKET_NAMES = tuple(m for m, _ in MARKETS)
_REGION_NAMES = tuple(dict.fromkeys(r for _, r in MARKETS))


_INT64_MAX = 2**63 - 1


def whole_number(
    value: Any,
    name: str,
    *,
    least: int | None = 0,
    what: str = "a whole number",
    dataset: str | None = None,
) -> int:
    """``value`` as an ``int`` when it is a whole number of at least ``least``, else
    :class:`~mdframes.InvalidParameterError` naming ``name`` (``least=None``: no least). A
    numpy integer counts; a bool never does (Python calls it an int, no caller means one).

    >>> whole_number(3, "limit", least=1)
    3
    """
    whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not whole or (least is not None and value < least):
        bound = "" if least is None else f" >= {least}"
        raise InvalidParameterError(
            f"{name}={value!r} must be {what}{bound}", parameter=name, dataset=dataset
        )
    if abs(int(value)) > _INT64_MAX:  # counts become numpy int64 (periods, folds, rows)
        raise InvalidParameterError(
            f"{name}={value!r} is larger than numpy's int64 can hold", parameter=name
        )
    return int(value)


def flag(value: Any, name: str, *, none: bool = False) -> Any:
    """``value`` when it is ``True`` or ``False`` (or ``None`` with ``none=True``), else
    :class:`~mdframes.InvalidParameterError` naming ``name``: ``1`` or ``"no"`` is a mistake.

    >>> flag(True, "wait")
    True
    """
    if not isinstance(value, bool) and not (none and value is None):
        words = "True, False or None" if none else "True or False"
        raise InvalidParameterError(f"{name}= is {words}, got {value!r}", parameter=name)
    return value


def check_symbol(symbol: Any, *, dataset: str | None = None) -> str:
    """Return the normalised ``symbol`` (stripped, upper case) if the service could accept it
    in a path, else raise.

    >>> check_symbol(" brk.b")
    'BRK.B'
    """
    if type(symbol) is str:
        normal = _normal_symbol(symbol)
        if normal is not None:
            return normal
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


@functools.lru_cache(maxsize=1 << 16)
def _normal_symbol(symbol: str) -> str | None:
    """``symbol`` normalised, None when the service could not take it: remembered, since a
    panel checks its universe at each step (its request, coverage, each dataset's read)."""
    normal = symbol.strip().upper()
    if not normal or _BAD_SYMBOL.search(normal) or normal.strip(".") == "":
        return None
    return normal if _encodable(normal) else None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")  # a lone surrogate cannot travel in a URL
    except UnicodeEncodeError:
        return False
    return True


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
        with contextlib.suppress(ValueError):
            if _ISO_DATE.match(text):
                return dt.date.fromisoformat(text)
            return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).date()
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
    ``date_means="start"``. A ``datetime``, ``Timestamp``, ``numpy.datetime64`` or string with
    a time is that instant.

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
    if isinstance(value, (str, dt.datetime, np.datetime64)):
        given: Any = value.strip() if isinstance(value, str) else value
        try:
            stamp = pd.Timestamp(given)
        except (ValueError, TypeError):
            stamp = None
        if stamp is not None and stamp is not pd.NaT:
            return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    raise InvalidParameterError(
        f"{name}={value!r} is not a time (use 'YYYY-MM-DD' for the {date_means} of that day, "
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


def _date_param(p: Param, value: Any, dataset: str) -> str:
    return to_date(value, p.name, dataset=dataset).isoformat()


def _int_param(p: Param, value: Any, dataset: str) -> int:
    number = whole_number(value, p.name, least=None, what="an integer", dataset=dataset)
    if (p.lo is not None and number < p.lo) or (p.hi is not None and number > p.hi):
        bounds = f"{p.lo} to {p.hi}" if p.hi is not None else f">= {p.lo}"
        raise InvalidParameterError(
            f"{p.name}={number} is outside {bounds}", parameter=p.name, dataset=dataset
        )
    return number


def _choice_param(p: Param, value: Any, dataset: str) -> Any:
    """A choice parameter's canonical value (``"Senate"`` -> ``"senate"``)."""
    return resolve_name(value, p.choices, what=p.name, parameter=p.name, dataset=dataset)


# Free-text parameters whose values the spec lists or constrains, by name.
_NAMED_TEXT: dict[str, Callable[[Any, str], str]] = {
    "ticker": lambda value, dataset: check_symbol(value, dataset=dataset),
    "market": lambda value, dataset: resolve_name(
        value, _MARKET_NAMES, what="market", parameter="market", dataset=dataset
    ),
    "region": lambda value, dataset: resolve_name(
        value, _REGION_NAMES, what="region", parameter="region", dataset=dataset
    ),
}


def _text_param(p: Param, value: Any, dataset: str) -> Any:
    named = _NAMED_TEXT.get(p.name)
    if named is not None:
        return named(value, dataset)
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameterError(
            f"{p.name} must be a non-empty string, got {value!r}", parameter=p.name, dataset=dataset
        )
    return value


# Parameter kind -> its check: the value as sent, or InvalidParameterError.
_CHECK_PARAM: dict[str, Callable[[Param, Any, str], Any]] = {
    "date": _date_param,
    "int": _int_param,
    "choice": _choice_param,
    "str": _text_param,
}


def _check_window(ds: Dataset, checked: dict[str, Any]) -> None:
    days = [(p.name, checked[p.name]) for p in ds.params if p.kind == "date" and p.name in checked]
    # ISO dates order as text does.
    if len(days) == 2 and days[0][1] > days[1][1]:
        raise InvalidParameterError(
            f"{days[0][0]} ({days[0][1]}) is after {days[1][0]} ({days[1][1]})",
            parameter=days[0][0],
            dataset=ds.name,
        )


def build_request(ds: Dataset, values: dict[str, Any], *, symbol: str | None = None) -> Request:
    """Check ``values`` against ``ds.params`` and build the request.

    Raises :class:`InvalidParameterError` for anything the service would reject.

    >>> from mdframes.registry import get
    >>> build_request(get("sentiment"), {"start": "2026-01-05"}, symbol="aapl")
    Request('/v2/sentiment/AAPL', {'startDate': '2026-01-05'})
    """
    checked = _checked(ds, values)
    query = {p.wire: checked[p.name] for p in ds.params if p.name in checked and not p.in_path}
    if ds.needs_market_or_region and not (query.get("market") or query.get("region")):
        raise InvalidParameterError(
            "this screener needs market= or region= (see load_markets())",
            parameter="market",
            dataset=ds.name,
        )
    symbol = None if symbol is None else check_symbol(symbol, dataset=ds.name)
    header = {f.wire for f in ds.header}
    # Path values the payload repeats as header fields (chamber, type): known from the request
    # when a payload omits them.
    known = {p.name: checked.get(p.name) for p in ds.params if p.in_path and p.name in header}
    return Request(_path(ds, checked, symbol), query, symbol or "", known)


def _checked(ds: Dataset, values: dict[str, Any]) -> dict[str, Any]:
    """Each given (or defaulted) parameter's value as it will be sent, in declared order."""
    checked: dict[str, Any] = {}
    for p in ds.params:
        value = values.get(p.name, p.default)
        if value is not None:
            checked[p.name] = _CHECK_PARAM[p.kind](p, value, ds.name)
    _check_window(ds, checked)
    return checked


def _path(ds: Dataset, checked: dict[str, Any], symbol: str | None) -> str:
    parts = {
        p.placeholder: quote(str(checked[p.name]), safe="")
        for p in ds.params
        if p.in_path and p.name in checked
    }
    if symbol is not None:
        parts["symbol"] = quote(symbol, safe="")
    try:
        return ds.path.format(**parts)
    except KeyError as missing:
        raise InvalidParameterError(
            f"missing {missing.args[0]}", parameter=missing.args[0], dataset=ds.name
        ) from None


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
            if p.kind == "choice":
                value = _choice_param(p, value, ds.name)
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
