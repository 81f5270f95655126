"""The commands that print frames, through a real pipe: a subprocess whose stdout is a pipe
gets the whole frame, byte for byte the CSV export of the same frame (CONTRACT §6), or JSON
records / JSON Lines with ``--format``; ``--out -`` does the same. The terminal's table is
tested in-process (tests/test_cli.py)."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import mdframes as md
from mdframes.io import to_csv
from mdframes.sandbox import Sandbox

from .conftest import KEY

pytestmark = pytest.mark.filterwarnings("ignore")


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
    """A small lake with a revision: government contracts of two symbols, synced twice."""
    root = tmp_path_factory.mktemp("pipes") / "lake"
    symbols = ["AAPL", "MSFT", "NVDA", "AMZN"]
    md.Lake(root, client=client).sync("government_contracts", symbols)
    server.advance(30)
    md.Lake(root, client=client).sync("government_contracts", symbols)
    return root


def _env(server: Sandbox, tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        MDFRAMES_BASE_URL=server.url,
        MDFRAMES_API_KEY=KEY,
        MDFRAMES_CACHE=str(tmp_path / "cache.sqlite"),
        PYTHONPATH=str(Path(md.__file__).resolve().parent.parent),
    )
    return env


def _piped(server: Sandbox, tmp_path: Path, *argv: str) -> bytes:
    """What ``mdframes ARGV`` writes into a pipe (stdout=PIPE: no terminal)."""
    proc = subprocess.run(
        [sys.executable, "-m", "mdframes", *argv],
        env=_env(server, tmp_path),
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


def _exported(df: pd.DataFrame, tmp_path: Path) -> bytes:
    return to_csv(df, tmp_path / "export.csv").read_bytes()


def test_load_pipes_the_whole_frame_as_the_csv_export(
    server: Sandbox, client: md.Client, tmp_path: Path
) -> None:
    frame = md.load_insider_trading(["AAPL", "MSFT"], client=client)
    assert len(frame) > 20  # more than the terminal's table shows
    assert _piped(server, tmp_path, "load", "insider_trading", "AAPL", "MSFT") == _exported(
        frame, tmp_path
    )
    # --out - is the same, and a file's export of the CLI equals it too.
    assert _piped(server, tmp_path, "load", "insider_trading", "AAPL,MSFT", "--out", "-") == (
        _exported(frame, tmp_path)
    )


def test_grep_counts_every_may_row(server: Sandbox, client: md.Client, tmp_path: Path) -> None:
    frame = md.load_sentiment("AAPL", client=client)
    may = int((frame["date"].dt.strftime("%Y-%m") == "2026-05").sum())
    assert may > 20
    command = f"{shlex.quote(sys.executable)} -m mdframes load sentiment AAPL | grep -c 2026-05"
    proc = subprocess.run(
        ["bash", "-c", command], env=_env(server, tmp_path), capture_output=True, text=True
    )
    assert (proc.stdout.strip(), proc.stderr) == (str(may), "")


def test_screen_and_search_pipe_the_whole_frame(
    server: Sandbox, client: md.Client, tmp_path: Path
) -> None:
    screened = md.load_screener("insider_trading", limit=60, client=client)
    assert len(screened) > 20
    assert _piped(server, tmp_path, "screen", "insider_trading", "--limit", "60") == _exported(
        screened, tmp_path
    )
    found = md.search("apple", limit=10, client=client)
    assert len(found) > 0
    assert _piped(server, tmp_path, "search", "apple") == _exported(found, tmp_path)


def test_lake_read_and_changes_pipe_the_whole_frame(
    server: Sandbox, client: md.Client, lake: Path, tmp_path: Path
) -> None:
    opened = md.Lake(lake, client=client)
    read = opened.read("government_contracts")
    changes = opened.changes("government_contracts")
    assert len(read) > 20 and len(changes) > 0
    where = ["--lake", str(lake)]
    piped = _piped(server, tmp_path, "lake", "read", "government_contracts", *where)
    assert piped == _exported(read, tmp_path)
    piped = _piped(server, tmp_path, "lake", "changes", "government-contracts", *where)
    assert piped == _exported(changes, tmp_path)


def test_features_pipe_the_whole_panel(server: Sandbox, client: md.Client, tmp_path: Path) -> None:
    names = ["news_count_7d", "insider_net_value_90d"]
    panel = md.features.panel(["AAPL"], "2026-03-02", "2026-04-30", names, client=client)
    assert len(panel) > 20
    piped = _piped(
        server,
        tmp_path,
        *["features", "AAPL", "--start", "2026-03-02", "--end", "2026-04-30"],
        *["--features", ",".join(names)],
    )
    assert piped == _exported(panel.reset_index(), tmp_path)


def test_json_and_jsonl_hold_every_record(
    server: Sandbox, client: md.Client, tmp_path: Path
) -> None:
    frame = md.load_news("AAPL", client=client)
    argv = ("load", "news", "AAPL")
    records = json.loads(_piped(server, tmp_path, *argv, "--format", "json"))
    lines = _piped(server, tmp_path, *argv, "--out", "-", "--format", "jsonl").splitlines()
    assert [json.loads(line) for line in lines] == records
    assert len(records) == len(frame) and list(records[0]) == list(frame.columns)
    back = pd.read_json(io.StringIO(json.dumps(records)), orient="records", dtype=False)
    assert back["headline"].tolist() == frame["headline"].tolist()
    # Dates as the CSV writes them (YYYY-MM-DD): the frame's dates, in order.
    assert [r["date"][:10] for r in records] == frame["date"].dt.strftime("%Y-%m-%d").tolist()


def test_format_with_a_file_is_refused_before_any_request(server: Sandbox, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mdframes", "load", "news", "AAPL", "--out", "n.csv"]
        + ["--format", "json"],
        env=_env(server, tmp_path),
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 2 and "--format json is for standard output" in proc.stderr
    assert not (tmp_path / "n.csv").exists()
