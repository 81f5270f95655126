"""The lake's own files beside a dataset's Delta table: the dtype record (``_mdframes.json``)
and the state of what was synced (``_state.json``)."""

from __future__ import annotations

import json
from typing import Any

from ..errors import MdframesError
from .faults import damaged
from .layout import DELTA_LOG, FORMAT1_MANIFEST, MANIFEST, STATE, Manifest, time_column
from .place import TablePlace

__all__ = ["Sidecar"]


class Sidecar:
    """Read and write a dataset's dtype record and state (the record cached until
    :meth:`forget`: another writer may widen it with a commit)."""

    def __init__(self, place: TablePlace) -> None:
        self.place = place
        self._manifest: Manifest | None = None

    @property
    def manifest(self) -> Manifest | None:
        """The dtype record (None: never written)."""
        if self._manifest is None:
            raw = self.read(MANIFEST)
            if raw is not None:
                try:
                    self._manifest = Manifest.from_json(raw)
                except MdframesError:
                    raise
                except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
                    raise self._damaged(MANIFEST, exc) from None
        return self._manifest

    def forget(self) -> None:
        """Read the dtype record again when next asked."""
        self._manifest = None

    def read(self, name: str) -> bytes | None:
        """One of the dataset folder's files (None: absent)."""
        place = self.place
        try:
            return place.storage.read_bytes(place.folder, name)
        except OSError as exc:
            raise self._damaged(name, exc) from None

    def _damaged(self, name: str, exc: BaseException) -> Exception:
        place = self.place
        return damaged(place.ds.name, f"{place.folder}/{name}", place.storage.scrub(exc))

    def new_manifest(self) -> Manifest:
        ds = self.place.ds
        self._manifest = Manifest(ds.name, ds.lake, list(ds.record_id), None, [])
        return self._manifest

    def save_manifest(self, manifest: Manifest) -> None:
        if manifest.time is None:
            manifest.time = time_column(self.place.ds, manifest.names())
        self.place.storage.write_bytes(manifest.to_json(), self.place.folder, MANIFEST)
        self._manifest = manifest

    def state(self) -> dict[str, Any]:
        """What was synced: ``units`` (windows or snapshots), ``failed`` and more."""
        raw = self.read(STATE)
        if raw is None:
            return {"units": {}, "failed": {}}
        try:
            state = json.loads(raw)
            state["units"]  # noqa: B018 - its presence is the check
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise self._damaged(STATE, exc) from None
        return dict(state)

    def save_state(self, state: dict[str, Any]) -> None:
        self.place.storage.write_json(state, self.place.folder, STATE)

    def is_format1(self) -> bool:
        """A dataset folder of mdframes 0.2 not converted yet (a manifest, no Delta log)."""
        return self.read(FORMAT1_MANIFEST) is not None and not self.has_log()

    def has_log(self) -> bool:
        import pyarrow.fs as pafs

        storage = self.place.storage
        info = storage.fs.get_file_info(storage.path(self.place.folder, DELTA_LOG))
        return info.type == pafs.FileType.Directory
