"""The clamp: the one place every agent tool reads the lake through (CONTRACT §15).

:class:`Clock` says what time the agent lives at (a fixed time, a clock file that may only
move forward, or now). :class:`ClampedLake` is the lake as it stood at that time: every read
keeps only versions fetched at or before it (the lake's own ``known_at``) **and** records
public by then (:func:`public_by`, the dataset's anchor through :func:`mdframes.point_in_time`).
It has the ``read``/``coverage`` of ``md.Lake``, so a feature panel takes it as its source
and computes from nothing else.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InvalidParameterError, MdframesError
from ..params import to_utc
from ..registry import REGISTRY

__all__ = ["Clock", "ClampedLake", "ClockError", "public_by", "parse_clamp"]


class ClockError(MdframesError):
    """The clock file cannot be read, or it moved the clamp back (an error for that call)."""


def parse_clamp(value: Any, name: str = "as_of") -> pd.Timestamp:
    """A clamp as an aware UTC instant; a date alone is the end of that day (as ``known_at``).

    >>> parse_clamp("2026-06-30")
    Timestamp('2026-06-30 23:59:59.999999+0000', tz='UTC')
    """
    return to_utc(value.strip() if isinstance(value, str) else value, name)


def _now() -> pd.Timestamp:
    return pd.Timestamp(dt.datetime.now(dt.timezone.utc))


class Clock:
    """The time an agent lives at: ``as_of`` (fixed), ``clock_file`` (re-read at each call,
    forward only) or, with neither, the current UTC time.

    Parameters
    ----------
    as_of : str, date, datetime or Timestamp, optional
    clock_file : str or Path, optional
        A text file holding one time (``2026-06-30`` or ``2026-06-30T15:30``, UTC).
    now : callable, optional
        The current time, for the default clamp (tests).
    """

    def __init__(
        self,
        as_of: Any = None,
        clock_file: str | os.PathLike[str] | None = None,
        *,
        now: Callable[[], pd.Timestamp] = _now,
    ) -> None:
        if as_of is not None and clock_file is not None:
            raise InvalidParameterError(
                "give --as-of or --clock-file, not both", parameter="clock_file"
            )
        self._fixed = None if as_of is None else parse_clamp(as_of)
        self._file = None if clock_file is None else Path(clock_file)
        self._now = now
        self._last: pd.Timestamp | None = None
        if self._file is not None:
            self._last = self._read_file()  # an unreadable file fails at start, not later

    @property
    def kind(self) -> str:
        """``"as_of"``, ``"clock_file"`` or ``"now"``."""
        return "as_of" if self._fixed is not None else "clock_file" if self._file else "now"

    def _read_file(self) -> pd.Timestamp:
        assert self._file is not None
        try:
            text = _read_regular(self._file).strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ClockError(f"cannot read the clock file {self._file}: {exc}") from None
        try:
            # Only an ISO time: pandas reads "now" and "today" too, a clamp at the wall clock.
            if not _ISO_TIME.fullmatch(text):
                raise InvalidParameterError("not ISO 8601")
            return parse_clamp(text, "clock file")
        except InvalidParameterError:
            raise ClockError(
                f"the clock file {self._file} holds {text[:40]!r}, not a time "
                "('YYYY-MM-DD' for the end of that day or 'YYYY-MM-DDTHH:MM' in UTC)"
            ) from None

    def current(self) -> pd.Timestamp:
        """The clamp now: re-read from the clock file, which may only move it forward."""
        if self._fixed is not None:
            return self._fixed
        if self._file is None:
            return self._now()
        at = self._read_file()
        if self._last is not None and at < self._last:
            raise ClockError(
                f"the clock file moved the clamp back, from {iso(self._last)} to {iso(at)}; "
                "the clamp only moves forward (the agent has already seen the later time)"
            )
        self._last = at
        return at


_ISO_TIME = re.compile(r"\d{4}-\d\d-\d\d(?:[T ][\d:.]+(?:Z|[+-]\d\d:?\d\d)?)?")


def _read_regular(path: Path, most: int = 256) -> str:
    """The start of a regular file's text. Opened without blocking and checked on the open
    descriptor: a FIFO put in its place would block the server's loop until a writer came."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        return os.read(fd, most).decode("utf-8")
    finally:
        os.close(fd)


def iso(stamp: pd.Timestamp) -> str:
    """An instant as text, UTC, to the microsecond when it has one."""
    return stamp.tz_convert("UTC").isoformat().replace("+00:00", "Z")


def public_by(frame: pd.DataFrame, dataset: str, at: pd.Timestamp) -> pd.DataFrame:
    """The rows of ``frame`` (of ``dataset``) public at ``at``: the dataset's anchor on or
    before it, null anchors at their legal deadline or never (:func:`mdframes.point_in_time`).
    A dataset without an anchor (forecasts, the ticker list) is public when fetched."""
    from ..pit import point_in_time

    anchor = REGISTRY[dataset].anchor
    if anchor is None or frame.empty:
        return frame
    if anchor in frame.columns.tolist():
        times = _utc_times(frame[anchor])
        if times is not None and not np.isnat(times).any() and times.max() <= _naive(at):
            return frame  # every row public already: point_in_time would keep them all
    frame.attrs["dataset"] = dataset
    kept = point_in_time(frame, at)
    kept.attrs.pop("imputed_anchors", None)
    return kept.reset_index(drop=True)


def _min_time(value: Any, at: pd.Timestamp) -> pd.Timestamp:
    return at if value is None else min(to_utc(value, "known_at"), at)


class ClampedLake:
    """``lake`` as it stood at ``at``: what was fetched by then and public by then, nothing
    else. Read-only; it has no client and no way to fetch.

    Parameters
    ----------
    lake : md.Lake
    at : Timestamp
        The clamp (aware UTC).
    """

    def __init__(self, lake: Any, at: pd.Timestamp) -> None:
        self._lake = lake
        self.at = at

    @property
    def root(self) -> str:
        from ..lake.store.location import redact_root

        return redact_root(str(self._lake.root))

    def read(
        self,
        dataset: str,
        symbols: Any = None,
        *,
        start: Any = None,
        end: Any = None,
        known_at: Any = None,
        columns: list[str] | None = None,
        history: bool = False,
        market: str | None = None,
        region: str | None = None,
    ) -> pd.DataFrame:
        """``md.Lake.read`` with ``known_at`` at most the clamp and only public rows; a
        dataset the lake first synced after the clamp is one it never synced."""
        from ..lake.read import never_synced
        from ..lake.sync.plan import resolve

        ds = resolve(dataset)
        if ds.base not in self.held():
            raise never_synced(ds.name)
        extra = _anchor_columns(ds.name, columns)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            frame = self._lake.read(
                ds.name,
                symbols,
                start=start,
                end=end,
                known_at=_min_time(known_at, self.at),
                columns=None if columns is None else [*columns, *extra],
                history=history,
                market=market,
                region=region,
            )
        if not _public_by_bound(ds.name, end, self.at):
            frame = public_by(frame, ds.name, self.at)
        if extra:
            frame = frame.drop(columns=extra)
        _assert_known(frame, self.at)
        return frame

    def present(self) -> list[tuple[Any, list[str], str | None]]:
        """The datasets the lake had synced by the clamp, each with its columns and time
        column."""
        held = self.held()
        out = []
        for table in self._lake.tables.present():
            manifest = table.manifest
            if manifest is not None and table.ds.name in held:
                out.append((table.ds, manifest.names(), manifest.time))
        return out

    def held(self) -> set[str]:
        """The datasets the lake had fetched something of by the clamp: the others do not
        exist for an agent (CONTRACT §15.1)."""
        cov = self._lake.coverage(known_at=self.at)
        return set(cov.loc[cov["first_fetched_at"].notna(), "dataset"].astype(str))

    def coverage(
        self, datasets: Any = None, symbols: Any = None, *, known_at: Any = None
    ) -> pd.DataFrame:
        """``md.Lake.coverage`` as it stood at the clamp, or at ``known_at`` when earlier,
        its windows cut at that date: no later day holds a record public by then."""
        at = _min_time(known_at, self.at)
        table = self._lake.coverage(datasets=datasets, symbols=symbols, known_at=at)
        day = pd.Timestamp(at.date())
        late = (table["last"] > day).to_numpy()
        if late.any():
            table.loc[late, "last"] = day
            table["gaps"] = pd.Series(
                [[g for g in gaps if g[0] <= day] for gaps in table["gaps"]],
                index=table.index,
                dtype=object,
            )
        return table


def _public_by_bound(dataset: str, end: Any, at: pd.Timestamp) -> bool:
    """Whether a read of ``dataset`` up to ``end`` holds only rows public at ``at`` by that
    bound alone: the anchor is the dataset's time column, a date (public from its first
    instant), and ``end`` a date on or before the clamp's. (The read drops null dates too.)
    The tools' reads of such a dataset all end there: :func:`public_by` has nothing to do."""
    ds = REGISTRY[dataset]
    if ds.anchor is None or ds.anchor != ds.time_column:
        return False
    if not isinstance(end, dt.date) or isinstance(end, dt.datetime):
        return False
    kinds = {f.name: f.kind for f in ds.all_fields}
    return kinds.get(ds.anchor) == "date" and end <= at.date()


def _anchor_columns(dataset: str, columns: Iterable[str] | None) -> list[str]:
    """Columns a read needs beyond ``columns`` to tell when its rows became public."""
    if columns is None:
        return []
    ds = REGISTRY[dataset]
    wanted = [ds.anchor, ds.deadline.event if ds.deadline else None]
    return [c for c in dict.fromkeys(wanted) if c and c not in columns]


def _assert_known(frame: pd.DataFrame, at: pd.Timestamp) -> None:
    """The clamp's invariant, checked on every answer: nothing fetched after ``at``."""
    if len(frame) and "_fetched_at" in frame.columns.tolist():
        fetched = _utc_times(frame["_fetched_at"])
        if fetched is None or (fetched > _naive(at)).any():
            raise MdframesError(f"internal error: a row fetched after the clamp {iso(at)}")


def _utc_times(values: pd.Series) -> np.ndarray | None:
    """A time column as NumPy times, naive UTC (aware ones converted), None if not times.
    NumPy's reductions on the array cost a fraction of pandas' on the Series."""
    dtype = values.dtype
    if isinstance(dtype, pd.DatetimeTZDtype):
        return values.to_numpy(dtype=f"datetime64[{dtype.unit}]")
    if isinstance(dtype, np.dtype) and dtype.kind == "M":
        return values.to_numpy()
    return None


def _naive(at: pd.Timestamp) -> np.datetime64:
    return np.datetime64(at.value, "ns")  # .value: nanoseconds since the epoch, UTC
