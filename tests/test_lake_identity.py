"""One identity, one order (CONTRACT §2, §10.1): for every per-symbol v2 dataset, a lake read
of what a sync stored is the loader's frame of the same records, row for row, with records
that share symbol and time present and sent in an order that is not their identity's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import mdframes as md
from mdframes.frame import build_frame
from mdframes.params import build_request
from mdframes.records import extract
from mdframes.registry import REGISTRY, Dataset
from mdframes.sandbox import Sandbox

from .conftest import KEY

SYMBOLS = ["MSFT", "AAPL", "0700"]  # not sorted: symbols come in the caller's order
START = "2025-12-01"  # a year: every dataset has same-time records in it
PER_SYMBOL = sorted(
    name
    for name, ds in REGISTRY.items()
    if ds.version == "v2" and ds.per_symbol and ds.lake and ds.view_of is None
)
# Datasets whose records can share symbol and time within one answer: an identity beyond
# symbol, time and what the request fixes (forecast's type: one per answer).
TIED = [n for n in PER_SYMBOL if set(REGISTRY[n].merge_id.names) - {REGISTRY[n].time_column}]


@pytest.fixture(scope="module")
def world() -> Iterator[Sandbox]:
    with Sandbox(extra_symbols=["0700"]) as server:
        yield server


@pytest.fixture(scope="module")
def client(world: Sandbox) -> Iterator[md.Client]:
    with md.Client(api_key=KEY, base_url=world.url, cache=False) as c:
        c.sandbox = world  # type: ignore[attr-defined]  # the lake's clock: the sandbox's day
        yield c


def _variants(ds: Dataset) -> list[dict[str, Any]]:
    """The loader calls whose frames together are what the lake holds of ``ds``."""
    if ds.param("type") is not None:  # forecast: one type per load, both in the lake
        return [{"type": t} for t in ds.param("type").choices]  # type: ignore[union-attr]
    return [{"start": START}] if ds.param("start") is not None else [{}]


def test_every_per_symbol_dataset_is_covered() -> None:
    assert len(PER_SYMBOL) >= 13 and "insider_trading" in TIED and "congress_trades" in TIED
    assert {"sentiment", "forecast"} & set(TIED) == set()
    listed = md.datasets().set_index("name")["record_id"]
    assert listed["insider_trading"] == [
        *("symbol", "date", "insider", "transaction_type", "shares", "price_per_share")
    ]
    for name in PER_SYMBOL:  # what the catalog lists is what the lake keys versions on
        assert listed[name] == list(REGISTRY[name].record_id)


@pytest.mark.parametrize("name", PER_SYMBOL)
def test_a_lake_read_is_the_loader_frame(tmp_path: Path, client: md.Client, name: str) -> None:
    ds = REGISTRY[name]
    lake = md.Lake(tmp_path / "lake", client=client)
    window = {"start": START} if ds.lake == "window" else {}
    report = lake.sync(name, SYMBOLS, progress=False, **window)
    assert report.complete, str(report)
    stored = lake.read(name, SYMBOLS).drop(columns=["_fetched_at"])
    for params in _variants(ds):
        expected = md.load(name, SYMBOLS, client=client, **params)
        got = stored
        if "type" in params:
            got = stored[stored["type"] == params["type"]].reset_index(drop=True)
        assert len(expected) > 0
        pd.testing.assert_frame_equal(got, expected)


def _out_of_order(frame: pd.DataFrame, ds: Dataset) -> int:
    """Groups of rows sharing symbol and time whose order in ``frame`` is not the order of
    their identity's values (column by column, text by value, missing last)."""
    time = ds.time_column
    columns = [c for c in ds.identity.names if c not in ("symbol", time) and c in frame]

    def key(row: tuple) -> tuple:
        return tuple((pd.isna(v), v if not pd.isna(v) else 0) for v in row)

    found = 0
    for _, group in frame.groupby(["symbol", time], sort=False, observed=True):
        if len(group) > 1:
            rows = list(group[columns].astype(object).itertuples(index=False, name=None))
            found += rows != sorted(rows, key=key)
    return found


@pytest.mark.parametrize("name", TIED)
def test_the_sandbox_sends_same_time_records_out_of_identity_order(
    client: md.Client, name: str
) -> None:
    """The answers hold records that share symbol and time, in an order (read oldest first,
    as a loader reads a newest-first answer) that is not their identity's: a reader that kept
    the service's order instead of the identity's would fail the test above."""
    ds = REGISTRY[name]
    chamber = ds.param("chamber")
    asks = [{"chamber": c} for c in chamber.fan_out("both")] if chamber is not None else [{}]
    found = 0
    for symbol in SYMBOLS:
        for ask in asks:
            req = build_request(ds, {"start": START, **ask}, symbol=symbol)
            sent = build_frame(ds, [extract(ds, client.get(req.path, req.query).data)])
            time = sent[ds.time_column]
            if len(sent) > 1 and time.iloc[0] > time.iloc[-1]:
                sent = sent.iloc[::-1]  # newest first: read oldest first
            found += _out_of_order(sent, ds)
    assert found > 0
