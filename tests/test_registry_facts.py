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
    record_id=("widget_id",),
    anchor="published_date",
    deadline=WIDGET_RULE,
    history_start="2026-01-05",
    filter_field="date",
    lake="window",
    lookback=5,
    lake_key=("symbol", "widget_id"),
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


# --- panels (features): the panel helper adds its test here -----------------------------------
# It should show that a panel over ``widgets`` starts its load ``slack_days`` before the window
# and a panel without a lookback at ``history_start``, and ties public times by ``event``.


# --- lake plans: the lake helper adds its test here -------------------------------------------
# It should show that a sync plan of ``widgets`` has one unit per ``lake_variants()`` entry
# with its request estimate, read from the entry.
