"""Where a panel's inputs come from: the service (through the loaders), frames the caller
already has, or a lake (anything with the ``Lake.read`` signature), resolved once into a
:class:`Source` at the panel's entry (:func:`resolve_source`).

Each dataset is fetched once for the panel (or once per chunk of symbols), over the panel's
dates plus the longest lookback of its features, clipped to where the dataset has history.
With ``known_at="row"`` a lake gives every stored version (``history=True``), and the engine
decides per row which version it saw.
"""

from __future__ import annotations

import datetime as dt
import json
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol, cast, runtime_checkable

import numpy as np
import pandas as pd

from ..._typing import Errors
from ...errors import (
    AuthenticationError,
    ConfigurationError,
    InvalidParameterError,
    KnowledgeTimeWarning,
    MdframesError,
    RateLimitError,
    SkippedSymbolsWarning,
    warn,
)
from ...registry import REGISTRY
from .reach import Reach

__all__ = [
    "LakeLike",
    "fetch",
    "load_start",
    "public_start",
    "history_start",
    "base_name",
    "record_key",
    "daily_from_apps",
    "lake_spec",
    "table_versions",
    "open_lake",
    "Source",
    "ServiceSource",
    "FramesSource",
    "LakeSource",
    "LakeAt",
    "resolve_source",
    "ROW",
]

ROW: Final = "row"
Span = tuple[dt.date | None, dt.date]  # first (None: all history) and last date to read
Read = tuple[pd.DataFrame, dict[str, str]]  # a dataset's frame and its failed symbols


@runtime_checkable
class LakeLike(Protocol):
    """What ``panel`` needs of a lake: ``md.Lake`` and any stand-in with the same ``read``."""

    def read(
        self,
        dataset: str,
        symbols: Any = None,
        *,
        start: Any = None,
        end: Any = None,
        known_at: Any = None,
    ) -> pd.DataFrame: ...


# --- dataset facts (from the registry) ----------------------------------------------------------


def base_name(dataset: str) -> str:
    """The dataset a lake or a dict stores for ``dataset`` (a view's source, else itself)."""
    return REGISTRY[dataset].base


def history_start(dataset: str) -> dt.date | None:
    """The first date the service has data for ``dataset`` (``None``: no known limit), from
    the registry entry (a view's, else its base dataset's)."""
    from ...params import to_date

    ds = REGISTRY[dataset]
    value = ds.history_start or REGISTRY[ds.base].history_start
    return None if value is None else to_date(value, "history_start", dataset=dataset)


def _slack_days(dataset: str) -> int:
    """Days a load reaches further back than the windows: the service filters on the event
    date, while a row becomes public at its anchor, up to the deadline's slack later."""
    deadline = REGISTRY[dataset].deadline
    return 0 if deadline is None else deadline.slack_days


def _identity(dataset: str) -> list[str]:
    """The columns of ``dataset`` its record identity reads (:func:`record_key`'s parts)."""
    from ...identity import Identity

    known = set(REGISTRY[dataset].columns)
    return [n for n in Identity.parse(record_key(dataset)).names if n in known]


def record_key(dataset: str) -> list[str]:
    """The columns that identify one record across versions (the registry's ``record_id``;
    ``"a|b"``: a, or b where a is null)."""
    return list(REGISTRY[dataset].record_id)


def load_start(dataset: str, start: dt.date, lookback: int | None) -> dt.date | None:
    """The first date to request for ``dataset`` so that every window from ``start`` on is
    complete, never before the dataset's history; ``None``: the whole history."""
    first = history_start(dataset)
    if lookback is None:
        return first
    wanted = start - dt.timedelta(days=lookback + _slack_days(dataset))
    return wanted if first is None else max(wanted, first)


def public_start(dataset: str, start: dt.date, lookback: int | None) -> dt.date | None:
    """The first date a row of ``dataset`` public then or later is needed from, so that
    every window from ``start`` is complete, where the dataset's reads are bounded by when
    rows became public (its registry entry's ``read_bound``: a row filed any time after
    its event is read when it became public in the windows, and none public long before
    them is). ``None``: the time column bounds the reads (:func:`load_start`), or all
    history is needed."""
    if lookback is None or REGISTRY[dataset].read_bound is None:
        return None
    return start - dt.timedelta(days=lookback)


# How far before a panel's windows a seek for the latest values reads first: a daily
# dataset's latest value before the windows is a day or a few old (a long weekend, a
# holiday); a symbol without one in these days is read again over its older history (that
# symbol only). Every day more is read for each symbol: 30 days were a sixth of a
# 3-month panel's sentiment rows.
SEEK_DAYS: Final = 10


def seekable(dataset: str) -> bool:
    """Whether a read from a date holds every row of ``dataset`` public from that date: a
    row becomes public on the date a lake filters reads by (no event date before its
    anchor, no deadline), so the latest value before a point is found by reading a few days
    before it."""
    ds = REGISTRY[dataset]
    time = ds.time_column or "date"
    return ds.base == dataset and ds.event is None and ds.deadline is None and ds.anchor == time


def _empty(dataset: str) -> pd.DataFrame:
    """The loader's columns and dtypes, no rows: a window wholly before the history."""
    from ...frame import build_frame
    from ...records import Records

    frame = build_frame(REGISTRY[dataset], [Records({}, [])])
    frame.attrs["dataset"] = dataset
    return frame


# --- the daily app-ratings view -------------------------------------------------------------------


def daily_from_apps(apps: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """The daily view from the apps view: per symbol, platform and date, the app with the
    most ratings (as the service's daily view), one row per symbol and date (and ``by``).

    Examples
    --------
    >>> apps = pd.DataFrame({"symbol": ["A", "A"], "platform": ["ios", "ios"],
    ...                      "app_id": ["1", "2"], "date": pd.to_datetime(["2026-09-03"] * 2),
    ...                      "score": [4.0, 3.0], "ratings_count": [10, 99]})
    >>> daily_from_apps(apps)[["symbol", "date", "ios_score", "ios_ratings_count"]]
      symbol       date  ios_score  ios_ratings_count
    0      A 2026-09-03        3.0                 99
    """
    need = {"symbol", "platform", "date", "score", "ratings_count"}
    missing = need - set(apps.columns)
    if missing:
        raise InvalidParameterError(
            f"app_ratings frame lacks {sorted(missing)}: give the apps view "
            "(load_app_ratings(view='apps')) or an 'app_ratings_daily' frame",
            parameter="source",
        )
    keys = ["symbol", "date", *by]
    ratings = apps["ratings_count"].to_numpy(dtype="float64", na_value=-1.0)
    # Most ratings first (an unrated app last); equal counts keep the frame's order.
    ranked = apps.reset_index(drop=True).assign(_mdf_rank=-ratings, _mdf_row=np.arange(len(apps)))
    best = (
        ranked.sort_values([*keys, "platform", "_mdf_rank", "_mdf_row"])
        .drop_duplicates([*keys, "platform"], keep="first")
        .drop(columns=["_mdf_rank", "_mdf_row"])
    )
    out = best[keys].drop_duplicates().reset_index(drop=True)
    for platform, columns in (
        ("ios", ("score", "ratings_count")),
        ("android", ("score", "ratings_count", "install_count")),
    ):
        part = best[best["platform"].astype("string") == platform]
        present = [c for c in columns if c in part.columns]
        part = part[[*keys, *present]].rename(columns={c: f"{platform}_{c}" for c in present})
        out = out.merge(part, on=keys, how="left")
    out.attrs = {**apps.attrs, "dataset": "app_ratings_daily"}
    return out


def daily_versions(apps: pd.DataFrame) -> pd.DataFrame:
    """Every version of the daily view from every stored version of the apps view: a daily
    row as it stood each time one of its apps was fetched (``_fetched_at``)."""
    from .knowledge import next_fetched

    frame = apps.reset_index(drop=True)
    superseded = next_fetched(frame, record_key("app_ratings"))
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
    base = base_name(name)
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
    for symbol in symbols:
        if f"/{symbol}" in text or f"'{symbol}'" in text:
            return symbol
    return None


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
        return self._read(name, symbols, (start, end), known_at, errors, columns, public_from)

    def _read(
        self,
        name: str,
        symbols: list[str],
        span: Span,
        known_at: Any,
        errors: str,
        columns: Sequence[str] | None = None,
        public_from: dt.date | None = None,
    ) -> Read:
        """:meth:`read` of a ``span`` that is not wholly before the history."""
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

    def _read(
        self,
        name: str,
        symbols: list[str],
        span: Span,
        known_at: Any,
        errors: str,
        columns: Sequence[str] | None = None,
        public_from: dt.date | None = None,
    ) -> Read:
        from ...loaders import load

        start, end = span
        with warnings.catch_warnings():
            # The panel says once which symbols it skipped, over all its datasets.
            warnings.filterwarnings("ignore", category=SkippedSymbolsWarning)
            warnings.filterwarnings("ignore", message=r".*symbol\(s\) failed and were skipped")
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

    def _read(
        self,
        name: str,
        symbols: list[str],
        span: Span,
        known_at: Any,
        errors: str,
        columns: Sequence[str] | None = None,
        public_from: dt.date | None = None,
    ) -> Read:
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
        self.lake = lake
        self.columns = _takes_columns(lake)
        # md.Lake's (or a pinned one's) read of the rows public from a date (public_start).
        self.published = _reads_published(lake)

    def __reduce__(self) -> Any:
        # A worker opens the lake itself from its root (never its client: no key travels).
        return (_reopened, (lake_spec(self.lake),))

    def _read(
        self,
        name: str,
        symbols: list[str],
        span: Span,
        known_at: Any,
        errors: str,
        columns: Sequence[str] | None = None,
        public_from: dt.date | None = None,
    ) -> Read:
        if not symbols:
            return _nothing(name, known_at), {}
        base, (start, end) = base_name(name), span
        # Only the columns the features read, where the lake reads columns apart (a view
        # is made from its base dataset's columns: all of them).
        some = {"columns": list(columns)} if columns and base == name and self.columns else {}
        if isinstance(known_at, str) and known_at == ROW:
            # Every version, with its record's identity besides: the engine tells a
            # record's versions apart by it (knowledge.record_ids).
            if some:
                some = {"columns": list(dict.fromkeys([*some["columns"], *_identity(base)]))}
            frame = self.lake.read(base, symbols, start=start, end=end, history=True, **some)
            frame = _check_frame(base, frame, "the lake")
            if public_from is not None and self.published and base == name and start:
                # Every version from the slack before the windows, as before, and those of
                # records public in the windows whose event is older still (filed late).
                late = self.lake._read_published(
                    base, symbols, since=public_from, end=start - _DAY, history=True, **some
                )
                if len(late):
                    both = pd.concat([_check_frame(base, late, "the lake"), frame])
                    both.attrs = frame.attrs
                    frame = both.reset_index(drop=True)
            return (daily_versions(frame) if base != name else frame), {}
        if public_from is not None and self.published and base == name:
            # Row groups of rows that became public only after ``end`` are not read (a panel
            # ending before a lake's last syncs: their new rows never enter it).
            frame = self.lake._read_published(
                base, symbols, since=public_from, end=end, known_at=known_at, until=end, **some
            )
        else:
            frame = self.lake.read(base, symbols, start=start, end=end, known_at=known_at, **some)
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

        bases = list(dict.fromkeys(base_name(d) for d in datasets))
        return lake_coverage(self.lake, bases, symbols, known_at)

    def versions(self, datasets: Iterable[str]) -> dict[str, int | None]:
        return table_versions(self.lake, datasets)

    def weights(self, datasets: list[str]) -> dict[str, int] | None:
        rows = getattr(self.lake, "_stored_rows", None)  # md.Lake's, from its log
        if not callable(rows):
            return None
        return {name: rows(base_name(name)) or 0 for name in datasets}

    def pin(
        self, datasets: Iterable[str], symbols: list[str]
    ) -> tuple[Source, pd.Timestamp | None]:
        """This lake at its current table versions of ``datasets`` (Delta time travel), with
        its coverage of ``symbols`` read at those versions, and the time they were pinned:
        what a set reads is then exactly what its ``info["versions"]`` says, whatever syncs
        run meanwhile. A lake-like object that does not say its versions, as it is."""
        from .unseen import kept_coverage

        names = sorted({base_name(d) for d in datasets})
        if isinstance(self.lake, LakeAt):  # already pinned (a rebuild)
            return self, self.lake.at
        if not callable(getattr(self.lake, "version", None)):
            return self, None
        for _ in range(_PIN_TRIES):
            versions = table_versions(self.lake, names)
            table = kept_coverage(self.lake, names, symbols)
            # The state is written after its commit: with the versions unchanged after the
            # coverage was read, it holds nothing of a later version.
            if table_versions(self.lake, names) == versions:
                break
        # When: the latest fetch the coverage knows (a rebuild judges the coverage as known
        # then, on the lake's own clock), else now.
        fetched = None if table is None else table["last_fetched_at"].max()
        at = pd.Timestamp(fetched) if fetched is not None and pd.notna(fetched) else None
        if at is None:
            at = pd.Timestamp.now(tz="UTC")
        pinned = LakeAt(self.lake, versions, coverage=table, at=at, asked=(names, list(symbols)))
        return LakeSource(pinned), at

    def _prices(self, symbols: list[str], first: dt.date, last: dt.date, errors: str) -> Any:
        from ..training.labels import PRICE_COLUMNS, PRICE_DATASET

        # Only the columns a label reads, where the lake reads columns apart (a third of
        # the time of the whole rows).
        some = {"columns": list(PRICE_COLUMNS)} if self.columns else {}
        return self.lake.read(PRICE_DATASET, symbols, start=first, end=last, **some)

    def describe(self) -> str:
        from ...lake.location import redact_root

        # The root goes into info and the file: never a credential of its URI.
        return redact_root(str(getattr(self.lake, "root", type(self.lake).__name__)))


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
        # read only (_kept_coverage).
        self._pinned_question = asked
        self._asked: dict[tuple[Any, ...], pd.DataFrame] = {}

    def __repr__(self) -> str:
        return f"<LakeAt {self.lake!r} versions={self.versions}>"

    def __reduce__(self) -> Any:
        # A worker opens the lake itself from its root (never its client: no key travels).
        return (_reopened_at, (lake_spec(self.lake), self.versions, self.pinned_coverage, self.at))

    def read(self, dataset: str, symbols: Any = None, **options: Any) -> pd.DataFrame:
        name = base_name(dataset.replace("-", "_")) if dataset else dataset
        version = self.versions.get(name)
        if version is not None:
            options.setdefault("version", version)
        frame: pd.DataFrame = self.lake.read(dataset, symbols, **options)
        return frame

    def _read_published(self, dataset: str, symbols: Any = None, **options: Any) -> pd.DataFrame:
        version = self.versions.get(base_name(dataset))
        if version is not None:
            options.setdefault("version", version)
        frame: pd.DataFrame = self.lake._read_published(dataset, symbols, **options)
        return frame

    def coverage(self, datasets: Any = None, symbols: Any = None) -> pd.DataFrame:
        kept = self.pinned_coverage
        if kept is not None:
            names = None if datasets is None else {base_name(str(d)) for d in datasets}
            if names is None or names <= set(kept["dataset"].astype(object)):
                rows = kept if names is None else kept[kept["dataset"].isin(sorted(names))]
                table = rows.reset_index(drop=True)
                table.attrs = dict(kept.attrs)
                return table
        if self.at is not None:
            at: pd.DataFrame = self.lake.coverage(datasets, symbols, known_at=self.at)
            return at
        now: pd.DataFrame = self.lake.coverage(datasets, symbols)
        return now

    def _kept_coverage(self, datasets: list[str], symbols: list[str]) -> pd.DataFrame:
        """:meth:`coverage`, read only: the same frame for the same question (a panel's
        Coverage is made once from it, :func:`~.coverage.lake_coverage`); the pinned frame
        itself where the question asks all its datasets (pinned from an unchanged lake, the
        lake's own kept frame: a set's panel shares its Coverage with the panels before)."""
        from .unseen import kept_coverage

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
        if recorded is not None:
            return int(recorded)
        current: int | None = self.lake.version(dataset)
        return current


def _reopened_at(spec: Any, versions: Any, coverage: Any, at: Any) -> LakeAt:
    return LakeAt(open_lake(spec), versions, coverage=coverage, at=at)


_DAY: Final = dt.timedelta(days=1)
_PIN_TRIES: Final = 20  # syncs committing between a version and coverage read: read again


def _takes_columns(lake: Any) -> bool:
    """Whether ``lake.read`` takes ``columns=`` (``md.Lake`` does; a stand-in may not)."""
    import inspect

    try:
        parameters = inspect.signature(lake.read).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "columns" or p.kind is p.VAR_KEYWORD for p in parameters)


def _reads_published(lake: Any) -> bool:
    """Whether ``lake`` reads the rows public from a date (``md.Lake``, pinned or not; a
    stand-in reads by its time column)."""
    from ...lake import Lake

    inner = lake.lake if isinstance(lake, LakeAt) else lake
    return isinstance(inner, Lake)


def _reopened(spec: Any) -> LakeSource:
    return LakeSource(open_lake(spec))


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
        first = load_start(name, start, lookback)
        public_from = public_start(name, start, lookback)
        mine = symbols if coverage is None else coverage.readable(name, symbols)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", KnowledgeTimeWarning)
            columns = reach.columns if isinstance(reach, Reach) else None
            if (
                isinstance(reach, Reach)
                and reach.latest
                and not reach.whole
                and source.seeks
                and known_at != ROW
                and seekable(name)
            ):
                frame, failed = _seek(
                    source, name, mine, reach, start, end, known_at, errors, columns
                )
            else:
                frame, failed = source.read(
                    name,
                    mine,
                    first,
                    end,
                    known_at=known_at,
                    errors=errors,
                    columns=columns,
                    public_from=public_from,
                )
        for w in caught:  # said once below, for every dataset at once
            if issubclass(w.category, KnowledgeTimeWarning):
                unknown_then.append(name)
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
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
    became public before the days read, :func:`seekable`)."""
    from ...pit import public_times
    from .engine import counted_rows, day_numbers, symbol_codes, utc_naive

    near = load_start(name, start, reach.days + SEEK_DAYS)
    frame, failed = source.read(
        name, symbols, near, end, known_at=known_at, errors=errors, columns=columns
    )
    oldest = history_start(name)
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
        name,
        older,
        oldest,
        near - dt.timedelta(days=1),
        known_at=known_at,
        errors=errors,
        columns=columns,
    )
    both = pd.concat([earlier, frame], ignore_index=True) if len(earlier) else frame
    both.attrs = frame.attrs
    return both, {**more, **failed}


# --- checking and shipping a source ---------------------------------------------------------------


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
