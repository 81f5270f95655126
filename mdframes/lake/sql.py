"""DuckDB over a lake: a view ``<name>_history`` (every stored row) and ``<name>`` (each
record's latest version, or each filter's latest snapshot) per dataset."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from .frames import types_mapper
from .layout import view_name
from .maintenance import stores
from .store import DatasetStore, is_cross

if TYPE_CHECKING:  # pragma: no cover
    import duckdb

    from .core import Lake

__all__ = ["connect", "views_sql", "run"]


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _partition(store: DatasetStore) -> list[str]:
    manifest = store.manifest
    assert manifest is not None
    names = set(manifest.names())
    if store.ds.lake == "snapshot":
        return ["_scope"] if is_cross(store.ds) else ["symbol", "_scope"]
    parts = []
    for part in manifest.key or [n for n in manifest.names()]:
        present = [_ident(n) for n in part.split("|") if n in names]
        if present:
            parts.append(present[0] if len(present) == 1 else f"coalesce({', '.join(present)})")
    return parts + ["_n"]


def views_sql(store: DatasetStore, source: str) -> list[str]:
    """The two views of one dataset over ``source`` (a table expression)."""
    name = view_name(store.ds.name)
    history = _ident(f"{name}_history")
    statements = [f"create or replace view {history} as select * from {source}"]
    partition = ", ".join(
        p if p.startswith(('"', "coalesce")) else _ident(p) for p in _partition(store)
    )
    if store.ds.lake == "snapshot":
        rule = f"_version = max(_version) over (partition by {partition})"
    else:
        rule = f"row_number() over (partition by {partition} order by _version desc) = 1"
    statements.append(
        f"create or replace view {_ident(name)} as select * from {history} qualify {rule}"
    )
    return statements


def connect(lake: Lake) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with every dataset's views."""
    try:
        import duckdb
    except ImportError:  # pragma: no cover - the lake extra installs it
        raise ImportError("lake.sql needs DuckDB: pip install 'mdframes[lake]'") from None

    con = duckdb.connect()
    for store in stores(lake):
        files = store.files()
        if not files:
            continue
        if lake.storage.local:
            paths = ", ".join(_literal(e.path) for e in files)
            source = f"read_parquet([{paths}], union_by_name = true)"
        else:
            # Object stores through pyarrow: DuckDB's own S3 reader is an extension that is
            # downloaded at run time, which fails offline.
            import pyarrow.dataset as pads

            dataset = pads.dataset(
                [e.path for e in files],
                schema=store.schema(),
                format="parquet",
                filesystem=lake.storage.fs,
            )
            hidden = f"__arrow_{view_name(store.ds.name)}"
            con.register(hidden, dataset)
            source = _ident(hidden)
        for statement in views_sql(store, source):
            con.execute(statement)
    return con


def run(lake: Lake, query: str, params: Any = None) -> pd.DataFrame:
    """The query's result as a DataFrame in the library's dtypes (text as ``string``,
    integers as ``Int64``, dates as ``datetime64``)."""
    con = connect(lake)
    try:
        rel = con.sql(query, params=params) if params is not None else con.sql(query)
        if rel is None:  # a statement without rows (create, set, ...)
            return pd.DataFrame()
        # Through Arrow: DuckDB 1.x names it arrow(), 2.x to_arrow_table().
        table = rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()
        # Calendar dates as the loaders give them: naive datetime64[ns].
        for i, field in enumerate(table.schema):
            if pa.types.is_date(field.type):
                table = table.set_column(i, field.name, table[i].cast(pa.timestamp("ns")))
        return table.to_pandas(types_mapper=types_mapper, date_as_object=False)
    finally:
        con.close()
