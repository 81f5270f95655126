"""How far back a panel reaches into a dataset: its windows, and each symbol's latest value
before them.

A panel from ``start`` needs a dataset's rows public from ``start - days`` on (``days``: the
longest window among its features, a change's lag included). Features without a window
(``*_last``, changes) also need, per symbol, the latest row carrying their value before that
point, of any age: one row per symbol and feature, not the whole history. The engine keeps
those rows only (:class:`~.engine.Events` ``cut_day``/``latest``).

A panel reads only the columns its features and the point-in-time rules use
(:func:`read_columns`): a lake then decodes neither headlines nor URLs for a count of news.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from ...registry import REGISTRY
from .spec import Feature

__all__ = ["Reach", "feature_columns", "reaches", "read_columns"]


@dataclass(frozen=True)
class Reach:
    """What a panel reads of one dataset before its first date: ``days`` of whole windows,
    and the ``latest`` features that also need each symbol's latest value before them."""

    days: int
    latest: tuple[Feature, ...] = ()
    whole: bool = False  # a sum, count or mean over all history: every row counts
    columns: tuple[str, ...] | None = None  # what the features read; None: every column

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
    for name, reach in out.items():
        columns = read_columns(name, [f for f in features if f.dataset == name])
        out[name] = replace(reach, columns=None if columns is None else tuple(columns))
    return out


def read_columns(dataset: str, features: list[Feature]) -> list[str] | None:
    """The columns of ``dataset`` that ``features`` and the point-in-time rules read: the
    symbol, the anchor, the event and deadline columns, and each feature's value, sign and
    where (a function's as it declares them in its ``columns`` attribute). ``None``: every
    column (a function that does not say what it reads). Names the dataset does not have
    are left out (the engine says which feature asked for them)."""
    ds = REGISTRY[dataset]
    named = feature_columns(features)
    if named is None:
        return None
    wanted = ["symbol", ds.anchor, ds.event, ds.deadline.event if ds.deadline else None, *named]
    known = set(ds.columns)
    return [c for c in dict.fromkeys(wanted) if c is not None and c in known]


def feature_columns(features: Iterable[Feature]) -> list[str] | None:
    """The columns ``features`` read through their value, sign and where (a function's as
    it declares them in its ``columns`` attribute), in order, repeats kept; ``None``: a
    function that does not say what it reads."""
    names: list[str] = []
    for f in features:
        for spec in (f.value, f.sign, f.where):
            if isinstance(spec, str):
                names.append(spec)
            elif callable(spec):
                declared = getattr(spec, "columns", None)
                if declared is None:
                    return None
                names += list(declared)
    return names
