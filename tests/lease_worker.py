"""A process that contends for a lake's writer lease, for tests/test_lake_s3.py.

``python -m tests.lease_worker race ROOT ROUNDS T0 SLOT NAME``: for round i, at wall time
``T0 + i * SLOT``, try to take the lease of ``ROOT/round-i`` without waiting; print
``i won`` (and hold it until 3/4 of the slot) or ``i busy <message>``.

``python -m tests.lease_worker hold ROOT TTL HEARTBEAT SECONDS NAME``: take the lease (waiting),
print ``HELD <epoch> <how it was taken>``, sleep ``SECONDS`` (as a sync sleeps on a rate-limit window), then print
``STILL`` if :meth:`assert_held` passes or ``LOST <message>``, and release.
"""

from __future__ import annotations

import contextlib
import sys
import time

from mdframes.errors import LakeBusyError
from mdframes.lake.store.lease import open_lease
from mdframes.lake.store.location import parse_root


def _at(root: str, sub: str) -> str:
    base, sep, query = root.partition("?")
    return f"{base}/{sub}{sep}{query}"


def race(root: str, rounds: int, t0: float, slot: float, name: str) -> None:
    # A won lease is kept until every worker has finished every round (the test closes our
    # stdin then), so a late contender of a round can only find it held: two winners of one
    # round would be two holders at once.
    client = open_lease(parse_root(root), owner=name).client  # type: ignore[attr-defined]
    with contextlib.ExitStack() as held:
        for i in range(rounds):
            lease = open_lease(parse_root(_at(root, f"round-{i}")), owner=name)
            lease._client = client  # type: ignore[attr-defined]  # one client, as a sync has
            time.sleep(max(0.0, t0 + i * slot - time.time()))
            try:
                held.enter_context(lease.hold(wait=False))
                print(i, "won", f"{time.time():.3f}", lease.how, flush=True)  # type: ignore[attr-defined]
            except LakeBusyError as exc:
                print(i, "busy", str(exc).replace("\n", " "), flush=True)
        print("DONE", flush=True)
        sys.stdin.read()


def hold(root: str, ttl: float, heartbeat: float, seconds: float, name: str) -> None:
    lease = open_lease(parse_root(root), owner=name, ttl=ttl, heartbeat=heartbeat, poll=0.2)
    with lease.hold(wait=True):
        print("HELD", time.time(), lease.how, flush=True)  # type: ignore[attr-defined]
        time.sleep(seconds)
        try:
            lease.assert_held()
            print("STILL", flush=True)
        except LakeBusyError as exc:
            print("LOST", exc, flush=True)


if __name__ == "__main__":
    cmd, root, *rest = sys.argv[1:]
    if cmd == "race":
        race(root, int(rest[0]), float(rest[1]), float(rest[2]), rest[3])
    else:
        hold(root, float(rest[0]), float(rest[1]), float(rest[2]), rest[3])
