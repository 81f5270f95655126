"""md.Lake against a real sandbox: syncs, versions, reads, SQL, compaction, budget, failures."""

from __future__ import annotations

import datetime as dt
import queue
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow.dataset as pads
import pytest

import mdframes as md
from mdframes.lake import LakeBusyError
from mdframes.lake.table.layout import MANIFEST
from mdframes.registry import REGISTRY
from mdframes.sandbox import KNOWN_SYMBOLS, Sandbox

from .conftest import lake_client

SYMBOLS = ["AAPL", "0700", "MSFT"]  # 0700: an identifier that must stay text
# Windowed datasets of every shape: plain, capped and paged, list cells, congress, apps view.
WINDOWED = [
    "insider_trading",
    "congress_trades",
    "sentiment",
    "lobbying",
    "government_contracts",
    "patent_filings",
    "app_ratings",
    "news",
    "forum_mentions",
]


@pytest.fixture
def world() -> Iterator[Sandbox]:
    with Sandbox(extra_symbols=["0700"]) as server:
        yield server


@pytest.fixture
def client(world: Sandbox) -> Iterator[md.Client]:
    with lake_client(world) as c:
        yield c


@pytest.fixture
def lake(tmp_path: Path, client: md.Client) -> md.Lake:
    return md.Lake(tmp_path / "lake", client=client)


def without_meta(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=[c for c in df.columns if c.startswith("_")])


# --- first sync: the loader's frame --------------------------------------------------------------


@pytest.mark.parametrize("dataset", WINDOWED)
def test_first_sync_reads_back_as_the_loader_frame(
    lake: md.Lake, client: md.Client, dataset: str
) -> None:
    start = "2026-09-03" if dataset == "app_ratings" else None
    report = lake.sync(dataset, SYMBOLS, start=start, progress=False)
    assert report.complete, str(report)
    assert report.done == {dataset: SYMBOLS}
    expected = md.load(dataset, SYMBOLS, client=client, start=start)
    got = lake.read(dataset, SYMBOLS)
    assert list(got.columns) == list(expected.columns) + ["_fetched_at"]
    assert str(got["_fetched_at"].dtype) == "datetime64[us, UTC]"
    # Row for row as the loader gives them: the lake sorts as loaders sort.
    pd.testing.assert_frame_equal(without_meta(got), expected)
    assert report.rows_added == len(expected)
    assert set(got["symbol"]) == set(SYMBOLS)  # "0700" stayed text


def test_forecast_snapshot_reads_back_with_metadata_columns(
    lake: md.Lake, client: md.Client
) -> None:
    lake.sync("forecast", ["AAPL"], progress=False)
    got = lake.read("forecast", "AAPL")
    assert set(got["type"]) == {"daily", "monthly"}
    daily = md.load_forecast("AAPL", client=client)
    mine = got[got["type"] == "daily"].reset_index(drop=True)
    pd.testing.assert_frame_equal(
        mine[list(daily.columns)], daily.reset_index(drop=True), check_categorical=False
    )
    for column in ("expected_short_term", "last_updated"):
        assert column in got.columns and got[column].notna().all()


def test_resync_with_nothing_new_asks_once_per_window_and_adds_nothing(
    lake: md.Lake, world: Sandbox
) -> None:
    lake.sync(["insider_trading", "congress_trades"], SYMBOLS, progress=False)
    files = sorted(p.name for p in Path(lake.path("insider_trading")).iterdir())
    world.clear_log()
    report = lake.sync(["insider_trading", "congress_trades"], SYMBOLS, progress=False)
    assert (report.rows_added, report.versions_added) == (0, 0)
    assert report.requests == world.count() == 3 + 3 * 2  # congress: one request per chamber
    assert sorted(p.name for p in Path(lake.path("insider_trading")).iterdir()) == files
    for name in ("insider_trading", "congress_trades"):  # the incremental window, with lookback
        lookback = dt.timedelta(days=REGISTRY[name].lookback)
        prefix = "/v2/" + REGISTRY[name].path.split("/")[2]
        starts = {r.query.get("startDate") for r in world.requests if r.path.startswith(prefix)}
        assert starts == {(world.today - lookback).isoformat()}


def test_incremental_window_starts_at_last_end_minus_lookback(
    lake: md.Lake, world: Sandbox
) -> None:
    lake.sync("congress_trades", ["AAPL"], progress=False)
    world.clear_log()
    lake.sync("congress_trades", ["AAPL"], progress=False)
    lookback = REGISTRY["congress_trades"].lookback
    assert lookback >= 45  # the spec's disclosure lag, the service filtering on trade dates
    expected = (world.today - dt.timedelta(days=lookback)).isoformat()
    assert {r.query["startDate"] for r in world.requests} == {expected}


def test_earlier_start_widens_the_window_backwards(lake: md.Lake, world: Sandbox) -> None:
    lake.sync("insider_trading", ["AAPL"], start="2026-06-01", progress=False)
    first = lake.read("insider_trading", "AAPL")
    assert first["date"].min() >= pd.Timestamp("2026-06-01")
    world.clear_log()
    report = lake.sync("insider_trading", ["AAPL"], start="2025-12-01", progress=False)
    assert world.requests[0].query["startDate"] == "2025-12-01"
    wider = lake.read("insider_trading", "AAPL")
    assert wider["date"].min() < pd.Timestamp("2026-06-01")
    assert report.rows_added == len(wider) - len(first)


# --- versions and knowledge time -----------------------------------------------------------------


def test_second_sync_adds_only_new_records_and_captures_a_late_disclosure(
    lake: md.Lake, client: md.Client, world: Sandbox
) -> None:
    symbols = list(KNOWN_SYMBOLS[:6])
    day0 = pd.Timestamp(world.today)
    lake.sync("congress_trades", symbols, progress=False)
    first = lake.read("congress_trades", symbols)
    synced = lake.clock()
    world.advance(days=21)
    world.clear_log()
    report = lake.sync("congress_trades", symbols, progress=False)
    assert report.requests == world.count() == 2 * len(symbols)  # one window per chamber
    after = lake.read("congress_trades", symbols)
    # The lake holds what the service shows today, record for record, and keeps what has
    # aged out of the service's trailing window.
    expected = md.load_congress_trades(symbols, client=client)
    shown = lake.read("congress_trades", symbols, start=expected["date"].min())
    pd.testing.assert_frame_equal(without_meta(shown), expected)  # loader order: row for row
    assert (after["date"] >= expected["date"].min()).sum() == len(shown)
    fresh = after[after["_fetched_at"] > synced]
    assert report.rows_added == len(after) - len(first) > 0
    assert len(fresh) == report.rows_added + report.versions_added
    # A trade made before the first sync but disclosed after it: caught by the lookback.
    late = fresh[(fresh["date"] <= day0) & (fresh["disclosure_date"] > day0)]
    assert len(late) > 0
    assert lake.read("congress_trades", symbols, known_at=synced).equals(first)


def test_revisions_keep_both_versions_and_known_at_returns_the_old_one(
    lake: md.Lake, world: Sandbox
) -> None:
    symbols = list(KNOWN_SYMBOLS[:8])
    lake.sync("government_contracts", symbols, progress=False)
    synced = lake.clock()
    before = lake.read("government_contracts", symbols)
    revisions = world.revisions(
        "government_contracts", symbols, world.today + dt.timedelta(days=1), world.advance(30)
    )
    assert revisions  # the sandbox modifies some awards in these 30 days
    report = lake.sync("government_contracts", symbols, progress=False)
    assert report.versions_added == len({r.key["awardId"] for r in revisions})
    latest = lake.read("government_contracts", symbols).set_index("award_id")
    old = lake.read("government_contracts", symbols, known_at=synced)
    pd.testing.assert_frame_equal(old, before)  # as known then
    history = lake.read("government_contracts", symbols, history=True)
    for rev in revisions:
        award = rev.key["awardId"]
        assert latest.loc[award, "award_amount"] == rev.after
        assert before.set_index("award_id").loc[award, "award_amount"] == rev.before
        versions = history[history["award_id"] == award]
        assert versions["award_amount"].tolist()[0] == rev.before  # both kept, oldest first
        assert versions["award_amount"].tolist()[-1] == rev.after
    assert len(history) == len(latest) + report.versions_added
    with pytest.warns(md.KnowledgeTimeWarning, match="first synced"):
        early = lake.read("government_contracts", "AAPL", known_at="2000-01-01")
    assert early.empty and list(early.columns) == list(old.columns)


def test_daily_syncs_follow_sentiment_revisions(
    lake: md.Lake, client: md.Client, world: Sandbox
) -> None:
    symbols = ["AAPL", "MSFT", "NVDA"]
    lake.sync("sentiment", symbols, progress=False)
    for _ in range(5):
        world.advance(days=1)
        lake.sync("sentiment", symbols, progress=False)
    expected = md.load_sentiment(symbols, client=client)
    shown = lake.read("sentiment", symbols, start=expected["date"].min())
    pd.testing.assert_frame_equal(without_meta(shown), expected)
    assert len(lake.read("sentiment", symbols)) == len(shown) + 5 * len(symbols)  # aged out
    revised = world.revisions("sentiment", symbols, world.today - dt.timedelta(days=4))
    history = lake.read("sentiment", symbols, history=True)
    assert (history["_version"] > 1).sum() >= len([r for r in revised if r.before is not None])


def test_forecast_snapshots_accumulate_as_the_clock_moves(lake: md.Lake, world: Sandbox) -> None:
    lake.sync("forecast", ["AAPL", "MSFT"], progress=False)
    first = lake.read("forecast", ["AAPL", "MSFT"])
    world.advance(days=3)  # a Friday to a Monday: the daily forecast rolls by a trading day
    lake.sync("forecast", ["AAPL", "MSFT"], progress=False)
    history = lake.read("forecast", ["AAPL", "MSFT"], history=True)
    assert history.groupby(["symbol", "type"], observed=True)["_version"].nunique().eq(2).all()
    latest = lake.read("forecast", ["AAPL", "MSFT"])
    assert latest["date"].min() > first["date"].min()  # rolled forward
    assert len(latest) == len(first)  # the whole latest snapshot, nothing merged
    known = lake.read("forecast", ["AAPL", "MSFT"], known_at=first["_fetched_at"].max())
    pd.testing.assert_frame_equal(known, first)


def test_as_of_applies_point_in_time(lake: md.Lake) -> None:
    lake.sync("insider_trading", ["AAPL"], progress=False)
    full = lake.read("insider_trading", "AAPL")
    cut = full["filing_date"].sort_values().iloc[len(full) // 2]
    got = lake.read("insider_trading", "AAPL", as_of=cut)
    assert (got["filing_date"] <= cut).all()
    assert len(got) == (full["filing_date"] <= cut).sum()


def test_read_filters_and_columns(lake: md.Lake) -> None:
    lake.sync("sentiment", ["AAPL", "MSFT"], progress=False)
    got = lake.read("sentiment", "MSFT", start="2026-10-01", end="2026-10-31", columns=["score"])
    assert list(got.columns) == ["score", "_fetched_at"]
    assert len(got) == 31
    with pytest.raises(md.InvalidParameterError, match="no column"):
        lake.read("sentiment", columns=["nope"])
    with pytest.raises(md.InvalidParameterError, match="holds no"):
        lake.read("lobbying")


def test_bounds_the_statistics_show_every_row_meets_filter_as_before(
    tmp_path: Path, client: md.Client, world: Sandbox
) -> None:
    """A read leaves out a bound the log's statistics show every row meets (no filter set
    up); the statistics keep times to the millisecond, so a bound between a file's
    statistic and its rows' true times must still filter: every read equals the filter."""
    from mdframes.lake.read import _every_row_within, opened
    from mdframes.lake.sync.plan import resolve

    fetched = dt.datetime.combine(world.today, dt.time(12, 0, 0, 700), dt.timezone.utc)
    lake = md.Lake(tmp_path / "lake", client=client, clock=lambda: fetched)
    lake.sync(["sentiment", "forum_mentions"], ["AAPL"], progress=False)
    micro, milli = pd.Timedelta(microseconds=1), pd.Timedelta(milliseconds=1)
    at = pd.Timestamp(fetched)
    for name in ("sentiment", "forum_mentions"):  # a date and a timestamp time column
        full = lake.read(name, "AAPL")
        assert len(full) > 1 and full["_fetched_at"].eq(at).all()
        for known in (at - 200 * micro, at - micro, at, at + micro, at + milli):
            expected = full[full["_fetched_at"] <= known].reset_index(drop=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", md.KnowledgeTimeWarning)
                got = lake.read(name, "AAPL", known_at=known)
            pd.testing.assert_frame_equal(got, expected, check_index_type=False)
        times = full["date"]
        first, last = times.min(), times.max()
        if name == "forum_mentions":
            bounds = [(first - micro, None), (first + micro, None), (None, last - micro)]
            bounds += [(None, last), (None, last + micro), (first, last + milli)]
        else:
            day = pd.Timedelta(days=1)
            bounds = [(first, None), (first + day, None), (None, last), (None, last - day)]
        for start, end in bounds:
            keep = pd.Series(True, index=full.index)
            keep &= True if start is None else times >= start
            keep &= True if end is None else times <= end
            expected = full[keep].reset_index(drop=True)
            got = lake.read(name, "AAPL", start=start, end=end)
            pd.testing.assert_frame_equal(got, expected, check_index_type=False)
    # The shortcut is taken where it may be: a millisecond after the stored times.
    snap = opened(lake.tables.get(resolve("sentiment")))
    assert _every_row_within(snap, "_fetched_at", None, at + milli)
    assert not _every_row_within(snap, "_fetched_at", None, at - 200 * micro)


# --- cross sections and the universe -------------------------------------------------------------


def test_universe_is_stored_and_read_back_per_filter(lake: md.Lake, world: Sandbox) -> None:
    report = lake.sync(["screener/sentiment", "tickers"], region="US", progress=False)
    assert report.complete and report.done == {"tickers": [], "screener/sentiment": []}
    tickers = lake.read("tickers", region="US")
    assert len(tickers) > 20_000 and tickers["symbol"].is_unique
    screen = lake.read("screener/sentiment")
    assert screen.attrs["summary"]["total_tickers"] == len(screen)
    world.clear_log()
    again = lake.sync(["screener/sentiment"], region="US", progress=False)
    assert again.rows_added == 0  # the same cross section adds nothing
    assert lake.info().set_index("dataset").loc["screener/sentiment", "versions"] == len(screen)


def test_a_delisted_symbol_stays_readable(lake: md.Lake, world: Sandbox) -> None:
    from mdframes.sandbox import listing_changes

    change = next(c for c in listing_changes() if c.date > world.today and c.event == "delisted")
    symbol = change.symbol
    lake.sync(["tickers"], market=change.market, progress=False)
    lake.sync(["insider_trading"], [symbol], progress=False)
    stored = lake.read("insider_trading", symbol)
    assert len(stored)
    listed_then = lake.read("tickers", market=change.market)
    world.set_today(change.date + dt.timedelta(days=1))
    lake.sync(["tickers"], market=change.market, progress=False)
    now = lake.read("tickers", market=change.market)
    assert symbol in set(listed_then["symbol"]) and symbol not in set(now["symbol"])
    past = lake.read("tickers", market=change.market, known_at=listed_then["_fetched_at"].max())
    assert symbol in set(past["symbol"])  # no survivorship bias
    pd.testing.assert_frame_equal(lake.read("insider_trading", symbol), stored)


# --- failures, budget, rate limits, the lock -----------------------------------------------------


def test_unknown_and_forbidden_symbols_fail_and_are_retried(
    lake: md.Lake, world: Sandbox, tmp_path: Path
) -> None:
    report = lake.sync("insider_trading", ["AAPL", "NEWCO"], progress=False)
    assert set(report.failed["insider_trading"]) == {"NEWCO"}
    assert "404" in report.failed["insider_trading"]["NEWCO"] and "NEWCO" in str(report)
    assert report.exit_code() == 1
    world.extra_symbols.add("NEWCO")  # listed now
    world.clear_log()
    retry = lake.sync("insider_trading", ["AAPL", "NEWCO"], progress=False)
    assert retry.complete and [r.path for r in world.requests] == [
        "/v2/insider-trading/NEWCO"
    ]  # the same run resumed: only the failed symbol was asked again
    assert set(lake.read("insider_trading")["symbol"]) == {"AAPL", "NEWCO"}
    forbidden = md.Client(api_key="forbidden-key", base_url=world.url, cache=False)
    denied = md.Lake(tmp_path / "other", client=forbidden).sync("sentiment", "AAPL", progress=False)
    assert "403" in denied.failed["sentiment"]["AAPL"]


@pytest.mark.parametrize("budget", [6, 7, 9])
def test_budget_then_resume_equals_an_uninterrupted_run(
    tmp_path: Path, client: md.Client, world: Sandbox, budget: int
) -> None:
    datasets = ["insider_trading", "congress_trades", "forecast"]
    symbols = ["AAPL", "MSFT", "NVDA", "0700"]
    # Several threads, and congress units of two requests sent from the loader's own threads:
    # wherever the budget falls, a unit that started finishes (it reserved both requests), so
    # nothing is asked twice and the pending estimate is exact.
    client = client.replace(max_workers=4)
    whole = md.Lake(tmp_path / "whole", client=client)
    full = whole.sync(datasets, symbols, progress=False)
    assert full.complete
    parts = md.Lake(tmp_path / "parts", client=client)
    world.clear_log()
    first = parts.sync(datasets, symbols, budget=budget, progress=False)
    assert first.requests <= budget and world.count() == first.requests
    assert first.pending and first.exit_code() == 3 and "budget" in str(first)
    assert first.requests_left_estimate == full.requests - first.requests
    second = parts.sync(datasets, symbols, budget=100, progress=False)
    assert second.complete
    assert first.requests + second.requests == full.requests  # nothing asked twice
    for name in datasets:
        a = whole.read(name, history=True).drop(columns=["_fetched_at", "_sync_id"])
        b = parts.read(name, history=True).drop(columns=["_fetched_at", "_sync_id"])
        pd.testing.assert_frame_equal(a, b)


def test_a_unit_that_started_finishes_when_the_budget_refuses_the_next(client: md.Client) -> None:
    """The cut that made a resumed sync ask a congress chamber again, made to happen every
    time: a unit of two requests has sent one when the next unit is refused for budget."""

    from mdframes.lake.sync.pacer import Pacer, SyncStopped, sync_client

    pacer = Pacer(budget=3, wait=False)
    paced = sync_client(client, pacer, wait=False)
    first_sent, refused = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def unit() -> None:
        work = pacer.begin(2)
        try:
            md.load_sentiment("AAPL", client=paced)
            first_sent.set()
            refused.wait(10)
            outcome["second"] = len(md.load_sentiment("MSFT", client=paced))
        except SyncStopped as exc:
            outcome["second"] = exc
        finally:
            pacer.end(work)

    runner = threading.Thread(target=unit)
    runner.start()
    assert first_sent.wait(10)
    with pytest.raises(SyncStopped, match="budget of 3"):
        pacer.begin(2)  # 1 sent + 1 reserved + 2 > 3
    refused.set()
    runner.join(10)
    assert isinstance(outcome["second"], int) and outcome["second"] > 0
    assert pacer.sent == 2 and pacer.in_flight == 0


def test_requests_from_a_loaders_own_threads_are_charged_to_the_unit(client: md.Client) -> None:
    """congress_trades asks both chambers from the loader's worker threads: both count
    against the unit's reservation, so a unit started beside it is not over-refused."""
    from mdframes.lake.sync.pacer import Pacer, sync_client

    pacer = Pacer(budget=4, wait=False)
    paced = sync_client(client.replace(max_workers=2), pacer, wait=False)
    work = pacer.begin(2)
    try:
        md.load_congress_trades("AAPL", chamber="both", client=paced)
        assert work.sent == 2 and work.open == 0
        other = pacer.begin(2)  # 2 sent + 0 still reserved + 2 <= 4
        pacer.end(other)
    finally:
        pacer.end(work)
    assert pacer.stopped is None and pacer.sent == 2


def test_rate_limit_stops_cleanly_without_wait(tmp_path: Path) -> None:
    with Sandbox(rate_limit=5, rate_window=60) as server, lake_client(server) as client:
        lake = md.Lake(tmp_path / "lake", client=client)
        report = lake.sync("sentiment", ["AAPL", "MSFT", "NVDA", "AMZN", "TSLA", "IBM", "KO"])
        assert report.requests == 5 and report.throttled == 0
        assert (
            report.pending == {"sentiment": ["IBM", "KO"]} or len(report.pending["sentiment"]) == 2
        )
        assert "rate-limit" in (report.stopped or "")
        assert all(r.status == 200 for r in server.requests)


def test_a_window_is_spent_only_once_the_requests_in_flight_have_answered() -> None:
    """Answers are handled out of order across threads, and the service's count may already
    include requests still in flight here: subtracting those again called a window of 5 spent
    after 4 requests (seen under load). Each step runs on a thread of its own, as the fetch
    pool's requests do (the pacer keeps each request's attempt per thread)."""
    from types import SimpleNamespace

    from mdframes.lake.sync.pacer import Pacer, SyncStopped

    pacer = Pacer(budget=None, wait=False)
    reset = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=60)).isoformat()

    def answer(remaining: int) -> SimpleNamespace:
        headers = {"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": str(remaining)}
        return SimpleNamespace(status_code=200, headers={**headers, "X-RateLimit-Reset": reset})

    class Request(threading.Thread):
        """One request: sent at once, answered when told to."""

        def __init__(self) -> None:
            super().__init__(daemon=True)
            self.sent, self.answer_with = threading.Event(), queue.Queue[int]()
            self.error: BaseException | None = None
            self.start()

        def run(self) -> None:
            try:
                pacer.before_send()
            except SyncStopped as exc:
                self.error = exc
                return
            self.sent.set()
            pacer.after_response(answer(self.answer_with.get(timeout=30)))

        def answered(self, remaining: int) -> None:
            self.answer_with.put(remaining)
            self.join(30)

    first = Request()
    assert first.sent.wait(10)
    first.answered(4)
    a, b, c = Request(), Request(), Request()
    assert all(r.sent.wait(10) for r in (a, b, c))
    c.answered(1)  # the service had counted a and b too: 5 - 4
    fifth = Request()
    fifth.join(0.5)
    assert not fifth.sent.is_set() and pacer.stopped is None  # waits for a's and b's answers
    a.answered(3)
    b.answered(2)
    assert fifth.sent.wait(10)
    fifth.answered(0)
    sixth = Request()
    sixth.join(10)
    assert isinstance(sixth.error, SyncStopped) and "window spent" in str(sixth.error)
    assert pacer.sent == 5 and pacer.in_flight == 0


def test_wait_honours_the_rate_limit_across_windows(tmp_path: Path) -> None:
    with Sandbox(rate_limit=3, rate_window=1) as server, lake_client(server) as client:
        lake = md.Lake(tmp_path / "lake", client=client)
        symbols = ["AAPL", "MSFT", "NVDA", "AMZN", "TSLA", "IBM", "KO"]
        report = lake.sync("sentiment", symbols, wait=True, progress=False)
        assert report.complete and report.requests == 7
        assert sum(r.status == 429 for r in server.requests) <= 1


def test_two_syncs_never_interleave(lake: md.Lake) -> None:
    from mdframes.lake.store.lease import open_lease

    held = open_lease(lake.storage.location, owner="a test").hold()
    with held, pytest.raises(LakeBusyError, match="another writer.*a test"):
        lake.sync("sentiment", "AAPL", progress=False)
    assert lake.sync("sentiment", "AAPL", progress=False).complete  # released


def test_bad_arguments_fail_before_any_request(lake: md.Lake, world: Sandbox) -> None:
    world.clear_log()
    bad = [
        ({"datasets": "insider"}, "did you mean"),
        ({"datasets": "sentiment", "symbols": ["AA PL"]}, "invalid symbol"),
        (
            {"datasets": "sentiment", "symbols": "A", "start": "2026-02-01", "end": "2026-01-01"},
            "after",
        ),
        ({"datasets": "sentiment", "symbols": "A", "budget": -1}, "budget"),
        ({"datasets": "sentiment"}, "need symbols"),
        ({"datasets": "screener/sentiment"}, "market"),
    ]
    for kwargs, message in bad:
        with pytest.raises(md.InvalidParameterError, match=message):
            lake.sync(progress=False, **kwargs)
    assert world.count() == 0


def test_bad_read_arguments_fail_before_the_lake_is_read(lake: md.Lake) -> None:
    """A read's arguments are checked once (a ``ReadRequest``) before any table opens: the
    lake holds nothing here, and each bad argument is named rather than that."""
    bad = [
        ({"history": 1}, "history"),
        ({"version": -1}, "version"),
        ({"columns": "symbol"}, "columns"),
        ({"columns": ["symbol", "symbol"]}, "columns"),
        ({"symbols": ["AA PL"]}, "symbol"),
    ]
    for kwargs, parameter in bad:
        with pytest.raises(md.InvalidParameterError) as caught:
            lake.read("insider_trading", **kwargs)
        assert caught.value.parameter == parameter, kwargs


# --- layout, engines, SQL, compaction, info ------------------------------------------------------


def test_layout_only_finished_data_files_end_in_parquet(lake: md.Lake) -> None:
    lake.sync(["screener/put-call-ratio", "congress_trades"], ["AAPL"], progress=False)
    folder = Path(lake.path("screener/put_call_ratio"))
    assert folder.name == "screener__put-call-ratio"
    for path in Path(lake.root).rglob("*"):
        # Files in a hidden folder (the Delta log, the ledger) are hidden from engines too.
        hidden = any(p.startswith(("_", ".")) for p in path.relative_to(lake.root).parts[:-1])
        if path.is_file() and not path.name.endswith(".parquet") and not hidden:
            assert path.name.startswith(("_", ".")), path
    manifest = (Path(lake.path("congress_trades")) / MANIFEST).read_text()
    assert '"format": 2' in manifest and '"owner": "category"' in manifest
    assert (Path(lake.path("congress_trades")) / "_delta_log").is_dir()  # a Delta table


def test_duckdb_and_pyarrow_read_the_same_rows_with_identifiers_intact(lake: md.Lake) -> None:
    import duckdb

    lake.sync("insider_trading", SYMBOLS, progress=False)
    mine = lake.read("insider_trading", history=True)
    files = lake.files("insider_trading")
    arrow = pads.dataset(files).to_table().to_pandas()
    duck = duckdb.read_parquet(files).to_arrow_table().to_pandas()
    for other in (arrow, duck):
        assert len(other) == len(mine)
        assert set(other["symbol"]) == {"AAPL", "0700", "MSFT"}
        key = ["symbol", "date", "insider", "shares", "total_value"]
        left = mine[key].astype(str).sort_values(key).reset_index(drop=True)
        right = other[key].astype({"date": "datetime64[ns]"}).astype(str)
        pd.testing.assert_frame_equal(left, right.sort_values(key).reset_index(drop=True))


def test_sql_views_latest_and_history(lake: md.Lake, world: Sandbox) -> None:
    symbols = list(KNOWN_SYMBOLS[:8])
    lake.sync("government_contracts", symbols, progress=False)
    world.advance(days=30)
    report = lake.sync("government_contracts", symbols, progress=False)
    assert report.versions_added > 0
    latest = lake.sql("select * from government_contracts order by symbol, award_id")
    history = lake.sql("select count(*) as n from government_contracts_history")
    assert len(latest) == len(lake.read("government_contracts"))
    assert history["n"][0] == len(latest) + report.versions_added
    mine = lake.read("government_contracts").sort_values(["symbol", "award_id"])
    assert latest["award_amount"].tolist() == mine["award_amount"].tolist()
    assert latest["award_id"].dtype == "string" and latest["start_date"].dtype == "datetime64[ns]"


def test_compact_changes_no_read_result(lake: md.Lake, world: Sandbox) -> None:
    for _ in range(3):
        lake.sync(["congress_trades", "forecast"], ["AAPL", "MSFT"], progress=False)
        world.advance(days=7)
    before = {n: lake.read(n, history=True) for n in ("congress_trades", "forecast")}
    latest = lake.read("congress_trades", known_at=before["congress_trades"]["_fetched_at"].max())
    files = lake.info().set_index("dataset")["files"]
    assert files["forecast"] == 3
    assert lake.compact() == {n: (files[n], 1) for n in ("congress_trades", "forecast")}
    for name, frame in before.items():
        pd.testing.assert_frame_equal(lake.read(name, history=True), frame)
    pd.testing.assert_frame_equal(
        lake.read("congress_trades", known_at=before["congress_trades"]["_fetched_at"].max()),
        latest,
    )
    assert lake.info().set_index("dataset").loc["forecast", "files"] == 1


def test_info_describes_each_dataset(lake: md.Lake) -> None:
    lake.sync(["insider_trading", "forecast"], ["AAPL", "MSFT"], progress=False)
    info = lake.info()
    assert list(info.columns) == [
        "dataset",
        "rows",
        "versions",
        "symbols",
        "first",
        "last",
        "last_sync",
        "files",
        "bytes",
    ]
    row = info.set_index("dataset").loc["insider_trading"]
    assert row["rows"] == len(lake.read("insider_trading")) == row["versions"]
    assert row["symbols"] == 2 and row["files"] == 1 and row["bytes"] > 0
    assert row["first"] <= row["last"] and row["last_sync"].tzinfo is not None


def test_docs_state_every_lookback_as_the_registry_declares_it() -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "lake.md").read_text()
    windowed = [name for name, ds in REGISTRY.items() if ds.lake == "window"]
    for name in windowed:
        row = next(ln for ln in page.splitlines() if ln.startswith("| ") and f"`{name}`" in ln)
        assert f"| {REGISTRY[name].lookback} |" in row, name
    for name, ds in REGISTRY.items():
        if ds.lake and ds.scope == "symbol":
            assert any(f"`{name}`" in ln for ln in page.split("## Knowledge time")[1].splitlines())


def test_feature_panels_read_from_the_lake_as_from_the_service(
    lake: md.Lake, client: md.Client, world: Sandbox
) -> None:
    symbols = ["AAPL", "MSFT"]
    names = ["insider_net_value_90d", "congress_net_buy_90d", "sentiment_mean_7d"]
    lake.sync(["insider_trading", "congress_trades", "sentiment"], symbols, progress=False)
    synced = lake.clock()
    end = world.today
    from_lake = md.features.panel(symbols, "2026-09-01", end, names, source=lake)
    from_service = md.features.panel(symbols, "2026-09-01", end, names, client=client)
    pd.testing.assert_frame_equal(from_lake, from_service)
    world.advance(days=7)
    lake.sync(["insider_trading", "congress_trades", "sentiment"], symbols, progress=False)
    as_known = md.features.panel(symbols, "2026-09-01", end, names, source=lake, known_at=synced)
    pd.testing.assert_frame_equal(as_known, from_lake)  # later syncs change nothing then
