"""The :class:`Sandbox`: its options and clock, authentication, rate limits, the request log,
and one request from target to outcome (faults, auth, route, checks, body).

The HTTP plumbing is in :mod:`~mdframes.sandbox.wire`, fault rendering in
:mod:`~mdframes.sandbox.faults`, routing and bodies in :mod:`~mdframes.sandbox.routes`.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from .._typing import DateLike
from .context import Ctx, HttpError
from .faults import FAULT_KINDS, FaultQueue, damage
from .listings import is_served, served_symbols, span
from .per_symbol import REVISABLE
from .routes import (
    Route,
    build_routes,
    check_parts,
    check_query,
    error_body,
    make_ctx,
    match,
    render,
)
from .synth import EPOCH
from .wire import LoopbackServer, Outcome
from .world import DEFAULT_TODAY, Revision, as_day, bare_list_set, quirk_set

__all__ = ["Sandbox", "LoggedRequest", "FAULT_KINDS", "MISSING_SYMBOLS"]

_SECRET_QUERY = ("apiKey", "token")
# Symbols that answer 404 in every sandbox, for tests of unknown tickers: none is in the ticker
# universe, and they stay unknown even when named in ``record_counts`` or ``extra_symbols``.
MISSING_SYMBOLS = (
    "NOTFOUND",
    "NOSUCH",
    "ZZZZ",
    "XXXX",
    "UNKNOWN",
    "INVALID",
    "FAKE",
    "DOESNOTEXIST",
    "NONEXISTENT",
    "NOTATICKER",
)


@dataclass
class LoggedRequest:
    """One request as the sandbox saw it (key values are never stored)."""

    method: str
    path: str  # decoded path
    query: dict[str, str]  # key-bearing parameters show as "***"
    auth: str | None  # bearer, header, apiKey, token, or None
    status: int = 0  # 0: the connection was dropped
    raw_path: str = ""


@dataclass
class _Window:
    reset: int  # epoch seconds
    used: int = 0


class Sandbox:
    """A local, deterministic implementation of the service's v1 and v2 interface.

    Parameters
    ----------
    port : int
        0 picks a free port; ``.url`` tells which.
    api_keys, forbidden_keys : iterable of str
        Valid keys; valid keys that get 403 on everything.
    today : date or str, optional
        The sandbox's clock (default :data:`~mdframes.sandbox.DEFAULT_TODAY`, 2026-11-20):
        records exist up to this day and ``meta.timestamp`` falls on it. Move it with
        :meth:`set_today` and :meth:`advance`.
    latency : float
        Seconds slept per request. The attribute ``slow_paths`` (path fragment -> seconds,
        empty at start) gives matching requests a latency of their own, so that one
        dataset's answers can be held back while the others arrive.
    rate_limit, rate_window, reset_format, reset_seconds
        Requests per window per key, window length in seconds, ``"iso"`` or ``"unix"`` for
        ``X-RateLimit-Reset``, and how far ahead a ``"remaining0"`` fault puts the reset.
    record_counts : dict
        Symbol -> number of records over the whole history of every dated per-symbol dataset.
    missing_symbols : iterable of str
        Symbols that answer 404 even if they are in the universe (default:
        :data:`MISSING_SYMBOLS`, which are outside it anyway).
    extra_symbols : iterable of str
        Symbols served beyond the ticker universe (as are those named in ``record_counts``).
        Every other symbol outside the universe answers 404; see :meth:`symbols`.
    legacy_shapes : iterable of str
        ``"app_ratings"`` and/or ``"congress"``: serve the older response shapes.
    quirks : bool or iterable of str
        Facts of the live service that a plain reading of the spec does not allow, off by
        default: ``True`` for all, or names of :data:`~mdframes.sandbox.QUIRKS`
        (``"volume_off_by_one"``, ``"null_filing_date"``, ``"award_type"``,
        ``"new_vocabulary"``).
    bare_lists : bool or iterable of str
        Send ``data`` as a bare list, as the live service does for ``/v2/markets``, screeners
        and recent endpoints: ``True`` for all of those, or registry names (``"markets"``,
        ``"screener/news"``) and the families ``"screener"``, ``"recent"``.
    max_log : int
        The request log keeps at most this many entries (oldest dropped first), so a long
        benchmark does not grow memory without bound.

    Notes
    -----
    All options are also attributes that may be changed while the server runs.

    Examples
    --------
    >>> import requests
    >>> with Sandbox() as server:
    ...     requests.get(server.url + "/v2/markets", headers={"X-API-Key": "sandbox-key"})
    <Response [200]>
    """

    def __init__(
        self,
        port: int = 0,
        *,
        api_keys: Iterable[str] = ("sandbox-key",),
        forbidden_keys: Iterable[str] = ("forbidden-key",),
        today: DateLike | None = None,
        latency: float = 0.0,
        rate_limit: int = 1_000_000,
        rate_window: float = 3600,
        reset_format: str = "iso",
        reset_seconds: float = 1.0,
        record_counts: dict[str, int] | None = None,
        missing_symbols: Iterable[str] = MISSING_SYMBOLS,
        extra_symbols: Iterable[str] = (),
        legacy_shapes: Iterable[str] = (),
        quirks: bool | Iterable[str] = False,
        bare_lists: bool | Iterable[str] = False,
        max_log: int = 200_000,
    ) -> None:
        self.port = port
        self.api_keys = tuple(api_keys)
        self.forbidden_keys = tuple(forbidden_keys)
        self._clock = threading.Lock()
        self._day = DEFAULT_TODAY if today is None else as_day(today)
        # ``record_counts`` histories are laid out back from here and do not move with the clock.
        self.anchor = self._day
        self.latency = latency
        self.slow_paths: dict[str, float] = {}
        self.rate_limit = rate_limit
        self.rate_window = rate_window
        self.reset_format = reset_format
        self.reset_seconds = reset_seconds
        self.record_counts = dict(record_counts or {})
        self.missing_symbols = set(missing_symbols)
        self.extra_symbols = set(extra_symbols)
        self.legacy_shapes = set(legacy_shapes)
        self._quirks = quirk_set(quirks)  # the properties' normal forms
        self._bare_lists = bare_list_set(bare_lists)
        self.max_log = max_log
        self.requests: list[LoggedRequest] = []
        self._lock = threading.Lock()
        self._faults = FaultQueue()
        self._windows: dict[str, _Window] = {}
        self._server: LoopbackServer | None = None
        # The registry as it is now: an entry added later is served by the next sandbox.
        self.routes = build_routes()

    # -- options with a normal form ---------------------------------------------------------
    @property
    def quirks(self) -> frozenset[str]:
        """The live-service quirks switched on (names of :data:`QUIRKS`)."""
        return self._quirks

    @quirks.setter
    def quirks(self, value: bool | Iterable[str]) -> None:
        self._quirks = quirk_set(value)

    @property
    def bare_lists(self) -> frozenset[str]:
        """Registry names of the datasets whose ``data`` is sent as a bare list."""
        return self._bare_lists

    @bare_lists.setter
    def bare_lists(self, value: bool | Iterable[str]) -> None:
        self._bare_lists = bare_list_set(value)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Sandbox:
        """Bind 127.0.0.1 and serve in a daemon thread."""
        if self._server is None:
            self._server = LoopbackServer(self.port, self._handle)
            self.port = self._server.port
        return self

    def stop(self) -> None:
        """Stop serving and close every open connection."""
        server, self._server = self._server, None
        if server is not None:
            server.close()

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The service root, e.g. ``http://127.0.0.1:8765``."""
        return f"http://127.0.0.1:{self.port}"

    def __repr__(self) -> str:
        return f"Sandbox(url={self.url!r}, {'running' if self._server is not None else 'stopped'})"

    # -- log and faults ----------------------------------------------------------------------
    def count(self, path_prefix: str | None = None) -> int:
        """Requests received (whose path starts with ``path_prefix``)."""
        with self._lock:
            if path_prefix is None:
                return len(self.requests)
            return sum(
                r.path.startswith(path_prefix) or r.raw_path.startswith(path_prefix)
                for r in self.requests
            )

    def clear_log(self) -> None:
        with self._lock:
            self.requests.clear()

    def inject(self, *faults: Any, path: str | None = None) -> None:
        """Queue faults for the next requests whose path starts with ``path`` (any if None).

        Kinds: 500/502/503, ``"html500"``, ``"drop"``, ``"truncate"``, ``"html"``,
        ``"no_envelope"``, ``"success_false"``, ``("429", seconds)``,
        ``("retry_after", seconds)``, ``"redirect"``, ``"remaining0"``.

        >>> import requests
        >>> with Sandbox() as server:
        ...     server.inject(500, path="/v2/markets")
        ...     requests.get(server.url + "/v2/markets", headers={"X-API-Key": "sandbox-key"})
        <Response [500]>
        """
        self._faults.add(faults, path)

    # -- time --------------------------------------------------------------------------------
    @property
    def today(self) -> dt.date:
        """The sandbox's day (settable: ``sandbox.today = "2026-07-01"``)."""
        return self._day

    @today.setter
    def today(self, value: dt.date | str) -> None:
        self.set_today(value)

    def set_today(self, day: DateLike) -> dt.date:
        """Move the clock to ``day`` (either way); answers from then on are those of that day.

        >>> Sandbox(today="2026-06-30").set_today("2026-07-02")
        datetime.date(2026, 7, 2)
        """
        new = as_day(day)
        with self._clock:
            self._day = new
        return new

    def advance(self, days: int = 1) -> dt.date:
        """Move the clock forward by ``days`` and return the new day.

        >>> Sandbox(today="2026-06-30").advance(days=2)
        datetime.date(2026, 7, 2)
        """
        with self._clock:
            self._day += dt.timedelta(days=days)
            return self._day

    def revisions(
        self,
        dataset: str,
        symbols: str | Iterable[str],
        start: DateLike | None = None,
        end: DateLike | None = None,
    ) -> list[Revision]:
        """The in-place revisions the service makes to ``symbols``' records of ``dataset``
        between ``start`` and ``end`` (inclusive; both default to the sandbox's today), oldest
        first: on ``rev.on`` the record ``rev.key`` shows ``rev.after`` in ``rev.field`` where
        the day before it showed ``rev.before``. Datasets: ``"government_contracts"``,
        ``"congress_trades"``, ``"sentiment"`` (the rules: :data:`REVISION_RULES`).

        >>> s = Sandbox(today="2026-06-30")
        >>> [r.field for r in s.revisions("sentiment", "AAPL", "2026-01-01")][:1]
        ['score']
        """
        if dataset not in REVISABLE:
            raise ValueError(f"{dataset!r} is never revised; revised: {', '.join(REVISABLE)}")
        lo = self._day if start is None else as_day(start)
        hi = self._day if end is None else as_day(end)
        names = [symbols] if isinstance(symbols, str) else list(symbols)
        out: list[Revision] = []
        for symbol in names:
            count = self.record_counts.get(symbol)
            out += REVISABLE[dataset](symbol, lo, hi, count, self.anchor if count else EPOCH)
        return sorted(out, key=lambda r: (r.on, r.symbol, str(r.key), r.field))

    def _reset_text(self, epoch: float) -> str:
        seconds = math.ceil(epoch)  # never announce a reset earlier than it happens
        if self.reset_format == "unix":
            return str(seconds)
        return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _rate_headers(self, remaining: int, reset: float) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.rate_limit),
            "X-RateLimit-Remaining": str(max(0, remaining)),
            "X-RateLimit-Reset": self._reset_text(reset),
        }

    def _spend(self, key: str, consume: bool) -> tuple[bool, dict[str, str]]:
        """Charge one request to ``key``'s window: (allowed, rate headers)."""
        now = time.time()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now >= window.reset:
                window = _Window(math.ceil(now + self.rate_window))
                self._windows[key] = window
            allowed = window.used < self.rate_limit
            if allowed and consume:
                window.used += 1
            return allowed, self._rate_headers(self.rate_limit - window.used, window.reset)

    # -- auth --------------------------------------------------------------------------------
    @staticmethod
    def _credentials(
        version: str, headers: Any, query: dict[str, str]
    ) -> tuple[str | None, str | None]:
        """(placement, key) of the first key present in the spec's order."""
        if version == "v1":
            return ("token", query["token"]) if "token" in query else (None, None)
        auth = headers.get("Authorization")
        if auth is not None:
            scheme, _, value = auth.strip().partition(" ")
            return "bearer", value.strip() if scheme.lower() == "bearer" else ""
        if headers.get("X-API-Key") is not None:
            return "header", headers.get("X-API-Key").strip()
        for name in ("apiKey", "token"):
            if name in query:
                return name, query[name]
        return None, None

    # -- one request -------------------------------------------------------------------------
    def _handle(self, method: str, target: str, headers: Any) -> Outcome:
        parts = urlsplit(target)
        raw_path = parts.path
        path = unquote(raw_path)
        query = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        version = "v1" if path.startswith("/v1/") else "v2"
        placement, key = self._credentials(version, headers, query)
        shown = {k: ("***" if k in _SECRET_QUERY else v) for k, v in query.items()}
        entry = LoggedRequest(method, path, shown, placement, 0, raw_path)
        with self._lock:
            self.requests.append(entry)
            if len(self.requests) > self.max_log:
                del self.requests[: len(self.requests) - self.max_log]
        # Logged on arrival, answered after the latency: a request being answered is in the
        # log with status 0 until then.
        wait = next((t for part, t in self.slow_paths.items() if part in path), self.latency)
        if wait:
            time.sleep(wait)
        outcome = self._respond(method, version, raw_path, target, query, key, headers)
        entry.status = 0 if outcome.drop else outcome.status
        return outcome

    def _error(
        self, version: str, code: int, message: str | None = None, **headers: str
    ) -> Outcome:
        return Outcome(code, error_body(version, code, message), headers=dict(headers))

    def _respond(
        self,
        method: str,
        version: str,
        raw_path: str,
        target: str,
        query: dict[str, str],
        key: str | None,
        headers: Any,
        *,
        faults: bool = True,
    ) -> Outcome:
        fault = self._faults.take(unquote(raw_path), raw_path) if faults else None
        if fault is not None and fault != "remaining0":
            return self._fault(fault, version, target, key or "", headers)
        if key is None or key in self.forbidden_keys or key not in self.api_keys:
            _, rate = self._spend(key or "", consume=False)
            return self._error(version, 403 if key in self.forbidden_keys else 401, **rate)
        allowed, rate = self._spend(key, consume=True)
        if not allowed:
            return self._error(version, 429, **rate)
        if fault == "remaining0":
            rate = self._rate_headers(0, time.time() + self.reset_seconds)
        if method != "GET":
            return self._error(version, 405, "only GET is supported", Allow="GET", **rate)
        found = match(self.routes, raw_path)
        if found is None:
            return self._error(version, 404, f"no endpoint at {unquote(raw_path)}", **rate)
        route, parts = found
        try:
            body = render(route, self._ctx(route, parts, query))
        except HttpError as exc:
            return self._error(version, exc.status, exc.message, **rate)
        return Outcome(200, body, headers=rate)

    def _ctx(self, route: Route, parts: dict[str, str], query: dict[str, str]) -> Ctx:
        check_parts(route.dataset, parts)
        today = self._day
        symbol = parts.get(route.symbol_part) if route.symbol_part else None
        if symbol is not None and not self._knows(symbol, today):
            raise HttpError(404, f"symbol {symbol!r} not found")
        values = check_query(route.dataset, query)
        return make_ctx(
            route,
            parts,
            values,
            today=today,
            anchor=self.anchor,
            counts=tuple(sorted(self.record_counts.items())),
            legacy=frozenset(self.legacy_shapes),
            quirks=self._quirks,
            bare=route.dataset.name in self._bare_lists,
            listed=span(symbol) if symbol is not None else (None, None),
        )

    def _knows(self, symbol: str, today: dt.date) -> bool:
        if symbol.upper() in {s.upper() for s in self.missing_symbols}:
            return False
        return (
            symbol in self.record_counts or symbol in self.extra_symbols or is_served(symbol, today)
        )

    def symbols(self) -> frozenset[str]:
        """Every symbol the per-symbol endpoints answer today (all others get 404): the ticker
        universe as listed today (:func:`~mdframes.sandbox.universe_symbols`), symbols delisted
        earlier (their history stays), and the symbols named in ``record_counts`` and
        ``extra_symbols``, less ``missing_symbols``.

        >>> "AAPL" in Sandbox().symbols()
        True
        """
        missing = {s.upper() for s in self.missing_symbols}
        named = set(self.record_counts) | set(self.extra_symbols)
        return frozenset(s for s in served_symbols(self._day) | named if s.upper() not in missing)

    def _fault(self, fault: Any, version: str, target: str, key: str, headers: Any) -> Outcome:
        _, rate = self._spend(key, consume=False)

        def real() -> Outcome:
            path = urlsplit(target).path
            return self._respond(
                "GET", version, path, target, _query(target), key, headers, faults=False
            )

        return damage(
            fault,
            rate,
            error=partial(self._error, version),
            real=real,
            location=self.url + target,
            reset_in=lambda seconds: self._rate_headers(0, time.time() + seconds),
        )


def _query(target: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(target).query, keep_blank_values=True).items()}
