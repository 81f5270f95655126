"""How a lake and the frames it describes itself with show in a notebook (``_repr_html_``).

``lake.info()`` and ``lake.coverage()`` are plain DataFrames (their ``str()``, dtypes and
equality are a DataFrame's); the frame they return also carries a ``_repr_html_`` of its
own, a compact table under a caption of the key figures. A copy or a slice of it shows as
any frame does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from .. import _html

__all__ = ["info_frame", "coverage_frame", "lake_html"]


def _attach(df: pd.DataFrame, render: Any) -> pd.DataFrame:
    # object.__setattr__: pandas' own would take a new attribute for a column's name.
    object.__setattr__(df, "_repr_html_", lambda: render(df))
    return df


def info_caption(df: pd.DataFrame) -> str:
    if df.empty:
        return "lake.info(): no dataset stored yet"
    rows = int(pd.to_numeric(df["rows"]).fillna(0).sum())
    size = _html.size(pd.to_numeric(df["bytes"]).fillna(0).sum())
    last = pd.to_datetime(df["last_sync"]).max()
    when = f", last sync {last:%Y-%m-%d %H:%M} UTC" if pd.notna(last) else ""
    return f"lake.info(): {len(df)} datasets, {rows:,} records, {size}{when}"


def _info_html(df: pd.DataFrame) -> str:
    shown = df.assign(bytes=[_html.size(b) for b in df["bytes"]]) if "bytes" in df else df
    return _html.frame_html(shown, info_caption(df))


def info_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (lake.info()'s frame), shown in a notebook under its totals."""
    return _attach(df, _info_html)


def coverage_caption(df: pd.DataFrame) -> str:
    if df.empty:
        return "lake.coverage(): nothing synced or asked for"
    counts = df["status"].astype("string").value_counts()
    parts = ", ".join(f"{n:,} {status}" for status, n in counts.items())
    gaps = int(sum(len(g) for g in df["gaps"] if isinstance(g, list))) if "gaps" in df else 0
    datasets = df["dataset"].nunique()
    return f"lake.coverage(): {len(df):,} rows over {datasets} datasets: {parts}" + (
        f"; {gaps} gaps" if gaps else ""
    )


def coverage_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (lake.coverage()'s frame), shown in a notebook under its status counts."""
    return _attach(df, lambda d: _html.frame_html(d, coverage_caption(d), "status"))


def lake_html(root: str, local: bool, info_of: Callable[[], pd.DataFrame]) -> str:
    """A lake's root (never a credential), where it is and what its ``info()`` (``info_of``)
    says it holds; the facade's own methods are passed in, so nothing here imports it."""
    where = "local folder" if local else "object store"
    head = _html.figures([("root", root), ("storage", where)])
    try:
        info = info_of()
    except Exception as exc:  # a notebook's view never raises: it says what went wrong
        body = (
            f"<div style='color:#cf222e'>{_html.text(type(exc).__name__)}: {_html.text(exc)}</div>"
        )
    else:
        body = _info_html(info)
    return _html.box("Lake", head, body)
