"""A panel's inputs read from its source, one dataset after the other as the panel computes
them: over the panel's dates plus the longest lookback of its features, clipped to where the
dataset has history; the latest values before the windows sought in a few days where a lake
can (:func:`fetch`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import numpy as np
import pandas as pd

from ...errors import KnowledgeTimeWarning, held_warnings, raise_held, warn
from ...registry import REGISTRY
from .reach import Reach
from .sources import ROW, Read, Source

__all__ = ["fetch", "SEEK_DAYS"]

# How far before a panel's windows a seek for the latest values reads first: a daily
# dataset's latest value before the windows is a day or a few old (a long weekend, a
# holiday); a symbol without one in these days is read again over its older history (that
# symbol only). Every day more is read for each symbol: 30 days were a sixth of a
# 3-month panel's sentiment rows.
SEEK_DAYS: Final = 10


def fetch(
    lookbacks: Mapping[str, int | None | Reach],
    symbols: list[str],
    start: dt.date,
    end: dt.date,
    *,
    source: Source,
    known_at: Any = None,
    errors: str = "raise",
    coverage: Any = None,
    order: Sequence[str] | None = None,
) -> Iterator[tuple[str, pd.DataFrame, dict[str, str]]]:
    """Each dataset of ``lookbacks`` (dataset -> longest lookback in days, or ``None`` for
    all history; or a :class:`~.reach.Reach`) read from ``source``, one after the other as
    the caller takes them (it computes one while the next is read; in ``order``, default
    ``lookbacks``'): its name, frame and the symbols that failed (symbol -> error text; only
    the service fails per symbol here). Symbols that ``coverage`` says the source never
    holds are not read."""
    unknown_then: list[str] = []
    for name in lookbacks if order is None else order:
        reach = lookbacks[name]
        # A Reach's features without a window need, of the rows before the windows, each
        # symbol's latest value (the engine keeps only those): a lake is read a few weeks
        # before the windows, and older history only for the symbols without one there
        # (_seek; a lake's time-sliced files then decode only the row groups of those
        # dates). Elsewhere: all history.
        lookback = reach.lookback if isinstance(reach, Reach) else reach
        first = REGISTRY[name].load_start(start, lookback)
        public_from = REGISTRY[name].public_start(start, lookback)
        mine = symbols if coverage is None else coverage.readable(name, symbols)
        # Held through the context, not warnings.catch_warnings: this read may run in a
        # worker thread (read while the caller computes), and catch_warnings swaps the
        # process's filters and display, which then took the caller's own warnings.
        with held_warnings() as caught:
            columns = reach.columns if isinstance(reach, Reach) else None
            if (
                isinstance(reach, Reach)
                and reach.latest
                and not reach.whole
                and source.seeks
                and known_at != ROW
                and REGISTRY[name].seekable
            ):
                frame, failed = _seek(
                    source, name, mine, reach, start, end, known_at, errors, columns
                )
            else:
                frame, failed = source.read(
                    name, mine, first, end, known_at=known_at, errors=errors, columns=columns,
                    public_from=public_from,
                )  # fmt: skip
        # Knowledge-time warnings are said once below, for every dataset at once.
        unknown_then += [name for _, c in caught if issubclass(c, KnowledgeTimeWarning)]
        raise_held([(m, c) for m, c in caught if not issubclass(c, KnowledgeTimeWarning)])
        # The caller's alone to free once computed: no local of this generator keeps it while
        # the caller computes (a box emptied as the tuple is made).
        box = [frame]
        del frame
        yield name, box.pop(), failed
    if unknown_then:
        warn(
            f"known_at={known_at} is earlier than every stored version of "
            f"{', '.join(n for n in lookbacks if n in unknown_then)}: their features see no rows "
            "(lake.info() shows when each dataset was first synced)",
            KnowledgeTimeWarning,
        )


def _seek(
    source: Source,
    name: str,
    symbols: list[str],
    reach: Reach,
    start: dt.date,
    end: dt.date,
    known_at: Any,
    errors: str,
    columns: Sequence[str] | None,
) -> Read:
    """The rows of ``name`` a panel from ``start`` needs for ``reach``: from ``SEEK_DAYS``
    before its windows, and, for the symbols without a row carrying each ``reach.latest``
    feature's value in those days, their older history too. The engine keeps the same rows
    of it as of the whole history (:class:`~.engine.Events`: the windows' rows, and each
    symbol's latest value before them, which a row read here always is: every older row
    became public before the days read, :attr:`~mdframes.registry.Dataset.seekable`)."""
    from ...pit import public_times
    from .engine import counted_rows, day_numbers, symbol_codes, utc_naive

    near = REGISTRY[name].load_start(start, reach.days + SEEK_DAYS)
    frame, failed = source.read(
        name, symbols, near, end, known_at=known_at, errors=errors, columns=columns
    )
    oldest = REGISTRY[name].first_date
    if near is None or (oldest is not None and near <= oldest) or not len(symbols):
        return frame, failed  # the read held the whole history
    shaped = frame.reset_index(drop=True)
    shaped.attrs = {**frame.attrs, "dataset": name}
    times = utc_naive(public_times(shaped))
    cut = (start - dt.date(1970, 1, 1)).days - reach.days  # as compute's Events cut_day
    # The symbols of the rows before the windows only (the days sought) are coded, not
    # those of the windows' rows too (most of the read).
    before = np.flatnonzero(~np.isnat(times) & (day_numbers(times) < cut))
    codes = symbol_codes(shaped["symbol"], symbols, before)
    found = np.ones(len(symbols), dtype=bool)
    for feature in reach.latest:
        has = np.zeros(len(symbols) + 1, dtype=bool)  # the last place: other symbols (-1)
        has[codes[counted_rows(shaped, name, feature)[before]]] = True
        found &= has[:-1]
    older = [s for s, ok in zip(symbols, found, strict=True) if not ok]
    if not older:
        return frame, failed
    earlier, more = source.read(
        name, older, oldest, near - dt.timedelta(days=1), known_at=known_at, errors=errors,
        columns=columns,
    )  # fmt: skip
    both = pd.concat([earlier, frame], ignore_index=True) if len(earlier) else frame
    both.attrs = frame.attrs
    return both, {**more, **failed}
