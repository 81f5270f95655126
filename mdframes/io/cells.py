"""The cell rules every spreadsheet export shares (Excel and CSV), and plain-Python cells.

Spreadsheet exports (Excel and CSV) go through one sanitiser, :func:`spreadsheet_frame`, so
that a file opened by a spreadsheet program shows the data and never runs it:

- aware timestamps become naive UTC (spreadsheets have no time zones); an Excel header says
  so (``filed_at (UTC)``), while CSV keeps the frame's column names exactly, so that
  ``pd.read_csv`` of an export gives back the same names;
- list cells become ``"; "``-joined text, dict cells compact JSON text;
- text that starts with ``=``, ``+``, ``-``, ``@``, tab or carriage return (or their
  full-width forms, which some spreadsheet locales fold to ASCII), also after leading
  spaces, line feeds, no-break or ideographic spaces, a BOM or zero-width characters, is
  prefixed with a single quote ``'`` (the OWASP recommendation against formula injection),
  unless it is a plain number (``-0.6275``, ``+3``, ``-1e-5``: no formula, kept as it is);
  so are Excel's error literals such as ``#N/A``, which would otherwise be stored as error
  cells. A part after a ``;`` that starts like a formula gets the quote too (``a;'=1+1``),
  since spreadsheets in ``;``-separator locales split CSV fields there;
- numbers stay numbers (a negative score is the number -0.4, not text);
- NA becomes an empty cell; control characters that XML cannot carry are dropped.

Parquet and Arrow keep every dtype instead (:mod:`mdframes.io.parquet`, :mod:`mdframes.io.arrow`).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["spreadsheet_frame", "spreadsheet_cell", "neutralise"]

# Characters that start a formula (ASCII and full-width), and the invisible or blank ones a
# spreadsheet may skip before them.
_FORMULA_CHARS = "=+\\-@\uff1d\uff0b\uff0d\uff20"
_BLANK = " \t\r\n\u00a0\u1680\u180e\u2000-\u200d\u2028\u2029\u202f\u205f\u2060\u3000\ufeff"
_FORMULA_HEAD = re.compile(f"[{_BLANK}]*[{_FORMULA_CHARS}]")
# A plain number (``-0.6275``, ``+3``, ``-1e-5``) is no formula: a spreadsheet reads it as the
# number, and a program as the frame holds it.
_NUMBER = f"[{_BLANK}]*[+-]?(?:[0-9]+\\.?[0-9]*|\\.[0-9]+)(?:[eE][+-]?[0-9]+)?[{_BLANK}]*"
_PLAIN_NUMBER = re.compile(_NUMBER)
# A ";" then a formula: a separate cell where ";" separates CSV fields.
_FORMULA_PART = re.compile(f"(;[{_BLANK}]*)(?=[{_FORMULA_CHARS}])(?!{_NUMBER}(?:;|$))")
# Text openpyxl (and Excel) would store as an error value rather than as text.
_ERROR_LITERALS = frozenset(
    {"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A", "#GETTING_DATA"}
)
# Characters XML 1.0 cannot hold; openpyxl raises on them, so they are dropped everywhere.
ILLEGAL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


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


def neutralise(text: str) -> str:
    """Make one text cell safe to open in a spreadsheet.

    Drops control characters XML cannot carry and prefixes ``'`` when the text would
    otherwise be read as a formula or an error value, also where a ``;`` splits it into
    another cell.

    Examples
    --------
    >>> neutralise("=HYPERLINK(\\"http://x\\")")
    '\\'=HYPERLINK("http://x")'
    >>> neutralise("\\u00a0=1+1"), neutralise("a;=1+1"), neutralise("Buy; Sell")
    ("'\\xa0=1+1", "a;'=1+1", 'Buy; Sell')
    >>> neutralise("-0.6275"), neutralise("a; -1e-5"), neutralise("-1+1")
    ('-0.6275', 'a; -1e-5', "'-1+1")
    """
    text = _FORMULA_PART.sub(r"\1'", ILLEGAL_CHARS.sub("", text))
    if text.startswith(("\t", "\r")) or text in _ERROR_LITERALS:
        return "'" + text
    if _FORMULA_HEAD.match(text) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def _number(value: float, text: Callable[[str], str] = neutralise) -> float | str | None:
    if math.isnan(value):
        return None
    if math.isinf(value):  # no spreadsheet number holds infinity: keep it readable as text
        return text("inf" if value > 0 else "-inf")
    return value


def spreadsheet_cell(value: Any, *, safe: bool = True) -> Any:
    """One value as a spreadsheet can hold it: ``None``, ``bool``, ``int``, ``float``,
    naive ``datetime``/``date``/``time``, or ``str`` (neutralised unless ``safe=False``).

    Examples
    --------
    >>> spreadsheet_cell(["=1+1", "b"])
    "'=1+1; b"
    >>> spreadsheet_cell(-0.4)
    -0.4
    """
    text = neutralise if safe else str
    if is_list_like(value):
        # Each item is neutralised (a ';'-splitting CSV reader must not meet "=..." either),
        # then the joined text, whose first item might be a bare number such as -1.
        return text("; ".join(text(item_text(v)) for v in value))
    if is_missing(value):
        return None
    if isinstance(value, str):
        return text(value)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating, Decimal)):
        return _number(float(value), text)
    if isinstance(value, pd.Timestamp):
        return naive_utc(value.floor("us").to_pydatetime())
    if isinstance(value, dt.datetime):
        return naive_utc(value)
    if isinstance(value, (dt.date, dt.time)):
        return value
    if isinstance(value, Mapping):
        return text(compact_json(value))
    if isinstance(value, bytes):
        return text(value.decode("utf-8", errors="replace"))
    return text(str(value))


def datetime_column(s: pd.Series) -> list[Any]:
    aware = getattr(s.dt, "tz", None) is not None
    if aware:
        s = s.dt.tz_convert("UTC").dt.tz_localize(None)
    s = s.dt.floor("us")  # spreadsheets (and datetime) stop at microseconds
    present = s.notna()
    # A naive column of midnights is a date column: write dates, not "00:00:00" times.
    if not aware and (s[present] == s[present].dt.normalize()).all():
        return [v.date() if ok else None for v, ok in zip(s, present, strict=True)]
    return [v.to_pydatetime() if ok else None for v, ok in zip(s, present, strict=True)]


def _safe_column(s: pd.Series, safe: bool = True) -> list[Any]:
    if isinstance(s.dtype, pd.CategoricalDtype):
        # Map the (few) categories once instead of every cell.
        safe_categories = [spreadsheet_cell(c, safe=safe) for c in s.cat.categories]
        return [None if code < 0 else safe_categories[code] for code in s.cat.codes]
    if isinstance(s.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(s.dtype):
        return datetime_column(s)
    if pd.api.types.is_float_dtype(s.dtype):
        text = neutralise if safe else str
        return [None if pd.isna(v) else _number(float(v), text) for v in s.astype(object)]
    if pd.api.types.is_integer_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
        present = s.notna().to_numpy()
        return [v if ok else None for v, ok in zip(s.astype(object).tolist(), present, strict=True)]
    return [spreadsheet_cell(v, safe=safe) for v in s.astype(object)]


def _converted_to_utc(s: pd.Series) -> bool:
    """Whether the column holds aware times, which the export writes as naive UTC."""
    if isinstance(s.dtype, pd.DatetimeTZDtype):
        return True
    if s.dtype != object:
        return False
    return any(isinstance(v, dt.datetime) and v.tzinfo is not None for v in s)


def _header_text(column: Any, utc: bool = False, safe: bool = True) -> str:
    if isinstance(column, tuple):  # MultiIndex columns
        column = " / ".join(str(part) for part in column)
    text = f"{column} (UTC)" if utc else str(column)
    return neutralise(text) if safe else text


def with_named_index(df: pd.DataFrame) -> pd.DataFrame:
    # A positional index is noise in a spreadsheet; a named one (set_index("date")) is data.
    if any(name is not None for name in df.index.names):
        return df.reset_index(allow_duplicates=True)
    return df


def spreadsheet_frame(
    df: pd.DataFrame, *, safe: bool = True, mark_utc: bool = False
) -> pd.DataFrame:
    """A copy of ``df`` that any spreadsheet program opens safely (the rules in the module
    docstring), as object columns of plain Python values, with a fresh ``RangeIndex``.

    This is the single sanitiser behind :func:`to_excel` and :func:`to_csv`. A positional
    index is dropped; named index levels become ordinary leading columns. With
    ``mark_utc=True`` (Excel) headers of columns converted to naive UTC end in `` (UTC)``;
    otherwise the column names are kept exactly. ``safe=False`` leaves text as it is (no
    formula neutralising); everything else still applies.

    Examples
    --------
    >>> df = pd.DataFrame({"note": ["=cmd|' /c calc'!A1", "ok"], "score": [-0.4, 0.2]})
    >>> spreadsheet_frame(df)["note"].tolist()
    ["'=cmd|' /c calc'!A1", 'ok']
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame, got {type(df).__name__}")
    source = with_named_index(df)
    columns = [
        _header_text(c, mark_utc and _converted_to_utc(source.iloc[:, i]), safe)
        for i, c in enumerate(source.columns)
    ]
    data = {
        i: pd.Series(_safe_column(source.iloc[:, i], safe), dtype=object)
        for i in range(source.shape[1])
    }
    out = pd.DataFrame(data, index=pd.RangeIndex(len(source)))
    out.columns = pd.Index(columns, dtype=object)
    return out
