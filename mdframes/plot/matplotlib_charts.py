"""The matplotlib charts of :mod:`mdframes.plot`: one function per dataset that has a
named chart, and one drawer per chart kind for :func:`mdframes.plot.chart`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import InvalidParameterError
from . import data
from . import matplotlib_kit as kit
from .data import APP_RATING_BANDS, PUT_CALL_LEVELS, SENTIMENT_BANDS
from .table import Chart

# --- per-dataset charts -----------------------------------------------------------------------


def forecast_fan(df: pd.DataFrame, ax: Any = None) -> Any:
    """Forecast mid line with its lower..upper band, one fan per symbol (and type).

    Parameters
    ----------
    df : DataFrame
        ``load_forecast`` output: ``symbol, date, mid, lower, upper`` (``type`` optional).
    ax : matplotlib Axes, optional

    Examples
    --------
    >>> ax = md.plot.forecast_fan(md.load_forecast(["AAPL", "MSFT"]))
    """
    kit.require(df, ("symbol", "date", "mid", "lower", "upper"), "forecast_fan")
    ax = kit.axes(ax)
    keys = ["symbol", "type"] if "type" in df.columns and df["type"].nunique() > 1 else ["symbol"]
    for key, rows in df.groupby(keys, observed=True, sort=False):
        label = " ".join(str(k) for k in (key if isinstance(key, tuple) else (key,)))
        rows = rows.sort_values("date")
        (line,) = ax.plot(rows["date"], rows["mid"].astype(float), marker=".", label=f"{label} mid")
        ax.fill_between(
            rows["date"],
            rows["lower"].astype(float),
            rows["upper"].astype(float),
            color=line.get_color(),
            alpha=0.2,
            label=f"{label} lower..upper",
        )
    kind = ""
    if "type" in df.columns and df["type"].nunique() == 1:
        kind = f" ({df['type'].dropna().iloc[0]})"
    ax.set_ylabel("price")
    kit.date_axis(ax)
    kit.finish(ax, kit.title(kit.symbols_of(df), f"forecast{kind}"))
    return ax


# Past this many symbols, lines over the bands become an unreadable block: a heatmap instead.
SENTIMENT_LINES_MAX = 4


def sentiment(df: pd.DataFrame, ax: Any = None, kind: str = "auto") -> Any:
    """Sentiment score over time over the spec's five bands (strong/moderate bullish,
    neutral, moderate/strong bearish).

    A few symbols are lines over the shaded bands; more than four become a heatmap, one row
    per symbol, each day coloured by its band, so that many symbols stay readable.

    Parameters
    ----------
    df : DataFrame
        ``load_sentiment`` output (``date``, ``score``; ``symbol`` optional).
    ax : matplotlib Axes, optional
    kind : {"auto", "lines", "heatmap"}
        ``"auto"``: lines up to four symbols, a heatmap past that.

    Examples
    --------
    >>> ax = md.plot.sentiment(md.load_sentiment("AAPL"))
    >>> ax = md.plot.sentiment(md.load_sentiment(["AAPL", "MSFT", "NVDA", "TSLA", "AMZN"]))
    """
    kit.require(df, ("date", "score"), "sentiment")
    if kind not in ("auto", "lines", "heatmap"):
        raise InvalidParameterError(
            f"sentiment: kind={kind!r} is not 'auto', 'lines' or 'heatmap'", parameter="kind"
        )
    symbols = kit.symbols_of(df)
    if kind == "heatmap" or (kind == "auto" and len(symbols) > SENTIMENT_LINES_MAX):
        return _sentiment_heatmap(df, ax, symbols)
    ax = _sentiment_axes(kit.axes(ax))
    for symbol, rows in kit.by_symbol(df):
        ax.plot(rows["date"], rows["score"].astype(float), marker=".", label=symbol or "score")
    ax.axhline(0.0, color="black", linewidth=0.5)
    ax.set_ylabel("score (-1 bearish .. 1 bullish)")
    kit.date_axis(ax)
    kit.finish(ax, kit.title(symbols, "sentiment"))
    return ax


def _sentiment_axes(ax: Any) -> Any:
    """The score scale of sentiment: the spec's bands under -1..1."""
    kit.bands(ax, SENTIMENT_BANDS)
    ax.set_ylim(-1.0, 1.0)
    return ax


def _symbol_lines(ax: Any, symbols: list[str], rows: pd.DataFrame, **style: Any) -> None:
    """One line per symbol of ``rows`` (columns ``x``, ``y``), in the symbol's colour, tagged
    ``data:<symbol>`` for the tests that count each symbol's points."""
    for i, symbol in enumerate(symbols):
        part = rows[rows["symbol"] == symbol]
        (line,) = ax.plot(part["x"], part["y"], color=f"C{i}", label=symbol, **style)
        line.set_gid(f"data:{symbol}")


def _sentiment_heatmap(df: pd.DataFrame, ax: Any, symbols: list[str]) -> Any:
    """One row per symbol, one cell per day, coloured by the spec's band of its score."""
    import matplotlib.dates as mdates
    from matplotlib.colors import BoundaryNorm, ListedColormap

    rows = (
        df.assign(symbol=df["symbol"].astype(str))
        if "symbol" in df.columns
        else df.assign(symbol="score")
    )
    days = pd.to_datetime(rows["date"]).dt.normalize()
    grid = (
        rows.assign(day=days, score=rows["score"].astype(float))
        .pivot_table(index="symbol", columns="day", values="score", aggfunc="mean")
        .reindex(symbols or ["score"])
    )
    span = pd.date_range(grid.columns.min(), grid.columns.max(), freq="D")
    grid = grid.reindex(columns=span)  # a day without a score stays blank
    edges = mdates.date2num(span.append(span[-1:] + pd.Timedelta(days=1)))
    bands = sorted(SENTIMENT_BANDS)  # lowest first
    cmap = ListedColormap([colour for *_, colour in bands]).with_extremes(bad="white")
    norm = BoundaryNorm([bands[0][0]] + [high for _, high, _, _ in bands], cmap.N)
    ax = kit.axes(ax)
    mesh = ax.pcolormesh(
        edges,
        np.arange(len(grid.index) + 1),
        np.ma.masked_invalid(grid.to_numpy(dtype=float)),
        cmap=cmap,
        norm=norm,
        shading="flat",
    )
    ax.set_yticks(np.arange(len(grid.index)) + 0.5, labels=list(grid.index))
    ax.set_ylim(len(grid.index), 0)  # the first symbol on top, as in the frame
    ax.tick_params(axis="y", length=0)
    bar = ax.figure.colorbar(mesh, ax=ax, pad=0.01, fraction=0.04)
    bar.set_ticks([(low + high) / 2 for low, high, _, _ in bands])
    bar.set_ticklabels([label for _, _, label, _ in bands], fontsize=8)
    bar.ax.tick_params(length=0)
    kit.date_axis(ax)
    named = symbols if len(symbols) <= 6 else [f"{len(symbols)} symbols"]
    kit.finish(ax, kit.title(named, "sentiment by day"))
    return ax


def put_call(df: pd.DataFrame, ax: Any = None) -> Any:
    """Put/call ratio per symbol with the 0.7 and 1.2 reference lines; the closing price,
    when present, on a twin y axis (dashed, in a colour of its own: dark grey for one
    symbol, with each y axis in its line's colour).

    Returns the ratio Axes; the price Axes is its twin,
    ``ax.get_shared_x_axes().get_siblings(ax)``.

    Examples
    --------
    >>> ax = md.plot.put_call(md.load_put_call_ratio("AAPL"))
    """
    kit.require(df, ("date", "ratio"), "put_call")
    ax = kit.axes(ax)
    has_price = "price" in df.columns and df["price"].notna().any()
    price_ax = ax.twinx() if has_price else None
    groups = list(kit.by_symbol(df))
    for i, (symbol, rows) in enumerate(groups):
        ax.plot(
            rows["date"],
            rows["ratio"].astype(float),
            color=f"C{i}",
            label=f"{symbol} ratio".strip(),
        )
        if price_ax is not None:
            # A colour of its own, never the ratio's: one symbol's price is dark grey, and
            # several symbols' prices take the colours after the ratios'.
            colour = data.PRICE_COLOUR if len(groups) == 1 else f"C{len(groups) + i}"
            price_ax.plot(
                rows["date"],
                rows["price"].astype(float),
                linestyle="--",
                linewidth=1,
                color=colour,
                label=f"{symbol} price".strip(),
            )
    if price_ax is not None and len(groups) == 1:
        # One symbol: each axis in the colour of its line, so it is clear which is which.
        price_ax.tick_params(axis="y", colors=data.PRICE_COLOUR)
        price_ax.yaxis.label.set_color(data.PRICE_COLOUR)
        ax.tick_params(axis="y", colors="C0")
        ax.yaxis.label.set_color("C0")
    for level, label in PUT_CALL_LEVELS:
        ax.axhline(level, color="grey", linestyle=":", linewidth=1, label=label)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("put/call ratio")
    handles, labels = ax.get_legend_handles_labels()
    if price_ax is not None:
        price_ax.set_ylabel("price")
        more_handles, more_labels = price_ax.get_legend_handles_labels()
        handles, labels = handles + more_handles, labels + more_labels
    kit.date_axis(ax)
    kit.finish(ax, kit.title(kit.symbols_of(df), "put/call ratio"), handles, labels)
    return ax


def insider_activity(df: pd.DataFrame, ax: Any = None, freq: str = "ME") -> Any:
    """Summed ``total_value`` per group (acquisition, disposition, neutral) per period.

    Acquisitions (and neutral transactions, stacked on them) rise above zero, dispositions
    hang below it, so net buying and selling read at a glance. Groups come from the
    ``group`` column, or from :func:`mdframes.helpers.insider_groups` when it is missing.
    One symbol per chart.

    Parameters
    ----------
    df : DataFrame
        ``load_insider_trading`` output (``date``, ``total_value``, ``transaction_type``).
    ax : matplotlib Axes, optional
    freq : str
        pandas period alias: ``"ME"`` month ends (default), ``"W"``, ``"QE"``, ``"YE"``.

    Examples
    --------
    >>> ax = md.plot.insider_activity(md.load_insider_trading("AAPL"), freq="QE")
    """
    kit.require(df, ("date", "total_value"), "insider_activity")
    try:
        period = kit.period(freq)
    except (ValueError, TypeError) as exc:
        raise InvalidParameterError(
            f"insider_activity: freq={freq!r} is not a pandas period alias such as 'ME', 'W', "
            f"'QE' or 'YE' ({exc})",
            parameter="freq",
        ) from None
    if "group" not in df.columns:
        kit.require(df, ("transaction_type",), "insider_activity")
        from ..helpers import insider_groups

        df = insider_groups(df)
    symbol = kit.one_symbol(df, "insider_activity")
    ax = kit.axes(ax)
    _insider_bars(ax, _insider_sums(df, freq), freq)
    ax.set_ylabel("total value (USD)")
    kit.dollars(ax)
    kit.date_axis(ax)
    kit.finish(ax, kit.title([symbol] if symbol else [], f"insider activity per {period}"))
    return ax


def _insider_sums(df: pd.DataFrame, freq: str) -> pd.DataFrame:
    """Summed ``total_value`` per period (rows) and group (columns)."""
    values = df.assign(total_value=df["total_value"].astype("Float64").fillna(0.0))
    values = values[values["group"].notna() & values["date"].notna()]
    if values.empty:
        raise InvalidParameterError(
            "insider_activity: no dated rows with a known group", parameter="df"
        )
    return (
        values.pivot_table(
            index=pd.Grouper(key="date", freq=freq),
            columns="group",
            values="total_value",
            aggfunc="sum",
            observed=True,
        )
        .astype(float)
        .fillna(0.0)
    )


def _insider_bars(ax: Any, sums: pd.DataFrame, freq: str) -> None:
    """Acquisitions up, neutral stacked on them, dispositions hanging below zero."""
    width = kit.bar_widths(sums.index, freq)
    acquired = sums["acquisition"].to_numpy() if "acquisition" in sums else np.zeros(len(sums))
    # (group, heights, bottoms, label): neutral stacks on acquisitions, dispositions hang down.
    layers = [
        ("acquisition", acquired, 0.0, "acquisition"),
        ("neutral", sums.get("neutral"), acquired, "neutral"),
        ("disposition", -sums.get("disposition", 0.0), 0.0, "disposition (below zero)"),
    ]
    for group, heights, bottom, label in layers:
        # A group with no value in the window (conversions are often $0) draws no bar, so it
        # gets no legend entry either.
        if group in sums and sums[group].abs().sum() > 0:
            ax.bar(
                sums.index,
                np.asarray(heights, dtype=float),
                width,
                bottom=bottom,
                align="edge",
                color=data.GROUP_COLOURS[group],
                label=label,
            )
    ax.axhline(0.0, color="black", linewidth=0.5)
    # Set the y range from the data: bars stacked on others make their tops "sticky" for
    # matplotlib's autoscaling, which would leave the tallest bar touching the frame.
    top = float((acquired + np.asarray(sums.get("neutral", 0.0), dtype=float)).max(initial=0.0))
    bottom = -float(np.asarray(sums.get("disposition", 0.0), dtype=float).max(initial=0.0))
    margin = 0.08 * ((top - bottom) or 1.0)
    ax.set_ylim(bottom - margin if bottom < 0 else 0.0, top + margin if top > 0 else margin)


def congress_trades(df: pd.DataFrame, ax: Any = None) -> Any:
    """Each congress trade at its date as a vertical line from ``amount_min`` to
    ``amount_max`` (log scale), coloured by purchase/sale; open-ended amounts get a marker
    instead of a line: ``Over $X`` an upward one at its minimum, ``Under $X`` a downward one
    at its maximum. Bounds come from
    :func:`mdframes.helpers.congress_amount_bounds` when the columns are missing; trades
    with no known bound are left out. One symbol per chart.

    Examples
    --------
    >>> ax = md.plot.congress_trades(md.load_congress_trades("NVDA"))
    """
    kit.require(df, ("date",), "congress_trades")
    if "amount_min" not in df.columns or "amount_max" not in df.columns:
        kit.require(df, ("amount",), "congress_trades")
        from ..helpers import congress_amount_bounds

        df = congress_amount_bounds(df)
    symbol = kit.one_symbol(df, "congress_trades")
    ax = kit.axes(ax)
    lo = df["amount_min"].astype("Float64")
    hi = df["amount_max"].astype("Float64")
    # "Under $X" (min 0) has no lower bound a log axis can show: a downward marker at its
    # maximum, as "Over $X" gets an upward one at its minimum; never a bar down to $1.
    under = (lo == 0).fillna(False) & hi.notna()
    known = df["date"].notna() & (lo.notna() & ~under | under)
    kinds = (
        df["transaction_type"].astype("string").fillna("other")
        if "transaction_type" in df.columns
        else pd.Series("trade", index=df.index, dtype="string")
    )
    for kind in pd.unique(kinds[known]):
        rows = known & (kinds == kind)
        colour = data.TRADE_COLOURS.get(str(kind), "#4575b4")
        bounded = rows & hi.notna() & ~under
        dates = df.loc[bounded, "date"]
        ax.vlines(
            dates,
            lo[bounded].to_numpy(dtype=float),
            hi[bounded].to_numpy(dtype=float),
            colors=colour,
            linewidth=2,
            label=str(kind),
        )
        ax.scatter(dates, lo[bounded].to_numpy(dtype=float), color=colour, marker="_", s=30)
        # (rows, the bound drawn, marker, words): open-ended up from its minimum, "under" down
        # from its maximum.
        for ends, bound, marker, words in (
            (rows & hi.isna(), lo, "^", "open-ended"),
            (rows & under, hi, "v", "under"),
        ):
            if ends.any():
                ax.scatter(
                    df.loc[ends, "date"],
                    bound[ends].to_numpy(dtype=float),
                    color=colour,
                    marker=marker,
                    s=40,
                    label=f"{kind} ({words})",
                )
    ax.set_yscale("log")
    kit.dollars(ax)
    ax.set_ylabel("amount (USD, min..max)")
    kit.date_axis(ax)
    kit.finish(ax, kit.title([symbol] if symbol else [], "congress trades"))
    return ax


def app_ratings(df: pd.DataFrame, ax: Any = None, per_app: bool = False) -> Any:
    """App score over time over the spec's rating-quality bands: one line per platform's
    biggest app (most ratings), or per app with ``per_app=True``. One symbol per chart.

    Parameters
    ----------
    df : DataFrame
        ``load_app_ratings(view="apps")`` output; a ``view="daily"`` frame is converted with
        :func:`mdframes.helpers.app_ratings_long`.
    ax : matplotlib Axes, optional
    per_app : bool
        Draw every app instead of the biggest one per platform.

    Examples
    --------
    >>> ax = md.plot.app_ratings(md.load_app_ratings("AAPL"), per_app=True)
    """
    if isinstance(df, pd.DataFrame) and "platform" not in df.columns and "ios_score" in df.columns:
        from ..helpers import app_ratings_long

        df = app_ratings_long(df)
    kit.require(df, ("platform", "date", "score"), "app_ratings")
    symbol = kit.one_symbol(df, "app_ratings")
    if "app_id" not in df.columns:
        df = df.assign(app_id=pd.Series(pd.NA, index=df.index, dtype="string"))
    rows = df if per_app else data.biggest_apps(df)
    ax = kit.axes(ax)
    kit.bands(ax, APP_RATING_BANDS)
    for (platform, app_id), app in rows.groupby(
        ["platform", "app_id"], dropna=False, observed=True, sort=True
    ):
        app = app.sort_values("date")
        names = (
            app["app_name"].dropna() if "app_name" in app.columns else pd.Series([], dtype=object)
        )
        title = names.iloc[-1] if len(names) else (app_id if isinstance(app_id, str) else "")
        label = f"{platform}: {title}" if title else str(platform)
        ax.plot(app["date"], app["score"].astype(float), marker=".", label=label)
    ax.set_ylim(1.0, 5.0)
    ax.set_ylabel("score (1..5)")
    kit.date_axis(ax)
    kit.finish(ax, kit.title([symbol] if symbol else [], "app ratings"))
    return ax


def _one_panel(function: Any) -> Any:
    """A named chart of several symbols in one Axes."""

    def draw(df: pd.DataFrame, spec: Chart, ax: Any, top: int, **options: Any) -> Any:
        return function(df, ax=ax, **options).figure

    return draw


def _facets(function: Any) -> Any:
    """A named chart of one symbol: one panel per symbol, sharing the time axis."""

    def draw(df: pd.DataFrame, spec: Chart, ax: Any, top: int, **options: Any) -> Any:
        symbols = kit.symbols_of(df)
        if len(symbols) <= 1:
            return function(df, ax=ax, **options).figure
        if ax is not None:
            raise InvalidParameterError(
                f"chart: {spec.title} of {len(symbols)} symbols draws one panel per symbol; "
                "leave ax= out (a new figure) or select one symbol",
                parameter="ax",
            )
        fig, axes = _stacked(len(symbols), 1.0, 3.4)
        for symbol, panel in zip(symbols, axes, strict=True):
            function(df[df["symbol"].astype("string") == symbol], ax=panel, **options)
        return fig

    return draw


def _stacked(n: int, base: float, per_panel: float) -> tuple[Any, list[Any]]:
    """A new figure of ``n`` panels, one over the other, sharing the time axis."""
    fig, grid = kit.pyplot().subplots(
        n, 1, figsize=(10, base + per_panel * n), sharex=True, layout="constrained", squeeze=False
    )
    return fig, list(grid[:, 0])


def _note(title: str, rows: pd.DataFrame, spec: Chart) -> str:
    """The title, and how many rows could not be drawn (never left out silently)."""
    note = data.left_out_note(rows, spec)
    return f"{title}\n({note})" if note else title


def _mpl_events(df: pd.DataFrame, spec: Chart, ax: Any, top: int, **options: Any) -> Any:
    rows = data.events(df, spec)
    ax = kit.axes(ax)
    if spec.bands == "sentiment":
        _sentiment_axes(ax)
    for i, symbol in enumerate(data.symbols(df)):
        part = rows[rows["symbol"] == symbol]
        if part.empty:
            continue
        label = symbol or spec.title
        if spec.running:
            (line,) = ax.step(
                part["x"], part["y"], where="post", marker=".", color=f"C{i}", label=label
            )
        else:
            line = ax.scatter(part["x"], part["y"], s=18, color=f"C{i}", alpha=0.8, label=label)
        line.set_gid(f"data:{symbol}")
    if spec.log:
        kit.log_axis(ax)
    if "USD" in spec.label:
        kit.dollars(ax)
    return _time_figure(ax, df, rows, spec)


def _mpl_totals(df: pd.DataFrame, spec: Chart, ax: Any, top: int, **options: Any) -> Any:
    rows = data.totals(df, spec)
    ax = kit.axes(ax)
    _symbol_lines(ax, data.symbols(df), rows, linewidth=1.2)
    ax.set_ylim(bottom=0)
    return _time_figure(ax, df, rows, spec)


def _time_figure(ax: Any, df: pd.DataFrame, rows: pd.DataFrame, spec: Chart) -> Any:
    """The figure of a one-panel chart over time: its label, date axis, title and note."""
    ax.set_ylabel(spec.label)
    kit.date_axis(ax)
    kit.finish(ax, _note(kit.title(kit.symbols_of(df), spec.title), rows, spec))
    return ax.figure


def _mpl_metrics(df: pd.DataFrame, spec: Chart, ax: Any, top: int, **options: Any) -> Any:
    panels = data.metrics(df, spec)
    if ax is not None and len(panels) > 1:
        raise InvalidParameterError(
            f"chart: {spec.title} draws {len(panels)} panels; leave ax= out", parameter="ax"
        )
    fig, axes = _stacked(len(panels), 1.5, 2.6) if ax is None else (ax.figure, [ax])
    symbols = data.symbols(df)
    for panel, (column, rows) in zip(axes, panels.items(), strict=True):
        _symbol_lines(panel, symbols, rows, marker=".")
        panel.set_ylabel(column.replace("_", " "))
        kit.counts(panel)
        kit.date_axis(panel)
    for panel in axes[1:]:
        panel.set_title("")
    notes = [
        f"{column.replace('_', ' ')}: {data.left_out_note(rows, spec)}"
        for column, rows in panels.items()
        if rows.attrs["left_out"]
    ]
    title = kit.title(kit.symbols_of(df), spec.title)
    kit.finish(axes[0], title + ("\n(" + "; ".join(notes) + ")" if notes else ""))
    return fig


def _mpl_ranking(df: pd.DataFrame, spec: Chart, ax: Any, top: int, **options: Any) -> Any:
    rows = data.ranking(df, spec, top)
    if ax is None:
        _, ax = kit.pyplot().subplots(figsize=(10, 1.6 + 0.3 * len(rows)), layout="constrained")
    positions = np.arange(len(rows))
    colours = ["#d73027" if v < 0 else "#4575b4" for v in rows["y"]]
    if data.ranking_dots(rows, spec):
        ax.grid(axis="y", color="#dddddd", linewidth=0.6)
        ax.scatter(rows["y"], positions, color=colours, s=30, zorder=3).set_gid("data:ranking")
        if rows["y"].min() < 0 < rows["y"].max():
            ax.axvline(0.0, color="black", linewidth=0.5)
    else:
        for bar in ax.barh(positions, rows["y"], color=colours, height=0.7):
            bar.set_gid("data:ranking")
        ax.axvline(0.0, color="black", linewidth=0.5)
    ax.set_yticks(positions, labels=list(rows["symbol"]))
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the largest on top
    label, title = data.ranking_words(rows, spec)
    ax.set_xlabel(label)
    if "USD" in label:
        import matplotlib.ticker as mticker

        ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: kit.money(v)))
    ax.tick_params(axis="y", length=0, labelsize=8)
    kit.finish(ax, title)
    return ax.figure


_MATPLOTLIB: dict[str, Any] = {
    "fan": _one_panel(forecast_fan),
    "bands": _one_panel(sentiment),
    # Daily ratios of several symbols over each other are unreadable: a panel per symbol.
    "ratio": _facets(put_call),
    "insider": _facets(insider_activity),
    "congress": _facets(congress_trades),
    "apps": _facets(app_ratings),
    "events": _mpl_events,
    "metrics": _mpl_metrics,
    "totals": _mpl_totals,
    "ranking": _mpl_ranking,
}


def draw(df: pd.DataFrame, spec: Chart, ax: Any, top: int, **options: Any) -> Any:
    """The matplotlib ``Figure`` of ``df``, drawn by its chart ``spec``'s kind."""
    kit.pyplot()
    fig = _MATPLOTLIB[spec.kind](df, spec, ax, top=top, **options)
    if spec.kind == "congress":
        # congress_trades leaves out trades with no known amount: say how many.
        note = data.left_out_note(data.congress(df, spec), spec)
        if note:
            fig.suptitle(note, fontsize=8, color="#57606a")
    return fig
