"""Seams between the lake and a model where a wrong number could pass silently:

- coverage judged as the lake knew it at ``known_at`` (a fixed time or ``"row"``), not now:
  a symbol first synced later is not synced then, days a later sync filled in are gaps then;
- a label's prices need the lake's coverage too: no return across days it never synced;
- a training set records exactly the table versions it read, even with a sync in between.

One real lake, synced from the sandbox (fixed clock) on two simulated days.
"""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import mdframes as md
from mdframes.sandbox import Sandbox

from .conftest import KEY

DAY_A, DAY_B = dt.date(2026, 10, 1), dt.date(2026, 10, 6)
DATASETS = ["news", "put_call_ratio"]
FEATURES = ["news_count_7d", "put_call_ratio_last"]
ONE = dt.timedelta(days=1)
KO_GAP = (dt.date(2026, 6, 1), dt.date(2026, 6, 9))
KO_LATER = KO_GAP[1] + ONE


def _client(world: Sandbox) -> md.Client:
    client = md.Client(api_key=KEY, base_url=world.url, cache=False, progress=False)
    client.sandbox = world  # the lake's clock: the sandbox's day
    return client


@pytest.fixture(scope="module")
def world() -> Iterator[Sandbox]:
    with Sandbox(today=DAY_A) as s:
        yield s


@pytest.fixture(scope="module")
def lake_root(world: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Day A: AAPL from June 1. Day B: AAPL widened back to March 1 (a backfill), MSFT
    synced for the first time, also from March 1."""
    root = tmp_path_factory.mktemp("seams") / "lake"
    with _client(world) as client:
        lake = md.Lake(root, client=client)
        lake.sync(DATASETS, ["AAPL"], start="2026-06-01", progress=False)
        world.advance(days=(DAY_B - DAY_A).days)
        lake.sync(DATASETS, ["AAPL", "MSFT"], start="2026-03-01", progress=False)
        # KO's prices: from June 10, then March to May: June 1-9 never synced.
        lake.sync("put_call_ratio", ["KO"], start=KO_LATER, progress=False)
        lake.sync("put_call_ratio", ["KO"], start="2026-03-01", end=KO_GAP[0] - ONE,
                  progress=False)  # fmt: skip
    return root


def _quiet() -> Any:
    context = warnings.catch_warnings()
    context.__enter__()
    warnings.simplefilter("ignore", md.DataQualityWarning)
    warnings.simplefilter("ignore", md.SkippedSymbolsWarning)
    return context


# --- coverage as known at known_at ------------------------------------------------------------


def test_the_lake_says_its_coverage_as_known_then(lake_root: Path) -> None:
    lake = md.Lake(lake_root)
    now = lake.coverage("news", ["AAPL", "MSFT"]).set_index("symbol")
    assert now.loc["AAPL", "first"] == pd.Timestamp("2026-03-01")
    then = lake.coverage("news", ["AAPL", "MSFT"], known_at="2026-10-03").set_index("symbol")
    assert then.loc["MSFT", "status"] == "never" and then.loc["MSFT", "rows"] == 0
    # AAPL's March to May were fetched on day B: not synced on Oct 3.
    assert then.loc["AAPL", "status"] == "synced"
    assert then.loc["AAPL", "first"] == pd.Timestamp("2026-06-01")
    # As a copy of the lake taken then: the window reached day A, fetched on day A.
    assert then.loc["AAPL", "last"] == pd.Timestamp(DAY_A)
    assert then.loc["AAPL", "last_fetched_at"].date() == DAY_A


def test_a_fixed_known_at_judges_coverage_as_known_then(lake_root: Path) -> None:
    lake = md.Lake(lake_root)
    args = (["AAPL", "MSFT"], "2026-04-01", "2026-09-30", FEATURES)
    with pytest.raises(md.NotInLakeError, match=r"MSFT \(news not synced by known_at=2026-10-03"):
        md.features.panel(*args, source=lake, known_at="2026-10-03")
    context = _quiet()
    try:
        got = md.features.panel(*args, source=lake, known_at="2026-10-03", errors="skip")
        now = md.features.panel(*args, source=lake, errors="skip")
        ts = md.features.training_set(*args, source=lake, known_at="2026-10-03", errors="skip")
    finally:
        context.__exit__(None, None, None)
    assert list(got.attrs["failed"]) == ["MSFT"]
    assert got.xs("MSFT", level="symbol").isna().all().all()
    aapl = got.xs("AAPL", level="symbol")
    # Windows reaching before June 1 were not synced on Oct 3: NA, not a count of 0.
    assert aapl.loc[:"2026-06-05", "news_count_7d"].isna().all()
    assert aapl.loc["2026-06-08":, "news_count_7d"].notna().all()
    assert aapl.loc[:"2026-05-29", "put_call_ratio_last"].isna().all()
    # Now the lake holds them: the same rows have values.
    assert now.xs("AAPL", level="symbol").loc[:"2026-06-05"].notna().all().all()
    pd.testing.assert_frame_equal(ts.X, got)
    assert ts.X.attrs["coverage"]["news_count_7d"]["uncovered"] > len(aapl.loc[:"2026-06-05"])


def test_known_at_row_judges_each_row_as_known_at_its_end(lake_root: Path) -> None:
    lake = md.Lake(lake_root)
    args = (["AAPL", "MSFT"], "2026-04-01", "2026-09-30", FEATURES)
    context = _quiet()
    try:
        got = md.features.panel(*args, source=lake, known_at="row")
        ts = md.features.training_set(*args, source=lake, known_at="row")
    finally:
        context.__exit__(None, None, None)
    assert got.attrs["failed"] == {}  # synced by the panel's last known time
    aapl = got.xs("AAPL", level="symbol")
    # Every row is dated before day B, when March to May were fetched: NA where the
    # window reaches them.
    assert aapl.loc[:"2026-06-05", "news_count_7d"].isna().all()
    assert aapl.loc["2026-06-08":, "news_count_7d"].notna().all()
    # MSFT was first synced on day B, after the dataset's first sync (day A): every row is
    # dated before the lake knew anything of it.
    assert got.xs("MSFT", level="symbol").isna().all().all()
    pd.testing.assert_frame_equal(ts.X, got)


@pytest.mark.parametrize("command", ["features", "training-set"])
def test_the_commands_judge_coverage_at_known_at(
    command: str, lake_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.parquet"
    argv = [command, "AAPL", "MSFT", "--start", "2026-04-01", "--end", "2026-09-30",
            "--features", ",".join(FEATURES), "--lake", str(lake_root),
            "--known-at", "2026-10-03", "--out", str(out)]  # fmt: skip
    assert md.cli.main(argv) == 1 and not out.exists()
    assert "MSFT" in capsys.readouterr().err
    assert md.cli.main([*argv, "--errors", "skip"]) == 0
    if command == "features":
        frame = pd.read_parquet(out).set_index(["date", "symbol"])
    else:
        frame = md.features.read_training_set(out).X
    assert frame.xs("MSFT", level="symbol")[FEATURES].isna().all().all()
    aapl = frame.xs("AAPL", level="symbol")["news_count_7d"]
    assert aapl.loc[:"2026-06-05"].isna().all() and aapl.loc["2026-06-08":].notna().all()
    assert np.isnan(aapl.loc[:"2026-06-05"].to_numpy(dtype="float64", na_value=np.nan)).all()


# --- labels over prices the lake never synced ---------------------------------------------------


def test_a_label_across_days_the_lake_never_synced_is_na(lake_root: Path) -> None:
    lake = md.Lake(lake_root)
    assert lake.coverage("put_call_ratio", "KO")["gaps"].iloc[0] == [
        (pd.Timestamp(KO_GAP[0]), pd.Timestamp(KO_GAP[1]))
    ]
    label = md.features.forward_return(5, lag=1)
    context = _quiet()
    try:
        ts = md.features.training_set(["KO"], "2026-04-01", "2026-07-31", "put_call_ratio_last",
                                      label=label, source=lake)  # fmt: skip
    finally:
        context.__exit__(None, None, None)
    y = ts.y.xs("KO", level="symbol")
    # Brute force: P(d) is the latest price on or before d, at most 7 days old, and the
    # days from it to d were all synced (one synced range holds both).
    prices = lake.read("put_call_ratio", "KO").set_index("date")["price"].astype("float64")
    spans = [(dt.date(2026, 3, 1), KO_GAP[0] - ONE), (KO_LATER, DAY_B)]

    def price(d: pd.Timestamp) -> float:
        for back in range(8):
            p = (d - pd.Timedelta(days=back)).date()
            if pd.Timestamp(p) in prices.index and not np.isnan(prices[pd.Timestamp(p)]):
                same = any(a <= p and d.date() <= b for a, b in spans)
                return float(prices[pd.Timestamp(p)]) if same else np.nan
        return np.nan

    calendar = pd.date_range("2026-04-01", periods=len(y) + 6, freq="B")
    want = [price(calendar[i + 6]) / price(calendar[i + 1]) - 1 for i in range(len(y))]
    np.testing.assert_allclose(y.to_numpy(), np.asarray(want), rtol=1e-12)
    # The week before the gap reads a price from before it, which the old rule took as the
    # price of a day in the gap: NA now.
    assert y.loc["2026-05-26":"2026-06-08"].isna().all()
    assert y.loc[:"2026-05-19"].notna().all() and y.loc["2026-06-09":"2026-07-24"].notna().all()


# --- the versions a set records are the versions it read ---------------------------------------


class SyncsMidway(md.Lake):
    """A lake whose first read of the label's prices is followed by a real sync (another
    writer, same lake): a sync between the set's reads and its record of the versions."""

    def __init__(self, root: Path, world: Sandbox) -> None:
        super().__init__(root)
        self.world, self.read_versions, self.synced = world, [], False

    def read(self, dataset: str, symbols: Any = None, **options: Any) -> pd.DataFrame:
        frame = super().read(dataset, symbols, **options)
        self.read_versions.append((dataset, options.get("version", self.version(dataset))))
        if dataset == "put_call_ratio" and not self.synced:
            self.synced = True
            with _client(self.world) as client:
                md.Lake(self.root, client=client).sync(
                    DATASETS, ["AAPL"], start="2025-06-01", progress=False
                )  # widened back: new rows and new coverage inside the set's dates
        return frame


def test_a_set_records_the_versions_it_read_with_a_sync_between(
    lake_root: Path, world: Sandbox, tmp_path: Path
) -> None:
    import shutil

    root = tmp_path / "lake"
    shutil.copytree(lake_root, root)  # this test syncs: the module's lake stays as it was
    lake = SyncsMidway(root, world)
    before = {d: lake.version(d) for d in DATASETS}
    context = _quiet()
    try:
        ts = md.features.training_set(["AAPL"], "2026-01-05", "2026-09-30", FEATURES,
                                      source=lake)  # fmt: skip
    finally:
        context.__exit__(None, None, None)
    assert lake.synced and {d: lake.version(d) for d in DATASETS} != before
    assert ts.info["versions"] == before
    assert {v for d, v in lake.read_versions if d in DATASETS} <= set(before.values())
    assert all(before[d] == v for d, v in lake.read_versions)
    # Rebuilt from the lake as it is now (after that sync), at the recorded versions and the
    # coverage known then: the same set.
    assert ts.verify(source=md.Lake(root))
    now = md.features.training_set(["AAPL"], "2026-01-05", "2026-09-30", FEATURES,
                                   source=md.Lake(root))  # fmt: skip
    assert now.info["content_hash"] != ts.info["content_hash"]
