"""Is this feature worth a model? Rank IC, quantile returns, decay and the IC that revised
data inflates, per feature of a training set (CONTRACT §16).

Everything is computed on the panel as a date x symbol array per feature: a date's ranks,
correlations and quantiles are operations along that array's rows, never a loop over dates.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from ... import _deps
from ...errors import DataQualityWarning, InvalidParameterError, warn
from ...params import whole_number
from ..panels.build import panel
from ..panels.sources import LakeSource, resolve_source
from ..panels.spec import check_offset
from ..training.labels import ForwardReturn, price_spans, source_prices
from ..training.replay import features_of, pinned
from ..training.trainset import TrainingSet

__all__ = ["evaluate", "Evaluation", "write_report"]

SUMMARY_COLUMNS = ["feature", "rows", "coverage", "ic_mean", "ic_std", "ic_ir", "ic_t",
                   "ic_t_nw", "ic_hit", "q_spread", "turnover", "autocorr"]  # fmt: skip
# A date's IC from fewer pairs than this is noise (NA); fewer dates with an IC than
# FEW_DATES give a mean no one should trust (a warning).
MIN_PAIRS, FEW_DATES = 5, 20


@dataclass(repr=False)
class Evaluation:
    """What :func:`evaluate` found; ``summary.attrs`` accounts for the rows and dates.

    Attributes
    ----------
    summary : DataFrame
        ``feature, rows, coverage, ic_mean, ic_std, ic_ir, ic_t, ic_t_nw, ic_hit, q_spread,
        turnover, autocorr``; ``attrs``: ``labelled_rows``, ``na_rows``, ``ic_dates`` and
        ``dates_without_ic`` (per feature), ``horizon`` (the label's).
    ic : DataFrame
        Date x feature, the Spearman rank IC (NA: fewer than 5 pairs or a constant side).
    quantile_returns, decay : DataFrame
        ``feature, quantile, mean_return, count``; feature x horizon, the IC mean (NA where
        no lake or frames give the prices to rebuild that horizon's labels).
    revisions : DataFrame or None
        With a lake: ``feature, ic_mean_as_known, ic_mean_latest, ic_inflation``.
    """

    summary: pd.DataFrame
    ic: pd.DataFrame
    quantile_returns: pd.DataFrame
    decay: pd.DataFrame
    revisions: pd.DataFrame | None

    def plot(self, feature: str, backend: str = "plotly") -> Any:
        """IC over time with its 21-date rolling mean, the quantiles' mean returns and the
        decay of ``feature``: a plotly Figure, or a matplotlib Figure (``backend="matplotlib"``).

        >>> md.features.evaluate(ts).plot("insider_net_value_90d").write_html("ic.html")
        """
        if feature not in self.ic.columns or backend not in ("plotly", "matplotlib"):
            raise InvalidParameterError(
                f"plot: {feature!r} is not an evaluated feature, or backend={backend!r} is not "
                "'plotly' or 'matplotlib'",
                parameter="feature" if feature not in self.ic.columns else "backend",
            )
        ic = self.ic[feature]
        q = self.quantile_returns[self.quantile_returns["feature"] == feature]
        rolling = ic.dropna().rolling(21, min_periods=MIN_PAIRS).mean()  # dates with an IC
        parts = (ic, rolling, q, self.decay.loc[feature])
        titles = ("rank IC per date", "mean return by quantile (demeaned per date)",
                  "IC mean by label horizon")  # fmt: skip
        return (_plotly if backend == "plotly" else _matplotlib)(feature, titles, *parts)

    def __repr__(self) -> str:
        return f"<Evaluation of {len(self.summary)} features>\n{self.summary.round(4)}"

    def _repr_html_(self) -> str:
        from ... import _html

        attrs = self.summary.attrs
        note = f"{attrs['labelled_rows']:,} labelled rows, label horizon {attrs['horizon']}"
        parts = [_html.frame_html(self.summary.round(4), note)]
        if self.revisions is not None:
            parts.append(_html.frame_html(self.revisions.round(4), "IC as known and latest"))
        return _html.box("Evaluation", *parts)


def evaluate(
    ts: TrainingSet,
    *,
    quantiles: int = 5,
    horizons: int | Iterable[int] = (1, 5, 10, 21),
    source: Any = None,
) -> Evaluation:
    """How well each feature of ``ts`` ranks its label, how steadily, how fast that decays,
    and how much of it revised data would add (CONTRACT §16); ``ts`` is not changed.

    Rows: the labelled rows (y not NA) where the feature is not NA. The per-date IC, the
    quantiles (``pandas.qcut`` per date) and ``mean_return`` (the mean over dates of the
    quantile's mean y demeaned by the date's) are alphalens-reloaded's; ``ic_t_nw`` has a
    Newey-West (Bartlett) variance of lag ``horizon - 1`` (docs: *Evaluating features*).

    Parameters
    ----------
    ts : TrainingSet
    quantiles : int
        Quantiles per date (>= 2).
    horizons : int or iterable of int
        Label horizons of ``decay``, rebuilt with the set's label definition and prices.
    source : Lake or dict of frames, optional
        Where the set was made from (default: its lake, when ``info`` names a local one),
        read at the versions it recorded; a lake also gives ``revisions``.

    Returns
    -------
    Evaluation

    Warns
    -----
    DataQualityWarning
        A feature has an IC on fewer than 20 dates.

    Examples
    --------
    >>> ev = md.features.evaluate(ts, source=lake)
    >>> ev.summary[["feature", "rows", "coverage"]]  # two symbols: too few for a rank IC
                     feature  rows  coverage
    0  insider_net_value_90d   254       1.0
    1   congress_net_buy_90d   254       1.0
    """
    if not isinstance(ts, TrainingSet):
        raise InvalidParameterError("evaluate takes a TrainingSet", parameter="ts")
    q = whole_number(quantiles, "quantiles", least=2)
    asked = [horizons] if isinstance(horizons, (int, np.integer, str)) else horizons
    wanted = sorted({whole_number(h, "horizons", least=1) for h in asked})
    read = _source(ts, source)
    index = cast(pd.MultiIndex, ts.X.index).remove_unused_levels()
    dates, symbols = index.levels[0], list(index.levels[1])
    if not dates.is_monotonic_increasing:
        raise InvalidParameterError("ts.X's dates are not in order", parameter="ts")
    grid = (index.codes[0], index.codes[1], (len(dates), len(symbols)))
    y = _matrix(ts.y, grid)
    label = ts.info.get("label") or {}
    horizon = int(label.get("horizon", 1))
    plain = ts.X.copy(deep=False)
    plain.attrs = {}  # a column taken would deep-copy the panel's attrs
    labels = _labels(ts, read, wanted, dates, symbols, label)
    rows, ic, qr, decay = [], {}, [], {}
    ry = _ranks(y)[0]
    for column in plain.columns:  # one feature's arrays at a time
        name, f = str(column), _matrix(plain[column], grid)
        stats, ic[name], returns = _one(f, y, ry, q, horizon)
        rows.append({"feature": name, **stats})
        qr.append(pd.DataFrame({"feature": name, "quantile": np.arange(1, q + 1), **returns}))
        # The set's own horizon is its y: the summary's IC, not one rebuilt from prices.
        decay[name] = {h: stats["ic_mean"] if h == horizon else _ic_mean(f, labels.get(h))
                       for h in wanted}  # fmt: skip
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    ic_frame = pd.DataFrame(ic, index=pd.DatetimeIndex(dates, name="date"), columns=list(ic))
    counts = ic_frame.notna().sum()
    labelled = int((~np.isnan(y)).sum())
    summary.attrs = {
        "labelled_rows": labelled,
        "na_rows": {n: labelled - int(r) for n, r in zip(ic, summary["rows"], strict=True)},
        "ic_dates": counts.astype(int).to_dict(),
        "dates_without_ic": (len(dates) - counts).astype(int).to_dict(),
        "horizon": horizon,
    }
    few = [f"{n} ({c})" for n, c in counts.items() if c < FEW_DATES]
    if few:
        warn(f"fewer than {FEW_DATES} dates have an IC, its mean is noise: {', '.join(few)}",
             DataQualityWarning)  # fmt: skip
    revisions = None
    if isinstance(read, LakeSource):
        revisions = _revisions(ts, read, summary, grid, y, plain.index)
    decay_frame = pd.DataFrame(decay).T.rename_axis(index="feature", columns="horizon")
    quantile_returns = pd.concat(qr, ignore_index=True) if qr else pd.DataFrame()
    return Evaluation(summary, ic_frame, quantile_returns, decay_frame.astype(float), revisions)


def _source(ts: TrainingSet, source: Any) -> Any:
    """The source given, else the set's lake when ``info`` names a local folder (not the
    service, frames or a URL); a lake read at the versions the set recorded."""
    if source is None:
        root = str(ts.info.get("source") or "")
        if not root or not Path(root).is_dir():
            return None
        from ...lake import Lake

        source = Lake(root)
    return resolve_source(pinned(source, ts.info), None, None)[0]


def _matrix(column: pd.Series, grid: tuple[Any, Any, tuple[int, int]]) -> np.ndarray:
    """A column of the (date, symbol) rows as a date x symbol float array (NaN: NA or no row)."""
    date_codes, symbol_codes, shape = grid
    out = np.full(shape, np.nan)
    out[date_codes, symbol_codes] = column.to_numpy(dtype="float64", na_value=np.nan)
    return out


def _ranks(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the average rank (from 1) of each value, NaN kept; and the rows sorted."""
    order = np.argsort(a, axis=1)  # NaN last; the order within ties does not matter
    ordered = np.take_along_axis(a, order, 1)
    pos = np.broadcast_to(np.arange(a.shape[1]), a.shape)
    new = np.ones(a.shape, dtype=bool)  # where a run of equal values starts
    new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first = np.maximum.accumulate(np.where(new, pos, 0), axis=1)
    ends = np.ones(a.shape, dtype=bool)
    ends[:, :-1] = new[:, 1:]
    last = np.minimum.accumulate(np.where(ends, pos, a.shape[1])[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty(a.shape)
    np.put_along_axis(ranks, order, (first + last) / 2 + 1, 1)
    ranks[np.isnan(a)] = np.nan
    return ranks, ordered


def _row_corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row, the Pearson correlation of ``a`` and ``b`` over the columns where both have a
    value; NaN below :data:`MIN_PAIRS` pairs or for a constant side."""
    both = ~(np.isnan(a) | np.isnan(b))
    n = both.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        da = np.where(both, a - np.where(both, a, 0).sum(1, keepdims=True) / n[:, None], 0)
        db = np.where(both, b - np.where(both, b, 0).sum(1, keepdims=True) / n[:, None], 0)
        r = (da * db).sum(1) / np.sqrt((da * da).sum(1) * (db * db).sum(1))
    r[(n < MIN_PAIRS) | ~np.isfinite(r)] = np.nan
    return r


def _ic_ranks(f: np.ndarray, y: np.ndarray, ry: Any = None) -> tuple[np.ndarray, ...]:
    """Per date, the Spearman rank IC of ``f`` and ``y`` over the rows where both have a
    value; and ``f``'s ranks and sorted rows there. ``ry``: ``y``'s ranks, for a ``f`` with
    a value wherever ``y`` has one."""
    used = ~(np.isnan(f) | np.isnan(y))
    rf, ordered = _ranks(np.where(used, f, np.nan))
    if ry is None or not np.array_equal(used, ~np.isnan(y)):
        ry = _ranks(np.where(used, y, np.nan))[0]
    return _row_corr(rf, ry), rf, ordered


def _quantile_of(f: np.ndarray, ordered: np.ndarray, q: int) -> np.ndarray:
    """Per date, each value's quantile (1..q; 0: NA) as ``pandas.qcut(values, q)``: edges
    interpolated linearly between the sorted values (``ordered``, NaN last), bins closed on
    the right."""
    k = (~np.isnan(f)).sum(axis=1)
    at = np.maximum(k[:, None] - 1, 0) * np.linspace(0, 1, q + 1)[None, 1:-1]
    lo = np.floor(at).astype(np.int64)
    hi = np.minimum(lo + 1, np.maximum(k[:, None] - 1, 0))
    a, b = np.take_along_axis(ordered, lo, 1), np.take_along_axis(ordered, hi, 1)
    edges = a + (b - a) * (at - lo)
    out = np.ones(f.shape, dtype=np.int64)
    for j in range(q - 1):
        out += f > edges[:, j : j + 1]
    out[np.isnan(f)] = 0
    return out


def _one(
    f: np.ndarray, y: np.ndarray, ry: np.ndarray, q: int, horizon: int
) -> tuple[dict[str, Any], np.ndarray, dict[str, np.ndarray]]:
    """One feature's summary row, per-date IC and quantile mean returns."""
    used = ~(np.isnan(f) | np.isnan(y))
    f = np.where(used, f, np.nan)
    ic, ranks, ordered = _ic_ranks(f, y, ry)
    quant = _quantile_of(f, ordered, q)
    yu = np.where(used, y, 0.0)
    # alphalens' mean: of each date's mean of the quantile's y demeaned by the date's mean.
    cells = (quant + np.arange(len(f))[:, None] * (q + 1)).ravel()
    with np.errstate(invalid="ignore", divide="ignore"):  # a date without rows has no mean
        demeaned = np.where(used, yu - yu.sum(1, keepdims=True) / used.sum(1)[:, None], 0.0)
        per = np.bincount(cells, demeaned.ravel(), len(f) * (q + 1)).reshape(len(f), q + 1)
        sizes = np.bincount(cells, minlength=len(f) * (q + 1)).reshape(len(f), q + 1)
        means = per[:, 1:] / sizes[:, 1:]
        mean = np.nansum(means, axis=0) / (~np.isnan(means)).sum(axis=0)
    count = sizes[:, 1:].sum(axis=0)
    x = ic[~np.isnan(ic)]
    stats = {
        "rows": int(used.sum()),
        "coverage": used.sum() / max(int((~np.isnan(y)).sum()), 1),
        **_ic_stats(x, horizon - 1),
        "q_spread": mean[-1] - mean[0],
        "turnover": _nanmean(np.array([_turnover(quant == q), _turnover(quant == 1)])),
        "autocorr": _nanmean(_row_corr(ranks[1:], ranks[:-1])),
    }
    return stats, ic, {"mean_return": mean, "count": count}


def _ic_stats(x: np.ndarray, lag: int) -> dict[str, float]:
    """Mean, std (ddof 1), IR, t, Newey-West t (Bartlett weights, ``lag``) and hit rate."""
    n = len(x)
    if not n:
        return dict.fromkeys(["ic_mean", "ic_std", "ic_ir", "ic_t", "ic_t_nw", "ic_hit"], np.nan)
    mean = x.mean()
    std = x.std(ddof=1) if n > 1 else np.nan
    d = x - mean
    var = d @ d / n
    for k in range(1, min(lag, n - 1) + 1):
        var += 2 * (1 - k / (lag + 1)) * (d[k:] @ d[:-k]) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"ic_mean": mean, "ic_std": std, "ic_ir": mean / std,
                "ic_t": mean / (std / np.sqrt(n)), "ic_t_nw": mean / np.sqrt(var / n),
                "ic_hit": (x > 0).mean()}  # fmt: skip


def _turnover(member: np.ndarray) -> float:
    """Mean over dates of the share of a quantile's symbols not in it the date before."""
    size = member[1:].sum(axis=1)
    new = (member[1:] & ~member[:-1]).sum(axis=1)
    return _nanmean(np.where(size > 0, new / np.maximum(size, 1), np.nan))


def _nanmean(x: np.ndarray) -> float:
    return float(np.nanmean(x)) if (~np.isnan(x)).any() else np.nan


def _ic_mean(f: np.ndarray, y: np.ndarray | None) -> float:
    return _nanmean(_ic_ranks(f, y)[0]) if y is not None else np.nan


def _labels(ts: TrainingSet, read: Any, horizons: list[int], dates: pd.Index, symbols: list[str],
            label: dict[str, Any]) -> dict[int, np.ndarray]:  # fmt: skip
    """Per horizon, the set's label definition at that horizon as a date x symbol array,
    from the prices of ``read`` (none without a source, or for a label of given prices)."""
    if read is None or label.get("prices") == "given" or not len(dates):
        return {}
    lag, offset = int(label.get("lag", 1)), check_offset(ts.info.get("freq", "B"))
    calendar = pd.date_range(dates[0], dates[-1], freq=offset)
    window = ForwardReturn(max(horizons), lag=lag).price_window(calendar, offset)
    prices = source_prices(read, symbols, window, "skip")
    spans, at = price_spans(read, symbols), calendar.get_indexer(dates)
    out = {}
    for h in horizons:
        values, _ = ForwardReturn(h, lag=lag).compute(calendar, symbols, offset, prices, spans)
        out[h] = values.reshape(len(calendar), len(symbols))[at]
    return out


def _revisions(ts: TrainingSet, read: LakeSource, summary: pd.DataFrame, grid: Any,
               y: np.ndarray, index: pd.Index) -> pd.DataFrame:  # fmt: skip
    """The IC mean as known (``ts.X``) against the IC mean of the latest versions' panel of
    the same rows, from the lake at the set's recorded versions."""
    info = ts.info
    latest = panel(info["symbols"], info["start"], info["end"], features_of(ts),
                   freq=info.get("freq", "B"), source=read, errors=info.get("errors", "raise"))  # fmt: skip
    latest = latest.reindex(index)
    latest.attrs = {}
    after = [_ic_mean(_matrix(latest[str(n)], grid), y) for n in summary["feature"]]
    out = pd.DataFrame({"feature": summary["feature"], "ic_mean_as_known": summary["ic_mean"],
                        "ic_mean_latest": after})  # fmt: skip
    out["ic_inflation"] = out["ic_mean_latest"] - out["ic_mean_as_known"]
    return out


def _plotly(feature: str, titles: tuple[str, ...], ic: Any, rolling: Any, q: Any, d: Any) -> Any:
    go = _deps.require("plotly.graph_objects", "plot", "interactive charts")
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=3, cols=1, subplot_titles=titles, vertical_spacing=0.1)
    fig.add_trace(go.Bar(x=ic.index, y=ic, name="IC", marker_color="#9ecae1"), 1, 1)
    fig.add_trace(go.Scatter(x=rolling.index, y=rolling, name="21-date mean"), 1, 1)
    fig.add_trace(go.Bar(x=q["quantile"], y=q["mean_return"], name="mean return"), 2, 1)
    fig.add_trace(go.Scatter(x=d.index, y=d, mode="lines+markers", name="IC mean"), 3, 1)
    fig.update_xaxes(title_text="horizon (periods)", row=3, col=1)
    fig.update_layout(title=f"Is {feature} worth a model?", template="plotly_white", height=900)
    return fig


def _matplotlib(feature: str, titles: tuple[str, ...], ic: Any, rolling: Any, q: Any,
                d: Any) -> Any:  # fmt: skip
    from ...plot import matplotlib_kit

    fig, axes = matplotlib_kit.pyplot().subplots(3, 1, figsize=(10, 9), layout="constrained")
    axes[0].bar(ic.index, ic.fillna(0), color="#9ecae1", label="IC")
    axes[0].plot(rolling.index, rolling, color="#08519c", label="21-date mean")
    axes[1].bar(q["quantile"], q["mean_return"], color="#6baed6")
    axes[2].plot(d.index, d, marker="o")
    axes[0].legend(fontsize=8)
    axes[2].set(xticks=list(d.index), xlabel="horizon (periods)")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_title(title, fontsize=10)
        ax.axhline(0, color="#888", lw=0.5)
    fig.suptitle(f"Is {feature} worth a model?")
    return fig


def write_report(ev: Evaluation, path: str | Path, title: str = "Feature evaluation") -> Path:
    """One self-contained HTML file: the summary and each feature's plotly charts, with
    plotly.js once."""
    charts = [
        ev.plot(str(name)).to_html(full_html=False, include_plotlyjs=(i == 0))
        for i, name in enumerate(ev.ic.columns)
    ]
    body = "".join([f"<h1>{html.escape(title)}</h1>", ev._repr_html_(), *charts])
    out = Path(path)
    out.write_text(f"<!doctype html><html><head><meta charset='utf-8'></head><body>{body}"
                   "</body></html>", encoding="utf-8")  # fmt: skip
    return out
