"""Excel workbooks: number formats, sheet names and :func:`to_excel`."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from .._deps import require
from .cells import ILLEGAL_CHARS, spreadsheet_frame, with_named_index

__all__ = ["to_excel", "sheet_name", "sheet_names", "excel_formats"]

EXCEL_MAX_ROWS = 1_048_576
EXCEL_MAX_COLUMNS = 16_384
_SHEET_MAX = 31
_SHEET_FORBIDDEN = re.compile(r"[\[\]:*?/\\]")
_SUMMARY_SUFFIX = " summary"

MAX_TEXT = 32_767  # Excel refuses longer cells
MAX_WIDTH = 60
MIN_WIDTH = 6

# Excel number formats (CONTRACT §6): thousands separators for integers and amounts, two
# decimals for prices and ratios, ISO dates and times.
INTEGER_FORMAT = "#,##0"
DECIMAL_FORMAT = "#,##0.00"
# Scores such as sentiment's 0.2883 carry meaning past two decimals: at least two, up to four.
SCORE_FORMAT = "0.00##"
DATE_FORMAT = "yyyy-mm-dd"
TIMESTAMP_FORMAT = "yyyy-mm-dd hh:mm:ss"
_PLAIN_INTEGERS = re.compile(r"(^|_)(year|quarter|cik|id)$")
_SCORES = re.compile(r"(^|_)score$")


def openpyxl() -> Any:
    """``openpyxl``, or the ImportError naming the extra."""
    return require("openpyxl", "excel", "Excel export")


def _number_format(s: pd.Series, cells: list[Any]) -> str | None:
    name = str(s.name)
    if pd.api.types.is_bool_dtype(s.dtype):
        return None
    if pd.api.types.is_integer_dtype(s.dtype):
        return "0" if _PLAIN_INTEGERS.search(name) else INTEGER_FORMAT
    if pd.api.types.is_float_dtype(s.dtype):
        return SCORE_FORMAT if _SCORES.search(name) else DECIMAL_FORMAT
    if isinstance(s.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(s.dtype):
        return TIMESTAMP_FORMAT if any(isinstance(v, dt.datetime) for v in cells) else DATE_FORMAT
    return None


def excel_formats(df: pd.DataFrame, frame: pd.DataFrame | None = None) -> list[str | None]:
    """The Excel number format of each column :func:`to_excel` writes for ``df`` (``None``:
    General): ``#,##0`` for integers and amounts, ``#,##0.00`` for prices and ratios,
    ``0.00##`` for scores, ``yyyy-mm-dd`` for dates, ``yyyy-mm-dd hh:mm:ss`` for times.
    ``frame`` is ``df`` as :func:`spreadsheet_frame` wrote it, when already made.

    Examples
    --------
    >>> excel_formats(pd.DataFrame({"shares": [1200], "price": [9.5], "score": [0.25]}))
    ['#,##0', '#,##0.00', '0.00##']
    """
    source = with_named_index(df)
    frame = spreadsheet_frame(source) if frame is None else frame
    return [
        _number_format(source.iloc[:, i], frame.iloc[:, i].tolist()) for i in range(source.shape[1])
    ]


def sheet_name(label: Any) -> str:
    """The sheet a frame is written to, wherever it is written (``md.to_excel``, the command
    line, the demo): Excel's forbidden characters (``/`` of dataset names included) become
    ``_``, and a name longer than 31 characters is shortened by whole words.

    Examples
    --------
    >>> sheet_name("screener/congress/house")
    'screener_congress_house'
    """
    return _fit_sheet_name(str(label))


def _fit_sheet_name(text: str, limit: int = _SHEET_MAX) -> str:
    # Excel forbids []:*?/\ , a leading or trailing apostrophe, empty names and "History".
    name = ILLEGAL_CHARS.sub("", _SHEET_FORBIDDEN.sub("_", text)).strip().strip("'").strip()
    name = abbreviate(name, limit).strip().strip("'").strip()
    if not name:
        return "Sheet"
    return name + "_" if name.casefold() == "history" else name


def sheet_names(names: Iterable[Any]) -> list[str]:
    """Excel-valid, case-insensitively unique sheet names, in order. A name longer than
    Excel's 31 characters is shortened by whole words, with conventional short forms
    (``government`` -> ``govt``); a word is cut only when it alone is too long.

    Examples
    --------
    >>> sheet_names(["a/b", "A_B", "screener/government-contracts summary"])
    ['a_b', 'A_B (2)', 'screener_govt-contracts summary']
    """
    used: set[str] = set()
    out: list[str] = []
    for raw in names:
        base = _fit_sheet_name(str(raw))
        name, n = base, 2
        while name.casefold() in used:  # Excel compares sheet names case-insensitively
            suffix = f" ({n})"
            name = _fit_sheet_name(base, _SHEET_MAX - len(suffix)) + suffix
            n += 1
        used.add(name.casefold())
        out.append(name)
    return out


def to_excel(frames: pd.DataFrame | Mapping[Any, pd.DataFrame], path: str | Path) -> Path:
    """Write one frame or a dict of sheet name -> frame to an ``.xlsx`` workbook.

    One sheet per frame, without the index column, header row frozen and filterable,
    columns sized to their content (capped). A frame's ``attrs["summary"]`` goes to its
    own ``"<sheet> summary"`` sheet of key/value rows. Cells follow the spreadsheet rules
    of :func:`spreadsheet_frame`; no cell is ever stored as a formula; numbers and dates get
    the formats of :func:`excel_formats`, and headers of columns converted to naive UTC say
    ``(UTC)``. Sheet names follow :func:`sheet_name` (the one rule of the CLI and the demo
    too) and are de-duplicated case-insensitively. A single frame's sheet is named after
    ``attrs["dataset"]`` (or ``data``).

    Parameters
    ----------
    frames : DataFrame or mapping of str to DataFrame
    path : str or Path
        Target file; overwritten if it exists.

    Returns
    -------
    Path
        ``path`` as a :class:`pathlib.Path`.

    Examples
    --------
    >>> df = md.load_insider_trading("AAPL")
    >>> md.to_excel({"AAPL insiders": df}, "insiders.xlsx")
    PosixPath('insiders.xlsx')
    """
    xl = openpyxl()
    if isinstance(frames, pd.DataFrame):
        frames = {frames.attrs.get("dataset") or "data": frames}
    if not isinstance(frames, Mapping):
        raise TypeError("frames must be a DataFrame or a dict of sheet name -> DataFrame")
    if not frames:
        raise ValueError("to_excel needs at least one frame")

    labels: list[str] = []
    sheets: list[tuple[pd.DataFrame, list[str | None] | None]] = []
    for raw_name, df in frames.items():
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"sheet {raw_name!r}: expected a DataFrame, got {type(df).__name__}")
        n_rows, n_cols = df.shape  # checked before any work: such a sheet cannot be opened
        if n_rows + 1 > EXCEL_MAX_ROWS or n_cols > EXCEL_MAX_COLUMNS:
            raise ValueError(
                f"sheet {raw_name!r}: {n_rows} rows x {n_cols} columns exceeds Excel's limit of "
                f"{EXCEL_MAX_ROWS - 1} rows x {EXCEL_MAX_COLUMNS} columns; use to_parquet or to_csv"
            )
        name = sheet_name(raw_name)
        labels.append(name)
        frame = spreadsheet_frame(df, mark_utc=True)
        sheets.append((frame, excel_formats(df, frame)))
        summary = df.attrs.get("summary")
        if isinstance(summary, Mapping) and summary:
            # Keep room for the suffix so "<name> summary" stays recognisable.
            short = _fit_sheet_name(name, _SHEET_MAX - len(_SUMMARY_SUFFIX))
            labels.append(short + _SUMMARY_SUFFIX)
            sheets.append((spreadsheet_frame(summary_frame(summary)), None))

    wb = xl.Workbook(write_only=True)
    for title, (frame, formats) in zip(sheet_names(labels), sheets, strict=True):
        write_sheet(wb, title, frame, formats)
    out = Path(path)
    wb.save(out)
    return out


# --- the workbook's layout ------------------------------------------------------------------

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
    header = [WriteOnlyCell(ws, value=name) for name in frame.columns]
    for cell in header:
        cell.font = bold
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
