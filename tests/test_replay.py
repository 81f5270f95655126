"""Replay (CONTRACT §13): a set saved from a lake is rebuilt with the same content hash after
two more syncs and a compaction, read at the table versions it recorded (Delta time travel);
verify catches a tampered set; a version a vacuum removed is named.

The tests run in file order on one lake: the last one vacuums it.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import mdframes as md
from mdframes.features.training.trainset import TrainingSet
from mdframes.sandbox import Sandbox

from .conftest import KEY

SYMBOLS = ["AAPL", "KO", "GME"]
DATASETS = ["sentiment", "put_call_ratio", "congress_trades"]
FEATURES = ["sentiment_mean_7d", "put_call_ratio_last", "congress_net_buy_90d"]

pytestmark = pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A lake synced on two sandbox days, two sets saved from it, then two more syncs."""
    root = tmp_path_factory.mktemp("replay") / "lake"
    folder = root.parent
    with Sandbox(today="2026-09-14") as sandbox:
        client = md.Client(api_key=KEY, base_url=sandbox.url, cache=False, progress=False)
        client.sandbox = sandbox
        lake = md.Lake(root, client=client)
        lake.sync(DATASETS, SYMBOLS, start="2026-05-01", progress=False)
        sandbox.advance(days=7)
        lake.sync(DATASETS, SYMBOLS, progress=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sets = {
                known_at: md.features.training_set(
                    SYMBOLS, "2026-07-01", "2026-09-21", FEATURES, source=lake, known_at=known_at
                )
                for known_at in (None, "row")
            }
        paths = {k: ts.to_parquet(folder / f"set-{k}.parquet") for k, ts in sets.items()}
        versions = {d: lake.version(d) for d in DATASETS}
        for _ in range(2):
            sandbox.advance(days=7)
            lake.sync(DATASETS, SYMBOLS, progress=False)
        client.close()
    yield {"root": root, "sets": sets, "paths": paths, "versions": versions}


def test_a_rebuild_after_two_more_syncs_and_a_compaction_has_the_same_hash(
    world: dict[str, Any],
) -> None:
    lake = md.Lake(world["root"])
    assert all(lake.version(d) > v for d, v in world["versions"].items())  # the lake moved on
    lake.compact()  # the default retention keeps every version of the last week
    assert lake.check()["ok"].all()
    for known_at, ts in world["sets"].items():
        assert ts.info["versions"] == {**world["versions"], "congress_trades":
                                       world["versions"]["congress_trades"]}  # fmt: skip
        for target in (ts, world["paths"][known_at], dict(ts.info)):
            again = md.features.rebuild(target, source=lake)
            assert again.info["content_hash"] == ts.info["content_hash"], known_at
            assert again.info["rebuilt_from"] == ts.info["content_hash"]
        back = md.features.read_training_set(world["paths"][known_at])
        assert back.verify(source=lake) is True
    # The lake as it is now gives another set: the rebuild did read the recorded versions.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        now = md.features.training_set(SYMBOLS, "2026-07-01", "2026-09-21", FEATURES,
                                       source=lake)  # fmt: skip
    assert now.info["content_hash"] != world["sets"][None].info["content_hash"]


def test_the_lake_reads_a_recorded_version(world: dict[str, Any]) -> None:
    lake = md.Lake(world["root"])
    version = world["versions"]["sentiment"]
    then = lake.read("sentiment", SYMBOLS, version=version)
    now = lake.read("sentiment", SYMBOLS)
    assert len(then) < len(now)
    assert then["_fetched_at"].max() < now["_fetched_at"].max()
    assert lake.read("sentiment", SYMBOLS, version=lake.version("sentiment")).equals(now)
    with pytest.raises(md.InvalidParameterError, match="no table version"):
        lake.read("sentiment", version=lake.version("sentiment") + 1)
    with pytest.raises(md.InvalidParameterError, match="version"):
        lake.read("sentiment", version=-1)


def test_verify_catches_a_tampered_set(world: dict[str, Any]) -> None:
    lake = md.Lake(world["root"])
    ts = world["sets"][None]
    X = ts.X.copy()
    X.iloc[7, 1] = float(X.iloc[7, 1]) + 0.5 if pd.notna(X.iloc[7, 1]) else 1.0
    tampered = TrainingSet(X, ts.y, ts.t1, ts.info)
    date, symbol = X.index[7]
    cell = f"{date:%Y-%m-%d} {symbol} {X.columns[1]}: expected {ts.X.iloc[7, 1]}, got"
    with pytest.raises(md.DataValidationError, match="no longer match") as caught:
        tampered.verify(source=lake)
    assert cell in str(caught.value)
    # Tampered with its hash made to match: the rebuild names the cell.
    forged = TrainingSet(X, ts.y, ts.t1, {**ts.info, "content_hash": tampered.content_hash()})
    with pytest.raises(md.DataValidationError, match=re.escape(cell)):
        forged.verify(source=lake)
    y = ts.y.copy()
    y.iloc[np.flatnonzero(y.notna())[0]] *= 1.01
    relabelled = TrainingSet(ts.X, y, ts.t1, {**ts.info, "content_hash": "0" * 64})
    with pytest.raises(md.DataValidationError, match=str(y.name)):
        relabelled.verify(source=lake)


def test_a_files_edits_are_named_and_its_hash_checked_first(
    world: dict[str, Any], tmp_path: Path
) -> None:
    """CONTRACT §13.1: verify names the edited cell (date, symbol, column, expected, got),
    whether or not the file's recorded hash was edited too; rebuild(path) and verify refuse
    a file whose recorded hash is not its rows' (the audit command: tests/test_audit.py)."""
    lake = md.Lake(world["root"])
    ts = md.features.read_training_set(world["paths"][None])
    i = int(np.flatnonzero(ts.X.iloc[:, 0].notna())[3])
    X = ts.X.copy()
    X.iloc[i, 0] = 99.0
    date, symbol = X.index[i]
    cell = f"{date:%Y-%m-%d} {symbol} {X.columns[0]}: expected {ts.X.iloc[i, 0]}, got 99.0"
    edited = TrainingSet(X, ts.y, ts.t1, ts.info)
    forged = TrainingSet(X, ts.y, ts.t1, {**ts.info, "content_hash": edited.content_hash()})
    cell_only = edited.to_parquet(tmp_path / "cell.parquet")
    both = forged.to_parquet(tmp_path / "both.parquet")
    for path in (cell_only, both):
        with pytest.raises(md.DataValidationError, match=re.escape(cell)):
            md.features.read_training_set(path).verify(source=lake)
    with pytest.raises(md.DataValidationError, match="do not match the content hash"):
        md.features.rebuild(cell_only, source=lake)
    # A forged hash matches its rows: the rebuild is the lake's set, not the edited one.
    assert md.features.rebuild(both, source=lake).info["content_hash"] == ts.info["content_hash"]
    # Only the recorded hash edited: the rows are the rebuilt set's, the hash is not theirs.
    hash_only = TrainingSet(ts.X, ts.y, ts.t1, {**ts.info, "content_hash": "f" * 64})
    path = hash_only.to_parquet(tmp_path / "hash.parquet")
    with pytest.raises(md.DataValidationError, match=r"records \(ffffffffffff\.\.\."):
        md.features.rebuild(path, source=lake)
    with pytest.raises(md.DataValidationError, match="the recorded hash was edited"):
        md.features.read_training_set(path).verify(source=lake)


def test_rebuild_refuses_what_it_cannot_rebuild(world: dict[str, Any]) -> None:
    ts = world["sets"][None]
    with pytest.raises(md.InvalidParameterError, match="source"):
        md.features.rebuild(ts, source=None)
    given = {**ts.info, "label": {**ts.info["label"], "prices": "given"}}
    with pytest.raises(md.InvalidParameterError, match="prices"):
        md.features.rebuild(given, source=md.Lake(world["root"]))
    with pytest.raises(md.InvalidParameterError):
        md.features.rebuild(42, source=md.Lake(world["root"]))


def test_the_content_hash_of_a_fixed_set_is_the_same_on_every_pandas() -> None:
    """The canonical form does not depend on the pandas version: CI runs this file on pandas
    2.2 and on the newest pandas, and both must give this one value (checked by hand on
    pandas 2.2.3 and 3.1.1, for the symbols as pandas' string and as objects)."""
    dates = pd.to_datetime(["2026-01-05", "2026-01-06"])
    for symbols in (
        pd.Index(["AAPL", "KO"], dtype="string"),
        pd.Index(["AAPL", "KO"], dtype=object),
    ):
        index = pd.MultiIndex.from_product([dates, symbols.rename("symbol")],
                                           names=["date", "symbol"])  # fmt: skip
        X = pd.DataFrame({"a": [1.5, np.nan, -2.0, 0.25],
                          "n": pd.array([1, None, 3, 0], dtype="Int64")}, index=index)  # fmt: skip
        y = pd.Series([0.01, np.nan, -0.02, 0.0], index=index, name="fwd_return_5")
        t1 = pd.Series(pd.to_datetime(["2026-01-13"] * 2 + ["2026-01-14"] * 2), index=index,
                       name="t1")  # fmt: skip
        digest = TrainingSet(X, y, t1, {}).content_hash()
        assert digest == "a2f62c1a2bddc62d1ab454f8816b1024a0283f1dbb3ad4184db7ebf363aace58"


def test_a_vacuumed_version_is_named(world: dict[str, Any]) -> None:
    """Last: a compaction that keeps no old version removes the recorded versions' files."""
    lake = md.Lake(world["root"])
    lake.compact(retain_hours=0)
    version = world["versions"]["sentiment"]
    with pytest.raises(md.LakeDamagedError, match=rf"version {version} of the table is gone"):
        world["sets"][None].verify(source=lake)
    with pytest.raises(md.LakeDamagedError, match="removed by a vacuum") as caught:
        lake.read("sentiment", version=version)
    assert caught.value.dataset == "sentiment"
