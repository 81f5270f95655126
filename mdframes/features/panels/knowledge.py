"""Per-row knowledge time (``known_at="row"``): the row for date D sees, of each record, the
version fetched last by the end of D (dates before the dataset's first sync: that sync's).

Each stored version becomes visible on day ``e = max(public day, day fetched)`` and stops being
visible on the day its record's next version was fetched (``x``). A version counts in the
window ``(D - n, D]`` of row D when ``e <= D < x`` and its public day ``p > D - n``. With an
entry event (+value at day e) and an exit event (-value at day x) per version, each such
condition is a difference of running totals searched by (symbol, day), as the scalar engine
searches by anchor:

    [y <= D][p > D - n] = [y <= D] - [y <= D - n] - [s <= D] + [t <= D]

with ``s = max(y, p + n)`` and ``t = y + n`` (only events with ``p < y`` have the last two
terms). Last values and changes take the highest-ranked version (latest public time) visible
at D: a maximum over the intervals ``[e, x)`` that contain D, answered for every cell at once by
a segment tree over the panel's cells. No Python loop runs over dates, symbols or rows.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import pandas as pd

from ...identity import Identity
from ...pit import public_times
from .engine import (
    OFF,
    SPAN,
    Events,
    Grid,
    day_numbers,
    factorized,
    finish_values,
    sort_order,
    utc_naive,
    window_sums,
)
from .spec import Feature

__all__ = ["record_ids", "next_fetched", "VersionEvents", "compute_row"]

NEVER: Final = np.iinfo(np.int64).max
NS_PER_DAY: Final = 86_400 * 10**9


def _fetched_ns(frame: pd.DataFrame) -> np.ndarray:
    fetched = frame["_fetched_at"]
    if not isinstance(fetched.dtype, pd.DatetimeTZDtype):
        fetched = pd.to_datetime(fetched, utc=True)
    # The instants' integers (UTC) in ns: no converted copy of the column made first.
    return np.asarray(fetched.array.as_unit("ns").asi8, dtype=np.int64)


def _compress(codes: np.ndarray) -> np.ndarray:
    """Dense codes 0..k-1 for int64 ``codes`` (so that combining more parts cannot overflow)."""
    return pd.factorize(codes)[0].astype(np.int64)


def record_ids(frame: pd.DataFrame, key: list[str]) -> np.ndarray:
    """One integer per record: the key's parts (``"a|b"``: a, or b where a is null), and
    ``_n`` when the lake gives it (records sharing a key in one answer); without ``_n``, the
    rows sharing a key in one sync are told apart by their order."""
    n = len(frame)
    ids = Identity.parse(key).ids(frame)
    if "_n" in frame.columns:
        extra = pd.factorize(frame["_n"])[0].astype(np.int64)
    else:
        batch = frame["_sync_id"] if "_sync_id" in frame.columns else frame["_fetched_at"]
        batches = pd.factorize(batch)[0].astype(np.int64)
        order = np.lexsort((np.arange(n), batches, ids))
        same = np.zeros(n, dtype=bool)
        same[1:] = (ids[order][1:] == ids[order][:-1]) & (batches[order][1:] == batches[order][:-1])
        run_start = np.maximum.accumulate(np.where(same, 0, np.arange(n)))
        extra = np.empty(n, dtype=np.int64)
        extra[order] = np.arange(n) - run_start  # place among the rows of its key and sync
    return _compress(ids * (int(extra.max(initial=0)) + 1) + extra)


def next_fetched(frame: pd.DataFrame, key: list[str]) -> pd.Series:
    """Per row: when its record's next version was fetched (NaT for the latest version)."""
    following = _following(frame, key, _fetched_ns(frame), _batches(frame))
    following[following == NEVER] = np.iinfo(np.int64).min  # NaT
    return pd.Series(pd.to_datetime(following.view("datetime64[ns]"), utc=True), index=frame.index)


def _value_codes(values: pd.Series) -> np.ndarray:
    """Integers equal exactly where ``values`` are (a missing value is a value of its own),
    as ``pd.factorize`` groups them, made without hashing each row for what a lake read
    gives: a category's codes, a time's integers, Arrow text by its runs (only the runs'
    values are coded) or Arrow's dictionary."""
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return values.cat.codes.to_numpy(dtype=np.int64)
    if dtype.kind in "mM":  # NaT: the smallest integer, a value of its own
        return np.asarray(values.array.asi8, dtype=np.int64)
    if getattr(dtype, "storage", None) == "pyarrow" or isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa
        import pyarrow.compute as pc

        arrow = pa.chunked_array(values.array.__arrow_array__())
        column = arrow.combine_chunks() if arrow.num_chunks != 1 else arrow.chunk(0)
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            n = len(column)
            starts = np.zeros(1, dtype=np.int64)
            if n > 1:
                changed = pc.not_equal(column.slice(1), column.slice(0, n - 1))
                changed = pc.fill_null(changed, True).to_numpy(zero_copy_only=False)
                starts = np.concatenate([starts, np.flatnonzero(changed) + 1])
            runs = len(starts) * 4 <= n  # long runs: their first values are coded
            encoded = pc.dictionary_encode(column.take(pa.array(starts)) if runs else column)
            codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)
            codes = codes.astype(np.int64)
            return np.repeat(codes, np.diff(np.append(starts, n))) if runs else codes
    return np.asarray(pd.factorize(values, use_na_sentinel=True)[0], dtype=np.int64)


def _packed(parts: list[np.ndarray]) -> np.ndarray:
    """One integer per row, equal where every part is (parts made dense where their
    product of spans would not fit)."""
    key = np.zeros(len(parts[0]), dtype=np.int64)
    width = 1
    for part in parts:
        low = int(part.min())
        span = int(part.max()) - low + 1
        if width * span >= 1 << 62:
            key = pd.factorize(key)[0].astype(np.int64)
            width = int(key.max()) + 1
        if width * span >= 1 << 62:
            part = pd.factorize(part)[0].astype(np.int64)
            low, span = 0, int(part.max()) + 1
        key = key * span + (part - low)
        width *= span
    return key


def _symbols(values: pd.Series, symbols: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's position in ``symbols`` (-1: none, as :func:`~.engine.symbol_codes`) and
    its symbol as :func:`_value_codes` codes it, from one coding of the column."""
    codes, uniques = factorized(values)
    where = {s: i for i, s in enumerate(symbols)}
    lut = [where.get(str(u).strip().upper(), -1) for u in uniques]
    places = np.asarray([*lut, -1], dtype=np.int64)[codes]
    if isinstance(uniques, list):  # Arrow text: codes of runs, or of Arrow's dictionary
        same = pd.factorize(pd.Index(uniques, dtype=object), use_na_sentinel=True)[0]
        return places, np.where(codes >= 0, np.append(same, -1)[codes], -1).astype(np.int64)
    return places, np.asarray(codes, dtype=np.int64)


def _batches(frame: pd.DataFrame) -> np.ndarray:
    """Per row: its sync (``_sync_id``, else its ``_fetched_at``) as an integer."""
    return _value_codes(frame["_sync_id" if "_sync_id" in frame.columns else "_fetched_at"])


def _sorted_by(parts: list[np.ndarray]) -> bool:
    """Whether the rows ascend by ``parts`` (the first, then the next among equals...)."""
    open_ = np.ones(max(len(parts[0]) - 1, 0), dtype=bool)  # neighbours equal so far
    for part in parts:
        if (open_ & (part[1:] < part[:-1])).any():
            return False
        open_ &= part[1:] == part[:-1]
    return True


def _following(
    frame: pd.DataFrame,
    key: list[str],
    fetched: np.ndarray,
    batches: np.ndarray,
    coded: dict[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Per row: when its record's next version was fetched (NEVER for the latest), records
    told apart as :func:`record_ids` tells them. Rows are grouped by their identity's
    integers (:func:`_value_codes`, or ``coded``'s for those columns; no sort when they come
    grouped, as a lake read gives them), and only the few identities with more than one
    row are ordered by version."""
    coded = coded or {}
    n = len(frame)
    following = np.full(n, NEVER, dtype=np.int64)
    if n < 2:
        return following
    parts: list[np.ndarray] = []
    for alternatives in Identity.parse(key).parts:
        names = [name for name in alternatives if name in frame.columns]
        if len(names) == 1 and names[0] in coded:  # coded by the caller already
            parts.append(coded[names[0]])
        elif names:
            parts += [_value_codes(v) for v in Identity((alternatives,)).values(frame)]
    has_n = "_n" in frame.columns
    if has_n:
        parts.append(_value_codes(frame["_n"]))
    if not parts:
        parts = [np.zeros(n, dtype=np.int64)]
    # Stable: the rows of one identity keep their frame order.
    order = None if _sorted_by(parts) else np.argsort(_packed(parts), kind="stable")
    grouped = parts if order is None else [p[order] for p in parts]
    starts = np.zeros(n, dtype=bool)
    starts[0] = True
    for codes in grouped:
        starts[1:] |= codes[1:] != codes[:-1]
    group = np.cumsum(starts) - 1
    del grouped, parts
    sizes = np.bincount(group)
    several = sizes[group] > 1
    if not several.any():
        return following
    rows = np.flatnonzero(several) if order is None else order[several]  # frame positions
    group = group[several]
    if has_n:
        extra = np.zeros(len(rows), dtype=np.int64)
    else:  # records sharing a key in one sync: told apart by their place among them
        batch = batches[rows]
        by = np.lexsort((rows, batch, group))
        same = np.zeros(len(rows), dtype=bool)
        same[1:] = (group[by][1:] == group[by][:-1]) & (batch[by][1:] == batch[by][:-1])
        run_start = np.maximum.accumulate(np.where(same, 0, np.arange(len(rows))))
        extra = np.empty(len(rows), dtype=np.int64)
        extra[by] = np.arange(len(rows)) - run_start
    stamps = fetched[rows]
    by = np.lexsort((rows, stamps, extra, group))
    same = (group[by][1:] == group[by][:-1]) & (extra[by][1:] == extra[by][:-1])
    following[rows[by][:-1][same]] = stamps[by][1:][same]
    return following


class VersionEvents(Events):
    """One dataset's stored versions that some row can see, in rank order (symbol, public
    time, event date, frame order), with the day each becomes and stops being visible."""

    take: np.ndarray  # always positions here (Events may hold a slice)

    def __init__(
        self,
        frame: pd.DataFrame,
        dataset: str,
        symbols: list[str],
        grid: Grid,
        key: list[str],
    ) -> None:
        frame = frame.reset_index(drop=True)
        frame.attrs = {**frame.attrs, "dataset": dataset}
        self.frame, self.dataset = frame, dataset
        end_day = int(grid.days.max())
        low = int(grid.days.min()) - grid.max_back - 2  # "before every window"
        codes, exact = _symbols(frame["symbol"], symbols)
        times = utc_naive(public_times(frame))
        fetched = _fetched_ns(frame)
        batches = _batches(frame)
        following = _following(frame, key, fetched, batches, {"symbol": exact})
        del exact
        # Per symbol, when its first sync ended: what that sync fetched is known from the start
        # (rows dated before it use that sync). Per symbol, so that a chunk of symbols
        # computes exactly what the whole panel does.
        syncs = batches if "_sync_id" in frame.columns else None
        self.floors = _first_syncs(syncs, codes, fetched, len(symbols))
        floor_ns = np.append(self.floors, NEVER)[codes]  # -1 (another symbol): NEVER
        known = np.where(fetched > floor_ns, fetched // NS_PER_DAY, low)
        until = np.where(following == NEVER, end_day + 1, following // NS_PER_DAY)
        until = np.where(following > floor_ns, until, low)
        public = day_numbers(times)
        enter = np.maximum(np.maximum(public, known), low)
        keep = np.flatnonzero(
            (codes >= 0) & ~np.isnat(times) & (enter < until) & (enter <= end_day)
        )
        # Rank order, stable; a lake read's rows come in it (no sort then).
        order = sort_order(codes[keep], times[keep].view(np.int64), self._tie(keep))
        self.take = keep if order is None else keep[order]
        self.codes = codes[self.take]
        self.public = np.maximum(public[self.take], low)
        self.enter = enter[self.take]
        self.until = np.minimum(until[self.take], end_day + 1)
        self.low, self.end_day = low, end_day
        self.starts = np.searchsorted(self.codes, np.arange(len(symbols) + 1), side="left")

    def knowledge(self, dates: pd.DatetimeIndex) -> tuple[int | None, int]:
        """The earliest first sync of the symbols (ns since the epoch, UTC; None: nothing
        stored) and the panel rows dated before their symbol's first sync."""
        has = self.floors != NEVER
        if not has.any():
            return None, 0
        days = day_numbers(dates.to_numpy(dtype="datetime64[ns]"))
        first_days = self.floors[has] // NS_PER_DAY
        return int(self.floors[has].min()), int(np.searchsorted(days, first_days).sum())

    @property
    def as_of_anchor(self) -> bool:
        """Whether every version is visible from its public day on and none is superseded
        within the panel: then per-row knowledge changes nothing, and the scalar engine
        (cheaper) computes the same panel."""
        return bool((self.enter == self.public).all() and (self.until > self.end_day).all())


def _first_syncs(
    syncs: np.ndarray | None, codes: np.ndarray, fetched: np.ndarray, n_symbols: int
) -> np.ndarray:
    """Per symbol: the latest ``_fetched_at`` of the sync that stored its earliest version
    (``syncs``: each row's ``_sync_id`` as an integer; without: its earliest
    ``_fetched_at``); NEVER where it has none."""
    out = np.full(n_symbols, NEVER, dtype=np.int64)
    mine = codes >= 0
    if not mine.any():
        return out
    np.minimum.at(out, codes[mine], fetched[mine])
    if syncs is None:
        return out
    # Each symbol's first row (in frame order) of those fetched earliest: no sort.
    earliest = np.flatnonzero(mine & (fetched == out[np.maximum(codes, 0)]))
    first_row = np.full(n_symbols, len(codes), dtype=np.int64)
    np.minimum.at(first_row, codes[earliest], earliest)
    first_row[first_row == len(codes)] = -1
    first_sync = np.where(first_row >= 0, syncs[np.maximum(first_row, 0)], -1)
    same = mine & (syncs == first_sync[np.maximum(codes, 0)])
    ends = np.full(n_symbols, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(ends, codes[same], fetched[same])
    return np.where(first_row >= 0, ends, NEVER)


def _sums(
    codes: np.ndarray,
    day: np.ndarray,
    values: list[np.ndarray],
    grid: Grid,
    backs: tuple[int, ...] = (0,),
) -> list[list[np.ndarray]]:
    """Per ``back``, per array of ``values`` and per cell (g, D): the sum over symbol g's
    events with ``day <= D - back`` (one sort for all of them, one search per ``back``)."""
    keys = codes * SPAN + (day + OFF)
    order = np.argsort(keys, kind="stable")
    keys, codes = keys[order], codes[order]
    values = [v[order] for v in values]
    a = np.searchsorted(codes, np.arange(grid.n_symbols), side="left")[grid.codes]
    out = []
    for back in backs:
        b = np.searchsorted(keys, grid.keys(back), side="right")
        out.append([window_sums(v, codes, a, b, grid) for v in values])
    return out


def _windowed(
    ev: VersionEvents, rows: np.ndarray, values: list[np.ndarray], n: int | None, grid: Grid
) -> list[np.ndarray]:
    """Per cell and per array of ``values``: the sum over the versions visible at D with
    public day in ``(D - n, D]`` (all public days when ``n`` is None)."""
    codes, public = ev.codes[rows], ev.public[rows]
    enter, until = ev.enter[rows], ev.until[rows]
    gone = until <= ev.end_day
    e_codes = np.concatenate([codes, codes[gone]])
    e_day = np.concatenate([enter, until[gone]])
    e_public = np.concatenate([public, public[gone]])
    e_vals = [np.concatenate([v, -v[gone]]) for v in values]
    if n is None:
        return _sums(e_codes, e_day, e_vals, grid)[0]
    total, old = _sums(e_codes, e_day, e_vals, grid, (0, n))
    late = np.flatnonzero(e_public < e_day)  # known after it became public
    if not len(late):
        return [t - o for t, o in zip(total, old, strict=True)]
    late_vals = [v[late] for v in e_vals]
    start = np.maximum(e_day[late], e_public[late] + n)
    (enter_late,) = _sums(e_codes[late], start, late_vals, grid)
    (leave_late,) = _sums(e_codes[late], e_day[late] + n, late_vals, grid)
    return [t - o - s + e for t, o, s, e in zip(total, old, enter_late, leave_late, strict=True)]


def _stab_max(
    codes: np.ndarray, lo: np.ndarray, hi: np.ndarray, rank: np.ndarray, grid: Grid
) -> np.ndarray:
    """Per cell (g, D), symbol-major: the highest ``rank`` of symbol g's intervals
    ``[lo, hi)`` (days) that contain D; -1 where none does."""
    days = grid.days[: grid.n_dates]
    m = grid.n_dates
    lj = np.searchsorted(days, lo, side="left")
    rj = np.searchsorted(days, hi, side="left")
    some = lj < rj
    size = 1 << max(1, int(grid.size - 1).bit_length())
    left = codes[some] * m + lj[some] + size
    right = codes[some] * m + rj[some] + size
    value = rank[some]
    tree = np.full(2 * size, -1, dtype=np.int64)
    # Bottom-up range update: each interval marks O(log size) nodes covering it exactly.
    while left.size:
        odd = (left & 1) == 1
        np.maximum.at(tree, left[odd], value[odd])
        left = left + odd
        odd = (right & 1) == 1
        right = right - odd
        np.maximum.at(tree, right[odd], value[odd])
        left, right = left >> 1, right >> 1
        more = left < right
        left, right, value = left[more], right[more], value[more]
    node = np.arange(grid.size, dtype=np.int64) + size
    out = tree[node]
    while node[0] > 1:  # a cell's answer: the maximum over its leaf and its ancestors
        node >>= 1
        np.maximum(out, tree[node], out=out)
    return out


def compute_row(feature: Feature, ev: VersionEvents, grid: Grid) -> Any:
    """One panel column with per-row knowledge time, in the panel's order."""
    vals, valid, is_int = ev.values(feature)
    rows = np.arange(len(ev.take)) if valid is None else np.flatnonzero(valid)
    vals = vals[rows]
    agg, n = feature.agg, feature.days
    if agg in ("last", "change"):
        codes, public = ev.codes[rows], ev.public[rows]
        rank = np.arange(len(rows), dtype=np.int64)
        now = _stab_max(codes, ev.enter[rows], ev.until[rows], rank, grid)
        ok = now >= 0
        if not len(vals):
            zeros = np.zeros(grid.size, dtype=np.int64 if is_int and agg == "last" else "float64")
            return finish_values(feature, grid, zeros, ~ok, is_int and agg == "last")
        picked = np.maximum(now, 0)
        if agg == "last":
            if n is not None:
                ok &= public[picked] > grid.days - n
            return finish_values(feature, grid, vals[picked], ~ok, is_int)
        lo = np.maximum(ev.enter[rows], public + (n or 0))
        prior = _stab_max(codes, lo, ev.until[rows], rank, grid)
        ok &= prior >= 0
        out = vals[picked].astype("float64") - vals[np.maximum(prior, 0)].astype("float64")
        return finish_values(feature, grid, out, ~ok, False)
    ones = np.ones(len(rows), dtype=np.int64)
    if agg == "count":
        (counts,) = _windowed(ev, rows, [ones], n, grid)
        return finish_values(feature, grid, counts, np.zeros(grid.size, dtype=bool), True)
    counts, sums = _windowed(ev, rows, [ones, vals], n, grid)
    if agg == "sum":
        return finish_values(feature, grid, sums, np.zeros(grid.size, dtype=bool), is_int)
    means = sums if sums.dtype == np.float64 else sums.astype("float64")  # sums is ours
    with np.errstate(invalid="ignore", divide="ignore"):
        np.divide(means, counts, out=means)
    return finish_values(feature, grid, means, counts == 0, False)
