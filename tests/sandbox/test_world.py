"""The sandbox's moving world: a settable clock, records that appear, are disclosed late and
revised in place, forecasts that roll forward and a ticker list that changes."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
import requests

from mdframes.registry import CONGRESS_BRACKETS
from mdframes.sandbox import (
    DEFAULT_TODAY,
    REVISION_RULES,
    Sandbox,
    listing_changes,
    universe_symbols,
)

from .conftest import TODAY, data, data_at, get

# --- the moving world (CONTRACT 7, lake issue) ---------------------------------------------------

FIVE = ("AAPL", "MSFT", "NVDA", "TSLA", "AMZN")


def test_the_clock_is_settable_and_moves(http: requests.Session) -> None:
    assert Sandbox().today == DEFAULT_TODAY == dt.date(2026, 11, 20)
    with Sandbox(today="2026-06-30") as s:
        assert s.today == dt.date(2026, 6, 30)
        body = get(s, http, "/v2/sentiment/AAPL", limit=1).json()
        assert body["meta"]["timestamp"].startswith("2026-06-30")
        assert body["data"]["data"][0]["date"] == "2026-06-30"
        assert s.advance(days=2) == dt.date(2026, 7, 2) == s.today
        assert data_at(s, http, "/v2/sentiment/AAPL", limit=1)["data"][0]["date"] == "2026-07-02"
        assert s.set_today(dt.datetime(2026, 5, 1, 12)) == dt.date(2026, 5, 1)
        s.today = "2026-05-03"
        assert data_at(s, http, "/v2/sentiment/AAPL", limit=1)["data"][0]["date"] == "2026-05-03"
        with pytest.raises(ValueError, match="not a day"):
            s.set_today("soon")
        # Thread-safe: no step is lost when many threads move the clock at once.
        threads = [
            threading.Thread(target=lambda: [s.advance() for _ in range(50)]) for _ in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert s.today == dt.date(2026, 5, 3) + dt.timedelta(days=400)


def test_a_moved_clock_serves_what_a_new_sandbox_of_that_day_serves(
    http: requests.Session,
) -> None:
    paths = ["/v2/insider-trading/AAPL", "/v2/congress/senate/MSFT", "/v2/screener/news"]
    with Sandbox(today="2026-06-30") as moved, Sandbox(today="2026-07-15") as fresh:
        moved.advance(days=15)
        assert [get(moved, http, p).content for p in paths] == [
            get(fresh, http, p).content for p in paths
        ]


def _by(rows: list[dict], *key: str) -> dict[tuple, dict]:
    return {tuple(r[k] for k in key): r for r in rows}


def test_records_appear_as_days_pass_and_old_ones_stay(http: requests.Session) -> None:
    day = dt.date(2026, 6, 30)
    with Sandbox(today=day) as s:
        since = {"startDate": "2025-01-01"}  # old records leave the trailing 24 months
        before = {
            sym: data(s, http, f"/v2/insider-trading/{sym}", **since)["transactions"]
            for sym in FIVE
        }
        lobbying = data(s, http, "/v2/lobbying/MSFT", **since)["filings"]
        s.advance(days=30)
        new_rows = 0
        for sym in FIVE:
            after = data(s, http, f"/v2/insider-trading/{sym}", **since)["transactions"]
            assert all(r["filingDate"] <= "2026-07-30" for r in after)
            old = _by(before[sym], "filingUrl")
            now = _by(after, "filingUrl")
            assert {k: v for k, v in now.items() if k in old} == old  # unchanged
            assert set(old) <= set(now)
            fresh = [r for k, r in now.items() if k not in old]
            assert all(r["filingDate"] > day.isoformat() for r in fresh)  # nothing backdated
            new_rows += len(fresh)
        assert new_rows > 0
        later = data(s, http, "/v2/lobbying/MSFT", **since)["filings"]
        assert _by(later, "filingUuid").keys() >= _by(lobbying, "filingUuid").keys()
        # Nothing exists after today.
        assert data(s, http, "/v2/news/AAPL", startDate="2026-07-31")["articles"] == []
        assert data(s, http, "/v2/put-call-ratio/AAPL", limit=1)["data"][0]["date"] <= "2026-07-30"


def test_congress_trades_are_disclosed_late(http: requests.Session) -> None:
    day = dt.date(2026, 6, 30)
    window = {"startDate": "2026-05-01", "endDate": day.isoformat()}  # on the trade date
    key = ("date", "politician", "transactionType")
    late = []
    with Sandbox(today=day) as s:
        first = {
            (sym, ch): data(s, http, f"/v2/congress/{ch}/{sym}", **window)["trades"]
            for sym in FIVE
            for ch in ("house", "senate")
        }
        assert all(
            t["disclosureDate"] is None or t["disclosureDate"] <= day.isoformat()
            for rows in first.values()
            for t in rows
        )
        s.advance(days=45)
        for (sym, ch), rows in first.items():
            now = data(s, http, f"/v2/congress/{ch}/{sym}", **window)["trades"]
            known = _by(rows, *key)
            assert set(known) <= set(_by(now, *key))
            late += [t for k, t in _by(now, *key).items() if k not in known]
    assert late and all(t["date"] <= day.isoformat() for t in late)
    assert all(t["disclosureDate"] > day.isoformat() for t in late if t["disclosureDate"])
    lags = [
        (dt.date.fromisoformat(t["disclosureDate"]) - dt.date.fromisoformat(t["date"])).days
        for t in late
        if t["disclosureDate"]
    ]
    assert lags and max(lags) <= 45


def _record(s: Sandbox, http: requests.Session, rev: object) -> dict:
    if rev.dataset == "government_contracts":
        rows = data(s, http, f"/v2/government-contracts/{rev.symbol}", limit=500)["contracts"]
        (row,) = [r for r in rows if r["awardId"] == rev.key["awardId"]]
        return row
    if rev.dataset == "sentiment":
        day = rev.key["date"]
        (row,) = data(s, http, f"/v2/sentiment/{rev.symbol}", startDate=day, endDate=day)["data"]
        return row
    k = rev.key
    rows = data(
        s, http, f"/v2/congress/{k['chamber']}/{rev.symbol}", startDate=k["date"], endDate=k["date"]
    )["trades"]
    (row,) = [
        t
        for t in rows
        if (t["politician"], t["transactionType"], t["amountRaw"] or t["amount"])
        == (k["politician"], k["transactionType"], k["filedAmount"])
    ]
    return row


def test_records_are_revised_in_place_on_schedule(http: requests.Session) -> None:
    symbols = FIVE + ("META", "GOOGL", "JPM", "IBM", "KO")
    with Sandbox(today="2026-06-30") as s:
        revisions = {
            ds: s.revisions(ds, symbols, "2026-01-01", "2026-06-30")
            for ds in ("government_contracts", "congress_trades", "sentiment")
        }
        fields = {(r.dataset, r.field) for rs in revisions.values() for r in rs}
        assert fields == {(rule.dataset, f) for rule in REVISION_RULES for f in rule.fields}
        picked = [revisions["government_contracts"][0], revisions["sentiment"][0]]
        picked += [
            next(r for r in revisions["congress_trades"] if r.field == f)
            for f in ("amount", "owner", "disclosureDate")
        ]
        for rev in picked:
            assert rev.before != rev.after
            s.set_today(rev.on - dt.timedelta(days=1))
            assert _record(s, http, rev)[rev.field] == rev.before, rev
            s.set_today(rev.on)
            assert _record(s, http, rev)[rev.field] == rev.after, rev
        amounts = [r for r in revisions["congress_trades"] if r.field == "amount"]
        assert all(
            r.after in CONGRESS_BRACKETS and r.before == r.key["filedAmount"] for r in amounts
        )
        backfilled = [r for r in revisions["congress_trades"] if r.field != "amount"]
        assert all(r.before is None and r.after for r in backfilled if r.field != "amountRaw")
        s.set_today("2026-06-30")
        today_only = s.revisions("sentiment", symbols)
        assert all(r.on == dt.date(2026, 6, 30) for r in today_only)
        with pytest.raises(ValueError, match="never revised"):
            s.revisions("lobbying", "AAPL")


def test_forecasts_roll_forward(http: requests.Session) -> None:
    with Sandbox(today="2026-06-30") as s:
        first = data(s, http, "/v2/predictions/daily/AAPL")
        s.advance(days=1)
        second = data(s, http, "/v2/predictions/daily/AAPL")
    assert first["predictions"][0]["date"] == "2026-07-01"
    assert second["predictions"][0]["date"] == "2026-07-02"
    assert all(p["date"] > "2026-07-01" for p in second["predictions"])
    assert first["lastUpdated"].startswith("2026-06-30")
    assert second["lastUpdated"].startswith("2026-07-01")


def test_the_ticker_list_changes_and_delisted_history_stays(http: requests.Session) -> None:
    changes = listing_changes(dt.date(2026, 7, 1), dt.date(2026, 7, 10))
    assert len(changes) == 2 * 8 and {c.event for c in changes} == {"listed", "delisted"}
    gone = next(c for c in changes if c.event == "delisted")
    new = next(c for c in changes if c.event == "listed" and c.date == gone.date)
    eve = gone.date - dt.timedelta(days=1)

    def tickers(s: Sandbox) -> set[str]:
        rows = data(s, http, "/v2/tickers", market=gone.market, limit=100000)["tickers"]
        return {t["symbol"] for t in rows}

    def screened(s: Sandbox) -> set[str]:
        rows = data(s, http, "/v2/screener/sentiment", market=new.market, limit=20000)["data"]
        return {r["symbol"] for r in rows}

    with Sandbox(today=eve) as s:
        assert gone.symbol in tickers(s) and new.symbol not in tickers(s)
        assert gone.symbol in screened(s) and new.symbol not in screened(s)
        assert get(s, http, f"/v2/sentiment/{new.symbol}").status_code == 404
        history = data(s, http, f"/v2/sentiment/{gone.symbol}")["data"]
        s.set_today(gone.date + dt.timedelta(days=20))
        assert gone.symbol not in tickers(s) and new.symbol in tickers(s)
        assert gone.symbol not in screened(s) and new.symbol in screened(s)
        kept = data(s, http, f"/v2/sentiment/{gone.symbol}")["data"]
        assert kept[0]["date"] == eve.isoformat()  # nothing after the delisting
        assert {r["date"] for r in kept} >= {r["date"] for r in history[:300]}
        assert get(s, http, f"/v2/predictions/daily/{gone.symbol}").status_code == 404
        fresh = data(s, http, f"/v2/sentiment/{new.symbol}")["data"]
        assert fresh[-1]["date"] == new.date.isoformat() and len(fresh) == 21
        assert gone.symbol in s.symbols() and new.symbol in s.symbols()
    assert new.symbol in universe_symbols(gone.date) and gone.symbol not in universe_symbols(
        gone.date
    )


def test_sized_fixtures_do_not_move_with_the_clock(http: requests.Session) -> None:
    with Sandbox(today=TODAY, record_counts={"BIGCO": 40}) as s:
        before = data(s, http, "/v2/congress/house/BIGCO")["trades"]
        s.advance(days=60)
        assert data(s, http, "/v2/congress/house/BIGCO")["trades"] == before
        assert len(before) == 40
