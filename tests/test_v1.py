"""Legacy v1 loaders against the sandbox: v2 column names, numbers from strings, v1 dates,
flat errors mapped to the same exception classes, and the key kept out of errors and cache."""

from __future__ import annotations

import pandas as pd
import pytest

import mdframes as md
from mdframes import v1
from mdframes.sandbox import Sandbox

from .conftest import KEY

MARKET = "S&P 500"
SECRET = "v1-secret-token-abcdef0123456789"


def test_insider_transactions_use_v2_names_and_types(client: md.Client) -> None:
    df = v1.load_insider_transactions(MARKET, "AAPL", client=client)
    expected = [
        "symbol",
        "name",
        "date",
        "insider",
        "relationship",
        "transaction_type",
        "price_per_share",
        "shares",
        "total_value",
        "shares_owned",
        "filing_date",
        "filing_url",
    ]
    assert list(df.columns[: len(expected)]) == expected
    assert df["date"].dtype == "datetime64[ns]"  # from "Mar 05 '24"
    assert isinstance(df["filing_date"].dtype, pd.DatetimeTZDtype)
    assert (
        isinstance(df["shares"].dtype, pd.Int64Dtype) and df["price_per_share"].dtype == "float64"
    )
    # Every v1 transaction matches its v2 twin (same sandbox histories): dates parsed right.
    v2 = md.load_insider_trading("AAPL", client=client)
    assert set(df["date"]) <= set(v2["date"])


def test_ticker_forecast_is_expanded_with_mid(client: md.Client) -> None:
    df = v1.load_ticker_forecast("AAPL", client=client)
    meta = ["expected_short_term", "expected_mid_term", "expected_long_term", "last_updated"]
    assert list(df.columns) == ["symbol", "name", "type", "date", "mid", "lower", "upper", *meta]
    assert len(df) == 10 and (df["lower"] <= df["mid"]).all() and (df["mid"] <= df["upper"]).all()
    assert df["expected_short_term"].dtype == "float64" and df["expected_short_term"].nunique() == 1
    # Nothing the service sends is dropped: the dated sentiment scores go to attrs.
    sentiment = df.attrs["sentiment"]
    assert sentiment and all(isinstance(v, float) for v in sentiment.values())
    monthly = v1.load_ticker_forecast("AAPL", "monthly", client=client)
    assert len(monthly) == 12


def test_market_forecasts_numbers_from_strings(client: md.Client) -> None:
    df = v1.load_market_forecasts(MARKET, client=client)
    assert df["expected_short_term"].dtype == "float64"
    assert isinstance(df["last_updated"].dtype, pd.DatetimeTZDtype)
    assert df["sentiment_score"].between(-1, 1).all()
    assert len(df) > 10


def test_house_trades_feed_amount_bounds(client: md.Client) -> None:
    df = v1.load_house_trades(MARKET, "NVDA", client=client)
    assert {"politician", "transaction_type", "amount"} <= set(df.columns)
    bounded = md.congress_amount_bounds(df)
    readable = bounded["amount_min"].notna().mean()
    assert readable > 0.8  # messy filed variants still parse


def test_sentiments_window(client: md.Client) -> None:
    df = v1.load_sentiments(
        MARKET, "AAPL", date_from="2026-01-01", date_to="2026-01-31", client=client
    )
    assert len(df) == 31 and df["score"].between(-1, 1).all()
    assert df["date"].is_monotonic_increasing  # oldest first, though v1 sends newest first


def test_app_ratings_in_daily_view_names(client: md.Client) -> None:
    df = v1.load_app_ratings(MARKET, "AAPL", client=client)
    assert {"ios_score", "android_install_count"} <= set(df.columns)
    long = md.app_ratings_long(df)
    assert set(long["platform"].dropna()) <= {"ios", "android"}


def test_unknown_market_is_refused_before_any_request(client: md.Client) -> None:
    # The spec lists every market: an unknown one (or "." and "..", which the HTTP stack would
    # collapse out of the path) never reaches the service.
    for market in ("Atlantis", ".", ".."):
        with pytest.raises(md.InvalidParameterError, match="market"):
            v1.load_sentiments(market, "AAPL", client=client)


def test_v1_errors_map_to_the_same_classes_without_the_key(tmp_path) -> None:
    with Sandbox(api_keys=(SECRET,), forbidden_keys=("v1-forbidden-key-000000",)) as server:
        bad = md.Client(api_key="wrong-" + SECRET, base_url=server.url, cache=False)
        with pytest.raises(md.AuthenticationError) as e401:
            v1.load_available_markets(client=bad)
        forbidden = md.Client(api_key="v1-forbidden-key-000000", base_url=server.url, cache=False)
        with pytest.raises(md.PermissionDeniedError) as e403:
            v1.load_available_markets(client=forbidden)
        good = md.Client(
            api_key=SECRET, base_url=server.url, cache=tmp_path / "v1.sqlite", max_wait=1
        )
        assert len(v1.load_available_markets(client=good)) > 0  # cached, with the key in the URL
        server.inject(("429", 3600))
        with pytest.raises(md.RateLimitError) as e429:
            v1.load_available_tickers(client=good)
        assert e429.value.reset_at is not None
        good.close()
    for err in (e401.value, e403.value, e429.value):
        assert SECRET not in str(err) and "v1-forbidden-key" not in str(err)
        assert "token=" not in (err.url or "") or "token=***" in (err.url or "")
    assert e401.value.code == "Unauthorized" and e401.value.status == 401
    cache_bytes = b"".join(p.read_bytes() for p in tmp_path.glob("v1.sqlite*"))
    assert cache_bytes and SECRET.encode() not in cache_bytes


def test_v1_key_goes_only_in_token(shared_sandbox: Sandbox, client: md.Client) -> None:
    shared_sandbox.clear_log()
    v1.load_available_tickers("daily", client=client)
    (entry,) = shared_sandbox.requests
    assert entry.auth == "token" and entry.query.get("token") == "***"
    assert KEY not in entry.raw_path


@pytest.mark.parametrize(
    ("loader", "args"),
    [
        ("load_sentiments", (MARKET, "AAPL")),
        ("load_app_ratings", (MARKET, "AAPL")),
        ("load_analyst_ratings", (MARKET, "AAPL")),
        ("load_house_trades", (MARKET, "NVDA")),
        ("load_insider_transactions", (MARKET, "AAPL")),
        ("load_ticker_forecast", ("AAPL",)),
    ],
)
def test_v1_frames_come_oldest_first(client: md.Client, loader: str, args: tuple) -> None:
    # CONTRACT §5: v1 sends newest first; the frames follow §2's order, as v2's do.
    df = getattr(v1, loader)(*args, client=client)
    assert len(df) > 1
    assert df["date"].is_monotonic_increasing
    assert df.index.equals(pd.RangeIndex(len(df)))
