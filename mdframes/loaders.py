"""The loaders: one generic pipeline, driven by the registry.

parameters -> requests -> (concurrent) responses -> records -> one typed frame -> schema.

Every public ``load_*`` function is a thin use of :func:`load`. A list of symbols is fetched
concurrently on the client's shared session, concatenated in the caller's order and
validated once. Limit-capped datasets walk the whole ``start``..``end`` window.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Iterable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any, Literal

import orjson
import pandas as pd

from .client import Client, resolve_client
from .errors import (
    AuthenticationError,
    ConfigurationError,
    DataValidationError,
    InvalidParameterError,
    MdframesError,
    RateLimitError,
    ResponseFormatError,
)
from .frame import build_frame, gather
from .params import Request, build_request, check_symbols
from .progress import progress_bar
from .records import Chunk, count_records, extract
from .registry import (
    RECENT_DATASETS,
    REGISTRY,
    SCREENER_DATASETS,
    Dataset,
    get,
)

__all__ = [
    "load",
    "load_forecast",
    "load_sentiment",
    "load_news",
    "load_analyst_ratings",
    "load_put_call_ratio",
    "load_insider_trading",
    "load_congress_trades",
    "load_lobbying",
    "load_government_contracts",
    "load_patent_filings",
    "load_app_ratings",
    "load_professionalnet",
    "load_forum_mentions",
    "load_tickers",
    "load_markets",
    "load_regions",
    "load_screener",
    "load_recent",
]

Errors = Literal["raise", "skip"]
Symbols = "str | Iterable[str]"
PROGRESS_THRESHOLD = 10


# --- planning ------------------------------------------------------------------------------------


def _plan(
    ds: Dataset, symbols: Any, params: dict[str, Any]
) -> list[tuple[Request, dict[str, Any]]]:
    """Check everything and list the requests, before any of them is sent."""
    unknown = set(params) - {p.name for p in ds.params}
    if unknown:
        raise InvalidParameterError(f"unexpected parameter(s) {sorted(unknown)}", dataset=ds.name)
    variants: list[dict[str, Any]] = [params]
    chamber = ds.param("chamber")
    if chamber is not None:
        value = params.get("chamber", chamber.default)
        if value not in chamber.choices:
            raise InvalidParameterError(
                f"chamber={value!r} is not one of {', '.join(map(repr, chamber.choices))}",
                parameter="chamber",
                dataset=ds.name,
            )
        chambers = ("house", "senate") if value == "both" else (value,)
        variants = [dict(params, chamber=c) for c in chambers]
    if "{symbol}" not in ds.path:
        return [(build_request(ds, v), _context(ds, v)) for v in variants]
    checked = check_symbols(symbols, dataset=ds.name)
    return [(build_request(ds, v, symbol=s), _context(ds, v)) for s in checked for v in variants]


def _context(ds: Dataset, values: dict[str, Any]) -> dict[str, Any]:
    """Header values known from the request, used when a payload omits them."""
    header = {f.wire for f in ds.header}
    return {
        p.name: values.get(p.name, p.default)
        for p in ds.params
        if p.wire.startswith("{") and p.name in header
    }


# --- fetching ------------------------------------------------------------------------------------


def _wire(ds: Dataset, column: str) -> str:
    for f in ds.all_fields:
        if f.name == column:
            return f.wire
    return column


def _fetch(client: Client, ds: Dataset, req: Request, context: dict[str, Any]) -> list[Chunk]:
    lo, hi = ds.limit_bounds
    if ds.paged and req.query.get("limit") is None and hi is not None:
        return [_walk(client, ds, req, context, hi)]
    payload = client.get(req.path, req.query, version=ds.version, ttl=ds.ttl, dataset=ds.name)
    chunk = _extract(client, ds, payload, context)
    chunk.sources.append(payload.request)
    return [chunk]


def _extract(client: Client, ds: Dataset, payload: Any, context: dict[str, Any]) -> Chunk:
    try:
        return extract(ds, payload.data, context, payload.url)
    except ResponseFormatError:
        client.evict([payload.request])  # a wrong-shape body must not be replayed from cache
        raise


def _record_key(record: dict[str, Any], id_wires: Sequence[str]) -> tuple:
    key = tuple(record.get(w) for w in id_wires)
    if id_wires and None not in key:
        return key
    # No usable id (older shapes carry no app id): only an identical record is a duplicate.
    return ("record", orjson.dumps(record, option=orjson.OPT_SORT_KEYS))


def _walk(client: Client, ds: Dataset, req: Request, context: dict[str, Any], page: int) -> Chunk:
    """Fetch the whole window of a limit-capped dataset: while a page comes back full, ask
    again for the part of the window it did not reach, and merge by record id."""
    id_wires = [_wire(ds, c) for c in ds.record_id]
    date_wire = "date" if ds.shape.startswith("app_ratings") else (ds.window or "date")
    query = dict(req.query, limit=page)
    merged: dict[tuple, dict[str, Any]] = {}
    header: dict[str, Any] = {}
    attrs: dict[str, Any] = {}
    requests_made = 0
    sources: list[Any] = []
    while True:
        payload = client.get(req.path, query, version=ds.version, ttl=ds.ttl, dataset=ds.name)
        requests_made += 1
        chunk = _extract(client, ds, payload, context)
        sources.append(payload.request)
        header = header or chunk.header
        attrs.update(chunk.attrs)
        before = len(merged)
        for record in chunk.records:
            # A later page repeats the boundary date in full; its copy replaces the first.
            merged[_record_key(record, id_wires)] = record
        if count_records(ds, payload.data) < page:
            break
        dates: list[str] = [str(r[date_wire]) for r in chunk.records if r.get(date_wire)]
        if not dates or len(merged) == before:
            raise MdframesError(
                f"{ds.name}: cannot walk the window past {query.get('endDate') or 'the newest date'}: "
                f"more than {page} records share one date ({payload.url})"
            )
        newest_first = dates[0] >= dates[-1]
        if newest_first:
            query["endDate"] = min(dates)
        else:
            query["startDate"] = max(dates)
    ordered = list(merged.values())
    if requests_made > 1:  # pages overlap on their boundary date: restore newest-first order
        ordered.sort(key=lambda r: str(r.get(date_wire) or ""), reverse=True)
    attrs["requests"] = requests_made
    return Chunk(header, ordered, attrs, sources)


def _want_progress(client: Client, n: int) -> bool:
    if client.progress is not None:
        return bool(client.progress)
    if n < PROGRESS_THRESHOLD:
        return False
    if "ipykernel" in sys.modules:
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


# Errors about the account or the service as a whole: skipping a symbol cannot help.
_FATAL = (AuthenticationError, RateLimitError, ConfigurationError)


def _run(
    client: Client,
    ds: Dataset,
    plan: Sequence[tuple[Request, dict[str, Any]]],
    errors: Errors,
) -> tuple[list[list[Chunk] | None], dict[str, MdframesError]]:
    results: list[list[Chunk] | None] = [None] * len(plan)
    failed: dict[str, MdframesError] = {}
    lock = threading.Lock()
    bar = progress_bar(len(plan), ds.name, len(plan) > 1 and _want_progress(client, len(plan)))

    def attempt(i: int) -> None:
        req, ctx = plan[i]
        try:
            got = _fetch(client, ds, req, ctx)
            if len(plan) > 1:
                got = [gather(ds, chunk) for chunk in got]
            results[i] = got
        except MdframesError as exc:
            if errors == "raise" or isinstance(exc, _FATAL) or not req.label:
                raise
            with lock:
                failed.setdefault(req.label, exc)
        finally:
            if bar is not None:
                bar.update(1)

    if len(plan) == 1:  # no thread for a single request
        attempt(0)
        return results, failed
    pool = ThreadPoolExecutor(
        max_workers=min(client.max_workers, len(plan)), thread_name_prefix="mdframes"
    )
    try:
        futures = [pool.submit(attempt, i) for i in range(len(plan))]
        wait(futures, return_when=FIRST_EXCEPTION)
        for fut in futures:
            if fut.done() and fut.exception() is not None:
                for other in futures:
                    other.cancel()
                raise fut.exception()  # type: ignore[misc]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if bar is not None:
            bar.close()
    return results, failed


# --- assembling ----------------------------------------------------------------------------------


def _assemble(ds: Dataset, chunks: list[Chunk], labels: list[str], validate: bool) -> pd.DataFrame:
    frame = build_frame(ds, chunks, strict=validate)
    if validate:
        from .schemas import validate as check

        frame = check(frame, ds.name)
    return frame


def _attrs(ds: Dataset, chunks: list[Chunk], labels: list[str]) -> dict[str, Any]:
    attrs: dict[str, Any] = {"dataset": ds.name}
    keyed: dict[str, dict[str, Any]] = {}
    for chunk, label in zip(chunks, labels, strict=True):
        for key, value in chunk.attrs.items():
            if key == "requests":
                attrs["requests"] = attrs.get("requests", 0) + value
                continue
            if key == "last_updated":
                value = pd.Timestamp(value)
                value = (
                    value.tz_localize("UTC") if value.tzinfo is None else value.tz_convert("UTC")
                )
            keyed.setdefault(key, {})[label] = value
    for key, by_label in keyed.items():
        distinct = list(by_label)
        # One symbol (or a cross-ticker endpoint): the value itself; several: keyed by symbol.
        attrs[key] = by_label[distinct[0]] if len(distinct) == 1 else by_label
    return attrs


def load(
    dataset: str,
    symbols: str | Iterable[str] | None = None,
    *,
    client: Client | None = None,
    validate: bool = True,
    errors: Errors = "raise",
    **params: Any,
) -> pd.DataFrame:
    """Load any registry dataset by name.

    Parameters
    ----------
    dataset : str
        Registry name, e.g. ``"insider_trading"``, ``"screener/sentiment"``, ``"recent/news"``.
    symbols : str or list of str, optional
        For per-symbol datasets.
    client : Client, optional
        Defaults to :func:`mdframes.get_default_client`.
    validate : bool
        Validate against the dataset's pandera schema.
    errors : {"raise", "skip"}
        What one failing symbol does. With ``"skip"``, ``df.attrs["failed"]`` maps symbol to
        error text and a warning is emitted.
    **params
        The dataset's parameters (``start``, ``end``, ``limit``, ``market``, ...).

    Examples
    --------
    >>> df = md.load("insider_trading", ["AAPL", "MSFT"], start="2026-01-01")  # doctest: +SKIP
    """
    ds = get(dataset)
    if errors not in ("raise", "skip"):
        raise InvalidParameterError(
            f"errors={errors!r} is not 'raise' or 'skip'", parameter="errors"
        )
    if "{symbol}" in ds.path and symbols is None:
        raise InvalidParameterError("no symbol given", parameter="symbols", dataset=ds.name)
    params = {k: v for k, v in params.items() if v is not None}
    plan = _plan(ds, symbols, params)
    client = resolve_client(client)
    client._require()  # configuration errors before any thread starts
    results, failed = _run(client, ds, plan, errors)

    chunks: list[Chunk] = []
    labels: list[str] = []
    for (req, _), got in zip(plan, results, strict=True):
        if got is None:
            continue
        chunks.extend(got)
        labels.extend([req.label] * len(got))
    if errors == "skip":
        chunks, labels = _drop_unreadable(ds, chunks, labels, failed)
        if failed and not chunks:
            # Every symbol failed: an empty frame would hide it. Raise the first error.
            raise next(iter(failed.values()))
    try:
        frame = _assemble(ds, chunks, labels, validate)
    except (ResponseFormatError, DataValidationError):
        # Bad data stays an error, but not a cached one: the next call asks the service again.
        client.evict([r for c in chunks for r in c.sources])
        raise
    frame.attrs.update(_attrs(ds, chunks, labels))
    if failed:
        frame.attrs["failed"] = {label: str(exc) for label, exc in failed.items()}
        warnings.warn(
            f"{ds.name}: {len(failed)} symbol(s) failed and were skipped: {', '.join(failed)}",
            stacklevel=2,
        )
    return frame


def _drop_unreadable(
    ds: Dataset, chunks: list[Chunk], labels: list[str], failed: dict[str, MdframesError]
) -> tuple[list[Chunk], list[str]]:
    """With errors="skip", a symbol whose records cannot be typed is skipped, not fatal."""
    try:
        build_frame(ds, chunks, strict=False)
        return chunks, labels
    except ResponseFormatError:
        pass
    keep_c, keep_l = [], []
    for chunk, label in zip(chunks, labels, strict=True):
        try:
            build_frame(ds, [chunk], strict=False)
        except ResponseFormatError as exc:
            failed[label] = exc
            continue
        keep_c.append(chunk)
        keep_l.append(label)
    return keep_c, keep_l


# --- the public loaders --------------------------------------------------------------------------


def _window_loader(name: str, example: str) -> Any:
    ds = REGISTRY[name]
    lo, hi = ds.limit_bounds
    bounds = f"{lo} to {hi}" if hi else f">= {lo}"
    paged = (
        "\n    With ``limit=None`` the whole ``start``..``end`` window is returned, walked in\n"
        f"    successive requests of {hi} and de-duplicated by ``{', '.join(ds.record_id)}``."
        if ds.paged
        else ""
    )

    def loader(
        symbols: str | Iterable[str],
        start: Any = None,
        end: Any = None,
        limit: int | None = None,
        *,
        client: Client | None = None,
        validate: bool = True,
        errors: Errors = "raise",
    ) -> pd.DataFrame:
        return load(
            name,
            symbols,
            start=start,
            end=end,
            limit=limit,
            client=client,
            validate=validate,
            errors=errors,
        )

    loader.__name__ = loader.__qualname__ = f"load_{name}"
    loader.__module__ = __name__
    loader.__doc__ = f"""{ds.description}

    ``GET {ds.path}``; columns: ``{", ".join(ds.columns)}``.{paged}

    Parameters
    ----------
    symbols : str or list of str
        One symbol or many (fetched concurrently, concatenated in this order).
    start, end : str, date, datetime or Timestamp, optional
        Inclusive window (``startDate``/``endDate``).
    limit : int, optional
        Maximum records ({bounds}).
    client : Client, optional
    validate : bool
        Validate against ``mdframes.schemas.get("{name}")``.
    errors : {{"raise", "skip"}}

    Examples
    --------
    >>> {example}  # doctest: +SKIP
    """
    return loader


load_sentiment = _window_loader("sentiment", 'md.load_sentiment("AAPL", start="2026-01-01")')
load_news = _window_loader("news", 'md.load_news(["AAPL", "MSFT"], limit=50)')
load_analyst_ratings = _window_loader("analyst_ratings", 'md.load_analyst_ratings("AAPL")')
load_put_call_ratio = _window_loader(
    "put_call_ratio", 'md.load_put_call_ratio("TSLA", end="2026-06-30")'
)
load_insider_trading = _window_loader(
    "insider_trading", 'md.load_insider_trading(["AAPL", "NVDA"])'
)
load_lobbying = _window_loader("lobbying", 'md.load_lobbying("MSFT", start="2024-01-01")')
load_government_contracts = _window_loader(
    "government_contracts", 'md.load_government_contracts("LMT")'
)
load_patent_filings = _window_loader(
    "patent_filings", 'md.load_patent_filings("AAPL", start="2025-01-01")'
)
load_professionalnet = _window_loader("professionalnet", 'md.load_professionalnet("AAPL")')
load_forum_mentions = _window_loader("forum_mentions", 'md.load_forum_mentions("GME")')


def load_forecast(
    symbols: str | Iterable[str],
    type: str = "daily",
    *,
    client: Client | None = None,
    validate: bool = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Forward price forecasts, one row per forecast date.

    Columns ``symbol, name, type, date, mid, lower, upper``; ``attrs["metadata"]`` holds the
    expected-move numbers (floats, snake_case keys) and ``attrs["last_updated"]`` a UTC
    Timestamp (both keyed by symbol when several symbols are loaded).

    Examples
    --------
    >>> df = md.load_forecast("AAPL", type="monthly")  # doctest: +SKIP
    >>> df.attrs["metadata"]["expected_short_term"]     # doctest: +SKIP
    """
    return load("forecast", symbols, type=type, client=client, validate=validate, errors=errors)


def load_congress_trades(
    symbols: str | Iterable[str],
    chamber: str = "both",
    start: Any = None,
    end: Any = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: bool = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """US House and/or Senate member trades (``chamber``: ``"house"``, ``"senate"``, ``"both"``).

    ``start``/``end`` filter on the trade date, not the disclosure date. Older responses
    without ``owner``/``amountRaw``/``amountFlag`` load with those columns as NA.

    Examples
    --------
    >>> df = md.load_congress_trades("NVDA", chamber="senate")  # doctest: +SKIP
    >>> md.congress_amount_bounds(df)                            # doctest: +SKIP
    """
    return load(
        "congress_trades",
        symbols,
        chamber=chamber,
        start=start,
        end=end,
        limit=limit,
        client=client,
        validate=validate,
        errors=errors,
    )


def load_app_ratings(
    symbols: str | Iterable[str],
    start: Any = None,
    end: Any = None,
    limit: int | None = None,
    view: str = "apps",
    *,
    client: Client | None = None,
    validate: bool = True,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Mobile app ratings.

    ``view="apps"``: one row per app per platform per date (``symbol, name, cik, platform,
    app_id, app_name, date, score, ratings_count, install_count``). ``view="daily"``: one row
    per date (``symbol, name, date, ios_score, ios_ratings_count, android_score,
    android_ratings_count, android_install_count``). History begins 2026-09-03.

    Examples
    --------
    >>> md.load_app_ratings("AAPL", start="2026-09-03", view="daily")  # doctest: +SKIP
    """
    views = {"apps": "app_ratings", "daily": "app_ratings_daily"}
    if view not in views:
        raise InvalidParameterError(
            f"view={view!r} is not one of 'apps', 'daily'", parameter="view", dataset="app_ratings"
        )
    return load(
        views[view],
        symbols,
        start=start,
        end=end,
        limit=limit,
        client=client,
        validate=validate,
        errors=errors,
    )


def load_tickers(
    type: str | None = None,
    market: str | None = None,
    region: str | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: bool = True,
) -> pd.DataFrame:
    """Tickers with predictions available, optionally filtered.

    Examples
    --------
    >>> md.load_tickers(market="S&P 500")  # doctest: +SKIP
    """
    return load(
        "tickers",
        type=type,
        market=market,
        region=region,
        limit=limit,
        client=client,
        validate=validate,
    )


def load_markets(*, client: Client | None = None, validate: bool = True) -> pd.DataFrame:
    """Markets (``name``, the value of the ``market`` filter) and their ``region``.

    Examples
    --------
    >>> md.load_markets()  # doctest: +SKIP
    """
    return load("markets", client=client, validate=validate)


def load_regions(*, client: Client | None = None, validate: bool = True) -> pd.DataFrame:
    """Markets grouped by region (every field the service returns is kept).

    Examples
    --------
    >>> md.load_regions()  # doctest: +SKIP
    """
    return load("regions", client=client, validate=validate)


def _cross(kind: str, names: Sequence[str], dataset: str) -> str:
    if dataset not in names:
        raise InvalidParameterError(
            f"unknown {kind} dataset {dataset!r}; one of: {', '.join(names)}", parameter="dataset"
        )
    return f"{kind}/{dataset}"


def load_screener(
    dataset: str,
    market: str | None = None,
    region: str | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: bool = True,
) -> pd.DataFrame:
    """One dataset across many tickers; the summary goes to ``attrs["summary"]``.

    ``dataset`` is the path tail: ``"sentiment"``, ``"insider-trading"``, ``"congress/house"``,
    ``"predictions/daily"``, ... Sentiment, professionalnet and app-ratings need ``market`` or
    ``region``.

    Examples
    --------
    >>> md.load_screener("sentiment", region="US", limit=20000)  # doctest: +SKIP
    """
    name = _cross("screener", SCREENER_DATASETS, dataset)
    return load(name, market=market, region=region, limit=limit, client=client, validate=validate)


def load_recent(
    dataset: str,
    market: str | None = None,
    region: str | None = None,
    limit: int | None = None,
    *,
    client: Client | None = None,
    validate: bool = True,
) -> pd.DataFrame:
    """Latest entries across all tickers (``"news"`` or ``"analyst-ratings"``).

    Examples
    --------
    >>> md.load_recent("news", limit=200).attrs["summary"]  # doctest: +SKIP
    """
    name = _cross("recent", RECENT_DATASETS, dataset)
    return load(name, market=market, region=region, limit=limit, client=client, validate=validate)
