"""A local, deterministic implementation of the service's whole v1 and v2 interface.

It serves plausible synthetic data that follows every rule of the spec (auth in all four
places, error envelopes, rate-limit headers and 429s, date filters, limit bounds, app-ratings
history from 2026-09-03, forward-only forecasts, the older response shapes on request) over
real HTTP on 127.0.0.1. Tests, the demo, notebooks, docs and benchmarks run against it.

>>> import mdframes as md
>>> with md.sandbox.running() as client:                     # doctest: +SKIP
...     md.load_insider_trading("AAPL", client=client).head()

Importing this package does not import pandas.
"""

from __future__ import annotations

import inspect
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .server import FAULT_KINDS, MISSING_SYMBOLS, LoggedRequest, Sandbox
from .world import QUIRKS

if TYPE_CHECKING:  # pragma: no cover
    from ..client import Client

__all__ = [
    "Sandbox",
    "LoggedRequest",
    "FAULT_KINDS",
    "MISSING_SYMBOLS",
    "QUIRKS",
    "running",
    "serve",
    "SANDBOX_KEY",
]

SANDBOX_KEY = "sandbox-key"  # the sandbox's own well-known key; not a secret
_CLIENT_OPTIONS = {
    "cache",
    "timeout",
    "max_retries",
    "max_workers",
    "progress",
    "max_wait",
    "api_key",
}


def _client_keywords() -> set[str]:
    from ..client import Client

    names = set(inspect.signature(Client.__init__).parameters) - {"self", "base_url"}
    return names | _CLIENT_OPTIONS


@contextmanager
def running(**options: Any) -> Iterator[Client]:
    """Start a :class:`Sandbox` and yield a :class:`mdframes.Client` pointed at it.

    Keywords that the Client takes (``cache``, ``timeout``, ``max_retries``, ``max_workers``,
    ``progress``, ``max_wait``, ``api_key``, ...) go to the Client; the rest to the Sandbox.
    The server is reachable as ``client.sandbox``.

    Examples
    --------
    >>> import mdframes as md
    >>> with md.sandbox.running(record_counts={"BIGCO": 1234}) as client:  # doctest: +SKIP
    ...     len(md.load_lobbying("BIGCO", client=client))
    1234
    """
    from ..client import Client

    client_names = _client_keywords()
    client_kw = {k: v for k, v in options.items() if k in client_names}
    server_kw = {k: v for k, v in options.items() if k not in client_names}
    client_kw.setdefault("api_key", SANDBOX_KEY)
    client_kw.setdefault("cache", False)
    with Sandbox(**server_kw) as server:
        client = Client(base_url=server.url, **client_kw)
        client.sandbox = server
        try:
            yield client
        finally:
            client.close()


def serve(port: int = 8765, **options: Any) -> None:
    """Run a sandbox in the foreground until Ctrl-C (``mdframes sandbox --port``).

    Examples
    --------
    >>> serve(8765)   # doctest: +SKIP
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
