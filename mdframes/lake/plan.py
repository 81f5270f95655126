"""What a sync will ask for: one unit of work per (dataset, symbol) window or snapshot,
its parameters and its request estimate, before anything is sent."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidParameterError
from ..registry import FORECAST_TYPES, REGISTRY, Dataset
from .store import is_cross
from .versions import unit_of

__all__ = [
    "Unit",
    "resolve_datasets",
    "dataset_names",
    "window_units",
    "snapshot_units",
    "plan_text",
]


def dataset_names() -> list[str]:
    """Every dataset a lake can sync (the registry entries with a lake mode)."""
    return [name for name, ds in REGISTRY.items() if ds.lake]


def resolve(name: str) -> Dataset:
    """A lake dataset by name; ``_`` and ``-`` are interchangeable everywhere."""
    if not isinstance(name, str):
        raise InvalidParameterError(f"dataset names are strings, got {name!r}", parameter="dataset")
    wanted = name.strip().lower().replace("-", "_")
    for candidate in dataset_names():
        if candidate.replace("-", "_") == wanted:
            return REGISTRY[candidate]
    import difflib

    close = difflib.get_close_matches(wanted, [n.replace("-", "_") for n in dataset_names()], 3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise InvalidParameterError(
        f"unknown lake dataset {name!r}{hint} (known: {', '.join(dataset_names())})",
        parameter="dataset",
    )


def resolve_datasets(datasets: str | Iterable[str]) -> list[Dataset]:
    names = [datasets] if isinstance(datasets, str) else list(datasets)
    if not names:
        raise InvalidParameterError("no dataset given", parameter="datasets")
    out: list[Dataset] = []
    for n in names:
        ds = resolve(n)
        if ds not in out:
            out.append(ds)
    return out


@dataclass(eq=False)
class Unit:
    """One piece of sync work."""

    ds: Dataset
    symbol: str | None
    scope: str = ""  # snapshot filter: "daily", "market=S&P 500", ...; "" for windows
    params: dict[str, Any] = field(default_factory=dict)  # keyword arguments of md.load
    estimate: int = 1  # fewest requests it needs
    start: str | None = None  # windows: the state after success
    end: str | None = None
    pages: int = 0  # requests a paged window took (the next sync's estimate)

    @property
    def id(self) -> str:
        """The unit's key in the dataset state."""
        if self.ds.lake == "window":
            return str(self.symbol)
        return unit_of(None if is_cross(self.ds) else self.symbol, self.scope)


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
) -> list[Unit]:
    """Incremental windows: a first sync asks ``start..end``; later ones ask from the last
    synced end minus the dataset's lookback, widened backwards by an earlier ``start``."""
    units = []
    target_end = end or today
    for symbol in symbols:
        held = state["units"].get(symbol)
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
        params: dict[str, Any] = {"start": _iso(fetch_start), "end": _iso(end)}
        estimate = 1
        if ds.param("chamber") is not None:
            params["chamber"] = "both"
            estimate = 2  # one request per chamber
        if ds.paged and held is not None:
            estimate = max(1, int(held.get("pages", 1)))
        new_end = (
            target_end if held is None else max(dt.date.fromisoformat(held["end"]), target_end)
        )
        units.append(Unit(ds, symbol, "", params, estimate, _iso(new_start), new_end.isoformat()))
    return units


def snapshot_units(
    ds: Dataset, symbols: Sequence[str] | None, market: str | None, region: str | None
) -> list[Unit]:
    """One unit per symbol and forecast type, or one per cross-section filter."""
    if not is_cross(ds):
        if not symbols:
            raise InvalidParameterError(
                f"{ds.name} is per symbol: give symbols, market= or region=", parameter="symbols"
            )
        return [Unit(ds, s, t, {"type": t}) for s in symbols for t in FORECAST_TYPES]
    params: dict[str, Any] = {}
    if ds.param("limit") is not None and ds.scope in ("screener", "recent"):
        lo, hi = ds.limit_bounds
        params["limit"] = hi  # the whole cross section the service will give in one answer
    scope = ""
    if ds.param("market") is not None and (market or region):
        params.update(market=market, region=region)
        scope = f"market={market}" if market else f"region={region}"
    elif ds.needs_market_or_region:
        raise InvalidParameterError(
            f"{ds.name} needs market= or region=", parameter="market", dataset=ds.name
        )
    return [Unit(ds, None, scope, params)]


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
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"
