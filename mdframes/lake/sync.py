"""Running a sync: the driver (lease -> per-dataset runs -> report) and one dataset's run.

Order of durability: a batch's new rows are one Delta commit; only then does the dataset state
say those units are done. A crash before the commit leaves nothing visible (at most an orphan
data file no version lists, removed by a later vacuum); a crash after it leaves rows the state
does not know about, so the next sync asks again and finds them identical: nothing is added
twice. The root state names the unfinished run, so the next sync with the same request resumes
it instead of starting over.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import secrets
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

import pandas as pd
import pyarrow as pa

from ..client import Client
from ..errors import (
    AuthenticationError,
    ConfigurationError,
    MdframesError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    warnings_from_threads,
)
from ..registry import REGISTRY
from .frames import extend_manifest, to_table
from .layout import FORMAT_VERSION, LAKE_STATE
from .modes import Arrived
from .pacer import Pacer, SyncStopped, sync_client
from .plan import SyncRequest, Unit, plan_text, snapshot_units, window_units
from .report import SyncReport
from .storage import Storage, checkpoint
from .table import DatasetTable

__all__ = ["run_sync", "FLUSH_UNITS", "FLUSH_ROWS", "read_root_state"]

FLUSH_UNITS = 500  # units per batch: one commit each, and the most a crash can cost
FLUSH_ROWS = 500_000
_KEEP_SYNCS = 200  # sync log entries kept in the root state
_KEEP_KEYS = 20  # remembered rate windows (one per key fingerprint)


def read_root_state(storage: Storage) -> dict[str, Any]:
    """The root state ``_lake.json`` (a fresh one when absent); damaged -> LakeDamagedError."""
    from .faults import damaged

    try:
        raw = storage.read_bytes(LAKE_STATE)
        state = {} if raw is None else json_loads(raw)
        if not isinstance(state, dict):
            raise ValueError("not an object")
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise damaged("lake", LAKE_STATE, exc) from None
    fmt = state.get("format", FORMAT_VERSION)
    if isinstance(fmt, int) and fmt > FORMAT_VERSION:
        raise MdframesError(
            f"this lake was written in lake format {fmt}, newer than the format "
            f"{FORMAT_VERSION} this mdframes reads: upgrade mdframes"
        )
    state.setdefault("seq", 0)
    return state


def json_loads(raw: bytes) -> Any:
    import json

    return json.loads(raw)


class DatasetRun:
    """One dataset within a sync: its table, state and dtype record, and what arrived."""

    def __init__(self, sync: Sync, table: DatasetTable) -> None:
        self.sync = sync
        self.table = table
        self.ds = table.ds
        self.mode = table.mode
        self.state = table.state()
        self.units: list[Unit] = []
        table.begin_writes()  # the version and transaction number this run starts from

    def plan(self, request: SyncRequest, symbols: list[str] | None, today: dt.date) -> int:
        """This dataset's units still to do; returns how many this run already finished."""
        if self.mode.name == "window":
            units = window_units(
                self.ds, symbols or [], self.state, request.start, request.end, today
            )
        else:
            units = snapshot_units(self.ds, symbols, request.market, request.region)
        held = self.state["units"]
        resumed = [u for u in units if held.get(u.id, {}).get("run") == self.sync.run_id]
        for u in resumed:
            self.sync.done(u)
        self.units = [u for u in units if u not in resumed]
        return len(resumed)

    def run(self, bar: Any, frames: dict[str, pd.DataFrame] | None = None) -> None:
        """Fetch this dataset's units and store them (see :meth:`Sync.run_all`)."""
        self.sync.run_all([self], bar, frames)

    def prepare(self, frames: dict[str, pd.DataFrame] | None = None) -> list[Unit]:
        """The units to fetch, in symbol order (none when the sync has stopped: then they
        are pending)."""
        self.frames = frames
        if self.units and self.sync.pacer.stopped:
            for u in self.units:
                self.sync.pend(u)
            self.units = []
        self.ordered = sorted(self.units, key=lambda u: (u.symbol or "", u.scope))
        self.place = {id(u): i for i, u in enumerate(self.ordered)}
        self.finished = [False] * len(self.ordered)
        self.stored = [False] * len(self.ordered)  # came with rows (committed or to be)
        self.arrived: dict[int, tuple[Unit, pd.DataFrame, Any]] = {}
        self.rows: dict[int, int] = {}
        self.prefix = 0  # ordered[:prefix] have all finished
        return self.ordered

    def accept(self, unit: Unit, outcome: Any, fetched_at: Any) -> None:
        """One unit's outcome; commits the finished prefix every ``FLUSH_UNITS`` units (or
        ``FLUSH_ROWS`` rows). Batches are prefixes of the units in symbol order, so they hold
        disjoint symbol ranges and a read of an uncompacted table needs no sort."""
        i = self.place[id(unit)]
        self.finished[i] = True
        if isinstance(outcome, BaseException):
            self._failure(unit, outcome)
        else:
            unit.pages = int(outcome.attrs.get("requests", 0))
            frame = outcome  # forecast header values are columns already (CONTRACT §2)
            if self.frames is not None:
                self.frames[unit.id] = frame
            self.arrived[i] = (unit, frame, fetched_at)
            self.rows[i] = len(frame)
            self.stored[i] = True
        while self.prefix < len(self.ordered) and self.finished[self.prefix]:
            self.prefix += 1
        ready = [k for k in self.arrived if k < self.prefix]
        if len(ready) >= FLUSH_UNITS or sum(self.rows[k] for k in ready) >= FLUSH_ROWS:
            for run in self._runs(ready):  # one commit per run: files keep disjoint ranges
                self._flush(run)
        elif sum(self.rows.values()) >= 2 * FLUSH_ROWS:  # a stalled unit holds the prefix
            for run in self._runs(list(self.arrived)):
                self._flush(run)

    def _runs(self, indices: list[int]) -> list[list[int]]:
        """``indices`` (arrived units) in runs of consecutive units in symbol order."""
        runs: list[list[int]] = []
        for k in sorted(indices):
            last = runs[-1][-1] if runs else None
            # Units between two of a run must have finished without rows (failed): a unit
            # committed earlier would put another file's symbols inside this one's range.
            between = range(last + 1, k) if last is not None else range(0)
            if last is not None and all(self.finished[j] and not self.stored[j] for j in between):
                runs[-1].append(k)
            else:
                runs.append([k])
        return runs

    def finish(self, interrupted: bool = False) -> None:
        """Store what is left (after an interrupt too: what came in is kept), one commit per
        run of finished units, so that files keep disjoint symbol ranges."""
        runs = self._runs(list(self.arrived))
        for run in runs:
            self._flush(run)
        if not interrupted and not runs:
            self._flush([], last=True)  # failures only: the state records them

    def _flush(self, which: list[int], last: bool = False) -> None:
        batch = [self.arrived.pop(k) for k in sorted(which)]
        for k in which:
            self.rows.pop(k, None)
        if batch or last:
            self._store(batch)

    def _store(self, arrived: list[tuple[Unit, pd.DataFrame, Any]]) -> None:
        """Compare what arrived with the stored latest versions, in one pass, and commit."""
        units = [u for u, _, _ in arrived]
        summaries = {u.scope: f.attrs["summary"] for u, f, _ in arrived if "summary" in f.attrs}
        if not arrived:  # failures only (or nothing): the state records them
            self._record(units, summaries, committed=False)
            return
        manifest = self.table.manifest or self.table.new_manifest()
        before = manifest.to_json()
        for _, frame, _ in arrived:
            extend_manifest(manifest, frame, self.ds)
        kept = None
        if arrived:
            parts, labels = [], []
            for unit, frame, fetched_at in arrived:
                n = len(frame)
                meta: dict[str, Any] = {"_fetched_at": [fetched_at] * n}
                if self.mode.name == "snapshot":
                    meta["_scope"] = [unit.scope] * n
                part = to_table(frame, manifest, meta)
                parts.append(part)
                labels.append(Arrived(unit.id, unit.symbol, unit.scope, part))
            table = pa.concat_tables(parts)
            snap = self.table.snapshot()
            stored = None
            if snap is not None and snap.files:
                stored = self.table.scan(snap, filter=self.mode.stored_filter(labels))
            index = self.mode.index(stored, manifest)
            kept, added, revised = self.mode.diff(table, labels, manifest, index)
            self.sync.report.rows_added += added
            self.sync.report.versions_added += revised
            sync_id = pa.repeat(pa.scalar(self.sync.sync_id), kept.num_rows)
            kept = kept.append_column("_sync_id", sync_id)
        if manifest.to_json() != before or (kept is not None and kept.num_rows):
            self.table.save_manifest(manifest)  # a commit never holds a column it does not name
        if kept is not None and kept.num_rows:
            self.table.append(kept, self.sync.lease)
        self._record(units, summaries, committed=kept is not None and kept.num_rows > 0)

    def _record(self, finished: list[Unit], summaries: dict[str, Any], committed: bool) -> None:
        state = self.state
        if summaries:
            state.setdefault("summaries", {})[self.sync.sync_id] = summaries
            keep = list(state["summaries"])[-_KEEP_SYNCS:]
            state["summaries"] = {k: state["summaries"][k] for k in keep}
        for unit in finished:
            entry: dict[str, Any] = {"run": self.sync.run_id, "synced": self.sync.sync_id}
            if unit.ds.lake == "window":
                entry.update(start=unit.start, end=unit.end)
                if unit.pages:
                    entry["pages"] = unit.pages
            state["units"][unit.id] = entry
            state.get("failed", {}).pop(unit.id, None)
            self.sync.done(unit)
        if finished or state.get("failed"):
            state["last_sync"] = self.sync.sync_id
            self.table.save_state(state)
            checkpoint("state-written")

    def _failure(self, unit: Unit, exc: BaseException) -> None:
        sync = self.sync
        if isinstance(exc, (SyncStopped, RateLimitError)):
            if isinstance(exc, RateLimitError):
                sync.pacer.stop("rate-limit window spent (wait=False)")
            sync.pend(unit)
            return
        if isinstance(exc, (AuthenticationError, ConfigurationError)):
            raise exc  # nothing else can succeed with this key
        if not isinstance(exc, MdframesError):  # a bug: never hide it
            raise exc
        text = sync.client.redact(str(exc))
        sync.report.failed.setdefault(unit.ds.name, {})[unit.symbol or ""] = text
        if not isinstance(exc, (NotFoundError, PermissionDeniedError)):
            text = f"{type(exc).__name__}: {text}"
        self.state.setdefault("failed", {})[unit.id] = text


class Sync:
    """The driver: hold the lease, run each dataset, write the report and the root state."""

    def __init__(
        self,
        storage: Storage,
        tables: Callable[[Any], DatasetTable],
        clock: Callable[[], dt.datetime],
        request: SyncRequest,
        progress: bool | None,
    ) -> None:
        self.storage = storage
        self.tables = tables
        self.clock = clock
        self.request = request
        self.progress = progress
        self.report = SyncReport()
        self.now = clock()
        self.symbols: list[str] = []

    def execute(self, client: Client) -> SyncReport:
        from .lease import open_lease
        from .upgrade import upgrade_lake

        storage = self.storage
        owner = f"sync started {self.now:%Y-%m-%dT%H:%M:%SZ}"
        with open_lease(storage.location, owner=owner).hold(wait=self.request.wait) as self.lease:
            storage.clean_temporaries()
            upgrade_lake(storage, self.tables, self.lease)
            root = read_root_state(storage)
            seq = int(root.get("seq", 0)) + 1
            self.sync_id = f"{seq:06d}-{self.now:%Y%m%dT%H%M%SZ}"
            self.report.sync_id = self.sync_id
            spec = self.request.spec()
            open_run = root.get("open_run")
            resume = open_run if open_run and open_run.get("spec") == spec else None
            self.run_id = resume["id"] if resume else self.sync_id
            self.pacer = Pacer(self.request.budget, self.request.wait)
            # The window is this key's, named by an HMAC under the lake's own random salt.
            salt = root.get("salt") or secrets.token_hex(16)
            root["salt"] = salt
            fingerprint = client.fingerprint("lake-rate", salt=bytes.fromhex(salt))
            held = root.get("rates")
            rates: dict[str, Any] = held if isinstance(held, dict) else {}
            root.pop("rate", None)  # 0.2 kept one window for the service: not this key's
            self.pacer.seed(rates.get(fingerprint))  # this key's window goes on
            self.client = sync_client(client, self.pacer, self.request.wait)
            root.update(format=FORMAT_VERSION, seq=seq, open_run={"id": self.run_id, "spec": spec})
            if resume and "universe" in resume:
                root["open_run"]["universe"] = resume["universe"]
            storage.write_json(root, LAKE_STATE)  # the run is on record before any work
            finished = False  # an interrupted run stays open, to be resumed
            try:
                # Ctrl-C interrupts the client (sockets shut); warnings of the fetch threads
                # are raised here when the work ends, pointing at the caller's line.
                with self.client.loading(), warnings_from_threads():
                    self._work(root)
                finished = True
            finally:
                self.client.close()
                order = {s: i for i, s in enumerate(self.symbols)}
                for lists in (self.report.done, self.report.pending):
                    for symbols in lists.values():
                        symbols.sort(key=lambda s: order.get(s, len(order)))
                self.report.requests = self.pacer.sent
                self.report.throttled = self.pacer.throttled
                self.report.stopped = self.pacer.stopped
                rates[fingerprint] = self.pacer.rate()
                root["rates"] = dict(list(rates.items())[-_KEEP_KEYS:])
                if finished and not self.report.pending and not self.report.failed:
                    root["open_run"] = None
                root.setdefault("syncs", []).append(self._log_entry())
                root["syncs"] = root["syncs"][-_KEEP_SYNCS:]
                storage.write_json(root, LAKE_STATE)
        return self.report

    def _log_entry(self) -> dict[str, Any]:
        r = self.report
        return {
            "id": self.sync_id,
            "run": self.run_id,
            "started": self.now.isoformat(),
            "requests": r.requests,
            "rows_added": r.rows_added,
            "versions_added": r.versions_added,
            "pending": sum(max(len(v), 1) for v in r.pending.values()),
            "failed": sum(len(v) for v in r.failed.values()),
        }

    def _work(self, root: dict[str, Any]) -> None:
        request = self.request
        symbols = None if request.symbols is None else list(request.symbols)
        self.symbols = symbols or []
        if symbols is None and (request.market or request.region):
            symbols = root["open_run"].get("universe")
            if symbols is None:
                symbols = self._universe()
                if symbols is None:  # stopped before the universe was known
                    for ds in request.datasets:
                        self.report.pending[ds.name] = []
                    self.report.requests_left_estimate = 1 + len(request.datasets)
                    return
                root["open_run"]["universe"] = symbols
                self.storage.write_json(root, LAKE_STATE)
            self.symbols = symbols
        runs = [DatasetRun(self, self.tables(ds)) for ds in request.datasets]
        skipped = sum(run.plan(request, symbols, self.now.date()) for run in runs)
        units = [u for run in runs for u in run.units]
        self.report.plan = plan_text(units, skipped, request.budget, self.pacer.rate(), self.now)
        if self.progress is not False:
            from ..progress import output

            # A notebook shows stderr as an error box: the plan goes to stdout there.
            print(self.report.plan, file=output(), flush=True)
        bar = self._bar(len(units))
        try:
            self.run_all(runs, bar)
        finally:
            if bar is not None:
                bar.close()

    def run_all(
        self, runs: list[DatasetRun], bar: Any, frames: dict[str, pd.DataFrame] | None = None
    ) -> None:
        """Every dataset's units through one fetch pool (datasets one after another in the
        queue, so the workers never wait at a dataset's end), each outcome handed to its
        dataset's run, which commits while the workers keep fetching."""
        owner: dict[int, DatasetRun] = {}
        queue: list[Unit] = []
        for run in runs:
            for unit in run.prepare(frames):
                owner[id(unit)] = run
                queue.append(unit)
        try:
            for unit, outcome, fetched_at in self.fetch(queue) if queue else ():
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(requests=self.pacer.sent, refresh=False)
                owner[id(unit)].accept(unit, outcome, fetched_at)
        except KeyboardInterrupt:
            for run in runs:
                run.finish(interrupted=True)  # keep what came in: a few ms
            raise
        for run in runs:
            run.finish()

    def _universe(self) -> list[str] | None:
        request = self.request
        unit = snapshot_units(REGISTRY["tickers"], None, request.market, request.region)[0]
        run = DatasetRun(self, self.tables(unit.ds))
        run.units = [unit]
        frames: dict[str, pd.DataFrame] = {}
        run.run(None, frames)
        frame = frames.get(unit.id)
        if frame is None:
            return None
        return list(dict.fromkeys(frame["symbol"].dropna().astype(str)))

    def _bar(self, total: int) -> Any:
        from ..progress import progress_bar, wanted

        bar = progress_bar(total, "sync", enabled=wanted(self.progress, total))
        if bar is not None:
            bar.unit = "unit"
        return bar

    # -- fetching -------------------------------------------------------------------------------
    def fetch(self, batch: list[Unit]) -> Iterator[tuple[Unit, Any, Any]]:
        """(unit, frame or exception, fetched_at) as each unit completes."""
        workers = min(self.client.max_workers, len(batch))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mdframes-sync")
        futures: dict[Future[Any], Unit] = {
            pool.submit(contextvars.copy_context().run, self._one, u): u for u in batch
        }
        try:
            waiting = set(futures)
            while waiting:
                # A short timeout keeps the main thread able to take a Ctrl-C at once.
                done, waiting = wait(waiting, timeout=0.25, return_when=FIRST_COMPLETED)
                for fut in done:
                    frame, fetched_at = fut.result()
                    yield futures[fut], frame, fetched_at
        except BaseException:
            self.pacer.stop("interrupted")
            for fut in futures:
                fut.cancel()
            self.client.interrupt()  # stalled reads are abandoned: their sockets shut
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def _one(self, unit: Unit) -> tuple[Any, Any]:
        from ..loaders import load

        try:
            work = self.pacer.begin(unit.estimate)
        except SyncStopped as exc:
            return exc, None
        try:
            frame = load(
                unit.ds.name, unit.symbol, client=self.client, errors="raise", **unit.params
            )
            return frame, self.clock()
        except MdframesError as exc:
            return exc, None
        finally:
            self.pacer.end(work)

    # -- outcomes -------------------------------------------------------------------------------
    def pend(self, unit: Unit) -> None:
        pending = self.report.pending.setdefault(unit.ds.name, [])
        if unit.symbol is not None and unit.symbol not in pending:
            pending.append(unit.symbol)
        self.report.requests_left_estimate += unit.estimate

    def done(self, unit: Unit) -> None:
        done = self.report.done.setdefault(unit.ds.name, [])
        if unit.symbol is not None and unit.symbol not in done:
            done.append(unit.symbol)


def run_sync(
    storage: Storage,
    tables: Callable[[Any], DatasetTable],
    clock: Callable[[], dt.datetime],
    client: Client,
    request: SyncRequest,
    progress: bool | None,
) -> SyncReport:
    """Run one checked sync request under the lake's writer lease."""
    return Sync(storage, tables, clock, request, progress).execute(client)
