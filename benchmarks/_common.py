"""What the benchmark scripts share: the sandbox in its own process, a median timer, contenders
timed in alternating rounds, and a fresh folder for each run's lake."""

from __future__ import annotations

import contextlib
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


# A benchmark stopped by SIGTERM (``timeout``, ``kill``) unwinds like Ctrl-C: the ``finally``
# of each server it started stops that server, where Python's default handler would exit at
# once and leave the sandbox and moto processes running.
if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
    signal.signal(signal.SIGTERM, _stop_on_sigterm)


@contextlib.contextmanager
def sandbox_process(**options: object) -> Iterator[str]:
    """The sandbox in its own process, as a real service would be: its threads must not
    compete with the client's for this interpreter's GIL. The process is killed when it does
    not stop within 10 s (a benchmark must not leave servers behind)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = f"from mdframes.sandbox import serve; serve({port}, **{options!r})"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL)
    try:
        for _ in range(400):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.1):
                break
            if proc.poll() is not None:
                raise RuntimeError(f"the sandbox process exited with {proc.returncode}")
            time.sleep(0.05)
        else:
            raise RuntimeError("the sandbox process did not answer within 20 s")
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(proc)


def stop_process(proc: subprocess.Popen, grace: float = 10.0) -> None:  # type: ignore[type-arg]
    """Terminate ``proc``; kill it when it has not stopped after ``grace`` seconds."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def fresh_folder(parent: str | None, name: str) -> Path:
    """A new empty folder for this run's lake (under ``parent`` when given, else a temporary
    one): a run never reuses what an earlier, maybe interrupted, run left half-built."""
    if parent is not None:
        Path(parent).mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=parent)) / name


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


def rounds(
    cases: Mapping[str, Callable[[], object]], count: int, warmup: int = 1, inner: int = 1
) -> dict[str, list[float]]:
    """Seconds per round of each case, the cases alternating within every round (and their
    order rotating from round to round), so that a load change on this shared machine hits
    every contender alike. ``inner``: calls per case per round, their median kept (short
    cases are noisier)."""
    names = list(cases)
    for _ in range(warmup):
        for name in names:
            cases[name]()
    out: dict[str, list[float]] = {n: [] for n in names}
    for r in range(count):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            times = []
            for _ in range(inner):
                started = time.perf_counter()
                cases[name]()
                times.append(time.perf_counter() - started)
            out[name].append(statistics.median(times))
    return out


def ratio(times: Mapping[str, list[float]], a: str, b: str) -> tuple[float, float, float]:
    """Median, lowest and highest of the per-round ratios ``a / b``."""
    each = [x / y for x, y in zip(times[a], times[b], strict=True)]
    return statistics.median(each), min(each), max(each)


def ratio_text(times: Mapping[str, list[float]], a: str, b: str, goal: str = "") -> str:
    """``a / b`` as printed: the median of the per-round ratios and their spread, with both
    medians in milliseconds."""
    mid, low, high = ratio(times, a, b)
    ms_a = statistics.median(times[a]) * 1e3
    ms_b = statistics.median(times[b]) * 1e3
    tail = f"   ({goal})" if goal else ""
    return (
        f"{mid:6.2f}x  [{low:.2f}-{high:.2f} over {len(times[a])} rounds]  "
        f"{ms_a:9.1f} / {ms_b:9.1f} ms{tail}"
    )
