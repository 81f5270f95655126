"""A lake written by mdframes 0.2 (format 1: Parquet files beside a JSON manifest, no Delta log)
is converted to Delta tables with every version and ``_fetched_at`` intact; until then reads
say to run ``mdframes lake upgrade``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import mdframes as md

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "lake-format1"
FACTS = FIXTURE.with_suffix(".json")


@pytest.fixture
def old_lake(tmp_path: Path) -> Path:
    root = tmp_path / "lake"
    shutil.copytree(FIXTURE, root)
    return root


def _check_against_facts(lake: md.Lake) -> None:
    facts = json.loads(FACTS.read_text())
    for name, fact in facts.items():
        history = lake.read(name, history=True)
        assert list(history.columns) == fact["columns"], name
        assert len(history) == fact["rows_history"], name
        assert len(lake.read(name)) == fact["rows_latest"], name
        stamps = sorted({str(t) for t in history["_fetched_at"]})
        assert stamps == fact["fetched_at"], name
        assert sorted(set(history["_sync_id"])) == fact["sync_ids"], name
        assert sorted(set(history["symbol"])) == fact["symbols"], name  # "0700" stays text
        for column, dtype in fact["dtypes"].items():
            if column != "_version":
                assert str(history[column].dtype) == dtype, (name, column)
        ids = fact["record_id_columns"]
        for record in fact["some_record_ids"]:
            match = pd.Series(True, index=history.index)
            for column in ids:
                value = record[column]
                got = history[column]
                if value is None or value != value:  # NaN in the facts: a missing value
                    match &= got.isna()
                    continue
                if pd.api.types.is_datetime64_any_dtype(got.dtype):
                    got = got.dt.strftime("%Y-%m-%d")
                match &= got.astype(str) == str(value)
            assert match.any(), (name, record)


def test_reads_of_an_unconverted_lake_say_to_upgrade(old_lake: Path) -> None:
    lake = md.Lake(old_lake)
    with pytest.raises(md.LakeDamagedError, match="mdframes lake upgrade"):
        lake.read("insider_trading")
    checked = lake.check()
    assert len(checked) == 6 and not checked["ok"].any()
    assert "upgrade" in checked["problems"][0][0]


def test_upgrade_keeps_every_version_and_fetched_at(old_lake: Path) -> None:
    lake = md.Lake(old_lake)
    converted = lake.upgrade()
    assert sorted(converted) == sorted(json.loads(FACTS.read_text()))
    for folder in old_lake.iterdir():
        if folder.is_dir():
            assert (folder / "_delta_log").is_dir() and not (folder / "_manifest.json").exists()
            assert {p.name for p in folder.glob("part-0000*-2026*.parquet")} == set()
    _check_against_facts(lake)
    assert lake.check()["ok"].all()
    assert lake.upgrade() == []  # once


def test_compaction_converts_too(old_lake: Path) -> None:
    lake = md.Lake(old_lake)
    counts = lake.compact()
    assert set(counts) == set(json.loads(FACTS.read_text()))
    _check_against_facts(lake)


def test_the_first_sync_converts_and_keeps_the_history(old_lake: Path) -> None:
    from mdframes.sandbox import Sandbox

    from .conftest import KEY

    facts = json.loads(FACTS.read_text())
    with Sandbox(extra_symbols=["0700"]) as server:
        with md.Client(api_key=KEY, base_url=server.url, cache=False) as client:
            lake = md.Lake(old_lake, client=client)
            report = lake.sync("sentiment", ["AAPL"], progress=False)
    assert report.complete
    history = lake.read("insider_trading", history=True)
    assert len(history) == facts["insider_trading"]["rows_history"]
    old = lake.read("sentiment", history=True)
    assert len(old) > facts["sentiment"]["rows_history"]  # the old rows and the new sync's
    kept = old[old["_sync_id"].isin(facts["sentiment"]["sync_ids"])]
    assert len(kept) == facts["sentiment"]["rows_history"]
