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
from typing import TYPE_CHECKING

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

    def values(
        self, frame: pd.DataFrame, column: Callable[[str], pd.Series] | None = None
    ) -> list[pd.Series]:
        """Each part's value per row (``"a|b"``: a, or b where a is missing; as text then).
        A part none of whose columns the frame has is left out. ``column``: how to take a
        column (default ``frame[name]``; a caller may keep the columns it took)."""
        take = frame.__getitem__ if column is None else column
        out = []
        for part in self.parts:
            names = [n for n in part if n in frame.columns]
            if not names:
                continue
            value = take(names[0])
            for other in names[1:]:
                value = value.astype("string").fillna(take(other).astype("string"))
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

    def duplicated(
        self, frame: pd.DataFrame, column: Callable[[str], pd.Series] | None = None
    ) -> np.ndarray | None:
        """Rows whose identity an earlier row has (None when the frame has none of its
        columns; missing values equal each other, as in ``DataFrame.duplicated``).

        >>> f = pd.DataFrame({"s": ["A", "A", "A"], "d": [1, None, None]})
        >>> Identity.parse(["s", "d"]).duplicated(f).tolist()
        [False, False, True]
        """
        values = self.values(frame, column)
        if not values:
            return None
        # Each part's codes folded into one integer per row (made dense again only where
        # the product could overflow), then equal neighbours in a stable sort: no frame is
        # built for it (a load's validation paid more for that than for the check).
        key = np.zeros(len(frame), dtype=np.int64)
        span = 1
        for value in values:
            codes, uniques = pd.factorize(value, use_na_sentinel=True)
            width = len(uniques) + 1
            if span * width >= 2**62:
                key, span = _dense(key)
            key = key * width + (codes + 1)
            span *= width
        order = np.argsort(key, kind="stable")
        out = np.zeros(len(key), dtype=bool)
        out[order[1:]] = key[order[1:]] == key[order[:-1]]
        return out

    def tie_ranks(self, frame: pd.DataFrame, skip: Collection[str]) -> list[np.ndarray]:
        """What rows that tie on ``skip`` (symbol, time) are ordered by: each identity column
        in turn, as each row's place among the column's sorted distinct values (ascending,
        missing last); a category by its value's text (as the lake stores it), not by its
        place in the vocabulary.

        >>> f = pd.DataFrame({"d": [1, 1, 1], "who": pd.Categorical(["b", None, "a"], ["b", "a"])})
        >>> Identity.parse(["d", "who"]).tie_ranks(f, skip=("d",))[0].tolist()
        [1, 2, 0]
        """
        out: list[np.ndarray] = []
        for name in self.names:
            if name in skip or name not in frame.columns:
                continue
            column = frame[name]
            if isinstance(column.dtype, pd.CategoricalDtype):
                categories = column.cat.categories
                text = np.asarray(categories.astype(str), dtype=object)
                place = np.empty(len(text) + 1, dtype=np.int64)
                place[np.argsort(text, kind="stable")] = np.arange(len(text))
                place[-1] = len(text)  # code -1 (missing): last
                out.append(place[column.cat.codes.to_numpy()])
                continue
            out.append(_dense_ranks(column))
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


def _dense_ranks(column: pd.Series) -> np.ndarray:
    """Each value's place among the column's sorted distinct values, missing last (Arrow's
    dense rank: a few microseconds for a load's rows, where a sorted factorize cost a
    millisecond a column)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        data = getattr(column.array, "_pa_array", None)
        data = pa.array(column.array) if data is None else data
        if isinstance(data, pa.ChunkedArray):
            data = data.combine_chunks()
        ranks = pc.rank(data, sort_keys="ascending", tiebreaker="dense")  # nulls last
        return np.asarray(ranks.to_numpy(zero_copy_only=False), dtype=np.int64)
    except (pa.ArrowException, TypeError, ValueError):  # mixed objects: pandas sorts them
        codes, uniques = column.factorize(sort=True, use_na_sentinel=True)
        return np.where(codes < 0, len(uniques), codes)


def _dense(key: np.ndarray) -> tuple[np.ndarray, int]:
    codes, uniques = pd.factorize(key)
    return codes.astype(np.int64), len(uniques)
