"""mkdocs-gen-files script: draw the pictures of ``docs/plots.md`` at build time.

Each ```` ```python ```` block of that page that is followed by an image
``![...](plots/NAME.png)`` is run (it starts the offline sandbox itself), and the figure it
leaves in ``fig``, or else the figure of its ``ax``, becomes that image. The pictures are
made by the code the page shows, from the current plotting code, so they cannot go stale,
and the repository holds no generated binaries.

The line ``<!-- chart gallery -->`` becomes a section per dataset :func:`md.plot.chart`
draws (every entry of its table, so a new dataset appears by itself): the matplotlib
picture and the interactive plotly chart in an ``<iframe>``, each chart's page loading one
shared ``plotly.min.js`` beside it.
"""

from __future__ import annotations

import io
import re

import matplotlib

matplotlib.use("Agg")  # before pyplot: headless and deterministic

import matplotlib.pyplot as plt  # noqa: E402
import mkdocs_gen_files  # noqa: E402

import mdframes as md  # noqa: E402

PAGE = "plots.md"
FIGURE = re.compile(r"```python\n((?:(?!```).)*)```\s*!\[[^\]]*\]\((plots/[\w.-]+\.png)\)", re.S)


def pictures(text: str) -> dict[str, bytes]:
    """Image path -> PNG bytes, one per code block followed by an image."""
    out = {}
    for code, path in FIGURE.findall(text):
        namespace: dict[str, object] = {"__name__": "docs_plots"}
        try:
            exec(compile(code, f"docs/{PAGE}", "exec"), namespace)
        finally:
            md.set_default_client(None)
        fig = namespace.get("fig") or namespace["ax"].figure  # type: ignore[union-attr]
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=80)  # as it is: no bbox_inches="tight"
        plt.close("all")
        out[path] = buffer.getvalue()
    return out


GALLERY = "<!-- chart gallery -->"
START = "2026-06-01"  # half a year: enough to read, small pages


def _frame(name: str, client: md.Client) -> object:
    from mdframes import registry

    ds = registry.get(name)
    if ds.scope in ("screener", "recent"):
        load = md.load_screener if ds.scope == "screener" else md.load_recent
        return load(name.split("/", 1)[1], market="S&P 500", client=client)
    kw: dict[str, object] = {"view": "daily"} if name == "app_ratings_daily" else {}
    if ds.param("start") is not None:
        kw["start"] = START
    return getattr(md, ds.loader)(["AAPL", "MSFT"], client=client, **kw)


def gallery() -> tuple[str, dict[str, bytes]]:
    """The gallery's markdown and its files (PNG pictures, plotly pages, plotly.js)."""
    import plotly.offline

    from mdframes.plot.table import CHARTS, KINDS
    from mdframes.registry import get

    files: dict[str, bytes] = {"plots/plotly.min.js": plotly.offline.get_plotlyjs().encode()}
    parts = []
    with md.sandbox.running() as client:
        frames = {name: _frame(name, client) for name in CHARTS}
    for name, spec in CHARTS.items():
        df = frames[name]
        slug = "chart-" + name.replace("/", "-").replace("_", "-")
        fig = md.plot.chart(df)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=72)
        plt.close("all")
        files[f"plots/{slug}.png"] = buffer.getvalue()
        interactive = md.plot.chart(df, backend="plotly")
        # "directory": the page loads plotly.min.js from beside it, one copy for all charts.
        page = interactive.to_html(include_plotlyjs="directory", full_html=True)
        files[f"plots/{slug}.html"] = page.encode()
        height = int(interactive.layout.height or 500) + 20
        ds = get(name)
        call = (
            f'md.{ds.loader}("{name.split("/", 1)[1]}", market="S&P 500")'
            if ds.scope in ("screener", "recent")
            else f'md.{ds.loader}(["AAPL", "MSFT"])'
        )
        parts.append(
            f"### {name}\n\n"
            f"`{call}`: {KINDS[spec.kind]}.\n\n"
            f"![{name}: md.plot.chart]({'plots/' + slug + '.png'})\n\n"
            f'<iframe src="{slug}.html" title="{name}: interactive chart" loading="lazy" '
            f'style="width:100%;height:{height}px;border:0"></iframe>\n'
        )
    return "\n".join(parts), files


with mkdocs_gen_files.open(PAGE, "r") as fh:
    _text = fh.read()
for _path, _png in pictures(_text).items():
    with mkdocs_gen_files.open(_path, "wb") as fh:
        fh.write(_png)
if GALLERY in _text:
    _markdown, _files = gallery()
    for _path, _data in _files.items():
        with mkdocs_gen_files.open(_path, "wb") as fh:
            fh.write(_data)
    with mkdocs_gen_files.open(PAGE, "w") as fh:
        fh.write(_text.replace(GALLERY, _markdown))
