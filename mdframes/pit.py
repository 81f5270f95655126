"""Point-in-time helpers: what was public when, so features carry no look-ahead.

Every dataset has a point-in-time anchor in the registry (insider ``filing_date``, congress
``disclosure_date``, contracts ``start_date``, patents ``patent_date``, the rest ``date``): the
moment a row became public. Where the law sets a deadline for publication, a row whose anchor
is null counts as public at that deadline, the latest the law allows, never at the event
itself (the registry entry's ``deadline``): congress trades 45 days after the trade, insider
Form 4 filings 2 business days after the transaction.

Naive timestamps are read as UTC wherever they meet aware ones.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd
from pandas.api.types import pandas_dtype

from ._typing import TimeLike
from .errors import InvalidParameterError
from .params import to_utc
from .registry import REGISTRY, Deadline

__all__ = [
    "point_in_time",
    "asof_join",
    "public_times",
    "legal_deadline",
    "NULL_ANCHOR_CHOICES",
]

NullAnchor = Literal["deadline", "drop"]
NULL_ANCHOR_CHOICES: tuple[str, ...] = ("deadline", "drop")
_UNITS = ("s", "ms", "us", "ns")


def legal_deadline(dataset: str | None, anchor: str) -> Deadline | None:
    """The deadline rule for ``anchor`` of ``dataset``, or None where the law sets none.

    The rule is the registry entry's ``deadline`` (``Dataset.deadline``), for its ``anchor``
    column only. A frame that names no registry dataset (built by hand) gets the rule of its
    anchor's column name, so ``disclosure_date`` keeps the 45-day rule there too.

    Examples
    --------
    >>> legal_deadline("insider_trading", "filing_date").days
    2
    >>> legal_deadline("lobbying", "date") is None
    True
    """
    if dataset in REGISTRY:
        ds = REGISTRY[str(dataset)]
        return ds.deadline if ds.anchor == anchor else None
    return next(
        (ds.deadline for ds in REGISTRY.values() if ds.deadline and ds.anchor == anchor), None
    )


def _check_null_anchor(null_anchor: Any) -> None:
    if not isinstance(null_anchor, str) or null_anchor not in NULL_ANCHOR_CHOICES:
        raise InvalidParameterError(
            f"null_anchor={null_anchor!r} is not one of {', '.join(NULL_ANCHOR_CHOICES)}",
            parameter="null_anchor",
        )


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
        return pd.to_datetime(values, format="ISO8601")
    except (TypeError, ValueError):
        try:  # mixed offsets: bring them to UTC
            return pd.to_datetime(values, format="ISO8601", utc=True)
        except (TypeError, ValueError) as exc:
            raise InvalidParameterError(
                f"{what} holds values that are not dates: {exc}", parameter="anchor"
            ) from None


def _is_aware(values: pd.Series) -> bool:
    return isinstance(values.dtype, pd.DatetimeTZDtype)


def _to_mode(values: pd.Series, aware: bool) -> pd.Series:
    """Aware UTC when ``aware``, else naive (aware values converted to UTC first)."""
    if _is_aware(values):
        return values.dt.tz_convert("UTC") if aware else values.dt.tz_convert(None)
    return values.dt.tz_localize("UTC") if aware else values


def _deadlines(event: pd.Series, rule: Deadline, like: pd.Series) -> pd.Series:
    """``rule``'s deadline for every event, in the dtype (unit, time zone) of ``like``."""
    traded = _to_mode(_datetimes(event, f"column {rule.event!r}"), aware=False)
    if rule.business_days:
        # Rolling a weekend day back to Friday first makes "+2" the second weekday strictly
        # after it (Saturday -> Tuesday); NaT stays NaT.
        days = traded.to_numpy().astype("datetime64[D]")
        due = np.busday_offset(days, rule.days, roll="backward").astype("datetime64[s]")
        out = pd.Series(due, index=event.index)
    else:
        out = traded + pd.Timedelta(days=rule.days)
    if _is_aware(like):
        out = out.dt.tz_localize("UTC").dt.tz_convert(like.dt.tz)
    return out.astype(like.dtype)


def _public(
    df: pd.DataFrame, anchor: str | None, null_anchor: str, role: str
) -> tuple[pd.Series, np.ndarray]:
    """Public times of the rows of ``df`` and a mask of those whose anchor was imputed."""
    name = _anchor_of(df, anchor, role)
    times = _datetimes(df[name], f"anchor column {name!r}")
    imputed = np.zeros(len(df), dtype=bool)
    missing = times.isna().to_numpy(dtype=bool)
    rule = legal_deadline(df.attrs.get("dataset"), name)
    if null_anchor == "deadline" and missing.any() and rule and rule.event in df.columns:
        due = _deadlines(df[rule.event], rule, times)
        imputed = missing & due.notna().to_numpy(dtype=bool)
        times = times.where(~imputed, due)
    return times.rename(name), imputed


def public_times(
    df: pd.DataFrame, anchor: str | None = None, *, null_anchor: NullAnchor = "deadline"
) -> pd.Series:
    """When each row of ``df`` became public: its anchor, or the legal deadline where null.

    The anchor is ``anchor`` or the registry anchor of ``df.attrs["dataset"]``. With
    ``null_anchor="deadline"`` a null anchor that has a legal deadline
    (the registry entry's ``deadline``: congress 45 days after the trade ``date``, insider 2
    business days after the transaction ``date``) gets that deadline; every other null anchor stays
    NaT (never public), as all do with ``null_anchor="drop"``.

    Examples
    --------
    >>> df = pd.DataFrame({"date": pd.to_datetime(["2024-01-02"]),
    ...                    "disclosure_date": pd.to_datetime([None])})
    >>> public_times(df, "disclosure_date").tolist()
    [Timestamp('2024-02-16 00:00:00')]
    """
    _check_null_anchor(null_anchor)
    return _public(df, anchor, null_anchor, "the frame")[0]


def point_in_time(
    df: pd.DataFrame,
    as_of: TimeLike,
    *,
    anchor: str | None = None,
    null_anchor: NullAnchor = "deadline",
) -> pd.DataFrame:
    """The rows of ``df`` that were public at ``as_of``.

    A row is kept when its anchor (``anchor``, or the registry anchor of
    ``df.attrs["dataset"]``) is on or before ``as_of``. ``as_of`` is a ``str``, ``date``,
    ``datetime`` or ``Timestamp``; a date means midnight at its start, so a timestamped row of
    that same day (a forum post) is not yet public, while a dated row (a filing date) is.
    Naive values meet aware ones as UTC.

    A null anchor is replaced by the legal deadline where the dataset has one
    (the registry entry's ``deadline``): a congress trade counts as public 45 days after its trade
    ``date``, an insider transaction 2 business days (Monday to Friday) after its ``date``.
    Other null anchors are dropped, and so are all of them with ``null_anchor="drop"``.

    Returns a new frame with the kept rows, their original index and ``df.attrs``, plus
    ``attrs["imputed_anchors"]``: how many of the kept rows are public by a deadline. Their
    anchor column stays null, as the service sent it; :func:`public_times` gives the times
    used, and ``df.loc[out.index, anchor].isna()`` finds the rows.

    Examples
    --------
    >>> trades = pd.DataFrame({
    ...     "symbol": ["AAPL", "AAPL", "AAPL"],
    ...     "date": pd.to_datetime(["2024-01-02", "2024-01-10", "2024-01-12"]),
    ...     "filing_date": pd.to_datetime(["2024-01-03", "2024-03-01", None]),
    ... })
    >>> trades.attrs["dataset"] = "insider_trading"
    >>> known = point_in_time(trades, "2024-02-01")
    >>> known["date"].dt.strftime("%Y-%m-%d").tolist(), known.attrs["imputed_anchors"]
    (['2024-01-02', '2024-01-12'], 1)

    The trade of Friday 2024-01-12 has no filing date: it counts as filed on Tuesday
    2024-01-16, the second business day after it.
    """
    _check_null_anchor(null_anchor)
    # A date means its first instant here: what was public when that day began.
    ts = to_utc(as_of, "as_of", date_means="start")
    times, imputed = _public(df, anchor, null_anchor, "the frame")
    cutoff = ts if _is_aware(times) else ts.tz_localize(None)  # as the anchors hold times
    keep = (times <= cutoff).fillna(False).to_numpy(dtype=bool)
    out = df.loc[keep].copy()
    out.attrs = {**df.attrs, "imputed_anchors": int((imputed & keep).sum())}
    return out


def _keys(values: pd.Series, unit: str, aware: bool) -> pd.Series:
    return _to_mode(values, aware).astype(
        pandas_dtype(f"datetime64[{unit}, UTC]" if aware else f"datetime64[{unit}]")
    )


def _object_keys(values: pd.Series) -> pd.Series:
    # Object dtype on both sides: category vs string keys would make merge_asof refuse them,
    # and pandas would infer ``str`` from an object array of strings unless told otherwise.
    return pd.Series(values.astype(object).where(values.notna(), None).to_numpy(), dtype=object)


def asof_join(
    left: pd.DataFrame,
    right: pd.DataFrame,
    *,
    on: str = "date",
    by: str | list[str] | None = "symbol",
    anchor: str | None = None,
    suffixes: tuple[str, str] = ("", "_right"),
    null_anchor: NullAnchor = "deadline",
) -> pd.DataFrame:
    """Attach to each row of ``left`` the latest row of ``right`` that was public at ``left[on]``.

    This is the join feature engineering needs to avoid look-ahead bias: a label dated D only
    sees alternative data whose point-in-time anchor (``anchor``, or the registry anchor of
    ``right.attrs["dataset"]``) is on or before D, per ``by`` group. Null anchors of ``right``
    follow ``null_anchor`` as in :func:`point_in_time`: the legal deadline where there is one
    (congress 45 days, insider 2 business days), otherwise never public. It is
    :func:`pandas.merge_asof` with ``direction="backward"`` and ``allow_exact_matches=True``,
    run on the public times rather than on the event dates.

    Either input may be unsorted; ``by`` columns may be category, string or object. The
    result has ``left``'s rows in ``left``'s order and index, then ``right``'s columns except
    ``by`` (NA where nothing was public yet); names in both get ``suffixes``. Right rows that
    became public at the same moment resolve to the one with the latest ``date``. The result's
    ``attrs`` are ``left``'s plus ``imputed_anchors``: how many result rows got a ``right`` row
    that is public by a deadline (its anchor column stays null, as sent).

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
    _check_null_anchor(null_anchor)
    by_cols = [] if by is None else [by] if isinstance(by, str) else list(by)
    if on not in left.columns:
        raise InvalidParameterError(f"column {on!r} is not in left", parameter="on")
    for col in by_cols:
        if col not in left.columns or col not in right.columns:
            raise InvalidParameterError(f"by column {col!r} must be in both frames", parameter="by")

    avail, imputed = _public(right, anchor, null_anchor, "right")
    when = _datetimes(left[on], f"left column {on!r}")
    aware = _is_aware(avail) or _is_aware(when)
    unit = max((when.dt.unit, avail.dt.unit), key=_UNITS.index)  # the finer of the two

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
    out.attrs = {**left.attrs, "imputed_anchors": int(imputed[rpos[rpos >= 0]].sum())}
    return out
