"""A brute-force reference for ``md.features.panel``: for each date D and symbol, filter the
rows by anchor and window, then aggregate, one cell at a time.

It shares nothing with the engine but the point-in-time rule itself (``md.pit.public_times``,
which ``md.point_in_time`` uses too): row definitions are written again from CONTRACT §11,
windows are plain comparisons of times, aggregations plain numpy. Used by the tests and by
``benchmarks/bench_features.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

import mdframes as md
from mdframes.features import Feature

# CONTRACT §11's table: name -> (dataset, aggregation, window days or None).
DEFINITIONS: dict[str, tuple[str, str, int | None]] = {
    "insider_net_value_90d": ("insider_trading", "sum", 90),
    "insider_buy_count_90d": ("insider_trading", "count", 90),
    "congress_net_buy_90d": ("congress_trades", "sum", 90),
    "sentiment_mean_7d": ("sentiment", "mean", 7),
    "sentiment_change_30d": ("sentiment", "change", 30),
    "put_call_ratio_last": ("put_call_ratio", "last", None),
    "put_call_ratio_mean_20d": ("put_call_ratio", "mean", 20),
    "analyst_net_upgrades_30d": ("analyst_ratings", "sum", 30),
    "news_count_7d": ("news", "count", 7),
    "news_sentiment_mean_7d": ("news", "mean", 7),
    "lobbying_amount_365d": ("lobbying", "sum", 365),
    "contracts_award_365d": ("government_contracts", "sum", 365),
    "patents_granted_365d": ("patent_filings", "count", 365),
    "app_ios_score_last": ("app_ratings_daily", "last", None),
    "app_android_score_last": ("app_ratings_daily", "last", None),
    "forum_mentions_7d": ("forum_mentions", "sum", 7),
    "employee_count_last": ("professionalnet", "last", None),
}
INT64 = {
    "insider_buy_count_90d",
    "analyst_net_upgrades_30d",
    "news_count_7d",
    "patents_granted_365d",
    "forum_mentions_7d",
    "employee_count_last",
}


def _floats(values: Any) -> np.ndarray:
    return pd.Series(values).astype("Float64").to_numpy(dtype="float64", na_value=np.nan)


def _text(values: pd.Series) -> np.ndarray:
    return values.astype("string").to_numpy(dtype=object, na_value=None)


def catalog_rows(name: str, df: pd.DataFrame) -> np.ndarray:
    """Each row's number for catalog feature ``name`` (NaN: the row does not count)."""
    if name == "insider_net_value_90d":
        group = _text(md.insider_groups(df)["group"])
        sign = np.array(
            [{"acquisition": 1, "disposition": -1, "neutral": 0}.get(g, np.nan) for g in group]
        )
        return _floats(df["total_value"]) * sign
    if name == "insider_buy_count_90d":
        return np.where(_text(df["transaction_type"]) == "Purchase", 1.0, np.nan)
    if name == "congress_net_buy_90d":
        bounds = md.congress_amount_bounds(df)
        lo, hi = _floats(bounds["amount_min"]), _floats(bounds["amount_max"])
        mid = np.where(np.isnan(hi), lo, (lo + hi) / 2)
        sign = np.array(
            [{"Purchase": 1, "Sale": -1}.get(t, np.nan) for t in _text(df["transaction_type"])]
        )
        return mid * sign
    if name in ("sentiment_mean_7d", "sentiment_change_30d"):
        return _floats(df["score"])
    if name.startswith("put_call_ratio"):
        return _floats(df["ratio"])
    if name == "analyst_net_upgrades_30d":
        return np.array(
            [{"Upgrade": 1.0, "Downgrade": -1.0}.get(a, 0.0) for a in _text(df["action"])]
        )
    if name in ("news_count_7d", "patents_granted_365d"):
        return np.ones(len(df))
    if name == "news_sentiment_mean_7d":
        return _floats(df["sentiment"])
    if name == "lobbying_amount_365d":
        return np.nan_to_num(_floats(df["income"])) + np.nan_to_num(_floats(df["expenses"]))
    if name == "contracts_award_365d":
        return _floats(df["award_amount"])
    if name == "app_ios_score_last":
        return _floats(df["ios_score"])
    if name == "app_android_score_last":
        return _floats(df["android_score"])
    if name == "forum_mentions_7d":
        return _floats(df["mentions"])
    if name == "employee_count_last":
        return _floats(df["employee_count"])
    raise KeyError(name)


def _column(df: pd.DataFrame, spec: str | Callable[[pd.DataFrame], Any]) -> pd.Series:
    return df[spec] if isinstance(spec, str) else pd.Series(spec(df), index=df.index)


def custom_rows(feature: Feature, df: pd.DataFrame) -> np.ndarray:
    values = np.ones(len(df)) if feature.value is None else _floats(_column(df, feature.value))
    if feature.sign is not None:
        values = values * _floats(_column(df, feature.sign))
    if feature.where is not None:
        keep = _column(df, feature.where).astype("boolean").fillna(False).to_numpy(dtype=bool)
        values = np.where(keep, values, np.nan)
    return values


def _ns(times: pd.Series) -> np.ndarray:
    """Nanoseconds since the epoch, UTC (naive times are UTC); NaT as the smallest int64."""
    if isinstance(times.dtype, pd.DatetimeTZDtype):
        times = times.dt.tz_convert("UTC").dt.tz_localize(None)
    return times.to_numpy(dtype="datetime64[ns]").astype(np.int64)


NS_DAY = 86_400 * 10**9


def _latest(public: np.ndarray, date: np.ndarray, values: np.ndarray, keep: np.ndarray) -> float:
    """The value of the latest kept row: latest public time, then latest date, then last row."""
    rows = np.flatnonzero(keep)
    if not len(rows):
        return np.nan
    last = np.lexsort((rows, date[rows], public[rows]))[-1]
    return float(values[rows[last]])


def _cell(
    agg: str, days: int | None, d: int, public: np.ndarray, date: np.ndarray, values: np.ndarray
) -> float:
    """One cell; ``d`` is the first nanosecond of day D, ``public`` the rows' public times."""
    known = public < d + NS_DAY  # public by the end of D
    counted = known & ~np.isnan(values)
    if agg == "change":
        assert days is not None
        before = counted & (public < d - days * NS_DAY + NS_DAY)
        return _latest(public, date, values, counted) - _latest(public, date, values, before)
    if days is not None:
        # (D - n, D] on calendar days: a time counts on its date.
        counted &= public // NS_DAY * NS_DAY > d - days * NS_DAY
    if agg == "last":
        return _latest(public, date, values, counted)
    if agg == "count":
        return float(counted.sum())
    if agg == "sum":
        return float(values[counted].sum())
    return float(values[counted].mean()) if counted.any() else np.nan


def reference(
    frames: Mapping[str, pd.DataFrame],
    symbols: list[str],
    dates: Iterable[pd.Timestamp],
    features: Iterable[str | Feature],
) -> pd.DataFrame:
    """The panel, cell by cell: float64 columns (NaN for NA), indexed like ``panel``."""
    dates = list(dates)
    out: dict[str, list[float]] = {}
    for feature in features:
        if isinstance(feature, str):
            dataset, agg, days = DEFINITIONS[feature]
            name = feature
        else:
            dataset, agg, days, name = feature.dataset, feature.agg, feature.days, feature.name
        frame = frames[dataset]
        cells: dict[tuple[pd.Timestamp, str], float] = {}
        for symbol in symbols:
            sub = frame[frame["symbol"] == symbol].reset_index(drop=True)
            sub.attrs = {"dataset": dataset}
            values = (
                catalog_rows(name, sub) if isinstance(feature, str) else custom_rows(feature, sub)
            )
            times = md.pit.public_times(sub)
            public = _ns(times)
            values = np.where(times.isna().to_numpy(), np.nan, values)
            event = md.registry.REGISTRY[dataset].event  # of rows public together, latest event
            tie = event is not None and event in sub
            date = _ns(sub[event]) if tie else np.zeros(len(sub), dtype=np.int64)
            for d in dates:
                cells[(d, symbol)] = _cell(agg, days, d.value, public, date, values)
        out[name] = [cells[(d, s)] for d in dates for s in symbols]
    symbol_level = pd.Index(symbols, dtype="string", name="symbol")  # the loaders' dtype
    index = pd.MultiIndex.from_product(
        [pd.DatetimeIndex(dates), symbol_level], names=["date", "symbol"]
    )
    return pd.DataFrame(out, index=index)


class StandInLake:
    """Stands in for ``md.Lake`` where a test plants versions by hand: ``panel`` only calls
    ``read``. It keeps every version with a ``_fetched_at`` column and, like the lake's
    contract, returns per record the latest version fetched at or before ``known_at``, or
    every version with ``history=True``."""

    def __init__(self, frames: dict[str, pd.DataFrame], ids: dict[str, list[str]]) -> None:
        self.frames, self.ids = frames, ids
        self.calls: list[tuple[Any, ...]] = []

    def read(
        self,
        dataset: str,
        symbols: Any = None,
        *,
        start: Any = None,
        end: Any = None,
        known_at: Any = None,
        history: bool = False,
        columns: list[str] | None = None,
        **_: Any,
    ) -> pd.DataFrame:
        self.calls.append((dataset, tuple(symbols or ()), start, end, known_at))
        df = self.frames[dataset]
        if known_at is not None:
            df = df[df["_fetched_at"] <= pd.Timestamp(known_at)]
        df = df.sort_values("_fetched_at", kind="stable")
        if not history:
            df = df.drop_duplicates(self.ids[dataset], keep="last")
        if symbols is not None:
            df = df[df["symbol"].isin(list(symbols))]
        if columns is not None:
            # A real lake gives a column it knows but no row set as nulls; the planted
            # frames leave such columns out.
            kept = [c for c in columns if c in df.columns]
            df = df[[*kept, *(c for c in df.columns if c.startswith("_"))]]
        out = df.reset_index(drop=True)
        out.attrs["dataset"] = dataset
        return out


def row_reference(
    lake: Any, symbols: list[str], dates: Iterable[pd.Timestamp], features: list[Any]
) -> pd.DataFrame:
    """``known_at="row"`` the slow way: for each date D, each dataset's features from the lake
    as known at the end of D (or, before the dataset's first sync, as that sync left it),
    through the scalar ``known_at`` panel."""
    dates = list(dates)
    by_dataset: dict[str, list[Any]] = {}
    for f in features:
        name = f if isinstance(f, str) else f.name
        dataset = DEFINITIONS[name][0] if isinstance(f, str) else f.dataset
        by_dataset.setdefault(dataset, []).append(f)
    columns = []
    for dataset, mine in by_dataset.items():
        base = "app_ratings" if dataset == "app_ratings_daily" else dataset
        stored = lake.read(base, history=True)
        fetched = pd.to_datetime(stored["_fetched_at"], utc=True)
        if "_sync_id" in stored.columns:
            first_id = stored["_sync_id"].iloc[int(np.argmin(fetched.to_numpy()))]
            floor = fetched[(stored["_sync_id"] == first_id).to_numpy()].max()
        else:
            floor = fetched.min()
        rows = []
        for d in dates:
            end_of_day = pd.Timestamp(d).tz_localize("UTC") + pd.Timedelta(days=1, microseconds=-1)
            known = max(end_of_day, floor)
            rows.append(
                md.features.panel(symbols, d, d, mine, freq="D", source=lake, known_at=known)
            )
        columns.append(pd.concat(rows))
    out = pd.concat(columns, axis=1)
    return out[[f if isinstance(f, str) else f.name for f in features]]
