"""Parquet files with every dtype kept, and the typed ``attrs`` stored beside them (Arrow too)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._deps import require
from ..errors import warn

__all__ = ["to_parquet", "read_parquet"]

# Key under which typed attrs and list columns are stored in a file's or table's metadata.
METADATA_KEY = b"mdframes"


def pyarrow() -> tuple[Any, Any]:
    """``pyarrow`` and ``pyarrow.parquet``, or the ImportError naming the extra."""
    pq = require("pyarrow.parquet", "parquet", "Parquet export")
    return require("pyarrow", "parquet", "Parquet export"), pq


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


def with_attrs(df: pd.DataFrame, table_of: Callable[[pd.DataFrame], Any]) -> Any:
    """``table_of(df)`` (an Arrow table) with ``df.attrs`` and its list columns in the schema
    metadata: pyarrow's pandas metadata and pandas' ``PANDAS_ATTRS`` get the JSON-able attrs,
    :data:`METADATA_KEY` the tagged ones, which :func:`read_parquet` restores as they were."""
    plain, tagged = storable_attrs(df.attrs)
    frame = df.copy(deep=False)
    # pyarrow writes attrs into its pandas metadata only when they are JSON: that form.
    frame.attrs.clear()
    frame.attrs.update(plain)
    table = table_of(frame)
    extra = {"attrs": tagged, "list_columns": list_columns(df)}
    metadata = {
        **(table.schema.metadata or {}),
        **pandas_attrs(plain),
        METADATA_KEY: json.dumps(extra).encode(),
    }
    return table.replace_schema_metadata(metadata)


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
    pa, pq = pyarrow()
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame, got {type(df).__name__}")
    table = with_attrs(df, pa.Table.from_pandas)
    out = Path(path)
    pq.write_table(table, out)
    return out


def read_parquet(path: str | Path) -> pd.DataFrame:
    """Read a file written by :func:`to_parquet`: like ``pd.read_parquet``, plus list
    columns as Python lists and attrs with their timestamps restored.

    Examples
    --------
    >>> md.to_parquet(md.load_forecast("AAPL"), "forecast.parquet")
    PosixPath('forecast.parquet')
    >>> df = md.read_parquet("forecast.parquet")
    >>> df.attrs["dataset"], df["last_updated"].dtype
    ('forecast', datetime64[ns, UTC])
    """
    _, pq = pyarrow()
    df = pd.read_parquet(path)
    raw = (pq.read_schema(path).metadata or {}).get(METADATA_KEY)
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
    df.attrs = decode(extra.get("attrs", {}))
    return df
