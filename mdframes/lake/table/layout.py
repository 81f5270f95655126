"""Where things sit in a lake, and the dtype record that says how to read them back.

One Delta table per dataset (``screener/sentiment`` -> ``<root>/screener__sentiment/``). Beside
the table's ``_delta_log/`` and data files, the folder holds the lake's own files, all named
with a leading ``_`` (Delta readers and engines ignore them): ``_mdframes.json``, the dtype
record (format version 2), and ``_state.json``, the windows and snapshots synced. The root holds
``_lake.json`` (format, sync counter, the open run, the sync log) and the writer lease.

The dtype record holds, per column, the pandas dtype the loader gave (strings, ``Int64``,
categories with their fixed vocabulary, naive dates, UTC timestamps, lists) and the Arrow type
it is stored as, so a read restores the loader's frame exactly. A lake of format 1 (mdframes
0.2: Parquet files beside a ``_manifest.json``, no Delta log) is converted by
:mod:`mdframes.lake.upgrade`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from ...identity import Identity
from ...registry import Dataset

__all__ = [
    "FORMAT_VERSION",
    "refuse_newer",
    "MANIFEST",
    "STATE",
    "LAKE_STATE",
    "LOCK",
    "DELTA_LOG",
    "FORMAT1_MANIFEST",
    "Column",
    "DtypeRecord",
    "dir_name",
    "view_name",
    "time_column",
    "kind_of",
]

FORMAT_VERSION = 2
MANIFEST = "_mdframes.json"  # per dataset: the dtype record (format 2)
FORMAT1_MANIFEST = "_manifest.json"  # what mdframes 0.2 wrote instead (format 1)
STATE = "_state.json"  # per dataset: windows and snapshots synced, failures
LAKE_STATE = "_lake.json"  # at the root: format, sync counter, the open (unfinished) run
LOCK = ".lock"
DELTA_LOG = "_delta_log"


def dir_name(dataset: str) -> str:
    """The folder of a dataset: ``/`` becomes ``__`` (``screener/sentiment`` ->
    ``screener__sentiment``).

    >>> dir_name("congress_trades"), dir_name("screener/put-call-ratio")
    ('congress_trades', 'screener__put-call-ratio')
    """
    return dataset.replace("/", "__")


def view_name(dataset: str) -> str:
    """The SQL view of a dataset: a plain identifier.

    >>> view_name("screener/put-call-ratio")
    'screener__put_call_ratio'
    """
    return dir_name(dataset).replace("-", "_")


def time_column(ds: Dataset, columns: list[str]) -> str | None:
    """The column a dataset's rows are ordered and windowed by: the one the service filters
    start/end on, else ``date`` when there is one."""
    name = ds.time_column
    if name and name in columns:
        return name
    return "date" if "date" in columns else None


def kind_of(values: pd.Series) -> str:
    """The storage kind of one loader column."""
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return "category"
    if isinstance(dtype, pd.StringDtype):
        return "string"
    if isinstance(dtype, pd.DatetimeTZDtype):
        return "timestamp"
    if pd.api.types.is_datetime64_dtype(dtype):
        return "date"  # the loaders keep naive datetimes for calendar dates only
    if isinstance(dtype, pd.BooleanDtype) or pd.api.types.is_bool_dtype(dtype):
        return "boolean"
    if pd.api.types.is_integer_dtype(dtype):
        return "Int64"
    if pd.api.types.is_float_dtype(dtype):
        return "float64"
    present = values.dropna() if pd.api.types.is_object_dtype(dtype) else values
    if len(present) == 0:
        return "null"
    if all(isinstance(v, str) for v in present):
        return "string"
    if all(isinstance(v, (list, tuple)) for v in present):
        items = [x for v in present for x in v if x is not None]
        if all(isinstance(x, str) for x in items):
            return "list"
    return "json"


@dataclass
class Column:
    name: str
    kind: str
    categories: list[str] = field(default_factory=list)  # fixed vocabulary, in order


def refuse_newer(fmt: Any) -> None:
    """Raise :class:`~mdframes.MdframesError` for a lake written in a newer format than this
    mdframes reads."""
    if isinstance(fmt, int) and fmt > FORMAT_VERSION:
        from ...errors import MdframesError

        raise MdframesError(
            f"this lake was written in lake format {fmt}, newer than the format "
            f"{FORMAT_VERSION} this mdframes reads: upgrade mdframes"
        )


@dataclass
class DtypeRecord:
    """How a dataset folder is laid out and typed (``_manifest.json``)."""

    dataset: str
    mode: str  # "window" or "snapshot"
    key: list[str]
    time: str | None
    columns: list[Column]
    format: int = FORMAT_VERSION

    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)

    @property
    def identity(self) -> Identity:
        """The record identity the dataset's versions are keyed on, as the table was created
        with (the registry's ``record_id`` then)."""
        return Identity.parse(self.key)

    def to_json(self) -> bytes:
        body = asdict(self)
        body["dtypes"] = {c.name: _pandas_name(c) for c in self.columns}  # for humans and tools
        return json.dumps(body, indent=1, ensure_ascii=False).encode()

    @classmethod
    def from_json(cls, raw: bytes, *, accept: int = FORMAT_VERSION) -> DtypeRecord:
        """The record of ``raw``; raises ``ValueError``/``KeyError``/``TypeError`` when it is
        not one (the caller names the file) and :class:`MdframesError` for another format."""
        body: dict[str, Any] = json.loads(raw)
        fmt = body.get("format")
        refuse_newer(fmt)
        if fmt != accept:
            raise ValueError(f"lake format {fmt!r}, expected {accept}")
        body.pop("dtypes", None)
        body["columns"] = [Column(**c) for c in body["columns"]]
        return cls(**body)


def _pandas_name(c: Column) -> str:
    return {
        "date": "datetime64[ns]",
        "timestamp": "datetime64[ns, UTC]",
        "list": "object (list)",
        "json": "object",
        "null": "object",
    }.get(c.kind, c.kind)
