"""One chunk of a panel: the checked request, the work of one set of symbols and its result.

:func:`compute` fetches each dataset once, runs the engine, marks what the datasets' history
does not cover and the symbols that failed. :mod:`~mdframes.features.panels.build` runs it once or
hands it to :mod:`~mdframes.features.panels.scale` per chunk on an executor; both import it from
here, so neither imports the other's callers.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..._memory import give_back, give_back_arrow
from ..._threads import threads
from ...errors import (
    DataQualityWarning,
    InvalidParameterError,
    SkippedSymbolsWarning,
    warn,
    warnings_from_threads,
    warnings_from_workers,
)
from ...params import check_symbols, to_date
from ...registry import REGISTRY
from .definitions import resolve_features
from .engine import Events, Grid, day_numbers, result_dtype
from .engine import compute as compute_feature
from .fetch import fetch
from .knowledge import VersionEvents, compute_row
from .reach import Reach, feature_columns, reaches
from .sources import ROW, Source, resolve_source
from .spec import Feature, check_errors, check_offset
from .unseen import window_span

__all__ = [
    "compute",
    "covered_from",
    "prepare",
    "with_coverage",
    "finish_attrs",
    "index_of",
    "dates_of",
    "Request",
    "ChunkResult",
    "reading_order",
]

_MAX_THREADS = 4
# A dataset's engine (its rows' arrays, ~ROW_BYTES a row, and its panel-sized ones,
# ~CELL_BYTES a cell and feature) of fewer bytes than GIVE_BACK_FROM leaves its freed pages
# to the allocators for the next dataset's read and engine: handing a few MiB back and
# faulting them in again was half the CPU of a short panel's reads (3 months of 500
# symbols from a lake: 155 -> 72 ms). A big one's go back (a panel's peak memory).
ROW_BYTES = 64
CELL_BYTES = 32
GIVE_BACK_FROM = 16 << 20


def dates_of(start: Any, end: Any, freq: Any) -> pd.DatetimeIndex:
    """The panel's dates: ``freq`` from ``start`` to ``end``, whole days only."""
    first, last = to_date(start, "start"), to_date(end, "end")
    if first > last:
        raise InvalidParameterError(f"start {first} is after end {last}", parameter="start")
    check_offset(freq)  # None too: pandas would take it for daily
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
    """A checked panel request: everything but the symbols is the same for every chunk.
    ``coverage`` is what a lake source synced (:class:`~.coverage.Coverage`; ``None``:
    everything asked)."""

    symbols: list[str]
    dates: pd.DatetimeIndex
    features: list[Feature]
    source: Source
    known_at: pd.Timestamp | str | None
    errors: str
    coverage: Any = None
    # Names this request to an executor that hashes its tasks' arguments (Dask's submit
    # does, with pure=True by default: pickling the coverage of every symbol again took
    # longer than the task). A panel reads a lake that changes: no two requests are the same.
    token: str = field(default_factory=lambda: uuid.uuid4().hex, repr=False, compare=False)
    # How many of the panel's tasks run at once on one machine (1: the panel alone): a chunk
    # uses that share of its machine's cores (mdframes._threads), set by scale.run_panel.
    share: int = 1

    def __dask_tokenize__(self) -> str:
        return self.token

    def part(self, symbols: list[str]) -> Request:
        """The request of one chunk of ``symbols``: its source and coverage only."""
        coverage = None if self.coverage is None else self.coverage.part(symbols)
        source = self.source.part(symbols)
        return Request(symbols, self.dates, self.features, source, self.known_at, self.errors,
                       coverage, share=self.share)  # fmt: skip


@dataclass
class ChunkResult:
    """What one chunk gives back: its rows (or none when written where computed), per feature
    the first date with a value, the non-null count and the rows left NA for lack of the
    lake's coverage, the failed symbols, and per dataset (``known_at="row"``) the earliest
    first sync of its symbols (ns, UTC) and the rows dated before their symbol's first sync.
    ``table``: the rows as a worker sends them back (Arrow columns, no index)."""

    frame: pd.DataFrame | None
    first: dict[str, pd.Timestamp | None]
    non_null: dict[str, int]
    cells: int
    failed: dict[str, str]
    relied: dict[str, tuple[int | None, int]]
    uncovered: dict[str, int] = field(default_factory=dict)
    table: Any = None


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
    """Every argument checked, and the source resolved once, before anything is read or
    requested."""
    wanted = resolve_features(features)
    universe = check_symbols(symbols)
    dates = dates_of(start, end, freq)
    errors = check_errors(errors)
    resolved, known = resolve_source(source, known_at, client)
    return Request(universe, dates, wanted, resolved, known, errors)


def with_coverage(request: Request) -> Request:
    """The request with what its source holds of each dataset and symbol (a lake's
    coverage), read once for every chunk; with ``errors="raise"``, ``NotInLakeError`` when
    the lake lacks a symbol a feature needs, before anything is computed."""
    if not len(request.dates):
        return request
    datasets = list(dict.fromkeys(f.dataset for f in request.features))
    request.coverage = request.source.coverage(datasets, request.symbols, request.known_at)
    if request.coverage is not None and request.errors == "raise":
        missing = request.coverage.error()
        if missing is not None:
            raise missing
    return request


def index_of(dates: pd.DatetimeIndex, symbols: list[str]) -> pd.MultiIndex:
    return pd.MultiIndex.from_product(
        [dates, pd.Index(symbols, dtype="string", name="symbol")], names=["date", "symbol"]
    )


def covered_from(feature: Feature) -> dt.date | None:
    """The first date the feature's dataset fully covers (sums and counts need their whole
    window inside the dataset's history)."""
    first = REGISTRY[feature.dataset].first_date
    if first is None:
        return None
    days = feature.days if feature.agg in ("sum", "count") else None
    return first + dt.timedelta(days=(days or 1) - 1)


def compute(request: Request, symbols: list[str]) -> ChunkResult:
    """The panel rows of ``symbols`` (all of the request's, or one chunk of them)."""
    wanted, dates = request.features, request.dates
    index = index_of(dates, symbols)
    if not len(dates):
        empty = pd.DataFrame(
            {f.name: pd.Series(dtype=result_dtype(f, False)) for f in wanted}, index=index
        )
        return ChunkResult(empty, dict.fromkeys(empty.columns), {}, 0, {}, {}, {})
    lookbacks = reaches(wanted)
    source = request.source
    reads = fetch(
        lookbacks,
        symbols,
        dates[0].date(),
        dates[-1].date(),
        source=source,
        known_at=request.known_at,
        errors=request.errors,
        coverage=request.coverage,
        order=reading_order(list(lookbacks), source.weights(list(lookbacks))),
    )
    row = request.known_at == ROW
    grid = Grid(dates, len(symbols), max((f.days or 0) for f in wanted))
    end_day = int(day_numbers(dates[-1:].to_numpy())[0])
    first_day = int(day_numbers(dates[:1].to_numpy())[0])

    relied: dict[str, tuple[int | None, int]] = {}
    big: set[str] = set()  # the datasets whose engines' pages go back to the system

    def one_dataset(name: str, held: list[pd.DataFrame]) -> dict[str, Any]:
        # The inputs come in a list emptied here: no caller's reference (an executor's work
        # item keeps its arguments until it ends) keeps them past their features.
        rows = [len(held[0])]  # the rows of its engine (a short panel's frames: fewer)
        out = dataset_columns(name, held.pop(), rows)
        features = sum(f.dataset == name for f in wanted)
        if rows[0] * ROW_BYTES + grid.size * CELL_BYTES * features >= GIVE_BACK_FROM:
            big.add(name)
            give_back()  # the engine's arrays and the inputs are gone: their pages go back
        return out

    def dataset_columns(name: str, inputs: pd.DataFrame, rows: list[int]) -> dict[str, Any]:
        mine = [f for f in wanted if f.dataset == name]
        if row:
            versions = VersionEvents(inputs, name, symbols, grid, list(REGISTRY[name].record_id))
            relied[name] = versions.knowledge(dates)
            if not versions.as_of_anchor:
                return {f.name: compute_row(f, versions, grid) for f in mine}
            # The visible versions, with the columns of a read of the latest versions.
            frame = versions.frame.drop(columns=["_sync_id", "_version"], errors="ignore")
            if len(versions.take) < len(frame):
                frame = frame.iloc[np.sort(versions.take)]
            events = Events(frame, name, symbols, end_day)
            return {f.name: compute_feature(f, events, grid) for f in mine}
        reach = lookbacks[name]
        # Rows public before the longest window enter only as latest values (reach.py).
        cut = None if reach.whole else first_day - reach.days
        events = Events(
            inputs, name, symbols, end_day, cut, reach.latest, _columns(reach, mine, inputs),
            reach=max((f.days or 0) for f in mine),
        )  # fmt: skip
        rows[0] = len(events.frame)
        return {f.name: compute_feature(f, events, grid) for f in mine}

    columns: dict[str, Any] = {}
    failed: dict[str, dict[str, str]] = {name: {} for name in lookbacks}  # in their order
    if request.source.overlaps and len(lookbacks) > 1 and threads(2) > 1:
        # Reading and computing overlap: the next dataset is read (Arrow decodes outside
        # the GIL; the service answers over the network) while the engine computes the one
        # read before, in a thread. One dataset is computed at a time: a dataset's engine
        # holds arrays the size of its rows and of the panel, and two big ones side by side
        # (sentiment and put/call ratios) were a third of a panel's peak memory. Each
        # dataset's inputs are freed as soon as its features are done.
        with (
            warnings_from_workers() as context,
            ThreadPoolExecutor(1, thread_name_prefix="mdframes-features") as pool,
        ):
            running = None
            computing = ""
            for name, inputs, bad in reads:
                failed[name] = bad
                if running is not None:
                    columns.update(running.result())
                    # The inputs were read here and freed in the worker: Arrow's allocator
                    # takes back their pages from this thread only, before the next read
                    # (a 2,000-symbol sentiment read's ~50 MiB stayed through the next
                    # dataset's engine).
                    if computing in big:
                        give_back_arrow()
                held = [inputs]
                del inputs
                running = pool.submit(context().run, one_dataset, name, held)
                computing = name
                del held
            if running is not None:
                columns.update(running.result())
            del running
    elif request.source.overlaps:  # one thread (a chunk's share of its machine): in turn
        for name, inputs, bad in reads:
            failed[name] = bad
            held = [inputs]
            del inputs
            columns.update(one_dataset(name, held))
    else:
        frames: dict[str, pd.DataFrame] = {}
        for name, inputs, bad in reads:
            frames[name], failed[name] = inputs, bad

        def next_dataset(name: str) -> dict[str, Any]:
            # The dataset's inputs leave the dict: freed as soon as its features are done.
            return one_dataset(name, [frames.pop(name)])

        # Datasets are independent, and numpy releases the GIL in its sorts, searches and
        # gathers: a thread per core computes them side by side (the same result in any
        # order); a chunk sharing its machine with other tasks uses its share of the cores
        # (_threads).
        workers = min(len(frames), threads(_MAX_THREADS))
        if workers > 1:
            # Biggest datasets first, so that no thread is left with a big one at the end.
            order = sorted(frames, key=lambda n: -len(frames[n]))
            with (
                warnings_from_threads(),
                ThreadPoolExecutor(workers, thread_name_prefix="mdframes-features") as pool,
            ):
                runs = [pool.submit(contextvars.copy_context().run, next_dataset, n) for n in order]
                for run in runs:
                    columns.update(run.result())
        else:
            for name in list(frames):
                columns.update(next_dataset(name))
    # NA is set in the engine's own arrays before they become the frame's blocks (as they
    # are: no copy into one 2-D block); a frame's .loc per feature cost more than the mask.
    # Coverage: NA where the dataset has no history for the row's window.
    row_dates = np.repeat(dates.to_numpy(), len(symbols))
    for f in wanted:
        covered = covered_from(f)
        if covered is not None:
            _blank(columns[f.name], row_dates < np.datetime64(covered, "ns"))
    # Failed symbols keep their rows, NA in the features of the datasets that failed them.
    failed_text: dict[str, str] = {}
    for name, by_symbol in failed.items():
        if not by_symbol:
            continue
        for symbol, text in by_symbol.items():
            failed_text.setdefault(symbol, text)
        hit = np.tile(np.isin(np.asarray(symbols, dtype=object), list(by_symbol)), len(dates))
        for f in wanted:
            if f.dataset == name:
                _blank(columns[f.name], hit)
    uncovered = _uncovered(columns, request, symbols, failed_text)
    failed_text = {s: failed_text[s] for s in symbols if s in failed_text}
    first, non_null = _stats(columns, dates, len(symbols))
    out = pd.DataFrame({f.name: columns.pop(f.name) for f in wanted}, index=index, copy=False)
    relied = {name: relied[name] for name in lookbacks if name in relied}
    return ChunkResult(out, first, non_null, len(out), failed_text, relied, uncovered)


def _columns(reach: Reach, features: list[Feature], frame: pd.DataFrame) -> list[str] | None:
    """The columns of ``frame`` the features of one dataset and the point-in-time rules read
    (``reach.columns``), where the frame has each of them and every column a feature names:
    of a short panel over a long history the engine then copies these only (else every
    column, and a missing one's error names them all)."""
    if reach.columns is None:
        return None
    named = feature_columns(features)
    have = set(frame.columns)
    if named is None or not set(named) <= have:
        return None
    return [c for c in reach.columns if c in have]


def reading_order(names: list[str], weights: dict[str, int] | None) -> list[str]:
    """The order a panel reads its datasets in: the biggest, the smallest, the second
    biggest, the second smallest... (``weights``: their sizes; ``None``: as given). A
    dataset is computed while the next is read, so a big one's engine meets a small one's
    read, and a big read a small engine: two big ones never side by side."""
    if not weights:
        return names
    by_size = sorted(names, key=lambda n: -weights.get(n, 0))  # stable: ties as given
    out = []
    while by_size:
        out.append(by_size.pop(0))
        if by_size:
            out.append(by_size.pop())
    return out


def _blank(values: Any, mask: np.ndarray) -> None:
    """NA at ``mask`` in a feature's column (the engine's own array: float64 or Int64)."""
    if not mask.any():
        return
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        values[mask] = np.nan
    else:
        values[mask] = pd.NA


def _uncovered(
    columns: dict[str, Any], request: Request, symbols: list[str], failed_text: dict[str, str]
) -> dict[str, int]:
    """NA where the lake did not sync a feature's window for the row's symbol (the symbols
    it never holds: every row, each named in ``failed_text``); the rows so left NA per
    feature."""
    coverage = request.coverage
    if coverage is None:
        return {}
    for f in request.features:
        for symbol in coverage.failed(f.dataset) & set(symbols):
            failed_text.setdefault(symbol, coverage.reason(symbol))
    days = day_numbers(request.dates.to_numpy())
    counts = {}
    masks: dict[tuple[str, int], np.ndarray] = {}  # features of one dataset and span share one
    for f in request.features:
        key = (f.dataset, window_span(f))
        if key not in masks:
            masks[key] = ~coverage.covered(f, symbols, days).ravel()  # dates outer, as rows
        _blank(columns[f.name], masks[key])
        counts[f.name] = int(masks[key].sum())
    return counts


def _stats(
    columns: dict[str, Any], dates: pd.DatetimeIndex, n_symbols: int
) -> tuple[dict[str, pd.Timestamp | None], dict[str, int]]:
    first: dict[str, pd.Timestamp | None] = {}
    non_null: dict[str, int] = {}
    for name, values in columns.items():
        has = ~pd.isna(values).reshape(len(dates), n_symbols)
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
        firsts = [day for r in results if (day := r.first.get(name)) is not None]
        count = sum(r.non_null.get(name, 0) for r in results)
        coverage[name] = {
            "first": min(firsts) if firsts else None,
            "non_null": count / cells if cells else 0.0,
            "uncovered": sum(r.uncovered.get(name, 0) for r in results),
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
        knowledge = {}
        for name in dict.fromkeys(f.dataset for f in request.features):
            floors = [ns for r in results if (ns := r.relied.get(name, (None, 0))[0]) is not None]
            first_sync = pd.Timestamp(min(floors), tz="UTC") if floors else None
            rows = sum(r.relied.get(name, (None, 0))[1] for r in results)
            knowledge[name] = {"first_sync": _iso(first_sync), "rows": rows}
        attrs["knowledge"] = knowledge
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
