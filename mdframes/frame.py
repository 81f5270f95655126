"""Records -> a typed DataFrame, built column by column.

Declared fields get the dtype their spec words call for (see ``Field.kind``); fields the
spec does not show are snake_cased and typed by value. Nothing is coerced silently: a value
that cannot take its column's type is a :class:`ResponseFormatError` naming the column, and an
enumeration value outside its closed set is a :class:`DataValidationError` (or, with
``validate=False``, a new category — never a silent NaN).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Collection, Sequence
from functools import lru_cache
from itertools import chain, repeat
from typing import Any

import numpy as np
import pandas as pd

from .errors import DataValidationError, ResponseFormatError
from .identity import column_ranks
from .kinds import DATE_DTYPE, KINDS, TS_DTYPE
from .records import Records
from .registry import Dataset, Field, snake

__all__ = ["build_frame", "build_columns", "Typed", "cast_column", "typed_by_value", "columnize"]

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")
_V1_DATE_FORMATS = ("%b %d '%y", "%b %d, %Y", "%m/%d/%Y")


def _bad(ds_name: str, column: str, message: str, samples: Sequence[Any]) -> ResponseFormatError:
    shown = ", ".join(repr(s) for s in list(samples)[:5])
    return ResponseFormatError(f"column {column!r}: {message} (e.g. {shown})", dataset=ds_name)


def _nulls(values: list[Any]) -> list[Any]:
    # "" is how the service writes an absent date (contracts' endDate); treat it as null.
    # One C-level scan; the list is never changed in place.
    return values if "" not in values else [None if v == "" else v for v in values]


# Every line YYYY-MM-DD: one C-level scan checks all distinct values of a column at once.
_DATE_LINES = re.compile(r"(?:\d{4}-\d{2}-\d{2}\n)*\d{4}-\d{2}-\d{2}")


def _all_iso_dates(distinct: set[Any]) -> bool:
    if not distinct:
        return True
    try:
        lines = "\n".join(distinct)
    except TypeError:  # a value that is not text
        return False
    # A newline inside a value would pass for a separator: one line per value.
    return lines.count("\n") == len(distinct) - 1 and _DATE_LINES.fullmatch(lines) is not None


def _parse_dates(values: list[Any], column: str, ds_name: str) -> Any:
    values = _nulls(values)
    # Fast path: numpy parses ISO dates in C. It also reads "2026-01", "today" and integers
    # (as days since 1970), so it only gets columns whose distinct values are all YYYY-MM-DD.
    distinct = set(values)
    distinct.discard(None)
    if _all_iso_dates(distinct):
        with contextlib.suppress(ValueError):  # e.g. 2026-02-30
            return np.array(values, dtype="datetime64[D]").astype(DATE_DTYPE)
    return _parse_other_dates(values, distinct, column, ds_name)


def _parse_other_dates(values: list[Any], distinct: set[Any], column: str, ds_name: str) -> Any:
    """Dates in the v1 formats, or timestamps where a date was promised; else the failure."""
    # pandas reads "today" and "now" whatever the format: not a date the service sends.
    relative = [v for v in distinct if isinstance(v, str) and v.strip().lower() in ("today", "now")]
    if relative:
        raise _bad(ds_name, column, "unparsable date", relative)
    raw = pd.Series(values, dtype=object)
    out = _v1_dates(raw, distinct)
    if out is None and all(isinstance(v, str) and _TIMESTAMP.match(v) for v in distinct):
        # Full timestamps where a date was promised: the date as written, in the writer's own
        # time zone (converting "2026-03-01T23:30-05:00" to UTC would move it a day on).
        out = pd.to_datetime(raw.str.slice(0, 10), format="%Y-%m-%d")
    if out is None:
        bad = [v for v in distinct if not (isinstance(v, str) and _DATE.match(v))]
        raise _bad(ds_name, column, "unparsable date", bad or sorted(map(str, distinct)))
    unparsed = out.isna() & raw.notna()
    if unparsed.any():
        raise _bad(ds_name, column, "unparsable date", raw[unparsed].tolist())
    return out.astype(DATE_DTYPE).to_numpy()


def _v1_dates(raw: pd.Series, distinct: set[Any]) -> pd.Series | None:
    """Text dates in one of v1's formats (``Jan 05 '26``, ...), or None."""
    if not all(isinstance(v, str) for v in distinct):
        return None
    for fmt in _V1_DATE_FORMATS:
        try:
            return pd.to_datetime(raw, format=fmt)
        except (ValueError, TypeError):
            continue
    return None


def _parse_timestamps(values: list[Any], column: str, ds_name: str) -> Any:
    raw = pd.Series(_nulls(values), dtype=object)
    # ISO 8601 only: pandas would also take "now" and epoch numbers.
    bad = [
        v
        for v in set(raw.dropna())
        if not (isinstance(v, str) and (_TIMESTAMP.match(v) or _DATE.match(v)))
    ]
    try:
        if bad:
            raise ValueError
        out = pd.to_datetime(raw, utc=True, format="ISO8601")
    except (ValueError, TypeError):
        raise _bad(ds_name, column, "unparsable timestamp", bad or raw.dropna().tolist()) from None
    return out.astype(pd.api.types.pandas_dtype(TS_DTYPE)).array


def _numbers(values: list[Any], column: str, ds_name: str, dtype: str) -> Any:
    with contextlib.suppress(TypeError, ValueError, OverflowError):
        if dtype == "float64":
            return np.array(values, dtype="float64")
        with np.errstate(invalid="ignore", over="ignore"):  # out-of-range: reported below
            return _integers(values)
    # Numbers sent as text (v1), or "" for absent.
    series = pd.Series(_nulls(values), dtype=object)
    if series.map(lambda v: isinstance(v, str)).any():
        series = series.map(lambda v: v.replace(",", "").strip() if isinstance(v, str) else v)
    try:
        numeric = pd.to_numeric(series, errors="raise")
    except (TypeError, ValueError):
        bad = [v for v in values if v is not None and not _is_number(v)]
        raise _bad(ds_name, column, f"not a number ({dtype})", bad or values) from None
    if dtype == "float64":
        return numeric.astype("float64").to_numpy()
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            return pd.array(numeric.to_numpy(), dtype="Int64")
    except (TypeError, ValueError, OverflowError):
        raise _not_int64(ds_name, column, numeric.dropna().tolist()) from None


_INT64 = np.iinfo("int64")


def _not_int64(ds_name: str, column: str, present: list[Any]) -> ResponseFormatError:
    """Why numbers do not fit ``Int64``: a fraction, or a whole number beyond its range."""
    fractions = [v for v in present if isinstance(v, float) and not v.is_integer()]
    if fractions:
        return _bad(ds_name, column, "not an integer", fractions)
    beyond = [int(v) for v in present if not _INT64.min <= int(v) <= _INT64.max]
    return _bad(ds_name, column, "outside the Int64 range (-2**63 to 2**63 - 1)", beyond or present)


def _integers(values: list[Any]) -> Any:
    """JSON integers as Int64. Without nulls numpy reads them in C, a seventh of
    ``pd.array``'s time; anything else (nulls, floats, text, beyond int64) goes to pandas."""
    if None not in values:
        plain = np.array(values)
        if plain.dtype == np.int64:
            return pd.arrays.IntegerArray(plain, np.zeros(len(plain), dtype=bool))
    return pd.array(values, dtype="Int64")


def _is_number(v: Any) -> bool:
    try:
        float(str(v).replace(",", ""))
        return True
    except ValueError:
        return False


_STRING = pd.StringDtype()


def _strings(values: list[Any]) -> Any:
    if _STRING.storage == "pyarrow":
        # Straight to Arrow: a third faster than pd.array's element-wise checks.
        import pyarrow as pa

        # Numbers among the text: let pandas render them.
        with contextlib.suppress(pa.ArrowInvalid, pa.ArrowTypeError):
            return pd.arrays.ArrowStringArray(pa.array(values, type=pa.large_string()))
    return pd.array(values, dtype=_STRING)


def _cik(values: list[Any]) -> Any:
    if set(map(type, values)) <= {str, type(None)}:  # text as sent (C-level scan)
        return _strings(_nulls(values))
    # A number-typed cik would lose its zero padding; restore it.
    out = [
        str(v).zfill(10)
        if isinstance(v, int) and not isinstance(v, bool)
        else (None if v == "" else v)
        for v in values
    ]
    return _strings(out)


def _categorical(values: list[Any], f: Field, ds_name: str, strict: bool) -> Any:
    """Codes over the field's categories; a value outside a closed set is a
    DataValidationError when ``strict``, else an added category."""
    try:
        present = set(values)
    except TypeError:  # a list or object where a single label belongs
        raise _bad(
            ds_name, f.name, "not a label", [v for v in values if isinstance(v, (list, dict))]
        ) from None
    present.discard(None)
    if f.categories:
        unknown = sorted({str(v) for v in present - set(f.categories)})
        if unknown and strict:
            raise DataValidationError(
                f"{ds_name}: column {f.name!r} holds values outside its set "
                f"{list(f.categories)}: {unknown[:10]} (check isin)",
                dataset=ds_name,
            )
        categories = list(f.categories) + [u for u in unknown if u not in f.categories]
    else:
        categories = sorted({str(v) for v in present})
    # Codes by dictionary lookup (a C-level map): ten times faster than pd.Categorical's
    # own inference. Every present value has a code; None gets -1 (NA).
    index = {c: i for i, c in enumerate(categories)}
    lookup = {v: index[str(v)] for v in present}
    codes = np.fromiter(map(lookup.get, values, repeat(-1)), dtype=np.int32, count=len(values))
    return pd.Categorical.from_codes(codes, dtype=_category_dtype(tuple(categories)))


@lru_cache(maxsize=1024)
def _category_dtype(categories: tuple[str, ...]) -> pd.CategoricalDtype:
    # Building a CategoricalDtype validates its categories: ~0.1-0.6 ms a column, the largest
    # fixed cost of a small load. Dtypes are immutable, so one per category list serves all.
    return pd.CategoricalDtype(list(categories))


_JSON_NAMES = {dict: "object", list: "array", bool: "boolean", int: "number", float: "number"}


def _check_types(values: list[Any], f: Field, ds_name: str) -> None:
    accepted = KINDS[f.kind].accepts
    if accepted is None:
        return
    wrong = set(map(type, values)) - accepted  # C-level: one pass, no per-value Python code
    if not wrong:
        return
    samples = [v for v in values if type(v) in wrong][:5]
    got = sorted({_JSON_NAMES.get(type(v), type(v).__name__) for v in samples})
    raise _bad(ds_name, f.name, f"JSON {'/'.join(got)} where the spec says {f.kind}", samples)


def cast_column(values: list[Any], f: Field, ds_name: str, *, strict: bool = True) -> Any:
    """Cast raw values to the dtype of a declared field; a value of the wrong JSON type, or
    one the dtype cannot hold (an integer beyond int64), is a :class:`ResponseFormatError`
    naming the column."""
    _check_types(values, f, ds_name)
    try:
        return CASTERS[f.kind](values, f, ds_name, strict)
    except (TypeError, OverflowError) as exc:
        raise _bad(
            ds_name, f.name, f"cannot be {f.kind} ({type(exc).__name__})", _odd(values)
        ) from None


def _odd(values: list[Any]) -> list[Any]:
    big = [v for v in values if isinstance(v, int) and not -(2**63) <= v < 2**63]
    return big or [v for v in values if v is not None][:5]


def _objects(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


Caster = Callable[[list[Any], Field, str, bool], Any]
# Field kind -> how raw values become its dtype (kinds.KINDS names the dtype and the JSON
# types accepted); arguments: values, field, dataset name, strict.
CASTERS: dict[str, Caster] = {
    "str": lambda values, f, ds, strict: _strings(_nulls(values) if f.blank_is_null else values),
    "cik": lambda values, f, ds, strict: _cik(values),
    "date": lambda values, f, ds, strict: _parse_dates(values, f.name, ds),
    "ts": lambda values, f, ds, strict: _parse_timestamps(values, f.name, ds),
    "int": lambda values, f, ds, strict: _numbers(values, f.name, ds, "Int64"),
    "float": lambda values, f, ds, strict: _numbers(values, f.name, ds, "float64"),
    "bool": lambda values, f, ds, strict: pd.array(values, dtype="boolean"),
    "cat": _categorical,
    "list": lambda values, f, ds, strict: _objects(values),
    "obj": lambda values, f, ds, strict: _objects(values),
}


def typed_by_value(values: list[Any], column: str, ds_name: str) -> Any:
    """Type a column the spec does not describe, from what its values look like."""
    present = [v for v in values if v is not None]
    if not present:
        return _objects(values)
    kinds = {type(v) for v in present}
    if kinds == {bool}:
        return pd.array(values, dtype="boolean")
    if kinds == {int}:
        return pd.array(values, dtype="Int64")
    if kinds <= {int, float}:
        return np.array(values, dtype="float64")
    if kinds == {str}:
        if all(_DATE.match(v) for v in present):
            return _parse_dates(values, column, ds_name)
        if all(_TIMESTAMP.match(v) for v in present):
            try:
                return _parse_timestamps(values, column, ds_name)
            except ResponseFormatError:
                return _strings(values)
        return _strings(values)
    return _objects(values)


def _declared_elsewhere() -> dict[str, Field]:
    """Column name -> the field that declares it somewhere in the registry (first wins), so
    a column the spec does not show for one endpoint gets the dtype it has everywhere else."""
    from .registry import REGISTRY

    known: dict[str, Field] = {}
    for ds in REGISTRY.values():
        for f in ds.all_fields:
            known.setdefault(f.name, f)
    return known


def _typed(values: list[Any], key: str, name: str, known: dict[str, Field], ds_name: str) -> Any:
    f = known.get(name)
    if f is not None:
        # E.g. timestamps where other endpoints send dates: typed by value below.
        with contextlib.suppress(ResponseFormatError):
            return cast_column(values, f, ds_name, strict=False)
    return typed_by_value(values, key, ds_name)


def _flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in record.items():
        key = f"{prefix}_{k}" if prefix else k
        if isinstance(v, dict) and v:
            out.update(_flatten(v, key))
        else:
            out[key] = v
    return out


def _unique_name(name: str, taken: Collection[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}_{n}", n + 1
    return candidate


def columnize(ds: Dataset, records: Records) -> Records:
    """Pull the declared record fields of one response into value lists.

    Called in the fetching threads: while other threads wait on the network this work is
    free, and :func:`build_frame` then only chains the lists.
    """
    rows = records.rows
    records.columns = {f.wire: list(map(dict.get, rows, repeat(f.wire))) for f in ds.fields}
    return records


class _Columns:
    """The columns of one frame as they are built, from the records of one or many responses
    (chunks), in their order."""

    def __init__(self, ds: Dataset, chunks: Sequence[Records], strict: bool) -> None:
        self.ds, self.chunks, self.strict = ds, chunks, strict
        self.sizes = [len(c.rows) for c in chunks]
        self.records = (
            chunks[0].rows
            if len(chunks) == 1
            else list(chain.from_iterable(c.rows for c in chunks))
        )
        self.declared = {f.wire for f in ds.all_fields}
        self.columns: dict[str, Any] = {}
        self._known: dict[str, Field] | None = None

    def header_values(self, key: str) -> list[Any]:
        """A top-level value, repeated on each row of its response."""
        out: list[Any] = []
        for c, n in zip(self.chunks, self.sizes, strict=True):
            out.extend([c.header.get(key)] * n)
        return out

    def record_values(self, key: str) -> list[Any]:
        if len(self.chunks) > 1 and all(key in c.columns for c in self.chunks):
            return list(chain.from_iterable(c.columns[key] for c in self.chunks))
        return list(map(dict.get, self.records, repeat(key)))  # C-level loop

    def declared_field(self, f: Field, *, header: bool = False) -> None:
        """A declared field; a header field may also arrive inside the records."""
        in_records = not header or any(f.wire in r for c in self.chunks for r in c.rows[:1])
        values = self.record_values(f.wire) if in_records else self.header_values(f.wire)
        self.columns[f.name] = cast_column(values, f, self.ds.name, strict=self.strict)

    def undeclared(self, key: str, values: list[Any]) -> None:
        """A field the registry does not declare for this dataset: snake_cased, typed as it
        is declared elsewhere or else by value, under a name no other column has."""
        if self._known is None:
            self._known = _declared_elsewhere()
        name = _unique_name(snake(key), self.columns.keys())
        self.columns[name] = _typed(values, key, name, self._known, self.ds.name)

    def extra_header_keys(self) -> list[str]:
        """Top-level fields the service sends that the registry does not declare."""
        keys: dict[str, None] = {}
        for c in self.chunks:
            if c.rows:
                keys.update(dict.fromkeys(k for k in c.header if k not in self.declared))
        return list(keys)

    def extra_record_keys(self, skip: Sequence[str]) -> list[str]:
        """Record fields the registry does not declare (nor ``skip``), in order of arrival."""
        seen: dict[str, None] = dict.fromkeys(self.records[0]) if self.records else {}
        # set().union runs in C; only a record with new keys costs a Python-level pass.
        if set().union(*self.records) - seen.keys():
            for r in self.records:
                seen.update(dict.fromkeys(r))
        return [k for k in seen if k not in self.declared and k not in skip]

    def undeclared_record(self, key: str) -> None:
        """An undeclared record field; an object field becomes one column per flattened key."""
        values = self.record_values(key)
        if not any(isinstance(v, dict) for v in values):
            self.undeclared(key, values)
            return
        flat = [_flatten(v, key) if isinstance(v, dict) else {key: v} for v in values]
        for sub in dict.fromkeys(k for row in flat for k in row):
            self.undeclared(sub, [row.get(sub) for row in flat])


class Typed:
    """A frame's typed columns before a frame holds them: a load validates them and puts
    them in order as arrays, and builds its one frame last (a frame's ``__getitem__`` and
    ``take`` cost more than the work they wrap, on a load's few hundred rows).

    ``columns`` holds each column as the frame will (an object array pandas would read as
    text is given here as the frame would hold it), so a rule reads the same values and
    dtype from either.
    """

    __slots__ = ("columns", "rows", "_frame", "_ranks")

    def __init__(self, columns: dict[str, Any], rows: int) -> None:
        for name, values in columns.items():
            if isinstance(values, np.ndarray) and values.dtype == object:
                # The frame's constructor infers text (and times) from object arrays: take
                # the column as it would (a Series infers as a frame's column does), so that
                # the rules see the dtype the frame will hold.
                inferred = pd.Series(values, copy=False)
                if inferred.dtype != object:
                    columns[name] = inferred.array
        self.columns = columns
        self.rows = rows
        self._frame: pd.DataFrame | None = None
        self._ranks: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return self.rows

    def __getitem__(self, name: str) -> pd.Series:
        """Column ``name`` as the frame will hold it."""
        return pd.Series(self.columns[name], name=name, copy=False)

    def frame(self) -> pd.DataFrame:
        """The frame of these columns (built once)."""
        if self._frame is None:
            self._frame = pd.DataFrame(self.columns, index=pd.RangeIndex(self.rows), copy=False)
        return self._frame

    def rank(self, name: str) -> np.ndarray:
        """Column ``name`` as dense ranks (:func:`mdframes.identity.column_ranks`), computed
        once: the duplicate rule and the order of ties both read them."""
        if name not in self._ranks:
            self._ranks[name] = column_ranks(self.columns[name])
        return self._ranks[name]

    def take(self, order: np.ndarray) -> Typed:
        """The rows in ``order`` (positions)."""
        return Typed({k: v.take(order) for k, v in self.columns.items()}, len(order))


def build_columns(ds: Dataset, chunks: Sequence[Records], *, strict: bool = True) -> Typed:
    """The typed columns :func:`build_frame` puts in a frame, in its column order."""
    build = _Columns(ds, chunks, strict)
    for f in ds.header:
        build.declared_field(f, header=True)
    extra_header = build.extra_header_keys()
    for key in extra_header:
        build.undeclared(key, build.header_values(key))
    for f in ds.fields:
        build.declared_field(f)
    for f in ds.trailer:
        build.declared_field(f, header=True)
    for key in build.extra_record_keys(extra_header):
        build.undeclared_record(key)
    return Typed(build.columns, sum(build.sizes))


def build_frame(ds: Dataset, chunks: Sequence[Records], *, strict: bool = True) -> pd.DataFrame:
    """Typed frame from the records of one or many responses, in their order.

    Declared header fields come first, then top-level fields the registry does not declare,
    the declared record fields, the trailer, and last the undeclared record fields.
    """
    return build_columns(ds, chunks, strict=strict).frame()
