"""pandera schemas, one per dataset, generated from the registry's field rules.

Frames are cast by hand (see :mod:`mdframes.frame`) and validated with ``coerce=False``:
pandera's coercion would force nanosecond datetimes and costs more. Unknown columns are
allowed (``strict=False``): fields the service adds later pass through.

>>> from mdframes import schemas
>>> schemas.get("insider_trading").validate(df)       # doctest: +SKIP
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .errors import DataValidationError
from .registry import REGISTRY, Dataset, Field

if TYPE_CHECKING:  # pragma: no cover
    import pandera.pandas as pa

__all__ = ["get", "validate", "SCHEMA_NAMES"]

SCHEMA_NAMES = tuple(REGISTRY)
CIK_PATTERN = r"^\d{10}$"
_CIK = re.compile(r"\d{10}")

_KIND_TEST = {
    "str": lambda d: isinstance(d, pd.StringDtype),
    "cik": lambda d: isinstance(d, pd.StringDtype),
    "date": lambda d: pd.api.types.is_datetime64_dtype(d) and getattr(d, "tz", None) is None,
    "ts": lambda d: isinstance(d, pd.DatetimeTZDtype) and str(d.tz) == "UTC",
    "int": lambda d: isinstance(d, pd.Int64Dtype),
    "float": lambda d: d == "float64",
    "bool": lambda d: isinstance(d, pd.BooleanDtype),
    "cat": lambda d: isinstance(d, pd.CategoricalDtype),
    "list": lambda d: d == np.dtype(object),
    "obj": lambda d: True,
}


def _column_checks(f: Field) -> list[pa.Check]:
    import pandera.pandas as pa

    test = _KIND_TEST[f.kind]
    checks = [
        pa.Check(
            lambda s, test=test: bool(test(s.dtype)),
            element_wise=False,
            name=f"dtype_is_{f.kind}",
            error=f"dtype must be {f.kind}",
        )
    ]
    if f.ge is not None and f.le is not None:
        checks.append(pa.Check.in_range(f.ge, f.le))
    elif f.ge is not None:
        checks.append(pa.Check.ge(f.ge))
    elif f.le is not None:
        checks.append(pa.Check.le(f.le))
    if f.categories:
        checks.append(pa.Check.isin(list(f.categories)))
    if f.kind == "cik":
        checks.append(pa.Check.str_matches(CIK_PATTERN))
    if f.kind == "list":
        checks.append(
            pa.Check(
                lambda s: s.map(lambda v: v is None or isinstance(v, list)),
                name="is_list",
                error="cells must be lists or null",
            )
        )
    return checks


def _total_volume(df: pd.DataFrame) -> pd.Series:
    total = df["call_volume"] + df["put_volume"]
    return (df["total_volume"] == total).fillna(True).astype(bool)


def _disclosure_after_trade(df: pd.DataFrame) -> pd.Series:
    return ~(df["disclosure_date"] < df["date"]).fillna(False).astype(bool)


def _forecast_band(df: pd.DataFrame) -> pd.Series:
    return ~((df["lower"] > df["mid"]) | (df["mid"] > df["upper"])).fillna(False).astype(bool)


_FRAME_RULES = {
    "total_volume": ("total_volume_is_call_plus_put", _total_volume),
    "disclosure_after_trade": ("disclosure_not_before_trade", _disclosure_after_trade),
    "forecast_band": ("lower_le_mid_le_upper", _forecast_band),
}
# The columns each frame-level rule reads, to name them in errors.
_RULE_COLUMNS = {
    "total_volume_is_call_plus_put": ("total_volume", "call_volume", "put_volume"),
    "disclosure_not_before_trade": ("disclosure_date", "date"),
    "lower_le_mid_le_upper": ("lower", "mid", "upper"),
}


def _frame_rules(ds: Dataset) -> list:
    return [_FRAME_RULES[c][1] for c in ds.checks]


def _frame_checks(ds: Dataset) -> list[pa.Check]:
    import pandera.pandas as pa

    return [pa.Check(_FRAME_RULES[c][1], name=_FRAME_RULES[c][0]) for c in ds.checks]


@cache
def get(name: str) -> pa.DataFrameSchema:
    """The pandera schema of a registry dataset (``insider_trading``, ``screener/sentiment``...)."""
    import pandera.pandas as pa

    ds = REGISTRY[name]
    columns = {
        f.name: pa.Column(
            dtype=None,
            checks=_column_checks(f),
            nullable=f.nullable,
            required=True,
            coerce=False,
        )
        for f in ds.all_fields
    }
    return pa.DataFrameSchema(
        columns,
        checks=_frame_checks(ds),
        strict=False,
        coerce=False,
        name=name,
        description=ds.description,
    )


def _describe(failures: pd.DataFrame, limit: int = 6) -> str:
    lines = []
    rules = failures[failures["check"].isin(list(_RULE_COLUMNS))]
    for rule, group in rules.groupby("check", sort=False):
        columns = list(_RULE_COLUMNS[str(rule)])
        at = sorted(set(group["index"].dropna().astype(int)))[:5]
        lines.append(f"  columns {columns} check {rule!r}: fails at rows {at}")
    cells = failures[~failures["check"].isin(list(_RULE_COLUMNS))]
    grouped = cells.groupby(["column", "check"], dropna=False, sort=False)
    for (column, check), group in list(grouped)[:limit]:
        values = group["failure_case"].head(5).tolist()
        rows = group["index"].head(5).tolist()
        where = column if isinstance(column, str) else "frame"
        lines.append(f"  column {where!r} check {check!r}: values {values} at rows {rows}")
    return "\n".join(lines)


def _below(col: pd.Series, bound: float) -> bool:
    low = col.min()  # NA-skipping; NA/NaN when nothing is present
    return bool(pd.notna(low) and low < bound)


def _above(col: pd.Series, bound: float) -> bool:
    high = col.max()
    return bool(pd.notna(high) and high > bound)


def _rules_hold(ds: Dataset, df: pd.DataFrame) -> bool:
    """Every rule of the detailed schema in one pass, using column summaries (min, max,
    the distinct values) rather than per-row masks: True when all hold."""
    for f in ds.all_fields:
        if f.name not in df.columns:
            return False
        col = df[f.name]
        dtype = col.dtype
        if not _KIND_TEST[f.kind](dtype):
            return False
        if not f.nullable and col.isna().any():
            return False
        if f.ge is not None and _below(col, f.ge):
            return False
        if f.le is not None and _above(col, f.le):
            return False
        if f.categories or f.kind == "cik":
            if isinstance(dtype, pd.CategoricalDtype):
                # Unused categories do not matter; values outside the set do.
                extra = set(dtype.categories) - set(f.categories)
                distinct = set(col.dropna().unique()) & extra if extra else set()
            else:
                distinct = set(col.dropna().unique())
            if f.categories and not distinct <= set(f.categories):
                return False
            if f.kind == "cik" and not all(_CIK.fullmatch(str(v)) for v in distinct):
                return False
        if f.kind == "list" and not col.map(lambda v: v is None or isinstance(v, list)).all():
            return False
    return all(bool(check(df).all()) for check in _frame_rules(ds))


@cache
def _fast(name: str) -> pa.DataFrameSchema:
    """A one-check schema with the same rules as :func:`get`.

    pandera costs a fixed 0.1-0.2 ms per check; the detailed schema has one per rule and
    column. This one runs them all in one vectorised check, so a 500-row load does not
    spend more on validation than on fetching. When it fails, :func:`validate` runs the
    detailed schema to name the columns, checks and values.
    """
    import pandera.pandas as pa

    ds = REGISTRY[name]
    return pa.DataFrameSchema(
        checks=[pa.Check(lambda df: _rules_hold(ds, df), name=f"{name}_rules")],
        strict=False,
        coerce=False,
        name=name,
    )


def validate(df: pd.DataFrame, name: str) -> pd.DataFrame:
    """Validate ``df`` against dataset ``name``; raise :class:`DataValidationError` with the
    columns, checks and sample failing values."""
    import pandera.errors as pe

    try:
        return _fast(name).validate(df, lazy=False, inplace=True)
    except pe.SchemaError:
        pass  # name the failures with the detailed schema below
    try:
        return get(name).validate(df, lazy=True, inplace=True)
    except pe.SchemaErrors as exc:
        failures = exc.failure_cases
        raise DataValidationError(
            f"{name}: {len(failures)} schema failure(s)\n{_describe(failures)}",
            dataset=name,
            failures=failures,
        ) from None
    except pe.SchemaError as exc:  # pragma: no cover - lazy=True collects, kept for safety
        raise DataValidationError(f"{name}: {exc}", dataset=name) from None


def describe(name: str) -> list[dict[str, Any]]:
    """Rows of (column, kind, rules) for docs."""
    ds = REGISTRY[name]
    rows = []
    for f in ds.all_fields:
        rules = []
        if f.ge is not None:
            rules.append(f">= {f.ge:g}")
        if f.le is not None:
            rules.append(f"<= {f.le:g}")
        if f.categories:
            rules.append("one of " + ", ".join(f.categories))
        if f.kind == "cik":
            rules.append("10 digits or null")
        if not f.nullable:
            rules.append("not null")
        rows.append({"column": f.name, "field": f.wire, "kind": f.kind, "rules": "; ".join(rules)})
    return rows
