"""Charts: each is rendered to a PNG file with Agg and its artists are checked."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot is imported anywhere: headless, deterministic

import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import LineCollection, PathCollection, PolyCollection  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402

import mdframes as md  # noqa: E402
from mdframes import plot  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


def render(ax, tmp_path: Path) -> Path:
    path = tmp_path / "chart.png"
    ax.figure.savefig(path)
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 1000
    return path


def dates(*values: str) -> pd.Series:
    return pd.Series(pd.to_datetime(list(values))).astype("datetime64[ns]")


def labelled_lines(ax) -> dict[str, object]:
    return {
        line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")
    }


def xdates(line) -> list[pd.Timestamp]:
    return [
        pd.Timestamp(mdates.num2date(x)).tz_localize(None)
        for x in mdates.date2num(line.get_xdata())
    ]


# --- fixtures built by hand in the loaders' columns ------------------------------------------


def forecast_frame() -> pd.DataFrame:
    rows = []
    for symbol, base in (("AAPL", 200.0), ("MSFT", 400.0)):
        # Newest first, as the service lists them: the chart must sort.
        for i, day in enumerate(["2026-09-07", "2026-09-04", "2026-09-03"]):
            mid = base - i
            rows.append((symbol, f"{symbol} Inc.", "daily", day, mid, mid - 5 - i, mid + 5 + i))
    df = pd.DataFrame(rows, columns=["symbol", "name", "type", "date", "mid", "lower", "upper"])
    return df.astype(
        {
            "symbol": "string",
            "name": "string",
            "type": "category",
            "date": "datetime64[ns]",
        }
    )


def sentiment_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "symbol": pd.Series(["AAPL"] * 3 + ["MSFT"] * 3, dtype="string"),
            "name": pd.Series(["Apple"] * 3 + ["Microsoft"] * 3, dtype="string"),
            "date": dates(*["2026-01-03", "2026-01-02", "2026-01-01"] * 2),
            "score": [0.6, -0.3, 0.1, -0.8, 0.0, 0.45],
        }
    )


def put_call_frame(with_price: bool = True) -> pd.DataFrame:
    df = pd.DataFrame(
        {
            "symbol": pd.Series(["TSLA"] * 3, dtype="string"),
            "name": pd.Series(["Tesla"] * 3, dtype="string"),
            "date": dates("2026-01-03", "2026-01-02", "2026-01-01"),
            "ratio": [0.65, 1.3, 0.9],
            "call_volume": pd.array([100, 50, 80], dtype="Int64"),
            "put_volume": pd.array([65, 65, 72], dtype="Int64"),
            "total_volume": pd.array([165, 115, 152], dtype="Int64"),
            "price": [250.0, 245.5, 240.0],
        }
    )
    return df if with_price else df.drop(columns="price")


def insider_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "symbol": pd.Series(["AAPL"] * 6, dtype="string"),
            "name": pd.Series(["Apple"] * 6, dtype="string"),
            "date": dates(
                "2026-01-05", "2026-01-20", "2026-01-25", "2026-02-03", "2026-02-10", "2026-03-01"
            ),
            "transaction_type": pd.Series(
                ["Purchase", "Award", "Sale", "Tax", "Conversion", "Purchase"], dtype="category"
            ),
            "total_value": pd.array([1000, 500, 4000, 300, 200, None], dtype="Int64"),
        }
    )


def congress_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "symbol": pd.Series(["NVDA"] * 4, dtype="string"),
            "name": pd.Series(["NVIDIA"] * 4, dtype="string"),
            "chamber": pd.Series(["house", "senate", "house", "house"], dtype="category"),
            "date": dates("2026-01-05", "2026-01-10", "2026-01-12", "2026-01-15"),
            "politician": pd.Series(["A", "B", "C", "D"], dtype="string"),
            "transaction_type": pd.Series(
                ["Purchase", "Sale", "Purchase", "Sale"], dtype="category"
            ),
            "amount": pd.Series(
                ["$1,001 - $15,000", "$50,001 - $100,000", "Over $5,000,000", "Unknown"],
                dtype="string",
            ),
        }
    )


def apps_frame() -> pd.DataFrame:
    days = ["2026-09-05", "2026-09-04", "2026-09-03"]
    rows = []
    apps = [
        ("ios", "1", "Big iOS app", 4.6, 90_000),
        ("ios", "2", "Small iOS app", 3.2, 900),
        ("android", "com.x", "Android app", 4.1, 50_000),
    ]
    for platform, app_id, app_name, score, count in apps:
        for i, day in enumerate(days):
            rows.append((platform, app_id, app_name, day, score - 0.1 * i, count - i))
    df = pd.DataFrame(
        rows, columns=["platform", "app_id", "app_name", "date", "score", "ratings_count"]
    )
    df.insert(0, "symbol", "AAPL")
    df.insert(1, "name", "Apple")
    return df.astype(
        {
            "symbol": "string",
            "name": "string",
            "platform": pd.CategoricalDtype(["ios", "android"]),
            "app_id": "string",
            "app_name": "string",
            "date": "datetime64[ns]",
            "ratings_count": "Int64",
        }
    )


# --- forecast --------------------------------------------------------------------------------


def test_forecast_fan_one_fan_per_symbol(tmp_path: Path) -> None:
    df = forecast_frame()
    ax = plot.forecast_fan(df)
    render(ax, tmp_path)
    lines = labelled_lines(ax)
    assert set(lines) == {"AAPL mid", "MSFT mid"}
    aapl = lines["AAPL mid"]
    assert list(aapl.get_ydata()) == [198.0, 199.0, 200.0]  # sorted by date, oldest first
    assert xdates(aapl) == list(pd.to_datetime(["2026-09-03", "2026-09-04", "2026-09-07"]))
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2
    ys = bands[0].get_paths()[0].vertices[:, 1]
    assert ys.min() == pytest.approx(191.0) and ys.max() == pytest.approx(205.0)
    assert "daily" in ax.get_title()


def test_forecast_fan_draws_on_the_given_axes(tmp_path: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2)
    assert plot.forecast_fan(forecast_frame(), ax=right) is right
    assert not left.get_lines() and len(right.get_lines()) == 2
    render(right, tmp_path)


# --- sentiment ---------------------------------------------------------------------------------


def test_sentiment_bands_and_lines(tmp_path: Path) -> None:
    ax = plot.sentiment(sentiment_frame())
    render(ax, tmp_path)
    assert set(labelled_lines(ax)) == {"AAPL", "MSFT"}
    assert list(labelled_lines(ax)["MSFT"].get_ydata()) == [0.45, 0.0, -0.8]
    spans = sorted((round(p.get_bbox().y0, 6), round(p.get_bbox().y1, 6)) for p in ax.patches)
    assert spans == [(-1.0, -0.5), (-0.5, -0.2), (-0.2, 0.2), (0.2, 0.5), (0.5, 1.0)]
    texts = {t.get_text() for t in ax.texts}
    assert {
        "strong bullish",
        "moderate bullish",
        "neutral",
        "moderate bearish",
        "strong bearish",
    } <= texts
    assert ax.get_ylim() == (-1.0, 1.0)


def test_sentiment_without_symbol_column(tmp_path: Path) -> None:
    df = sentiment_frame().drop(columns=["symbol", "name"]).iloc[:3]
    ax = plot.sentiment(df)
    assert set(labelled_lines(ax)) == {"score"}
    render(ax, tmp_path)


# --- put/call ---------------------------------------------------------------------------------


def test_put_call_reference_lines_and_price_twin(tmp_path: Path) -> None:
    ax = plot.put_call(put_call_frame())
    render(ax, tmp_path)
    lines = labelled_lines(ax)
    assert list(lines["TSLA ratio"].get_ydata()) == [0.9, 1.3, 0.65]
    levels = sorted(
        float(line.get_ydata()[0]) for line in ax.get_lines() if len(set(line.get_ydata())) == 1
    )
    assert levels == [0.7, 1.2]
    twins = [a for a in ax.figure.axes if a is not ax]
    assert len(twins) == 1 and twins[0] in ax.get_shared_x_axes().get_siblings(ax)
    (price,) = twins[0].get_lines()
    assert list(price.get_ydata()) == [240.0, 245.5, 250.0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "TSLA price" in legend and "TSLA ratio" in legend


def test_put_call_without_price_has_no_twin(tmp_path: Path) -> None:
    ax = plot.put_call(put_call_frame(with_price=False))
    assert ax.figure.axes == [ax]
    render(ax, tmp_path)


# --- insider activity --------------------------------------------------------------------------


def bars(ax) -> dict[str, BarContainer]:
    return {c.get_label(): c for c in ax.containers if isinstance(c, BarContainer)}


def test_insider_activity_groups_from_transaction_types(tmp_path: Path) -> None:
    ax = plot.insider_activity(insider_frame())
    render(ax, tmp_path)
    found = bars(ax)
    assert set(found) == {"acquisition", "neutral", "disposition (below zero)"}
    heights = {k: [r.get_height() for r in v] for k, v in found.items()}
    # Months Jan, Feb, Mar 2026; a missing total_value counts as nothing.
    assert heights["acquisition"] == [1500.0, 0.0, 0.0]
    assert heights["disposition (below zero)"] == [-4000.0, -300.0, 0.0]
    assert heights["neutral"] == [0.0, 200.0, 0.0]
    # Neutral bars stack on the acquisitions.
    assert [r.get_y() for r in found["neutral"]] == [1500.0, 0.0, 0.0]
    # Each bar lies inside its month (month-end labels: the bar sits left of Jan 31).
    january = found["acquisition"][0].get_bbox()
    left, right = (
        pd.Timestamp(mdates.num2date(x)).tz_localize(None)
        for x in (min(january.x0, january.x1), max(january.x0, january.x1))
    )
    assert pd.Timestamp("2026-01-01") <= left < right <= pd.Timestamp("2026-01-31")


def test_insider_activity_uses_an_existing_group_column_and_freq(tmp_path: Path) -> None:
    df = insider_frame().drop(columns="transaction_type")
    df["group"] = pd.Series(["acquisition"] * 6, dtype="category")
    ax = plot.insider_activity(df, freq="QE")
    found = bars(ax)
    assert list(found) == ["acquisition"]
    assert [r.get_height() for r in found["acquisition"]] == [6000.0]
    assert ax.get_title() == "AAPL insider activity per quarter"
    render(ax, tmp_path)


@pytest.mark.parametrize(
    ("freq", "words"),
    [
        ("ME", "per month"),
        ("MS", "per month"),
        ("W", "per week"),
        ("2W", "per 2 weeks"),
        ("QE", "per quarter"),
        ("YE", "per year"),
        ("D", "per day"),
    ],
)
def test_insider_activity_title_names_the_period_in_words(freq: str, words: str) -> None:
    title = plot.insider_activity(insider_frame(), freq=freq).get_title()
    assert title == f"AAPL insider activity {words}"
    assert "(" not in title and freq not in title.split()


def test_insider_activity_refuses_an_unknown_freq() -> None:
    with pytest.raises(md.InvalidParameterError, match="freq='monthly'"):
        plot.insider_activity(insider_frame(), freq="monthly")


def test_insider_activity_tallest_bars_clear_the_frame() -> None:
    ax = plot.insider_activity(insider_frame())
    rects = [r for c in ax.containers if isinstance(c, BarContainer) for r in c]
    tops = [max(r.get_y(), r.get_y() + r.get_height()) for r in rects]
    bottoms = [min(r.get_y(), r.get_y() + r.get_height()) for r in rects]
    low, high = ax.get_ylim()
    # Acquisitions reach 1,500 (neutral 200 stacks on a 0 bar); dispositions 4,000 below.
    assert max(tops) == 1500.0 and min(bottoms) == -4000.0
    assert high > 1500.0 + 0.05 * 5500 and low < -4000.0 - 0.05 * 5500


def test_insider_activity_refuses_several_symbols() -> None:
    df = pd.concat([insider_frame(), insider_frame().assign(symbol="MSFT")], ignore_index=True)
    with pytest.raises(md.InvalidParameterError, match=r"2 \(AAPL, MSFT\)"):
        plot.insider_activity(df)


# --- congress ---------------------------------------------------------------------------------


def test_congress_trades_ranges_from_amount_text(tmp_path: Path) -> None:
    ax = plot.congress_trades(congress_frame())
    render(ax, tmp_path)
    ranges = {
        c.get_label(): [tuple(seg[:, 1]) for seg in c.get_segments()]
        for c in ax.collections
        if isinstance(c, LineCollection)
    }
    assert ranges == {"Purchase": [(1001.0, 15000.0)], "Sale": [(50001.0, 100000.0)]}
    open_ended = [
        c for c in ax.collections if isinstance(c, PathCollection) and "open-ended" in c.get_label()
    ]
    assert len(open_ended) == 1
    assert open_ended[0].get_offsets()[0][1] == 5_000_001.0
    assert ax.get_yscale() == "log"


def test_congress_trades_uses_given_bounds(tmp_path: Path) -> None:
    df = congress_frame().drop(columns="amount")
    df["amount_min"] = pd.array([0, 10, 20, None], dtype="Int64")
    df["amount_max"] = pd.array([999, 10, 30, None], dtype="Int64")
    ax = plot.congress_trades(df)
    segments = [
        tuple(seg[:, 1])
        for c in ax.collections
        if isinstance(c, LineCollection)
        for seg in c.get_segments()
    ]
    # "Under $1,000" has no lower bound on a log axis: no bar down to $1 (issue 18), a downward
    # marker at its maximum instead; the unknown trade is left out.
    assert sorted(segments) == [(10.0, 10.0), (20.0, 30.0)]
    (under,) = [c for c in ax.collections if "(under)" in str(c.get_label())]
    assert under.get_offsets()[:, 1].tolist() == [999.0]
    assert min(lo for lo, _ in segments) >= 10.0
    render(ax, tmp_path)


# --- app ratings -------------------------------------------------------------------------------


def test_app_ratings_biggest_app_per_platform(tmp_path: Path) -> None:
    ax = plot.app_ratings(apps_frame())
    render(ax, tmp_path)
    lines = labelled_lines(ax)
    assert set(lines) == {"ios: Big iOS app", "android: Android app"}
    assert list(lines["ios: Big iOS app"].get_ydata()) == pytest.approx([4.4, 4.5, 4.6])
    assert len(ax.patches) == 5 and ax.get_ylim() == (1.0, 5.0)


def test_app_ratings_per_app(tmp_path: Path) -> None:
    ax = plot.app_ratings(apps_frame(), per_app=True)
    assert set(labelled_lines(ax)) == {
        "ios: Big iOS app",
        "ios: Small iOS app",
        "android: Android app",
    }
    render(ax, tmp_path)


def test_app_ratings_from_the_daily_view(tmp_path: Path) -> None:
    daily = pd.DataFrame(
        {
            "symbol": pd.Series(["AAPL"] * 2, dtype="string"),
            "name": pd.Series(["Apple"] * 2, dtype="string"),
            "date": dates("2026-09-04", "2026-09-03"),
            "ios_score": [4.5, 4.4],
            "ios_ratings_count": pd.array([10, 9], dtype="Int64"),
            "android_score": [np.nan, 3.9],
            "android_ratings_count": pd.array([None, 7], dtype="Int64"),
            "android_install_count": pd.array([None, 1000], dtype="Int64"),
        }
    )
    ax = plot.app_ratings(daily)
    lines = list(labelled_lines(ax).values())
    assert len(lines) == 2
    assert sorted(len(line.get_ydata()) for line in lines) == [1, 2]
    render(ax, tmp_path)


# --- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("func", "frame", "missing"),
    [
        (plot.forecast_fan, lambda: forecast_frame().drop(columns="upper"), "upper"),
        (plot.sentiment, lambda: sentiment_frame().drop(columns="score"), "score"),
        (plot.put_call, lambda: put_call_frame().drop(columns="ratio"), "ratio"),
        (
            plot.insider_activity,
            lambda: insider_frame().drop(columns="transaction_type"),
            "transaction_type",
        ),
        (plot.congress_trades, lambda: congress_frame().drop(columns="amount"), "amount"),
        (plot.app_ratings, lambda: apps_frame().drop(columns="score"), "score"),
    ],
)
def test_missing_columns_are_named(func, frame, missing: str) -> None:
    with pytest.raises(md.InvalidParameterError, match=missing):
        func(frame())


def test_empty_frame_is_a_clear_error() -> None:
    with pytest.raises(md.InvalidParameterError, match="no rows"):
        plot.sentiment(sentiment_frame().iloc[:0])
    with pytest.raises(TypeError):
        plot.sentiment([1, 2])  # type: ignore[arg-type]


def test_missing_matplotlib_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # Absent as a whole (a None entry makes its import fail as if it were not installed).
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r'pip install "mdframes\[plot\]"'):
        plot.sentiment(sentiment_frame())


# --- layout: every label inside the figure, legends off the data ---------------------------

CHARTS = {
    "forecast_fan": (plot.forecast_fan, forecast_frame),
    "sentiment": (plot.sentiment, sentiment_frame),
    "put_call": (plot.put_call, put_call_frame),
    "insider_activity": (plot.insider_activity, insider_frame),
    "congress_trades": (plot.congress_trades, congress_frame),
    "app_ratings": (plot.app_ratings, apps_frame),
}


def drawn_texts(fig) -> Iterator[tuple[str, object]]:
    """Every text a reader sees: titles, axis labels, tick labels, offsets, band names and
    legend entries, of every axes (twins included)."""
    for ax in fig.axes:
        yield "title", ax.title
        for axis in (ax.xaxis, ax.yaxis):
            yield "axis label", axis.label
            yield "offset", axis.get_offset_text()
            yield from drawn_texts_of(axis)
        for text in ax.texts:
            yield "band", text
        legend = ax.get_legend()
        if legend is not None:
            for text in legend.get_texts():
                yield "legend", text


def drawn_texts_of(axis) -> Iterator[tuple[str, object]]:
    low, high = sorted(axis.get_view_interval())
    slack = 1e-9 * abs(high - low)
    for tick in axis.get_major_ticks() + axis.get_minor_ticks():
        # Ticks outside the view are kept by matplotlib but never drawn.
        if low - slack <= tick.get_loc() <= high + slack:
            for label in (tick.label1, tick.label2):
                if label.get_visible():
                    yield "tick label", label


def assert_laid_out(ax, path: Path, *, legend_row: bool = True) -> None:
    fig = ax.figure
    fig.savefig(path)  # no bbox_inches="tight": the figure as it is
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    seen = 0
    for kind, text in drawn_texts(fig):
        if not text.get_visible() or not text.get_text():
            continue
        seen += 1
        ext = text.get_window_extent(renderer)
        inside = (
            ext.x0 >= box.x0 - 0.5
            and ext.y0 >= box.y0 - 0.5
            and ext.x1 <= box.x1 + 0.5
            and ext.y1 <= box.y1 + 0.5
        )
        assert inside, f"{kind} {text.get_text()!r} at {ext.bounds} outside {box.bounds}"
    assert seen > 10
    for axis in (ax.xaxis, ax.yaxis):
        boxes = [t.get_window_extent(renderer) for _, t in drawn_texts_of(axis) if t.get_text()]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                assert not a.overlaps(b), f"tick labels overlap: {a.bounds} {b.bounds}"
    if not legend_row:  # a heatmap: its colour bar names the bands
        return
    legend = ax.get_legend()
    assert legend is not None
    area = ax.get_window_extent(renderer)
    legend_box = legend.get_window_extent(renderer)
    assert legend_box.y0 >= area.y1 - 0.5, "the legend overlaps the plot area"
    assert not legend_box.overlaps(ax.title.get_window_extent(renderer)), "legend under title"


@pytest.mark.parametrize("name", list(CHARTS))
def test_every_label_lies_inside_the_figure(name: str, tmp_path: Path) -> None:
    draw, frame = CHARTS[name]
    assert_laid_out(draw(frame()), tmp_path / f"{name}.png")


def test_the_sentiment_heatmap_lies_inside_the_figure(tmp_path: Path, client: md.Client) -> None:
    symbols = ["AAPL", "MSFT", "NVDA", "TSLA", "AMZN", "GOOGL", "META", "AMD"]
    df = md.load_sentiment(symbols, start="2026-09-01", client=client)
    assert_laid_out(plot.sentiment(df), tmp_path / "heatmap.png", legend_row=False)


@pytest.mark.parametrize("name", list(CHARTS))
def test_every_label_lies_inside_the_figure_with_sandbox_data(
    name: str, tmp_path: Path, client: md.Client
) -> None:
    draw, _ = CHARTS[name]
    frames = {
        "forecast_fan": lambda: md.load_forecast(["AAPL", "MSFT"], client=client),
        "sentiment": lambda: md.load_sentiment(["AAPL", "MSFT"], client=client),
        "put_call": lambda: md.load_put_call_ratio("TSLA", client=client),
        "insider_activity": lambda: md.load_insider_trading("AAPL", client=client),
        "congress_trades": lambda: md.load_congress_trades("NVDA", client=client),
        "app_ratings": lambda: md.load_app_ratings("AAPL", client=client),
    }
    assert_laid_out(draw(frames[name]()), tmp_path / f"{name}.png")


def test_labels_stay_inside_a_small_constrained_figure_of_the_callers(tmp_path: Path) -> None:
    fig, axes = plt.subplots(2, 3, figsize=(15, 7), layout="constrained")
    for ax, (draw, frame) in zip(axes.ravel(), CHARTS.values(), strict=True):
        draw(frame(), ax=ax)
    for ax in axes.ravel():
        assert_laid_out(ax, tmp_path / "grid.png")


# --- issue 18: the flaws a newcomer saw --------------------------------------------------------


def test_insider_legend_lists_only_groups_with_bars(tmp_path: Path) -> None:
    # A $0 conversion is neutral but draws no bar: no "neutral" in the legend.
    df = pd.DataFrame(
        {
            "symbol": ["AAPL"] * 3,
            "date": pd.to_datetime(["2026-01-05", "2026-01-20", "2026-02-03"]),
            "transaction_type": ["Purchase", "Conversion", "Sale"],
            "total_value": pd.array([1000, 0, 500], dtype="Int64"),
        }
    )
    ax = plot.insider_activity(df)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["acquisition", "disposition (below zero)"]
    render(ax, tmp_path)


def test_put_call_price_has_a_colour_of_its_own(tmp_path: Path) -> None:
    from matplotlib.colors import to_hex

    ax = plot.put_call(put_call_frame())
    (price_ax,) = [a for a in ax.figure.axes if a is not ax]
    ratio_colours = {
        to_hex(line.get_color()) for line in ax.get_lines() if "ratio" in line.get_label()
    }
    price_colours = {to_hex(line.get_color()) for line in price_ax.get_lines()}
    assert ratio_colours and price_colours and not ratio_colours & price_colours
    render(ax, tmp_path)


def test_put_call_several_symbols_never_share_a_colour() -> None:
    from matplotlib.colors import to_hex

    one = put_call_frame()
    two = pd.concat([one, one.assign(symbol="MSFT")], ignore_index=True)
    ax = plot.put_call(two)
    (price_ax,) = [a for a in ax.figure.axes if a is not ax]
    colours = [to_hex(line.get_color()) for line in ax.get_lines() if "ratio" in line.get_label()]
    colours += [to_hex(line.get_color()) for line in price_ax.get_lines()]
    assert len(colours) == 4 and len(set(colours)) == 4


def test_sentiment_with_many_symbols_is_a_heatmap(tmp_path: Path) -> None:
    from matplotlib.collections import QuadMesh

    base = sentiment_frame()
    symbols = ["AAPL", "MSFT", "NVDA", "TSLA", "AMZN", "META"]
    many = pd.concat([base.assign(symbol=s) for s in symbols], ignore_index=True)
    ax = plot.sentiment(many)
    assert any(isinstance(c, QuadMesh) for c in ax.collections)
    assert [t.get_text() for t in ax.get_yticklabels()] == symbols  # one row each, in order
    assert not ax.get_lines()
    render(ax, tmp_path)
    few = plot.sentiment(many[many["symbol"].isin(symbols[:3])])
    assert len([ln for ln in few.get_lines() if ln.get_label() in symbols]) == 3
    forced = plot.sentiment(base, kind="heatmap")
    assert any(isinstance(c, QuadMesh) for c in forced.collections)
    with pytest.raises(md.InvalidParameterError):
        plot.sentiment(base, kind="pie")


def test_date_offset_names_every_month_the_ticks_span(tmp_path: Path) -> None:
    # The forecast fan of issue 18: November days then December; the offset said "2026-Dec".
    dates = pd.date_range("2026-11-23", "2026-12-04", freq="D")
    df = pd.DataFrame({"symbol": "AAPL", "date": dates, "mid": 1.0, "lower": 0.5, "upper": 1.5})
    ax = plot.forecast_fan(df)
    ax.figure.canvas.draw()
    assert ax.xaxis.get_offset_text().get_text() == "Nov\u2013Dec 2026"
    inside = plot.forecast_fan(df[df["date"] < "2026-12-01"])
    inside.figure.canvas.draw()
    assert inside.xaxis.get_offset_text().get_text() == "Nov 2026"
    render(ax, tmp_path)
