"""The record key of a lake dataset, parsed once.

A registry ``lake_key`` is a tuple of parts; a part ``"amount_raw|amount"`` means the first of
those columns that is set (the filed amount of a congress trade). :class:`Key` holds the parts
as tuples of column names, so no caller splits strings again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Key"]


@dataclass(frozen=True)
class Key:
    """A record key: ``parts`` of one or more alternative columns each.

    Examples
    --------
    >>> k = Key.parse(["symbol", "amount_raw|amount"])
    >>> k.firsts, k.names
    (('symbol', 'amount_raw'), ('symbol', 'amount_raw', 'amount'))
    """

    parts: tuple[tuple[str, ...], ...]

    @classmethod
    def parse(cls, spec: Sequence[str]) -> Key:
        return cls(tuple(tuple(p.split("|")) for p in spec))

    @property
    def spec(self) -> list[str]:
        """The registry's spelling (``"a|b"`` per part), as the dtype record stores it."""
        return ["|".join(p) for p in self.parts]

    @property
    def firsts(self) -> tuple[str, ...]:
        """The first column of each part: what rows are ordered by."""
        return tuple(p[0] for p in self.parts)

    @property
    def names(self) -> tuple[str, ...]:
        """Every column the key reads."""
        return tuple(dict.fromkeys(n for p in self.parts for n in p))

    def __bool__(self) -> bool:
        return bool(self.parts)

    def columns(self, table: pa.Table) -> pa.Table:
        """The key's values, one column per part (absent columns count as null)."""
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

    def sql(self, present: set[str], quote: object) -> list[str]:
        """SQL expressions of the parts whose columns exist (``coalesce`` for alternatives)."""
        out = []
        for part in self.parts:
            cols = [quote(n) for n in part if n in present]  # type: ignore[operator]
            if cols:
                out.append(cols[0] if len(cols) == 1 else f"coalesce({', '.join(cols)})")
        return out
