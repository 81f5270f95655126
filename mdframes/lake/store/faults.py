"""The lake's errors about its store and its own files, in one place: what cannot be reached,
what is damaged, and what to do.

An object store's failures come from three clients, each in its own words: deltalake
(``OSError: Generic S3 error ... error sending request ... tcp connect error``), pyarrow
(``OSError: AWS Error NETWORK_CONNECTION ... curlCode: 7``) and, for the writer lease,
boto3 (``EndpointConnectionError``). :func:`unreachable` is the one place that tells a store
that cannot be reached from one that answered: such a failure is never damage and never
calls for ``repair()``. The lake's public calls pass every error through it
(:func:`reaching`), so a failure another module wrapped as damage or as a failed write is
still recognised by the error it arose from.

A failed write (a full disk) can make a worker thread of deltalake's Rust runtime panic; Rust
prints that panic to the process's standard error before deltalake returns the error.
:func:`rust_panics_hidden` keeps those lines off standard error while a write runs, so a
failure reads as the one line of its error.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, Concatenate, ParamSpec, TypeVar

from ...errors import ApiError, LakeDamagedError, LakeUnavailableError, MdframesError, NetworkError

__all__ = [
    "damaged",
    "write_failed",
    "unreachable",
    "reaching",
    "rust_panics_hidden",
    "native_free",
]

P = ParamSpec("P")
R = TypeVar("R")

# The causes, most specific first: (reason, words of deltalake / pyarrow / boto3 / Python).
_CAUSES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "host name not resolved",
        re.compile(
            r"(?i)dns error|could not resolve|name or service not known|failed to lookup "
            r"address|temporary failure in name resolution|nodename nor servname|curlCode: 6\b"
            r"|getaddrinfo failed"
        ),
    ),
    ("connection refused", re.compile(r"(?i)connection refused|os error 111\b|errno 111\b")),
    (
        "timed out",
        re.compile(r"(?i)timed out|timeout was reached|curlCode: 28\b|connect timeout"),
    ),
    (
        "TLS failed",
        re.compile(
            r"(?i)\bssl\b|\btls\b|certificate|curlCode: (35|51|53|54|58|59|60|77|80|83|90|91)\b"
            r"|received corrupt message|invalid peer"
        ),
    ),
    (
        "could not connect",
        re.compile(
            r"(?i)tcp connect error|client error \(Connect\)|could not connect|curlCode: 7\b|"
            r"network is unreachable|no route to host"
        ),
    ),
    (
        "connection failed",
        re.compile(
            r"(?i)AWS Error NETWORK_CONNECTION|error sending request|connection (reset|aborted|"
            r"closed)|broken pipe"
        ),
    ),
)
# Exceptions whose class says the store was not reached (Python's, botocore's: by name, so
# that nothing here imports botocore).
_UNREACHED_TYPES = (
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "ConnectionClosedError",
    "ProxyConnectionError",
    "SSLError",
    "gaierror",
)


def _reason(exc: BaseException) -> str | None:
    """Why the store was not reached, from one exception (None: it answered, or this is no
    error of reaching it)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = " ".join([str(exc), *map(str, getattr(exc, "kwargs", {}).values())])
    typed = bool(names.intersection(_UNREACHED_TYPES)) or isinstance(
        exc, (ConnectionError, TimeoutError)
    )
    for reason, words in _CAUSES:
        if words.search(text):
            return reason
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__:
        return "timed out"
    return "connection failed" if typed else None


def unreachable(location: Any, exc: BaseException) -> LakeUnavailableError | None:
    """The :class:`~mdframes.LakeUnavailableError` for an error that says the lake's object
    store could not be reached (refused, a name that does not resolve, a timeout, TLS), found
    in ``exc`` or the errors it arose from (also those a ``raise ... from None`` hid); None
    for any other error, and always for a lake on a local disk.

    Examples
    --------
    >>> from mdframes.lake.store.location import parse_root
    >>> loc = parse_root("s3://b/lake?endpoint_override=127.0.0.1:1&scheme=http")
    >>> unreachable(loc, OSError("... tcp connect error: Connection refused (os error 111)"))
    LakeUnavailableError('lake s3://b/lake: cannot reach its object store at http://127.0.0.1:1 (connection refused); the lake is not damaged: check the endpoint and the network, then run it again')
    """
    if location.local:
        return None
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, LakeUnavailableError):
            return link
        if isinstance(link, (ApiError, NetworkError)):
            return None  # the service's failure, not the store's
        reason = _reason(link)
        if reason is not None:
            endpoint = location.endpoint
            return LakeUnavailableError(
                f"lake {location.uri()}: cannot reach its object store at {endpoint} ({reason}); "
                "the lake is not damaged: check the endpoint and the network, then run it again",
                endpoint=endpoint,
                reason=reason,
            )
        link = link.__cause__ or link.__context__
    return None


def reaching(method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], R]:
    """A lake method whose errors are told apart once: a store that cannot be reached raises
    :class:`~mdframes.LakeUnavailableError` (one line, no chain), whatever another module
    made of it on the way (damage, a failed write, a raw ``OSError``)."""

    @functools.wraps(method)
    def call(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            gone = unreachable(self.storage.location, exc)
            if gone is None or gone is exc:
                raise
            raise gone from None

    return call


# The backtrace deltalake's Rust errors carry when RUST_BACKTRACE is set: numbered frames
# ("   0: <unknown>") and their "at file:line" lines.
_FRAMES = re.compile(r"(?:\r?\n[ \t]*(?:stack backtrace:|\d+: |at \S+:\d+)[^\n]*)+\n?", re.I)


def native_free(text: Any) -> str:
    r"""``text`` without a native (Rust) backtrace, whatever ``RUST_BACKTRACE`` says.

    Examples
    --------
    >>> native_free("Json error: bad value\n   0: <unknown>\n   1: clone3\n      at x.S:81:0\n")
    'Json error: bad value'
    """
    return _FRAMES.sub("", str(text))


def damaged(ds: str, file: str, why: Any) -> LakeDamagedError:
    """The error for a lake file that is missing or unreadable."""
    return LakeDamagedError(
        f"{ds}: {file} is missing or unreadable ({native_free(why)}); run lake.repair() "
        "(or `mdframes lake repair`) to drop what is lost and sync it again",
        dataset=ds,
        file=file,
    )


def write_failed(ds: str, exc: Any) -> MdframesError:
    """A write that the storage refused (a full disk, a lost connection), in one line;
    nothing of it is visible."""
    text = " ".join(native_free(exc).split())
    if re.search(r"(?i)no space left on device|os error 28\b|errno 28\b", text):
        text = "no space left on device: free some space, then run it again"
    return MdframesError(
        f"{ds}: cannot write to the lake ({text}); nothing of this write is visible"
    )


# --- Rust's panic report, kept off standard error --------------------------------------------

# Rust's default panic hook: "thread 'tokio-rt-worker' (123) panicked at src/x.rs:1:2:", the
# message on the next line, then a backtrace or a note about RUST_BACKTRACE.
_PANIC = re.compile(rb"^thread '[^']*'(?: \(\d+\))? panicked at ")
_PANIC_TAIL = re.compile(rb"^(stack backtrace:|note: |\s+\d+: |\s+at )")
_HEAD = b"thread '"
_PIECES = re.compile(rb"[^\r\n]*[\r\n]")


class _PanicFilter:
    """Copies what arrives on a pipe to ``out`` (a descriptor it owns and closes), but for
    Rust's panic reports. Text is taken in pieces that end a terminal line (``\\n``) or
    start it over (``\\r``, a progress bar's redraw); an unfinished piece is passed on at
    once unless it may begin a report."""

    def __init__(self, read_fd: int, out: int) -> None:
        self.read_fd, self.out = read_fd, out
        self.pending = b""
        self.at_start = True  # the pending piece begins a terminal line
        self.state = ""  # "", "message" (the line after a report's header), "tail"
        self.thread = threading.Thread(target=self._pump, name="mdframes-stderr", daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        while True:
            try:
                data = os.read(self.read_fd, 65536)
            except OSError:  # pragma: no cover - the pipe went away
                data = b""
            if not data:
                break
            self.pending += data
            for piece in _PIECES.findall(self.pending):
                self._piece(piece)
            self.pending = _PIECES.sub(b"", self.pending)
            held = self.pending
            if held and not self.state and not (self.at_start and _HEAD.startswith(held[:8])):
                self._write(held)
                self.pending, self.at_start = b"", False
        if self.pending and not self.state:
            self._write(self.pending)
        os.close(self.read_fd)
        os.close(self.out)

    def _piece(self, piece: bytes) -> None:
        at_start, self.at_start = self.at_start, True
        if at_start and _PANIC.match(piece):
            self.state = "message"
        elif self.state == "message":
            self.state = "tail" if piece.endswith(b"\n") else "message"
        elif self.state == "tail" and at_start and _PANIC_TAIL.match(piece):
            pass
        else:
            self.state = ""
            self._write(piece)

    def _write(self, data: bytes) -> None:
        with contextlib.suppress(OSError):
            while data:
                data = data[os.write(self.out, data) :]


_hiding = threading.Lock()
_hidden: list[Any] = []  # [depth, saved fd 2, filter] while some write runs


@contextlib.contextmanager
def rust_panics_hidden() -> Iterator[None]:
    """Standard error (file descriptor 2) without Rust's panic reports for the block; all
    else written to it meanwhile passes through. Threads share it: the first block to start
    installs the filter, the last to end removes it. A no-op where the process has no usable
    descriptor 2 or no POSIX pipes."""
    if not _start_hiding():
        yield
        return
    try:
        yield
    finally:
        _stop_hiding()


def _start_hiding() -> bool:
    if os.name != "posix":
        return False
    with _hiding:
        if _hidden:
            _hidden[0] += 1
            return True
        try:
            saved = os.dup(2)
        except OSError:
            return False
        read_fd, write_fd = os.pipe()
        _flush_stderr()
        os.dup2(write_fd, 2)
        os.close(write_fd)
        _hidden[:] = [1, saved, _PanicFilter(read_fd, os.dup(saved))]
        return True


def _stop_hiding() -> None:
    with _hiding:
        _hidden[0] -= 1
        if _hidden[0]:
            return
        _, saved, pump = _hidden
        _hidden.clear()
        _flush_stderr()
        os.dup2(saved, 2)  # the pipe's last writer closed: the filter reads to its end
        os.close(saved)
        pump.thread.join(timeout=5)  # what it still holds reaches the terminal first


def _flush_stderr() -> None:
    with contextlib.suppress(Exception):
        sys.stderr.flush()
