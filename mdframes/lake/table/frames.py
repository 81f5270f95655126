"""Loader frames <-> Arrow tables, typed by the manifest; row and key hashes.

Stored types are the plainest each engine reads without help: text as ``string`` (categories
too: their values, not their codes), integers as ``int64``, calendar dates as ``date32``,
times as UTC ``timestamp[us]``, list cells as ``list<string>``. The manifest keeps the
pandas side (``Int64``, the category vocabulary, ``datetime64[ns]``), so a read gives the
loader's dtypes back.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..._threads import threads
from ...errors import MdframesError
from ...identity import Identity
from ...registry import Dataset
from .layout import Column, DtypeRecord, kind_of

__all__ = [
    "arrow_type",
    "schema_of",
    "extend_manifest",
    "to_table",
    "to_frame",
    "row_hashes",
    "key_hashes",
    "types_mapper",
]

_META_TYPES = {
    "_fetched_at": pa.timestamp("us", tz="UTC"),
    "_sync_id": pa.string(),
    "_version": pa.int32(),
    "_n": pa.int16(),
    "_scope": pa.string(),
}


def arrow_type(kind: str) -> pa.DataType:
    """The stored Arrow type of a column kind (``null``: a column no row has set yet; Delta
    has no null type, so such a column is not stored until it gets a value). ``ValueError``
    for a kind this mdframes does not know."""
    types = {
        "string": pa.string(),
        "category": pa.string(),
        "json": pa.string(),
        "Int64": pa.int64(),
        "float64": pa.float64(),
        "boolean": pa.bool_(),
        "date": pa.date32(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "list": pa.list_(pa.string()),
        "null": pa.null(),
    }
    if kind not in types:
        raise ValueError(f"a column of unknown kind {kind!r}")
    return types[kind]


def schema_of(manifest: DtypeRecord, meta: Sequence[str], *, stored: bool = False) -> pa.Schema:
    """The schema of a dataset's rows; ``stored=True``: as written to the Delta table
    (columns of kind ``null`` left out)."""
    cols = [c for c in manifest.columns if not (stored and c.kind == "null")]
    fields = [pa.field(c.name, arrow_type(c.kind)) for c in cols]
    fields += [pa.field(m, _META_TYPES[m]) for m in meta]
    return pa.schema(fields)


def extend_manifest(manifest: DtypeRecord, df: pd.DataFrame, ds: Dataset) -> bool:
    """Add the frame's new columns to the manifest, and type columns that were all null so
    far. Returns whether the manifest changed."""
    fixed = {f.name: list(f.categories) for f in ds.all_fields if f.kind == "cat"}
    changed = False
    for name in df.columns:
        kind = kind_of(df[name])
        col = manifest.column(name)
        if col is None:
            manifest.columns.append(Column(name, kind, fixed.get(name, [])))
            changed = True
        elif col.kind == "null" and kind != "null":
            col.kind, col.categories = kind, fixed.get(name, [])
            changed = True
        elif {col.kind, kind} == {"string", "category"}:
            # Stored alike (text): the manifest follows the loader's current dtype.
            col.kind, col.categories = kind, fixed.get(name, [])
            changed = True
    return changed


# --- pandas -> Arrow ---------------------------------------------------------------------------


def _column(values: pd.Series, col: Column) -> pa.Array:
    kind = kind_of(values)
    target = arrow_type(col.kind)
    n = len(values)
    if kind == "null":
        return pa.nulls(n, type=target)
    if col.kind in ("string", "category"):
        arr = pa.array(values, from_pandas=True)
        if pa.types.is_dictionary(arr.type):
            arr = arr.cast(arr.type.value_type)
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            arr = pa.array(values.astype(object).where(values.notna(), None), type=pa.string())
    elif col.kind == "date":
        if kind != "date":
            raise _changed(col, kind)
        midnight = values.isna() | (values.dt.normalize() == values)
        if not bool(midnight.all()):
            raise MdframesError(f"column {col.name!r} holds times where dates were stored")
        arr = pa.array(values, from_pandas=True).cast(pa.date32())
    elif col.kind == "timestamp":
        if kind != "timestamp":
            raise _changed(col, kind)
        arr = pa.array(values, from_pandas=True).cast(target)  # safe: never drops precision
    elif col.kind == "list":
        arr = pa.array(
            [None if v is None or v is pd.NA else [str(x) for x in v] for v in values], type=target
        )
    elif col.kind == "json":
        arr = pa.array([None if _missing(v) else json.dumps(v, default=str) for v in values])
    else:
        arr = pa.array(values, from_pandas=True)
    if arr.type != target:
        try:
            arr = arr.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise _changed(col, kind, exc) from None
    return arr


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v) or v is pd.NA


def _changed(col: Column, kind: str, exc: Exception | None = None) -> MdframesError:
    why = f" ({exc})" if exc else ""
    return MdframesError(
        f"column {col.name!r} was stored as {col.kind} and now arrives as {kind}{why}; "
        "nothing was written"
    )


def to_table(df: pd.DataFrame, manifest: DtypeRecord, meta: dict[str, Any]) -> pa.Table:
    """The stored form of a loader frame: every manifest column (null where the frame has
    none) and the meta columns."""
    arrays, fields = [], []
    for col in manifest.columns:
        if col.name in df.columns:
            arrays.append(_column(df[col.name], col))
        else:
            arrays.append(pa.nulls(len(df), type=arrow_type(col.kind)))
        fields.append(pa.field(col.name, arrow_type(col.kind)))
    for name, values in meta.items():
        arrays.append(pa.array(values, type=_META_TYPES[name]))
        fields.append(pa.field(name, _META_TYPES[name]))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


# --- Arrow -> pandas ---------------------------------------------------------------------------


def types_mapper(t: pa.DataType) -> Any:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pd.StringDtype()
    if pa.types.is_int64(t) or pa.types.is_int32(t) or pa.types.is_int16(t):
        return pd.Int64Dtype()
    if pa.types.is_boolean(t):
        return pd.BooleanDtype()
    return None


def to_frame(table: pa.Table, manifest: DtypeRecord) -> pd.DataFrame:
    """A stored table as the loader's frame: dtypes from the manifest, plus any meta columns
    present (``_fetched_at`` stays UTC microseconds)."""
    arrays = []
    after: dict[str, Column] = {}
    categorical: dict[str, tuple[Column, np.ndarray]] = {}
    for name in table.column_names:
        arr = table[name]
        col = manifest.column(name)
        if col is None:
            arrays.append(arr)
            continue
        if col.kind == "date":
            arr = arr.cast(pa.timestamp("ns"))
        elif col.kind == "timestamp":
            arr = arr.cast(pa.timestamp("ns", tz="UTC"))
        elif col.kind == "category":
            codes = _category_codes(arr, col)
            if codes is not None:  # every value in the vocabulary: no pandas recoding
                categorical[name] = col, codes
                arr = pa.nulls(len(codes), pa.int8())  # a placeholder, replaced below
            else:
                arr = pc.dictionary_encode(arr)
                after[name] = col
        if col.kind in ("list", "json", "null"):
            after[name] = col
        arrays.append(arr)
    frame = pa.Table.from_arrays(arrays, names=table.column_names).to_pandas(
        types_mapper=types_mapper,
        date_as_object=False,
        split_blocks=True,
        self_destruct=False,
        use_threads=threads() > 1,
    )
    # Replaced by place: setting a column by name first checks the columns' names are
    # unique (an index's hash table: a third of a short read's conversion).
    places = {name: i for i, name in enumerate(table.column_names)}
    for name, (col, codes) in categorical.items():
        dtype = _category_dtype(tuple(col.categories))
        frame.isetitem(places[name], pd.Categorical.from_codes(codes, dtype=dtype, validate=False))
    for name, col in after.items():
        frame.isetitem(places[name], _restore(frame.iloc[:, places[name]], table[name], col))
    return frame


def _category_codes(arr: pa.ChunkedArray, col: Column) -> np.ndarray | None:
    """A category column's codes in its vocabulary (-1: missing), None when some value is
    not in it (the vocabulary is widened then, :func:`_restore`). Looked up directly: a
    column dictionary-encoded and recoded by pandas cost ~1 ms per read (its categories
    validated twice), most of a short read's conversion."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    codes = pc.index_in(arr, value_set=_vocabulary(tuple(col.categories)))
    if codes.null_count != arr.null_count:
        return None
    width = (
        np.int8
        if len(col.categories) < 127
        else np.int16
        if len(col.categories) < 32767
        else np.int32
    )
    return pc.fill_null(codes, -1).to_numpy().astype(width)


@functools.lru_cache(maxsize=256)
def _vocabulary(categories: tuple[str, ...]) -> pa.Array:
    return pa.array(categories, pa.string())


@functools.lru_cache(maxsize=256)
def _category_dtype(categories: tuple[str, ...]) -> pd.CategoricalDtype:
    """One dtype per vocabulary: making it validates its categories (an index, a hash
    table), a fixed cost of each read otherwise."""
    return pd.CategoricalDtype(list(categories), ordered=False)


def _restore(values: pd.Series, arr: pa.ChunkedArray, col: Column) -> Any:
    if col.kind == "category":
        present = [str(v) for v in values.cat.categories]
        extra = sorted(set(present) - set(col.categories))
        categories = list(col.categories) + extra
        return values.cat.set_categories(categories)
    out = np.empty(len(values), dtype=object)
    if col.kind == "list":
        out[:] = arr.to_pylist()
    elif col.kind == "json":
        out[:] = [None if v is None else json.loads(v) for v in arr.to_pylist()]
    else:
        out[:] = None
    return out


# --- hashes ------------------------------------------------------------------------------------

# pandas takes 16-character hash keys; two of them give 128 independent bits of identity.
_KEY_A = "mdframes-lake-kA"
_KEY_B = "mdframes-lake-kB"


def _hashable(table: pa.Table, names: Sequence[str]) -> pd.DataFrame:
    cols = {}
    for name in names:
        arr = table[name] if name in table.column_names else pa.nulls(table.num_rows)
        if pa.types.is_list(arr.type) or pa.types.is_null(arr.type):
            arr = pa.array([None if v is None else json.dumps(v) for v in arr.to_pylist()])
        cols[name] = arr
    frame = pa.table(cols) if cols else pa.table({"_": pa.nulls(table.num_rows)})
    return frame.to_pandas(date_as_object=False, split_blocks=True)


def row_hashes(table: pa.Table, names: Sequence[str]) -> np.ndarray:
    """64-bit hash of each row's values in ``names`` (a record's content)."""
    frame = _hashable(table, names)
    return pd.util.hash_pandas_object(frame, index=False, categorize=False).to_numpy()


def key_hashes(table: pa.Table, key: Identity) -> tuple[np.ndarray, np.ndarray]:
    """Two independent 64-bit hashes of each row's key (whole-row key when ``key`` is empty)."""
    if not key:
        key = Identity(tuple((n,) for n in table.column_names if not n.startswith("_")))
    keys = key.columns(table)
    frame = _hashable(keys, keys.column_names)
    a = pd.util.hash_pandas_object(frame, index=False, hash_key=_KEY_A, categorize=False)
    b = pd.util.hash_pandas_object(frame, index=False, hash_key=_KEY_B, categorize=False)
    return a.to_numpy(), b.to_numpy()
