"""The schemas, generated from the registry: every rule of every dataset is enforced, and the
one-pass fast schema agrees with the detailed per-column one on every violation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pandera.errors as pe
import pytest

import mdframes as md
from mdframes import schemas
from mdframes.registry import REGISTRY, Field

from .test_loaders import _load

Violation = tuple[str, str, Callable[[pd.DataFrame], None]]


def _first(df: pd.DataFrame, column: str) -> Any:
    present = df.index[df[column].notna()]
    return present[0] if len(present) else df.index[0]


def violations(name: str, df: pd.DataFrame) -> list[Violation]:
    """One planted violation per rule the registry states for this dataset."""
    ds = REGISTRY[name]
    out: list[Violation] = []

    def setter(column: str, value: Any, f: Field | None = None) -> Callable[[pd.DataFrame], None]:
        def plant(frame: pd.DataFrame) -> None:
            if f is not None and f.kind == "cat":
                frame[column] = frame[column].cat.add_categories([value])
            frame.loc[_first(frame, column), column] = value

        return plant

    for f in ds.all_fields:
        col = f.name
        if f.ge is not None:
            out.append((col, "ge", setter(col, f.ge - 1)))
        if f.le is not None:
            out.append((col, "le", setter(col, f.le + 1)))
        if f.categories:
            out.append((col, "isin", setter(col, "__bogus__", f)))
        if f.kind == "cik":
            out.append((col, "cik", setter(col, "12345")))
        if not f.nullable:
            out.append((col, "nullable", setter(col, None)))
        if f.kind == "list":
            out.append((col, "is_list", setter(col, "not a list")))
        else:
            out.append(
                (col, "dtype", lambda frame, c=col: frame.__setitem__(c, frame[c].astype(object)))
            )
    if "total_volume" in ds.checks:
        out.append(
            ("total_volume", "sum", setter("total_volume", int(df["total_volume"].iloc[0]) + 1))
        )
    if "disclosure_after_trade" in ds.checks:

        def early(frame: pd.DataFrame) -> None:
            i = _first(frame, "disclosure_date")
            frame.loc[i, "disclosure_date"] = frame.loc[i, "date"] - pd.Timedelta(days=1)

        out.append(("disclosure_date", "order", early))
    if "forecast_band" in ds.checks:
        out.append(("lower", "band", lambda frame: frame.__setitem__("lower", frame["upper"] + 1)))
    return out


@pytest.fixture(scope="module")
def frames(shared_sandbox) -> dict[str, pd.DataFrame]:
    from .conftest import KEY

    client = md.Client(api_key=KEY, base_url=shared_sandbox.url, cache=False)
    return {name: _load(REGISTRY[name], client) for name in REGISTRY}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_rule_is_enforced_by_both_schemas(name: str, frames: dict[str, pd.DataFrame]) -> None:
    good = frames[name]
    schemas._fast(name).validate(good.copy())
    schemas.get(name).validate(good.copy(), lazy=True)
    cases = violations(name, good)
    # Only `regions` has no field the spec states (its payload is "not shown").
    assert cases or not REGISTRY[name].all_fields
    for column, rule, plant in cases:
        bad = good.copy()
        plant(bad)
        with pytest.raises(pe.SchemaError):
            schemas._fast(name).validate(bad.copy())
        with pytest.raises(md.DataValidationError) as info:
            schemas.validate(bad, name)
        assert column in str(info.value), f"{name}: {rule} on {column} not named:\n{info.value}"


def test_validation_error_samples_the_failing_values(frames: dict[str, pd.DataFrame]) -> None:
    bad = frames["put_call_ratio"].copy()
    bad.loc[3, "ratio"] = -2.5
    with pytest.raises(md.DataValidationError) as info:
        schemas.validate(bad, "put_call_ratio")
    text = str(info.value)
    assert "put_call_ratio" in text and "ratio" in text and "-2.5" in text
    failures = info.value.failures
    assert set(failures["column"]) == {"ratio"} and failures["index"].tolist() == [3]


def test_describe_lists_every_column() -> None:
    for name, ds in REGISTRY.items():
        assert [r["column"] for r in schemas.describe(name)] == ds.columns
