"""Type aliases of the public signatures, in one place (as polars' ``_typing.py``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import pandas as pd

#: A calendar date: ``"2026-01-05"``, a ``datetime.date``/``datetime``, or a ``Timestamp``.
DateLike: TypeAlias = str | dt.date | dt.datetime | pd.Timestamp
#: An instant; naive means UTC, and a date alone means the end of that day (CONTRACT §10).
TimeLike: TypeAlias = str | dt.date | dt.datetime | pd.Timestamp
#: One symbol or several.
Symbols: TypeAlias = str | Sequence[str]
#: What a multi-symbol call does with a failing symbol.
Errors: TypeAlias = Literal["raise", "skip"]
#: ``True``: hard rules raise, soft rules warn; ``"strict"``: both raise; ``False``: off.
Validate: TypeAlias = bool | Literal["strict"]


@runtime_checkable
class LakeLike(Protocol):
    """The plain read contract: what a panel needs of a lake, what ``md.Lake`` and any
    stand-in with the same ``read`` offer (``md.Lake`` takes more: ``columns=``, ...)."""

    def read(self, dataset: str, symbols: Any = None, *, start: Any = None, end: Any = None,
             known_at: Any = None, history: bool = False) -> pd.DataFrame: ...  # fmt: skip


__all__ = ["DateLike", "TimeLike", "Symbols", "Errors", "Validate", "LakeLike"]
