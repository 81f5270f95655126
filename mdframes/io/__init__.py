"""Frames out to files and other libraries: Excel, CSV and JSON, Parquet, Arrow and polars.

Spreadsheet exports share one cell sanitiser (:mod:`mdframes.io.cells`); Parquet and Arrow
keep every dtype and ``df.attrs`` (:mod:`mdframes.io.parquet`, :mod:`mdframes.io.arrow`).
``md.to_excel``, ``md.to_csv``, ``md.to_parquet``, ``md.read_parquet``, ``md.to_arrow`` and
``md.to_polars`` are these functions; ``md.export`` and ``md.interop``, the modules they
lived in, name this package.
"""

from __future__ import annotations

from .arrow import ARROW_METADATA_KEY, to_arrow, to_polars
from .cells import neutralise, spreadsheet_cell, spreadsheet_frame
from .csv import to_csv, write_csv, write_json
from .excel import excel_formats, openpyxl, sheet_name, sheet_names, to_excel
from .parquet import pyarrow, read_parquet, to_parquet

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
    "to_arrow",
    "to_polars",
    "ARROW_METADATA_KEY",
]

# What writing a file of each suffix needs: the command line checks it before any request.
WRITER_NEEDS = {".xlsx": openpyxl, ".parquet": pyarrow}
