"""Where one dataset's table sits, shared by the roles of :class:`~.table.DatasetTable`."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ...registry import Dataset
from ..store.storage import Storage
from ..sync.modes import Mode, mode_of
from .layout import dir_name

__all__ = ["TablePlace"]


@dataclass
class TablePlace:
    """One dataset's folder in a lake: its storage, mode, table URI, and the lock its roles
    share (a Delta table object is refreshed, read and committed by one thread at a time)."""

    storage: Storage
    ds: Dataset
    mode: Mode = field(init=False)
    folder: str = field(init=False)
    uri: str = field(init=False)
    lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.mode = mode_of(self.ds)
        self.folder = dir_name(self.ds.name)
        self.uri = self.storage.uri(self.folder)

    def file_uri(self, path: str) -> str:
        """A data file's URI from the path the log lists (relative to the table)."""
        return path if "://" in path or path.startswith("/") else f"{self.uri}/{path}"

    def fs_path(self, uri: str) -> str:
        """A data file's path for the storage's filesystem."""
        return uri if self.storage.local else uri.split("://", 1)[1]

    def name(self, uri: str) -> str:
        """A data file as errors and reports name it: ``<folder>/<file>``."""
        return f"{self.folder}/{uri.rsplit('/', 1)[-1]}"
