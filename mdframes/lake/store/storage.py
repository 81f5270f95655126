"""Durable files at a lake root: a local folder or an object-store prefix (``s3://...``).

Local writes go to a hidden temporary name, are flushed and ``fsync``-ed, renamed into place
and the folder is ``fsync``-ed: a reader (or a crash) sees a whole file or none. Object stores
publish an object only when its upload completes, so there the final name is written directly.
The root is resolved once by :func:`~mdframes.lake.store.location.parse_root` (settings,
credentials kept out of every printed form); the writer lease is :mod:`mdframes.lake.store.lease`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

from ...errors import LakeBusyError

__all__ = ["Storage", "FileEntry", "LakeBusyError", "checkpoint"]


CRASH_ENV = "MDFRAMES_LAKE_CRASH"
# A staged upload of the object-store library (``<name>#<n>``, renamed or linked into place)
# or a commit temporary of a Delta writer (``_commit_<id>.json.tmp``): another engine's writer
# may be in the middle of one, so only those older than this are a dead writer's.
FOREIGN_TEMPORARY_AGE = 15 * 60.0
_STAGED = re.compile(r"#\d+$")


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
    mtime: float | None = None  # seconds since the epoch, where the store says


class Storage:
    """File operations relative to a lake root (nothing is created until something is written).

    Examples
    --------
    >>> Storage("/tmp/lake").uri("insider_trading")
    '/tmp/lake/insider_trading'
    """

    def __init__(self, root: Any, storage_options: dict[str, str] | None = None) -> None:
        import pyarrow.fs as pafs

        from .location import parse_root

        self.location = parse_root(root, storage_options)
        loc = self.location
        self.local = loc.local
        if loc.local:
            self.fs = pafs.LocalFileSystem()
            self.scheme = ""
            self.base = loc.path
        else:
            self.fs = _s3_filesystem(loc)
            self.scheme = loc.scheme
            self.base = "/".join(p for p in (loc.bucket, loc.prefix) if p)
        self.root = loc.display  # never with credentials

    def __repr__(self) -> str:
        return f"Storage({self.root!r})"

    def scrub(self, text: Any) -> str:
        """``text`` without the lake's credentials (an object-store error may echo them)."""
        return self.location.scrub(text)

    def delta_options(self) -> dict[str, str] | None:
        """deltalake's object-store keys, as the location resolved them."""
        return dict(self.location.options) or None

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
                mtime = info.mtime.timestamp() if info.mtime is not None else None
                out.append(FileEntry(info.base_name, info.path, int(info.size or 0), mtime))
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
            checkpoint(f"temporary-{os.path.basename(final)}")  # written, not yet in place
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
        """Remove the files a killed writer left in one folder: our hidden
        ``.<name>.<pid>.<id>.tmp`` names (call it only under the writer lease: then no live
        writer of ours owns them), and commit temporaries and staged uploads of Delta writers
        older than :data:`FOREIGN_TEMPORARY_AGE`. Returns how many."""
        n = 0
        now = time.time()
        for entry in self.listdir(*parts):
            name = entry.name
            ours = name.startswith(".") and name.endswith(".tmp")
            staged = _STAGED.search(name) or (name.startswith("_commit_") and name.endswith(".tmp"))
            old = entry.mtime is not None and now - entry.mtime > FOREIGN_TEMPORARY_AGE
            if ours or (staged and old):
                self.delete(*parts, name)
                n += 1
        return n


def _s3_filesystem(location: Any) -> Any:
    """pyarrow's S3 filesystem from deltalake's keys (the readers' and the conversion's),
    with the same limits: ``connect_timeout``, ``timeout`` (per request) and ``max_retries``
    as deltalake reads them."""
    import pyarrow.fs as pafs

    options = location.options
    endpoint = options.get("AWS_ENDPOINT_URL", "")
    kwargs: dict[str, Any] = {}
    if endpoint:
        scheme, _, host = endpoint.partition("://")
        kwargs.update(endpoint_override=host or scheme, scheme=scheme if host else "https")
    if options.get("AWS_REGION"):
        kwargs["region"] = options["AWS_REGION"]
    if options.get("AWS_ACCESS_KEY_ID"):
        kwargs["access_key"] = options["AWS_ACCESS_KEY_ID"]
        kwargs["secret_key"] = options.get("AWS_SECRET_ACCESS_KEY")
        kwargs["session_token"] = options.get("AWS_SESSION_TOKEN")
    for name, arg in (("connect_timeout", "connect_timeout"), ("timeout", "request_timeout")):
        seconds = location.seconds(name)
        if seconds is not None:
            kwargs[arg] = seconds
    retries = location.setting("max_retries")
    if retries is not None and retries.strip().isdigit():
        kwargs["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=int(retries) + 1)
    return pafs.S3FileSystem(**kwargs)


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
