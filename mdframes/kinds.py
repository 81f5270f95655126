"""Field kinds -> pandas dtypes: the one table the frame builder, the schemas, the catalog and
the docs read.

A kind is the spec's word for a field's type ("integer" -> ``int``, "number" -> ``float``,
"string" -> ``str``), plus ``date``/``ts`` for dates and timestamps, ``cat`` for closed
vocabularies, ``cik`` for the zero-padded registry key and ``list`` for list fields.

>>> from mdframes.kinds import dtype_name
>>> dtype_name("int")
'Int64'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd

__all__ = ["Kind", "KINDS", "DATE_DTYPE", "TS_DTYPE", "dtype_name", "has_kind"]

DATE_DTYPE: Final = "datetime64[ns]"
TS_DTYPE: Final = "datetime64[ns, UTC]"


@dataclass(frozen=True)
class Kind:
    """One field kind: the dtype its column gets, how to recognise that dtype, and the JSON
    types its values may have (``mdframes.frame.CASTERS`` holds how they are cast)."""

    name: str
    dtype: str  # as shown in docs and the catalog
    test: Callable[[Any], bool]
    words: str  # what the spec calls it
    # The JSON types a value may have; anything else is a type failure, never coerced: a
    # JSON `true` in a number field is not 1.0, a list in a text field is not its repr.
    # None: anything (undeclared objects).
    accepts: frozenset[Any] | None = None


_NULL = type(None)
_TEXT = frozenset({str, _NULL})
_NUMBER = frozenset({int, float, str, _NULL})  # text: v1 sends numbers as strings


def _is_string(d: Any) -> bool:
    return isinstance(d, pd.StringDtype)


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        # numbers render as text (ids, codes)
        Kind("str", "string", _is_string, "string", frozenset({str, int, float, _NULL})),
        Kind(
            "cik", "string", _is_string, "10-digit zero-padded string", frozenset({str, int, _NULL})
        ),
        Kind(
            "date",
            DATE_DTYPE,
            lambda d: pd.api.types.is_datetime64_dtype(d) and getattr(d, "tz", None) is None,
            "date (YYYY-MM-DD)",
            _TEXT,
        ),
        Kind(
            "ts",
            TS_DTYPE,
            lambda d: isinstance(d, pd.DatetimeTZDtype) and str(d.tz) == "UTC",
            "ISO 8601 timestamp",
            _TEXT,
        ),
        Kind("int", "Int64", lambda d: isinstance(d, pd.Int64Dtype), "integer", _NUMBER),
        Kind("float", "float64", lambda d: d == np.dtype("float64"), "number", _NUMBER),
        Kind(
            "bool",
            "boolean",
            lambda d: isinstance(d, pd.BooleanDtype),
            "boolean",
            frozenset({bool, _NULL}),
        ),
        Kind(
            "cat",
            "category",
            lambda d: isinstance(d, pd.CategoricalDtype),
            "enumeration",
            frozenset({str, int, float, _NULL}),  # a number renders as its label
        ),
        Kind("list", "list", lambda d: d == np.dtype(object), "array", frozenset({list, _NULL})),
        Kind("obj", "object", lambda d: True, "object"),
    )
}


def dtype_name(kind: str) -> str:
    """The dtype a column of this kind has (``"Int64"``, ``"category"``, ...)."""
    return KINDS[kind].dtype


def has_kind(dtype: Any, kind: str) -> bool:
    """True when ``dtype`` is the dtype of ``kind``."""
    return bool(KINDS[kind].test(dtype))
