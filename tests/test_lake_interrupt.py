"""Ctrl-C while a sync commits (CONTRACT §10.2): the commit finishes, the sync stops after it,
and every unit the run counted done is synced in ``coverage()``; the bar says it commits.

A real ``lake.sync`` in a child process gets a real SIGINT. The child holds each commit open
a moment after its batch is whole (at the ``commit-ready`` crash-test point), as a batch of
500 units holds it for seconds, so that the signal lands while the commit runs."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import mdframes as md
from mdframes.sandbox import Sandbox

from .conftest import sync_env

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="POSIX signals")

SYMBOLS = ["AAPL", "MSFT", "NVDA", *(f"S{k:02d}" for k in range(9))]

_CHILD = r"""
import sys, time
import mdframes as md
import mdframes.lake.sync.sync as s
import mdframes.lake.table.commit as c

s.FLUSH_UNITS = 3
real, accept = c.checkpoint, s.DatasetRun.accept

def slowed(point):
    real(point)
    if point == "commit-ready":  # the batch is whole, its commit begins
        print("COMMITTING", flush=True)
        time.sleep(1.0)

def counted(self, unit, outcome, fetched_at):  # the bar has just counted it
    print("DONE", unit.symbol, flush=True)
    accept(self, unit, outcome, fetched_at)

c.checkpoint, s.DatasetRun.accept = slowed, counted
# One worker and answers 0.3 s apart (the sandbox's slow_paths): units arrive in symbol
# order, a few during each commit, so every 3 or so make a commit of their own (else all may
# arrive during the first commit, out of order, and commit at once).
init = md.Client.__init__
md.Client.__init__ = lambda self, *a, **k: init(self, *a, **{**k, "max_workers": 1})
if sys.argv[3] == "cli":  # as `mdframes sync` runs it (no bar: stderr is no terminal)
    from mdframes.cli import main

    sys.exit(main(["sync", "sentiment", *sys.argv[2].split(","), "--lake", sys.argv[1]]))
try:
    md.Lake(sys.argv[1]).sync("sentiment", sys.argv[2].split(","), progress=True)
except KeyboardInterrupt:
    print("INTERRUPTED", flush=True)
    sys.exit(130)
print("FINISHED", flush=True)
"""


@pytest.fixture(scope="module")
def server() -> Iterator[Sandbox]:
    with Sandbox(extra_symbols=SYMBOLS[3:]) as s:
        s.slow_paths = {"/sentiment/": 0.3}
        yield s


@pytest.mark.parametrize(
    ("how", "nth"), [("api", 1), ("api", 2), ("api", 3), ("cli", 1), ("cli", 2)]
)
def test_ctrl_c_during_a_commit_keeps_every_unit_counted_done(
    server: Sandbox, tmp_path: Path, how: str, nth: int
) -> None:
    root = tmp_path / "lake"
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(root), ",".join(SYMBOLS), how],
        env=sync_env(server),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    done, commits = [], 0
    for line in proc.stdout:
        if line.startswith("DONE"):
            done.append(line.split()[1])
        elif line.startswith("COMMITTING"):
            commits += 1
            if commits == nth:
                proc.send_signal(signal.SIGINT)
                break
    rest, err = proc.communicate(timeout=120)
    assert commits == nth, (rest, err)
    assert proc.returncode == 130, err
    assert "FINISHED" not in rest  # it stopped after the commit
    if how == "api":
        assert "INTERRUPTED" in rest and "sync: committing" in err  # the bar said so
    else:
        assert "interrupted" in err
    coverage = md.Lake(root).coverage("sentiment")
    synced = set(coverage.loc[coverage["status"] == "synced", "symbol"])
    assert set(done) <= synced, sorted(set(done) - synced)
    assert len(done) >= 3 * nth
    # The next sync goes on from there and asks none of the kept units again.
    with md.Client(base_url=server.url, api_key="sandbox-key", cache=False) as client:
        server.clear_log()
        assert md.Lake(root, client=client).sync("sentiment", SYMBOLS, progress=False).complete
        assert server.count() <= len(SYMBOLS) - len(set(done))


@pytest.fixture
def interruptible() -> Iterator[None]:
    """Ctrl-C raising KeyboardInterrupt, as in a terminal: pytest-xdist's workers ignore
    SIGINT (then a sync has no Ctrl-C to hold)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("interruptible")
def test_one_ctrl_c_is_held_to_the_end_of_a_commit_and_a_second_stops_at_once() -> None:
    """Real SIGINTs to this process (pytest runs the test in its main thread)."""
    import os

    from mdframes.lake.sync.sync import sheltered

    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt), sheltered(lambda: steps.append("held")):
        os.kill(os.getpid(), signal.SIGINT)
        steps.append("committed")
    assert steps == ["held", "committed"]
    steps.clear()
    with pytest.raises(KeyboardInterrupt), sheltered(lambda: steps.append("held")):
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        steps.append("committed")
    assert steps == ["held"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


@pytest.mark.usefixtures("interruptible")
def test_a_held_ctrl_c_waits_for_the_commit_at_most_its_patience(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A commit that runs on past ``PATIENCE`` seconds (10 in the CONTRACT; 0.2 here) is
    interrupted when the main thread next runs Python."""
    import os
    import time

    import mdframes.lake.sync.sync as sync

    monkeypatch.setattr(sync, "PATIENCE", 0.2)
    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt), sync.sheltered(lambda: steps.append("held")):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(500):  # a commit far longer than its patience (at most 10 s here)
            time.sleep(0.02)
        steps.append("committed")
    assert steps == ["held"]
