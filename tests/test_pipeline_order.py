"""A load types, validates and orders its rows as arrays and builds its frame last: the frame,
its order and its quality entries are those of the typed frame, checked, then sorted stably by
symbol (the caller's order), time (missing last) and the identity's columns (a category by its
text, missing last). Answers are replayed over loopback; the sandbox's answers check that a
rule reads the same column from the typed arrays as from the frame."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

import mdframes as md
from mdframes import pipeline, schemas
from mdframes.fetch import fetch
from mdframes.frame import Typed, build_columns, build_frame
from mdframes.identity import Identity
from mdframes.params import plan
from mdframes.records import Records, extract
from mdframes.registry import REGISTRY, get

from .conftest import valid_params
from .replay import insider_body, insider_trade, replay

DS = get("insider_trading")
SYMBOLS = ["ZZZ", "AAA", "MMM"]  # not sorted: the caller's order is the frame's


def _records(seed: int, *, missing_times: bool) -> list[dict[str, Any]]:
    """Insider records with many ties on date, missing identity values, revisions (the same
    identity twice, a revised filing), a type outside the vocabulary and, if asked, records
    without a date; in no particular order."""
    rng = random.Random(seed)
    out = []
    for _ in range(60):
        out.append(
            insider_trade(
                date=f"2026-03-0{rng.randint(1, 3)}",
                insider=rng.choice(["B. Person", "A. Person", "a. person", "Åsa", None]),
                transactionType=rng.choice(["Sale", "Purchase", "Gift", "Zeta_Kind", None]),
                shares=rng.choice([10, 2, 300, None]),
                pricePerShare=rng.choice([5.0, -0.0, 0.0, 12.25, None]),
                totalValue=rng.randint(0, 5),
                filingDate=f"2026-03-1{rng.randint(0, 9)}",
            )
        )
    out += [dict(r, filingDate="2026-04-01", totalValue=99) for r in out[:8]]  # revisions
    if missing_times:
        out += [insider_trade(date=None, insider=name) for name in ("C", "A", None)]
    rng.shuffle(out)
    return out


def _bodies(missing_times: bool) -> dict[str, Any]:
    bodies = {}
    for i, symbol in enumerate(SYMBOLS):
        records = _records(i, missing_times=missing_times)
        if i == 1 and not missing_times:  # newest first, as the service sends it
            records.sort(key=lambda r: r["date"], reverse=True)
        bodies[f"/v2/insider-trading/{symbol}"] = insider_body(symbol, records)
    return bodies


@pytest.fixture(scope="module", params=[False, True], ids=["dated", "missing-times"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[md.Client, dict[str, Any], bool]]:
    bodies = _bodies(request.param)
    with replay(bodies) as (client, _):
        yield client, bodies, request.param


def _batches(bodies: dict[str, Any], symbols: list[str]) -> list[Records]:
    batches = []
    for symbol in symbols:
        records = extract(DS, bodies[f"/v2/insider-trading/{symbol}"]["data"])
        records.symbol = symbol
        batches.append(records)
    pipeline._oldest_first(DS, batches)  # a newest-first answer is read oldest first
    return batches


def _stable_sort(frame: pd.DataFrame, symbols: list[str]) -> pd.DataFrame:
    """The reference order: symbol as the caller gave them, time with missing ones last, then
    each identity column (a category by its text), missing last; a stable sort."""
    keys = pd.DataFrame({"_symbol": frame["symbol"].map(symbols.index).astype(int)})
    keys["_time"] = frame["date"]
    names = [n for n in DS.identity.names if n not in ("symbol", "date")]
    for n in names:
        column = frame[n]
        keys[n] = column.astype(object).where(column.notna(), None)
        if isinstance(column.dtype, pd.CategoricalDtype):
            keys[n] = keys[n].map(lambda v: None if v is None else str(v))
    order = keys.sort_values(["_symbol", "_time", *names], kind="stable", na_position="last")
    return frame.iloc[order.index].reset_index(drop=True)


def test_the_frame_is_the_typed_frame_sorted_stably(
    served: tuple[md.Client, dict[str, Any], bool],
) -> None:
    client, bodies, missing_times = served
    got = md.load_insider_trading(SYMBOLS, client=client, validate=False)
    typed = build_frame(DS, _batches(bodies, SYMBOLS), strict=False)
    expected = _stable_sort(typed, SYMBOLS)
    pd.testing.assert_frame_equal(got, expected)
    assert got["date"].isna().any() == missing_times
    assert not got.equals(typed)  # the answers were not in order: the test orders something


def test_quality_is_that_of_the_frame_before_its_order() -> None:
    """Soft failures (duplicates, a type outside the vocabulary) are the typed frame's: their
    counts, samples and row labels as before the rows were put in order."""
    bodies = _bodies(missing_times=False)
    with replay(bodies) as (client, _):
        with pytest.warns(md.DataQualityWarning):
            got = md.load_insider_trading(SYMBOLS, client=client)
    typed = build_frame(DS, _batches(bodies, SYMBOLS), strict=False)
    assert got.attrs["quality"] == schemas.check(typed, DS.name)
    entry = next(q for q in got.attrs["quality"] if q["check"] == "no_duplicates")
    repeats = typed.duplicated(list(DS.identity.names), keep="first")
    assert entry["rows"] == repeats.sum() > 0
    assert entry["index"] == typed.index[repeats][:10].tolist()
    pd.testing.assert_frame_equal(got, _stable_sort(typed, SYMBOLS))


def test_a_skipped_symbol_leaves_the_others_in_order() -> None:
    """A symbol failing a hard rule (a record without a date) is skipped; the frame rebuilt
    from the others is in their order."""
    bodies = _bodies(missing_times=False)
    bodies["/v2/insider-trading/BAD"] = insider_body("BAD", [insider_trade(date=None)])
    with replay(bodies) as (client, _):
        # The others' records still share identities (a soft rule): both warnings come.
        with pytest.warns(md.SkippedSymbolsWarning), pytest.warns(md.DataQualityWarning):
            got = md.load_insider_trading(["ZZZ", "BAD", "AAA"], client=client, errors="skip")
    assert list(got.attrs["failed"]) == ["BAD"]
    typed = build_frame(DS, _batches(bodies, ["ZZZ", "AAA"]), strict=False)
    pd.testing.assert_frame_equal(got, _stable_sort(typed, ["ZZZ", "AAA"]))


@pytest.fixture(scope="module")
def sandbox_columns(shared_sandbox: Any) -> list[tuple[str, Typed, pd.DataFrame]]:
    """Every registry dataset's example answer as typed columns and as the frame of them."""
    out = []
    with md.Client(api_key="sandbox-key", base_url=shared_sandbox.url, cache=False) as client:
        for name, ds in REGISTRY.items():
            params = valid_params(ds)
            symbols = params.pop("symbols", None)
            requests = plan(ds, symbols, {k: v for k, v in params.items() if v is not None})
            batches = [fetch(client, ds, r) for r in requests]
            pipeline._oldest_first(ds, batches)
            out.append((name, build_columns(ds, batches, strict=False), build_frame(ds, batches)))
    return out


def test_the_rules_read_from_the_arrays_what_they_read_from_the_frame(
    sandbox_columns: list[tuple[str, Typed, pd.DataFrame]],
) -> None:
    for name, typed, frame in sandbox_columns:
        from_arrays, from_frame = schemas.Columns(typed), schemas.Columns(frame)
        assert from_arrays.dtypes == from_frame.dtypes, name
        for column in frame.columns:
            a, b = from_arrays.array(column), from_frame.array(column)
            assert type(a) is type(b) and a.dtype == b.dtype, (name, column)
            pd.testing.assert_extension_array_equal(a, b)
            pd.testing.assert_series_equal(from_arrays[column], from_frame[column])
        for column in set(REGISTRY[name].identity.names) & set(frame.columns):
            assert (from_arrays.rank(column) == from_frame.rank(column)).all(), (name, column)
        assert schemas.check(typed, name) == schemas.check(frame, name), name


def _table(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """Columns of every identity dtype, with few distinct values and missing ones."""
    pick = rng.integers(0, 4, size=(5, n))
    floats = np.array([0.0, -0.0, np.nan, 1.5])[pick[0]]
    ints = pd.array([1, None, 3, 1], dtype="Int64").take(pick[1])
    text = pd.array(["b", None, "a", "B"], dtype="string").take(pick[2])
    kinds = pd.Categorical.from_codes([-1, 0, 1, 1], categories=["y", "x"]).take(pick[3])
    days = np.array(["2026-01-02", "NaT", "2026-01-01", "2026-01-02"], "M8[ns]")[pick[4]]
    return pd.DataFrame({"f": floats, "i": ints, "s": text, "c": kinds, "d": days})


@pytest.mark.parametrize("seed", range(40))
def test_duplicates_by_ranks_are_pandas_duplicates(seed: int) -> None:
    rng = np.random.default_rng(seed)
    frame = _table(rng, int(rng.integers(0, 30)))
    columns = list(rng.permutation(frame.columns)[: int(rng.integers(1, 6))])
    identity = Identity.parse(columns)
    view = schemas.Columns(frame)
    expected = frame.duplicated(columns, keep="first").to_numpy()
    by_codes = identity.duplicated(frame)
    by_ranks = identity.duplicated(view, view.__getitem__, view.rank)
    assert by_codes is not None and by_ranks is not None
    assert by_codes.tolist() == expected.tolist() == by_ranks.tolist()


@pytest.mark.parametrize("seed", range(20))
def test_ranks_without_pyarrow_equal_arrows(seed: int) -> None:
    # The core install has no pyarrow: a load's identity ranks come from pandas' sorted
    # factorize there (tests/test_core_install.py runs whole loads so); the same ranks.
    from mdframes.identity import _dense_ranks, _factorized_ranks

    rng = np.random.default_rng(seed)
    frame = _table(rng, int(rng.integers(0, 30)))
    frame["o"] = frame["s"].astype(object)  # text as Python objects, as without pyarrow
    for name in frame.columns:
        values = frame[name].array
        assert _factorized_ranks(values).tolist() == _dense_ranks(values).tolist(), name
