"""The audit's ``label_leak`` check: a feature equal to the label, correlated with it beyond
doubt, or equal to a price dated after its row."""

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


def label_leak(ts: Any, source: Source | None) -> CheckResult:
    y = ts.y.to_numpy(dtype="float64", na_value=np.nan)
    known = ~np.isnan(y)
    if not known.any():
        return skip("no row has a label")
    failures: list[dict[str, Any]] = []
    found: list[str] = []
    # Later prices on a sample of the labelled rows: a copy of one shows on any sample.
    labelled = np.flatnonzero(known)
    if len(labelled) > _PRICE_ROWS:
        labelled = np.sort(np.random.default_rng(0).choice(labelled, _PRICE_ROWS, replace=False))
    prices = _later_prices(ts, source, labelled)
    label = _Label(y, known)
    for name in ts.X.columns:
        x = ts.X[name].to_numpy(dtype="float64", na_value=np.nan)
        valid = ~np.isnan(x[known])
        if np.count_nonzero(valid) < 2:
            continue
        why = label.copied_by(x[known], valid)
        both: np.ndarray | None = None  # the rows listed (made when listed)
        expected = y
        if why is None and prices is not None:
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
        if both is None:
            both = known & ~np.isnan(x)
        for i in np.flatnonzero(both)[:10]:
            date, symbol = ts.X.index[i]
            failures.append(
                {"check": "label_leak", "date": date, "symbol": str(symbol), "feature": name,
                 "expected": float(expected[i]), "got": float(x[i])}
            )  # fmt: skip
    checked = "; prices after each date checked" if prices is not None else ""
    if found:
        return CheckResult("fail", "; ".join(found), len(found), failures)
    return CheckResult(
        "pass",
        f"{ts.X.shape[1]} features against the label over {int(known.sum())} labelled "
        f"rows{checked}",
        int(known.sum()),
        [],
    )


class _Label:
    """The label over its known rows, centred once: most features have a value on every
    one, and are compared with it as it is."""

    def __init__(self, y: np.ndarray, known: np.ndarray) -> None:
        self.values = y[known]
        self.centred = self.values - self.values.mean()
        self.squares = float(np.einsum("i,i->", self.centred, self.centred))

    def copied_by(self, x_known: np.ndarray, valid: np.ndarray) -> str | None:
        """Why a feature (``x_known``: its values on the label's rows, ``valid`` where not
        NaN, two at least) copies the label: equal to it, or correlated beyond
        ``_CORRELATED``; ``None``: it does not."""
        syy: float | None = None
        if bool(valid.all()):
            xs, ys, yc, syy = x_known, self.values, self.centred, self.squares
        else:
            xs, ys = x_known[valid], self.values[valid]
            yc = ys - ys.mean()
        if _equal(xs, ys):
            return "equal to the label"
        corr = _correlation(xs, yc, syy)
        if corr is not None and abs(corr) > _CORRELATED:
            return f"correlation {corr:+.4f} with the label"
        return None


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
