"""``panel`` and ``write_panel``: point-in-time features for a universe, one row per (date,
symbol).

The work of one set of symbols is :func:`~mdframes.features.panels.chunk.compute`. ``panel`` runs it
once, or per chunk of symbols on an executor (:mod:`mdframes.features.panels.scale`); ``write_panel``
runs it per chunk and writes each chunk's rows where it was computed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Literal

import pandas as pd

from ..._deps import require
from ..._typing import DateLike, Errors, TimeLike
from ...params import whole_number
from ..training.trainfile import feature_definition
from .chunk import PanelRequest, compute, finish_attrs, prepare, with_coverage
from .panelfile import PanelFolder, marker
from .scale import check_executor, run_panel, run_writes
from .spec import Feature

__all__ = ["panel", "write_panel"]


def panel(
    symbols: str | Iterable[str],
    start: DateLike,
    end: DateLike,
    features: Iterable[str | Feature] | str | Feature | None = None,
    *,
    freq: Any = "B",
    source: Any = None,
    known_at: TimeLike | Literal["row"] | None = None,
    errors: Errors = "raise",
    executor: Any = None,
    client: Any = None,
) -> pd.DataFrame:
    """Point-in-time features, one row per (date, symbol), ready for a model.

    The row for date D uses only what was public by the end of D: rows whose anchor date is
    on or before D (a timestamp: before D + 1 day, UTC), null anchors as in
    :func:`mdframes.point_in_time`. Windows are calendar days ``(D - n, D]``; an empty window
    gives 0 for sums and counts and NA for means and last values. Where a dataset has no
    history (app ratings start on 2026-09-03) its features are NA, and so are they where a
    lake source did not sync the row's window (``lake.coverage()``), never 0;
    ``attrs["coverage"]`` says per feature the first date with a value, the share of non-null
    rows and the rows left NA for lack of the lake's coverage (``uncovered``).

    Parameters
    ----------
    symbols : str or list of str
        The universe (normalised like the loaders': stripped, upper-cased).
    start, end : str, date, datetime or Timestamp
        First and last panel date (inclusive).
    features : str, Feature or list of them, optional
        Catalog names (:func:`catalog`) and custom :class:`Feature` objects; default: the
        whole catalog.
    freq : str
        A pandas frequency for the dates (default ``"B"``, Monday to Friday).
    source : None, dict or lake
        ``None``: load through ``client`` (concurrent per dataset, cached); a dict of
        loader-shaped frames by dataset name (``{"insider_trading": df, ...}``); or a lake
        (``md.Lake`` or any object with its ``read``).
    known_at : str, datetime, Timestamp or "row", optional
        With a lake: use only the versions fetched by then (a date alone: the end of that
        day); ``"row"``: the row for D uses the versions fetched by the end of D.
    errors : {"raise", "skip"}
        A symbol the service does not know (or that fails), or that a lake source never
        synced (or failed, or was not found for) a feature's dataset: raise (from a lake,
        ``NotInLakeError`` before anything is computed), or keep its rows with NA features,
        list it in ``attrs["failed"]`` and emit one ``SkippedSymbolsWarning``.
    executor : concurrent.futures.Executor, optional
        Compute chunks of symbols in parallel (a ``ProcessPoolExecutor``, Dask's
        ``Client.get_executor()``, ...); ``source`` must then be a lake or a dict of frames.
    client : Client, optional
        With ``source=None``; default: the default client.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``(date, symbol)``; one column per feature, ``Int64`` for counts and
        integer sums, ``float64`` otherwise.

    Examples
    --------
    >>> import mdframes as md
    >>> with md.sandbox.running() as client:
    ...     df = md.features.panel(["AAPL", "MSFT"], "2026-01-01", "2026-03-31",
    ...                            ["insider_net_value_90d", "news_count_7d"], client=client)
    """
    request = _request(
        executor, symbols, start, end, features,
        freq=freq, source=source, known_at=known_at, errors=errors, client=client,
    )  # fmt: skip
    if executor is None:
        result = compute(request, request.symbols)
        out = result.frame
        assert out is not None
        results = [result]
    else:
        out, results = run_panel(executor, request)
    out.attrs.update(finish_attrs(request, results))
    return out


def _request(executor: Any, *args: Any, **given: Any) -> PanelRequest:
    """The panel's arguments checked (:func:`~.chunk.prepare`), its executor too, and the
    lake's coverage read once."""
    request = prepare(*args, **given)
    if executor is not None:
        check_executor(executor, request)
    return with_coverage(request)


def write_panel(
    path: str | os.PathLike[str],
    symbols: str | Iterable[str],
    start: DateLike,
    end: DateLike,
    features: Iterable[str | Feature] | str | Feature | None = None,
    *,
    freq: Any = "B",
    source: Any = None,
    known_at: TimeLike | Literal["row"] | None = None,
    errors: Errors = "raise",
    executor: Any = None,
    chunk: int = 250,
) -> str:
    """Write the panel to a Parquet dataset at ``path``, one file per chunk of symbols,
    each written where it was computed (never the whole panel in one process), atomically.

    The chunks are written under ``path/_temporary/`` and moved into place when all are
    there; the marker ``path/_SUCCESS`` (the arguments and the part list, each part with its
    row count and SHA-256, which :func:`read_panel` checks) is written last.
    A folder without it is unfinished (an interrupted run): :func:`read_panel` refuses it,
    and the same call run again clears it and writes it anew. :func:`read_panel` reads the
    panel back equal to ``panel(...)``; ``pd.read_parquet(path)`` (DuckDB, Polars, Dask)
    reads its rows, ``date`` and ``symbol`` as columns, grouped by chunk (sort by ``date``
    for the panel's order): check for ``_SUCCESS`` first.

    Parameters
    ----------
    path : str or PathLike
        A folder (created; it must not hold files yet, except what an unfinished
        ``write_panel`` left) or an object-store URI (``s3://bucket/prefix``, as pyarrow
        reads it).
    symbols, start, end, features, freq, source, known_at, errors, executor
        As for :func:`panel`.
    chunk : int
        Symbols per file (and per task on ``executor``).

    Returns
    -------
    str
        ``path``.

    Examples
    --------
    >>> import multiprocessing
    >>> from concurrent.futures import ProcessPoolExecutor
    >>> spawn = multiprocessing.get_context("spawn")  # a lake's reader does not survive fork
    >>> with ProcessPoolExecutor(2, mp_context=spawn) as pool:
    ...     md.features.write_panel("panel/", ["AAPL", "MSFT"], "2026-01-05", "2026-06-30",
    ...                             ["insider_net_value_90d"], source=lake, executor=pool,
    ...                             chunk=1)
    'panel/'
    >>> md.features.read_panel("panel/").index.get_level_values("symbol").unique().tolist()
    ['AAPL', 'MSFT']
    """
    whole_number(chunk, "chunk", least=1, what="a whole number of symbols")
    require("pyarrow", "parquet", "write_panel")  # before any request is made
    request = _request(
        executor, symbols, start, end, features,
        freq=freq, source=source, known_at=known_at, errors=errors, client=None,
    )  # fmt: skip
    folder = PanelFolder.open(path)
    results = run_writes(executor, request, folder.staging, min(int(chunk), 2**31))
    attrs = finish_attrs(request, results)
    folder.commit(
        marker(
            symbols=request.symbols,
            dates=request.dates,
            features={f.name: feature_definition(f, None) for f in request.features},
            chunk=min(int(chunk), 2**31),
            rows=[r.cells for r in results],
            digests=[r.digest for r in results],
            source=request.source.describe(),
            known_at=request.known_at,
            errors=request.errors,
            attrs=attrs,
        )
    )
    return os.fspath(path) if not isinstance(path, str) else path
