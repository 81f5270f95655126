"""Request -> records: one GET, or a walk over a limit-capped window.

The client does the HTTP work and decodes the envelope (:mod:`mdframes.envelope`); this step
applies the dataset's extractor (:mod:`mdframes.records`) and, for limit-capped datasets asked
without a ``limit``, keeps asking for the part of the window a full page did not reach,
merging the pages by record id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from .errors import DataValidationError, ResponseFormatError
from .params import Request
from .records import Records, extract
from .registry import Dataset

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

__all__ = ["fetch", "WindowTooDenseError"]


class WindowTooDenseError(ResponseFormatError):
    """More records share one date than a page holds: the window cannot be walked."""


def fetch(client: Client, ds: Dataset, request: Request) -> Records:
    """The records behind one planned request (walking the window where the dataset is capped).

    >>> from mdframes.params import plan
    >>> from mdframes.registry import get
    >>> records = fetch(client, get("lobbying"), plan(get("lobbying"), "MSFT", {})[0])
    >>> records.symbol, sorted(records.rows[0])[:3]
    ('MSFT', ['clientName', 'date', 'expenses'])
    """
    hi = ds.limit_bounds[1]
    if ds.paged and request.query.get("limit") is None and hi is not None:
        return _walk(client, ds, request, hi)
    return _page(client, ds, request, request.query)


def _page(client: Client, ds: Dataset, request: Request, query: dict[str, Any]) -> Records:
    payload = client.get(request.path, query, version=ds.version, ttl=ds.ttl, dataset=ds.name)
    try:
        records = extract(ds, payload.data, request.path_values, payload.url)
        records.symbol = request.symbol
        records.sources.append(payload.request)
        _check_symbol(ds, request, records, payload)
    except (ResponseFormatError, DataValidationError):
        # Bad data stays an error, but not a cached one: the next call asks the service again.
        client.evict([payload.request])
        raise
    return records


def _check_symbol(ds: Dataset, request: Request, records: Records, payload: Any) -> None:
    """An answer about another symbol than the one asked for is a hard failure: labelling
    TSLA's rows AAPL would be invented data."""
    asked = request.symbol or request.path_values.get("ticker")
    if not asked:
        return
    sent = records.header.get("symbol", records.header.get("ticker"))
    if isinstance(sent, str) and sent.strip().upper() != asked:
        raise DataValidationError(
            f"{ds.name}: asked for {asked!r}, the answer is about {sent!r} (GET {payload.url})",
            dataset=ds.name,
            symbols=[request.symbol],
        )
    # A record may name its symbol too (a forecast prediction): another one is as bad.
    # Most records name none: only those that do are looked at.
    naming = [row for row in records.rows if "symbol" in row or "ticker" in row]
    others = sorted(
        {
            value
            for row in naming
            for value in (row.get("symbol"), row.get("ticker"))
            if isinstance(value, str) and value.strip().upper() != asked
        }
    )
    if others:
        raise DataValidationError(
            f"{ds.name}: asked for {asked!r}, records of the answer name "
            f"{', '.join(map(repr, others[:5]))} in column 'symbol' (GET {payload.url})",
            dataset=ds.name,
            symbols=[request.symbol],
        )


def _wire(ds: Dataset, column: str) -> str:
    return next((f.wire for f in ds.all_fields if f.name == column), column)


def _record_key(record: dict[str, Any], id_wires: Sequence[Sequence[str]]) -> tuple:
    # Per part of the identity, the first of its fields that is set ("a|b").
    key = tuple(
        next((v for w in part if (v := record.get(w)) is not None), None) for part in id_wires
    )
    if id_wires and None not in key:
        return key
    # No usable id (older shapes carry no app id): only an identical record is a duplicate.
    return ("record", orjson.dumps(record, option=orjson.OPT_SORT_KEYS))


def _check_keys(ds: Dataset, rows: list[dict[str, Any]], wires: list[str]) -> None:
    """The values a walk keys and pages on are text or numbers: a list or an object there
    is a malformed answer, named by its column, not a crash."""
    for wire in dict.fromkeys(wires):
        bad = [r[wire] for r in rows if isinstance(r.get(wire), (list, dict))]
        if bad:
            kind = "array" if isinstance(bad[0], list) else "object"
            column = next((f.name for f in ds.all_fields if f.wire == wire), wire)
            raise ResponseFormatError(
                f"column {column!r}: JSON {kind} where the spec says a single value "
                f"(e.g. {str(bad[0])[:60]})",
                dataset=ds.name,
            )


def _walk(client: Client, ds: Dataset, request: Request, page: int) -> Records:
    """Fetch the whole window: while a page comes back full, ask again for the part of the
    window it did not reach, and merge by record identity."""
    id_wires = [[_wire(ds, c) for c in part] for part in ds.merge_id.parts]
    date_wire = ds.filter_field or "date"
    query = dict(request.query, limit=page)
    merged: dict[tuple, dict[str, Any]] = {}
    walked = Records({}, [], symbol=request.symbol)
    requests_made = 0
    while True:
        got = _page(client, ds, request, query)
        requests_made += 1
        walked.header = walked.header or got.header
        walked.attrs.update(got.attrs)
        walked.sources.extend(got.sources)
        walked.notes.extend(n for n in got.notes if n not in walked.notes)
        before = len(merged)
        _check_keys(ds, got.rows, [*(w for part in id_wires for w in part), date_wire])
        # A later page repeats the boundary date in full; its copy replaces the first.
        merged.update((_record_key(record, id_wires), record) for record in got.rows)
        if got.limit_count < page:
            break
        dates: list[str] = [r[date_wire] for r in got.rows if r.get(date_wire)]
        if not dates or len(merged) == before:
            raise WindowTooDenseError(
                f"cannot walk the window past {query.get('endDate') or 'the newest date'}: "
                f"more than {page} records share one date",
                dataset=ds.name,
                url=request.path,
            )
        if dates[0] >= dates[-1]:  # newest first: continue below the oldest date seen
            query["endDate"] = min(dates)
        else:
            query["startDate"] = max(dates)
    walked.rows = list(merged.values())
    walked.attrs["requests"] = requests_made
    return walked
