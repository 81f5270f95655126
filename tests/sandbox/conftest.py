"""The sandbox tests' shared parts: a server at a fixed day, a session, and GET helpers with
the right key placement."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
import requests

from mdframes.registry import APP_RATINGS_HISTORY_START, CONGRESS_BRACKETS
from mdframes.sandbox import Sandbox

KEY = "sandbox-key"
BEARER = {"Authorization": f"Bearer {KEY}"}
TODAY = dt.date(2026, 11, 20)  # a Friday: daily forecasts must skip the weekend
APP_START = dt.date.fromisoformat(APP_RATINGS_HISTORY_START)
BRACKETS = set(CONGRESS_BRACKETS)


@pytest.fixture(scope="module")
def server() -> Iterator[Sandbox]:
    with Sandbox(today=TODAY, record_counts={"BIGCO": 1234}, extra_symbols=("7203.T", "a")) as s:
        yield s


@pytest.fixture(scope="module")
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session


@pytest.fixture
def fresh() -> Iterator[Sandbox]:
    with Sandbox(today=TODAY) as s:
        yield s


def get(server: Sandbox, http: requests.Session, path: str, **params: object) -> requests.Response:
    """GET with the right key placement for the path's version."""
    if path.startswith("/v1/"):
        return http.get(server.url + path, params={**params, "token": KEY}, timeout=10)
    return http.get(server.url + path, params=params, headers=BEARER, timeout=10)


def data(server: Sandbox, http: requests.Session, path: str, **params: object) -> dict:
    r = get(server, http, path, **params)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["success"] is True
    assert body["meta"]["timestamp"].startswith(server.today.isoformat())
    return body["data"]


def data_at(server: Sandbox, http: requests.Session, path: str, **params: object) -> dict:
    """The envelope's ``data`` of a 200 answer (any clock: no check of its day)."""
    r = get(server, http, path, **params)
    assert r.status_code == 200
    return r.json()["data"]
