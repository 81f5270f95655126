"""The data each chart kind draws, computed once for both backends (matplotlib, plotly).

Each function takes a loader's (or screener's) frame and a :class:`~mdframes.plot.table.Chart`
and returns a plain frame with ``symbol``, ``x``, ``y`` and the hover fields, sorted by
symbol (in order of first appearance) and time. Rows that cannot be drawn (no time, no
value) are counted in ``attrs["left_out"]``, which the charts print under the title, never
dropped silently. Private to :mod:`mdframes.plot`.
"""

from __future__ import annotations

import pandas as pd

from ..errors import InvalidParameterError
from ..params import whole_number
from .table import Chart

# Both backends' colours: insider groups, congress trade kinds, a price line.
GROUP_COLOURS = {"acquisition": "#1a9850", "disposition": "#d73027", "neutral": "#969696"}
TRADE_COLOURS = {"Purchase": "#1a9850", "Sale": "#d73027"}
PRICE_COLOUR = "#404040"

# The spec's interpretation bands: (low, high, label, colour).
SENTIMENT_BANDS: tuple[tuple[float, float, str, str], ...] = (
    (0.5, 1.0, "strong bullish", "#1a9850"),
    (0.2, 0.5, "moderate bullish", "#91cf60"),
    (-0.2, 0.2, "neutral", "#bdbdbd"),
    (-0.5, -0.2, "moderate bearish", "#fc8d59"),
    (-1.0, -0.5, "strong bearish", "#d73027"),
)
# Above 1.2 heavy put activity; below 0.7 heavy call activity.
PUT_CALL_LEVELS: tuple[tuple[float, str], ...] = (
    (0.7, "heavy calls below 0.7"),
    (1.2, "heavy puts above 1.2"),
)
APP_RATING_BANDS: tuple[tuple[float, float, str, str], ...] = (
    (4.5, 5.0, "excellent", "#1a9850"),
    (4.0, 4.5, "good", "#91cf60"),
    (3.5, 4.0, "average", "#bdbdbd"),
    (3.0, 3.5, "below average", "#fc8d59"),
    (1.0, 3.0, "poor", "#d73027"),
)


def biggest_apps(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of each platform's most-rated app (by its latest ratings count)."""
    app = df.groupby(["platform", "app_id"], dropna=False, observed=True).ngroup()
    if "ratings_count" in df.columns:
        count = df["ratings_count"].astype("Float64").fillna(-1.0)
    else:
        count = pd.Series(0.0, index=df.index)
    latest = (
        pd.DataFrame({"platform": df["platform"], "app": app, "date": df["date"], "n": count})
        .sort_values("date")
        .groupby("app")
        .tail(1)
    )
    chosen = latest.sort_values("n", ascending=False, kind="stable").drop_duplicates("platform")
    return df[app.isin(chosen["app"])]


# Ranking charts show this many symbols unless told otherwise (more bars are unreadable).
TOP = 25


def symbols(df: pd.DataFrame) -> list[str]:
    if "symbol" not in df.columns:
        return [""]
    return [str(s) for s in pd.unique(df["symbol"].dropna())] or [""]


def _need(df: pd.DataFrame, columns: tuple[str, ...] | list[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InvalidParameterError(
            f"the {what} chart needs column(s) {', '.join(missing)}; the frame has "
            f"{', '.join(map(str, df.columns))}",
            parameter="df",
        )


def _frame(
    df: pd.DataFrame, x: pd.Series, y: pd.Series, spec: Chart, extra: tuple[str, ...] = ()
) -> pd.DataFrame:
    """symbol, x, y, the ``extra`` columns and the hover fields; rows without x or y
    counted, not kept."""
    out = pd.DataFrame(
        {
            "symbol": df["symbol"].astype("string").fillna("")
            if "symbol" in df.columns
            else pd.Series("", index=df.index, dtype="string"),
            "x": x,
            "y": pd.to_numeric(y, errors="coerce").astype(float),
        },
        index=df.index,
    )
    for name in extra + spec.hover:
        if name in df.columns and name not in out.columns:
            out[name] = df[name]
    keep = out["x"].notna() & out["y"].notna()
    order = {s: i for i, s in enumerate(symbols(df))}
    out = out[keep]
    out = out.assign(_order=out["symbol"].map(order)).sort_values(["_order", "x"], kind="stable")
    out = out.drop(columns="_order").reset_index(drop=True)
    out.attrs["left_out"] = int((~keep).sum())
    return out


def events(df: pd.DataFrame, spec: Chart) -> pd.DataFrame:
    """One row per record: x = its time, y = its value (the first positive candidate), or
    with ``spec.running`` the symbol's running count of records."""
    _need(df, [spec.time], spec.title)
    if "target_price_to" in spec.value and "target_price_to" not in df.columns:
        from ..helpers import analyst_changes

        df = analyst_changes(df)
    x = pd.to_datetime(df[spec.time])
    if spec.running:
        y = pd.Series(1.0, index=df.index)
    else:
        _need(df, [spec.value[0]], spec.title)
        y = pd.Series(float("nan"), index=df.index)
        for name in spec.value:
            if name in df.columns:
                v = pd.to_numeric(df[name], errors="coerce").astype(float)
                # A zero on a log axis has no place: the next candidate (expenses) instead.
                usable = v > 0 if spec.log else v.notna()
                y = y.where(y.notna() | ~usable, v)
    out = _frame(df, x, y, spec)
    if spec.running:
        out["y"] = out.groupby("symbol", sort=False).cumcount().astype(float) + 1.0
    return out


def insider(df: pd.DataFrame, spec: Chart) -> pd.DataFrame:
    """One row per transaction, y = its total value, negative for dispositions."""
    _need(df, ["date", "total_value"], spec.title)
    if "group" not in df.columns:
        _need(df, ["transaction_type"], spec.title)
        from ..helpers import insider_groups

        df = insider_groups(df)
    value = pd.to_numeric(df["total_value"], errors="coerce").astype(float)
    sign = df["group"].map({"disposition": -1.0}).fillna(1.0).astype(float)
    df = df.assign(group=df["group"].astype("string"))
    return _frame(df, pd.to_datetime(df["date"]), value * sign, spec, ("group",))


def congress(df: pd.DataFrame, spec: Chart) -> pd.DataFrame:
    """One row per trade with a known bound: ``lo``..``hi`` (either may be missing when the
    amount is open-ended), y = the known bound nearest the middle."""
    _need(df, ["date"], spec.title)
    if "amount_min" not in df.columns or "amount_max" not in df.columns:
        _need(df, ["amount"], spec.title)
        from ..helpers import congress_amount_bounds

        df = congress_amount_bounds(df)
    lo = pd.to_numeric(df["amount_min"], errors="coerce").astype(float)
    hi = pd.to_numeric(df["amount_max"], errors="coerce").astype(float)
    lo = lo.where(lo > 0)  # "Under $X": no lower bound a log axis can show
    y = lo.where(lo.notna(), hi)
    kinds = (
        df["transaction_type"].astype("string").fillna("other")
        if "transaction_type" in df.columns
        else pd.Series("trade", index=df.index, dtype="string")
    )
    df = df.assign(lo=lo, hi=hi, kind=kinds)
    return _frame(df, pd.to_datetime(df["date"]), y, spec, ("lo", "hi", "kind"))


def apps(df: pd.DataFrame, spec: Chart, per_app: bool = False) -> pd.DataFrame:
    """One row per app observation of the drawn apps (each platform's biggest app per
    symbol, or every app), with ``series``: the line it belongs to."""
    if "platform" not in df.columns and "ios_score" in df.columns:
        from ..helpers import app_ratings_long

        df = app_ratings_long(df)
    _need(df, ["platform", "date", "score"], spec.title)
    if "app_id" not in df.columns:
        df = df.assign(app_id=pd.Series(pd.NA, index=df.index, dtype="string"))
    if not per_app:
        parts = [biggest_apps(rows) for _, rows in _by_symbol(df)]
        df = pd.concat(parts) if parts else df
    name = df["app_name"] if "app_name" in df.columns else df["app_id"]
    name = name.astype("string").fillna(df["app_id"].astype("string")).fillna("app")
    df = df.assign(series=df["platform"].astype(str) + ": " + name.astype(str))
    return _frame(df, pd.to_datetime(df["date"]), df["score"], spec, ("series",))


def _by_symbol(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    if "symbol" not in df.columns:
        return [("", df)]
    return [(s, df[df["symbol"].astype("string") == s]) for s in symbols(df)]


def totals(df: pd.DataFrame, spec: Chart) -> pd.DataFrame:
    """``value`` summed per symbol per week (Monday to Sunday, UTC; ``x`` is the Monday):
    daily counts of a few forums are too jagged to compare symbols by."""
    _need(df, [spec.time, spec.value[0]], spec.title)
    x = pd.to_datetime(df[spec.time])
    if getattr(x.dt, "tz", None) is not None:
        x = x.dt.tz_convert("UTC").dt.tz_localize(None)
    rows = _frame(df, x.dt.to_period("W").dt.start_time, df[spec.value[0]], spec)
    out = rows.groupby(["symbol", "x"], sort=False, as_index=False).agg(
        y=("y", "sum"), records=("y", "size")
    )
    out.attrs["left_out"] = rows.attrs["left_out"]
    return out


def metrics(df: pd.DataFrame, spec: Chart) -> dict[str, pd.DataFrame]:
    """Each ``value`` column's own frame (symbol, x, y)."""
    _need(df, [spec.time], spec.title)
    present = [v for v in spec.value if v in df.columns]
    if not present:
        _need(df, spec.value[:1], spec.title)
    return {v: _frame(df, pd.to_datetime(df[spec.time]), df[v], spec) for v in present}


def ranking(df: pd.DataFrame, spec: Chart, top: int = TOP) -> pd.DataFrame:
    """One row per bar (a symbol, or ``spec.by``): its measure (``spec.agg`` of the first
    ``value`` column the frame has; else its number of rows), the largest first, at most
    ``top`` bars. ``attrs``: ``bars`` (how many there were), ``measure``."""
    by = spec.by
    _need(df, [by], spec.title)
    top = whole_number(top, "top", least=1)
    measure = next((v for v in spec.value if v in df.columns), None)
    agg = spec.agg if measure is not None else "count"
    rows = df.assign(**{by: df[by].astype("string").fillna("(none)")})
    missing = 0
    if agg == "count":
        values = rows.groupby(by, sort=False).size().astype(float)
    else:
        numbers = rows.assign(_v=pd.to_numeric(rows[measure], errors="coerce").astype(float))
        grouped = numbers.dropna(subset=["_v"]).groupby(by, sort=False)["_v"]
        values = grouped.last() if agg == "last" else grouped.agg(agg)
        missing = int(rows[by].nunique() - len(values))
    names = (
        rows.drop_duplicates(by).set_index(by)["name"]
        if by == "symbol" and "name" in rows.columns
        else pd.Series(dtype="string")
    )
    out = pd.DataFrame({"symbol": values.index.astype(str), "y": values.to_numpy(dtype=float)})
    out["name"] = out["symbol"].map(names).astype("string").fillna("").to_numpy()
    out = out.sort_values("y", ascending=False, kind="stable").reset_index(drop=True)
    bars = len(out)
    signed = bool((out["y"] < 0).any() and (out["y"] > 0).any())
    if bars > top and signed:
        # A signed measure (sentiment, an expected change): both ends, not only the top.
        out = pd.concat([out.head(top - top // 2), out.tail(top // 2)], ignore_index=True)
    else:
        out = out.head(top)
    out.attrs.update(
        bars=bars, measure=measure or "rows", left_out=missing, ends=signed and bars > top
    )
    return out


def ranking_words(rows: pd.DataFrame, spec: Chart) -> tuple[str, str]:
    """The value axis label and the title of a ranking of ``rows`` (from :func:`ranking`)."""
    measure = rows.attrs["measure"]
    noun = "symbols" if spec.by == "symbol" else spec.by.replace("_", " ") + "s"
    shown, total = len(rows), rows.attrs["bars"]
    scope = f"top {shown} of {total} {noun}" if shown < total else f"{total} {noun}"
    if rows.attrs.get("ends"):
        low = shown // 2
        scope = f"the {shown - low} highest and {low} lowest of {total} {noun}"
    # Two lines: the scope after the title cut it off on a narrow figure.
    if measure == "rows":
        return "records", f"{spec.title}\n{scope}"
    missing = rows.attrs.get("left_out", 0)
    without = f"; {missing} {noun} without {measure} not shown" if missing else ""
    return spec.label, f"{spec.title}\n{scope}, {spec.agg} of {measure}{without}"


def ranking_dots(rows: pd.DataFrame, spec: Chart) -> bool:
    """Dots, not bars: a mean or latest value (a score near 4.6 for every symbol) is read by
    where it lies, on an axis that need not start at zero; sums and counts are bars."""
    return spec.agg in ("mean", "last") and rows.attrs["measure"] != "rows"


def left_out_note(rows: pd.DataFrame, spec: Chart) -> str:
    """``"3 records without a date or price target not drawn"``, or "" when none were."""
    left = int(rows.attrs.get("left_out", 0))
    if not left:
        return ""
    what = spec.label.split(" (")[0] if spec.label and not spec.running else "value"
    s = "s" if left != 1 else ""
    return f"{left} record{s} without a {spec.time.replace('_', ' ')} or {what} not drawn"
