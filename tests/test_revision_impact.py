"""md.features.revision_impact (CONTRACT §13) equals a brute-force comparison of the panel
as known row by row and the panel of the latest versions, on a lake synced weekly while the
sandbox revised sentiment scores, congress trades and contract amounts."""

from __future__ import annotations

import datetime as dt
import math
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mdframes as md
from mdframes.features.proof.revisions import changed_cells
from mdframes.sandbox import Sandbox

from .conftest import KEY, lake_client

SYMBOLS = ["AAPL", "KO", "MSFT", "NVDA"]
DATASETS = ["sentiment", "congress_trades", "government_contracts"]
FEATURES = ["sentiment_mean_7d", "sentiment_change_30d", "congress_net_buy_90d",
            "contracts_award_365d"]  # fmt: skip
START, END = "2026-08-03", "2026-10-09"

pytestmark = pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[md.Lake]:
    root = tmp_path_factory.mktemp("impact") / "lake"
    with Sandbox(today="2026-09-01") as world:
        client = md.Client(api_key=KEY, base_url=world.url, cache=False, progress=False)
        client.sandbox = world
        lake = md.Lake(root, client=client)
        lake.sync(DATASETS, SYMBOLS, start="2025-09-01", progress=False)
        for _ in range(6):
            world.advance(days=7)
            lake.sync(DATASETS, SYMBOLS, progress=False)
        client.close()
    yield md.Lake(root)


def test_revision_impact_equals_a_brute_force(lake: md.Lake) -> None:
    impact = md.features.revision_impact(SYMBOLS, START, END, FEATURES, source=lake)
    assert list(impact.columns) == ["feature", "dataset", "cells", "changed", "share_changed",
                                    "mean_abs_change", "max_abs_change"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        known = md.features.panel(SYMBOLS, START, END, FEATURES, source=lake, known_at="row")
        latest = md.features.panel(SYMBOLS, START, END, FEATURES, source=lake)
    for row in impact.itertuples(index=False):
        changed, deltas = _brute_force(known[row.feature], latest[row.feature])
        assert row.cells == len(known)
        assert row.changed == changed, row.feature
        assert row.share_changed == pytest.approx(changed / len(known))
        if deltas:
            assert row.mean_abs_change == pytest.approx(sum(deltas) / len(deltas), rel=1e-12)
            assert row.max_abs_change == max(deltas)
        else:
            assert math.isnan(row.mean_abs_change) and math.isnan(row.max_abs_change)
    by_feature = impact.set_index("feature")
    # The sandbox's revisions and the weekly syncs' backfills reach the panel.
    assert (by_feature["changed"] > 0).all(), impact
    revisions = impact.attrs["revisions"]
    assert set(revisions) == set(DATASETS)
    for dataset in DATASETS:
        changes = lake.changes(dataset, SYMBOLS)
        assert revisions[dataset] <= len(changes)
    assert revisions["congress_trades"] > 0
    # A record without a time in its identity counts whatever its time: each award once.
    contracts = lake.changes("government_contracts", SYMBOLS)
    assert revisions["government_contracts"] == contracts["award_id"].nunique()


def _brute_force(known: pd.Series, latest: pd.Series) -> tuple[int, list[float]]:
    """Cell by cell, CONTRACT §13.1's rule: changed when NA-ness differs or |a - b| >
    1e-9 * max(1, |b|), a as known and b the latest; the changes of cells with both values."""
    changed, deltas = 0, []
    for a, b in zip(known, latest, strict=True):
        a_na, b_na = pd.isna(a), pd.isna(b)
        if a_na and b_na:
            continue
        if a_na or b_na:
            changed += 1
        elif abs(float(a) - float(b)) > 1e-9 * max(1.0, abs(float(b))):
            changed += 1
            deltas.append(abs(float(a) - float(b)))
    return changed, deltas


def test_float_noise_is_no_revision(tmp_path: Path) -> None:
    """A lake synced on several sandbox days of datasets the sandbox never revises: the panel
    as known sums a rolling mean in another order than the latest one, so the two differ by
    float noise, and no cell counts as changed; a NA-ness difference still counts."""
    symbols = ["AAPL", "KO", "MSFT"]
    # With the ratio's last value beside its mean the two panels take different paths to the
    # mean (without it they agree bit for bit): the noise this test needs.
    features = ["put_call_ratio_mean_20d", "put_call_ratio_last", "insider_net_value_90d"]
    with Sandbox(today="2026-09-01") as world, lake_client(world) as client:
        noon = lambda: dt.datetime.combine(world.today, dt.time(12), dt.timezone.utc)  # noqa: E731
        lake = md.Lake(tmp_path / "lake", client=client, clock=noon)
        lake.sync(
            ["put_call_ratio", "insider_trading"], symbols, start="2026-03-01", progress=False
        )
        for _ in range(5):
            world.advance(days=1)
            lake.sync(["put_call_ratio", "insider_trading"], symbols, progress=False)
        args = (symbols, "2026-06-01", "2026-09-06", features)
        impact = md.features.revision_impact(*args, source=lake)
        assert all(
            len(lake.changes(d, symbols)) == 0 for d in ("put_call_ratio", "insider_trading")
        )
    known, latest = impact.attrs["as_known"], impact.attrs["latest"]
    a = known["put_call_ratio_mean_20d"].to_numpy("float64", na_value=np.nan)
    b = latest["put_call_ratio_mean_20d"].to_numpy("float64", na_value=np.nan)
    both = ~np.isnan(a) & ~np.isnan(b)
    assert (a[both] != b[both]).any()  # the noise is there: a plain != would count it
    assert np.abs(a[both] - b[both]).max() < 1e-12
    assert impact["changed"].tolist() == [0, 0, 0]
    assert impact["share_changed"].tolist() == [0.0, 0.0, 0.0]
    assert impact["mean_abs_change"].isna().all() and impact["max_abs_change"].isna().all()
    for name in features:
        assert _brute_force(known[name], latest[name]) == (0, [])
    # The same panels with one cell made NA on one side: that cell, and only it, is changed.
    gone = known["put_call_ratio_mean_20d"].copy()
    cell = int(np.flatnonzero(both & (a != b))[0])
    gone.iloc[cell] = np.nan
    flags = changed_cells(gone.to_numpy("float64", na_value=np.nan), b)
    assert np.flatnonzero(flags).tolist() == [cell]
    assert _brute_force(gone, latest["put_call_ratio_mean_20d"]) == (1, [])


def test_changed_cells_follows_the_tolerance() -> None:
    """|a - b| > 1e-9 * max(1, |b|): relative above 1, absolute below; NA-ness always."""
    b = np.array([1e6, 1e6, 0.5, 0.5, 0.0, np.nan, 3.0, np.nan, np.inf, np.inf, 2.0])
    a = np.array([1e6 + 9e-4, 1e6 + 2e-3, 0.5 + 9e-10, 0.5 + 2e-9, -2e-9, np.nan, np.nan, 3.0,
                  np.inf, 7.0, -np.inf])  # fmt: skip
    expected = [False, True, False, True, True, False, True, True, False, True, True]
    assert changed_cells(a, b).tolist() == expected
    finite = np.isfinite(a) & np.isfinite(b)
    assert all(
        expected[i] == (_brute_force(pd.Series([a[i]]), pd.Series([b[i]]))[0] == 1)
        for i in np.flatnonzero(finite | (np.isnan(a) != np.isnan(b)))
    )
    # Noise of summation order: 0.1 + 0.2 != 0.3, yet no change.
    assert not changed_cells(np.array([0.1 + 0.2]), np.array([0.3])).any()


def test_revision_impact_needs_a_lake() -> None:
    with pytest.raises(md.InvalidParameterError, match="lake"):
        md.features.revision_impact(SYMBOLS, START, END, FEATURES, source=None)
    with pytest.raises(md.InvalidParameterError, match="lake"):
        md.features.revision_impact(SYMBOLS, START, END, FEATURES, source={})
