"""Other engines read a lake: Delta readers its tables (``lake.path``), Parquet readers its
file lists (``lake.files``), with equal rows and identifiers kept as text, before and after a
compaction; and a lake lives on S3 as well as on disk.

These need the ``lake-engines`` extra (Polars, Dask with distributed, PySpark, moto's S3
server); ``.ci/run`` installs it in a step of its own and runs the tests marked ``engines``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import mdframes as md
from mdframes.sandbox import Sandbox

from .conftest import KEY, S3

pytestmark = pytest.mark.engines

SYMBOLS = ["AAPL", "0700", "MSFT"]
NAME = "government_contracts"
# Identifiers that must stay text in every engine: symbol "0700", cik "0000320193".
KEY_COLUMNS = ["symbol", "award_id", "cik", "award_amount"]


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[md.Lake]:
    """A lake holding two versions of some records (two syncs, so two data files)."""
    with Sandbox(extra_symbols=["0700"]) as server:
        client = md.Client(api_key=KEY, base_url=server.url, cache=False)
        client.sandbox = server
        lake = md.Lake(tmp_path_factory.mktemp("lake"), client=client)
        lake.sync(NAME, SYMBOLS, progress=False)
        server.advance(days=30)  # awards modified in place meanwhile: new versions
        report = lake.sync(NAME, SYMBOLS, progress=False)
        assert report.versions_added > 0
        yield lake


@pytest.fixture(scope="module")
def compacted(synced: md.Lake, tmp_path_factory: pytest.TempPathFactory) -> md.Lake:
    """The same lake after a compaction that keeps the retired files (retain_hours): the
    folder then holds every row twice, and only the table's file list is right."""
    root = tmp_path_factory.mktemp("compacted") / "lake"
    shutil.copytree(synced.root, root)
    lake = md.Lake(root)
    before = len(lake.files(NAME))
    assert lake.compact(NAME) == {NAME: (before, 1)}
    assert len(list(Path(lake.path(NAME)).glob("*.parquet"))) > len(lake.files(NAME))
    return lake


@pytest.fixture(params=["synced", "compacted"])
def lake(request: pytest.FixtureRequest) -> md.Lake:
    return request.getfixturevalue(request.param)


def _expected(lake: md.Lake) -> pd.DataFrame:
    """Every stored version, as the lake reads them."""
    return _normal(lake.read(NAME, history=True))


def _normal(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows as comparable text, in one order (engines give their own dtypes and order)."""
    out = frame[KEY_COLUMNS].copy()
    out = out.astype(object).where(out.notna(), None).astype(str)
    return out.sort_values(KEY_COLUMNS).reset_index(drop=True)


def _text_ids(frame: pd.DataFrame) -> None:
    assert "0700" in set(frame["symbol"].astype(str))
    ciks = frame["cik"].dropna().astype(str)
    assert len(ciks) and all(len(c) == 10 and c.isdigit() for c in ciks)  # zeros kept
    assert any(c.startswith("0") for c in ciks)


def test_pyarrow_reads_the_files(lake: md.Lake) -> None:
    import pyarrow as pa
    import pyarrow.dataset as pads

    table = pads.dataset(lake.files(NAME), format="parquet").to_table()
    assert table.schema.field("symbol").type in (pa.string(), pa.large_string(), pa.string_view())
    assert table.schema.field("cik").type in (pa.string(), pa.large_string(), pa.string_view())
    frame = table.to_pandas()
    _text_ids(frame)
    pd.testing.assert_frame_equal(_normal(frame), _expected(lake))


def test_deltalake_reads_the_table(lake: md.Lake) -> None:
    from deltalake import DeltaTable

    table = DeltaTable(lake.path(NAME))
    assert sorted(table.file_uris()) == sorted(lake.files(NAME))
    frame = table.to_pandas(columns=KEY_COLUMNS)
    _text_ids(frame)
    pd.testing.assert_frame_equal(_normal(frame), _expected(lake))


def test_duckdb_reads_the_files(lake: md.Lake) -> None:
    import duckdb

    with duckdb.connect() as con:
        files = {"files": lake.files(NAME)}
        frame = con.sql("select * from read_parquet($files)", params=files).to_arrow_table()
        frame = frame.to_pandas()  # DuckDB's .df() warns under pandas 3.1
        count = con.execute(
            "select count(*) from read_parquet($files) where symbol = '0700'",
            {"files": lake.files(NAME)},
        ).fetchone()
    _text_ids(frame)
    assert count is not None and count[0] == int((frame["symbol"] == "0700").sum()) > 0
    pd.testing.assert_frame_equal(_normal(frame), _expected(lake))


def test_polars_scans_the_delta_table(lake: md.Lake) -> None:
    pl = pytest.importorskip("polars", reason="Polars comes with the lake-engines extra")
    lazy = pl.scan_delta(lake.path(NAME))
    frame = lazy.collect()
    assert frame.schema["symbol"] == pl.String and frame.schema["cik"] == pl.String
    assert lazy.filter(pl.col("symbol") == "0700").collect().height > 0
    _text_ids(frame.to_pandas())
    pd.testing.assert_frame_equal(_normal(frame.to_pandas()), _expected(lake))
    files = pl.scan_parquet(lake.files(NAME)).collect()  # the file list, as documented
    assert files.height == frame.height


def test_polars_readers_during_compactions_in_another_process(tmp_path: Path) -> None:
    """Polars over the Delta table (``scan_delta``) and over ``lake.files()``, looping while
    another process compacts three datasets: no error, no wrong count."""
    pl = pytest.importorskip("polars", reason="Polars comes with the lake-engines extra")
    from .compaction_race import read_during_compactions

    readers = {
        "polars scan_delta": lambda lake, name: (
            pl.scan_delta(lake.path(name)).select(pl.len()).collect().item()
        ),
        "polars files": lambda lake, name: (
            pl.scan_parquet(lake.files(name)).select(pl.len()).collect().item()
        ),
    }
    with Sandbox(extra_symbols=["0700"]) as server:
        client = md.Client(api_key=KEY, base_url=server.url, cache=False)
        read_during_compactions(md.Lake(tmp_path / "lake", client=client), readers)


def test_dask_on_a_two_worker_cluster_reads_the_files(lake: md.Lake) -> None:
    dd = pytest.importorskip("dask.dataframe", reason="Dask comes with the lake-engines extra")
    distributed = pytest.importorskip("distributed", reason="in the lake-engines extra")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as dask_client,
    ):
        assert len(dask_client.scheduler_info()["workers"]) == 2
        frame = dd.read_parquet(lake.files(NAME)).compute()
    _text_ids(frame)
    pd.testing.assert_frame_equal(_normal(frame), _expected(lake))


@pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs a Java runtime")
def test_spark_reads_the_files(lake: md.Lake) -> None:
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
        df = spark.read.parquet(*lake.files(NAME))
        assert dict(df.dtypes)["symbol"] == "string" and dict(df.dtypes)["cik"] == "string"
        rows = [r.asDict() for r in df.select(*KEY_COLUMNS).collect()]
    finally:
        spark.stop()
    frame = pd.DataFrame(rows, columns=KEY_COLUMNS)
    _text_ids(frame)
    pd.testing.assert_frame_equal(_normal(frame), _expected(lake))


# --- S3 --------------------------------------------------------------------------------------------


@pytest.fixture
def s3_uri(s3_server: S3, s3_env: None) -> str:
    """A lake root in a new bucket of the session's local S3 server (conftest)."""
    return s3_server.uri(s3_server.bucket())


def test_a_lake_on_s3_syncs_reads_queries_and_compacts(s3_uri: str, tmp_path: Path) -> None:
    with Sandbox(extra_symbols=["0700"]) as server:
        client = md.Client(api_key=KEY, base_url=server.url, cache=False)
        client.sandbox = server
        lake = md.Lake(s3_uri, client=client)
        bucket = s3_uri.split("/")[2]
        assert lake.path("insider_trading") == f"s3://{bucket}/lake/insider_trading"
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
