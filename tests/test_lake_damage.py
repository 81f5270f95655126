"""Damage and foreign writes on a real lake on disk (CONTRACT §10.1 "Foreign writes and
damage"): every case of the campaign is named by check(), refused by reads or syncs where
going on would lose or double data, and repaired to a lake that syncs and reads as one that
never met the damage. The same scenarios run on S3 in tests/test_lake_damage_s3.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import mdframes as md
from mdframes.sandbox import Sandbox

from .conftest import KEY
from .lake_damage import NAME, SCENARIOS, SYMBOLS, Site, local_site


@pytest.fixture(scope="module")
def world() -> Iterator[Sandbox]:
    with Sandbox() as server:
        yield server


@pytest.fixture
def site(world: Sandbox, tmp_path: Path) -> Iterator[Site]:
    with md.Client(api_key=KEY, base_url=world.url, cache=False) as client:
        client.sandbox = world
        yield local_site(tmp_path / "lake", client, tmp_path / "fresh")


@pytest.mark.parametrize("case", list(SCENARIOS))
def test_damage_is_named_refused_and_repaired(site: Site, case: str) -> None:
    SCENARIOS[case](site)


def test_tables_are_append_only_and_older_tables_become_so_at_their_next_sync(
    site: Site,
) -> None:
    from deltalake import DeltaTable

    from mdframes.lake.table.commit import APP_ID

    lake = site.lake
    assert lake.sync(NAME, SYMBOLS[:1], progress=False).complete
    table = DeltaTable(lake.path(NAME))
    assert table.metadata().configuration["delta.appendOnly"] == "true"
    # A table of mdframes 0.3 (no such property): its commits carry the lake's transaction.
    import deltalake

    props = deltalake.CommitProperties(
        app_transactions=[deltalake.Transaction(APP_ID, table.version() + 1)]
    )
    table.alter.set_table_properties({"delta.appendOnly": "false"}, commit_properties=props)
    assert lake.check()["ok"].all()
    assert lake.sync(NAME, SYMBOLS, progress=False).complete
    assert DeltaTable(lake.path(NAME)).metadata().configuration["delta.appendOnly"] == "true"
    assert lake.check()["ok"].all()


def test_each_commit_records_its_version_in_the_state_and_its_transaction(site: Site) -> None:
    import json

    from deltalake import DeltaTable

    from mdframes.lake.table.commit import APP_ID

    lake = site.lake
    for symbol in SYMBOLS:
        assert lake.sync(NAME, symbol, progress=False).complete
        table = DeltaTable(lake.path(NAME))
        state = json.loads((Path(lake.path(NAME)) / "_state.json").read_text())
        assert state["committed"] == state["reviewed"] == table.version()
        assert table.transaction_version(APP_ID) == table.version()
    before = lake.read(NAME, history=True)
    lake.compact()
    table = DeltaTable(lake.path(NAME))
    assert table.history(1)[0]["operationParameters"]["mode"] == "Append"  # no data change
    state = json.loads((Path(lake.path(NAME)) / "_state.json").read_text())
    assert state["committed"] == table.version()
    import pandas as pd

    pd.testing.assert_frame_equal(md.Lake(lake.root).read(NAME, history=True), before)
    assert lake.check()["ok"].all()


def test_a_vacuum_that_deletes_files_is_no_foreign_write(site: Site) -> None:
    """delta-rs logs VACUUM START and VACUUM END commits when a vacuum really deletes files
    (retain_hours=0 here; any compaction of a lake older than its retention): they change no
    version's data, so check() stays ok and later syncs and compactions go on."""
    from deltalake import DeltaTable

    lake = site.lake
    assert lake.sync(NAME, SYMBOLS[:1], progress=False).complete
    assert lake.sync(NAME, SYMBOLS, progress=False).complete
    lake.compact(retain_hours=0)
    operations = [c["operation"] for c in DeltaTable(lake.path(NAME)).history()]
    assert "VACUUM END" in operations  # the state this test is about
    assert lake.check()["ok"].all(), lake.check()["problems"].tolist()
    before = lake.read(NAME, history=True)
    assert lake.sync(NAME, SYMBOLS, progress=False).complete
    lake.compact(retain_hours=0)
    assert lake.check()["ok"].all(), lake.check()["problems"].tolist()
    assert len(lake.read(NAME, history=True)) >= len(before)


def test_no_error_text_carries_a_rust_backtrace(site: Site) -> None:
    """With RUST_BACKTRACE=1 deltalake's errors carry native frames ("0: <unknown>"); the
    lake's errors and check() keep its words without them (a process of its own: Rust reads
    the variable once)."""
    import os
    import re
    import subprocess
    import sys

    assert site.lake.sync(NAME, SYMBOLS, progress=False).complete
    site.write(f"{NAME}/_delta_log/{site.log()[-1]}", b"garbage{{\n")
    code = (
        "import sys, mdframes as md\nlake = md.Lake(sys.argv[1])\n"
        "print(lake.check()['problems'].tolist())\n"
        "try:\n    lake.read('sentiment')\nexcept md.LakeDamagedError as e:\n    print(e)"
    )
    env = dict(os.environ, RUST_BACKTRACE="1", RUST_LIB_BACKTRACE="1")
    done = subprocess.run(
        [sys.executable, "-c", code, str(site.lake.root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.count("Json error") == 2, done.stderr  # deltalake's own words stay
    assert not re.search(r"(^|\\n)\s*\d+: ", done.stdout, re.M), done.stdout
    assert "<unknown>" not in done.stdout


def test_repair_after_a_lost_file_marks_only_the_units_it_held(site: Site) -> None:
    """MSFT's file lies inside the symbol range of the lost file (AAPL..NVDA) but was
    fetched later: repair() marks AAPL and NVDA not synced and leaves MSFT synced."""
    from .lake_damage import _reference

    lake = site.lake
    assert lake.sync(NAME, ["AAPL", "NVDA"], progress=False).complete
    (lost_file,) = lake.files(NAME)
    assert lake.sync(NAME, ["MSFT"], progress=False).complete
    site.delete(site.relative(lost_file))
    lost = lake.repair()
    assert lost["symbols"].tolist() == [["AAPL", "NVDA"]]
    coverage = md.Lake(lake.root).coverage(NAME).set_index("symbol")["status"]
    assert coverage.to_dict() == {"AAPL": "pending", "MSFT": "synced", "NVDA": "pending"}
    assert lake.sync(NAME, SYMBOLS, progress=False).complete
    got = md.Lake(lake.root).read(NAME).drop(columns=["_fetched_at"])
    import pandas as pd

    pd.testing.assert_frame_equal(got, _reference(site))
