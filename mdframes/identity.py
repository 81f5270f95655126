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
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Identity", "Table", "column_ranks", "sort_key"]


class Table(Protocol):
    """What the pandas side reads: a DataFrame, or a load's typed columns as the rules view
    them (:class:`mdframes.schemas.Columns`)."""

    @property
    def columns(self) -> Any: ...

    def __len__(self) -> int: ...

    def __getitem__(self, name: str) -> Any: ...


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
        self, frame: Table, column: Callable[[str], pd.Series] | None = None
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
        self,
        frame: Table,
        column: Callable[[str], pd.Series] | None = None,
        codes: Callable[[str], np.ndarray] | None = None,
    ) -> np.ndarray | None:
        """Rows whose identity an earlier row has (None when the frame has none of its
        columns; missing values equal each other, as in ``DataFrame.duplicated``). ``codes``:
        a column's integers, equal where its values are (a missing value a value of its
        own), where the caller keeps them: a load ranks its identity once
        (:func:`column_ranks`), for this check and for the order of its ties.

        >>> f = pd.DataFrame({"s": ["A", "A", "A"], "d": [1, None, None]})
        >>> Identity.parse(["s", "d"]).duplicated(f).tolist()
        [False, False, True]
        """
        if codes is not None and all(len(part) == 1 for part in self.parts):
            # An alternative part ("a|b") compares coalesced text instead.
            keys = [codes(part[0]) for part in self.parts if part[0] in frame.columns]
            if not keys:
                return None
            key = sort_key(keys)
            return _repeats(np.argsort(key, kind="stable"), [key])
        values = self.values(frame, column)
        if not values:
            return None
        # Each part's codes folded into one integer per row, then equal neighbours in a
        # stable sort: no frame is built for it (a load's validation paid more for that than
        # for the check).
        key = sort_key([pd.factorize(value, use_na_sentinel=True)[0] for value in values])
        return _repeats(np.argsort(key, kind="stable"), [key])

    def tie_ranks(
        self,
        frame: Table,
        skip: Collection[str],
        rank: Callable[[str], np.ndarray] | None = None,
    ) -> list[np.ndarray]:
        """What rows that tie on ``skip`` (symbol, time) are ordered by: each identity column
        in turn, as its :func:`column_ranks` (``rank``: where the caller keeps them).

        >>> f = pd.DataFrame({"d": [1, 1, 1], "who": pd.Categorical(["b", None, "a"], ["b", "a"])})
        >>> Identity.parse(["d", "who"]).tie_ranks(f, skip=("d",))[0].tolist()
        [1, 2, 0]
        """
        ranked = rank if rank is not None else (lambda name: column_ranks(frame[name]))
        return [ranked(n) for n in self.names if n not in skip and n in frame.columns]

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


def column_ranks(values: Any) -> np.ndarray:
    """Each row's place among the column's sorted distinct values (ascending, missing last):
    equal values, equal ranks. A category ranks by its value's text (as the lake stores it),
    not by its place in the vocabulary. ``values``: a Series or the array it holds.

    >>> column_ranks(pd.Series(["b", None, "a", "b"])).tolist()
    [1, 2, 0, 1]
    """
    if isinstance(values, pd.Series):
        values = values.array
    if isinstance(values.dtype, pd.CategoricalDtype):
        text = np.asarray(values.categories.astype(str), dtype=object)
        place = np.empty(len(text) + 1, dtype=np.int64)
        place[np.argsort(text, kind="stable")] = np.arange(len(text))
        place[-1] = len(text)  # code -1 (missing): last
        return place[np.asarray(values.codes)]
    return _dense_ranks(values)


def _dense_ranks(values: Any) -> np.ndarray:
    """Arrow's dense rank, nulls last: a few microseconds for a load's rows, where a sorted
    factorize cost a millisecond a column. Without pyarrow (the core install: it comes with
    the parquet and lake extras), pandas' sorted factorize gives the same ranks."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return _factorized_ranks(values)
    try:
        data = getattr(values, "_pa_array", None)
        # A numpy array reads as pandas does (NaN and NaT missing), as its Series would.
        data = pa.array(values, from_pandas=True) if data is None else data
        if isinstance(data, pa.ChunkedArray):
            data = data.combine_chunks()
        ranks = pc.rank(data, sort_keys="ascending", tiebreaker="dense")  # nulls last
        return np.asarray(ranks.to_numpy(zero_copy_only=False), dtype=np.int64) - 1  # from 0
    except (pa.ArrowException, TypeError, ValueError):  # mixed objects: pandas sorts them
        return _factorized_ranks(values)


def _factorized_ranks(values: Any) -> np.ndarray:
    # As a Series: pandas sorts the distinct values of any array it holds.
    codes, uniques = pd.factorize(pd.Series(values, copy=False), sort=True, use_na_sentinel=True)
    return np.where(codes < 0, len(uniques), codes).astype(np.int64, copy=False)


def sort_key(keys: Sequence[np.ndarray]) -> np.ndarray:
    """One integer per row that sorts as the rows sort by ``keys`` (integers; the first key
    first): a stable argsort of it is ``np.lexsort(keys[::-1])``, in a tenth of the time
    (lexsort compares key by key; one integer sorts by radix).

    >>> sort_key([np.array([1, 0, 1]), np.array([5, 9, -7])]).argsort(kind="stable").tolist()
    [1, 2, 0]
    """
    out = np.zeros(len(keys[0]) if keys else 0, dtype=np.int64)
    if not len(out):
        return out
    span = 1
    for key in keys:
        low, high = int(key.min()), int(key.max())
        if high - low < len(key):
            values, width = key - low, high - low + 1
        else:  # sparse (times, raw integers): their places among the distinct values
            distinct, values = np.unique(key, return_inverse=True)
            width = len(distinct)
        if span * width >= 2**62:  # made dense again only where the product could overflow
            out, span = _dense_sorted(out)
        out = out * width + values
        span *= width
    return out


def _dense_sorted(key: np.ndarray) -> tuple[np.ndarray, int]:
    distinct, places = np.unique(key, return_inverse=True)
    return places.astype(np.int64), len(distinct)


def _repeats(order: np.ndarray, keys: Sequence[np.ndarray]) -> np.ndarray:
    """Rows equal on every key to the row before them in ``order`` (a stable sort by the
    keys): each repeat of a value, its first row (the earliest) excepted."""
    same = np.ones(max(len(order) - 1, 0), dtype=bool)
    for key in keys:
        ordered = key[order]
        same &= ordered[1:] == ordered[:-1]
    out = np.zeros(len(order), dtype=bool)
    out[order[1:]] = same
    return out
