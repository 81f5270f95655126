"""Fault injection: a standard-library proxy between the client and the sandbox breaks
answers the way networks and servers do (resets before and mid-body, short bodies, cut
chunked streams, truncated close-delimited 200s, 5xx, 429 with a reset, stalls), seeded, and
the loads must come out row for row as without faults. Also Ctrl-C during a load, measured
in a subprocess and counted at the proxy.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import mdframes as md
from mdframes.errors import NetworkError
from mdframes.sandbox import Sandbox
from mdframes.sandbox.faults import BODY_CUTS, CUT_200S, RETRYABLE, FaultProxy

from .conftest import KEY

TODAY = dt.date(2026, 6, 1)  # fixed, so the clean and the faulty run see the same data
# Test symbols S000..S199 lie outside the sandbox's universe: named as extra symbols.
EXTRA = [f"S{i:03d}" for i in range(200)] + ["AAA", "BBB"]


@pytest.fixture
def server() -> Sandbox:
    with Sandbox(today=TODAY, extra_symbols=EXTRA) as sandbox:
        yield sandbox


def _direct(server: Sandbox) -> md.Client:
    return md.Client(api_key=KEY, base_url=server.url, cache=False, progress=False)


def _entries(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute("select count(*) from responses").fetchone()[0]


# --- each kind alone ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [*RETRYABLE, "stall"])
def test_each_fault_kind_is_retried_and_only_the_whole_body_is_cached(
    server: Sandbox, tmp_path: Path, kind: str
) -> None:
    expected = md.load_insider_trading("AAPL", client=_direct(server))
    path = tmp_path / "c.sqlite"
    # Only the stall needs a short timeout; everything else runs at the defaults.
    options = {"timeout": 0.5} if kind == "stall" else {}
    with FaultProxy(server.port, stall=5) as proxy:
        proxy.script = [kind]
        with md.Client(api_key=KEY, base_url=proxy.url, cache=path, **options) as client:
            got = md.load_insider_trading("AAPL", client=client)
            pd.testing.assert_frame_equal(got, expected)
            assert proxy.count() == 2  # the faulted attempt and one retry
            assert _entries(path) == 1
            again = md.load_insider_trading("AAPL", client=client)
        assert proxy.count() == 2  # from the cache: the stored body is the whole one
    pd.testing.assert_frame_equal(again, expected)


@pytest.mark.parametrize("kind", BODY_CUTS)
def test_a_body_cut_past_the_retries_is_an_error_and_never_cached(
    server: Sandbox, tmp_path: Path, kind: str
) -> None:
    # A broken connection ends as NetworkError; a 200 that is not complete JSON as
    # ResponseFormatError (CONTRACT section 3): both only once the retries are spent.
    error, words = (
        (md.ResponseFormatError, "not complete JSON")
        if kind in CUT_200S
        else (NetworkError, "dropped")
    )
    path = tmp_path / "c.sqlite"
    with FaultProxy(server.port) as proxy:
        proxy.always["/v2/insider-trading/"] = kind
        with md.Client(api_key=KEY, base_url=proxy.url, cache=path, max_retries=1) as client:
            with pytest.raises(error, match=words) as info:
                md.load_insider_trading("AAPL", client=client)
            assert proxy.count() == 2
            assert "\n" not in str(info.value) and "127.0.0.1" in str(info.value)
            assert _entries(path) == 0
            del proxy.always["/v2/insider-trading/"]
            md.load_insider_trading("AAPL", client=client)
        assert proxy.count() == 3  # nothing was replayed from the cache


def test_complete_json_of_the_wrong_shape_is_not_retried(server: Sandbox) -> None:
    # Content-Length met, complete JSON, not the envelope: the server sent bad data.
    with FaultProxy(server.port) as proxy:
        proxy.script = ["wrong_shape"]
        with pytest.raises(md.ResponseFormatError, match="envelope"):
            md.load_insider_trading("AAPL", client=md.Client(api_key=KEY, base_url=proxy.url))
        assert proxy.count() == 1


# --- the sandbox's own "truncate" fault: a 200 cut short, Content-Length matching ----------------


def _cached_bodies(path: Path) -> list[bytes]:
    from requests_cache.backends.sqlite import SQLiteCache

    backend = SQLiteCache(str(path))
    try:
        return [response.content for response in backend.responses.values()]
    finally:
        backend.close()


def test_a_cut_short_200_then_a_good_one_loads_the_whole_frame_and_caches_only_it(
    server: Sandbox, tmp_path: Path
) -> None:
    expected = md.load_insider_trading("AAPL", client=_direct(server))
    path = tmp_path / "c.sqlite"
    server.clear_log()
    server.inject("truncate", path="/v2/insider-trading/AAPL")
    with md.Client(api_key=KEY, base_url=server.url, cache=path, backoff_factor=0.01) as client:
        got = md.load_insider_trading("AAPL", client=client)
    pd.testing.assert_frame_equal(got, expected)
    assert server.count("/v2/insider-trading/AAPL") == 2
    bodies = _cached_bodies(path)  # the real cache file: one entry, the whole answer
    assert len(bodies) == 1 and json.loads(bodies[0])["success"] is True


@pytest.mark.parametrize("retries", [0, 2])
def test_always_cut_short_is_a_response_format_error_after_every_retry(
    server: Sandbox, tmp_path: Path, retries: int
) -> None:
    path = tmp_path / "c.sqlite"
    server.clear_log()
    server.inject(*["truncate"] * (retries + 1), path="/v2/insider-trading/AAPL")
    with md.Client(
        api_key=KEY, base_url=server.url, cache=path, max_retries=retries, backoff_factor=0.01
    ) as client:
        with pytest.raises(md.ResponseFormatError, match="not complete JSON") as info:
            md.load_insider_trading("AAPL", client=client)
    assert f"{retries + 1} attempt" in str(info.value)
    assert server.count("/v2/insider-trading/AAPL") == retries + 1
    assert _cached_bodies(path) == []


# --- the mix --------------------------------------------------------------------------------------

SYMBOLS = EXTRA[:200]
DATASETS = ("insider_trading", "sentiment", "congress_trades", "lobbying")


def test_fault_mix_load_completes_with_default_settings(
    server: Sandbox, record_property: pytest.RecordProperty
) -> None:
    clean = {name: md.load(name, SYMBOLS, client=_direct(server)) for name in DATASETS}
    with FaultProxy(server.port, rate=0.2, seed=2026) as proxy:
        # Default settings: cache in MDFRAMES_CACHE, 3 retries, backoff 0.5 s, 8 workers.
        with md.Client(api_key=KEY, base_url=proxy.url) as client:
            started = time.monotonic()
            for name in DATASETS:
                pd.testing.assert_frame_equal(md.load(name, SYMBOLS, client=client), clean[name])
            seconds = time.monotonic() - started
        figures = proxy.figures()
    figures["rows"] = sum(len(df) for df in clean.values())
    figures["seconds"] = round(seconds, 1)
    record_property("fault_mix", figures)
    print(f"\nfault mix (200 symbols x {len(DATASETS)} datasets): {figures}")
    # The mix really held every kind, at about the rate asked, up to the full retry depth.
    assert set(figures["by_kind"]) == set(RETRYABLE)  # type: ignore[arg-type]
    assert 0.15 < figures["faults"] / figures["requests"] < 0.25  # type: ignore[operator]
    assert figures["deepest"] == 3
    assert figures["retries"] == figures["faults"]  # one retry per fault, none lost or extra


def test_skip_reports_exactly_the_symbols_whose_faults_cannot_be_retried(server: Sandbox) -> None:
    symbols = SYMBOLS[:60]
    clean = md.load_insider_trading(symbols, client=_direct(server))
    broken = {"S007": "reset_mid", "S021": "status_404", "S042": "wrong_shape", "S055": "stall"}
    with FaultProxy(server.port, rate=0.2, seed=7, stall=5) as proxy:
        for symbol, kind in broken.items():
            proxy.always[f"/v2/insider-trading/{symbol}"] = kind
        client = md.Client(api_key=KEY, base_url=proxy.url, cache=False, timeout=1)
        with pytest.warns(UserWarning, match="4 symbol"):
            got = md.load_insider_trading(symbols, client=client, errors="skip")
    failed = got.attrs["failed"]
    assert set(failed) == set(broken)
    assert "dropped" in failed["S007"] and "timed out" in failed["S055"]
    assert "404" in failed["S021"] and "envelope" in failed["S042"]
    kept = clean[~clean["symbol"].isin(list(broken))].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, kept, check_categorical=False)


# --- Ctrl-C ---------------------------------------------------------------------------------------

CHILD = """
import sys
import mdframes as md

client = md.Client(api_key="sandbox-key", base_url=sys.argv[1], cache=sys.argv[2])
md.load_sentiment(["AAA", "BBB"], client=client)  # cached before the interrupt
print("loading", flush=True)
md.load_insider_trading([f"S{i:03d}" for i in range(64)], client=client)
"""


@pytest.mark.parametrize("hold", ["stall", "429"])
def test_ctrl_c_returns_within_two_seconds_and_sends_nothing_after(
    server: Sandbox, tmp_path: Path, hold: str, record_property: pytest.RecordProperty
) -> None:
    path = tmp_path / "c.sqlite"
    with FaultProxy(server.port, stall=60) as proxy:
        if hold == "stall":  # every request hangs: threads block reading
            proxy.always["/v2/insider-trading/"] = "stall"
        else:  # a 429 whose reset is 60 s ahead (within max_wait): threads sleep
            proxy.always["/v2/insider-trading/"] = "429_long"
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, proxy.url, str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # Stall: every worker holds a request. 429: the first answer holds the gate, so
            # the others wait without sending.
            ready = 2 + 8 if hold == "stall" else 2 + 1
            deadline = time.monotonic() + 60
            while proxy.count() < ready and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.5)
            sent = proxy.count()
            signalled = time.monotonic()
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
            seconds = time.monotonic() - signalled
            time.sleep(0.5)  # a request the child had started would have arrived by now
            late = [h for h in proxy.log if h.at > signalled]
        finally:
            if proc.poll() is None:
                proc.kill()
            _, stderr = proc.communicate()
    record_property(f"sigint_{hold}_seconds", round(seconds, 2))
    print(f"\nCtrl-C ({hold}): exit {seconds:.2f} s after the signal; {sent} requests before it")
    assert "KeyboardInterrupt" in stderr
    assert late == [] and proxy.count() == sent
    assert seconds < 2.0
    with contextlib.closing(sqlite3.connect(path)) as db:  # the cache is intact
        assert db.execute("pragma integrity_check").fetchone()[0] == "ok"
        assert db.execute("select count(*) from responses").fetchone()[0] == 2
