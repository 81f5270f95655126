"""``md.Lake``: a local (or object-store) point-in-time history of the service."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from ..client import Client, resolve_client
from ..errors import InvalidParameterError
from .layout import LOCK, dir_name
from .plan import resolve, resolve_datasets
from .read import normalise_symbols, read
from .report import SyncReport
from .storage import Storage

__all__ = ["Lake", "default_root"]


def default_root() -> Path:
    """``<user data dir>/mdframes/lake`` (platformdirs: ``XDG_DATA_HOME`` is honoured)."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("mdframes")) / "lake"


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _default() -> Client | None:
    from .. import client as client_module

    return client_module._default  # as it is: never created from the environment here


class Lake:
    """A point-in-time history of the service in Parquet files, synced incrementally.

    Parameters
    ----------
    root : str or Path, optional
        A folder (default: ``<user data dir>/mdframes/lake``) or a pyarrow filesystem URI such
        as ``s3://bucket/prefix``.
    client : Client, optional
        The client whose key and service a sync uses (default: the default client). A sync
        never reads the HTTP cache.
    clock : callable, optional
        Returns the current time (aware UTC); ``_fetched_at`` and the default end of a window
        come from it. Default: the current UTC time, or, when the client is a sandbox's, the
        sandbox's day at the current time of day, so that a simulated world's days line up.

    Examples
    --------
    >>> lake = md.Lake("research-lake")                                     # doctest: +SKIP
    >>> lake.sync(["insider_trading", "congress_trades"], ["AAPL", "MSFT"])  # doctest: +SKIP
    >>> lake.read("insider_trading", "AAPL", known_at="2026-10-01")          # doctest: +SKIP
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        client: Client | None = None,
        clock: Callable[[], dt.datetime] | None = None,
    ) -> None:
        self.root = str(root) if root is not None else str(default_root())
        self.storage = Storage(self.root)
        self.client = client
        self._clock = clock

    def __repr__(self) -> str:
        return f"Lake({self.root!r})"

    def clock(self) -> dt.datetime:
        """The lake's current time (see ``clock=``)."""
        if self._clock is not None:
            return self._clock()
        now = _utc_now()
        server = getattr(self.client if self.client is not None else _default(), "sandbox", None)
        day = getattr(server, "today", None)
        if isinstance(day, dt.date) and not isinstance(day, dt.datetime):
            return dt.datetime.combine(day, now.timetz())
        return now

    # -- sync ---------------------------------------------------------------------------------
    def sync(
        self,
        datasets: str | Iterable[str],
        symbols: str | Iterable[str] | None = None,
        *,
        market: str | None = None,
        region: str | None = None,
        start: Any = None,
        end: Any = None,
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
        >>> report = lake.sync("congress_trades", market="S&P 500", budget=500)  # doctest: +SKIP
        >>> print(report)                                                       # doctest: +SKIP
        """
        from ..params import to_date
        from .sync import run_sync

        resolved = resolve_datasets(datasets)
        if symbols is not None and (market or region):
            raise InvalidParameterError(
                "give symbols or market=/region=, not both", parameter="symbols"
            )
        if market and region:
            raise InvalidParameterError("give market= or region=, not both", parameter="market")
        syms = None if symbols is None else normalise_symbols(symbols)
        needs = [d.name for d in resolved if "{symbol}" in d.path]
        if needs and syms is None and not (market or region):
            raise InvalidParameterError(
                f"{', '.join(needs)} need symbols, market= or region=", parameter="symbols"
            )
        start_d = None if start is None else to_date(start, "start")
        end_d = None if end is None else to_date(end, "end")
        if start_d and end_d and start_d > end_d:
            raise InvalidParameterError(f"start {start_d} is after end {end_d}", parameter="start")
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget < 0
        ):
            raise InvalidParameterError(
                f"budget must be a whole number >= 0, got {budget!r}", parameter="budget"
            )
        client = resolve_client(self.client)
        client._require()  # configuration errors before the lock is taken
        args = {
            "datasets": [d.name for d in resolved],
            "datasets_resolved": resolved,
            "symbols": syms,
            "market": market,
            "region": region,
            "start": start_d,
            "end": end_d,
            "start_iso": start_d.isoformat() if start_d else None,
            "end_iso": (end_d or self.clock().date()).isoformat(),
            "budget": budget,
            "wait": bool(wait),
        }
        return run_sync(self, client, args, progress)

    # -- reads --------------------------------------------------------------------------------
    def read(
        self,
        dataset: str,
        symbols: str | Iterable[str] | None = None,
        *,
        start: Any = None,
        end: Any = None,
        as_of: Any = None,
        known_at: Any = None,
        columns: list[str] | None = None,
        history: bool = False,
        market: str | None = None,
        region: str | None = None,
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

        Examples
        --------
        >>> lake.read("congress_trades", ["NVDA"], known_at="2026-10-01")   # doctest: +SKIP
        >>> lake.read("tickers", market="S&P 500", known_at="2026-06-30")    # doctest: +SKIP
        """
        return read(
            self,
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
        )

    def changes(
        self,
        dataset: str,
        symbols: str | Iterable[str] | None = None,
        *,
        since: Any = None,
        until: Any = None,
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
        >>> lake.changes("government_contracts", since="2026-11-01")   # doctest: +SKIP
        """
        from .changes import changes, check_changes

        ds = resolve(dataset)
        since, until = check_changes(ds, since, until)
        history = self.read(ds.name, symbols, history=True)
        return changes(history, ds.lake_key, since=since, until=until)

    def sql(self, query: str, params: Any = None) -> pd.DataFrame:
        """Run DuckDB SQL over the lake; each dataset is a view ``<name>`` (latest versions)
        and ``<name>_history`` (every version); ``/`` and ``-`` become ``_`` in view names
        (``screener__put_call_ratio``).

        Examples
        --------
        >>> lake.sql("select symbol, count(*) n from insider_trading group by 1")  # doctest: +SKIP
        """
        from .sql import run

        return run(self, query, params)

    def info(self) -> pd.DataFrame:
        """One row per dataset: ``dataset, rows`` (records, latest versions), ``versions``
        (stored rows, every version), ``symbols, first, last`` (time column), ``last_sync,
        files, bytes``.

        Examples
        --------
        >>> lake.info()  # doctest: +SKIP
        """
        from .maintenance import info

        return info(self)

    def compact(self, dataset: str | None = None) -> dict[str, tuple[int, int]]:
        """Merge each dataset's files (one per sync) into few sorted files. Every stored row
        is kept as it was, so no read result changes. Returns dataset -> (files before,
        files after).

        Examples
        --------
        >>> lake.compact()  # doctest: +SKIP
        """
        from .maintenance import compact, recover, stores

        wanted = None if dataset is None else resolve(dataset).name
        out = {}
        with self.storage.lock(LOCK):
            recover(self)
            stamp = f"{self.clock():%Y%m%dT%H%M%S%fZ}"
            for store in stores(self):
                if wanted is None or store.ds.name == wanted:
                    out[store.ds.name] = compact(self, store, stamp)
        return out

    def path(self, dataset: str) -> str:
        """The dataset's Parquet folder, for any engine (a local path or an ``s3://`` URI).

        Examples
        --------
        >>> import polars as pl                                            # doctest: +SKIP
        >>> pl.scan_parquet(lake.path("insider_trading") + "/*.parquet")   # doctest: +SKIP
        """
        return self.storage.uri(dir_name(resolve(dataset).name))

    def _recover(self) -> None:
        from .maintenance import recover

        recover(self)
