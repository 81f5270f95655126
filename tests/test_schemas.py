"""Validation, generated from the registry: every rule of every dataset is enforced at its
declared severity (hard raises, soft is recorded), and the pandera schema built from the same
rules agrees on every violation."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pandas as pd
import pandera.errors as pe
import pytest

import mdframes as md
from mdframes import schemas
from mdframes.registry import REGISTRY, SEVERITY, Field

from .conftest import KEY, load_example

# column, kind of rule (a key of registry.SEVERITY), planting function
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
            out.append((col, "range", setter(col, f.ge - 1)))
        if f.le is not None:
            out.append((col, "range", setter(col, f.le + 1)))
        if f.categories:
            out.append((col, "vocabulary", setter(col, "__bogus__", f)))
        if f.kind == "cik":
            out.append((col, "cik", setter(col, "12345")))
        required = any(r.name == "required" and r.columns == (col,) for r in schemas.rules(name))
        if required or not ds.nullable(f):
            out.append((col, "required" if required else "not_null", setter(col, None)))
        if f.kind == "list":
            out.append((col, "list", setter(col, "not a list")))
        else:
            out.append(
                (col, "type", lambda frame, c=col: frame.__setitem__(c, frame[c].astype(object)))
            )
    if "total_volume" in ds.checks:
        # A gap of 1 is the service's truncation (consistent); 5 is not.
        out.append(
            (
                "total_volume",
                "total_volume",
                setter("total_volume", int(df["total_volume"].iloc[0]) + 5),
            )
        )
    if "disclosure_after_trade" in ds.checks:

        def early(frame: pd.DataFrame) -> None:
            i = _first(frame, "disclosure_date")
            frame.loc[i, "disclosure_date"] = frame.loc[i, "date"] - pd.Timedelta(days=1)

        out.append(("disclosure_date", "disclosure_after_trade", early))
    if "forecast_band" in ds.checks:
        out.append(
            ("lower", "forecast_band", lambda frame: frame.__setitem__("lower", frame["upper"] + 1))
        )
    return out


@pytest.fixture(scope="module")
def frames(shared_sandbox) -> dict[str, pd.DataFrame]:
    client = md.Client(api_key=KEY, base_url=shared_sandbox.url, cache=False)
    loaded = {name: load_example(REGISTRY[name], client) for name in REGISTRY}
    with warnings.catch_warnings():
        # pandera's first validation imports its optional backends; an installed pyspark
        # warns about pandas 3 on import. Done here, so "no warning on good data" below
        # is about the rules, not about what the environment has installed.
        warnings.simplefilter("ignore")
        schemas.get("sentiment").validate(loaded["sentiment"].copy(), lazy=True)
    return loaded


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_rule_is_enforced_at_its_severity(name: str, frames: dict[str, pd.DataFrame]) -> None:
    good = frames[name]
    assert schemas.check(good.copy(), name) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no soft rule warns on good data either
        schemas.get(name).validate(good.copy(), lazy=True)
    cases = violations(name, good)
    # Only `regions` has no field the spec states (its payload is "not shown").
    assert cases or not REGISTRY[name].all_fields
    for column, kind, plant in cases:
        bad = good.copy()
        plant(bad)
        if SEVERITY[kind] == "hard":
            with pytest.raises(md.DataValidationError) as info:
                schemas.check(bad.copy(), name)
            assert column in str(info.value), f"{name}: {kind} on {column} not named:\n{info.value}"
            with pytest.raises(pe.SchemaErrors), warnings.catch_warnings():
                # A planted hard violation may break a soft rule too (a negative volume breaks
                # the volumes' sum): that rule's warning is right, and not this test's subject.
                warnings.simplefilter("ignore", UserWarning)
                schemas.get(name).validate(bad.copy(), lazy=True)
        else:
            quality = schemas.check(bad.copy(), name)
            assert [q for q in quality if column in q["columns"] and q["rows"] >= 1], (name, kind)
            with pytest.raises(md.DataValidationError):
                schemas.check(bad.copy(), name, strict=True)
            with pytest.warns(UserWarning):
                schemas.get(name).validate(bad.copy(), lazy=True)


def test_validation_error_samples_the_failing_values(frames: dict[str, pd.DataFrame]) -> None:
    bad = frames["put_call_ratio"].copy()
    bad.loc[3, "ratio"] = -2.5
    with pytest.raises(md.DataValidationError) as info:
        schemas.validate(bad, "put_call_ratio")
    text = str(info.value)
    assert "put_call_ratio" in text and "ratio" in text and "-2.5" in text
    assert "1 failing row" in text  # rows, not cells
    failures = info.value.failures
    assert failures["columns"].tolist() == [["ratio"]] and failures["rows"].tolist() == [1]
    assert info.value.symbols == [str(bad.loc[3, "symbol"])]


def test_describe_lists_every_column() -> None:
    for name, ds in REGISTRY.items():
        assert [r["column"] for r in schemas.describe(name)] == ds.columns
