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
    >>> report = lake.sync("insider_trading", ["AAPL", "MSFT"], budget=100)
    >>> report.pending, report.requests_left_estimate
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

    def _repr_html_(self) -> str:
        """A notebook's view: the key figures, then one row per dataset (done, pending,
        failed with the error texts)."""
        from ... import _html

        status = "failed" if self.failed else ("pending" if self.pending else "done")
        pairs: list[tuple[str, object]] = [
            ("requests", self.requests),
            ("new records", self.rows_added),
            ("new versions", self.versions_added),
        ]
        if self.pending:
            pairs.append(("requests left (at least)", self.requests_left_estimate))
        if self.stopped:
            pairs.append(("stopped", self.stopped))
        if self.resumed:
            pairs.append(("units resumed", self.resumed))
        if self.throttled:
            pairs.append(("429 answers", self.throttled))
        names = list(dict.fromkeys([*self.done, *self.pending, *self.failed]))
        rows = []
        for name in names:
            failed = self.failed.get(name, {})
            errors = "; ".join(f"{s or name}: {text}" for s, text in list(failed.items())[:5])
            if len(failed) > 5:
                errors += f" (+{len(failed) - 5} more)"
            rows.append(
                [
                    _html.cell(_html.text(name)),
                    _html.cell(_units(self.done, name), _html.COLOURS["done"]),
                    _html.cell(_units(self.pending, name), _html.COLOURS["pending"]),
                    _html.cell(f"{len(failed):,}" if failed else "–", _html.COLOURS["failed"]),
                    _html.cell(_html.text(errors) if errors else ""),
                ]
            )
        per_dataset = _html.table(["dataset", "done", "pending", "failed", "errors"], rows)
        return _html.box(
            f"SyncReport {self.sync_id}".strip(), _html.figures(pairs), per_dataset, status=status
        )


def _units(units: dict[str, list[str]], name: str) -> str:
    """Symbols of one dataset (a cross-section, ``[]``, is one unit); "–" when absent."""
    return f"{max(len(units[name]), 1):,}" if name in units else "–"
