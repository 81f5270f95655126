"""What md.plot's charts share: the figure and its layout, the legend row, date and dollar
axes, interpretation bands, and checks of the input frame. Private to :mod:`mdframes.plot`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pandas as pd

from .. import _deps
from ..errors import InvalidParameterError

BAND_ALPHA = 0.15


def pyplot() -> Any:
    return _deps.require("matplotlib.pyplot", "plot", "plotting")


def axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    # Constrained layout keeps the legend row and the band names inside the figure, even
    # when it is saved without bbox_inches="tight".
    _, new_ax = pyplot().subplots(figsize=(10, 5), layout="constrained")
    return new_ax


def figure_renderer(fig: Any) -> Any:
    canvas = fig.canvas
    return canvas.get_renderer() if hasattr(canvas, "get_renderer") else fig._get_renderer()


def finish(
    ax: Any, title: str, handles: list[Any] | None = None, labels: list[str] | None = None
) -> None:
    """The title, and the legend as a row between the title and the plot (off the data)."""
    if handles is None or labels is None:
        handles, labels = ax.get_legend_handles_labels()
    pad = 6.0
    if handles:
        renderer = figure_renderer(ax.figure)
        room = ax.get_window_extent(renderer).width
        # As many columns as fit the width of the plot: one row for a few entries.
        for ncols in range(min(len(handles), 4), 0, -1):
            legend = ax.legend(
                handles,
                labels,
                loc="lower left",
                bbox_to_anchor=(0.0, 1.0),
                ncols=ncols,
                fontsize=8,
                frameon=False,
                borderaxespad=0.2,
            )
            if legend.get_window_extent(renderer).width <= room:
                break
        # The title goes above the legend: its pad is the legend's height, in points.
        pad += legend.get_window_extent(renderer).height * 72 / ax.figure.dpi
    ax.set_title(title, pad=pad)


def require(df: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    """Every chart starts here: matplotlib present, a frame with the columns and rows."""
    pyplot()
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{what} expects a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InvalidParameterError(
            f"{what} needs column(s) {', '.join(missing)}; the frame has {', '.join(map(str, df.columns))}",
            parameter="df",
        )
    if df.empty:
        raise InvalidParameterError(f"{what}: the frame has no rows to plot", parameter="df")


def symbols_of(df: pd.DataFrame) -> list[str]:
    return [str(s) for s in pd.unique(df["symbol"].dropna())] if "symbol" in df.columns else []


def one_symbol(df: pd.DataFrame, what: str) -> str:
    symbols = symbols_of(df)
    if len(symbols) > 1:
        first = symbols[0]
        raise InvalidParameterError(
            f"{what} draws one symbol; the frame holds {len(symbols)} ({', '.join(symbols)}). "
            f"Select one first, e.g. df[df['symbol'] == {first!r}]",
            parameter="df",
        )
    return symbols[0] if symbols else ""


def by_symbol(df: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
    """(symbol, rows sorted by date) for each symbol, in order of first appearance."""
    if "symbol" not in df.columns:
        yield "", df.sort_values("date")
        return
    for symbol in symbols_of(df):
        yield symbol, df[df["symbol"] == symbol].sort_values("date")


def date_axis(ax: Any) -> None:
    import matplotlib.dates as mdates

    # About one tick per inch, so that labels never run into each other on a narrow plot
    # (but at least 4: fewer can leave a single tick, which reads as a time of day).
    inches = ax.get_position().width * ax.figure.get_figwidth()
    locator = mdates.AutoDateLocator(minticks=3, maxticks=max(4, round(inches * 1.2)))
    # The data are daily: a few days get a tick per midnight, never one every few hours.
    locator.intervald[mdates.HOURLY] = [24]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(_span_formatter(locator))


def _span_formatter(locator: Any) -> Any:
    """matplotlib's concise date labels, with an offset (the text below the axis) that names
    the months the ticks span: ``Nov–Dec 2026``, never only the last tick's month (which put
    ``2026-Dec`` under November days)."""
    import matplotlib.dates as mdates

    class SpanFormatter(mdates.ConciseDateFormatter):
        span: str | None = None

        def format_ticks(self, values: Any) -> list[str]:
            labels = super().format_ticks(values)
            self.span = None
            if len(values):
                first, last = mdates.num2date(values[0]), mdates.num2date(values[-1])
                # Day ticks: the offset would be the last tick's month alone.
                if super().get_offset() == last.strftime(self.offset_formats[2]):
                    self.span = month_span(first, last)
            return labels

        def get_offset(self) -> str:
            return self.span or super().get_offset()

    return SpanFormatter(locator)


def month_span(first: Any, last: Any) -> str:
    """``Nov 2026``, ``Nov–Dec 2026`` or ``Dec 2025–Jan 2026``: the months from first to last.

    >>> import datetime as dt
    >>> month_span(dt.date(2026, 11, 23), dt.date(2026, 12, 3))
    'Nov–Dec 2026'
    """
    if (first.year, first.month) == (last.year, last.month):
        return last.strftime("%b %Y")
    if first.year == last.year:
        return f"{first.strftime('%b')}–{last.strftime('%b %Y')}"
    return f"{first.strftime('%b %Y')}–{last.strftime('%b %Y')}"


def bands(ax: Any, bands: Iterable[tuple[float, float, str, str]]) -> None:
    import matplotlib.transforms as mtransforms

    # Band names sit just right of the plot area, in data y and axes x coordinates.
    trans = mtransforms.blended_transform_factory(ax.transAxes, ax.transData)
    for low, high, label, colour in bands:
        ax.axhspan(low, high, color=colour, alpha=BAND_ALPHA, linewidth=0, zorder=0)
        ax.text(
            1.01,
            (low + high) / 2,
            label,
            transform=trans,
            va="center",
            fontsize=8,
            color=darker(colour),  # the pale band colours are hard to read as text
        )


def darker(colour: str, factor: float = 0.7) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(colour)
    return (r * factor, g * factor, b * factor)


def dollars(ax: Any) -> None:
    import matplotlib.ticker as mticker

    ax.yaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: money(v)))


def money(value: float) -> str:
    sign = "-" if value < 0 else ""
    return f"{sign}${short(abs(value))}"


def short(value: float) -> str:
    """``12000`` -> ``12k``, ``3.5e6`` -> ``3.5M``: axis labels that stay narrow."""
    sign = "-" if value < 0 else ""
    value = abs(value)
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{sign}{value / size:g}{unit}"
    return f"{sign}{value:g}"


def log_axis(ax: Any) -> None:
    """A log y axis labelled at 1, 2 and 5 of each decade, no minor labels (``6x10^4``
    next to ``$100k`` read as two scales)."""
    import matplotlib.ticker as mticker

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(mticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_minor_formatter(mticker.NullFormatter())


def counts(ax: Any) -> None:
    import matplotlib.ticker as mticker

    ax.yaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: short(v)))


def title(symbols: list[str], text: str) -> str:
    return f"{', '.join(symbols)} {text}".strip()


# Frequencies whose resampling bins are labelled by their end (pandas' own rule).
END_LABELLED = {"ME", "YE", "QE", "BME", "BYE", "BQE", "W"}


# The period a frequency alias stands for, by its letter ("ME", "MS", "BME" -> month).
PERIOD_WORDS = {
    "H": "hour",
    "D": "day",
    "W": "week",
    "M": "month",
    "Q": "quarter",
    "Y": "year",
    "A": "year",
}


def period(freq: str) -> str:
    """``"ME"`` -> ``"month"``, ``"2W"`` -> ``"2 weeks"``, ``"QE-DEC"`` -> ``"quarter"``."""
    offset = pd.tseries.frequencies.to_offset(freq)
    code = offset.rule_code.split("-")[0]
    letter = code[1:2] if code[:1] in ("B", "C") and len(code) > 1 else code[:1]
    word = PERIOD_WORDS.get(letter.upper(), "period")
    return word if offset.n == 1 else f"{offset.n} {word}s"


def bar_widths(index: pd.Index, freq: str) -> np.ndarray:
    """Signed bar widths in days, 80% of each period: bars sit inside their period, left of
    an end label (``"ME"``: the Jan 31 bar covers January) and right of a start label."""
    offset = pd.tseries.frequencies.to_offset(freq)
    days = np.array([(t - (t - offset)) / pd.Timedelta(days=1) * 0.8 for t in index], dtype=float)
    rule = offset.rule_code
    end = rule in END_LABELLED or rule.split("-")[0] in END_LABELLED
    return -days if end else days
