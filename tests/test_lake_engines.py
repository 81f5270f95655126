"""Other engines read a lake's folders directly, and a lake lives on S3 as well as on disk.

These need the ``lake-engines`` extra (Polars, Dask with distributed, PySpark, moto's S3
server); ``.ci/run`` installs it in a step of its own and runs this file.
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import mdframes as md
from mdframes.sandbox import Sandbox

from .conftest import KEY

SYMBOLS = ["AAPL", "0700", "MSFT"]
KEY_COLUMNS = ["symbol", "award_id", "award_amount", "start_date", "_version"]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[md.Lake]:
    """A lake holding two versions of some records, so engines see every stored row."""
    with Sandbox(extra_symbols=["0700"]) as server:
        client = md.Client(api_key=KEY, base_url=server.url, cache=False)
        client.sandbox = server
        lake = md.Lake(tmp_path_factory.mktemp("lake"), client=client)
        lake.sync("government_contracts", SYMBOLS, progress=False)
        server.advance(days=30)  # awards modified in place meanwhile: new versions
        report = lake.sync("government_contracts", SYMBOLS, progress=False)
        assert report.versions_added > 0
        yield lake


def _expected(lake: md.Lake) -> pd.DataFrame:
    return _normal(lake.read("government_contracts", history=True)[KEY_COLUMNS])


def _normal(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows as comparable text, in one order (engines give their own dtypes and order)."""
    out = frame[KEY_COLUMNS].copy()
    out["start_date"] = pd.to_datetime(out["start_date"]).dt.strftime("%Y-%m-%d")
    out = out.astype(object).where(out.notna(), None).astype(str)
    return out.sort_values(KEY_COLUMNS).reset_index(drop=True)


def test_polars_reads_every_stored_row(lake: md.Lake) -> None:
    pl = pytest.importorskip("polars", reason="Polars comes with the lake-engines extra")
    frame = pl.read_parquet(lake.path("government_contracts") + "/*.parquet")
    assert frame.schema["symbol"] == pl.String and "0700" in frame["symbol"].to_list()
    lazy = pl.scan_parquet(lake.path("government_contracts") + "/*.parquet")
    assert lazy.filter(pl.col("symbol") == "0700").collect().height > 0
    pd.testing.assert_frame_equal(_normal(frame.to_pandas()), _expected(lake))


def test_dask_on_a_two_worker_cluster_reads_every_stored_row(lake: md.Lake) -> None:
    dd = pytest.importorskip("dask.dataframe", reason="Dask comes with the lake-engines extra")
    distributed = pytest.importorskip("distributed", reason="in the lake-engines extra")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as dask_client,
    ):
        assert len(dask_client.scheduler_info()["workers"]) == 2
        frame = dd.read_parquet(lake.path("government_contracts")).compute()
    assert "0700" in set(frame["symbol"].astype(str))
    pd.testing.assert_frame_equal(_normal(frame), _expected(lake))


@pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs a Java runtime")
def test_spark_reads_every_stored_row(lake: md.Lake) -> None:
    pytest.importorskip("pyspark", reason="PySpark comes with the lake-engines extra")
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("mdframes-lake-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    try:
        df = spark.read.parquet(lake.path("government_contracts"))
        assert dict(df.dtypes)["symbol"] == "string"
        rows = [r.asDict() for r in df.select(*KEY_COLUMNS).collect()]
    finally:
        spark.stop()
    frame = pd.DataFrame(rows, columns=KEY_COLUMNS)
    assert "0700" in set(frame["symbol"])
    pd.testing.assert_frame_equal(_normal(frame), _expected(lake))


# --- S3 --------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def s3_uri(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A bucket on a local S3-compatible server (moto in server mode, on 127.0.0.1)."""
    server_module = pytest.importorskip("moto.server", reason="moto comes with lake-engines")
    import pyarrow.fs as pafs

    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    port = _free_port()
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        endpoint = f"127.0.0.1:{port}"
        fs = pafs.S3FileSystem(
            endpoint_override=endpoint,
            scheme="http",
            region="us-east-1",
            allow_bucket_creation=True,
        )
        fs.create_dir("research")
        yield f"s3://research/lake?endpoint_override={endpoint}&scheme=http&region=us-east-1"
    finally:
        server.stop()


def test_a_lake_on_s3_syncs_reads_queries_and_compacts(s3_uri: str, tmp_path: Path) -> None:
    with Sandbox(extra_symbols=["0700"]) as server:
        client = md.Client(api_key=KEY, base_url=server.url, cache=False)
        client.sandbox = server
        lake = md.Lake(s3_uri, client=client)
        assert lake.path("insider_trading") == "s3://research/lake/insider_trading"
        report = lake.sync(["insider_trading", "forecast"], SYMBOLS, progress=False)
        assert report.complete
        local = md.Lake(tmp_path / "local", client=client)
        local.sync(["insider_trading", "forecast"], SYMBOLS, progress=False)
        server.advance(days=3)
        lake.sync(["forecast"], SYMBOLS, progress=False)
        local.sync(["forecast"], SYMBOLS, progress=False)
    for name in ("insider_trading", "forecast"):
        mine = lake.read(name, history=True).drop(columns=["_fetched_at", "_sync_id"])
        theirs = local.read(name, history=True).drop(columns=["_fetched_at", "_sync_id"])
        pd.testing.assert_frame_equal(mine, theirs)
    counted = lake.sql("select symbol, count(*) as n from insider_trading group by 1 order by 1")
    assert counted["symbol"].tolist() == ["0700", "AAPL", "MSFT"]
    before = lake.read("forecast", history=True)
    assert lake.compact("forecast") == {"forecast": (2, 1)}
    pd.testing.assert_frame_equal(lake.read("forecast", history=True), before)
    assert set(lake.info()["dataset"]) == {"insider_trading", "forecast"}
