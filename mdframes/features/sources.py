"""Where a panel's inputs come from: the service (through the loaders), frames the caller
already has, or a lake (anything with the ``Lake.read`` signature).

Each dataset is fetched once for the panel (or once per chunk of symbols), over the panel's
dates plus the longest lookback of its features, clipped to where the dataset has history.
With ``known_at="row"`` a lake gives every stored version (``history=True``), and the engine
decides per row which version it saw.
"""

from __future__ import annotations

import datetime as dt
import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Protocol, cast, runtime_checkable

import numpy as np
import pandas as pd

from .._typing import Errors
from ..errors import (
    AuthenticationError,
    ConfigurationError,
    InvalidParameterError,
    KnowledgeTimeWarning,
    MdframesError,
    RateLimitError,
    SkippedSymbolsWarning,
    warn,
)
from ..registry import REGISTRY

__all__ = [
    "LakeLike",
    "fetch",
    "load_start",
    "history_start",
    "base_name",
    "record_key",
    "daily_from_apps",
    "lake_spec",
    "table_versions",
    "open_lake",
    "check_source",
    "ROW",
]

ROW: Final = "row"


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
    from ..params import to_date

    ds = REGISTRY[dataset]
    value = ds.history_start or REGISTRY[ds.base].history_start
    return None if value is None else to_date(value, "history_start", dataset=dataset)


def _slack_days(dataset: str) -> int:
    """Days a load reaches further back than the windows: the service filters on the event
    date, while a row becomes public at its anchor, up to the deadline's slack later."""
    deadline = REGISTRY[dataset].deadline
    return 0 if deadline is None else deadline.slack_days


def record_key(dataset: str) -> list[str]:
    """The columns that identify one record across versions (the lake's key; ``"a|b"``: a,
    or b where a is null)."""
    ds = REGISTRY[dataset]
    if ds.lake_key:
        return list(ds.lake_key)
    return ["symbol", *[c for c in ds.record_id if c != "symbol"]]


def load_start(dataset: str, start: dt.date, lookback: int | None) -> dt.date | None:
    """The first date to request for ``dataset`` so that every window from ``start`` on is
    complete, never before the dataset's history; ``None``: the whole history."""
    first = history_start(dataset)
    if lookback is None:
        return first
    wanted = start - dt.timedelta(days=lookback + _slack_days(dataset))
    return wanted if first is None else max(wanted, first)


def _empty(dataset: str) -> pd.DataFrame:
    """The loader's columns and dtypes, no rows: a window wholly before the history."""
    from ..frame import build_frame
    from ..records import Records

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


def _from_lake(
    lake: Any,
    name: str,
    symbols: list[str],
    start: dt.date | None,
    end: dt.date,
    known_at: Any,
) -> pd.DataFrame:
    base = base_name(name)
    if isinstance(known_at, str) and known_at == ROW:
        frame = lake.read(base, symbols, start=start, end=end, history=True)
        frame = _check_frame(base, frame, "the lake")
        return daily_versions(frame) if base != name else frame
    frame = lake.read(base, symbols, start=start, end=end, known_at=known_at)
    frame = _check_frame(base, frame, "the lake")
    return daily_from_apps(frame) if base != name else frame


# Errors about the account or the service as a whole: no symbol is to blame.
_NOT_A_SYMBOL = (InvalidParameterError, ConfigurationError, AuthenticationError, RateLimitError)


def _blame(exc: MdframesError, symbols: list[str]) -> str | None:
    text = f"{getattr(exc, 'url', '') or ''} {exc}"
    for symbol in symbols:
        if f"/{symbol}" in text or f"'{symbol}'" in text:
            return symbol
    return None


def _from_service(
    client: Any, name: str, symbols: list[str], start: dt.date | None, end: dt.date, errors: str
) -> pd.DataFrame:
    from ..loaders import load

    with warnings.catch_warnings():
        # The panel says once which symbols it skipped, over all its datasets.
        warnings.filterwarnings("ignore", category=SkippedSymbolsWarning)
        warnings.filterwarnings("ignore", message=r".*symbol\(s\) failed and were skipped")
        try:
            return load(
                name, symbols, start=start, end=end, client=client, errors=cast(Errors, errors)
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


def fetch(
    lookbacks: Mapping[str, int | None],
    symbols: list[str],
    start: dt.date,
    end: dt.date,
    *,
    source: Any = None,
    known_at: Any = None,
    errors: str = "raise",
    client: Any = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, dict[str, str]]]:
    """One frame per dataset of ``lookbacks`` (dataset -> longest lookback in days, or
    ``None`` for all history), from ``source``; and, per dataset, the symbols that failed
    (symbol -> error text; only the service fails per symbol)."""
    out: dict[str, pd.DataFrame] = {}
    failed: dict[str, dict[str, str]] = {}
    unknown_then: list[str] = []
    for name, lookback in lookbacks.items():
        first = load_start(name, start, lookback)
        if isinstance(source, Mapping):
            out[name] = _from_mapping(source, name)
            continue
        if first is not None and first > end:  # wholly before the history: nothing to ask
            frame = _empty(name)
            if source is not None and known_at == ROW:
                frame["_fetched_at"] = pd.Series(dtype="datetime64[us, UTC]")
        elif source is None:
            frame = _from_service(client, name, symbols, first, end, errors)
            failed[name] = dict(frame.attrs.get("failed", {}))
        else:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", KnowledgeTimeWarning)
                frame = _from_lake(source, name, symbols, first, end, known_at)
            for w in caught:  # said once below, for every dataset at once
                if issubclass(w.category, KnowledgeTimeWarning):
                    unknown_then.append(name)
                else:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        out[name] = frame
    if unknown_then:
        warn(
            f"known_at={known_at} is earlier than every stored version of "
            f"{', '.join(dict.fromkeys(unknown_then))}: their features see no rows "
            "(lake.info() shows when each dataset was first synced)",
            KnowledgeTimeWarning,
        )
    return out, failed


# --- checking and shipping a source ---------------------------------------------------------------


def table_versions(lake: Any, datasets: Iterable[str]) -> dict[str, int | None]:
    """Each dataset's current table version (``lake.version``); ``None`` for a lake-like
    object that does not say."""
    version = getattr(lake, "version", None)
    return {name: version(name) if callable(version) else None for name in datasets}


def lake_spec(lake: Any) -> Any:
    """What a worker needs to open ``lake`` itself: an ``md.Lake`` as its root and storage
    options (never its client, so no API key travels); another lake-like object as it is."""
    from ..lake import Lake

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
        from ..lake import Lake

        _, root, options = spec
        key = json.dumps([str(root), options], sort_keys=True, default=str)
        lake = _OPENED.get(key)
        if lake is None:
            lake = Lake(root, storage_options=options) if options else Lake(root)
            _OPENED.clear()  # one lake per worker at a time is the case that matters
            _OPENED[key] = lake
        return lake
    return spec


def check_source(source: Any, known_at: Any, client: Any) -> pd.Timestamp | str | None:
    """Reject a source ``panel`` cannot read, and ``known_at``/``client`` where they do not
    apply, before anything is loaded. Returns ``known_at`` as a UTC Timestamp (a date alone:
    the end of that day) or ``"row"``."""
    from ..params import to_utc

    is_lake = source is not None and not isinstance(source, Mapping)
    if is_lake and not isinstance(source, LakeLike):
        raise InvalidParameterError(
            f"source must be None, a dict of frames or a lake (an object with .read), not "
            f"{type(source).__name__}",
            parameter="source",
        )
    if client is not None and source is not None:
        raise InvalidParameterError(
            "client= applies only when source is None (the service)", parameter="client"
        )
    if known_at is None:
        return None
    if not is_lake:
        raise InvalidParameterError(
            "known_at needs a lake as source (only a lake knows when each row was fetched)",
            parameter="known_at",
        )
    if isinstance(known_at, str) and known_at.strip().lower() == ROW:
        return ROW
    return to_utc(known_at, "known_at")
