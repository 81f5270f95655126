"""Shared fixtures: a real sandbox server on loopback and clients pointed at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import mdframes as md
from mdframes.sandbox import Sandbox

KEY = "sandbox-key"


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
