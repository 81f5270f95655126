"""Payload -> records: where the rows sit in each response shape.

Each extractor turns one decoded payload into :class:`Records`: the top-level scalar fields
(repeated on every row: symbol, name, chamber, cik, ...), the list of records (still keyed by
the service's field names), how many of them the service counted against ``limit``, and what
belongs in ``df.attrs``. The registry entry's ``shape`` names the extractor. A payload without
its records is a :class:`ResponseFormatError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import ResponseFormatError
from .registry import PLATFORMS, V1_FORECAST_META, Dataset, snake

__all__ = ["Records", "extract", "EXTRACTORS", "parse_v1_forecast"]

_DATE_KEY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# Keys that hold structure, not per-row values, in the payloads we know.
_STRUCTURAL = {"summary", "metadata", "meta"}
# Preferred names when an unknown payload holds several lists.
_LIST_PREFERENCE = ("data", "articles", "records", "items", "results", "mentions", "metrics")


@dataclass
class Records:
    """What one response (or one walked window) holds for the frame."""

    header: dict[str, Any]  # top-level values repeated on every row (symbol, name, cik, ...)
    rows: list[dict[str, Any]]  # the records, keyed by wire names
    attrs: dict[str, Any] = field(default_factory=dict)
    counted: int | None = None  # records the service counted against `limit` (None: len(rows))
    sources: list[Any] = field(default_factory=list)  # requests behind it (cache eviction)
    symbol: str = ""  # the symbol requested ("" for cross-ticker endpoints)
    # Declared fields' values as lists, filled in the fetching threads (frame.columnize).
    columns: dict[str, list[Any]] = field(default_factory=dict)
    # Soft failures found while extracting (an app without observations): entries of
    # ``df.attrs["quality"]`` without the symbols, which the pipeline adds.
    notes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def limit_count(self) -> int:
        return len(self.rows) if self.counted is None else self.counted


def _fail(ds: Dataset, message: str, url: str | None = None) -> ResponseFormatError:
    return ResponseFormatError(message, dataset=ds.name, url=url)


def _scalars(obj: dict[str, Any], skip: str | None = None) -> dict[str, Any]:
    return {
        k: v
        for k, v in obj.items()
        if k != skip and k not in _STRUCTURAL and not isinstance(v, (list, dict))
    }


def _as_dict(ds: Dataset, data: Any, url: str | None) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _fail(ds, f"expected an object in `data`, got {type(data).__name__}", url)
    return data


def _check_rows(ds: Dataset, rows: Any, where: str, url: str | None) -> list[dict[str, Any]]:
    # null where the spec promises a list is not "no records": an empty frame would hide it.
    if rows is None:
        raise _fail(ds, f"`{where}` is null where the service promises a list of records", url)
    if not isinstance(rows, list):
        raise _fail(ds, f"`{where}` is a {type(rows).__name__}, not a list of records", url)
    bad = [r for r in rows if not isinstance(r, dict)]
    if bad:
        raise _fail(
            ds, f"`{where}` holds {len(bad)} non-record item(s), e.g. {str(bad[0])[:60]!r}", url
        )
    return rows


def _record_list(ds: Dataset, data: dict[str, Any], key: str, url: str | None) -> list[dict]:
    if key not in data:
        raise _fail(
            ds, f"payload has no `{key}` list (keys: {', '.join(map(str, data)) or 'none'})", url
        )
    return _check_rows(ds, data[key], key, url)


def _summary(data: dict[str, Any]) -> dict[str, Any]:
    summary = data.get("summary")
    return (
        {"summary": {snake(k): v for k, v in summary.items()}} if isinstance(summary, dict) else {}
    )


def _records(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Records:
    # v1 lists come bare; v2 cross-ticker endpoints send `data` bare as often as wrapped.
    if isinstance(data, list) and (ds.version == "v1" or not ds.per_symbol):
        records, header = _check_rows(ds, data, "data", url), {}
    else:
        data = _as_dict(ds, data, url)
        records = _record_list(ds, data, ds.records or "data", url)
        header = _scalars(data, skip=ds.records)
    header.update((key, value) for key, value in context.items() if header.get(key) is None)
    return Records(header, records, _summary(data) if isinstance(data, dict) else {})


def _find_list(ds: Dataset, data: dict[str, Any]) -> str | None:
    candidates = [
        k
        for k, v in data.items()
        if k not in _STRUCTURAL and isinstance(v, list) and (not v or isinstance(v[0], dict))
    ]
    if ds.records in candidates:
        return ds.records
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    for name in _LIST_PREFERENCE:
        if name in candidates:
            return name
    return max(candidates, key=lambda k: len(data[k]))


def _auto(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Records:
    """Shapes the spec does not show: find the record list wherever it sits."""
    if isinstance(data, list):
        return Records(dict(context), _check_rows(ds, data, "data", url))
    data = _as_dict(ds, data, url)
    for known in (ds.records, "data"):
        if known and known in data and data[known] is None:
            _check_rows(ds, None, known, url)  # a null list is an error, not "no records"
    key = _find_list(ds, data)
    if key is None:
        nested = [k for k, v in data.items() if isinstance(v, dict) and k not in _STRUCTURAL]
        for k in nested:  # one level down, e.g. {"data": {"items": [...]}}
            inner = _find_list(ds, data[k])
            if inner is not None:
                return Records(_scalars(data) | context, data[k][inner], _summary(data))
        if set(_scalars(data)) - {"symbol", "name"} or nested:
            # A single snapshot record rather than a list.
            return Records(dict(context), [data], _summary(data))
        raise _fail(ds, f"no records found in payload (keys: {', '.join(data) or 'none'})", url)
    header = _scalars(data, skip=key)
    for k, v in context.items():
        header.setdefault(k, v)
    return Records(header, _check_rows(ds, data[key], key, url), _summary(data))


def _forecast(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Records:
    data = _as_dict(ds, data, url)
    records = _records(ds, data, context, url)
    meta = data.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise _fail(ds, f"forecast `metadata` is not an object: {meta!r}", url)
    # The metadata numbers describe the whole forecast: header values, one column each, so one
    # symbol and many give the same shape (CONTRACT §2).
    for key, value in (meta or {}).items():
        records.header.setdefault(key, value)
    return records


def _app_apps(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Records:
    """One record per app per platform per date; older weekly shape -> NA app id/name."""
    data = _as_dict(ds, data, url)
    header = _scalars(data)
    rows: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    if "apps" in data:
        apps = _check_rows(ds, data["apps"], "apps", url)
        observed = _app_observations(ds, data, url)
        for i, app in enumerate(apps):
            base = {
                "platform": app.get("platform"),
                "appId": app.get("appId"),
                "appName": app.get("appName"),
            }
            if i not in observed:
                notes.append(_no_observations(base))
                continue
            extra = {k: v for k, v in app.items() if k not in base and k != "observations"}
            rows += [{**base, **extra, **obs} for obs in observed[i]]
    elif "data" in data:
        for entry in _record_list(ds, data, "data", url):
            for platform in PLATFORMS:
                obj = entry.get(platform)
                if not isinstance(obj, dict):
                    continue
                rows.append(
                    {
                        "platform": platform,
                        "appId": None,
                        "appName": None,
                        "date": entry.get("date"),
                        **obj,
                    }
                )
    else:
        raise _fail(ds, "app-ratings payload has neither `apps` nor `data`", url)
    # The service counts app-date observations against `limit`: exactly these rows.
    return Records(header, rows, counted=len(rows), notes=notes)


def _no_observations(app: dict[str, Any]) -> dict[str, Any]:
    """An app listed without its ``observations``: its rows cannot be told, so they are
    missing from the frame; say so instead of dropping the app without a word."""
    return {
        "check": "app_observations",
        "columns": ["platform", "app_id", "app_name"],
        "rows": 0,
        "symbols": [],
        "sample": [{snake(k): v for k, v in app.items()}],
    }


def _app_daily(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Records:
    data = _as_dict(ds, data, url)
    rows = []
    objects = 0
    for entry in _record_list(ds, data, "data", url):
        row = {k: v for k, v in entry.items() if k not in PLATFORMS}
        for platform in PLATFORMS:
            obj = entry.get(platform)
            if isinstance(obj, dict):
                objects += 1
                for k, v in obj.items():
                    row[platform + k[:1].upper() + k[1:]] = v
        rows.append(row)
    # The daily view is about dates; cik stays with the apps view.
    header = {k: v for k, v in _scalars(data).items() if k != "cik"}
    return Records(header, rows, counted=_app_records_counted(ds, data, objects, url))


def _app_records_counted(ds: Dataset, data: dict[str, Any], objects: int, url: str | None) -> int:
    """How many records the service counted against ``limit`` for this answer.

    ``limit`` counts app-date records, and ``data`` shows only the biggest app per platform:
    a company with seven apps fills a 500-record page with about 72 dates, of which ``data``
    shows two objects each. Counting those objects made a full page look short and ended the
    window walk early, losing every older date (issue 18). The ``apps`` list of the same
    answer holds every counted record; the older shape has none and counts its objects.
    """
    if "apps" not in data:
        return objects
    return sum(len(obs) for obs in _app_observations(ds, data, url).values())


def _app_observations(
    ds: Dataset, data: dict[str, Any], url: str | None
) -> dict[int, list[dict[str, Any]]]:
    """Each app's observations by its position in ``apps`` (apps without any are left out)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for i, app in enumerate(_check_rows(ds, data["apps"], "apps", url)):
        if "observations" in app:
            out[i] = _check_rows(ds, app["observations"], "apps[].observations", url)
    return out


def _v1_markets(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Records:
    data = _as_dict(ds, data, url)
    names = data.get(ds.records or "")
    if not isinstance(names, list):
        raise _fail(ds, f"payload has no `{ds.records}` list", url)
    return Records({}, [{"market": n} for n in names])


def _v1_market_forecasts(
    ds: Dataset, data: Any, context: dict[str, Any], url: str | None
) -> Records:
    if not isinstance(data, list):
        raise _fail(ds, "expected a list of forecast entries", url)
    rows = []
    for entry in data:
        if not isinstance(entry, dict):
            raise _fail(ds, "forecast entry is not an object", url)
        pred = entry.get("prediction") or {}
        row = {k: v for k, v in entry.items() if k != "prediction"}
        row.update({k: v for k, v in pred.items() if not _DATE_KEY.match(k)})
        rows.append(row)
    return Records({}, rows)


_FORECAST_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _forecast_triple(date: str, value: Any) -> list[float]:
    parts = value.split(",") if isinstance(value, str) else value
    try:
        if isinstance(parts, (str, bytes)) or not isinstance(parts, Sequence) or len(parts) != 3:
            raise ValueError
        return [float(p.strip() if isinstance(p, str) else p) for p in parts]
    except (TypeError, ValueError):
        raise ResponseFormatError(
            f"v1 forecast value for {date} is not 'main,lower,upper': {value!r}",
            dataset="v1/ticker_forecast",
        ) from None


def parse_v1_forecast(prediction: Mapping[str, Any]) -> list[tuple[str, float, float, float]]:
    """The dated entries of a v1 ``prediction`` object: ``(date, main, lower, upper)``.

    Date keys (``YYYY-MM-DD``) hold ``"main,lower,upper"`` text or a three-number list; every
    other key (``expectedShort``, ``type``, ``lastUpdate``, ...) is left alone.

    >>> parse_v1_forecast({"2024-03-06": "101.5,99.0,104.0", "type": "daily"})
    [('2024-03-06', 101.5, 99.0, 104.0)]
    """
    out = []
    for key, value in prediction.items():
        if isinstance(key, str) and _FORECAST_DATE.fullmatch(key):
            main, lower, upper = _forecast_triple(key, value)
            out.append((key, main, lower, upper))
    return out


def _v1_ticker_forecast(
    ds: Dataset, data: Any, context: dict[str, Any], url: str | None
) -> Records:
    data = _as_dict(ds, data, url)
    pred = data.get("prediction")
    if not isinstance(pred, dict):
        raise _fail(ds, "ticker forecast has no `prediction` object", url)
    rows = [
        {"date": d, "mid": m, "lower": lo, "upper": hi} for d, m, lo, hi in parse_v1_forecast(pred)
    ]
    header = _scalars(data)
    header.setdefault("type", pred.get("type"))
    # The forecast's own numbers are per-symbol header values: columns on every row.
    header.update((f.wire, pred.get(f.wire)) for f in V1_FORECAST_META)
    header["lastUpdate"] = pred.get("lastUpdate")
    attrs: dict[str, Any] = {}
    if pred.get("technicalAnalysis"):
        attrs["technical_analysis"] = pred["technicalAnalysis"]
    sentiment = data.get("sentimentAnalysis")
    if sentiment is not None:
        if not isinstance(sentiment, dict):
            raise _fail(ds, "`sentimentAnalysis` is not an object of date -> score", url)
        try:
            attrs["sentiment"] = {str(k): float(v) for k, v in sentiment.items()}
        except (TypeError, ValueError):
            raise _fail(ds, "`sentimentAnalysis` holds a non-number score", url) from None
    return Records(header, rows, attrs)


def _v1_sentiments(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Records:
    data = _as_dict(ds, data, url)
    scores = data.get(ds.records or "")
    if scores is None:
        scores = {}
    if not isinstance(scores, dict):
        raise _fail(ds, f"`{ds.records}` is not an object of date -> score", url)
    rows = [{"date": d, "score": s} for d, s in scores.items()]
    rows.sort(key=lambda r: r["date"], reverse=True)
    return Records(_scalars(data), rows)


Extractor = Callable[[Dataset, Any, dict, "str | None"], Records]
EXTRACTORS: dict[str, Extractor] = {
    "records": _records,
    "congress": _records,
    "forecast": _forecast,
    "auto": _auto,
    "app_ratings_apps": _app_apps,
    "app_ratings_daily": _app_daily,
    "v1_markets": _v1_markets,
    "v1_list": _records,
    "v1_market_forecasts": _v1_market_forecasts,
    "v1_ticker_forecast": _v1_ticker_forecast,
    "v1_sentiments": _v1_sentiments,
}


def extract(
    ds: Dataset, data: Any, context: dict[str, Any] | None = None, url: str | None = None
) -> Records:
    """Apply the dataset's extractor to one payload."""
    return EXTRACTORS[ds.shape](ds, data, context or {}, url)
