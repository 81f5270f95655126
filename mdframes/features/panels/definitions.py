"""The feature catalog: one entry per feature, as data (CONTRACT §11 names them).

Adding a feature is one :class:`Feature` entry below; ``catalog()``, ``panel()``, the CLI and
the docs page read this table. Row-level rules that need more than a column (insider groups,
congress amount bounds) are small named functions, so that the table stays declarative.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import numpy as np
import pandas as pd

from ...errors import InvalidParameterError
from ...helpers import amount_bounds, group_of_types
from ...registry import resolve_name
from .spec import Feature

__all__ = ["CATALOG", "catalog", "by_name", "resolve_features"]


def _reads(*columns: str) -> Any:
    """Declares the columns a catalog function reads (:func:`~.reach.read_columns`): a panel
    reads only those of a lake."""

    def mark(fn: Any) -> Any:
        fn.columns = columns
        return fn

    return mark


def _lookup(values: pd.Series, mapping: Mapping[str, int]) -> pd.Series:
    """Text to small integers by exact value (case and spaces ignored); others NA."""
    # Text work on the distinct values only: a column holds a handful of them.
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    found = [mapping.get(str(u).strip().casefold()) for u in uniques.tolist()]
    return _by_code(codes, [*found, None], values.index)


def _by_code(codes: np.ndarray, values: list[int | None], index: pd.Index) -> pd.Series:
    """``values[code]`` of each row's code (-1: the last), None as NA, as ``Int64``."""
    table = np.array([-99 if v is None else v for v in values], dtype=np.int64)
    picked = table[codes]
    return pd.Series(pd.arrays.IntegerArray(picked, picked == -99), index=index)


@_reads("transaction_type")
def insider_direction(df: pd.DataFrame) -> pd.Series:
    """+1 acquisition, -1 disposition, 0 neutral (by :func:`mdframes.insider_groups`); NA
    for types outside the spec's groups."""
    codes, groups = group_of_types(df["transaction_type"])
    sign = {"acquisition": 1, "disposition": -1, "neutral": 0}
    return _by_code(codes, [sign.get(g) if g is not None else None for g in groups], df.index)


@_reads("amount", "amount_raw", "amount_flag")
def congress_midpoint(df: pd.DataFrame) -> pd.Series:
    """(min + max) / 2 of :func:`mdframes.congress_amount_bounds`; min when max is NA; NA
    when the amount has no bounds."""
    lo, hi = amount_bounds(df)
    return pd.Series((lo + np.where(np.isnan(hi), lo, hi)) / 2, index=df.index)


@_reads("transaction_type")
def congress_direction(df: pd.DataFrame) -> pd.Series:
    """+1 ``Purchase``, -1 ``Sale``."""
    return _lookup(df["transaction_type"], {"purchase": 1, "sale": -1})


@_reads("action")
def analyst_direction(df: pd.DataFrame) -> pd.Series:
    """+1 ``Upgrade``, -1 ``Downgrade``, 0 any other action."""
    return _lookup(df["action"], {"upgrade": 1, "downgrade": -1}).fillna(0)


@_reads("transaction_type")
def is_purchase(df: pd.DataFrame) -> pd.Series:
    """Insider ``Purchase`` transactions."""
    return df["transaction_type"] == "Purchase"


@_reads("income", "expenses")
def lobbying_amount(df: pd.DataFrame) -> pd.Series:
    """``income`` + ``expenses``, NA counted as 0."""
    income = df["income"].to_numpy(dtype="float64", na_value=np.nan)
    expenses = df["expenses"].to_numpy(dtype="float64", na_value=np.nan)
    return pd.Series(np.nan_to_num(income) + np.nan_to_num(expenses), index=df.index)


CATALOG: Final[tuple[Feature, ...]] = (
    Feature(
        "insider_net_value_90d",
        "insider_trading",
        value="total_value",
        sign=insider_direction,
        window="90D",
        agg="sum",
        dtype="float64",
        description="Sum of insider `total_value`, signed +1 acquisition, -1 disposition, "
        "0 neutral (by `insider_groups`).",
    ),
    Feature(
        "insider_buy_count_90d",
        "insider_trading",
        where=is_purchase,
        window="90D",
        agg="count",
        dtype="Int64",
        description="Count of insider `Purchase` transactions.",
    ),
    Feature(
        "congress_net_buy_90d",
        "congress_trades",
        value=congress_midpoint,
        sign=congress_direction,
        window="90D",
        agg="sum",
        dtype="float64",
        description="Sum over congress trades (both chambers) of the amount midpoint "
        "((min + max) / 2; min when max is NA, by `congress_amount_bounds`), +1 `Purchase`, "
        "-1 `Sale`; trades without bounds are ignored.",
    ),
    Feature(
        "sentiment_mean_7d",
        "sentiment",
        value="score",
        window="7D",
        agg="mean",
        dtype="float64",
        description="Mean sentiment `score`.",
    ),
    Feature(
        "sentiment_change_30d",
        "sentiment",
        value="score",
        window="30D",
        agg="change",
        dtype="float64",
        description="Latest sentiment `score` on or before D minus the latest on or before "
        "D - 30 days.",
    ),
    Feature(
        "put_call_ratio_last",
        "put_call_ratio",
        value="ratio",
        window=None,
        agg="last",
        dtype="float64",
        description="Latest put/call `ratio` on or before D.",
    ),
    Feature(
        "put_call_ratio_mean_20d",
        "put_call_ratio",
        value="ratio",
        window="20D",
        agg="mean",
        dtype="float64",
        description="Mean put/call `ratio`.",
    ),
    Feature(
        "analyst_net_upgrades_30d",
        "analyst_ratings",
        sign=analyst_direction,
        window="30D",
        agg="sum",
        dtype="Int64",
        description="Count of `Upgrade` minus count of `Downgrade` analyst actions.",
    ),
    Feature(
        "news_count_7d",
        "news",
        window="7D",
        agg="count",
        dtype="Int64",
        description="Count of per-symbol news articles.",
    ),
    Feature(
        "news_sentiment_mean_7d",
        "news",
        value="sentiment",
        window="7D",
        agg="mean",
        dtype="float64",
        description="Mean news-article `sentiment`.",
    ),
    Feature(
        "lobbying_amount_365d",
        "lobbying",
        value=lobbying_amount,
        window="365D",
        agg="sum",
        dtype="float64",
        description="Sum of lobbying `income` + `expenses` (NA as 0).",
    ),
    Feature(
        "contracts_award_365d",
        "government_contracts",
        value="award_amount",
        window="365D",
        agg="sum",
        dtype="float64",
        description="Sum of government-contract `award_amount`.",
    ),
    Feature(
        "patents_granted_365d",
        "patent_filings",
        window="365D",
        agg="count",
        dtype="Int64",
        description="Count of granted patents.",
    ),
    Feature(
        "app_ios_score_last",
        "app_ratings_daily",
        value="ios_score",
        window=None,
        agg="last",
        dtype="float64",
        description="Latest daily-view iOS score (the app with the most ratings) on or before D.",
    ),
    Feature(
        "app_android_score_last",
        "app_ratings_daily",
        value="android_score",
        window=None,
        agg="last",
        dtype="float64",
        description="Latest daily-view Android score (the app with the most ratings) on or "
        "before D.",
    ),
    Feature(
        "forum_mentions_7d",
        "forum_mentions",
        value="mentions",
        window="7D",
        agg="sum",
        dtype="Int64",
        description="Sum of forum `mentions` (timestamps count on their UTC date).",
    ),
    Feature(
        "employee_count_last",
        "professionalnet",
        value="employee_count",
        window=None,
        agg="last",
        dtype="Int64",
        description="Latest professional-network `employee_count`.",
    ),
)

_BY_NAME: Final = {f.name: f for f in CATALOG}
assert len(_BY_NAME) == len(CATALOG), "duplicate catalog names"


def by_name(name: str) -> Feature | None:
    """The catalog feature called ``name``, or ``None``."""
    return _BY_NAME.get(name)


def catalog() -> pd.DataFrame:
    """The feature catalog: one row per feature ``panel`` computes by default.

    Columns ``name, dataset, anchor, window, aggregation, description``: ``anchor`` is the
    dataset's point-in-time column, ``window`` a number of days like ``"90D"`` (``None``: no
    window, the latest value of any age).

    Examples
    --------
    >>> import mdframes as md
    >>> md.features.catalog().set_index("name").loc["news_count_7d", "window"]
    '7D'
    """
    rows = [
        {
            "name": f.name,
            "dataset": f.dataset,
            "anchor": f.anchor,
            "window": f.window_text,
            "aggregation": f.agg,
            "description": f.description,
        }
        for f in CATALOG
    ]
    out = pd.DataFrame(
        rows, columns=["name", "dataset", "anchor", "window", "aggregation", "description"]
    )
    return out.astype({c: "string" for c in out.columns})


def resolve_features(features: Any) -> list[Feature]:
    """Catalog names and :class:`Feature` objects -> Features, checked for type, unknown
    names and duplicate columns.

    Examples
    --------
    >>> [f.name for f in resolve_features(["news_count_7d"])]
    ['news_count_7d']
    """
    if features is None:
        return list(CATALOG)
    if isinstance(features, (str, Feature)):
        items: list[Any] = [features]
    elif isinstance(features, Iterable) and not isinstance(features, (bytes, dict)):
        items = list(features)
    else:
        raise InvalidParameterError(
            f"features must be a catalog name, an md.features.Feature or a list of them, not "
            f"{type(features).__name__}",
            parameter="features",
        )
    if not items:
        raise InvalidParameterError("features is an empty list", parameter="features")
    out: list[Feature] = []
    names = [f.name for f in CATALOG]
    for item in items:
        if isinstance(item, Feature):
            out.append(item)
            continue
        if not isinstance(item, str):
            raise InvalidParameterError(
                f"features holds {item!r} ({type(item).__name__}): each must be a catalog "
                "name or an md.features.Feature",
                parameter="features",
            )
        try:
            name = resolve_name(item, names, what="feature", parameter="features")
        except InvalidParameterError as exc:
            raise InvalidParameterError(
                f"{exc} (or pass md.features.Feature(...))", parameter="features"
            ) from None
        found = by_name(name)
        assert found is not None
        out.append(found)
    seen: set[str] = set()
    for f in out:
        if f.name in seen:
            raise InvalidParameterError(f"feature {f.name!r} is listed twice", parameter="features")
        seen.add(f.name)
    return out
