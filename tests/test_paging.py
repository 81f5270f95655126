"""Walking a limit-capped window: whatever the page size, wherever a page boundary falls
inside a day, the walked window holds every record (and every date) of the unpaged truth.

The page size is the registry's limit bound, read by the client (the size it asks for) and by
the sandbox (the size it serves and enforces) alike; a test lowers it for every paged dataset
so that a window of ~150 records is walked in many pages, with the first page cut inside the
densest day at each offset in turn. Issue 18: the daily app-ratings view lost every date
older than the first page because a full page looked short.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import pandas as pd
import pytest

import mdframes as md
from mdframes.registry import REGISTRY, Dataset
from mdframes.sandbox import Sandbox

from .conftest import KEY

TODAY = "2026-09-22"  # 20 days of app-ratings history (it begins 2026-09-03)
APP_START = "2026-09-03"
# 150 records a dataset: app ratings get seven apps over all 20 days and one added later.
COUNTS = {"BIGCO": 150}
PAGED = ("lobbying", "government_contracts", "patent_filings", "app_ratings", "app_ratings_daily")


def _paged_at(monkeypatch: pytest.MonkeyPatch, page: int) -> None:
    """Every paged dataset serves and asks for at most ``page`` records a request."""
    for ds in list(REGISTRY.values()):
        if ds.paged:
            params = tuple(
                dataclasses.replace(p, hi=page) if p.name == "limit" else p for p in ds.params
            )
            monkeypatch.setitem(REGISTRY, ds.name, dataclasses.replace(ds, params=params))


def _day_column(ds: Dataset) -> str:
    wire = ds.filter_field or "date"
    return next(f.name for f in ds.all_fields if f.wire == wire)


def _load(name: str, server: Sandbox) -> pd.DataFrame:
    client = md.Client(api_key=KEY, base_url=server.url, cache=False, progress=False)
    with client:
        start = APP_START if name.startswith("app_ratings") else "2000-01-01"
        return md.load(name, "BIGCO", start=start, end=TODAY, client=client)


def _counted_days(name: str, truth: dict[str, pd.DataFrame]) -> Counter[pd.Timestamp]:
    """Records the service counts against `limit`, per day (app-date records for both views)."""
    source = "app_ratings" if name == "app_ratings_daily" else name
    return Counter(truth[source][_day_column(REGISTRY[source])])


@pytest.fixture(scope="module")
def truth() -> dict[str, pd.DataFrame]:
    """Each window in one page (150 records < 500): the unpaged answer."""
    with Sandbox(today=TODAY, record_counts=COUNTS) as server:
        frames = {name: _load(name, server) for name in PAGED}
    assert all(len(df) and df.attrs["requests"] == 1 for df in frames.values())
    return frames


@pytest.mark.parametrize("name", PAGED)
def test_page_boundaries_inside_a_day_at_every_offset_lose_nothing(
    name: str, truth: dict[str, pd.DataFrame], monkeypatch: pytest.MonkeyPatch
) -> None:
    days = _counted_days(name, truth)
    biggest = max(days.values())
    # The densest day with more newer records than any day holds (so no page is one day).
    newer, target, target_newer = 0, None, 0
    for day in sorted(days, reverse=True):
        if newer > biggest and (target is None or days[day] > days[target]):
            target, target_newer = day, newer
        newer += days[day]
    assert target is not None and days[target] >= 3, days  # offsets worth the name
    expected = truth[name]
    # The first page holds `offset` of the target day's records; 0: it ends at the day's end.
    for offset in range(days[target]):
        page = target_newer + offset
        _paged_at(monkeypatch, page)
        with Sandbox(today=TODAY, record_counts=COUNTS) as server:
            got = _load(name, server)
            first = server.requests[0]
        assert first.query["limit"] == str(page)
        assert got.attrs["requests"] > 1  # the window really was walked
        pd.testing.assert_frame_equal(got, expected, obj=f"{name} at offset {offset}")
        if name == "app_ratings_daily":  # every date with data in the apps view has its row
            assert set(got["date"]) == set(truth["app_ratings"]["date"])
            assert got["date"].is_unique


def test_daily_view_of_seven_apps_over_500_record_pages_has_every_date() -> None:
    # The shape at the real page size: 7 apps x 79 days = 553 records, two pages.
    with md.sandbox.running(record_counts={"BIGCO": 7 * 79}) as client:
        window = {"start": APP_START, "end": "2026-11-20", "client": client}
        apps = md.load_app_ratings("BIGCO", **window)
        daily = md.load_app_ratings("BIGCO", view="daily", **window)
    assert len(apps) == 553 and apps["app_id"].nunique() == 7
    assert daily.attrs["requests"] == 2
    assert list(daily["date"]) == sorted(set(apps["date"]))  # 79 dates, one row each
