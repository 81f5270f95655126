"""Coverage as it stood (CONTRACT §10.2, §11.2, revised 2026-12-07): a lake synced on three
simulated days, copied after each of the first two. ``coverage(known_at=T)`` and every panel
known at T answer as the copy taken at T does, and rows dated before a later sync are the
same in every ``known_at`` form, NA-ness included, after later syncs, a backfill, a compaction
with vacuum and a repair."""

from __future__ import annotations

import datetime as dt
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mdframes as md
from mdframes.lake.ledger import fold
from mdframes.sandbox import Sandbox

from .conftest import KEY

DAY_A = dt.date(2026, 10, 1)
DAY_B = DAY_A + dt.timedelta(days=3)
DAY_C = DAY_B + dt.timedelta(days=4)
DATASETS = ["news", "put_call_ratio"]
FEATURES = ["news_count_7d", "put_call_ratio_last"]
SYMBOLS = ["AAPL", "MSFT", "GME"]
SNAPSHOTS = ["screener/put-call-ratio", "screener/insider-trading"]  # cross sections, one a day
COMPARED = ["dataset", "symbol", "status", "first", "last", "gaps", "first_fetched_at",
            "last_fetched_at", "rows"]  # fmt: skip


@pytest.fixture(scope="module")
def lakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """``lake``: day A AAPL and MSFT from June; day B the same and GME for the first time;
    day C all of them, AAPL widened back to March, then compacted (with vacuum) and
    repaired. ``A`` and ``B``: copies of the lake taken after those days' syncs."""
    base = tmp_path_factory.mktemp("known")
    root = base / "lake"
    with Sandbox(today=DAY_A) as world:
        client = md.Client(api_key=KEY, base_url=world.url, cache=False, progress=False)
        client.sandbox = world  # the lake's clock: the sandbox's day
        with client:
            lake = md.Lake(root, client=client)
            lake.sync(DATASETS, ["AAPL", "MSFT"], start="2026-06-01", progress=False)
            lake.sync(SNAPSHOTS, progress=False)
            shutil.copytree(root, base / "A")
            world.advance(days=(DAY_B - DAY_A).days)
            lake.sync(DATASETS, SYMBOLS, start="2026-06-01", progress=False)
            lake.sync(SNAPSHOTS[0], progress=False)  # the other snapshot: first synced on C
            shutil.copytree(root, base / "B")
            world.advance(days=(DAY_C - DAY_B).days)
            lake.sync(DATASETS, SYMBOLS, progress=False)
            lake.sync(DATASETS, ["AAPL"], start="2026-03-01", progress=False)
            lake.sync([*SNAPSHOTS, "tickers"], progress=False)
            ledger = sorted(root.glob("*/_ledger/*.json"))
            lake.compact(retain_hours=0)
            lake.repair()
            assert sorted(root.glob("*/_ledger/*.json")) == ledger  # vacuum kept every file
    yield {"lake": root, "A": base / "A", "B": base / "B"}


def _end(day: dt.date) -> str:
    return day.isoformat()  # a date alone: the end of that day


def _panel(source: Any, end: dt.date, **options: Any) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", md.DataQualityWarning)
        warnings.simplefilter("ignore", md.SkippedSymbolsWarning)
        return md.features.panel(SYMBOLS, "2026-05-01", end, FEATURES, source=source,
                                 freq="D", **options)  # fmt: skip


@pytest.mark.parametrize("copy, day", [("A", DAY_A), ("B", DAY_B)])
def test_coverage_known_at_is_the_copy_taken_then(
    lakes: dict[str, Path], copy: str, day: dt.date
) -> None:
    lake, then = md.Lake(lakes["lake"]), md.Lake(lakes[copy])
    for symbols in (None, SYMBOLS):
        got = lake.coverage(DATASETS, symbols, known_at=_end(day))[COMPARED]
        want = then.coverage(DATASETS, symbols)[COMPARED]
        pd.testing.assert_frame_equal(got, want)
    # Cross sections, one taken each day (one first taken later), and the whole lake's list.
    got = lake.coverage(SNAPSHOTS, known_at=_end(day))[COMPARED]
    pd.testing.assert_frame_equal(got, then.coverage(SNAPSHOTS)[COMPARED])
    got = lake.coverage(known_at=_end(day))[COMPARED]
    pd.testing.assert_frame_equal(got, then.coverage()[COMPARED])
    # The lake now reaches further: the answer for then did not move with it.
    now = lake.coverage("news", "AAPL").iloc[0]
    assert now["first"] == pd.Timestamp("2026-03-01") and now["last"] == pd.Timestamp(DAY_C)


@pytest.mark.parametrize("copy, day", [("A", DAY_A), ("B", DAY_B)])
def test_a_panel_known_at_a_time_is_the_copys(
    lakes: dict[str, Path], copy: str, day: dt.date
) -> None:
    lake, then = md.Lake(lakes["lake"]), md.Lake(lakes[copy])
    got = _panel(lake, day, known_at=_end(day), errors="skip")
    want = _panel(then, day, known_at=_end(day), errors="skip")
    pd.testing.assert_frame_equal(got, want)
    assert got.attrs["failed"].keys() == want.attrs["failed"].keys()


@pytest.mark.parametrize("copy, day", [("A", DAY_A), ("B", DAY_B)])
def test_rows_known_at_their_own_date_do_not_move_with_later_syncs(
    lakes: dict[str, Path], copy: str, day: dt.date
) -> None:
    lake, then = md.Lake(lakes["lake"]), md.Lake(lakes[copy])
    got = _panel(lake, day, known_at="row", errors="skip")
    want = _panel(then, day, known_at="row", errors="skip")
    pd.testing.assert_frame_equal(got, want)
    # Between A and B nothing was synced: a row dated then reaches past what A fetched.
    if copy == "B":
        gap = got.xs("AAPL", level="symbol").loc[
            str(DAY_A + dt.timedelta(days=1)) : str(DAY_B - dt.timedelta(days=1))
        ]
        assert len(gap) and gap.isna().all().all()


def test_a_known_at_before_a_symbols_first_sync_never_counts_zero(lakes: dict[str, Path]) -> None:
    lake = md.Lake(lakes["lake"])
    with pytest.raises(md.NotInLakeError, match=r"GME \(news not synced by known_at="):
        _panel(lake, DAY_A, known_at=_end(DAY_A))
    got = _panel(lake, DAY_A, known_at=_end(DAY_A), errors="skip")
    assert list(got.attrs["failed"]) == ["GME"]
    assert got.xs("GME", level="symbol").isna().all().all()
    assert got.xs("AAPL", level="symbol").loc["2026-06-08":, "news_count_7d"].notna().all()


def test_a_lake_synced_before_the_ledger_keeps_its_answers_through_the_next_sync(
    tmp_path: Path,
) -> None:
    """A lake as mdframes 0.4 left it (no ``_ledger/``): its coverage at earlier times is
    made from the state, and the sync that writes its first ledger file changes none of
    those answers, nor rows known at their own date before it."""
    root = tmp_path / "lake"
    with Sandbox(today=DAY_A) as world:
        client = md.Client(api_key=KEY, base_url=world.url, cache=False, progress=False)
        client.sandbox = world
        with client:
            lake = md.Lake(root, client=client)
            lake.sync(DATASETS, ["AAPL", "MSFT"], start="2026-06-01", progress=False)
            world.advance(days=(DAY_B - DAY_A).days)
            lake.sync(DATASETS, SYMBOLS, start="2026-06-01", progress=False)
            for folder in root.glob("*/_ledger"):
                shutil.rmtree(folder)
            reader = md.Lake(root)
            times = [_end(DAY_A), _end(DAY_B), "2026-10-02T12:00"]
            before = [reader.coverage(DATASETS, SYMBOLS, known_at=t) for t in times]
            rows = _panel(reader, DAY_B, known_at="row", errors="skip")
            # Made from the state: windows up to each first fetch's date from it.
            aapl = before[0].set_index(["dataset", "symbol"]).loc[("news", "AAPL")]
            assert aapl["status"] == "synced" and aapl["last"] == pd.Timestamp(DAY_A)
            world.advance(days=(DAY_C - DAY_B).days)
            lake.sync(DATASETS, SYMBOLS, progress=False)
            assert list(root.glob("*/_ledger/000000-seed.json"))
            reader = md.Lake(root)
            for t, frame in zip(times, before, strict=True):
                pd.testing.assert_frame_equal(reader.coverage(DATASETS, SYMBOLS, known_at=t), frame)
            pd.testing.assert_frame_equal(
                _panel(reader, DAY_B, known_at="row", errors="skip"), rows
            )


@st.composite
def _events(draw: Any) -> list[tuple[int, int, int, str]]:
    """(fetch day, first, last, unit): windows of two units fetched on days 0..9."""
    out = []
    for _ in range(draw(st.integers(1, 8))):
        day = draw(st.integers(0, 9))
        a = draw(st.integers(-5, 12))
        out.append((day, a, a + draw(st.integers(0, 6)), draw(st.sampled_from(["u1", "u2"]))))
    return sorted(out)


@given(_events())
@settings(max_examples=200, deadline=None)
def test_the_fold_is_the_union_of_the_windows_fetched_by_then(
    events: list[tuple[int, int, int, str]],
) -> None:
    """Brute force: the days covered as known at the end of day D are those of the windows
    fetched by then (by the day of the first fetch, for an earlier D)."""
    base = dt.date(2026, 1, 1)

    def iso(day: int) -> str:
        return (base + dt.timedelta(days=day)).isoformat()

    entries = [{"sync": f"{i + 1:06d}-x", "events": [[f"{iso(d)}T12:00:00+00:00", iso(a), iso(b), [u]]],
                "rows": {}, "failed": {}} for i, (d, a, b, u) in enumerate(events)]  # fmt: skip
    whole = fold(entries, None)
    first = events[0][0]
    offset = base.toordinal() - dt.date(1970, 1, 1).toordinal()
    for unit in ("u1", "u2"):
        mine = [e for e in events if e[3] == unit]
        for day in range(-1, 11):
            upto = dt.datetime.combine(base + dt.timedelta(days=day), dt.time(23),
                                       tzinfo=dt.timezone.utc)  # fmt: skip
            then = {x for d, a, b, _ in mine if d <= day for x in range(a, b + 1)}
            folded = fold(entries, upto).units.get(unit, {"windows": []})["windows"]
            got = {
                x
                for a, b in folded
                for x in range(
                    dt.date.fromisoformat(a).toordinal() - base.toordinal(),
                    dt.date.fromisoformat(b).toordinal() - base.toordinal() + 1,
                )
            }
            assert got == then
            # The row dated ``day``, judged by every fetch's fills.
            seen = {x for d, a, b, _ in mine if d <= max(day, first) for x in range(a, b + 1)}
            fills = whole.fills.get(unit, ())
            row = {x for x in {y for _, a, b, _ in mine for y in range(a, b + 1)}
                   if not any(lo - offset <= x <= hi - offset and day + offset < k
                              for lo, hi, k in fills)}  # fmt: skip
            assert row == seen, (day, unit)
