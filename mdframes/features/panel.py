"""``panel`` and ``write_panel``: point-in-time features for a universe, one row per (date,
symbol).

The work of one set of symbols is :func:`compute`: fetch each dataset once, run the engine,
mark what the datasets' history does not cover and the symbols that failed. ``panel`` runs it
once, or per chunk of symbols on an executor (:mod:`mdframes.features.scale`); ``write_panel``
runs it per chunk and writes each chunk's rows where it was computed.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataQualityWarning, InvalidParameterError, SkippedSymbolsWarning, warn
from ..params import check_symbols, to_date
from .engine import Events, Grid, day_numbers, result_dtype
from .engine import compute as compute_feature
from .knowledge import VersionEvents, compute_row, relied_rows
from .sources import ROW, check_source, fetch, first_sync, history_start, record_key
from .spec import Feature, check_errors, resolve_features

__all__ = ["panel", "write_panel", "compute", "Request", "ChunkResult", "resolve_features"]

_MAX_THREADS = 4


def dates_of(start: Any, end: Any, freq: Any) -> pd.DatetimeIndex:
    """The panel's dates: ``freq`` from ``start`` to ``end``, whole days only."""
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


@dataclass
class Request:
    """A checked panel request: everything but the symbols is the same for every chunk."""

    symbols: list[str]
    dates: pd.DatetimeIndex
    features: list[Feature]
    source: Any
    known_at: pd.Timestamp | str | None
    errors: str
    client: Any = None
    # known_at="row": per dataset, when the lake's first sync of it ended.
    floors: dict[str, pd.Timestamp | None] = field(default_factory=dict)


@dataclass
class ChunkResult:
    """What one chunk gives back: its rows (or none when written where computed), per feature
    the first date with a value and the non-null count, the failed symbols, and per dataset
    the rows that used the first sync."""

    frame: pd.DataFrame | None
    first: dict[str, pd.Timestamp | None]
    non_null: dict[str, int]
    cells: int
    failed: dict[str, str]
    relied: dict[str, int]


def prepare(
    symbols: Any,
    start: Any,
    end: Any,
    features: Any,
    *,
    freq: Any,
    source: Any,
    known_at: Any,
    errors: Any,
    client: Any,
) -> Request:
    """Every argument checked, before anything is read or requested."""
    wanted = resolve_features(features)
    universe = check_symbols(symbols)
    dates = dates_of(start, end, freq)
    errors = check_errors(errors)
    known = check_source(source, known_at, client)
    request = Request(universe, dates, wanted, source, known, errors, client)
    if known == ROW and len(dates):
        request.floors = {
            name: first_sync(source, name) for name in dict.fromkeys(f.dataset for f in wanted)
        }
    return request


def _index(dates: pd.DatetimeIndex, symbols: list[str]) -> pd.MultiIndex:
    return pd.MultiIndex.from_product(
        [dates, pd.Index(symbols, dtype="string", name="symbol")], names=["date", "symbol"]
    )


def _covered_from(feature: Feature) -> dt.date | None:
    """The first date the feature's dataset fully covers (sums and counts need their whole
    window inside the dataset's history)."""
    first = history_start(feature.dataset)
    if first is None:
        return None
    days = feature.days if feature.agg in ("sum", "count") else None
    return first + dt.timedelta(days=(days or 1) - 1)


def compute(request: Request, symbols: list[str]) -> ChunkResult:
    """The panel rows of ``symbols`` (all of the request's, or one chunk of them)."""
    wanted, dates = request.features, request.dates
    index = _index(dates, symbols)
    if not len(dates):
        empty = pd.DataFrame(
            {f.name: pd.Series(dtype=result_dtype(f, False)) for f in wanted}, index=index
        )
        return ChunkResult(empty, dict.fromkeys(empty.columns), {}, 0, {}, {})
    lookbacks: dict[str, int | None] = {}
    for f in wanted:
        current = lookbacks.get(f.dataset, 0)
        lookbacks[f.dataset] = (
            None if current is None or f.lookback is None else max(current, f.lookback)
        )
    frames, failed = fetch(
        lookbacks,
        symbols,
        dates[0].date(),
        dates[-1].date(),
        source=request.source,
        known_at=request.known_at,
        errors=request.errors,
        client=request.client,
    )
    row = request.known_at == ROW
    grid = Grid(dates, len(symbols), max((f.days or 0) for f in wanted))
    for back in {0, *(f.days for f in wanted if f.days is not None)}:
        grid.keys(back)  # filled before the threads share the grid
    end_day = int(day_numbers(dates[-1:].to_numpy())[0])

    def one_dataset(name: str) -> dict[str, Any]:
        mine = [f for f in wanted if f.dataset == name]
        if row:
            versions = VersionEvents(
                frames[name], name, symbols, grid, record_key(name), request.floors.get(name)
            )
            if not versions.as_of_anchor:
                return {f.name: compute_row(f, versions, grid) for f in mine}
            frame = versions.frame.iloc[np.sort(versions.take)]  # the visible versions
            events = Events(frame, name, symbols, end_day)
            return {f.name: compute_feature(f, events, grid) for f in mine}
        events = Events(frames[name], name, symbols, end_day)
        return {f.name: compute_feature(f, events, grid) for f in mine}

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

    # Coverage: NA where the dataset has no history for the row's window.
    row_dates = np.repeat(dates.to_numpy(), len(symbols))
    for f in wanted:
        covered = _covered_from(f)
        if covered is not None:
            out.loc[row_dates < np.datetime64(covered, "ns"), f.name] = pd.NA
    # Failed symbols keep their rows, NA in the features of the datasets that failed them.
    failed_text: dict[str, str] = {}
    row_symbols = np.tile(np.asarray(symbols, dtype=object), len(dates))
    for name, by_symbol in failed.items():
        if not by_symbol:
            continue
        for symbol, text in by_symbol.items():
            failed_text.setdefault(symbol, text)
        hit = np.isin(row_symbols, list(by_symbol))
        for f in wanted:
            if f.dataset == name:
                out.loc[hit, f.name] = pd.NA
    failed_text = {s: failed_text[s] for s in symbols if s in failed_text}
    first, non_null = _stats(out, dates, len(symbols))
    relied = (
        {n: relied_rows(request.floors.get(n), dates, len(symbols)) for n in lookbacks}
        if row
        else {}
    )
    return ChunkResult(out, first, non_null, len(out), failed_text, relied)


def _stats(
    out: pd.DataFrame, dates: pd.DatetimeIndex, n_symbols: int
) -> tuple[dict[str, pd.Timestamp | None], dict[str, int]]:
    first: dict[str, pd.Timestamp | None] = {}
    non_null: dict[str, int] = {}
    for name in out.columns:
        has = out[name].notna().to_numpy().reshape(len(dates), n_symbols)
        non_null[name] = int(has.sum())
        any_date = np.flatnonzero(has.any(axis=1))
        first[name] = dates[any_date[0]] if len(any_date) else None
    return first, non_null


def _iso(value: Any) -> Any:
    """A date as ``YYYY-MM-DD``, an instant as ISO 8601 (UTC); anything else as it is."""
    if isinstance(value, pd.Timestamp):
        if value.tzinfo is None and value == value.normalize():
            return value.date().isoformat()
        return value.isoformat()
    return value


def finish_attrs(request: Request, results: list[ChunkResult]) -> dict[str, Any]:
    """The panel's attrs from its chunks' results (the same for one chunk or many), and the
    warnings: features with no value at all, symbols skipped."""
    names = [f.name for f in request.features]
    cells = sum(r.cells for r in results)
    coverage: dict[str, dict[str, Any]] = {}
    for name in names:
        firsts = [f for r in results if (f := r.first.get(name)) is not None]
        count = sum(r.non_null.get(name, 0) for r in results)
        coverage[name] = {
            "first": min(firsts) if firsts else None,
            "non_null": count / cells if cells else 0.0,
        }
    failed: dict[str, str] = {}
    for r in results:
        failed.update(r.failed)
    empty = [n for n in names if coverage[n]["first"] is None]
    for entry in coverage.values():  # attrs stay JSON: panel.to_parquet() writes them as such
        entry["first"] = _iso(entry["first"])
    attrs: dict[str, Any] = {"features": names, "coverage": coverage, "failed": failed}
    if request.known_at is not None:
        attrs["known_at"] = _iso(request.known_at)
    if request.known_at == ROW:
        attrs["knowledge"] = {
            name: {
                "first_sync": _iso(floor),
                "rows": sum(r.relied.get(name, 0) for r in results),
            }
            for name, floor in request.floors.items()
        }
    if empty and cells:
        warn(
            f"features with no value at all in this panel: {', '.join(empty)} (their "
            "datasets have no rows for these symbols and dates; see panel.attrs['coverage'])",
            DataQualityWarning,
        )
    if failed:
        warn(
            f"{len(failed)} symbol(s) failed and kept NA features: {', '.join(failed)} "
            "(errors in panel.attrs['failed'])",
            SkippedSymbolsWarning,
        )
    return attrs


def panel(
    symbols: str | Iterable[str],
    start: Any,
    end: Any,
    features: Iterable[str | Feature] | str | Feature | None = None,
    *,
    freq: Any = "B",
    source: Any = None,
    known_at: Any = None,
    errors: str = "raise",
    executor: Any = None,
    client: Any = None,
) -> pd.DataFrame:
    """Point-in-time features, one row per (date, symbol), ready for a model.

    The row for date D uses only what was public by the end of D: rows whose anchor date is
    on or before D (a timestamp: before D + 1 day, UTC), null anchors as in
    :func:`mdframes.point_in_time`. Windows are calendar days ``(D - n, D]``; an empty window
    gives 0 for sums and counts and NA for means and last values. Where a dataset has no
    history (app ratings start on 2026-09-03) its features are NA; ``attrs["coverage"]`` says
    per feature the first date with a value and the share of non-null rows.

    Parameters
    ----------
    symbols : str or list of str
        The universe (normalised like the loaders': stripped, upper-cased).
    start, end : str, date, datetime or Timestamp
        First and last panel date (inclusive).
    features : str, Feature or list of them, optional
        Catalog names (:func:`catalog`) and custom :class:`Feature` objects; default: the
        whole catalog.
    freq : str
        A pandas frequency for the dates (default ``"B"``, Monday to Friday).
    source : None, dict or lake
        ``None``: load through ``client`` (concurrent per dataset, cached); a dict of
        loader-shaped frames by dataset name (``{"insider_trading": df, ...}``); or a lake
        (``md.Lake`` or any object with its ``read``).
    known_at : str, datetime, Timestamp or "row", optional
        With a lake: use only the versions fetched by then (a date alone: the end of that
        day); ``"row"``: the row for D uses the versions fetched by the end of D.
    errors : {"raise", "skip"}
        A symbol the service does not know (or that fails): raise, or keep its rows with NA
        features and list it in ``attrs["failed"]``.
    executor : concurrent.futures.Executor, optional
        Compute chunks of symbols in parallel (a ``ProcessPoolExecutor``, Dask's
        ``Client.get_executor()``, ...); ``source`` must then be a lake or a dict of frames.
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
    from .scale import check_executor, run_panel

    request = prepare(
        symbols,
        start,
        end,
        features,
        freq=freq,
        source=source,
        known_at=known_at,
        errors=errors,
        client=client,
    )
    if executor is None:
        result = compute(request, request.symbols)
        out = result.frame
        assert out is not None
        results = [result]
    else:
        check_executor(executor, request)
        out, results = run_panel(executor, request)
    out.attrs.update(finish_attrs(request, results))
    return out


def write_panel(
    path: str | os.PathLike[str],
    symbols: str | Iterable[str],
    start: Any,
    end: Any,
    features: Iterable[str | Feature] | str | Feature | None = None,
    *,
    freq: Any = "B",
    source: Any = None,
    known_at: Any = None,
    errors: str = "raise",
    executor: Any = None,
    chunk: int = 250,
) -> str:
    """Write the panel to a Parquet dataset at ``path``, one file per chunk of symbols,
    each written where it was computed (never the whole panel in one process).

    ``pd.read_parquet(path)`` (DuckDB, Polars, Dask) reads back the rows of
    ``panel(...)`` with the same arguments, ``date`` and ``symbol`` as columns, grouped by
    chunk (sort by ``date`` to get the panel's order).

    Parameters
    ----------
    path : str or PathLike
        A folder (created; it must not hold files yet) or an object-store URI
        (``s3://bucket/prefix``, as pyarrow reads it).
    symbols, start, end, features, freq, source, known_at, errors, executor
        As for :func:`panel`.
    chunk : int
        Symbols per file (and per task on ``executor``).

    Returns
    -------
    str
        ``path``.

    Examples
    --------
    >>> from concurrent.futures import ProcessPoolExecutor
    >>> with ProcessPoolExecutor(2) as pool:                          # doctest: +SKIP
    ...     md.features.write_panel("panel/", symbols, "2025-01-01", "2026-11-30",
    ...                             source=md.Lake("lake"), executor=pool)
    """
    from .scale import check_executor, check_target, run_writes

    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise InvalidParameterError(
            f"chunk must be a whole number of symbols >= 1, got {chunk!r}", parameter="chunk"
        )
    request = prepare(
        symbols,
        start,
        end,
        features,
        freq=freq,
        source=source,
        known_at=known_at,
        errors=errors,
        client=None,
    )
    if executor is not None:
        check_executor(executor, request)
    target = check_target(path)
    results = run_writes(executor, request, target, chunk)
    finish_attrs(request, results)
    return os.fspath(path) if not isinstance(path, str) else path
