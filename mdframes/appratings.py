"""App ratings in one shape: every app-ratings payload or frame to the ``view="apps"`` columns.

:func:`app_ratings_long` takes a v2 payload (current or older weekly shape), a v1 payload, a
``view="daily"`` frame or a list of them, and types each column itself (its own casters:
a reshaping helper validates nothing, and a caller's payload may be partial).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import pandas_dtype

from .errors import InvalidParameterError, ResponseFormatError
from .kinds import DATE_DTYPE
from .registry import PLATFORMS

__all__ = ["app_ratings_long", "daily_from_apps", "APP_COLUMNS"]

APP_COLUMNS = (
    "symbol",
    "name",
    "cik",
    "platform",
    "app_id",
    "app_name",
    "date",
    "score",
    "ratings_count",
    "install_count",
)
_TEXT = ("symbol", "name", "cik", "app_id", "app_name")
_DAILY_PREFIX = {"ios": "ios_", "android": "android_"}


def _unwrap(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    # The envelope's ``data`` is the data object; the data object's own ``data`` is a list.
    inner = obj.get("data")
    return inner if isinstance(inner, Mapping) else obj


def _from_daily(frame: pd.DataFrame) -> pd.DataFrame:
    parts = []
    for platform, prefix in _DAILY_PREFIX.items():
        score, count = frame.get(prefix + "score"), frame.get(prefix + "ratings_count")
        if score is None or count is None:
            raise InvalidParameterError(
                f"a daily app-ratings frame needs {prefix}score and {prefix}ratings_count",
                parameter="obj",
            )
        # Typed NA columns (not all-None objects), so that the concat keeps their dtypes.
        missing = pd.Series(pd.array([None] * len(frame), dtype="string"), index=frame.index)
        installs = frame.get(prefix + "install_count")
        part = pd.DataFrame(
            {
                "symbol": frame.get("symbol"),
                "name": frame.get("name"),
                "cik": frame.get("cik", missing),
                "platform": platform,
                "app_id": missing,
                "app_name": missing,
                "date": frame.get("date"),
                "score": score,
                "ratings_count": count,
                "install_count": installs
                if installs is not None
                else pd.Series(pd.array([None] * len(frame), dtype="Int64"), index=frame.index),
            },
            index=frame.index,
        )
        parts.append(part[score.notna() | count.notna()])
    return pd.concat(parts, ignore_index=True)


def _numbers(values: pd.Series, column: str, dtype: str) -> Any:
    try:
        numeric = pd.to_numeric(values.astype(object).where(values.notna(), None))
        return numeric.astype(pandas_dtype(dtype))
    except (TypeError, ValueError) as exc:
        raise ResponseFormatError(f"app ratings: {column} holds a non-number ({exc})") from None


def _dates(values: pd.Series) -> pd.Series:
    if isinstance(values.dtype, pd.DatetimeTZDtype):
        values = values.dt.tz_convert(None)
    elif not pd.api.types.is_datetime64_dtype(values.dtype):
        try:
            values = pd.to_datetime(values, format="ISO8601", utc=True).dt.tz_convert(None)
        except (TypeError, ValueError) as exc:
            raise ResponseFormatError(f"app ratings: unreadable date ({exc})") from None
    return values.astype(DATE_DTYPE)


def _typed_apps(frame: pd.DataFrame) -> pd.DataFrame:
    out = pd.DataFrame(index=pd.RangeIndex(len(frame)))
    frame = frame.reset_index(drop=True)
    for col in APP_COLUMNS:
        values = frame[col] if col in frame.columns else pd.Series(None, index=out.index)
        if col in _TEXT:
            out[col] = values.astype(object).where(values.notna(), None).astype("string")
        elif col == "platform":
            text = values.astype("string").str.strip().str.lower()
            bad = sorted(set(text.dropna()) - set(PLATFORMS))
            if bad:
                raise ResponseFormatError(f"app ratings: unknown platform(s) {bad}")
            out[col] = pd.Categorical(text, categories=list(PLATFORMS))
        elif col == "date":
            out[col] = _dates(values)
        elif col == "score":
            out[col] = _numbers(values, col, "float64")
        else:
            out[col] = _numbers(values, col, "Int64")
    # The loaders' order (CONTRACT §2): symbols as they come, then oldest first, ties by the
    # record id (platform, app_id).
    codes, _ = pd.factorize(out["symbol"], use_na_sentinel=True)
    keyed = out.assign(__symbol=np.where(codes < 0, len(out), codes))
    keyed = keyed.sort_values(
        ["__symbol", "date", "platform", "app_id"], na_position="last", kind="stable"
    )
    return keyed.drop(columns="__symbol").reset_index(drop=True)


def _payload_frame(obj: Mapping[str, Any]) -> pd.DataFrame:
    """A raw payload through the loaders' own records and typing steps (validation off:
    this is a reshaping helper, and the caller's payload may be partial)."""
    from .frame import build_frame
    from .records import extract
    from .registry import REGISTRY

    if "appRatings" in obj:  # v1: daily-view columns first, then long
        ds = REGISTRY["v1/app_ratings"]
        return _from_daily(build_frame(ds, [extract(ds, obj)], strict=False))
    ds = REGISTRY["app_ratings"]
    return build_frame(ds, [extract(ds, _unwrap(obj))], strict=False)


def _apps_frame(obj: Any) -> pd.DataFrame:
    if isinstance(obj, pd.DataFrame):
        if "platform" in obj.columns:  # already long: retype and sort only
            return obj
        return _from_daily(obj)
    if isinstance(obj, Mapping):
        frame = _payload_frame(obj)
        # An observation with neither score nor count is a null platform: no row, in every
        # shape, so that the shapes agree.
        return frame[frame["score"].notna() | frame["ratings_count"].notna()]
    raise InvalidParameterError(
        f"app_ratings_long takes a payload dict, a list of them or a frame, not "
        f"{type(obj).__name__}",
        parameter="obj",
    )


def app_ratings_long(obj: Any) -> pd.DataFrame:
    """One row per app per platform per date, in the ``view="apps"`` columns.

    Accepts a raw v2 app-ratings payload (the ``{success, data, meta}`` envelope or its
    ``data`` object; the current shape with ``apps`` or the older weekly one without, whose
    rows have NA ``app_id``/``app_name``), a v1 app-ratings payload (``appStore*`` -> ios,
    ``playStore*`` -> android; NA ``cik``), a ``view="daily"`` frame, or a list of any of
    these. An observation with neither a score nor a ratings count (a null platform) gives no
    row, so equal observations give equal rows whatever the shape.

    Columns: ``symbol, name, cik, platform, app_id, app_name, date, score, ratings_count,
    install_count`` (string, string, string, category[ios, android], string, string, naive
    datetime64, float64, Int64, Int64). Rows come as the loaders order them: symbols in the
    order they appear, then date oldest first, then platform (ios first) and app_id (NA last).

    Examples
    --------
    >>> payload = {"ticker": "AAPL", "name": "Apple", "appRatings": [
    ...     {"date": "2026-09-03", "appStoreScore": 4.7, "appStoreRatingsCount": 100,
    ...      "playStoreScore": None, "playStoreRatingsCount": None}]}
    >>> app_ratings_long(payload)[["symbol", "platform", "score", "ratings_count"]]
      symbol platform  score  ratings_count
    0   AAPL      ios    4.7            100
    """
    items = list(obj) if isinstance(obj, (list, tuple)) else [obj]
    frames = [_apps_frame(item) for item in items]
    frames = [f for f in frames if len(f)] or frames[:1] or [pd.DataFrame(columns=APP_COLUMNS)]
    out = _typed_apps(pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0])
    base = obj.attrs if isinstance(obj, pd.DataFrame) else {}
    out.attrs = {**base, "dataset": "app_ratings"}
    return out


def daily_from_apps(apps: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """The daily view from the apps view: per symbol, platform and date, the app with the
    most ratings (as the service's daily view), one row per symbol and date (and ``by``).

    Examples
    --------
    >>> apps = pd.DataFrame({"symbol": ["A", "A"], "platform": ["ios", "ios"],
    ...                      "app_id": ["1", "2"], "date": pd.to_datetime(["2026-09-03"] * 2),
    ...                      "score": [4.0, 3.0], "ratings_count": [10, 99]})
    >>> daily_from_apps(apps)[["symbol", "date", "ios_score", "ios_ratings_count"]]
      symbol       date  ios_score  ios_ratings_count
    0      A 2026-09-03        3.0                 99
    """
    need = {"symbol", "platform", "date", "score", "ratings_count"}
    missing = need - set(apps.columns)
    if missing:
        raise InvalidParameterError(
            f"app_ratings frame lacks {sorted(missing)}: give the apps view "
            "(load_app_ratings(view='apps')) or an 'app_ratings_daily' frame",
            parameter="source",
        )
    keys = ["symbol", "date", *by]
    ratings = apps["ratings_count"].to_numpy(dtype="float64", na_value=-1.0)
    # Most ratings first (an unrated app last); equal counts keep the frame's order.
    ranked = apps.reset_index(drop=True).assign(_mdf_rank=-ratings, _mdf_row=np.arange(len(apps)))
    best = (
        ranked.sort_values([*keys, "platform", "_mdf_rank", "_mdf_row"])
        .drop_duplicates([*keys, "platform"], keep="first")
        .drop(columns=["_mdf_rank", "_mdf_row"])
    )
    out = best[keys].drop_duplicates().reset_index(drop=True)
    for platform, columns in (
        ("ios", ("score", "ratings_count")),
        ("android", ("score", "ratings_count", "install_count")),
    ):
        part = best[best["platform"].astype("string") == platform]
        present = [c for c in columns if c in part.columns]
        part = part[[*keys, *present]].rename(columns={c: f"{platform}_{c}" for c in present})
        out = out.merge(part, on=keys, how="left")
    out.attrs = {**apps.attrs, "dataset": "app_ratings_daily"}
    return out
