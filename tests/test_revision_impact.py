"""md.features.revision_impact (CONTRACT §13) equals a brute-force comparison of the panel
as known row by row and the panel of the latest versions, on a lake synced weekly while the
sandbox revised sentiment scores, congress trades and contract amounts."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator

import pandas as pd
import pytest

import mdframes as md
from mdframes.sandbox import Sandbox

from .conftest import KEY

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
        changed, deltas = 0, []
        for a, b in zip(known[row.feature], latest[row.feature], strict=True):
            a_na, b_na = pd.isna(a), pd.isna(b)
            if a_na and b_na:
                continue
            if a_na or b_na:
                changed += 1
            elif float(a) != float(b):
                changed += 1
                deltas.append(abs(float(a) - float(b)))
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


def test_revision_impact_needs_a_lake() -> None:
    with pytest.raises(md.InvalidParameterError, match="lake"):
        md.features.revision_impact(SYMBOLS, START, END, FEATURES, source=None)
    with pytest.raises(md.InvalidParameterError, match="lake"):
        md.features.revision_impact(SYMBOLS, START, END, FEATURES, source={})
