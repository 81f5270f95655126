"""md.plot.chart: a chart for every per-symbol dataset, screener and recent frame, both backends, checked
for the data it holds against the loader's frame; a written plotly page opened in a real
headless browser."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot is imported anywhere: headless, deterministic

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

import mdframes as md  # noqa: E402
from mdframes import registry  # noqa: E402
from mdframes.plot import matplotlib_charts, plotly_charts  # noqa: E402
from mdframes.plot.table import CHARTS, KINDS  # noqa: E402

pytest.importorskip("plotly", reason="the interactive charts need plotly (the plot extra)")

SYMBOLS = ["AAPL", "MSFT"]


def cases() -> list[tuple[str, bool]]:
    """(dataset, several symbols?): screeners are a cross-section, drawn once."""
    return [
        (name, several)
        for name in sorted(chartable())
        for several in (False, True)
        if several or CHARTS[name].kind != "ranking"
    ]


def chartable() -> set[str]:
    return {
        ds.name
        for ds in registry.REGISTRY.values()
        if ds.version == "v2" and (ds.per_symbol or ds.scope in ("screener", "recent"))
    }


@pytest.fixture(scope="module")
def frames() -> dict[str, pd.DataFrame]:
    """Every chartable dataset's frame, two symbols (screeners: their cross-section)."""
    out = {}
    with md.sandbox.running() as client:
        for name in sorted(chartable()):
            ds = registry.get(name)
            if ds.scope in ("screener", "recent"):
                kind, tail = name.split("/", 1)
                load = md.load_screener if kind == "screener" else md.load_recent
                out[name] = load(tail, market="S&P 500", client=client)
                continue
            kw = {"view": "daily"} if name == "app_ratings_daily" else {}
            out[name] = getattr(md, ds.loader)(SYMBOLS, client=client, **kw)
    return out


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


def test_every_per_symbol_dataset_and_screener_has_a_chart() -> None:
    # A new dataset in the registry without an entry in mdframes/plot/table.py fails here.
    assert set(CHARTS) == chartable()
    kinds = {spec.kind for spec in CHARTS.values()}
    assert kinds <= set(KINDS) == set(matplotlib_charts._MATPLOTLIB) == set(plotly_charts._KINDS)


# --- what each chart must hold, computed from the frame (not from the chart code) ----------

_VALUE = {
    "news": lambda df: df["sentiment"].notna(),
    "analyst_ratings": lambda df: md.analyst_changes(df)["target_price_to"].notna(),
    "lobbying": lambda df: (df["income"] > 0) | (df["expenses"] > 0),
    "government_contracts": lambda df: df["award_amount"] > 0,
    "patent_filings": lambda df: pd.Series(True, index=df.index),
    "insider_trading": lambda df: df["total_value"].notna(),
    "sentiment": lambda df: df["score"].notna(),
    "put_call_ratio": lambda df: df["ratio"].notna(),
    "forecast": lambda df: df["mid"].notna(),
}


def _congress_known(df: pd.DataFrame) -> pd.Series:
    bounds = md.congress_amount_bounds(df)
    return (bounds["amount_min"] > 0).fillna(False) | bounds["amount_max"].notna()


def expected_points(name: str, df: pd.DataFrame) -> dict[str, int]:
    """Points per symbol a chart of ``df`` must draw (the records with a time and a value)."""
    spec = CHARTS[name]
    if name == "congress_trades":
        keep = _congress_known(df)
    elif name in _VALUE:
        keep = _VALUE[name](df).fillna(False).astype(bool)
    else:
        raise KeyError(name)
    keep &= pd.to_datetime(df[spec.time]).notna()
    return df[keep].groupby(df["symbol"].astype(str)).size().to_dict()


def plotly_points(fig) -> dict[str, int]:
    out: dict[str, int] = {}
    for trace in fig.data:
        meta = trace.meta or {}
        if meta.get("role") == "data":
            out[meta["symbol"]] = out.get(meta["symbol"], 0) + len(trace.x)
    return out


def _rows(df: pd.DataFrame, symbol: str) -> pd.DataFrame:
    return df[df["symbol"].astype(str) == symbol]


def _one(df: pd.DataFrame) -> pd.DataFrame:
    one = _rows(df, SYMBOLS[0])
    assert one.attrs.get("dataset") == df.attrs["dataset"]
    return one


@pytest.mark.parametrize(("name", "several"), cases())
def test_plotly_chart_holds_the_frame(frames, name: str, several: bool) -> None:
    df = frames[name]
    spec = CHARTS[name]
    if spec.kind != "ranking" and not several:
        df = _one(df)
    fig = md.plot.chart(df, backend="plotly")
    assert type(fig).__name__ == "Figure" and type(fig).__module__.startswith("plotly")
    points = plotly_points(fig)
    symbols = sorted(df["symbol"].astype(str).unique())
    if spec.kind == "ranking":
        by = df[spec.by].astype("string").fillna("(none)")
        (bars,) = fig.data
        measure = next((v for v in spec.value if v in df.columns), None)
        known = by if measure is None else by[pd.to_numeric(df[measure], errors="coerce").notna()]
        assert len(bars.y) == min(25, known.nunique())
        if measure is None:
            top = by.value_counts().iloc[0]
        else:
            grouped = pd.to_numeric(df[measure], errors="coerce").groupby(by)
            top = grouped.last().max() if spec.agg == "last" else grouped.agg(spec.agg).max()
        assert bars.x[0] == pytest.approx(float(top))
        assert list(bars.x) == sorted(bars.x, reverse=True)
        values = list(bars.x)
        if min(values) < 0 < max(values) and by.nunique() > 25:  # signed: both ends shown
            lowest = grouped.agg(spec.agg).min() if measure else None
            assert lowest is None or values[-1] == pytest.approx(float(lowest))
        return
    assert sorted(points) == symbols  # every symbol is drawn, as traces or facets
    if spec.kind == "metrics":
        for column in spec.value:
            per = {
                t.meta["symbol"]: len(t.x)
                for t in fig.data
                if t.meta and t.hovertemplate and column.replace("_", " ") in t.hovertemplate
            }
            assert per == {s: int(_rows(df, s)[column].notna().sum()) for s in symbols}
    elif spec.kind == "totals":
        for s in symbols:
            (trace,) = [t for t in fig.data if t.meta and t.meta["symbol"] == s]
            rows = _rows(df, s)
            assert float(np.sum(trace.y)) == float(rows["mentions"].sum())
            weeks = pd.to_datetime(rows["date"]).dt.tz_localize(None).dt.to_period("W")
            assert len(trace.x) == weeks.nunique()
    elif spec.kind == "apps":
        for s in symbols:
            rows = _rows(df, s)
            if "ios_score" in rows.columns:  # the daily view: one point per platform score
                want = int(rows["ios_score"].notna().sum() + rows["android_score"].notna().sum())
                assert points[s] == want
            else:  # each platform's biggest app: as many points as it has dated scores
                assert 0 < points[s] <= len(rows)
                names = {t.name for t in fig.data if t.meta and t.meta["symbol"] == s}
                assert {n.split(":")[0].split()[-1] for n in names} == set(
                    rows["platform"].astype(str)
                )
    else:
        assert points == expected_points(name, df)
        left = len(df) - sum(points.values())
        if left:  # what is not drawn is said, never dropped silently
            assert f"{left} record" in fig.layout.title.text
    # Hover shows the record's main fields; time axes have a range slider.
    data_traces = [t for t in fig.data if t.meta]
    for field in spec.hover[:2]:
        if field in df.columns:
            assert any(field.replace("_", " ") in (t.hovertemplate or "") for t in data_traces)
    assert any(ax.rangeslider.visible for ax in fig.select_xaxes())


def mpl_points(fig) -> dict[str, int]:
    """Points of the artists marked ``data:SYMBOL`` (the charts that are not named ones)."""
    out: dict[str, int] = {}
    for ax in fig.axes:
        for artist in [*ax.lines, *ax.collections]:
            gid = artist.get_gid() or ""
            if gid.startswith("data:"):
                n = (
                    len(artist.get_xdata())
                    if hasattr(artist, "get_xdata")
                    else len(artist.get_offsets())
                )
                out[gid[5:]] = out.get(gid[5:], 0) + n
    return out


@pytest.mark.parametrize(("name", "several"), cases())
def test_matplotlib_chart_holds_the_frame(frames, name: str, several: bool, tmp_path) -> None:
    df = frames[name]
    spec = CHARTS[name]
    if spec.kind != "ranking" and not several:
        df = _one(df)
    fig = md.plot.chart(df)
    assert isinstance(fig, matplotlib.figure.Figure)
    fig.savefig(tmp_path / "chart.png", dpi=40)
    symbols = sorted(df["symbol"].astype(str).unique())
    if spec.kind == "ranking":
        ax = fig.axes[0]
        bars = [p for p in ax.patches if p.get_gid() == "data:ranking"]
        dots = [len(c.get_offsets()) for c in ax.collections if c.get_gid() == "data:ranking"]
        groups = df[spec.by].astype("string").fillna("(none)")
        measure = next((v for v in spec.value if v in df.columns), None)
        if measure is not None:  # groups with no value are said in the title, not drawn
            groups = groups[pd.to_numeric(df[measure], errors="coerce").notna()]
            missing = df[spec.by].nunique() - groups.nunique()
            assert (f"{missing} " in ax.get_title()) if missing else "without" not in ax.get_title()
        assert len(bars) + sum(dots) == min(25, groups.nunique())
        return
    if spec.kind in ("insider", "congress", "apps", "ratio"):  # one panel per symbol
        panels = [ax for ax in fig.axes if ax.get_title()]  # a twin price axis has none
        titles = [ax.get_title() for ax in panels]
        assert len(panels) == len(symbols)
        assert all(t.startswith(s) for t, s in zip(titles, symbols, strict=True))
        if spec.kind == "ratio":
            want = expected_points(name, df)
            for panel, s in zip(panels, symbols, strict=True):
                (line,) = [ln for ln in panel.get_lines() if ln.get_label() == f"{s} ratio"]
                assert len(line.get_xdata()) == want[s]
        return
    if spec.kind in ("fan", "bands"):  # the named charts: a labelled line per symbol
        ax = fig.axes[0]
        lines = {
            line.get_label(): len(line.get_xdata())
            for a in fig.axes
            for line in a.get_lines()
            if not line.get_label().startswith("_")
        }
        want = expected_points(name, df)
        for s in symbols:
            (n,) = [v for k, v in lines.items() if k.startswith(s) and "price" not in k]
            assert n == want[s]
        assert ax.get_title()
        return
    points = mpl_points(fig)
    assert sorted(points) == symbols
    if spec.kind == "events":
        assert points == expected_points(name, df)
    elif spec.kind == "metrics":
        assert len(fig.axes) == len(spec.value)
        assert points == {
            s: int(sum(_rows(df, s)[c].notna().sum() for c in spec.value)) for s in symbols
        }


def test_chart_refuses_what_it_cannot_draw(frames) -> None:
    df = frames["sentiment"]
    with pytest.raises(md.InvalidParameterError, match="backend"):
        md.plot.chart(df, backend="bokeh")
    with pytest.raises(md.InvalidParameterError, match="attrs"):
        md.plot.chart(pd.DataFrame(df))  # attrs dropped: say how to name the dataset
    assert md.plot.chart(df.copy(), dataset="sentiment") is not None
    with pytest.raises(md.InvalidParameterError, match="no rows"):
        md.plot.chart(df.iloc[:0])
    with pytest.raises(md.InvalidParameterError, match="one panel per symbol"):
        _, ax = plt.subplots()
        md.plot.chart(frames["insider_trading"], ax=ax)


def test_hover_text_is_escaped(frames) -> None:
    df = _one(frames["news"]).copy()
    df.loc[df.index[0], "headline"] = "<script>alert(1)</script> & co"
    fig = md.plot.chart(df, backend="plotly")
    cells = {str(c) for t in fig.data if t.meta for row in t.customdata for c in row}
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in cells
    assert not any("<script>" in c for c in cells)


def _chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)


@pytest.mark.skipif(_chromium() is None, reason="no chromium binary (apt-get install chromium)")
def test_written_plotly_html_draws_in_a_headless_browser(frames, tmp_path: Path) -> None:
    df = _one(frames["lobbying"])
    fig = md.plot.chart(df, backend="plotly")
    path = tmp_path / "lobbying.html"
    fig.write_html(path)  # one self-contained file: plotly.js inside, nothing fetched
    assert not re.search(r"<script[^>]*\bsrc=", path.read_text())
    dom = subprocess.run(
        [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=5000",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert 'class="plot-container plotly"' in dom and "main-svg" in dom
    drawn = plotly_points(fig)[SYMBOLS[0]]
    assert drawn == expected_points("lobbying", df)[SYMBOLS[0]] > 0
    # Each record is a marker in the plot and again in the range slider's miniature.
    assert len(re.findall(r'class="point[ "]', dom)) == 2 * drawn
    assert "rangeslider-container" in dom


def test_a_page_of_charts_holds_plotly_js_once_or_shares_a_file(frames, tmp_path: Path) -> None:
    """fig.write_html embeds plotly.js (4.8 MB) in every file: write_html puts it in a page of
    several charts once, or (the default) in one plotly.min.js beside the pages."""
    figs = [md.plot.chart(_one(frames[n]), backend="plotly") for n in ("lobbying", "sentiment")]
    single = tmp_path / "single.html"
    figs[0].write_html(single)
    alone = tmp_path / "alone" / "page.html"
    alone.parent.mkdir()
    assert md.plot.write_html(figs, alone, include_plotlyjs=True) == str(alone)
    assert alone.read_text().count("* plotly.js v") == 1
    assert alone.stat().st_size < 1.1 * single.stat().st_size
    assert not (alone.parent / "plotly.min.js").exists()
    shared = [tmp_path / "shared" / f"{i}.html" for i in range(2)]
    shared[0].parent.mkdir()
    for page in shared:
        md.plot.write_html(figs, page)
        text = page.read_text()
        assert '<script charset="utf-8" src="plotly.min.js"></script>' in text
        assert "* plotly.js v" not in text and page.stat().st_size < 200_000
    assert (shared[0].parent / "plotly.min.js").read_text().count("* plotly.js v") == 1
    with pytest.raises(md.InvalidParameterError, match="include_plotlyjs"):
        md.plot.write_html(figs, alone, include_plotlyjs="inline")
    if _chromium() is not None:  # both charts draw from the shared file
        dom = subprocess.run(
            [_chromium(), "--headless", "--no-sandbox", "--disable-gpu"]
            + ["--virtual-time-budget=5000", "--dump-dom", shared[1].as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
        assert dom.count('class="plot-container plotly"') == 2
