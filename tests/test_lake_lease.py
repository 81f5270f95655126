"""The writer lease on a local disk (an OS file lock) and lake roots: parsing and redaction.

The object-store lease, between processes on a real S3 server, is in tests/test_lake_s3.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mdframes.errors import InvalidParameterError, LakeBusyError
from mdframes.lake.store.lease import LOCK, LocalLease, open_lease
from mdframes.lake.store.location import parse_root, redact_root

ROOT = Path(__file__).resolve().parent.parent


def _holder(root: Path, seconds: float, name: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.lease_worker",
            "hold",
            str(root),
            "60",
            "10",
            str(seconds),
            name,
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stdout.readline().startswith("HELD")
    return proc


def test_a_second_local_writer_is_told_who_holds_the_lake(tmp_path: Path) -> None:
    holder = _holder(tmp_path, 3600, "sync 000007")
    try:
        lease = open_lease(tmp_path, owner="sync 000008")
        assert isinstance(lease, LocalLease)
        with pytest.raises(
            LakeBusyError,
            match=r"sync 000007 \(pid \d+ on .*when that process ends.*pass wait=True",
        ):
            with lease.hold(wait=False):
                pass  # pragma: no cover - the lock is held
        assert not lease.held
    finally:
        holder.kill()
        holder.wait()


def test_a_killed_local_holder_frees_the_lake_at_once(tmp_path: Path) -> None:
    holder = _holder(tmp_path, 3600, "doomed")
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    lease = open_lease(tmp_path, owner="next")
    with lease.hold(wait=False):
        lease.assert_held()
        assert "next" in (tmp_path / LOCK).read_text()
    with pytest.raises(LakeBusyError, match="does not hold"):
        lease.assert_held()


def test_a_waiting_local_writer_gets_the_lake_when_the_holder_ends(tmp_path: Path) -> None:
    holder = _holder(tmp_path, 1.0, "short")
    lease = open_lease(tmp_path, owner="patient", poll=0.05)
    with lease.hold(wait=True):
        assert holder.poll() is not None or holder.wait(timeout=10) == 0  # it had ended
        lease.assert_held()
    assert holder.stdout is not None and holder.stdout.read().strip() == "STILL"


def test_the_local_lease_creates_nothing_until_held(tmp_path: Path) -> None:
    root = tmp_path / "not-yet"
    lease = open_lease(root, owner="x")
    assert not root.exists()
    with lease.hold():
        assert (root / LOCK).exists()


# --- roots --------------------------------------------------------------------------------------


def test_an_object_store_root_resolves_pyarrow_query_env_and_storage_options() -> None:
    env = {"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "x"}
    loc = parse_root(
        "s3://bucket/some/prefix?endpoint_override=127.0.0.1:9000&scheme=http&region=us-east-1",
        environ=env,
    )
    assert (loc.bucket, loc.prefix, loc.uri("news")) == (
        "bucket",
        "some/prefix",
        "s3://bucket/some/prefix/news",
    )
    assert loc.options["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9000"
    assert loc.options["AWS_ALLOW_HTTP"] == "true"
    assert loc.options["AWS_REGION"] == "us-east-1"  # the URI beats the environment
    assert loc.options["AWS_ACCESS_KEY_ID"] == "ENVKEY"
    given = parse_root(
        "s3://bucket", {"aws_region": "ap-south-1", "endpoint": "https://e"}, environ=env
    )
    assert given.options["AWS_REGION"] == "ap-south-1"  # storage_options beat both
    assert given.options["AWS_ENDPOINT_URL"] == "https://e"
    assert given.key("_lease.json") == "_lease.json"


@pytest.mark.parametrize(
    "root",
    [
        "s3://AKIAROOTKEY:rootSecret99@bucket/lake",
        "s3://bucket/lake?access_key=AKIAROOTKEY&secret_key=rootSecret99&region=x",
        "s3://bucket/lake?session_token=rootSecret99&endpoint_override=h:1",
    ],
)
def test_credentials_in_a_root_never_print(root: str) -> None:
    loc = parse_root(root, environ={})
    shown = [redact_root(root), repr(loc), loc.display, loc.uri("x"), loc.scrub(f"failed: {root}")]
    for text in shown:
        assert "rootSecret99" not in text and "AKIAROOTKEY" not in text, text
    assert "rootSecret99" in loc.options.values()  # still used to reach the store
    assert loc.scrub("echoed rootSecret99 back") == "echoed *** back"


@pytest.mark.parametrize("bad", [123, None, b"/x", "", "ftp://host/x", "s3:///nobucket"])
def test_a_root_that_cannot_be_a_lake_is_refused(bad: object) -> None:
    with pytest.raises(InvalidParameterError):
        parse_root(bad)


def test_a_file_is_not_a_lake_root(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(InvalidParameterError, match="is a file"):
        parse_root(tmp_path / "f")
    assert parse_root(tmp_path / "new").local and not (tmp_path / "new").exists()
