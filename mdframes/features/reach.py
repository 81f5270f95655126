"""How far back a panel reaches into a dataset: its windows, and each symbol's latest value
before them.

A panel from ``start`` needs a dataset's rows public from ``start - days`` on (``days``: the
longest window among its features, a change's lag included). Features without a window
(``*_last``, changes) also need, per symbol, the latest row carrying their value before that
point, of any age: one row per symbol and feature, not the whole history. The engine keeps
those rows only (:class:`~.engine.Events` ``cut_day``/``latest``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .spec import Feature

__all__ = ["Reach", "reaches"]


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
