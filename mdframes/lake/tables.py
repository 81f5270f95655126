"""The lake's dataset tables, each opened once per :class:`~mdframes.Lake`: an opened table's
Delta log is then refreshed, not read again, and its data files stay open for reads."""

from __future__ import annotations

from typing import Any

from ..registry import REGISTRY, Dataset
from .store.storage import Storage
from .table.layout import DELTA_LOG, MANIFEST, STATE, dir_name
from .table.table import DatasetTable

__all__ = ["Tables"]


class Tables:
    """The tables of one lake root, by dataset.

    Examples
    --------
    >>> from mdframes.registry import REGISTRY
    >>> tables = Tables(Storage("/tmp/some-lake"))
    >>> tables.get(REGISTRY["insider_trading"]).uri
    '/tmp/some-lake/insider_trading'
    """

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._open: dict[str, DatasetTable] = {}
        # The last few lake.coverage() frames by their question, each with what it was made
        # from (coverage.py): answered again while no state file it read has changed. A
        # training set asks two questions (its panel's datasets, then its prices'): one kept
        # frame was made again on each.
        self.coverage_frames: dict[Any, Any] = {}

    def get(self, ds: Dataset) -> DatasetTable:
        """The dataset's table object (opened once; nothing is read or created yet)."""
        table = self._open.get(ds.name)
        if table is None:
            table = self._open[ds.name] = DatasetTable(self.storage, ds)
        return table

    def folders(self) -> list[Dataset]:
        """The lake datasets whose folder exists at the root, in folder order."""
        by_folder = {dir_name(ds.name): ds for ds in REGISTRY.values() if ds.lake}
        return [by_folder[f] for f in self.storage.dirs() if f in by_folder]

    def clean_temporaries(self) -> int:
        """Remove what killed writers left at the root, in every dataset folder and its
        Delta log (see :meth:`Storage.clean_temporaries`; object stores publish whole objects
        only, so there the root alone is looked at). Under the writer lease only."""
        storage = self.storage
        n = storage.clean_temporaries()
        if storage.local:
            for ds in self.folders():
                n += storage.clean_temporaries(dir_name(ds.name))
                n += storage.clean_temporaries(dir_name(ds.name), DELTA_LOG)
        return n

    def present(self, *, format1: bool = False) -> list[DatasetTable]:
        """The lake's datasets: every folder with a dtype record, a Delta log or a state (one
        of them lost is damage to report, not a dataset to skip), and, with ``format1``,
        those of format 1 not converted yet."""
        out = []
        for ds in self.folders():
            table = self.get(ds)
            if (
                self.storage.read_bytes(table.folder, MANIFEST) is not None
                or table.has_log()
                or self.storage.read_bytes(table.folder, STATE) is not None
                or (format1 and table.is_format1())
            ):
                out.append(table)
        return out
