"""Validation: every rule of every dataset, graded hard or soft, written once.

Each :class:`Rule` is a vectorised test that marks the failing rows of a frame. The rules of a
dataset come from its registry entry (field kinds, ranges, vocabularies, nulls, cik, lists,
frame-level checks); their severity comes from :data:`mdframes.registry.SEVERITY`:

- **hard** rules are what the spec states about one value (types, ranges, a missing record
  id or date): a failure raises :class:`~mdframes.DataValidationError` naming the dataset,
  symbols, columns, checks and sample values;
- **soft** rules are consistency a live service can outgrow (put/call totals, disclosure after
  trade, forecast bands, vocabulary, duplicates, unexpected nulls): a failure is recorded in
  ``df.attrs["quality"]`` and the data is kept (``validate="strict"`` raises instead).

The loaders call :func:`check`, one pass over the rules. :func:`get` builds a pandera schema
from the same rules (soft ones as ``raise_warning`` checks) for users who validate their own
frames with pandera.

>>> from mdframes import schemas
>>> df = md.load_insider_trading("AAPL")
>>> schemas.get("insider_trading").validate(df).shape == df.shape
True
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from pandas.arrays import NumpyExtensionArray

from .errors import DataValidationError
from .frame import Typed
from .identity import column_ranks
from .kinds import has_kind
from .registry import REGISTRY, SEVERITY, Dataset, Field

if TYPE_CHECKING:  # pragma: no cover
    import pandera.pandas as pa

__all__ = [
    "Rule",
    "Columns",
    "rules",
    "check",
    "validate",
    "get",
    "describe",
    "RULE_DOCS",
]

_CIK = re.compile(r"\d{10}")
Mask = Callable[["Columns"], "np.ndarray | None"]  # failing rows; None: none fail


class Columns:
    """A frame as the rules read it: each column and the dtypes fetched once per check
    (pandas charges some 20-50 us per column access; a load runs dozens of rules). A load
    passes its typed columns before any frame holds them (:class:`mdframes.frame.Typed`):
    the rules read its arrays, and the frame is built only to describe a failure."""

    __slots__ = ("_frame", "_typed", "_cache", "_ranks", "dtypes")

    def __init__(self, frame: pd.DataFrame | Typed) -> None:
        self._cache: dict[str, pd.Series] = {}
        self._ranks: dict[str, np.ndarray] = {}
        if isinstance(frame, Typed):
            self._typed: Typed | None = frame
            self._frame: pd.DataFrame | None = None
            self.dtypes = {name: values.dtype for name, values in frame.columns.items()}
        else:
            self._typed, self._frame = None, frame
            self.dtypes = dict(zip(frame.columns, frame.dtypes, strict=True))

    @property
    def frame(self) -> pd.DataFrame:
        if self._frame is None:
            assert self._typed is not None
            self._frame = self._typed.frame()
        return self._frame

    @property
    def columns(self) -> dict[str, Any]:
        """The column names (with their dtypes)."""
        return self.dtypes

    def __getitem__(self, column: str) -> pd.Series:
        if column not in self._cache:
            self._cache[column] = (
                self._typed[column] if self._typed is not None else self.frame[column]
            )
        return self._cache[column]

    def values(self, column: str) -> Any:
        """The column's values as held: a typed array (numpy or pandas), or ``Series.array``."""
        return self[column].array if self._typed is None else self._typed.columns[column]

    def array(self, column: str) -> Any:
        """The column's ``Series.array``, without a Series where the columns are typed."""
        values = self.values(column)
        if isinstance(values, np.ndarray):  # as a Series wraps it
            return pd.array(values) if values.dtype.kind in "mM" else NumpyExtensionArray(values)
        return values

    def codes(self, column: str) -> np.ndarray:
        """Integers equal where the column's values are (a missing value a value of its
        own): a time's own integers, else its ranks."""
        values = self.values(column)
        if isinstance(values, np.ndarray) and values.dtype.kind == "M":
            return values.view("i8")  # NaT: one integer, as one missing value
        if isinstance(values, pd.arrays.DatetimeArray):
            # An instant, whatever its zone (pandas-stubs do not declare DatetimeArray.asi8).
            return values.asi8  # type: ignore[attr-defined]
        return self.rank(column)

    def rank(self, column: str) -> np.ndarray:
        """The column's dense ranks (:func:`mdframes.identity.column_ranks`), once."""
        if self._typed is not None:
            return self._typed.rank(column)
        if column not in self._ranks:
            self._ranks[column] = column_ranks(self[column])
        return self._ranks[column]

    def __len__(self) -> int:
        return len(self._typed) if self._typed is not None else len(self.frame)


# Frame-level rules named in Dataset.checks: (columns, doc, failing-row test).
_FRAME_RULES: dict[str, tuple[tuple[str, ...], str, Mask]] = {}


@dataclass(frozen=True)
class Rule:
    """One check: its name, the columns it reads, its severity and the failing-row test."""

    name: str
    columns: tuple[str, ...]
    severity: str  # "hard" or "soft"
    fails: Mask
    doc: str


def _frame_rule(name: str, columns: tuple[str, ...], doc: str) -> Callable[[Mask], Mask]:
    def register(fn: Mask) -> Mask:
        _FRAME_RULES[name] = (columns, doc, fn)
        return fn

    return register


def _mask(series: pd.Series) -> np.ndarray | None:
    out = series.to_numpy(dtype=bool, na_value=False)
    return out if out.any() else None


@_frame_rule(
    "total_volume",
    ("total_volume", "call_volume", "put_volume"),
    "`total_volume` - (`call_volume` + `put_volume`) is 0 or 1 (the service truncates calls "
    "and puts separately)",
)
def _total_volume(df: Columns) -> np.ndarray | None:
    gap = df["total_volume"] - (df["call_volume"] + df["put_volume"])
    return _mask((gap < 0) | (gap > 1))


@_frame_rule(
    "disclosure_after_trade",
    ("disclosure_date", "date"),
    "`disclosure_date` is never before the trade `date`",
)
def _disclosure_after_trade(df: Columns) -> np.ndarray | None:
    return _mask(df["disclosure_date"] < df["date"])


@_frame_rule("forecast_band", ("lower", "mid", "upper"), "`lower` <= `mid` <= `upper` on every row")
def _forecast_band(df: Columns) -> np.ndarray | None:
    return _mask((df["lower"] > df["mid"]) | (df["mid"] > df["upper"]))


def _all_rows(df: Columns | pd.DataFrame) -> np.ndarray:
    return np.ones(len(df), dtype=bool)


def _dtype_rule(ds: Dataset, f: Field) -> Rule:
    col, kind = f.name, f.kind
    return Rule(
        f"dtype_is_{kind}",
        (col,),
        SEVERITY["type"],
        lambda df: None if has_kind(df.dtypes[col], kind) else _all_rows(df),
        f"dtype is the kind's ({kind})",
    )


def _null_rule(ds: Dataset, f: Field) -> Rule | None:
    col = f.name
    # A record's id (declared ``required``) and its date identify it: without them a row means
    # nothing (hard). Parts of a composite id may be absent in older shapes (app ratings
    # without app ids).
    required = f.required or (ds.per_symbol and col == ds.time_column)
    if not (required or not ds.nullable(f)):
        return None
    kind = "required" if required else "not_null"

    def nulls(df: Columns) -> np.ndarray | None:
        # The array's own isna: a Series' costs ten times more on a small frame.
        missing = pd.isna(df.values(col))
        return missing if missing.any() else None

    return Rule(
        kind,
        (col,),
        SEVERITY[kind],
        nulls,
        "never null" + ("" if required else " (the spec does not mark it nullable)"),
    )


def _range_rule(ds: Dataset, f: Field) -> Rule | None:
    if f.ge is None and f.le is None:
        return None
    col = f.name
    lo = -np.inf if f.ge is None else f.ge
    hi = np.inf if f.le is None else f.le

    def out_of_range(df: Columns) -> np.ndarray | None:
        # NA-skipping summary first, on the array (cheaper than the Series' reductions).
        low, high = _low_high(df.values(col))
        if not (pd.notna(low) and (low < lo or high > hi)):
            return None
        return _mask((df[col] < lo) | (df[col] > hi))

    if f.ge is not None and f.le is not None:
        bounds = f"[{f.ge:g}, {f.le:g}]"
    else:
        bounds = f">= {f.ge:g}" if f.ge is not None else f"<= {f.le:g}"
    return Rule(f"in_range {bounds}", (col,), SEVERITY["range"], out_of_range, bounds)


def _low_high(values: Any) -> tuple[Any, Any]:
    """The smallest and largest value, missing ones skipped (NaN when all are)."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        # fmin/fmax skip NaN, without nanmin's warning when every value is NaN.
        return (np.fmin.reduce(values), np.fmax.reduce(values)) if len(values) else (np.nan,) * 2
    if isinstance(values, np.ndarray):
        values = NumpyExtensionArray(values)
    return values.min(), values.max()


def _vocabulary_rule(ds: Dataset, f: Field) -> Rule | None:
    if not f.categories:
        return None
    col, allowed = f.name, set(f.categories)

    def outside(df: Columns) -> np.ndarray | None:
        dtype = df.dtypes[col]
        if isinstance(dtype, pd.CategoricalDtype):
            extra = set(dtype.categories) - allowed
            return _mask(df[col].isin(list(extra))) if extra else None
        values = df[col]
        return _mask(values.notna() & ~values.isin(list(allowed)))

    doc = "one of " + ", ".join(f.categories)
    return Rule("in_vocabulary", (col,), SEVERITY["vocabulary"], outside, doc)


def _cik_rule(ds: Dataset, f: Field) -> Rule | None:
    if f.kind != "cik":
        return None
    col = f.name

    def not_cik(df: Columns) -> np.ndarray | None:
        distinct = df.array(col).unique()  # one or a few per frame; nulls are no failure
        if all(_CIK.fullmatch(v) if isinstance(v, str) else pd.isna(v) for v in distinct):
            return None
        values = df[col]
        return _mask(values.notna() & ~values.astype("string").str.fullmatch(r"\d{10}"))

    return Rule("cik_10_digits", (col,), SEVERITY["cik"], not_cik, "10 digits or null")


def _list_rule(ds: Dataset, f: Field) -> Rule | None:
    if f.kind != "list":
        return None
    col = f.name
    return Rule(
        "is_list",
        (col,),
        SEVERITY["list"],
        lambda df: _mask(~df[col].map(lambda v: v is None or isinstance(v, list))),
        "a list or null",
    )


# The rules one field may have, in the order they run and are documented.
_FIELD_RULES: tuple[Callable[[Dataset, Field], Rule | None], ...] = (
    _dtype_rule,
    _null_rule,
    _range_rule,
    _vocabulary_rule,
    _cik_rule,
    _list_rule,
)


def _duplicate_rule(ds: Dataset) -> Rule | None:
    identity = ds.identity
    if not identity:
        return None

    def duplicated(df: Columns) -> np.ndarray | None:
        found = identity.duplicated(df, df.__getitem__, df.codes)
        return None if found is None or not found.any() else found

    key = identity.names
    return Rule("no_duplicates", key, SEVERITY["duplicates"], duplicated, f"one row per {key}")


@cache
def rules(name: str) -> tuple[Rule, ...]:
    """Every rule of dataset ``name``, in column order, then the frame-level ones."""
    ds = REGISTRY[name]
    out = [r for f in ds.all_fields for make in _FIELD_RULES if (r := make(ds, f)) is not None]
    for check_name in ds.checks:
        columns, doc, fn = _FRAME_RULES[check_name]
        out.append(Rule(check_name, columns, SEVERITY[check_name], fn, doc))
    dup = _duplicate_rule(ds)
    if dup is not None:
        out.append(dup)
    return tuple(out)


RULE_DOCS: dict[str, str] = {name: doc for name, (_, doc, _) in _FRAME_RULES.items()}


def _sample(df: pd.DataFrame, rows: np.ndarray, columns: tuple[str, ...]) -> list[Any]:
    present = [c for c in columns if c in df.columns]
    picked = df.loc[rows, present].head(3)
    if len(present) == 1:
        return [_plain(v) for v in picked[present[0]].tolist()]
    return [{c: _plain(v) for c, v in rec.items()} for rec in picked.to_dict("records")]


def _plain(value: Any) -> Any:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value.item() if isinstance(value, np.generic) else value


def _symbols(df: pd.DataFrame, rows: np.ndarray) -> list[str]:
    if "symbol" not in df.columns:
        return []
    return [str(s) for s in pd.unique(df.loc[rows, "symbol"].dropna())]


def check(df: pd.DataFrame | Typed, name: str, *, strict: bool = False) -> list[dict[str, Any]]:
    """Run every rule of dataset ``name`` over ``df`` in one pass (a frame, or a load's
    typed columns before the frame holds them).

    Returns the soft failures as ``attrs["quality"]`` entries (``check, columns, rows,
    symbols, sample``); raises :class:`DataValidationError` for hard failures (and for soft
    ones with ``strict=True``), naming the symbols whose rows fail.

    >>> md.schemas.check(md.load_put_call_ratio("TSLA"), "put_call_ratio")
    []
    """
    hard: list[dict[str, Any]] = []
    soft: list[dict[str, Any]] = []
    view = Columns(df)
    for rule in rules(name):
        if any(c not in view.dtypes for c in rule.columns):
            if rule.severity == "hard" or rule.name.startswith("dtype"):
                hard.append(_missing_entry(rule, view.frame))
            continue
        rows = rule.fails(view)
        if rows is None:
            continue
        (hard if rule.severity == "hard" or strict else soft).append(_entry(rule, view.frame, rows))
    if hard:
        symbols = list(dict.fromkeys(s for e in hard for s in e["symbols"]))
        raise DataValidationError(
            f"{name}: {sum(e['rows'] for e in hard)} failing row(s)"
            + (f" [symbols: {', '.join(symbols)}]" if symbols else "")
            + "\n"
            + "\n".join(_line(e) for e in hard),
            dataset=name,
            failures=pd.DataFrame(hard),
            symbols=symbols,
        )
    return soft


def _entry(rule: Rule, df: pd.DataFrame, rows: np.ndarray) -> dict[str, Any]:
    return {
        "check": rule.name,
        "columns": list(rule.columns),
        "rows": int(rows.sum()),
        "symbols": _symbols(df, rows),
        "sample": _sample(df, rows, rule.columns),
        "index": df.index[rows][:10].tolist(),  # first failing labels
    }


def _missing_entry(rule: Rule, df: pd.DataFrame) -> dict[str, Any]:
    """A rule whose columns the frame lacks: every row fails it."""
    return {
        "check": f"column_present ({rule.name})",
        "columns": list(rule.columns),
        "rows": len(df),
        "symbols": _symbols(df, _all_rows(df)) if len(df) else [],
        "sample": [],
        "index": [],
    }


def _line(e: dict[str, Any]) -> str:
    where = f" symbols {e['symbols']}" if e["symbols"] else ""
    return f"  columns {e['columns']} check {e['check']!r}: {e['rows']} row(s), e.g. {e['sample']}{where}"


def validate(df: pd.DataFrame, name: str, *, strict: bool = False) -> pd.DataFrame:
    """Validate ``df`` against dataset ``name``: raise on hard failures, record soft ones in
    ``df.attrs["quality"]``; returns ``df``.

    >>> df = md.load_sentiment("AAPL", validate=False)
    >>> md.schemas.validate(df, "sentiment").attrs["quality"]
    []
    """
    df.attrs["quality"] = check(df, name, strict=strict)
    return df


@cache
def get(name: str) -> pa.DataFrameSchema:
    """The pandera schema of a registry dataset, built from the same rules as :func:`check`:
    hard rules fail validation, soft ones warn (``raise_warning``).

    >>> df = md.load_insider_trading("AAPL")
    >>> md.schemas.get("insider_trading").validate(df, lazy=True).shape == df.shape
    True
    """
    with warnings.catch_warnings():
        # pandera imports pyspark.pandas when pyspark is installed, which warns under pandas 3
        # about pyspark's own support; not the user's concern when they validate a frame.
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"pyspark\..*")
        import pandera.pandas as pa
        from pandera.backends.pandas import builtin_checks  # noqa: F401  (the lazy pyspark import)

    ds = REGISTRY[name]
    checks = [
        pa.Check(
            lambda df, r=rule: _passes(r, df),
            name=rule.name,
            error=f"{', '.join(rule.columns)}: {rule.doc}",
            raise_warning=rule.severity == "soft",
            ignore_na=False,  # the rules handle nulls themselves (a null id is a failure)
        )
        for rule in rules(name)
    ]
    columns = {
        f.name: pa.Column(dtype=None, nullable=True, required=True, coerce=False)
        for f in ds.all_fields
    }
    return pa.DataFrameSchema(
        columns, checks=checks, strict=False, coerce=False, name=name, description=ds.description
    )


def _passes(rule: Rule, df: pd.DataFrame) -> pd.Series:
    rows = rule.fails(Columns(df))
    return pd.Series(np.ones(len(df), dtype=bool) if rows is None else ~rows, index=df.index)


def describe(name: str) -> list[dict[str, Any]]:
    """Rows of (column, field, kind, rules) for the docs and the catalog."""
    ds = REGISTRY[name]
    by_column: dict[str, list[str]] = {}
    for rule in rules(name):
        if rule.name.startswith("dtype_is") or len(rule.columns) != 1:
            continue
        tag = "" if rule.severity == "hard" else " (soft)"
        by_column.setdefault(rule.columns[0], []).append(rule.doc + tag)
    return [
        {
            "column": f.name,
            "field": f.wire,
            "kind": f.kind,
            "rules": "; ".join(by_column.get(f.name, [])),
        }
        for f in ds.all_fields
    ]
