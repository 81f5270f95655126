"""A local, deterministic implementation of the service's whole v1 and v2 interface.

It serves plausible synthetic data that follows every rule of the spec (auth in all four
places, error envelopes, rate-limit headers and 429s, date filters, limit bounds, app-ratings
history from 2026-09-03, forward-only forecasts, the older response shapes on request) over
real HTTP on 127.0.0.1. Its clock can be set and moved, and the world moves with it: records
appear, congress trades are disclosed late, some records are revised in place, the ticker
list changes. Tests, the demo, notebooks, docs and benchmarks run against it.

>>> import mdframes as md
>>> client = md.sandbox.start()
>>> md.load_insider_trading("AAPL")["symbol"].unique().tolist()
['AAPL']

Importing this package does not import pandas.
"""

from __future__ import annotations

import atexit
import datetime as dt
import inspect
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .listings import ListingChange, listing_changes, universe_symbols
from .server import FAULT_KINDS, MISSING_SYMBOLS, LoggedRequest, Sandbox
from .synth import KNOWN_SYMBOLS
from .world import DEFAULT_TODAY, QUIRKS, REVISION_RULES, Revision, RevisionRule

if TYPE_CHECKING:  # pragma: no cover
    from ..client import Client

__all__ = [
    "Sandbox",
    "LoggedRequest",
    "FAULT_KINDS",
    "MISSING_SYMBOLS",
    "KNOWN_SYMBOLS",
    "QUIRKS",
    "DEFAULT_TODAY",
    "REVISION_RULES",
    "Revision",
    "RevisionRule",
    "ListingChange",
    "listing_changes",
    "universe_symbols",
    "running",
    "start",
    "stop",
    "serve",
    "SANDBOX_KEY",
    "clock_of",
]

SANDBOX_KEY = "sandbox-key"  # the sandbox's own well-known key; not a secret


def clock_of(server: Sandbox) -> Callable[[], dt.datetime]:
    """A client clock for ``server``: its day at the current UTC time of day, so that what a
    client stamps (the lake's knowledge times) lines up with the simulated world's days.

    >>> clock_of(Sandbox(today="2026-06-30"))().date()
    datetime.date(2026, 6, 30)
    """

    def clock() -> dt.datetime:
        return dt.datetime.combine(server.today, dt.datetime.now(dt.timezone.utc).timetz())

    return clock


def _open(options: dict[str, Any]) -> tuple[Sandbox, Client]:
    """A started sandbox and a client pointed at it: its clock follows the sandbox's day, and
    ``client.sandbox`` is the server (for moving the day or injecting faults)."""
    from ..client import Client

    client_names = set(inspect.signature(Client.__init__).parameters) - {"self", "base_url"}
    client_kw = {k: v for k, v in options.items() if k in client_names}
    server_kw = {k: v for k, v in options.items() if k not in client_names}
    client_kw.setdefault("api_key", SANDBOX_KEY)
    client_kw.setdefault("cache", False)
    server = Sandbox(**server_kw).start()
    client_kw.setdefault("clock", clock_of(server))
    try:
        client = Client(base_url=server.url, **client_kw)
    except BaseException:
        server.stop()
        raise
    client.sandbox = server
    return server, client


def _current_default() -> Client | None:
    from ..client import get_default_client

    return get_default_client(create=False)  # never created from the environment here


@contextmanager
def running(**options: Any) -> Iterator[Client]:
    """Start a :class:`Sandbox` and yield a :class:`mdframes.Client` pointed at it; inside the
    block that client is also the default one, and the previous default comes back on exit.

    Keywords that the Client takes (``cache``, ``timeout``, ``max_retries``, ``max_workers``,
    ``progress``, ``max_wait``, ``api_key``, ...) go to the Client; the rest to the Sandbox.
    The server is reachable as ``client.sandbox``.

    Examples
    --------
    >>> import mdframes as md
    >>> with md.sandbox.running(record_counts={"BIGCO": 1234}) as client:
    ...     len(md.load_lobbying("BIGCO"))
    1234
    """
    from ..client import set_default_client

    server, client = _open(options)
    previous = _current_default()
    set_default_client(client)
    try:
        yield client
    finally:
        if _current_default() is client:
            set_default_client(previous)
        client.close()
        server.stop()


_started: tuple[dict[str, Any], Sandbox, Client] | None = None
_start_lock = threading.Lock()


def start(**options: Any) -> Client:
    """Start a sandbox for the life of the process, make its client the default and return it.

    The one line a notebook needs: every loader then reads from the sandbox, in this cell and
    the next. Calling it again returns the same client (and makes it the default again);
    calling it with other options raises ``ValueError`` until :func:`stop` is called. The
    server stops when the process exits. Options are those of :func:`running`.

    Examples
    --------
    >>> import mdframes as md
    >>> md.sandbox.stop()  # another one's options: stop it first
    >>> client = md.sandbox.start(today="2026-06-30")
    >>> md.load_sentiment("AAPL")["date"].max()
    Timestamp('2026-06-30 00:00:00')
    >>> client.sandbox.advance(days=1)
    datetime.date(2026, 7, 1)
    >>> md.load_sentiment("AAPL")["date"].max()
    Timestamp('2026-07-01 00:00:00')
    >>> md.sandbox.stop()
    """
    from ..client import set_default_client

    global _started
    with _start_lock:
        if _started is not None and _started[0] != options:
            raise ValueError(
                "a sandbox is already running with other options; call md.sandbox.stop() "
                "first to start another"
            )
        if _started is None:
            server, client = _open(options)
            _started = (dict(options), server, client)
        set_default_client(_started[2])
        return _started[2]


def stop() -> None:
    """Stop the sandbox of :func:`start` (if any); its client stops being the default.

    Examples
    --------
    >>> md.sandbox.stop()
    """
    from ..client import set_default_client

    global _started
    with _start_lock:
        if _started is None:
            return
        _, server, client = _started
        _started = None
        if _current_default() is client:
            set_default_client(None)
        client.close()
        server.stop()


atexit.register(stop)


def serve(port: int = 8765, **options: Any) -> None:
    """Run a sandbox in the foreground until Ctrl-C (``mdframes sandbox --port``).

    Examples
    --------
    >>> # it serves until Ctrl-C, so the docstring test leaves it out
    >>> serve(8765)  # doctest: +SKIP
    """
    server = Sandbox(port, **options).start()
    if threading.current_thread() is threading.main_thread():
        # Ctrl-C and a plain ``kill`` both stop cleanly (SIGINT may arrive ignored when
        # the command was started in the background).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    print(f"mdframes sandbox serving at {server.url}")
    print("Point mdframes at it with:")
    print(f"  export MDFRAMES_BASE_URL={server.url}")
    print(f"  export MDFRAMES_API_KEY={SANDBOX_KEY}")
    print("Press Ctrl-C to stop.", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        print("sandbox stopped", flush=True)
