"""``md.search`` over the ticker list, and the hint a 404 for a symbol gets."""

from __future__ import annotations

from pathlib import Path

import pytest

import mdframes as md
from mdframes.sandbox import Sandbox

from .replay import envelope, replay

KEY = "sandbox-key"
TICKERS = [
    ("AAPL", "Apple Inc."),
    ("NESN.SW", "Nestlé S.A."),
    ("GM", "General Motors Company"),
    ("GE", "General Electric Company"),
    ("APLE", "Apple Hospitality REIT, Inc."),
    ("PINEAPP", "Pineapple Holdings"),
    ("AAP", "Advance Auto Parts, Inc."),
]


def _tickers() -> dict[str, object]:
    rows = [{"symbol": s, "name": n} for s, n in TICKERS]
    return {"/v2/tickers": envelope({"tickers": rows})}


def test_search_ranks_symbol_prefix_name_word_substring_and_similar() -> None:
    with replay(_tickers()) as (client, _):
        found = md.search("aap", client=client)
        assert found[["symbol", "match"]].values.tolist() == [
            ["AAP", "symbol"],
            ["AAPL", "symbol prefix"],
        ]
        apple = md.search("apple", client=client)
        assert apple["symbol"].tolist()[:3] == ["AAPL", "APLE", "PINEAPP"]
        assert apple["match"].tolist()[:3] == ["name word", "name word", "substring"]


def test_search_ignores_case_and_accents() -> None:
    with replay(_tickers()) as (client, _):
        assert md.search("NESTLE", client=client)["symbol"].tolist()[0] == "NESN.SW"
        assert md.search("nestlé", client=client)["symbol"].tolist()[0] == "NESN.SW"


def test_search_matches_words_of_a_name_in_order() -> None:
    with replay(_tickers()) as (client, _):
        found = md.search("general mot", client=client)
        assert found["symbol"].tolist()[0] == "GM" and found["match"][0] == "name word"


def test_search_finds_similar_spellings_last() -> None:
    with replay(_tickers()) as (client, _):
        found = md.search("APPL", client=client, limit=3)
        assert "AAPL" in found["symbol"].tolist()
        assert found["match"].cat.categories.tolist()[-1] == "similar"


def test_search_reads_the_ticker_list_once_per_client() -> None:
    with replay(_tickers()) as (client, seen):
        md.search("apple", client=client)
        md.search("general", client=client, limit=1)
        assert seen == ["/v2/tickers"]


def test_search_limit_and_bad_input() -> None:
    with replay(_tickers()) as (client, seen):
        assert len(md.search("a", client=client, limit=2)) == 2
        with pytest.raises(md.InvalidParameterError):
            md.search("  ", client=client)
        with pytest.raises(md.InvalidParameterError):
            md.search("apple", limit=0, client=client)
        assert seen == ["/v2/tickers"]


def test_search_on_the_sandbox(client: md.Client) -> None:
    found = md.search("microsoft", client=client)
    assert found["symbol"][0] == "MSFT"
    assert list(found.columns) == ["symbol", "name", "match"]


def test_404_without_a_ticker_list_names_skip_and_makes_no_extra_request() -> None:
    with replay(_tickers()) as (client, seen):
        with pytest.raises(md.NotFoundError) as info:
            md.load_sentiment("APPL", client=client)
    message = str(info.value)
    assert "'APPL' is not a symbol the service knows" in message
    assert 'errors="skip"' in message and "md.search" in message
    assert seen == ["/v2/sentiment/APPL"]  # no request for the ticker list


def test_404_suggests_symbols_from_a_ticker_list_already_read() -> None:
    with replay(_tickers()) as (client, seen):
        md.search("apple", client=client)
        with pytest.raises(md.NotFoundError, match=r"did you mean 'AAPL'"):
            md.load_sentiment(["AAPL", "APPL"], client=client)
        assert seen.count("/v2/tickers") == 1


def test_404_suggests_from_a_ticker_list_in_the_http_cache(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    path = tmp_path / "c.sqlite"
    with md.Client(api_key=KEY, base_url=sandbox.url, cache=path) as client:
        md.load_tickers(client=client)
    before = sandbox.count()
    with md.Client(api_key=KEY, base_url=sandbox.url, cache=path, max_retries=0) as client:
        with pytest.raises(md.NotFoundError) as info:
            md.load_sentiment("APPL", client=client)
    assert "did you mean 'AAPL'" in str(info.value)
    assert sandbox.count() == before + 1  # the 404 only


def test_skip_has_no_hint_and_loads_the_rest(client: md.Client) -> None:
    with pytest.warns(md.SkippedSymbolsWarning):
        df = md.load_sentiment(["AAPL", "APPL"], limit=2, errors="skip", client=client)
    assert set(df["symbol"]) == {"AAPL"}


def test_cli_404_hint_speaks_the_command_line(
    shared_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mdframes.cli import main

    monkeypatch.setenv("MDFRAMES_BASE_URL", shared_sandbox.url)
    monkeypatch.setenv("MDFRAMES_API_KEY", KEY)
    assert main(["load", "sentiment", "APPL", "--no-cache"]) == 1
    err = capsys.readouterr().err
    assert "`mdframes search TEXT`" in err and "--errors skip" in err
    assert "md." not in err and "errors=" not in err
    assert main(["search", "apple", "--limit", "1", "--no-cache"]) == 0
    assert "AAPL" in capsys.readouterr().out
