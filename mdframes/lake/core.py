"""``md.Lake``: a local (or object-store) point-in-time history of the service."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from .._typing import DateLike, TimeLike
from ..client import Client, resolve_client
from ..errors import InvalidParameterError
from .panels import Panels
from .read import read
from .store.faults import reaching
from .store.storage import Storage
from .sync.plan import build_request, read_request, resolve
from .sync.report import SyncReport
from .tables import Tables

__all__ = ["Lake", "default_root"]


def default_root() -> Path:
    """``<user data dir>/mdframes/lake`` (platformdirs: ``XDG_DATA_HOME`` is honoured)."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("mdframes")) / "lake"


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class Lake:
    """A point-in-time history of the service in Delta Lake tables, synced incrementally.

    Parameters
    ----------
    root : str or Path, optional
        A folder (default: ``<user data dir>/mdframes/lake``) or an object-store URI such as
        ``s3://bucket/prefix?endpoint_override=127.0.0.1:9000&scheme=http&region=us-east-1``.
        Nothing is created until something is written.
    client : Client, optional
        The client whose key and service a sync uses (default: the default client). A sync
        never reads the HTTP cache.
    clock : callable, optional
        Returns the current time (aware UTC); ``_fetched_at`` and the default end of a window
        come from it. Default: the current UTC time, or, when the client is a sandbox's, the
        sandbox's day at the current time of day, so that a simulated world's days line up.
    storage_options : dict, optional
        deltalake's object-store keys (``AWS_ENDPOINT_URL``, ...), beside the root's query and
        the standard ``AWS_*`` environment variables.

    Examples
    --------
    >>> lake = md.Lake("research-lake")
    >>> report = lake.sync(["insider_trading", "congress_trades", "put_call_ratio"],
    ...                    ["AAPL", "MSFT"])
    >>> sorted(report.done)
    ['congress_trades', 'insider_trading', 'put_call_ratio']
    >>> lake.read("insider_trading", "AAPL")["symbol"].unique().tolist()
    ['AAPL']
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        client: Client | None = None,
        clock: Callable[[], dt.datetime] | None = None,
        storage_options: dict[str, str] | None = None,
    ) -> None:
        if clock is not None and not callable(clock):
            raise InvalidParameterError(f"clock= is a callable, got {clock!r}", parameter="clock")
        self.storage = Storage(root if root is not None else default_root(), storage_options)
        self.root = self.storage.root
        self.client = client
        self._clock = clock
        self.tables = Tables(self.storage)
        self.panels = Panels(self.tables)  # what feature panels need beyond reads

    def __repr__(self) -> str:
        return f"Lake({self.root!r})"  # the root without credentials

    def _repr_html_(self) -> str:
        """A notebook's view: the root and a table of what the lake holds."""
        from .display import lake_html

        return lake_html(self.root, self.storage.local, self.info)

    @property
    def storage_options(self) -> dict[str, str] | None:
        """deltalake's object-store keys for this lake's tables (None on a local disk), for
        engines that open ``lake.path(name)`` themselves: ``DeltaTable(lake.path(name),
        storage_options=lake.storage_options)``. Holds credentials when the root or the
        environment gave them: never print it."""
        return None if self.storage.local else self.storage.delta_options()

    def clock(self) -> dt.datetime:
        """The lake's current time (see ``clock=``)."""
        from ..client import get_default_client

        if self._clock is not None:
            return self._clock()
        client = self.client if self.client is not None else get_default_client(create=False)
        if client is None:  # never created from the environment here
            return _utc_now()
        server = getattr(client, "sandbox", None)
        day = getattr(server, "today", None)
        if isinstance(day, dt.date) and not isinstance(day, dt.datetime):
            return dt.datetime.combine(day, _utc_now().timetz())  # a client made by hand
        return client.clock()

    # -- sync ---------------------------------------------------------------------------------
    @reaching
    def sync(
        self,
        datasets: str | Iterable[str],
        symbols: str | Iterable[str] | None = None,
        *,
        market: str | None = None,
        region: str | None = None,
        start: DateLike | None = None,
        end: DateLike | None = None,
        budget: int | None = None,
        wait: bool = False,
        progress: bool | None = None,
    ) -> SyncReport:
        """Fetch what is new since the last sync and store it with its knowledge time.

        Windowed datasets fetch ``start``..``end`` the first time, then from the last synced
        end minus the dataset's lookback; snapshot datasets (forecasts, screeners, recent,
        discovery) store what the service answers now. Unchanged records add nothing;
        changed ones add a version. Prints the plan before work (unless ``progress=False``).

        Parameters
        ----------
        datasets : str or list of str
            Loader names without ``load_`` (``"insider_trading"``), ``"screener/sentiment"``,
            ``"recent/news"``, ``"tickers"``, ...; ``_`` and ``-`` are interchangeable.
        symbols : str or list of str, optional
            Or a universe resolved now from ``market=``/``region=`` (stored as a snapshot of
            ``tickers``).
        start, end : date-like, optional
            The window of a first sync; an earlier ``start`` later widens it backwards.
        budget : int, optional
            Most requests this run may send.
        wait : bool
            When the rate-limit window is spent: wait for its reset (True) or stop cleanly.
        progress : bool, optional
            ``None``: plan printed, a bar in a terminal or notebook; ``False``: silent.

        Returns
        -------
        SyncReport

        Examples
        --------
        >>> report = lake.sync("congress_trades", market="S&P 500", budget=5)
        >>> print(report)
        sync ...: 5 requests, ... new records, 0 new versions
          done: ...
          pending (budget of 5 requests spent): congress_trades ...; at least ... requests left:
          run the same sync again to finish
        """
        from .sync.sync import run_sync

        request = build_request(
            datasets,
            symbols,
            market=market,
            region=region,
            start=start,
            end=end,
            budget=budget,
            wait=wait,
            today=self.clock().date(),
        )
        from ..params import flag

        flag(progress, "progress", none=True)
        client = resolve_client(self.client)
        client.check_configuration()  # before the lease is taken
        for table in map(self.tables.get, request.datasets):
            table.manifest  # noqa: B018 - a damaged dtype record fails before the lease
        try:
            return run_sync(self.tables, self.clock, client, request, progress)
        except OSError as exc:  # a full disk, a read-only folder: one line, not a traceback
            from .store.faults import write_failed

            raise write_failed("lake", exc) from None

    # -- reads --------------------------------------------------------------------------------
    @reaching
    def read(
        self,
        dataset: str,
        symbols: str | Iterable[str] | None = None,
        *,
        start: DateLike | None = None,
        end: DateLike | None = None,
        as_of: TimeLike | None = None,
        known_at: TimeLike | None = None,
        columns: list[str] | None = None,
        history: bool = False,
        market: str | None = None,
        region: str | None = None,
        version: int | None = None,
    ) -> pd.DataFrame:
        """The dataset as its loader returns it, plus ``_fetched_at`` (UTC).

        One row per record, its latest version; with ``known_at=T`` the latest version
        fetched at or before T (records first fetched later are absent; naive T means UTC).
        Snapshot datasets give their whole latest snapshot fetched by then. ``as_of=T`` keeps
        the rows public at T (:func:`mdframes.point_in_time`). ``history=True`` gives every
        stored version, with ``_sync_id`` and ``_version``. Rows come sorted as the loaders
        sort them: by symbol (in the order given), then time, then record key.

        Parameters
        ----------
        dataset : str
        symbols : str or list of str, optional
        start, end : date-like, optional
            On the dataset's time column (the one the service windows on).
        as_of, known_at : str, datetime or Timestamp, optional
        columns : list of str, optional
            A subset of the loader columns (``_fetched_at`` is always added).
        history : bool
        market, region : str, optional
            Which cross-section snapshot (screeners, recent, ``tickers``) to read, when the
            lake holds several.
        version : int, optional
            Read the table as it was at this version (:meth:`version`; Delta time travel),
            as a training set recorded it. ``LakeDamagedError`` naming the version when a
            vacuum removed its files.

        Examples
        --------
        >>> "_fetched_at" in lake.read("congress_trades", ["MSFT"]).columns
        True
        >>> lake.read("congress_trades", ["MSFT"], known_at="2026-10-01").empty  # synced later
        True
        """
        request = read_request(
            dataset,
            symbols,
            start=start,
            end=end,
            as_of=as_of,
            known_at=known_at,
            columns=columns,
            history=history,
            market=market,
            region=region,
            version=version,
        )
        return read(self.tables, request)

    @reaching
    def changes(
        self,
        dataset: str,
        symbols: str | Iterable[str] | None = None,
        *,
        since: TimeLike | None = None,
        until: TimeLike | None = None,
    ) -> pd.DataFrame:
        """What the service revised: one row per changed field of a record between two
        consecutive versions whose later version was fetched in (``since``, ``until``].

        Columns: the record-id columns, ``field``, ``old``, ``new`` (text as the values
        print), ``old_fetched_at``, ``new_fetched_at``, ``sync_id``. New records are not
        changes; nothing changed gives an empty frame with these columns. A date alone means
        the end of that day. Snapshot datasets raise ``InvalidParameterError`` (their history
        is ``read(dataset, history=True)``).

        Examples
        --------
        >>> lake.changes("insider_trading", since="2026-11-01").columns[-6:].tolist()
        ['field', 'old', 'new', 'old_fetched_at', 'new_fetched_at', 'sync_id']
        """
        from .changes import changes, check_changes

        ds = resolve(dataset)
        since, until = check_changes(ds, since, until)
        history = self.read(ds.name, symbols, history=True)
        return changes(history, ds.record_id, since=since, until=until)

    @reaching
    def sql(self, query: str, params: Any = None) -> pd.DataFrame:
        """Run DuckDB SQL over the lake; each dataset is a view ``<name>`` (latest versions)
        and ``<name>_history`` (every version); ``/`` and ``-`` become ``_`` in view names
        (``screener__put_call_ratio``). Each view reads one pinned table version's files,
        offline.

        Examples
        --------
        >>> lake.sql("select symbol, count(*) n from insider_trading group by 1 order by 1")
          symbol   n
        0   AAPL  ...
        1   MSFT  ...
        """
        from .sql import run

        if not isinstance(query, str) or not query.strip():
            raise InvalidParameterError("query is a non-empty SQL string", parameter="query")
        return run(self.tables.present(), query, params)

    @reaching
    def info(self) -> pd.DataFrame:
        """One row per dataset: ``dataset, rows`` (records, latest versions), ``versions``
        (stored rows, every version), ``symbols, first, last`` (time column), ``last_sync,
        files`` (data files of the current version), ``bytes``.

        Examples
        --------
        >>> lake.info()["dataset"].tolist()
        ['congress_trades', 'insider_trading', 'put_call_ratio']
        """
        from .display import info_frame
        from .maintenance import info

        return info_frame(info(self.storage, self.tables.present()))

    @reaching
    def coverage(
        self,
        datasets: str | Iterable[str] | None = None,
        symbols: str | Iterable[str] | None = None,
        *,
        known_at: TimeLike | None = None,
    ) -> pd.DataFrame:
        """What the lake synced, per dataset and symbol, read from its state files (cheap:
        no data file is read); with ``known_at``, what it had synced by then.

        One row per dataset and symbol the lake synced or was asked to sync (symbol NA for
        a cross-section dataset: screeners, recent, discovery), plus one per requested symbol
        it never synced. Columns ``dataset, symbol, status, first, last, gaps,
        first_fetched_at, last_fetched_at, rows, error``:

        - ``status``: ``"synced"``, ``"pending"`` (an unfinished run has it still to do, or
          :meth:`repair` marked it not synced), ``"failed"`` (the last attempt failed;
          ``error`` says why), ``"not_found"`` (the service answered 404) or ``"never"``;
          a category of these five.
        - ``first``..``last``: the span of the date windows synced (naive
          ``datetime64[ns]``; snapshots: the days of the first and last); ``first`` NaT
          means from the start of the service's history. ``gaps``: a list of
          ``(start, end)`` Timestamp pairs inside it that no sync fetched (inclusive; empty
          when the windows touch).
        - ``first_fetched_at``, ``last_fetched_at``: UTC; ``rows`` (``Int64``): records
          held, as the syncs counted them (NA where no count is known).

        Parameters
        ----------
        datasets : str or list of str, optional
            Default: every dataset the lake holds or an unfinished run names.
        symbols : str or list of str, optional
            Default: every symbol recorded; given, one row per symbol (``"never"`` where
            nothing is recorded) and the cross sections' NA rows.
        known_at : str, datetime or Timestamp, optional
            The coverage as it stood then (a date alone: the end of that day): what a copy
            of the lake taken at that time would answer, from the lake's ledger of each
            sync's windows and fetch times; later syncs, compactions, repairs and vacuums
            do not change it. A lake synced before mdframes 0.5 knows its earlier history
            from its state only (a unit's windows up to its first fetch, the rest from its
            latest).

        Examples
        --------
        >>> lake.coverage("insider_trading", ["AAPL", "NEWCO"])[["symbol", "status"]]
          symbol  status
        0   AAPL  synced
        1  NEWCO   never
        """
        from ..params import to_utc
        from .coverage import coverage
        from .display import coverage_frame

        at = None if known_at is None else to_utc(known_at, "known_at")
        if at is None:
            return coverage_frame(coverage(self.tables, datasets, symbols))
        return coverage_frame(coverage(self.tables, datasets, symbols, upto=at, ledger=True))

    @reaching
    def files(self, dataset: str) -> list[str]:
        """The data files of the dataset's current table version (URIs), for engines that
        read Parquet file lists; never double-counts. Globbing the folder is not supported.

        Examples
        --------
        >>> import duckdb
        >>> [(n,)] = duckdb.read_parquet(lake.files("insider_trading")).count("*").fetchall()
        >>> n == len(lake.read("insider_trading"))
        True
        """
        from .read import opened

        snap = opened(self.tables.get(resolve(dataset)))
        return [] if snap is None else list(snap.files)

    @reaching
    def version(self, dataset: str) -> int | None:
        """The dataset's current Delta table version (``None``: the lake holds no table for
        it yet). Each sync that stores something, compaction or repair adds one; a training
        set records it to say which state of the lake it read.

        Examples
        --------
        >>> lake.version("insider_trading")
        1
        >>> lake.version("sentiment") is None  # never synced
        True
        """
        snap = self.tables.get(resolve(dataset)).snapshot()
        return None if snap is None else snap.version

    def path(self, dataset: str) -> str:
        """The dataset's Delta table (a local path or an ``s3://`` URI), for engines that
        read Delta.

        Examples
        --------
        >>> import polars as pl
        >>> pl.scan_delta(lake.path("insider_trading")).collect().height
        102
        """
        return self.tables.get(resolve(dataset)).uri

    @reaching
    def compact(
        self, dataset: str | None = None, *, retain_hours: float = 168
    ) -> dict[str, tuple[int, int]]:
        """Rewrite each dataset's files into few sorted files (one commit; no read result
        changes), then remove files no table version of the last ``retain_hours`` needs.
        Returns dataset -> (files before, files after).

        Examples
        --------
        >>> lake.compact()
        {'congress_trades': (..., 1), 'insider_trading': (..., 1), 'put_call_ratio': (..., 1)}
        """
        from .maintenance import compact
        from .store.lease import open_lease
        from .upgrade import upgrade_lake

        wanted = None if dataset is None else resolve(dataset).name
        if (
            isinstance(retain_hours, bool)
            or not isinstance(retain_hours, (int, float))
            or not retain_hours >= 0
        ):
            raise InvalidParameterError(
                f"retain_hours is a number of hours >= 0, got {retain_hours!r}",
                parameter="retain_hours",
            )
        out: dict[str, tuple[int, int]] = {}
        if not self.storage.exists():
            return out
        with open_lease(self.storage.location, owner="compaction").hold() as lease:
            self.tables.clean_temporaries()
            upgrade_lake(self.tables, lease)
            for table in self.tables.present():
                if wanted is None or table.ds.name == wanted:
                    out[table.ds.name] = compact(table, lease, retain_hours)
        return out

    @reaching
    def check(self) -> pd.DataFrame:
        """One row per dataset: ``dataset, ok, files, problems``: every file the current
        version lists is present, readable and the one the log records; the log still holds
        every version the lake committed and no other program's commit; the dtype record and
        the state are there and agree with the log.

        Examples
        --------
        >>> lake.check()[["dataset", "ok"]]
                   dataset    ok
        0  congress_trades  True
        1  insider_trading  True
        2   put_call_ratio  True
        """
        from .maintenance import check

        return check(self.tables.present(format1=True))

    @reaching
    def repair(self, dataset: str | None = None) -> pd.DataFrame:
        """Mend every problem :meth:`check` reports: drop the files that are missing,
        unreadable or replaced, and the rows other programs appended; undo their deletes and
        overwrites; rebuild a lost dtype record or state; mark the windows of what is lost not
        synced so the next sync fetches them again. Returns ``dataset, file, symbols, rows,
        note`` (``note``: what was done, what could not be restored and what to do).

        Examples
        --------
        >>> lake.repair().empty  # nothing to repair
        True
        """
        from .maintenance import repair
        from .store.lease import open_lease

        wanted = None if dataset is None else resolve(dataset).name
        tables = [t for t in self.tables.present() if wanted is None or t.ds.name == wanted]
        with open_lease(self.storage.location, owner="repair").hold() as lease:
            return repair(tables, lease)

    @reaching
    def upgrade(self) -> list[str]:
        """Convert a lake written by mdframes 0.2 (format 1) to Delta tables, every version and
        ``_fetched_at`` intact; returns the datasets converted (a sync or compaction does it
        too).

        Examples
        --------
        >>> lake.upgrade()  # already in the current format
        []
        """
        from .store.lease import open_lease
        from .upgrade import upgrade_lake

        if not self.storage.exists():
            return []
        with open_lease(self.storage.location, owner="upgrade").hold() as lease:
            return upgrade_lake(self.tables, lease)
