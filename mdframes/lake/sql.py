"""DuckDB over a lake: a view ``<name>_history`` (every stored row) and ``<name>`` (each
record's latest version, or each filter's latest snapshot) per dataset."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from .store.faults import damaged
from .table.frames import types_mapper
from .table.layout import view_name
from .table.table import DatasetTable, TableVersion, once_more_if_overtaken

if TYPE_CHECKING:  # pragma: no cover
    import duckdb

__all__ = ["connect", "views_sql", "run"]


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def views_sql(table: DatasetTable, source: str) -> list[str]:
    """The two views of one dataset over ``source`` (a table expression)."""
    assert table.manifest is not None
    name = view_name(table.ds.name)
    history = _ident(f"{name}_history")
    rule = table.mode.latest_sql(table.manifest, _ident)
    return [
        f"create or replace view {history} as select * from {source}",
        f"create or replace view {_ident(name)} as select * from {history} qualify {rule}",
    ]


def connect(
    tables: list[DatasetTable], pinned: dict[str, TableVersion] | None = None
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with every dataset's views, each over one pinned table
    version's file list (never a folder glob; no extension is downloaded); ``pinned`` is
    given the version of each dataset."""
    from .._deps import require

    duckdb = require("duckdb", "lake", "lake.sql")
    con = duckdb.connect()
    for table in tables:
        snap = table.snapshot()
        if snap is None or not snap.files:
            continue
        if pinned is not None:
            pinned[table.folder] = snap
        if not table.trusted(snap):
            # Another program committed: the views read the rows with its copies dropped.
            hidden = f"__rows_{view_name(table.ds.name)}"
            con.register(hidden, table.without_copies(snap, table.scan(snap)))
            source = _ident(hidden)
        elif table.storage.local:
            paths = ", ".join(_literal(f) for f in snap.files)
            source = f"read_parquet([{paths}], union_by_name = true)"
        else:
            # Object stores through pyarrow: DuckDB's own S3 reader is an extension that is
            # downloaded at run time, which fails offline.
            import pyarrow.dataset as pads

            dataset = pads.dataset(
                [f.split("://", 1)[1] for f in snap.files],
                schema=table.stored_schema(),
                format="parquet",
                filesystem=table.storage.fs,
            )
            hidden = f"__arrow_{view_name(table.ds.name)}"
            con.register(hidden, dataset)
            source = _ident(hidden)
        for statement in views_sql(table, source):
            con.execute(statement)
    return con


def _damaged(
    tables: list[DatasetTable], pinned: dict[str, TableVersion], exc: BaseException
) -> BaseException:
    """A DuckDB read error as the lake's: the damaged file of the versions the views read
    named, or the error itself."""
    for table in tables:
        snap = pinned.get(table.folder)
        for uri in [] if snap is None else snap.files:
            problem = table.probe(uri)
            if problem:
                return damaged(table.ds.name, f"{table.folder}/{uri.rsplit('/', 1)[-1]}", problem)
    return exc


def run(tables: list[DatasetTable], query: str, params: Any = None) -> pd.DataFrame:
    """The query's result as a DataFrame in the library's dtypes (text as ``string``,
    integers as ``Int64``, dates as ``datetime64``); run once more on the new versions when
    a compaction overtook it."""
    return once_more_if_overtaken(tables, lambda: _run(tables, query, params))


def _run(tables: list[DatasetTable], query: str, params: Any) -> pd.DataFrame:
    import duckdb

    pinned: dict[str, TableVersion] = {}
    try:
        con = connect(tables, pinned)
    except (duckdb.IOException, duckdb.InvalidInputException) as exc:
        raise _damaged(tables, pinned, exc) from None
    try:
        try:
            rel = con.sql(query, params=params) if params is not None else con.sql(query)
            if rel is None:  # a statement without rows (create, set, ...)
                return pd.DataFrame()
            # Through Arrow: DuckDB 1.x names it arrow(), 2.x to_arrow_table().
            table = rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()
        except (duckdb.IOException, duckdb.InvalidInputException) as exc:
            raise _damaged(tables, pinned, exc) from None
        # Calendar dates as the loaders give them: naive datetime64[ns].
        for i, field in enumerate(table.schema):
            if pa.types.is_date(field.type):
                table = table.set_column(i, field.name, table[i].cast(pa.timestamp("ns")))
        return table.to_pandas(types_mapper=types_mapper, date_as_object=False)
    finally:
        con.close()
