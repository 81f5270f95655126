"""One name resolver (``registry.resolve_name``): every name a user types is matched alike,
case and ``_``/``-`` aside, and an unknown one gets a "did you mean"."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import mdframes as md
from mdframes.params import plan
from mdframes.registry import closest_names, get, resolve_name


def test_resolve_name_ignores_case_whitespace_and_dash_or_underscore() -> None:
    choices = ["insider_trading", "congress/house", "S&P 500"]
    assert resolve_name(" Insider-Trading ", choices, what="dataset") == "insider_trading"
    assert resolve_name("CONGRESS/HOUSE", choices, what="dataset") == "congress/house"
    assert resolve_name("s&p 500", choices, what="market") == "S&P 500"


def test_resolve_name_suggests_and_lists_few_choices() -> None:
    with pytest.raises(md.InvalidParameterError) as info:
        resolve_name("senat", ["both", "house", "senate"], what="chamber", parameter="chamber")
    assert str(info.value) == (
        "unknown chamber 'senat'; did you mean 'senate'? (one of: both, house, senate)"
    )
    assert info.value.parameter == "chamber"


def test_resolve_name_refuses_a_non_string() -> None:
    with pytest.raises(md.InvalidParameterError, match="unknown view 3"):
        resolve_name(3, ["apps", "daily"], what="view")  # type: ignore[arg-type]


def test_closest_names_finds_a_fragment() -> None:
    assert closest_names("dow", ["DOW 30", "NASDAQ"]) == ["DOW 30"]


def test_chamber_is_case_folded() -> None:
    paths = [r.path for r in plan(get("congress_trades"), "NVDA", {"chamber": "Senate"})]
    assert paths == ["/v2/congress/senate/NVDA"]
    paths = [r.path for r in plan(get("congress_trades"), "NVDA", {"chamber": "BOTH"})]
    assert paths == ["/v2/congress/house/NVDA", "/v2/congress/senate/NVDA"]


def test_forecast_type_and_app_view_are_case_folded(client: md.Client) -> None:
    assert [r.path for r in plan(get("forecast"), "AAPL", {"type": "Monthly"})] == [
        "/v2/predictions/monthly/AAPL"
    ]
    df = md.load_app_ratings("AAPL", limit=5, view="Daily", client=client)
    assert df.attrs["dataset"] == "app_ratings_daily"


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: md.load_screener("sentimnet", region="US"), "did you mean 'sentiment'"),
        (lambda: md.load_screener("insider_tradng"), "did you mean 'insider-trading'"),
        (lambda: md.load_recent("newz"), "did you mean 'news'"),
        (lambda: md.load_tickers(market="S&P 50"), "did you mean 'S&P 500'"),
        (lambda: md.load_tickers(region="usa"), "unknown region 'usa'"),
        (lambda: md.load_congress_trades("NVDA", chamber="senat"), "did you mean 'senate'"),
        (lambda: md.load_forecast("AAPL", type="montly"), "did you mean 'monthly'"),
        (lambda: md.load_app_ratings("AAPL", view="day"), "did you mean 'daily'"),
        (lambda: md.load("insider_tradng", "AAPL"), "did you mean 'insider_trading'"),
    ],
)
def test_every_name_gets_a_did_you_mean_before_any_request(call, words: str) -> None:
    # No client is configured here: the name is refused before any request could be made.
    with pytest.raises(md.InvalidParameterError, match=re.escape(words)):
        call()


def test_screener_dataset_and_market_are_case_folded(client: md.Client) -> None:
    df = md.load_screener("Insider_Trading", market="s&p 500", limit=5, client=client)
    assert df.attrs["dataset"] == "screener/insider-trading" and len(df) == 5


def test_difflib_has_one_home() -> None:
    package = Path(md.__file__).parent
    users = []
    for path in package.rglob("*.py"):
        if {"lake", "features"} & set(path.relative_to(package).parts):
            continue  # their owners move them onto resolve_name
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if "difflib" in names:
                users.append(path.name)
    assert users == ["registry.py"]


def test_catalog_names_each_record_identity() -> None:
    # CONTRACT §9/§10: the identity of a record, with the symbol, for every per-symbol dataset.
    ids = md.datasets().set_index("name")["record_id"]
    assert ids["sentiment"] == ["symbol", "date"]
    assert ids["put_call_ratio"] == ["symbol", "date"]
    assert ids["app_ratings"] == ["symbol", "platform", "app_id", "date"]
    assert ids["app_ratings_daily"] == ["symbol", "date"]
    per_symbol = md.datasets().query("scope == 'symbol' and version == 'v2'")
    for name, record_id in zip(per_symbol["name"], per_symbol["record_id"], strict=True):
        assert record_id and record_id[0] == "symbol", name
        columns = set(get(name).columns)
        assert {part.split("|")[0] for part in record_id} <= columns, name
