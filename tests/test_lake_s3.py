"""The writer lease of a lake on S3, between real processes, on a real local S3 server.

These are the long multi-process tests (the engine step of ``.ci/run`` runs them, with moto
from the ``lake-engines`` extra). Waits are scaled down where the contract's values would make
a test minutes long: the lease's lifetime is a parameter (``ttl``), and a test that shows a
property "for a wait longer than the lifetime" uses a wait of at least twice a short ``ttl``
instead of 75 s against 60 s. Two run at the default values, unscaled: a SIGKILLed holder
freed within 90 s, and a sync that waits 75 s on a rate-limit window keeping its 60 s lease.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from mdframes.errors import LakeBusyError, LakeUnavailableError
from mdframes.lake.store.lease import HEARTBEAT, LEASE, TTL, ObjectLease, open_lease
from mdframes.lake.store.location import parse_root

from .conftest import S3

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.usefixtures("s3_env")


class _Worker:
    """A ``tests.lease_worker`` process and the lines it prints (read by a thread, so a test
    can wait for the next one with a timeout)."""

    def __init__(self, *args: object) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.lease_worker", *map(str, args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        self.pid = self.proc.pid
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def line(self, timeout: float = 120) -> str:
        try:
            got = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(f"the worker printed nothing in {timeout} s") from None
        if got is None:
            raise AssertionError(f"the worker ended: {self.proc.stderr.read()}")  # type: ignore[union-attr]
        return got

    def finish(self, timeout: float = 60) -> int:
        """Close its stdin (a race worker then releases what it holds) and wait for it."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=timeout)


def test_70_races_between_processes_have_exactly_one_holder(s3_server: S3) -> None:
    root = s3_server.uri(s3_server.bucket())
    rounds, slot, names = 70, 0.5, ["alpha", "beta", "gamma"]
    t0 = time.time() + 4  # every worker has imported and made its client by then
    procs = {n: _Worker("race", root, rounds, t0, slot, n) for n in names}
    outcomes: dict[int, dict[str, str]] = {}
    for name, proc in procs.items():  # every worker holds what it won until all are done
        while (line := proc.line(timeout=300)) != "DONE":
            i, result, *message = line.split(" ", 2)
            outcomes.setdefault(int(i), {})[name] = result + " " + " ".join(message)
    for proc in procs.values():
        assert proc.finish() == 0
    assert len(outcomes) == rounds
    winners = Counter()
    for i, results in outcomes.items():
        won = [n for n, r in results.items() if r.startswith("won")]
        assert len(won) == 1, (i, results)
        winners[won[0]] += 1
        for name, r in results.items():
            if name != won[0]:  # the loser is told who holds the lake and until when
                assert r.startswith("busy") and won[0] in r and "expires at" in r, r
    print("winners per process:", dict(winners))


def test_a_sigkilled_holder_frees_the_lake_once_its_lease_expires(s3_server: S3) -> None:
    root = s3_server.uri(s3_server.bucket())
    ttl = 5.0
    holder = _Worker("hold", root, ttl, 1.0, 3600, "doomed")
    assert holder.line().startswith("HELD")
    with pytest.raises(LakeBusyError, match="doomed"):
        with open_lease(parse_root(root), owner="early").hold(wait=False):
            pass  # pragma: no cover - the lease is held
    os.kill(holder.pid, signal.SIGKILL)
    killed = time.time()
    holder.proc.wait()
    nxt = _Worker("hold", root, ttl, 1.0, 0, "next")
    _, got, how = nxt.line().split(" ", 2)
    assert nxt.line() == "STILL"
    nxt.proc.wait(timeout=60)
    # It took over the dead holder's expired lease (an If-Match on that object), within 90 s.
    assert how.startswith("took over from doomed")
    assert float(got) - killed <= 90


def test_a_sigkilled_holder_at_the_default_settings_frees_the_lake_within_90_s(
    s3_server: S3,
) -> None:
    root = s3_server.uri(s3_server.bucket())
    holder = _Worker("hold", root, TTL, HEARTBEAT, 3600, "doomed")
    assert holder.line().startswith("HELD")
    os.kill(holder.pid, signal.SIGKILL)
    killed = time.time()
    holder.proc.wait()
    nxt = _Worker("hold", root, TTL, HEARTBEAT, 0, "next")
    _, got, how = nxt.line(timeout=150).split(" ", 2)
    assert nxt.line() == "STILL"
    nxt.proc.wait(timeout=60)
    assert how.startswith("took over from doomed")
    assert float(got) - killed <= 90


def test_a_holder_that_sleeps_longer_than_the_lease_lifetime_keeps_it(s3_server: S3) -> None:
    # Scaled from "a sync waiting 75 s on a rate-limit window keeps its 60 s lease": the holder
    # sleeps 15 s with ttl=5 (3 lifetimes, more than 75/60) while its heartbeat renews the
    # lease; another writer is refused all along, the last time more than 2 lifetimes in.
    root = s3_server.uri(s3_server.bucket())
    ttl = 5.0
    holder = _Worker("hold", root, ttl, 1.0, 15, "sleeper")
    held_at = float(holder.line().split()[1])
    intruder = open_lease(parse_root(root), owner="intruder")
    refused = []
    while time.time() < held_at + 13:
        with pytest.raises(LakeBusyError, match="sleeper"):
            with intruder.hold(wait=False):
                pass  # pragma: no cover - the lease is held
        refused.append(time.time())
        time.sleep(0.5)
    assert refused[-1] - held_at > 2 * ttl
    assert holder.line() == "STILL"
    assert holder.proc.wait(timeout=30) == 0


_WAITING_SYNC = """
import json, sys
import mdframes as md
root, url = sys.argv[1], sys.argv[2]
with md.Client(api_key="sandbox-key", base_url=url, cache=False, max_workers=1) as client:
    report = md.Lake(root, client=client).sync(
        "sentiment", ["AAPL", "MSFT"], wait=True, progress=False
    )
print(json.dumps({"complete": report.complete, "requests": report.requests,
                  "throttled": report.throttled, "rows": report.rows_added}))
"""


def test_a_sync_waiting_75_s_on_a_rate_limit_window_keeps_its_60_s_lease(s3_server: S3) -> None:
    """At the default settings (60 s lease, 10 s heartbeat), unscaled: a sync in another
    process whose second request must wait 75 s for the service's window keeps the lease
    all along (another writer is refused, the last time past the lease's lifetime), then
    completes."""
    import mdframes as md
    from mdframes.sandbox import Sandbox

    assert TTL == 60 and HEARTBEAT == 10
    root = s3_server.uri(s3_server.bucket())
    with Sandbox(rate_limit=1, rate_window=75) as server:
        proc = subprocess.Popen(
            [sys.executable, "-c", _WAITING_SYNC, root, server.url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        deadline = time.time() + 60
        while server.count() == 0 and time.time() < deadline:
            time.sleep(0.2)
        assert server.count() == 1, "the sync never sent its first request"
        first = time.time()
        intruder = open_lease(parse_root(root), owner="intruder")
        refused: list[float] = []
        while proc.poll() is None and server.count() < 2:
            with pytest.raises(LakeBusyError, match="another writer"):
                with intruder.hold(wait=False):
                    pass  # pragma: no cover - the lease is held
            refused.append(time.time())
            time.sleep(2)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        report = json.loads(out)
        assert report["complete"] and report["requests"] == 2 and report["throttled"] == 0
        assert refused and refused[-1] - first > TTL  # held longer than one lifetime
    with Sandbox() as other, md.Client(api_key="sandbox-key", base_url=other.url) as client:
        expected = md.load_sentiment(["AAPL", "MSFT"], client=client)  # the same day's data
    assert len(md.Lake(root).read("sentiment")) == report["rows"] == len(expected)


def test_a_paused_holder_loses_its_lease_and_knows_it(s3_server: S3) -> None:
    # A holder stopped (SIGSTOP: a laptop asleep, a VM paused) past its lease's lifetime is
    # taken over; when it resumes, assert_held fails, so it commits nothing more.
    root = s3_server.uri(s3_server.bucket())
    holder = _Worker("hold", root, 3.0, 1.0, 8, "paused")
    assert holder.line().startswith("HELD")
    os.kill(holder.pid, signal.SIGSTOP)
    try:
        taker = open_lease(parse_root(root), owner="taker", ttl=30, heartbeat=5, poll=0.2)
        with taker.hold(wait=True):
            os.kill(holder.pid, signal.SIGCONT)
            result = holder.line()
            assert result.startswith("LOST"), result
            taker.assert_held()  # the paused holder's release did not remove the new lease
            assert holder.proc.wait(timeout=30) == 0
            body = json.loads(
                s3_server.client()
                .get_object(  # type: ignore[attr-defined]
                    Bucket=root.split("/")[2], Key=f"lake/{LEASE}"
                )["Body"]
                .read()
            )
            assert "taker" in body["owner"]
    finally:
        if holder.proc.poll() is None:
            os.kill(holder.pid, signal.SIGCONT)
            holder.proc.kill()


def test_an_unreadable_lease_counts_as_held(s3_server: S3) -> None:
    bucket = s3_server.bucket()
    root = s3_server.uri(bucket)
    s3_server.client().put_object(Bucket=bucket, Key=f"lake/{LEASE}", Body=b"\x00garbage{")  # type: ignore[attr-defined]
    lease = open_lease(parse_root(root), owner="writer")
    with pytest.raises(LakeBusyError, match="unreadable"):
        with lease.hold(wait=False):
            pass  # pragma: no cover - the lease counts as held


def test_release_removes_only_our_own_lease(s3_server: S3) -> None:
    bucket = s3_server.bucket()
    root = s3_server.uri(bucket)
    client = s3_server.client()
    lease = open_lease(parse_root(root), owner="writer", ttl=30, heartbeat=5)
    assert isinstance(lease, ObjectLease)
    with lease.hold(wait=False):
        lease.assert_held()
        body = json.loads(client.get_object(Bucket=bucket, Key=f"lake/{LEASE}")["Body"].read())  # type: ignore[attr-defined]
        assert "writer" in body["owner"] and body["expires"] > time.time() + 20
    listed = client.list_objects_v2(Bucket=bucket, Prefix="lake/")  # type: ignore[attr-defined]
    assert listed.get("KeyCount", 0) == 0  # released: deleted
    # A lease taken over behind the holder's back is left in place when the holder exits.
    with lease.hold(wait=False):
        client.put_object(
            Bucket=bucket, Key=f"lake/{LEASE}", Body=b'{"owner": "other", "expires": 1e12}'
        )  # type: ignore[attr-defined]
        lease._renew()  # the next heartbeat finds it is no longer ours
        with pytest.raises(LakeBusyError, match="lost"):
            lease.assert_held()
    body = client.get_object(Bucket=bucket, Key=f"lake/{LEASE}")["Body"].read()  # type: ignore[attr-defined]
    assert b"other" in body
    with pytest.raises(LakeBusyError, match="other"):
        with open_lease(parse_root(root), owner="third").hold(wait=False):
            pass  # pragma: no cover


def test_credentials_in_the_root_reach_the_store_but_no_error(s3_server: S3) -> None:
    bucket = s3_server.bucket()
    secret_root = (
        f"s3://AKIALEASETEST:SuperSecret123@{bucket}/lake?endpoint_override="
        f"{s3_server.endpoint}&scheme=http&region=us-east-1"
    )
    location = parse_root(secret_root)
    assert location.options["AWS_SECRET_ACCESS_KEY"] == "SuperSecret123"
    with open_lease(location, owner="first").hold(wait=False):
        with pytest.raises(LakeBusyError) as busy:
            with open_lease(location, owner="second").hold(wait=False):
                pass  # pragma: no cover
    text = str(busy.value) + repr(location) + repr(open_lease(location, owner="x"))
    assert "SuperSecret123" not in text and "AKIALEASETEST" not in text
    # An unreachable store: the error names the store, never the credentials.
    dead = parse_root(secret_root.replace(s3_server.endpoint, "127.0.0.1:9"))
    with pytest.raises(LakeUnavailableError) as failed:
        with open_lease(dead, owner="x").hold(wait=False):
            pass  # pragma: no cover
    assert "SuperSecret123" not in str(failed.value) and "AKIALEASETEST" not in str(failed.value)
    assert "http://127.0.0.1:9" in str(failed.value)


# --- syncs into one S3 lake ------------------------------------------------------------------------


def test_30_trials_of_two_processes_syncing_one_s3_lake_at_once(s3_server: S3) -> None:
    import mdframes as md
    from mdframes.sandbox import Sandbox

    root = s3_server.uri(s3_server.bucket())
    trials, slot = 30, 5.0
    sides = {"left": ["AAPL", "MSFT"], "right": ["NVDA", "KO"]}
    with Sandbox() as server:
        t0 = time.time() + 8  # both workers have imported deltalake and mdframes by then
        procs = {
            name: subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.lake_sync_worker",
                    root,
                    server.url,
                    str(trials),
                    str(t0),
                    str(slot),
                    name,
                    *symbols,
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=ROOT,
            )
            for name, symbols in sides.items()
        }
        results: dict[int, list[dict]] = {}
        for proc in procs.values():
            out, err = proc.communicate(timeout=trials * slot + 300)
            assert proc.returncode == 0, err
            for line in out.splitlines():
                got = json.loads(line)
                results.setdefault(got["trial"], []).append(got)
        assert sorted(results) == list(range(trials))
        busy = 0
        with md.Client(api_key="sandbox-key", base_url=server.url, cache=False) as client:
            for i, both in results.items():
                held = sorted(r["held"] for r in both if r["held"])
                # One writer at a time: a second holder starts only after the first let go.
                for (_, end), (start, _) in zip(held, held[1:], strict=False):
                    assert start >= end, (i, both)
                busy += sum(bool(r.get("busy")) for r in both)
                lake = md.Lake(root.replace("/lake?", f"/lake/trial-{i}?"), client=client)
                for r in both:
                    if r["ok"]:  # every row of a sync that reported success is there
                        rows = lake.read("sentiment", r["symbols"])
                        expected = md.load_sentiment(r["symbols"], client=client)
                        assert len(rows) == r["rows_added"] == len(expected) > 0, (i, r)
                    else:
                        assert r.get("busy") and "another writer" in r["error"], r
                stored = (
                    lake.read("sentiment", history=True) if any(r["ok"] for r in both) else None
                )
                wanted = sum(r["rows_added"] for r in both if r["ok"])
                assert stored is None or len(stored) == wanted, i
    print(f"{busy} of {trials} trials had one sync refused as busy")


def test_a_commit_under_a_lost_lease_on_s3_fails_and_changes_nothing(s3_server: S3) -> None:
    from deltalake import DeltaTable

    import mdframes as md
    from mdframes.lake.store.lease import ObjectLease
    from mdframes.registry import REGISTRY
    from mdframes.sandbox import Sandbox

    root = s3_server.uri(s3_server.bucket())
    with (
        Sandbox() as server,
        md.Client(api_key="sandbox-key", base_url=server.url, cache=False) as client,
    ):
        lake = md.Lake(root, client=client)
        lake.sync("sentiment", ["AAPL"], progress=False)
        a = md.Lake(root, client=client).tables.get(REGISTRY["sentiment"])
        a.begin_writes()  # writer A's sync starts: it reads the table's transaction number
        rows = a.scan(a.snapshot())
        lease_a = open_lease(lake.storage, owner="writer A", ttl=2, heartbeat=1)
        assert isinstance(lease_a, ObjectLease)
        with lease_a.hold():
            lease_a._stop.set()  # A stalls: its heartbeat stops (as a paused process's does)
            time.sleep(2.5)  # its lease expires
            md.Lake(root, client=client).sync("sentiment", ["MSFT"], progress=False)  # B
            seen = md.Lake(root).read("sentiment", history=True)
            version = DeltaTable(
                lake.path("sentiment"), storage_options=lake.storage.delta_options()
            ).version()
            with pytest.raises(LakeBusyError, match="lost"):
                a.append(rows.slice(0, 5), lease_a)  # A knows its lease is gone
        # Even under a lease it holds again, A's stale transaction cannot commit.
        with open_lease(lake.storage, owner="writer A again").hold() as again:
            with pytest.raises(LakeBusyError, match="another writer committed"):
                a.append(rows.slice(0, 5), again)
        after = md.Lake(root).read("sentiment", history=True)
        import pandas as pd

        pd.testing.assert_frame_equal(after, seen)
        dt_ = DeltaTable(lake.path("sentiment"), storage_options=lake.storage.delta_options())
        assert dt_.version() == version


def test_credentials_in_an_s3_root_work_everywhere_and_print_nowhere(
    s3_server: S3, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # No credentials in the environment: the root's own reach pyarrow, deltalake and the lease.
    import logging

    import mdframes as md
    from mdframes.sandbox import Sandbox

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    bucket = s3_server.bucket()
    root = (
        f"s3://AKIASURFACE:Surface5ecret@{bucket}/lake?endpoint_override={s3_server.endpoint}"
        "&scheme=http&region=us-east-1"
    )
    caplog.set_level(logging.DEBUG, logger="mdframes")
    shown: list[str] = []
    with (
        Sandbox() as server,
        md.Client(api_key="sandbox-key", base_url=server.url, cache=False) as client,
    ):
        lake = md.Lake(root, client=client)
        report = lake.sync("sentiment", ["AAPL"], progress=False)
        assert report.complete and len(lake.read("sentiment")) > 0
        shown += [
            repr(lake),
            str(report),
            repr(report),
            lake.path("sentiment"),
            *lake.files("sentiment"),
        ]
        shown.append(lake.info().to_string())
        with open_lease(lake.storage, owner="holder").hold():
            with pytest.raises(LakeBusyError) as busy:
                lake.sync("sentiment", ["MSFT"], progress=False)
        shown.append(str(busy.value))
        with pytest.raises(md.MdframesError) as missing:
            md.Lake(root.replace(bucket, "no-such-bucket"), client=client).sync(
                "sentiment", ["AAPL"], progress=False
            )
        shown.append(str(missing.value))
        shown.append(repr(missing.value.__cause__ or missing.value.__context__ or ""))
    shown.append(caplog.text)
    for text in shown:
        assert "Surface5ecret" not in text and "AKIASURFACE" not in text, text
