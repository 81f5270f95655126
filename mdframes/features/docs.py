"""The docs' feature table, generated from the catalog (``docs/gen_pages.py`` fills
``docs/features.md`` with it at build time, so the page cannot drift from the code)."""

from __future__ import annotations

from typing import Final

from .panels.definitions import CATALOG

__all__ = ["MARKER", "catalog_table", "fill"]

MARKER: Final = "<!-- feature-catalog -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def catalog_table() -> str:
    """A Markdown table: one row per catalog feature.

    Examples
    --------
    >>> catalog_table().splitlines()[0]
    '| feature | dataset | anchor | window | aggregation | dtype | definition |'
    """
    lines = [
        "| feature | dataset | anchor | window | aggregation | dtype | definition |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in CATALOG:
        window = f"`{f.window_text}`" if f.window_text else "none (any age)"
        lines.append(
            f"| `{f.name}` | `{f.dataset}` | `{f.anchor}` | {window} | `{f.agg}` | "
            f"`{f.dtype}` | {_cell(f.description)} |"
        )
    return "\n".join(lines) + "\n"


def fill(text: str) -> str:
    """``text`` of docs/features.md with its marker replaced by :func:`catalog_table`."""
    if MARKER not in text:
        raise ValueError(f"docs/features.md lost its {MARKER} marker")
    return text.replace(MARKER, catalog_table())
