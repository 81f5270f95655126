"""Running a sync: fetch each unit, keep what is new, write it durably, then record it.

Order of durability: a batch's rows go to one data file (temporary name, fsync, rename);
only then does the dataset state say those units are done. A crash before the rename leaves a
hidden temporary file (removed by the next sync); a crash after it leaves rows the state does
not know about, so the next sync asks again and finds them identical: nothing is added twice.
The root state names the unfinished run, so the next sync with the same arguments resumes it
instead of starting over.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import (
    AuthenticationError,
    ConfigurationError,
    MdframesError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
)
from .frames import extend_manifest, to_table
from .layout import LAKE_STATE, LOCK, Manifest
from .pacer import Pacer, SyncStopped, sync_client
from .plan import Unit, plan_text, snapshot_units, window_units
from .report import SyncReport
from .storage import checkpoint
from .store import DatasetStore, is_cross
from .versions import diff_snapshots, diff_window, snapshot_index, window_index
from .writes import conform, header_columns, sort_keys

if TYPE_CHECKING:  # pragma: no cover
    from ..client import Client
    from .core import Lake

__all__ = ["run_sync", "FLUSH_UNITS", "FLUSH_ROWS"]

FLUSH_UNITS = 500  # units per batch: one data file each, and the most a crash can cost
FLUSH_ROWS = 500_000
_KEEP_SYNCS = 200  # sync log entries kept in the root state


class _Run:
    def __init__(self, lake: Lake, args: dict[str, Any], progress: bool | None) -> None:
        self.lake = lake
        self.args = args
        self.progress = progress
        self.report = SyncReport()
        self.now = lake.clock()
        self.symbols: list[str] = []

    # -- the whole run --------------------------------------------------------------------------
    def execute(self, client: Client) -> SyncReport:
        storage = self.lake.storage
        with storage.lock(LOCK) as self.holder:
            self.lake._recover()
            root = storage.read_json(LAKE_STATE) or {"format": 1, "seq": 0}
            seq = int(root.get("seq", 0)) + 1
            self.sync_id = f"{seq:06d}-{self.now:%Y%m%dT%H%M%SZ}"
            self.report.sync_id = self.sync_id
            spec = {k: self.args[k] for k in ("datasets", "symbols", "market", "region")}
            spec.update(start=self.args["start_iso"], end=self.args["end_iso"])
            open_run = root.get("open_run")
            resume = open_run if open_run and open_run.get("spec") == spec else None
            self.run_id = resume["id"] if resume else self.sync_id
            self.pacer = Pacer(self.args["budget"], self.args["wait"])
            rate = root.get("rate") or {}
            if rate.get("service") == client.base_url:  # the same service's window goes on
                self.pacer.seed(rate)
            self.client = sync_client(client, self.pacer, self.args["wait"])
            root.update(seq=seq, open_run={"id": self.run_id, "spec": spec})
            if resume and "universe" in resume:
                root["open_run"]["universe"] = resume["universe"]
            storage.write_json(root, LAKE_STATE)  # the run is on record before any work
            finished = False  # an interrupted run stays open, to be resumed
            try:
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
                root["rate"] = dict(self.pacer.rate(), service=client.base_url)
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
        a = self.args
        symbols = a["symbols"]
        self.symbols = symbols or []
        if symbols is None and (a["market"] or a["region"]):
            symbols = root["open_run"].get("universe")
            if symbols is None:
                symbols = self._universe()
                if symbols is None:  # stopped before the universe was known
                    for ds in a["datasets_resolved"]:
                        self.report.pending[ds.name] = []
                    self.report.requests_left_estimate = 1 + len(a["datasets_resolved"])
                    return
                root["open_run"]["universe"] = symbols
                self.lake.storage.write_json(root, LAKE_STATE)
            self.symbols = symbols
        plans: list[tuple[DatasetStore, list[Unit]]] = []
        skipped = 0
        today = self.now.date()
        for ds in a["datasets_resolved"]:
            store = DatasetStore(self.lake.storage, ds)
            state = store.state()
            if ds.lake == "window":
                units = window_units(ds, symbols or [], state, a["start"], a["end"], today)
            else:
                units = snapshot_units(ds, symbols, a["market"], a["region"])
            held = state["units"]
            resumed = {u.id for u in units if held.get(u.id, {}).get("run") == self.run_id}
            fresh = [u for u in units if u.id not in resumed]
            for u in units:
                if u.id in resumed:
                    self._done(u)
            skipped += len(resumed)
            plans.append((store, fresh))
        all_units = [u for _, units in plans for u in units]
        self.report.plan = plan_text(all_units, skipped, a["budget"], self.pacer.rate(), self.now)
        if self.progress is not False:
            from ..progress import _kernel

            # A notebook shows stderr as an error box: the plan goes to stdout there.
            print(self.report.plan, file=sys.stdout if _kernel() else sys.stderr, flush=True)
        bar = self._bar(len(all_units))
        try:
            for store, units in plans:
                self._dataset(store, units, bar)
        finally:
            if bar is not None:
                bar.close()

    def _universe(self) -> list[str] | None:
        from ..registry import REGISTRY

        a = self.args
        unit = snapshot_units(REGISTRY["tickers"], None, a["market"], a["region"])[0]
        store = DatasetStore(self.lake.storage, unit.ds)
        frames: dict[str, pd.DataFrame] = {}
        self._dataset(store, [unit], None, frames)
        frame = frames.get(unit.id)
        if frame is None:
            return None
        return list(dict.fromkeys(frame["symbol"].dropna().astype(str)))

    def _bar(self, total: int) -> Any:
        from ..progress import _kernel, progress_bar

        want = self.progress
        if want is None:
            want = _kernel() or bool(getattr(sys.stderr, "isatty", bool)())
        bar = progress_bar(total, "sync", enabled=bool(want) and total > 0)
        if bar is not None:
            bar.unit = "unit"
        return bar

    # -- one dataset ----------------------------------------------------------------------------
    def _dataset(
        self,
        store: DatasetStore,
        units: list[Unit],
        bar: Any,
        frames: dict[str, pd.DataFrame] | None = None,
    ) -> None:
        state = store.state()
        for start in range(0, len(units), FLUSH_UNITS):
            batch = units[start : start + FLUSH_UNITS]
            if self.pacer.stopped:
                for u in batch:
                    self._pend(u)
                continue
            self._batch(store, state, batch, bar, frames)

    def _batch(
        self,
        store: DatasetStore,
        state: dict[str, Any],
        batch: list[Unit],
        bar: Any,
        frames: dict[str, pd.DataFrame] | None,
    ) -> None:
        manifest = store.manifest or store.new_manifest()
        arrived: list[tuple[Unit, pd.DataFrame, Any]] = []
        try:
            self._receive(store, state, batch, bar, frames, manifest, arrived)
        except KeyboardInterrupt:
            self._store(store, state, manifest, arrived)  # keep what came in: a few ms
            raise

    def _receive(
        self,
        store: DatasetStore,
        state: dict[str, Any],
        batch: list[Unit],
        bar: Any,
        frames: dict[str, pd.DataFrame] | None,
        manifest: Manifest,
        arrived: list[tuple[Unit, pd.DataFrame, Any]],
    ) -> None:
        rows = 0
        for unit, outcome, fetched_at in self._fetch(batch):
            if bar is not None:
                bar.update(1)
                bar.set_postfix(requests=self.pacer.sent, refresh=False)
            if isinstance(outcome, BaseException):
                self._failure(store, state, unit, outcome)
                continue
            unit.pages = int(outcome.attrs.get("requests", 0))
            frame = header_columns(unit.ds, outcome)
            if frames is not None:
                frames[unit.id] = frame
            extend_manifest(manifest, frame, unit.ds)
            arrived.append((unit, frame, fetched_at))
            rows += len(frame)
            if rows >= FLUSH_ROWS:
                self._store(store, state, manifest, arrived)
                arrived.clear()
                rows = 0
        self._store(store, state, manifest, arrived)
        arrived.clear()

    def _store(
        self,
        store: DatasetStore,
        state: dict[str, Any],
        manifest: Manifest,
        arrived: list[tuple[Unit, pd.DataFrame, Any]],
    ) -> None:
        """Compare what arrived with the stored latest versions, in one pass, and flush."""
        units = [u for u, _, _ in arrived]
        summaries = {u.scope: f.attrs["summary"] for u, f, _ in arrived if "summary" in f.attrs}
        if not arrived:
            self._flush(store, state, None, units, summaries)
            return
        index = self._index(store, units)
        parts = []
        for unit, frame, fetched_at in arrived:
            n = len(frame)
            meta: dict[str, Any] = {"_fetched_at": [fetched_at] * n}
            if unit.ds.lake == "snapshot":
                meta["_scope"] = [unit.scope] * n
            parts.append(to_table(frame, manifest, meta))
        table = pa.concat_tables(parts)
        if store.ds.lake == "window":
            diff = diff_window(table.drop_columns(["_fetched_at"]), manifest, index)
            self.report.rows_added += diff.added
            self.report.versions_added += diff.revised
            kept = table.take(pa.array(diff.take, type=pa.int64()))
            kept = kept.append_column("_version", pa.array(diff.version, type=pa.int32()))
            kept = kept.append_column("_n", pa.array(diff.n, type=pa.int16()))
        else:
            ids = [u.id for u, f, _ in arrived for _ in range(len(f))]
            keep, version, added, revised = diff_snapshots(
                table.drop_columns(["_fetched_at", "_scope"]), ids, manifest, index
            )
            self.report.rows_added += added
            self.report.versions_added += revised
            kept = table.filter(pa.array(keep))
            kept = kept.append_column("_version", pa.array(version[keep], type=pa.int32()))
        kept = kept.append_column("_sync_id", pa.repeat(pa.scalar(self.sync_id), kept.num_rows))
        self._flush(store, state, kept if kept.num_rows else None, units, summaries)

    def _index(self, store: DatasetStore, batch: Sequence[Unit]) -> Any:
        manifest = store.manifest
        if manifest is None or not store.files():
            return window_index(None, manifest) if store.ds.lake == "window" else {}
        if is_cross(store.ds):
            scopes = sorted({u.scope for u in batch})
            where = pc.field("_scope").isin(scopes)
        else:
            where = pc.field("symbol").isin(sorted({str(u.symbol) for u in batch}))
        stored = store.scan(filter=where)
        if store.ds.lake == "window":
            return window_index(stored, manifest)
        return snapshot_index(stored, manifest, is_cross(store.ds))

    # -- fetching -------------------------------------------------------------------------------
    def _fetch(self, batch: list[Unit]) -> Iterator[tuple[Unit, Any, Any]]:
        """(unit, frame or exception, fetched_at) as each unit completes."""
        workers = min(self.client.max_workers, len(batch))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mdframes-sync")
        futures: dict[Future[Any], Unit] = {pool.submit(self._one, u): u for u in batch}
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
            symbols = None if unit.symbol is None else unit.symbol
            frame = load(unit.ds.name, symbols, client=self.client, errors="raise", **unit.params)
            return frame, self.lake.clock()
        except MdframesError as exc:
            return exc, None
        finally:
            self.pacer.end(work)

    # -- outcomes -------------------------------------------------------------------------------
    def _failure(
        self, store: DatasetStore, state: dict[str, Any], unit: Unit, exc: BaseException
    ) -> None:
        if isinstance(exc, (SyncStopped, RateLimitError)):
            if isinstance(exc, RateLimitError):
                self.pacer.stop("rate-limit window spent (wait=False)")
            self._pend(unit)
            return
        if isinstance(exc, (AuthenticationError, ConfigurationError)):
            raise exc  # nothing else can succeed with this key
        if not isinstance(exc, MdframesError):  # a bug: never hide it
            raise exc
        text = self.client.redact(str(exc))
        key = unit.symbol or ""
        self.report.failed.setdefault(unit.ds.name, {})[key] = text
        if not isinstance(exc, (NotFoundError, PermissionDeniedError)):
            text = f"{type(exc).__name__}: {text}"
        state.setdefault("failed", {})[unit.id] = text

    def _pend(self, unit: Unit) -> None:
        pending = self.report.pending.setdefault(unit.ds.name, [])
        if unit.symbol is not None and unit.symbol not in pending:
            pending.append(unit.symbol)
        self.report.requests_left_estimate += unit.estimate

    def _done(self, unit: Unit) -> None:
        done = self.report.done.setdefault(unit.ds.name, [])
        if unit.symbol is not None and unit.symbol not in done:
            done.append(unit.symbol)

    def _flush(
        self,
        store: DatasetStore,
        state: dict[str, Any],
        table: pa.Table | None,
        finished: list[Unit],
        summaries: dict[str, Any],
    ) -> None:
        manifest = store.manifest
        if table is not None and manifest is not None:
            store.save_manifest(manifest)  # a data file never holds a column it does not name
            table = conform(table, store.schema())
            table = table.sort_by(sort_keys(manifest, store.meta, is_cross(store.ds)))
            k = int(state.get("files_written", 0))
            name = f"part-{self.sync_id}-{k:04d}.parquet"
            extra = {"summaries": {self.sync_id: summaries}} if summaries else {}
            store.write(table, name, extra)
            state["files_written"] = k + 1
        elif finished and manifest is not None and manifest.columns:
            store.save_manifest(manifest)
        for unit in finished:
            entry: dict[str, Any] = {"run": self.run_id, "synced": self.sync_id}
            if unit.ds.lake == "window":
                entry.update(start=unit.start, end=unit.end)
                if unit.pages:
                    entry["pages"] = unit.pages
            state["units"][unit.id] = entry
            state.get("failed", {}).pop(unit.id, None)
            self._done(unit)
        if finished or state.get("failed"):
            state["last_sync"] = self.sync_id
            store.save_state(state)
            checkpoint("state-written")
        self.holder.refresh()


def run_sync(lake: Lake, client: Client, args: dict[str, Any], progress: bool | None) -> SyncReport:
    """Run one sync under the lake's lock (arguments already checked by :meth:`Lake.sync`)."""
    return _Run(lake, args, progress).execute(client)
