"""Durable writes to a lake root: a local folder or a pyarrow filesystem URI (``s3://...``).

Local writes go to a hidden temporary name, are flushed and ``fsync``-ed, renamed into place
and the folder is ``fsync``-ed: a reader (or a crash) sees a whole file or none. Object stores
publish an object only when its upload completes, so there the final name is written directly.
A lock keeps two syncs of one lake from interleaving: ``flock`` on a local lake (released by
the kernel even after ``kill -9``); on an object store, a lock object that expires when its
holder stops refreshing it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LakeBusyError

__all__ = ["Storage", "FileEntry", "LakeBusyError", "checkpoint"]

CRASH_ENV = "MDFRAMES_LAKE_CRASH"
_LOCK_STALE = 600.0  # seconds without a refresh after which an object-store lock is stale


def checkpoint(point: str) -> None:
    """Test hook: ``MDFRAMES_LAKE_CRASH=point[:n]`` kills this process with SIGKILL at the
    n-th (default first) pass through ``point``, so tests can crash a real sync anywhere."""
    wanted = os.environ.get(CRASH_ENV)
    if not wanted:
        return
    name, _, nth = wanted.partition(":")
    if name != point:
        return
    counts = checkpoint.__dict__.setdefault("counts", {})
    counts[point] = counts.get(point, 0) + 1
    if counts[point] >= int(nth or 1):
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


@dataclass
class FileEntry:
    name: str
    path: str  # full path for the filesystem
    size: int


class Storage:
    """File operations relative to a lake root.

    Examples
    --------
    >>> Storage("/tmp/lake").uri("insider_trading")  # doctest: +SKIP
    '/tmp/lake/insider_trading'
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        import pyarrow.fs as pafs

        text = os.fspath(root)
        if "://" in text and not text.startswith("file://"):
            self.fs, base = pafs.FileSystem.from_uri(text)
            self.local = False
            self.scheme = text.split("://", 1)[0]
            self.base = base.rstrip("/")
        else:
            path = Path(text.removeprefix("file://")).expanduser().resolve()
            path.mkdir(parents=True, exist_ok=True)
            self.fs = pafs.LocalFileSystem()
            self.local = True
            self.scheme = ""
            self.base = str(path)
        self.root = text

    # -- names --------------------------------------------------------------------------------
    def path(self, *parts: str) -> str:
        return "/".join([self.base, *parts]) if parts else self.base

    def uri(self, *parts: str) -> str:
        """What another engine is given: a local path, or ``scheme://bucket/prefix/...``."""
        inner = self.path(*parts)
        return inner if self.local else f"{self.scheme}://{inner}"

    # -- reading ------------------------------------------------------------------------------
    def listdir(self, *parts: str) -> list[FileEntry]:
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self.path(*parts), allow_not_found=True)
        out = []
        for info in self.fs.get_file_info(selector):
            if info.type == pafs.FileType.File:
                out.append(FileEntry(info.base_name, info.path, int(info.size or 0)))
        return sorted(out, key=lambda e: e.name)

    def dirs(self) -> list[str]:
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self.base, allow_not_found=True)
        return sorted(
            i.base_name
            for i in self.fs.get_file_info(selector)
            if i.type == pafs.FileType.Directory
        )

    def read_bytes(self, *parts: str) -> bytes | None:
        try:
            with self.fs.open_input_stream(self.path(*parts)) as fh:
                return bytes(fh.read())
        except FileNotFoundError:
            return None
        except OSError as exc:  # pyarrow's S3 errors are OSErrors without errno
            if "not found" in str(exc).lower() or "does not exist" in str(exc).lower():
                return None
            raise

    def read_json(self, *parts: str) -> Any:
        raw = self.read_bytes(*parts)
        return None if raw is None else json.loads(raw)

    # -- writing ------------------------------------------------------------------------------
    def _tmp_name(self, final: str) -> str:
        folder, _, name = final.rpartition("/")
        return f"{folder}/.{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"

    def write_bytes(self, data: bytes, *parts: str) -> None:
        """Write a whole file durably under its final name."""
        final = self.path(*parts)
        if not self.local:
            with self.fs.open_output_stream(final) as fh:
                fh.write(data)
            return
        os.makedirs(os.path.dirname(final), exist_ok=True)
        tmp = self._tmp_name(final)
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
        _fsync_dir(os.path.dirname(final))

    def write_json(self, value: Any, *parts: str) -> None:
        self.write_bytes(json.dumps(value, indent=1, sort_keys=True).encode(), *parts)

    def write_parquet(self, table: Any, *parts: str, **options: Any) -> int:
        """Write an Arrow table as one Parquet file, durably; returns its size in bytes."""
        import pyarrow.parquet as pq

        final = self.path(*parts)
        if not self.local:
            pq.write_table(table, final, filesystem=self.fs, **options)
            return int(self.fs.get_file_info(final).size or 0)
        os.makedirs(os.path.dirname(final), exist_ok=True)
        tmp = self._tmp_name(final)
        try:
            pq.write_table(table, tmp, **options)
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            checkpoint("data-written")  # whole file on disk, not yet visible
            os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _fsync_dir(os.path.dirname(final))
        checkpoint("data-renamed")  # visible, state not yet updated
        return os.path.getsize(final)

    def delete(self, *parts: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(self.path(*parts))

    def clean_temporaries(self, *parts: str) -> int:
        """Remove files a crashed writer left behind (hidden ``.tmp`` names)."""
        n = 0
        for entry in self.listdir(*parts):
            if entry.name.startswith(".") and entry.name.endswith(".tmp"):
                self.delete(*parts, entry.name)
                n += 1
        return n

    # -- the sync lock ------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[Any]:
        """Hold the lake's lock, or raise :class:`LakeBusyError` at once."""
        if self.local:
            with self._flock(self.path(name)) as holder:
                yield holder
        else:
            with self._object_lock(self.path(name)) as holder:
                yield holder

    @contextlib.contextmanager
    def _flock(self, path: str) -> Iterator[Any]:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except ImportError:  # pragma: no cover - Windows: an exclusive byte-range lock
                import msvcrt

                try:
                    msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
                except OSError:
                    raise BlockingIOError from None
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise LakeBusyError(
                f"another sync is writing this lake ({holder}); wait for it to finish"
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} since {time.strftime('%H:%M:%S')}".encode(), 0)
            yield _Holder(None)
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)

    @contextlib.contextmanager
    def _object_lock(self, path: str) -> Iterator[Any]:
        raw = self.read_bytes(path.removeprefix(self.base + "/"))
        if raw is not None:
            held = json.loads(raw)
            if time.time() - float(held.get("refreshed", 0)) < _LOCK_STALE:
                raise LakeBusyError(
                    f"another sync holds this lake ({held.get('owner')}); it expires "
                    f"{_LOCK_STALE:.0f} s after its last refresh"
                )
        token = f"pid {os.getpid()} {secrets.token_hex(4)}"
        holder = _Holder(lambda: self._refresh(path, token))
        holder.refresh()
        check = json.loads(self.read_bytes(path.removeprefix(self.base + "/")) or b"{}")
        if check.get("owner") != token:  # another writer raced us to the lock object
            raise LakeBusyError(f"another sync took this lake's lock ({check.get('owner')})")
        try:
            yield holder
        finally:
            self.delete(path.removeprefix(self.base + "/"))

    def _refresh(self, path: str, token: str) -> None:
        body = json.dumps({"owner": token, "refreshed": time.time()}).encode()
        with self.fs.open_output_stream(path) as fh:
            fh.write(body)


class _Holder:
    def __init__(self, refresh: Any) -> None:
        self._refresh = refresh

    def refresh(self) -> None:
        if self._refresh is not None:
            self._refresh()


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)
