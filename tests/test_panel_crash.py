"""A real ``write_panel`` process killed with SIGKILL leaves a folder that says it is
unfinished (no ``_SUCCESS``; ``read_panel`` refuses it) and no truncated part under a final
name; the same call run again finishes it, equal to ``panel(...)``.

The named checkpoints are the commit steps of :class:`mdframes.features.panels.panelfile.PanelFolder`:
``panel-staged`` (every part written under ``_temporary/``, none moved), ``panel-part-moved``
(the n-th part moved to its final name) and ``panel-marker-staged`` (the marker written,
not yet in place). A kill while the parts are being written is timed from outside."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import mdframes as md
from mdframes.lake.store.storage import CRASH_ENV

from .panel_write_worker import ARGS, SYMBOLS, frames

pytestmark = pytest.mark.skipif(
    not hasattr(signal, "SIGKILL"), reason="SIGKILL exists on POSIX systems only"
)


def _start(out: Path, crash: str | None = None) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.pop(CRASH_ENV, None)
    if crash:
        env[CRASH_ENV] = crash
    return subprocess.Popen(
        [sys.executable, "-m", "tests.panel_write_worker", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _run(out: Path, crash: str | None = None) -> int:
    proc = _start(out, crash)
    _, err = proc.communicate(timeout=300)
    if proc.returncode not in (0, -signal.SIGKILL):
        print(err.decode(errors="replace"))  # shown by pytest when the test fails
    return proc.returncode


@pytest.fixture(scope="module")
def want() -> pd.DataFrame:
    return md.features.panel(*ARGS, source=frames())


def _unfinished_and_whole(out: Path) -> None:
    """What any killed run must leave: no marker, read_panel refusing, and every file under
    a final name whole (a reader that ignores the marker sees whole files only)."""
    assert not (out / "_SUCCESS").exists()
    with pytest.raises(md.InvalidParameterError, match="unfinished"):
        md.features.read_panel(out)
    for part in out.glob("part-*.parquet"):
        assert pq.read_table(part).num_rows == len(pd.bdate_range(*ARGS[1:3]))


def _finished(out: Path, want: pd.DataFrame) -> None:
    names = sorted(p.name for p in out.iterdir())
    assert names == ["_SUCCESS", *(f"part-{k:05d}.parquet" for k in range(len(SYMBOLS)))]
    got = md.features.read_panel(out)
    pd.testing.assert_frame_equal(got, want)
    assert got.attrs == want.attrs


@pytest.mark.parametrize(
    "point",
    ["panel-staged", "panel-part-moved:1", "panel-part-moved:13", "panel-marker-staged"],
)
def test_sigkill_at_a_commit_step_then_run_again(
    want: pd.DataFrame, tmp_path: Path, point: str
) -> None:
    out = tmp_path / "panel"
    assert _run(out, point) == -signal.SIGKILL
    _unfinished_and_whole(out)
    moved = len(list(out.glob("part-*.parquet")))
    assert moved == {"panel-staged": 0, "panel-part-moved:1": 1}.get(point, moved)
    assert _run(out) == 0
    _finished(out, want)


def test_sigkill_while_the_parts_are_written_then_run_again(
    want: pd.DataFrame, tmp_path: Path
) -> None:
    out = tmp_path / "panel"
    proc = _start(out)
    staging = out / "_temporary"
    deadline = time.monotonic() + 120
    # Killed once a few parts are staged: the one being written is cut short.
    while time.monotonic() < deadline and proc.poll() is None:
        if staging.is_dir() and len(list(staging.iterdir())) >= 3:
            break
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    _unfinished_and_whole(out)
    assert not list(out.glob("part-*.parquet"))  # nothing was moved into place yet
    assert _run(out) == 0
    _finished(out, want)


def test_a_finished_panel_or_a_foreign_folder_is_never_overwritten(
    want: pd.DataFrame, tmp_path: Path
) -> None:
    out = tmp_path / "panel"
    assert _run(out) == 0
    with pytest.raises(md.InvalidParameterError, match="finished panel"):
        md.features.write_panel(out, *ARGS, source=frames(), chunk=1)
    _finished(out, want)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(md.InvalidParameterError, match=r"already holds files \(notes.txt\)"):
        md.features.write_panel(mine, *ARGS, source=frames(), chunk=1)
    assert (mine / "notes.txt").read_text() == "keep me"
    with pytest.raises(md.InvalidParameterError, match="no _SUCCESS marker"):
        md.features.read_panel(mine)
