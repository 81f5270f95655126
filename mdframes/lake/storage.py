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

from ..errors import InvalidParameterError, LakeBusyError
from .location import redact_root as redact_uri  # the one redaction of lake roots

__all__ = ["Storage", "FileEntry", "LakeBusyError", "checkpoint", "open_lease", "redact_uri"]

_SCHEMES = ("s3", "gs", "gcs", "abfs", "az", "hdfs")

CRASH_ENV = "MDFRAMES_LAKE_CRASH"
_LOCK_STALE = 600.0  # seconds without a refresh after which an object-store lock is stale


def _root_text(root: Any) -> str:
    if isinstance(root, (str, os.PathLike)):
        text = os.fspath(root)
        if isinstance(text, str) and text.strip():
            return text.strip()
    raise InvalidParameterError(
        f"a lake root is a folder path or an object-store URI, got {type(root).__name__} {root!r}",
        parameter="root",
    )


def _query(uri: str) -> dict[str, str]:
    from urllib.parse import parse_qsl, urlsplit

    return dict(parse_qsl(urlsplit(uri).query))


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
    """File operations relative to a lake root (nothing is created until something is written).

    Examples
    --------
    >>> Storage("/tmp/lake").uri("insider_trading")  # doctest: +SKIP
    '/tmp/lake/insider_trading'
    """

    def __init__(
        self, root: str | os.PathLike[str], storage_options: dict[str, str] | None = None
    ) -> None:
        text = _root_text(root)
        self.query: dict[str, str] = {}
        if "://" in text and not text.startswith("file://"):
            import pyarrow.fs as pafs

            scheme = text.split("://", 1)[0].lower()
            if scheme not in _SCHEMES:
                raise InvalidParameterError(
                    f"lake root {redact_uri(text)!r}: unsupported scheme {scheme!r} "
                    f"(a folder, or one of {', '.join(_SCHEMES)})",
                    parameter="root",
                )
            try:
                self.fs, base = pafs.FileSystem.from_uri(text)
            except (ValueError, OSError, TypeError) as exc:
                raise InvalidParameterError(
                    f"lake root {redact_uri(text)!r} cannot be opened ({redact_uri(str(exc))})",
                    parameter="root",
                ) from None
            self.local = False
            self.scheme = scheme
            self.base = base.rstrip("/")
            self.query = _query(text)
        else:
            import pyarrow.fs as pafs

            path = Path(text.removeprefix("file://")).expanduser().resolve()
            if path.exists() and not path.is_dir():
                raise InvalidParameterError(
                    f"lake root {str(path)!r} is a file, not a folder", parameter="root"
                )
            self.fs = pafs.LocalFileSystem()
            self.local = True
            self.scheme = ""
            self.base = str(path)
        self.root = text
        self.options = dict(storage_options or {})

    def __repr__(self) -> str:
        return f"Storage({redact_uri(self.root)!r})"

    def delta_options(self) -> dict[str, str] | None:
        """deltalake's object-store keys, resolved as the writer lease resolves them
        (:func:`~mdframes.lake.location.parse_root`): ``storage_options=``, then the root's
        query (as pyarrow spells it) and credentials in its user part, then the ``AWS_*``
        environment variables."""
        if self.local:
            return self.options or None
        from .location import parse_root

        return dict(parse_root(self.root, self.options).options) or None

    def exists(self) -> bool:
        """Whether the root holds anything yet."""
        import pyarrow.fs as pafs

        return self.fs.get_file_info(self.base).type == pafs.FileType.Directory or bool(self.dirs())

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
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, final)
        except BaseException:  # a full disk, an interrupt: no temporary left behind
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _fsync_dir(os.path.dirname(final))

    def write_json(self, value: Any, *parts: str) -> None:
        self.write_bytes(json.dumps(value, indent=1, sort_keys=True).encode(), *parts)

    def delete(self, *parts: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(self.path(*parts))

    def clean_temporaries(self, *parts: str) -> int:
        """Remove files a crashed writer left behind: our hidden ``.tmp`` names and the
        commit temporaries of a killed Delta writer (``_delta_log/_commit_*.tmp``). Call it
        only under the writer lease: then no live writer owns them."""
        n = 0
        for entry in self.listdir(*parts):
            if entry.name.endswith(".tmp") and entry.name.startswith((".", "_commit_")):
                self.delete(*parts, entry.name)
                n += 1
        return n

    # -- the sync lock ------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[Any]:
        """Hold the lake's lock, or raise :class:`LakeBusyError` at once."""
        if self.local:
            os.makedirs(self.base, exist_ok=True)
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


class _Lease:
    """The writer lease until :mod:`mdframes.lake.lease` replaces it: today's lock behind
    the lease's interface (``hold(wait)``, ``assert_held()``)."""

    def __init__(self, storage: Storage, owner: str) -> None:
        self.storage = storage
        self.owner = owner
        self._holder: _Holder | None = None

    @contextlib.contextmanager
    def hold(self, wait: bool = False) -> Iterator[_Lease]:
        with self.storage.lock(LOCK_NAME) as holder:
            self._holder = holder
            try:
                yield self
            finally:
                self._holder = None

    def assert_held(self) -> None:
        if self._holder is None:
            raise LakeBusyError("this writer no longer holds the lake's writer lease")
        self._holder.refresh()


LOCK_NAME = ".lock"


def open_lease(storage: Storage, owner: str = "") -> _Lease:
    """The lake's writer lease (see :class:`_Lease`)."""
    return _Lease(storage, owner or f"pid {os.getpid()}")


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
