"""Quick-look charts of loaded frames, with the spec's interpretation bands drawn in.

Each function takes a frame in the loader's columns, draws on ``ax`` (a new figure when
omitted) and returns the matplotlib ``Axes``. The legend sits in a row between the title and
the plot, never over the data; band names sit right of the plot. A new figure uses
matplotlib's constrained layout, so everything lies inside it however it is saved; on an
``ax`` of your own, create its figure with ``layout="constrained"`` for the same. Nothing
here picks a backend: under a headless interpreter matplotlib falls back to Agg, and
``matplotlib.use("Agg")`` before the first call makes that explicit. Requires
``pip install "mdframes[plot]"``.

>>> ax = md.plot.sentiment(md.load_sentiment(["AAPL", "MSFT"]))
>>> ax.figure.savefig("sentiment.png")
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

from ..errors import InvalidParameterError
from . import matplotlib_charts
from .data import APP_RATING_BANDS, PUT_CALL_LEVELS, SENTIMENT_BANDS, TOP
from .matplotlib_charts import (
    app_ratings,
    congress_trades,
    forecast_fan,
    insider_activity,
    put_call,
    sentiment,
)
from .table import CHARTS

__all__ = [
    "chart",
    "write_html",
    "BACKENDS",
    "forecast_fan",
    "sentiment",
    "put_call",
    "insider_activity",
    "congress_trades",
    "app_ratings",
    "SENTIMENT_BANDS",
    "PUT_CALL_LEVELS",
    "APP_RATING_BANDS",
]

BACKENDS = ("matplotlib", "plotly")


def chart(
    df: pd.DataFrame,
    *,
    backend: str = "matplotlib",
    dataset: str | None = None,
    ax: Any = None,
    top: int = TOP,
    **options: Any,
) -> Any:
    """Draw any frame a v2 loader or a screener returns, chosen by ``df.attrs["dataset"]``.

    Parameters
    ----------
    df : DataFrame
        A per-symbol loader's frame (one symbol or several), a screener's or ``load_recent``'s.
    backend : {"matplotlib", "plotly"}
        ``"matplotlib"`` returns a ``matplotlib.figure.Figure``; ``"plotly"`` an interactive
        ``plotly.graph_objects.Figure`` (hover shows each record's main fields, time axes
        have a range slider; ``fig.write_html(path)`` saves one self-contained file,
        :func:`write_html` several on a page with plotly.js once).
    dataset : str, optional
        The registry name when the frame has no ``attrs["dataset"]`` (e.g. after a merge).
    ax : matplotlib Axes, optional
        Draw into this Axes (matplotlib, charts of one panel).
    top : int
        Screeners: how many symbols to show, the largest values first.
    **options
        Passed on to the named chart where there is one (``freq=`` for insider trading,
        ``per_app=`` for app ratings, ``kind=`` for sentiment).

    Examples
    --------
    >>> df = md.load_lobbying(["AAPL", "MSFT"])
    >>> fig = md.plot.chart(df)
    >>> md.plot.chart(df, backend="plotly").write_html("lobbying.html")
    """
    if backend not in BACKENDS:
        raise InvalidParameterError(
            f"chart: backend={backend!r} is not one of {', '.join(map(repr, BACKENDS))}",
            parameter="backend",
        )
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"chart expects a pandas DataFrame, got {type(df).__name__}")
    name = dataset or df.attrs.get("dataset")
    if not name:
        raise InvalidParameterError(
            "chart: the frame has no attrs['dataset'] (it was built or merged by hand); "
            "name it, e.g. md.plot.chart(df, dataset='sentiment')",
            parameter="dataset",
        )
    spec = CHARTS.get(str(name))
    if spec is None:
        raise InvalidParameterError(
            f"chart: no chart for dataset {name!r}; charts exist for {', '.join(sorted(CHARTS))}",
            parameter="dataset",
        )
    if df.empty:
        raise InvalidParameterError(f"chart: the {name} frame has no rows to plot", parameter="df")
    if backend == "plotly":
        if ax is not None:
            raise InvalidParameterError("chart: ax= is for matplotlib only", parameter="ax")
        from . import plotly_charts

        return plotly_charts.draw(df, spec, top=top, **options)
    return matplotlib_charts.draw(df, spec, ax, top=top, **options)


def write_html(
    figures: Any, path: str | os.PathLike[str], *, include_plotlyjs: bool | str = "directory"
) -> str:
    """Several plotly charts in one HTML page, plotly.js in it once or beside it.

    ``fig.write_html`` embeds plotly.js (4.8 MB) in every file; a page of charts, or charts
    that share a folder, need it once.

    Parameters
    ----------
    figures : plotly Figure or list of them
        Charts of :func:`chart` with ``backend="plotly"``.
    path : str or Path
    include_plotlyjs : {"directory", "cdn"} or bool
        ``"directory"``: the page loads ``plotly.min.js`` from its folder (written once, shared
        by every page there); ``True``: embedded, one self-contained page; ``"cdn"``: loaded
        from plotly's CDN. As plotly's ``write_html``.

    Returns
    -------
    str
        The path written.

    Examples
    --------
    >>> frames = [md.load_lobbying(["AAPL", "MSFT"]), md.load_sentiment("AAPL")]
    >>> figs = [md.plot.chart(df, backend="plotly") for df in frames]
    >>> md.plot.write_html(figs, "charts.html")
    'charts.html'
    """
    from pathlib import Path

    figs = figures if isinstance(figures, (list, tuple)) else [figures]
    if include_plotlyjs not in (True, False, "directory", "cdn") or not figs:
        raise InvalidParameterError(
            "write_html: give one figure or more, and include_plotlyjs True, False, "
            f"'directory' or 'cdn' (got {include_plotlyjs!r})",
            parameter="include_plotlyjs",
        )
    target = Path(path)
    parts = [
        fig.to_html(full_html=False, include_plotlyjs=include_plotlyjs if i == 0 else False)
        for i, fig in enumerate(figs)
    ]
    if include_plotlyjs == "directory" and not (target.parent / "plotly.min.js").exists():
        from plotly.offline import get_plotlyjs

        (target.parent / "plotly.min.js").write_text(get_plotlyjs(), encoding="utf-8")
    head = '<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body>\n'
    target.write_text(head + "\n".join(parts) + "\n</body></html>\n", encoding="utf-8")
    return str(path)
