"""Knowledge time: which fetched rows are new records, which are new versions, which add
nothing; and, for reads, which stored row is the latest version of each record.

A record is known by its identity (the registry's ``record_id``, symbol included) plus
``_n``, its place among records that share that identity in one answer. Two 64-bit hashes of
the identity stand for it, and one 64-bit hash of every value for its content. Windowed datasets keep one row per
version; snapshot datasets keep whole answers, one per sync that saw something change.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..table.frames import key_hashes, row_hashes
from ..table.layout import DtypeRecord

__all__ = [
    "WindowDiff",
    "window_index",
    "diff_window",
    "UnitAnswer",
    "snapshot_index",
    "diff_snapshots",
    "unit_of",
    "keys_tell_versions",
    "superseded_versions",
    "superseded_snapshots",
    "without_rows",
    "one_per_record",
    "one_per_content",
]


def _identity(table: pa.Table, manifest: DtypeRecord) -> pd.DataFrame:
    ka, kb = key_hashes(table, manifest.identity)
    return pd.DataFrame({"ka": ka, "kb": kb, "h": row_hashes(table, manifest.names())})


# --- windowed datasets -------------------------------------------------------------------------


def window_index(stored: pa.Table | None, manifest: DtypeRecord | None) -> pd.DataFrame:
    """The latest stored version of each record: ``ka, kb, n, h, v``."""
    if stored is None or manifest is None or stored.num_rows == 0:
        return pd.DataFrame(
            {
                "ka": np.array([], np.uint64),
                "kb": np.array([], np.uint64),
                "n": np.array([], np.int64),
                "h": np.array([], np.uint64),
                "v": np.array([], np.int64),
            }
        )
    frame = _identity(stored, manifest)
    frame["n"] = stored["_n"].to_numpy().astype(np.int64)
    frame["v"] = stored["_version"].to_numpy().astype(np.int64)
    frame = frame.sort_values("v", kind="stable")
    return frame.drop_duplicates(["ka", "kb", "n"], keep="last").reset_index(drop=True)


@dataclass
class WindowDiff:
    take: np.ndarray  # positions of the fetched rows to store
    n: np.ndarray  # their _n
    version: np.ndarray  # their _version
    added: int  # new records
    revised: int  # new versions of known records


def diff_window(new: pa.Table, manifest: DtypeRecord, index: pd.DataFrame) -> WindowDiff:
    """Compare a fetched table with the stored latest versions."""
    frame = _identity(new, manifest)
    frame["pos"] = np.arange(len(frame))
    # Records sharing a key in one answer are told apart by content order, which does not
    # depend on the order the service sent them in.
    frame = frame.sort_values(["ka", "kb", "h"], kind="stable")
    frame["n"] = frame.groupby(["ka", "kb"], sort=False).cumcount().astype(np.int64)
    merged = frame.merge(index, on=["ka", "kb", "n"], how="left", suffixes=("", "_old"))
    is_new = merged["v"].isna().to_numpy()
    changed = ~is_new & (merged["h"].to_numpy() != merged["h_old"].to_numpy())
    kept = merged.loc[is_new | changed].sort_values("pos")
    return WindowDiff(
        take=kept["pos"].to_numpy(),
        n=kept["n"].to_numpy(),
        version=kept["v"].fillna(0).to_numpy().astype(np.int64) + 1,
        added=int(is_new.sum()),
        revised=int(changed.sum()),
    )


# --- snapshot datasets -------------------------------------------------------------------------


def unit_of(symbol: str | None, scope: str) -> str:
    """The id of one snapshot: per symbol and filter, or per filter for cross sections."""
    return f"{symbol or ''} {scope}"


@dataclass
class UnitAnswer:
    """The latest stored answer of one unit: its version, content hashes and record keys."""

    version: int
    hashes: np.ndarray  # sorted content hashes
    keys: set[tuple[int, int]]


def snapshot_index(
    stored: pa.Table, manifest: DtypeRecord, unit: Sequence[str]
) -> dict[str, UnitAnswer]:
    """The latest stored snapshot of each unit (``unit``: the columns that tell units
    apart, see :attr:`mdframes.lake.sync.modes.SnapshotMode.unit_columns`)."""
    if stored.num_rows == 0:
        return {}
    frame = _identity(stored, manifest)
    frame["v"] = stored["_version"].to_numpy().astype(np.int64)
    frame["unit"] = _unit_ids(stored, unit)
    last = frame.groupby("unit")["v"].transform("max")
    frame = frame[frame["v"] == last]
    out = {}
    for unit_id, rows in frame.groupby("unit", sort=False):
        out[str(unit_id)] = UnitAnswer(
            int(rows["v"].iloc[0]),
            np.sort(rows["h"].to_numpy()),
            set(zip(rows["ka"].tolist(), rows["kb"].tolist(), strict=True)),
        )
    return out


def _unit_ids(table: pa.Table, unit: Sequence[str]) -> list[str]:
    scopes = table["_scope"].to_pylist()
    symbols = table["symbol"].to_pylist() if "symbol" in unit else [None] * len(scopes)
    return [unit_of(s, sc) for s, sc in zip(symbols, scopes, strict=True)]


def diff_snapshots(
    new: pa.Table, units: Sequence[str], manifest: DtypeRecord, index: dict[str, UnitAnswer]
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Compare fetched snapshots (rows labelled by unit) with each unit's latest stored one.

    Returns per row whether to store it and its ``_version`` (a snapshot identical to the
    previous one of its unit stores nothing), then the counts of new and changed records."""
    frame = _identity(new, manifest)
    hashes = frame["h"].to_numpy()
    keys = list(zip(frame["ka"].tolist(), frame["kb"].tolist(), strict=True))
    keep = np.zeros(len(frame), dtype=bool)
    version = np.zeros(len(frame), dtype=np.int64)
    added = revised = 0
    groups = pd.Series(np.arange(len(frame))).groupby(pd.Series(list(units)), sort=False).indices
    for unit, rows in groups.items():
        previous = index.get(str(unit))
        if previous is not None and np.array_equal(np.sort(hashes[rows]), previous.hashes):
            continue
        keep[rows] = True
        version[rows] = previous.version + 1 if previous is not None else 1
        known = previous.keys if previous is not None else set()
        old = set(previous.hashes.tolist()) if previous is not None else set()
        for i in rows:
            if keys[i] not in known:
                added += 1
            elif hashes[i] not in old:
                revised += 1
    return keep, version, added, revised


# --- reads -------------------------------------------------------------------------------------


def superseded_versions(table: pa.Table, manifest: DtypeRecord) -> np.ndarray:
    """The positions (ascending) of the rows that are not their record's latest version
    (windowed datasets): a read cuts them out where it copies its rows anyway (a sort's
    gather), or with :func:`without_rows`."""
    if table.num_rows == 0 or pc.max(table["_version"]).as_py() == 1:
        return np.zeros(0, dtype=np.int64)  # no record has a second version: nothing to choose
    return _superseded(table, manifest)


def keys_tell_versions(table: pa.Table, manifest: DtypeRecord, keys: list[str]) -> bool:
    """Whether rows of ``table`` equal on every one of ``keys`` (a read's sort keys, those
    the table has) but the last are the versions of one record, so that a sort by them
    tells each record's latest (windowed datasets): the keys are the identity's columns,
    ``_n`` and ``_version``, each part of the identity one column of exact values (a part
    of several columns is compared by its first value present, as text; a float's NaN
    is a value of its own). Another key (a time not in the identity) could differ
    between two versions of one record."""
    identity = manifest.identity
    if not identity or keys[-2:] != ["_n", "_version"]:
        return False
    names = []
    for part in identity.parts:
        if len(part) != 1 or part[0] not in table.column_names:
            return False
        if not _prunes(_plain_type(table[part[0]].type)):
            return False
        names.append(part[0])
    return sorted(keys[:-2]) == sorted(set(names))


def superseded_snapshots(table: pa.Table, unit: Sequence[str]) -> np.ndarray:
    """The positions (ascending) of the rows not of their unit's latest snapshot
    (``unit``: the columns that tell units apart)."""
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    units = pd.Series(_unit_ids(table, unit))
    v = pd.Series(table["_version"].to_numpy().astype(np.int64))
    keep = (v == v.groupby(units).transform("max")).to_numpy()
    return np.flatnonzero(~keep)


def _superseded(table: pa.Table, manifest: DtypeRecord) -> np.ndarray:
    """The rows that are not their record's latest version.

    A record with an older version has a row with ``_version > 1``, and every version of it
    carries the same identity values: a membership test per identity column against the
    values of those few rows narrows the table to the rows that may be an older version
    (cheapest columns first), and only those are compared exactly. No row is hashed."""
    later = np.flatnonzero(pc.greater(table["_version"], 1).to_numpy(zero_copy_only=False))
    parts = _identity_parts(table, manifest)
    candidates = _candidates(table, parts, later)
    groups = _group_ids(pa.table({p.label: p.values(table, candidates) for p in parts}))
    versions = _taken(table["_version"], candidates).to_numpy(zero_copy_only=False)
    # Per record the row of the highest version (the last in stored order among equals).
    order = np.lexsort((candidates, versions, groups))
    last = np.ones(len(order), dtype=bool)
    last[:-1] = groups[order[1:]] != groups[order[:-1]]
    return np.sort(candidates[order[~last]])


@dataclass(frozen=True)
class _Part:
    """One part of the identity (``_n`` too): its columns the table has, the first not
    missing of several as text (:meth:`mdframes.identity.Identity.columns`). Its values are
    made for the rows asked only: an alternative's text is not made for every row read."""

    label: str
    names: tuple[str, ...]

    def kind(self, table: pa.Table) -> pa.DataType:
        return table[self.names[0]].type if len(self.names) == 1 else pa.string()

    def values(self, table: pa.Table, rows: np.ndarray | None = None) -> Any:
        """The part's values at ``rows`` (ascending; ``None``: every row)."""
        if not self.names:
            return pa.nulls(table.num_rows if rows is None else len(rows), type=pa.string())
        columns = [table[n] if rows is None else _taken(table[n], rows) for n in self.names]
        if len(columns) == 1:
            return columns[0]
        return pc.coalesce(*[c.cast(pa.string()) for c in columns])


def _identity_parts(table: pa.Table, manifest: DtypeRecord) -> list[_Part]:
    """The identity's parts plus ``_n`` (the whole row's values for an identity-less
    dataset, as :func:`key_hashes` takes them)."""
    identity = manifest.identity
    if identity:
        parts = list(identity.parts)
    else:
        parts = [(n,) for n in table.column_names if not n.startswith("_")]
    out = [_Part("|".join(p), tuple(n for n in p if n in table.column_names)) for p in parts]
    return [*out, _Part("_n", ("_n",))]


def _prunes(kind: pa.DataType) -> bool:
    """Whether a column's membership test is exact (a float's NaN, a list: not relied on)."""
    return (
        pa.types.is_integer(kind)
        or pa.types.is_temporal(kind)
        or pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_boolean(kind)
    )


def _plain_type(kind: pa.DataType) -> pa.DataType:
    return kind.value_type if pa.types.is_dictionary(kind) else kind


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _candidates(table: pa.Table, parts: list[_Part], later: np.ndarray) -> np.ndarray:
    """Positions of the rows that may share an identity with a row of ``later`` (every
    such row, and a few others): each part's value is among those rows' values (numbers
    and dates tested first, text on what is left), until few rows are left."""
    # ``_n`` (a record's place among rows of one identity) is 0 on nearly every row: its
    # test narrows nothing, and costs two gathers and a membership test of every row.
    tested = [p for p in parts if p.label != "_n" and _prunes(_plain_type(p.kind(table)))]
    tested.sort(key=lambda p: _is_text(_plain_type(p.kind(table))))
    candidates: np.ndarray | None = None
    for part in tested:
        seen = pc.unique(part.values(table, later))
        column = part.values(table, candidates)
        hit = pc.is_in(column, value_set=seen).to_numpy(zero_copy_only=False)
        candidates = np.flatnonzero(hit) if candidates is None else candidates[hit]
        if len(candidates) <= _NARROWED * len(later):
            # Few enough: telling them apart exactly (_group_ids) costs less than a test
            # of each further part (two gathers, its distinct values and the test: the
            # four text parts of a congress trade's identity cut 369 rows to 330).
            break
    return np.arange(table.num_rows) if candidates is None else candidates


# Candidate rows per later version from which no further part is tested (_candidates).
_NARROWED = 4


def _taken(column: pa.ChunkedArray, rows: np.ndarray) -> pa.Array | pa.ChunkedArray:
    """The values at ``rows`` (ascending positions), text read as its dictionary decoded. A
    column of mostly distinct text (ids) is taken chunk by chunk: a take of the whole column
    would first unify the chunks' dictionaries, hashing each of them whole to pick a few
    rows (a take costs ~15 us per chunk otherwise, so the others are taken at once)."""
    plain = _plain_type(column.type)
    kind = column.type
    if not pa.types.is_dictionary(kind):
        return column.take(pa.array(rows, type=pa.int64()))
    words = sum(len(c.dictionary) for c in column.chunks)
    if column.num_chunks < 2 or words * 4 <= len(column):
        return column.take(pa.array(rows, type=pa.int64())).cast(plain)
    bounds = np.cumsum([0, *(len(c) for c in column.chunks)])
    at = np.searchsorted(bounds, rows, side="right") - 1
    cuts = np.searchsorted(at, np.arange(column.num_chunks + 1))
    parts = []
    for i in np.flatnonzero(np.diff(cuts)).tolist():
        local = rows[cuts[i] : cuts[i + 1]] - bounds[i]
        parts.append(column.chunk(i).take(pa.array(local, type=pa.int64())).cast(plain))
    return pa.concat_arrays(parts) if parts else pa.array([], type=plain)


def record_numbers(table: pa.Table, manifest: DtypeRecord) -> np.ndarray:
    """One integer per record (its identity and ``_n``) for each row of ``table``: the
    versions of a record share it."""
    return _group_ids(
        pa.table({p.label: p.values(table) for p in _identity_parts(table, manifest)})
    )


def _group_ids(ident: pa.Table) -> np.ndarray:
    """One integer per distinct identity among a few rows (a missing value, NaN included,
    is a value of its own)."""
    ids = np.zeros(ident.num_rows, dtype=np.int64)
    for name in ident.column_names:
        column = ident[name].combine_chunks()
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        if pa.types.is_floating(column.type):
            column = pc.if_else(pc.is_nan(column), pa.scalar(None, column.type), column)
        elif not _prunes(column.type):
            column = pa.array(  # lists, structs, nulls: by their text
                [
                    None if v is None else json.dumps(v, sort_keys=True, default=str)
                    for v in column.to_pylist()
                ],
                pa.string(),
            )
        encoded = pc.dictionary_encode(column)
        codes = pc.fill_null(encoded.indices, -1).to_numpy().astype(np.int64) + 1
        ids = np.unique(ids * (len(encoded.dictionary) + 1) + codes, return_inverse=True)[1]
    return ids.astype(np.int64).reshape(-1)


# Rows kept per row cut out below which a table is filtered (copied) rather than sliced around
# them: each slice is a chunk of every column, and a read of chunks a few hundred rows long
# costs more to convert than the copy (government contracts, 57 revisions in 7,844 rows:
# to pandas 11 ms sliced, 6 ms filtered).
_ROWS_PER_SLICE = 1024


def without_rows(table: pa.Table, dropped: np.ndarray) -> pa.Table:
    """``table`` without the rows at ``dropped`` (sorted positions): few rows are cut out
    as slices around them, with no copy of the rest."""
    if len(dropped) == 0:
        return table
    if len(dropped) * _ROWS_PER_SLICE > table.num_rows:
        keep = np.ones(table.num_rows, dtype=bool)
        keep[dropped] = False
        return table.filter(pa.array(keep))
    starts = np.concatenate([[0], dropped + 1])
    ends = np.concatenate([dropped, [table.num_rows]])
    pieces = [
        table.slice(a, b - a) for a, b in zip(starts.tolist(), ends.tolist(), strict=True) if b > a
    ]
    return pa.concat_tables(pieces) if pieces else table.slice(0, 0)


def one_per_record(table: pa.Table, manifest: DtypeRecord) -> pa.Table:
    """One row per record (identity and ``_n``) and fetch time, the first in stored order:
    copies of rows another writer appended never double a record (windowed datasets)."""
    if table.num_rows < 2 or "_fetched_at" not in table.column_names:
        return table
    if "_n" not in table.column_names:
        return one_per_content(table, manifest)
    ka, kb = key_hashes(table, manifest.identity)
    n = table["_n"].to_numpy(zero_copy_only=False)
    return _first_of(table, pd.DataFrame({"ka": ka, "kb": kb, "n": n}))


def one_per_content(table: pa.Table, manifest: DtypeRecord) -> pa.Table:
    """One row per content and fetch time within its snapshot (filter), the first in stored
    order (snapshot datasets: a snapshot holds whole answers, rows told apart by value)."""
    if table.num_rows < 2 or "_fetched_at" not in table.column_names:
        return table
    names = [c for c in manifest.names() if c in table.column_names]
    names += [m for m in ("_scope",) if m in table.column_names]
    return _first_of(table, pd.DataFrame({"h": row_hashes(table, names)}))


def _first_of(table: pa.Table, keys: pd.DataFrame) -> pa.Table:
    keys["t"] = table["_fetched_at"].cast(pa.int64()).to_numpy(zero_copy_only=False)
    copies = keys.duplicated(keep="first").to_numpy()
    return table.filter(pa.array(~copies)) if copies.any() else table
