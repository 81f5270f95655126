"""The sandbox's data: the rules each dataset's records follow, and the live service's facts it
reproduces."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
import requests

from mdframes.registry import APP_RATINGS_HISTORY_START, INSIDER_TYPES, MARKETS, SCREENER_DATASETS
from mdframes.sandbox import Sandbox
from mdframes.sandbox.world import QUIRKS

from .conftest import APP_START, BRACKETS, TODAY, data, data_at, get

# --- data rules ----------------------------------------------------------------------------------


def test_forecasts_run_forward_skipping_weekends(server: Sandbox, http: requests.Session) -> None:
    daily = data(server, http, "/v2/predictions/daily/AAPL")
    dates = [dt.date.fromisoformat(p["date"]) for p in daily["predictions"]]
    assert len(dates) == 10 and dates[0] == dt.date(2026, 11, 23)  # Friday -> Monday
    assert all(d > TODAY and d.weekday() < 5 for d in dates) and dates == sorted(dates)
    assert (dates[-1] - dates[0]).days == 11  # ten consecutive trading days: Mon..Fri next week
    monthly = data(server, http, "/v2/predictions/monthly/AAPL")
    months = [dt.date.fromisoformat(p["date"]) for p in monthly["predictions"]]
    assert len(months) == 12 and months[0] == dt.date(2026, 11, 30)
    assert all((m + dt.timedelta(days=1)).day == 1 for m in months)
    for p in daily["predictions"] + monthly["predictions"]:
        assert p["lower"] < p["mid"] < p["upper"]
    assert set(daily["metadata"]) == {
        "expectedShortTerm",
        "expectedMidTerm",
        "expectedLongTerm",
        "lowerBoundChange",
        "upperBoundChange",
    }
    assert daily["lastUpdated"].startswith(TODAY.isoformat())


def test_v1_ticker_forecast(server: Sandbox, http: requests.Session) -> None:
    body = get(server, http, "/v1/ticker/AAPL/predictions/daily").json()
    pred = body["prediction"]
    dated = {k: v for k, v in pred.items() if re.match(r"^\d{4}-\d{2}-\d{2}$", k)}
    assert len(dated) == 10 and min(dated) > TODAY.isoformat()
    for text in dated.values():
        main, lower, upper = map(float, text.split(","))
        assert lower < main < upper
    assert {
        "expectedShort",
        "expectedMid",
        "expectedLong",
        "technicalAnalysis",
        "type",
        "lastUpdate",
    } <= set(pred)
    assert all(isinstance(v, str) for v in body["sentimentAnalysis"].values())


def test_put_call_totals_and_trading_days(server: Sandbox, http: requests.Session) -> None:
    rows = data(server, http, "/v2/put-call-ratio/TSLA")["data"]
    assert len(rows) > 500
    for row in rows:
        assert row["totalVolume"] == row["callVolume"] + row["putVolume"]  # quirks off
        assert row["ratio"] == round(row["ratio"], 2) > 0
        assert abs(row["ratio"] - row["putVolume"] / row["callVolume"]) < 0.01
        assert dt.date.fromisoformat(row["date"]).weekday() < 5
    assert [r["date"] for r in rows] == sorted((r["date"] for r in rows), reverse=True)


def test_sentiment_daily_within_bounds(server: Sandbox, http: requests.Session) -> None:
    rows = data(server, http, "/v2/sentiment/NVDA", startDate="2026-01-01", endDate="2026-01-31")[
        "data"
    ]
    assert [r["date"] for r in rows] == [f"2026-01-{d:02d}" for d in range(31, 0, -1)]
    assert all(-1 <= r["score"] <= 1 for r in rows)


def test_history_covers_24_months(server: Sandbox, http: requests.Session) -> None:
    rows = data(server, http, "/v2/sentiment/AAPL")["data"]
    assert rows[0]["date"] == TODAY.isoformat() and rows[-1]["date"] == "2024-11-21"


def test_insider_transactions_rules(server: Sandbox, http: requests.Session) -> None:
    types = set()
    for symbol in ("AAPL", "MSFT", "NVDA", "TSLA", "AMZN"):
        rows = data(server, http, f"/v2/insider-trading/{symbol}")["transactions"]
        assert 40 <= len(rows) <= 80
        for row in rows:
            day, filed = (
                dt.date.fromisoformat(row["date"]),
                dt.date.fromisoformat(row["filingDate"]),
            )
            weekdays = sum(
                (day + dt.timedelta(days=i)).weekday() < 5 for i in range(1, (filed - day).days + 1)
            )
            assert day <= filed <= TODAY and weekdays <= 2
            assert re.match(r"^\d{10}$", row["cik"])
            assert all(isinstance(row[k], int) for k in ("shares", "totalValue", "sharesOwned"))
        types |= {r["transactionType"] for r in rows}
    assert types == set(INSIDER_TYPES)
    crypto = data(server, http, "/v2/insider-trading/BTC-USD")["transactions"]
    assert all(r["cik"] is None for r in crypto)


def test_congress_rules(server: Sandbox, http: requests.Session) -> None:
    flags, owners = set(), set()
    for symbol in ("AAPL", "MSFT", "NVDA", "TSLA", "AMZN", "META", "GOOGL"):
        for chamber in ("house", "senate"):
            payload = data(server, http, f"/v2/congress/{chamber}/{symbol}")
            assert payload["chamber"] == chamber
            trades = payload["trades"]
            assert [t["date"] for t in trades] == sorted((t["date"] for t in trades), reverse=True)
            for t in trades:
                assert t["transactionType"] in ("Purchase", "Sale")
                if t["disclosureDate"] is not None:
                    lag = (
                        dt.date.fromisoformat(t["disclosureDate"])
                        - dt.date.fromisoformat(t["date"])
                    ).days
                    assert 0 < lag <= 45
                if t["amountRaw"] is not None:
                    assert t["amount"] in BRACKETS and t["amountRaw"] != t["amount"]
                if t["amountFlag"] == "review":
                    assert t["amountRaw"] is None
                flags.add(t["amountFlag"])
                owners.add((chamber, t["owner"]))
    assert flags == {None, "review", "ambiguous"}
    assert {("house", "SELF"), ("senate", "UNKNOWN"), ("house", "SP")} <= owners
    assert ("house", "UNKNOWN") not in owners


def test_congress_window_filters_on_trade_date(server: Sandbox, http: requests.Session) -> None:
    trades = data(server, http, "/v2/congress/house/AAPL")["trades"]
    late = next(t for t in trades if t["disclosureDate"] and t["disclosureDate"] > t["date"])
    day = late["date"]
    inside = data(server, http, "/v2/congress/house/AAPL", startDate=day, endDate=day)["trades"]
    assert late in inside and all(t["date"] == day for t in inside)
    by_disclosure = data(
        server,
        http,
        "/v2/congress/house/AAPL",
        startDate=late["disclosureDate"],
        endDate=late["disclosureDate"],
    )["trades"]
    assert all(t["date"] == late["disclosureDate"] for t in by_disclosure)


def test_capped_datasets_unique_ids_and_windows(server: Sandbox, http: requests.Session) -> None:
    for path, key, idf, window in [
        ("/v2/lobbying/AAPL", "filings", "filingUuid", "date"),
        ("/v2/government-contracts/AAPL", "contracts", "awardId", "startDate"),
        ("/v2/patent-filings/AAPL", "patents", "patentId", "patentDate"),
    ]:
        rows = data(server, http, path)[key]
        assert len({r[idf] for r in rows}) == len(rows)
        assert [r[window] for r in rows] == sorted((r[window] for r in rows), reverse=True)
        part = data(server, http, path, startDate="2026-01-01", endDate="2026-06-30")[key]
        assert part and all("2026-01-01" <= r[window] <= "2026-06-30" for r in part)
        assert data(server, http, path, limit=2)[key] == rows[:2]  # the newest
    contracts = data(server, http, "/v2/government-contracts/MSFT")["contracts"]
    assert all(c["awardType"] == "" and c["contractAwardType"] == "" for c in contracts)
    filings = data(server, http, "/v2/lobbying/MSFT")["filings"]
    for f in filings:
        month = int(f["date"][5:7])
        assert f["quarter"] == f"Q{(month - 1) // 3 + 1}" and f["filingYear"] == int(f["date"][:4])


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/v2/insider-trading/BIGCO", "transactions"),
        ("/v2/congress/senate/BIGCO", "trades"),
        ("/v2/analyst-ratings/BIGCO", "ratings"),
        ("/v2/sentiment/BIGCO", "data"),
        ("/v2/news/BIGCO", "articles"),
    ],
)
def test_record_counts_uncapped(
    server: Sandbox, http: requests.Session, path: str, key: str
) -> None:
    assert len(data(server, http, path)[key]) == 1234


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/v2/lobbying/BIGCO", "filings"),
        ("/v2/government-contracts/BIGCO", "contracts"),
        ("/v2/patent-filings/BIGCO", "patents"),
    ],
)
def test_record_counts_capped(server: Sandbox, http: requests.Session, path: str, key: str) -> None:
    assert len(data(server, http, path)[key]) == 500  # the cap without a limit
    total, month = 0, dt.date(2024, 11, 1)
    while month <= TODAY:
        nxt = (month + dt.timedelta(days=32)).replace(day=1)
        end = nxt - dt.timedelta(days=1)
        total += len(
            data(server, http, path, startDate=month.isoformat(), endDate=end.isoformat())[key]
        )
        month = nxt
    assert total == 1234


def test_app_ratings_default_window_and_views(server: Sandbox, http: requests.Session) -> None:
    payload = data(server, http, "/v2/app-ratings/AAPL")
    dates = [e["date"] for e in payload["data"]]
    assert dates == [(TODAY - dt.timedelta(days=i)).isoformat() for i in range(7)]
    assert re.match(r"^\d{10}$", payload["cik"])
    counts = [a["observations"][0]["ratingsCount"] for a in payload["apps"]]
    assert counts == sorted(counts, reverse=True)
    for entry in payload["data"]:
        for platform in ("ios", "android"):
            obs = [
                o["ratingsCount"]
                for a in payload["apps"]
                if a["platform"] == platform
                for o in a["observations"]
                if o["date"] == entry["date"]
            ]
            shown = entry[platform]
            assert (shown is None) == (not obs)
            if shown:
                assert shown["ratingsCount"] == max(obs) and 1 <= shown["score"] <= 5
    for app in payload["apps"]:
        obs_dates = [o["date"] for o in app["observations"]]
        assert obs_dates == sorted(obs_dates, reverse=True)
        if app["platform"] == "ios":
            assert all(o["installCount"] is None for o in app["observations"])


def test_app_ratings_history_start_and_limit(server: Sandbox, http: requests.Session) -> None:
    before = data(
        server, http, "/v2/app-ratings/AAPL", startDate="2025-01-01", endDate="2026-09-02"
    )
    assert before["data"] == [] and before["apps"] == []
    everything = data(server, http, "/v2/app-ratings/AAPL", startDate="2020-01-01")
    assert min(e["date"] for e in everything["data"]) == APP_RATINGS_HISTORY_START
    limited = data(server, http, "/v2/app-ratings/AAPL", limit=7)
    assert sum(len(a["observations"]) for a in limited["apps"]) == 7


def test_app_added_later_is_not_backfilled(http: requests.Session) -> None:
    days = (TODAY - APP_START).days + 1
    with Sandbox(today=TODAY, record_counts={"APPCO": days + 5}) as s:
        payload = data(s, http, "/v2/app-ratings/APPCO", startDate="2026-01-01")
        total = sum(len(a["observations"]) for a in payload["apps"])
        assert total == days + 5
        newest = min(payload["apps"], key=lambda a: len(a["observations"]))
        assert [o["date"] for o in newest["observations"]][-1] == (
            TODAY - dt.timedelta(days=4)
        ).isoformat()
        # The app's start inside a window that begins before it: still no earlier records.
        early = data(s, http, "/v2/app-ratings/APPCO", startDate="2026-09-01", endDate="2026-10-01")
        assert len(early["apps"]) == 1


def test_news_professionalnet_forum(server: Sandbox, http: requests.Session) -> None:
    news = data(server, http, "/v2/news/AAPL", limit=5)
    assert {"date", "headline", "source", "url", "sentiment"} <= set(news["articles"][0])
    net = data(server, http, "/v2/professionalnet/AAPL")["data"]
    assert {"date", "employeeCount", "followerCount", "jobCount"} <= set(net[0])
    forum = data(
        server, http, "/v2/forum-mentions/AAPL", startDate="2026-11-19", endDate="2026-11-19"
    )["data"]
    assert len(forum) == 4 and all(re.match(r"^2026-11-19T\d{2}:00:00Z$", r["date"]) for r in forum)
    assert all(set(r) == {"date", "subreddit", "mentions"} for r in forum)
    assert all(isinstance(r["mentions"], int) for r in forum)
    assert set(net[0]) == {"date", "employeeCount", "followerCount", "jobCount"}


def test_discovery(server: Sandbox, http: requests.Session) -> None:
    markets = data(server, http, "/v2/markets")["markets"]
    assert [(m["name"], m["region"]) for m in markets] == list(MARKETS)
    regions = data(server, http, "/v2/regions")["regions"]
    assert sum(len(r["markets"]) for r in regions) == len(MARKETS)
    dow = data(server, http, "/v2/tickers", market="DOW 30")["tickers"]
    assert len(dow) == 30 and {"AAPL", "MSFT"} <= {t["symbol"] for t in dow}
    assert len(data(server, http, "/v2/tickers", region="UK", limit=7)["tickers"]) == 7


def test_screener_pages_of_20000(server: Sandbox, http: requests.Session) -> None:
    page = data(server, http, "/v2/screener/sentiment", region="US", limit=20000)
    assert len(page["data"]) == 20000 and page["summary"]["totalTickers"] == 20000
    s = page["summary"]
    assert s["bullishCount"] + s["bearishCount"] + s["neutralCount"] == 20000
    assert len(data(server, http, "/v2/screener/put-call-ratio", limit=20000)["data"]) == 20000


def test_screener_filters_and_summaries(server: Sandbox, http: requests.Session) -> None:
    dax = data(server, http, "/v2/screener/sentiment", market="Germany DAX", limit=20000)["data"]
    assert len(dax) == 40 and all(r["symbol"].endswith(".DE") for r in dax)
    insider = data(server, http, "/v2/screener/insider-trading", limit=500)
    kinds = {r["transactionType"] for r in insider["data"]}
    assert {"Sale", "Buy"} <= kinds
    summary = insider["summary"]
    assert set(summary) == {"totalTransactions", "totalTickers", "buyCount", "sellCount"}
    assert summary["buyCount"] == sum(r["transactionType"] == "Buy" for r in insider["data"])
    for tail in SCREENER_DATASETS:
        rows = data(server, http, f"/v2/screener/{tail}", region="Canada", limit=3)["data"]
        assert len(rows) == 3 and all({"symbol", "name", "date"} <= set(r) for r in rows)


def test_recent_entries_sorted_by_date(server: Sandbox, http: requests.Session) -> None:
    news = data(server, http, "/v2/recent/news", limit=300)
    dates = [r["date"] for r in news["data"]]
    assert dates == sorted(dates, reverse=True) and len(dates) == 300
    assert set(news["summary"]) == {"totalArticles", "totalTickers", "averageSentiment"}
    ratings = data(server, http, "/v2/recent/analyst-ratings", market="NYSE")
    assert len(ratings["data"]) == 100
    assert set(ratings["summary"]) == {
        "totalRatings",
        "totalTickers",
        "upgradeCount",
        "downgradeCount",
    }


def test_v1_bodies(server: Sandbox, http: requests.Session) -> None:
    insider = get(server, http, "/v1/insidertransactions/NASDAQ/AAPL").json()["insiderTransactions"]
    assert all(re.match(r"^[A-Z][a-z]{2} \d{2} '\d{2}$", r["date"]) for r in insider)
    assert all(
        re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$", r["SECForm4Date"]) for r in insider
    )
    assert all(
        isinstance(r[k], int) for r in insider for k in ("shares", "USDValue", "totalShares")
    )
    house = get(
        server, http, "/v1/housetrades/NASDAQ/AAPL", dateFrom="2026-01-01", dateTo="2026-06-30"
    )
    rows = house.json()["houseTrades"]
    assert rows and all("2026-01-01" <= r["date"] <= "2026-06-30" for r in rows)
    amounts = {
        r["amount"]
        for s in ("MSFT", "NVDA", "TSLA", "AMZN", "META", "GOOGL")
        for r in get(server, http, f"/v1/housetrades/NASDAQ/{s}").json()["houseTrades"]
    }
    assert amounts - BRACKETS  # filed variants appear as filed
    apps = get(server, http, "/v1/appratings/NASDAQ/AAPL", dateTo="2026-09-05").json()["appRatings"]
    assert [r["date"] for r in apps] == ["2026-09-05", "2026-09-04", "2026-09-03"]


def test_legacy_shapes(fresh: Sandbox) -> None:
    fresh.legacy_shapes = {"app_ratings", "congress"}
    with requests.Session() as http:
        payload = data_at(fresh, http, "/v2/app-ratings/AAPL", startDate="2026-09-01")
        assert "apps" not in payload
        days = [dt.date.fromisoformat(e["date"]) for e in payload["data"]]
        assert all((a - b).days == 7 for a, b in zip(days[:-1], days[1:], strict=True))
        assert all(
            isinstance(e["ios"], dict) and isinstance(e["android"], dict) for e in payload["data"]
        )
        trades = data_at(fresh, http, "/v2/congress/house/AAPL")["trades"]
        assert trades and not any({"owner", "amountRaw", "amountFlag"} & set(t) for t in trades)


# --- live-service facts (fidelity issue) -------------------------------------------------------


def test_put_call_volumes_as_the_live_service_derives_them(http: requests.Session) -> None:
    with Sandbox(today=TODAY, quirks=["volume_off_by_one"]) as s:
        rows = data(s, http, "/v2/put-call-ratio/TSLA")["data"]
        screener = data(s, http, "/v2/screener/put-call-ratio", limit=500)["data"]
    gaps = [r["totalVolume"] - r["callVolume"] - r["putVolume"] for r in rows + screener]
    assert set(gaps) == {0, 1}  # both occur
    for row in rows:
        hundredths = round(row["ratio"] * 100)
        total = row["totalVolume"]
        # Calls and puts come from the total and the two-decimal ratio, truncated separately.
        assert row["callVolume"] == total * 100 // (100 + hundredths)
        assert row["putVolume"] == total * hundredths // (100 + hundredths)


def test_the_published_put_call_rows_follow_the_same_arithmetic() -> None:
    for total, hundredths, calls, puts in [
        (931034, 50, 620689, 310344),
        (1070205, 142, 442233, 627971),
    ]:
        assert total * 100 // (100 + hundredths) == calls
        assert total * hundredths // (100 + hundredths) == puts


def test_quirks_are_off_by_default_and_switch_on_one_by_one(http: requests.Session) -> None:
    symbols = ("AAPL", "MSFT", "NVDA", "TSLA", "AMZN", "META", "GOOGL")
    wire = set(QUIRKS) - {"late_filing"}  # what a record says; a late filing hides it: below
    with Sandbox(today=TODAY) as plain, Sandbox(today=TODAY, quirks=wire) as live:
        assert plain.quirks == frozenset() and Sandbox(quirks=True).quirks == set(QUIRKS)
        nulls = unknown = titled = 0
        for symbol in symbols:
            a = data(plain, http, f"/v2/insider-trading/{symbol}")["transactions"]
            b = data(live, http, f"/v2/insider-trading/{symbol}")["transactions"]
            assert len(a) == len(b)
            assert all(r["filingDate"] and r["transactionType"] in INSIDER_TYPES for r in a)
            assert all("securityTitle" not in r for r in a)
            nulls += sum(r["filingDate"] is None for r in b)
            unknown += sum(r["transactionType"] not in INSIDER_TYPES for r in b)
            titled += sum(r["securityTitle"] == "Common Stock" for r in b)
            for x, y in zip(a, b, strict=True):  # nothing else changes
                assert {
                    k: v
                    for k, v in y.items()
                    if k not in ("filingDate", "transactionType", "securityTitle")
                } == {k: v for k, v in x.items() if k not in ("filingDate", "transactionType")}
        assert (
            nulls
            and unknown
            and titled
            == sum(
                len(data(live, http, f"/v2/insider-trading/{s}")["transactions"]) for s in symbols
            )
        )
        awards = [
            c
            for symbol in symbols
            for c in data(live, http, f"/v2/government-contracts/{symbol}")["contracts"]
        ]
        assert any(c["awardType"] for c in awards) and any(not c["awardType"] for c in awards)
        assert all(bool(c["awardType"]) == bool(c["contractAwardType"]) for c in awards)
        # Switched at run time, one at a time.
        plain.quirks = ["award_type"]
        assert plain.quirks == {"award_type"}
        switched = [
            c
            for symbol in symbols
            for c in data(plain, http, f"/v2/government-contracts/{symbol}")["contracts"]
        ]
        assert switched == awards
        insider = data(plain, http, "/v2/insider-trading/AAPL")["transactions"]
        assert all(r["filingDate"] and "securityTitle" not in r for r in insider)
        # A Form 4 filed over a year late is shown from its filing day, with that date.
        since = {"startDate": "2024-12-01", "limit": 1000}

        def every() -> list[dict[str, Any]]:
            return [
                r
                for s in symbols
                for r in data(plain, http, f"/v2/insider-trading/{s}", **since)["transactions"]
            ]

        on_time = every()
        plain.quirks = ["late_filing"]
        shown = every()
        lags = [
            (dt.date.fromisoformat(r["filingDate"]) - dt.date.fromisoformat(r["date"])).days
            for r in shown
        ]
        assert max(lags) > 365 and all(r["filingDate"] <= TODAY.isoformat() for r in shown)
        assert len(shown) < len(on_time)  # those filed after today are not shown yet
    with pytest.raises(ValueError, match="unknown quirks"):
        Sandbox(quirks=["typo"])


def test_bare_lists(http: requests.Session) -> None:
    with Sandbox(today=TODAY, bare_lists=True) as s:
        markets = data(s, http, "/v2/markets")
        assert [(m["name"], m["region"]) for m in markets] == list(MARKETS)
        page = data(s, http, "/v2/screener/sentiment", region="US", limit=5)
        recent = data(s, http, "/v2/recent/news", limit=5)
        assert isinstance(page, list) and len(page) == 5 and isinstance(recent, list)
        assert isinstance(data(s, http, "/v2/tickers", limit=2), dict)  # not among the defaults
        assert isinstance(data(s, http, "/v2/sentiment/AAPL", limit=2), dict)
        s.bare_lists = ["recent"]
        assert isinstance(data(s, http, "/v2/recent/news", limit=5), list)
        assert isinstance(data(s, http, "/v2/markets"), dict)
    with pytest.raises(ValueError, match="one record list"):
        Sandbox(bare_lists=["sentiment"])
