"""Labels for training sets: what a model is asked to predict for each (date, symbol) row.

A label is a definition (data), like a :class:`~mdframes.features.Feature`: it says which
dates it reads (``t1``, the last of them) and computes its values for a whole panel at once
from a long price frame. :func:`forward_return` is the one label of CONTRACT §12.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple, cast

import numpy as np
import pandas as pd

from ... import _memory
from ...errors import DataQualityWarning, InvalidParameterError, warn
from ...params import whole_number

__all__ = ["ForwardReturn", "forward_return", "long_prices", "PRICE_DATASET", "MAX_PRICE_AGE"]

# The only realised price the service has: the put/call dataset's closing price on the date.
PRICE_DATASET: Final = "put_call_ratio"
# The columns of a price frame a label reads (the long shape of :func:`long_prices`).
PRICE_COLUMNS: Final = ("date", "symbol", "price")
# A price older than this (calendar days) is no price: a week covers long weekends and
# exchange holidays, not a halted or delisted symbol.
MAX_PRICE_AGE: Final = 7
# A move by more than this factor between two consecutive prices of a symbol (up more than
# 50 %, or down to less than two thirds: a 2:1 split halves the price) is most likely a split
# the source did not adjust for.
JUMP_FACTOR: Final = 1.5
_NS_PER_DAY: Final = 86_400_000_000_000


def _days(values: Any) -> np.ndarray:
    """Dates (naive or aware) -> int64 day numbers since 1970-01-01 (UTC calendar days)."""
    if isinstance(values, pd.Series) and pd.api.types.is_datetime64_any_dtype(values.dtype):
        stamps = values  # times already: nothing to parse
    else:
        stamps = pd.to_datetime(pd.Series(values), errors="raise")
    if getattr(stamps.dt, "tz", None) is not None:
        stamps = stamps.dt.tz_convert("UTC").dt.tz_localize(None)
    # Whole days by an integer floor division (numpy's conversion to datetime64[D] gives the
    # same numbers at a few times the cost); NaT stays NaT's number.
    ns = stamps.to_numpy(dtype="datetime64[ns]").view(np.int64)
    days = ns // _NS_PER_DAY
    nat = ns == np.iinfo(np.int64).min
    if nat.any():
        days[nat] = ns[nat]
    return days


class LongPrices(NamedTuple):
    """:func:`long_prices` as arrays (a label reads these; a frame of them costs copies)."""

    code: np.ndarray  # int64 codes into ``categories``, sorted with ``day``
    day: np.ndarray  # int64 day numbers
    price: np.ndarray  # float64
    categories: pd.Index

    @classmethod
    def of(cls, prices: pd.DataFrame | LongPrices) -> LongPrices:
        """The arrays of a :func:`long_prices` frame (or these arrays as they are)."""
        if isinstance(prices, LongPrices):
            return prices
        symbol = prices["symbol"]
        return cls(
            symbol.cat.codes.to_numpy().astype(np.int64),
            prices["day"].to_numpy(dtype=np.int64),
            prices["price"].to_numpy(dtype="float64"),
            symbol.cat.categories,
        )

    def take(self, rows: np.ndarray) -> LongPrices:
        return LongPrices(self.code[rows], self.day[rows], self.price[rows], self.categories)


def long_prices(frame: Any, *, parameter: str = "prices") -> pd.DataFrame:
    """A price frame in either accepted shape -> ``symbol, day, price``, sorted by symbol and
    day, one row per symbol and day (the last given wins), nulls dropped.

    Long: columns ``date, symbol, price`` (others ignored). Wide: indexed by date, one column
    per symbol. ``symbol`` is categorical (stripped, upper-cased) and ``day`` the int64 day
    number (days since 1970-01-01).

    Examples
    --------
    >>> wide = pd.DataFrame({"AAPL": [1.0, 2.0]}, index=pd.to_datetime(["2026-01-05", "2026-01-06"]))
    >>> long_prices(wide)
      symbol    day  price
    0   AAPL  20458    1.0
    1   AAPL  20459    2.0
    """
    parts = long_parts(frame, parameter=parameter)
    return pd.DataFrame(
        {
            "symbol": pd.Categorical.from_codes(parts.code, categories=parts.categories),
            "day": parts.day,
            "price": parts.price,
        }
    )


def long_parts(frame: Any, *, parameter: str = "prices") -> LongPrices:
    """:func:`long_prices` as its arrays (no frame built)."""
    if not isinstance(frame, pd.DataFrame):
        raise InvalidParameterError(
            f"{parameter} must be a DataFrame (long: date, symbol, price; or wide: indexed by "
            f"date, one column per symbol), not {type(frame).__name__}",
            parameter=parameter,
        )
    if set(PRICE_COLUMNS) <= set(frame.columns):
        dates, symbols, values = frame["date"], frame["symbol"], frame["price"]
    elif isinstance(frame.index, pd.DatetimeIndex) or frame.index.name == "date":
        column = cast(
            pd.Series, frame.rename_axis(index="date", columns="symbol").stack(future_stack=True)
        )
        stacked = column.rename("price").reset_index()
        dates, symbols, values = stacked["date"], stacked["symbol"], stacked["price"]
    else:
        raise InvalidParameterError(
            f"{parameter}: give a long frame with columns date, symbol, price, or a wide frame "
            f"indexed by date with one column per symbol; got columns {list(frame.columns)[:6]}",
            parameter=parameter,
        )
    try:
        day = _days(dates)
        if isinstance(values, pd.Series) and values.dtype == np.float64:
            price = values.to_numpy()  # numbers already: to_numeric would copy them
        else:
            price = pd.to_numeric(pd.Series(values), errors="raise").to_numpy(
                dtype="float64", na_value=np.nan
            )
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(
            f"{parameter}: dates or prices cannot be read ({exc})", parameter=parameter
        ) from None
    # Text work on the distinct symbols only: a price frame repeats each a few hundred times.
    raw, distinct = _symbol_codes(pd.Series(symbols))
    present = pd.notna(distinct)
    names = pd.Series(distinct[present]).astype(str).str.strip().str.upper()
    merged = np.full(len(distinct), -1, dtype=np.int64)
    merged[present], categories = pd.factorize(names)
    if not (raw < 0).any() and np.array_equal(merged, np.arange(len(merged))):
        code = raw.astype(np.int64, copy=False)  # each symbol written one way: codes as they are
    else:
        code = np.where(raw >= 0, merged[np.maximum(raw, 0)] if len(merged) else -1, -1)
    keep = (code >= 0) & ~np.isnan(price)
    if not keep.all():
        code, day, price = code[keep], day[keep], price[keep]
    last = _last_of_days(code, day)
    if last is None:  # a frame by symbol and date (the loaders') is in order already
        order = np.lexsort((day, code))  # stable: of equal (symbol, day), the last given last
        code, day, price = code[order], day[order], price[order]
        last = _last_of_days(code, day)
        assert last is not None
    if not last.all():
        code, day, price = code[last], day[last], price[last]
    return LongPrices(code, day, price, pd.Index(categories))


def _last_of_days(code: np.ndarray, day: np.ndarray) -> np.ndarray | None:
    """Whether each row is the last of its (symbol, day), for rows in (symbol, day) order;
    ``None`` when they are not in that order."""
    last = np.ones(len(code), dtype=bool)
    # One number per (symbol, day) (a day number is far below 2**31), a piece of rows at a
    # time: the rows' order and their repeats are one comparison each.
    for piece in _memory.pieces(len(code) - 1):
        ahead = slice(piece.start, piece.stop + 1)
        key = code[ahead] << 32
        key += day[ahead]
        if (key[1:] < key[:-1]).any():
            return None
        np.not_equal(key[1:], key[:-1], out=last[piece])
    return last


def _symbol_codes(symbols: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes (-1: missing) and the values they stand for (an entry may repeat, or be missing
    where no code points), numbered in order of first appearance. Arrow text is coded by the
    panel engine's way, by its runs where a symbol's rows come together (as the loaders and
    a lake give them): no row is hashed then."""
    if getattr(symbols.dtype, "storage", None) == "pyarrow" or isinstance(
        symbols.dtype, pd.ArrowDtype
    ):
        from ..panels.engine import factorized

        codes, distinct = factorized(symbols)
    else:
        codes, distinct = pd.factorize(symbols, use_na_sentinel=True)
    return codes, np.asarray(distinct, dtype=object)


def periods_after(dates: pd.DatetimeIndex, freq: Any, k: int) -> pd.DatetimeIndex:
    """``dates`` (consecutive dates of ``freq``) followed by the ``k`` dates of ``freq`` after
    the last: position ``i + k`` is the k-th date after ``dates[i]``."""
    if k == 0 or not len(dates):
        return dates
    more = pd.date_range(dates[-1], periods=k + 1, freq=freq)[1:]
    return pd.DatetimeIndex(dates.append(more.as_unit(dates.unit)))


@dataclass(frozen=True)
class ForwardReturn:
    """The return a model acting on row D could earn (see :func:`forward_return`).

    Examples
    --------
    >>> ForwardReturn(5).name
    'fwd_return_5'
    """

    horizon: int
    lag: int = 1
    # Compared and hashed by identity of the definition only: a frame is neither.
    prices: pd.DataFrame | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "horizon", whole_number(self.horizon, "horizon", least=1))
        object.__setattr__(self, "lag", whole_number(self.lag, "lag", least=0))
        if self.prices is not None:
            long_prices(self.prices)  # a bad frame fails here, not after the panel

    @property
    def name(self) -> str:
        """The column name: ``fwd_return_<horizon>``."""
        return f"fwd_return_{self.horizon}"

    @property
    def reach(self) -> int:
        """Periods of ``freq`` after D that the label reads (``t1`` is that many after D)."""
        return self.lag + self.horizon

    def definition(self) -> dict[str, Any]:
        """The label as plain data (for ``TrainingSet.info``)."""
        return {
            "name": self.name,
            "kind": "forward_return",
            "horizon": self.horizon,
            "lag": self.lag,
            "max_price_age_days": MAX_PRICE_AGE,
            "prices": "given" if self.prices is not None else f"{PRICE_DATASET}.price",
        }

    def check_reach(self, end: dt.date, freq: Any) -> None:
        """InvalidParameterError when ``lag + horizon`` periods of ``freq`` after ``end`` is
        past the last date pandas can hold (before any work)."""
        try:
            pd.Timestamp(end) + self.reach * pd.tseries.frequencies.to_offset(freq)
        except (OverflowError, ValueError) as exc:  # OutOfBoundsDatetime is a ValueError
            raise InvalidParameterError(
                f"lag + horizon = {self.reach} periods of {pd.tseries.frequencies.to_offset(freq).freqstr} "
                f"after {end} is past what "
                f"pandas can hold ({exc})",
                parameter="horizon",
            ) from None

    def price_window(self, dates: pd.DatetimeIndex, freq: Any) -> tuple[dt.date, dt.date]:
        """The first and last price dates the label of ``dates`` can read."""
        calendar = periods_after(dates, freq, self.reach)
        return (dates[0] - pd.Timedelta(days=MAX_PRICE_AGE)).date(), calendar[-1].date()

    def t1(self, dates: pd.DatetimeIndex, freq: Any) -> pd.DatetimeIndex:
        """Per date D of ``dates`` (consecutive dates of ``freq``): ``d_{lag+horizon}``."""
        return periods_after(dates, freq, self.reach)[self.reach :]

    def compute(
        self,
        dates: pd.DatetimeIndex,
        symbols: Sequence[str],
        freq: Any,
        prices: pd.DataFrame | LongPrices,
        spans: Sequence[tuple[np.ndarray, np.ndarray] | None] | None = None,
    ) -> tuple[np.ndarray, pd.DatetimeIndex]:
        """Label values for every (date, symbol), dates outer, as float64 (NaN: no label), and
        ``t1`` per date. ``prices`` is a :func:`long_prices` frame (or its arrays); ``spans``, per symbol,
        the day ranges its prices were synced over (a lake's coverage; ``None``: all). With
        the label's own ``prices``, a row whose ``t1`` is after its symbol's last price is
        NaN (not in yet), whatever other symbols the frame holds."""
        calendar = periods_after(dates, freq, self.reach)
        cal_days = calendar.to_numpy(dtype="datetime64[ns]").astype("datetime64[D]")
        cal_days = cal_days.astype(np.int64)
        n, m = len(dates), len(symbols)
        # The start and end days are one run of the calendar shifted by the horizon: its
        # prices are looked up once (lag .. reach + n), each side a slice of them.
        # The caller's prices end per symbol (a benchmark column may run later than the
        # others); the source's end where its data ends (a lake's spans say more).
        own = self.prices is not None
        both = _price_at(prices, symbols, cal_days[self.lag : self.reach + n], m, spans, own)
        shift = (self.reach - self.lag) * m
        # y = end / start - 1 where start > 0, else NaN (start: both's first n * m values,
        # end: shift further), written over start a piece at a time: a piece reads only
        # values at or after its own (none written yet), and no array of y's length is
        # made (a fresh one costs more in page faults than the arithmetic).
        for piece in _memory.pieces(n * m):
            start = both[piece]
            end = both[piece.start + shift : piece.stop + shift]
            with np.errstate(divide="ignore", invalid="ignore"):
                value = end / start
            value -= 1.0
            np.copyto(value, np.nan, where=~(start > 0))
            start[:] = value
        return both[: n * m], calendar[self.reach : self.reach + n]


def _price_at(
    prices: pd.DataFrame | LongPrices,
    symbols: Sequence[str],
    days: np.ndarray,
    m: int,
    spans: Sequence[tuple[np.ndarray, np.ndarray] | None] | None = None,
    own_ends: bool = False,
) -> np.ndarray:
    """``P(d)`` for every (day of ``days``, symbol), days outer: the latest price on or before
    the day, at most :data:`MAX_PRICE_AGE` days old, and NaN after the last day of the data
    (with ``own_ends``, of the symbol's own data).
    With ``spans`` (per symbol: the synced day ranges, or ``None``), NaN unless one synced
    range holds both the price's day and ``d``: a price that is the latest only because the
    days after it were never synced is no price. ``prices`` is a :func:`long_prices` frame
    or its arrays (sorted by symbol code and day)."""
    parts = LongPrices.of(prices)
    if not len(parts.code):
        return np.full(len(days) * m, np.nan)
    p_code, p_day, p_val, categories = parts
    wanted = pd.Index(categories).get_indexer(list(symbols)).astype(np.int64)
    fresh = _fresh_rows(p_code, p_day, wanted, days, len(categories))
    if fresh is not None:
        idx, ok = fresh
    else:
        q_code = np.tile(wanted, len(days))
        q_day = np.repeat(days, m)
        idx = _rows_up_to(p_code, p_day, q_code, q_day, len(categories)) - 1
        found = (idx >= 0) & (q_code >= 0)
        idx = np.maximum(idx, 0)
        ok = found & (p_code[idx] == q_code) & (p_day[idx] >= q_day - MAX_PRICE_AGE)
    # A date after the last price of the data is not in the data yet, however fresh.
    if own_ends:  # of the symbol's data: another symbol's later prices say nothing of it
        ends = _last_days(p_code, p_day, len(categories))[np.maximum(wanted, 0)]
        ok.reshape(len(days), m)[:] &= days[:, None] <= ends[None, :]
    else:
        ok.reshape(len(days), m)[:] &= (days <= p_day.max())[:, None]
    if spans is not None:
        _within_spans(ok.reshape(len(days), m), p_day[idx].reshape(len(days), m), days, spans)
    # The prices written over the rows' numbers (both 8 bytes a value), a piece at a time:
    # no array of the result's length is made.
    idx = idx.astype(np.int64, copy=False)  # 8 bytes a value, as the prices'
    out = idx.view(np.float64)
    for piece in _memory.pieces(len(idx)):
        value = p_val.take(idx[piece])
        np.copyto(value, np.nan, where=~ok[piece])
        out[piece] = value
    return out


def _last_days(p_code: np.ndarray, p_day: np.ndarray, n_codes: int) -> np.ndarray:
    """Per symbol code, the day of its last price (int64's least: none), from prices sorted
    by code and day: the day of each code's last row."""
    last = np.full(max(n_codes, 1), np.iinfo(np.int64).min, dtype=np.int64)
    tail = np.flatnonzero(np.r_[p_code[1:] != p_code[:-1], True]) if len(p_code) else p_code[:0]
    last[p_code[tail]] = p_day[tail]
    return last


def _within_spans(
    ok: np.ndarray,
    found_day: np.ndarray,
    days: np.ndarray,
    spans: Sequence[tuple[np.ndarray, np.ndarray] | None],
) -> None:
    """``ok`` (days x symbols) cleared where no synced range of the symbol (``spans``: per
    symbol its sorted ranges, ``None``: all days) holds both the day and the price's day
    (``found_day``). One search for every symbol: the ranges keyed by (symbol, start)."""
    asked = np.array([j for j, synced in enumerate(spans) if synced is not None], dtype=np.intp)
    if not len(asked):
        return
    ranges = [spans[j] for j in asked]
    owner = np.repeat(np.arange(len(asked), dtype=np.int64), [len(r[0]) for r in ranges])
    starts = np.concatenate([np.asarray(r[0], dtype=np.int64) for r in ranges])
    ends = np.concatenate([np.asarray(r[1], dtype=np.int64) for r in ranges])
    if not len(starts):  # none of them synced
        ok[:, asked] = False
        return
    # A day number is far within +-2**31; a range open to the history's start begins at
    # coverage's -2**40, which in a key would run into the symbol's bits: clipped there
    # (no day lies before it either way).
    lift = np.int64(2**31)
    keys = (owner << 32) | (np.clip(starts, -lift, lift - 1) + lift)
    mine = np.arange(len(asked), dtype=np.int64)[None, :]
    # The symbol's last range starting on or before the day (another symbol's: none).
    asked_days = np.clip(days, -lift, lift - 1)[:, None] + lift
    k = np.searchsorted(keys, (mine << 32) | asked_days, side="right") - 1
    at = np.maximum(k, 0)
    inside = (k >= 0) & (owner[at] == mine) & (days[:, None] <= ends[at])
    inside &= found_day[:, asked] >= starts[at]
    ok[:, asked] &= inside


# A (symbol, day) count table of up to this many cells (or DENSE_PER_QUERY per looked-up
# price) replaces the binary searches; past it (a long range sampled sparsely), searching
# is cheaper.
DENSE_CELLS = 1 << 22
DENSE_PER_QUERY = 4


def _fresh_rows(
    p_code: np.ndarray, p_day: np.ndarray, wanted: np.ndarray, days: np.ndarray, n_codes: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """Per (day of ``days``, symbol code of ``wanted``), days outer: the row of the latest
    price on or before the day (0 where none), and whether there is one at most
    :data:`MAX_PRICE_AGE` days old; ``None`` where the (symbol, day) count table would dwarf
    the lookups (:func:`_rows_up_to` searches then). A fresh price is one of the rows
    counted up to the day and not up to :data:`MAX_PRICE_AGE` + 1 days before it: two
    look-ups in the table, no row's symbol or day compared."""
    if not len(days) or not len(wanted):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    back = MAX_PRICE_AGE + 1
    base = int(days.min()) - back - 1  # column 0: every day up to there
    span = int(days.max()) - base + 2  # the last column: days after the last asked
    size = max(n_codes, 1) * span
    if size > max(DENSE_PER_QUERY * len(days) * len(wanted), DENSE_CELLS):
        return None
    totals = np.zeros(size, dtype=np.int64)
    for piece in _memory.pieces(len(p_day)):  # the rows' cells a piece at a time, counted
        cells = p_day[piece] - base
        np.clip(cells, 0, span - 1, out=cells)
        cells += p_code[piece] * span
        np.add.at(totals, cells, 1)
    np.cumsum(totals, out=totals)
    # Cell of (day, symbol), days outer: the symbol's row of the table, the day's column;
    # made and looked up some days at a time (the cells of them all would be one more
    # array of the result's length, and the look-up a day earlier another).
    m = len(wanted)
    rows = np.maximum(wanted, 0) * span - base
    idx = np.empty(len(days) * m, dtype=np.int64)
    ok = np.empty(len(days) * m, dtype=bool)
    step = max(1, _memory.PIECE // max(m, 1))
    for first in range(0, len(days), step):
        cell = (days[first : first + step, None] + rows[None, :]).ravel()
        at = slice(first * m, first * m + len(cell))
        totals.take(cell, out=idx[at])
        cell -= back
        np.greater(idx[at], totals.take(cell), out=ok[at])
    ok.reshape(len(days), m)[:] &= (wanted >= 0)[None, :]
    idx -= 1
    np.maximum(idx, 0, out=idx)
    return idx, ok


def _rows_up_to(
    p_code: np.ndarray, p_day: np.ndarray, q_code: np.ndarray, q_day: np.ndarray, n_codes: int
) -> np.ndarray:
    """Per query (symbol code, day): how many price rows (sorted by code, then day) sort at
    or before it, as a binary search finds it; from the prices counted per (code, day) and
    accumulated in that order where that table is not much larger than the queries (the
    engine's way). Queries of a code < 0 get a meaningless count."""
    if not len(q_day):
        return np.zeros(0, dtype=np.int64)
    base = int(q_day.min()) - 1  # column 0: every day up to the first query's eve
    span = int(q_day.max()) - base + 2  # the last column: days after the last query
    size = max(n_codes, 1) * span
    if size > max(DENSE_PER_QUERY * len(q_day), DENSE_CELLS):
        # One sorted key per (symbol, day): a single binary search answers every query.
        offset = np.int64(2**31)
        keys = (p_code << 32) | (p_day + offset)
        return np.searchsorted(keys, (q_code << 32) | (q_day + offset), side="right")
    cells = np.clip(p_day - base, 0, span - 1)
    cells += p_code * span
    totals = np.bincount(cells, minlength=size)
    np.cumsum(totals, out=totals)
    return totals[np.maximum(q_code, 0) * span + (q_day - base)]


def warn_jumps(prices: pd.DataFrame | LongPrices, source: str) -> None:
    """One :class:`~mdframes.DataQualityWarning` naming each symbol and date where the price
    moved by more than :data:`JUMP_FACTOR` from the symbol's previous price."""
    parts = LongPrices.of(prices)
    code, val = parts.code, parts.price
    if len(val) < 2:
        return
    found = []
    for piece in _memory.pieces(len(val) - 1):  # row i + 1 against row i, a piece at a time
        ahead = slice(piece.start + 1, piece.stop + 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = val[ahead] / val[piece]
        jump = (ratio > JUMP_FACTOR) | (ratio < 1 / JUMP_FACTOR)
        jump &= code[ahead] == code[piece]
        found.append(np.flatnonzero(jump) + piece.start)
    where = np.concatenate(found)
    if not len(where):
        return
    days = parts.day[where + 1].astype("datetime64[D]")
    names = parts.categories
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = val[where[:5] + 1] / val[where[:5]]
    items = [
        f"{names[code[i + 1]]} on {day} (x{r:.2f})"
        for i, day, r in zip(where[:5], days[:5], ratios, strict=False)
    ]
    more = f" and {len(where) - 5} more" if len(where) > 5 else ""
    warn(
        f"{source} prices move by more than 50% in one period (a split the source did not "
        f"adjust for?): {', '.join(items)}{more}; the forward returns across them are wrong. "
        "Pass adjusted prices with forward_return(..., prices=...)",
        DataQualityWarning,
    )


def forward_return(
    horizon: int, *, lag: int = 1, prices: pd.DataFrame | None = None
) -> ForwardReturn:
    """The forward return label: ``y(D) = P(d_{lag+horizon}) / P(d_lag) - 1``.

    ``d_k`` is the k-th date of the training set's ``freq`` after D, and ``P(d)`` the latest
    price dated on or before ``d`` and at most 7 calendar days old (else NA). Where ``d`` is
    after the last date of the prices (not in the data yet), the label is NA. ``t1(D) =
    d_{lag+horizon}``, the last date the label reads.

    Parameters
    ----------
    horizon : int
        Periods of ``freq`` the return runs over (>= 1); the label is named
        ``fwd_return_<horizon>``.
    lag : int
        Periods between D and the start of the return (>= 0; default 1: a model acting on
        the row for D trades at the next date's price, not at D's).
    prices : DataFrame, optional
        Long (``date, symbol, price``) or wide (indexed by date, one column per symbol).
        A row's label is NA when its ``t1`` is after the last price of its own symbol (its
        data is not in yet), whatever other symbols (a benchmark) run later in the frame.
        Default: the put/call dataset's closing ``price``, from the training set's source
        (latest versions: labels measure what happened; ``known_at`` is for features).

    Returns
    -------
    ForwardReturn
        A frozen definition, given to :func:`training_set` as ``label=``.

    Examples
    --------
    >>> import mdframes as md
    >>> label = md.features.forward_return(5)
    >>> label.name, label.lag
    ('fwd_return_5', 1)

    Given prices end per symbol: MSFT's last price is on 2026-06-12, the frame's (AAPL's)
    later, so MSFT's labels reading past it are NA:

    >>> read = lake.read("put_call_ratio", ["AAPL", "MSFT"])
    >>> wide = read.pivot_table(index="date", columns="symbol", values="price", observed=True)
    >>> wide.loc["2026-06-13":, "MSFT"] = float("nan")
    >>> ts = md.features.training_set(["AAPL", "MSFT"], "2026-05-04", "2026-06-30",
    ...                               ["insider_net_value_90d"], source=lake,
    ...                               label=md.features.forward_return(5, prices=wide))
    >>> y, t1 = ts.y.xs("MSFT", level="symbol"), ts.t1.xs("MSFT", level="symbol")
    >>> bool(y[t1 > "2026-06-12"].isna().all()), int(y[t1 <= "2026-06-12"].notna().sum())
    (True, 24)
    """
    return ForwardReturn(horizon, lag, prices)


def source_prices(
    source: Any,
    symbols: list[str],
    window: tuple[dt.date, dt.date],
    errors: str,
) -> LongPrices:
    """The put/call dataset's closing prices of ``symbols`` over ``window``, latest versions."""
    first, last = window
    prices = long_parts(source.prices(symbols, first, last, errors), parameter="source")
    lo, hi = (np.datetime64(d, "D").astype(np.int64) for d in window)
    # Only the universe's prices within the window: a jump elsewhere is not this set's.
    # A set, not the categories' isin: pandas' Arrow strings make a pyarrow scalar of each
    # symbol asked (~7 ms for 500).
    wanted = set(symbols)
    categories = prices.categories
    ours = np.fromiter((c in wanted for c in categories.tolist()), bool, len(categories))
    mine = ours[prices.code]
    mine &= prices.day >= lo
    mine &= prices.day <= hi
    return prices if mine.all() else prices.take(mine)


def price_spans(source: Any, symbols: list[str]) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Per symbol the day ranges a lake synced its prices over (labels measure what
    happened: the coverage now, as the prices are the latest); ``None``: every day."""
    coverage = source.coverage([PRICE_DATASET], symbols)
    return [coverage.spans(PRICE_DATASET, s) for s in symbols] if coverage is not None else None
