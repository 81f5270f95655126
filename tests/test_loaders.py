"""Every loader against the sandbox: contract columns, exact dtypes, schema, raw-value fidelity,
paging, batching, parameter checks and shape drift."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pandas as pd
import pytest

import mdframes as md
from mdframes import schemas
from mdframes.frame import build_frame
from mdframes.records import extract
from mdframes.registry import REGISTRY, SCREENER_DATASETS, Field
from mdframes.sandbox import Sandbox

from .conftest import KEY, check_contract, expected_dtype_ok, load_example, valid_params

V1_MARKET = "S&P 500"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_dataset_has_contract_columns_and_dtypes(name: str, client: md.Client) -> None:
    check_contract(name, client)


@pytest.mark.parametrize(
    "name",
    sorted(n for n, d in REGISTRY.items() if "{symbol}" in d.path and d.param("start") is not None),
)
def test_empty_window_gives_a_typed_empty_frame(name: str, client: md.Client) -> None:
    ds = REGISTRY[name]
    df = load_example(ds, client, start="2001-01-01", end="2001-01-31")
    assert df.shape[0] == 0
    assert list(df.columns[: len(ds.columns)]) == ds.columns
    for f in ds.all_fields:
        assert expected_dtype_ok(f, df[f.name]), f"{name}.{f.name}: {df[f.name].dtype}"


def _same(raw: Any, value: Any, f: Field) -> bool:
    if raw is None or (raw == "" and (f.kind in ("date", "ts") or f.blank_is_null)):
        return (
            value is None
            or value is pd.NA
            or (isinstance(value, float) and math.isnan(value))
            or value is pd.NaT
        )
    if f.kind == "date":
        return value == pd.Timestamp(raw)
    if f.kind == "ts":
        return value == pd.Timestamp(raw)
    if f.kind == "float":
        return math.isclose(value, float(raw))
    if f.kind == "int":
        return int(value) == int(raw)
    if f.kind == "list":
        return list(value) == list(raw)
    return str(value) == str(raw)


RECORD_DATASETS = sorted(
    n
    for n, d in REGISTRY.items()
    if d.version == "v2" and d.shape in ("records", "congress", "forecast") and d.records
)


@pytest.mark.parametrize("name", RECORD_DATASETS)
def test_values_match_the_raw_payload(name: str, client: md.Client) -> None:
    ds = REGISTRY[name]
    params = valid_params(ds)
    df = load_example(ds, client)
    symbols = params.pop("symbols", None)
    plan_params = {k: v for k, v in params.items()}
    if ds.param("chamber") is not None:
        plan_params["chamber"] = "house"
        df = df[df["chamber"] == "house"].reset_index(drop=True)
    from mdframes.params import build_request

    req = build_request(ds, plan_params, symbol=symbols)
    raw = client.get(req.path, req.query).data
    records = raw[ds.records]
    assert len(records) == len(df)
    if ds.per_symbol:  # the service sends newest first; frames are oldest first (stable)
        records = sorted(records, key=lambda r: r[ds.filter_field or "date"])
    # Spot-check: by record identity where the dataset has one (rows sharing a date are
    # ordered by it, not as sent), else by position.
    picks = [0, len(records) // 2, len(records) - 1]
    by_name = {f.name: f for f in ds.all_fields}
    ids = [by_name[c] for c in ds.merge_id.names if c in by_name]
    for i in picks:
        rec = records[i]
        if ids:
            (found,) = [
                j
                for j in range(len(df))
                if all(_same(rec.get(f.wire), df[f.name].iloc[j], f) for f in ids)
            ]
            row = df.iloc[found]
        else:
            row = df.iloc[i]
        for f in ds.fields:
            assert _same(rec.get(f.wire), row[f.name], f), (
                f"{name}.{f.name}: {rec.get(f.wire)!r} vs {row[f.name]!r}"
            )


def test_forecast_metadata_and_last_updated_are_columns(client: md.Client) -> None:
    df = md.load_forecast("AAPL", client=client)
    assert len(df) == 10 and (df["type"] == "daily").all()
    meta = ["expected_short_term", "expected_mid_term", "expected_long_term"]
    meta += ["lower_bound_change", "upper_bound_change"]
    assert list(df.columns[7:]) == [*meta, "last_updated"]
    assert all(df[c].dtype == "float64" and df[c].nunique() == 1 for c in meta)
    assert str(df["last_updated"].dtype) == "datetime64[ns, UTC]"
    assert "metadata" not in df.attrs and "last_updated" not in df.attrs
    # One symbol and many give the same shape: header values are columns, never attrs.
    many = md.load_forecast(["AAPL", "MSFT"], client=client)
    assert list(many.columns) == list(df.columns) and list(many.dtypes) == list(df.dtypes)
    assert many.groupby("symbol", observed=True)["expected_short_term"].nunique().eq(1).all()
    assert (df["date"].dt.day_of_week < 5).all()
    monthly = md.load_forecast("AAPL", type="monthly", client=client)
    assert len(monthly) == 12


def test_screener_summary_in_attrs(client: md.Client) -> None:
    df = md.load_screener("sentiment", region="US", limit=250, client=client)
    assert len(df) == 250
    summary = df.attrs["summary"]
    assert {"total_tickers", "average_score", "bullish_count"} <= set(summary)
    recent = md.load_recent("news", client=client)
    assert len(recent) == 100 and "total_articles" in recent.attrs["summary"]


@pytest.mark.parametrize("tail", SCREENER_DATASETS)
def test_every_screener_loads(tail: str, client: md.Client) -> None:
    df = md.load_screener(tail, region="US", limit=50, client=client)
    assert 0 < len(df) <= 50
    assert df.columns[0] == "symbol"


# --- batching ----------------------------------------------------------------------------------


def test_many_symbols_keep_caller_order_and_categories(client: md.Client) -> None:
    symbols = ["TSLA", "AAPL", "BTC-USD", "BRK.B", "^GSPC", "MSFT"]
    df = md.load_insider_trading(symbols, client=client)
    order = list(dict.fromkeys(df["symbol"]))
    assert order == [s for s in symbols if s in order]
    one = md.load_insider_trading("AAPL", client=client)
    two = md.load_insider_trading("MSFT", client=client)
    both = pd.concat([one, two])
    assert isinstance(both["transaction_type"].dtype, pd.CategoricalDtype)
    pd.testing.assert_frame_equal(
        df[df["symbol"] == "AAPL"].reset_index(drop=True), one, check_like=False
    )


def test_errors_skip_returns_the_rest(sandbox: Sandbox, fresh_client: md.Client) -> None:
    with pytest.warns(UserWarning, match="NOTFOUND"):
        df = md.load_sentiment(["MSFT", "NOTFOUND", "AAPL"], client=fresh_client, errors="skip")
    assert list(dict.fromkeys(df["symbol"])) == ["MSFT", "AAPL"]
    assert set(df.attrs["failed"]) == {"NOTFOUND"}
    assert "404" in df.attrs["failed"]["NOTFOUND"]


def test_errors_raise_stops(fresh_client: md.Client) -> None:
    with pytest.raises(md.NotFoundError):
        md.load_sentiment(["MSFT", "NOTFOUND", "AAPL"], client=fresh_client)


def test_duplicate_symbols_load_once(sandbox: Sandbox, fresh_client: md.Client) -> None:
    df = md.load_sentiment(["AAPL", "AAPL"], client=fresh_client)
    assert sandbox.count("/v2/sentiment") == 1
    assert not df.duplicated().any()


# --- complete windows ---------------------------------------------------------------------------


def test_1234_filings_window_complete_without_duplicates() -> None:
    with md.sandbox.running(record_counts={"BIGCO": 1234}) as client:
        server = client.sandbox
        df = md.load_lobbying("BIGCO", start="2000-01-01", end="2100-01-01", client=client)
        assert len(df) == 1234
        assert df["filing_uuid"].is_unique
        requests = server.count("/v2/lobbying")
        assert requests == df.attrs["requests"]
        assert 3 <= requests <= 5  # 500-record pages with overlapping boundary dates
        assert df["date"].is_monotonic_increasing
        # An explicit limit is honoured as given: one request.
        server.clear_log()
        capped = md.load_lobbying("BIGCO", limit=10, client=client)
        assert len(capped) == 10 and server.count("/v2/lobbying") == 1


@pytest.mark.parametrize("name", ["government_contracts", "patent_filings"])
def test_other_capped_datasets_walk_the_window(name: str) -> None:
    with md.sandbox.running(record_counts={"BIGCO": 777}) as client:
        df = md.load(name, "BIGCO", client=client)
        assert len(df) == 777
        assert df[REGISTRY[name].merge_id.names[0]].is_unique


def test_app_ratings_walks_past_500_records() -> None:
    with md.sandbox.running(record_counts={"BIGCO": 1100}) as client:
        df = md.load_app_ratings("BIGCO", start="2026-09-03", client=client)
        assert len(df) == 1100
        assert not df.duplicated(["platform", "app_id", "date"]).any()
        daily = md.load_app_ratings("BIGCO", start="2026-09-03", view="daily", client=client)
        assert daily["date"].is_unique


def test_app_ratings_views_agree(client: md.Client) -> None:
    apps = md.load_app_ratings("AAPL", start="2026-10-01", end="2026-10-31", client=client)
    daily = md.load_app_ratings(
        "AAPL", start="2026-10-01", end="2026-10-31", view="daily", client=client
    )
    assert list(daily.columns) == REGISTRY["app_ratings_daily"].columns
    biggest = apps.sort_values("ratings_count", ascending=False).drop_duplicates(
        ["platform", "date"]
    )
    ios = biggest[biggest["platform"] == "ios"].set_index("date")["ratings_count"].sort_index()
    got = daily.set_index("date")["ios_ratings_count"].dropna().sort_index()
    pd.testing.assert_series_equal(ios, got, check_names=False, check_dtype=False)


# --- shape drift ---------------------------------------------------------------------------------


def test_older_shapes_load_into_the_same_columns() -> None:
    with md.sandbox.running(legacy_shapes={"app_ratings", "congress"}) as client:
        apps = md.load_app_ratings("AAPL", start="2026-09-03", client=client)
        assert list(apps.columns) == REGISTRY["app_ratings"].columns
        assert apps["app_id"].isna().all() and len(apps) > 0
        congress = md.load_congress_trades("AAPL", client=client)
        assert list(congress.columns) == REGISTRY["congress_trades"].columns
        assert congress[["owner", "amount_raw", "amount_flag"]].isna().all().all()
        assert len(congress) > 0


def test_unshown_shapes_are_typed_by_value(client: md.Client) -> None:
    net = md.load_professionalnet("AAPL", client=client)
    assert net["date"].dtype == "datetime64[ns]"
    ints = [c for c in net.columns if isinstance(net[c].dtype, pd.Int64Dtype)]
    assert ints, net.dtypes
    forum = md.load_forum_mentions("AAPL", client=client)
    assert isinstance(forum["date"].dtype, pd.DatetimeTZDtype)
    regions = md.load_regions(client=client)
    assert regions.map(lambda v: isinstance(v, list)).any().any()


INSIDER = REGISTRY["insider_trading"]


def _insider_payload(**overrides: Any) -> dict:
    record = {
        "date": "2026-01-05",
        "insider": "Jane Roe",
        "relationship": "CFO",
        "transactionType": "Sale",
        "shares": 100,
        "pricePerShare": 12.5,
        "totalValue": 1250,
        "sharesOwned": 900,
        "filingDate": "2026-01-07",
        "filingUrl": "https://example.com/f",
        "cik": "0000320193",
    } | overrides
    return {"symbol": "AAPL", "name": "Apple Inc.", "transactions": [record]}


def test_unknown_fields_pass_through_snake_cased_and_typed() -> None:
    payload = _insider_payload(
        footnoteCount=3,
        isAmended=False,
        filedAt="2026-01-07T21:05:00Z",
        issuer={"tickerSymbol": "AAPL", "sharesOut": 15},
    )
    payload["sectorName"] = "Technology"
    df = build_frame(INSIDER, [extract(INSIDER, payload)])
    assert isinstance(df["footnote_count"].dtype, pd.Int64Dtype)
    assert df["is_amended"].dtype == "boolean"
    assert isinstance(df["filed_at"].dtype, pd.DatetimeTZDtype)
    assert df.loc[0, "issuer_ticker_symbol"] == "AAPL" and df.loc[0, "issuer_shares_out"] == 15
    assert df.loc[0, "sector_name"] == "Technology"
    schemas.validate(df, "insider_trading")


def test_wrong_shape_is_a_format_error_not_an_empty_frame() -> None:
    with pytest.raises(md.ResponseFormatError, match="transactions"):
        extract(INSIDER, {"symbol": "AAPL", "name": "Apple", "trades": []})
    with pytest.raises(md.ResponseFormatError):
        extract(INSIDER, [1, 2, 3])


def test_schema_violation_names_column_and_value() -> None:
    sentiment = REGISTRY["sentiment"]
    df = build_frame(
        sentiment,
        [
            extract(
                sentiment,
                {"symbol": "X", "name": "X", "data": [{"date": "2026-01-01", "score": 1.7}]},
            )
        ],
    )
    with pytest.raises(md.DataValidationError) as info:
        schemas.validate(df, "sentiment")
    text = str(info.value)
    assert "score" in text and "1.7" in text and "sentiment" in text
    assert info.value.failures is not None


def test_unknown_enumeration_value_fails_by_name() -> None:
    payload = _insider_payload(transactionType="Bribe")
    with pytest.raises(md.DataValidationError, match="transaction_type.*Bribe"):
        build_frame(INSIDER, [extract(INSIDER, payload)])
    # validate=False keeps the value (a new category), never a silent NaN.
    df = build_frame(INSIDER, [extract(INSIDER, payload)], strict=False)
    assert df.loc[0, "transaction_type"] == "Bribe"


def test_untypable_value_is_a_format_error() -> None:
    with pytest.raises(md.ResponseFormatError, match="shares"):
        build_frame(INSIDER, [extract(INSIDER, _insider_payload(shares="many"))])
    with pytest.raises(md.ResponseFormatError, match="filing_date"):
        build_frame(INSIDER, [extract(INSIDER, _insider_payload(filingDate="soon"))])


def test_cik_stays_zero_padded() -> None:
    df = build_frame(INSIDER, [extract(INSIDER, _insider_payload(cik=320193))])
    assert df.loc[0, "cik"] == "0000320193"


# --- parameter checks ---------------------------------------------------------------------------

BAD_CALLS = [
    ("limit 0", lambda c: md.load_lobbying("AAPL", limit=0, client=c)),
    ("limit 501", lambda c: md.load_lobbying("AAPL", limit=501, client=c)),
    ("limit 501 app", lambda c: md.load_app_ratings("AAPL", limit=501, client=c)),
    ("limit 20001", lambda c: md.load_screener("news", limit=20001, client=c)),
    ("limit 0 recent", lambda c: md.load_recent("news", limit=0, client=c)),
    ("limit float", lambda c: md.load_sentiment("AAPL", limit=2.5, client=c)),
    (
        "start after end",
        lambda c: md.load_sentiment("AAPL", start="2026-02-01", end="2026-01-01", client=c),
    ),
    ("bad date", lambda c: md.load_news("AAPL", start="yesterday", client=c)),
    ("bad month", lambda c: md.load_news("AAPL", start="2026-13-01", client=c)),
    ("type", lambda c: md.load_forecast("AAPL", type="weekly", client=c)),
    ("chamber", lambda c: md.load_congress_trades("AAPL", chamber="lords", client=c)),
    ("view", lambda c: md.load_app_ratings("AAPL", view="weekly", client=c)),
    ("screener dataset", lambda c: md.load_screener("weather", client=c)),
    ("recent dataset", lambda c: md.load_recent("sentiment", client=c)),
    ("market or region", lambda c: md.load_screener("sentiment", client=c)),
    ("market or region 2", lambda c: md.load_screener("app-ratings", limit=5, client=c)),
    ("tickers type", lambda c: md.load_tickers(type="hourly", client=c)),
    ("empty symbol", lambda c: md.load_sentiment("", client=c)),
    ("slash", lambda c: md.load_sentiment("AAPL/../x", client=c)),
    ("question", lambda c: md.load_sentiment("AAPL?x=1", client=c)),
    ("hash", lambda c: md.load_sentiment("AA#PL", client=c)),
    ("space", lambda c: md.load_sentiment("AA PL", client=c)),
    ("dotdot", lambda c: md.load_sentiment("..", client=c)),
    ("one bad in list", lambda c: md.load_sentiment(["AAPL", "B C"], client=c)),
    ("empty list", lambda c: md.load_sentiment([], client=c)),
    ("errors", lambda c: md.load_sentiment("AAPL", errors="ignore", client=c)),
    ("v1 ticker", lambda c: md.v1.load_sentiments("S&P 500", "A/B", client=c)),
    ("v1 date", lambda c: md.v1.load_house_trades("S&P 500", "AAPL", date_from="x", client=c)),
]


@pytest.mark.parametrize("label,call", BAD_CALLS, ids=[b[0] for b in BAD_CALLS])
def test_bad_parameters_rejected_before_any_request(
    label: str, call, sandbox: Sandbox, fresh_client: md.Client
) -> None:
    with pytest.raises(md.InvalidParameterError) as info:
        call(fresh_client)
    assert isinstance(info.value, ValueError)
    assert sandbox.count() == 0


@pytest.mark.parametrize("symbol", ["BTC-USD", "BRK.B", "^GSPC"])
def test_special_symbols_are_valid_and_encoded(
    symbol: str, sandbox: Sandbox, fresh_client: md.Client
) -> None:
    df = md.load_sentiment(symbol, client=fresh_client)
    assert set(df["symbol"]) == {symbol}
    from urllib.parse import quote

    assert [r.raw_path.split("?")[0] for r in sandbox.requests] == [
        f"/v2/sentiment/{quote(symbol, safe='')}"
    ]


@pytest.mark.parametrize(
    "start",
    [
        "2026-01-01",
        pd.Timestamp("2026-01-01"),
        pd.Timestamp("2026-01-01").date(),
        pd.Timestamp("2026-01-01").to_pydatetime(),
    ],
)
def test_dates_accept_str_date_datetime_timestamp(start: Any, client: md.Client) -> None:
    df = md.load_sentiment("AAPL", start=start, end="2026-01-10", client=client)
    assert df["date"].min() == pd.Timestamp("2026-01-01") and len(df) == 10


def test_validate_false_skips_the_schema(client: md.Client) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = md.load_put_call_ratio("AAPL", client=client, validate=False)
    assert (df["total_volume"] == df["call_volume"] + df["put_volume"]).all()


def test_default_client_is_used(shared_sandbox: Sandbox) -> None:
    md.set_default_client(md.Client(api_key=KEY, base_url=shared_sandbox.url, cache=False))
    assert len(md.load_markets()) == 20


def test_skip_never_hides_a_total_failure(fresh_client: md.Client) -> None:
    with pytest.raises(md.NotFoundError):
        md.load_sentiment(["NOTFOUND", "NOSUCH"], client=fresh_client, errors="skip")


def test_skip_does_not_swallow_account_errors(sandbox: Sandbox) -> None:
    client = md.Client(api_key="not-a-valid-key", base_url=sandbox.url, cache=False)
    with pytest.raises(md.AuthenticationError):
        md.load_sentiment(["AAPL", "MSFT"], client=client, errors="skip")


@pytest.mark.parametrize("bad", ["today", "2026-01", 20260101, "2026-02-30", "junk"])
def test_dates_are_parsed_strictly(bad: Any) -> None:
    # numpy and pandas both accept some of these; none of them is a date the service sends.
    with pytest.raises(md.ResponseFormatError, match="filing_date"):
        build_frame(INSIDER, [extract(INSIDER, _insider_payload(filingDate=bad))])


def test_date_forms_the_service_uses() -> None:
    ok = ["2026-01-07", "", None, "Jan 07 '26"]
    for value in ok:
        df = build_frame(INSIDER, [extract(INSIDER, _insider_payload(filingDate=value))])
        expected = pd.NaT if value in ("", None) else pd.Timestamp("2026-01-07")
        got = df.loc[0, "filing_date"]
        assert (pd.isna(got) and pd.isna(expected)) or got == expected


def test_paging_never_merges_records_that_lack_an_id() -> None:
    from mdframes.fetch import _record_key

    a = {"filingUuid": None, "date": "2026-01-02", "clientName": "A"}
    b = {"filingUuid": None, "date": "2026-01-02", "clientName": "B"}
    assert _record_key(a, [["filingUuid"]]) != _record_key(b, [["filingUuid"]])
    assert _record_key(a, [["filingUuid"]]) == _record_key(dict(a), [["filingUuid"]])
    with_id = {"filingUuid": "u-1", "date": "2026-01-02"}
    assert _record_key(with_id, [["filingUuid"]]) == ("u-1",)


def test_legacy_app_ratings_with_many_apps_load_without_duplicates() -> None:
    with md.sandbox.running(record_counts={"BIGCO": 1100}, legacy_shapes={"app_ratings"}) as client:
        df = md.load_app_ratings("BIGCO", start="2026-09-03", client=client)
        assert len(df) > 0 and not df.duplicated().any()


def test_categories_keep_every_value() -> None:
    payloads = [_insider_payload(transactionType=t) for t in ("Sale", None, "Award", 7)]
    for payload, expected in zip(payloads, ["Sale", None, "Award", "7"], strict=True):
        df = build_frame(INSIDER, [extract(INSIDER, payload)], strict=False)
        value = df.loc[0, "transaction_type"]
        assert (pd.isna(value) and expected is None) or value == expected
        assert list(df["transaction_type"].cat.categories[:11]) == list(
            REGISTRY["insider_trading"].fields[3].categories
        )
    with pytest.raises(md.ResponseFormatError, match="transaction_type"):
        build_frame(INSIDER, [extract(INSIDER, _insider_payload(transactionType=["Sale"]))])


def test_records_naming_another_symbol_than_asked_fail() -> None:
    """An answer whose records name another symbol is invented data for the one asked: the
    records that name none are not looked at, those that do are."""
    from types import SimpleNamespace

    from mdframes.fetch import _check_symbol
    from mdframes.records import Records
    from mdframes.registry import REGISTRY

    ds = REGISTRY["insider_trading"]
    request = SimpleNamespace(symbol="AAPL", path_values={})
    payload = SimpleNamespace(url="http://x/v2/insider-trading/AAPL")
    quiet = [{"date": "2026-01-02"}] * 3
    _check_symbol(ds, request, Records({"symbol": "AAPL"}, [*quiet, {"symbol": " aapl"}]), payload)
    rows = [*quiet, {"ticker": "TSLA"}, {"symbol": "AAPL"}]
    with pytest.raises(md.DataValidationError, match="'TSLA' in column 'symbol'"):
        _check_symbol(ds, request, Records({"symbol": "AAPL"}, rows), payload)
