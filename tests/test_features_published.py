"""A panel reads a dataset whose rows become public after their event (insider Form 4s,
congress disclosures) by when its rows became public, not by their event date: a Form 4
filed more than a year late (the sandbox's ``late_filing`` quirk) counts in the windows it
was filed in, as a panel of the whole history counts it, while the read skips the row
groups public long before the windows."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pandas as pd
import pytest

import mdframes as md
from mdframes.lake.sync.plan import read_request
from mdframes.pit import public_times
from mdframes.sandbox import Sandbox

from .conftest import KEY

TODAY = dt.date(2026, 11, 30)
SYMBOLS = ["AAPL", "MSFT", "NVDA", "JPM", "XOM", "KO", "INTC", "IBM"]
START, END = "2026-06-01", "2026-11-27"
FEATURES = [
    "insider_buy_count_90d",
    "insider_net_value_90d",
    md.features.Feature("insider_shares_90d", "insider_trading", "shares", "90D"),
]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[md.Lake]:
    root = tmp_path_factory.mktemp("published") / "lake"
    with Sandbox(today=TODAY, quirks=["late_filing"]) as server:
        client = md.Client(api_key=KEY, base_url=server.url, cache=False, progress=False)
        # The lake's clock: noon of the sandbox's day. The sandbox's own clock takes the time
        # of day from the machine: a run after 23:00 UTC synced after the test's known_at.
        noon = dt.datetime.combine(TODAY, dt.time(12), tzinfo=dt.timezone.utc)
        with client:
            md.Lake(root, client=client, clock=lambda: noon).sync(
                "insider_trading", SYMBOLS, start="2024-12-01", progress=False
            )
    yield md.Lake(root)


def test_a_form_4_filed_over_a_year_late_counts_in_the_windows_it_was_filed_in(
    lake: md.Lake,
) -> None:
    every = lake.read("insider_trading", SYMBOLS)
    public = public_times(every).dt.date
    first = dt.date.fromisoformat(START) - dt.timedelta(days=90)
    slack = md.registry.get("insider_trading").deadline.slack_days
    # Rows a read by transaction date from the windows' start less the slack misses.
    late = every[(every["date"].dt.date < first - dt.timedelta(days=slack)) & (public >= first)]
    assert len(late) and (late["filing_date"].dt.date <= dt.date.fromisoformat(END)).any()
    whole = md.features.panel(SYMBOLS, START, END, FEATURES, source={"insider_trading": every})
    missed = every.drop(index=late.index)
    assert not whole.equals(
        md.features.panel(SYMBOLS, START, END, FEATURES, source={"insider_trading": missed})
    )  # the late rows count
    pd.testing.assert_frame_equal(
        md.features.panel(SYMBOLS, START, END, FEATURES, source=lake), whole
    )
    # After the one sync, and per row (what that sync fetched is known from the start).
    for known in ("2026-11-30T23:00:00Z", "row"):
        pd.testing.assert_frame_equal(
            md.features.panel(SYMBOLS, START, END, FEATURES, source=lake, known_at=known),
            whole,
            obj=known,
        )


def test_the_read_by_publication_holds_every_row_public_from_its_date(lake: md.Lake) -> None:
    every = lake.read("insider_trading", SYMBOLS)
    since = dt.date(2026, 3, 1)
    wanted = every[(public_times(every).dt.date >= since) & (every["date"].dt.date <= TODAY)]
    got = lake.panels.read_published(
        read_request("insider_trading", SYMBOLS, end=TODAY, public_from=since)
    )
    keys = ["symbol", "date", "insider", "transaction_type", "shares", "price_per_share"]
    inner = wanted[keys].merge(got[keys], how="left", indicator=True)
    assert (inner["_merge"] == "both").all() and len(got) < len(every)
