"""The audit's reports of ``coverage`` (features NA on every row or every training row of a
fold) and ``knowledge`` (rows that relied on the first sync, recounted from the lake)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from ...registry import REGISTRY
from ..panels.sources import ROW, LakeSource, Source
from .outcome import NS_PER_DAY, CheckResult, skip
from .recompute import fetched_ns


def _na_patterns(isna: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's pattern of NA columns (a code) and each pattern's NA columns."""
    if not isna.shape[1]:
        return np.zeros(len(isna), dtype=np.int64), isna[:1]
    # packbits(isna, axis=1), packed as one flat run of rows padded to whole bytes (numpy
    # packs a flat array several times faster than row by row).
    width = -(-isna.shape[1] // 8) * 8
    whole = np.zeros((len(isna), width), dtype=bool)
    whole[:, : isna.shape[1]] = isna
    bits = np.packbits(whole.reshape(-1)).reshape(len(isna), width // 8)
    padded = np.zeros((len(bits), -(-bits.shape[1] // 8) * 8), dtype=np.uint8)
    padded[:, : bits.shape[1]] = bits
    words = padded.view(np.uint64)
    if words.shape[1] == 1:
        pattern = pd.factorize(words[:, 0])[0]
    else:
        pattern = np.unique(words, axis=0, return_inverse=True)[1].reshape(-1)
    one = np.zeros(int(pattern.max(initial=-1)) + 1, dtype=np.int64)
    one[pattern] = np.arange(len(pattern))  # any row of a pattern stands for it
    return pattern.astype(np.int32), isna[one]


def coverage_report(
    ts: Any, attrs: dict[str, Any], splits: list[tuple[str, Any, list[Any]]], given: bool
) -> CheckResult:
    if not len(ts.X):
        return skip("no rows")
    isna = ts.X.isna().to_numpy(dtype=bool)
    empty = [c for c, na in zip(ts.X.columns, isna.all(axis=0), strict=True) if na]
    # Rows by their pattern of NA features (a few hundred patterns): a feature is NA on
    # every training row when it is NA in every pattern the training rows have.
    pattern, na_of = _na_patterns(isna)
    fold_na: dict[str, list[str]] = {}
    # Every splitter given; of the defaults, the walk-forward one (the others train on all).
    checked = (splits if given else splits[:1]) if isna.shape[1] else []
    for name, _, pairs in checked:
        for k, (train, _test) in enumerate(pairs):
            if not len(train):
                continue
            present = np.bincount(pattern[np.asarray(train)], minlength=len(na_of)) > 0
            na = na_of[present].all(axis=0)
            for column in ts.X.columns[na]:
                if column not in empty:
                    fold_na.setdefault(str(column), []).append(f"{name} {k}")
    stats = attrs.get("coverage", {})
    uncovered = {n: int(v.get("uncovered", 0)) for n, v in stats.items() if v.get("uncovered")}
    parts = []
    if empty:
        parts.append(f"NA on every row: {', '.join(empty)}")
    if fold_na:
        parts.append(
            "NA on every training row of a fold: "
            + "; ".join(f"{c} ({', '.join(f)})" for c, f in fold_na.items())
        )
    if uncovered:
        parts.append(
            "rows left NA for lack of the lake's coverage: "
            + ", ".join(f"{n} {k}" for n, k in uncovered.items())
        )
    failures = [
        {"check": "coverage", "date": pd.NaT, "symbol": None, "feature": c,
         "expected": "some value", "got": "NA on every row"}
        for c in empty
    ]  # fmt: skip
    detail = "; ".join(parts) or f"every feature has values ({ts.X.shape[1]} features)"
    return CheckResult("fail" if empty else "pass", detail, len(empty), failures)


def _first_sync_ends(history: pd.DataFrame) -> dict[str, int]:
    """Per symbol of ``history`` (every stored version): when the sync that stored its
    earliest version ended (that sync's latest fetch of the symbol), in ns."""
    if not len(history):
        return {}
    codes, names = pd.factorize(history["symbol"].astype(str))
    fetched = fetched_ns(history)
    # Each symbol's earliest fetched row (the first in the frame of equal times).
    order = np.lexsort((np.arange(len(codes)), fetched, codes))
    heads = order[np.r_[0, np.flatnonzero(np.diff(codes[order])) + 1]]
    first = np.empty(len(names), dtype=np.int64)
    first[codes[heads]] = heads
    ends = fetched[first].copy()
    if "_sync_id" in history.columns:
        sync = pd.factorize(history["_sync_id"], use_na_sentinel=True)[0]
        same = (sync == sync[first][codes]) & (sync >= 0)
        np.maximum.at(ends, codes[same], fetched[same])
    return {str(name): int(end) for name, end in zip(names, ends, strict=True)}


def knowledge_report(ts: Any, attrs: dict[str, Any], source: Source | None) -> CheckResult:
    if ts.info.get("known_at") != ROW:
        return skip("the set was not made with known_at='row'")
    recorded = attrs.get("knowledge")
    if not isinstance(recorded, dict):
        return CheckResult("fail", "known_at='row' but the set records no knowledge", 1, [])
    n_rows = len(ts.X)
    shares = [
        f"{ds} {int(v.get('rows', 0)) / n_rows if n_rows else 0:.0%} of rows"
        for ds, v in recorded.items()
    ]
    detail = "rows dated before their symbol's first sync (backfilled, not observed): " + (
        ", ".join(shares) or "none"
    )
    if not isinstance(source, LakeSource):
        return CheckResult("pass", detail + " (not recounted: no lake source)", n_rows, [])
    # Recount from the lake: per symbol, the end of the sync that stored its first version.
    dates = pd.DatetimeIndex(ts.X.index.get_level_values(0).unique())
    symbols = [str(s) for s in ts.X.index.get_level_values(1).unique()]
    days = np.sort(dates.to_numpy(dtype="datetime64[D]").astype(np.int64))
    failures = []
    for ds, v in recorded.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            history = source.lake.read(REGISTRY[ds].base, symbols, history=True,
                                       columns=["symbol"])  # fmt: skip
        ends = _first_sync_ends(history)
        count = 0
        for s in symbols:
            floor = ends.get(s)
            if floor is not None:  # the dates before the day that sync ended
                count += int(np.searchsorted(days, floor // NS_PER_DAY, side="left"))
        if count != int(v.get("rows", -1)):
            failures.append(
                {"check": "knowledge", "date": pd.NaT, "symbol": None, "feature": ds,
                 "expected": count, "got": v.get("rows")}
            )  # fmt: skip
    if failures:
        named = ", ".join(f"{f['feature']} (recorded {f['got']}, lake {f['expected']})"
                          for f in failures)  # fmt: skip
        return CheckResult("fail", f"the set misstates its backfilled rows: {named}", len(failures),
                        failures)  # fmt: skip
    return CheckResult("pass", detail, n_rows, [])
