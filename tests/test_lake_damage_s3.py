"""The damage campaign of tests/test_lake_damage.py on a lake on a real local S3 server
(moto in server mode): the same files deleted or replaced through the S3 API, the same foreign
writes through ``deltalake`` in another process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import mdframes as md
from mdframes.sandbox import Sandbox

from .conftest import KEY, S3
from .lake_damage import SCENARIOS, Site, s3_site

pytestmark = pytest.mark.usefixtures("s3_env")


@pytest.fixture(scope="module")
def world() -> Iterator[Sandbox]:
    with Sandbox() as server:
        yield server


@pytest.fixture
def site(world: Sandbox, s3_server: S3) -> Iterator[Site]:
    bucket = s3_server.bucket()
    with md.Client(api_key=KEY, base_url=world.url, cache=False) as client:
        client.sandbox = world
        yield s3_site(
            s3_server,
            bucket,
            s3_server.uri(bucket),
            client,
            s3_server.uri(bucket, prefix="fresh"),
        )


@pytest.mark.parametrize("case", list(SCENARIOS))
def test_damage_on_s3_is_named_refused_and_repaired(site: Site, case: str) -> None:
    SCENARIOS[case](site)
