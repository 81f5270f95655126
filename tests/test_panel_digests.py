"""A finished ``write_panel`` folder proves itself (CONTRACT §11.2): ``_SUCCESS`` records each
part's SHA-256 and row count, and ``read_panel`` raises ``DataValidationError`` naming the file
when a part is missing, swapped, replaced or damaged, or the marker itself is garbled; never a
raw ``FileNotFoundError``, ``ArrowInvalid``, ``KeyError`` or ``JSONDecodeError``.

Every folder here is a real one: the panel of :mod:`tests.panel_write_worker` (news made up
from a fixed seed, no server needed) written by ``write_panel``, then changed by hand."""

from __future__ import annotations

import json
import re
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

import mdframes as md

from .panel_write_worker import ARGS, SYMBOLS, frames

MINE = (SYMBOLS[:4], *ARGS[1:])  # four symbols, one part each: all parts of one row count
OTHER = (SYMBOLS[4:8], *ARGS[1:])  # the same dates for other symbols: parts of that count too


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, pd.DataFrame]:
    """The panel written once (and another of the same shape), and the panel itself."""
    root = tmp_path_factory.mktemp("panels")
    md.features.write_panel(root / "mine", *MINE, source=frames(), chunk=1)
    md.features.write_panel(root / "other", *OTHER, source=frames(), chunk=1)
    return root / "mine", root / "other", md.features.panel(*MINE, source=frames())


@pytest.fixture
def folder(written: tuple[Path, Path, pd.DataFrame], tmp_path: Path) -> Path:
    """A fresh copy of the written folder, for a test to change."""
    return Path(shutil.copytree(written[0], tmp_path / "panel"))


def _marker(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    meta = json.loads((folder / "_SUCCESS").read_text())
    change(meta)
    (folder / "_SUCCESS").write_text(json.dumps(meta))


def _refused(folder: Path, *names: str) -> str:
    """The DataValidationError read_panel raises, checked to name ``folder/name``."""
    with pytest.raises(md.DataValidationError) as caught:
        md.features.read_panel(folder)
    message = str(caught.value)
    for name in names:
        assert f"{folder}/{name}" in message
    return message


def test_an_intact_folder_reads_back_equal_to_the_panel_written(
    written: tuple[Path, Path, pd.DataFrame], folder: Path
) -> None:
    want = written[2]
    parts = json.loads((folder / "_SUCCESS").read_text())["parts"]
    assert [p["name"] for p in parts] == [f"part-{k:05d}.parquet" for k in range(4)]
    for part in parts:
        assert re.fullmatch(r"[0-9a-f]{64}", part["sha256"])
        assert part["rows"] == pq.read_metadata(folder / part["name"]).num_rows
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a checked folder reads without any warning
        got = md.features.read_panel(folder)
    pd.testing.assert_frame_equal(got, want)
    assert got.attrs == want.attrs


def test_two_parts_swapped_are_named(folder: Path) -> None:
    first, second = folder / "part-00000.parquet", folder / "part-00001.parquet"
    first.rename(folder / "swap")
    second.rename(first)
    (folder / "swap").rename(second)
    message = _refused(folder, "part-00000.parquet")
    assert "holds the bytes of part-00001.parquet (parts swapped or copied)" in message


def test_a_part_replaced_by_another_of_the_same_row_count_is_named(
    written: tuple[Path, Path, pd.DataFrame], folder: Path
) -> None:
    stranger = written[1] / "part-00000.parquet"
    part = folder / "part-00002.parquet"
    assert pq.read_metadata(stranger).num_rows == pq.read_metadata(part).num_rows
    shutil.copyfile(stranger, part)
    message = _refused(folder, "part-00002.parquet")
    assert "is not the file write_panel wrote" in message


def test_a_missing_part_is_named(folder: Path) -> None:
    (folder / "part-00003.parquet").unlink()
    assert "is missing (listed in _SUCCESS)" in _refused(folder, "part-00003.parquet")


def test_a_truncated_part_is_named(folder: Path) -> None:
    part = folder / "part-00001.parquet"
    part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
    assert "truncated" in _refused(folder, "part-00001.parquet")


def test_a_part_with_garbled_bytes_is_named(folder: Path) -> None:
    part = folder / "part-00002.parquet"
    data = bytearray(part.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 16] = bytes(b ^ 0xFF for b in data[middle : middle + 16])
    part.write_bytes(bytes(data))  # the same size, other bytes
    assert "damaged" in _refused(folder, "part-00002.parquet")


def test_a_garbled_marker_is_named(folder: Path) -> None:
    marker = folder / "_SUCCESS"
    marker.write_bytes(marker.read_bytes()[:-40] + b"\xff\x00garbage")
    assert "is not readable JSON" in _refused(folder, "_SUCCESS")


@pytest.mark.parametrize(
    "change",
    [
        lambda meta: meta.pop("parts"),
        lambda meta: meta.pop("symbols"),
        lambda meta: meta["parts"][1].pop("rows"),
        lambda meta: meta["parts"][1].pop("name"),
        lambda meta: meta["parts"][2].pop("sha256"),  # a digest for some parts only
        lambda meta: meta["parts"][0].update(name="../elsewhere.parquet"),
    ],
    ids=["parts", "symbols", "part-rows", "part-name", "one-digest", "foreign-name"],
)
def test_a_marker_missing_keys_is_named(
    folder: Path, change: Callable[[dict[str, Any]], None]
) -> None:
    _marker(folder, change)
    assert "lacks or garbles" in _refused(folder, "_SUCCESS")


def test_a_part_not_listed_is_never_read(
    written: tuple[Path, Path, pd.DataFrame], folder: Path
) -> None:
    shutil.copyfile(written[1] / "part-00000.parquet", folder / "part-00004.parquet")
    pd.testing.assert_frame_equal(md.features.read_panel(folder), written[2])


def _strip_digests(meta: dict[str, Any]) -> None:
    for part in meta["parts"]:
        del part["sha256"]


def test_a_folder_from_before_the_digests_reads_with_a_warning(
    written: tuple[Path, Path, pd.DataFrame], folder: Path
) -> None:
    _marker(folder, _strip_digests)  # as the previous mdframes wrote it
    with pytest.warns(md.DataQualityWarning, match="older than part digests") as caught:
        got = md.features.read_panel(folder)
    assert len(caught) == 1
    pd.testing.assert_frame_equal(got, written[2])
    assert got.attrs == written[2].attrs


def test_a_folder_from_before_the_digests_still_names_an_unreadable_part(folder: Path) -> None:
    _marker(folder, _strip_digests)
    part = folder / "part-00001.parquet"
    part.write_bytes(part.read_bytes()[:100])
    with pytest.warns(md.DataQualityWarning):
        message = _refused(folder, "part-00001.parquet")
    assert "is not a readable Parquet file" in message
