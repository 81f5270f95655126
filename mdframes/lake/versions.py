"""Knowledge time: which fetched rows are new records, which are new versions, which add
nothing; and, for reads, which stored row is the latest version of each record.

A record is known by its identity (the registry's ``record_id``, symbol included) plus
``_n``, its place among records that share that identity in one answer. Two 64-bit hashes of
the identity stand for it, and one 64-bit hash of every value for its content. Windowed datasets keep one row per
version; snapshot datasets keep whole answers, one per sync that saw something change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .frames import key_hashes, row_hashes
from .layout import Manifest

__all__ = [
    "WindowDiff",
    "window_index",
    "diff_window",
    "Snapshot",
    "snapshot_index",
    "diff_snapshots",
    "unit_of",
    "latest",
]


def _identity(table: pa.Table, manifest: Manifest) -> pd.DataFrame:
    ka, kb = key_hashes(table, manifest.identity)
    return pd.DataFrame({"ka": ka, "kb": kb, "h": row_hashes(table, manifest.names())})


# --- windowed datasets -------------------------------------------------------------------------


def window_index(stored: pa.Table | None, manifest: Manifest | None) -> pd.DataFrame:
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


def diff_window(new: pa.Table, manifest: Manifest, index: pd.DataFrame) -> WindowDiff:
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
class Snapshot:
    version: int
    hashes: np.ndarray  # sorted content hashes
    keys: set[tuple[int, int]]


def snapshot_index(stored: pa.Table, manifest: Manifest, cross: bool) -> dict[str, Snapshot]:
    """The latest stored snapshot of each unit."""
    if stored.num_rows == 0:
        return {}
    frame = _identity(stored, manifest)
    frame["v"] = stored["_version"].to_numpy().astype(np.int64)
    frame["unit"] = _unit_ids(stored, cross)
    last = frame.groupby("unit")["v"].transform("max")
    frame = frame[frame["v"] == last]
    out = {}
    for unit, rows in frame.groupby("unit", sort=False):
        out[str(unit)] = Snapshot(
            int(rows["v"].iloc[0]),
            np.sort(rows["h"].to_numpy()),
            set(zip(rows["ka"].tolist(), rows["kb"].tolist(), strict=True)),
        )
    return out


def _unit_ids(table: pa.Table, cross: bool) -> list[str]:
    scopes = table["_scope"].to_pylist()
    if cross:
        return [unit_of(None, sc) for sc in scopes]
    return [unit_of(s, sc) for s, sc in zip(table["symbol"].to_pylist(), scopes, strict=True)]


def diff_snapshots(
    new: pa.Table, units: Sequence[str], manifest: Manifest, index: dict[str, Snapshot]
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


def latest(table: pa.Table, manifest: Manifest, cross: bool) -> pa.Table:
    """Each record's latest version (windowed) or each unit's latest snapshot (``cross``:
    one snapshot per filter rather than per symbol and filter)."""
    if table.num_rows == 0:
        return table
    versions = table["_version"]
    if manifest.mode == "window":
        if pc.max(versions).as_py() == 1:
            return table  # no record has a second version: nothing to choose
        return _latest_versions(table, manifest)
    units = pd.Series(_unit_ids(table, cross))
    v = pd.Series(versions.to_numpy().astype(np.int64))
    keep = (v == v.groupby(units).transform("max")).to_numpy()
    return table.filter(pa.array(keep))


def _latest_versions(table: pa.Table, manifest: Manifest) -> pa.Table:
    """Each record's latest version, rows kept in their stored order (a filter, so a read
    of files in stored order needs no sort after it)."""
    # Only symbols with a revised record need a choice; the rest pass through untouched.
    keep = np.ones(table.num_rows, dtype=bool)
    if "symbol" in table.column_names:
        revised = pc.unique(table.filter(pc.greater(table["_version"], 1))["symbol"])
        touched = np.flatnonzero(
            pc.is_in(table["symbol"], value_set=revised).to_numpy(zero_copy_only=False)
        )
    else:
        touched = np.arange(table.num_rows)
    part = table.take(pa.array(touched, type=pa.int64()))
    ka, kb = key_hashes(part, manifest.identity)
    frame = pd.DataFrame(
        {
            "ka": ka,
            "kb": kb,
            "n": part["_n"].to_numpy().astype(np.int64),
            "v": part["_version"].to_numpy().astype(np.int64),
            "pos": touched,
        }
    )
    frame = frame.sort_values("v", kind="stable").drop_duplicates(["ka", "kb", "n"], keep="last")
    keep[touched] = False
    keep[frame["pos"].to_numpy()] = True
    return table.filter(pa.array(keep))
