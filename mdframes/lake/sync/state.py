"""The lake's records of what was synced: the root state and a dataset's unit entries.

The root state (``_lake.json``) holds the lake format, the sync counter, the time the latest
sync started (a later sync's clock may not be earlier: knowledge time only moves forward), the
log of recent syncs, the rate-limit window each key spent and the **unfinished runs, one per request**
(datasets, symbols or market/region filter, start, end): a run stopped by a budget, a rate
limit without ``wait``, Ctrl-C or a crash stays on record until the same request finishes it,
whatever other syncs run in between. Units a run finished name it in their entries, so when
the request comes back the run resumes and asks none of them again.

A dataset's state (``_state.json``) holds one entry per unit of work (a symbol's window, a
snapshot), written right after the commit that stored the unit's rows::

    units:    {unit id: {run, runs, synced, start, end, windows, pages,
                         fetched_at, first_fetched_at, rows}}
    failed:   {unit id: {error, status ("failed" | "not_found"), at}}
    unsynced: {unit id: entry}   # marked not synced by repair(): fetched again next sync

``windows`` are the date ranges fetched (merged where they touch: two means a gap between;
what they covered at an earlier time is the ledger's, :mod:`mdframes.lake.ledger`; lakes of
0.4 also kept ``filled`` here, the days a later fetch filled in), ``start``/``end`` their span as the next window is planned from it; ``rows`` counts the
unit's records (latest versions). :mod:`mdframes.lake.coverage` reads these files only,
never the data.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from ...errors import InvalidParameterError
from ..store.faults import damaged
from ..store.storage import Storage
from ..table.layout import FORMAT_VERSION, LAKE_STATE, refuse_newer

__all__ = [
    "RootState",
    "OpenRun",
    "request_key",
    "record_done",
    "record_failed",
    "mark_not_synced",
    "finished_in",
    "unit_symbol",
    "windows_of",
    "merge_windows",
    "failure_of",
    "check_forward",
]

RUNS_KEPT = 50  # unfinished runs remembered (the oldest is dropped past this)
KEEP_SYNCS = 200  # sync log entries kept
KEEP_KEYS = 20  # remembered rate windows (one per key fingerprint)


def request_key(spec: dict[str, Any]) -> str:
    """A request's key: its datasets, symbols (or filter), start and end, order aside."""
    canon = dict(spec)
    for name in ("datasets", "symbols"):
        if canon.get(name) is not None:
            canon[name] = sorted(canon[name])
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


@dataclass
class OpenRun:
    """One unfinished run of a request.

    ``retry``: its first pass left failures only; the same request once more retries just
    those, and the run closes then whatever they give (a symbol that always fails must not
    keep every later sync of the request from refreshing the rest)."""

    key: str
    id: str
    spec: dict[str, Any]
    started: str
    universe: list[str] | None = None
    retry: bool = False
    syncs: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "spec": self.spec,
            "started": self.started,
            "syncs": self.syncs[-20:],
        }
        if self.universe is not None:
            out["universe"] = self.universe
        if self.retry:
            out["retry"] = True
        return out

    @classmethod
    def from_json(cls, key: str, raw: Any) -> OpenRun:
        if not isinstance(raw, dict) or not isinstance(raw.get("spec"), dict):
            raise ValueError(f"run {key} is not a run record")
        universe = raw.get("universe")
        return cls(
            key,
            str(raw["id"]),
            dict(raw["spec"]),
            str(raw.get("started", "")),
            None if universe is None else [str(s) for s in universe],
            bool(raw.get("retry", False)),
            [str(s) for s in raw.get("syncs", [])],
        )


class RootState:
    """The root state ``_lake.json``, read once per operation and saved under the lease.

    Examples
    --------
    >>> root = RootState({})
    >>> root.next_sync_id(dt.datetime(2026, 11, 26, 9, 30, tzinfo=dt.timezone.utc))
    '000001-20261126T093000Z'
    """

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = dict(data)  # keys this version does not know are kept as they are
        self._data.setdefault("seq", 0)
        self.runs: dict[str, OpenRun] = {}
        raw = self._data.pop("runs", None) or {}
        if not isinstance(raw, dict):
            raise ValueError("runs is not an object")
        for key, value in raw.items():
            self.runs[str(key)] = OpenRun.from_json(str(key), value)
        legacy = self._data.pop("open_run", None)  # 0.3 kept one unfinished run
        if isinstance(legacy, dict) and isinstance(legacy.get("spec"), dict):
            key = request_key(legacy["spec"])
            self.runs.setdefault(key, OpenRun.from_json(key, legacy))

    @classmethod
    def load(cls, storage: Storage) -> RootState:
        """The lake's root state (a fresh one when absent); damaged -> LakeDamagedError;
        written by a newer format -> MdframesError."""
        try:
            raw = storage.read_bytes(LAKE_STATE)
            data = {} if raw is None else json.loads(raw)
            if not isinstance(data, dict):
                raise ValueError("not an object")
            refuse_newer(data.get("format", FORMAT_VERSION))
            return cls(data)
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise damaged("lake", LAKE_STATE, storage.scrub(exc)) from None

    def to_json(self) -> dict[str, Any]:
        out = dict(self._data)
        out["runs"] = {k: r.to_json() for k, r in self.runs.items()}
        return out

    def save(self, storage: Storage) -> None:
        storage.write_json(self.to_json(), LAKE_STATE)

    # -- syncs --------------------------------------------------------------------------------
    def next_sync_id(self, now: dt.datetime) -> str:
        """Count one more sync; its id (``_sync_id`` of the rows it stores)."""
        seq = int(self._data.get("seq", 0)) + 1
        self._data["seq"] = seq
        # Kept apart from the log: a sync killed before it logs has still stamped this (the
        # root is saved before any work), so the next sync's clock is checked against it.
        latest = self.latest_sync_time()
        self._data["latest_sync"] = _iso(now if latest is None else max(latest, _utc(now)))
        self.stamp_format()
        return f"{seq:06d}-{now:%Y%m%dT%H%M%SZ}"

    def stamp_format(self) -> None:
        """Say the lake is in this mdframes's format (after a sync or a conversion)."""
        self._data["format"] = FORMAT_VERSION

    def log_sync(self, entry: dict[str, Any]) -> None:
        self._data["syncs"] = [*self._data.get("syncs", []), entry][-KEEP_SYNCS:]

    def latest_sync_time(self) -> dt.datetime | None:
        """When the latest sync of this lake started (UTC; None: never synced): the most
        recent of the recorded latest start and the log's (lakes of 0.3 logged only)."""
        times = [s.get("started") for s in self._data.get("syncs", []) if isinstance(s, dict)]
        times.append(self._data.get("latest_sync"))
        parsed = [_parse_time(t) for t in times if isinstance(t, str) and t]
        known = [t for t in parsed if t is not None]
        return max(known) if known else None

    def sync_times(self) -> dict[str, str]:
        """Sync id -> when it started (ISO), for the syncs still in the log."""
        return {s["id"]: s["started"] for s in self._data.get("syncs", []) if "id" in s}

    # -- rate windows -------------------------------------------------------------------------
    def salt(self) -> bytes:
        """The lake's own random salt, under which a key's rate window is named."""
        salt = self._data.get("salt") or secrets.token_hex(16)
        self._data["salt"] = salt
        return bytes.fromhex(salt)

    def rate(self, fingerprint: str) -> dict[str, Any] | None:
        """The rate-limit window the key with this fingerprint spent last."""
        self._data.pop("rate", None)  # 0.2 kept one window for the service: not this key's
        rates = self._data.get("rates")
        return rates.get(fingerprint) if isinstance(rates, dict) else None

    def keep_rate(self, fingerprint: str, rate: dict[str, Any] | None) -> None:
        rates = self._data.get("rates")
        rates = dict(rates) if isinstance(rates, dict) else {}
        rates.pop(fingerprint, None)
        rates[fingerprint] = rate
        self._data["rates"] = dict(list(rates.items())[-KEEP_KEYS:])

    # -- unfinished runs ----------------------------------------------------------------------
    def begin_run(self, spec: dict[str, Any], sync_id: str, started: str) -> tuple[OpenRun, bool]:
        """The run of this request: its unfinished one resumed, or a new one; (run, resumed).
        The run is the newest on record either way."""
        key = request_key(spec)
        run = self.runs.pop(key, None)
        resumed = run is not None
        if run is None:
            run = OpenRun(key, sync_id, spec, started)
        run.syncs.append(sync_id)
        self.runs[key] = run
        while len(self.runs) > RUNS_KEPT:
            del self.runs[next(iter(self.runs))]
        return run, resumed

    def end_run(self, run: OpenRun, *, finished: bool, pending: bool, failed: bool) -> None:
        """After a sync of ``run``: it stays open while work is left (interrupted, pending),
        and once more when its first pass left failures; else it is closed."""
        if not finished or pending:
            return
        if failed and not run.retry:
            run.retry = True
            return
        self.runs.pop(run.key, None)

    def open_runs(self) -> list[OpenRun]:
        """The unfinished runs, oldest first."""
        return list(self.runs.values())


def _utc(t: dt.datetime) -> dt.datetime:
    """An aware UTC time (a naive one is taken as UTC, as the lake's clock promises)."""
    return t.replace(tzinfo=dt.timezone.utc) if t.tzinfo is None else t.astimezone(dt.timezone.utc)


def _iso(t: dt.datetime) -> str:
    return _utc(t).isoformat().replace("+00:00", "Z")


def _parse_time(text: str) -> dt.datetime | None:
    try:
        return _utc(dt.datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:  # a log entry this version cannot read says nothing of the time
        return None


def check_forward(root: RootState, now: dt.datetime) -> None:
    """Refuse a sync whose clock time is earlier than the lake's latest sync: rows stamped
    then would be known before rows already stored, and every ``known_at`` read, coverage
    at a time and feature panel of the lake would see history rewritten."""
    latest = root.latest_sync_time()
    if latest is None or _utc(now) >= latest:
        return
    raise InvalidParameterError(
        f"this sync's time {_iso(now)} is earlier than the latest sync the lake holds "
        f"({_iso(latest)}): a lake's knowledge time only moves forward; sync with a clock "
        f"at or after {_iso(latest)} (check the machine's clock, or the lake's clock)",
        parameter="clock",
    )


# -- a dataset's unit entries --------------------------------------------------------------------


def unit_symbol(unit_id: str) -> str | None:
    """The symbol a unit id is about (None: a cross section): windows are keyed by symbol,
    snapshots by ``"<symbol> <filter>"`` (``" <filter>"`` for a cross section)."""
    return unit_id.split(" ", 1)[0] or None


def finished_in(entry: dict[str, Any] | None, run_id: str) -> bool:
    """Whether a unit entry says the run ``run_id`` finished that unit."""
    return entry is not None and run_id in entry.get("runs", [entry.get("run")])


def _day(text: str | None) -> dt.date | None:
    return None if text is None else dt.date.fromisoformat(text)


def merge_windows(windows: list[list[str | None]]) -> list[list[str | None]]:
    """Date ranges (``None`` start: the beginning of the history) merged where they overlap
    or touch, in order."""
    low = dt.date.min
    spans = sorted(((_day(a) or low, _day(b) or low) for a, b in windows), key=lambda w: w[0])
    out: list[list[dt.date]] = []
    for a, b in spans:
        if out and a <= out[-1][1] + dt.timedelta(days=1):
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [[None if a == low else a.isoformat(), b.isoformat()] for a, b in out]


def windows_of(entry: dict[str, Any]) -> list[list[str | None]]:
    """The date ranges a window unit's syncs fetched (entries of 0.3 knew only the span)."""
    if "windows" in entry:
        return [list(w) for w in entry["windows"]]
    if entry.get("end"):
        return [[entry.get("start"), entry["end"]]]
    return []


def record_done(
    state: dict[str, Any],
    unit_id: str,
    *,
    run_id: str,
    open_runs: set[str],
    sync_id: str,
    fetched_at: dt.datetime | None,
    answer: int | None,
    added: int | None = None,
    window: tuple[str | None, str] | None = None,
    span: tuple[str | None, str | None] | None = None,
    pages: int = 0,
) -> None:
    """Note in a dataset's state that a unit is done (its rows committed).

    ``answer``: the records the service answered; ``added``: those new to the lake. A
    snapshot holds its answer; a window that fetched all the unit's earlier windows holds its
    answer too, a narrower one adds its new records to those counted before. ``window``: the
    range fetched (windows), ``span``: the range the next sync plans from."""
    old = state["units"].get(unit_id) or {}
    runs = [r for r in old.get("runs", []) if r in open_runs and r != run_id] + [run_id]
    entry: dict[str, Any] = {"run": run_id, "runs": runs, "synced": sync_id}
    count: int | None = answer
    if window is not None and span is not None:
        before = windows_of(old)
        entry.update(start=span[0], end=span[1])
        entry["windows"] = merge_windows([*before, list(window)])
        if before and not _covers(window, before):
            known = old.get("rows")
            count = known + added if isinstance(known, int) and added is not None else None
        if pages:
            entry["pages"] = pages
    if fetched_at is not None:
        stamp = fetched_at.isoformat()
        entry["fetched_at"] = stamp
        entry["first_fetched_at"] = old.get("first_fetched_at", stamp)
    if count is not None:
        entry["rows"] = count
    state["units"][unit_id] = entry
    state.get("failed", {}).pop(unit_id, None)
    state.get("unsynced", {}).pop(unit_id, None)


def _covers(window: tuple[str | None, str], windows: list[list[str | None]]) -> bool:
    """Whether ``window`` holds every one of ``windows``."""
    low = dt.date.min
    start, end = _day(window[0]) or low, _day(window[1]) or low
    return all(start <= (_day(a) or low) and (_day(b) or low) <= end for a, b in windows)


def record_failed(
    state: dict[str, Any], unit_id: str, error: str, *, not_found: bool, at: dt.datetime | None
) -> None:
    """Note that a unit's last attempt failed (404: ``not_found``)."""
    entry: dict[str, Any] = {"error": error, "status": "not_found" if not_found else "failed"}
    if at is not None:
        entry["at"] = at.isoformat()
    state.setdefault("failed", {})[unit_id] = entry


def failure_of(value: Any) -> tuple[str, str]:
    """(status, error text) of a ``failed`` entry (0.3 kept the text only)."""
    if isinstance(value, dict):
        return str(value.get("status", "failed")), str(value.get("error", ""))
    text = str(value)
    return ("not_found" if text.startswith("404") else "failed"), text


def mark_not_synced(state: dict[str, Any], unit_ids: list[str]) -> None:
    """Forget that these units were synced (their rows were lost): the next sync fetches
    each again from the start of its window, and coverage calls it pending until then."""
    unsynced = state.setdefault("unsynced", {})
    for unit_id in unit_ids:
        entry = state["units"].pop(unit_id, None)
        if entry is not None:
            unsynced[unit_id] = entry
