"""v1 bodies: bare objects and arrays, numbers in forecasts as strings, v1 field names.

Every v1 body is derived from the same histories as v2 (so the two versions agree), then
reshaped: ``Mar 05 '24`` dates for insider transactions, amounts as filed for House
trades, ``main,lower,upper`` strings for forecast dates.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..registry import MARKETS
from .context import Ctx
from .filings import congress_history, filed_amount, insider_history
from .listings import select, universe
from .per_symbol import analyst_history, app_records, app_views, forecast, sentiment_history
from .synth import profile, sentiment_seen
from .world import window

__all__ = ["V1_BUILDERS"]


def _between(ctx: Ctx, records: Any) -> list[dict[str, Any]]:
    """The records v2 would send on the same day in ``dateFrom``..``dateTo`` (v1 shows no
    live-service quirks)."""
    return window(replace(ctx, quirks=frozenset()), records, "date")


def _who(ctx: Ctx) -> tuple[str, dict[str, str]]:
    ticker = ctx.part("ticker")
    return ticker, {"ticker": ticker, "name": profile(ticker).name}


def _available_markets(ctx: Ctx) -> Any:
    return {"availableMarkets": [name for name, _ in MARKETS]}


def _available_tickers(ctx: Ctx) -> Any:
    rows = universe()
    return [
        {"ticker": rows[i][0], "name": rows[i][1], "market": rows[i][2][0]}
        for i in select(ctx.today, None, None, ctx.part("type"))
    ]


def _technical(symbol: str, change: float) -> str:
    trend = "an upward" if change > 0 else "a downward"
    return (
        f"{symbol} shows {trend} bias over the short horizon; momentum indicators are "
        f"{'supportive' if change > 0 else 'weakening'} and the forecast band widens with time."
    )


def _prediction(symbol: str, type: str, today: dt.date, *, with_dates: bool) -> dict[str, str]:
    f = forecast(symbol, type, today)
    meta = f["metadata"]
    out: dict[str, str] = {}
    if with_dates:
        for p in f["predictions"]:
            out[p["date"]] = f"{p['mid']},{p['lower']},{p['upper']}"
    out["expectedShort"] = str(meta["expectedShortTerm"])
    out["expectedMid"] = str(meta["expectedMidTerm"])
    out["expectedLong"] = str(meta["expectedLongTerm"])
    if type == "daily":
        out["technicalAnalysis"] = _technical(symbol, meta["expectedMidTerm"])
    out["type"] = type
    out["lastUpdate"] = f["lastUpdated"]
    return out


def _market_forecasts(ctx: Ctx) -> Any:
    market, type = ctx.part("market"), ctx.part("type")
    rows = universe()
    out = []
    for i in select(ctx.today, market, None, type):
        symbol, name, _ = rows[i]
        entry: dict[str, Any] = {
            "ticker": symbol,
            "name": name,
            "prediction": _prediction(symbol, type, ctx.today, with_dates=False),
        }
        if type == "daily":
            entry["sentimentScore"] = str(sentiment_seen(profile(symbol), ctx.today, ctx.today))
        out.append(entry)
    return out


def _ticker_forecast(ctx: Ctx) -> Any:
    ticker, head = _who(ctx)
    type = ctx.part("type")
    body: dict[str, Any] = {
        **head,
        "prediction": _prediction(ticker, type, ctx.today, with_dates=True),
    }
    if type == "daily":
        week = _between(ctx, sentiment_history(*ctx.history_args(ticker)))[:7]
        body["sentimentAnalysis"] = {r["date"]: str(r["score"]) for r in week}
    return body


def _sentiments(ctx: Ctx) -> Any:
    ticker, head = _who(ctx)
    records = _between(ctx, sentiment_history(*ctx.history_args(ticker)))
    return {**head, "sentimentAnalysis": {r["date"]: str(r["score"]) for r in records}}


def _app_ratings(ctx: Ctx) -> Any:
    ticker, head = _who(ctx)
    data, _ = app_views(_between(ctx, app_records(*ctx.history_args(ticker))))
    rows = []
    for entry in data:
        ios, android = entry["ios"] or {}, entry["android"] or {}
        rows.append(
            {
                "playStoreScore": android.get("score"),
                "playStoreRatingsCount": android.get("ratingsCount"),
                "appStoreScore": ios.get("score"),
                "appStoreRatingsCount": ios.get("ratingsCount"),
                "playStoreInstallCount": android.get("installCount"),
                "date": entry["date"],
            }
        )
    return {**head, "appRatings": rows}


def _analyst_ratings(ctx: Ctx) -> Any:
    ticker, head = _who(ctx)
    rows = []
    for i, r in enumerate(_between(ctx, analyst_history(*ctx.history_args(ticker)))):
        target = r["targetPrice"] or ""
        if target and i % 3 == 0:  # v1 often shows the move between two targets
            old = float(target.lstrip("$").replace(",", "")) * 0.92
            target = f"${old:,.2f} \u2192 {target}"
        rows.append(
            {
                "date": r["date"],
                "type": r["action"],
                "institution": r["institution"],
                "signal": r["rating"],
                "targetPrice": target,
            }
        )
    return {**head, "analystRatings": rows}


def _house_trades(ctx: Ctx) -> Any:
    ticker, head = _who(ctx)
    trades = _between(ctx, congress_history("house", *ctx.history_args(ticker)))
    rows = [
        {
            "date": t["date"],
            "amount": filed_amount(t),
            "representative": t["politician"],
            "type": t["transactionType"],
        }
        for t in trades
    ]
    return {**head, "houseTrades": rows}


def _insider_transactions(ctx: Ctx) -> Any:
    ticker, head = _who(ctx)
    rows = []
    for i, t in enumerate(_between(ctx, insider_history(*ctx.history_args(ticker)))):
        day = dt.date.fromisoformat(t["date"])
        rows.append(
            {
                "date": f"{day:%b %d} '{day:%y}",
                "insiderTradings": t["insider"],
                "relationship": t["relationship"],
                "transaction": t["transactionType"],
                "cost": t["pricePerShare"],
                "shares": t["shares"],
                "USDValue": t["totalValue"],
                "totalShares": t["sharesOwned"],
                "SECForm4Date": f"{t['filingDate']}T{16 + i % 5:02d}:{(i * 7) % 60:02d}:00Z",
                "SECForm4Link": t["filingUrl"],
            }
        )
    return {**head, "insiderTransactions": rows}


V1_BUILDERS: dict[str, Callable[[Ctx], Any]] = {
    "v1/available_markets": _available_markets,
    "v1/available_tickers": _available_tickers,
    "v1/market_forecasts": _market_forecasts,
    "v1/ticker_forecast": _ticker_forecast,
    "v1/sentiments": _sentiments,
    "v1/app_ratings": _app_ratings,
    "v1/analyst_ratings": _analyst_ratings,
    "v1/house_trades": _house_trades,
    "v1/insider_transactions": _insider_transactions,
}
