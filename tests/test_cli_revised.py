"""The command line as CONTRACT §6.2 revised it, through real processes: ``--out -`` on a
terminal, plain numbers kept in CSV, errors in the command line's words, exit codes, a closed
or full standard output; and a lake root that holds no lake (§10.2), named in Python and on
the command line."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tty
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import mdframes as md
from mdframes.io import to_csv
from mdframes.sandbox import Sandbox

from .conftest import KEY, into_closed_pipe

pytestmark = pytest.mark.filterwarnings("ignore")
# Python's words that the command line must never print (CONTRACT §6.2).
PYTHON_WORDS = ("lake.sync(", "datetime.date", "md.features.Feature(", "panel.attrs", "md.Lake")


@pytest.fixture(scope="module")
def server() -> Iterator[Sandbox]:
    with Sandbox() as s:
        yield s


@pytest.fixture(scope="module")
def client(server: Sandbox) -> Iterator[md.Client]:
    with md.Client(api_key=KEY, base_url=server.url, cache=False) as c:
        yield c


@pytest.fixture(scope="module")
def lake(server: Sandbox, client: md.Client, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sentiment of four symbols synced twice: the second sync revises negative scores."""
    root = tmp_path_factory.mktemp("revised") / "lake"
    symbols = ["AAPL", "MSFT", "NVDA", "AMZN"]
    md.Lake(root, client=client).sync("sentiment", symbols, progress=False)
    server.advance(30)
    md.Lake(root, client=client).sync("sentiment", symbols, progress=False)
    return root


@pytest.fixture
def env(server: Sandbox, tmp_path: Path) -> dict[str, str]:
    out = dict(os.environ)
    out.update(
        MDFRAMES_BASE_URL=server.url,
        MDFRAMES_API_KEY=KEY,
        MDFRAMES_CACHE=str(tmp_path / "cache.sqlite"),
        PYTHONPATH=str(Path(md.__file__).resolve().parent.parent),
    )
    return out


def _run(env: dict[str, str], *argv: str, **kw: object) -> subprocess.CompletedProcess[bytes]:
    options: dict[str, object] = {"capture_output": True} if "stdout" not in kw else {}
    options.update(kw)
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "mdframes", *argv], env=env, timeout=120, **options
    )


def _one_line(proc: subprocess.CompletedProcess[bytes], code: int) -> str:
    """The one-line error of a process that ended with ``code``, with no traceback and no
    Python words."""
    err = proc.stderr.decode()
    assert proc.returncode == code, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not any(word in err for word in PYTHON_WORDS), err
    return err


def _on_a_terminal(env: dict[str, str], *argv: str) -> bytes:
    """What ``mdframes ARGV`` writes when its stdout is a pseudo-terminal (raw: bytes as
    written, no CR added)."""
    leader, follower = os.openpty()
    tty.setraw(follower)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mdframes", *argv],
            env=env,
            stdout=follower,
            stderr=subprocess.DEVNULL,
        )
    finally:
        os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=120) == 0
    return b"".join(chunks)


def test_out_dash_on_a_terminal_writes_the_whole_frame(
    env: dict[str, str], client: md.Client, lake: Path, tmp_path: Path
) -> None:
    frame = md.Lake(lake, client=client).read("sentiment")
    assert len(frame) > 20  # more than the preview shows
    argv = ("lake", "read", "sentiment", "--lake", str(lake))
    whole = _on_a_terminal(env, *argv, "--out", "-")
    assert whole == to_csv(frame, tmp_path / "export.csv").read_bytes()
    # Without --out a terminal keeps its readable preview.
    assert b"rows x" in _on_a_terminal(env, *argv)


def test_plain_numbers_in_text_reach_a_pipe_as_the_frame_holds_them(
    env: dict[str, str], client: md.Client, lake: Path
) -> None:
    changes = md.Lake(lake, client=client).changes("sentiment")
    assert changes["old"].str.startswith("-").any()  # e.g. a score of -0.3514 revised
    proc = _run(env, "lake", "changes", "sentiment", "--lake", str(lake))
    assert proc.returncode == 0, proc.stderr
    assert b"'-" not in proc.stdout
    back = pd.read_csv(io.BytesIO(proc.stdout), dtype={"old": "string", "new": "string"})
    pd.testing.assert_frame_equal(back[["old", "new"]], changes[["old", "new"]])


def test_text_that_could_be_a_formula_is_still_neutralised(
    env: dict[str, str], lake: Path, tmp_path: Path
) -> None:
    query = "select '=1+1' as a, '@x' as b, '-0.6275' as c, '+3' as d, '-1e-5' as e, '-1+1' as f"
    proc = _run(env, "lake", "sql", query, "--lake", str(lake))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"a,b,c,d,e,f\r\n'=1+1,'@x,-0.6275,+3,-1e-5,'-1+1\r\n"
    # A CSV file: the same rules.
    written = _run(env, "lake", "sql", query, "--lake", str(lake), "--out", "q.csv", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert (tmp_path / "q.csv").read_bytes() == proc.stdout


def test_errors_speak_the_command_line(env: dict[str, str], lake: Path) -> None:
    where = ("--lake", str(lake))
    # A dataset the lake never synced: the sync to run, as a command.
    err = _one_line(_run(env, "lake", "read", "news", *where), 2)
    assert "`mdframes sync news SYMBOL... --lake PATH`" in err
    window = ("--start", "2026-01-05", "--end", "2026-02-27")
    err = _one_line(
        _run(env, "features", "AAPL", "--start", "2026-13-01", "--end", "2026-02-01"), 2
    )
    assert "--start '2026-13-01' is not a date (use YYYY-MM-DD)" in err
    err = _one_line(_run(env, "features", "AAPL", *window, "--features", "news_cnt_7d"), 2)
    assert "news_count_7d" in err
    err = _one_line(_run(env, "lake", "read", "sentiment", *where, "--known-at", "soon"), 2)
    assert "YYYY-MM-DDTHH:MM (UTC)" in err and "pandas" not in err
    # A symbol the service does not know: the work failed (1), not the usage.
    assert "ZZZZ" in _one_line(_run(env, "load", "sentiment", "ZZZZ"), 1)
    # Skipped: the warning names no frame attribute.
    proc = _run(env, "features", "AAPL", "ZZZZ", *window, "--features", "news_count_7d",
                "--errors", "skip")  # fmt: skip
    assert proc.returncode == 0 and b"features: failed: ZZZZ: " in proc.stderr, proc.stderr
    assert not any(word.encode() in proc.stderr for word in PYTHON_WORDS), proc.stderr


def test_the_lake_extra_is_named_in_the_command_lines_words(
    env: dict[str, str], lake: Path, tmp_path: Path
) -> None:
    # A pyarrow that does not import (a broken install): the real one cannot be uninstalled
    # for one test, so a package of that name that raises ImportError shadows it.
    (tmp_path / "pyarrow").mkdir()
    (tmp_path / "pyarrow" / "__init__.py").write_text("raise ImportError('broken build')\n")
    env["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{env['PYTHONPATH']}"
    err = _one_line(_run(env, "lake", "info", "--lake", str(lake)), 1)
    assert "the lake needs pyarrow" in err


def test_audit_of_a_file_that_is_no_training_set_exits_2(
    env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "empty.parquet").write_bytes(b"")
    (tmp_path / "text.parquet").write_text("date,symbol\n2026-01-05,AAPL\n" * 10)
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "plain.parquet")
    for name in ("empty", "text", "plain"):
        err = _one_line(_run(env, "audit", str(tmp_path / f"{name}.parquet")), 2)
        assert f"{name}.parquet" in err and "training set" in err


def test_a_closed_or_full_stdout_ends_without_a_traceback(
    env: dict[str, str], lake: Path, tmp_path: Path
) -> None:
    where = ["--lake", str(lake)]
    small = ["lake", "sql", "select 1 as a", *where]
    big = ["lake", "sql", "select * from range(200000)", *where]
    lake_reads = (small, big, ["lake", "info", *where], ["lake", "read", "sentiment", *where])
    for argv in (*lake_reads, ["load", "sentiment", "AAPL"], ["cache", "info"]):
        proc = into_closed_pipe(argv, env=env)
        assert (proc.returncode, proc.stderr) == (141, ""), argv
        with open("/dev/full", "wb") as full:
            proc = _run(env, *argv, stdout=full, stderr=subprocess.PIPE)
        assert "No space left on device" in _one_line(proc, 1), argv
    # Started with stdout closed (`>&-`): the work is done, nothing is said.
    command = f"{sys.executable} -m mdframes lake sql 'select 1' --lake {lake} >&-"
    proc = subprocess.run(["bash", "-c", command], env=env, capture_output=True)
    assert (proc.returncode, proc.stderr) == (0, b"")
    # `| head -c 10`: the reader takes a little, then goes.
    command = f"{sys.executable} -m mdframes lake sql 'select * from range(200000)' --lake {lake}"
    proc = subprocess.run(["bash", "-c", f"{command} | head -c 10"], env=env, capture_output=True)
    assert (proc.stdout, proc.stderr) == (b"range\r\n0\r\n", b"")


def test_a_root_without_a_lake_is_named_not_read_as_empty(
    client: md.Client, lake: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty-folder"
    empty.mkdir()
    for root in (tmp_path / "reserch-lake", empty):
        missing = md.Lake(root, client=client)
        calls = {
            "read": (missing.read, "sentiment"),
            "coverage": (missing.coverage,),
            "info": (missing.info,),
            "changes": (missing.changes, "sentiment"),
            "sql": (missing.sql, "select 1"),
            "files": (missing.files, "sentiment"),
            "check": (missing.check,),
            "repair": (missing.repair,),
        }
        for name, (call, *args) in calls.items():
            with pytest.raises(md.InvalidParameterError, match=f"no lake exists at '{root}'"):
                call(*args)
            assert not os.path.exists(root / "_lake.json"), name  # nothing was created
    # A lake that never synced one dataset still says so, and a sync creates a lake.
    with pytest.raises(md.InvalidParameterError, match="the lake holds no news yet"):
        md.Lake(lake, client=client).read("news")
    made = md.Lake(tmp_path / "reserch-lake", client=client)
    made.sync("sentiment", "AAPL", progress=False)
    assert set(made.read("sentiment")["symbol"]) == {"AAPL"}


def test_the_command_line_names_a_root_without_a_lake(env: dict[str, str], tmp_path: Path) -> None:
    empty = tmp_path / "empty-folder"
    empty.mkdir()
    for root in (str(tmp_path / "reserch-lake"), str(empty)):
        for argv in (
            ["lake", "info"],
            ["lake", "coverage"],
            ["lake", "read", "sentiment"],
            ["features", "AAPL", "--start", "2026-01-05", "--end", "2026-01-30"],
            ["agent-server", "--as-of", "2026-06-30"],
            ["training-set", "AAPL", "--start", "2026-01-05", "--end", "2026-01-30"]
            + ["--out", str(tmp_path / "t.parquet")],
        ):
            err = _one_line(_run(env, *argv, "--lake", root, stdin=subprocess.DEVNULL), 2)
            assert f"no lake exists at '{root}'" in err, argv
            assert not os.path.exists(os.path.join(root, "_lake.json"))


def test_an_object_store_root_without_a_lake_is_named(
    s3_server: object, s3_env: None, client: md.Client
) -> None:
    from .conftest import S3

    assert isinstance(s3_server, S3)
    root = s3_server.uri(s3_server.bucket(), "reserch-lake")
    missing = md.Lake(root, client=client)
    with pytest.raises(md.InvalidParameterError, match="no lake exists at 's3://"):
        missing.coverage()
    missing.sync("sentiment", "AAPL", progress=False)
    assert set(md.Lake(root, client=client).coverage()["symbol"]) == {"AAPL"}


def test_a_panel_from_a_root_without_a_lake_names_it(tmp_path: Path) -> None:
    """Not a NotInLakeError for every symbol (or NA features with errors="skip")."""
    lake = md.Lake(tmp_path / "reserch-lake")
    for errors in ("raise", "skip"):
        with pytest.raises(md.InvalidParameterError, match="no lake exists at"):
            md.features.panel(["AAPL"], "2026-01-05", "2026-01-09", "news_count_7d",
                              source=lake, errors=errors)  # fmt: skip
    assert not (tmp_path / "reserch-lake").exists()
