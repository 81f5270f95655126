"""The audit's checks against the label: ``label_leak`` (a feature equal to the label,
correlated with it beyond doubt, or equal to a price dated after its row) and ``proxy`` (a
feature too close to the label for market data: a warning)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from ..panels.sources import Source
from .outcome import CheckResult, skip

_CORRELATED = 0.99  # |corr(feature, y)| above this is a copy of the label
_PRICE_MATCH = 0.9  # a feature equal to a later price on this share of its rows copies it
_PRICE_ROWS = 20_000  # labelled rows compared with later prices (a sample when more)
_PROXY_IC, _PROXY_CORR = 0.3, 0.5  # |mean rank IC|, |corr| with y: too good for market data
_PROXY_PAIRS = 5  # a date's rank IC needs this many (feature, label) pairs (as evaluate's)
# The rank IC's mean is taken over _PROXY_DATES dates at least, more while they hold fewer
# than _PROXY_CELLS rows: over 20 dates of 500 symbols, a noise feature's is within +-0.03.
_PROXY_DATES, _PROXY_CELLS = 20, 10_000


def _close(a: np.ndarray, b: np.ndarray, rtol: float) -> np.ndarray:
    """``np.isclose(a, b, rtol=rtol, atol=0)`` without its checks (NaN: not close)."""
    with np.errstate(invalid="ignore"):
        return (np.abs(a - b) <= rtol * np.abs(b)) | (a == b)


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Every value of ``a`` equals ``b``'s (relative 1e-12); a column that is not a copy
    differs within its first rows, so those are looked at first."""
    head = min(len(a), 1024)
    if not _close(a[:head], b[:head], 1e-12).all():
        return False
    return bool(_close(a, b, 1e-12).all())


def _correlation(x: np.ndarray, yc: np.ndarray, syy: float | None = None) -> float | None:
    """Pearson's correlation of ``x`` and ``y`` (no NaN; ``yc``: ``y`` minus its mean;
    ``syy``: the sum of its squares, when known); ``None`` when one is constant."""
    xc = x - x.mean()
    # einsum, not BLAS's dot: its threads spin against a busy machine's other work.
    sxx = float(np.einsum("i,i->", xc, xc))
    if syy is None:
        syy = float(np.einsum("i,i->", yc, yc))
    if not (sxx > 0 and syy > 0):
        return None
    return float(np.einsum("i,i->", xc, yc)) / np.sqrt(sxx * syy)


def label_checks(ts: Any, source: Source | None) -> tuple[CheckResult, CheckResult]:
    """The ``label_leak`` and ``proxy`` checks, in one pass over the features."""
    y = ts.y.to_numpy(dtype="float64", na_value=np.nan)
    known = ~np.isnan(y)
    if not known.any():
        return skip("no row has a label"), skip("no row has a label")
    failures: list[pd.DataFrame] = []
    found: list[str] = []
    # Later prices on a sample of the labelled rows: a copy of one shows on any sample.
    labelled = np.flatnonzero(known)
    if len(labelled) > _PRICE_ROWS:
        labelled = np.sort(np.random.default_rng(0).choice(labelled, _PRICE_ROWS, replace=False))
    prices = _later_prices(ts, source, labelled)
    label = _Label(y, known)
    ranked = _RankSample(ts.X.index, y, known)
    corrs: list[float] = []
    for name in ts.X.columns:
        x = ts.X[name].to_numpy(dtype="float64", na_value=np.nan)
        ranked.add(x)
        valid = ~np.isnan(x[known])
        why, corr = label.copied_by(x[known], valid) if np.count_nonzero(valid) >= 2 else (None, 0)
        corrs.append(corr)
        both: np.ndarray | None = None  # the rows listed (made when listed)
        expected = y
        if why is None and prices is not None and np.count_nonzero(valid) >= 2:
            share, k = _price_copy(x[labelled], prices)
            if share > _PRICE_MATCH:
                future = prices[k - 1]
                why = f"equal to the price {k} period(s) after its date on {share:.0%} of rows"
                expected = np.full(len(x), np.nan)
                expected[labelled] = future
                both = np.zeros(len(x), dtype=bool)
                both[labelled] = ~np.isnan(future) & ~np.isnan(x[labelled])
        if why is None:
            continue
        found.append(f"{name} ({why})")
        rows = np.flatnonzero(known & ~np.isnan(x) if both is None else both)
        failures.append(pd.DataFrame({
            "check": "label_leak", "date": ts.X.index.get_level_values(0)[rows],
            "symbol": ts.X.index.get_level_values(1)[rows].astype(str), "feature": name,
            "expected": expected[rows], "got": x[rows],
        }))  # fmt: skip
    checked = "; prices after each date checked" if prices is not None else ""
    detail = f"{ts.X.shape[1]} features against the label over {known.sum()} labelled rows"
    leak = CheckResult("pass", detail + checked, int(known.sum()), [])
    if found:
        leak = CheckResult("fail", "; ".join(found), len(found), pd.concat(failures))
    return leak, _proxy(list(ts.X.columns), corrs, ranked.ics())


class _Label:
    """The label over its known rows, centred once: most features have a value on every
    one, and are compared with it as it is."""

    def __init__(self, y: np.ndarray, known: np.ndarray) -> None:
        self.values = y[known]
        self.centred = self.values - self.values.mean()
        self.squares = float(np.einsum("i,i->", self.centred, self.centred))

    def copied_by(self, x_known: np.ndarray, valid: np.ndarray) -> tuple[str | None, float]:
        """Why a feature (``x_known``: its values on the label's rows, ``valid`` where not
        NaN, two at least) copies the label: equal to it, or correlated beyond
        ``_CORRELATED`` (``None``: it does not), and its correlation (0: a constant)."""
        syy: float | None = None
        if bool(valid.all()):
            xs, ys, yc, syy = x_known, self.values, self.centred, self.squares
        else:
            xs, ys = x_known[valid], self.values[valid]
            yc = ys - ys.mean()
        if _equal(xs, ys):
            return "equal to the label", 1.0
        corr = _correlation(xs, yc, syy) or 0.0
        if abs(corr) > _CORRELATED:
            return f"correlation {corr:+.4f} with the label", corr
        return None, corr


def _set_dates_symbols(ts: Any) -> tuple[pd.DatetimeIndex, list[str]]:
    """The set's dates and symbols, each in order of first appearance (read off the index's
    codes, not its 260,000 values)."""
    index = ts.X.index
    dates = pd.DatetimeIndex(index.levels[0].take(pd.unique(index.codes[0])))
    symbols = [str(s) for s in index.levels[1].take(pd.unique(index.codes[1]))]
    return dates, symbols


def _later_prices(ts: Any, source: Source | None, rows: np.ndarray) -> np.ndarray | None:
    """Row k - 1 for k = 1..lag+horizon: the price k periods after the date of each of
    ``rows`` (positions; NaN where none); ``None`` when the source has no prices."""
    from ..training.labels import long_prices, periods_after

    label = ts.info.get("label") or {}
    reach = int(label.get("horizon", 1)) + int(label.get("lag", 0))
    if source is None or not len(ts.X) or reach < 1:
        return None
    freq = ts.info.get("freq", "B")
    dates, symbols = _set_dates_symbols(ts)
    calendar = periods_after(dates, freq, reach)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw = source.prices(symbols, dates[0].date(), calendar[-1].date(), "skip")
        if isinstance(raw, pd.DataFrame):
            raw = pd.DataFrame(raw)  # without its attrs, which pandas copies with each column
            raw.attrs = {}
        prices = long_prices(raw, parameter="source")
    except Exception:  # noqa: BLE001 - no prices (a dict without them): the check says so
        return None
    # One price per (symbol, calendar date): long_prices keeps the last given of each day.
    place = {s: i for i, s in enumerate(symbols)}
    categories = prices["symbol"].cat.categories
    of_category = np.asarray([place.get(str(c), -1) for c in categories], dtype=np.int64)
    symbol = of_category[prices["symbol"].cat.codes.to_numpy()]
    cal_days = calendar.to_numpy(dtype="datetime64[D]").astype(np.int64)
    day = _day_positions(cal_days, prices["day"].to_numpy(dtype=np.int64))
    on = (symbol >= 0) & (day >= 0)
    grid = np.full((len(symbols), len(cal_days)), np.nan)
    grid[symbol[on], day[on]] = prices["price"].to_numpy(dtype="float64")[on]
    index = ts.X.index
    level_dates = dates.get_indexer(index.levels[0])
    level_symbols = np.asarray([place.get(str(s), -1) for s in index.levels[1]], dtype=np.int64)
    position = level_dates[index.codes[0][rows]]
    row_symbols = level_symbols[index.codes[1][rows]]
    return np.stack([grid[row_symbols, position + k] for k in range(1, reach + 1)])


def _day_positions(calendar: np.ndarray, days: np.ndarray) -> np.ndarray:
    """``pd.Index(calendar).get_indexer(days)`` (day numbers; -1: not in it): through a
    table over the calendar's span when its days increase (a set's calendar does), one
    slot before and after it for the days outside."""
    if not len(calendar) or not (calendar[1:] > calendar[:-1]).all():
        return pd.Index(calendar).get_indexer(pd.Index(days))
    lo, hi = int(calendar[0]), int(calendar[-1])
    table = np.full(hi - lo + 3, -1, dtype=np.intp)
    table[calendar - lo + 1] = np.arange(len(calendar))
    return table[np.clip(days - (lo - 1), 0, hi - lo + 2)]


def _price_copy(x: np.ndarray, prices: np.ndarray) -> tuple[float, int]:
    """The largest share of ``x`` equal to the price k periods later when it is above
    ``_PRICE_MATCH``, and that k; ``(0.0, 0)`` when no k comes above it (with two values
    to compare)."""
    both = ~np.isnan(x)[None, :] & ~np.isnan(prices)
    counts = both.sum(axis=1)
    # A share above the bar allows few misses: a k with more among the first rows is out
    # (with a row's margin for rounding), and most features are out after 2,048 rows.
    head = min(len(x), 2048)
    misses = (both[:, :head] & ~_close(x[None, :head], prices[:, :head], 1e-9)).sum(axis=1)
    best = (0.0, 0)
    for k in np.flatnonzero((counts >= 2) & (misses <= (1 - _PRICE_MATCH) * counts + 1)):
        hits = int(np.count_nonzero(_close(x, prices[k], 1e-9) & both[k]))
        share = hits / int(counts[k])
        if share > _PRICE_MATCH and share > best[0]:
            best = (share, int(k) + 1)
    return best


def _proxy(names: list[str], corrs: list[float], ics: np.ndarray) -> CheckResult:
    """The ``proxy`` check: features too good to be true for market data (a label proxy, a
    target encoding fitted on the whole set, a shifted label): a mean per-date rank IC above
    ``_PROXY_IC`` or a correlation with the label above ``_PROXY_CORR``, in absolute value.
    A warning (``"warn"``), never a failure: a real feature may come close."""
    found = []
    for name, corr, ic in zip(names, corrs, ics, strict=True):
        if abs(ic) > _PROXY_IC or abs(corr) > _PROXY_CORR:
            shown = "n/a" if np.isnan(ic) else f"{ic:+.2f}"
            found.append(f"{name} (mean rank IC {shown}, correlation {corr:+.2f})")
    detail = (
        "too good to be true for market data (a label proxy, a target encoding fitted on the "
        "whole set, a shifted label?): " + "; ".join(found)
        if found
        else f"{len(names)} features: no mean rank IC above {_PROXY_IC} nor correlation "
        f"above {_PROXY_CORR} with the label"
    )
    return CheckResult("warn" if found else "pass", detail, len(found) or len(names), [])


class _RankSample:
    """The labelled rows of evenly spread dates, about ``_PROXY_CELLS`` of them (every
    date when fewer, ``_PROXY_DATES`` at least), on which each feature's mean per-date rank
    IC is measured: features x dates x symbols, ranked along symbols at once."""

    def __init__(self, index: Any, y: np.ndarray, known: np.ndarray) -> None:
        dates, symbols = np.asarray(index.codes[0]), np.asarray(index.codes[1])
        used = np.flatnonzero(np.bincount(dates[known], minlength=len(index.levels[0])))
        n = max(_PROXY_DATES, _PROXY_CELLS // max(1, len(index.levels[1])))
        if len(used) > n:
            used = used[np.linspace(0, len(used) - 1, n).round().astype(np.int64)]
        slot = np.full(len(index.levels[0]), -1)
        slot[used] = np.arange(len(used))
        self.rows = np.flatnonzero(known & (slot[dates] >= 0))
        self.at = (slot[dates[self.rows]], symbols[self.rows])
        self.y = np.full((len(used), len(index.levels[1])), np.nan)
        self.y[self.at] = y[self.rows]
        self.x: list[np.ndarray] = []

    def add(self, x: np.ndarray) -> None:
        """A feature's values (every row of the set)."""
        grid = np.full(self.y.shape, np.nan)
        grid[self.at] = x[self.rows]
        self.x.append(grid)

    def ics(self) -> np.ndarray:
        """Per feature added: the mean over dates of its Spearman correlation with ``y``
        across symbols (dates with ``_PROXY_PAIRS`` pairs, neither side constant; NaN:
        none)."""
        if not self.x:
            return np.zeros(0)
        xs, ys = np.stack(self.x), self.y
        valid = ~np.isnan(xs) & ~np.isnan(ys)
        shape = xs.shape
        by_x = _flat(np.argsort(xs, axis=-1))
        rx = np.empty(xs.size)
        rx[by_x] = _tied(*(a.ravel()[by_x].reshape(shape) for a in (xs, valid))).ravel()
        by_y = _flat(np.argsort(ys, axis=-1))  # one order for every feature: y is theirs
        ry = np.empty((shape[0], ys.size))
        mine = valid.reshape(shape[0], -1)[:, by_y].reshape(shape)
        ry[:, by_y] = _tied(ys.ravel()[by_y].reshape(ys.shape), mine).reshape(shape[0], -1)
        pairs = valid.sum(axis=-1)
        mid = (pairs[..., None] + 1) / 2  # the mean of ranks 1..n, ties averaged
        cx = np.where(valid, rx.reshape(shape) - mid, 0.0)
        cy = np.where(valid, ry.reshape(shape) - mid, 0.0)
        sxx, syy = (cx * cx).sum(axis=-1), (cy * cy).sum(axis=-1)
        ok = (pairs >= _PROXY_PAIRS) & (sxx > 0) & (syy > 0)
        ic = np.where(ok, (cx * cy).sum(axis=-1) / np.sqrt(np.where(ok, sxx * syy, 1.0)), 0.0)
        counted = ok.sum(axis=-1)
        return np.where(counted > 0, ic.sum(axis=-1) / np.maximum(counted, 1), np.nan)


def _flat(order: np.ndarray) -> np.ndarray:
    """Flat positions of an ``argsort`` along the last axis (rows taken in turn)."""
    width = order.shape[-1]
    return (order.reshape(-1, width) + np.arange(order.size // width)[:, None] * width).ravel()


def _tied(v: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Ranks (1 = least) of values sorted along the last axis (``v``, broadcast against
    ``ok``) among the ``ok`` entries, equal values given their mean rank (others: any)."""
    count = np.cumsum(ok, axis=-1)  # ok entries up to each place
    new = np.ones(v.shape, dtype=bool)
    new[..., 1:] = v[..., 1:] != v[..., :-1]  # where a run of equal values begins
    last = np.ones(v.shape, dtype=bool)
    last[..., :-1] = new[..., 1:]
    # count is nondecreasing: a run's value spreads over it by a running max (min backwards).
    before = np.maximum.accumulate(np.where(new, count - ok, 0), axis=-1)
    through = np.where(last, count, count.shape[-1])[..., ::-1]
    through = np.minimum.accumulate(through, axis=-1)[..., ::-1]
    return (before + 1 + through) / 2
