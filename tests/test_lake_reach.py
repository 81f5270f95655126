"""Where a lake meets the world outside mdframes (CONTRACT §10.1, "Reachability"): an object
store that cannot be reached, a lake another writer holds, a read overtaken by a vacuum, and a
full disk. Real parts throughout: the moto S3 server, a closed local port, a host name that
cannot resolve, a local server that never answers, a real tmpfs filled to the brim."""

from __future__ import annotations

import os
import pickle
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import mdframes as md
from mdframes.cli import main
from mdframes.lake.store.lease import open_lease
from mdframes.lake.store.location import parse_root
from mdframes.sandbox import Sandbox

from .conftest import KEY, S3, lake_client

ROOT = Path(__file__).resolve().parent.parent
SECRET, KEY_ID = "Reach5ecretValue", "AKIAREACHTEST"
# Every client of the lake gives up at once: a refused connection or an unknown host fails
# in milliseconds, a silent server after a second (deltalake's keys; pyarrow and the lease's
# boto3 take the same ones).
QUICK = {"max_retries": "0", "connect_timeout": "1s", "timeout": "1s"}


@pytest.fixture(scope="module")
def world() -> Iterator[Sandbox]:
    with Sandbox() as server:
        yield server


@pytest.fixture
def client(world: Sandbox) -> Iterator[md.Client]:
    with lake_client(world) as c:
        yield c


@pytest.fixture
def cli_env(world: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MDFRAMES_BASE_URL", world.url)
    monkeypatch.setenv("MDFRAMES_API_KEY", KEY)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens there once it is closed


def _root(bucket: str, endpoint: str) -> str:
    return (
        f"s3://{KEY_ID}:{SECRET}@{bucket}/lake?endpoint_override={endpoint}&scheme=http"
        "&region=us-east-1"
    )


@pytest.fixture(scope="module")
def s3_lake(s3_server: S3, world: Sandbox) -> str:
    """The bucket of a real lake on the S3 server: sentiment of AAPL and MSFT synced."""
    bucket = s3_server.bucket()
    with md.Client(api_key=KEY, base_url=world.url, cache=False) as c:
        lake = md.Lake(_root(bucket, s3_server.endpoint), client=c)
        assert lake.sync("sentiment", ["AAPL", "MSFT"], progress=False).complete
    return bucket


# (endpoint, the reasons an error may give: pyarrow's curl says only that it could not
# connect, deltalake's and boto3's that the connection was refused)
WRONG = {
    "a closed port": (
        lambda: f"127.0.0.1:{_closed_port()}",
        ("connection refused", "could not connect"),
    ),
    "an unknown host": (lambda: "no-such-host.invalid:9000", ("host name not resolved",)),
}


def _calls(lake: md.Lake) -> dict[str, Callable[[], Any]]:
    return {
        "read": lambda: lake.read("sentiment", "AAPL"),
        "read all": lambda: lake.read("sentiment"),
        "sync": lambda: lake.sync("sentiment", ["AAPL"], progress=False),
        "info": lake.info,
        "check": lake.check,
        "repair": lake.repair,
        "compact": lake.compact,
        "files": lambda: lake.files("sentiment"),
        "sql": lambda: lake.sql("select count(*) from sentiment"),
        "version": lambda: lake.version("sentiment"),
        "changes": lambda: lake.changes("sentiment", "AAPL"),
        "upgrade": lake.upgrade,
    }


# The S3 cases reach the server through request.getfixturevalue, which the collection cannot
# see: marked here so the engine step (-m engines) runs them.
WHERE = ["disk", pytest.param("s3", marks=pytest.mark.engines)]


def _shown(stderr: str) -> list[str]:
    """The lines a terminal shows of a command's standard error (a progress bar's ``\r``
    redraws overwrite each other), but for the sync's plan."""
    shown = (line.rsplit("\r", 1)[-1] for line in stderr.split("\n"))
    return [line for line in shown if line.strip() and not line.startswith(("sync plan", "  "))]


def _assert_unavailable(exc: BaseException, endpoint: str, reasons: tuple[str, ...]) -> None:
    text = str(exc)
    assert isinstance(exc, md.LakeUnavailableError) and isinstance(exc, ConnectionError)
    assert isinstance(exc, md.MdframesError) and not isinstance(exc, md.LakeDamagedError)
    assert exc.endpoint == f"http://{endpoint}" and exc.reason in reasons, text
    assert f"http://{endpoint}" in text and f"({exc.reason})" in text, text
    assert "repair" not in text and "damaged" not in text.replace("not damaged", ""), text
    assert SECRET not in text and KEY_ID not in text, text
    assert "\n" not in text and exc.__cause__ is None and exc.__suppress_context__


@pytest.mark.parametrize("wrong", list(WRONG))
def test_every_lake_call_names_a_store_it_cannot_reach(
    s3_server: S3, s3_lake: str, client: md.Client, wrong: str
) -> None:
    make_endpoint, reasons = WRONG[wrong]
    endpoint = make_endpoint()
    lake = md.Lake(_root(s3_lake, endpoint), client=client, storage_options=QUICK)
    for name, call in _calls(lake).items():
        with pytest.raises(md.LakeUnavailableError) as caught:
            call()
        _assert_unavailable(caught.value, endpoint, reasons)
        again = pickle.loads(pickle.dumps(caught.value))
        assert str(again) == str(caught.value) and again.endpoint == caught.value.endpoint, name
    # The writer lease (boto3, its own client): the same error.
    with pytest.raises(md.LakeUnavailableError) as caught:
        with open_lease(lake.storage, owner="a test").hold():
            pass  # pragma: no cover - nothing answers
    _assert_unavailable(caught.value, endpoint, reasons)
    # Nothing was damaged: the lake at its right address reads and checks as before.
    good = md.Lake(_root(s3_lake, s3_server.endpoint), client=client)
    assert good.check()["ok"].all() and len(good.read("sentiment", ["AAPL", "MSFT"]))


def test_a_store_that_never_answers_times_out_as_configured(
    s3_lake: str, client: md.Client
) -> None:
    """A server that accepts connections and never answers: deltalake's ``timeout`` and
    ``connect_timeout`` reach pyarrow's and the lease's clients too, and the error says
    "timed out"."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)  # connections complete in the kernel's backlog; nothing is ever read
    endpoint = f"127.0.0.1:{silent.getsockname()[1]}"
    try:
        lake = md.Lake(_root(s3_lake, endpoint), client=client, storage_options=QUICK)
        for call in (lambda: lake.read("sentiment", "AAPL"), lake.check):
            with pytest.raises(md.LakeUnavailableError) as caught:
                call()
            _assert_unavailable(caught.value, endpoint, ("timed out",))
    finally:
        silent.close()


def test_the_commands_say_so_in_one_line_and_exit_1(
    s3_lake: str, cli_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _closed_port()
    commands = {
        "a closed port": [
            ["sync", "sentiment", "AAPL"],
            ["lake", "info"],
            ["lake", "check"],
            ["lake", "repair"],
            ["lake", "compact"],
            ["lake", "read", "sentiment", "AAPL"],
        ],
        "an unknown host": [["lake", "files", "sentiment"]],
    }
    for wrong, runs in commands.items():
        endpoint = f"127.0.0.1:{port}" if wrong == "a closed port" else "no-such-host.invalid:9000"
        for argv in runs:
            assert main([*argv, "--lake", _root(s3_lake, endpoint)]) == 1, argv
            out, err = capsys.readouterr()
            lines = _shown(err)
            assert len(lines) == 1, err
            assert lines[0].startswith(f"mdframes {argv[0]}: error: lake s3://{s3_lake}/lake: ")
            assert f"http://{endpoint}" in lines[0]
            assert any(f"({reason})" in lines[0] for reason in WRONG[wrong][1]), lines[0]
            assert "repair" not in lines[0] and SECRET not in err + out and KEY_ID not in err + out


def test_a_lake_on_disk_is_never_unavailable(tmp_path: Path) -> None:
    """The classification belongs to object stores: a local error that reads like one (a
    connection refused by some socket) stays what it is."""
    from mdframes.lake.store.faults import unreachable

    assert unreachable(parse_root(tmp_path), ConnectionRefusedError(111, "refused")) is None
    s3 = parse_root("s3://b/p?endpoint_override=127.0.0.1:9&scheme=http")
    assert unreachable(s3, md.NetworkError("the service: connection refused")) is None
    assert unreachable(s3, OSError("[Errno 28] No space left on device")) is None


# --- a lake another writer holds ------------------------------------------------------------------


def test_a_busy_lake_advises_only_what_the_call_offers(
    tmp_path: Path, client: md.Client, cli_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "lake"
    lake = md.Lake(root, client=client)
    assert lake.sync("sentiment", ["AAPL"], progress=False).complete
    with open_lease(lake.storage, owner="another job").hold():
        for call in (lake.compact, lake.repair, lake.upgrade):
            with pytest.raises(md.LakeBusyError) as busy:
                call()
            text = str(busy.value)
            assert "another job" in text and "run it again when the other writer is done" in text
            assert "wait=" not in text, text
        with pytest.raises(md.LakeBusyError, match=r"another job.*pass wait=True") as busy:
            lake.sync("sentiment", ["AAPL"], progress=False)
        for argv, advice in (
            (["lake", "compact"], "run it again when the other writer is done"),
            (["lake", "repair"], "run it again when the other writer is done"),
            (["sync", "sentiment", "AAPL"], "pass --wait to wait for it"),
        ):
            assert main([*argv, "--lake", str(root)]) == 1
            err = capsys.readouterr().err
            line = err.strip().splitlines()[-1]
            assert line.startswith(f"mdframes {argv[0]}: error: another writer") and advice in line
            assert "wait=" not in err and ("--wait" in err) == (argv[0] == "sync"), err


def test_a_busy_lake_on_s3_says_when_the_lease_ends_at_the_latest(
    s3_server: S3, client: md.Client, s3_env: None
) -> None:
    root = s3_server.uri(s3_server.bucket())
    lake = md.Lake(root, client=client)
    assert lake.sync("sentiment", ["AAPL"], progress=False).complete
    with open_lease(lake.storage, owner="another job").hold():
        with pytest.raises(md.LakeBusyError) as busy:
            lake.compact()
        assert re.search(
            r"another job.*run it again when the other writer is done, at the latest at "
            r"\d\d:\d\d:\d\d UTC",
            str(busy.value),
        ), busy.value
        assert "wait=" not in str(busy.value)
        with pytest.raises(md.LakeBusyError, match=r"expires at .* pass wait=True"):
            lake.sync("sentiment", ["AAPL"], progress=False)


# --- a read overtaken by a vacuum ---------------------------------------------------------------


def _two_commits(
    where: str, tmp_path: Path, client: md.Client, request: pytest.FixtureRequest
) -> Any:
    """The root of a lake on disk or on the S3 server whose sentiment table holds two
    commits, two files at least."""
    if where == "s3":
        request.getfixturevalue("s3_env")
        s3: S3 = request.getfixturevalue("s3_server")
        root: Any = s3.uri(s3.bucket())
    else:
        root = tmp_path / "lake"
    writer = md.Lake(root, client=client)
    for batch in (["AAPL", "MSFT"], ["NVDA", "AAPL"]):
        assert writer.sync("sentiment", batch, progress=False).complete
    return root


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("symbols", [["AAPL"], None])
def test_a_read_overtaken_by_a_vacuum_reads_the_new_version(
    where: str,
    symbols: list[str] | None,
    tmp_path: Path,
    client: md.Client,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Between the reader picking its version and reading its files, another Lake object
    compacts with ``retain_hours=0``: every file of the picked version is deleted. The read
    retries once on the new version and returns what it would have returned."""
    import mdframes.lake.read as lake_read

    root = _two_commits(where, tmp_path, client, request)
    writer = md.Lake(root, client=client)
    expected = writer.read("sentiment", symbols)
    picked_files = writer.files("sentiment")
    assert len(picked_files) >= 2

    reader = md.Lake(root, client=client)  # its own table objects: no file opened yet
    overtaken: list[list[str]] = []
    original = lake_read.opened

    def opened_then_compacted(table: Any) -> Any:
        snap = original(table)
        if not overtaken:
            overtaken.append(list(snap.files))
            assert writer.compact(retain_hours=0) == {"sentiment": (len(snap.files), 1)}
        return snap

    monkeypatch.setattr(lake_read, "opened", opened_then_compacted)
    got = reader.read("sentiment", symbols)
    assert overtaken == [picked_files]
    assert not set(picked_files) & set(writer.files("sentiment"))  # every picked file is gone
    if where == "disk":
        assert not any(os.path.exists(f) for f in picked_files)
    pd.testing.assert_frame_equal(got, expected)


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("call", ["sql", "info"])
def test_sql_and_info_overtaken_by_a_vacuum_run_on_the_new_version(
    where: str,
    call: str,
    tmp_path: Path,
    client: md.Client,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As a read: ``sql()`` after its views pinned a version, ``info()`` after it picked one,
    another Lake object compacts with ``retain_hours=0``; each runs once more on the new
    version and answers what it would have answered."""
    import mdframes.lake.sql as lake_sql

    root = _two_commits(where, tmp_path, client, request)
    writer = md.Lake(root, client=client)
    query = "select symbol, count(*) n from sentiment_history group by 1 order by 1"
    expected = writer.sql(query) if call == "sql" else writer.info()
    picked_files = writer.files("sentiment")
    reader = md.Lake(root, client=client)
    compacted: list[dict[str, tuple[int, int]]] = []

    def compact_once() -> None:
        if not compacted:
            compacted.append(writer.compact(retain_hours=0))

    if call == "sql":
        original_connect = lake_sql.connect

        def connected_then_compacted(*args: Any) -> Any:
            con = original_connect(*args)
            compact_once()
            return con

        monkeypatch.setattr(lake_sql, "connect", connected_then_compacted)
        got = reader.sql(query)
    else:
        table = reader.tables.get(md.registry.get("sentiment"))
        original_scan = table.scan

        def compacted_then_scanned(*args: Any, **kwargs: Any) -> Any:
            compact_once()
            return original_scan(*args, **kwargs)

        monkeypatch.setattr(table, "scan", compacted_then_scanned)
        got = reader.info()
    assert compacted == [{"sentiment": (len(picked_files), 1)}]
    assert not set(picked_files) & set(writer.files("sentiment"))  # every picked file is gone
    if call == "info":  # the files and bytes of the version counted: the new one
        columns = ["dataset", "rows", "versions", "symbols", "first", "last", "last_sync"]
        got, expected = got[columns], expected[columns]
    pd.testing.assert_frame_equal(got, expected)


def test_a_listed_file_that_is_gone_is_still_damage(tmp_path: Path, client: md.Client) -> None:
    """The retry is for files the table no longer lists: a listed file deleted by hand is
    reported as before."""
    lake = md.Lake(tmp_path / "lake", client=client)
    assert lake.sync("sentiment", ["AAPL"], progress=False).complete
    os.unlink(lake.files("sentiment")[0])
    with pytest.raises(md.LakeDamagedError, match="missing"):
        md.Lake(tmp_path / "lake", client=client).read("sentiment", "AAPL")


# --- a full disk ----------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 2 MB tmpfs (mounting needs root, or a kernel that lets this user mount)."""
    if sys.platform != "linux":
        pytest.skip("a tmpfs mount is a Linux facility")
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(mount: Path, leave: int) -> None:
    """Fill the disk but ``leave`` bytes (whole pages of 4 kB)."""
    filler = mount / "filler"
    filler.unlink(missing_ok=True)
    free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
    with open(filler, "wb") as fh:
        fh.write(b"\0" * max(0, free - leave))


def test_a_full_disk_prints_one_line(small_disk: Path, world: Sandbox) -> None:
    """A sync onto a disk with a few kilobytes left, as a process of its own (deltalake's
    Rust runtime prints its panic to the process's standard error): every run ends with one
    error line and nothing from Rust or Python's tracebacks. The room left varies so that the
    disk fills at each step of a sync: a data file's upload, the dtype record or the state."""
    env = dict(os.environ, MDFRAMES_BASE_URL=world.url, MDFRAMES_API_KEY=KEY, RUST_BACKTRACE="1")
    command = [sys.executable, "-m", "mdframes", "sync", "insider_trading", "congress_trades"]
    command += ["AAPL", "MSFT", "NVDA", "GOOGL", "--start", "2020-01-01"]
    messages = []
    for i, leave in enumerate(range(8 * 1024, 64 * 1024, 8 * 1024)):
        _fill(small_disk, leave)
        lake = small_disk / f"lake{i}"
        done = subprocess.run(
            [*command, "--lake", str(lake)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        err = done.stderr
        if done.returncode == 0:
            continue  # it fitted
        lines = _shown(err)
        assert done.returncode == 1 and len(lines) == 1, err
        assert lines[0].startswith("mdframes sync: error: ") and "no space left" in lines[0], err
        for word in ("panicked", "backtrace", "Traceback", "RUST_BACKTRACE", ".rs:"):
            assert word not in err, err
        messages.append(lines[0])
        for stale in lake.rglob("*"):
            os.remove(stale) if stale.is_file() else None
    assert any("insider_trading: cannot write" in m for m in messages), messages


def test_the_panic_filter_passes_everything_else_through(tmp_path: Path) -> None:
    """Rust's panic report is dropped; other lines, partial lines and a second report's
    neighbours pass, in order (a child process writing to its descriptor 2 meanwhile)."""
    script = (
        "import os, sys\n"
        "from mdframes.lake.store.faults import rust_panics_hidden\n"
        "with rust_panics_hidden():\n"
        "    os.write(2, b'before\\nprogress 1%\\r')\n"
        "    os.write(2, b\"thread 'tokio-rt-worker' (7) panicked at src/a.rs:1:2:\\n\")\n"
        "    os.write(2, b'Already shut down\\nstack backtrace:\\n   0: x\\n')\n"
        "    os.write(2, b'note: Some details are omitted\\n')\n"
        "    sys.stderr.write('after\\n')\n"
        "    with rust_panics_hidden():\n"
        "        os.write(2, b\"thread 'main' panicked at b.rs:3:4:\\nboom\\n\")\n"
        "        os.write(2, b'note: run with `RUST_BACKTRACE=1`\\n')\n"
        "    os.write(2, b'thread safety is fine\\n')\n"
        "print('done', flush=True)\n"
        "os.write(2, b\"thread 'x' panicked at c.rs:1:1:\\nshown when no write runs\\n\")\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0 and done.stdout == b"done\n", done.stderr
    assert done.stderr == (
        b"before\nprogress 1%\rafter\nthread safety is fine\n"
        b"thread 'x' panicked at c.rs:1:1:\nshown when no write runs\n"
    )


def test_the_panic_filter_is_shared_by_threads(capfd: pytest.CaptureFixture[str]) -> None:
    from mdframes.lake.store.faults import rust_panics_hidden

    barrier = threading.Barrier(4)

    def write(i: int) -> None:
        with rust_panics_hidden():
            barrier.wait()
            os.write(2, f"line {i}\n".encode())
            barrier.wait()

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    os.write(2, b"thread 'y' panicked at d.rs:1:1:\nafterwards\n")
    err = capfd.readouterr().err
    assert sorted(err.splitlines()[:4]) == [f"line {i}" for i in range(4)]
    assert err.splitlines()[4:] == ["thread 'y' panicked at d.rs:1:1:", "afterwards"]
