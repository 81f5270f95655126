"""Requests within the budget and the service's rate limit, across all sync threads.

Every network send of a sync passes :meth:`Pacer.before_send` and
:meth:`Pacer.after_response`: the client's public ``before_send``/``after_send`` hooks
(:meth:`mdframes.Client.replace`), so the paced client is a plain copy of the caller's. The pacer counts requests (retries included), never starts one
past ``budget``, and keeps the requests in flight within ``X-RateLimit-Remaining``, so the
service is not sent requests it would answer with 429. When the window is spent it waits for
the reset (``wait=True``) or stops the sync cleanly (``wait=False``).
"""

from __future__ import annotations

import contextvars
import threading
import time
from datetime import datetime, timezone
from typing import Any

from ...client import Client, reset_from_headers
from ...errors import MdframesError
from ...progress import waiting

__all__ = ["Pacer", "SyncStopped", "sync_client", "SYNC_MAX_WAIT"]

SYNC_MAX_WAIT = 24 * 3600.0  # wait=True: any window the service names

# The unit of work a request belongs to. A context variable, not a thread-local: a unit's
# loader sends some requests from its own threads (congress's two chambers), which run in a
# copy of the unit's context, so every request of a unit is charged to its reservation.
_WORK: contextvars.ContextVar[_Work | None] = contextvars.ContextVar(
    "mdframes_sync_work", default=None
)


class SyncStopped(MdframesError):
    """The sync stopped before this request: budget spent, window spent, or interrupted."""


class Pacer:
    """Shared by a sync's threads: the request budget and the rate-limit window."""

    def __init__(self, budget: int | None, wait: bool) -> None:
        self.budget = budget
        self.wait = wait
        self.sent = 0  # requests the service received (retries included)
        self.throttled = 0  # 429 answers
        self.in_flight = 0
        self.limit: int | None = None
        self.remaining: int | None = None
        self.reset: datetime | None = None
        self.stopped: str | None = None  # why no further unit starts
        # Whether no further request is sent either. A budget too small for the next unit
        # only stops units from starting: those running finish within their reservations,
        # so a unit is never cut half-way (congress's second chamber asked again on resume).
        self._halted = False
        self._cond = threading.Condition()
        self._running: set[_Work] = set()
        self._headerless = False  # the service sends no rate-limit headers: nothing to pace
        self._local = threading.local()

    # -- state ---------------------------------------------------------------------------------
    def stop(self, why: str) -> None:
        with self._cond:
            self._halt(why)
            self._cond.notify_all()

    def _halt(self, why: str) -> None:
        if self.stopped is None:
            self.stopped = why
        self._halted = True

    def rate(self) -> dict[str, Any]:
        with self._cond:
            return {
                "limit": self.limit,
                "remaining": self.remaining,
                "reset": self.reset.isoformat() if self.reset else None,
            }

    def seed(self, rate: dict[str, Any] | None) -> None:
        """Start from the window the last sync saw, if it has not reset since."""
        if not rate or not rate.get("reset"):
            return
        reset = datetime.fromisoformat(rate["reset"])
        if reset > datetime.now(timezone.utc):
            self.limit, self.remaining, self.reset = rate.get("limit"), rate.get("remaining"), reset

    # -- around each unit of work ---------------------------------------------------------------
    def begin(self, estimate: int) -> _Work:
        """Start a unit that needs at least ``estimate`` requests, if the budget still holds
        them after what running units are sure to spend; else stop the sync."""
        with self._cond:
            if self.stopped:
                raise SyncStopped(f"sync stopped: {self.stopped}")
            if self.budget is not None:
                reserved = sum(max(w.estimate - w.sent, 0) for w in self._running)
                if self.sent + self.in_flight + reserved + estimate > self.budget:
                    self.stopped = f"budget of {self.budget} requests spent"
                    raise SyncStopped(f"sync stopped: {self.stopped}")
            work = _Work(estimate)
            self._running.add(work)
            work.token = _WORK.set(work)
            return work

    def end(self, work: _Work) -> None:
        with self._cond:
            self._running.discard(work)
            if work.token is not None:
                _WORK.reset(work.token)
            # Attempts of the unit that got no answer (a connection error on the last try),
            # whichever thread sent them: sent, and no longer in flight.
            self.in_flight -= work.open
            self.sent += work.open
            work.open = 0
            self._local.attempt = None
            self._cond.notify_all()

    def _settle(self) -> None:
        """This thread's previous attempt got no answer (a connection error, then a retry):
        it counts as sent and is no longer in flight."""
        attempt = getattr(self._local, "attempt", None)
        if attempt is None:
            return
        self._local.attempt = None
        self.in_flight -= 1
        self.sent += 1
        if attempt.work is not None:
            attempt.work.open -= 1

    # -- around each send -----------------------------------------------------------------------
    def before_send(self) -> None:
        told = False  # the bars say so while this waits for a reset
        with self._cond:
            self._settle()
            while True:
                if self._halted:
                    raise SyncStopped(f"sync stopped: {self.stopped}")
                if self.budget is not None and self.sent + self.in_flight >= self.budget:
                    self._halt(f"budget of {self.budget} requests spent")
                    continue
                if self.remaining is None:
                    if self.in_flight == 0 or self._headerless:
                        break  # one request at a time until an answer tells the window
                    self._cond.wait(timeout=0.25)
                    continue
                if self.remaining - self.in_flight > 0:
                    break
                delay = self._until_reset()
                if delay <= 0:
                    self.remaining = None  # a new window: the next answer tells its size
                    break
                # An answer's count may already include requests still in flight here: their
                # own answers tell the window's true count before it is called spent.
                if not self.wait and self.in_flight == 0:
                    self._halt("rate-limit window spent (wait=False)")
                    continue
                if not told:
                    waiting(self.reset)
                    told = True
                # Short waits so that a stop (Ctrl-C) is noticed within a fraction of a second.
                self._cond.wait(timeout=min(delay, 0.25))
            if told:
                waiting(over=True)
            self.in_flight += 1
            work = _WORK.get()
            self._local.attempt = _Attempt(work)
            if work is not None:
                work.sent += 1
                work.open += 1

    def _until_reset(self) -> float:
        if self.reset is None:
            return 1.0  # spent with no reset named: look again shortly
        return self.reset.timestamp() - time.time()

    def after_response(self, response: Any) -> None:
        """Every answer, those retried on included (the client shows each one)."""
        with self._cond:
            attempt = getattr(self._local, "attempt", None)
            if attempt is not None:
                self._local.attempt = None
                self.in_flight -= 1
                if attempt.work is not None:
                    attempt.work.open -= 1
            self.sent += 1
            if response.status_code == 429:
                self.throttled += 1
            self._observe(response.headers)
            self._cond.notify_all()

    def _observe(self, headers: Any) -> None:
        limit, remaining = headers.get("X-RateLimit-Limit"), headers.get("X-RateLimit-Remaining")
        if remaining is None:
            self._headerless = True
            return
        reset = reset_from_headers(headers)
        try:
            if limit is not None:
                self.limit = int(float(limit))
            if remaining is not None:
                value = int(float(remaining))
                newer = reset is not None and (self.reset is None or reset > self.reset)
                # Answers arrive out of order across threads: keep the lowest count of a window.
                if newer or self.remaining is None or value < self.remaining:
                    self.remaining = value
        except ValueError:
            return
        if reset is not None:
            self.reset = reset


class _Work:
    __slots__ = ("estimate", "sent", "open", "token")

    def __init__(self, estimate: int) -> None:
        self.estimate = estimate
        self.sent = 0  # requests started, by any thread
        self.open = 0  # of those, sent and not answered yet
        self.token: contextvars.Token[_Work | None] | None = None


class _Attempt:
    """One request in flight on this thread, and the unit it is charged to."""

    __slots__ = ("work",)

    def __init__(self, work: _Work | None) -> None:
        self.work = work


def sync_client(client: Client, pacer: Pacer, wait: bool) -> Client:
    """A copy of ``client`` that bypasses the HTTP cache and sends through ``pacer``.

    >>> import mdframes as md
    >>> paced = sync_client(md.Client(api_key="k", base_url="http://127.0.0.1:1"), Pacer(5, False), False)
    >>> paced.cache_path is None and paced.before_send is not None
    True
    """
    return client.replace(
        cache=False,  # a sync always asks the service
        progress=False,
        # wait=False: the client's own gate raises at once instead of sleeping to the reset.
        max_wait=SYNC_MAX_WAIT if wait else 0.0,
        before_send=pacer.before_send,
        after_send=pacer.after_response,
    )
