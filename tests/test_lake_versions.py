"""Each record's latest version chosen from a read's rows (``lake/sync/versions.py``), checked
against a plain pandas group-by on tables shaped as reads return them: several chunks (one
per row group), text read as its dictionary (a dictionary per chunk), ids mostly distinct
(their chunks are taken apart) or few (taken at once), missing values, revised records
whose older versions lie in other chunks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from mdframes.lake.sync.versions import superseded_versions, without_rows
from mdframes.lake.table.layout import DtypeRecord


def _read_like(
    rng: np.random.Generator, n: int, chunks: int, distinct_ids: bool, alternative: bool
) -> pa.Table:
    """``n`` records, about a tenth of them revised once or twice, the later versions
    appended after the first ones (as a later sync's file is), cut into ``chunks``."""
    symbols = rng.choice([f"S{k:02d}" for k in range(12)], n)
    ids = [f"id{k:06d}" for k in range(n)] if distinct_ids else rng.choice(["a", "b", None], n)
    days = rng.integers(0, 40, n)
    base = pd.DataFrame({"symbol": symbols, "award_id": ids, "day": days, "_n": 0, "_version": 1})
    # An alternative to the id where it is filed (identity part "alt|award_id").
    base["alt"] = [f"alt{k % 50}" if k % 3 == 0 else None for k in range(n)]
    # Records sharing an identity in one answer are told apart by _n, as a sync numbers them.
    key = (
        base["alt"].where(base["alt"].notna(), base["award_id"])
        if alternative
        else base["award_id"]
    )
    base["_n"] = base.assign(key=key).groupby(["symbol", "key", "day"], dropna=False).cumcount()
    revised = base.sample(frac=0.1, random_state=1)
    again = revised.sample(frac=0.3, random_state=2)
    frame = pd.concat(
        [base, revised.assign(_version=2), again.assign(_version=3)], ignore_index=True
    )
    frame["value"] = rng.normal(size=len(frame))
    cuts = np.linspace(0, len(frame), chunks + 1).astype(int)
    batches = []
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        part = frame.iloc[a:b]
        batches.append(
            pa.record_batch(
                {
                    # Text as its dictionary, one per chunk (as a Parquet row group reads).
                    "symbol": pa.array(part["symbol"].tolist(), pa.string()).dictionary_encode(),
                    "award_id": pa.array(
                        [v if isinstance(v, str) else None for v in part["award_id"]], pa.string()
                    ).dictionary_encode(),
                    "alt": pa.array(
                        [v if isinstance(v, str) else None for v in part["alt"]], pa.string()
                    ).dictionary_encode(),
                    "day": pa.array(part["day"].to_numpy(np.int32)).cast(pa.date32()),
                    "_n": pa.array(part["_n"].to_numpy(np.int16)),
                    "_version": pa.array(part["_version"].to_numpy(np.int32)),
                    "value": pa.array(part["value"].to_numpy()),
                }
            )
        )
    return pa.Table.from_batches(batches)


def _expected(table: pa.Table, alternative: bool) -> pd.DataFrame:
    frame = table.to_pandas()
    for name in ("symbol", "award_id", "alt"):
        frame[name] = frame[name].astype(object)
    frame["_pos"] = np.arange(len(frame))
    key = ["symbol", "award_id", "day", "_n"]
    if alternative:
        frame["_key"] = frame["alt"].astype(object).where(frame["alt"].notna(), frame["award_id"])
        key = ["symbol", "_key", "day", "_n"]
    top = frame.groupby(key, dropna=False)["_version"].transform("max")
    kept = frame[frame["_version"] == top]
    return kept.drop(columns=["_pos", "_key"], errors="ignore").reset_index(drop=True)


@pytest.mark.parametrize("alternative", [False, True])
@pytest.mark.parametrize("distinct_ids", [True, False])
def test_latest_versions_of_multi_chunk_dictionary_reads_equal_a_group_by(
    distinct_ids: bool, alternative: bool
) -> None:
    rng = np.random.default_rng(7)
    table = _read_like(rng, 3000, 7, distinct_ids, alternative)
    ids = "alt|award_id" if alternative else "award_id"
    manifest = DtypeRecord("government_contracts", "window", ["symbol", ids, "day"], None, [])
    got = without_rows(table, superseded_versions(table, manifest)).to_pandas()
    for name in ("symbol", "award_id", "alt"):
        got[name] = got[name].astype(object)
    want = _expected(table, alternative)
    assert len(got) < table.num_rows  # older versions were dropped
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want)


@pytest.mark.parametrize("distinct_ids", [True, False])
def test_a_sort_that_tells_latest_versions_keeps_the_rows_chosen_apart(distinct_ids: bool) -> None:
    """A read's sort whose keys are the record identity, ``_n`` and ``_version`` tells each
    record's latest version itself (``lake/table/order.py``): the same rows, in the same order,
    as the versions chosen apart and then sorted; some days missing, symbols asked out of
    order. Ids mostly distinct do not pack into the sort's integers: chosen apart then."""
    from mdframes.lake.sync.modes import WindowMode
    from mdframes.lake.table.layout import Column

    rng = np.random.default_rng(11)
    table = _read_like(rng, 3000, 7, distinct_ids, False).drop_columns(["alt"])
    cuts = np.cumsum([0, *(len(c) for c in table["day"].chunks)]).tolist()
    for name, share in (("day", 0.05), ("symbol", 0.01)):  # a few missing
        missing = pa.array(rng.random(table.num_rows) < share)
        plain = table[name].cast(pa.string()) if name == "symbol" else table[name]
        values = pa.compute.if_else(missing, pa.scalar(None, plain.type), plain.combine_chunks())
        parts = [values.slice(a, b - a) for a, b in zip(cuts, cuts[1:], strict=False)]
        if name == "symbol":  # a dictionary per chunk again
            parts = [p.dictionary_encode() for p in parts]
        table = table.set_column(table.column_names.index(name), name, pa.chunked_array(parts))
    columns = [
        Column("symbol", "string"),
        Column("award_id", "string"),
        Column("day", "date"),
        Column("value", "float64"),
    ]
    manifest = DtypeRecord(
        "government_contracts", "window", ["symbol", "award_id", "day"], "day", columns
    )
    mode = WindowMode()
    older = superseded_versions(table, manifest)
    assert len(older) > 0
    symbols = sorted({s for c in table["symbol"].chunks for s in c.dictionary.to_pylist()})
    early = np.flatnonzero(rng.random(table.num_rows) < 0.1)  # rows a read leaves out too
    kept = ["symbol", "day", "value"]
    for asked, drop in ((None, None), (symbols[::-1], None), (None, early)):
        got = mode.sort(table, manifest, asked, drop=drop, latest=True, columns=kept)
        apart = older if drop is None else np.union1d(older, drop)
        want = mode.sort(table, manifest, asked, drop=apart).select(kept)
        assert got.equals(want)
    if not distinct_ids:  # the sort told them: the versions were not chosen apart
        from mdframes.lake.table.order import arrange

        keys = [k for k, _ in mode.sort_keys(manifest)]
        told = arrange(table, keys, latest=lambda: pytest.fail("chosen apart"))
        assert told.num_rows == table.num_rows - len(older)
