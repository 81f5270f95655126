"""Forecast header values as columns, before a sync stores a forecast frame."""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["header_columns"]


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
