"""What a sync did and what is left: :class:`SyncReport`."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SyncReport"]


@dataclass
class SyncReport:
    """The outcome of :meth:`mdframes.Lake.sync`.

    Attributes
    ----------
    requests : int
        Requests sent by this run (retries included).
    rows_added : int
        New records stored.
    versions_added : int
        New versions of records the lake already held.
    done, pending : dict
        Dataset -> symbols finished / left for the next run. Cross-section snapshots
        (screeners, recent, discovery) use ``[]``: the key's presence says it.
    failed : dict
        Dataset -> {symbol: error text}; retried by the next sync that includes them.
    requests_left_estimate : int
        The fewest requests the pending work needs.
    plan : str
        The plan printed before work started.
    sync_id : str
        The ``_sync_id`` of the rows this run stored.
    throttled : int
        429 answers received.
    stopped : str or None
        Why the run stopped early (budget, rate limit), if it did.
    resumed : int
        Units skipped because an earlier, unfinished run of the same request (datasets,
        symbols or filter, start, end) had finished them: that run was resumed.

    Examples
    --------
    >>> report = lake.sync("insider_trading", ["AAPL", "MSFT"], budget=100)  # doctest: +SKIP
    >>> report.pending, report.requests_left_estimate                       # doctest: +SKIP
    ({}, 0)
    """

    requests: int = 0
    rows_added: int = 0
    versions_added: int = 0
    done: dict[str, list[str]] = field(default_factory=dict)
    pending: dict[str, list[str]] = field(default_factory=dict)
    failed: dict[str, dict[str, str]] = field(default_factory=dict)
    requests_left_estimate: int = 0
    plan: str = ""
    sync_id: str = ""
    throttled: int = 0
    stopped: str | None = None
    resumed: int = 0

    @property
    def complete(self) -> bool:
        """Nothing pending and nothing failed."""
        return not self.pending and not self.failed

    def exit_code(self) -> int:
        """The CLI's exit code: 1 failures, 3 work pending, 0 all done."""
        if self.failed:
            return 1
        return 3 if self.pending else 0

    def __str__(self) -> str:
        lines = [
            f"sync {self.sync_id}: {self.requests} requests, {self.rows_added} new records, "
            f"{self.versions_added} new versions"
        ]
        done = sum(max(len(v), 1) for v in self.done.values())
        lines.append(f"  done: {done} units in {len(self.done)} datasets")
        if self.resumed:
            lines.append(
                f"  resumed: {self.resumed} units already done by this request's unfinished "
                "run were skipped"
            )
        if self.pending:
            why = f" ({self.stopped})" if self.stopped else ""
            pending = ", ".join(f"{k} {len(v) or 1}" for k, v in self.pending.items())
            lines.append(
                f"  pending{why}: {pending}; at least {self.requests_left_estimate} requests "
                "left: run the same sync again to finish"
            )
        for name, symbols in self.failed.items():
            shown = "; ".join(f"{s or name}: {text}" for s, text in list(symbols.items())[:10])
            more = f" (+{len(symbols) - 10} more)" if len(symbols) > 10 else ""
            lines.append(f"  failed {name}: {shown}{more} (retried next sync)")
        if self.throttled:
            lines.append(f"  429 answers: {self.throttled}")
        return "\n".join(lines)
