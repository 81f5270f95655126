"""Interactive charts (plotly) for :func:`mdframes.plot.chart`: the same data as the
matplotlib charts (:mod:`mdframes.plot.data`), with each record's main fields on hover,
a range slider under time axes, and several symbols as traces or facets.

Every trace that holds data carries ``meta={"symbol": ..., "role": "data"}``, so the points
of each symbol can be told from bands and reference lines. Private to :mod:`mdframes.plot`.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pandas as pd

from .. import _deps
from . import data
from .table import Chart

# plotly's own palette (D3 category10), as matplotlib's C0.. are.
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#d62728",
)
_PLATFORM_COLOURS = {"ios": PALETTE[0], "android": PALETTE[1]}
TEXT_MAX = 90  # characters of a headline or description shown on hover


def _go() -> Any:
    return _deps.require("plotly.graph_objects", "plot", "interactive charts")


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _darker(hex_colour: str, factor: float = 0.6) -> str:
    """The pale band colours are hard to read as text."""
    r, g, b = (int(int(hex_colour[i : i + 2], 16) * factor) for i in (1, 3, 5))
    return f"#{r:02x}{g:02x}{b:02x}"


def _text(value: Any) -> str:
    """One hover value as escaped text: dates as days, numbers with thousands commas."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return "–"
    if isinstance(value, pd.Timestamp):
        if value is pd.NaT:
            return "–"
        return value.strftime("%Y-%m-%d %H:%M" if (value.hour or value.minute) else "%Y-%m-%d")
    if isinstance(value, (float, np.floating)):
        return f"{value:,.2f}"
    if isinstance(value, (int, np.integer)):
        return f"{value:,}"
    if isinstance(value, (list, tuple, np.ndarray)):
        value = ", ".join(map(str, value))
    text = str(value)
    if len(text) > TEXT_MAX:
        text = text[: TEXT_MAX - 1] + "…"
    return html.escape(text)


def _hover(rows: pd.DataFrame, fields: tuple[str, ...], y_label: str) -> dict[str, Any]:
    """A trace's customdata (escaped text per field) and a hovertemplate naming each field."""
    present = [f for f in fields if f in rows.columns]
    custom = np.array(
        [[_text(v) for v in rows[f].tolist()] for f in present], dtype=object
    ).T.reshape(len(rows), len(present))
    lines = ["<b>%{meta.symbol}</b>", "%{x|%Y-%m-%d}"]
    if y_label:
        lines.append(f"{html.escape(y_label)}: %{{y:,.2f}}")
    lines += [
        f"{html.escape(f.replace('_', ' '))}: %{{customdata[{i}]}}" for i, f in enumerate(present)
    ]
    return {"customdata": custom, "hovertemplate": "<br>".join(lines) + "<extra></extra>"}


def _figure(rows: int = 1, titles: tuple[str, ...] = (), secondary: bool = False) -> Any:
    from plotly.subplots import make_subplots

    _go()
    specs = [[{"secondary_y": secondary}] for _ in range(rows)]
    return make_subplots(
        rows=rows,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=min(0.08, 0.3 / rows),
        subplot_titles=titles or None,
        specs=specs,
    )


def _finish(
    fig: Any, title: str, rows: int = 1, time: bool = True, note: str = "", height: int = 0
) -> Any:
    if note:
        title += f"<br><sup>{html.escape(note)}</sup>"
    fig.update_layout(
        title={"text": title, "x": 0.01, "xanchor": "left"},
        template="plotly_white",
        # The legend in a row above the plot, never over the data; panels of several symbols
        # have their titles there, so their legend goes right of the plot.
        legend=(
            {"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0.0}
            if rows == 1
            else {"orientation": "v", "yanchor": "top", "y": 1.0, "x": 1.1}
        ),
        hovermode="closest",
        height=height or (180 + 260 * rows + (60 if time else 0)),
        margin={"t": 110, "r": 120},
    )
    if time:
        fig.update_xaxes(rangeslider={"visible": True, "thickness": 0.06}, row=rows, col=1)
        fig.update_xaxes(type="date")
    return fig


def _bands(fig: Any, bands: Any, row: int | None = None) -> None:
    """Shaded bands, their names right of the plot (inside, a line would cover them)."""
    yref = fig.get_subplot(row or 1, 1).yaxis.plotly_name.replace("axis", "")
    for low, high, label, band_colour in bands:
        # exclude_empty_subplots=False: the bands go in before the traces they lie under.
        fig.add_hrect(
            y0=low,
            y1=high,
            fillcolor=band_colour,
            opacity=0.15,
            line_width=0,
            layer="below",
            row=row or 1,
            col=1,
            exclude_empty_subplots=False,
        )
        fig.add_annotation(
            text=html.escape(label),
            xref="paper",
            x=1.0,
            xanchor="left",
            yref=yref,
            y=(low + high) / 2,
            showarrow=False,
            font={"size": 10, "color": _darker(band_colour)},
        )


def _money_log_axis(fig: Any, values: pd.Series, row: int | None = None) -> None:
    """A log y axis labelled in dollars at 1, 2 and 5 of each decade of ``values``: plotly's
    own minor labels (bare 2 and 5) read as amounts."""
    positive = values[values > 0]
    ticks: list[float] = []
    if len(positive):
        low, high = np.floor(np.log10(positive.min())), np.ceil(np.log10(positive.max()))
        ticks = [m * 10**e for e in range(int(low), int(high) + 1) for m in (1, 2, 5)]
        ticks = [t for t in ticks if positive.min() / 2 <= t <= positive.max() * 2]
    from .matplotlib_kit import money

    kw = {"row": row, "col": 1} if row else {}
    fig.update_yaxes(type="log", tickvals=ticks, ticktext=[money(t) for t in ticks], **kw)


def _symbol_trace(symbol: str, **kw: Any) -> Any:
    kw.setdefault("name", symbol)
    kw.setdefault("legendgroup", symbol)
    return _go().Scatter(meta={"symbol": symbol, "role": "data"}, **kw)


def _panel_trace(
    fig: Any, r: int, symbol: str, g: pd.DataFrame, hover: tuple[str, ...], y_label: str, **kw: Any
) -> None:
    """``symbol``'s trace of ``g``'s ``x`` and ``y`` on panel ``r``."""
    trace = _symbol_trace(symbol, x=g["x"], y=g["y"], **_hover(g, hover, y_label), **kw)
    fig.add_trace(trace, row=r, col=1)


def _symbol_lines(
    fig: Any,
    symbols: list[str],
    frame: pd.DataFrame,
    hover: tuple[str, ...],
    y_label: str,
    *,
    row: int | None = None,
    unnamed: str = "",
    style: Any = None,
    **extra: Any,
) -> None:
    """One trace per symbol of ``frame`` (columns ``x``, ``y``), in the symbol's colour: a
    line unless ``style(i)`` gives the trace's mode and look. ``unnamed`` names the trace of
    a frame without symbols."""
    for i, symbol in enumerate(symbols):
        part = (frame[frame["symbol"] == symbol] if symbol else frame).sort_values("x")
        look = style(i) if style else {"mode": "lines", "line": {"color": colour(i)}}
        trace = _symbol_trace(
            symbol or unnamed,
            x=part["x"],
            y=part["y"],
            **_hover(part, hover, y_label),
            **look,
            **extra,
        )
        fig.add_trace(trace, **({"row": row, "col": 1} if row else {}))


# --- kinds -------------------------------------------------------------------------------------


def _fan(df: pd.DataFrame, spec: Chart, **_: Any) -> Any:
    fig = _figure()
    keys = ["symbol", "type"] if "type" in df.columns and df["type"].nunique() > 1 else ["symbol"]
    frame = df.assign(symbol=df["symbol"].astype("string")) if "symbol" in df.columns else df
    for i, (key, rows) in enumerate(frame.groupby(keys, observed=True, sort=False)):
        parts = key if isinstance(key, tuple) else (key,)
        symbol, label = str(parts[0]), " ".join(map(str, parts))
        rows = rows.sort_values("date")
        c = colour(i)
        # The band: an invisible upper line, then the lower one filled up to it.
        band = {"fill": "tonexty", "fillcolor": _rgba(c, 0.2), "name": f"{label} lower..upper"}
        for bound, style in (("upper", {"showlegend": False}), ("lower", band)):
            fig.add_trace(
                _go().Scatter(
                    x=rows["date"],
                    y=rows[bound].astype(float),
                    mode="lines",
                    line={"width": 0},
                    hoverinfo="skip",
                    legendgroup=label,
                    **style,
                )
            )
        fig.add_trace(
            _symbol_trace(
                symbol,
                x=rows["date"],
                y=rows["mid"].astype(float),
                mode="lines+markers",
                name=f"{label} mid",
                legendgroup=label,
                line={"color": c},
                **_hover(rows, spec.hover, ""),
            )
        )
    fig.update_yaxes(title_text=spec.label)
    return _finish(fig, data_title(df, spec))


def _bands_kind(df: pd.DataFrame, spec: Chart, **_: Any) -> Any:

    fig = _figure()
    _bands(fig, data.SENTIMENT_BANDS)
    frame = df.assign(x=pd.to_datetime(df["date"]), y=df["score"].astype(float))
    _symbol_lines(fig, data.symbols(df), frame, (), "score")
    fig.update_yaxes(range=[-1, 1], title_text="score (-1 bearish .. 1 bullish)")
    return _finish(fig, data_title(df, spec))


def _ratio(df: pd.DataFrame, spec: Chart, **_: Any) -> Any:
    """One panel per symbol: a day's ratio swings too much for several lines to be read
    over each other, and each price needs its own scale."""

    has_price = bool("price" in df.columns and df["price"].notna().any())
    symbols = data.symbols(df)
    fig = _figure(len(symbols), tuple(symbols) if len(symbols) > 1 else (), secondary=has_price)
    frame = df.assign(x=pd.to_datetime(df["date"]), y=df["ratio"].astype(float))
    for r, symbol in enumerate(symbols, start=1):
        rows = (frame[frame["symbol"] == symbol] if symbol else frame).sort_values("x")
        _panel_trace(
            fig, r, symbol, rows, spec.hover, "",
            mode="lines",
            name="put/call ratio",
            legendgroup="ratio",
            showlegend=r == 1,
            line={"color": colour(0), "width": 1},
        )  # fmt: skip
        if has_price:
            _price_line(fig, rows, r)
        _put_call_levels(fig, r)
        fig.update_yaxes(
            title_text="put/call ratio", rangemode="tozero", row=r, col=1, secondary_y=False
        )
    return _finish(fig, data_title(df, spec), len(symbols))


def _price_line(fig: Any, rows: pd.DataFrame, r: int) -> None:
    """The symbol's price on panel ``r``'s own right-hand axis, dashed under the ratio."""
    fig.add_trace(
        _go().Scatter(
            x=rows["x"],
            y=rows["price"].astype(float),
            mode="lines",
            name="price",
            legendgroup="price",
            showlegend=r == 1,
            line={"color": data.PRICE_COLOUR, "dash": "dash", "width": 1},
            hovertemplate="price: %{y:,.2f}<extra></extra>",
        ),
        row=r,
        col=1,
        secondary_y=True,
    )
    fig.update_yaxes(title_text="price", showgrid=False, row=r, col=1, secondary_y=True)


def _put_call_levels(fig: Any, r: int) -> None:
    """The spec's reference ratios on panel ``r``, named on the first panel only."""
    for level, label in data.PUT_CALL_LEVELS:
        words = (
            {
                "annotation_text": label,
                "annotation_position": "bottom left",
                "annotation_font_size": 10,
                "annotation_bgcolor": "rgba(255,255,255,0.7)",
            }
            if r == 1
            else {}
        )
        fig.add_hline(
            y=level,
            line_dash="dot",
            line_color="grey",
            row=r,
            col=1,
            exclude_empty_subplots=False,
            secondary_y=False,
            **words,
        )


def _insider(df: pd.DataFrame, spec: Chart, **_: Any) -> Any:
    rows = data.insider(df, spec)
    symbols = data.symbols(df)
    fig = _figure(len(symbols), tuple(symbols) if len(symbols) > 1 else ())
    for r, symbol in enumerate(symbols, start=1):
        part = rows[rows["symbol"] == symbol]
        for group, colour_ in data.GROUP_COLOURS.items():
            g = part[part["group"] == group]
            if g.empty:
                continue
            _panel_trace(
                fig, r, symbol, g, spec.hover, "total value",
                mode="markers",
                name=group,
                legendgroup=group,
                showlegend=r == 1 or group not in _shown(fig),
                marker={"color": colour_, "size": 8, "opacity": 0.8},
            )  # fmt: skip
        fig.add_hline(y=0, line_color="black", line_width=0.5, row=r, col=1)
        fig.update_yaxes(title_text="USD (sales < 0)", tickprefix="$", row=r, col=1)
    return _finish(fig, data_title(df, spec), len(symbols), note=data.left_out_note(rows, spec))


def _shown(fig: Any) -> set[str]:
    return {t.legendgroup for t in fig.data if t.showlegend is not False}


def _congress(df: pd.DataFrame, spec: Chart, **_: Any) -> Any:
    rows = data.congress(df, spec)
    symbols = data.symbols(df)
    fig = _figure(len(symbols), tuple(symbols) if len(symbols) > 1 else ())
    for r, symbol in enumerate(symbols, start=1):
        part = rows[rows["symbol"] == symbol]
        for kind in pd.unique(part["kind"]):
            g = part[part["kind"] == kind]
            up = (g["hi"] - g["y"]).where(g["lo"].notna(), 0.0).fillna(0.0)
            markers = np.where(
                g["hi"].isna(), "triangle-up", np.where(g["lo"].isna(), "triangle-down", "circle")
            )
            _panel_trace(
                fig, r, symbol, g, spec.hover, "",
                mode="markers",
                name=str(kind),
                legendgroup=str(kind),
                showlegend=str(kind) not in _shown(fig),
                marker={
                    "color": data.TRADE_COLOURS.get(str(kind), "#4575b4"),
                    "size": 7,
                    "symbol": markers,
                },
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": up.to_numpy(),
                    "arrayminus": np.zeros(len(g)),
                    "width": 0,
                    "thickness": 2,
                },
            )  # fmt: skip
        fig.update_yaxes(title_text="USD (min..max)", row=r, col=1)
        _money_log_axis(fig, pd.concat([part["lo"], part["hi"], part["y"]]), row=r)
    return _finish(fig, data_title(df, spec), len(symbols), note=data.left_out_note(rows, spec))


def _apps(df: pd.DataFrame, spec: Chart, per_app: bool = False, **_: Any) -> Any:

    rows = data.apps(df, spec, per_app=per_app)
    symbols = data.symbols(df)
    fig = _figure(len(symbols), tuple(symbols) if len(symbols) > 1 else ())
    for r, symbol in enumerate(symbols, start=1):
        _bands(fig, data.APP_RATING_BANDS, row=r)
        part = rows[rows["symbol"] == symbol]
        for series in pd.unique(part["series"]):
            g = part[part["series"] == series]
            # One colour per platform in every panel, as the legend says.
            platform = str(series).split(":")[0]
            _panel_trace(
                fig, r, symbol, g, spec.hover, "",
                mode="lines+markers",
                name=f"{symbol} {series}".strip(),
                line={"color": _PLATFORM_COLOURS.get(platform, colour(2))},
            )  # fmt: skip
        fig.update_yaxes(range=[1, 5], title_text="score (1..5)", row=r, col=1)
    return _finish(fig, data_title(df, spec), len(symbols), note=data.left_out_note(rows, spec))


def _events(df: pd.DataFrame, spec: Chart, **_: Any) -> Any:
    rows = data.events(df, spec)
    fig = _figure()
    if spec.bands == "sentiment":
        _bands(fig, data.SENTIMENT_BANDS)
        fig.update_yaxes(range=[-1, 1])

    def style(i: int) -> dict[str, Any]:
        if spec.running:
            return {"mode": "lines+markers", "line": {"shape": "hv", "color": colour(i)}}
        return {"mode": "markers", "marker": {"color": colour(i), "size": 7, "opacity": 0.8}}

    label = "" if spec.running else spec.label
    _symbol_lines(fig, data.symbols(df), rows, spec.hover, label, unnamed=spec.title, style=style)
    fig.update_yaxes(title_text=spec.label)
    if spec.log:
        _money_log_axis(fig, rows["y"])
    elif "USD" in spec.label:
        fig.update_yaxes(tickprefix="$")
    return _finish(fig, data_title(df, spec), note=data.left_out_note(rows, spec))


def _metrics(df: pd.DataFrame, spec: Chart, **_: Any) -> Any:
    panels = data.metrics(df, spec)
    fig = _figure(len(panels), tuple(c.replace("_", " ") for c in panels))
    for r, (column, rows) in enumerate(panels.items(), start=1):
        label = column.replace("_", " ")
        _symbol_lines(fig, data.symbols(df), rows, (), label, row=r, showlegend=r == 1)
    notes = [
        f"{c.replace('_', ' ')}: {data.left_out_note(r, spec)}"
        for c, r in panels.items()
        if r.attrs["left_out"]
    ]
    return _finish(
        fig,
        data_title(df, spec),
        len(panels),
        note="; ".join(notes),
        height=200 * len(panels) + 240,
    )


def _totals(df: pd.DataFrame, spec: Chart, **_: Any) -> Any:
    rows = data.totals(df, spec)
    fig = _figure()
    _symbol_lines(fig, data.symbols(df), rows, ("records",), "mentions in the week")
    fig.update_yaxes(title_text=spec.label, rangemode="tozero")
    return _finish(fig, data_title(df, spec), note=data.left_out_note(rows, spec))


def _ranking(df: pd.DataFrame, spec: Chart, top: int = data.TOP, **_: Any) -> Any:
    rows = data.ranking(df, spec, top)
    go = _go()
    label, title = data.ranking_words(rows, spec)
    colours = ["#d73027" if v < 0 else "#4575b4" for v in rows["y"]]
    dots = data.ranking_dots(rows, spec)
    shape: dict[str, Any] = (
        {"mode": "markers", "marker": {"color": colours, "size": 9}}
        if dots
        else {"orientation": "h", "marker": {"color": colours}}
    )
    fig = go.Figure(
        (go.Scatter if dots else go.Bar)(
            x=rows["y"],
            y=rows["symbol"],
            **shape,
            customdata=np.array([[_text(n)] for n in rows["name"]], dtype=object),
            hovertemplate="<b>%{y}</b> %{customdata[0]}<br>"
            + html.escape(label)
            + ": %{x:,.2f}<extra></extra>",
            meta={"symbol": "*", "role": "data"},
            name=label,
        )
    )
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(title_text=label, tickprefix="$" if "USD" in label else None)
    first, _sep, scope = title.partition("\n")
    title = f"{html.escape(first)}<br><sup>{html.escape(scope)}</sup>"
    return _finish(fig, title, time=False, height=200 + 22 * len(rows))


def data_title(df: pd.DataFrame, spec: Chart) -> str:
    symbols = [s for s in data.symbols(df) if s]
    named = ", ".join(symbols) if len(symbols) <= 6 else f"{len(symbols)} symbols"
    return html.escape(f"{named} {spec.title}".strip())


_KINDS = {
    "fan": _fan,
    "bands": _bands_kind,
    "ratio": _ratio,
    "insider": _insider,
    "congress": _congress,
    "apps": _apps,
    "events": _events,
    "metrics": _metrics,
    "totals": _totals,
    "ranking": _ranking,
}


def draw(df: pd.DataFrame, spec: Chart, top: int = data.TOP, **options: Any) -> Any:
    """The plotly Figure of ``df`` as ``spec`` says."""
    _go()
    return _KINDS[spec.kind](df, spec, top=top, **options)
