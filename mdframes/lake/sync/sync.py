"""Running a sync: the driver (lease -> per-dataset runs -> report) and one dataset's run.

Order of durability: a batch's new rows are one Delta commit; only then does the dataset state
say those units are done. A crash before the commit leaves nothing visible (at most an orphan
data file no version lists, removed by a later vacuum); a crash after it leaves rows the state
does not know about, so the next sync asks again and finds them identical: nothing is added
twice. The root state (:class:`~.state.RootState`) keeps each request's unfinished run, so the
same request later resumes it, whatever other syncs ran in between, and asks none of the
units it finished again.

:func:`run_sync` holds the lease and the root state; :class:`Sync` plans and fetches; each
dataset's :class:`DatasetRun` compares, commits and records what arrived, told what it needs
of the sync by a :class:`RunContext` (it never calls back into the driver).

A Ctrl-C while a batch commits (a few seconds for 500 units) is held back until the commit
and the state that counts it are written (:func:`sheltered`): the units the bar counted done
are kept, no request is started meanwhile, and a second Ctrl-C stops at once.
"""

from __future__ import annotations

import _thread
import contextlib
import contextvars
import datetime as dt
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...client import Client
from ...errors import (
    AuthenticationError,
    ConfigurationError,
    MdframesError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    warnings_from_threads,
)
from ...registry import REGISTRY
from ..ledger import seed_if_needed, write_batch
from ..maintenance import auto_compact
from ..store.storage import Storage, checkpoint
from ..table.frames import extend_manifest, to_table
from ..table.table import DatasetTable
from ..tables import Tables
from .modes import Arrived
from .pacer import Pacer, SyncStopped, sync_client
from .plan import SyncRequest, Unit, plan_text
from .report import SyncReport
from .state import (
    KEEP_SYNCS,
    OpenRun,
    RootState,
    check_forward,
    finished_in,
    record_done,
    record_failed,
)

__all__ = ["run_sync", "FLUSH_UNITS", "FLUSH_ROWS", "RunContext", "DatasetRun"]

FLUSH_UNITS = 500  # units per batch: one commit each, and the most a crash can cost
FLUSH_ROWS = 500_000
PATIENCE = 10.0  # seconds a Ctrl-C waits for the commit under way (CONTRACT §10.2)


@dataclass
class RunContext:
    """What one sync gives each dataset's run: its ids, the open runs, the report it fills,
    the pacer, the lease that fences its commits and the key's redaction."""

    sync_id: str
    run_id: str
    open_runs: set[str]
    report: SyncReport
    pacer: Pacer
    lease: Any
    redact: Callable[[str], str]
    now: dt.datetime
    bar: Any = None  # the sync's progress bar (None: none drawn)

    def pend(self, unit: Unit) -> None:
        """A unit left for the next run of the request."""
        pending = self.report.pending.setdefault(unit.ds.name, [])
        if unit.symbol is not None and unit.symbol not in pending:
            pending.append(unit.symbol)
        self.report.requests_left_estimate += unit.estimate

    def done(self, unit: Unit) -> None:
        """A unit finished (now, or earlier in this run)."""
        done = self.report.done.setdefault(unit.ds.name, [])
        if unit.symbol is not None and unit.symbol not in done:
            done.append(unit.symbol)


def plan_dataset(
    table: DatasetTable,
    state: dict[str, Any],
    request: SyncRequest,
    symbols: list[str] | None,
    today: dt.date,
    run_id: str,
) -> tuple[list[Unit], list[Unit]]:
    """A dataset's units of this request: (to do, already finished in this run)."""
    units = table.mode.units(table.ds, symbols, state, request, today)
    held = state["units"]
    finished = [u for u in units if finished_in(held.get(u.id), run_id)]
    return [u for u in units if u not in finished], finished


class DatasetRun:
    """One dataset within a sync: its table, state and dtype record, its units in symbol
    order, and what arrived of them."""

    def __init__(
        self,
        ctx: RunContext,
        table: DatasetTable,
        state: dict[str, Any],
        units: list[Unit],
        frames: dict[str, pd.DataFrame] | None = None,
    ) -> None:
        self.ctx = ctx
        self.table = table
        self.ds = table.ds
        self.mode = table.mode
        self.state = state
        # The state as this run found it: a lake's first ledger file is made of it.
        self.before = {"units": dict(state.get("units", {}))}
        self.frames = frames  # unit id -> frame, for a caller that wants the answers
        table.begin_writes(ctx.lease)  # the version this run starts from, vouched for
        if units and ctx.pacer.stopped:  # nothing more may be sent: all of it is pending
            for u in units:
                ctx.pend(u)
            units = []
        self.ordered = sorted(units, key=lambda u: (u.symbol or "", u.scope))
        self.place = {id(u): i for i, u in enumerate(self.ordered)}
        self.finished = [False] * len(self.ordered)
        self.stored = [False] * len(self.ordered)  # came with rows (committed or to be)
        self.arrived: dict[int, tuple[Unit, pd.DataFrame, Any]] = {}
        self.rows: dict[int, int] = {}
        self.prefix = 0  # ordered[:prefix] have all finished
        self.batches = 0  # ledger files this run wrote
        self.failed_since: list[str] = []  # unit ids failed since the last ledger file

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
        from ...progress import stage

        if not which and not last:
            return
        with (
            sheltered(lambda: self.ctx.pacer.stop("interrupted")),
            stage(self.ctx.bar, "committing"),
        ):
            self._store([self.arrived[k] for k in sorted(which)])
            for k in which:  # counted in the state: no longer to be kept by an interrupt
                self.arrived.pop(k)
                self.rows.pop(k, None)

    def _store(self, arrived: list[tuple[Unit, pd.DataFrame, Any]]) -> None:
        """Compare what arrived with the stored latest versions, in one pass, and commit."""
        summaries = {u.scope: f.attrs["summary"] for u, f, _ in arrived if "summary" in f.attrs}
        if not arrived:  # failures only (or nothing): the state records them
            self._record([], summaries, {})
            return
        manifest = self.table.manifest or self.table.new_manifest()
        before = manifest.to_json()
        for _, frame, _ in arrived:
            extend_manifest(manifest, frame, self.ds)
        parts, labels = [], []
        for unit, frame, fetched_at in arrived:
            n = len(frame)
            meta = {"_fetched_at": [fetched_at] * n, **self.mode.unit_meta(unit.scope, n)}
            part = to_table(frame, manifest, meta)
            parts.append(part)
            labels.append(Arrived(unit.id, unit.symbol, unit.scope, part))
        table = pa.concat_tables(parts)
        snap = self.table.snapshot()
        stored = None
        if snap is not None and snap.files:
            # Another program's rows (copies, rows without meta columns) are not compared.
            rows = self.table.scan(snap, filter=self.mode.stored_filter(labels))
            stored = self.table.without_copies(snap, rows)
        index = self.mode.index(stored, manifest)
        kept, added, revised = self.mode.diff(table, labels, manifest, index)
        self.ctx.report.rows_added += added
        self.ctx.report.versions_added += revised
        kept = kept.append_column("_sync_id", pa.repeat(pa.scalar(self.ctx.sync_id), kept.num_rows))
        if manifest.to_json() != before or kept.num_rows:
            self.table.save_manifest(manifest)  # a commit never holds a column it does not name
        if kept.num_rows:
            self.table.append(kept, self.ctx.lease)
        self._record(arrived, summaries, _new_records(kept))

    def _record(
        self,
        arrived: list[tuple[Unit, pd.DataFrame, Any]],
        summaries: dict[str, Any],
        new: dict[str, int],
    ) -> None:
        """Note the units whose rows are committed (and the failures) in the dataset state."""
        state, ctx = self.state, self.ctx
        if summaries:
            state.setdefault("summaries", {})[ctx.sync_id] = summaries
            keep = list(state["summaries"])[-KEEP_SYNCS:]
            state["summaries"] = {k: state["summaries"][k] for k in keep}
        done = []
        for unit, frame, fetched_at in arrived:
            done.append((unit.id, unit.window))
            record_done(
                state,
                unit.id,
                run_id=ctx.run_id,
                open_runs=ctx.open_runs,
                sync_id=ctx.sync_id,
                fetched_at=fetched_at,
                answer=len(frame),
                added=new.get(unit.symbol or "", 0),
                window=unit.window,
                span=None if unit.window is None else (unit.start, unit.end),
                pages=unit.pages,
            )
            ctx.done(unit)
        if arrived or state.get("failed"):
            if self.batches == 0:
                seed_if_needed(self.table, self.before)
            self.batches += 1
            write_batch(self.table, ctx.sync_id, self.batches, state, done, self.failed_since)
            self.failed_since = []
            state["last_sync"] = ctx.sync_id
            self.table.save_state(state)
            checkpoint("state-written")

    def _failure(self, unit: Unit, exc: BaseException) -> None:
        ctx = self.ctx
        if isinstance(exc, (SyncStopped, RateLimitError)):
            if isinstance(exc, RateLimitError):
                ctx.pacer.stop("rate-limit window spent (wait=False)")
            ctx.pend(unit)
            return
        if isinstance(exc, (AuthenticationError, ConfigurationError)):
            raise exc  # nothing else can succeed with this key
        if not isinstance(exc, MdframesError):  # a bug: never hide it
            raise exc
        text = ctx.redact(str(exc))
        ctx.report.failed.setdefault(unit.ds.name, {})[unit.symbol or ""] = text
        if not isinstance(exc, (NotFoundError, PermissionDeniedError)):
            text = f"{type(exc).__name__}: {text}"
        record_failed(
            self.state, unit.id, text, not_found=isinstance(exc, NotFoundError), at=ctx.now
        )
        self.failed_since.append(unit.id)


@contextlib.contextmanager
def sheltered(on_interrupt: Callable[[], None]) -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) back until the block ends, then raise ``KeyboardInterrupt``;
    ``on_interrupt`` is called when it arrives. A second Ctrl-C raises at once, and so does
    the first once it waited ``PATIENCE`` seconds (when the main thread next runs Python).
    Only the main thread receives signals: elsewhere the block runs as it is."""
    caught: list[int] = []
    timer = threading.Timer(PATIENCE, _thread.interrupt_main)
    timer.daemon = True

    def hold(signum: int, frame: Any) -> None:
        if caught:
            raise KeyboardInterrupt
        caught.append(signum)
        on_interrupt()
        timer.start()

    main = threading.current_thread() is threading.main_thread()
    main = main and signal.getsignal(signal.SIGINT) not in (signal.SIG_IGN, None)
    previous = signal.signal(signal.SIGINT, hold) if main else None
    try:
        yield
    finally:
        timer.cancel()
        if main:
            signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _new_records(kept: pa.Table) -> dict[str, int]:
    """Symbol -> records a batch's kept rows add (their first versions)."""
    if not kept.num_rows or "symbol" not in kept.column_names:
        return {}
    first = kept.filter(pc.equal(kept["_version"], 1))["symbol"]
    counts = pc.value_counts(first).to_pylist()
    return {str(c["values"]): int(c["counts"]) for c in counts if c["values"] is not None}


class Sync:
    """The driver of one sync under the lease: plan every dataset, fetch through one pool,
    hand each outcome to its dataset's run."""

    def __init__(
        self,
        ctx: RunContext,
        client: Client,
        tables: Tables,
        clock: Callable[[], dt.datetime],
        request: SyncRequest,
        progress: bool | None,
    ) -> None:
        self.ctx = ctx
        self.client = client  # paced: every request goes through ``ctx.pacer``
        self.tables = tables
        self.clock = clock
        self.request = request
        self.progress = progress
        self.symbols: list[str] = []  # the request's symbols (or universe), in its order

    def work(self, root: RootState, storage: Storage, run: OpenRun) -> None:
        request, ctx = self.request, self.ctx
        symbols = None if request.symbols is None else list(request.symbols)
        self.symbols[:] = symbols or []
        if symbols is None and (request.market or request.region):
            symbols = run.universe
            if symbols is None:
                symbols = self._universe()
                if symbols is None:  # stopped before the universe was known
                    for ds in request.datasets:
                        ctx.report.pending[ds.name] = []
                    ctx.report.requests_left_estimate = 1 + len(request.datasets)
                    return
                run.universe = symbols
                root.save(storage)
            self.symbols[:] = symbols
        runs, skipped = [], 0
        for ds in request.datasets:
            table = self.tables.get(ds)
            state = table.state()
            todo, finished = plan_dataset(
                table, state, request, symbols, ctx.now.date(), ctx.run_id
            )
            for u in finished:
                ctx.done(u)
            skipped += len(finished)
            runs.append((table, state, todo))
        ctx.report.resumed = skipped
        datasets = [DatasetRun(ctx, table, state, todo) for table, state, todo in runs]
        units = [u for run in datasets for u in run.ordered]
        ctx.report.plan = plan_text(units, skipped, request.budget, ctx.pacer.rate(), ctx.now)
        if self.progress is not False:
            from ...progress import output

            # A notebook shows stderr as an error box: the plan goes to stdout there.
            print(ctx.report.plan, file=output(), flush=True)
        bar = ctx.bar = self._bar(len(units))
        try:
            self.run_all(datasets, bar)
        finally:
            if bar is not None:
                bar.close()

    def run_all(self, runs: list[DatasetRun], bar: Any) -> None:
        """Every dataset's units through one fetch pool (datasets one after another in the
        queue, so the workers never wait at a dataset's end), each outcome handed to its
        dataset's run, which commits while the workers keep fetching."""
        owner: dict[int, DatasetRun] = {}
        queue: list[Unit] = []
        for run in runs:
            for unit in run.ordered:
                owner[id(unit)] = run
                queue.append(unit)
        try:
            for unit, outcome, fetched_at in self.fetch(queue) if queue else ():
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(requests=self.ctx.pacer.sent, refresh=False)
                owner[id(unit)].accept(unit, outcome, fetched_at)
        except KeyboardInterrupt:
            for run in runs:
                run.finish(interrupted=True)  # keep what came in: a few ms
            raise
        for run in runs:
            run.finish()

    def _universe(self) -> list[str] | None:
        request = self.request
        table = self.tables.get(REGISTRY["tickers"])
        (unit,) = table.mode.units(table.ds, None, {"units": {}}, request, request.end_default)
        frames: dict[str, pd.DataFrame] = {}
        self.run_all([DatasetRun(self.ctx, table, table.state(), [unit], frames)], None)
        frame = frames.get(unit.id)
        if frame is None:
            return None
        return list(dict.fromkeys(frame["symbol"].dropna().astype(str)))

    def _bar(self, total: int) -> Any:
        from ...progress import progress_bar, wanted

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
            self.ctx.pacer.stop("interrupted")
            for fut in futures:
                fut.cancel()
            self.client.interrupt()  # stalled reads are abandoned: their sockets shut
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def _one(self, unit: Unit) -> tuple[Any, Any]:
        from ...loaders import load

        pacer = self.ctx.pacer
        try:
            work = pacer.begin(unit.estimate)
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
            pacer.end(work)


def run_sync(
    tables: Tables,
    clock: Callable[[], dt.datetime],
    client: Client,
    request: SyncRequest,
    progress: bool | None,
) -> SyncReport:
    """Run one checked sync request under the lake's writer lease: the request's unfinished
    run resumed (or a new one), the work, then the root state (rate window, the run closed
    or kept, the sync log)."""
    from ..store.lease import open_lease
    from ..upgrade import upgrade_lake

    storage = tables.storage
    now = clock()
    _forward_only(storage, now)
    owner = f"sync started {now:%Y-%m-%dT%H:%M:%SZ}"
    with open_lease(storage.location, owner=owner).hold(wait=request.wait) as lease:
        tables.clean_temporaries()
        upgrade_lake(tables, lease)
        root = RootState.load(storage)
        # The time is read again under the lease: a sync that held it meanwhile started later
        # than this one asked, and this one's rows are stored after its rows.
        now = clock()
        check_forward(root, now)
        sync_id = root.next_sync_id(now)
        run, _ = root.begin_run(request.spec(), sync_id, now.isoformat())
        pacer = Pacer(request.budget, request.wait)
        # The window is this key's, named by an HMAC under the lake's own random salt.
        fingerprint = client.fingerprint("lake-rate", salt=root.salt())
        pacer.seed(root.rate(fingerprint))  # this key's window goes on
        paced = sync_client(client, pacer, request.wait)
        report = SyncReport(sync_id=sync_id)
        runs = {r.id for r in root.open_runs()}
        ctx = RunContext(sync_id, run.id, runs, report, pacer, lease, paced.redact, now)
        root.save(storage)  # the run is on record before any work
        driver = Sync(ctx, paced, tables, clock, request, progress)
        finished = False  # an interrupted run stays open, to be resumed
        try:
            # Ctrl-C interrupts the client (sockets shut); warnings of the fetch threads
            # are raised here when the work ends, pointing at the caller's line.
            with paced.loading(), warnings_from_threads():
                driver.work(root, storage, run)
            # Many small files compacted under the same lease (maintenance.auto_compact).
            auto_compact([tables.get(ds) for ds in request.datasets], lease)
            finished = True
        finally:
            paced.close()
            order = {s: i for i, s in enumerate(driver.symbols)}
            for lists in (report.done, report.pending):
                for symbols in lists.values():
                    symbols.sort(key=lambda s: order.get(s, len(order)))
            report.requests = pacer.sent
            report.throttled = pacer.throttled
            report.stopped = pacer.stopped
            root.keep_rate(fingerprint, pacer.rate())
            root.end_run(
                run, finished=finished, pending=bool(report.pending), failed=bool(report.failed)
            )
            root.log_sync(_log_entry(report, run, now))
            root.save(storage)
    return report


def _forward_only(storage: Storage, now: dt.datetime) -> None:
    """Refuse a clock earlier than the lake's latest sync before the lease is taken, so that
    a refused sync sends nothing and writes nothing (no lock, no run on record)."""
    try:
        root = RootState.load(storage)
    except MdframesError:  # a damaged root is reported under the lease, as it always was
        return
    check_forward(root, now)


def _log_entry(report: SyncReport, run: OpenRun, now: dt.datetime) -> dict[str, Any]:
    return {
        "id": report.sync_id,
        "run": run.id,
        "started": now.isoformat(),
        "requests": report.requests,
        "rows_added": report.rows_added,
        "versions_added": report.versions_added,
        "resumed": report.resumed,
        "pending": sum(max(len(v), 1) for v in report.pending.values()),
        "failed": sum(len(v) for v in report.failed.values()),
    }
