"""The loading pipeline, in the order it runs:

    plan (params) -> fetch (fetch: page or walk; the client decodes the envelope)
    -> records (records) -> typed columns (frame) -> validate (schemas) -> order -> frame

:func:`load` is that sequence. Every public loader (:mod:`mdframes.loaders`,
:mod:`mdframes.v1`) is a thin call into it. A list of symbols is fetched concurrently on the
client's shared session; the columns are typed, validated and put in order once for the whole
batch, as arrays, and the frame is built from them last. A
response whose data turns out unusable is evicted from the HTTP cache here, in one place, so
the next call asks the service again.
"""

from __future__ import annotations

import contextvars
import sys
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any

import numpy as np
import pandas as pd

from ._typing import Errors, Validate
from .client import Client, resolve_client
from .errors import (
    AuthenticationError,
    ConfigurationError,
    DataQualityWarning,
    DataValidationError,
    InvalidParameterError,
    MdframesError,
    NotFoundError,
    RateLimitError,
    ResponseFormatError,
    SkippedSymbolsWarning,
    warn,
    warnings_from_threads,
)
from .fetch import fetch
from .frame import Typed, build_columns, columnize
from .identity import sort_key
from .params import Request, plan
from .progress import progress_bar
from .ratelimit import Cancelled
from .records import Records
from .registry import Dataset, get

__all__ = ["load", "Errors", "Validate", "PROGRESS_THRESHOLD"]

PROGRESS_THRESHOLD = 10
# Seconds a Ctrl-C waits for interrupted requests to return (they do at once unless blocked
# in a connect); within the second CONTRACT section 1 allows.
_INTERRUPT_GRACE = 0.5

# Errors about the account or the service as a whole: skipping a symbol cannot help.
# A cancelled load (Ctrl-C, a cancelled md.aio task) stops whatever `errors` says.
_FATAL = (AuthenticationError, RateLimitError, ConfigurationError, Cancelled)


def load(
    dataset: str,
    symbols: str | Iterable[str] | None = None,
    *,
    client: Client | None = None,
    validate: Validate = True,
    errors: Errors = "raise",
    **params: Any,
) -> pd.DataFrame:
    """Load any registry dataset by name.

    Parameters
    ----------
    dataset : str
        Registry name, e.g. ``"insider_trading"``, ``"screener/sentiment"``, ``"recent/news"``
        (``md.datasets()`` lists them; ``_`` and ``-`` are interchangeable).
    symbols : str or list of str, optional
        For per-symbol datasets; normalised (stripped, upper case).
    client : Client, optional
        Defaults to :func:`mdframes.get_default_client`.
    validate : bool or "strict"
        ``True``: hard rules raise, soft rules warn once and fill ``df.attrs["quality"]``;
        ``"strict"``: soft rules raise too; ``False``: no checks.
    errors : {"raise", "skip"}
        What one failing symbol does. With ``"skip"``, ``df.attrs["failed"]`` maps symbol to
        error text and a warning is emitted.
    **params
        The dataset's parameters (``start``, ``end``, ``limit``, ``market``, ...).

    Examples
    --------
    >>> df = md.load("insider_trading", ["AAPL", "MSFT"], start="2026-01-01")
    """
    ds = get(dataset)
    _check_options(ds, client, validate, errors)
    if ds.per_symbol and symbols is None:
        raise InvalidParameterError("no symbol given", parameter="symbols", dataset=ds.name)
    requests = plan(ds, symbols, {k: v for k, v in params.items() if v is not None})
    client = resolve_client(client)
    batches: list[Records] = []
    failed: dict[str, MdframesError] = {}
    # Configuration errors before any thread starts; an earlier Ctrl-C does not cancel this.
    # An answer whose data proves unusable is evicted from the HTTP cache (fetch evicts those
    # it cannot read), so the next call asks the service again.
    with client.loading():
        try:
            batches, failed = _fetch_all(client, ds, requests, errors)
            _oldest_first(ds, batches)
            fetched = list(batches)
            typed, batches = _build(ds, batches, failed, errors)
            quality: list[dict[str, Any]] = []
            if validate is not False:
                typed, quality = _validate(ds, typed, batches, failed, errors, validate == "strict")
                quality = _notes(ds, batches, validate == "strict") + quality
        except (ResponseFormatError, DataValidationError):
            client.evict([r for b in batches for r in b.sources])
            raise
        client.evict([r for b in fetched if b.symbol in failed for r in b.sources])
    frame = _order(ds, typed, batches)
    frame.attrs.update(_attrs(ds, batches))
    frame.attrs["quality"] = quality
    if quality:
        # The details in the text itself: a sync or a training set that loads keeps no frame.
        checks = "; ".join(
            f"{q['check']} on {', '.join(q['columns'])}: {q['rows']} row(s)"
            + (f" of {', '.join(q['symbols'][:5])}" if q.get("symbols") else "")
            for q in quality
        )
        warn(
            f"{ds.name}: data-quality checks failed ({checks}); kept as loaded "
            "(a loader's frame lists them in df.attrs['quality'])",
            DataQualityWarning,
        )
    if failed:
        frame.attrs["failed"] = {symbol: str(exc) for symbol, exc in failed.items()}
        warn(
            f"{ds.name}: {len(failed)} symbol(s) failed and were skipped: {', '.join(failed)}",
            SkippedSymbolsWarning,
        )
    return frame


def _check_options(ds: Dataset, client: Any, validate: Any, errors: Any) -> None:
    if errors not in ("raise", "skip"):
        raise InvalidParameterError(
            f"errors={errors!r} is not 'raise' or 'skip'", parameter="errors", dataset=ds.name
        )
    if validate not in (True, False, "strict"):
        raise InvalidParameterError(
            f"validate={validate!r} is not True, False or 'strict'",
            parameter="validate",
            dataset=ds.name,
        )
    if client is not None and not isinstance(client, Client):
        raise InvalidParameterError(
            f"client must be an md.Client, got {type(client).__name__}",
            parameter="client",
            dataset=ds.name,
        )


# --- fetch: every planned request, concurrently ---------------------------------------------


def _want_progress(client: Client, n: int) -> bool:
    if client.progress is not None:
        return bool(client.progress)
    if n < PROGRESS_THRESHOLD:
        return False
    if "ipykernel" in sys.modules:
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def _fetch_all(
    client: Client, ds: Dataset, requests: Sequence[Request], errors: Errors
) -> tuple[list[Records], dict[str, MdframesError]]:
    """Fetch each request's records, in the caller's order; with errors="skip" a failing
    symbol is set aside (all its requests: a congress symbol keeps no half)."""
    results: list[Records | None] = [None] * len(requests)
    failed: dict[str, MdframesError] = {}
    lock = threading.Lock()
    many = len(requests) > 1
    bar = progress_bar(len(requests), ds.name, many and _want_progress(client, len(requests)))

    def attempt(i: int) -> None:
        request = requests[i]
        try:
            got = fetch(client, ds, request)
            # Gathering columns here is free while other threads wait on the network.
            results[i] = columnize(ds, got) if many else got
        except MdframesError as exc:
            if errors == "raise" or isinstance(exc, _FATAL) or not request.symbol:
                if isinstance(exc, NotFoundError) and request.symbol:
                    _hint_not_found(client, exc, request.symbol)
                raise
            with lock:
                failed.setdefault(request.symbol, exc)
        finally:
            if bar is not None:
                bar.update(1)

    try:
        if not many:  # no thread for a single request
            attempt(0)
        else:
            _in_threads(client, attempt, len(requests))
    finally:
        if bar is not None:
            bar.close()
    batches = [r for r in results if r is not None and r.symbol not in failed]
    if failed and not batches:
        raise _all_failed(ds, failed)
    return batches, failed


def _hint_not_found(client: Client, exc: NotFoundError, symbol: str) -> None:
    """A 404 for a symbol says so, with the closest known symbols and ``errors="skip"``."""
    from .known import not_found_hint

    exc.args = (f"{exc.args[0] if exc.args else exc}. {not_found_hint(client, symbol)}",)


def _in_threads(client: Client, attempt: Any, n: int) -> None:
    """Run ``attempt(i)`` for each request on the client's worker count. No request outlives
    the call: on an error the ones not started are cancelled and those in flight are waited
    for (each is bounded by the client's timeout and retries), so the caller may close the
    client (and its cache file) as soon as the error reaches it."""
    with warnings_from_threads():
        _run_all(client, attempt, n)


def _run_all(client: Client, attempt: Any, n: int) -> None:
    pool = ThreadPoolExecutor(max_workers=min(client.max_workers, n), thread_name_prefix="mdframes")
    # Each request runs in a copy of the caller's context, so what the caller set there (a
    # lake sync's unit of work, which its budget charges; where warnings are held) follows
    # the request into the thread.
    futures = [pool.submit(contextvars.copy_context().run, attempt, i) for i in range(n)]
    try:
        wait(futures, return_when=FIRST_EXCEPTION)
        for fut in futures:
            failure = fut.exception() if fut.done() and not fut.cancelled() else None
            if failure is not None:
                raise failure
    except KeyboardInterrupt:
        # Ctrl-C: waits end, no request starts, open sockets are shut, so the threads in
        # flight return at once; a connect that cannot be cut is left to the timeout (and to
        # Client.close, which waits for it) rather than holding the user's Ctrl-C.
        client.interrupt()
        pool.shutdown(wait=False, cancel_futures=True)
        wait(futures, timeout=_INTERRUPT_GRACE)
        raise
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _all_failed(ds: Dataset, failed: dict[str, MdframesError]) -> MdframesError:
    # Every symbol failed: an empty frame would hide it. Raise the first error, naming all.
    first = next(iter(failed.values()))
    if len(failed) > 1:
        lines = "\n".join(f"  {s}: {e}" for s, e in failed.items())
        first.args = (f"{ds.name}: all {len(failed)} symbols failed:\n{lines}",)
    return first


# --- frame: typed once; a symbol whose records cannot be typed is attributed -------------------
# The typed columns are validated and put in order as arrays; the frame is built last, once.


def _build(
    ds: Dataset, batches: list[Records], failed: dict[str, MdframesError], errors: Errors
) -> tuple[Typed, list[Records]]:
    try:
        return build_columns(ds, batches, strict=False), batches
    except ResponseFormatError:
        if errors == "raise" and len({b.symbol for b in batches}) <= 1:
            raise
    # Find the symbols whose records cannot be typed (only on this failure path).
    bad: dict[str, ResponseFormatError] = {}
    for b in batches:
        try:
            build_columns(ds, [b], strict=False)
        except ResponseFormatError as exc:
            bad.setdefault(b.symbol, exc)
    if errors == "raise" or not bad:
        first = next(iter(bad.values()), None)
        if first is None:  # only the combination fails (should not happen): rebuild to raise
            build_columns(ds, batches, strict=False)
            raise ResponseFormatError("records that cannot be typed together", dataset=ds.name)
        raise _named(first, list(bad))
    failed.update(bad)
    keep = [b for b in batches if b.symbol not in bad]
    if not keep:
        raise _all_failed(ds, failed)
    return build_columns(ds, keep, strict=False), keep


def _named(exc: ResponseFormatError, symbols: list[str]) -> ResponseFormatError:
    if symbols and symbols != [""]:
        exc.args = (f"{exc.args[0]} [symbols: {', '.join(symbols)}]",)
    return exc


# --- validate: hard rules raise (or skip their symbols), soft rules are recorded --------------


def _validate(
    ds: Dataset,
    typed: Typed,
    batches: list[Records],
    failed: dict[str, MdframesError],
    errors: Errors,
    strict: bool,
) -> tuple[Typed, list[dict[str, Any]]]:
    from .schemas import check

    try:
        return typed, check(typed, ds.name, strict=strict)
    except DataValidationError as exc:
        if errors == "raise" or not exc.symbols or not ds.per_symbol:
            raise
        for symbol in exc.symbols:
            failed[symbol] = exc
    keep = [b for b in batches if b.symbol not in failed]
    if not keep:
        raise _all_failed(ds, failed)
    batches[:] = keep
    typed = build_columns(ds, keep, strict=False)
    return typed, check(typed, ds.name, strict=strict)


def _notes(ds: Dataset, batches: list[Records], strict: bool) -> list[dict[str, Any]]:
    """Soft failures the extractors recorded (an app without observations), per symbol."""
    notes = [{**n, "symbols": [b.symbol] if b.symbol else []} for b in batches for n in b.notes]
    if notes and strict:
        raise DataValidationError(
            f"{ds.name}: " + "; ".join(f"{n['check']}: {n['sample']}" for n in notes),
            dataset=ds.name,
            symbols=sorted({s for n in notes for s in n["symbols"]}),
        )
    return notes


# --- order and attrs ----------------------------------------------------------------------------


def _about_symbols(ds: Dataset) -> bool:
    """Frames of one symbol's history: per-symbol v2 datasets and v1's per-ticker ones (v1
    sends newest first too; CONTRACT §5 orders them as §2)."""
    return ds.per_symbol or ds.param("ticker") is not None


def _oldest_first(ds: Dataset, batches: list[Records]) -> None:
    """Reverse each answer the service sent newest first, before the frame is built: the
    common case then needs no sort at all (see :func:`_order`)."""
    wire = ds.filter_field or "date"
    if not _about_symbols(ds) or ds.time_column is None:
        return
    for b in batches:
        dates = b.columns.get(wire) or [r.get(wire) for r in b.rows]
        first, last = (dates[0], dates[-1]) if len(dates) > 1 else (None, None)
        # Only text dates compare; anything else is the frame's to report, by its column.
        if isinstance(first, str) and isinstance(last, str) and None not in dates and first > last:
            b.rows.reverse()
            b.columns = {k: v[::-1] for k, v in b.columns.items()}


def _order(ds: Dataset, typed: Typed, batches: list[Records]) -> pd.DataFrame:
    """Symbols in the caller's order, then time ascending, ties by the record identity's
    columns (never the service's arrival order, so a lake read of the same records gives the
    same frame): ready for ``shift``, ``rolling`` and ``merge_asof``. Cross-ticker frames keep
    the service's order. The rows are put in order as arrays, before the frame is built."""
    time = ds.time_column
    if not _about_symbols(ds) or time is None or time not in typed.columns or len(typed) < 2:
        return typed.frame()
    values = typed.columns[time]
    if not pd.api.types.is_datetime64_any_dtype(values.dtype):
        return typed.frame()  # the declared time column is a date or a timestamp; else no sort
    position = {b.symbol: i for i, b in reversed(list(enumerate(batches)))}
    block = np.repeat([position[b.symbol] for b in batches], [len(b.rows) for b in batches])
    # Times as integers (UTC for aware ones), missing ones last (NaT is the smallest int64).
    stamps = np.array(values.view("i8") if isinstance(values, np.ndarray) else values.asi8)
    stamps[stamps == np.iinfo("i8").min] = np.iinfo("i8").max
    key = sort_key([block, stamps])
    order = np.argsort(key, kind="stable")
    if (np.diff(key[order]) == 0).any():
        # Each tie key as ranks (shared with the duplicate rule), all folded into one integer
        # per row: one stable argsort (a frame's sort_values cost as much as the typing).
        ties = ds.identity.tie_ranks(typed, skip=("symbol", time), rank=typed.rank)
        if ties:
            order = np.argsort(sort_key([key, *ties]), kind="stable")
    if (order == np.arange(len(order))).all():
        return typed.frame()
    return typed.take(order).frame()


def _attrs(ds: Dataset, batches: Sequence[Records]) -> dict[str, Any]:
    attrs: dict[str, Any] = {"dataset": ds.name}
    keyed: dict[str, dict[str, Any]] = {}
    for batch in batches:
        for key, value in batch.attrs.items():
            if key == "requests":
                attrs["requests"] = attrs.get("requests", 0) + value
            else:
                keyed.setdefault(key, {})[batch.symbol] = value
    for key, by_symbol in keyed.items():
        # Cross-ticker (one response) or one symbol: the value itself.
        attrs[key] = next(iter(by_symbol.values())) if len(by_symbol) == 1 else by_symbol
    if ds.scope in ("screener", "recent"):
        attrs.setdefault("summary", {})
    return attrs
