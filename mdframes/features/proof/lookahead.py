"""The audit's ``look_ahead`` check: sampled rows of a set recomputed, cell by cell, from the
source cut at each row's knowledge (:mod:`.recompute`), and compared with the set's."""

from __future__ import annotations

import datetime as dt
import warnings
from typing import Any

import numpy as np
import pandas as pd

from ...registry import REGISTRY
from ..panels.reach import read_columns
from ..panels.sources import ROW, LakeSource, Source
from ..panels.spec import Feature
from ..panels.unseen import Coverage, lake_coverage
from .outcome import LISTED, NS_PER_DAY, CheckResult, skip
from .recompute import AuditInput, Known

_RTOL = 1e-9


def look_ahead(
    ts: Any,
    attrs: dict[str, Any],
    source: Source | None,
    features: list[Feature],
    sample: int,
    seed: int,
) -> CheckResult:
    if source is None:
        return skip(
            "no source that can be cut at each row's knowledge (the service keeps no "
            "history): pass source= the lake or the frames the set was made from"
        )
    names = [f.name for f in features if f.name in ts.X.columns]
    extra = [c for c in ts.X.columns if c not in names]
    if not len(ts.X) or not names or sample == 0:
        return skip("no rows, no known features or sample=0: nothing recomputed")
    by_dataset: dict[str, list[Feature]] = {}
    for f in features:
        if f.name in names:
            by_dataset.setdefault(f.dataset, []).append(f)
    rows = _Sample(ts, attrs, names, sample, seed, source, list(by_dataset))
    failures: list[dict[str, Any]] = []
    bad = 0
    for dataset, mine in by_dataset.items():
        expected = rows.recompute(dataset, mine)
        bad += rows.compare(expected, mine, failures)
    cells = len(rows.picks) * len(names)
    note = f"; not recomputed (not features of the set): {', '.join(extra)}" if extra else ""
    if bad:
        named = sorted({str(f["feature"]) for f in failures})
        return CheckResult(
            "fail",
            f"{bad} of {cells} cells ({len(rows.picks)} rows) differ from the source cut at "
            f"each row's knowledge: {', '.join(named)}{note}",
            bad,
            failures,
        )
    cut = "versions known by the end of each row" if rows.row else rows.known_at
    return CheckResult(
        "pass",
        f"{len(rows.picks)} rows x {len(names)} features recomputed from the source cut at each "
        f"row's knowledge ({cut or 'latest versions'}){note}",
        cells,
        [],
    )


class _Sample:
    """The rows ``look_ahead`` recomputes (drawn with ``seed``), what each may know, and the
    lake's coverage of their symbols (``None``: not a lake)."""

    def __init__(
        self, ts: Any, attrs: dict[str, Any], names: list[str], sample: int, seed: int,
        source: Source, datasets: list[str],
    ) -> None:  # fmt: skip
        rng = np.random.default_rng(seed)
        self.picks = np.sort(rng.choice(len(ts.X), size=min(int(sample), len(ts.X)), replace=False))
        index = ts.X.index[self.picks]
        self.dates = pd.DatetimeIndex(index.get_level_values(0))
        self.symbols = [str(s) for s in index.get_level_values(1)]
        self.wanted = list(dict.fromkeys(self.symbols))
        self.known_at = ts.info.get("known_at")
        self.row = self.known_at == ROW
        self.cut_known = None if self.known_at in (None, ROW) else pd.Timestamp(self.known_at)
        self.failed = set(attrs.get("failed", {}))
        rows = ts.X.iloc[self.picks]  # the sampled rows only, before any conversion
        self.recorded = {n: rows[n].to_numpy(dtype="float64", na_value=np.nan) for n in names}
        self.source = source
        self.coverage = None
        if isinstance(source, LakeSource):
            bases = list(dict.fromkeys(REGISTRY[d].base for d in datasets))
            # As the panel judged it: the coverage as it stood at the set's knowledge time.
            knowing = ROW if self.row else self.cut_known
            self.coverage = lake_coverage(source.lake, bases, self.wanted, knowing)
        self.stamps = self.dates.asi8  # ns since the epoch (UTC)
        self.row_days = self.stamps // NS_PER_DAY
        place = {s: i for i, s in enumerate(self.wanted)}
        self.columns = np.asarray([place[s] for s in self.symbols], dtype=np.int64)

    def read(self, dataset: str, mine: list[Feature]) -> AuditInput:
        """The dataset's rows of the sampled symbols the source can give, as the panel read
        them (from each feature's lookback; versions by the set's knowledge)."""
        first_date, last_date = self.dates.min().date(), self.dates.max().date()
        lookback: int | None = 0
        for f in mine:
            lookback = None if lookback is None or f.lookback is None else max(lookback, f.lookback)
        wanted, ds = self.wanted, REGISTRY[dataset]
        readable = wanted if self.coverage is None else self.coverage.readable(dataset, wanted)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frame, _ = self.source.read(
                dataset, readable, ds.load_start(first_date, lookback), last_date,
                known_at=ROW if self.row else self.cut_known, errors="skip",
                columns=read_columns(dataset, mine),  # what the features and pit read
                public_from=ds.public_start(first_date, lookback),
            )  # fmt: skip
        return AuditInput(frame, dataset, readable, self.row)

    def allowed(self, data: AuditInput, mine: list[Feature]) -> np.ndarray:
        """Which cells may have a value at all: the window inside the dataset's history and,
        with a lake, its coverage (else NA by definition, CONTRACT §11, §11.1)."""
        allowed = np.ones((len(self.picks), len(mine)), dtype=bool)
        for j, f in enumerate(mine):
            allowed[:, j] = _covered(f, self.coverage, self.wanted, self.row_days, self.columns)
        allowed[[s in self.failed or s not in data.ranked for s in self.symbols]] = False
        return allowed

    def recompute(self, dataset: str, mine: list[Feature]) -> np.ndarray:
        """The features of one dataset on the sampled rows (rows x features; NaN: NA),
        each cell from the rows its row may know."""
        data = self.read(dataset, mine)
        floors = {s: data.first_sync_end(s) for s in data.ranked} if self.row else {}
        allowed = self.allowed(data, mine)
        expected = np.full((len(self.picks), len(mine)), np.nan)
        known: dict[tuple[str, int | None], Known] = {}
        for k in np.flatnonzero(allowed.any(axis=1)):
            symbol, day = self.symbols[k], int(self.row_days[k])
            cutoff = None
            if self.row:
                end_of_day = int(self.stamps[k]) + NS_PER_DAY - 1
                floor = floors.get(symbol)
                cutoff = max(end_of_day, floor if floor is not None else end_of_day)
            key = (symbol, cutoff)
            if key not in known:
                span = data.spans.get(symbol) if cutoff is None and data.spans else None
                known[key] = Known(data, data.known(symbol, cutoff), span)
            for j, f in enumerate(mine):
                if allowed[k, j]:
                    expected[k, j] = known[key].value(f, day)
        return expected

    def compare(
        self, expected: np.ndarray, mine: list[Feature], failures: list[dict[str, Any]]
    ) -> int:
        """The cells of the set that differ from ``expected`` (counted; the first listed
        into ``failures``)."""
        got = np.column_stack([self.recorded[f.name] for f in mine])
        with np.errstate(invalid="ignore"):
            close = np.abs(expected - got) <= _RTOL * np.maximum(1.0, np.abs(expected))
        differ = ~((np.isnan(expected) & np.isnan(got)) | (close & ~np.isnan(got)))
        for k, j in np.argwhere(differ)[: max(0, LISTED - len(failures))]:
            failures.append(
                {"check": "look_ahead", "date": self.dates[k], "symbol": self.symbols[k],
                 "feature": mine[j].name, "expected": float(expected[k, j]),
                 "got": float(got[k, j])}
            )  # fmt: skip
        return int(differ.sum())


def _covered(
    feature: Feature,
    coverage: Coverage | None,
    symbols: list[str],
    days: np.ndarray,
    columns: np.ndarray,
) -> np.ndarray:
    """Per sampled row (its day and its symbol's place in ``symbols``): whether the row's
    window is inside the dataset's history and, with a lake, its coverage (else the cell is
    NA by definition, CONTRACT §11, §11.1)."""
    from ..panels.chunk import covered_from

    first = covered_from(feature)
    out = np.ones(len(days), dtype=bool)
    if first is not None:
        out &= days >= (first - dt.date(1970, 1, 1)).days
    if coverage is not None:
        out &= coverage.covered(feature, symbols, days)[np.arange(len(days)), columns]
    return out
