"""The dataset registry: everything mdframes knows about each endpoint, in one table.

Loaders, the sandbox, the schemas, the docs and the parametrised tests all read this
module; adding a dataset is one entry here. Field kinds follow the spec's words
("integer" -> ``int``, "number" -> ``float``, "string" -> ``str``, dates and timestamps),
with closed enumerations as ``cat``.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal

from .identity import Identity

__all__ = [
    "Field",
    "Param",
    "Deadline",
    "Dataset",
    "REGISTRY",
    "get",
    "snake",
    "SCREENER_DATASETS",
    "RECENT_DATASETS",
    "INSIDER_TYPES",
    "INSIDER_GROUPS",
    "MARKETS",
    "APP_RATINGS_HISTORY_START",
    "example_arguments",
    "views",
    "SEVERITY",
    "resolve_name",
    "closest_names",
]

Kind = Literal["str", "date", "ts", "int", "float", "bool", "cat", "list", "cik", "obj"]

_CAMEL_1 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL_2 = re.compile(r"([a-z\d])([A-Z])")
_NON_WORD = re.compile(r"[^0-9a-zA-Z]+")


@lru_cache(maxsize=4096)
def snake(name: str) -> str:
    """snake_case an API field name: ``pricePerShare`` -> ``price_per_share``,
    ``SECForm4Date`` -> ``sec_form4_date``, ``USDValue`` -> ``usd_value``."""
    s = _CAMEL_1.sub(r"\1_\2", name)
    s = _CAMEL_2.sub(r"\1_\2", s)
    s = _NON_WORD.sub("_", s).strip("_")
    return s.lower()


@dataclass(frozen=True)
class Field:
    """One record field as the spec states it."""

    wire: str
    kind: Kind = "str"
    # Allowed values. For kind "cat" also the fixed categories (empty: an open set whose
    # categories are whatever arrives); for kind "str" a membership rule only.
    categories: tuple[str, ...] = ()
    ge: float | None = None
    le: float | None = None
    # True where the spec says "or null" (or "may be empty"): a null is normal. False: a null
    # is a soft failure (the live service sends some), unless ``required``: a missing record
    # id or date is a hard one. None (the default): as the dataset says (Dataset.nullable):
    # not nullable where the spec states the record's fields, so every field a new entry
    # declares gets the `not_null` rule without a word at the field.
    nullable: bool | None = None
    column: str = ""  # snake_case name; derived from ``wire`` when empty
    required: bool = False
    description: str = ""
    blank_is_null: bool = False  # "" means absent (contracts' always-empty award types)

    @property
    def name(self) -> str:
        return self.column or snake(self.wire)


@dataclass(frozen=True)
class Param:
    """One user-facing parameter and where it goes on the wire."""

    name: str  # Python argument name
    wire: str  # query-string name, or "{placeholder}" for a path part
    kind: Literal["date", "int", "choice", "str"] = "str"
    lo: int | None = None
    hi: int | None = None
    choices: tuple[str, ...] = ()
    default: object = None
    # A value that stands for several: one request per listed value (congress "both").
    expands: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def in_path(self) -> bool:
        """True when the value is a path part (``{chamber}``), not a query parameter."""
        return self.wire.startswith("{")

    @property
    def placeholder(self) -> str:
        return self.wire[1:-1] if self.in_path else ""

    def fan_out(self, value: Any) -> tuple[Any, ...]:
        """The values one user value stands for: ``"both"`` -> ``("house", "senate")``."""
        return dict(self.expands).get(value, (value,))


@dataclass(frozen=True)
class Deadline:
    """The latest moment the law allows a row to become public, counted from its event.

    The deadline applies to the entry's ``anchor`` (the column that may be null); ``event`` is
    the column it counts from. ``days`` are calendar days, or Monday-to-Friday days when
    ``business_days`` (no holiday calendar). ``rule`` names the law, for the docs.
    ``slack_days``: the service filters such a dataset on ``event`` while its rows become
    public later, so a load meant to see every row published in a window starts this many
    days before it (the legal deadline plus late filers).

    Examples
    --------
    >>> get("congress_trades").deadline.days
    45
    """

    event: str
    days: int
    business_days: bool
    rule: str
    slack_days: int = 0

    @property
    def calendar_days(self) -> int:
        """The most calendar days the deadline can fall after its event (business days
        with their weekends; a weekend event rolls back to Friday first).

        >>> FORM_4.calendar_days
        4
        """
        if not self.business_days:
            return self.days
        return self.days + 2 * (-(-self.days // 5))


STOCK_ACT = Deadline(
    "date",
    45,
    business_days=False,
    rule="STOCK Act (2012): a periodic transaction report within 45 days of the trade",
    slack_days=365,
)
FORM_4 = Deadline(
    "date",
    2,
    business_days=True,
    rule="Exchange Act s.16(a), as amended in 2002: Form 4 before the end of the second "
    "business day after the transaction",
    slack_days=365,
)


@dataclass(frozen=True)
class Dataset:
    """One endpoint family and how its payload becomes a frame."""

    name: str
    path: str
    version: Literal["v1", "v2"] = "v2"
    scope: Literal["symbol", "screener", "recent", "discovery"] = "symbol"
    params: tuple[Param, ...] = ()
    shape: str = "records"  # record extractor, see mdframes.records
    records: str | None = None  # key of the record list inside ``data``; None: find it
    header: tuple[Field, ...] = ()  # top-level fields repeated on every row
    fields: tuple[Field, ...] = ()  # record fields the spec states, in column order
    # Per-response values placed after the record columns (forecast metadata, update time).
    trailer: tuple[Field, ...] = ()
    # The record identity (CONTRACT §2, §10.1): the columns that name one record, symbol
    # first for per-symbol datasets; "a|b" means a, or b where a is null. Never a value the
    # service revises in place. The loaders merge pages and order rows that share symbol and
    # time by it; the lake keys versions, changes() and knowledge time on it. Empty: the
    # whole row is the record (screeners, recent).
    record_id: tuple[str, ...] = ()
    anchor: str | None = None  # point-in-time column
    # Where the law bounds how late ``anchor`` may come: a null anchor counts as public at
    # this deadline (mdframes.pit), and loads reach ``slack_days`` further back.
    deadline: Deadline | None = None
    # The column the event happened at, where rows become public later (at ``anchor``): of
    # rows public at the same moment the later event is the latest. None: the anchor is the
    # event. Defaults to the deadline's event.
    event: str | None = None
    # The first date the service has data for; a load without a start begins here rather
    # than at the service's default window (app ratings: the latest week only).
    history_start: str | None = None
    # The record field (wire name) the service's startDate/endDate filter applies to; paging
    # walks the window along it.
    filter_field: str | None = None
    paged: bool = False  # limit-capped: walk the window when a page is full
    needs_market_or_region: bool = False
    ttl: int = 3600  # cache lifetime in seconds
    checks: tuple[str, ...] = ()  # frame-level rules, see mdframes.schemas
    description: str = ""
    caveats: tuple[str, ...] = ()
    # How md.Lake keeps this dataset (CONTRACT §10): "window" = incremental start..end windows
    # re-fetched ``lookback`` days back; "snapshot" = the whole answer stored at each sync;
    # "" = not synced (a view of another dataset, or v1).
    lake: Literal["window", "snapshot", ""] = ""
    lookback: int = 0  # days; see the reasons at each entry
    # The values a lake sync asks for, per parameter: one unit of work per combination. A
    # value that stands for several (congress "both") is one unit of several requests.
    lake_fanout: Mapping[str, tuple[str, ...]] = field(
        default_factory=dict, hash=False, compare=False
    )
    # Another registry entry's loader serves this one: (dataset, view name).
    view_of: tuple[str, str] | None = None
    view: str = ""  # this entry's own view name where the loader has a `view=` switch
    # The spec states these fields and their types: a field not marked "or null" is then
    # never null (soft rule `not_null`). False where the spec shows no record fields (their
    # declared fields are the live service's, nothing is promised about nulls).
    fields_stated: bool = True
    # Arguments of the documented example call (docs, demo, tests); see example_arguments.
    example: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        if self.event is None and self.deadline is not None:
            object.__setattr__(self, "event", self.deadline.event)
        names = {n for part in self.record_id for n in part.split("|")}
        if self.per_symbol and self.record_id and "symbol" not in names:
            # A record of one symbol's answer is that symbol's: the symbol is part of its
            # identity (one lobbying filing is listed under two symbols).
            object.__setattr__(self, "record_id", ("symbol", *self.record_id))

    @property
    def identity(self) -> Identity:
        """The record identity, parsed (see :class:`mdframes.identity.Identity`).

        >>> get("insider_trading").identity.names[:3]
        ('symbol', 'date', 'insider')
        """
        return Identity.parse(self.record_id)

    @property
    def merge_id(self) -> Identity:
        """What tells apart the records of one answer (the identity without the header
        fields every record of the answer shares): paging merges pages by it.

        >>> get("lobbying").merge_id.spec
        ['filing_uuid']
        """
        return self.identity.without({f.name for f in self.header})

    @property
    def base(self) -> str:
        """The dataset whose records this one is made from: the entry it is a view of, or
        itself (``app_ratings_daily`` -> ``app_ratings``)."""
        return self.view_of[0] if self.view_of is not None else self.name

    def lake_variants(self) -> list[tuple[dict[str, str], int]]:
        """The parameter sets a lake sync asks for per symbol (or cross section), each with
        the fewest requests it takes: ``[({"chamber": "both"}, 2)]`` for congress trades,
        ``[({"type": "daily"}, 1), ({"type": "monthly"}, 1)]`` for forecasts, ``[({}, 1)]``
        for the rest.

        Examples
        --------
        >>> get("congress_trades").lake_variants()
        [({'chamber': 'both'}, 2)]
        """
        names = list(self.lake_fanout)
        out = []
        for values in itertools.product(*self.lake_fanout.values()):
            params = dict(zip(names, values, strict=True))
            requests = 1
            for name, value in params.items():
                p = self.param(name)
                requests *= len(p.fan_out(value)) if p is not None else 1
            out.append((params, requests))
        return out

    @property
    def per_symbol(self) -> bool:
        """True when the dataset is asked for one symbol at a time (``symbols`` argument)."""
        return "{symbol}" in self.path

    @property
    def whole_cross_section(self) -> bool:
        """True when one answer at the highest ``limit`` is the whole cross section (a
        screener or a recent list): a lake sync asks for that many."""
        return self.param("limit") is not None and self.scope in ("screener", "recent")

    @property
    def loader(self) -> str:
        """The public loader's dotted name under ``mdframes`` (``load_insider_trading``,
        ``v1.load_sentiments``, ``load_screener``)."""
        if self.view_of is not None:
            return REGISTRY[self.view_of[0]].loader
        if self.scope in ("screener", "recent") and self.version == "v2":
            return f"load_{self.scope}"
        if self.version == "v1":
            return "v1.load_" + self.name.split("/", 1)[1]
        return f"load_{self.name}"

    @property
    def time_column(self) -> str | None:
        """The column rows are ordered by: the window's field, else ``date``."""
        wire = self.filter_field or "date"
        return next((f.name for f in self.fields if wire in (f.wire, f.name)), None)

    @property
    def read_bound(self) -> str | None:
        """The column a panel's reads of this dataset are bounded by when it is not the time
        column: the anchor of a dataset whose rows become public a deadline (or, filed late,
        any time) after their event, so that a read from a date holds every row public from
        it and none public long before. ``None``: the time column bounds reads.

        >>> get("insider_trading").read_bound, get("sentiment").read_bound
        ('filing_date', None)
        """
        deadline = self.deadline
        if deadline is None or not deadline.slack_days or self.anchor is None:
            return None
        return self.anchor if self.anchor != self.time_column else None

    @property
    def first_date(self) -> dt.date | None:
        """The first date the service has data for (``None``: no known limit): the entry's
        ``history_start``, else its base dataset's.

        >>> get("app_ratings_daily").first_date
        datetime.date(2026, 9, 3)
        """
        value = self.history_start or REGISTRY[self.base].history_start
        return None if value is None else dt.date.fromisoformat(value)

    @property
    def slack_days(self) -> int:
        """Days a read reaches further back than a window: the service filters on the event
        date, while a row becomes public at its anchor, up to the deadline's slack later."""
        return 0 if self.deadline is None else self.deadline.slack_days

    @property
    def identity_columns(self) -> list[str]:
        """The columns of the dataset its record identity reads."""
        known = set(self.columns)
        return [n for n in self.identity.names if n in known]

    def load_start(self, since: dt.date, lookback: int | None) -> dt.date | None:
        """The first date to request so that every window of ``lookback`` days from ``since``
        on is complete, never before the history; ``None``: the whole history."""
        first = self.first_date
        if lookback is None:
            return first
        wanted = since - dt.timedelta(days=lookback + self.slack_days)
        return wanted if first is None else max(wanted, first)

    def public_start(self, since: dt.date, lookback: int | None) -> dt.date | None:
        """The first date a row public then or later is needed from, so that every window
        of ``lookback`` days from ``since`` is complete, where reads are bounded by when rows
        became public (:attr:`read_bound`: a row filed any time after its event is read when
        it became public in the windows, and none public long before them is). ``None``: the
        time column bounds the reads (:meth:`load_start`), or all history is needed."""
        if lookback is None or self.read_bound is None:
            return None
        return since - dt.timedelta(days=lookback)

    @property
    def seekable(self) -> bool:
        """Whether a read from a date holds every row public from that date: a row becomes
        public on the date a lake filters reads by (no event date before its anchor, no
        deadline), so the latest value before a point is found by reading a few days before
        it."""
        time = self.time_column or "date"
        return (
            self.base == self.name
            and self.event is None
            and self.deadline is None
            and self.anchor == time
        )

    @property
    def columns(self) -> list[str]:
        """The contract's column order (header fields first)."""
        return [f.name for f in self.all_fields]

    @property
    def all_fields(self) -> tuple[Field, ...]:
        return self.header + self.fields + self.trailer

    def nullable(self, f: Field) -> bool:
        """Whether a null in ``f`` is normal here (see :attr:`Field.nullable`).

        >>> ds = get("insider_trading")
        >>> ds.nullable(ds.fields[4]), ds.nullable(CIK)   # shares, cik
        (False, True)
        """
        return f.nullable if f.nullable is not None else not self.fields_stated

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    @property
    def limit_bounds(self) -> tuple[int | None, int | None]:
        p = self.param("limit")
        return (p.lo, p.hi) if p else (None, None)


# --- vocabularies from the spec -------------------------------------------------------------

INSIDER_TYPES = (
    "Purchase",
    "Sale",
    "Derivative_Purchase",
    "Derivative_Sale",
    "Exercise",
    "Award",
    "Gift",
    "Tax",
    "Conversion",
    "Other_Acquisition",
    "Other_Disposition",
)
INSIDER_GROUPS = {
    "acquisition": ("Purchase", "Derivative_Purchase", "Exercise", "Award", "Other_Acquisition"),
    "disposition": ("Sale", "Derivative_Sale", "Tax", "Gift", "Other_Disposition"),
    "neutral": ("Conversion",),
}
CHAMBERS = ("house", "senate")
PLATFORMS = ("ios", "android")
QUARTERS = ("Q1", "Q2", "Q3", "Q4")
PATENT_TYPES = ("utility", "design", "plant", "reissue")
FORECAST_TYPES = ("daily", "monthly")
CONGRESS_TYPES = ("Purchase", "Sale")
AMOUNT_FLAGS = ("review", "ambiguous")
# The spec's amount brackets, in order; amounts are normalised to these where possible.
CONGRESS_BRACKETS = (
    "$1,001 - $15,000",
    "$15,001 - $50,000",
    "$50,001 - $100,000",
    "$100,001 - $250,000",
    "$250,001 - $500,000",
    "$500,001 - $1,000,000",
    "$1,000,001 - $5,000,000",
    "Over $5,000,000",
)
APP_RATINGS_HISTORY_START = "2026-09-03"

MARKETS: tuple[tuple[str, str], ...] = (
    ("DOW 30", "US"),
    ("S&P 500", "US"),
    ("NASDAQ", "US"),
    ("NYSE", "US"),
    ("ETFs", "US"),
    ("OTC Market", "US"),
    ("UK FTSE 100", "UK"),
    ("Germany DAX", "DE"),
    ("Canada TSX", "Canada"),
    ("Australia ASX", "Australia"),
    ("HK Hang Seng", "Hong Kong"),
    ("Mexico BMV", "Mexico"),
    ("Foreign Exchange", "Global"),
    ("Commodities", "Global"),
    ("Crypto Currencies", "Global"),
    ("Index Futures", "Global"),
    ("Tadawul TASI", "Saudi Arabia"),
    ("Russia MOEX", "Russia"),
    ("Brazil BOVESPA", "Brazil"),
    ("Tel Aviv TASE", "Israel"),
)

# How serious a failed rule is (CONTRACT §2 Validation). Hard: what the spec states about one
# value; the load raises (or, with errors="skip", drops the symbols whose rows fail). Soft:
# consistency and vocabulary a live service can outgrow; the data is kept, the failure is
# recorded in df.attrs["quality"] with one DataQualityWarning (validate="strict" raises).
SEVERITY: dict[str, str] = {
    "type": "hard",  # the column has its kind's dtype (wrong JSON types fail while typing)
    "required": "hard",  # a record's id or date is present
    "range": "hard",  # score in [-1, 1], volumes >= 0, ...
    "cik": "hard",  # 10 digits or null
    "list": "hard",  # list fields hold lists
    "not_null": "soft",  # a null the spec does not announce (insider filingDate does occur)
    "vocabulary": "soft",  # a value outside the spec's list: kept as an added category
    "duplicates": "soft",  # the same record id twice in one answer
    "total_volume": "soft",  # total = calls + puts (+1: truncated separately)
    "disclosure_after_trade": "soft",
    "forecast_band": "soft",  # lower <= mid <= upper
    "app_observations": "soft",  # an app listed without its observations (no rows to keep)
}

# --- building blocks --------------------------------------------------------------------------

MINUTE, DAY = 60, 86400

SYMBOL = Field("symbol", nullable=False)
NAME = Field("name")
CIK = Field("cik", "cik", nullable=True)
V1_SYMBOL = Field("ticker", nullable=False, column="symbol")
START = Param("start", "startDate", "date")
END = Param("end", "endDate", "date")


def _limit(lo: int | None = 1, hi: int | None = None) -> Param:
    return Param("limit", "limit", "int", lo=lo, hi=hi)


DATE_RANGE = (START, END, _limit())
CAPPED_RANGE = (START, END, _limit(1, 500))
SCREEN = (Param("market", "market"), Param("region", "region"), _limit(1, 20_000))

INSIDER_FIELDS = (
    Field("date", "date"),
    Field("insider"),
    Field("relationship", description="Role of the insider (CEO, Director, 10% Owner, ...)"),
    Field(
        "transactionType",
        "cat",
        INSIDER_TYPES,
        description="Form 4 transaction kind; md.insider_groups() maps it to acquisition, "
        "disposition or neutral",
    ),
    Field("shares", "int", ge=0),
    Field("pricePerShare", "float", ge=0),
    Field("totalValue", "int", ge=0),
    Field("sharesOwned", "int", ge=0),
    # "filingDate | string" (not "or null"), yet the service's own published example has a
    # null: a soft failure, loaded as NA (point_in_time imputes the 2-business-day deadline).
    Field("filingDate", "date", nullable=False),
    Field("filingUrl"),
    CIK,
)
CONGRESS_FIELDS = (
    Field("date", "date"),
    Field("politician"),
    Field("transactionType", "cat", CONGRESS_TYPES),
    Field(
        "amount",
        description="Amount bracket such as '$1,001 - $15,000' (md.congress_amount_bounds "
        "gives numbers)",
    ),
    # An open set: member-specific codes occur.
    Field(
        "owner",
        "cat",
        nullable=True,
        description="Whose trade: SELF, SP (spouse), DC (dependent child), JT (joint), "
        "UNKNOWN (blank owner in a Senate filing; blank House owners read SELF) or a "
        "member-specific code",
    ),
    Field(
        "amountRaw",
        nullable=True,
        description="The amount as filed, set only when `amount` was rewritten",
    ),
    Field(
        "amountFlag",
        "str",
        AMOUNT_FLAGS,
        nullable=True,
        description="null on clean rows; review: the filed amount was unusable; ambiguous: "
        "it had two readings (amount keeps the filed text in both cases)",
    ),
    Field("disclosureDate", "date", nullable=True),
)
NEWS_FIELDS = (
    Field("date", "date"),
    Field("headline"),
    Field("source"),
    Field("url"),
    Field("sentiment", "float", ge=-1, le=1),
)
ANALYST_FIELDS = (
    Field("date", "date"),
    Field("institution"),
    # Seen values only (Reiterated, Upgrade, ...): not a closed set.
    Field("action", description="Rating action: Upgrade, Downgrade, Reiterated, Initiated, ..."),
    Field("rating"),
    Field(
        "targetPrice",
        nullable=True,
        description="Price target as currency text ('$200.73') or a change ('$180.00 -> "
        "$200.00'); md.analyst_changes() parses it",
    ),
)
APP_OBS_FIELDS = (
    Field("platform", "cat", PLATFORMS),
    Field("appId", nullable=True),
    Field("appName", nullable=True),
    Field("date", "date"),
    Field("score", "float", ge=1, le=5, nullable=True),
    Field("ratingsCount", "int", ge=0, nullable=True),
    Field("installCount", "int", ge=0, nullable=True),
)


def _per_symbol(
    name: str, tail: str, records: str | None, fields: tuple[Field, ...], **kw
) -> Dataset:
    kw.setdefault("params", DATE_RANGE)
    kw.setdefault("anchor", "date")
    kw.setdefault("filter_field", "date")
    return Dataset(
        name=name,
        path=f"/v2/{tail}/{{symbol}}",
        records=records,
        header=(SYMBOL, NAME) + kw.pop("extra_header", ()),
        fields=fields,
        **kw,
    )


_DATASETS: list[Dataset] = [
    Dataset(
        name="forecast",
        path="/v2/predictions/{type}/{symbol}",
        params=(Param("type", "{type}", "choice", choices=FORECAST_TYPES, default="daily"),),
        shape="forecast",
        records="predictions",
        header=(SYMBOL, NAME, Field("type", "cat", FORECAST_TYPES)),
        fields=(
            Field("date", "date", nullable=False),
            Field("mid", "float"),
            Field("lower", "float"),
            Field("upper", "float"),
        ),
        trailer=(
            Field("expectedShortTerm", "float"),
            Field("expectedMidTerm", "float"),
            Field("expectedLongTerm", "float"),
            Field("lowerBoundChange", "float"),
            Field("upperBoundChange", "float"),
            Field("lastUpdated", "ts"),
        ),
        anchor=None,  # forecasts are forward-looking; they carry no publication date
        ttl=15 * MINUTE,
        # Forward only: the service keeps no past forecast, so each sync stores the answer.
        lake="snapshot",
        lake_fanout={"type": FORECAST_TYPES},
        record_id=("symbol", "type", "date"),
        checks=("forecast_band",),
        description="Forward price forecasts: 10 trading days (daily) or 12 months (monthly).",
        caveats=("Only forward forecasts exist; historical forecasts are unavailable.",),
    ),
    _per_symbol(
        "sentiment",
        "sentiment",
        "data",
        (Field("date", "date"), Field("score", "float", ge=-1, le=1)),
        description="Daily news-sentiment score in [-1, 1].",
        lake="window",
        # Recent scores are recomputed as late articles are scored (the service revises them
        # in place). One request covers any window (not capped), so a month costs nothing.
        lookback=30,
        record_id=("symbol", "date"),
    ),
    _per_symbol(
        "news",
        "news",
        "articles",
        NEWS_FIELDS,
        shape="auto",
        fields_stated=False,
        description="News articles for one symbol.",
        lake="window",
        # Articles are dated by publication but indexed (and scored) up to days later.
        lookback=14,
        record_id=("symbol", "url"),  # an article is its link; its score may be revised
        caveats=("Record fields are not shown in the spec; every returned field is kept.",),
    ),
    _per_symbol(
        "analyst_ratings",
        "analyst-ratings",
        "ratings",
        ANALYST_FIELDS,
        description="Analyst rating actions with price targets (as currency text).",
        lake="window",
        # Aggregators report rating actions days after the note; a month covers the stragglers.
        lookback=30,
        # One firm, one action on a symbol per day; rating and target text may be corrected.
        record_id=("symbol", "date", "institution", "action"),
    ),
    _per_symbol(
        "put_call_ratio",
        "put-call-ratio",
        "data",
        (
            Field("date", "date"),
            Field("ratio", "float", ge=0),
            Field("callVolume", "int", ge=0),
            Field("putVolume", "int", ge=0),
            Field("totalVolume", "int", ge=0),
            Field("price", "float", ge=0),
        ),
        checks=("total_volume",),
        description="Daily put/call ratio with options volumes and closing price.",
        lake="window",
        # Volumes and the closing price settle after the session; late corrections are rare
        # beyond a week. Not capped: the longer window costs no request.
        lookback=10,
        record_id=("symbol", "date"),
    ),
    _per_symbol(
        "insider_trading",
        "insider-trading",
        "transactions",
        INSIDER_FIELDS,
        anchor="filing_date",
        deadline=FORM_4,
        description="Insider transactions from Form 4 filings.",
        lake="window",
        # The window filters on the transaction date; Form 4 is due 2 business days later, but
        # late filings and amendments (4/A) arrive weeks later. 30 days catches most of them
        # at no extra request (not capped); older amendments need a wider start=.
        lookback=30,
        # filing_date/filing_url are backfilled and amended, so they are not identity.
        record_id=("symbol", "date", "insider", "transaction_type", "shares", "price_per_share"),
        caveats=("`filing_date` is when the filing became public: the point-in-time anchor.",),
    ),
    Dataset(
        name="congress_trades",
        path="/v2/congress/{chamber}/{symbol}",
        params=(
            Param(
                "chamber",
                "{chamber}",
                "choice",
                choices=("both",) + CHAMBERS,
                default="both",
                expands=(("both", CHAMBERS),),
            ),
        )
        + DATE_RANGE,
        shape="congress",
        records="trades",
        header=(SYMBOL, NAME, Field("chamber", "cat", CHAMBERS)),
        fields=CONGRESS_FIELDS,
        anchor="disclosure_date",
        deadline=STOCK_ACT,
        filter_field="date",
        checks=("disclosure_after_trade",),
        description="US House and Senate member trades.",
        lake="window",
        # The service filters on the trade date and members disclose up to 45 days after the
        # trade; the service then backfills owner and disclosure date and re-normalises amounts
        # up to 60 days after the disclosure. 120 days covers 45 + 60 with two weeks to spare,
        # in the same single request per chamber (not capped).
        lookback=120,
        lake_fanout={"chamber": ("both",)},  # one load asks both chambers
        # The filed amount (amount_raw when set, else amount): a re-normalised amount, a
        # backfilled owner or disclosure date is a new version of the same trade.
        record_id=(
            "symbol",
            "chamber",
            "date",
            "politician",
            "transaction_type",
            "amount_raw|amount",
        ),
        caveats=(
            "startDate/endDate filter on the trade date, not the disclosure date.",
            "Older responses lack owner, amountRaw and amountFlag (loaded as NA).",
            "A null disclosure_date counts as public 45 days after the trade.",
        ),
    ),
    _per_symbol(
        "lobbying",
        "lobbying",
        "filings",
        (
            Field("date", "date"),
            Field("filingUuid", required=True),
            Field("filingYear", "int"),
            Field("quarter", "cat", QUARTERS),
            Field("clientName"),
            Field("registrantName"),
            Field("income", "float", ge=0),
            Field("expenses", "float", ge=0),
            Field("issueCodes", "list"),
            Field("governmentEntities", "list"),
        ),
        params=CAPPED_RANGE,
        paged=True,
        description="Corporate lobbying filings.",
        lake="window",
        # The window filters on the posting date; LD-2 reports are due 20 days after the
        # quarter and are indexed (and amended) over the following weeks.
        lookback=45,
        record_id=("symbol", "filing_uuid"),  # one filing can be listed under two symbols
    ),
    _per_symbol(
        "government_contracts",
        "government-contracts",
        "contracts",
        (
            Field("awardId", required=True),
            Field("awardAmount", "float"),
            Field(
                "awardType",
                blank_is_null=True,
                nullable=True,
                description="Award type; the spec says always empty (empty text loads as NA)",
            ),
            Field("awardingAgency"),
            Field("awardingSubAgency"),
            Field("recipientName"),
            Field("startDate", "date"),
            Field("endDate", "date", nullable=True),  # "may be empty"
            Field("description"),
            Field("naicsCode"),
            Field("naicsDescription"),
            Field(
                "contractAwardType",
                blank_is_null=True,
                nullable=True,
                description="Contract award type; the spec says always empty (empty text "
                "loads as NA)",
            ),
            CIK,
        ),
        params=CAPPED_RANGE,
        paged=True,
        anchor="start_date",
        filter_field="startDate",
        description="Federal contract awards, latest reported state per award.",
        lake="window",
        # Awards are updated in place by award id (modifications set a new amount) over their
        # period of performance, most within about a year of the start date (the sandbox: 15
        # to 400 days), and DoD publishes with a 90-day delay. 400 days re-reads a year of
        # awards: one page of 500 for most issuers, a few for the largest contractors. Later
        # modifications are seen by a sync with an earlier start=.
        lookback=400,
        record_id=("symbol", "award_id"),
        caveats=("`end_date` may be empty for indefinite-delivery awards (loaded as NaT).",),
    ),
    _per_symbol(
        "patent_filings",
        "patent-filings",
        "patents",
        (
            Field("patentId", required=True),
            Field("patentDate", "date"),
            Field("title"),
            Field("type", "cat", PATENT_TYPES),
            Field("kind", description="Patent kind code (B1, B2: utility grants; S1: design; ...)"),
            Field("numClaims", "float", ge=0),
            Field("numCitedBy", "float", ge=0),
            Field("assigneeOrganization"),
            Field("assigneeType", description="Assignee code: 2 = US company, 3 = foreign company"),
            Field("applicationFilingDate", "date"),
            Field("filingToGrantDays", "float"),
            Field("inventors", "list"),
            Field("numInventors", "float", ge=0),
            Field("cpcSections", "list"),
            Field("cpcSubsections", "list"),
            Field("primaryCpcSection"),
            CIK,
        ),
        params=CAPPED_RANGE,
        paged=True,
        anchor="patent_date",
        filter_field="patentDate",
        description="Granted patents; the window filters on the grant date.",
        lake="window",
        # Grants are published weekly on their grant date; two weeks absorbs indexing delays.
        lookback=14,
        record_id=("symbol", "patent_id"),
    ),
    _per_symbol(
        "app_ratings",
        "app-ratings",
        "apps",
        APP_OBS_FIELDS,
        extra_header=(CIK,),
        shape="app_ratings_apps",
        view="apps",
        params=CAPPED_RANGE,
        paged=True,
        history_start=APP_RATINGS_HISTORY_START,
        description="Mobile app ratings, one row per app per platform per date.",
        lake="window",
        # One observation per app per day, taken once; the newest day may still be filling.
        # Capped at 500 records a page, so the lookback is kept short.
        lookback=3,
        record_id=("symbol", "platform", "app_id", "date"),
        caveats=(
            f"History begins {APP_RATINGS_HISTORY_START}; apps added later are never backfilled.",
            "`limit` counts app-date records.",
            "Older responses (weekly, no `apps`) load with NA app_id/app_name.",
        ),
    ),
    _per_symbol(
        "app_ratings_daily",
        "app-ratings",
        "data",
        (
            Field("date", "date"),
            # `ios` or `android` is null when the company has no app there or it is unrated.
            Field("iosScore", "float", ge=1, le=5, nullable=True),
            Field("iosRatingsCount", "int", ge=0, nullable=True),
            Field("androidScore", "float", ge=1, le=5, nullable=True),
            Field("androidRatingsCount", "int", ge=0, nullable=True),
            Field("androidInstallCount", "int", ge=0, nullable=True),
        ),
        shape="app_ratings_daily",
        view_of=("app_ratings", "daily"),
        view="daily",
        params=CAPPED_RANGE,
        paged=True,
        record_id=("symbol", "date"),
        history_start=APP_RATINGS_HISTORY_START,
        description="Mobile app ratings, one row per date (biggest app per platform).",
    ),
    # The spec shows no record fields for these two; declared as the live service sends them
    # (its documentation's examples and the official client), every other field still kept.
    _per_symbol(
        "professionalnet",
        "professionalnet",
        "data",
        (
            Field("date", "date"),
            Field("employeeCount", "int", ge=0),
            Field("followerCount", "int", ge=0),
            Field("jobCount", "int", ge=0),
        ),
        shape="auto",
        fields_stated=False,
        description="Professional-network metrics: employees, followers and open jobs.",
        lake="window",
        lookback=7,  # daily counts of a crawl; a week absorbs re-crawls, one request anyway
        record_id=("symbol", "date"),
    ),
    _per_symbol(
        "forum_mentions",
        "forum-mentions",
        "data",
        (
            Field("date", "ts", description="UTC time of the count (the service sends times)"),
            Field("subreddit"),
            Field("mentions", "int", ge=0),
        ),
        shape="auto",
        fields_stated=False,
        description="Forum mentions per subreddit, timestamped.",
        lake="window",
        lookback=7,  # mention counts of recent days grow as posts are indexed
        # Older sandboxes named the forum ``subforum``; the live service ``subreddit``.
        record_id=("symbol", "date", "subreddit|subforum"),
    ),
    Dataset(
        name="tickers",
        path="/v2/tickers",
        scope="discovery",
        params=(
            Param("type", "type", "choice", choices=FORECAST_TYPES),
            Param("market", "market"),
            Param("region", "region"),
            _limit(1),
        ),
        records="tickers",
        fields=(SYMBOL, NAME),
        ttl=DAY,
        description="Tickers with predictions available.",
        lake="snapshot",  # the universe as it was: no survivorship bias
        record_id=("symbol",),
    ),
    Dataset(
        name="markets",
        path="/v2/markets",
        scope="discovery",
        records="markets",
        fields=(Field("name", nullable=False), Field("region")),
        ttl=DAY,
        description="Markets and their regions (the values of the `market` filter).",
        lake="snapshot",
        record_id=("name",),
    ),
    Dataset(
        name="regions",
        path="/v2/regions",
        scope="discovery",
        shape="auto",
        fields_stated=False,
        ttl=DAY,
        description="Markets grouped by region (payload not shown in the spec).",
        lake="snapshot",
        record_id=("region",),
    ),
]

SCREENER_REQUIRED = ("sentiment", "professionalnet", "app-ratings")
SCREENER_DATASETS = (
    "sentiment",
    "professionalnet",
    "app-ratings",
    "analyst-ratings",
    "news",
    "put-call-ratio",
    "forum-mentions",
    "predictions/daily",
    "predictions/monthly",
    "insider-trading",
    "congress/house",
    "congress/senate",
    "lobbying",
    "government-contracts",
    "patent-filings",
)
_SCREENER_FIELDS: dict[str, tuple[Field, ...]] = {
    "sentiment": (SYMBOL, NAME, Field("date", "date"), Field("score", "float", ge=-1, le=1)),
    "insider-trading": (
        SYMBOL,
        NAME,
        Field("date", "date"),
        Field("insider"),
        Field("relationship"),
        Field("transactionType", "cat", INSIDER_TYPES + ("Buy",)),
        Field("shares", "int", ge=0),
        Field("totalValue", "int", ge=0),
    ),
}
for _tail in SCREENER_DATASETS:
    _DATASETS.append(
        Dataset(
            name=f"screener/{_tail}",
            path=f"/v2/screener/{_tail}",
            scope="screener",
            params=SCREEN,
            shape="auto" if _tail not in _SCREENER_FIELDS else "records",
            fields_stated=_tail in _SCREENER_FIELDS,
            records="data",
            fields=_SCREENER_FIELDS.get(_tail, (SYMBOL,)),
            anchor="date",
            needs_market_or_region=_tail in SCREENER_REQUIRED,
            ttl=5 * MINUTE,
            description=f"Screener: {_tail} across tickers; summary in attrs['summary'].",
            # Latest state only: each sync stores the cross-section. A row carries no id, so
            # the whole row is its identity (record_id empty).
            lake="snapshot",
        )
    )

RECENT_DATASETS = ("news", "analyst-ratings")
_RECENT_FIELDS = {
    "news": (SYMBOL, NAME) + NEWS_FIELDS,
    "analyst-ratings": (SYMBOL, NAME) + ANALYST_FIELDS,
}
for _tail in RECENT_DATASETS:
    _DATASETS.append(
        Dataset(
            name=f"recent/{_tail}",
            path=f"/v2/recent/{_tail}",
            scope="recent",
            params=SCREEN,
            records="data",
            fields=_RECENT_FIELDS[_tail],
            anchor="date",
            ttl=5 * MINUTE,
            description=f"Latest {_tail} across all tickers; summary in attrs['summary'].",
            lake="snapshot",  # the latest entries only; whole-row identity as for screeners
        )
    )

# --- legacy v1 ---------------------------------------------------------------------------------

V1_TYPE = Param("type", "{type}", "choice", choices=FORECAST_TYPES, default="daily")
V1_MARKET = Param("market", "{market}", "str")
V1_TICKER = Param("ticker", "{ticker}", "str")
V1_WINDOW = (Param("date_from", "dateFrom", "date"), Param("date_to", "dateTo", "date"))
# v1 words -> the v2 names of the same meaning (forecast metadata, lastUpdated).
V1_FORECAST_META = (
    Field("expectedShort", "float", column="expected_short_term"),
    Field("expectedMid", "float", column="expected_mid_term"),
    Field("expectedLong", "float", column="expected_long_term"),
)


def _v1_ticker(
    name: str, tail: str, records: str, fields: tuple[Field, ...], *, window: bool = True, **kw
) -> Dataset:
    kw.setdefault("anchor", "date")
    return Dataset(
        name=f"v1/{name}",
        path=f"/v1/{tail}/{{market}}/{{ticker}}",
        version="v1",
        params=(V1_MARKET, V1_TICKER) + (V1_WINDOW if window else ()),
        records=records,
        header=(V1_SYMBOL, NAME),
        fields=fields,
        **kw,
    )


_DATASETS += [
    Dataset(
        name="v1/available_markets",
        path="/v1/available/markets",
        version="v1",
        scope="discovery",
        shape="v1_markets",
        records="availableMarkets",
        fields=(Field("market", nullable=False),),
        ttl=DAY,
        description="Market names the subscription covers.",
    ),
    Dataset(
        name="v1/available_tickers",
        path="/v1/available/tickers/{type}",
        version="v1",
        scope="discovery",
        params=(V1_TYPE,),
        shape="v1_list",
        fields=(V1_SYMBOL, NAME, Field("market")),
        ttl=DAY,
        description="Tickers the subscription can access.",
    ),
    Dataset(
        name="v1/market_forecasts",
        path="/v1/market/{market}/predictions/{type}",
        version="v1",
        scope="discovery",
        params=(V1_MARKET, V1_TYPE),
        shape="v1_market_forecasts",
        fields=(
            V1_SYMBOL,
            NAME,
            Field("type", "cat", FORECAST_TYPES),
            *V1_FORECAST_META,
            Field("technicalAnalysis"),
            Field("lastUpdate", "ts", column="last_updated"),
            Field("sentimentScore", "float", ge=-1, le=1),
        ),
        ttl=15 * MINUTE,
        description="Forecast summary for every ticker of a market.",
    ),
    Dataset(
        name="v1/ticker_forecast",
        path="/v1/ticker/{ticker}/predictions/{type}",
        version="v1",
        params=(V1_TICKER, V1_TYPE),
        shape="v1_ticker_forecast",
        header=(V1_SYMBOL, NAME, Field("type", "cat", FORECAST_TYPES)),
        fields=(
            Field("date", "date", nullable=False),
            Field("mid", "float"),
            Field("lower", "float"),
            Field("upper", "float"),
        ),
        trailer=(*V1_FORECAST_META, Field("lastUpdate", "ts", column="last_updated")),
        ttl=15 * MINUTE,
        checks=("forecast_band",),
        description="One ticker's forecast, one row per date.",
    ),
    _v1_ticker(
        "sentiments",
        "sentiments",
        "sentimentAnalysis",
        (Field("date", "date"), Field("score", "float", ge=-1, le=1)),
        shape="v1_sentiments",
        description="Daily sentiment scores (v1).",
    ),
    _v1_ticker(
        "app_ratings",
        "appratings",
        "appRatings",
        (
            Field("date", "date"),
            Field("appStoreScore", "float", ge=1, le=5, column="ios_score"),
            Field("appStoreRatingsCount", "int", ge=0, column="ios_ratings_count"),
            Field("playStoreScore", "float", ge=1, le=5, column="android_score"),
            Field("playStoreRatingsCount", "int", ge=0, column="android_ratings_count"),
            Field("playStoreInstallCount", "int", ge=0, column="android_install_count"),
        ),
        description="App ratings (v1), in the v2 daily-view column names.",
    ),
    _v1_ticker(
        "analyst_ratings",
        "analystratings",
        "analystRatings",
        (
            Field("date", "date"),
            Field("institution"),
            Field("type", column="action"),
            Field("signal", column="rating"),
            Field("targetPrice"),
        ),
        description="Analyst ratings (v1), in v2 column names.",
    ),
    _v1_ticker(
        "house_trades",
        "housetrades",
        "houseTrades",
        (
            Field("date", "date"),
            Field("representative", column="politician"),
            Field("type", "cat", CONGRESS_TYPES, column="transaction_type"),
            Field("amount"),
        ),
        caveats=("v1 carries no disclosure date; the trade date is the only anchor.",),
        description="US House member trades (v1), amounts as filed.",
    ),
    _v1_ticker(
        "insider_transactions",
        "insidertransactions",
        "insiderTransactions",
        (
            Field("date", "date"),
            Field("insiderTradings", column="insider"),
            Field("relationship"),
            Field("transaction", "cat", INSIDER_TYPES, column="transaction_type"),
            Field("cost", "float", ge=0, column="price_per_share"),
            Field("shares", "int", ge=0),
            Field("USDValue", "int", ge=0, column="total_value"),
            Field("totalShares", "int", ge=0, column="shares_owned"),
            Field("SECForm4Date", "ts", column="filing_date"),
            Field("SECForm4Link", column="filing_url"),
        ),
        window=False,  # the spec shows no query parameters for this endpoint
        anchor="filing_date",
        # No window to widen (slack 0), but a null filing date still has its deadline.
        deadline=replace(FORM_4, slack_days=0),
        description="Insider transactions (v1), in v2 column names.",
    ),
]

REGISTRY: dict[str, Dataset] = {d.name: d for d in _DATASETS}

# Values for required parameters in documented example calls (docs, demo and tests run them).
_EXAMPLE_VALUES: dict[str, Any] = {"market": "S&P 500", "ticker": "AAPL"}


def example_arguments(ds: Dataset) -> dict[str, Any]:
    """The arguments of the dataset's documented example, for ``md.load(ds.name, **args)``.

    Derived from the declared parameters (two symbols where a window is taken, the required
    path parts, a region where the screener needs one) and overridden by ``ds.example``.

    >>> example_arguments(get("screener/sentiment"))
    {'region': 'US', 'limit': 500}
    """
    args: dict[str, Any] = {}
    if ds.per_symbol:
        args["symbols"] = ["AAPL", "MSFT"] if ds.param("start") is not None else "AAPL"
    for p in ds.params:
        if p.in_path and p.default is None and p.name in _EXAMPLE_VALUES:
            args[p.name] = _EXAMPLE_VALUES[p.name]
    if ds.needs_market_or_region:
        args["region"] = "US"
    if ds.scope in ("screener", "recent"):
        args["limit"] = 500
    args.update(ds.example)
    return args


def views(dataset: str) -> dict[str, str]:
    """View name -> registry name for a loader with a ``view=`` switch (``app_ratings``)."""
    own = REGISTRY[dataset]
    out = {own.view: own.name} if own.view else {}
    out.update(
        {d.view_of[1]: d.name for d in REGISTRY.values() if d.view_of and d.view_of[0] == dataset}
    )
    return out


def _spelling(name: str) -> str:
    return name.strip().casefold().replace("-", "_")


# Listing every choice helps with a handful of names (views, chambers) always, and with a
# score of them (markets) when nothing is close; past that it is noise.
_LIST_FEW, _LIST_SOME = 8, 20


def closest_names(
    value: str, choices: Iterable[str], n: int = 3, *, cutoff: float = 0.6
) -> list[str]:
    """The entries of ``choices`` closest to ``value`` (case, ``_``/``-`` aside), best first.

    The one home of fuzzy matching in mdframes: every "did you mean" is made here. Ranked by
    difflib's similarity, then by edit distance, then by position in ``choices`` (so a list
    in order of prominence, such as the ticker list, settles ties: ``APPL`` -> ``AAPL``).

    Examples
    --------
    >>> closest_names("insider_tradng", ["insider_trading", "news"])
    ['insider_trading']
    """
    from difflib import SequenceMatcher

    by_key: dict[str, str] = {}
    for choice in choices:
        by_key.setdefault(_spelling(choice), choice)
    key = _spelling(value)
    matcher = SequenceMatcher()
    matcher.set_seq2(key)
    scored = []
    for position, candidate in enumerate(by_key):
        matcher.set_seq1(candidate)
        if (
            matcher.real_quick_ratio() >= cutoff
            and matcher.quick_ratio() >= cutoff
            and matcher.ratio() >= cutoff
        ):
            scored.append((-matcher.ratio(), _edits(key, candidate), position, candidate))
    close = [c for *_, c in sorted(scored)[:n]]
    if len(close) < n and key:
        # A fragment of a longer name ("dow" for "DOW 30") is a near miss too.
        close += [k for k in by_key if key in k and k not in close][: n - len(close)]
    return [by_key[k] for k in close]


def _edits(a: str, b: str) -> int:
    """Levenshtein distance (short names only: it is quadratic)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def resolve_name(
    value: str,
    choices: Iterable[str],
    *,
    what: str,
    parameter: str | None = None,
    dataset: str | None = None,
) -> str:
    """The entry of ``choices`` that ``value`` names: case, surrounding whitespace and
    ``_``/``-`` aside. Every name a user types (dataset, market, region, chamber, type,
    view) is matched here, so every one of them is forgiving and suggests alike.

    Parameters
    ----------
    value : str
        What the user typed.
    choices : iterable of str
        The canonical names.
    what : str
        What the names are, for the message (``"market"``, ``"screener dataset"``).
    parameter, dataset : str, optional
        Set on the error.

    Returns
    -------
    str
        The canonical entry of ``choices``.

    Raises
    ------
    InvalidParameterError
        ``unknown {what} 'x'; did you mean 'y'?``, listing the choices when they are few.

    Examples
    --------
    >>> resolve_name(" Senate", ["both", "house", "senate"], what="chamber")
    'senate'
    >>> resolve_name("s&p 500", ["DOW 30", "S&P 500"], what="market")
    'S&P 500'
    """
    from .errors import InvalidParameterError

    options = list(dict.fromkeys(choices))
    if isinstance(value, str):
        key = _spelling(value)
        for choice in options:
            if _spelling(choice) == key:
                return choice
        close = closest_names(value, options)
    else:
        close = []
    message = f"unknown {what} {value!r}"
    if close:
        quoted = [repr(c) for c in close]
        listed = f"{', '.join(quoted[:-1])} or {quoted[-1]}" if len(quoted) > 1 else quoted[0]
        message += f"; did you mean {listed}?"
    if len(options) <= _LIST_FEW or (len(options) <= _LIST_SOME and not close):
        message += f" (one of: {', '.join(options)})"
    raise InvalidParameterError(message, parameter=parameter, dataset=dataset)


def get(name: str) -> Dataset:
    """Look a dataset up by registry name (``insider_trading``, ``screener/sentiment``, ...);
    ``-`` and ``_`` are interchangeable everywhere (``insider-trading``,
    ``screener/insider_trading``).

    >>> get("insider-trading").name
    'insider_trading'
    """
    from .errors import InvalidParameterError

    if not isinstance(name, str):
        raise InvalidParameterError(
            f"dataset must be a registry name (str), got {type(name).__name__}",
            parameter="dataset",
        )
    if name in REGISTRY:
        return REGISTRY[name]
    try:
        return REGISTRY[resolve_name(name, REGISTRY, what="dataset", parameter="dataset")]
    except InvalidParameterError as exc:
        raise InvalidParameterError(
            f"{exc} (md.datasets() lists them all)", parameter="dataset"
        ) from None
