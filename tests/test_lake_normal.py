"""The lake in its normal state (issue 27): many syncs, revisions in the files, a compaction
followed by more syncs. Every read of such a lake equals the same read of the same lake
compacted into as few files as possible, row for row, history and knowledge time included."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest

import mdframes as md
from mdframes.sandbox import Sandbox

from .conftest import KEY

# Synthetic symbols: enough that the sandbox revises some record of every dataset below
# between two syncs three days apart.
SYMBOLS = [f"N{k:02d}" for k in range(40)]
REVISED = ["sentiment", "government_contracts", "congress_trades"]


@pytest.fixture
def world() -> Iterator[Sandbox]:
    with Sandbox(extra_symbols=SYMBOLS) as server:
        yield server


def _lake(root: Path, server: Sandbox) -> md.Lake:
    client = md.Client(api_key=KEY, base_url=server.url, cache=False, backoff_factor=0.01)
    client.sandbox = server  # the lake's clock follows the sandbox's day
    return md.Lake(root, client=client)


def _sync(lake: md.Lake, world: Sandbox, days: int) -> dt.datetime:
    world.advance(days=days)
    report = lake.sync(REVISED, SYMBOLS, progress=False)
    assert report.complete, str(report)
    return lake.clock()


def _compacted_copy(lake: md.Lake, where: Path) -> md.Lake:
    shutil.copytree(lake.root, where)
    copy = md.Lake(where)
    copy.compact()
    for name in REVISED:
        assert len(copy.files(name)) == 1
    return copy


def _reads(lake: md.Lake, name: str, moments: list[dt.datetime]) -> dict[str, pd.DataFrame]:
    """The reads a research team makes, by name."""
    some = [SYMBOLS[17], SYMBOLS[3], SYMBOLS[29]]  # not in stored order
    out: dict[str, Any] = {
        "all": lake.read(name),
        "history": lake.read(name, history=True),
        "one": lake.read(name, SYMBOLS[5]),
        "some": lake.read(name, some),
        "some history": lake.read(name, some, history=True),
        "window": lake.read(name, SYMBOLS[::3], start="2026-06-01", end="2026-11-25"),
    }
    for k, moment in enumerate(moments):
        out[f"known_at {k}"] = lake.read(name, known_at=moment)
        out[f"known_at {k} some"] = lake.read(name, some, known_at=moment)
    return out


def _assert_same_reads(got: md.Lake, want: md.Lake, moments: list[dt.datetime]) -> None:
    for name in REVISED:
        expected = _reads(want, name, moments)
        for label, frame in _reads(got, name, moments).items():
            assert len(expected[label]) > 0, (name, label)
            pd.testing.assert_frame_equal(frame, expected[label], obj=f"{name}: {label}")


def _later_versions_per_file(lake: md.Lake, name: str) -> list[int]:
    return [
        pads.dataset(f, format="parquet").count_rows(filter=pc.field("_version") > 1)
        for f in lake.files(name)
    ]


def test_reads_after_many_syncs_and_a_compaction_equal_the_compacted_lake(
    tmp_path: Path, world: Sandbox
) -> None:
    lake = _lake(tmp_path / "lake", world)
    moments = [_sync(lake, world, 0)]
    moments += [_sync(lake, world, 3) for _ in range(4)]
    for name in REVISED:
        assert len(lake.files(name)) >= 5
        assert sum(_later_versions_per_file(lake, name)) > 0  # revisions were stored
    _assert_same_reads(lake, _compacted_copy(lake, tmp_path / "once"), moments)

    lake.compact()
    moments += [_sync(lake, world, 3) for _ in range(2)]
    for name in REVISED:
        # The compacted file and each later sync's files hold some record's later version.
        per_file = _later_versions_per_file(lake, name)
        assert len(per_file) >= 3 and all(n > 0 for n in per_file), (name, per_file)
    _assert_same_reads(lake, _compacted_copy(lake, tmp_path / "twice"), moments)


def test_a_sync_compacts_many_small_files_and_reads_stay_the_same(
    tmp_path: Path, world: Sandbox
) -> None:
    from mdframes.lake.maintenance import AUTO_COMPACT_FILES

    lake = _lake(tmp_path / "lake", world)
    some = SYMBOLS[:6]
    counts, moments = [], []
    for _ in range(AUTO_COMPACT_FILES + 3):
        assert lake.sync("sentiment", some, progress=False).complete
        moments.append(lake.clock())
        counts.append(len(lake.files("sentiment")))
        world.advance(days=1)
    # One file per sync until a sync makes more than AUTO_COMPACT_FILES: it compacts them.
    first = counts.index(1, 1)
    assert first == AUTO_COMPACT_FILES and counts[:first] == list(range(1, first + 1))
    assert counts[first:] == [1, 2, 3]
    want = _compacted_copy_of(lake, tmp_path / "copy", "sentiment")
    for label, frame in _sentiment_reads(lake, some, moments).items():
        pd.testing.assert_frame_equal(frame, _sentiment_reads(want, some, moments)[label])


def _compacted_copy_of(lake: md.Lake, where: Path, name: str) -> md.Lake:
    shutil.copytree(lake.root, where)
    copy = md.Lake(where)
    copy.compact(name)
    assert len(copy.files(name)) == 1
    return copy


def _sentiment_reads(lake: md.Lake, some: list[str], moments: list[Any]) -> dict[str, Any]:
    return {
        "all": lake.read("sentiment"),
        "history": lake.read("sentiment", history=True),
        "one": lake.read("sentiment", some[2]),
        **{f"known_at {k}": lake.read("sentiment", known_at=m) for k, m in enumerate(moments)},
    }


def test_files_read_side_by_side_come_in_order_and_the_first_failure_is_raised() -> None:
    from mdframes.lake.table.scan import _each

    def read(i: int) -> int:
        if i in (3, 5):
            raise OSError(f"file {i} unreadable")
        return 10 * i

    # waits=True: threads that wait on an object store, whatever this machine's cores.
    assert _each(lambda i: 10 * i, list(range(9)), waits=True, least=2) == list(range(0, 90, 10))
    with pytest.raises(OSError, match="file 3"):  # as the files are listed, not as they fail
        _each(read, list(range(9)), waits=True, least=2)
    assert _each(lambda i: -i, [4], waits=True, least=2) == [-4]


def test_a_symbols_rows_sliced_out_of_its_row_groups_equal_a_filter() -> None:
    import numpy as np
    import pyarrow as pa

    from mdframes.lake.table.scan import _kept

    groups = [pa.table({"symbol": ["A", "B", "B", "C"], "x": [1, 2, 3, 4]})] * 3
    table = pa.concat_tables(groups)  # three chunks, one symbol's rows together in each
    for mask in (
        table["symbol"].to_numpy() == "B",  # one run a chunk: sliced
        np.arange(12) % 2 == 0,  # many runs: filtered
        np.zeros(12, bool),
        np.ones(12, bool),
    ):
        assert _kept(table, mask).equals(table.filter(pa.array(mask)))
