"""mkdocs-gen-files script: draw the pictures of ``docs/plots.md`` at build time.

Each ```` ```python ```` block of that page that is followed by an image
``![...](plots/NAME.png)`` is run (it starts the offline sandbox itself), and the figure it
leaves in ``fig``, or else the figure of its ``ax``, becomes that image. The pictures are
made by the code the page shows, from the current plotting code, so they cannot go stale,
and the repository holds no generated binaries.
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


with mkdocs_gen_files.open(PAGE, "r") as fh:
    _text = fh.read()
for _path, _png in pictures(_text).items():
    with mkdocs_gen_files.open(_path, "wb") as fh:
        fh.write(_png)
