"""Fuzzed arguments to every public loader: the outcome is a valid load, an answer from the
service about a valid request, or an InvalidParameterError raised before any request."""

from __future__ import annotations

import datetime as dt
import inspect
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mdframes as md
from mdframes.registry import REGISTRY
from mdframes.sandbox import Sandbox

from .conftest import KEY

LOADERS = sorted({ds.loader for ds in REGISTRY.values()})

junk = st.one_of(
    st.none(),
    st.integers(-5, 30_000),
    st.booleans(),
    st.binary(max_size=3),
    st.text(max_size=6),
    st.lists(st.text(max_size=3), max_size=2),
    st.just(float("nan")),
)
symbol = st.one_of(
    st.sampled_from(["AAPL", " msft ", "BRK.B", "BTC-USD", "^GSPC", ".", "..", "a/b", "x?y"]),
    st.text(max_size=5),
)
date = st.one_of(
    st.dates(dt.date(2020, 1, 1), dt.date(2027, 1, 1)).map(str),
    st.sampled_from(["today", "2026-02-30", "2026-01", "", "2026-01-01T10:00:00+05:00"]),
    junk,
)
VALUES: dict[str, Any] = {
    "symbols": st.one_of(symbol, st.lists(symbol, max_size=3), junk),
    "ticker": symbol,
    "start": date,
    "end": date,
    "date_from": date,
    "date_to": date,
    "limit": st.one_of(st.integers(-2, 25_000), junk),
    "type": st.one_of(st.sampled_from(["daily", "monthly", "weekly"]), junk),
    "chamber": st.one_of(st.sampled_from(["both", "house", "senate", "HOUSE"]), junk),
    "view": st.one_of(st.sampled_from(["apps", "daily", "weekly"]), junk),
    "market": st.one_of(st.sampled_from(["S&P 500", "s&p 500", "Atlantis", "."]), junk),
    "region": st.one_of(st.sampled_from(["US", "us", "Mars"]), junk),
    "dataset": st.one_of(st.sampled_from(["sentiment", "news", "insider_trading", "nope"]), junk),
    "validate": st.sampled_from([True, False, "strict", "yes"]),
    "errors": st.sampled_from(["raise", "skip", "ignore"]),
    "client": st.sampled_from([None, "x"]),
}


def _resolve(dotted: str) -> Any:
    obj: Any = md
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.fixture(scope="module")
def server() -> Any:
    with Sandbox() as s:
        yield s


@pytest.mark.parametrize("loader", LOADERS)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_fuzzed_arguments_fail_cleanly_before_any_request(loader: str, server: Any, data) -> None:
    fn = _resolve(loader)
    kwargs: dict[str, Any] = {}
    for name in inspect.signature(fn).parameters:
        if name in VALUES and data.draw(st.booleans(), label=f"pass {name}"):
            kwargs[name] = data.draw(VALUES[name], label=name)
    client = md.Client(api_key=KEY, base_url=server.url, cache=False, max_retries=0)
    if kwargs.get("client") is None:
        kwargs["client"] = client
    before = server.count()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(**kwargs)
    except md.InvalidParameterError:
        assert server.count() == before, f"{loader}({kwargs}) sent a request before refusing"
    except TypeError as exc:
        # A required positional argument left out by the draw: Python's own error, by design.
        assert "required positional argument" in str(exc), exc
    except (md.NotFoundError, md.BadRequestError):
        # A well-formed request the service answered (an unknown symbol): not a crash.
        assert server.count() > before
    finally:
        client.close()
