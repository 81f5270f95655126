"""A feature as data: which dataset, which value, which rows, which window, which aggregation.

A :class:`Feature` says nothing about *how* it is computed; :mod:`mdframes.features.panels.engine`
computes every feature of a dataset in one vectorised pass.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any, Final

import pandas as pd

from ..._typing import Errors
from ...errors import InvalidParameterError
from ...registry import REGISTRY, resolve_name

__all__ = ["Feature", "AGGREGATIONS", "Column", "check_errors"]

# "change": latest value on or before D minus latest value on or before D - window.
AGGREGATIONS: Final = ("sum", "mean", "count", "last", "change")
DTYPES: Final = ("Int64", "float64")
# Windows longer than this are a typo, and would overflow the engine's day arithmetic.
MAX_WINDOW_DAYS: Final = 36_600
_WINDOW = re.compile(r"\s*([0-9]+)\s*[dD]\s*")

Column = str | Callable[[pd.DataFrame], Any] | None


def window_days(window: Any, *, name: str = "window") -> int | None:
    """``90``, ``"90D"`` or a whole-day timedelta -> 90; ``None`` -> ``None`` (no window)."""
    if window is None:
        return None
    days: int | None = None
    if isinstance(window, int) and not isinstance(window, bool):
        days = window
    elif isinstance(window, str):
        m = _WINDOW.fullmatch(window)
        days = int(m[1]) if m else None
    elif isinstance(window, (dt.timedelta, pd.Timedelta)):
        td = pd.Timedelta(window)
        days = td.days if td == pd.Timedelta(days=td.days) else None
    if days is None or not 1 <= days <= MAX_WINDOW_DAYS:
        raise InvalidParameterError(
            f"{name}={window!r} is not a window: give a number of days from 1 to "
            f"{MAX_WINDOW_DAYS}, a string like '90D', or None for no window",
            parameter="window",
        )
    return days


def _check_column(value: Any, role: str, feature: str) -> None:
    if value is None or isinstance(value, str) or callable(value):
        return
    raise InvalidParameterError(
        f"feature {feature!r}: {role} must be a column name, a function of the frame or None, "
        f"not {type(value).__name__}",
        parameter=role,
    )


@dataclass(frozen=True)
class Feature:
    """One point-in-time feature: an aggregation of a dataset's rows over a trailing window.

    The row for date D aggregates the rows of ``dataset`` public by the end of D (by the
    dataset's point-in-time anchor) whose anchor falls in the calendar window ``(D - window,
    D]``.

    Parameters
    ----------
    name : str
        The panel column.
    dataset : str
        A per-symbol registry dataset with an anchor (``"insider_trading"``, ...; ``-`` and
        ``_`` are interchangeable).
    value : str or callable, optional
        A column name or a function of the dataset's frame returning one number per row.
        ``None``: each row counts 1 (for ``sum``/``count``). A function's ``columns``
        attribute, where it has one, names the columns it reads (of a lake, a panel then
        reads only those; the same for ``where`` and ``sign``).
    window : int, str or None
        Days (``90`` or ``"90D"``); ``None``: no window (all history up to D).
    agg : {"sum", "mean", "count", "last", "change"}
        ``sum`` (0 when empty), ``count`` of rows with a value (0 when empty), ``mean`` (NA
        when empty), ``last``: latest value within the window (NA when none), ``change``:
        latest value on or before D minus latest on or before D - window.
    where : str or callable, optional
        A boolean column or function: only those rows (NA counts as False).
    sign : str or callable, optional
        A column or function whose number multiplies the value (NA: the row is skipped).
    dtype : {"Int64", "float64"}, optional
        Keyword only. Default: ``Int64`` for counts and for sums or lasts of integers,
        ``float64`` otherwise.
    description : str
        Keyword only; shown by :func:`mdframes.features.catalog`.

    Examples
    --------
    >>> big_sales = Feature("insider_sales_30d", "insider_trading", value="total_value",
    ...                     window="30D", agg="sum",
    ...                     where=lambda df: df["transaction_type"] == "Sale")
    >>> big_sales.days
    30
    """

    name: str
    dataset: str
    value: Column = None
    window: int | str | None = "90D"
    agg: str = "sum"
    where: Column = None
    sign: Column = None
    _: KW_ONLY
    dtype: str | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidParameterError(
                f"feature name must be a non-empty string, got {self.name!r}", parameter="name"
            )
        object.__setattr__(self, "dataset", _dataset_name(self.dataset, self.name))
        if self.agg not in AGGREGATIONS:
            raise InvalidParameterError(
                f"feature {self.name!r}: agg={self.agg!r} is not one of "
                f"{', '.join(map(repr, AGGREGATIONS))}",
                parameter="agg",
            )
        days = window_days(self.window)
        if self.agg == "change" and days is None:
            raise InvalidParameterError(
                f"feature {self.name!r}: agg='change' needs a window (the lag)", parameter="window"
            )
        if self.agg in ("mean", "last", "change") and self.value is None:
            raise InvalidParameterError(
                f"feature {self.name!r}: agg={self.agg!r} needs a value", parameter="value"
            )
        for role in ("value", "where", "sign"):
            _check_column(getattr(self, role), role, self.name)
        if self.dtype not in (None, *DTYPES):
            raise InvalidParameterError(
                f"feature {self.name!r}: dtype={self.dtype!r} is not one of {', '.join(DTYPES)}",
                parameter="dtype",
            )

    @property
    def days(self) -> int | None:
        """The window in days; ``None`` when the feature has none."""
        return window_days(self.window)

    @property
    def lookback(self) -> int | None:
        """Days of history before a date that the feature can read; ``None``: all of it."""
        return None if self.agg == "change" else self.days

    @property
    def anchor(self) -> str:
        anchor = REGISTRY[self.dataset].anchor
        assert anchor is not None  # checked in __post_init__
        return anchor

    @property
    def window_text(self) -> str | None:
        days = self.days
        return None if days is None else f"{days}D"


def _dataset_name(dataset: Any, feature: str) -> str:
    usable = sorted(
        n
        for n, d in REGISTRY.items()
        if d.per_symbol and d.version == "v2" and d.anchor is not None
    )
    if not isinstance(dataset, str):
        raise InvalidParameterError(
            f"feature {feature!r}: dataset must be a registry name", parameter="dataset"
        )
    try:
        return resolve_name(dataset, usable, what="dated per-symbol dataset", parameter="dataset")
    except InvalidParameterError as exc:
        raise InvalidParameterError(
            f"feature {feature!r}: {dataset!r} is not a dated per-symbol dataset: {exc}",
            parameter="dataset",
        ) from None


def check_errors(errors: Any) -> Errors:
    """``errors`` as the loaders take it: ``"raise"`` or ``"skip"``."""
    if errors not in ("raise", "skip"):
        raise InvalidParameterError(
            f"errors={errors!r} is not 'raise' or 'skip'", parameter="errors"
        )
    return "skip" if errors == "skip" else "raise"


def check_offset(freq: Any) -> pd.DateOffset:
    """``freq`` as a pandas offset, or InvalidParameterError (``None`` included)."""
    if freq is None or isinstance(freq, bool):
        raise InvalidParameterError(
            f"freq={freq!r} is not a pandas frequency (e.g. 'B', 'D', 'W-FRI')",
            parameter="freq",
        )
    try:
        return pd.tseries.frequencies.to_offset(freq)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(
            f"freq={freq!r} is not a pandas frequency ({exc})", parameter="freq"
        ) from None
