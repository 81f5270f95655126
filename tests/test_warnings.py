"""Every warning mdframes emits points at the caller's line (CONTRACT §3): here, this file.

``warnings.catch_warnings(record=True)`` records each warning with the file and line that
``stacklevel`` named; a warning pointed inside mdframes would name a file of the package.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import mdframes as md
from mdframes.sandbox import Sandbox

from .replay import envelope, replay

KEY = "sandbox-key"
HERE = str(Path(__file__).resolve())


def _recorded(call: Any) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return list(caught)


def _assert_here(caught: list[warnings.WarningMessage], category: type[Warning]) -> None:
    mine = [w for w in caught if issubclass(w.category, category)]
    assert mine, f"no {category.__name__} was emitted"
    for w in mine:
        assert str(Path(w.filename).resolve()) == HERE, (w.filename, w.message)


def _put_call_with_a_gap() -> dict[str, Any]:
    rows = [("2026-03-02", 1070205, 442233, 627971), ("2026-03-03", 1005, 500, 500)]
    data = [
        {"date": d, "ratio": p / c, "callVolume": c, "putVolume": p, "totalVolume": t}
        for d, t, c, p in rows
    ]
    return envelope({"symbol": "TSLA", "name": "Tesla", "data": data})


def test_data_quality_warning_from_a_loader_points_here() -> None:
    with replay({"/v2/put-call-ratio/TSLA": _put_call_with_a_gap()}) as (client, _):
        caught = _recorded(lambda: md.load_put_call_ratio("TSLA", client=client))
    _assert_here(caught, md.DataQualityWarning)


def test_data_quality_warning_from_a_multi_symbol_load_points_here() -> None:
    bodies = {
        "/v2/put-call-ratio/TSLA": _put_call_with_a_gap(),
        "/v2/put-call-ratio/AAPL": envelope({"symbol": "AAPL", "name": "Apple", "data": []}),
    }
    with replay(bodies) as (client, _):
        caught = _recorded(lambda: md.load_put_call_ratio(["TSLA", "AAPL"], client=client))
    _assert_here(caught, md.DataQualityWarning)


def test_skip_emits_a_skipped_symbols_warning_pointing_here(client: md.Client) -> None:
    frames: list[pd.DataFrame] = []
    caught = _recorded(
        lambda: frames.append(
            md.load_sentiment(["AAPL", "NOTFOUND"], limit=3, errors="skip", client=client)
        )
    )
    _assert_here(caught, md.SkippedSymbolsWarning)
    (skip,) = [w for w in caught if w.category is md.SkippedSymbolsWarning]
    assert "NOTFOUND" in str(skip.message)
    assert list(frames[0].attrs["failed"]) == ["NOTFOUND"]


def test_the_skip_warning_can_be_filtered_by_its_class(client: md.Client) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", md.SkippedSymbolsWarning)
        with pytest.raises(md.SkippedSymbolsWarning):
            md.load_sentiment(["AAPL", "NOTFOUND"], limit=3, errors="skip", client=client)
    assert issubclass(md.SkippedSymbolsWarning, UserWarning)


def test_insider_groups_unknown_types_warning_points_here() -> None:
    df = pd.DataFrame({"transaction_type": ["Purchase", "Mystery"]})
    caught = _recorded(lambda: md.insider_groups(df))
    _assert_here(caught, UserWarning)


def test_cache_warning_points_here(sandbox: Sandbox, tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.mkdir()  # a directory where the cache file should be: unusable
    with md.Client(api_key=KEY, base_url=sandbox.url, cache=path) as client:
        caught = _recorded(lambda: md.load_markets(client=client))
    _assert_here(caught, md.errors.CacheWarning)


def test_a_warning_raised_in_a_loaders_worker_thread_points_here(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """Several symbols are fetched on worker threads; the unusable cache is found by one of
    them. Its warning is held and raised in the calling thread, so it names this line."""
    path = tmp_path / "c.sqlite"
    path.mkdir()
    with md.Client(api_key=KEY, base_url=sandbox.url, cache=path, max_workers=4) as client:
        caught = _recorded(lambda: md.load_sentiment(["AAPL", "MSFT", "NVDA"], client=client))
    _assert_here(caught, md.errors.CacheWarning)
    assert len([w for w in caught if issubclass(w.category, md.errors.CacheWarning)]) == 1


def test_a_warning_raised_during_a_lake_sync_points_here(tmp_path: Path) -> None:
    """A sync fetches on its own threads; a soft rule's warning there is raised when the
    sync's work ends, in the calling thread."""
    pytest.importorskip("deltalake", reason="the lake extra")
    with replay({"/v2/put-call-ratio/TSLA": _put_call_with_a_gap()}) as (client, _):
        lake = md.Lake(tmp_path / "lake", client=client)
        caught = _recorded(lambda: lake.sync("put_call_ratio", "TSLA", progress=False))
    _assert_here(caught, md.DataQualityWarning)


def test_export_warning_points_here(tmp_path: Path) -> None:
    df = pd.DataFrame({"a": [1]})
    df.attrs["odd"] = object()
    caught = _recorded(lambda: md.to_parquet(df, tmp_path / "x.parquet"))
    _assert_here(caught, UserWarning)


def test_v1_loader_warning_points_here() -> None:
    # A transaction type outside the spec's list is a soft (vocabulary) failure.
    rows = [
        {"date": "Mar 05 '24", "amount": "$1,001 - $15,000", "representative": "A", "type": "Sale"},
        {"date": "Mar 04 '24", "amount": "$1,001 - $15,000", "representative": "B", "type": "Swap"},
    ]
    body = {"ticker": "AAPL", "name": "Apple", "houseTrades": rows}
    with replay({"/v1/housetrades/S%26P%20500/AAPL": body}) as (client, _):
        caught = _recorded(lambda: md.v1.load_house_trades("S&P 500", "AAPL", client=client))
    _assert_here(caught, md.DataQualityWarning)


def test_a_quality_warning_of_a_sync_holds_its_details(tmp_path: Path) -> None:
    """A sync returns no frame: its warning cannot send the user to df.attrs['quality']."""
    pytest.importorskip("deltalake", reason="the lake extra")
    with replay({"/v2/put-call-ratio/TSLA": _put_call_with_a_gap()}) as (client, _):
        lake = md.Lake(tmp_path / "lake", client=client)
        caught = _recorded(lambda: lake.sync("put_call_ratio", "TSLA", progress=False))
    (text,) = [str(w.message) for w in caught if issubclass(w.category, md.DataQualityWarning)]
    assert "total_volume on total_volume, call_volume, put_volume: 1 row(s) of TSLA" in text


def test_a_rate_limit_error_says_when_the_window_resets(sandbox: Sandbox) -> None:
    sandbox.inject(("429", 3600))
    client = md.Client(api_key=KEY, base_url=sandbox.url, cache=False, max_wait=5)
    with client, pytest.raises(md.RateLimitError) as info:
        md.load_markets(client=client)
    reset = info.value.reset_at
    assert reset is not None
    assert f"resets at {reset:%Y-%m-%d %H:%M:%S} UTC (in 60 min)" in str(info.value)
    assert "max_wait=" in str(info.value) and "wait=True" in str(info.value)


def test_a_sync_bar_says_it_waits_for_the_reset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("deltalake", reason="the lake extra")
    with Sandbox(rate_limit=2, rate_window=1) as server:
        with md.Client(api_key=KEY, base_url=server.url, cache=False) as client:
            lake = md.Lake(tmp_path / "lake", client=client)
            symbols = ["AAPL", "MSFT", "NVDA", "AMZN", "TSLA"]
            assert lake.sync("sentiment", symbols, wait=True, progress=True).complete
    assert "waiting for the rate-limit window to reset at" in capsys.readouterr().err
