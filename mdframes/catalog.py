"""The catalog: the registry as DataFrames, so a user can look around from Python.

>>> import mdframes as md
>>> md.datasets().query("scope == 'symbol'")[["name", "loader", "anchor"]].head(3)
        name          loader anchor
0   forecast   load_forecast   <NA>
1  sentiment  load_sentiment   date
2       news       load_news   date
>>> md.describe("insider_trading").columns.tolist()
['column', 'dtype', 'wire', 'rule', 'description']
"""

from __future__ import annotations

import pandas as pd

from .kinds import KINDS
from .registry import REGISTRY, get

__all__ = ["datasets", "describe", "record_identity"]


def record_identity(name: str) -> list[str]:
    """The columns that identify one record of dataset ``name`` in a frame (CONTRACT §2,
    §10.1): its registry ``record_id``, the one identity loaders order ties by and the lake
    keys versions on. ``"a|b"`` means a, or b where a is null.

    Examples
    --------
    >>> record_identity("sentiment")
    ['symbol', 'date']
    >>> record_identity("app_ratings")
    ['symbol', 'platform', 'app_id', 'date']
    """
    return list(get(name).record_id)


def datasets() -> pd.DataFrame:
    """One row per registry dataset: ``name, version, scope, path, loader, params, record_id,
    anchor, paged, columns`` (params, record_id and columns as lists; ``record_id`` as
    :func:`record_identity` gives it).

    Examples
    --------
    >>> md.datasets().loc[lambda d: d.paged, "name"].tolist()
    ['lobbying', 'government_contracts', 'patent_filings', 'app_ratings', 'app_ratings_daily']
    """
    rows = [
        {
            "name": ds.name,
            "version": ds.version,
            "scope": ds.scope,
            "path": ds.path,
            "loader": ds.loader,
            "params": [p.name for p in ds.params],
            "record_id": record_identity(ds.name),
            "anchor": ds.anchor,
            "paged": ds.paged,
            "columns": ds.columns,
            "description": ds.description,
        }
        for ds in REGISTRY.values()
    ]
    frame = pd.DataFrame(rows)
    for column in ("name", "version", "scope", "path", "loader", "anchor", "description"):
        frame[column] = frame[column].astype("string")
    return frame


def describe(name: str) -> pd.DataFrame:
    """One row per column of dataset ``name``: ``column, dtype, wire, rule, description``.

    ``rule`` lists the checks of the column (soft ones marked); the docs' dataset pages show
    the same table.

    Examples
    --------
    >>> md.describe("put_call_ratio").set_index("column").loc["ratio", "rule"]
    'never null (the spec does not mark it nullable) (soft); >= 0'
    """
    from .schemas import describe as rules_of

    ds = get(name)
    rules = {r["column"]: r["rules"] for r in rules_of(ds.name)}
    rows = [
        {
            "column": f.name,
            "dtype": KINDS[f.kind].dtype,
            "wire": f.wire,
            "rule": rules.get(f.name, ""),
            "description": f.description or _default_description(ds.name, f.name, f.kind),
        }
        for f in ds.all_fields
    ]
    return pd.DataFrame(rows).astype("string")


# Words for the columns every per-symbol frame shares; other fields state their own.
_COMMON = {
    "symbol": "Ticker symbol as requested (normalised: stripped, upper case)",
    "name": "Company name",
    "cik": "10-digit zero-padded company registry key; null when unresolved",
    "chamber": "house or senate (the endpoint the row came from)",
}


def _default_description(dataset: str, column: str, kind: str) -> str:
    if column in _COMMON:
        return _COMMON[column]
    anchor = REGISTRY[dataset].anchor
    suffix = " (point-in-time anchor)" if column == anchor else ""
    return f"{KINDS[kind].words}{suffix}"
