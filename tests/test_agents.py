"""``mdframes agent-server`` (CONTRACT §15): tools that cannot see past their clamp.

One lake is built per module with a planted future: synced on day 1 and on day 2 of the
sandbox's moving clock (day 2 revises a sentiment score of day 1's lake and adds records),
plus a put/call ratio the lake fetched on day 1 from a service a day ahead (fetched before
the clamp, public after it). A copy of the lake as day 1 left it is the truth: with the
clamp between the days, every answer of the full lake must equal the copy's and hold nothing
fetched or public after the clamp. The server runs as a real subprocess, spoken to with the
``mcp`` package's stdio client.
"""

from __future__ import annotations

import datetime as dt
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mdframes as md
from mdframes.agents import ClampedLake, Clock, ClockError, ToolError, Tools, public_by
from mdframes.sandbox import Sandbox

from .conftest import KEY

pytest.importorskip("mcp", reason="the agents extra (mcp) is not installed")

D1 = dt.date(2026, 9, 1)
D2 = D1 + dt.timedelta(days=1)
SYMBOLS = ["AAPL", "AMZN", "MSFT"]  # AMZN's score of 2026-08-31 is revised on D2
DATASETS = ["sentiment", "insider_trading", "news", "forecast", "tickers"]
CLAMP = pd.Timestamp("2026-09-01T18:00", tz="UTC")  # between the two days' syncs
LATER = pd.Timestamp("2026-09-02T18:00", tz="UTC")  # after day 2's sync


def _at(day: dt.date, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(hour, minute), dt.timezone.utc)


@dataclass
class Planted:
    world: Sandbox
    root: Path  # synced on both days
    day1: Path  # the same lake as day 1 left it
    noon: Path  # the same lake after day 1's first sync, before put_call_ratio's


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Planted]:
    tmp = tmp_path_factory.mktemp("agents")
    root, day1, noon = tmp / "lake", tmp / "day1", tmp / "noon"
    now = [_at(D1, 12)]
    with Sandbox(today=D1) as world:
        client = md.Client(api_key=KEY, base_url=world.url, cache=False, backoff_factor=0.01)
        with client:
            lake = md.Lake(root, client=client, clock=lambda: now[0])
            start = D1 - dt.timedelta(days=30)
            lake.sync(DATASETS, SYMBOLS, start=start, progress=False)
            shutil.copytree(root, noon)
            # A service a day ahead: a ratio dated D2, fetched at 12:30 on D1.
            world.set_today(D2)
            now[0] = _at(D1, 12, 30)
            lake.sync("put_call_ratio", ["AAPL"], start=start, end=D2, progress=False)
            shutil.copytree(root, day1)
            now[0] = _at(D2, 12)
            lake.sync([*DATASETS, "put_call_ratio"], SYMBOLS, progress=False)
        yield Planted(world, root, day1, noon)


def _plant_is_real(lake: md.Lake) -> None:
    history = lake.read("sentiment", SYMBOLS, history=True)
    amzn = history[(history["symbol"] == "AMZN") & (history["date"] == "2026-08-31")]
    assert amzn["_fetched_at"].tolist() == [pd.Timestamp(_at(D1, 12)), pd.Timestamp(_at(D2, 12))]
    assert amzn["score"].nunique() == 2  # day 2 revised it
    assert (history["date"] == pd.Timestamp(D2)).any()  # and added records
    ratio = lake.read("put_call_ratio", "AAPL", known_at=CLAMP)
    assert (ratio["date"] == pd.Timestamp(D2)).any()  # fetched before the clamp, public after


def test_the_planted_future_is_there_and_the_clamp_hides_it(planted: Planted) -> None:
    lake = md.Lake(planted.root)
    _plant_is_real(lake)
    clamped = ClampedLake(lake, CLAMP)
    history = clamped.read("sentiment", SYMBOLS, history=True)
    assert (history["_fetched_at"] <= CLAMP).all()
    assert history["date"].max() <= pd.Timestamp(D1)
    # The anchor filter is what stops the ratio the lake knew before it was public.
    ratio = clamped.read("put_call_ratio", "AAPL")
    assert ratio["date"].max() == pd.Timestamp(D1)
    assert clamped.read("put_call_ratio", "AAPL", columns=["ratio"]).shape == (len(ratio), 2)
    # Features see the same: the panel of D1 reads the clamped lake only.
    day1 = ClampedLake(md.Lake(planted.day1), CLAMP)
    for name in ("sentiment", "put_call_ratio", "news", "forecast", "tickers"):
        pd.testing.assert_frame_equal(clamped.read(name), day1.read(name))


def test_a_read_ending_by_the_clamp_skips_the_anchor_filter_exactly(planted: Planted) -> None:
    """A read of a dataset dated by its anchor, ending on or before the clamp's date, is
    public by its own bound (the tools' reads all end there): the anchor filter is skipped,
    and the answer is the fully filtered one, on a lake holding rows public after the clamp
    (the ratio dated D2, fetched before the clamp)."""
    from mdframes.agents.clamp import _public_by_bound

    lake = md.Lake(planted.root)
    clamped = ClampedLake(lake, CLAMP)
    for name in ("put_call_ratio", "sentiment"):
        known = lake.read(name, SYMBOLS, known_at=CLAMP)
        if name == "put_call_ratio":  # known at the clamp, public after it
            assert (known["date"] == pd.Timestamp(D2)).any()
        for end in (D1 - dt.timedelta(days=3), D1, D2):
            assert _public_by_bound(name, end, CLAMP) == (end <= D1)
            full = public_by(known[known["date"] <= pd.Timestamp(end)].copy(), name, CLAMP)
            got = clamped.read(name, SYMBOLS, end=end)
            pd.testing.assert_frame_equal(got, full.reset_index(drop=True))
            assert got["date"].max() <= pd.Timestamp(D1)
    # Anchors that are not the time column, or times: never skipped.
    assert not _public_by_bound("insider_trading", D1, CLAMP)  # filing_date
    assert not _public_by_bound("forum_mentions", D1, CLAMP)  # a time of day
    assert not _public_by_bound("sentiment", pd.Timestamp(D1), CLAMP)  # not a date


def test_coverage_as_it_stood_at_the_clamp(planted: Planted) -> None:
    full = ClampedLake(md.Lake(planted.root), CLAMP).coverage(["put_call_ratio"], SYMBOLS)
    day1 = ClampedLake(md.Lake(planted.day1), CLAMP).coverage(["put_call_ratio"], SYMBOLS)
    # AAPL's ratios were synced on day 1 (a window asked up to D2); AMZN's and MSFT's on day 2.
    assert full["status"].astype(str).tolist() == ["synced", "never", "never"]
    assert day1["status"].astype(str).tolist() == ["synced", "never", "never"]
    assert full["gaps"].tolist() == day1["gaps"].tolist() == [[], [], []]
    for table in (full, day1):
        assert table["last"].tolist()[0] == pd.Timestamp(D1)  # never past the clamp's date
        assert table["last_fetched_at"].isna().tolist()[1:] == [True, True]


def test_public_by_keeps_rows_public_at_the_clamp() -> None:
    frame = pd.DataFrame(
        {
            "symbol": ["A", "A", "A", "A"],
            "date": pd.to_datetime(["2026-08-20", "2026-08-28", "2026-08-31", "2026-08-31"]),
            "filing_date": pd.to_datetime(["2026-08-21", "2026-09-02", "2026-09-01", None]),
        }
    )
    kept = public_by(frame, "insider_trading", CLAMP)
    # Filed on the clamp's day: public; filed after it: not; no filing date: public at the
    # legal deadline (2 business days after Monday 2026-08-31: Wednesday), after the clamp.
    assert kept["filing_date"].tolist() == [pd.Timestamp("2026-08-21"), pd.Timestamp(D1)]
    forecast = pd.DataFrame({"date": pd.to_datetime(["2027-01-01"])})
    assert len(public_by(forecast, "forecast", CLAMP)) == 1  # no anchor: public when fetched


def test_answers_carry_every_kind_of_column_as_json_and_csv() -> None:
    """Each column kind becomes JSON values (times as ISO text, missing as null) and the
    CSV cells say the same, converted column by column."""
    import csv
    import io
    import json

    import numpy as np

    from mdframes.agents import Answer

    stamps = ["2026-08-31T10:00:00.123456789Z", None, "2026-09-01T00:00:00Z"]
    frame = pd.DataFrame(
        {
            "fetched": pd.to_datetime(stamps, utc=True, format="ISO8601"),
            "local": pd.to_datetime(stamps, utc=True, format="ISO8601").tz_convert("Asia/Tokyo"),
            "day": pd.to_datetime(["2026-08-31", None, "2026-08-31"]),
            "when": pd.to_datetime(["2026-08-31", "2026-08-31T12:30", None], format="ISO8601"),
            "x": [1.5, np.nan, np.inf],
            "y": pd.array([1.5, None, 2.0], dtype="Float64"),
            "n": [1, 2, 3],
            "m": pd.array([1, None, 3], dtype="Int64"),
            "ok": pd.array([True, None, False], dtype="boolean"),
            "text": pd.array(["a", None, 'b,"c"'], dtype="string"),
            "kind": pd.Categorical(["p", None, "p"]),
            "cells": [["x", "y"], None, {"k": 1}],
            "mixed": ["t", np.int64(3), pd.Timedelta(seconds=1)],
        }
    )
    answer = Answer("read", CLAMP, frame, 10)
    rows = answer.structured()["rows"]
    assert [list(r.values()) for r in rows] == [
        # fmt: off
        [
            "2026-08-31T10:00:00.123456Z",
            "2026-08-31T10:00:00.123456Z",
            "2026-08-31",
            "2026-08-31T00:00:00.000000",
            1.5,
            1.5,
            1,
            1,
            True,
            "a",
            "p",
            "['x', 'y']",
            "t",
        ],
        [
            None,
            None,
            None,
            "2026-08-31T12:30:00.000000",
            None,
            None,
            2,
            None,
            None,
            None,
            None,
            None,
            3,
        ],
        [
            "2026-09-01T00:00:00.000000Z",
            "2026-09-01T00:00:00.000000Z",
            "2026-08-31",
            None,
            None,
            2.0,
            3,
            3,
            False,
            'b,"c"',
            "p",
            "{'k': 1}",
            "0 days 00:00:01",
        ],
        # fmt: on
    ]
    json.dumps(rows, allow_nan=False)  # every value JSON can carry
    table = list(csv.reader(io.StringIO(answer.text().split("\n", 1)[1])))
    assert table[0] == list(frame.columns)
    assert table[1:] == [["" if v is None else str(v) for v in r.values()] for r in rows]


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("datasets", {}),
    ("read", {"dataset": "sentiment"}),
    (
        "read",
        {"dataset": "sentiment", "symbols": "AMZN", "start": "2026-08-25", "end": "2026-12-31"},
    ),
    ("read", {"dataset": "put_call_ratio", "symbols": ["AAPL"], "end": "2026-09-05"}),
    ("read", {"dataset": "news", "columns": ["symbol", "headline"], "limit": 3}),
    ("read", {"dataset": "forecast", "symbols": "MSFT", "limit": 5}),
    ("read", {"dataset": "tickers", "limit": 5, "end": "2026-09-30"}),
    ("read", {"dataset": "sentiment", "start": "2026-09-02"}),
    ("features", {"symbols": SYMBOLS}),
    ("features", {"symbols": ["AMZN", "AAPL"], "date": "2026-09-30"}),
    ("search", {"text": "amazon"}),
    ("search", {"text": "news"}),
    ("changes", {"dataset": "sentiment"}),
    ("changes", {"dataset": "sentiment", "symbols": "AMZN", "since": "2026-08-01"}),
    ("changes", {"dataset": "sentiment", "since": "2026-10-01"}),
]

NOON_CALLS = [
    *CALLS,
    ("read", {"dataset": "put_call_ratio"}),
    ("changes", {"dataset": "put_call_ratio"}),
    ("features", {"symbols": ["AAPL"], "features": ["put_call_ratio_last"]}),
    ("search", {"text": "put call"}),
]


def _answer(tools: Tools, name: str, args: dict[str, Any]) -> dict[str, Any]:
    try:
        return tools.call(name, args).structured()
    except ToolError as exc:
        return {"error": str(exc)}


def _no_row_after(answer: dict[str, Any], clamp: pd.Timestamp) -> None:
    """Nothing fetched after ``clamp``, and no record public after it (forecasts aside:
    their dates are the future they forecast, public when fetched)."""
    for row in answer.get("rows", []):
        fetched = row.get("_fetched_at") or row.get("new_fetched_at")
        if fetched is not None:
            assert pd.Timestamp(fetched) <= clamp, row
        if "public_at" in row:  # a `datasets` row
            if row["public_at"] != "_fetched_at" and row["last"] is not None:
                assert pd.Timestamp(row["last"]).date() <= clamp.date(), row
            continue
        for column in ("date", "filing_date"):
            value = row.get(column)
            if isinstance(value, str) and "type" not in row and "mid" not in row:
                assert pd.Timestamp(value).date() <= clamp.date(), row


@pytest.mark.parametrize(
    ("name", "args"), CALLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CALLS)]
)
def test_every_tool_answers_as_the_lake_of_day_one(
    planted: Planted, name: str, args: dict[str, Any]
) -> None:
    full = Tools(md.Lake(planted.root), Clock(CLAMP))
    day1 = Tools(md.Lake(planted.day1), Clock(CLAMP))
    answer = _answer(full, name, args)
    assert "error" not in answer, answer
    assert answer == _answer(day1, name, args)
    _no_row_after(answer, CLAMP)


@pytest.mark.parametrize(
    ("name", "args"), NOON_CALLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(NOON_CALLS)]
)
def test_a_dataset_first_synced_after_the_clamp_does_not_exist(
    planted: Planted, name: str, args: dict[str, Any]
) -> None:
    """Clamped between day 1's first sync and put_call_ratio's (12:30), every tool answers,
    errors included, as the copy of the lake taken then, which never held put_call_ratio."""
    at = pd.Timestamp(_at(D1, 12, 15))
    full = _answer(Tools(md.Lake(planted.root), Clock(at)), name, args)
    assert full == _answer(Tools(md.Lake(planted.noon), Clock(at)), name, args)
    if name == "datasets":
        assert "put_call_ratio" not in str(full)
    if args.get("dataset") == "put_call_ratio":
        assert full["error"].startswith("the lake holds no put_call_ratio")


def test_a_clamp_before_the_first_sync_names_no_later_time(planted: Planted) -> None:
    early = pd.Timestamp("2026-08-15T10:00", tz="UTC")
    tools = Tools(md.Lake(planted.root), Clock(early))
    for name, args in CALLS:
        answer = _answer(tools, name, args)
        text = str(answer)
        # Every fetch of the lake was at 12:00 or 12:30 on a later day: no answer says so.
        assert "12:00" not in text and "12:30" not in text and "synced at" not in text, text
        assert answer.get("total_rows", 0) == 0 or name == "search", answer


def test_past_the_clamp_is_cut_and_said(planted: Planted) -> None:
    tools = Tools(md.Lake(planted.root), Clock(CLAMP))
    read = tools.call("read", {"dataset": "sentiment", "symbols": "AMZN", "end": "2027-01-01"})
    assert any("after the clamp" in n for n in read.notes)
    assert read.frame["date"].max() == pd.Timestamp(D1)
    feats = tools.call("features", {"symbols": "AMZN", "date": "2027-01-01"})
    assert any("after the clamp" in n for n in feats.notes)
    assert feats.frame["date"].tolist() == [str(D1)]
    since = tools.call("changes", {"dataset": "sentiment", "since": "2026-12-01"})
    assert since.frame.empty and any("clamp" in n for n in since.notes)
    limited = tools.call("read", {"dataset": "sentiment", "limit": 2})
    assert limited.structured()["shown_rows"] == 2
    assert "more row(s) left out (limit=2)" in limited.text()
    # After day 2's sync the revision and the new records are there.
    later = Tools(md.Lake(planted.root), Clock(LATER))
    ch = later.call("changes", {"dataset": "sentiment", "symbols": "AMZN"}).frame
    assert ch["date"].tolist() == [pd.Timestamp("2026-08-31")]
    assert later.call("read", {"dataset": "sentiment"}).frame["date"].max() == pd.Timestamp(D2)


BAD: list[tuple[str, dict[str, Any], str]] = [
    ("read", {"dataset": "no_such"}, "unknown lake dataset"),
    ("read", {}, "required"),
    ("read", {"dataset": "sentiment", "start": "yesterday"}, "not a date"),
    ("read", {"dataset": "sentiment", "symbols": ["A/B"]}, "invalid symbol"),
    ("read", {"dataset": "sentiment", "symbols": [3]}, "strings"),
    ("read", {"dataset": "sentiment", "limit": 0}, "between 1 and"),
    ("read", {"dataset": "sentiment", "limit": 10**6}, "between 1 and"),
    ("read", {"dataset": "sentiment", "columns": ["nope"]}, "no column"),
    ("read", {"dataset": "lobbying"}, "holds no lobbying"),
    ("read", {"dataset": "sentiment", "bogus": 1}, "unknown argument"),
    ("features", {"symbols": "AAPL", "features": ["no_such_feature"]}, "unknown feature"),
    ("features", {"symbols": "AAPL", "date": "2026-13-01"}, "not a date"),
    ("changes", {"dataset": "forecast"}, "snapshots"),
    ("changes", {"dataset": "sentiment", "since": "soon"}, "not a time"),
    ("search", {"text": "   "}, "non-empty"),
    ("nope", {}, "unknown tool"),
]


@pytest.mark.parametrize(("name", "args", "match"), BAD, ids=[b[2] for b in BAD])
def test_bad_arguments_are_tool_errors(
    planted: Planted, name: str, args: dict[str, Any], match: str
) -> None:
    tools = Tools(md.Lake(planted.root), Clock(CLAMP))
    with pytest.raises(ToolError, match=match):
        tools.call(name, args)


def test_the_clock_file_only_moves_forward(tmp_path: Path) -> None:
    clock = tmp_path / "clock.txt"
    clock.write_text("2026-09-01T18:00\n")
    c = Clock(clock_file=clock)
    assert c.current() == CLAMP
    clock.write_text("2026-09-02")
    assert c.current() == pd.Timestamp("2026-09-02T23:59:59.999999", tz="UTC")
    clock.write_text("2026-09-01")
    with pytest.raises(ClockError, match="back"):
        c.current()
    clock.write_text("not a time")
    with pytest.raises(ClockError, match="not a time"):
        c.current()
    clock.write_text("2026-09-03")
    assert c.current().date() == dt.date(2026, 9, 3)
    with pytest.raises(md.InvalidParameterError):
        Clock(as_of="2026-09-01", clock_file=clock)


_DAYS = st.dates(dt.date(2026, 7, 1), dt.date(2027, 1, 31)).map(str)
_TIMES = st.one_of(
    _DAYS,
    st.datetimes(dt.datetime(2026, 8, 1), dt.datetime(2026, 9, 5)).map(
        lambda t: t.strftime("%Y-%m-%dT%H:%M")
    ),
)
_SYMS = st.lists(st.sampled_from([*SYMBOLS, "ZZZZ"]), min_size=1, max_size=3, unique=True)
_DATASET = st.sampled_from([*DATASETS, "put_call_ratio"])
_ARGS = st.one_of(
    st.tuples(st.just("datasets"), st.just({})),
    st.tuples(
        st.just("read"),
        st.fixed_dictionaries(
            {"dataset": _DATASET},
            optional={"symbols": _SYMS, "start": _DAYS, "end": _DAYS, "limit": st.integers(1, 50)},
        ),
    ),
    st.tuples(
        st.just("features"),
        st.fixed_dictionaries({"symbols": _SYMS}, optional={"date": _DAYS}),
    ),
    st.tuples(
        st.just("changes"),
        st.fixed_dictionaries(
            {"dataset": st.sampled_from(["sentiment", "insider_trading", "put_call_ratio"])},
            optional={"symbols": _SYMS, "since": _TIMES},
        ),
    ),
    st.tuples(
        st.just("search"),
        st.fixed_dictionaries(
            {"text": st.sampled_from(["a", "AMZN", "micro", "ratio", "insider"])}
        ),
    ),
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(call=_ARGS)
def test_generated_arguments_never_see_past_the_clamp(
    planted: Planted, call: tuple[str, dict[str, Any]]
) -> None:
    name, args = call
    full = Tools(md.Lake(planted.root), Clock(CLAMP))
    day1 = Tools(md.Lake(planted.day1), Clock(CLAMP))
    answer = _answer(full, name, args)
    assert answer == _answer(day1, name, args)
    _no_row_after(answer, CLAMP)


# --- the server, as a subprocess over stdio ---------------------------------------------------


def _server(planted: Planted, *clamp: str, root: Path | None = None) -> Any:
    from mcp import StdioServerParameters

    package = Path(md.__file__).resolve().parents[1]
    lake = str(planted.root if root is None else root)
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "mdframes", "agent-server", "--lake", lake, *clamp],
        # A key and a service at hand: the server must use neither.
        env={"MDFRAMES_API_KEY": KEY, "MDFRAMES_BASE_URL": planted.world.url},
        cwd=str(package),
    )


def _session(params: Any, script: Any) -> Any:
    import anyio
    from mcp import ClientSession, stdio_client

    async def main() -> Any:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await script(session)

    return anyio.run(main)


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_the_server_over_stdio(planted: Planted, tmp_path: Path) -> None:
    clock = tmp_path / "clock.txt"
    clock.write_text("2026-09-01T18:00")
    before = planted.world.count()
    day1 = Tools(md.Lake(planted.day1), Clock(CLAMP))
    seen: list[str] = []

    async def script(session: Any) -> None:
        listed = await session.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert list(tools) == ["datasets", "read", "features", "search", "changes"]
        assert "filing_date" in tools["datasets"].description  # what public means, per dataset
        assert "sentiment_mean_7d" in tools["features"].description
        assert tools["read"].input_schema["required"] == ["dataset"]
        for name, args in CALLS[:4] + CALLS[8:9] + CALLS[12:13]:
            result = await session.call_tool(name, args)
            seen.append(_text(result))
            assert not result.is_error, _text(result)
            assert result.structured_content == day1.call(name, args).structured()
            _no_row_after(result.structured_content, CLAMP)
            assert _text(result) == day1.call(name, args).text()
        for name, args, match in BAD[:6]:
            result = await session.call_tool(name, args)
            seen.append(_text(result))
            assert result.is_error and match in _text(result)
        # The clock moves forward: day 2 shows.
        clock.write_text("2026-09-02T18:00")
        result = await session.call_tool("read", {"dataset": "sentiment", "symbols": "AMZN"})
        assert result.structured_content["rows"][-1]["date"] == str(D2)
        # Back is an error for that call; the server keeps answering.
        clock.write_text("2026-09-01T18:00")
        result = await session.call_tool("datasets", {})
        assert result.is_error and "back" in _text(result)
        clock.write_text("2026-09-02T18:00")
        result = await session.call_tool("search", {"text": "apple"})
        assert not result.is_error and "AAPL" in _text(result)

    _session(_server(planted, "--clock-file", str(clock)), script)
    assert planted.world.count() == before  # the service saw no request
    assert not any(KEY in text for text in seen)


def _random_calls(count: int, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """Tool calls drawn like the generated ones above, from a seeded generator: the same few
    every run, for the server in its own process (a process per example would be slow)."""
    import random

    rng = random.Random(seed)
    days = [str(D1 + dt.timedelta(days=d)) for d in (-20, -3, 0, 1, 2, 45)]
    out: list[tuple[str, dict[str, Any]]] = []
    for _ in range(count):
        symbols = rng.sample([*SYMBOLS, "ZZZZ"], rng.randint(1, 3))
        name = rng.choice(["read", "features", "changes"])
        if name == "read":
            args: dict[str, Any] = {"dataset": rng.choice([*DATASETS, "put_call_ratio"])}
            args |= {"symbols": symbols, "end": rng.choice(days), "limit": rng.randint(1, 50)}
        elif name == "features":
            args = {"symbols": symbols, "date": rng.choice(days)}
        else:
            args = {"dataset": "sentiment", "symbols": symbols, "since": rng.choice(days)}
        out.append((name, args))
    return out


def test_the_server_with_a_fixed_clamp(planted: Planted) -> None:
    calls = _random_calls(6, seed=30)
    day1 = Tools(md.Lake(planted.day1), Clock(CLAMP))

    async def script(session: Any) -> Any:
        for name, args in calls:
            result = await session.call_tool(name, args)
            expected = _answer(day1, name, args)
            got = {"error": _text(result)} if result.is_error else result.structured_content
            assert got == expected, (name, args)
            _no_row_after(got, CLAMP)
        return await session.call_tool("read", {"dataset": "put_call_ratio", "end": "2026-12-31"})

    result = _session(_server(planted, "--as-of", "2026-09-01T18:00"), script)
    rows = result.structured_content["rows"]
    assert rows and max(r["date"] for r in rows) == str(D1)
    assert "answered up to 2026-09-01" in _text(result)


def test_the_command_refuses_a_missing_lake_and_a_bad_clamp(tmp_path: Path) -> None:
    from mdframes.cli import main

    assert main(["agent-server", "--lake", str(tmp_path / "none"), "--as-of", "2026-09-01"]) == 2
    assert main(["agent-server", "--lake", str(tmp_path), "--as-of", "someday"]) == 2
    missing = str(tmp_path / "no-clock.txt")
    assert main(["agent-server", "--lake", str(tmp_path), "--clock-file", missing]) == 2


@pytest.fixture(scope="module")
def untickered(planted: Planted, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lake of sentiment for AAPL and MSFT only: no ticker list, no AMZN."""
    root = tmp_path_factory.mktemp("untickered") / "lake"
    with Sandbox(today=D1) as world:
        client = md.Client(api_key=KEY, base_url=world.url, cache=False, backoff_factor=0.01)
        with client:
            lake = md.Lake(root, client=client, clock=lambda: _at(D1, 12))
            lake.sync(
                "sentiment", ["AAPL", "MSFT"], start=D1 - dt.timedelta(days=5), progress=False
            )
    return root


def test_the_server_bounds_arguments_and_clock_files(
    planted: Planted, untickered: Path, tmp_path: Path
) -> None:
    """CONTRACT 15.1: a long argument is refused at once while another call is served; a
    clock file holding `now`, or a FIFO in its place, is an error for that call alone; search
    finds a company by the names the records hold; a symbol never synced has a note."""
    import os

    import anyio

    clock = tmp_path / "clock.txt"
    clock.write_text("2026-09-01T18:00")

    async def script(session: Any) -> None:
        answers: dict[str, Any] = {}

        async def ask(key: str, name: str, args: dict[str, Any]) -> None:
            answers[key] = await session.call_tool(name, args)
            answers[key + " at"] = anyio.current_time()

        start = anyio.current_time()
        with anyio.fail_after(60):  # the old server took minutes over this argument
            async with anyio.create_task_group() as group:
                group.start_soon(ask, "long", "read", {"dataset": "x" * 200_000})
                group.start_soon(ask, "other", "datasets", {})
        assert answers["long"].is_error and "at most 1000" in _text(answers["long"])
        assert not answers["other"].is_error
        assert max(answers["long at"], answers["other at"]) - start < 10  # generous: 1 s of CPU
        result = await session.call_tool("read", {"dataset": "news", "symbols": ["x"] * 1001})
        assert result.is_error and "list of 1001 items" in _text(result)
        # At the bounds: a million characters quoted in the error, which is cut.
        big = [f"x{i:04d}" + "y" * 995 for i in range(1000)]
        result = await session.call_tool("features", {"symbols": "AAPL", "features": big})
        assert result.is_error and "unknown feature" in _text(result)
        assert len(_text(result)) < 5000

        for word in ("now", "today"):  # pandas reads them as the wall clock
            clock.write_text(word)
            result = await session.call_tool("datasets", {})
            assert result.is_error and "not a time" in _text(result)
        clock.unlink()
        os.mkfifo(clock)  # no writer ever comes: reading it would block the server
        with anyio.fail_after(30):
            result = await session.call_tool("datasets", {})
        assert result.is_error and "not a regular file" in _text(result)
        clock.unlink()
        clock.write_text("2026-09-01T18:00")

        result = await session.call_tool("search", {"text": "apple"})
        assert result.structured_content["rows"][0]["name"] == "AAPL", _text(result)
        assert result.structured_content["rows"][0]["about"] == "Apple Inc."
        result = await session.call_tool("search", {"text": "microsoft corp"})
        assert [r["name"] for r in result.structured_content["rows"]] == ["MSFT"]
        args = {"dataset": "sentiment", "symbols": ["AAPL", "AMZN"]}
        result = await session.call_tool("read", args)
        notes = result.structured_content["notes"]
        assert any("never synced sentiment for AMZN" in n for n in notes), notes
        result = await session.call_tool("read", {"dataset": "sentiment", "symbols": "AAPL"})
        assert not any("never synced" in n for n in result.structured_content["notes"])

    _session(_server(planted, "--clock-file", str(clock), root=untickered), script)


def test_a_long_error_is_cut_only_after_its_credentials_are_cleaned(
    planted: Planted, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDFRAMES_API_KEY", "sk-" + "k" * 40)
    tools = Tools(md.Lake(planted.root), Clock(CLAMP))
    for at in (3990, 4000, 7990):  # across the cut, and across the end of what is cleaned
        text = tools.clean("a" * at + "sk-" + "k" * 40 + "b" * 20_000)
        assert "sk-k" not in text and "kkkk" not in text and len(text) <= 4004
