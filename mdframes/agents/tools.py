"""The agent tools (CONTRACT §15): ``datasets``, ``read``, ``features``, ``search`` and
``changes``, as plain functions of a :class:`~mdframes.agents.clamp.ClampedLake`.

:meth:`Tools.call` is the one entry: it checks the arguments, reads the clamp once and hands
each tool only the lake clamped to it, so no tool can see the lake unclamped. Each answer is
an :class:`Answer` (rows, notes) that the server shows as a CSV table and as structured rows.
Descriptions of tools and arguments come from the registry and the feature catalog.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import io
import os
import reprlib
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import pandas as pd

from ..errors import InvalidParameterError, MdframesError, redact
from ..params import whole_number
from ..registry import REGISTRY, Dataset
from .clamp import ClampedLake, Clock, ClockError, iso

__all__ = ["Answer", "ToolError", "Tools", "TOOL_NAMES", "DEFAULT_LIMIT", "MAX_LIMIT"]

DEFAULT_LIMIT: Final = 200
MAX_LIMIT: Final = 5000
SEARCH_LIMIT: Final = 20  # symbols: the best matches; similar spellings past them are noise
MAX_ARG: Final = 1000  # characters of a text, items of a list: no question needs more
TOOL_NAMES: Final = ("datasets", "read", "features", "search", "changes")


class ToolError(Exception):
    """A call the tool cannot answer (a bad argument, a clock moved back): the agent sees
    the message as a tool error and the server keeps running."""


@contextlib.contextmanager
def _told() -> Iterator[None]:
    """An argument the library refuses inside, told to the agent as a :class:`ToolError`."""
    try:
        yield
    except InvalidParameterError as exc:
        raise ToolError(str(exc)) from None


@dataclass
class Answer:
    """What a tool answers: ``frame`` (every row), of which the first ``limit`` are shown,
    and ``notes`` (cuts at the clamp, rows left out, warnings)."""

    tool: str
    clamp: pd.Timestamp
    frame: pd.DataFrame
    limit: int
    notes: list[str] = field(default_factory=list)

    @property
    def shown(self) -> pd.DataFrame:
        return self.frame if len(self.frame) <= self.limit else self.frame.iloc[: self.limit]

    def plain(self) -> tuple[list[str], list[list[Any]]]:
        """The shown rows' columns and JSON-ready values, column by column: computed once,
        for the text and the structured content alike."""
        cached = self.__dict__.get("_plain")
        if cached is None:
            cached = self.__dict__["_plain"] = _plain(self.shown)
        return cached

    def all_notes(self) -> list[str]:
        left = len(self.frame) - min(self.limit, len(self.frame))
        more = (
            f"{left} more row(s) left out (limit={self.limit}); narrow the question or raise limit"
        )
        return [*self.notes, more] if left > 0 else list(self.notes)

    def columns_and_rows(self) -> tuple[list[str], list[dict[str, Any]]]:
        """The shown rows as JSON values: times as ISO text, missing values as null."""
        columns, values = self.plain()
        rows = [dict(zip(columns, row, strict=False)) for row in zip(*values, strict=False)]
        return columns, rows

    def text(self) -> str:
        """The answer as an agent reads it: a header line, notes, a CSV table."""
        head = (
            f"# {self.tool}: {len(self.frame)} row(s) as known at {iso(self.clamp)}; "
            "nothing fetched or published after that time is in this answer"
        )
        lines = [head, *(f"# {n}" for n in self.all_notes())]
        columns, values = self.plain()
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(zip(*values, strict=False))
        return "\n".join(lines) + "\n" + buffer.getvalue()

    def structured(self) -> dict[str, Any]:
        columns, rows = self.columns_and_rows()
        return {
            "clamp": iso(self.clamp),
            "columns": columns,
            "rows": rows,
            "total_rows": len(self.frame),
            "shown_rows": len(rows),
            "notes": self.all_notes(),
        }


def _plain(frame: pd.DataFrame) -> tuple[list[str], list[list[Any]]]:
    """``frame``'s columns and JSON-ready values, column by column: times as ISO text (dates
    without a time of day as ``YYYY-MM-DD``), numbers as Python numbers, missing as None."""
    return [str(name) for name in frame.columns], [_values(col) for _, col in frame.items()]


def _values(col: pd.Series) -> list[Any]:
    """One column's values as Python values, by its dtype's kind on NumPy arrays: the
    pandas operations a column would go through cost more than the conversion itself."""
    dtype = col.dtype
    kind = getattr(dtype, "kind", "O")
    if kind == "M":
        out, missing = _times(col, isinstance(dtype, pd.DatetimeTZDtype))
    elif kind == "f":
        floats = col.to_numpy(dtype="float64", na_value=np.nan)
        out, missing = floats.tolist(), ~np.isfinite(floats)
    elif kind in "iub" or (kind == "O" and not isinstance(dtype, np.dtype)):
        # integers, booleans, text, categories: Python values as they are (the stubs do
        # not know na_value=None, which pandas takes for every dtype)
        return col.to_numpy(dtype=object, na_value=None).tolist()  # type: ignore[call-overload]
    else:  # lists, mixed values, durations
        missing = np.asarray(pd.isna(col.array), dtype=bool)
        objects = col.to_numpy(dtype=object)
        return [None if m else _scalar(v) for v, m in zip(objects, missing, strict=True)]
    for i in np.flatnonzero(missing).tolist():
        out[i] = None
    return out


def _times(col: pd.Series, aware: bool) -> tuple[list[Any], np.ndarray]:
    """ISO text of a time column: aware ones in UTC with ``Z``; naive ones as dates when
    every one is midnight. Each distinct time is formatted once (a fetch time repeats on
    every row of its sync)."""
    stamps = col.to_numpy(dtype="datetime64[us]") if aware else col.to_numpy()
    missing = np.isnat(stamps)
    if not aware:
        days = stamps.astype("datetime64[D]")
        if bool((stamps[~missing] == days[~missing]).all()):
            return _days(days, missing), missing
        stamps = stamps.astype("datetime64[us]")
    distinct, where = np.unique(stamps, return_inverse=True)
    text = np.datetime_as_string(distinct, timezone="UTC" if aware else "naive").tolist()
    return [text[i] for i in where.ravel().tolist()], missing


_DAY_TEXT: dict[int, str] = {}  # days since 1970 -> ISO date: dates recur from call to call


def _days(days: np.ndarray, missing: np.ndarray) -> list[Any]:
    """Dates as ``YYYY-MM-DD``, each day's text made once per process."""
    numbers = days.view("int64").tolist()
    unseen = sorted({d for d in days[~missing].view("int64").tolist() if d not in _DAY_TEXT})
    if unseen:
        texts = np.datetime_as_string(np.array(unseen, dtype="datetime64[D]")).tolist()
        _DAY_TEXT.update(zip(unseen, texts, strict=True))
    return [_DAY_TEXT.get(d) for d in numbers]  # NaT: None


def _scalar(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, (dt.date, pd.Timestamp)):
        return value.isoformat()
    if isinstance(value, (list, tuple, np.ndarray)):
        return str(list(value))
    return str(value)  # durations, mappings: as text, never a value JSON cannot carry


# --- arguments ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arg:
    name: str
    kind: str  # "string", "strings" (one or a list), "date", "time", "int", "list"
    description: str
    required: bool = False
    default: int = DEFAULT_LIMIT  # of an "int"

    def schema(self) -> dict[str, Any]:
        text = {"type": "string", "maxLength": MAX_ARG, "description": self.description}
        if self.kind in ("string", "date", "time"):
            return text
        if self.kind == "int":
            return {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": self.default,
                "description": self.description,
            }
        many = {"type": "array", "items": {"type": "string"}, "maxItems": MAX_ARG}
        if self.kind == "list":
            return {**many, "description": self.description}
        return {"anyOf": [{"type": "string"}, many], "description": self.description}


def _bounded(name: Any, args: Any) -> None:
    """A tool name or argument longer than :data:`MAX_ARG` is refused first, in time linear
    in its length: the messages of later checks quote values, and cleaning those of
    credentials takes time that grows faster than their length."""
    pairs: list[tuple[str, Any]] = [("the tool name", name)]
    if isinstance(args, Mapping):
        if len(args) > MAX_ARG:
            raise ToolError(f"{len(args)} arguments; at most {MAX_ARG}")
        pairs += [("an argument name", k) for k in args]
        pairs += [(f"argument {k!r}", v) for k, v in args.items()]
    for what, value in pairs:
        items = value if isinstance(value, list) else [value]
        if len(items) > MAX_ARG:
            raise ToolError(f"{what} is a list of {len(items)} items; at most {MAX_ARG}")
        for item in items:
            if isinstance(item, str) and len(item) > MAX_ARG:
                raise ToolError(f"{what} holds {len(item)} characters; at most {MAX_ARG}")


def _check(args: Mapping[str, Any], spec: list[Arg]) -> dict[str, Any]:
    """The arguments checked against ``spec`` (names, presence, JSON types)."""
    if not isinstance(args, Mapping):
        raise ToolError("arguments are an object of name: value")
    known = {a.name: a for a in spec}
    unknown = [k for k in args if k not in known]
    if unknown:
        raise ToolError(
            f"unknown argument(s) {', '.join(map(repr, unknown))}; this tool takes "
            f"{', '.join(known) or 'no arguments'}"
        )
    out: dict[str, Any] = {}
    for a in spec:
        value = args.get(a.name)
        if value is None:
            if a.required:
                raise ToolError(f"argument {a.name!r} is required: {a.description}")
            continue
        if a.kind == "int":
            with _told():
                whole_number(value, a.name)
            if not 1 <= value <= MAX_LIMIT:
                raise ToolError(f"{a.name} is between 1 and {MAX_LIMIT}, got {value}")
        elif a.kind in ("strings", "list"):
            items = [value] if isinstance(value, str) and a.kind == "strings" else value
            if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
                raise ToolError(
                    f"{a.name} is a string or a list of strings, got {reprlib.repr(value)}"
                )
            if not items:
                raise ToolError(f"{a.name} is empty; leave it out instead")
            value = items
        elif not isinstance(value, str) or not value.strip():
            raise ToolError(f"{a.name} is a non-empty string, got {reprlib.repr(value)}")
        out[a.name] = value
    return out


def _day(value: str, name: str) -> dt.date:
    from ..params import to_date

    with _told():
        return to_date(value.strip(), name)


def _time(value: str, name: str) -> pd.Timestamp:
    from ..params import to_utc

    with _told():
        return to_utc(value.strip(), name)


def _symbols(value: list[str] | None) -> list[str] | None:
    from ..lake.sync.plan import normalise_symbols

    if value is None:
        return None
    with _told():
        return normalise_symbols(value)


def _dataset(name: str) -> Dataset:
    from ..lake.sync.plan import resolve

    with _told():
        return resolve(name)


# --- descriptions, from the registry -------------------------------------------------------------


def lake_datasets() -> list[Dataset]:
    """Every dataset a lake can hold, in registry order."""
    return [ds for ds in REGISTRY.values() if ds.lake]


def dataset_line(ds: Dataset) -> str:
    """One line telling an agent what ``ds`` is and when its rows count as public."""
    if ds.anchor is None:
        public = "public when fetched"
    else:
        public = f"public at `{ds.anchor}`"
        if ds.deadline is not None:
            public += f" (null: {ds.deadline.days} {'business ' if ds.deadline.business_days else ''}days after `{ds.deadline.event}`)"
    kind = "snapshots" if ds.lake == "snapshot" else "records with revisions"
    caveats = " ".join(c for c in ds.caveats if "attrs" not in c)
    return f"- {ds.name}: {ds.description} [{kind}; {public}]" + (f" {caveats}" if caveats else "")


_CLAMP = (
    "Every tool answers as of the clamp (the simulated present): only data the lake had "
    "fetched by then and that was public by then; arguments past the clamp are answered up "
    "to it, and the answer says so."
)
_LIMIT = Arg("limit", "int", f"Most rows shown (1 to {MAX_LIMIT}, default {DEFAULT_LIMIT}).")
_SYMBOLS = Arg("symbols", "strings", "Ticker symbols, e.g. ['AAPL', 'MSFT']; default: all.")


# Each tool's own words, before the clamp's; tool_specs adds what the lake holds.
_WORDS = {
    "datasets": "What the lake holds as of the clamp: one row per dataset with its rows, symbols, "
    "first and last time, last fetch, the column that says when a row became public, "
    "its columns and caveats. ",
    "read": "Rows of one dataset as known at the clamp (the latest version of each record "
    "fetched by then, public by then), with `_fetched_at` (when the lake fetched it). ",
    "features": "Point-in-time features of symbols on one date, as a model would see them that "
    "day: one row per symbol, computed from what the lake knew at the clamp. ",
    "search": "Find symbols (by symbol or company name) and datasets (by name or meaning) "
    "the lake knew at the clamp. ",
    "changes": "What the service revised in place: one row per changed field of a record "
    "(old and new values, when each was fetched), for revisions fetched after "
    "`since` and by the clamp. Snapshot datasets have none. ",
}
# Each tool's arguments after ``dataset`` (which read and changes take first).
_ARGS: dict[str, list[Arg]] = {
    "datasets": [],
    "read": [
        _SYMBOLS,
        Arg("start", "date", "First date (YYYY-MM-DD) on the dataset's time column."),
        Arg("end", "date", "Last date (YYYY-MM-DD); default and at most: the clamp."),
        Arg("columns", "list", "Column names to show (default: all)."),
        Arg("market", "string", "Which snapshot filter (screeners), when several."),
        Arg("region", "string", "Which snapshot region (screeners), when several."),
        _LIMIT,
    ],
    "features": [
        Arg("symbols", "strings", "Ticker symbols, e.g. ['AAPL'].", required=True),
        Arg("date", "date", "The date (YYYY-MM-DD); default and at most: the clamp's."),
        Arg(
            "features", "list", "Feature names (default: those above whose dataset the lake holds)."
        ),
        _LIMIT,
    ],
    "search": [
        Arg("text", "string", "A symbol, part of a name, or a topic.", required=True),
        Arg(
            "limit",
            "int",
            f"Most symbols (1 to {MAX_LIMIT}, default {SEARCH_LIMIT}).",
            default=SEARCH_LIMIT,
        ),
    ],
    "changes": [
        _SYMBOLS,
        Arg("since", "time", "Only revisions fetched after this time (YYYY-MM-DD[THH:MM])."),
        _LIMIT,
    ],
}


def tool_specs() -> dict[str, tuple[str, list[Arg]]]:
    """Each tool's description and arguments."""
    from ..features import catalog

    names = ", ".join(ds.name for ds in lake_datasets())
    dataset = Arg(
        "dataset",
        "string",
        f"One of: {names}. Call `datasets` for what the lake holds and each one's columns.",
        required=True,
    )
    features = (f"- {r.name}: {r.description}" for r in catalog().itertuples())
    lists = {
        "datasets": "\nDatasets:\n" + "\n".join(dataset_line(ds) for ds in lake_datasets()),
        "features": "\nFeatures:\n" + "\n".join(features),
    }
    return {
        tool: (
            _WORDS[tool] + _CLAMP + lists.get(tool, ""),
            ([dataset] if tool in ("read", "changes") else []) + _ARGS[tool],
        )
        for tool in TOOL_NAMES
    }


# --- the tools ---------------------------------------------------------------------------------


class Tools:
    """The tools over one lake, clamped by ``clock``.

    Parameters
    ----------
    lake : md.Lake
        Read only; it is never given to a tool unclamped, and never synced.
    clock : Clock
    """

    def __init__(self, lake: Any, clock: Clock) -> None:
        self._lake = lake
        self.clock = clock
        self.specs = tool_specs()
        self._secrets = _secrets(lake)
        self._known: tuple[pd.Timestamp, pd.DataFrame] | None = None  # _tickers at a clamp

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> Answer:
        """Answer tool ``name``; every bad argument (and a clock moved back) is a
        :class:`ToolError` whose text holds no key or credential."""
        try:
            _bounded(name, arguments)
            return self._call(name, arguments or {})
        except (ToolError, ClockError, MdframesError) as exc:
            raise ToolError(self.clean(str(exc))) from None

    def clean(self, text: str, most: int = 4000) -> str:
        """``text`` without any key or storage credential this process knows, cut to
        ``most`` characters: an error may quote many arguments, and the cleaning takes time
        that grows faster than the text. Twice that is cleaned, then cut, so no credential
        is cut in half before it is found."""
        from ..lake.store.location import redact_root

        cleaned = redact_root(redact(text[: 2 * most], *self._secrets))
        return cleaned if len(text) <= most else cleaned[:most] + " ..."

    def _call(self, name: str, arguments: Mapping[str, Any]) -> Answer:
        if name not in self.specs:
            raise ToolError(f"unknown tool {name!r}; tools: {', '.join(self.specs)}")
        args = _check(arguments, self.specs[name][1])
        at = self.clock.current()  # once per call: every read of this call is clamped to it
        run: Callable[[ClampedLake, dict[str, Any]], Answer] = getattr(self, f"_{name}")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            answer = run(ClampedLake(self._lake, at), args)
        answer.notes += _warnings(caught, self.clean)
        return answer

    # -- datasets --
    def _datasets(self, lake: ClampedLake, args: dict[str, Any]) -> Answer:
        rows = []
        for ds, names, time_col in lake.present():
            cols = [c for c in ("symbol", time_col) if c and c in names]
            frame = lake.read(ds.name, columns=cols or names[:1])
            if frame.empty:
                continue  # nothing of it was known at the clamp
            times = frame[time_col] if time_col in frame.columns else None
            rows.append(
                {
                    "dataset": ds.name,
                    "kind": ds.lake,
                    "rows": len(frame),
                    "symbols": int(frame["symbol"].nunique()) if "symbol" in frame else None,
                    "first": None if times is None else times.min(),
                    "last": None if times is None else times.max(),
                    "last_fetched_at": frame["_fetched_at"].max(),
                    "public_at": ds.anchor or "_fetched_at",
                    "time_column": time_col,
                    "description": ds.description,
                    "caveats": " ".join(ds.caveats),
                    "columns": " ".join(names),
                }
            )
        frame = pd.DataFrame(rows, columns=_DATASET_COLUMNS)
        notes = [] if rows else ["the lake held nothing at the clamp"]
        return Answer("datasets", lake.at, frame, MAX_LIMIT, notes)

    # -- read --
    def _read(self, lake: ClampedLake, args: dict[str, Any]) -> Answer:
        ds = _dataset(args["dataset"])
        limit = args.get("limit", DEFAULT_LIMIT)
        notes: list[str] = []
        start = None if "start" not in args else _day(args["start"], "start")
        end = None if "end" not in args else _day(args["end"], "end")
        day = lake.at.date()
        if ds.anchor is not None:  # rows of a later date cannot be public yet
            if end is not None and end > day:
                notes.append(f"end {end} is after the clamp: answered up to {day}")
            end = day if end is None else min(end, day)
        if start is not None and end is not None and start > end:
            if start > day and ds.anchor is not None:
                notes.append(f"start {start} is after the clamp ({day}): nothing to show")
                frame = self._read_frame(lake, ds, args, None, None).iloc[0:0]
                return Answer("read", lake.at, frame, limit, notes)
            raise ToolError(f"start {start} is after end {end}")
        if ds.time_column is None and ("start" in args or "end" in args):
            notes.append(f"{ds.name} has no time column: start and end do not apply")
        frame = self._read_frame(lake, ds, args, start, end)
        if frame.empty:
            notes.append("no rows of this question were known at the clamp")
        if "symbols" in args:
            cov = lake.coverage([ds.name], _symbols(args["symbols"]))
            never = cov.loc[cov["status"].astype(str) == "never", "symbol"].astype(str).tolist()
            if never:
                notes.append(
                    f"the lake had never synced {ds.name} for {', '.join(never)} by the "
                    "clamp: no rows for them here is no evidence about them"
                )
        return Answer("read", lake.at, frame, limit, notes)

    def _read_frame(
        self, lake: ClampedLake, ds: Dataset, args: dict[str, Any], start: Any, end: Any
    ) -> pd.DataFrame:
        symbols = _symbols(args.get("symbols"))
        if ds.time_column is None:  # nothing to window on (the ticker list)
            start = end = None
        try:
            return lake.read(
                ds.name,
                symbols,
                start=start,
                end=end,
                columns=args.get("columns"),
                market=args.get("market"),
                region=args.get("region"),
            )
        except InvalidParameterError as exc:
            text = str(exc)
            if "holds no" in text:
                raise ToolError(f"the lake holds no {ds.name}; call `datasets`") from None
            raise ToolError(text) from None

    # -- features --
    def _features(self, lake: ClampedLake, args: dict[str, Any]) -> Answer:
        from ..features import catalog, panel

        symbols = _symbols(args["symbols"])
        assert symbols is not None
        limit = args.get("limit", DEFAULT_LIMIT)
        day = lake.at.date()
        notes: list[str] = []
        date = day if "date" not in args else _day(args["date"], "date")
        if date > day:
            notes.append(f"date {date} is after the clamp: answered for {day}")
            date = day
        names = args.get("features")
        cat = catalog()
        if names is None:  # the catalog's features whose datasets the lake held by then
            cov = lake.coverage()
            held = set(cov.loc[cov["status"].astype(str) != "never", "dataset"].astype(str))
            bases = cat["dataset"].astype(str).map(lambda d: REGISTRY[d].base)
            names = cat.loc[bases.isin(held).to_numpy(), "name"].tolist()
            if not names:
                raise ToolError("the lake held none of the features' datasets at the clamp")
        else:
            known = set(cat["name"])
            unknown = [n for n in names if n not in known]
            if unknown:
                raise ToolError(
                    f"unknown feature(s) {unknown}; features: {', '.join(sorted(known))}"
                )
        with _told():
            out = panel(
                symbols, date, date, names, freq="D", source=lake, known_at=lake.at, errors="skip"
            )
        notes += [f"{symbol}: {why}" for symbol, why in (out.attrs.get("failed") or {}).items()]
        frame = out.reset_index()
        frame["date"] = frame["date"].dt.strftime("%Y-%m-%d")
        return Answer("features", lake.at, frame, limit, notes)

    # -- search --
    def _search(self, lake: ClampedLake, args: dict[str, Any]) -> Answer:
        from ..known import Tickers, fold
        from ..lookup import ranked_tickers

        key = fold(args["text"])
        if not key:
            raise ToolError("text is empty")
        limit = args.get("limit", SEARCH_LIMIT)
        found = ranked_tickers(Tickers(self._tickers(lake)), key, limit)
        rows = [
            {"kind": "symbol", "name": r.symbol, "about": r.name, "match": str(r.match)}
            for r in found.itertuples()
        ]
        for ds in lake_datasets():
            text = fold(f"{ds.name} {ds.description} {' '.join(ds.columns)}")
            if all(word in text for word in key.split()):
                rows.append(
                    {"kind": "dataset", "name": ds.name, "about": ds.description, "match": "text"}
                )
        frame = pd.DataFrame(rows, columns=["kind", "name", "about", "match"])
        notes = [] if rows else [f"nothing known at the clamp matches {args['text']!r}"]
        return Answer("search", lake.at, frame, limit, notes)

    def _tickers(self, lake: ClampedLake) -> pd.DataFrame:
        """The symbols the lake knew at the clamp: its last ticker list by then, the company
        names its records held by then (the latest per symbol), and every symbol a
        per-symbol dataset had synced by then. Kept for the next search at the same clamp
        (what the lake held then cannot change)."""
        if self._known is not None and self._known[0] == lake.at:
            return self._known[1]
        parts = []
        for ds, names, _ in sorted(lake.present(), key=lambda p: p[0].name != "tickers"):
            if "symbol" in names and "name" in names:
                part = lake.read(ds.name, columns=["symbol", "name"])[["symbol", "name"]]
                parts.append(part.dropna().drop_duplicates("symbol", keep="last"))
        cov = lake.coverage()
        cov = cov[cov["symbol"].notna() & (cov["status"].astype(str) != "never")]
        parts.append(pd.DataFrame({"symbol": cov["symbol"].astype(object), "name": None}))
        frame = pd.concat(parts, ignore_index=True)
        if frame.empty:
            return pd.DataFrame({"symbol": [], "name": []}, dtype=object)
        frame = frame.astype(object).where(frame.notna(), None)
        frame = frame.drop_duplicates("symbol", keep="first").reset_index(drop=True)
        self._known = (lake.at, frame)
        return frame

    # -- changes --
    def _changes(self, lake: ClampedLake, args: dict[str, Any]) -> Answer:
        from ..lake.changes import changes, check_changes

        ds = _dataset(args["dataset"])
        limit = args.get("limit", DEFAULT_LIMIT)
        notes: list[str] = []
        with _told():
            check_changes(ds)
        since = None if "since" not in args else _time(args["since"], "since")
        if since is not None and since >= lake.at:
            notes.append(f"since {iso(since)} is not before the clamp: nothing to show")
            since = lake.at
        symbols = _symbols(args.get("symbols"))
        with _told():
            history = lake.read(ds.name, symbols, history=True)
        frame = changes(history, ds.record_id, since=since, until=lake.at)
        return Answer("changes", lake.at, frame, limit, notes)


def _warnings(caught: list[Any], clean: Callable[[str], str]) -> list[str]:
    """The warnings of a call as notes. A warning that a knowledge time is earlier than
    every stored version names when the dataset was first synced, a time after the clamp:
    it becomes a note without that time."""
    from ..errors import KnowledgeTimeWarning

    notes = []
    for w in caught:
        if issubclass(w.category, KnowledgeTimeWarning):
            notes.append("a dataset this answer reads held nothing yet at the clamp")
        elif not issubclass(w.category, (FutureWarning, DeprecationWarning)):
            notes.append(f"warning: {clean(str(w.message))}")
    return list(dict.fromkeys(notes))


_DATASET_COLUMNS: Final = [
    "dataset",
    "kind",
    "rows",
    "symbols",
    "first",
    "last",
    "last_fetched_at",
    "public_at",
    "time_column",
    "description",
    "caveats",
    "columns",
]


def _secrets(lake: Any) -> list[str]:
    """Every key and storage credential this process could show by mistake."""
    names = ("MDFRAMES_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN")
    out = [os.environ.get(n) for n in names]
    options = getattr(lake, "storage_options", None) or {}
    out += [
        v for k, v in options.items() if any(w in k.upper() for w in ("KEY", "TOKEN", "SECRET"))
    ]
    return [s for s in out if isinstance(s, str) and len(s) >= 4]
