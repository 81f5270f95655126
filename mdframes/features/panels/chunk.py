"""One chunk of a panel: the checked request, the work of one set of symbols and its result.

:func:`compute` fetches each dataset once, runs the engine, marks what the datasets' history
does not cover and the symbols that failed. :mod:`~mdframes.features.panels.build` runs it once or
hands it to :mod:`~mdframes.features.panels.scale` per chunk on an executor; both import it from
here, so neither imports the other's callers.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..._memory import give_back, give_back_arrow
from ...errors import (
    DataQualityWarning,
    InvalidParameterError,
    SkippedSymbolsWarning,
    warn,
)
from ...params import check_symbols, to_date
from ...registry import REGISTRY
from .definitions import resolve_features
from .engine import Events, Grid, day_numbers, result_dtype
from .engine import compute as compute_feature
from .fetch import fetch
from .knowledge import VersionEvents, compute_row
from .reach import Reach, feature_columns, reaches
from .schedule import schedule_for
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
    "PanelRequest",
    "ChunkResult",
    "reading_order",
]

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
class PanelRequest:
    """A checked panel request: everything but the symbols is the same for every chunk.
    ``coverage`` is what a lake source synced (:class:`~.unseen.Coverage`; ``None``:
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

    def part(self, symbols: list[str]) -> PanelRequest:
        """The request of one chunk of ``symbols``: its source and coverage only."""
        coverage = None if self.coverage is None else self.coverage.part(symbols)
        source = self.source.part(symbols)
        return PanelRequest(symbols, self.dates, self.features, source, self.known_at, self.errors,
                       coverage, share=self.share)  # fmt: skip


@dataclass
class ChunkResult:
    """What one chunk gives back: its rows (or none when written where computed), per feature
    the first date with a value, the non-null count and the rows left NA for lack of the
    lake's coverage, the failed symbols, and per dataset (``known_at="row"``) the earliest
    first sync of its symbols (ns, UTC) and the rows dated before their symbol's first sync.
    ``table``: the rows as a worker sends them back (Arrow columns, no index); ``digest``: the
    SHA-256 of the part file written from them (``write_panel``), for the marker."""

    frame: pd.DataFrame | None
    first: dict[str, pd.Timestamp | None]
    non_null: dict[str, int]
    cells: int
    failed: dict[str, str]
    relied: dict[str, tuple[int | None, int]]
    uncovered: dict[str, int] = field(default_factory=dict)
    table: Any = None
    digest: str = ""


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
) -> PanelRequest:
    """Every argument checked, and the source resolved once, before anything is read or
    requested."""
    wanted = resolve_features(features)
    universe = check_symbols(symbols)
    dates = dates_of(start, end, freq)
    errors = check_errors(errors)
    resolved, known = resolve_source(source, known_at, client)
    return PanelRequest(universe, dates, wanted, resolved, known, errors)


def with_coverage(request: PanelRequest) -> PanelRequest:
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


def compute(request: PanelRequest, symbols: list[str]) -> ChunkResult:
    """The panel rows of ``symbols`` (all of the request's, or one chunk of them): the
    datasets' lookbacks, their reads, computed on the source's schedule, the masks of what
    is not covered or failed, and the columns' stats."""
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
        lookbacks, symbols, dates[0].date(), dates[-1].date(), source=source,
        known_at=request.known_at, errors=request.errors, coverage=request.coverage,
        order=reading_order(list(lookbacks), source.weights(list(lookbacks))),
    )  # fmt: skip
    work = DatasetWork(request, symbols, lookbacks)
    failed: dict[str, dict[str, str]] = {name: {} for name in lookbacks}  # in their order
    columns = schedule_for(source, len(lookbacks)).run(reads, work, failed)
    failed_text = _masks(columns, request, symbols, failed)
    uncovered = _uncovered(columns, request, symbols, failed_text)
    failed_text = {s: failed_text[s] for s in symbols if s in failed_text}
    first, non_null = _stats(columns, dates, len(symbols))
    out = pd.DataFrame({f.name: columns.pop(f.name) for f in wanted}, index=index, copy=False)
    relied = {name: work.relied[name] for name in lookbacks if name in work.relied}
    return ChunkResult(out, first, non_null, len(out), failed_text, relied, uncovered)


class DatasetWork:
    """One dataset's features of a chunk from its inputs, by the engine (latest versions,
    or every version with ``known_at="row"``), and its memory handed back when it was big."""

    def __init__(self, request: PanelRequest, symbols: list[str], lookbacks: dict[str, Reach]):
        self.request, self.symbols, self.lookbacks = request, symbols, lookbacks
        dates = request.dates
        self.grid = Grid(dates, len(symbols), max((f.days or 0) for f in request.features))
        self.end_day = int(day_numbers(dates[-1:].to_numpy())[0])
        self.first_day = int(day_numbers(dates[:1].to_numpy())[0])
        self.relied: dict[str, tuple[int | None, int]] = {}
        self.big: set[str] = set()  # the datasets whose engines' pages go back to the system

    def columns(self, name: str, held: list[pd.DataFrame]) -> dict[str, Any]:
        """The features of ``name``. The inputs come in a list emptied here: no caller's
        reference (an executor's work item keeps its arguments until it ends) keeps them
        past their features."""
        rows = [len(held[0])]  # the rows of its engine (a short panel's frames: fewer)
        out = self._computed(name, held.pop(), rows)
        self._hand_back(name, rows[0])
        return out

    def _computed(self, name: str, inputs: pd.DataFrame, rows: list[int]) -> dict[str, Any]:
        mine = [f for f in self.request.features if f.dataset == name]
        symbols, grid = self.symbols, self.grid
        if self.request.known_at == ROW:
            versions = VersionEvents(inputs, name, symbols, grid, list(REGISTRY[name].record_id))
            self.relied[name] = versions.knowledge(self.request.dates)
            if not versions.as_of_anchor:
                return {f.name: compute_row(f, versions, grid) for f in mine}
            # The visible versions, with the columns of a read of the latest versions.
            frame = versions.frame.drop(columns=["_sync_id", "_version"], errors="ignore")
            if len(versions.take) < len(frame):
                frame = frame.iloc[np.sort(versions.take)]
            events = Events(frame, name, symbols, self.end_day)
            return {f.name: compute_feature(f, events, grid) for f in mine}
        reach = self.lookbacks[name]
        # Rows public before the longest window enter only as latest values (reach.py).
        cut = None if reach.whole else self.first_day - reach.days
        events = Events(
            inputs, name, symbols, self.end_day, cut, reach.latest, _columns(reach, mine, inputs),
            reach=max((f.days or 0) for f in mine),
        )  # fmt: skip
        rows[0] = len(events.frame)
        return {f.name: compute_feature(f, events, grid) for f in mine}

    def _hand_back(self, name: str, rows: int) -> None:
        """The engine's arrays and the inputs are gone: their pages go back to the system
        when they were big (``GIVE_BACK_FROM``)."""
        features = sum(f.dataset == name for f in self.request.features)
        if rows * ROW_BYTES + self.grid.size * CELL_BYTES * features >= GIVE_BACK_FROM:
            self.big.add(name)
            give_back()

    def hand_back_reads(self, name: str) -> None:
        """Arrow's pages of a big dataset's read, freed in another thread, taken back from
        this one before the next read (a 2,000-symbol sentiment read's ~50 MiB stayed
        through the next dataset's engine)."""
        if name in self.big:
            give_back_arrow()


def _masks(
    columns: dict[str, Any],
    request: PanelRequest,
    symbols: list[str],
    failed: dict[str, dict[str, str]],
) -> dict[str, str]:
    """NA where a dataset has no history for the row's window, and in the features of the
    datasets that failed a symbol (its rows kept); the failed symbols' first error text.
    NA is set in the engine's own arrays before they become the frame's blocks (as they
    are: no copy into one 2-D block); a frame's .loc per feature cost more than the mask."""
    dates = request.dates
    row_dates = np.repeat(dates.to_numpy(), len(symbols))
    for f in request.features:
        covered = covered_from(f)
        if covered is not None:
            _blank(columns[f.name], row_dates < np.datetime64(covered, "ns"))
    failed_text: dict[str, str] = {}
    for name, by_symbol in failed.items():
        if not by_symbol:
            continue
        for symbol, text in by_symbol.items():
            failed_text.setdefault(symbol, text)
        hit = np.tile(np.isin(np.asarray(symbols, dtype=object), list(by_symbol)), len(dates))
        for f in request.features:
            if f.dataset == name:
                _blank(columns[f.name], hit)
    return failed_text


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
    if mask.any():
        floats = isinstance(values, np.ndarray) and values.dtype.kind == "f"
        values[mask] = np.nan if floats else pd.NA


def _uncovered(
    columns: dict[str, Any], request: PanelRequest, symbols: list[str], failed_text: dict[str, str]
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


def finish_attrs(request: PanelRequest, results: list[ChunkResult]) -> dict[str, Any]:
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
