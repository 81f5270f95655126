"""What the vendor's revisions and backfills did to a panel (CONTRACT §13): the panel as
known row by row (``known_at="row"``) against the panel of the latest versions.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any, Final

import numpy as np
import pandas as pd

from ..._typing import DateLike
from ...errors import InvalidParameterError, KnowledgeTimeWarning
from ...params import check_symbols, to_date
from ...registry import REGISTRY
from ..panels.build import panel
from ..panels.definitions import resolve_features
from ..panels.sources import LakeLike
from ..panels.spec import Feature

__all__ = ["revision_impact", "changed_cells", "IMPACT_COLUMNS", "REL_TOL"]

# A change smaller than this share of the latest value (or, below 1, than this much) is float
# noise: the two panels sum the same values in different orders (CONTRACT §13.1, 2026-12-07).
REL_TOL: Final = 1e-9

IMPACT_COLUMNS: Final = [
    "feature",
    "dataset",
    "cells",
    "changed",
    "share_changed",
    "mean_abs_change",
    "max_abs_change",
]


def revision_impact(
    symbols: str | Iterable[str],
    start: DateLike,
    end: DateLike,
    features: Iterable[str | Feature] | str | Feature | None = None,
    *,
    source: Any,
    freq: Any = "B",
) -> pd.DataFrame:
    """Per feature, how many cells the vendor's revisions and backfills changed: the panel
    as known row by row (``known_at="row"``) against the panel of the latest versions, same
    arguments.

    A cell is changed when its NA-ness differs between the two panels or when
    ``|a - b| > 1e-9 * max(1, |b|)``, ``a`` the value as known and ``b`` the latest versions'
    value, the reference (:func:`changed_cells`): float noise never counts.
    ``mean_abs_change`` and ``max_abs_change`` are over the changed cells that have a value in
    both. ``attrs["revisions"]``: per dataset, the records of ``symbols`` that the lake saw
    revised (:meth:`~mdframes.Lake.changes`), counted once each, whose time falls in the
    panel's window and its features' lookback (all of them for a dataset whose record has no
    time in its identity). ``attrs["as_known"]``, ``attrs["latest"]``: the two panels.

    Parameters
    ----------
    symbols, start, end, features, freq
        As :func:`~mdframes.features.panel`.
    source : Lake
        A lake (only a lake keeps the versions).

    Returns
    -------
    pandas.DataFrame
        ``feature, dataset, cells, changed, share_changed, mean_abs_change,
        max_abs_change``, one row per feature.

    Examples
    --------
    >>> impact = md.features.revision_impact(["AAPL", "MSFT"], "2026-01-05", "2026-06-30",
    ...                                      ["insider_net_value_90d"], source=lake)
    >>> impact[["feature", "dataset", "changed"]]  # a lake synced once holds no revision
                     feature          dataset  changed
    0  insider_net_value_90d  insider_trading        0
    """
    if (
        source is None
        or not isinstance(source, LakeLike)
        or not callable(getattr(source, "changes", None))
    ):
        raise InvalidParameterError(
            "revision_impact needs source= a lake (md.Lake): only a lake keeps the versions "
            "the vendor revised",
            parameter="source",
        )
    wanted = resolve_features(features)
    universe = check_symbols(symbols)
    args = (universe, start, end, wanted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KnowledgeTimeWarning)
        as_known = panel(*args, freq=freq, source=source, known_at="row")
        latest = panel(*args, freq=freq, source=source)
    rows = []
    for f in wanted:
        a = as_known[f.name].to_numpy(dtype="float64", na_value=np.nan)
        b = latest[f.name].to_numpy(dtype="float64", na_value=np.nan)
        differ = changed_cells(a, b)
        both = differ & ~np.isnan(a) & ~np.isnan(b)
        delta = np.abs(a[both] - b[both])
        rows.append(
            {
                "feature": f.name,
                "dataset": f.dataset,
                "cells": len(a),
                "changed": int(differ.sum()),
                "share_changed": float(differ.mean()) if len(a) else 0.0,
                "mean_abs_change": float(delta.mean()) if len(delta) else np.nan,
                "max_abs_change": float(delta.max()) if len(delta) else np.nan,
            }
        )
    out = pd.DataFrame(rows, columns=IMPACT_COLUMNS).astype(
        {"cells": "int64", "changed": "int64", "share_changed": "float64",
         "mean_abs_change": "float64", "max_abs_change": "float64"}
    )  # fmt: skip
    out.attrs["revisions"] = _revised_records(source, universe, start, end, wanted)
    out.attrs["as_known"] = as_known
    out.attrs["latest"] = latest
    return out


def changed_cells(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Which cells a revision changed, ``a`` as known against ``b`` the latest (the
    reference): NA on one side only, or ``|a - b| > 1e-9 * max(1, |b|)``. An infinity against
    anything but the same infinity counts too (the rule's arithmetic would give inf > inf).

    >>> changed_cells(np.array([0.1 + 0.2, 1.0, np.nan, np.nan, 5.0]),
    ...               np.array([0.3, 1.5, np.nan, 2.0, 5.0 + 1e-12]))
    array([False,  True, False,  True, False])
    """
    a = np.asarray(a, dtype="float64")
    b = np.asarray(b, dtype="float64")
    a_na, b_na = np.isnan(a), np.isnan(b)
    both = ~a_na & ~b_na
    with np.errstate(invalid="ignore"):  # inf - inf is NaN: handled as an infinity below
        far = np.abs(a - b) > REL_TOL * np.maximum(1.0, np.abs(b))
    infinite = (np.isinf(a) | np.isinf(b)) & (a != b)
    return (a_na != b_na) | (both & (far | infinite))


def _revised_records(
    lake: Any, symbols: list[str], start: Any, end: Any, features: list[Feature]
) -> dict[str, int]:
    """Per dataset, the distinct records ``lake.changes`` lists for ``symbols`` whose time is
    in the window the features read."""
    first_day, last_day = to_date(start, "start"), to_date(end, "end")
    out: dict[str, int] = {}
    for dataset in dict.fromkeys(f.dataset for f in features):
        base = REGISTRY[dataset].base
        lookback: int | None = 0
        for f in features:
            if f.dataset == dataset:
                lookback = (
                    None if lookback is None or f.lookback is None else max(lookback, f.lookback)
                )
        changes = lake.changes(base, symbols)
        ids = list(REGISTRY[base].identity.firsts)
        ids = [c for c in ids if c in changes.columns]
        if not len(changes):
            out[base] = 0
            continue
        times = [c for c in ids if pd.api.types.is_datetime64_any_dtype(changes[c].dtype)]
        if times:
            stamps = pd.to_datetime(changes[times[0]])
            if getattr(stamps.dt, "tz", None) is not None:
                stamps = stamps.dt.tz_convert("UTC").dt.tz_localize(None)
            lo = REGISTRY[dataset].load_start(first_day, lookback)
            keep = stamps.dt.normalize() <= pd.Timestamp(last_day)
            if lo is not None:
                keep &= stamps.dt.normalize() >= pd.Timestamp(lo)
            changes = changes[keep.to_numpy()]
        out[base] = int(len(changes.drop_duplicates(ids))) if ids else int(len(changes))
    return out
