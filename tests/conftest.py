"""Shared fixtures: a real sandbox server on loopback and clients pointed at it; and the
helpers several test modules use (a dataset's smallest valid call, its contract check)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

import mdframes as md
from mdframes import schemas
from mdframes.registry import REGISTRY, Dataset, Field, example_arguments
from mdframes.sandbox import Sandbox

KEY = "sandbox-key"


def valid_params(ds: Dataset) -> dict[str, Any]:
    """The smallest valid call of a dataset: the registry's example, for one symbol."""
    params = example_arguments(ds)
    if isinstance(params.get("symbols"), list):
        params["symbols"] = params["symbols"][0]
    return params


def load_example(ds: Dataset, client: md.Client, **extra: Any) -> pd.DataFrame:
    """The dataset loaded with :func:`valid_params` (and ``extra``) through ``md.load``."""
    params = valid_params(ds) | extra
    symbols = params.pop("symbols", None)
    return md.load(ds.name, symbols, client=client, **params)


def expected_dtype_ok(f: Field, series: pd.Series) -> bool:
    """The column has the dtype the contract gives the field's kind."""
    d = series.dtype
    if f.kind in ("str", "cik"):
        return isinstance(d, pd.StringDtype)
    if f.kind == "date":
        return d == np.dtype("datetime64[ns]")
    if f.kind == "ts":
        return isinstance(d, pd.DatetimeTZDtype) and str(d.tz) == "UTC"
    if f.kind == "int":
        return isinstance(d, pd.Int64Dtype)
    if f.kind == "float":
        return d == np.dtype("float64")
    if f.kind == "cat":
        if not isinstance(d, pd.CategoricalDtype):
            return False
        return not f.categories or list(d.categories) == list(f.categories)
    if f.kind == "list":
        return d == np.dtype(object) and series.dropna().map(lambda v: isinstance(v, list)).all()
    return True


def check_contract(name: str, client: md.Client) -> None:
    """A registry dataset loads with its contract columns first, each of its kind's dtype,
    and passes its own schema."""
    ds = REGISTRY[name]
    df = load_example(ds, client)
    assert len(df) > 0, f"{name}: the sandbox should serve rows"
    declared = ds.columns
    assert list(df.columns[: len(declared)]) == declared
    for f in ds.all_fields:
        assert expected_dtype_ok(f, df[f.name]), f"{name}.{f.name}: {df[f.name].dtype}"
    assert df.attrs["dataset"] == name
    schemas.validate(df.copy(), name)


@pytest.fixture(autouse=True)
def _isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Tests never read a developer's real key or write to the real user cache dir.
    monkeypatch.delenv("MDFRAMES_API_KEY", raising=False)
    monkeypatch.delenv("MDFRAMES_BASE_URL", raising=False)
    monkeypatch.setenv("MDFRAMES_CACHE", str(tmp_path_factory.mktemp("cache") / "cache.sqlite"))
    md.set_default_client(None)


@pytest.fixture(scope="session")
def shared_sandbox() -> Iterator[Sandbox]:
    """One server for tests that only read (no faults, no option changes)."""
    with Sandbox() as server:
        yield server


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    """A fresh server for tests that inject faults or change options."""
    with Sandbox() as server:
        yield server


@pytest.fixture
def client(shared_sandbox: Sandbox) -> Iterator[md.Client]:
    with md.Client(api_key=KEY, base_url=shared_sandbox.url, cache=False, backoff_factor=0.01) as c:
        yield c


@pytest.fixture
def fresh_client(sandbox: Sandbox) -> Iterator[md.Client]:
    with md.Client(api_key=KEY, base_url=sandbox.url, cache=False, backoff_factor=0.01) as c:
        yield c


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A run that collects nothing must fail, not pass green (pytest also exits 5 then).
    if not items:
        raise pytest.UsageError("no tests were collected")
