"""Where a panel's inputs come from: the service (through the loaders), frames the caller
already has, or a lake (anything with the ``Lake.read`` signature).

Each dataset is fetched once for the whole panel, over the panel's dates plus the longest
lookback of its features.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Final, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from ..errors import InvalidParameterError
from ..registry import APP_RATINGS_HISTORY_START, REGISTRY

__all__ = ["LakeLike", "fetch", "load_start", "daily_from_apps", "DISCLOSURE_SLACK"]

# The service filters insider and congress trades on the trade date, while a row becomes
# public at its filing/disclosure date, up to 2 business days (insider) or 45 days (congress)
# later by law, later still for late filers. A load reaches this many days further back, so
# that rows disclosed inside a window but traded before it are fetched too.
DISCLOSURE_SLACK: Final[dict[str, int]] = {"insider_trading": 365, "congress_trades": 365}
# Derived datasets: what to read from a lake or a dict when the dataset itself is absent.
_DERIVED: Final = {"app_ratings_daily": "app_ratings"}


@runtime_checkable
class LakeLike(Protocol):
    """What ``panel`` needs of a lake: ``md.Lake`` and any stand-in with the same ``read``."""

    def read(
        self,
        dataset: str,
        symbols: Any = None,
        *,
        start: Any = None,
        end: Any = None,
        known_at: Any = None,
    ) -> pd.DataFrame: ...


def load_start(dataset: str, start: dt.date, lookback: int | None) -> dt.date | None:
    """The first date to request for ``dataset`` so that every window from ``start`` on is
    complete; ``None``: the whole history."""
    if lookback is None:
        # Without startDate the app-ratings endpoint answers with its latest week only.
        return (
            dt.date.fromisoformat(APP_RATINGS_HISTORY_START) if "app_ratings" in dataset else None
        )
    return start - dt.timedelta(days=lookback + DISCLOSURE_SLACK.get(dataset, 0))


def daily_from_apps(apps: pd.DataFrame) -> pd.DataFrame:
    """The daily view from the apps view: per symbol, platform and date, the app with the
    most ratings (as the service's daily view), one row per symbol and date.

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
    ratings = apps["ratings_count"].to_numpy(dtype="float64", na_value=-1.0)
    # Most ratings first (an unrated app last); equal counts keep the frame's order.
    ranked = apps.reset_index(drop=True).assign(_mdf_rank=-ratings, _mdf_row=np.arange(len(apps)))
    best = (
        ranked.sort_values(["symbol", "date", "platform", "_mdf_rank", "_mdf_row"])
        .drop_duplicates(["symbol", "date", "platform"], keep="first")
        .drop(columns=["_mdf_rank", "_mdf_row"])
    )
    keys = best[["symbol", "date"]].drop_duplicates().reset_index(drop=True)
    out = keys
    for platform, columns in (
        ("ios", ("score", "ratings_count")),
        ("android", ("score", "ratings_count", "install_count")),
    ):
        part = best[best["platform"].astype("string") == platform]
        present = [c for c in columns if c in part.columns]
        part = part[["symbol", "date", *present]].rename(
            columns={c: f"{platform}_{c}" for c in present}
        )
        out = out.merge(part, on=["symbol", "date"], how="left")
    out.attrs = {**apps.attrs, "dataset": "app_ratings_daily"}
    return out


def _check_frame(name: str, frame: Any, origin: str) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise InvalidParameterError(
            f"{origin} gave {type(frame).__name__} for {name!r}, not a DataFrame",
            parameter="source",
        )
    named = frame.attrs.get("dataset")
    if named in REGISTRY and named != name:
        raise InvalidParameterError(
            f"{origin}: the frame given as {name!r} holds {named!r} (df.attrs['dataset'])",
            parameter="source",
        )
    if "symbol" not in frame.columns:
        raise InvalidParameterError(
            f"{origin}: the {name!r} frame has no 'symbol' column", parameter="source"
        )
    return frame


def _from_mapping(frames: Mapping[str, Any], name: str) -> pd.DataFrame:
    given = {str(k).replace("-", "_"): v for k, v in frames.items()}
    if name in given:
        return _check_frame(name, given[name], "source")
    base = _DERIVED.get(name)
    if base is not None and base in given:
        return daily_from_apps(_check_frame(base, given[base], "source"))
    wanted = f"{name!r}" + (f" (or {base!r})" if base else "")
    raise InvalidParameterError(
        f"source has no {wanted} frame; it holds {sorted(given) or 'nothing'}",
        parameter="source",
    )


def _from_lake(
    lake: Any, name: str, symbols: list[str], start: dt.date | None, end: dt.date, known_at: Any
) -> pd.DataFrame:
    base = _DERIVED.get(name, name)
    frame = lake.read(base, symbols, start=start, end=end, known_at=known_at)
    frame = _check_frame(base, frame, "the lake")
    return daily_from_apps(frame) if base != name else frame


def _from_service(
    client: Any, name: str, symbols: list[str], start: dt.date | None, end: dt.date
) -> pd.DataFrame:
    from ..loaders import load

    return load(name, symbols, start=start, end=end, client=client)


def fetch(
    lookbacks: Mapping[str, int | None],
    symbols: list[str],
    start: dt.date,
    end: dt.date,
    *,
    source: Any = None,
    known_at: Any = None,
    client: Any = None,
) -> dict[str, pd.DataFrame]:
    """One frame per dataset of ``lookbacks`` (dataset -> longest lookback in days, or
    ``None`` for all history), from ``source``."""
    out: dict[str, pd.DataFrame] = {}
    for name, lookback in lookbacks.items():
        first = load_start(name, start, lookback)
        if source is None:
            frame = _from_service(client, name, symbols, first, end)
        elif isinstance(source, Mapping):
            frame = _from_mapping(source, name)
        else:
            frame = _from_lake(source, name, symbols, first, end, known_at)
        out[name] = frame
    return out


def check_source(source: Any, known_at: Any, client: Any) -> pd.Timestamp | None:
    """Reject a source ``panel`` cannot read, and ``known_at``/``client`` where they do not
    apply, before anything is loaded. Returns ``known_at`` as a UTC Timestamp."""
    is_lake = source is not None and not isinstance(source, Mapping)
    if is_lake and not isinstance(source, LakeLike):
        raise InvalidParameterError(
            f"source must be None, a dict of frames or a lake (an object with .read), not "
            f"{type(source).__name__}",
            parameter="source",
        )
    if client is not None and source is not None:
        raise InvalidParameterError(
            "client= applies only when source is None (the service)", parameter="client"
        )
    if known_at is None:
        return None
    if not is_lake:
        raise InvalidParameterError(
            "known_at needs a lake as source (only a lake knows when each row was fetched)",
            parameter="known_at",
        )
    try:
        ts = pd.Timestamp(known_at)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(
            f"known_at={known_at!r} is not a time ({exc})", parameter="known_at"
        ) from None
    if pd.isna(ts):
        raise InvalidParameterError("known_at is NaT", parameter="known_at")
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
