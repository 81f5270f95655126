"""What feature panels need of a lake beyond its reads, as one public role: ``lake.panels``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import InvalidParameterError
from .store.faults import reaching
from .sync.plan import ReadRequest, resolve

if TYPE_CHECKING:  # pragma: no cover
    from .tables import Tables

__all__ = ["Panels"]


class Panels:
    """A lake's role for feature panels (in delta-rs' style, reached as ``lake.panels``):
    reads bounded by when rows became public, the coverage a panel is judged by, and the
    rows each dataset stores. Created by :class:`mdframes.Lake`; reads only."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.storage = tables.storage  # (``reaching`` tells an unreachable store by it)

    @reaching
    def read_published(self, request: ReadRequest) -> pd.DataFrame:
        """A panel's read of a dataset bounded by when its rows became public (its registry
        entry's ``read_bound``, not the time column): the latest versions public on or
        after ``request.public_from`` with their event up to ``request.end``; rows public
        earlier may come too (a null anchor is judged by its legal deadline), and row groups
        holding none of them are not read. ``history``: every version of the records one
        version of which is. ``public_until`` (not with ``history``): the panel's last date;
        row groups of first versions all public after it are not read (their rows would never
        enter the panel, and supersede no other; rows public later may still come)."""
        from .read import read

        if request.public_from is None:
            raise InvalidParameterError(
                "a published read needs public_from", parameter="public_from"
            )
        return read(self.tables, request)

    @reaching
    def kept_coverage(self, datasets: list[str], symbols: list[str]) -> pd.DataFrame:
        """``lake.coverage(datasets, symbols)`` as the lake keeps it, not copied: read only.
        The same object while the state files are unchanged (a panel's coverage is then made
        once, not per panel)."""
        from .coverage import coverage

        return coverage(self.tables, datasets, symbols, copy=False)

    @reaching
    def coverage_then(
        self, datasets: list[str], symbols: list[str], known_at: Any, pin: Any = None
    ) -> tuple[pd.DataFrame, dict[Any, Any], pd.DataFrame]:
        """The coverage a panel known at ``known_at`` judges by, from the ledger (read only):
        (the frame as it stood then, the days later syncs covered with the day they became
        known, the frame of every sync up to ``pin``). ``"row"``: the frame of every sync,
        each row judged by the fills at its own date."""
        from .coverage import coverage, ledger_fills

        whole = coverage(self.tables, datasets, symbols, copy=False, upto=pin, ledger=True)
        if isinstance(known_at, str):  # "row"
            return whole, ledger_fills(self.tables, datasets, pin), whole
        at = known_at if pin is None else min(known_at, pin)
        return coverage(self.tables, datasets, symbols, copy=False, upto=at, ledger=True), {}, whole

    def stored_rows(self, dataset: str) -> int | None:
        """Rows the dataset's current version stores (every version of each record), as the
        log counts them: how a panel orders its reads (a big dataset is read while a small
        one is computed). ``None``: no table yet, or a file the log does not count."""
        snap = self.tables.get(resolve(dataset)).snapshot()
        if snap is None or any(n is None for n in snap.rows):
            return None
        return sum(n or 0 for n in snap.rows)
