"""The shape of what a sync writes: stored order, the file's final schema, and forecast
header values as columns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

__all__ = ["sort_keys", "conform", "header_columns"]


def sort_keys(manifest: Any, meta: Sequence[str], cross: bool) -> list[tuple[str, str]]:
    """Stored order: symbol, time, key parts, then versions (cross sections by filter first)."""
    names = manifest.names()
    keys: list[str] = []
    if "_scope" in meta and cross:
        keys.append("_scope")
    for name in ["symbol", manifest.time or ""] + [p.split("|")[0] for p in manifest.key]:
        if name and name in names and name not in keys:
            keys.append(name)
    if not keys:
        keys = [n for n in names if manifest.column(n).kind not in ("list", "json", "null")][:3]
    keys += [m for m in ("_n", "_version") if m in meta]
    return [(k, "ascending") for k in keys]


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """A buffered table in the final schema of its file (columns added since are null)."""
    arrays = []
    for f in schema:
        if f.name in table.column_names:
            col = table[f.name]
            arrays.append(col if col.type == f.type else col.cast(f.type))
        else:
            arrays.append(pa.nulls(table.num_rows, type=f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def header_columns(ds: Any, frame: pd.DataFrame) -> pd.DataFrame:
    """Forecast header values as columns (CONTRACT §2), where the loader still keeps them in
    attrs: the lake must not lose them."""
    if ds.name != "forecast" or "expected_short_term" in frame.columns:
        return frame
    meta = frame.attrs.get("metadata")
    if not isinstance(meta, dict):
        return frame
    out = frame.copy()
    for key in (
        "expected_short_term",
        "expected_mid_term",
        "expected_long_term",
        "lower_bound_change",
        "upper_bound_change",
    ):
        out[key] = pd.array([meta.get(key)] * len(out), dtype="float64")
    stamp = frame.attrs.get("last_updated")
    stamps = pd.Series([stamp] * len(out), index=out.index, dtype=object)
    out["last_updated"] = pd.to_datetime(stamps, utc=True).astype("datetime64[ns, UTC]")
    return out
