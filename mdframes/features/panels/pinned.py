"""The lake as the panels use it: a lake pinned at a training set's table versions
(:class:`LakeAt`, Delta time travel); a lake sent to a worker process as what opens it again
there (:func:`lake_spec`, :func:`open_lake`); and what the panels ask of a lake beyond its
``read`` and ``coverage``, through ``md.Lake``'s public ``lake.panels`` role (a pinned lake
answers it too): rows public from a date, its kept coverage frame, its stored rows. Any other
lake-like object is a stand-in, wrapped once (:class:`StandIn`) and read by the plain contract."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, Final

import pandas as pd

from ...registry import REGISTRY

__all__ = [
    "LakeAt",
    "StandIn",
    "kept_coverage",
    "lake_spec",
    "open_lake",
    "panels_of",
    "pin_lake",
    "read_coverage",
    "table_versions",
]

_PIN_TRIES: Final = 20  # syncs committing between a version and coverage read: read again


def read_published(lake: Any, dataset: str, symbols: Any = None, *, since: dt.date,
                   until: Any = None, **options: Any) -> pd.DataFrame:  # fmt: skip
    """The rows of ``dataset`` public from ``since`` (public until ``until``), through the
    lake's ``panels`` role (``md.Lake``'s or a pinned one's)."""
    from ...lake.sync.plan import read_request

    request = read_request(dataset, symbols, public_from=since, public_until=until, **options)
    return panels_of(lake).read_published(request)


def panels_of(lake: Any) -> Any:
    """What panels ask of a lake beyond ``read`` and ``coverage``: ``md.Lake``'s public
    ``lake.panels`` role, or a pinned lake's; ``None`` for a stand-in (read by the plain
    contract, :class:`StandIn`)."""
    from ...lake import Lake

    return lake.panels if isinstance(lake, (Lake, LakeAt)) else None


def kept_coverage(lake: Any, datasets: list[str], symbols: list[str]) -> pd.DataFrame | None:
    """:func:`read_coverage`, read only: the frame the lake keeps for the question where it
    keeps one (no copy; the caller must not change it)."""
    panels = panels_of(lake)
    if panels is None:
        return read_coverage(lake, datasets, symbols)
    return panels.kept_coverage(list(datasets), list(symbols))


def read_coverage(
    lake: Any, datasets: list[str], symbols: list[str], known_at: Any = None
) -> pd.DataFrame | None:
    """``lake.coverage(datasets, symbols)``, and as it stood at ``known_at`` when that is a
    time (``md.Lake.coverage``'s ``known_at``; a stand-in's coverage takes it too); ``None``
    for a lake-like object without it (a stand-in then holds whatever it is asked)."""
    method = getattr(lake, "coverage", None)
    if not callable(method):
        return None
    if isinstance(known_at, pd.Timestamp):
        return method(datasets=list(datasets), symbols=list(symbols), known_at=known_at)
    return method(datasets=list(datasets), symbols=list(symbols))


class StandIn:
    """A lake-like object that is not ``md.Lake``, wrapped once: read by the plain contract
    (:class:`mdframes._typing.LakeLike`: no ``columns=``, no ``panels`` role), whatever
    else its ``read`` may take."""

    def __init__(self, lake: Any) -> None:
        self.lake = lake

    def read(self, dataset: str, symbols: Any = None, *, start: Any = None, end: Any = None,
             known_at: Any = None, history: bool = False) -> pd.DataFrame:  # fmt: skip
        return self.lake.read(
            dataset, symbols, start=start, end=end, known_at=known_at, history=history
        )


def reads_published(lake: Any) -> bool:
    """Whether ``lake`` reads the rows public from a date (``md.Lake``, pinned or not; a
    stand-in reads by its time column)."""
    from ...lake import Lake

    return isinstance(lake.lake if isinstance(lake, LakeAt) else lake, Lake)


class LakeAt:
    """``lake`` read at the table ``versions`` (dataset -> version) a set recorded; datasets
    without a recorded version read the latest. Answers ``read``, ``coverage``, ``version``
    and ``changes`` as the lake does.

    ``coverage``: the frame ``lake.coverage()`` gave when the versions were pinned (asked
    again, it answers from it); else ``lake.coverage()`` as known at ``at`` (the time the
    versions were pinned, a UTC Timestamp), or now without it."""

    def __init__(
        self,
        lake: Any,
        versions: Mapping[str, int | None],
        *,
        coverage: pd.DataFrame | None = None,
        at: pd.Timestamp | None = None,
        asked: tuple[list[str], list[str]] | None = None,
    ) -> None:
        self.lake = lake
        self.versions = {k: v for k, v in versions.items() if v is not None}
        self.root = getattr(lake, "root", None)
        self.pinned_coverage = coverage
        self.at = at
        # The datasets and symbols ``coverage`` was read for, and each question's frame,
        # read only (kept_coverage).
        self._pinned_question = asked
        self._asked: dict[tuple[Any, ...], pd.DataFrame] = {}

    def __repr__(self) -> str:
        return f"<LakeAt {self.lake!r} versions={self.versions}>"

    def __reduce__(self) -> Any:
        # A worker opens the lake itself from its root (never its client: no key travels).
        return (_reopened_at, (lake_spec(self.lake), self.versions, self.pinned_coverage, self.at))

    def read(self, dataset: str, symbols: Any = None, **options: Any) -> pd.DataFrame:
        name = REGISTRY[dataset.replace("-", "_")].base if dataset else dataset
        version = self.versions.get(name)
        if version is not None:
            options.setdefault("version", version)
        return self.lake.read(dataset, symbols, **options)

    @property
    def panels(self) -> LakeAt:
        """Its own answers to what panels ask (``md.Lake``'s ``lake.panels``), pinned."""
        return self

    def read_published(self, request: Any) -> pd.DataFrame:
        version = self.versions.get(request.dataset.base)
        if version is not None and request.version is None:
            request = replace(request, version=version)
        return self.lake.panels.read_published(request)

    def stored_rows(self, dataset: str) -> int | None:
        panels = panels_of(self.lake)
        return None if panels is None else panels.stored_rows(dataset)

    def coverage(self, datasets: Any = None, symbols: Any = None) -> pd.DataFrame:
        kept = self.pinned_coverage
        if kept is not None:
            names = None if datasets is None else {REGISTRY[str(d)].base for d in datasets}
            if names is None or names <= set(kept["dataset"].astype(object)):
                rows = kept if names is None else kept[kept["dataset"].isin(sorted(names))]
                table = rows.reset_index(drop=True)
                table.attrs = dict(kept.attrs)
                return table
        if self.at is not None:
            return self.lake.coverage(datasets, symbols, known_at=self.at)
        return self.lake.coverage(datasets, symbols)

    def coverage_then(self, datasets: list[str], symbols: list[str], known_at: Any) -> Any:
        """The lake's (``md.Lake.panels.coverage_then``), no later than the pin."""
        return self.lake.panels.coverage_then(datasets, symbols, known_at, pin=self.at)

    def kept_coverage(self, datasets: list[str], symbols: list[str]) -> pd.DataFrame:
        """:meth:`coverage`, read only: the same frame for the same question (a panel's
        Coverage is made once from it, :func:`~.unseen.lake_coverage`); the pinned frame
        itself where the question asks all its datasets (pinned from an unchanged lake, the
        lake's own kept frame: a set's panel shares its Coverage with the panels before)."""
        key = (frozenset(datasets), tuple(symbols))
        frame = self._asked.get(key)
        if frame is None:
            kept, pinned = self.pinned_coverage, self._pinned_question
            if kept is not None and key[0] == set(kept["dataset"].astype(object)):
                frame = kept  # coverage() ignores the symbols too: rows of others are unused
            elif (
                kept is not None
                and pinned is not None
                and kept_coverage(self.lake, *pinned) is kept
            ):
                # The lake's state is as pinned (it keeps the very frame): its own answer,
                # kept for the next set's question too; unless a sync came meanwhile (asked
                # again after the answer: a state that changed stays changed).
                frame = kept_coverage(self.lake, datasets, symbols)
                if kept_coverage(self.lake, *pinned) is not kept:
                    frame = None
            if frame is None:
                frame = self.coverage(datasets, symbols)
            self._asked[key] = frame
        return frame

    def version(self, dataset: str) -> int | None:
        recorded = self.versions.get(dataset)
        return int(recorded) if recorded is not None else self.lake.version(dataset)


def _reopened_at(spec: Any, versions: Any, coverage: Any, at: Any) -> LakeAt:
    return LakeAt(open_lake(spec), versions, coverage=coverage, at=at)


def pin_lake(lake: Any, datasets: Iterable[str], symbols: list[str]) -> LakeAt:
    """``lake`` at its current table versions of ``datasets``, with its coverage of
    ``symbols`` read at those versions, and the time they were pinned (``.at``)."""
    names = sorted({REGISTRY[d].base for d in datasets})
    for _ in range(_PIN_TRIES):
        versions = table_versions(lake, names)
        table = kept_coverage(lake, names, symbols)
        # The state is written after its commit: with the versions unchanged after the
        # coverage was read, it holds nothing of a later version.
        if table_versions(lake, names) == versions:
            break
    # When: the latest fetch the coverage knows (a rebuild judges the coverage as known
    # then, on the lake's own clock), else now.
    fetched = None if table is None else table["last_fetched_at"].max()
    at = pd.Timestamp(fetched) if fetched is not None and pd.notna(fetched) else None
    if at is None:
        at = pd.Timestamp.now(tz="UTC")
    return LakeAt(lake, versions, coverage=table, at=at, asked=(names, list(symbols)))


def table_versions(lake: Any, datasets: Iterable[str]) -> dict[str, int | None]:
    """Each dataset's current table version (``lake.version``); ``None`` for a lake-like
    object that does not say."""
    version = getattr(lake, "version", None)
    return {name: version(name) if callable(version) else None for name in datasets}


def lake_spec(lake: Any) -> Any:
    """What a worker needs to open ``lake`` itself: an ``md.Lake`` as its root and storage
    options (never its client, so no API key travels); another lake-like object as it is."""
    from ...lake import Lake

    if isinstance(lake, Lake):
        options = getattr(lake, "storage_options", None)
        return ("md.Lake", lake.root, dict(options) if options else None)
    return lake


_OPENED: dict[str, Any] = {}  # per worker process: lakes opened by earlier chunks


def open_lake(spec: Any) -> Any:
    """The lake of :func:`lake_spec` (in a worker), opened once per process: a worker's
    later chunks reuse its opened tables and data files (each read still sees the latest
    version) instead of opening the log and every file footer again."""
    if isinstance(spec, tuple) and len(spec) == 3 and spec[0] == "md.Lake":
        from ...lake import Lake

        _, root, options = spec
        key = json.dumps([str(root), options], sort_keys=True, default=str)
        lake = _OPENED.get(key)
        if lake is None:
            lake = Lake(root, storage_options=options) if options else Lake(root)
            _OPENED.clear()  # one lake per worker at a time is the case that matters
            _OPENED[key] = lake
        return lake
    return spec
