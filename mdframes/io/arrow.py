"""Frames to Apache Arrow tables and polars frames, every dtype kept.

| pandas | Arrow (:func:`to_arrow`) | polars (:func:`to_polars`) |
|---|---|---|
| `Int64` (nullable) | `int64` with nulls | `Int64` with nulls |
| `float64` | `double` (NaN -> null) | `Float64` (NaN -> null) |
| `category` | `dictionary` (every category) | `Enum` (every category, in order) |
| string | `large_string` (or `string`) | `String` |
| naive `datetime64` | naive `timestamp` | naive `Datetime` |
| `datetime64[.., UTC]` | `timestamp[.., tz=UTC]` | `Datetime(.., "UTC")` |
| list cells | `list<string>` | `List(String)` |
| `df.attrs` | schema metadata | not kept (polars frames have no metadata) |

pyarrow comes with the ``parquet`` extra, polars with the ``polars`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from .._deps import require
from ..errors import InvalidParameterError
from ..registry import REGISTRY
from .parquet import METADATA_KEY, with_attrs

if TYPE_CHECKING:  # pragma: no cover
    import polars
    import pyarrow

__all__ = ["to_arrow", "to_polars", "ARROW_METADATA_KEY"]

# The key under which attrs (typed) and list columns are stored; the same as to_parquet's,
# so md.read_parquet restores a written to_arrow table.
ARROW_METADATA_KEY = METADATA_KEY


def _frame(df: Any, caller: str) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise InvalidParameterError(
            f"{caller} takes a pandas DataFrame, not {type(df).__name__}", parameter="df"
        )
    if df.columns.duplicated().any():
        dupes = sorted({str(c) for c in df.columns[df.columns.duplicated()]})
        raise InvalidParameterError(
            f"{caller}: column names must be unique (repeated: {', '.join(dupes)})",
            parameter="df",
        )
    return df


def _declared_lists(df: pd.DataFrame) -> set[str]:
    ds = REGISTRY.get(str(df.attrs.get("dataset")))
    return {f.name for f in ds.all_fields if f.kind == "list"} if ds else set()


def _typed_lists(table: Any, names: set[str]) -> Any:
    """Give declared list columns their type where no cell told pyarrow (all null, empty)."""
    pa = require("pyarrow", "parquet", "to_arrow")
    for name in names & set(table.column_names):
        i = table.schema.get_field_index(name)
        kind = table.schema.field(i).type
        if pa.types.is_null(kind) or (pa.types.is_list(kind) and pa.types.is_null(kind.value_type)):
            target = pa.list_(pa.string())
            table = table.set_column(i, pa.field(name, target), table.column(i).cast(target))
    return table


def _arrow(df: pd.DataFrame, preserve_index: bool | None) -> Any:
    pa = require("pyarrow", "parquet", "to_arrow")

    def table_of(frame: pd.DataFrame) -> Any:
        try:
            table = pa.Table.from_pandas(frame, preserve_index=preserve_index)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise InvalidParameterError(
                f"a column holds values Arrow cannot type together: {exc}", parameter="df"
            ) from None
        return _typed_lists(table, _declared_lists(df))

    return with_attrs(df, table_of)


def to_arrow(df: pd.DataFrame) -> pyarrow.Table:
    """``df`` as a :class:`pyarrow.Table` with every dtype kept (table in the module docs).

    ``df.attrs`` go into the schema metadata: as pyarrow's own pandas metadata (so
    ``table.to_pandas()`` restores them with pyarrow >= 21, timestamps as ISO text), under
    pandas' ``PANDAS_ATTRS`` key (so ``pd.read_parquet`` of a file written from the table
    restores them with any pyarrow) and under the ``b"mdframes"`` key with timestamps tagged
    (so ``md.read_parquet`` gives them back as ``Timestamp``). The index is kept as pyarrow
    keeps it (a ``RangeIndex`` as metadata, any other as a column). List columns the
    registry declares stay ``list<string>`` even when every cell is null.

    Examples
    --------
    >>> df = pd.DataFrame({"shares": pd.array([100, None], dtype="Int64"),
    ...                    "type": pd.Categorical(["Sale", "Gift"])})
    >>> to_arrow(df).schema.types
    [DataType(int64), DictionaryType(dictionary<values=...string, indices=int8, ordered=0>)]
    """
    return _arrow(_frame(df, "to_arrow"), preserve_index=None)


def _indexed(df: pd.DataFrame) -> pd.DataFrame:
    # polars has no index: named levels are data (set_index("date")), a positional one is not.
    if any(name is not None for name in df.index.names):
        return df.reset_index()
    return df.reset_index(drop=True)


def to_polars(df: pd.DataFrame) -> polars.DataFrame:
    """``df`` as a :class:`polars.DataFrame` with every dtype kept (table in the module docs).

    Goes through :func:`to_arrow`. Categories become a polars ``Enum`` holding every category
    in its order (unused ones too), so a filter on a category that did not occur still
    type-checks. Named index levels become leading columns; a positional index is dropped.
    polars frames carry no metadata, so ``df.attrs`` stay behind: keep them from ``df``, or
    use :func:`to_arrow`.

    Examples
    --------
    >>> df = pd.DataFrame({"shares": pd.array([100, None], dtype="Int64")})
    >>> to_polars(df)["shares"].to_list()
    [100, None]
    """
    pl = require("polars", "polars", "to_polars")
    source = _indexed(_frame(df, "to_polars"))
    frame = pl.from_arrow(_arrow(source, preserve_index=False))
    enums = {}
    for name in source.columns:
        dtype = source[name].dtype
        if isinstance(dtype, pd.CategoricalDtype):
            categories = list(dtype.categories)
            if all(isinstance(c, str) for c in categories):
                enums[str(name)] = pl.Enum(categories)
    return frame.with_columns(pl.col(n).cast(e) for n, e in enums.items()) if enums else frame
