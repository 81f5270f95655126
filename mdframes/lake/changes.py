"""What the service revised: field-by-field changes between consecutive versions of records.

The lake keeps every version of a record (CONTRACT §10); :func:`changes` turns a history frame
(what ``lake.read(dataset, history=True)`` returns) into one row per changed field. It works on
the frame alone, vectorised (a sort and a shift per column, no loop over records), so it does
not depend on how the lake stores its versions.

Values are compared as text, as they print (``str`` of each value; a calendar date as
``YYYY-MM-DD``), so a float revised in its last digit is a change and two missing values are
not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..errors import InvalidParameterError
from ..identity import Identity
from ..params import to_utc
from ..registry import Dataset
from .sync.modes import mode_of

__all__ = ["COLUMNS", "check_changes", "changes", "key_columns"]

# The columns after the record-id columns.
COLUMNS = ("field", "old", "new", "old_fetched_at", "new_fetched_at", "sync_id")
_FETCHED, _SYNC = "_fetched_at", "_sync_id"


def key_columns(key: Sequence[str]) -> list[str]:
    """The columns of a registry ``record_id`` (``"a|b"``: both ``a`` and ``b``).

    >>> key_columns(("symbol", "date", "amount_raw|amount"))
    ['symbol', 'date', 'amount_raw', 'amount']
    """
    return list(Identity.parse(key).names)


def check_changes(
    ds: Dataset, since: Any = None, until: Any = None
) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    """Check ``changes()``'s arguments before the lake is read: the dataset keeps versions of
    records (not snapshots), and ``since``/``until`` are times (a date alone means the end of
    that day). Returns them as UTC timestamps.

    >>> from mdframes.registry import REGISTRY
    >>> check_changes(REGISTRY["sentiment"], "2026-10-05")[0]
    Timestamp('2026-10-05 23:59:59.999999+0000', tz='UTC')
    """
    if not ds.lake:
        raise InvalidParameterError(
            f"{ds.name} is not kept by the lake", parameter="dataset", dataset=ds.name
        )
    mode_of(ds).check_changes(ds)
    lo = None if since is None else to_utc(since, "since", dataset=ds.name)
    hi = None if until is None else to_utc(until, "until", dataset=ds.name)
    if lo is not None and hi is not None and hi < lo:
        raise InvalidParameterError(
            f"until={until!r} is before since={since!r}", parameter="until", dataset=ds.name
        )
    return lo, hi


def _as_text(values: pd.Series) -> pd.Series:
    """Each value as it prints; missing values stay missing."""
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        stamps = values.dropna()
        dates_only = values.dt.tz is None and bool((stamps == stamps.dt.normalize()).all())
        text = values.dt.strftime("%Y-%m-%d") if dates_only else values.astype(str)
    else:
        text = values.astype(object).map(str)
    return text.astype("string").where(values.notna())


def _identity(history: pd.DataFrame, key: Sequence[str]) -> pd.Series:
    """One integer per record (and per occurrence, when one answer held several records
    with the same id)."""
    identity = Identity.parse(key)
    for part in identity.parts:
        if not any(c in history.columns for c in part):
            raise KeyError(f"record-id column {'|'.join(part)!r} is not in the history frame")
    record = pd.Series(identity.ids(history), index=history.index)
    occurrence = pd.Series(0, index=history.index)
    if _FETCHED in history.columns:
        occurrence = record.groupby([record, history[_FETCHED]]).cumcount()
    both = pd.DataFrame({"r": record, "o": occurrence})
    return both.groupby(["r", "o"], sort=False).ngroup()


def changes(
    history: pd.DataFrame,
    key: Sequence[str],
    *,
    since: Any = None,
    until: Any = None,
) -> pd.DataFrame:
    """One row per changed field of a record between two consecutive versions whose later
    version was fetched in (``since``, ``until``].

    Parameters
    ----------
    history : DataFrame
        Every version: ``lake.read(dataset, history=True)`` (loader columns plus
        ``_fetched_at`` and ``_sync_id``; other ``_`` columns are ignored).
    key : sequence of str
        The registry's ``record_id`` of the dataset (``"a|b"``: ``a``, or ``b`` where ``a`` is
        missing).
    since, until : time, optional
        As :func:`mdframes.params.to_utc` takes them (a date alone: the end of that day).

    Returns
    -------
    DataFrame
        The record-id columns (values of the later version), then ``field``, ``old``,
        ``new`` (text), ``old_fetched_at``, ``new_fetched_at`` and ``sync_id`` (of the later
        version); ordered by ``new_fetched_at``, the record id and the column order. First
        versions are not changes; no change gives an empty frame with these columns.

    Examples
    --------
    >>> import pandas as pd
    >>> h = pd.DataFrame({"symbol": ["A", "A"], "date": ["2026-10-05"] * 2, "score": [0.1, 0.2],
    ...     "_fetched_at": pd.to_datetime(["2026-10-05", "2026-10-06"], utc=True),
    ...     "_sync_id": ["s1", "s2"]})
    >>> changes(h, ("symbol", "date"))[["symbol", "field", "old", "new", "sync_id"]]
      symbol  field  old  new sync_id
    0      A  score  0.1  0.2      s2
    """
    identity = Identity.parse(key)
    ids = [c for c in identity.names if c in history.columns]
    single = {part[0] for part in identity.parts if len(part) == 1}
    fields = [c for c in history.columns if not c.startswith("_") and c not in single]
    fetched = (
        history[_FETCHED]
        if _FETCHED in history.columns
        else pd.Series(pd.NaT, index=history.index, dtype="datetime64[us, UTC]")
    )
    lo = None if since is None else to_utc(since, "since")
    hi = None if until is None else to_utc(until, "until")

    order = pd.DataFrame({"record": _identity(history, key), "t": fetched}, index=history.index)
    order = order.sort_values(["record", "t"], kind="stable")
    rows = order.index
    later = (order["record"] == order["record"].shift(1)).to_numpy()
    new_t = fetched.loc[rows]
    in_window = pd.Series(later, index=rows)
    if lo is not None:
        in_window &= new_t > lo
    if hi is not None:
        in_window &= new_t <= hi
    old_t = new_t.shift(1)
    sync = (
        history[_SYNC].loc[rows].astype("string")
        if _SYNC in history.columns
        else pd.Series(pd.NA, index=rows, dtype="string")
    )

    pieces = []
    for position, name in enumerate(fields):
        text = _as_text(history[name].loc[rows])
        before = text.shift(1)
        differs = (text != before).fillna(text.isna() != before.isna()).astype(bool)
        hit = (in_window & differs).to_numpy()
        if not hit.any():
            continue
        pick = rows[hit]
        piece = history.loc[pick, ids].copy()
        piece["field"] = pd.Series(name, index=pick, dtype="string")
        piece["old"] = before[hit]
        piece["new"] = text[hit]
        piece["old_fetched_at"] = old_t[hit]
        piece["new_fetched_at"] = new_t[hit]
        piece["sync_id"] = sync[hit]
        piece["__field"] = position
        pieces.append(piece)

    if not pieces:
        return _empty(history, ids)
    out = pd.concat(pieces, ignore_index=True)
    sort_ids = {c: _as_text(out[c]) if out[c].dtype == "category" else out[c] for c in ids}
    ranks = pd.DataFrame({"t": out["new_fetched_at"], **sort_ids, "__field": out["__field"]})
    ranked = ranks.sort_values(list(ranks.columns), kind="stable", na_position="last").index
    return out.loc[ranked].drop(columns="__field").reset_index(drop=True)


def _empty(history: pd.DataFrame, ids: list[str]) -> pd.DataFrame:
    out = history[ids].iloc[0:0].copy()
    for name in ("field", "old", "new"):
        out[name] = pd.Series(dtype="string")
    for name in ("old_fetched_at", "new_fetched_at"):
        out[name] = pd.Series(dtype="datetime64[us, UTC]")
    out["sync_id"] = pd.Series(dtype="string")
    return out.reset_index(drop=True)
