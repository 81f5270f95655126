"""Pure helpers on loaded frames and raw payloads: no HTTP, inputs never mutated.

- :func:`congress_amount_bounds` turns congress amount text into whole-dollar bounds.
- :func:`insider_groups` maps insider transaction types to the spec's three groups.
- :func:`analyst_changes` reads rating and price-target changes out of analyst text.
- :func:`expand_v1_forecast` expands a v1 ticker forecast into one row per date.

Point-in-time helpers live in :mod:`mdframes.pit`; the app-ratings reshaper
:func:`~mdframes.appratings.app_ratings_long` in :mod:`mdframes.appratings`.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Mapping
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

import numpy as np
import pandas as pd

from .appratings import app_ratings_long  # noqa: F401  (importable from here, as before)
from .errors import InvalidParameterError, ResponseFormatError, warn
from .kinds import DATE_DTYPE
from .records import parse_v1_forecast
from .registry import INSIDER_GROUPS, INSIDER_TYPES

__all__ = [
    "congress_amount_bounds",
    "insider_groups",
    "analyst_changes",
    "expand_v1_forecast",
]


# --- congress amounts -------------------------------------------------------------------------

# A dollar figure: properly grouped thousands (``1,001``) or plain digits (``1001``), optional
# cents. ASCII digits only: str.isdigit() and ``\d`` accept other scripts, filings never do.
_NUM = r"\$?\s*([0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?)"
_RANGE = re.compile(rf"(?:between\s+)?{_NUM}\s*(?:-+|to|and)\s*{_NUM}")
_OVER = re.compile(rf"(?:over|more\s+than|greater\s+than|above|>)\s*{_NUM}")
_UNDER = re.compile(rf"(?:under|less\s+than|below|<)\s*{_NUM}")
_EXACT = re.compile(_NUM)
_DASHES = re.compile(r"[\u2010-\u2015\u2212\ufe58\ufe63\uff0d]")
_SPACES = re.compile(r"\s+")
# Larger figures are not amounts but noise; they must not overflow Int64 either.
_MAX_AMOUNT = 10**15

Bounds = tuple[int | None, int | None]
_NA_BOUNDS: Bounds = (None, None)


def _dollars(text: str) -> Decimal:
    return Decimal(text.replace(",", ""))


def _whole(value: Decimal) -> int:
    # Cents round half up to whole dollars, the usual rule for dollar amounts on forms.
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def _checked(lo: int | None, hi: int | None) -> Bounds:
    values = [v for v in (lo, hi) if v is not None]
    if any(v < 0 or v > _MAX_AMOUNT for v in values):
        return _NA_BOUNDS
    # A range filed backwards has no single reading: NA, never a silent swap.
    if lo is not None and hi is not None and lo > hi:
        return _NA_BOUNDS
    return lo, hi


def _parse_amount(value: Any) -> Bounds:
    """One amount (text as filed or normalised, or a bare number) -> (min, max)."""
    if isinstance(value, bool) or value is None:
        return _NA_BOUNDS
    if isinstance(value, (int, float, np.integer, np.floating, Decimal)):
        try:
            exact = _whole(Decimal(str(value)))
        except (InvalidOperation, ValueError, OverflowError):  # NaN, inf
            return _NA_BOUNDS
        return _checked(exact, exact)
    if not isinstance(value, str):
        return _NA_BOUNDS
    return _parse_text(str(value))


@functools.lru_cache(maxsize=1 << 14)
def _parse_text(value: str) -> Bounds:
    """:func:`_parse_amount` of text, remembered: filings repeat a few hundred amounts, and
    each panel of congress features parses them again."""
    text = _SPACES.sub(" ", _DASHES.sub("-", value)).strip().casefold()
    with contextlib.suppress(InvalidOperation, ValueError, OverflowError):
        if m := _RANGE.fullmatch(text):
            return _checked(_whole(_dollars(m[1])), _whole(_dollars(m[2])))
        if m := _OVER.fullmatch(text):
            # The smallest whole-dollar amount strictly above X.
            return _checked(int(_dollars(m[1])) + 1, None)
        if m := _UNDER.fullmatch(text):
            # The largest whole-dollar amount strictly below X (ceil(X) - 1).
            return _checked(0, int(_dollars(m[1]).to_integral_value(rounding=ROUND_CEILING)) - 1)
        if m := _EXACT.fullmatch(text):
            exact = _whole(_dollars(m[1]))
            return _checked(exact, exact)
    return _NA_BOUNDS


def _bounds_of(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each row's min and max as floats (NaN: none; every amount kept is at most
    ``_MAX_AMOUNT``, exact in a float), each distinct value parsed once."""
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    parsed = [_parse_amount(u) for u in uniques.tolist()]
    # One extra slot at the end for the NA sentinel (-1 indexes it).
    lo = np.array([np.nan if p[0] is None else p[0] for p in parsed] + [np.nan])
    hi = np.array([np.nan if p[1] is None else p[1] for p in parsed] + [np.nan])
    return lo[codes], hi[codes]


def amount_bounds(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """:func:`congress_amount_bounds`' ``amount_min`` and ``amount_max`` as float arrays
    (NaN: NA), with no copy of ``df`` (a feature's value reads them per row)."""
    if "amount" not in df.columns:
        raise InvalidParameterError(
            "congress_amount_bounds needs an 'amount' column", parameter="df"
        )
    lo, hi = _bounds_of(df["amount"])
    if "amount_raw" in df.columns:
        lo_raw, hi_raw = _bounds_of(df["amount_raw"])
        fallback = np.isnan(lo) & np.isnan(hi)
        lo = np.where(fallback, lo_raw, lo)
        hi = np.where(fallback, hi_raw, hi)
    if "amount_flag" in df.columns:
        codes, uniques = pd.factorize(df["amount_flag"], use_na_sentinel=True)
        flagged = np.array([str(u).strip() != "" for u in uniques.tolist()] + [False])[codes]
        lo[flagged] = np.nan
        hi[flagged] = np.nan
    return lo, hi


def congress_amount_bounds(df: pd.DataFrame) -> pd.DataFrame:
    """Add whole-dollar ``amount_min`` and ``amount_max`` (``Int64``) to a congress frame.

    Rules, applied to ``amount``:

    - a range (``$1,001 - $15,000``) gives its two ends; every bracket of the spec's table
      and its formatting variants (no ``$`` or commas, spaces around the dash, en/em dashes,
      ``to`` instead of the dash, any case or spacing) parse alike, so v1 house-trade text
      works too;
    - ``Over $X`` gives X+1 and NA (``Over $5,000,000`` -> 5,000,001 / NA);
      ``Under $X`` gives 0 and X-1 (``Under $1,000`` -> 0 / 999);
    - an exact value gives min = max, cents rounded half up (``$12,345.67`` -> 12,346);
    - ``Unknown``, unreadable text, a range whose min exceeds its max, and rows whose
      ``amount_flag`` is set (``review``, ``ambiguous``: the service doubted the amount) give
      NA / NA.

    ``amount_raw`` (the filed text) is used only when ``amount`` itself gives no bounds and the
    row is not flagged; a rewritten bracket in ``amount`` is the authority.

    Parameters
    ----------
    df : pandas.DataFrame
        A frame with an ``amount`` column (``load_congress_trades``, ``v1.load_house_trades``).

    Returns
    -------
    pandas.DataFrame
        A copy of ``df`` with ``amount_min`` and ``amount_max`` appended.

    Examples
    --------
    >>> df = pd.DataFrame({"amount": ["$1,001 - $15,000", "Over $5,000,000", "Unknown"]})
    >>> congress_amount_bounds(df)[["amount_min", "amount_max"]]
       amount_min  amount_max
    0        1001       15000
    1     5000001        <NA>
    2        <NA>        <NA>
    """
    lo, hi = amount_bounds(df)
    out = df.copy()
    for name, values in (("amount_min", lo), ("amount_max", hi)):
        missing = np.isnan(values)
        out[name] = pd.arrays.IntegerArray(np.where(missing, 0, values).astype(np.int64), missing)
    return out


# --- insider groups ---------------------------------------------------------------------------

GROUPS = tuple(INSIDER_GROUPS)  # acquisition, disposition, neutral


def _type_key(text: str) -> str:
    return re.sub(r"[\s_\-/]+", "_", text.strip().casefold()).strip("_")


_GROUP_OF: dict[str, str] = {
    _type_key(t): group for group, types in INSIDER_GROUPS.items() for t in types
}
# Screener and v1 words for the v2 types (the keys are already normalised).
_ALIASES = {
    "buy": "Purchase",
    "bought": "Purchase",
    "sell": "Sale",
    "sold": "Sale",
    "option_exercise": "Exercise",
    "options_exercise": "Exercise",
    "grant": "Award",
    "tax_withholding": "Tax",
}
_GROUP_OF.update({alias: _GROUP_OF[_type_key(t)] for alias, t in _ALIASES.items()})
assert set(_GROUP_OF.values()) == set(GROUPS) and len(INSIDER_TYPES) <= len(_GROUP_OF)


def insider_groups(df: pd.DataFrame) -> pd.DataFrame:
    """Add ``group`` (``category``: acquisition, disposition, neutral) from ``transaction_type``.

    The spec's groupings: acquisitions are Purchase, Derivative_Purchase, Exercise, Award and
    Other_Acquisition; dispositions are Sale, Derivative_Sale, Tax, Gift and
    Other_Disposition; Conversion is neutral. Case, spaces, hyphens and underscores do not
    matter (``Derivative Purchase``), and screener/v1 words map to their v2 counterparts
    (``Buy`` -> Purchase, ``Option Exercise`` -> Exercise, ``Sell`` -> Sale, ``Grant`` ->
    Award). Other types get NA and one ``UserWarning`` naming them; a missing type is NA
    without a warning.

    Examples
    --------
    >>> df = pd.DataFrame({"transaction_type": ["Buy", "Sale", "Conversion"]})
    >>> insider_groups(df)["group"].tolist()
    ['acquisition', 'disposition', 'neutral']
    """
    if "transaction_type" not in df.columns:
        raise InvalidParameterError(
            "insider_groups needs a 'transaction_type' column", parameter="df"
        )
    codes, groups = group_of_types(df["transaction_type"])
    out = df.copy()
    out["group"] = pd.Categorical(np.array(groups, dtype=object)[codes], categories=list(GROUPS))
    return out


def group_of_types(types: pd.Series) -> tuple[np.ndarray, list[str | None]]:
    """:func:`insider_groups`' group of each distinct type (None: NA), one more None at the
    end, and each row's place in that list (its code; -1: the last). Unknown types warn."""
    codes, uniques = pd.factorize(types, use_na_sentinel=True)
    groups: list[str | None] = []
    unknown: list[str] = []
    for u in uniques.tolist():
        group = _GROUP_OF.get(_type_key(u)) if isinstance(u, str) else None
        groups.append(group)
        if group is None:
            unknown.append(str(u))
    if unknown:
        warn(
            f"insider_groups: unknown transaction types get NA: {', '.join(sorted(unknown))}",
            UserWarning,
        )
    return codes, [*groups, None]


# --- analyst rating and price-target changes --------------------------------------------------

# A change between two values: "Hold -> Buy", "$180.00 \u2192 $200.00", "Hold to Buy". The
# first separator splits; a side holding another separator is unreadable.
_CHANGE_SEP = r"(?:\s*(?:->|\u2192)\s*|\s+[Tt][Oo]\s+)"
_CHANGE = rf"^(?P<old>.*?){_CHANGE_SEP}(?P<new>.*)$"
_ANY_SEP = r"->|\u2192|(?:^|\s)[Tt][Oo](?:\s|$)"
# A price: optional "$" or "US$", grouped thousands or plain digits, optional decimals.
_PRICE = r"^(?:US)?\$?\s*((?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?)$"
_WHITESPACE = r"\s+"
_STRING = pd.StringDtype()  # the loaders' string dtype


def _text(values: pd.Series) -> pd.Series:
    # Python storage: the patterns mean the same under pandas 2 and 3 (pyarrow strings would
    # run them through RE2, whose classes differ).
    text = values.astype(pd.StringDtype("python"))
    text = text.str.replace(_WHITESPACE, " ", regex=True).str.strip()
    return text.mask(text == "")


def _change_sides(values: pd.Series) -> tuple[pd.Series, pd.Series]:
    """(from, to) text of each value: both sides of a change, or the value twice; NA where
    the text is null, empty or not a readable change."""
    text = _text(values)
    parts = text.str.extract(_CHANGE)
    changed = parts["old"].notna().to_numpy(dtype=bool)
    old = parts["old"].str.strip().where(changed, text)
    new = parts["new"].str.strip().where(changed, text)
    bad = (
        (old == "")
        | (new == "")
        | old.str.contains(_ANY_SEP, regex=True)
        | new.str.contains(_ANY_SEP, regex=True)
    ).fillna(False)
    return old.mask(bad), new.mask(bad)


def _prices(text: pd.Series) -> pd.Series:
    number = text.str.extract(_PRICE, expand=False).str.replace(",", "", regex=False)
    return pd.Series(
        number.astype("Float64").to_numpy(dtype="float64", na_value=np.nan), index=text.index
    )


def _per_row(parsed: pd.Series, codes: np.ndarray, index: pd.Index) -> pd.Series:
    """Values parsed once per distinct text, spread back to the rows (code -1: NA)."""
    return pd.Series(parsed.array.take(codes, allow_fill=True), index=index)


def analyst_changes(df: pd.DataFrame) -> pd.DataFrame:
    """Add ``rating_from``, ``rating_to`` (string) and ``target_price_from``,
    ``target_price_to`` (float64), read from the ``rating`` and ``target_price`` text.

    A single value gives from = to (``"Buy"``, ``"$200.73"``); a change between two values
    gives both, with ``->``, ``→`` or `` to `` between them (``"Hold -> Buy"``,
    ``"$180.00 → $200.00"``, ``"Neutral to Outperform"``; spaces around the arrows optional).
    Prices may carry ``$`` or ``US$`` and thousands commas. Null, empty or unreadable text
    (a side that is empty or not a price, more than one separator) gives NA on both sides:
    a pair is either read whole or not at all.

    Works on per-symbol, recent and screener analyst frames and on v1 frames. A frame that
    lacks one of the two columns gets NA for that pair; a frame with neither raises
    :class:`~mdframes.InvalidParameterError`.

    Examples
    --------
    >>> df = pd.DataFrame({"rating": ["Hold -> Buy", "Sell"],
    ...                    "target_price": ["$180.00 → $200.00", None]})
    >>> analyst_changes(df).iloc[:, 2:]
      rating_from rating_to  target_price_from  target_price_to
    0        Hold       Buy              180.0            200.0
    1        Sell      Sell                NaN              NaN
    """
    if "rating" not in df.columns and "target_price" not in df.columns:
        raise InvalidParameterError(
            "analyst_changes needs a 'rating' or 'target_price' column (an analyst-ratings "
            f"frame); got {', '.join(map(str, df.columns)) or 'no columns'}",
            parameter="df",
        )
    out = df.copy()
    # Each distinct text is parsed once: a frame repeats few ratings and targets many times.
    if "rating" in df.columns:
        codes, uniques = pd.factorize(df["rating"], use_na_sentinel=True)
        old, new = _change_sides(pd.Series(uniques))
        out["rating_from"] = _per_row(old.astype(_STRING), codes, df.index)
        out["rating_to"] = _per_row(new.astype(_STRING), codes, df.index)
    else:
        out["rating_from"] = out["rating_to"] = pd.Series(pd.NA, index=df.index, dtype=_STRING)
    if "target_price" in df.columns:
        codes, uniques = pd.factorize(df["target_price"], use_na_sentinel=True)
        old, new = _change_sides(pd.Series(uniques))
        lo, hi = _prices(old), _prices(new)
        unreadable = (lo.isna() | hi.isna()).to_numpy(dtype=bool)
        lo[unreadable] = hi[unreadable] = np.nan
        out["target_price_from"] = _per_row(lo, codes, df.index)
        out["target_price_to"] = _per_row(hi, codes, df.index)
    else:
        out["target_price_from"] = out["target_price_to"] = np.nan
    return out


# --- v1 forecast ------------------------------------------------------------------------------

FORECAST_COLUMNS = ("date", "main", "lower", "upper")


def expand_v1_forecast(obj: Mapping[str, Any]) -> pd.DataFrame:
    """Expand a v1 ticker forecast into one row per forecast date: ``date, main, lower, upper``.

    ``obj`` is the v1 ticker-forecast object (``{ticker, name, prediction: {...}}``) or its
    ``prediction`` dict, whose date keys (``YYYY-MM-DD``) hold ``"main,lower,upper"`` strings.
    Every other key (``expectedShort``, ``type``, ``lastUpdate``, ...) is ignored. ``date`` is a
    naive datetime64, the rest float64; rows are sorted by date.

    Raises
    ------
    ResponseFormatError
        When a date's value is not three numbers, naming the date.

    Examples
    --------
    >>> expand_v1_forecast({"2024-03-06": "101.5,99.0,104.0", "type": "daily"})
            date   main  lower  upper
    0 2024-03-06  101.5   99.0  104.0
    """
    if not isinstance(obj, Mapping):
        raise ResponseFormatError(
            f"v1 forecast must be an object, got {type(obj).__name__}", dataset="v1/ticker_forecast"
        )
    prediction = obj.get("prediction", obj)
    if not isinstance(prediction, Mapping):
        raise ResponseFormatError(
            "v1 forecast 'prediction' is not an object", dataset="v1/ticker_forecast"
        )
    entries = parse_v1_forecast(prediction)
    dates = [e[0] for e in entries]
    rows = [list(e[1:]) for e in entries]
    try:
        parsed = pd.to_datetime(pd.Series(dates, dtype=object), format="%Y-%m-%d").astype(
            DATE_DTYPE
        )
    except (TypeError, ValueError):
        raise ResponseFormatError(
            f"v1 forecast has an impossible date among {dates}", dataset="v1/ticker_forecast"
        ) from None
    values = np.array(rows, dtype="float64").reshape(len(rows), 3)
    out = pd.DataFrame(
        {"date": parsed, **{c: values[:, i] for i, c in enumerate(FORECAST_COLUMNS[1:])}}
    )
    return out.sort_values("date", kind="stable").reset_index(drop=True)
