"""Panels over a lake know what the lake never saw (CONTRACT §11.1): a symbol a dataset never
synced (or that failed, or that the service did not know) is a failure like a 404, and a row
whose window the lake did not sync is NA, never a 0 that means "not synced". The same through
``training_set``, an executor and both commands.

Every lake here is real: synced from the sandbox (fixed clock) into Delta tables on disk.
Values are checked against a panel of frames loaded from the service over exactly the windows
synced, masked by a brute force of the coverage rule written from the contract.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import warnings
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import mdframes as md
from mdframes.sandbox import Sandbox

from .conftest import KEY

TODAY = dt.date(2026, 11, 30)  # a Monday
DATASETS = ["insider_trading", "news", "sentiment"]
START, END = "2026-06-01", "2026-11-27"
# Feature -> the days ending on D whose data its value reads (a change: D and D - 30).
SPAN = {
    "insider_buy_count_90d": 90,
    "insider_net_value_90d": 90,
    "news_count_7d": 7,
    "news_sentiment_mean_7d": 7,
    "sentiment_mean_7d": 7,
    "sentiment_change_30d": 31,
}
FEATURES = list(SPAN)
# What the lake synced: symbol -> dataset -> the windows fetched (inclusive dates).
FULL = [(dt.date(2025, 6, 2), TODAY)]
PART = [(dt.date(2026, 9, 1), TODAY)]  # KO: only the end of the panel's dates
GAP = [(dt.date(2026, 3, 2), dt.date(2026, 4, 30)), (dt.date(2026, 8, 3), TODAY)]  # GME news
SYNCED = {
    "AAPL": dict.fromkeys([*DATASETS, "put_call_ratio"], FULL),
    "MSFT": dict.fromkeys([*DATASETS, "put_call_ratio"], FULL),
    "KO": dict.fromkeys([*DATASETS, "put_call_ratio"], PART),
    "GME": {**dict.fromkeys(["insider_trading", "sentiment"], FULL), "news": GAP},
}


@pytest.fixture(scope="module")
def server() -> Iterator[Sandbox]:
    with Sandbox(today=TODAY) as s:
        yield s


def _client(server: Sandbox) -> md.Client:
    client = md.Client(api_key=KEY, base_url=server.url, cache=False, progress=False)
    client.sandbox = server  # the lake's clock: the sandbox's day
    return client


@pytest.fixture(scope="module")
def lake_root(server: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("features-lake") / "lake"
    with _client(server) as client:
        lake = md.Lake(root, client=client)
        for symbol, by_dataset in SYNCED.items():
            for dataset, windows in by_dataset.items():
                # The later window first, then an earlier one: the lake's span has a gap.
                for first, last in reversed(windows):
                    lake.sync(dataset, [symbol], start=first, end=last, progress=False)
        lake.sync("news", ["NOPE"], progress=False)  # the service answers 404
    return root


@pytest.fixture(scope="module")
def served(server: Sandbox) -> dict[str, dict[str, pd.DataFrame]]:
    """Per symbol, each dataset as the service serves it over exactly the synced windows,
    loaded without the lake."""
    out: dict[str, dict[str, pd.DataFrame]] = {}
    with _client(server) as client:
        for symbol, by_dataset in SYNCED.items():
            out[symbol] = {
                dataset: pd.concat(
                    [md.load(dataset, [symbol], start=a, end=b, client=client) for a, b in windows]
                ).drop_duplicates(ignore_index=True)
                for dataset, windows in by_dataset.items()
            }
    return out


def _covered(symbol: str, feature: str, day: pd.Timestamp) -> bool:
    """The contract's rule, row by row: every day of the feature's window was synced."""
    dataset = "insider_trading" if feature.startswith("insider") else feature.split("_")[0]
    windows = SYNCED.get(symbol, {}).get(dataset, [])
    days = [day.date() - dt.timedelta(days=k) for k in range(SPAN[feature])]
    return all(any(a <= d <= b for a, b in windows) for d in days)


def _expected(served: dict[str, dict[str, pd.DataFrame]], symbols: list[str]) -> pd.DataFrame:
    """Each symbol's panel from the served frames, NA where the rule says not covered (and
    for a symbol never synced)."""
    parts = []
    for symbol in symbols:
        frames = served.get(symbol)
        if frames is None or not set(DATASETS) <= set(frames):
            index = pd.MultiIndex.from_product(
                [pd.date_range(START, END, freq="B", name="date"),
                 pd.Index([symbol], dtype="string", name="symbol")]
            )  # fmt: skip
            part = md.features.panel(["AAPL"], START, END, FEATURES,
                                     source=served["AAPL"]).iloc[:0].reindex(index)  # fmt: skip
        else:
            part = md.features.panel([symbol], START, END, FEATURES, source=frames)
        for feature in FEATURES:
            keep = [_covered(symbol, feature, d) for d in part.index.get_level_values("date")]
            part.loc[~np.asarray(keep), feature] = pd.NA
        parts.append(part)
    out = pd.concat(parts).sort_index(level="date", sort_remaining=False, kind="stable")
    return out


def _uncovered(symbols: list[str]) -> dict[str, int]:
    dates = pd.date_range(START, END, freq="B")
    return {f: sum(not _covered(s, f, d) for d in dates for s in symbols) for f in FEATURES}


def _skipped(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, md.SkippedSymbolsWarning)]


# --- the case: symbols the lake never synced ----------------------------------------


def test_coverage_of_the_synced_lake_is_what_was_synced(lake_root: Path) -> None:
    """The premise of the tests below, read from the lake itself."""
    cov = md.Lake(lake_root).coverage(DATASETS, ["AAPL", "KO", "GME", "GOOGL", "NOPE"])
    status = {(r.dataset, r.symbol): r.status for r in cov.itertuples()}
    assert status[("news", "AAPL")] == "synced" and status[("news", "KO")] == "synced"
    assert status[("news", "GOOGL")] == "never" and status[("news", "NOPE")] == "not_found"
    ko = cov[(cov["dataset"] == "news") & (cov["symbol"] == "KO")].iloc[0]
    assert pd.Timestamp(ko["first"]) == pd.Timestamp(PART[0][0])
    gme = cov[(cov["dataset"] == "news") & (cov["symbol"] == "GME")].iloc[0]
    assert len(gme["gaps"]) == 1


def test_never_synced_symbols_raise_not_in_lake_before_any_read(lake_root: Path) -> None:
    lake = md.Lake(lake_root)
    reads: list[str] = []
    read = lake.read
    lake.read = lambda *a, **k: reads.append(a[0]) or read(*a, **k)  # type: ignore[method-assign]
    with pytest.raises(md.NotInLakeError) as caught:
        md.features.panel(["AAPL", "GOOGL", "NOPE"], START, END, FEATURES, source=lake)
    err = caught.value
    assert isinstance(err, LookupError) and isinstance(err, md.MdframesError)
    assert err.symbols == ["GOOGL", "NOPE"] and sorted(err.datasets) == DATASETS
    text = str(err)
    for word in ["GOOGL", "NOPE", "never synced", "news not found by the service",
                 "lake.sync(", "errors='skip'"]:  # fmt: skip
        assert word in text
    assert reads == []  # refused before anything was read or computed


def test_errors_skip_keeps_their_rows_na_lists_them_and_warns_once(
    lake_root: Path, served: dict[str, dict[str, pd.DataFrame]]
) -> None:
    symbols = ["AAPL", "GOOGL", "NOPE"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = md.features.panel(symbols, START, END, FEATURES, source=md.Lake(lake_root),
                                errors="skip")  # fmt: skip
    skipped = _skipped(caught)
    assert len(skipped) == 1 and "GOOGL" in skipped[0] and "NOPE" in skipped[0]
    failed = got.attrs["failed"]
    assert list(failed) == ["GOOGL", "NOPE"]
    assert "insider_trading never synced" in failed["GOOGL"]
    assert "news not found by the service" in failed["NOPE"]
    for symbol in ["GOOGL", "NOPE"]:
        rows = got.xs(symbol, level="symbol")
        assert rows.isna().all().all()  # counts and sums too: never a 0
    assert got["news_count_7d"].dtype == "Int64"
    pd.testing.assert_frame_equal(got, _expected(served, symbols), check_like=False)
    n_dates = len(pd.date_range(START, END, freq="B"))
    for feature in FEATURES:
        entry = got.attrs["coverage"][feature]
        assert entry["uncovered"] == 2 * n_dates
        assert entry["non_null"] <= 1 / 3


# --- a symbol synced over part of the panel's dates ----------------------------------------


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_a_partly_synced_symbol_is_na_outside_its_synced_windows(
    lake_root: Path, served: dict[str, dict[str, pd.DataFrame]]
) -> None:
    symbols = ["AAPL", "KO", "GME", "MSFT"]
    got = md.features.panel(symbols, START, END, FEATURES, source=md.Lake(lake_root))
    want = _expected(served, symbols)
    pd.testing.assert_frame_equal(got, want)
    ko = got.xs("KO", level="symbol")
    assert ko["insider_buy_count_90d"].isna().all()  # no 90-day window inside Sep 1..Nov 30
    assert ko.loc["2026-09-07":, "news_count_7d"].notna().all()
    assert ko.loc[:"2026-09-06", "news_count_7d"].isna().all()
    gme = got.xs("GME", level="symbol")["news_count_7d"]
    assert gme.loc["2026-05-01":"2026-08-08"].isna().all() and gme.loc["2026-08-10":].notna().all()
    assert got.attrs["failed"] == {}
    assert {f: e["uncovered"] for f, e in got.attrs["coverage"].items()} == _uncovered(symbols)


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_known_at_row_masks_the_same_rows(lake_root: Path) -> None:
    lake = md.Lake(lake_root)
    symbols = ["KO", "GME", "AAPL"]
    plain = md.features.panel(symbols, START, END, FEATURES, source=lake)
    by_row = md.features.panel(symbols, START, END, FEATURES, source=lake, known_at="row")
    pd.testing.assert_frame_equal(by_row.isna(), plain.isna())
    assert by_row.attrs["coverage"] == plain.attrs["coverage"]


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_an_executor_and_write_panel_give_the_serial_panel(lake_root: Path, tmp_path: Path) -> None:
    lake = md.Lake(lake_root)
    symbols = ["AAPL", "KO", "GOOGL", "GME", "NOPE", "MSFT"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", md.SkippedSymbolsWarning)
        serial = md.features.panel(symbols, START, END, FEATURES, source=lake, errors="skip")
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(2, mp_context=spawn) as pool:
            parallel = md.features.panel(symbols, START, END, FEATURES, source=lake,
                                         errors="skip", executor=pool)  # fmt: skip
        md.features.write_panel(tmp_path / "panel", symbols, START, END, FEATURES, source=lake,
                                errors="skip", chunk=4)  # fmt: skip
    pd.testing.assert_frame_equal(parallel, serial)
    assert parallel.attrs == serial.attrs
    written = pd.read_parquet(tmp_path / "panel").set_index(["date", "symbol"])
    written = written.sort_index(level="date", sort_remaining=False, kind="stable")
    pd.testing.assert_frame_equal(written, serial, check_index_type=False)


# --- training sets ---------------------------------------------------------------------------


def test_a_training_set_raises_or_skips_like_the_panel(lake_root: Path) -> None:
    lake = md.Lake(lake_root)
    symbols = ["AAPL", "GOOGL", "KO"]
    with pytest.raises(md.NotInLakeError, match="GOOGL"):
        md.features.training_set(symbols, START, END, FEATURES, source=lake)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ts = md.features.training_set(symbols, START, END, FEATURES, source=lake, errors="skip")
        panel = md.features.panel(symbols, START, END, FEATURES, source=lake, errors="skip")
    assert len(_skipped(caught)) == 2  # one from the training set, one from the panel
    pd.testing.assert_frame_equal(ts.X, panel)
    assert list(ts.X.attrs["failed"]) == ["GOOGL"]
    assert ts.X.xs("GOOGL", level="symbol").isna().all().all()
    assert ts.y.xs("GOOGL", level="symbol").isna().all()
    assert ts.y.xs("AAPL", level="symbol").loc[:"2026-11-13"].notna().all()
    # KO's prices start on Sep 1: no label before, labels after.
    ko = ts.y.xs("KO", level="symbol")
    assert ko.loc[:"2026-08-21"].isna().all() and ko.loc["2026-09-01":"2026-11-13"].notna().all()
    assert ts.X.attrs["coverage"]["news_count_7d"]["uncovered"] > 0


# --- the commands ----------------------------------------------------------------------------


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = md.cli.main(argv)
    return code, capsys.readouterr().err


@pytest.mark.parametrize("command", ["features", "training-set"])
def test_the_commands_refuse_or_skip_and_never_write_zeros(
    command: str, lake_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.parquet"
    argv = [command, "AAPL", "GOOGL", "NOPE", "--start", START, "--end", END,
            "--features", ",".join(FEATURES), "--lake", str(lake_root), "--out", str(out)]  # fmt: skip
    code, err = _main(argv, capsys)
    assert code == 1 and not out.exists()
    assert "GOOGL" in err and "NOPE" in err and "--errors skip" in err
    assert "mdframes sync insider_trading news sentiment GOOGL NOPE" in err
    code, err = _main([*argv, "--errors", "skip"], capsys)
    assert code == 0, err
    assert "warning:" in err and "GOOGL" in err and "NOPE" in err
    if command == "features":
        frame = pd.read_parquet(out).set_index(["date", "symbol"])
    else:
        ts = md.features.read_training_set(out)
        frame = ts.X
        assert ts.y.xs("GOOGL", level="symbol").isna().all()
    for symbol in ["GOOGL", "NOPE"]:
        assert frame.xs(symbol, level="symbol")[FEATURES].isna().all().all()
    assert frame.xs("AAPL", level="symbol")["news_count_7d"].notna().all()


def test_a_stand_in_lake_without_coverage_is_read_as_before(
    served: dict[str, dict[str, pd.DataFrame]],
) -> None:
    """A lake-like object without ``coverage()`` holds whatever it is asked (as before 0.4)."""

    class Reader:
        def read(self, dataset: str, symbols: Any = None, **kw: Any) -> pd.DataFrame:
            frame = served["AAPL"][dataset]
            frame.attrs["dataset"] = dataset
            return frame

    got = md.features.panel(["AAPL"], START, END, FEATURES, source=Reader())
    want = md.features.panel(["AAPL"], START, END, FEATURES, source=served["AAPL"])
    pd.testing.assert_frame_equal(got, want)
    assert all(e["uncovered"] == 0 for e in got.attrs["coverage"].values())


def test_a_sync_between_two_panels_is_seen_by_the_next(
    lake_root: Path, server: Sandbox, tmp_path: Path
) -> None:
    """A panel's coverage is made once while the lake's state is unchanged (a repeat reuses
    it): a sync in between is seen by the next panel of the same lake object."""
    import shutil

    root = tmp_path / "lake"
    shutil.copytree(lake_root, root)
    symbols, features = ["AAPL", "IBM"], ["news_count_7d"]
    with _client(server) as client:
        lake = md.Lake(root, client=client)
        for _ in range(2):  # the second answered from the kept coverage: the same failure
            with pytest.raises(md.NotInLakeError) as caught:
                md.features.panel(symbols, START, END, features, source=lake)
            assert caught.value.symbols == ["IBM"]
        lake.sync("news", ["IBM"], start=FULL[0][0], end=TODAY, progress=False)
        panel = md.features.panel(symbols, START, END, features, source=lake)
    assert panel.xs("IBM", level="symbol")["news_count_7d"].notna().all()


def test_panels_and_training_sets_in_turn_make_their_coverage_once(
    lake_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the lake's state is unchanged, the coverage a panel judges by is made once per
    question, also when questions come in turn (a panel, one at known_at="row", a training
    set's panel and its prices') and with a run left open (this lake's symbol unknown to the
    service waits for its retry): the lake and the panels keep the last few, and a training
    set's pinned lake answers from the lake's own while the state is as pinned. Before,
    each kept one, none with a run open: every question was made again."""
    from mdframes.features.panels import unseen as module

    made: list[tuple[str, ...]] = []
    real = module.Coverage.__init__

    def counted(self: Any, table: Any, datasets: list[str], *args: Any, **kw: Any) -> None:
        made.append(tuple(datasets))
        real(self, table, datasets, *args, **kw)

    monkeypatch.setattr(module.Coverage, "__init__", counted)
    lake = md.Lake(lake_root)
    symbols = ["AAPL", "MSFT"]

    def in_turn() -> None:
        md.features.panel(symbols, START, END, FEATURES, source=lake)
        md.features.panel(symbols, START, END, FEATURES, source=lake, known_at="row")
        md.features.training_set(symbols, START, END, FEATURES, source=lake)

    in_turn()
    first = len(made)
    assert first >= 3
    in_turn()
    in_turn()
    assert made[first:] == []


@pytest.mark.parametrize("one_thread", [False, True], ids=["overlapped", "in-turn"])
def test_a_datasets_inputs_are_freed_before_its_memory_is_given_back(
    lake_root: Path, monkeypatch: pytest.MonkeyPatch, one_thread: bool
) -> None:
    """Each dataset's frame is gone when the engine gives memory back after its features (no
    reader's local, loop variable or executor's work item keeps it): its pages can go back
    to the system before the next dataset is computed, not at the panel's end. Read while
    the previous dataset is computed, or (one thread: a chunk's share) in turn."""
    import weakref

    from mdframes.features.panels import chunk, schedule

    reads = chunk.fetch
    frames: list[weakref.ref[pd.DataFrame]] = []
    alive: list[bool] = []

    def recorded(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for name, frame, bad in reads(*args, **kwargs):
            frames.append(weakref.ref(frame))
            box = [frame]
            del frame
            yield name, box.pop(), bad

    def give_back() -> None:  # called once per dataset, after its features, in read order
        alive.append(frames[len(alive)]() is not None)

    monkeypatch.setattr(chunk, "fetch", recorded)
    monkeypatch.setattr(chunk, "give_back", give_back)
    if one_thread:
        monkeypatch.setattr(schedule, "threads", lambda most=None: 1)
    # Every engine counts as big here; a small one leaves its pages for the next dataset.
    monkeypatch.setattr(chunk, "GIVE_BACK_FROM", 0)
    md.features.panel(["AAPL", "MSFT"], START, END, FEATURES, source=md.Lake(lake_root))
    assert len(alive) == len(DATASETS) and not any(alive)
    monkeypatch.undo()
    monkeypatch.setattr(chunk, "give_back", give_back)
    md.features.panel(["AAPL", "MSFT"], START, END, FEATURES, source=md.Lake(lake_root))
    assert len(alive) == len(DATASETS)  # two symbols' engines: none given back
