"""Data files laid out in time slices (issue 27, item 4): a windowed dataset's rows are stored
in blocks of symbols, each block slice by slice of time, so that a read of a few months skips
the row groups of the other slices by their statistics. Every read equals the same read of a
lake written in the old layout (sorted by symbol and time only, as lakes of mdframes before
this layout hold them), synced with the same answers, and after a compaction; a short read
decodes fewer row groups than a long one (counted where Parquet decodes them)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

import mdframes as md
import mdframes.lake.table.commit as commit_module
from mdframes.lake.sync.plan import read_request
from mdframes.registry import REGISTRY
from mdframes.sandbox import Sandbox

from .conftest import KEY

SYMBOLS = ["AAPL", "KO", "GME", "MSFT", "NVDA", "AMD"]
DATASETS = ["sentiment", "congress_trades"]


# Test-sized layouts: the old one in row groups of 2,000 rows (3 symbols' whole history, as
# 16k rows held 22 symbols' of a real lake); sliced, blocks of as many rows in 8 slices.
LAYOUTS = {"old": (2000, 1), "sliced": (250, 8)}


@contextmanager
def _written(name: str) -> Iterator[None]:
    """The write settings of the layout ``name`` (old, sliced), while the context lasts."""
    rows, slices = LAYOUTS[name]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(commit_module, "ROW_GROUP", rows)
        patch.setattr(commit_module, "SLICES", slices)
        yield


def _synced(root: Path, world: Sandbox, name: str) -> md.Lake:
    client = md.Client(api_key=KEY, base_url=world.url, cache=False, progress=False)
    client.sandbox = world
    lake = md.Lake(root, client=client)
    with _written(name):
        assert lake.sync(DATASETS, SYMBOLS, progress=False).complete
    return lake


@pytest.fixture(scope="module")
def lakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, md.Lake]]:
    """The same answers synced three times into a lake of each layout (1 slice: the old
    one), then each copied and compacted."""
    import shutil

    base = tmp_path_factory.mktemp("layout")
    out: dict[str, md.Lake] = {}
    with Sandbox(today="2026-09-26") as world:
        for day in range(3):
            if day:
                world.advance(days=4)  # revisions stored as versions
            for name in LAYOUTS:
                out[name] = _synced(base / name, world, name)
        for name in LAYOUTS:
            shutil.copytree(base / name, base / f"{name}-compacted")
            with _written(name):
                md.Lake(base / f"{name}-compacted").compact()
            out[f"{name}-compacted"] = md.Lake(base / f"{name}-compacted")
    yield {k: md.Lake(v.root) for k, v in out.items()}


def _groups_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Row groups Parquet decodes from here on (a spy: the real read runs). The test-sized
    row groups are small enough for a file's reads to be kept decoded: not here, where
    what a read decodes is counted."""
    import mdframes.lake.table.scan as scan_module

    monkeypatch.setattr(scan_module, "_KEEP_ROWS", 0)
    counted: list[int] = []
    original = pq.ParquetFile.read_row_groups

    def counting(self: Any, row_groups: Any, *args: Any, **kwargs: Any) -> Any:
        counted.append(len(row_groups))
        return original(self, row_groups, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", counting)
    return counted


def _time_ranges(path: str, column: str) -> list[tuple[Any, Any]]:
    meta = pq.read_metadata(path)
    at = meta.schema.to_arrow_schema().names.index(column)
    return [
        (meta.row_group(i).column(at).statistics.min, meta.row_group(i).column(at).statistics.max)
        for i in range(meta.num_row_groups)
    ]


def test_a_sync_writes_row_groups_of_one_time_slice(lakes: dict[str, md.Lake]) -> None:
    # The first sync's file: sorted by symbol and date in the old layout, so its row groups
    # span whole histories; sliced, most span about an eighth of them.
    for name, narrow in (("old", False), ("sliced", True)):
        path = max(lakes[name].files("sentiment"), key=lambda p: pq.read_metadata(p).num_rows)
        ranges = _time_ranges(path, "date")
        whole = max(hi for _, hi in ranges) - min(lo for lo, _ in ranges)
        spans = sorted(hi - lo for lo, hi in ranges)
        assert (spans[len(spans) // 2] < whole / 3) is narrow, name
        symbols = pq.read_table(path, columns=["symbol"])["symbol"].to_pylist()
        assert (symbols == sorted(symbols)) is not narrow, name


@pytest.mark.parametrize("state", ["synced", "compacted"])
def test_every_read_equals_the_old_layouts(lakes: dict[str, md.Lake], state: str) -> None:
    suffix = "" if state == "synced" else "-compacted"
    old, new = lakes[f"old{suffix}"], lakes[f"sliced{suffix}"]
    # Between the first sync and the second (4 sandbox days apart).
    known = old.read("sentiment", history=True)["_fetched_at"].min() + dt.timedelta(days=2)
    reads: list[dict[str, Any]] = [
        {},
        {"symbols": ["MSFT", "AAPL", "KO"]},
        {"symbols": SYMBOLS, "start": "2026-07-01"},
        {"symbols": sorted(SYMBOLS), "start": "2025-11-15", "end": "2026-02-01"},
        {"symbols": "GME", "start": "2026-05-01"},
        {"start": "2026-08-01", "known_at": known},
        {"symbols": SYMBOLS, "history": True, "start": "2026-06-01"},
    ]
    for name in DATASETS:
        for kw in reads:
            args = dict(kw)
            symbols = args.pop("symbols", None)
            got = new.read(name, symbols, **args).drop(
                columns=["_fetched_at", "_sync_id"], errors="ignore"
            )
            want = old.read(name, symbols, **args).drop(
                columns=["_fetched_at", "_sync_id"], errors="ignore"
            )
            pd.testing.assert_frame_equal(got, want, obj=f"{name} {kw}")
            assert len(got), (name, kw)


@pytest.mark.parametrize("state", ["sliced", "sliced-compacted"])
def test_a_short_read_decodes_only_its_slices(
    lakes: dict[str, md.Lake], state: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = lakes[state]
    lake.read("sentiment", SYMBOLS)  # files opened; their footers read
    counted = _groups_read(monkeypatch)
    whole = lake.read("sentiment", SYMBOLS)
    long_groups = sum(counted)
    counted.clear()
    short = lake.read("sentiment", SYMBOLS, start="2026-08-01")
    short_groups = sum(counted)
    cut = whole[whole["date"] >= pd.Timestamp("2026-08-01")].reset_index(drop=True)
    pd.testing.assert_frame_equal(short, cut)
    # Two months of a 16-month history: the last slice of each block and what straddles it.
    assert 0 < short_groups < long_groups / 2, (short_groups, long_groups)


def test_an_old_layout_short_read_decodes_every_row_group(
    lakes: dict[str, md.Lake], monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the layout changes: sorted by symbol only, each row group spans whole histories.
    lake = lakes["old-compacted"]
    lake.read("sentiment", SYMBOLS)
    counted = _groups_read(monkeypatch)
    lake.read("sentiment", SYMBOLS)
    long_groups = sum(counted)
    counted.clear()
    lake.read("sentiment", SYMBOLS, start="2026-08-01")
    assert sum(counted) > long_groups / 2


def test_one_symbols_rows_come_in_order_without_a_sort(
    lakes: dict[str, md.Lake], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A symbol's slices follow each other in time: its rows need no sort; several symbols'
    # rows of a block read whole do (the slices hold each symbol once).
    import mdframes.lake.sync.modes as modes_module

    lake = lakes["sliced-compacted"]
    sorts: list[int] = []
    original = modes_module.WindowMode.sort
    monkeypatch.setattr(
        modes_module.WindowMode, "sort", lambda *a, **k: sorts.append(1) or original(*a, **k)
    )
    one = lake.read("sentiment", "KO")
    assert not sorts and one["date"].is_monotonic_increasing and len(one) > 300
    table = lake.tables.get(REGISTRY["sentiment"])
    snap = table.snapshot()
    assert table.in_stored_order(snap) and not table.groups_in_order(snap, None, None)
    several = lake.read("sentiment", ["AMD", "KO"])
    assert sorts and several["symbol"].tolist() == ["AMD"] * (len(several) - len(one)) + [
        "KO"
    ] * len(one)


def test_an_old_layout_lake_compacted_now_is_sliced_and_reads_the_same(
    lakes: dict[str, md.Lake], tmp_path: Path
) -> None:
    # An existing user's lake (written sorted by symbol only): its next compaction rewrites
    # it in time slices, and every read gives what it gave.
    import shutil

    shutil.copytree(lakes["old"].root, tmp_path / "lake")
    with _written("sliced"):
        md.Lake(tmp_path / "lake").compact()
    now = md.Lake(tmp_path / "lake")
    (path,) = now.files("sentiment")
    symbols = pq.read_table(path, columns=["symbol"])["symbol"].to_pylist()
    assert symbols != sorted(symbols)
    for name in DATASETS:
        for kw in ({}, {"start": "2026-07-01"}, {"history": True}):
            pd.testing.assert_frame_equal(
                now.read(name, SYMBOLS, **kw), lakes["old"].read(name, SYMBOLS, **kw)
            )


@pytest.mark.parametrize("layout", ["old", "sliced"])
def test_a_short_window_of_synced_files_equals_the_window_cut_from_a_compacted_read(
    lakes: dict[str, md.Lake], layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Three syncs' files overlap in symbols: a window whose row groups lie in one file comes
    # in stored order without a sort, one that meets a later sync's file (new dates and
    # revisions of the same symbols) is merged; both equal the same rows of one file.
    import mdframes.lake.sync.modes as modes_module

    lake, whole = lakes[layout], lakes[f"{layout}-compacted"]
    assert len(lake.files("sentiment")) > 1 and len(whole.files("sentiment")) == 1
    known = lake.read("sentiment", history=True)["_fetched_at"].min() + dt.timedelta(days=2)
    sorts: list[int] = []
    original = modes_module.WindowMode.sort
    monkeypatch.setattr(
        modes_module.WindowMode, "sort", lambda *a, **k: sorts.append(1) or original(*a, **k)
    )
    decoded: list[list[str]] = []  # the columns of each congress_trades row group read
    read_groups = pq.ParquetFile.read_row_groups

    def spied(self: Any, groups: Any, columns: Any = None, **kwargs: Any) -> Any:
        if "owner" in (columns or []):
            decoded.append(list(columns))
        return read_groups(self, groups, columns=columns, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spied)
    windows = [("2025-11-15", "2026-02-01"), ("2026-09-01", None), ("2026-06-20", "2026-09-28")]
    rows: list[int] = []
    sorted_: list[bool] = []
    for name in DATASETS:
        time = "date"
        for start, end in windows:
            for known_at in (None, known):
                for symbols in (sorted(SYMBOLS), ["NVDA", "AAPL", "KO"], ["KO"]):
                    before = len(sorts)
                    got = lake.read(name, symbols, start=start, end=end, known_at=known_at)
                    sorted_.append(len(sorts) > before)
                    cut = whole.read(name, symbols, known_at=known_at)
                    days = cut[time] >= pd.Timestamp(start)
                    if end is not None:
                        days &= cut[time] <= pd.Timestamp(end)
                    want = cut[days].reset_index(drop=True)
                    want.attrs = got.attrs
                    pd.testing.assert_frame_equal(
                        _plain_categories(got), _plain_categories(want), obj=f"{name} {start}"
                    )
                    rows.append(len(got))
                    # Some columns: a read that neither sorts nor chooses versions decodes
                    # no identity column it does not return.
                    some = ["date", "owner"] if name == "congress_trades" else ["score"]
                    part = lake.read(
                        name, symbols, start=start, end=end, known_at=known_at, columns=some
                    )
                    pd.testing.assert_frame_equal(
                        _plain_categories(part),
                        _plain_categories(want[[*some, "_fetched_at"]]),
                        obj=f"{name} {start} {some}",
                    )
    assert sum(n > 0 for n in rows) > len(rows) * 3 // 4, rows
    # Some windows were read without a sort, some with one.
    assert any(sorted_) and not all(sorted_), sorted_
    assert any("politician" not in c for c in decoded) and any("politician" in c for c in decoded)


def _plain_categories(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with categories as text: a read's categories are the values it holds."""
    kinds = frame.select_dtypes("category").columns
    return frame.astype(dict.fromkeys(kinds, object))


@pytest.mark.parametrize("state", ["sliced", "sliced-compacted", "old"])
def test_a_read_of_rows_public_from_a_date_skips_the_slices_filed_before(
    lakes: dict[str, md.Lake], state: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Congress trades: null disclosure dates (public 45 days after the trade) and revised
    # records (later versions in the later syncs' files, mixed in when compacted).
    from mdframes.pit import public_times

    lake = lakes[state]
    every = lake.read("congress_trades", SYMBOLS)
    public = public_times(every).dt.date
    assert every["disclosure_date"].isna().any()
    counted = _groups_read(monkeypatch)
    lake.read("congress_trades", SYMBOLS)
    long_groups = sum(counted)
    end = dt.date(2026, 9, 20)
    skipped = False
    for days in range(0, 200, 3):  # from every few days: each row group's edge is met
        since = dt.date(2026, 3, 1) + dt.timedelta(days=days)
        counted.clear()
        asked = read_request("congress_trades", SYMBOLS, end=end, public_from=since)
        got = lake.panels.read_published(asked)
        skipped |= sum(counted) < long_groups
        wanted = every[(public >= since) & (every["date"].dt.date <= end)].reset_index(drop=True)
        # The latest versions public from then, those public a little earlier too (a null
        # anchor's deadline is judged by its calendar days), in the read's order.
        kept = got[public_times(got).dt.date >= since].reset_index(drop=True)
        pd.testing.assert_frame_equal(kept, wanted, check_categorical=False, obj=str(since))
    assert skipped is (state != "old")  # the old layout's row groups span whole histories
    panel = md.features.panel(SYMBOLS, "2026-09-01", end, ["congress_net_buy_90d"], source=lake)
    whole = md.features.panel(
        SYMBOLS, "2026-09-01", end, ["congress_net_buy_90d"], source={"congress_trades": every}
    )
    pd.testing.assert_frame_equal(panel, whole)


def test_a_row_group_is_skipped_only_when_none_of_its_rows_can_be_public_from_the_date() -> None:
    from mdframes.lake.table.scan import Published

    bound = Published("disclosure_date", since=100, due_since=55)  # days; 45-day deadline
    assert bound.skips((10, 99, 0), (5, 99), 1)
    assert not bound.skips((10, 100, 0), (5, 99), 1)  # one row public that day
    # A later version: its record's earlier one, read alone, would stand as the latest.
    assert not bound.skips((10, 99, 0), (5, 99), 2) and not bound.skips((10, 99, 0), (5, 99), None)
    # Null anchors: public at their trade's deadline, by the trade dates' statistics.
    assert bound.skips((10, 99, 3), (5, 54), 1) and not bound.skips((10, 99, 3), (5, 55), 1)
    assert not Published("filing_date", since=100).skips((10, 99, 3), (5, 20), 1)
    assert not bound.skips((None, None, None), (5, 20), 1)  # no statistics


def test_a_row_group_public_only_after_a_panels_last_date_is_skipped() -> None:
    # A panel's read (``after``: the day after its last date) leaves out first versions all
    # public later (a later sync's new rows): they never enter it and supersede nothing.
    from mdframes.lake.table.scan import Published

    bound = Published("filing_date", since=100, after=300, due_after=300)
    assert bound.skips((300, 310, 0), (298, 310), 1)
    assert not bound.skips((299, 310, 0), (298, 310), 1)  # one row public by then
    assert not bound.skips((300, 310, 0), (298, 310), 2)  # a later version: it supersedes
    # Null anchors: public at their deadline, never before their event.
    assert bound.skips((300, 310, 2), (300, 310), 1)
    assert not bound.skips((300, 310, 2), (299, 310), 1)
    assert not Published("filing_date", since=100, after=300).skips((300, 310, 2), (300, 310), 1)
    assert not bound.skips((None, None, None), (300, 310), 1)  # no statistics


def test_a_category_column_reads_as_its_vocabulary_values_outside_it_appended() -> None:
    import pyarrow as pa

    from mdframes.lake.table.frames import to_frame
    from mdframes.lake.table.layout import Column, DtypeRecord

    manifest = DtypeRecord(
        "x", "window", ["symbol"], None, [Column("kind", "category", ["Purchase", "Sale"])]
    )
    values = ["Sale", None, "Purchase", "Sale"]
    for coded in (False, True):  # text as read, or still as its dictionary
        column = pa.array(values).dictionary_encode() if coded else pa.array(values)
        frame = to_frame(pa.table({"kind": column}), manifest)
        expected = pd.Categorical(values, categories=["Purchase", "Sale"])
        pd.testing.assert_series_equal(frame["kind"], pd.Series(expected, name="kind"))
    frame = to_frame(pa.table({"kind": pa.array(["Sale", "Gift", "Award", None])}), manifest)
    assert list(frame["kind"].cat.categories) == ["Purchase", "Sale", "Award", "Gift"]
    assert frame["kind"].tolist()[:3] == ["Sale", "Gift", "Award"]
    assert pd.isna(frame["kind"].iloc[3])
    empty = to_frame(pa.table({"kind": pa.array([], pa.string())}), manifest)
    assert list(empty["kind"].cat.categories) == ["Purchase", "Sale"]
