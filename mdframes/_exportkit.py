"""The private helpers of :mod:`mdframes.export`: plain-Python cell values, workbook sheet
layout and names, and the JSON form of ``attrs`` stored in Parquet files."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ._deps import require
from .errors import warn

MAX_TEXT = 32_767  # Excel refuses longer cells
MAX_WIDTH = 60
MIN_WIDTH = 6


def naive_utc(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def json_default(value: Any) -> Any:
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (set, frozenset, tuple, np.ndarray)):
        return list(value)
    return str(value)


def compact_json(value: Any) -> str:
    return json.dumps(value, default=json_default, ensure_ascii=False, separators=(",", ":"))


def is_list_like(value: Any) -> bool:
    return isinstance(value, (list, tuple, set, frozenset, np.ndarray, pd.Series, pd.Index))


def is_missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, (float, np.floating)) and math.isnan(value)


def item_text(value: Any) -> str:
    """One element of a list cell, as text (before neutralising)."""
    if is_missing(value):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (Mapping, list, tuple, np.ndarray)):
        return compact_json(value)
    if isinstance(value, dt.datetime):
        return naive_utc(value).isoformat()
    if isinstance(value, np.generic):
        return str(value.item())
    return str(value)


# Conventional short forms, applied (longest words first) only while a name is too long.
ABBREVIATIONS = {
    "government": "govt",
    "professionalnet": "profnet",
    "professional": "prof",
    "predictions": "pred",
    "prediction": "pred",
    "screener": "scr",
    "transactions": "trans",
    "transaction": "trans",
    "information": "info",
    "international": "intl",
    "management": "mgmt",
    "department": "dept",
    "corporation": "corp",
    "quarterly": "qtrly",
}


WORD_SEPARATORS = re.compile(r"([\s_.\-]+)")


def abbreviate(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, shortened by whole words: first the
    conventional short forms of its longest words, then trailing words dropped. A word is
    cut only when the first word alone is too long."""
    if len(text) <= limit:
        return text
    parts = WORD_SEPARATORS.split(text)  # words at even positions, separators between
    for i in sorted(range(0, len(parts), 2), key=lambda i: -len(parts[i])):
        short = ABBREVIATIONS.get(parts[i].casefold())
        if short is None:
            continue
        parts[i] = short.upper() if parts[i].isupper() else short
        if len("".join(parts)) <= limit:
            return "".join(parts)
    kept = ""
    for i in range(0, len(parts), 2):
        candidate = "".join(parts[: i + 1])
        if len(candidate) > limit:
            break
        kept = candidate
    return kept or text[:limit]


def summary_frame(summary: Mapping[Any, Any]) -> pd.DataFrame:
    return pd.DataFrame(
        {"key": [str(k) for k in summary], "value": pd.Series(list(summary.values()), dtype=object)}
    )


def display_width(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, dt.datetime):
        return 19
    if isinstance(value, dt.date):
        return 10
    if isinstance(value, str):
        return max((len(line) for line in value.splitlines()), default=0)
    return len(str(value))


def column_widths(frame: pd.DataFrame) -> list[float]:
    widths = []
    for i, header in enumerate(frame.columns):
        longest = max([len(header), *map(display_width, frame.iloc[:, i])])
        widths.append(float(min(max(longest + 2, MIN_WIDTH), MAX_WIDTH)))
    return widths


def truncate_text(frame: pd.DataFrame) -> pd.DataFrame:
    # Excel refuses cells longer than 32,767 characters; the rare long text is cut.
    def cut(v: Any) -> Any:
        return v[:MAX_TEXT] if isinstance(v, str) and len(v) > MAX_TEXT else v

    return frame.map(cut) if frame.size else frame


def write_sheet(
    wb: Any, title: str, frame: pd.DataFrame, formats: list[str | None] | None = None
) -> None:
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    n_rows, n_cols = frame.shape
    ws = wb.create_sheet(title)
    # Write-only sheets need their layout before the first row is streamed.
    ws.freeze_panes = "A2"
    for i, width in enumerate(column_widths(frame), start=1):
        ws.column_dimensions[get_column_letter(i)].width = width
    if n_cols:
        ws.auto_filter.ref = f"A1:{get_column_letter(n_cols)}{n_rows + 1}"
    bold = Font(bold=True)
    header = []
    for name in frame.columns:
        cell = WriteOnlyCell(ws, value=name)
        cell.font = bold
        header.append(cell)
    ws.append(header)
    # One styled cell per formatted column, its value replaced row by row: a write-only sheet
    # writes each row as it is appended, and styling a fresh cell per value costs a third of
    # the export's time.
    styled = []
    for i, number_format in enumerate(formats or ()):
        if number_format:
            cell = WriteOnlyCell(ws)
            cell.number_format = number_format
            styled.append((i, cell))
    for row in truncate_text(frame).itertuples(index=False, name=None):
        if styled:
            cells = list(row)
            for i, cell in styled:
                if cells[i] is not None and not isinstance(cells[i], str):
                    cell.value = cells[i]
                    cells[i] = cell
            ws.append(cells)
        else:
            ws.append(row)


def pyarrow() -> tuple[Any, Any]:
    """``pyarrow`` and ``pyarrow.parquet``, or the ImportError naming the extra."""
    pq = require("pyarrow.parquet", "parquet", "Parquet export")
    return require("pyarrow", "parquet", "Parquet export"), pq


def openpyxl() -> Any:
    """``openpyxl``, or the ImportError naming the extra."""
    return require("openpyxl", "excel", "Excel export")


# What writing a file of each suffix needs: the command line checks it before any request.
WRITER_NEEDS = {".xlsx": openpyxl, ".parquet": pyarrow}


def pandas_attrs(plain: Mapping[str, Any]) -> dict[bytes, bytes]:
    """Schema metadata under pandas' own key for ``df.attrs`` (``PANDAS_ATTRS``, written and
    read by pandas >= 2.1): ``pd.read_parquet`` restores the JSON-able attrs from it with any
    pyarrow, where pyarrow's pandas metadata carries them only from pyarrow 21 on."""
    return {b"PANDAS_ATTRS": json.dumps(dict(plain)).encode()} if plain else {}


class Unstorable(Exception):
    pass


def encode(value: Any, *, tagged: bool) -> Any:
    """attrs value -> JSON data. ``tagged`` keeps times recognisable (``{"$timestamp": ...}``)
    so :func:`read_parquet` can restore them; untagged, they are ISO text."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, pd.Timestamp) and value is not pd.NaT:
        return {"$timestamp": value.isoformat()} if tagged else value.isoformat()
    if isinstance(value, (dt.datetime, dt.date)):
        stamp = pd.Timestamp(value)
        return {"$timestamp": stamp.isoformat()} if tagged else stamp.isoformat()
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise Unstorable
        return {k: encode(v, tagged=tagged) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v, tagged=tagged) for v in value]
    raise Unstorable


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$timestamp"}:
            return pd.Timestamp(value["$timestamp"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def storable_attrs(attrs: Mapping[Any, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    plain: dict[str, Any] = {}
    tagged: dict[str, Any] = {}
    dropped = []
    for key, value in attrs.items():
        try:
            if not isinstance(key, str):
                raise Unstorable
            plain[key] = encode(value, tagged=False)
            tagged[key] = encode(value, tagged=True)
        except Unstorable:
            dropped.append(str(key))
    if dropped:
        warn(
            f"attrs {', '.join(dropped)} cannot be stored as JSON; left out of the Parquet file",
            UserWarning,
        )
    return plain, tagged


def list_columns(df: pd.DataFrame) -> list[str]:
    found = []
    for name in df.columns:
        col = df[name]
        if col.dtype == object:
            present = col.dropna()
            if len(present) and present.map(lambda v: isinstance(v, list)).all():
                found.append(str(name))
    return found
