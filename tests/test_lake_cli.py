"""``mdframes sync`` and ``mdframes lake ...`` against the sandbox, with their exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from mdframes.cli import main
from mdframes.lake.cli import split_words
from mdframes.sandbox import Sandbox

from .conftest import KEY, into_closed_pipe


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Sandbox]:
    with Sandbox() as server:
        monkeypatch.setenv("MDFRAMES_BASE_URL", server.url)
        monkeypatch.setenv("MDFRAMES_API_KEY", KEY)
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
        yield server


def test_words_are_datasets_then_symbols() -> None:
    assert split_words(["insider-trading", "screener/sentiment", "AAPL,MSFT", "NVDA"]) == (
        ["insider-trading", "screener/sentiment"],
        ["AAPL", "MSFT", "NVDA"],
    )


def test_sync_then_info_read_sql_compact(
    env: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lake = str(tmp_path / "lake")
    assert main(["sync", "insider_trading", "congress-trades", "AAPL", "MSFT", "--lake", lake]) == 0
    out, err = capsys.readouterr()
    assert "new records" in out and "sync plan" in err
    assert main(["lake", "info", "--lake", lake]) == 0
    assert "congress_trades" in capsys.readouterr().out
    target = tmp_path / "aapl.csv"
    assert (
        main(["lake", "read", "insider_trading", "AAPL", "--out", str(target), "--lake", lake]) == 0
    )
    frame = pd.read_csv(target)
    assert set(frame["symbol"]) == {"AAPL"}
    # Options between the words, as a shell user writes them: the same read.
    mixed = tmp_path / "mixed.csv"
    assert (
        main(["lake", "read", "--lake", lake, "insider_trading", "--out", str(mixed), "AAPL"]) == 0
    )
    pd.testing.assert_frame_equal(pd.read_csv(mixed), frame)
    # Into a pipe whose reader is gone (`| head`): ends as Unix tools do, with no message.
    proc = into_closed_pipe(["lake", "read", "insider_trading", "--lake", lake])
    assert (proc.returncode, proc.stderr) == (141, "")
    assert any(c.startswith("_fetched_at") for c in frame.columns)  # "(UTC)" in spreadsheets
    query = "select symbol, count(*) as n from congress_trades group by 1 order by 1"
    assert main(["lake", "sql", query, "--lake", lake]) == 0
    assert "MSFT" in capsys.readouterr().out
    assert main(["sync", "insider_trading", "AAPL", "MSFT", "--lake", lake]) == 0
    assert main(["lake", "compact", "--lake", lake]) == 0
    assert "insider_trading: 1 -> 1 files" in capsys.readouterr().out


def test_exit_codes_pending_and_failed(env: Sandbox, tmp_path: Path) -> None:
    lake = str(tmp_path / "lake")
    assert main(["sync", "sentiment", "AAPL", "MSFT", "NVDA", "--budget", "1", "--lake", lake]) == 3
    assert main(["sync", "sentiment", "AAPL", "MSFT", "NVDA", "--lake", lake]) == 0
    assert main(["sync", "sentiment", "NOSUCH", "--lake", lake]) == 1


def test_bad_input_exits_2_before_any_request(
    env: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lake = str(tmp_path / "lake")
    assert main(["sync", "insider", "AAPL", "--lake", lake]) == 2
    assert "did you mean" in capsys.readouterr().err
    assert main(["sync", "sentiment", "--lake", lake]) == 2
    assert main(["lake", "read", "--lake", lake]) == 2
    assert env.count() == 0


def test_default_lake_is_in_the_user_data_dir(env: Sandbox, tmp_path: Path) -> None:
    assert main(["sync", "markets"]) == 0
    assert list((tmp_path / "xdg" / "mdframes" / "lake" / "markets").glob("*.parquet"))


def test_demo_ends_with_a_lake_step(tmp_path: Path) -> None:
    import io

    from mdframes.cli.demo import _lake_step

    stream = io.StringIO()
    result = _lake_step(["AAPL", "MSFT"], stream)
    assert result is not None and result["snapshots"].tolist() == [3, 3]
    assert "DuckDB says" in stream.getvalue()


# --- lake check|repair|upgrade|files|changes, OS errors, credentials ------------------------------


def test_files_check_repair_and_changes(
    env: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lake = str(tmp_path / "lake")
    symbols = ["AAPL", "MSFT", "NVDA", "AMZN", "TSLA", "KO", "IBM", "JPM"]
    assert main(["sync", "government-contracts", *symbols, "--lake", lake]) == 0
    env.advance(30)
    assert main(["sync", "government_contracts", *symbols, "--lake", lake]) == 0
    capsys.readouterr()

    assert main(["lake", "files", "Government-Contracts", "--lake", lake]) == 0
    files = capsys.readouterr().out.split()
    assert len(files) == 2 and all(Path(f).is_file() for f in files)

    target = tmp_path / "revised.csv"
    assert (
        main(["lake", "changes", "government_contracts", "--out", str(target), "--lake", lake]) == 0
    )
    revised = pd.read_csv(target)
    assert len(revised) > 0 and set(revised["field"]) == {"award_amount"}
    assert (
        main(["lake", "changes", "government_contracts", "--since", "2100-01-01", "--lake", lake])
        == 0
    )
    assert "0 rows" in capsys.readouterr().out
    assert main(["lake", "changes", "forecast", "--lake", lake]) == 2  # snapshots: read history
    assert "history=True" in capsys.readouterr().err

    assert main(["lake", "check", "--lake", lake]) == 0
    Path(files[0]).unlink()  # a data file lost
    assert main(["lake", "check", "--lake", lake]) == 1
    assert main(["lake", "repair", "--lake", lake]) == 0
    assert Path(files[0]).name in capsys.readouterr().out
    assert main(["lake", "check", "--lake", lake]) == 0
    assert main(["lake", "repair", "--lake", lake]) == 0
    assert "nothing to repair" in capsys.readouterr().out


def test_upgrade_converts_a_format_1_lake(
    env: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    lake = tmp_path / "old"
    shutil.copytree(Path(__file__).parent / "fixtures" / "lake-format1", lake)
    assert main(["lake", "upgrade", "--lake", str(lake)]) == 0
    assert "sentiment: converted" in capsys.readouterr().out
    assert main(["lake", "upgrade", "--lake", str(lake)]) == 0
    assert "nothing to upgrade" in capsys.readouterr().out
    assert main(["lake", "changes", "sentiment", "--lake", str(lake)]) == 0
    assert "score" in capsys.readouterr().out  # the 0.2 lake's revisions, read after conversion


def test_lake_arguments_are_checked_before_the_lake_is_opened(
    env: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lake = tmp_path / "lake"
    for argv in (
        ["lake", "files"],
        ["lake", "files", "insider"],
        ["lake", "changes"],
        ["lake", "sql", "select 1", "select 2"],
        ["lake", "info", "extra"],
        ["lake", "read", "sentiment", "--out", "x.txt"],
    ):
        assert main([*argv, "--lake", str(lake)]) == 2, argv
    assert "did you mean" in capsys.readouterr().err
    assert not lake.exists()


def test_a_full_disk_is_one_line_and_exit_1(env: Sandbox, tmp_path: Path) -> None:
    # A file-size limit (RLIMIT_FSIZE, with SIGXFSZ ignored) makes every write past 2 kB fail
    # with EFBIG, as a full disk fails with ENOSPC: the same path through the lake.
    import resource
    import signal

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))

    lake = tmp_path / "lake"
    done = subprocess.run(
        [sys.executable, "-m", "mdframes", "sync", "sentiment", "AAPL", "--lake", str(lake)],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        preexec_fn=limit,
        timeout=120,
    )
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("mdframes sync: error: ")
    assert "Traceback" not in done.stderr and "too large" in errors[0].lower()


def test_credentials_in_a_lake_root_never_reach_the_output(
    env: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = (
        "s3://AKIACLIKEY:CliSecret77@bucket/lake?endpoint_override=127.0.0.1:9&scheme=http"
        "&region=us-east-1"
    )
    assert main(["lake", "files", "sentiment", "--lake", root]) == 1  # nothing listens there
    assert main(["sync", "sentiment", "AAPL", "--lake", root]) == 1
    assert main(["lake", "info", "--lake", root + "&secret_key=CliSecret88"]) == 1
    assert main(["lake", "check", "--lake", "ftp://AKIACLIKEY:CliSecret77@host/x"]) == 2
    out, err = capsys.readouterr()
    assert err.count("error:") == 4
    for secret in ("AKIACLIKEY", "CliSecret77", "CliSecret88"):
        assert secret not in out + err
