"""``mdframes sync`` and ``mdframes lake ...`` against the sandbox, with their exit codes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from mdframes.cli import main
from mdframes.lake.cli import split_words
from mdframes.sandbox import Sandbox

from .conftest import KEY


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

    from mdframes.demo import _lake_step

    stream = io.StringIO()
    result = _lake_step(["AAPL", "MSFT"], stream)
    assert result is not None and result["snapshots"].tolist() == [3, 3]
    assert "DuckDB says" in stream.getvalue()
