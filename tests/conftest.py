"""Shared fixtures: a real sandbox server on loopback and clients pointed at it; and the
helpers several test modules use (a dataset's smallest valid call, its contract check)."""

from __future__ import annotations

import os
import subprocess
import sys
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


def lake_client(server: Sandbox) -> md.Client:
    """A client of ``server`` for lake tests: no cache, quick retries, and the lake's clock
    following the sandbox's day."""
    client = md.Client(api_key=KEY, base_url=server.url, cache=False, backoff_factor=0.01)
    client.sandbox = server  # type: ignore[attr-defined]
    return client


def sync_env(server: Sandbox, crash: str | None = None) -> dict[str, str]:
    """The environment of an ``mdframes sync`` process against ``server``, killed at the
    named checkpoint ``crash`` (see ``mdframes.lake.store.storage.CRASH_ENV``) or not at all."""
    from mdframes.lake.store.storage import CRASH_ENV

    env = dict(os.environ, MDFRAMES_BASE_URL=server.url, MDFRAMES_API_KEY=KEY)
    env.pop(CRASH_ENV, None)
    if crash:
        env[CRASH_ENV] = crash
    return env


def into_closed_pipe(
    args: list[str], env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m mdframes ARGS`` writing into a real pipe whose reader is gone before the
    command writes (what `| head -1` does to the rest of a long output): every write fails
    with EPIPE. Its stderr is captured."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "mdframes", *args],
            env=env,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=timeout,
        )
    finally:
        os.close(write_end)


@pytest.fixture(autouse=True)
def _isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Tests never read a developer's real key or write to the real user cache dir.
    monkeypatch.delenv("MDFRAMES_API_KEY", raising=False)
    monkeypatch.delenv("MDFRAMES_BASE_URL", raising=False)
    monkeypatch.setenv("MDFRAMES_CACHE", str(tmp_path_factory.mktemp("cache") / "cache.sqlite"))
    md.set_default_client(None)
    # An in-process CLI run writes to pytest's capture, which is no terminal; such tests read
    # the terminal's table. What a real pipe gets is tested in subprocesses (tests/test_pipes.py).
    from mdframes.cli import common

    monkeypatch.setattr(common, "stdout_is_terminal", lambda: True)


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
    # The engine step (.ci/run) selects its tests with `-m engines`: a test that needs the S3
    # server is one by what it uses, so no file can be left out of that step by a list.
    for item in items:
        if "s3_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.engines)


# In the engine step every extra is installed: a skip there means a test that never runs
# anywhere (the first two runs skip these for want of the lake-engines extra), so it fails.
ENGINE_STEP = os.environ.get("MDFRAMES_ENGINE_STEP") == "1"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if ENGINE_STEP and report.skipped and item.get_closest_marker("engines") is not None:
        report.outcome = "failed"
        report.longrepr = (
            f"skipped in the engine step, where every extra is installed: {report.longrepr}"
        )


class S3:
    """A running local S3 server (see ``tests/s3server.py``) and a client for setting up."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.endpoint = f"127.0.0.1:{port}"
        self.url = f"http://{self.endpoint}"
        self._buckets = 0

    def client(self) -> object:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    def bucket(self) -> str:
        """A new empty bucket (each test gets its own, so one server serves the session)."""
        self._buckets += 1
        name = f"lake-{self._buckets}-{os.getpid()}"
        self.client().create_bucket(Bucket=name)  # type: ignore[attr-defined]
        return name

    def uri(self, bucket: str, prefix: str = "lake") -> str:
        """A lake root in pyarrow's spelling (as CONTRACT §10 and mdframes 0.2 take it)."""
        return (
            f"s3://{bucket}/{prefix}?endpoint_override={self.endpoint}&scheme=http&region=us-east-1"
        )


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3]:
    """A real S3 server (moto in server mode) in its own process on 127.0.0.1."""
    pytest.importorskip("moto.server", reason="moto comes with the lake-engines extra")
    pytest.importorskip("boto3", reason="boto3 comes with the lake extra")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.s3server"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the S3 server did not start: {line!r}")
        yield S3(int(line.split()[1]))
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def s3_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Credentials for the local S3 server, as the standard AWS variables (no real account
    is ever reached: every lake in these tests names the local endpoint)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
