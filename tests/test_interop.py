"""to_arrow and to_polars: every dtype and value of every per-symbol frame survives."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import mdframes as md
from mdframes.errors import InvalidParameterError
from mdframes.io import ARROW_METADATA_KEY, to_arrow, to_polars
from mdframes.io.parquet import decode as _decode
from mdframes.registry import REGISTRY

from .conftest import valid_params

SYMBOL_DATASETS = sorted(n for n, d in REGISTRY.items() if d.scope == "symbol")


def _load(client: md.Client, name: str, **extra: Any) -> pd.DataFrame:
    params = valid_params(REGISTRY[name]) | extra
    return md.load(name, params.pop("symbols", None), client=client, **params)


def _is_list_column(s: pd.Series) -> bool:
    present = s.dropna()
    return (
        s.dtype == object and len(present) > 0 and present.map(lambda v: isinstance(v, list)).all()
    )


def _arrow_type_ok(s: pd.Series, kind: pa.DataType, declared_list: bool) -> bool:
    d = s.dtype
    if isinstance(d, pd.Int64Dtype):
        return kind == pa.int64()
    if d == np.dtype("float64"):
        return kind == pa.float64()
    if isinstance(d, pd.CategoricalDtype):
        return (
            pa.types.is_dictionary(kind)
            and pa.types.is_string(kind.value_type)
            or (pa.types.is_dictionary(kind) and pa.types.is_large_string(kind.value_type))
        )
    if isinstance(d, pd.StringDtype):
        return kind in (pa.string(), pa.large_string())
    if isinstance(d, pd.DatetimeTZDtype):
        return kind == pa.timestamp(d.unit, tz="UTC")
    if pd.api.types.is_datetime64_dtype(d):
        return kind == pa.timestamp(np.datetime_data(d)[0])
    if declared_list or _is_list_column(s):
        return kind == pa.list_(pa.string())
    return False  # a dtype this test does not know: make it known first


def _polars_type_ok(s: pd.Series, kind: Any, declared_list: bool) -> bool:
    d = s.dtype
    if isinstance(d, pd.Int64Dtype):
        return kind == pl.Int64
    if d == np.dtype("float64"):
        return kind == pl.Float64
    if isinstance(d, pd.CategoricalDtype):
        return kind == pl.Enum(list(d.categories))
    if isinstance(d, pd.StringDtype):
        return kind == pl.String
    if isinstance(d, pd.DatetimeTZDtype):
        return kind == pl.Datetime(d.unit, "UTC")
    if pd.api.types.is_datetime64_dtype(d):
        return kind == pl.Datetime(np.datetime_data(d)[0], None)
    if declared_list or _is_list_column(s):
        return kind == pl.List(pl.String)
    return False


def _plain(value: Any) -> Any:
    """One cell, comparable across pandas, Arrow and polars: NA (and NaN) -> None."""
    if isinstance(value, (list, np.ndarray)):
        return [_plain(v) for v in value]
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and np.isnan(value):
        return None
    if isinstance(value, (dt.datetime, np.datetime64)):
        return pd.Timestamp(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _cells(values: Any) -> list[Any]:
    return [_plain(v) for v in values]


def _check(df: pd.DataFrame) -> None:
    declared = {f.name for f in REGISTRY[df.attrs["dataset"]].all_fields if f.kind == "list"}
    table = to_arrow(df)
    frame = to_polars(df)
    assert table.column_names == frame.columns == list(df.columns)
    assert table.num_rows == frame.height == len(df)
    for name in df.columns:
        s = df[name]
        kind = table.schema.field(name).type
        assert _arrow_type_ok(s, kind, name in declared), f"{name}: {s.dtype} -> {kind}"
        assert _polars_type_ok(s, frame.schema[name], name in declared), (
            f"{name}: {s.dtype} -> {frame.schema[name]}"
        )
        expected = _cells(s.astype(object))
        assert _cells(table.column(name).to_pylist()) == expected, name
        assert _cells(frame[name].to_list()) == expected, name
        if isinstance(s.dtype, pd.CategoricalDtype):  # every category, used or not, in order
            assert table.column(name).combine_chunks().dictionary.to_pylist() == list(
                s.cat.categories
            )
    # Back to pandas through pyarrow's own metadata: the same frame, dtypes included.
    back = table.to_pandas()
    for name in df.columns:
        if _is_list_column(df[name]) or name in declared:
            back[name] = pd.Series(
                [v.tolist() if isinstance(v, np.ndarray) else v for v in back[name]],
                index=back.index,
                dtype=object,
            )
    pd.testing.assert_frame_equal(back, df, check_like=False)
    # attrs: typed under mdframes' key.
    stored = json.loads(table.schema.metadata[ARROW_METADATA_KEY])
    assert _decode(stored["attrs"]) == df.attrs


@pytest.mark.parametrize("name", SYMBOL_DATASETS)
def test_round_trip_of_every_per_symbol_frame(name: str, client: md.Client) -> None:
    df = _load(client, name)
    assert len(df) > 0 and df.attrs["dataset"] == name
    _check(df)


@pytest.mark.parametrize(
    "name",
    sorted(n for n in SYMBOL_DATASETS if any(f.kind == "list" for f in REGISTRY[n].all_fields)),
)
def test_empty_and_all_null_list_columns_stay_lists(name: str, client: md.Client) -> None:
    empty = _load(client, name, start="2001-01-01", end="2001-01-31")
    assert len(empty) == 0
    _check(empty)
    df = _load(client, name)
    for f in REGISTRY[name].all_fields:
        if f.kind == "list":
            df[f.name] = pd.Series([None] * len(df), index=df.index, dtype=object)
    _check(df)


def test_two_symbols_and_null_cells(client: md.Client) -> None:
    df = md.load_insider_trading(["AAPL", "NVDA"], client=client)
    df.loc[df.index[::4], ["shares", "price_per_share", "filing_date", "insider"]] = None
    df.loc[df.index[1::4], "transaction_type"] = None
    _check(df)
    table = to_arrow(df)
    assert table.column("shares").null_count == df["shares"].isna().sum() > 0


def test_index_and_attrs(tmp_path: Path) -> None:
    df = pd.DataFrame(
        {
            "date": pd.to_datetime(["2024-01-02", "2024-01-03"]).astype("datetime64[ns]"),
            "score": [0.1, -0.2],
            "tags": [["a", "b"], []],
        }
    ).set_index("date")
    df.attrs = {"dataset": "sentiment", "as_of": pd.Timestamp("2024-01-05", tz="UTC")}
    table = to_arrow(df)
    back = table.to_pandas()
    assert back.index.equals(df.index)
    plain = {"dataset": "sentiment", "as_of": "2024-01-05T00:00:00+00:00"}
    if int(pa.__version__.split(".")[0]) >= 21:  # pyarrow's own attrs (apache/arrow#47147)
        assert back.attrs == plain
    # A file written from the table: pandas reads the attrs with any pyarrow, md.read_parquet
    # with their types.
    pq.write_table(table, tmp_path / "t.parquet")
    assert pd.read_parquet(tmp_path / "t.parquet").attrs == plain
    again = md.read_parquet(tmp_path / "t.parquet")
    assert again.attrs == df.attrs and again["tags"].tolist() == [["a", "b"], []]
    frame = to_polars(df)
    assert frame.columns == ["date", "score", "tags"]  # a named index is data
    positional = to_polars(df.reset_index(drop=True).set_axis([5, 9]))
    assert positional.columns == ["score", "tags"]  # a positional one is not


def test_unused_categories_and_non_string_categories() -> None:
    df = pd.DataFrame(
        {
            "platform": pd.Categorical(["ios"], categories=["ios", "android"]),
            "level": pd.Categorical([2], categories=[1, 2, 3]),
        }
    )
    frame = to_polars(df)
    assert frame.schema["platform"] == pl.Enum(["ios", "android"])
    assert frame.filter(pl.col("platform") == "android").height == 0
    assert frame["level"].to_list() == [2]  # integer categories stay polars' own dictionary


def test_bad_input_is_refused() -> None:
    for call in (to_arrow, to_polars):
        with pytest.raises(InvalidParameterError, match="DataFrame"):
            call({"a": [1]})  # type: ignore[arg-type]
        with pytest.raises(InvalidParameterError, match="repeated: a"):
            call(pd.DataFrame([[1, 2]], columns=["a", "a"]))
        with pytest.raises(InvalidParameterError, match="Arrow"):
            call(pd.DataFrame({"mixed": pd.Series([1, "x", [2]], dtype=object)}))


@pytest.mark.parametrize(
    ("module", "call", "extra"),
    [
        ("pyarrow", to_arrow, "mdframes[parquet]"),
        ("pyarrow", to_polars, "mdframes[parquet]"),
        ("polars", to_polars, "mdframes[polars]"),
    ],
)
def test_missing_optional_dependency_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, call: Any, extra: str
) -> None:
    # Uninstalling a package inside the test run is not possible: a None entry in sys.modules
    # makes "import module" raise ImportError as if it were absent.
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=rf'pip install "{extra}"'.replace("[", r"\[")):
        call(pd.DataFrame({"a": [1]}))


def test_interop_is_exported() -> None:
    assert md.to_arrow is to_arrow and md.to_polars is to_polars


def test_an_installed_package_that_does_not_import_is_not_called_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As pyarrow 26 beside NumPy 1.26 ("pyarrow requires NumPy 2.0 or newer"): installing
    # the extra again would not help, so the message says what is wrong instead.
    from mdframes._deps import MissingExtra, require

    package = tmp_path / "brokenpkg"
    package.mkdir()
    (package / "__init__.py").write_text("raise ImportError('brokenpkg requires NumPy 9')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingExtra) as caught:
        require("brokenpkg", "parquet", "Parquet export")
    assert str(caught.value) == (
        "Parquet export needs brokenpkg, which is installed but does not import: "
        "brokenpkg requires NumPy 9"
    )
    with pytest.raises(MissingExtra, match=r'pip install "mdframes\[parquet\]"'):
        require("absentpkg_mdframes", "parquet", "Parquet export")
