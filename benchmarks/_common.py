"""What the benchmark scripts share: the sandbox in its own process, and a median timer."""

from __future__ import annotations

import contextlib
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def sandbox_process(**options: object) -> Iterator[str]:
    """The sandbox in its own process, as a real service would be: its threads must not
    compete with the client's for this interpreter's GIL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = f"from mdframes.sandbox import serve; serve({port}, **{options!r})"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL)
    try:
        for _ in range(400):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.1):
                break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def median_time(fn: Callable[[], object], repeat: int, warmup: int = 1) -> float:
    """Median seconds of ``repeat`` calls after ``warmup`` unmeasured ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)
