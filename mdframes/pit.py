"""Point-in-time helpers: what was public when, so features carry no look-ahead.

Every dataset has a point-in-time anchor in the registry (insider ``filing_date``, congress
``disclosure_date``, contracts ``start_date``, patents ``patent_date``, the rest ``date``): the
moment a row became public. A congress trade with no disclosure date counts as public 45 days
after the trade, the latest the law allows, never at the trade date.

Naive timestamps are read as UTC wherever they meet aware ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import pandas_dtype

from .errors import InvalidParameterError
from .registry import REGISTRY

__all__ = ["point_in_time", "asof_join", "public_times", "CONGRESS_DISCLOSURE_DAYS"]

CONGRESS_DISCLOSURE_DAYS = 45
_UNITS = ("s", "ms", "us", "ns")


def _anchor_of(df: pd.DataFrame, anchor: str | None, role: str) -> str:
    dataset = df.attrs.get("dataset")
    if anchor is None and dataset in REGISTRY:
        anchor = REGISTRY[dataset].anchor
    if anchor is None:
        why = (
            f"dataset {dataset!r} has no point-in-time anchor"
            if dataset in REGISTRY
            else "df.attrs['dataset'] names no registry dataset"
        )
        raise InvalidParameterError(
            f"cannot tell when the rows of {role} became public: {why}; pass anchor='column'",
            parameter="anchor",
        )
    if anchor not in df.columns:
        raise InvalidParameterError(
            f"anchor column {anchor!r} is not in {role} (columns: {', '.join(map(str, df.columns))})",
            parameter="anchor",
        )
    return anchor


def _datetimes(values: pd.Series, what: str) -> pd.Series:
    """A column as datetime64 (naive or aware as it comes); text is parsed, never guessed."""
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        return values
    try:
        parsed = pd.to_datetime(values, format="ISO8601")
    except (TypeError, ValueError):
        try:  # mixed offsets: bring them to UTC
            parsed = pd.to_datetime(values, format="ISO8601", utc=True)
        except (TypeError, ValueError) as exc:
            raise InvalidParameterError(
                f"{what} holds values that are not dates: {exc}", parameter="anchor"
            ) from None
    return parsed


def _is_aware(values: pd.Series) -> bool:
    return isinstance(values.dtype, pd.DatetimeTZDtype)


def _to_mode(values: pd.Series, aware: bool) -> pd.Series:
    """Aware UTC when ``aware``, else naive (aware values converted to UTC first)."""
    if _is_aware(values):
        return values.dt.tz_convert("UTC") if aware else values.dt.tz_convert(None)
    return values.dt.tz_localize("UTC") if aware else values


def public_times(df: pd.DataFrame, anchor: str | None = None) -> pd.Series:
    """When each row of ``df`` became public: its anchor, congress' 45-day rule applied.

    The anchor is ``anchor`` or the registry anchor of ``df.attrs["dataset"]``. A congress row
    (anchor ``disclosure_date`` and a ``date`` column) whose ``disclosure_date`` is null counts
    as public ``date`` + 45 days. Other null anchors stay NaT (never public).

    Examples
    --------
    >>> df = pd.DataFrame({"date": pd.to_datetime(["2024-01-02"]),
    ...                    "disclosure_date": pd.to_datetime([None])})
    >>> public_times(df, "disclosure_date").tolist()
    [Timestamp('2024-02-16 00:00:00')]
    """
    name = _anchor_of(df, anchor, "the frame")
    times = _datetimes(df[name], f"anchor column {name!r}")
    if name == "disclosure_date" and "date" in df.columns:
        traded = _to_mode(_datetimes(df["date"], "column 'date'"), _is_aware(times))
        deadline = traded + pd.Timedelta(days=CONGRESS_DISCLOSURE_DAYS)
        times = times.where(times.notna(), deadline)
    return times.rename(name)


def _as_of(value: Any) -> pd.Timestamp:
    if value is None or isinstance(value, (bool, int, float)):
        raise InvalidParameterError("as_of is required", parameter="as_of")
    try:
        ts = pd.Timestamp(value)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(
            f"as_of must be a date or time, got {value!r} ({exc})", parameter="as_of"
        ) from None
    if pd.isna(ts):
        raise InvalidParameterError("as_of is NaT", parameter="as_of")
    return ts


def _align_scalar(ts: pd.Timestamp, aware: bool) -> pd.Timestamp:
    if ts.tzinfo is None:
        return ts.tz_localize("UTC") if aware else ts
    return ts.tz_convert("UTC") if aware else ts.tz_convert("UTC").tz_localize(None)


def point_in_time(df: pd.DataFrame, as_of: Any, *, anchor: str | None = None) -> pd.DataFrame:
    """The rows of ``df`` that were public at ``as_of``.

    A row is kept when its anchor (``anchor``, or the registry anchor of
    ``df.attrs["dataset"]``) is on or before ``as_of``; rows whose anchor is null are dropped,
    except congress trades without a disclosure date, which count as public 45 days after
    the trade. ``as_of`` is a ``str``, ``date``, ``datetime`` or ``Timestamp``; a date means
    midnight at its start, so a timestamped row of that same day (a forum post) is not yet
    public, while a dated row (a filing date) is. Naive values meet aware ones as UTC.

    Returns a new frame with the kept rows, their original index and ``df.attrs``.

    Examples
    --------
    >>> trades = pd.DataFrame({
    ...     "symbol": ["AAPL", "AAPL"],
    ...     "date": pd.to_datetime(["2024-01-02", "2024-01-10"]),
    ...     "disclosure_date": pd.to_datetime(["2024-01-20", "2024-03-01"]),
    ... })
    >>> trades.attrs["dataset"] = "congress_trades"
    >>> point_in_time(trades, "2024-02-01")["date"].dt.strftime("%Y-%m-%d").tolist()
    ['2024-01-02']
    """
    ts = _as_of(as_of)
    times = public_times(df, anchor)
    cutoff = _align_scalar(ts, _is_aware(times))
    keep = (times <= cutoff).fillna(False).to_numpy(dtype=bool)
    out = df.loc[keep].copy()
    out.attrs = dict(df.attrs)
    return out


def _finest(*series: pd.Series) -> str:
    return max((s.dt.unit for s in series), key=_UNITS.index)


def _keys(values: pd.Series, unit: str, aware: bool) -> pd.Series:
    values = _to_mode(values, aware)
    return values.astype(
        pandas_dtype(f"datetime64[{unit}, UTC]" if aware else f"datetime64[{unit}]")
    )


def _object_keys(values: pd.Series) -> pd.Series:
    # Object dtype on both sides: category vs string keys would make merge_asof refuse them,
    # and pandas would infer ``str`` from an object array of strings unless told otherwise.
    keys = values.astype(object).where(values.notna(), None).to_numpy()
    return pd.Series(keys, dtype=object)


def asof_join(
    left: pd.DataFrame,
    right: pd.DataFrame,
    *,
    on: str = "date",
    by: str | list[str] | None = "symbol",
    anchor: str | None = None,
    suffixes: tuple[str, str] = ("", "_right"),
) -> pd.DataFrame:
    """Attach to each row of ``left`` the latest row of ``right`` that was public at ``left[on]``.

    This is the join feature engineering needs to avoid look-ahead bias: a label dated D only
    sees alternative data whose point-in-time anchor (``anchor``, or the registry anchor of
    ``right.attrs["dataset"]``; congress' 45-day rule included) is on or before D, per ``by``
    group. It is :func:`pandas.merge_asof` with ``direction="backward"`` and
    ``allow_exact_matches=True``, run on the public times rather than on the event dates.

    Either input may be unsorted; ``by`` columns may be category, string or object. The
    result has ``left``'s rows in ``left``'s order and index, then ``right``'s columns except
    ``by`` (NA where nothing was public yet); names in both get ``suffixes``. Right rows that
    became public at the same moment resolve to the one with the latest ``date``.

    Examples
    --------
    >>> prices = pd.DataFrame({"symbol": ["AAPL", "AAPL"],
    ...                        "date": pd.to_datetime(["2024-01-05", "2024-01-12"]),
    ...                        "close": [185.0, 186.0]})
    >>> insider = pd.DataFrame({"symbol": ["AAPL"], "date": pd.to_datetime(["2024-01-04"]),
    ...                         "filing_date": pd.to_datetime(["2024-01-08"]), "shares": [100]})
    >>> insider.attrs["dataset"] = "insider_trading"
    >>> asof_join(prices, insider)[["date", "close", "filing_date", "shares"]]
            date  close filing_date  shares
    0 2024-01-05  185.0         NaT     NaN
    1 2024-01-12  186.0  2024-01-08   100.0

    The trade of 2024-01-04 is not visible on 2024-01-05: it was filed on 2024-01-08.
    """
    by_cols = [] if by is None else [by] if isinstance(by, str) else list(by)
    if on not in left.columns:
        raise InvalidParameterError(f"column {on!r} is not in left", parameter="on")
    for col in by_cols:
        if col not in left.columns or col not in right.columns:
            raise InvalidParameterError(f"by column {col!r} must be in both frames", parameter="by")

    avail = public_times(right, anchor)
    when = _datetimes(left[on], f"left column {on!r}")
    aware = _is_aware(avail) or _is_aware(when)
    unit = _finest(when, avail)

    # Slim frames with private names: merge_asof only sees keys and row positions, so the
    # columns of either side keep their dtypes and cannot collide with our helpers.
    key, pos = "__mdf_time", "__mdf_pos"
    group = [f"__mdf_by{i}" for i in range(len(by_cols))]
    lhs = pd.DataFrame({key: _keys(when, unit, aware).to_numpy(), pos: np.arange(len(left))})
    rhs = pd.DataFrame({key: _keys(avail, unit, aware).to_numpy(), pos: np.arange(len(right))})
    for g, col in zip(group, by_cols, strict=True):
        lhs[g] = _object_keys(left[col])
        rhs[g] = _object_keys(right[col])
    lhs = lhs.dropna(subset=[key, *group]).sort_values(key, kind="stable")
    rhs = rhs.dropna(subset=[key, *group])
    order = [key]
    if "date" in right.columns and avail.name != "date":
        rhs["__mdf_tie"] = _datetimes(right["date"], "right column 'date'").to_numpy()[
            rhs[pos].to_numpy()
        ]
        order.append("__mdf_tie")
    rhs = rhs.sort_values(order, kind="stable", na_position="first")

    matched = pd.merge_asof(
        lhs,
        rhs.rename(columns={pos: "__mdf_rpos"}),
        on=key,
        by=group or None,
        direction="backward",
        allow_exact_matches=True,
    )
    rpos = np.full(len(left), -1, dtype=np.int64)
    hit = matched["__mdf_rpos"].notna().to_numpy()
    rpos[matched[pos].to_numpy()[hit]] = matched["__mdf_rpos"].to_numpy()[hit].astype(np.int64)

    # Position -1 is not a label of the RangeIndex, so reindex gives an all-NA row there.
    attached = right.drop(columns=by_cols).reset_index(drop=True).reindex(rpos)
    base = left.reset_index(drop=True)
    both = set(base.columns) & set(attached.columns)
    base = base.rename(columns={c: f"{c}{suffixes[0]}" for c in both})
    attached = attached.rename(columns={c: f"{c}{suffixes[1]}" for c in both})
    attached.index = base.index
    out = pd.concat([base, attached], axis=1)
    if out.columns.duplicated().any():
        raise InvalidParameterError(
            f"suffixes {suffixes!r} leave duplicate column names", parameter="suffixes"
        )
    out.index = left.index
    out.attrs = dict(left.attrs)
    return out
