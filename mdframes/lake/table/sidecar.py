"""The lake's own files beside a dataset's Delta table: the dtype record (``_mdframes.json``)
and the state of what was synced (``_state.json``)."""

from __future__ import annotations

import json
from typing import Any

from ...errors import MdframesError
from ..store.faults import damaged
from .layout import DELTA_LOG, FORMAT1_MANIFEST, MANIFEST, STATE, Column, DtypeRecord, time_column
from .place import TablePlace

__all__ = ["Sidecar"]


class Sidecar:
    """Read and write a dataset's dtype record and state (the record cached until
    :meth:`forget`: another writer may widen it with a commit).

    The state also records ``committed``, the last table version this lake committed: a log
    that no longer reaches it lost versions (see :mod:`mdframes.lake.table.health`). Every save of
    the state carries the newest version this object committed, so a caller's older copy of
    the state never takes it back."""

    def __init__(self, place: TablePlace) -> None:
        self.place = place
        self._manifest: DtypeRecord | None = None
        # Versions this writer's session vouches for: ``committed`` (its newest commit) and
        # ``reviewed`` (every version up to it is the lake's own or was repaired). Merged
        # into each save of the state, so a caller's older copy never takes them back.
        self.session: dict[str, int] = {}

    @property
    def manifest(self) -> DtypeRecord | None:
        """The dtype record (None: never written). A table whose record is gone raises
        :class:`~mdframes.LakeDamagedError`: read without it, its rows would look like none."""
        record = self.stored_manifest()
        if record is None and self.has_log():
            raise damaged(
                self.place.ds.name,
                f"{self.place.folder}/{MANIFEST}",
                "the dtype record is gone while the table holds data",
            )
        return record

    def stored_manifest(self) -> DtypeRecord | None:
        """The dtype record as stored (None: absent)."""
        if self._manifest is None:
            raw = self.read(MANIFEST)
            if raw is not None:
                try:
                    from .frames import arrow_type

                    record = DtypeRecord.from_json(raw)
                    for c in record.columns:  # a kind this mdframes does not know: damage
                        arrow_type(c.kind)
                    self._manifest = record
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

    def rebuild_manifest(self, schema: Any) -> DtypeRecord:
        """A lost dtype record made again (and saved) from the registry and the table's
        Arrow ``schema``: the loader's empty frame types the registry's columns, as a sync
        records them; a column the loader left untyped or only the table has takes its kind
        from the stored type."""
        from ...frame import build_frame
        from .frames import arrow_type, extend_manifest

        ds = self.place.ds
        manifest = DtypeRecord(ds.name, ds.lake, list(ds.record_id), None, [])
        extend_manifest(manifest, build_frame(ds, []), ds)
        declared = {f.name: f.kind for f in ds.all_fields}
        for f in schema:
            if f.name in self.place.mode.meta:
                continue
            kind = _stored_kind(f.type, declared.get(f.name))
            col = manifest.column(f.name)
            if col is None:
                manifest.columns.append(Column(f.name, kind))
            elif col.kind == "null" or arrow_type(col.kind) != f.type:
                col.kind = kind
        self.save_manifest(manifest)
        return manifest

    def new_manifest(self) -> DtypeRecord:
        ds = self.place.ds
        self._manifest = DtypeRecord(ds.name, ds.lake, list(ds.record_id), None, [])
        return self._manifest

    def save_manifest(self, manifest: DtypeRecord) -> None:
        if manifest.time is None:
            manifest.time = time_column(self.place.ds, manifest.names())
        self.place.storage.write_bytes(manifest.to_json(), self.place.folder, MANIFEST)
        self._manifest = manifest

    def state(self) -> dict[str, Any]:
        """What was synced: ``units`` (windows or snapshots), ``failed``, ``committed`` and
        more."""
        state = self.stored_state()
        return {"units": {}, "failed": {}} if state is None else state

    def stored_state(self) -> dict[str, Any] | None:
        """The state as stored (None: absent)."""
        return self.parse_state(self.read(STATE))

    def state_bytes(self) -> bytes | None:
        """The state file's bytes as stored (None: absent): a reader that keeps what it made
        of them compares these before parsing them again."""
        return self.read(STATE)

    def parse_state(self, raw: bytes | None) -> dict[str, Any] | None:
        """The state of :meth:`state_bytes` (None: absent)."""
        if raw is None:
            return None
        try:
            state = json.loads(raw)
            state["units"]  # noqa: B018 - its presence is the check
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise self._damaged(STATE, exc) from None
        return dict(state)

    def save_state(self, state: dict[str, Any]) -> None:
        for key, version in self.session.items():
            if version > int(state.get(key, -1)):
                state[key] = version
        self.place.storage.write_json(state, self.place.folder, STATE)

    def committed(self, before: int, after: int) -> None:
        """Note this session's commit of version ``after`` made on ``before`` (saved with the
        state's next save): the log is reviewed up to it when it was up to ``before``."""
        session = self.session
        session["committed"] = max(session.get("committed", -1), after)
        if after == before + 1 and session.get("reviewed") == before:
            session["reviewed"] = after

    def vouch(self, committed: int, reviewed: int) -> None:
        """Start a session that vouches for the log up to these versions."""
        self.session = {"committed": committed, "reviewed": reviewed}

    def is_format1(self) -> bool:
        """A dataset folder of mdframes 0.2 not converted yet (a manifest, no Delta log)."""
        return self.read(FORMAT1_MANIFEST) is not None and not self.has_log()

    def has_log(self) -> bool:
        import pyarrow.fs as pafs

        storage = self.place.storage
        info = storage.fs.get_file_info(storage.path(self.place.folder, DELTA_LOG))
        return info.type == pafs.FileType.Directory


def _stored_kind(stored: Any, declared: str | None) -> str:
    """The column kind of a stored Arrow type (text: JSON where the registry says so)."""
    import pyarrow as pa

    if pa.types.is_string(stored) or pa.types.is_large_string(stored):
        return "json" if declared == "json" else "string"
    if pa.types.is_list(stored) or pa.types.is_large_list(stored):
        return "list"
    if pa.types.is_timestamp(stored):
        return "timestamp"
    if pa.types.is_date(stored):
        return "date"
    if pa.types.is_boolean(stored):
        return "boolean"
    if pa.types.is_integer(stored):
        return "Int64"
    return "float64" if pa.types.is_floating(stored) else "string"
