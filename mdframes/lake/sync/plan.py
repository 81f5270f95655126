"""What a sync will ask for: one unit of work per (dataset, symbol) window or snapshot,
its parameters and its request estimate, before anything is sent."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import InvalidParameterError
from ...params import check_symbols, flag, to_date, to_utc, whole_number
from ...registry import REGISTRY, Dataset

__all__ = [
    "SyncRequest",
    "build_request",
    "ReadRequest",
    "read_request",
    "normalise_symbols",
    "Unit",
    "resolve_datasets",
    "dataset_names",
    "window_units",
    "plan_text",
]


def dataset_names() -> list[str]:
    """Every dataset a lake can sync (the registry entries with a lake mode)."""
    return [name for name, ds in REGISTRY.items() if ds.lake]


def resolve(name: str) -> Dataset:
    """A lake dataset by name (case, ``_`` and ``-`` aside; the registry's one resolver)."""
    from ...registry import resolve_name

    if not isinstance(name, str):
        raise InvalidParameterError(f"dataset names are strings, got {name!r}", parameter="dataset")
    return REGISTRY[resolve_name(name, dataset_names(), what="lake dataset", parameter="dataset")]


def resolve_datasets(datasets: str | Iterable[str]) -> list[Dataset]:
    """Lake datasets by name, each once, in the order given."""
    if datasets is None or not isinstance(datasets, (str, Iterable)):
        raise InvalidParameterError(
            f"datasets are a name or a list of names, got {datasets!r}", parameter="datasets"
        )
    names = [datasets] if isinstance(datasets, str) else list(datasets)
    if not names:
        raise InvalidParameterError("no dataset given", parameter="datasets")
    out: list[Dataset] = []
    for n in names:
        ds = resolve(n)
        if ds not in out:
            out.append(ds)
    return out


def normalise_symbols(symbols: Any, dataset: str | None = None) -> list[str]:
    """Checked symbols, stripped and upper-cased, without repeats, in the caller's order."""

    if symbols is None or not isinstance(symbols, (str, Iterable)):
        raise InvalidParameterError(
            f"symbols are a string or a list of strings, got {symbols!r}", parameter="symbols"
        )
    global _LAST_SYMBOLS
    items: Any = [symbols] if isinstance(symbols, str) else list(symbols)
    # A panel reads each of its datasets for the same universe: checked once, not per read
    # (500 symbols cost ~1.4 ms a read, whatever the panel's window).
    last = _LAST_SYMBOLS
    if last is not None and len(last[0]) == len(items) and last[0] == tuple(items):
        return list(last[1])
    cleaned = [s.strip().upper() if isinstance(s, str) else s for s in items]
    checked = check_symbols(cleaned, dataset=dataset)
    if all(type(s) is str for s in items):  # (only what compares as it is checked)
        _LAST_SYMBOLS = (tuple(items), tuple(checked))
    return checked


# The last symbols normalise_symbols was given and its answer (they were valid).
_LAST_SYMBOLS: tuple[tuple[str, ...], tuple[str, ...]] | None = None


@dataclass(frozen=True)
class SyncRequest:
    """What one :meth:`mdframes.Lake.sync` asks for, checked before the lake is touched."""

    datasets: tuple[Dataset, ...]
    symbols: tuple[str, ...] | None
    market: str | None
    region: str | None
    start: dt.date | None
    end: dt.date | None
    end_default: dt.date  # the lake clock's day: the window end when ``end`` is None
    budget: int | None
    wait: bool

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.datasets]

    def spec(self) -> dict[str, Any]:
        """What identifies the request's run in the root state: datasets, symbols or filter,
        start and end as given (no end: up to the day each sync runs), so a run stopped
        today is resumed by the same request tomorrow."""
        return {
            "datasets": self.names,
            "symbols": None if self.symbols is None else list(self.symbols),
            "market": self.market,
            "region": self.region,
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
        }


def _text_option(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameterError(f"{name}= is a non-empty string, got {value!r}", parameter=name)
    return value


def build_request(
    datasets: Any,
    symbols: Any,
    *,
    market: Any,
    region: Any,
    start: Any,
    end: Any,
    budget: Any,
    wait: Any,
    today: dt.date,
) -> SyncRequest:
    """Check every argument of a sync and freeze them (raises ``InvalidParameterError``).

    Examples
    --------
    >>> r = build_request("insider_trading", "aapl", market=None, region=None, start=None,
    ...                   end=None, budget=None, wait=False, today=dt.date(2026, 11, 24))
    >>> r.symbols, r.names
    (('AAPL',), ['insider_trading'])
    """

    resolved = resolve_datasets(datasets)
    market = _text_option(market, "market")
    region = _text_option(region, "region")
    syms = None if symbols is None else tuple(normalise_symbols(symbols))
    _check_scope(resolved, syms, market, region)
    start_d = None if start is None else to_date(start, "start")
    end_d = None if end is None else to_date(end, "end")
    if start_d and end_d and start_d > end_d:
        raise InvalidParameterError(f"start {start_d} is after end {end_d}", parameter="start")
    if budget is not None:
        whole_number(budget, "budget")
    flag(wait, "wait")
    return SyncRequest(tuple(resolved), syms, market, region, start_d, end_d, today, budget, wait)


def _check_scope(
    resolved: list[Dataset], syms: tuple[str, ...] | None, market: str | None, region: str | None
) -> None:
    """What to sync: symbols, or one cross-section filter, as each dataset needs."""
    if syms is not None and (market or region):
        raise InvalidParameterError(
            "give symbols or market=/region=, not both", parameter="symbols"
        )
    if market and region:
        raise InvalidParameterError("give market= or region=, not both", parameter="market")
    needs = [d.name for d in resolved if d.per_symbol]
    if needs and syms is None and not (market or region):
        raise InvalidParameterError(
            f"{', '.join(needs)} need symbols, market= or region=", parameter="symbols"
        )
    for ds in resolved:
        if ds.needs_market_or_region and not (market or region):
            raise InvalidParameterError(
                f"{ds.name} needs market= or region=", parameter="market", dataset=ds.name
            )


@dataclass(frozen=True)
class ReadRequest:
    """What one lake read asks for, checked once (:func:`read_request`) before the lake is
    read: :meth:`mdframes.Lake.read`'s arguments, or a panel's read bounded by when rows
    became public (:meth:`mdframes.lake.panels.Panels.read_published`)."""

    dataset: Dataset
    symbols: tuple[str, ...] | None = None
    start: Any = None  # as given: read in the kind of the table's time column (date or time)
    end: Any = None
    as_of: Any = None
    known_at: Any = None  # a UTC Timestamp
    columns: tuple[str, ...] | None = None  # names checked against the table when it opens
    history: bool = False
    market: str | None = None
    region: str | None = None
    version: int | None = None
    # A panel's read by when rows became public (its dataset's ``read_bound``, not the time
    # column; see :meth:`~mdframes.lake.panels.Panels.read_published`).
    public_from: dt.date | None = None
    public_until: dt.date | None = None


def read_request(
    dataset: str,
    symbols: Any = None,
    *,
    start: Any = None,
    end: Any = None,
    as_of: Any = None,
    known_at: Any = None,
    columns: Any = None,
    history: Any = False,
    market: str | None = None,
    region: str | None = None,
    version: Any = None,
    public_from: dt.date | None = None,
    public_until: dt.date | None = None,
) -> ReadRequest:
    """Check a read's arguments and freeze them (raises ``InvalidParameterError``).

    Examples
    --------
    >>> r = read_request("insider_trading", ["aapl"], known_at="2026-11-20")
    >>> r.dataset.name, r.symbols, str(r.known_at)
    ('insider_trading', ('AAPL',), '2026-11-20 23:59:59.999999+00:00')
    """

    ds = resolve(dataset)
    flag(history, "history")
    if version is not None:
        whole_number(version, "version", what="a table version, a whole number")
    known = None if known_at is None else to_utc(known_at, "known_at", dataset=ds.name)
    syms = None if symbols is None else tuple(normalise_symbols(symbols, ds.name))
    wanted = None if columns is None else _column_names(columns)
    return ReadRequest(
        ds, syms, start, end, as_of, known, wanted, history, market, region, version,
        public_from, public_until,
    )  # fmt: skip


def _column_names(columns: Any) -> tuple[str, ...]:
    """``columns=`` as a tuple of names, each once (which the dataset has: when it opens)."""
    if isinstance(columns, str) or not isinstance(columns, Iterable):
        raise InvalidParameterError(
            f"columns= is a list of column names, got {columns!r}", parameter="columns"
        )
    wanted = tuple(columns)
    bad = [c for c in wanted if not isinstance(c, str)]
    if bad:
        raise InvalidParameterError(f"column names are strings, got {bad}", parameter="columns")
    repeated = sorted({c for c in wanted if wanted.count(c) > 1})
    if repeated:
        raise InvalidParameterError(f"columns {repeated} given twice", parameter="columns")
    return wanted


@dataclass(eq=False)
class Unit:
    """One piece of sync work."""

    ds: Dataset
    symbol: str | None
    scope: str = ""  # snapshot filter: "daily", "market=S&P 500", ...; "" for windows
    params: dict[str, Any] = field(default_factory=dict)  # keyword arguments of md.load
    estimate: int = 1  # fewest requests it needs
    start: str | None = None  # windows: the span the state holds after success
    end: str | None = None
    pages: int = 0  # requests a paged window took (the next sync's estimate)
    window: tuple[str | None, str] | None = None  # windows: the dates this unit asks for
    id: str = ""  # the unit's key in the dataset state, the mode's (Mode.unit_id)


def _iso(day: dt.date | None) -> str | None:
    return None if day is None else day.isoformat()


def _date(text: str | None) -> dt.date | None:
    return None if text is None else dt.date.fromisoformat(text)


def window_units(
    ds: Dataset,
    symbols: Sequence[str],
    state: dict[str, Any],
    start: dt.date | None,
    end: dt.date | None,
    today: dt.date,
    unit_id: Callable[[str | None, str], str],
) -> list[Unit]:
    """Incremental windows: a first sync asks ``start..end``; later ones ask from the last
    synced end minus the dataset's lookback, widened backwards by an earlier ``start``
    (``unit_id``: the mode's key of a unit in the state)."""
    units = []
    target_end = end or today
    for symbol in symbols:
        key = unit_id(symbol, "")
        held = state["units"].get(key)
        if held is None:
            fetch_start, new_start = start, start
        else:
            held_start = _date(held["start"])
            incremental = dt.date.fromisoformat(held["end"]) - dt.timedelta(days=ds.lookback)
            if start is not None and held_start is not None and start < held_start:
                fetch_start, new_start = start, start  # widen backwards
            else:
                fetch_start, new_start = incremental, held_start  # never narrower
            if end is not None and end < fetch_start:
                fetch_start = start  # an explicit range older than the lookback reaches
        new_end = (
            target_end if held is None else max(dt.date.fromisoformat(held["end"]), target_end)
        )
        # The registry's fan-out: one unit asks every value (congress: "both" chambers).
        ((variant, estimate),) = ds.lake_variants()
        params: dict[str, Any] = {"start": _iso(fetch_start), "end": _iso(end), **variant}
        if ds.paged and held is not None:
            estimate = max(1, int(held.get("pages", 1)))
        window = (_iso(fetch_start), target_end.isoformat())
        span = (_iso(new_start), new_end.isoformat())
        units.append(Unit(ds, symbol, "", params, estimate, *span, window=window, id=key))
    return units


def plan_text(
    units: Sequence[Unit],
    skipped: int,
    budget: int | None,
    rate: dict[str, Any] | None,
    now: dt.datetime,
) -> str:
    """The plan a sync prints before it starts: requests needed and the ETA at the limit."""
    needed = sum(u.estimate for u in units)
    per: dict[str, int] = {}
    for u in units:
        per[u.ds.name] = per.get(u.ds.name, 0) + u.estimate
    lines = [
        f"sync plan: {len(units)} units, at least {needed} requests "
        f"({', '.join(f'{k} {v}' for k, v in per.items()) or 'nothing to do'})"
    ]
    if skipped:
        lines.append(f"  {skipped} units already done in this run (resumed)")
    if budget is not None:
        lines.append(f"  budget: {budget} requests this run")
    lines.append("  " + eta_text(min(needed, budget) if budget is not None else needed, rate, now))
    return "\n".join(lines)


def eta_text(needed: int, rate: dict[str, Any] | None, now: dt.datetime) -> str:
    """How long ``needed`` requests take at the last rate limit seen (windows of an hour, the
    spec's tiers, when the window length is unknown)."""
    if not rate or rate.get("limit") is None:
        return "rate limit: not known yet (the first answer tells)"
    limit, remaining = int(rate["limit"]), rate.get("remaining")
    reset = dt.datetime.fromisoformat(rate["reset"]) if rate.get("reset") else None
    if reset is not None and reset <= now:
        remaining = limit  # that window has passed
    remaining = limit if remaining is None else int(remaining)
    head = f"rate limit {limit} per window, {remaining} left"
    if needed <= remaining:
        return f"{head}: fits in the current window"
    windows = math.ceil((needed - remaining) / max(limit, 1))
    first = (reset - now).total_seconds() if reset is not None else 3600.0
    seconds = max(first, 0.0) + (windows - 1) * 3600.0
    return f"{head}: needs {windows} more window(s), ETA about {_duration(seconds)}"


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"
