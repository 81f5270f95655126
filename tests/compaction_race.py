"""Readers looping over a lake while another process compacts it: shared by the main run's
readers (the lake API, DuckDB, deltalake) and the engine step's (Polars)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import mdframes as md

NAMES = ["sentiment", "insider_trading", "news"]


def read_during_compactions(
    lake: md.Lake, readers: dict[str, Callable[[md.Lake, str], int]]
) -> None:
    """Sync three datasets in five commits each, compact them one after another in a real
    process, and meanwhile count each dataset's rows through ``lake.read(history=True)`` and
    every reader: no error and no wrong count, with three compactions seen to happen."""
    for symbol in ["AAPL", "MSFT", "NVDA", "0700", "AMZN"]:
        lake.sync(NAMES, [symbol], progress=False)
    expected = {n: len(lake.read(n, history=True)) for n in NAMES}
    assert all(len(lake.files(n)) == 5 for n in NAMES)
    code = (
        "import mdframes as md, sys; lake = md.Lake(sys.argv[1]); "
        "[print(lake.compact(n), flush=True) for n in sys.argv[2:]]"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(lake.root), *NAMES],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    reads = errors = 0
    wrong: list[tuple[str, str, Any]] = []
    while True:
        running = child.poll() is None
        for name in NAMES:
            try:
                counts = {"read": len(lake.read(name, history=True))}
                counts |= {k: reader(lake, name) for k, reader in readers.items()}
            except Exception as exc:  # noqa: BLE001 - any error at all is what this counts
                errors += 1
                print(repr(exc)[:300])  # shown when the test fails
                continue
            reads += 1
            wrong += [(name, k, v) for k, v in counts.items() if v != expected[name]]
        if not running:
            break
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err.decode()
    assert out.decode().count("(5, 1)") == 3  # three compactions happened meanwhile
    assert (errors, wrong) == (0, [])
    assert reads >= len(NAMES)
    assert all(len(lake.files(n)) == 1 for n in NAMES)
