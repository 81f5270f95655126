"""Bodies for registry entries that have no hand-written generator, from their declared fields.

A dataset added to the registry (even at run time) is served by the next sandbox with
plausible records: values follow each field's kind, bounds and categories, the window field
holds event days on the sandbox's fixed timeline (so the window and ``limit`` rules apply),
and the record list sits under ``Dataset.records``. Hand-written generators stay the oracle
for the datasets the spec describes; this is the fallback that keeps "one registry entry adds
a dataset" true for the sandbox too.
"""

from __future__ import annotations

import datetime as dt
import random
from functools import lru_cache
from typing import Any

from ..registry import Dataset, Field
from .context import Ctx
from .cross import DEFAULT_CROSS_LIMIT
from .filings import newest_first
from .listings import select, universe
from .synth import Profile, events, profile, seed_of
from .world import window

__all__ = ["build", "window_field", "synth_value"]

_WORDS = ("alpha", "beta", "gamma", "delta", "omega")
_EVENTS_PER_24_MONTHS = (40, 60)


def window_field(ds: Dataset) -> str | None:
    """The wire field a window filters on: the declared one, else the first date field."""
    if ds.filter_field:
        return ds.filter_field
    return next((f.wire for f in ds.fields if f.kind in ("date", "ts")), None)


def _bounds(f: Field, width: float) -> tuple[float, float]:
    lo = f.ge if f.ge is not None else (f.le - width if f.le is not None else 0.0)
    return lo, (f.le if f.le is not None else lo + width)


def synth_value(f: Field, r: random.Random, day: dt.date, p: Profile, key: str) -> Any:
    """One plausible value of field ``f`` for the record of ``p`` on ``day``.

    ``key`` makes identifiers unique (the record's place on the timeline).
    """
    if f.wire == "symbol" or f.name == "symbol":
        return p.symbol
    if f.wire == "name":
        return p.name
    if f.kind == "date":
        return day.isoformat()
    if f.kind == "ts":
        return f"{day.isoformat()}T{r.randrange(24):02d}:{r.randrange(60):02d}:00Z"
    if f.kind == "int":
        lo, hi = _bounds(f, 100_000)
        return r.randint(int(lo), int(hi))
    if f.kind == "float":
        lo, hi = _bounds(f, 1_000.0)
        return round(r.uniform(lo, hi), 4)
    if f.kind == "bool":
        return r.random() < 0.5
    if f.kind == "cik":
        return p.cik
    if f.kind == "list":
        return [f"{f.wire}-{r.choice(_WORDS)}" for _ in range(r.randint(1, 3))]
    if f.kind == "obj":
        return {"value": r.randint(0, 100)}
    if f.categories:
        return r.choice(f.categories)
    if f.kind == "cat":
        return r.choice(_WORDS).upper()
    lowered = f.wire.lower()
    if lowered.endswith(("id", "uuid", "number")):
        return f"{p.symbol}-{key}"
    if "url" in lowered:
        return f"https://sandbox.invalid/{f.wire}/{p.symbol}/{key}"
    return f"{f.wire} {r.choice(_WORDS)} {r.randint(1, 999)}"


def _record(ds: Dataset, seed: int, day: dt.date, p: Profile, key: str) -> dict[str, Any]:
    r = random.Random(seed)
    wf = window_field(ds)
    out = {}
    for f in ds.fields:
        if f.wire == wf and f.kind == "ts":
            out[f.wire] = f"{day.isoformat()}T{r.randrange(24):02d}:00:00Z"
        elif f.wire == wf:
            out[f.wire] = day.isoformat()
        else:
            out[f.wire] = synth_value(f, r, day, p, key)
    return out


@lru_cache(maxsize=1024)
def history(
    ds: Dataset, symbol: str, today: dt.date, count: int | None, anchor: dt.date
) -> tuple[dict[str, Any], ...]:
    """Every record of ``ds`` for ``symbol`` up to ``today``, newest first on the window."""
    p = profile(symbol)
    stream = events(ds.name, symbol, today, _EVENTS_PER_24_MONTHS, count, anchor, ties=0.2)
    out = [_record(ds, seed, day, p, f"{day:%Y%m%d}-{i}") for i, (day, seed) in enumerate(stream)]
    wf = window_field(ds)
    return tuple(reversed(out)) if wf is None else newest_first(out, wf, today, count, ds)


def _header(ds: Dataset, ctx: Ctx, p: Profile) -> dict[str, Any]:
    parts = dict(ctx.parts)
    r = random.Random(seed_of("declared-header", ds.name, p.symbol))
    out = {}
    for f in ds.header:
        if f.wire in ("symbol", "ticker"):
            out[f.wire] = p.symbol
        elif f.wire in parts:
            out[f.wire] = parts[f.wire]
        else:
            out[f.wire] = synth_value(f, r, ctx.today, p, "header")
    return out


def _per_symbol(ctx: Ctx) -> Any:
    ds = ctx.ds
    parts = dict(ctx.parts)
    symbol = parts.get("symbol") or parts["ticker"]
    records = history(ds, *ctx.history_args(symbol))
    wf = window_field(ds)
    if wf is not None:
        kept = window(ctx, records, wf)
    else:
        n = ctx.limit if ctx.limit is not None else ds.limit_bounds[1]
        kept = list(records if n is None else records[:n])
    return {**_header(ds, ctx, profile(symbol)), ds.records or "data": kept}


def _across(ctx: Ctx) -> list[dict[str, Any]]:
    """One record per ticker of the filtered universe (screeners, recent, discovery)."""
    ds = ctx.ds
    rows = universe()
    limit = ctx.limit if ctx.limit is not None else DEFAULT_CROSS_LIMIT
    out = []
    for i in select(ctx.today, ctx.market, ctx.region)[:limit]:
        p = profile(rows[i][0])
        seed = seed_of("declared", ds.name, p.symbol, ctx.today)
        day = ctx.today - dt.timedelta(days=seed % 7 if ds.scope == "recent" else 0)
        out.append(_record(ds, seed, day, p, f"{ctx.today:%Y%m%d}"))
    wf = window_field(ds)
    if ds.scope == "recent" and wf is not None:
        out.sort(key=lambda rec: str(rec[wf]), reverse=True)
    return out


def build(ctx: Ctx) -> Any:
    """The body of any registry entry, from its declared fields."""
    ds = ctx.ds
    if any(name in ("symbol", "ticker") for name, _ in ctx.parts):
        return _per_symbol(ctx)
    records = _across(ctx)
    if ds.version == "v1":
        return records
    if ds.scope in ("screener", "recent"):
        return {
            ds.records or "data": records,
            "summary": {
                "totalRecords": len(records),
                "totalTickers": len({r.get("symbol") for r in records}),
            },
        }
    return {ds.records or "data": records}
