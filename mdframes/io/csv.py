"""CSV and JSON text: files that spreadsheets open safely, and streams for the command line."""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from .cells import datetime_column, is_list_like, is_missing, spreadsheet_frame, with_named_index

__all__ = ["to_csv", "write_csv", "write_json"]


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
    spreadsheet_frame(df, safe=safe).to_csv(stream, index=False, lineterminator="\r\n")


def _json_cell(value: Any) -> Any:
    if is_list_like(value):
        return [_json_cell(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _json_cell(v) for k, v in value.items()}
    if is_missing(value):
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
        return [None if v is None else v.isoformat() + zone for v in datetime_column(s)]
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
    source = with_named_index(df)
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
