"""Write frames to Excel, CSV and Parquet.

Spreadsheet exports (Excel and CSV) go through one sanitiser, :func:`spreadsheet_frame`, so
that a file opened by a spreadsheet program shows the data and never runs it:

- aware timestamps become naive UTC (spreadsheets have no time zones); an Excel header says
  so (``filed_at (UTC)``), while CSV keeps the frame's column names exactly, so that
  ``pd.read_csv`` of an export gives back the same names;
- list cells become ``"; "``-joined text, dict cells compact JSON text;
- text that starts with ``=``, ``+``, ``-``, ``@``, tab or carriage return (or their
  full-width forms, which some spreadsheet locales fold to ASCII), also after leading
  spaces, line feeds, no-break or ideographic spaces, a BOM or zero-width characters, is
  prefixed with a single quote ``'`` (the OWASP recommendation against formula injection);
  so are Excel's error literals such as ``#N/A``, which would otherwise be stored as error
  cells. A part after a ``;`` that starts like a formula gets the quote too (``a;'=1+1``),
  since spreadsheets in ``;``-separator locales split CSV fields there;
- numbers stay numbers (a negative score is the number -0.4, not text);
- NA becomes an empty cell; control characters that XML cannot carry are dropped.

Parquet keeps every dtype instead (see :func:`to_parquet`).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from . import _exportkit as kit

__all__ = [
    "to_excel",
    "to_csv",
    "to_parquet",
    "read_parquet",
    "write_csv",
    "write_json",
    "spreadsheet_frame",
    "spreadsheet_cell",
    "neutralise",
    "sheet_name",
    "sheet_names",
    "excel_formats",
]

# Characters that start a formula (ASCII and full-width), and the invisible or blank ones a
# spreadsheet may skip before them.
_FORMULA_CHARS = "=+\\-@\uff1d\uff0b\uff0d\uff20"
_BLANK = " \t\r\n\u00a0\u1680\u180e\u2000-\u200d\u2028\u2029\u202f\u205f\u2060\u3000\ufeff"
_FORMULA_HEAD = re.compile(f"[{_BLANK}]*[{_FORMULA_CHARS}]")
# A ";" then a formula: a separate cell where ";" separates CSV fields.
_FORMULA_PART = re.compile(f"(;[{_BLANK}]*)(?=[{_FORMULA_CHARS}])")
# Text openpyxl (and Excel) would store as an error value rather than as text.
_ERROR_LITERALS = frozenset(
    {"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A", "#GETTING_DATA"}
)
# Characters XML 1.0 cannot hold; openpyxl raises on them, so they are dropped everywhere.
_ILLEGAL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")

EXCEL_MAX_ROWS = 1_048_576
EXCEL_MAX_COLUMNS = 16_384
_SHEET_MAX = 31
_SHEET_FORBIDDEN = re.compile(r"[\[\]:*?/\\]")
_SUMMARY_SUFFIX = " summary"

# Key under which to_parquet stores typed attrs and list columns in the file's metadata.
_PARQUET_KEY = b"mdframes"


# --- the shared cell sanitiser ----------------------------------------------------------------


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
    """
    text = _FORMULA_PART.sub(r"\1'", _ILLEGAL_CHARS.sub("", text))
    if text.startswith(("\t", "\r")) or _FORMULA_HEAD.match(text) or text in _ERROR_LITERALS:
        return "'" + text
    return text


def _as_is(text: str) -> str:
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
    text = neutralise if safe else _as_is
    if kit.is_list_like(value):
        # Each item is neutralised (a ';'-splitting CSV reader must not meet "=..." either),
        # then the joined text, whose first item might be a bare number such as -1.
        return text("; ".join(text(kit.item_text(v)) for v in value))
    if kit.is_missing(value):
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
        return kit.naive_utc(value.floor("us").to_pydatetime())
    if isinstance(value, dt.datetime):
        return kit.naive_utc(value)
    if isinstance(value, (dt.date, dt.time)):
        return value
    if isinstance(value, Mapping):
        return text(kit.compact_json(value))
    if isinstance(value, bytes):
        return text(value.decode("utf-8", errors="replace"))
    return text(str(value))


def _datetime_column(s: pd.Series) -> list[Any]:
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
        return _datetime_column(s)
    if pd.api.types.is_float_dtype(s.dtype):
        text = neutralise if safe else _as_is
        return [None if pd.isna(v) else _number(float(v), text) for v in s.astype(object)]
    if pd.api.types.is_integer_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
        present = s.notna().to_numpy()
        values = s.astype(object).tolist()
        return [v if ok else None for v, ok in zip(values, present, strict=True)]
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


def _with_named_index(df: pd.DataFrame) -> pd.DataFrame:
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
    source = _with_named_index(df)
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


# --- Excel ------------------------------------------------------------------------------------

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


def _number_format(s: pd.Series, cells: list[Any]) -> str | None:
    name = str(s.name)
    if pd.api.types.is_bool_dtype(s.dtype):
        return None
    if pd.api.types.is_integer_dtype(s.dtype):
        return "0" if _PLAIN_INTEGERS.search(name) else INTEGER_FORMAT
    if pd.api.types.is_float_dtype(s.dtype):
        return SCORE_FORMAT if _SCORES.search(name) else DECIMAL_FORMAT
    if isinstance(s.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(s.dtype):
        times = any(isinstance(v, dt.datetime) for v in cells)
        return TIMESTAMP_FORMAT if times else DATE_FORMAT
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
    source = _with_named_index(df)
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
    name = _ILLEGAL_CHARS.sub("", _SHEET_FORBIDDEN.sub("_", text)).strip().strip("'").strip()
    name = kit.abbreviate(name, limit).strip().strip("'").strip()
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
    openpyxl = kit.openpyxl()
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
            sheets.append((spreadsheet_frame(kit.summary_frame(summary)), None))

    wb = openpyxl.Workbook(write_only=True)
    for title, (frame, formats) in zip(sheet_names(labels), sheets, strict=True):
        kit.write_sheet(wb, title, frame, formats)
    out = Path(path)
    wb.save(out)
    return out


# --- CSV --------------------------------------------------------------------------------------


def to_csv(df: pd.DataFrame, path: str | Path, *, safe: bool = True) -> Path:
    """Write ``df`` to a UTF-8 CSV file (RFC 4180: comma, CRLF, minimal quoting) that
    spreadsheet programs open safely.

    Same cell rules as :func:`to_excel` (formula neutralising, ``"; "``-joined lists,
    aware times as naive UTC, NA as an empty field); no index column; the frame's column
    names exactly (``pd.read_csv`` gives them back); date columns as ``YYYY-MM-DD``,
    timestamps as ``YYYY-MM-DD HH:MM:SS``.

    Parameters
    ----------
    df : DataFrame
    path : str or Path
    safe : bool
        ``True`` (default): text that a spreadsheet would run as a formula gets a leading
        ``'``. ``False``: text is written exactly as it is (``-3% on the day`` stays so), for
        files read by programs, or data you know holds no formulas.

    Examples
    --------
    >>> df = md.load_sentiment("AAPL")
    >>> md.to_csv(df, "sentiment.csv")
    PosixPath('sentiment.csv')
    >>> md.to_csv(df, "for-pandas.csv", safe=False)
    PosixPath('for-pandas.csv')
    """
    out = Path(path)
    with out.open("w", encoding="utf-8", newline="") as stream:
        write_csv(df, stream, safe=safe)
    return out


def write_csv(df: pd.DataFrame, stream: IO[str], *, safe: bool = True) -> None:
    """Write ``df`` as :func:`to_csv` would, to an open text stream (``sys.stdout`` for the
    command line's pipes).

    Examples
    --------
    >>> import io
    >>> buffer = io.StringIO()
    >>> write_csv(pd.DataFrame({"a": [1, 2]}), buffer)
    >>> buffer.getvalue()
    'a\\r\\n1\\r\\n2\\r\\n'
    """
    # CRLF rows (RFC 4180) also make the writer quote any field holding a bare CR or LF.
    frame = spreadsheet_frame(df, safe=safe)
    frame.to_csv(stream, index=False, lineterminator="\r\n")


def _json_cell(value: Any) -> Any:
    if kit.is_list_like(value):
        return [_json_cell(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _json_cell(v) for k, v in value.items()}
    if kit.is_missing(value):
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating, Decimal)):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, pd.Timestamp):
        value = value.to_pydatetime()
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    return value if isinstance(value, str) else str(value)


def _json_column(s: pd.Series) -> list[Any]:
    if isinstance(s.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(s.dtype):
        # The CSV's rule (a naive column of midnights holds dates), in ISO 8601; aware times
        # as UTC with a "Z".
        zone = "Z" if getattr(s.dt, "tz", None) is not None else ""
        return [None if v is None else v.isoformat() + zone for v in _datetime_column(s)]
    return [_json_cell(v) for v in s.astype(object)]


def write_json(df: pd.DataFrame, stream: IO[str], *, lines: bool = False) -> None:
    """Write ``df`` as JSON records to an open text stream: one array of objects, or with
    ``lines=True`` one object per line (JSON Lines).

    Column names as in the frame; NA, NaN and infinities as ``null``; dates ``YYYY-MM-DD``,
    times ISO 8601 (aware ones in UTC, ending in ``Z``); lists as arrays. Named index levels
    become leading fields, as in the CSV export.

    Examples
    --------
    >>> import io
    >>> buffer = io.StringIO()
    >>> write_json(pd.DataFrame({"a": [1, None]}), buffer, lines=True)
    >>> buffer.getvalue()
    '{"a": 1.0}\\n{"a": null}\\n'
    """
    source = _with_named_index(df)
    names = [" / ".join(map(str, c)) if isinstance(c, tuple) else str(c) for c in source.columns]
    columns = [_json_column(source.iloc[:, i]) for i in range(source.shape[1])]
    records = zip(*columns, strict=True) if columns else ([] for _ in range(len(source)))
    rows = (
        json.dumps(dict(zip(names, values, strict=True)), ensure_ascii=False) for values in records
    )
    if lines:
        for row in rows:
            stream.write(row + "\n")
        return
    stream.write("[")
    for i, row in enumerate(rows):
        stream.write(("," if i else "") + "\n" + row)
    stream.write("\n]\n" if len(source) else "]\n")


# --- Parquet ----------------------------------------------------------------------------------


def to_parquet(df: pd.DataFrame, path: str | Path) -> Path:
    """Write ``df`` to Parquet with every dtype kept.

    ``pd.read_parquet(path)`` gives back an equal frame (``category``, ``Int64``, string,
    naive and UTC-aware ``datetime64``, floats; list columns come back as arrays there, as
    lists through :func:`read_parquet`). JSON-able ``df.attrs`` are stored in the file's
    pandas metadata, so ``pd.read_parquet`` restores them too (timestamps such as
    ``attrs["last_updated"]`` as ISO text there, as ``Timestamp`` through :func:`read_parquet`);
    attrs that cannot be written as JSON are left out with a warning. Dict cells become
    Parquet structs (keys unioned over the rows), so they read back with every key.

    Examples
    --------
    >>> df = md.load_forecast("AAPL")
    >>> md.to_parquet(df, "forecast.parquet")
    PosixPath('forecast.parquet')
    """
    pa, pq = kit.pyarrow()
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame, got {type(df).__name__}")
    plain, tagged = kit.storable_attrs(df.attrs)
    frame = df.copy(deep=False)
    # pyarrow writes attrs into the pandas metadata itself; give it the JSON-able form.
    frame.attrs.clear()
    frame.attrs.update(plain)
    table = pa.Table.from_pandas(frame)
    extra = {"attrs": tagged, "list_columns": kit.list_columns(df)}
    metadata = {
        **(table.schema.metadata or {}),
        **kit.pandas_attrs(plain),
        _PARQUET_KEY: json.dumps(extra).encode(),
    }
    out = Path(path)
    pq.write_table(table.replace_schema_metadata(metadata), out)
    return out


def read_parquet(path: str | Path) -> pd.DataFrame:
    """Read a file written by :func:`to_parquet`: like ``pd.read_parquet``, plus list
    columns as Python lists and attrs with their timestamps restored.

    Examples
    --------
    >>> md.to_parquet(md.load_forecast("AAPL"), "forecast.parquet")
    PosixPath('forecast.parquet')
    >>> df = md.export.read_parquet("forecast.parquet")
    >>> df.attrs["dataset"], df["last_updated"].dtype
    ('forecast', datetime64[ns, UTC])
    """
    _, pq = kit.pyarrow()
    df = pd.read_parquet(path)
    raw = (pq.read_schema(path).metadata or {}).get(_PARQUET_KEY)
    if raw is None:  # not written by mdframes: nothing more to restore
        return df
    extra = json.loads(raw)
    for name in extra.get("list_columns", []):
        if name in df.columns:
            df[name] = pd.Series(
                [v.tolist() if isinstance(v, np.ndarray) else v for v in df[name]],
                index=df.index,
                dtype=object,
            )
    df.attrs = kit.decode(extra.get("attrs", {}))
    return df
