"""``lake.changes()``: what the service revised, field by field, against the sandbox's own
record of its in-place revisions (contract amounts, congress amounts re-normalised, owners
and disclosure dates backfilled, sentiment scores), with syncs on simulated days."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import mdframes as md
from mdframes.lake.changes import COLUMNS, changes, key_columns
from mdframes.registry import REGISTRY
from mdframes.sandbox import KNOWN_SYMBOLS, Sandbox

from .conftest import KEY


@pytest.fixture
def world() -> Iterator[Sandbox]:
    with Sandbox(today="2026-09-01") as server:
        yield server


@pytest.fixture
def lake(tmp_path: Path, world: Sandbox) -> Iterator[md.Lake]:
    client = md.Client(api_key=KEY, base_url=world.url, cache=False, backoff_factor=0.01)

    def noon() -> dt.datetime:  # every sync of a simulated day at 12:00 UTC
        return dt.datetime.combine(world.today, dt.time(12), dt.timezone.utc)

    with client:
        yield md.Lake(tmp_path / "lake", client=client, clock=noon)


def _noon(day: dt.date) -> pd.Timestamp:
    return pd.Timestamp(dt.datetime.combine(day, dt.time(12)), tz="UTC")


def test_contract_amounts_revised_in_place_are_changes(lake: md.Lake, world: Sandbox) -> None:
    symbols = list(KNOWN_SYMBOLS[:8])
    day0 = world.today
    lake.sync("government_contracts", symbols, progress=False)
    day30 = world.advance(30)
    revisions = world.revisions("government_contracts", symbols, day0 + dt.timedelta(1), day30)
    assert revisions
    lake.sync("government_contracts", symbols, progress=False)
    ch = lake.changes("government_contracts", symbols)

    assert list(ch.columns) == ["symbol", "award_id", *COLUMNS]
    # An award modified twice in the 30 days is one change between the two versions seen.
    expected = {}
    for rev in revisions:
        award = rev.key["awardId"]
        first = expected.get(award, (rev.before, None))[0]
        expected[award] = (first, rev.after)
    got = {row.award_id: (row.old, row.new) for row in ch.itertuples()}
    assert got == {a: (str(float(b)), str(float(n))) for a, (b, n) in expected.items()}
    assert set(ch["field"]) == {"award_amount"}
    assert (ch["old_fetched_at"] == _noon(day0)).all()
    assert (ch["new_fetched_at"] == _noon(day30)).all()
    history = lake.read("government_contracts", symbols, history=True)
    second = history.loc[history["_fetched_at"] == _noon(day30), "_sync_id"].iloc[0]
    assert (ch["sync_id"] == second).all()

    # (since, until]: a date alone is the end of that day.
    assert len(lake.changes("government_contracts", since=day0)) == len(ch)
    assert len(lake.changes("government_contracts", until=day30)) == len(ch)
    assert lake.changes("government_contracts", since=day30).empty
    assert lake.changes("government_contracts", until=_noon(day30) - pd.Timedelta("1us")).empty
    assert len(
        lake.changes("government_contracts", since=_noon(day30) - pd.Timedelta("1us"))
    ) == len(ch)
    one = ch["symbol"].iloc[0]
    assert set(lake.changes("government_contracts", one)["symbol"]) == {one}


def test_congress_amounts_renormalised_and_backfills_are_changes(
    lake: md.Lake, world: Sandbox
) -> None:
    symbols = list(KNOWN_SYMBOLS[:10])
    day0 = world.today
    lake.sync("congress_trades", symbols, progress=False)
    for _ in range(4):
        world.advance(15)
        lake.sync("congress_trades", symbols, progress=False)
    ch = lake.changes("congress_trades", symbols)
    assert list(ch.columns) == [*key_columns(REGISTRY["congress_trades"].record_id), *COLUMNS]
    assert len(ch) > 0
    assert set(ch["field"]) <= {"amount", "amount_raw", "owner", "disclosure_date"}
    revisions = world.revisions("congress_trades", symbols, day0 + dt.timedelta(1), world.today)
    wire = {"amountRaw": "amount_raw", "disclosureDate": "disclosure_date"}
    revised = {
        (r.symbol, r.key["politician"], str(r.key["date"])[:10], wire.get(r.field, r.field))
        for r in revisions
    }
    for row in ch.itertuples():
        assert (row.symbol, row.politician, f"{row.date:%Y-%m-%d}", row.field) in revised, row
    # Re-normalised: the filed text moves from amount to amount_raw, one record throughout.
    renorm = ch[ch["field"] == "amount_raw"]
    for row in renorm.itertuples():
        assert pd.isna(row.old)
        same = ch[
            (ch["field"] == "amount")
            & (ch["politician"] == row.politician)
            & (ch["date"] == row.date)
            & (ch["new_fetched_at"] == row.new_fetched_at)
        ]
        assert same["old"].tolist() == [row.new]


def test_sentiment_scores_revised_days_later_are_changes(lake: md.Lake, world: Sandbox) -> None:
    symbols = ["AAPL", "MSFT", "NVDA", "TSLA"]
    day0 = world.today
    lake.sync("sentiment", symbols, start=day0 - dt.timedelta(20), progress=False)
    for _ in range(8):
        world.advance(1)
        lake.sync("sentiment", symbols, progress=False)
    ch = lake.changes("sentiment", symbols)
    history = lake.read("sentiment", symbols, history=True)
    held = set(zip(history["symbol"], history["date"].dt.date, strict=True))
    revisions = [
        r
        for r in world.revisions("sentiment", symbols, day0 + dt.timedelta(1), world.today)
        if (r.symbol, dt.date.fromisoformat(str(r.key["date"])[:10])) in held
    ]
    assert revisions  # the sandbox revises about 5 % of days
    expected = {
        (r.symbol, str(r.key["date"])[:10], str(r.before), str(r.after), _noon(r.on))
        for r in revisions
    }
    got = {
        (row.symbol, f"{row.date:%Y-%m-%d}", row.old, row.new, row.new_fetched_at)
        for row in ch.itertuples()
    }
    assert got == expected
    assert set(ch["field"]) == {"score"}
    assert ch["new_fetched_at"].is_monotonic_increasing


def test_nothing_revised_gives_the_empty_frame_with_every_column(
    lake: md.Lake, world: Sandbox
) -> None:
    lake.sync("insider_trading", ["AAPL"], progress=False)
    world.advance(2)
    lake.sync("insider_trading", ["AAPL"], progress=False)
    ch = lake.changes("insider_trading")
    assert ch.empty
    assert list(ch.columns) == [*key_columns(REGISTRY["insider_trading"].record_id), *COLUMNS]
    assert str(ch["new_fetched_at"].dtype) == "datetime64[us, UTC]"
    assert ch["symbol"].dtype == "string"


@pytest.mark.parametrize(
    ("dataset", "options", "match"),
    [
        ("forecast", {}, "snapshots"),
        ("screener/sentiment", {}, "snapshots"),
        ("tickers", {}, "snapshots"),
        ("no_such", {}, "unknown"),
        ("sentiment", {"since": "yesterday-ish"}, "since"),
        ("sentiment", {"since": "2026-10-02", "until": "2026-10-01"}, "before"),
    ],
)
def test_bad_arguments_raise_before_the_lake_is_read(
    tmp_path: Path, dataset: str, options: dict[str, str], match: str
) -> None:
    lake = md.Lake(tmp_path / "lake")
    with pytest.raises(md.InvalidParameterError, match=match):
        lake.changes(dataset, **options)
    assert not (tmp_path / "lake").exists() or not any((tmp_path / "lake").iterdir())


def test_changes_over_a_history_frame_alone() -> None:
    t = pd.to_datetime(["2026-10-01 12:00", "2026-10-02 12:00", "2026-10-03 12:00"], utc=True)
    history = pd.DataFrame(
        {
            "symbol": pd.array(["A", "A", "A", "B"], dtype="string"),
            "date": pd.to_datetime(["2026-09-30"] * 4),
            "score": [0.1, 0.1, 0.30000000000000004, 0.5],
            "owner": pd.Categorical([None, "SP", "SP", None]),
            "count": pd.array([1, 1, None, 2], dtype="Int64"),
            "_fetched_at": [t[0], t[1], t[2], t[0]],
            "_sync_id": pd.array(["s1", "s2", "s3", "s1"], dtype="string"),
        }
    )
    ch = changes(history.iloc[::-1], ("symbol", "date"))  # any row order
    assert ch[["field", "old", "new", "sync_id"]].astype(object).where(
        ch.notna(), None
    ).values.tolist() == [
        ["owner", None, "SP", "s2"],
        ["score", "0.1", "0.30000000000000004", "s3"],
        ["count", "1", None, "s3"],
    ]
    assert ch["date"].tolist() == [pd.Timestamp("2026-09-30")] * 3
    assert changes(history, ("symbol", "date"), since="2026-10-02").shape[0] == 2


def test_rows_another_program_appended_are_no_changes(lake: md.Lake, world: Sandbox) -> None:
    """Copies of every row appended through the plain ``deltalake`` package (as in
    tests/lake_damage.py) change nothing ``changes()`` reports before ``repair()``."""
    from deltalake import DeltaTable, write_deltalake

    symbols = list(KNOWN_SYMBOLS[:8])
    lake.sync("government_contracts", symbols, progress=False)
    world.advance(30)
    lake.sync("government_contracts", symbols, progress=False)
    before = lake.changes("government_contracts", symbols)
    assert len(before)
    table = DeltaTable(lake.path("government_contracts"))
    write_deltalake(table, table.to_pyarrow_table(), mode="append")
    after = md.Lake(lake.root).changes("government_contracts", symbols)
    pd.testing.assert_frame_equal(after, before)
