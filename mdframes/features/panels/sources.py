"""Where a panel's inputs come from: the service (through the loaders), frames the caller
already has, or a lake (anything with the ``Lake.read`` signature), resolved once into a
:class:`Source` at the panel's entry (:func:`resolve_source`). With ``known_at="row"`` a lake
gives every stored version (``history=True``), and the engine decides per row which version it
saw. The reads themselves, one dataset after the other: :mod:`.fetch`; a lake pinned at a
set's versions: :mod:`.pinned`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple, cast

import numpy as np
import pandas as pd

from ..._typing import Errors, LakeLike
from ...appratings import daily_from_apps
from ...errors import (
    AuthenticationError,
    ConfigurationError,
    InvalidParameterError,
    MdframesError,
    RateLimitError,
    SkippedSymbolsWarning,
    held_warnings,
    raise_held,
)
from ...registry import REGISTRY
from .pinned import (
    LakeAt,
    StandIn,
    lake_spec,
    open_lake,
    panels_of,
    pin_lake,
    read_published,
    reads_published,
    table_versions,
)

__all__ = [
    "LakeLike",
    "Source",
    "ServiceSource",
    "FramesSource",
    "LakeSource",
    "resolve_source",
    "ROW",
]

ROW: Final = "row"
Read = tuple[pd.DataFrame, dict[str, str]]  # a dataset's frame and its failed symbols
_DAY: Final = dt.timedelta(days=1)


class Ask(NamedTuple):
    """What a source's read of one dataset is asked besides its symbols (:meth:`Source.read`:
    from ``start``, ``None``: all history)."""

    start: dt.date | None
    end: dt.date
    known_at: Any
    errors: str
    columns: Sequence[str] | None
    public_from: dt.date | None


def _skip_note(message: str, category: type[Warning]) -> bool:
    """A loader's note of the symbols it skipped (the panel gives one for all datasets)."""
    return (
        issubclass(category, SkippedSymbolsWarning)
        or "symbol(s) failed and were skipped" in message
    )


def _empty(dataset: str) -> pd.DataFrame:
    """The loader's columns and dtypes, no rows: a window wholly before the history."""
    from ...frame import build_frame
    from ...records import Records

    frame = build_frame(REGISTRY[dataset], [Records({}, [])])
    frame.attrs["dataset"] = dataset
    return frame


def daily_versions(apps: pd.DataFrame) -> pd.DataFrame:
    """Every version of the daily view from every stored version of the apps view: a daily
    row as it stood each time one of its apps was fetched (``_fetched_at``)."""
    from .knowledge import next_fetched

    frame = apps.reset_index(drop=True)
    superseded = next_fetched(frame, list(REGISTRY["app_ratings"].record_id))
    stamps = ["_fetched_at", *(["_sync_id"] if "_sync_id" in frame.columns else [])]
    epochs = frame[["symbol", "date", *stamps]].drop_duplicates(["symbol", "date", "_fetched_at"])
    epochs = epochs.rename(columns={c: f"_mdf{c}" for c in stamps})
    both = epochs.merge(frame.drop(columns=stamps[1:]).assign(_mdf_until=superseded),
                        on=["symbol", "date"])  # fmt: skip
    known = (both["_fetched_at"] <= both["_mdf_fetched_at"]) & (
        both["_mdf_until"].isna() | (both["_mdf_until"] > both["_mdf_fetched_at"])
    )
    by = tuple(f"_mdf{c}" for c in stamps)
    out = daily_from_apps(both[known.to_numpy()], by=by)
    out = out.rename(columns={f"_mdf{c}": c for c in stamps})
    out.attrs = {**apps.attrs, "dataset": "app_ratings_daily"}
    return out


# --- reading one dataset --------------------------------------------------------------------------


def _check_frame(name: str, frame: Any, origin: str) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise InvalidParameterError(
            f"{origin} gave {type(frame).__name__} for {name!r}, not a DataFrame",
            parameter="source",
        )
    named = frame.attrs.get("dataset")
    if named in REGISTRY and named != name:
        raise InvalidParameterError(
            f"{origin}: the frame given as {name!r} holds {named!r} (df.attrs['dataset'])",
            parameter="source",
        )
    if "symbol" not in frame.columns:
        raise InvalidParameterError(
            f"{origin}: the {name!r} frame has no 'symbol' column", parameter="source"
        )
    return frame


def _from_mapping(frames: Mapping[str, Any], name: str) -> pd.DataFrame:
    given = {str(k).replace("-", "_"): v for k, v in frames.items()}
    if name in given:
        return _check_frame(name, given[name], "source")
    base = REGISTRY[name].base
    if base != name and base in given:
        return daily_from_apps(_check_frame(base, given[base], "source"))
    wanted = f"{name!r}" + (f" (or {base!r})" if base != name else "")
    raise InvalidParameterError(
        f"source has no {wanted} frame; it holds {sorted(given) or 'nothing'}",
        parameter="source",
    )


# Errors about the account or the service as a whole: no symbol is to blame.
_NOT_A_SYMBOL = (InvalidParameterError, ConfigurationError, AuthenticationError, RateLimitError)


def _blame(exc: MdframesError, symbols: list[str]) -> str | None:
    text = f"{getattr(exc, 'url', '') or ''} {exc}"
    return next((s for s in symbols if f"/{s}" in text or f"'{s}'" in text), None)


def _nothing(name: str, known_at: Any) -> pd.DataFrame:
    """No rows of ``name`` (a window wholly before its history, or no symbol to read), with
    the fetch time a ``known_at="row"`` panel reads."""
    frame = _empty(name)
    if known_at == ROW:
        frame["_fetched_at"] = pd.Series(dtype="datetime64[us, UTC]")
    return frame


# --- the sources ----------------------------------------------------------------------------------


class Source:
    """Where a panel's inputs come from, decided once at the panel's entry
    (:func:`resolve_source`): the service, frames the caller has, or a lake.

    Each kind answers what a chunk of symbols reads (:meth:`read`), what a worker computing
    one chunk is sent (:meth:`part`), what the source holds of each dataset and symbol
    (:meth:`coverage`), its tables' versions (:meth:`versions`) and a label's prices
    (:meth:`prices`); ``panel``, ``write_panel``, executors, ``training_set`` and the CLI take
    it as it is.
    """

    kind: str = ""
    # Whether reading a dataset costs enough (decoding files, answering requests) that a
    # panel reads the next dataset while it computes the one read before, one dataset at a
    # time (chunk.compute); frames already in memory are computed two at a time instead.
    overlaps: bool = True
    # Whether :func:`fetch` seeks each symbol's latest value before a panel's windows by
    # reading a few days before them (the symbols it does not find there: over their older
    # history), rather than reading the whole history: a lake, where a read of fewer dates
    # costs less; not frames (read whole anyway), nor the service (requests, not reads).
    seeks: bool = False

    def read(
        self,
        name: str,
        symbols: list[str],
        start: dt.date | None,
        end: dt.date,
        *,
        known_at: Any,
        errors: str,
        columns: Sequence[str] | None = None,
        public_from: dt.date | None = None,
    ) -> Read:
        """The frame of ``name`` for ``symbols`` from ``start`` (``None``: all history) to
        ``end``, and the symbols that failed (symbol -> error text). ``columns``: those a
        panel needs (a source that reads columns apart reads only them; ``None``: all).
        ``public_from`` (:func:`public_start`): a source that selects rows by when they
        became public reads those public from then on instead (a lake), else ``start``
        holds them; it may then leave out rows that became public only after ``end`` (they
        never enter a panel ending then)."""
        if start is not None and start > end:  # wholly before the history: nothing to ask
            return _nothing(name, known_at), {}
        return self._read(name, symbols, Ask(start, end, known_at, errors, columns, public_from))

    def _read(self, name: str, symbols: list[str], ask: Ask) -> Read:
        """:meth:`read` of dates that are not wholly before the history."""
        raise NotImplementedError

    def part(self, symbols: list[str]) -> Source:
        """The source a worker computing the chunk of ``symbols`` is sent (picklable)."""
        return self

    def check_executor(self, executor: Any) -> None:
        """Refuse an executor whose workers could not read this source."""

    def coverage(self, datasets: list[str], symbols: list[str], known_at: Any = None) -> Any:
        """What the source holds of ``datasets`` for ``symbols`` as known at ``known_at``
        (:class:`~mdframes.features.panels.unseen.Coverage`); ``None``: whatever is asked."""
        return None

    def weights(self, datasets: list[str]) -> dict[str, int] | None:
        """Each dataset's size (rows stored), where the source knows it without reading:
        the order a panel reads them in (:func:`~.chunk.reading_order`); ``None``: unknown."""
        return None

    def versions(self, datasets: Iterable[str]) -> dict[str, int | None]:
        """Each dataset's table version, where the source has versions."""
        return {}

    def pin(
        self, datasets: Iterable[str], symbols: list[str]
    ) -> tuple[Source, pd.Timestamp | None]:
        """The source fixed at its current versions of ``datasets`` (a lake), and when they
        were pinned; a source without versions as it is."""
        return self, None

    def check_prices(self) -> None:
        """Refuse, before any work, a source where a label's default prices are missing."""

    def prices(
        self, symbols: list[str], first: dt.date, last: dt.date, errors: str
    ) -> pd.DataFrame:
        """The price dataset's rows (:data:`~mdframes.features.training.labels.PRICE_DATASET`) of
        ``symbols`` from ``first`` to ``last``, latest versions."""
        if not symbols:
            return pd.DataFrame({"date": [], "symbol": [], "price": []})
        return self._prices(symbols, first, last, errors)

    def _prices(self, symbols: list[str], first: dt.date, last: dt.date, errors: str) -> Any:
        """:meth:`prices` of at least one symbol."""
        raise NotImplementedError

    def describe(self) -> str:
        """The source in a training set's ``info``: ``"service"``, ``"frames"`` or the
        lake's root (never a credential)."""
        return self.kind


class ServiceSource(Source):
    """The service, through the loaders and ``client`` (``None``: the default client)."""

    kind = "service"

    def __init__(self, client: Any = None) -> None:
        self.client = client

    def _read(self, name: str, symbols: list[str], ask: Ask) -> Read:
        from ...loaders import load

        start, end, errors = ask.start, ask.end, ask.errors
        # The panel says once which symbols it skipped, over all its datasets: the loader's
        # own notes are held and dropped (through the context: warnings.catch_warnings would
        # swap the process's filters under the other threads).
        with held_warnings() as held:
            try:
                frame = load(
                    name,
                    symbols,
                    start=start,
                    end=end,
                    client=self.client,
                    errors=cast(Errors, errors),
                )
            except MdframesError as exc:
                symbol = None if isinstance(exc, _NOT_A_SYMBOL) else _blame(exc, symbols)
                if symbol is not None and exc.args:
                    exc.args = (
                        f"{symbol} ({name}): {exc.args[0]}; pass errors='skip' to keep the "
                        "panel's other symbols (NA for this one)",
                        *exc.args[1:],
                    )
                raise
        raise_held([(m, c) for m, c in held if not _skip_note(m, c)])
        return frame, dict(frame.attrs.get("failed", {}))

    def check_executor(self, executor: Any) -> None:
        raise InvalidParameterError(
            "executor= needs source= a lake or a dict of frames: each worker reads its own "
            "inputs, and an API key is never shipped to workers (sync a lake first)",
            parameter="executor",
        )

    def __reduce__(self) -> Any:
        # A client holds the API key, which never travels to another process.
        raise TypeError("the service source (its client and key) is never sent to a worker")

    def _prices(self, symbols: list[str], first: dt.date, last: dt.date, errors: str) -> Any:
        from ...loaders import load
        from ..training.labels import PRICE_DATASET

        kw: dict[str, Any] = {} if errors == "raise" else {"errors": errors}
        return load(PRICE_DATASET, symbols, start=first, end=last, client=self.client, **kw)


def _rows_of(frame: pd.DataFrame, wanted: set[str]) -> pd.DataFrame:
    keys = frame["symbol"].astype("string").str.strip().str.upper().to_numpy(dtype=object)
    return frame[np.fromiter((k in wanted for k in keys), dtype=bool, count=len(frame))]


class FramesSource(Source):
    """Frames the caller already has: dataset name -> frame (``"app_ratings"``'s apps view
    gives the daily view)."""

    kind = "frames"
    overlaps = False  # nothing to read: the datasets are computed side by side

    def __init__(self, frames: Mapping[str, Any]) -> None:
        self.frames = frames

    def _read(self, name: str, symbols: list[str], ask: Ask) -> Read:
        return _from_mapping(self.frames, name), {}

    def part(self, symbols: list[str]) -> Source:
        # A worker is sent only its symbols' rows, not every frame whole.
        wanted = set(symbols)
        return FramesSource({name: _rows_of(frame, wanted) for name, frame in self.frames.items()})

    def _price_frame(self) -> pd.DataFrame:
        from ..training.labels import PRICE_COLUMNS, PRICE_DATASET

        given = {str(k).replace("-", "_"): v for k, v in self.frames.items()}
        if PRICE_DATASET not in given:
            raise InvalidParameterError(
                f"source has no {PRICE_DATASET!r} frame, where the default label reads its "
                "prices (the closing price); add it or pass forward_return(..., prices=...)",
                parameter="source",
            )
        frame = given[PRICE_DATASET]
        if not isinstance(frame, pd.DataFrame) or not set(PRICE_COLUMNS) <= set(frame.columns):
            raise InvalidParameterError(
                f"source[{PRICE_DATASET!r}] must be a frame with date, symbol and price columns",
                parameter="source",
            )
        return frame

    def check_prices(self) -> None:
        self._price_frame()

    def _prices(self, symbols: list[str], first: dt.date, last: dt.date, errors: str) -> Any:
        return self._price_frame()


class LakeSource(Source):
    """A lake: ``md.Lake`` or any object with its ``read`` (a stand-in answers only what it
    has: no ``coverage`` means everything it is asked, no ``version`` no versions)."""

    kind = "lake"
    seeks = True  # reads a range of dates cheaply: the latest values are sought (fetch)

    def __init__(self, lake: Any) -> None:
        from ...lake import Lake

        if isinstance(lake, Lake):  # a mistyped path is not a lake that synced nothing
            from ...lake.core import require_lake

            require_lake(lake)
        self.lake = lake
        # md.Lake (or a pinned one) reads columns apart; a stand-in is read, once wrapped, by
        # the plain contract whatever its read takes.
        self.panels = panels_of(lake)
        self.columns = self.panels is not None
        self.reader: Any = lake if self.columns else StandIn(lake)
        # md.Lake's (or a pinned one's) read of the rows public from a date (public_start).
        self.published = reads_published(lake)

    def __reduce__(self) -> Any:
        # A worker opens the lake itself from its root (never its client: no key travels).
        return (_reopened, (lake_spec(self.lake),))

    def _read(self, name: str, symbols: list[str], ask: Ask) -> Read:
        start, end, known_at, public_from = ask.start, ask.end, ask.known_at, ask.public_from
        if not symbols:
            return _nothing(name, known_at), {}
        base, columns = REGISTRY[name].base, ask.columns
        # Only the columns the features read, where the lake reads columns apart (a view
        # is made from its base dataset's columns: all of them).
        some = {"columns": list(columns)} if columns and base == name and self.columns else {}
        if isinstance(known_at, str) and known_at == ROW:
            # Every version, with its record's identity besides: the engine tells a
            # record's versions apart by it (knowledge.record_ids).
            if some:
                ids = REGISTRY[base].identity_columns
                some = {"columns": list(dict.fromkeys([*some["columns"], *ids]))}
            frame = self.reader.read(base, symbols, start=start, end=end, history=True, **some)
            frame = _check_frame(base, frame, "the lake")
            if public_from is not None and self.published and base == name and start:
                # Every version from the slack before the windows, as before, and those of
                # records public in the windows whose event is older still (filed late).
                late = read_published(self.lake, base, symbols, since=public_from,
                                      end=start - _DAY, history=True, **some)  # fmt: skip
                if len(late):
                    both = pd.concat([_check_frame(base, late, "the lake"), frame])
                    both.attrs = frame.attrs
                    frame = both.reset_index(drop=True)
            return (daily_versions(frame) if base != name else frame), {}
        if public_from is not None and self.published and base == name:
            # Row groups of rows that became public only after ``end`` are not read (a panel
            # ending before a lake's last syncs: their new rows never enter it).
            frame = read_published(self.lake, base, symbols, since=public_from, end=end,
                                   known_at=known_at, until=end, **some)  # fmt: skip
        else:
            frame = self.reader.read(base, symbols, start=start, end=end, known_at=known_at, **some)
        frame = _check_frame(base, frame, "the lake")
        return (daily_from_apps(frame) if base != name else frame), {}

    def check_executor(self, executor: Any) -> None:
        from concurrent.futures import ProcessPoolExecutor

        if isinstance(executor, ProcessPoolExecutor):
            context = getattr(executor, "_mp_context", None)
            method = context.get_start_method() if context is not None else None
            if method == "fork":
                raise InvalidParameterError(
                    "a lake cannot be read in forked worker processes (its Delta tables' "
                    "runtime does not survive fork): create the pool with "
                    "ProcessPoolExecutor(mp_context=multiprocessing.get_context('spawn'))",
                    parameter="executor",
                )

    def coverage(self, datasets: list[str], symbols: list[str], known_at: Any = None) -> Any:
        from .unseen import lake_coverage

        bases = list(dict.fromkeys(REGISTRY[d].base for d in datasets))
        return lake_coverage(self.lake, bases, symbols, known_at)

    def versions(self, datasets: Iterable[str]) -> dict[str, int | None]:
        return table_versions(self.lake, datasets)

    def weights(self, datasets: list[str]) -> dict[str, int] | None:
        if self.panels is None:
            return None
        return {name: self.panels.stored_rows(REGISTRY[name].base) or 0 for name in datasets}

    def pin(
        self, datasets: Iterable[str], symbols: list[str]
    ) -> tuple[Source, pd.Timestamp | None]:
        """This lake at its current table versions of ``datasets`` (Delta time travel), with
        its coverage of ``symbols`` read at those versions, and the time they were pinned:
        what a set reads is then exactly what its ``info["versions"]`` says, whatever syncs
        run meanwhile. A lake-like object that does not say its versions, as it is."""
        if isinstance(self.lake, LakeAt):  # already pinned (a rebuild)
            return self, self.lake.at
        if not callable(getattr(self.lake, "version", None)):
            return self, None
        pinned = pin_lake(self.lake, datasets, symbols)
        return LakeSource(pinned), pinned.at

    def _prices(self, symbols: list[str], first: dt.date, last: dt.date, errors: str) -> Any:
        from ..training.labels import PRICE_COLUMNS, PRICE_DATASET

        # Only the columns a label reads, where the lake reads columns apart (a third of
        # the time of the whole rows).
        some = {"columns": list(PRICE_COLUMNS)} if self.columns else {}
        return self.reader.read(PRICE_DATASET, symbols, start=first, end=last, **some)

    def describe(self) -> str:
        from ...lake.store.location import redact_root

        # The root goes into info and the file: never a credential of its URI.
        return redact_root(str(getattr(self.lake, "root", type(self.lake).__name__)))


def _reopened(spec: Any) -> LakeSource:
    return LakeSource(open_lake(spec))


def resolve_source(
    source: Any, known_at: Any, client: Any
) -> tuple[Source, pd.Timestamp | str | None]:
    """The one :class:`Source` of ``source`` (``None``: the service through ``client``; a
    dict of frames; a lake; a :class:`Source` as it is), with ``known_at`` checked against
    it and returned as a UTC Timestamp (a date alone: the end of that day) or ``"row"``.
    Refuses a source ``panel`` cannot read, and ``known_at``/``client`` where they do not
    apply, before anything is loaded."""
    from ...params import to_utc

    if client is not None and source is not None:
        raise InvalidParameterError(
            "client= applies only when source is None (the service)", parameter="client"
        )
    if isinstance(source, Source):
        resolved = source
    elif source is None:
        resolved = ServiceSource(client)
    elif isinstance(source, Mapping):
        resolved = FramesSource(source)
    elif isinstance(source, LakeLike):
        resolved = LakeSource(source)
    else:
        raise InvalidParameterError(
            f"source must be None, a dict of frames or a lake (an object with .read), not "
            f"{type(source).__name__}",
            parameter="source",
        )
    if known_at is None:
        return resolved, None
    if not isinstance(resolved, LakeSource):
        raise InvalidParameterError(
            "known_at needs a lake as source (only a lake knows when each row was fetched)",
            parameter="known_at",
        )
    if isinstance(known_at, str) and known_at.strip().lower() == ROW:
        return resolved, ROW
    return resolved, to_utc(known_at, "known_at")
