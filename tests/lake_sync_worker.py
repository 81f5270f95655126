"""A process that syncs into a lake at set moments, for tests/test_lake_s3.py.

``python -m tests.lake_sync_worker ROOT SANDBOX_URL TRIALS T0 SLOT NAME SYMBOL...``: for trial
i, at wall time ``T0 + i * SLOT``, sync ``sentiment`` for the symbols into ``ROOT/trial-i`` and
print one JSON line: ``{"trial", "ok", "error", "rows_added", "held": [start, end]}``, where
``held`` is when this process held the writer lease (recorded by wrapping the lease's
``hold``: instrumentation of a real lease, nothing replaced).
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import mdframes as md
from mdframes.lake.store import lease as lease_module

HELD: list[float] = []


def _instrument() -> None:
    for cls in (lease_module.ObjectLease, lease_module.LocalLease):
        original = cls.hold

        @contextlib.contextmanager
        def hold(self: Any, wait: bool = False, _original: Any = original) -> Iterator[Any]:
            with _original(self, wait) as held:
                HELD.append(time.time())
                try:
                    yield held
                finally:
                    HELD.append(time.time())

        cls.hold = hold  # type: ignore[method-assign]


def _at(root: str, sub: str) -> str:
    base, sep, query = root.partition("?")
    return f"{base}/{sub}{sep}{query}"


def main(
    root: str, url: str, trials: int, t0: float, slot: float, name: str, symbols: list[str]
) -> None:
    _instrument()
    with md.Client(api_key="sandbox-key", base_url=url, cache=False) as client:
        for i in range(trials):
            lake = md.Lake(_at(root, f"trial-{i}"), client=client)
            time.sleep(max(0.0, t0 + i * slot - time.time()))
            HELD.clear()
            out: dict[str, Any] = {"trial": i, "name": name, "symbols": symbols}
            try:
                report = lake.sync("sentiment", symbols, progress=False)
                out.update(ok=report.complete, rows_added=report.rows_added, error=str(report))
            except md.LakeBusyError as exc:
                out.update(ok=False, busy=True, error=str(exc))
            out["held"] = list(HELD)
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    root, url, trials, t0, slot, name, *symbols = sys.argv[1:]
    main(root, url, int(trials), float(t0), float(slot), name, symbols)
