"""What the panels ask of a lake beyond its public ``read`` and ``coverage``, in one place:
``md.Lake``'s rows public from a date, its kept coverage frame and its stored rows (its private
methods, until the lake answers them as a public role), and whether a lake is ``md.Lake`` or a
stand-in whose ``read`` may not take ``columns=``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd


def read_published(lake: Any, dataset: str, symbols: Any = None, **options: Any) -> pd.DataFrame:
    """``md.Lake``'s read of the rows public from ``since`` (a pinned lake's too)."""
    frame: pd.DataFrame = lake._read_published(dataset, symbols, **options)
    return frame


def kept_coverage_of(lake: Any) -> Callable[[list[str], list[str]], pd.DataFrame] | None:
    """``md.Lake``'s coverage frame as it keeps it (no copy); ``None``: a stand-in."""
    kept = getattr(lake, "_kept_coverage", None)
    return kept if callable(kept) else None


def stored_rows_of(lake: Any) -> Callable[[str], int | None] | None:
    """``md.Lake``'s rows stored per dataset, from its log; ``None``: a stand-in."""
    rows = getattr(lake, "_stored_rows", None)
    return rows if callable(rows) else None


def takes_columns(lake: Any) -> bool:
    """Whether ``lake.read`` takes ``columns=`` (``md.Lake`` does; a stand-in may not)."""
    import inspect

    try:
        parameters = inspect.signature(lake.read).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "columns" or p.kind is p.VAR_KEYWORD for p in parameters)


def reads_published(lake: Any) -> bool:
    """Whether ``lake`` reads the rows public from a date (``md.Lake``, pinned or not; a
    stand-in reads by its time column)."""
    from ...lake import Lake
    from .pinned import LakeAt

    inner = lake.lake if isinstance(lake, LakeAt) else lake
    return isinstance(inner, Lake)
