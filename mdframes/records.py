"""Payload -> records: where the rows sit in each response shape.

Each extractor turns one decoded payload into a :class:`Chunk`: the top-level scalar fields
(repeated on every row: symbol, name, chamber, cik, ...), the list of records (still keyed by
the service's field names) and what belongs in ``df.attrs``. The registry entry's ``shape``
names the extractor. A payload without its records is a :class:`ResponseFormatError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import ResponseFormatError
from .registry import Dataset, snake

__all__ = ["Chunk", "extract", "count_records", "EXTRACTORS"]

_DATE_KEY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# Keys that hold structure, not per-row values, in the payloads we know.
_STRUCTURAL = {"summary", "metadata", "meta"}
# Preferred names when an unknown payload holds several lists.
_LIST_PREFERENCE = ("data", "articles", "records", "items", "results", "mentions", "metrics")


@dataclass
class Chunk:
    header: dict[str, Any]
    records: list[dict[str, Any]]
    attrs: dict[str, Any] = field(default_factory=dict)
    sources: list[Any] = field(default_factory=list)  # requests behind it (cache eviction)
    columns: dict[str, list[Any]] = field(default_factory=dict)  # pre-gathered, see frame.gather


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


def _record_list(ds: Dataset, data: dict[str, Any], key: str, url: str | None) -> list[dict]:
    if key not in data:
        raise _fail(
            ds, f"payload has no `{key}` list (keys: {', '.join(map(str, data)) or 'none'})", url
        )
    records = data[key]
    if records is None:
        return []
    if not isinstance(records, list) or (records and not isinstance(records[0], dict)):
        raise _fail(ds, f"`{key}` is not a list of records", url)
    return records


def _summary(data: dict[str, Any]) -> dict[str, Any]:
    summary = data.get("summary")
    if not isinstance(summary, dict):
        return {}
    return {"summary": {snake(k): v for k, v in summary.items()}}


def _records(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Chunk:
    if isinstance(data, list) and ds.version == "v1":
        records, header = data, {}
    else:
        data = _as_dict(ds, data, url)
        records = _record_list(ds, data, ds.records or "data", url)
        header = _scalars(data, skip=ds.records)
    for key, value in context.items():
        header.setdefault(key, value)
        if header[key] is None:
            header[key] = value
    return Chunk(header, records, _summary(data) if isinstance(data, dict) else {})


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


def _auto(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Chunk:
    """Shapes the spec does not show: find the record list wherever it sits."""
    if isinstance(data, list):
        if data and not isinstance(data[0], dict):
            raise _fail(ds, "`data` is a list but not of records", url)
        return Chunk(dict(context), data)
    data = _as_dict(ds, data, url)
    key = _find_list(ds, data)
    if key is None:
        nested = [k for k, v in data.items() if isinstance(v, dict) and k not in _STRUCTURAL]
        for k in nested:  # one level down, e.g. {"data": {"items": [...]}}
            inner = _find_list(ds, data[k])
            if inner is not None:
                return Chunk(_scalars(data) | context, data[k][inner], _summary(data))
        scalars = _scalars(data)
        if set(scalars) - {"symbol", "name"} or nested:
            # A single snapshot record rather than a list.
            return Chunk(dict(context), [data], _summary(data))
        raise _fail(ds, f"no records found in payload (keys: {', '.join(data) or 'none'})", url)
    header = _scalars(data, skip=key)
    for k, v in context.items():
        header.setdefault(k, v)
    return Chunk(header, data[key], _summary(data))


def _forecast(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Chunk:
    data = _as_dict(ds, data, url)
    chunk = _records(ds, data, context, url)
    meta = data.get("metadata")
    if isinstance(meta, dict):
        try:
            chunk.attrs["metadata"] = {
                snake(k): (float(v) if v is not None else None) for k, v in meta.items()
            }
        except (TypeError, ValueError):
            raise _fail(ds, f"forecast metadata holds a non-number: {meta!r}", url) from None
    # lastUpdated describes the whole forecast: it belongs in attrs, not on every row.
    last = chunk.header.pop("lastUpdated", None)
    if last is not None:
        chunk.attrs["last_updated"] = last
    return chunk


_APP_PLATFORMS = ("ios", "android")


def _app_apps(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Chunk:
    """One record per app per platform per date; older weekly shape -> NA app id/name."""
    data = _as_dict(ds, data, url)
    header = _scalars(data)
    rows: list[dict[str, Any]] = []
    if "apps" in data:
        apps = data["apps"] or []
        if not isinstance(apps, list):
            raise _fail(ds, "`apps` is not a list", url)
        for app in apps:
            base = {
                "platform": app.get("platform"),
                "appId": app.get("appId"),
                "appName": app.get("appName"),
            }
            extra = {k: v for k, v in app.items() if k not in base and k != "observations"}
            for obs in app.get("observations") or ():
                rows.append({**base, **extra, **obs})
    elif "data" in data:
        for entry in _record_list(ds, data, "data", url):
            for platform in _APP_PLATFORMS:
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
    return Chunk(header, rows)


def _app_daily(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Chunk:
    data = _as_dict(ds, data, url)
    rows = []
    for entry in _record_list(ds, data, "data", url):
        row = {k: v for k, v in entry.items() if k not in _APP_PLATFORMS}
        for platform in _APP_PLATFORMS:
            obj = entry.get(platform)
            if isinstance(obj, dict):
                for k, v in obj.items():
                    row[platform + k[:1].upper() + k[1:]] = v
        rows.append(row)
    # The daily view is about dates; cik stays with the apps view.
    header = {k: v for k, v in _scalars(data).items() if k != "cik"}
    return Chunk(header, rows)


def _v1_markets(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Chunk:
    data = _as_dict(ds, data, url)
    names = data.get(ds.records or "")
    if not isinstance(names, list):
        raise _fail(ds, f"payload has no `{ds.records}` list", url)
    return Chunk({}, [{"market": n} for n in names])


def _v1_market_forecasts(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Chunk:
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
    return Chunk({}, rows)


def _v1_ticker_forecast(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Chunk:
    from .helpers import expand_v1_forecast

    data = _as_dict(ds, data, url)
    pred = data.get("prediction")
    if not isinstance(pred, dict):
        raise _fail(ds, "ticker forecast has no `prediction` object", url)
    frame = expand_v1_forecast(pred)
    rows = [
        {"date": d.strftime("%Y-%m-%d"), "mid": m, "lower": lo, "upper": hi}
        for d, m, lo, hi in zip(
            frame["date"], frame["main"], frame["lower"], frame["upper"], strict=True
        )
    ]
    header = _scalars(data)
    header.setdefault("type", pred.get("type"))
    from .registry import V1_FORECAST_META

    try:
        metadata = {
            f.name: float(pred[f.wire])
            for f in V1_FORECAST_META
            if pred.get(f.wire) not in (None, "")
        }
    except (TypeError, ValueError):
        raise _fail(ds, "forecast expected-move values are not numbers", url) from None
    attrs: dict[str, Any] = {"metadata": metadata}
    if pred.get("lastUpdate"):
        attrs["last_updated"] = pred["lastUpdate"]
    if pred.get("technicalAnalysis"):
        attrs["technical_analysis"] = pred["technicalAnalysis"]
    return Chunk(header, rows, attrs)


def _v1_sentiments(ds: Dataset, data: Any, context: dict[str, Any], url: str | None) -> Chunk:
    data = _as_dict(ds, data, url)
    scores = data.get(ds.records or "")
    if scores is None:
        scores = {}
    if not isinstance(scores, dict):
        raise _fail(ds, f"`{ds.records}` is not an object of date -> score", url)
    rows = [{"date": d, "score": s} for d, s in scores.items()]
    rows.sort(key=lambda r: r["date"], reverse=True)
    return Chunk(_scalars(data), rows)


Extractor = Callable[[Dataset, Any, dict, "str | None"], Chunk]
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
) -> Chunk:
    """Apply the dataset's extractor to one payload."""
    return EXTRACTORS[ds.shape](ds, data, context or {}, url)


def count_records(ds: Dataset, data: Any) -> int:
    """How many records the server counted against ``limit`` (app ratings: app-date records)."""
    if ds.name.startswith("app_ratings") and isinstance(data, dict):
        if "apps" in data:
            return sum(len(a.get("observations") or ()) for a in data["apps"] or ())
        return sum(
            sum(1 for p in _APP_PLATFORMS if isinstance(e.get(p), dict))
            for e in data.get("data") or ()
        )
    if isinstance(data, dict) and isinstance(data.get(ds.records or ""), list):
        return len(data[ds.records or ""])
    return 0
