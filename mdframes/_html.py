"""Compact HTML for notebooks (``_repr_html_``): a title, key figures and small tables.

Every text that goes in is escaped here (dataset names, symbols, error texts, paths), so the
objects that use it never build markup themselves. Private to mdframes.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["text", "cell", "table", "box", "figures", "frame_html"]

# Shown rows of a frame in a notebook; the rest are counted under it.
MAX_ROWS = 30
_STYLE = "border-collapse:collapse;font-size:12px;margin:2px 0 6px 0"
_CELL = "padding:1px 8px;text-align:left"
COLOURS = {
    "ok": "#1a7f37",
    "synced": "#1a7f37",
    "done": "#1a7f37",
    "pending": "#9a6700",
    "never": "#6e7781",
    "not_found": "#6e7781",
    "failed": "#cf222e",
}


def text(value: Any) -> str:
    """``value`` as escaped text: dates as days (or minutes), missing as an en dash."""
    if value is None or value is pd.NaT or value is pd.NA:
        return "–"
    if isinstance(value, float) and np.isnan(value):
        return "–"
    if isinstance(value, pd.Timestamp):
        if value.tzinfo is not None:
            return html.escape(value.strftime("%Y-%m-%d %H:%M %Z"))
        has_time = value.hour or value.minute or value.second
        return value.strftime("%Y-%m-%d %H:%M:%S" if has_time else "%Y-%m-%d")
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        return f"{float(value):,.4g}"
    return html.escape(str(value))


def cell(value: Any, colour: str | None = None, bold: bool = False) -> str:
    style = _CELL + (f";color:{colour}" if colour else "") + (";font-weight:bold" if bold else "")
    return f"<td style='{style}'>{value}</td>"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Rows of ready (escaped) cells under escaped headers."""
    head = "".join(f"<th style='{_CELL}'>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(r) + "</tr>" for r in rows)
    return f"<table style='{_STYLE}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def figures(pairs: Iterable[tuple[str, Any]]) -> str:
    """Key figures as a two-column table: name, value (escaped)."""
    rows = [
        (
            f"<th style='{_CELL};font-weight:normal;color:#57606a'>{html.escape(k)}</th>",
            cell(text(v)),
        )
        for k, v in pairs
    ]
    body = "".join("<tr>" + "".join(r) + "</tr>" for r in rows)
    return f"<table style='{_STYLE}'><tbody>{body}</tbody></table>"


def box(title: str, *parts: str, status: str = "") -> str:
    """A titled block: ``title`` escaped, ``status`` coloured, the parts as given."""
    colour = COLOURS.get(status, "#57606a")
    badge = f" <span style='color:{colour};font-weight:bold'>{html.escape(status)}</span>"
    head = (
        f"<div style='margin-bottom:4px'><b>{html.escape(title)}</b>{badge if status else ''}</div>"
    )
    return f"<div class='mdframes'>{head}{''.join(parts)}</div>"


def frame_html(df: pd.DataFrame, caption: str, status_column: str | None = None) -> str:
    """A frame as a compact table with a caption of its key figures (escaped), at most
    :data:`MAX_ROWS` rows, a status column coloured."""
    shown = df.head(MAX_ROWS)
    rows = []
    for record in shown.itertuples(index=False):
        cells = []
        for name, value in zip(df.columns, record, strict=True):
            if isinstance(value, list):
                value = "; ".join(
                    "..".join(text(v) for v in item) if isinstance(item, tuple) else text(item)
                    for item in value
                )
                cells.append(cell(value or "–"))
                continue
            colour = COLOURS.get(str(value)) if name == status_column else None
            cells.append(cell(text(value), colour))
        rows.append(cells)
    more = ""
    if len(df) > MAX_ROWS:
        more = f"<div style='color:#57606a'>… {len(df) - MAX_ROWS:,} more rows</div>"
    cap = f"<div style='margin-bottom:4px'>{html.escape(caption)}</div>"
    return f"<div class='mdframes'>{cap}{table([str(c) for c in df.columns], rows)}{more}</div>"


def size(n: Any) -> str:
    """``12345`` -> ``12.1 kB``."""
    if n is None or n is pd.NA:
        return "–"
    value = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1024 or unit == "TB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} TB"
