"""A training set's file and provenance: the Parquet file of X, y, t1 and info, the plain-data
record of how a set was made (feature definitions, attrs as JSON), and its canonical content
hash (CONTRACT §12, §12.1, §13).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import queue
import struct
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Executor, Future
from functools import partial
from typing import Any, Final, cast

import numpy as np
import pandas as pd

from ... import _memory
from ...errors import DataValidationError, InvalidParameterError, MdframesError
from ..panels.spec import Feature

__all__ = [
    "write_training_set",
    "read_parts",
    "content_hash",
    "check_content_hash",
    "FILES",
    "feature_definition",
    "encode",
    "decode",
]

# Columns of the Parquet file that are not features (a feature may not take these names).
_Y: Final = "__mdframes_label__"
_T1: Final = "__mdframes_t1__"
_META: Final = b"mdframes.training_set"
_FORMAT: Final = 1


def write_training_set(
    X: pd.DataFrame, y: pd.Series, t1: pd.Series, info: dict[str, Any], path: Any
) -> str:
    """:meth:`TrainingSet.to_parquet`: X, y, t1 and info in one Parquet file."""
    from ..._deps import require

    pa = require("pyarrow", "parquet", "TrainingSet.to_parquet")
    import pyarrow.parquet as pq

    taken = [c for c in (_Y, _T1) if c in X.columns]
    if taken:
        raise InvalidParameterError(
            f"X has a column named {taken[0]!r}, which the file format reserves",
            parameter="X",
        )
    data = X.copy(deep=False)
    data.attrs = {}  # kept in the file's own metadata, times included
    data[_Y] = y.to_numpy()
    data[_T1] = t1.to_numpy()
    table = pa.Table.from_pandas(data, preserve_index=True)
    meta = {
        "format": _FORMAT,
        "label": y.name,
        "t1": t1.name,
        "info": info,
        "attrs": encode(X.attrs),
        # Parquet keeps these only up to the text dtypes' flavours (pandas' "str" and
        # "string"), which read back the same way: the file says which each one was.
        "index_dtypes": [_dtype_text(level.dtype) for level in cast(pd.MultiIndex, X.index).levels],
        "dtypes": {str(c): _dtype_text(X[c].dtype) for c in X.columns},
    }
    schema_meta = {**(table.schema.metadata or {}), _META: json.dumps(meta).encode()}
    pq.write_table(table.replace_schema_metadata(schema_meta), os.fspath(path))
    return os.fspath(path)


def read_parts(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, pd.Series, pd.Series, Any]:
    """X, y, t1 and info from a file :func:`write_training_set` wrote, equal to them."""
    from ..._deps import require

    require("pyarrow", "parquet", "read_training_set")
    import pyarrow.parquet as pq

    table = pq.read_table(os.fspath(path))
    raw = (table.schema.metadata or {}).get(_META)
    if raw is None:
        raise InvalidParameterError(
            f"{os.fspath(path)} is not a training set written by TrainingSet.to_parquet",
            parameter="path",
        )
    meta = json.loads(raw)
    if meta.get("format", 0) > _FORMAT:
        raise MdframesError(
            f"{os.fspath(path)} was written in training-set format {meta['format']}; this "
            f"mdframes reads format {_FORMAT}: upgrade mdframes"
        )
    data = table.to_pandas()
    y = data.pop(_Y).rename(meta["label"])
    t1 = data.pop(_T1).rename(meta["t1"])
    data.attrs = decode(meta["attrs"])
    if isinstance(data.index, pd.MultiIndex):
        levels: list[Any] = [
            level if level.dtype == _dtype_of(spec) else level.astype(_dtype_of(spec))
            for level, spec in zip(data.index.levels, meta.get("index_dtypes", []), strict=False)
        ]
        if levels:
            data.index = data.index.set_levels(levels)
    for column, spec in meta.get("dtypes", {}).items():
        if column in data.columns and data[column].dtype != _dtype_of(spec):
            data[column] = data[column].astype(_dtype_of(spec))
    return data, y.set_axis(data.index), t1.set_axis(data.index), meta["info"]


def _dtype_text(dtype: Any) -> dict[str, Any]:
    if isinstance(dtype, pd.StringDtype):
        return {
            "name": "string",
            "storage": dtype.storage,
            "na": "nan" if dtype.na_value is np.nan else "NA",
        }
    return {"name": str(dtype)}


def _dtype_of(spec: dict[str, Any]) -> Any:
    if spec["name"] == "string":
        if spec["na"] == "NA":
            return pd.StringDtype(spec["storage"])
        try:  # pandas' NaN-flavoured str (pandas >= 2.3); pandas 2.2 has only the NA flavour
            return pd.StringDtype(spec["storage"], na_value=np.nan)
        except TypeError:
            return pd.StringDtype(spec["storage"])
    return pd.api.types.pandas_dtype(spec["name"])


def encode(value: Any) -> Any:
    """Attrs as JSON, times tagged so that :func:`decode` gives them back."""
    if isinstance(value, Mapping):
        return {"__dict__": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, pd.Timestamp):
        return {"__timestamp__": value.isoformat()}
    if isinstance(value, dt.datetime):
        return {"__datetime__": value.isoformat()}
    if isinstance(value, dt.date):
        return {"__date__": value.isoformat()}
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def decode(value: Any) -> Any:
    """The inverse of :func:`encode`."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if "__dict__" in value:
            return {decode(k): decode(v) for k, v in value["__dict__"]}
        if "__timestamp__" in value:
            return pd.Timestamp(value["__timestamp__"])
        if "__datetime__" in value:
            return dt.datetime.fromisoformat(value["__datetime__"])
        if "__date__" in value:
            return dt.date.fromisoformat(value["__date__"])
    return value


def _function_name(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', repr(value))}"


def feature_definition(feature: Feature, dtype: Any) -> dict[str, Any]:
    """A feature as plain data (functions by their qualified name)."""
    return {
        "dataset": feature.dataset,
        "value": _function_name(feature.value),
        "window": feature.window_text,
        "agg": feature.agg,
        "where": _function_name(feature.where),
        "sign": _function_name(feature.sign),
        "dtype": None if dtype is None else str(dtype),
        "description": feature.description,
    }


# -- the canonical content hash ----------------------------------------------------------------

_HASH_HEADER: Final = b"mdframes.training_set.content/1\n"


def content_hash(X: pd.DataFrame, y: pd.Series, t1: pd.Series) -> str:
    """The SHA-256 (hex) of X, y and t1 in the canonical form of docs/training.md.

    Equal sets (index, columns, values and dtypes, in order) give equal hashes in any
    process and with any supported pandas: text is written as UTF-8 (pandas' ``str`` and
    ``string`` alike), numbers as little-endian bytes, missing values as a mask.
    """
    digest = hashlib.sha256(_HASH_HEADER)
    write_features(digest, X)
    write_labels(digest, y, t1)
    return str(digest.hexdigest())


# The sets read_training_set read, and from which file (gone with the set).
FILES: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def check_content_hash(ts: Any, where: str) -> None:
    """Raise :class:`DataValidationError` when the set read from the file ``where`` records
    a ``content_hash`` that is not its rows' (a cell, or the recorded hash, was edited)."""
    recorded = ts.info.get("content_hash")
    own = content_hash(ts.X, ts.y, ts.t1)
    if recorded is not None and recorded != own:
        raise DataValidationError(
            f"{where}: its rows do not match the content hash it records ({str(recorded)[:12]}"
            f"..., the rows' is {own[:12]}...): the file was changed after it was written"
        )


class Hasher:
    """:func:`content_hash` computed beside other work: the canonical bytes are written
    (:func:`write_features`, :func:`write_labels`) from the caller's thread, which goes on
    at once, and hashed in order in a thread of ``pool`` (hashlib's SHA-256 releases the GIL
    on a large buffer; writing the bytes mostly holds it). Without a pool, hashed at once.

    :meth:`close` (idempotent; always, in a ``finally``) lets the thread end: hashing what
    was written, or with ``abandon`` the rest skipped (the set failed, no hash is wanted).
    """

    def __init__(self, pool: Executor | None) -> None:
        self._digest = hashlib.sha256(_HASH_HEADER)
        self._parts: queue.SimpleQueue[Any] | None = None
        self._done: Future[None] | None = None
        self._abandoned = False
        self._small = bytearray()
        if pool is not None:
            self._parts = queue.SimpleQueue()
            self._done = pool.submit(self._hash_parts, self._parts)

    def update(self, data: Any) -> None:
        if self._parts is None:
            self._digest.update(data)
        elif isinstance(data, bytes) and len(data) < 4096:
            self._small += data  # names, counts, texts: handed over together
        else:  # a view or a fresh array: nothing written is changed after
            self._flush()
            self._parts.put(data)

    def update_later(self, make: Callable[[], Iterable[Any]]) -> None:
        """Hash the buffers ``make()`` yields, made in the hashing thread when there is one
        (each is hashed before the next is made: a buffer may be reused)."""
        if self._parts is None:
            for part in make():
                self._digest.update(part)
        else:
            self._flush()
            self._parts.put(make)

    def _flush(self) -> None:
        if self._small and self._parts is not None:
            self._parts.put(bytes(self._small))
            self._small.clear()

    def _hash_parts(self, parts: queue.SimpleQueue[Any]) -> None:
        while (data := parts.get()) is not None:
            if not self._abandoned:
                if callable(data):
                    for part in data():
                        self._digest.update(part)
                else:
                    self._digest.update(data)

    def close(self, abandon: bool = False) -> None:
        self._abandoned = self._abandoned or abandon
        if self._parts is not None:
            self._flush()
            self._parts.put(None)
            self._parts = None

    def hexdigest(self) -> str:
        """The hash of all that was written (waits for the hashing thread)."""
        self.close()
        if self._done is not None:
            self._done.result()
        return str(self._digest.hexdigest())


def write_features(digest: Any, X: pd.DataFrame) -> dict[Any, np.ndarray]:
    """The first part of :func:`content_hash` after its header: X's index and columns, in
    canonical bytes to ``digest`` (anything with ``update``). Returns the missing-value mask
    of each column that has a missing value (a training set counts its mostly-missing
    features from them: one ``isna`` per column, not two)."""
    # A view without attrs: pandas deep-copies a frame's attrs (a panel's coverage) into
    # every column taken from it, which would cost more than hashing the column.
    X = X.copy(deep=False)
    X.attrs = {}
    index = X.index
    # Each column taken with a range index: a column taken with the (date, symbol) one
    # copies that MultiIndex (~0.15 ms a column). Set on the view (set_axis would copy
    # every column on pandas 2 without copy-on-write).
    X.index = pd.RangeIndex(len(X))
    _put_int(digest, len(X))
    _put_int(digest, index.nlevels)
    if not isinstance(index, pd.MultiIndex):
        _put_column(digest, index.name, index)
    else:
        for i in range(index.nlevels):
            _put_level(digest, index, i)
    _put_int(digest, X.shape[1])
    missing: dict[Any, np.ndarray] = {}
    for name, column in X.items():
        mask = _put_column(digest, name, column)
        if mask.any():
            missing[name] = mask
    return missing


def write_labels(digest: Any, y: pd.Series, t1: pd.Series) -> None:
    """The rest of :func:`content_hash` after :func:`write_features`: y, then t1."""
    _put_column(digest, y.name, y)
    _put_column(digest, t1.name, t1)


def _put_level(digest: Any, index: pd.MultiIndex, i: int) -> None:
    """Level ``i`` of ``index`` as the column of its values, from the level's own distinct
    values and the rows' codes (a level holds no missing value: a row's is code -1). Each
    row's bytes are one gather of its code from a table of the level's entries (the table's
    last entry, which code -1 takes, is the missing value's)."""
    level, codes = index.levels[i], np.asarray(index.codes[i])
    kind = _canonical_dtype(level.dtype)
    missing = codes < 0
    if kind == "text":
        # Its texts are not hashed row by row (one per distinct): the entries in use, in
        # level order, ranked among themselves.
        if missing.any():
            counts = np.bincount(codes[~missing], minlength=len(level))
        else:  # in pieces: bincount would make an intp copy of every code
            counts = np.zeros(len(level), dtype=np.intp)
            for piece in _memory.pieces(len(codes)):
                counts += np.bincount(codes[piece], minlength=len(level))
        used = np.flatnonzero(counts)
        ranks = _put_texts(digest, level.name, level[used], missing)
        table = np.full(len(level) + 1, -1, dtype="<i8")
        table[used] = ranks[:-1]
        _put_values(digest, partial(_taken, table, codes))
    elif kind.startswith("datetime64") and not isinstance(level.dtype, pd.CategoricalDtype):
        # Each distinct time made canonical once (code -1 is NaT, written as 0).
        table = np.zeros(len(level) + 1, dtype="<i8")
        table[:-1] = _time_numbers(level)
        _put_head(digest, level.name, kind, missing)
        _put_values(digest, partial(_taken, table, codes))
    else:
        _put_column(digest, level.name, index.get_level_values(i))


def _put_values(digest: Any, make: Callable[[], Iterable[Any]]) -> None:
    """The buffers ``make()`` yields, in order (made in a Hasher's thread when hashed there)."""
    if isinstance(digest, Hasher):
        digest.update_later(make)
    else:
        for part in make():
            digest.update(part)


def _taken(table: np.ndarray, codes: np.ndarray) -> Iterator[np.ndarray]:
    """``table.take(codes)`` (code -1: the table's last entry), piece by piece."""
    n = len(codes)
    out = np.empty(min(n, _memory.PIECE), dtype=table.dtype)
    at = np.empty(min(n, _memory.PIECE), dtype=np.intp)  # numpy gathers fastest with its own index
    for piece in _memory.pieces(n):
        k = piece.stop - piece.start
        np.copyto(at[:k], codes[piece])
        # "wrap" takes -1 as the last entry, like Python's indexing, and writes into out
        # without a buffer ("raise" buffers); every other code is within the table.
        yield table.take(at[:k], out=out[:k], mode="wrap")


def _made(make: Callable[[Any], np.ndarray], values: Any) -> Iterator[np.ndarray]:
    yield _little(make(values))


def _zeroed_pieces(own: np.ndarray, missing: np.ndarray) -> Iterator[np.ndarray]:
    """``own`` with its missing values as 0, little-endian: its own buffer when nothing is
    missing, else piece by piece."""
    if not missing.any():
        yield _little(own)
        return
    out = np.empty(min(len(own), _memory.PIECE), dtype=own.dtype.newbyteorder("<"))
    for piece in _memory.pieces(len(own)):
        part = out[: piece.stop - piece.start]
        np.copyto(part, own[piece])
        np.copyto(part, 0, where=missing[piece])
        yield part


def _masked_pieces(array: Any, dtype: np.dtype, missing: np.ndarray) -> Iterator[np.ndarray]:
    """A pandas masked array (Int64, Float64...) as ``dtype`` with missing values as 0."""
    if not missing.any():
        yield _little(array.to_numpy(dtype=dtype))  # its values, not a copy
        return
    for piece in _memory.pieces(len(array)):
        yield _little(array[piece].to_numpy(dtype=dtype, na_value=0))


def _put_int(digest: Any, value: int) -> None:
    digest.update(struct.pack("<q", value))


def _put_text(digest: Any, text: str) -> None:
    raw = text.encode("utf-8")
    _put_int(digest, len(raw))
    digest.update(raw)


def _canonical_dtype(dtype: Any) -> str:
    """The dtype's name in the canonical form: text of any flavour is ``text`` (pandas'
    ``str``, ``string`` and ``object`` of strings differ between pandas versions, not in
    content), times are ``datetime64[ns]`` (UTC when aware), the rest pandas' own name."""
    if getattr(dtype, "kind", None) in ("f", "i", "u") and not isinstance(
        dtype, pd.CategoricalDtype
    ):  # numbers (numpy's or pandas' masked), as the checks below find them, without them
        return str(dtype)
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime64[ns, UTC]" if getattr(dtype, "tz", None) is not None else "datetime64[ns]"
    if pd.api.types.is_string_dtype(dtype) or pd.api.types.is_object_dtype(dtype):
        return "text"
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        return str(dtype)
    raise InvalidParameterError(
        f"dtype {dtype} is not one the content hash covers (numbers, booleans, times, text)",
        parameter="X",
    )


def _put_head(digest: Any, name: Any, kind: str, missing: np.ndarray) -> None:
    _put_text(digest, "" if name is None else str(name))
    _put_text(digest, kind)
    digest.update(np.packbits(missing))


def _put_texts(digest: Any, name: Any, distinct: Any, missing: np.ndarray) -> np.ndarray:
    """A text column's head and its distinct values in code-point order. Returns each
    value's rank in that order (int64), and -1 appended: the table a row's code (-1 when
    missing) is taken from."""
    texts = np.asarray(distinct, dtype=object)
    if not all(isinstance(v, str) for v in texts):
        raise InvalidParameterError(
            f"column {name!r} holds values that are not text; the content hash covers "
            "numbers, booleans, times and text",
            parameter="X",
        )
    order = np.argsort(texts.astype(str), kind="stable")
    ranks = np.full(len(order) + 1, -1, dtype="<i8")
    ranks[order] = np.arange(len(order))
    _put_head(digest, name, "text", missing)
    _put_int(digest, len(texts))
    # Each text's length and UTF-8 bytes (_put_text's), all in one update.
    raws = [text.encode("utf-8") for text in texts[order]]
    digest.update(b"".join(b"%b%b" % (struct.pack("<q", len(raw)), raw) for raw in raws))
    return ranks


def _time_numbers(values: Any) -> np.ndarray:
    """Times as int64 nanoseconds (UTC when aware); NaT as NaT's number."""
    stamps = pd.DatetimeIndex(values)
    if stamps.tz is not None:
        stamps = stamps.tz_convert("UTC").tz_localize(None)
    return np.asarray(stamps.as_unit("ns").asi8)


def _booleans(values: Any) -> np.ndarray:
    return np.asarray(pd.array(values, dtype="boolean").to_numpy(dtype="u1", na_value=0))


def _little(raw: np.ndarray) -> Any:
    """The array's own buffer when it is contiguous and little-endian (hashlib reads it
    without a copy of its bytes)."""
    return np.ascontiguousarray(raw, dtype=raw.dtype.newbyteorder("<"))


def _put_column(digest: Any, name: Any, values: Any) -> np.ndarray:
    """One named column: its name, its canonical dtype, its missing-value mask, then its
    values (missing ones as 0 or the empty text). Returns the missing-value mask."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = pd.Index(values).astype(values.dtype.categories.dtype)
    kind = _canonical_dtype(values.dtype)
    # The column's own array: numpy's asarray of a Series asks it for attributes it lacks,
    # and each such question searches its (date, symbol) index for the name as a date.
    array = values.array if isinstance(values, (pd.Series, pd.Index)) else pd.array(values)
    if values.dtype.kind == "f" and isinstance(values.dtype, np.dtype):
        missing = np.isnan(array.to_numpy())  # pandas' isna of numpy floats, less its checks
    else:
        missing = np.asarray(array.isna(), dtype=bool)
    if kind == "text":
        # Distinct texts sorted, then each row's position among them: equal columns give
        # equal bytes whatever their dictionary or level order, in one hashing pass.
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        ranks = _put_texts(digest, name, uniques, missing)
        digest.update(ranks.take(codes))
        return missing
    _put_head(digest, name, kind, missing)
    # The values as made by ``make`` (without a copy where nothing is missing): made in a
    # Hasher's thread when hashed there.
    make: Callable[[], Iterable[Any]]
    if kind.startswith("datetime64"):
        make = partial(_zeroed_pieces, _time_numbers(array), missing)
    elif pd.api.types.is_bool_dtype(values.dtype):
        make = partial(_made, _booleans, values)
    else:
        numpy_dtype = np.dtype(str(values.dtype).lower())  # Int64 -> int64, Float64 -> float64
        if values.dtype == numpy_dtype:  # numpy's own numbers: no copy without a missing one
            make = partial(_zeroed_pieces, array.to_numpy(), missing)
        else:
            make = partial(_masked_pieces, array, numpy_dtype, missing)
    _put_values(digest, make)
    return missing
