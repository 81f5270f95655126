"""A dataset's record identity: the columns that name one record (CONTRACT §2, §10.1).

The registry gives each dataset one ``record_id``, a tuple of parts; a part
``"amount_raw|amount"`` means the first of those columns that is set (the filed amount of a
congress trade). :class:`Identity` holds the parts parsed once, and everything that needs
"the same record" asks it: the loaders' paging merge and the order of rows that share symbol
and time, the duplicate rule, the lake's versions, ``changes()`` and the features' knowledge
time. One identity for all of them is what makes a lake read and a loader frame of the same
records equal row for row.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Identity"]


@dataclass(frozen=True)
class Identity:
    """A record identity: ``parts`` of one or more alternative columns each.

    Examples
    --------
    >>> k = Identity.parse(["symbol", "amount_raw|amount"])
    >>> k.firsts, k.names
    (('symbol', 'amount_raw'), ('symbol', 'amount_raw', 'amount'))
    """

    parts: tuple[tuple[str, ...], ...]

    @classmethod
    def parse(cls, spec: Sequence[str]) -> Identity:
        return cls(tuple(tuple(p.split("|")) for p in spec))

    @property
    def spec(self) -> list[str]:
        """The registry's spelling (``"a|b"`` per part), as the lake's dtype record stores it."""
        return ["|".join(p) for p in self.parts]

    @property
    def firsts(self) -> tuple[str, ...]:
        """The first column of each part."""
        return tuple(p[0] for p in self.parts)

    @property
    def names(self) -> tuple[str, ...]:
        """Every column the identity reads, in order: ties are ordered by these."""
        return tuple(dict.fromkeys(n for p in self.parts for n in p))

    def __bool__(self) -> bool:
        return bool(self.parts)

    def without(self, columns: Collection[str]) -> Identity:
        """The parts that read none of ``columns``: what tells apart the records of one
        answer, whose header (symbol, chamber) is the same on every record.

        >>> Identity.parse(["symbol", "platform", "app_id", "date"]).without({"symbol"}).spec
        ['platform', 'app_id', 'date']
        """
        return Identity(tuple(p for p in self.parts if not set(p) & set(columns)))

    # --- pandas ------------------------------------------------------------------------------

    def values(self, frame: pd.DataFrame) -> list[pd.Series]:
        """Each part's value per row (``"a|b"``: a, or b where a is missing; as text then).
        A part none of whose columns the frame has is left out."""
        out = []
        for part in self.parts:
            names = [n for n in part if n in frame.columns]
            if not names:
                continue
            value = frame[names[0]]
            for other in names[1:]:
                value = value.astype("string").fillna(frame[other].astype("string"))
            out.append(value)
        return out

    def ids(self, frame: pd.DataFrame) -> np.ndarray:
        """One integer per distinct identity (a missing value is a value of its own): rows of
        the same record, in any version, get the same integer.

        >>> f = pd.DataFrame({"symbol": ["A", "A", "B"], "d": [1, 1, 1]})
        >>> Identity.parse(["symbol", "d"]).ids(f).tolist()
        [0, 0, 1]
        """
        n = len(frame)
        ids = np.zeros(n, dtype=np.int64)
        for value in self.values(frame):
            codes, uniques = pd.factorize(value, use_na_sentinel=True)
            # Dense codes again after each part, so that combining parts cannot overflow.
            ids = pd.factorize(ids * (len(uniques) + 1) + (codes + 1))[0].astype(np.int64)
        return ids

    def duplicated(self, frame: pd.DataFrame) -> np.ndarray | None:
        """Rows whose identity an earlier row has (None when the frame has none of its
        columns)."""
        values = self.values(frame)
        if not values:
            return None
        keyed = pd.DataFrame(dict(enumerate(values)), copy=False)
        return keyed.duplicated(keep="first").to_numpy()

    def tie_keys(self, frame: pd.DataFrame, skip: Collection[str]) -> dict[str, Any]:
        """The values rows that tie on ``skip`` (symbol, time) are ordered by: each identity
        column in turn, ascending, missing last; a category by its value's text (as the lake
        stores it), not by its place in the vocabulary."""
        out: dict[str, Any] = {}
        for name in self.names:
            if name in skip or name not in frame.columns:
                continue
            column = frame[name]
            if isinstance(column.dtype, pd.CategoricalDtype):
                column = column.astype(object).where(column.notna(), None)
            out[name] = column.to_numpy()
        return out

    # --- Arrow (the lake) ----------------------------------------------------------------------

    def columns(self, table: pa.Table) -> pa.Table:
        """The identity's values, one column per part (absent columns count as null)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        cols = {}
        for part in self.parts:
            label = "|".join(part)
            names = [n for n in part if n in table.column_names]
            if not names:
                cols[label] = pa.nulls(table.num_rows, type=pa.string())
            elif len(names) == 1:
                cols[label] = table[names[0]]
            else:
                cols[label] = pc.coalesce(*[table[n].cast(pa.string()) for n in names])
        return pa.table(cols)

    def sql(self, present: set[str], quote: Callable[[str], str]) -> list[str]:
        """SQL expressions of the parts whose columns exist (``coalesce`` for alternatives)."""
        out = []
        for part in self.parts:
            cols = [quote(n) for n in part if n in present]
            if cols:
                out.append(cols[0] if len(cols) == 1 else f"coalesce({', '.join(cols)})")
        return out
