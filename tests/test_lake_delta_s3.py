"""The lake's Delta tables on a real local S3 server (moto in server mode): a sync, reads,
SQL, files, compaction and check give what the same lake gives on disk."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import mdframes as md
from mdframes.sandbox import Sandbox

from .conftest import KEY, S3

pytestmark = pytest.mark.usefixtures("s3_env")


def test_a_lake_on_s3_reads_as_the_same_lake_on_disk(s3_server: S3, tmp_path: Path) -> None:
    names = ["insider_trading", "forecast"]
    symbols = ["AAPL", "0700"]
    bucket = s3_server.bucket()
    with Sandbox(extra_symbols=["0700"]) as server:
        with md.Client(api_key=KEY, base_url=server.url, cache=False) as client:
            client.sandbox = server
            remote = md.Lake(s3_server.uri(bucket), client=client)
            local = md.Lake(tmp_path / "lake", client=client)
            for lake in (remote, local):
                assert lake.sync(names, symbols[:1], progress=False).complete
                assert lake.sync(names, symbols, progress=False).complete
    assert "testing" not in repr(remote)
    files = remote.files("insider_trading")
    assert files and all(f.startswith(f"s3://{bucket}/lake/insider_trading/") for f in files)
    s3 = s3_server.client()
    source = files[0].split(f"s3://{bucket}/", 1)[1]
    s3.copy_object(  # type: ignore[attr-defined]
        Bucket=bucket, Key=source.replace("part-", "copy-of-part-"), CopySource=f"{bucket}/{source}"
    )  # a stray copy beside the table: ignored
    for name in names:
        pd.testing.assert_frame_equal(
            remote.read(name, history=True).drop(columns=["_fetched_at", "_sync_id"]),
            local.read(name, history=True).drop(columns=["_fetched_at", "_sync_id"]),
        )
    count = "select count(*) as n from insider_trading_history"
    assert remote.sql(count)["n"][0] == local.sql(count)["n"][0]
    assert remote.check()["ok"].all()
    before = remote.read("insider_trading", history=True)
    assert remote.compact("insider_trading") == {"insider_trading": (2, 1)}
    pd.testing.assert_frame_equal(remote.read("insider_trading", history=True), before)
    from deltalake import DeltaTable

    table = DeltaTable(
        remote.path("insider_trading"), storage_options=remote.storage.delta_options()
    )
    assert table.to_pyarrow_table().num_rows == len(before)
