"""``panel``: point-in-time features for a universe, one row per (date, symbol)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pandas as pd

from ..errors import InvalidParameterError
from ..params import check_symbols, to_date
from .definitions import CATALOG, by_name
from .engine import Events, Grid, compute, day_numbers, result_dtype
from .sources import check_source, fetch
from .spec import Feature

__all__ = ["panel", "resolve_features"]

_MAX_THREADS = 4


def resolve_features(features: Iterable[str | Feature] | str | Feature | None) -> list[Feature]:
    """Catalog names and :class:`Feature` objects -> Features, checked for unknown names
    and duplicate columns."""
    if features is None:
        return list(CATALOG)
    items: Sequence[Any] = [features] if isinstance(features, (str, Feature)) else list(features)
    if not items:
        raise InvalidParameterError("features is an empty list", parameter="features")
    out: list[Feature] = []
    for item in items:
        if isinstance(item, Feature):
            out.append(item)
            continue
        found = by_name(item) if isinstance(item, str) else None
        if found is None:
            names = [f.name for f in CATALOG]
            near = difflib.get_close_matches(str(item), names, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else f"; the catalog: {', '.join(names)}"
            raise InvalidParameterError(
                f"unknown feature {item!r}{hint} (or pass md.features.Feature(...))",
                parameter="features",
            )
        out.append(found)
    seen: set[str] = set()
    for f in out:
        if f.name in seen:
            raise InvalidParameterError(f"feature {f.name!r} is listed twice", parameter="features")
        seen.add(f.name)
    return out


def _dates(start: Any, end: Any, freq: Any) -> pd.DatetimeIndex:
    first, last = to_date(start, "start"), to_date(end, "end")
    if first > last:
        raise InvalidParameterError(f"start {first} is after end {last}", parameter="start")
    try:
        dates = pd.date_range(first, last, freq=freq, name="date")
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(
            f"freq={freq!r} is not a pandas frequency ({exc})", parameter="freq"
        ) from None
    if not (dates == dates.normalize()).all():
        raise InvalidParameterError(
            f"freq={freq!r} gives times within a day; a panel row is one calendar day",
            parameter="freq",
        )
    return dates.as_unit("ns")


def panel(
    symbols: str | Iterable[str],
    start: Any,
    end: Any,
    features: Iterable[str | Feature] | None = None,
    *,
    freq: Any = "B",
    source: Any = None,
    known_at: Any = None,
    client: Any = None,
) -> pd.DataFrame:
    """Point-in-time features, one row per (date, symbol), ready for a model.

    The row for date D uses only what was public by the end of D: rows whose anchor date is
    on or before D (a timestamp: before D + 1 day, UTC), null anchors as in
    :func:`mdframes.point_in_time`. Windows are calendar days ``(D - n, D]``; an empty window
    gives 0 for sums and counts and NA for means and last values.

    Parameters
    ----------
    symbols : str or list of str
        The universe (normalised like the loaders': stripped, upper-cased).
    start, end : str, date, datetime or Timestamp
        First and last panel date (inclusive).
    features : list of str or Feature, optional
        Catalog names (:func:`catalog`) and custom :class:`Feature` objects; default: the
        whole catalog.
    freq : str
        A pandas frequency for the dates (default ``"B"``, Monday to Friday).
    source : None, dict or lake
        ``None``: load through ``client`` (concurrent per dataset, cached); a dict of
        loader-shaped frames by dataset name (``{"insider_trading": df, ...}``); or a lake
        (``md.Lake`` or any object with its ``read``).
    known_at : str, datetime or Timestamp, optional
        With a lake: use only the versions fetched at or before this time.
    client : Client, optional
        With ``source=None``; default: the default client.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``(date, symbol)``; one column per feature, ``Int64`` for counts and
        integer sums, ``float64`` otherwise.

    Examples
    --------
    >>> import mdframes as md
    >>> with md.sandbox.running() as client:                   # doctest: +SKIP
    ...     df = md.features.panel(["AAPL", "MSFT"], "2026-01-01", "2026-03-31",
    ...                            ["insider_net_value_90d", "news_count_7d"], client=client)
    """
    wanted = resolve_features(features)
    universe = check_symbols(symbols)
    dates = _dates(start, end, freq)
    known = check_source(source, known_at, client)
    index = pd.MultiIndex.from_product([dates, pd.Index(universe)])
    index.names = ["date", "symbol"]
    if not len(dates):
        return pd.DataFrame(
            {f.name: pd.Series(dtype=result_dtype(f, False)) for f in wanted}, index=index
        )

    lookbacks: dict[str, int | None] = {}
    for f in wanted:
        current = lookbacks.get(f.dataset, 0)
        lookbacks[f.dataset] = (
            None if current is None or f.lookback is None else max(current, f.lookback)
        )
    frames = fetch(
        lookbacks,
        universe,
        dates[0].date(),
        dates[-1].date(),
        source=source,
        known_at=known,
        client=client,
    )

    grid = Grid(dates, len(universe), max((f.days or 0) for f in wanted))
    for back in {0, *(f.days for f in wanted if f.days is not None)}:
        grid.keys(back)  # filled before the threads share the grid
    end_day = int(day_numbers(dates[-1:].to_numpy())[0])

    def one_dataset(name: str) -> dict[str, Any]:
        events = Events(frames[name], name, universe, end_day)
        return {f.name: compute(f, events, grid) for f in wanted if f.dataset == name}

    # Datasets are independent, and numpy releases the GIL in its sorts, searches and
    # gathers: a thread per core computes them side by side (the same result in any order).
    columns: dict[str, Any] = {}
    workers = min(len(frames), os.cpu_count() or 1, _MAX_THREADS)
    if workers > 1:
        # Biggest datasets first, so that no thread is left with a big one at the end.
        order = sorted(frames, key=lambda n: -len(frames[n]))
        with ThreadPoolExecutor(workers, thread_name_prefix="mdframes-features") as pool:
            for part in pool.map(one_dataset, order):
                columns.update(part)
    else:
        for name in frames:
            columns.update(one_dataset(name))
    out = pd.DataFrame({f.name: columns[f.name] for f in wanted}, index=index)
    out.attrs = {"features": [f.name for f in wanted]}
    if known is not None:
        out.attrs["known_at"] = known
    return out
