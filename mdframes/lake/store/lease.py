"""The lake's writer lease: one sync or compaction writes a lake at a time.

On a local disk the lease is an OS file lock (``flock`` on ``<root>/.lock``), which the kernel
releases when its holder dies, even after ``kill -9``.

On an object store it is a small JSON object, ``<prefix>/_lease.json``, that says who holds
the lake and until when (``expires``, seconds since the epoch, UTC). Every step is one
conditional request, so two writers can never both believe they hold it:

- **take**: create the object with ``If-None-Match: *``; exactly one of several racing
  writers succeeds, the others get 412;
- **renew**: a heartbeat thread rewrites it every :data:`HEARTBEAT` seconds with
  ``If-Match: <our ETag>``, pushing ``expires`` :data:`TTL` seconds ahead; it runs whatever
  the holder is doing (waiting on a rate-limit window included). A failed ``If-Match`` means
  another writer took it: the lease is lost and :meth:`Lease.assert_held` raises;
- **take over**: a lease whose ``expires`` has passed (its holder died) is overwritten with
  ``If-Match: <the expired object's ETag>``, so of two writers taking over the same expired
  lease only one wins;
- **release**: a conditional delete (``If-Match: <our ETag>``), so a holder never removes a
  lease that has become another's; where the store has no conditional delete, a conditional
  overwrite marking it released;
- an object that cannot be read or parsed counts as held (by "an unreadable lease").

Settings: :data:`TTL` = 60 s (CONTRACT §10: the lease expires 60 s after its last renewal)
and :data:`HEARTBEAT` = 10 s, so a holder can miss five renewals in a row (a slow or
briefly unreachable store) before anyone may take over, while a dead holder's lake is free
again within a minute. The request timeouts (5 s connect, 10 s read, 2 attempts) keep one
renewal shorter than the heartbeat. Expiry compares the writer machines' clocks; skew between
them eats into the margin, so keep hosts on NTP.

Library: conditional writes go through **boto3**. pyarrow cannot send them
(apache/arrow#44281); ``obstore`` and ``boto3`` both can. Measured on this machine
(2026-11-24, moto server on 127.0.0.1, 3 processes per race, requests serialised as S3
serialises them): 70/70 races with exactly one creator and 70/70 with exactly one taker-over
for both. ``boto3`` costs more (import 121 ms vs 5 ms; 33.5 MB installed with botocore,
s3transfer and jmespath vs 16 MB), but only object-store lakes import it, once per sync,
and it alone can **delete conditionally** (``DeleteObject`` with ``If-Match``, S3 since
2025-09): object_store (under obstore and deltalake) has no conditional delete, so with it a
release could only leave a tombstone behind or race another taker.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._deps import require
from ...errors import LakeBusyError, MdframesError
from .location import Location, parse_root

__all__ = ["Lease", "LocalLease", "ObjectLease", "open_lease", "TTL", "HEARTBEAT", "LEASE"]

TTL = 60.0  # seconds after the last renewal at which an object-store lease expires
HEARTBEAT = 10.0  # seconds between renewals
POLL = 1.0  # seconds between attempts while waiting for a busy lake
LOCK = ".lock"  # the local lock file at the root
LEASE = "_lease.json"  # the object-store lease at the prefix


def _stamp(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


def _advice(wait: bool | None, ends: str, latest: str | None = None) -> str:
    """What a caller the lake is busy for can do: only what its call offers (``wait``:
    False for a call that has ``wait=`` and did not pass it, None for one that has none)."""
    if wait is False:
        return f"{ends}: run it again then, or pass wait=True to wait for it"
    if latest is None:
        return f"run it again when the other writer is done ({ends})"
    return f"run it again when the other writer is done, at the latest at {latest} ({ends})"


def _who(owner: str) -> str:
    return f"{owner} (pid {os.getpid()} on {socket.gethostname()})"


class Lease:
    """The writer lease of one lake (see the module docstring).

    Examples
    --------
    >>> lease = open_lease("/tmp/lake", owner="sync 000004")
    >>> with lease.hold():
    ...     lease.assert_held()                               # before each commit
    """

    owner: str
    how: str = ""  # how it was last taken: "locked", "created", "took over from <holder>"

    def hold(self, wait: bool | None = None) -> contextlib.AbstractContextManager[Lease]:
        """Hold the lease for the ``with`` block, or raise :class:`~mdframes.LakeBusyError`
        naming the holder and when its lease expires, with the advice that fits the call:
        ``wait=True`` retries until free; ``wait=False`` (a call that can wait: a sync)
        advises ``wait=True``; ``None`` (a call that cannot: compaction, repair, upgrade)
        advises running it again when the other writer is done."""
        raise NotImplementedError

    def assert_held(self) -> None:
        """Raise :class:`~mdframes.LakeBusyError` unless this lease is held right now (call it
        before every commit: a writer that lost its lease must not commit)."""
        raise NotImplementedError

    @property
    def held(self) -> bool:
        try:
            self.assert_held()
        except LakeBusyError:
            return False
        return True


def open_lease(
    store: Any,
    *,
    owner: str,
    ttl: float = TTL,
    heartbeat: float = HEARTBEAT,
    poll: float = POLL,
) -> Lease:
    """The writer lease of the lake at ``store``: a :class:`Location`, a root as
    :func:`~mdframes.lake.store.location.parse_root` takes it, or the lake's storage object (its
    resolved ``location``). ``owner`` says who holds it in others' errors (e.g. ``"sync
    000004"``); ``ttl``/``heartbeat`` are for tests.

    Examples
    --------
    >>> open_lease("/tmp/lake", owner="compaction")
    <LocalLease /tmp/lake/.lock>
    """
    if isinstance(store, Location):
        location = store
    elif isinstance(getattr(store, "location", None), Location):
        location = store.location  # the lake's storage, resolved once
    elif isinstance(store, (str, os.PathLike)):
        location = parse_root(store)
    else:
        raise TypeError(f"open_lease takes a lake root or its storage, not {type(store).__name__}")
    if not isinstance(owner, str) or not owner:
        raise ValueError("owner must be a non-empty string")
    if location.local:
        return LocalLease(location, owner, poll=poll)
    if not 0 < heartbeat < ttl:
        raise ValueError("heartbeat must be positive and shorter than ttl")
    return ObjectLease(location, owner, ttl=ttl, heartbeat=heartbeat, poll=poll)


# --- local disk ----------------------------------------------------------------------------------


class LocalLease(Lease):
    """``flock`` on ``<root>/.lock``; the file says who holds it."""

    def __init__(self, location: Location, owner: str, *, poll: float = POLL) -> None:
        self.location, self.owner, self.poll = location, owner, poll
        self.path = os.path.join(location.path, LOCK)
        self._fd: int | None = None

    def __repr__(self) -> str:
        return f"<LocalLease {self.path}>"

    @contextlib.contextmanager
    def hold(self, wait: bool | None = None) -> Iterator[Lease]:
        if self._fd is not None:
            raise RuntimeError("this lease is already held")
        Path(self.location.path).mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            while not _try_flock(fd):
                if not wait:
                    holder = os.pread(fd, 300, 0).decode(errors="replace").strip()
                    raise LakeBusyError(
                        f"another writer holds this lake ({holder or 'another process'}); "
                        + _advice(wait, "its lock is released when that process ends")
                    )
                time.sleep(self.poll)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{_who(self.owner)} since {_stamp(time.time())}".encode(), 0)
            self.how = "locked"
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        try:
            yield self
        finally:
            self._fd = None
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # releases the lock

    def assert_held(self) -> None:
        if self._fd is None:
            raise LakeBusyError(f"this writer does not hold the lake's lease ({self.path})")


def _try_flock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: an exclusive byte-range lock
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]  # Windows only
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


# --- object store --------------------------------------------------------------------------------


@dataclass
class _Seen:
    """What a reader found at the lease's key."""

    etag: str | None  # None: no object
    owner: str = ""
    expires: float = float("inf")  # unreadable counts as held, with no known expiry
    readable: bool = True


class ObjectLease(Lease):
    """A lease object renewed by a heartbeat thread (see the module docstring)."""

    def __init__(
        self,
        location: Location,
        owner: str,
        *,
        ttl: float = TTL,
        heartbeat: float = HEARTBEAT,
        poll: float = POLL,
    ) -> None:
        self.location, self.owner = location, owner
        self.ttl, self.heartbeat, self.poll = ttl, heartbeat, poll
        self.key = location.key(LEASE)
        self._client: Any = None
        self._etag: str | None = None
        self._expires = 0.0
        self._lost: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._mutex = threading.Lock()
        self._token = f"{_who(owner)} #{os.urandom(4).hex()}"

    def __repr__(self) -> str:
        return f"<ObjectLease {self.location.uri(LEASE)}>"

    # -- the client ----------------------------------------------------------------------------
    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = _s3_client(self.location)
        return self._client

    def _body(self, expires: float) -> bytes:
        return json.dumps(
            {"owner": self._token, "expires": expires, "expires_utc": _stamp(expires)}
        ).encode()

    def _call(self, method: str, **kwargs: Any) -> Any:
        """One S3 call; returns the response, or the error code for conditional failures."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.client, method)(Bucket=self.location.bucket, Key=self.key, **kwargs)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in ("PreconditionFailed", "ConditionalRequestConflict") or status in (409, 412):
                return _Conflict(code or str(status))
            if code == "NoSuchBucket":
                raise self._error(exc) from None
            if code in ("NoSuchKey", "404", "NotFound") or status == 404:
                return _Missing()
            raise self._error(exc) from None
        except BotoCoreError as exc:
            raise self._error(exc) from None

    def _error(self, exc: BaseException) -> MdframesError:
        """A store that cannot be reached (:func:`~.faults.unreachable`), or another failure
        of a request about the lease (no bucket, access denied)."""
        from .faults import unreachable

        return unreachable(self.location, exc) or MdframesError(
            f"cannot use the lake's lease {self.location.uri(LEASE)}: {self.location.scrub(exc)}"
        )

    def _read(self) -> _Seen:
        got = self._call("get_object")
        if isinstance(got, _Missing):
            return _Seen(etag=None)
        if isinstance(got, _Conflict):  # pragma: no cover - a GET has no condition
            return _Seen(etag="?", readable=False)
        etag = got["ETag"]
        try:
            data = json.loads(got["Body"].read())
            return _Seen(etag=etag, owner=str(data["owner"]), expires=float(data["expires"]))
        except (ValueError, KeyError, TypeError):
            return _Seen(etag=etag, readable=False)

    # -- taking --------------------------------------------------------------------------------
    def _try_take(self) -> _Seen | None:
        """Take the lease if it is free or expired; None when taken, else what holds it."""
        expires = time.time() + self.ttl
        put = self._call("put_object", Body=self._body(expires), IfNoneMatch="*")
        if not isinstance(put, (_Conflict, _Missing)):
            self._taken(put["ETag"], expires, "created")
            return None
        seen = self._read()
        if seen.etag is None:  # released between our two requests: try again at once
            return _Seen(etag=None, expires=0.0)
        if seen.owner == self._token:  # our create landed but its answer was lost (retried)
            self._taken(seen.etag, expires, "created (answer retried)")
            return None
        if not seen.readable or seen.expires > time.time():
            return seen
        expires = time.time() + self.ttl
        put = self._call("put_object", Body=self._body(expires), IfMatch=seen.etag)
        if isinstance(put, (_Conflict, _Missing)):  # another writer took it over first
            return _Seen(etag=None, expires=0.0)
        self._taken(put["ETag"], expires, f"took over from {seen.owner}")
        return None

    def _taken(self, etag: str, expires: float, how: str) -> None:
        self._etag, self._expires, self._lost = etag, expires, None
        self.how = how

    @contextlib.contextmanager
    def hold(self, wait: bool | None = None) -> Iterator[Lease]:
        if self._etag is not None:
            raise RuntimeError("this lease is already held")
        quick = 0
        while True:
            seen = self._try_take()
            if seen is None:
                break
            if seen.etag is None and quick < 10:  # a race lost or a release seen: look again
                quick += 1
                continue
            quick = 0
            if seen.etag is None:  # the object comes and goes: let the others settle
                time.sleep(self.poll)
                continue
            if not wait:
                raise LakeBusyError(self._busy_text(seen, wait))
            time.sleep(self.poll)
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._beat, name=f"mdframes-lease-{self.key}", daemon=True
        )
        self._thread.start()
        try:
            yield self
        finally:
            self._release()

    def _busy_text(self, seen: _Seen, wait: bool | None) -> str:
        where = self.location.uri(LEASE)
        if not seen.readable:
            return (
                f"another writer holds this lake: its lease {where} is unreadable, so it counts "
                "as held; if no writer is running, delete that object"
            )
        left = max(0.0, seen.expires - time.time())
        ends = time.strftime("%H:%M:%S UTC", time.gmtime(seen.expires))
        return f"another writer holds this lake ({seen.owner}); " + _advice(
            wait,
            f"its lease expires at {_stamp(seen.expires)} (in {left:.0f} s) unless renewed",
            latest=ends,
        )

    # -- renewing ------------------------------------------------------------------------------
    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat):
            if not self._renew():
                return

    def _renew(self) -> bool:
        """One renewal; False once the lease is lost (the heartbeat stops)."""
        with self._mutex:
            if self._etag is None or self._lost:
                return False
            expires = time.time() + self.ttl
            try:
                put = self._call("put_object", Body=self._body(expires), IfMatch=self._etag)
            except MdframesError:
                # The store did not answer: keep trying; the lease stays ours until it expires.
                if time.time() >= self._expires:
                    self._lost = "it expired while the store could not be reached"
                    return False
                return True
            if isinstance(put, (_Conflict, _Missing)):
                self._lost = "another writer took it over"
                return False
            self._etag, self._expires = put["ETag"], expires
            return True

    def assert_held(self) -> None:
        with self._mutex:
            if self._etag is None:
                raise LakeBusyError(f"this writer does not hold the lake's lease ({self!r})")
            if self._lost is None and time.time() >= self._expires:
                self._lost = "its last renewal is more than the lease's lifetime ago"
            if self._lost:
                raise LakeBusyError(
                    f"this writer lost the lake's lease ({self._lost}); nothing more is "
                    "committed; run it again"
                )

    # -- releasing -----------------------------------------------------------------------------
    def _release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._mutex:
            etag, lost = self._etag, self._lost
            self._etag = None
        if etag is None or lost:
            return
        try:
            self._call("delete_object", IfMatch=etag)  # 412: no longer ours, left alone
        except MdframesError:
            # A store without conditional deletes (or a failed request): mark it released,
            # still only if ours; failing that, it expires by itself.
            with contextlib.suppress(MdframesError):
                self._call("put_object", Body=self._body(0.0), IfMatch=etag)


class _Conflict:
    def __init__(self, code: str) -> None:
        self.code = code


class _Missing:
    pass


def _s3_client(location: Location) -> Any:
    """A boto3 S3 client from the location's resolved options (never logged)."""
    boto3 = require("boto3", "lake", "a lake on an object store")
    from botocore.config import Config

    opts = location.options
    endpoint = opts.get("AWS_ENDPOINT_URL") or None
    virtual = opts.get("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "").lower() == "true"
    retries = (location.setting("max_retries") or "").strip()
    config = Config(
        connect_timeout=min(5.0, location.seconds("connect_timeout") or 5.0),
        read_timeout=min(10.0, location.seconds("timeout") or 10.0),
        retries={
            "max_attempts": min(2, int(retries)) if retries.isdigit() else 2,
            "mode": "standard",
        },
        s3={"addressing_style": "virtual" if virtual or not endpoint else "path"},
    )
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        region_name=opts.get("AWS_REGION") or "us-east-1",
        aws_access_key_id=opts.get("AWS_ACCESS_KEY_ID") or None,
        aws_secret_access_key=opts.get("AWS_SECRET_ACCESS_KEY") or None,
        aws_session_token=opts.get("AWS_SESSION_TOKEN") or None,
        config=config,
    )
