"""Every fact about one dataset lives in its registry entry: a dataset added at run time with
a legal deadline, an event column, a history start and a lake fan-out is read by every part
that needs those facts, with no other file touched.

The ``widgets`` fixture adds the entry (and serves it from a fresh sandbox). Each consumer
proves it reads the entry in its own section below: point-in-time here; panels and lake plans
in the sections marked for them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest

import mdframes as md
from mdframes.registry import DATE_RANGE, REGISTRY, Dataset, Deadline, Field, Param, get
from mdframes.sandbox import Sandbox

from .conftest import KEY

WIDGET_RULE = Deadline(
    "date", 10, business_days=False, rule="a rule that exists only in this test", slack_days=30
)
WIDGETS = Dataset(
    name="widgets",
    path="/v2/widgets/{symbol}",
    params=(Param("colour", "colour", "choice", choices=("red", "blue"), default="red"),)
    + DATE_RANGE,
    records="widgets",
    header=(Field("symbol", nullable=False), Field("name")),
    fields=(
        Field("date", "date"),
        Field("widgetId"),
        Field("publishedDate", "date"),
        Field("size", "int", ge=1, le=9),
    ),
    record_id=("symbol", "widget_id"),
    anchor="published_date",
    deadline=WIDGET_RULE,
    history_start="2026-01-05",
    filter_field="date",
    lake="window",
    lookback=5,
    lake_fanout={"colour": ("red", "blue")},
    description="A dataset with a deadline that exists only in this test.",
)


@pytest.fixture
def widgets(monkeypatch: pytest.MonkeyPatch) -> Iterator[md.Client]:
    """The ``widgets`` entry in the registry, and a client of a sandbox that serves it."""
    monkeypatch.setitem(REGISTRY, WIDGETS.name, WIDGETS)
    with Sandbox() as server, md.Client(api_key=KEY, base_url=server.url, cache=False) as client:
        yield client


def test_the_entry_declares_its_facts(widgets: md.Client) -> None:
    ds = get("widgets")
    assert ds.deadline is WIDGET_RULE and ds.event == "date"  # the event defaults to the rule's
    assert ds.history_start == "2026-01-05"
    assert ds.lake_variants() == [({"colour": "red"}, 1), ({"colour": "blue"}, 1)]
    assert ds.base == "widgets"
    df = md.load("widgets", ["AAPL"], client=widgets, start="2026-01-05")
    assert len(df) > 0 and df.attrs["dataset"] == "widgets"


# --- point in time ----------------------------------------------------------------------------


def test_point_in_time_uses_the_entrys_deadline(widgets: md.Client) -> None:
    df = md.load("widgets", ["AAPL"], client=widgets, start="2026-01-05").head(3).copy()
    df["date"] = pd.to_datetime(["2026-01-01", "2026-01-02", "2026-01-03"]).astype(df["date"].dtype)
    df["published_date"] = pd.to_datetime(["2026-01-01", None, None]).astype(
        df["published_date"].dtype
    )
    # No published date: public 10 calendar days after the event (the entry's rule).
    assert md.pit.public_times(df).tolist()[1:] == list(
        pd.to_datetime(["2026-01-12", "2026-01-13"])
    )
    known = md.point_in_time(df, "2026-01-12")
    assert known["date"].tolist() == list(pd.to_datetime(["2026-01-01", "2026-01-02"]))
    assert known.attrs["imputed_anchors"] == 1
    assert md.point_in_time(df, "2026-01-12", null_anchor="drop").attrs["imputed_anchors"] == 0
    assert md.pit.legal_deadline("widgets", "published_date") is WIDGET_RULE


# --- panels (features) -------------------------------------------------------------------------


class _Recorder:
    """A lake-like source that records the window each read asks for."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame, self.starts = frame, []

    def read(self, dataset: str, symbols: object = None, **kw: object) -> pd.DataFrame:
        self.starts.append(kw.get("start"))
        return self.frame


def test_a_panel_reads_the_entrys_slack_history_start_and_event(widgets: md.Client) -> None:
    import datetime as dt

    from mdframes.features import Feature

    count = Feature("widgets_90d", "widgets", agg="count", window=90)
    size = Feature("widget_size", "widgets", value="size", agg="last", window=None)
    # From the service: nothing before the entry's history start, NA there, coverage says so.
    got = md.features.panel(["AAPL"], "2025-12-01", "2026-04-30", [size, count], client=widgets)
    before = got.loc[:"2026-01-04"]
    assert before["widget_size"].isna().all() and before["widgets_90d"].isna().all()
    assert got.attrs["coverage"]["widget_size"]["first"] >= "2026-01-05"  # ISO text
    # A 90-day count needs its whole window inside the history: from 2026-01-05 + 89 days.
    assert got.loc[:"2026-04-03", "widgets_90d"].isna().all()
    assert got.loc["2026-04-06":, "widgets_90d"].notna().all()
    # The window asked for: 90 days plus the entry's slack (30) back; no lookback: the start.
    frame = md.load("widgets", ["AAPL"], client=widgets, start="2026-01-05")
    recorder = _Recorder(frame)
    md.features.panel(["AAPL"], "2026-06-01", "2026-06-30", [count], source=recorder)
    md.features.panel(["AAPL"], "2026-06-01", "2026-06-30", [size], source=recorder)
    assert recorder.starts == [dt.date(2026, 6, 1) - dt.timedelta(days=120), dt.date(2026, 1, 5)]
    # Rows public at the same moment: the later event (the entry's event column) is the latest,
    # whatever the frame's order.
    tie = frame.head(2).copy()
    tie["published_date"] = pd.to_datetime(["2026-03-02"] * 2).astype(tie["published_date"].dtype)
    tie["date"] = pd.to_datetime(["2026-02-27", "2026-02-20"]).astype(tie["date"].dtype)
    tie["size"] = pd.array([7, 3], dtype=tie["size"].dtype)
    last = md.features.panel("AAPL", "2026-03-02", "2026-03-02", [size], source={"widgets": tie})
    assert last["widget_size"].tolist() == [7]


# --- lake plans: the lake helper adds its test here -------------------------------------------
# It should show that a sync plan of ``widgets`` has one unit per ``lake_variants()`` entry
# with its request estimate, read from the entry.
