"""pandera schemas, one per dataset, generated from the registry's field rules.

Frames are cast by hand (see :mod:`mdframes.frame`) and validated with ``coerce=False``:
pandera's coercion would force nanosecond datetimes and costs more. Unknown columns are
allowed (``strict=False``): fields the service adds later pass through.

>>> from mdframes import schemas
>>> schemas.get("insider_trading").validate(df)       # doctest: +SKIP
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import pandas as pd

from .errors import DataValidationError
from .registry import REGISTRY, Dataset, Field

if TYPE_CHECKING:  # pragma: no cover
    import pandera.pandas as pa

__all__ = ["get", "validate", "SCHEMA_NAMES"]

SCHEMA_NAMES = tuple(REGISTRY)
CIK_PATTERN = r"^\d{10}$"

_KIND_TEST = {
    "str": pd.api.types.is_string_dtype,
    "cik": pd.api.types.is_string_dtype,
    "date": lambda d: pd.api.types.is_datetime64_dtype(d) and getattr(d, "tz", None) is None,
    "ts": lambda d: isinstance(d, pd.DatetimeTZDtype) and str(d.tz) == "UTC",
    "int": lambda d: isinstance(d, pd.Int64Dtype),
    "float": lambda d: d == "float64",
    "bool": lambda d: isinstance(d, pd.BooleanDtype),
    "cat": lambda d: isinstance(d, pd.CategoricalDtype),
    "list": lambda d: d == object,
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


def _frame_checks(ds: Dataset) -> list[pa.Check]:
    import pandera.pandas as pa

    out = []
    if "total_volume" in ds.checks:
        out.append(
            pa.Check(
                lambda df: (df["total_volume"] == df["call_volume"] + df["put_volume"]).fillna(True).astype(bool),
                name="total_volume_is_call_plus_put",
            )
        )
    if "disclosure_after_trade" in ds.checks:
        out.append(
            pa.Check(
                lambda df: ~(df["disclosure_date"] < df["date"]).fillna(False).astype(bool),
                name="disclosure_not_before_trade",
            )
        )
    if "forecast_band" in ds.checks:
        out.append(
            pa.Check(
                lambda df: ~((df["lower"] > df["mid"]) | (df["mid"] > df["upper"])).fillna(False).astype(bool),
                name="lower_le_mid_le_upper",
            )
        )
    return out


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
    grouped = failures.groupby(["column", "check"], dropna=False, sort=False)
    for (column, check), group in list(grouped)[:limit]:
        values = group["failure_case"].head(5).tolist()
        rows = group["index"].head(5).tolist()
        where = column if isinstance(column, str) else "frame"
        lines.append(f"  column {where!r} check {check!r}: values {values} at rows {rows}")
    return "\n".join(lines)


def validate(df: pd.DataFrame, name: str) -> pd.DataFrame:
    """Validate ``df`` against dataset ``name``; raise :class:`DataValidationError` with the
    columns, checks and sample failing values."""
    import pandera.errors as pe

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
