"""How far back a panel reads a dataset: its window, and each symbol's latest value before it.

A panel from ``start`` needs a dataset's rows public from ``start - days`` on (``days``: the
longest window among its features, a change's lag included). Features without a window
(``*_last``, changes) also need, per symbol, the latest row carrying their value before that
point, of any age: one row per symbol and feature, not the whole history. :func:`latest_before`
picks those rows; a lake source finds them by reading backwards from the window in doubling
steps, only for the symbols still without one (:meth:`~.sources.Source.read_reaching`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..pit import public_times
from ..registry import REGISTRY
from .engine import counted_rows, day_numbers, last_per_code, symbol_codes, utc_naive
from .spec import Feature

__all__ = ["Reach", "reaches", "latest_before", "day_of"]


@dataclass(frozen=True)
class Reach:
    """What a panel reads of one dataset before its first date: ``days`` of whole windows,
    and the ``latest`` features that also need each symbol's latest value before them."""

    days: int
    latest: tuple[Feature, ...] = ()
    whole: bool = False  # a sum, count or mean over all history: every row counts

    @property
    def lookback(self) -> int | None:
        """Days before the first date that count whole; ``None``: all history."""
        return None if self.latest or self.whole else self.days


def reaches(features: list[Feature]) -> dict[str, Reach]:
    """Each dataset's :class:`Reach` for ``features``."""
    out: dict[str, Reach] = {}
    for f in features:
        now = out.get(f.dataset, Reach(0))
        unlimited = f.lookback is None or f.days is None
        seeks = unlimited and f.agg in ("last", "change")
        latest = (*now.latest, f) if seeks else now.latest
        whole = now.whole or (unlimited and not seeks)
        out[f.dataset] = Reach(max(now.days, f.days or 0), latest, whole)
    return out


def day_of(date: dt.date) -> int:
    """Days since 1970-01-01 of ``date``, as :func:`~.engine.day_numbers` counts them."""
    return (date - dt.date(1970, 1, 1)).days


def latest_before(
    frame: pd.DataFrame,
    dataset: str,
    symbols: list[str],
    cut_day: int,
    latest: tuple[Feature, ...],
    settle_from: int | None = None,
) -> tuple[np.ndarray, set[str]]:
    """Which rows of ``frame`` a panel whose windows start on day ``cut_day`` needs: every
    row public from that day on (or never public: the engine drops those), and of the rows
    public before it, per symbol and ``latest`` feature the latest one carrying the
    feature's value (in the engine's order: public time, event date, frame order).

    Returns the mask of rows to keep (frame order) and the symbols whose latest rows, for
    every feature, are public on or after day ``settle_from``: rows of an event date before
    the frame's (public at most the dataset's slack later) can then never be later."""
    n = len(frame)
    frame = frame.reset_index(drop=True)
    frame.attrs = {**frame.attrs, "dataset": dataset}
    times = utc_naive(public_times(frame))
    days = day_numbers(times)
    before = (days < cut_day) & ~np.isnat(times)
    keep = ~before
    if not before.any():
        return keep, set()
    rows = np.flatnonzero(before)
    sub = frame.iloc[rows]
    codes = symbol_codes(sub["symbol"], symbols)
    stamp = times[rows].view(np.int64)
    event = REGISTRY[dataset].event
    # As the engine orders rows public at the same moment: the later event date last.
    tie = utc_naive(sub[event]).view(np.int64) if event is not None and event in sub else None
    settled: set[int] | None = None
    for f in latest:
        ok = (codes >= 0) & counted_rows(sub.reset_index(drop=True), dataset, f)
        chosen = last_per_code(np.flatnonzero(ok), codes, stamp, tie)
        keep[rows[chosen]] = True
        if settle_from is not None:
            late = set(codes[chosen[days[rows[chosen]] >= settle_from]].tolist())
            settled = late if settled is None else settled & late
    names = set() if not settled else {symbols[c] for c in settled}
    assert len(keep) == n
    return keep, names
