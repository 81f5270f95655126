"""Exports: files are written, read back with openpyxl / pyarrow / pandas / csv, and checked."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import sys
from pathlib import Path

import numpy as np
import openpyxl
import pandas as pd
import pyarrow.parquet as pq
import pytest

import mdframes as md
from mdframes.io import (
    read_parquet,
    sheet_names,
    spreadsheet_frame,
    to_csv,
    to_excel,
    to_parquet,
)
from mdframes.registry import REGISTRY

PREFIXES = ["=", "+", "-", "@", "\t", "\r"]
PAYLOAD = "cmd|' /c calc'!A1"


def contract_frame() -> pd.DataFrame:
    """A small frame with every dtype the loaders produce."""
    df = pd.DataFrame(
        {
            "symbol": pd.Series(["AAPL", "MSFT", "BRK.B"], dtype="string"),
            "name": pd.Series(["Apple Inc.", "Société Générale 日本", pd.NA], dtype="string"),
            "transaction_type": pd.Series(["Purchase", "Sale", None], dtype="category"),
            "date": pd.to_datetime(["2026-01-05", "2026-01-06", None]).astype("datetime64[ns]"),
            "filed_at": pd.Series(
                pd.to_datetime(["2026-01-05T14:30:00Z", None, "2026-01-07T00:00:00Z"])
            ).astype("datetime64[ns, UTC]"),
            "shares": pd.array([100, -5, None], dtype="Int64"),
            "score": [-0.4, 0.25, np.nan],
            "issue_codes": [["TAX", "DEF"], [], None],
            "extra": [{"a": 1, "b": [1, 2]}, None, {"c": "x"}],
            "cik": pd.Series(["0000320193", None, "0000789019"], dtype="string"),
        }
    )
    df.attrs = {
        "dataset": "insider_trading",
        "summary": {"total_tickers": 3, "average_score": -0.05, "top": ["AAPL", "MSFT"]},
        "last_updated": pd.Timestamp("2026-01-07T12:00:00Z"),
        "metadata": {"expected_short_term": 1.5},
        "failed": {"XYZ": "404 NOT_FOUND"},
    }
    return df


def all_cells(path: Path):
    wb = openpyxl.load_workbook(path)
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            yield from row


def sheet_rows(path: Path, sheet: int | str = 0) -> list[tuple]:
    wb = openpyxl.load_workbook(path)
    ws = wb.worksheets[sheet] if isinstance(sheet, int) else wb[sheet]
    return list(ws.iter_rows(values_only=True))


def xml_text(text: str) -> str:
    """How text reads back from XML, which turns a carriage return into a line feed."""
    return text.replace("\r", "\n")


# --- Excel -----------------------------------------------------------------------------------


def test_excel_values_and_types_read_back(tmp_path: Path) -> None:
    path = to_excel(contract_frame(), tmp_path / "out.xlsx")
    assert isinstance(path, Path) and path.exists()
    rows = sheet_rows(path)
    header, first, second, third = rows
    assert header == (
        "symbol",
        "name",
        "transaction_type",
        "date",
        "filed_at (UTC)",  # converted from aware times: the header says so
        "shares",
        "score",
        "issue_codes",
        "extra",
        "cik",
    )
    assert first == (
        "AAPL",
        "Apple Inc.",
        "Purchase",
        dt.datetime(2026, 1, 5),
        dt.datetime(2026, 1, 5, 14, 30),
        100,
        -0.4,
        "TAX; DEF",
        '{"a":1,"b":[1,2]}',
        "0000320193",
    )
    assert second[1] == "Société Générale 日本"
    # NA of every dtype is an empty cell; an empty list is empty text.
    assert third[1] is None and third[2] is None and third[3] is None
    assert third[5] is None and third[6] is None and third[7] is None
    assert second[4] is None and second[9] is None
    assert second[7] in (None, "")


def test_excel_types_of_cells(tmp_path: Path) -> None:
    path = to_excel(contract_frame(), tmp_path / "out.xlsx")
    ws = openpyxl.load_workbook(path).worksheets[0]
    assert ws["F2"].data_type == "n" and ws["G2"].data_type == "n"
    assert ws["D2"].is_date and ws["D2"].number_format == "yyyy-mm-dd"  # a date column
    assert ws["E2"].is_date and "h" in ws["E2"].number_format  # a timestamp column
    assert ws["J2"].data_type == "s"  # cik stays zero-padded text


def test_excel_no_index_frozen_header_and_widths(tmp_path: Path) -> None:
    df = pd.DataFrame({"short": [1, 2], "long_text": ["x" * 500, "y"]}, index=[10, 20])
    path = to_excel(df, tmp_path / "w.xlsx")
    ws = openpyxl.load_workbook(path).worksheets[0]
    assert ws.freeze_panes == "A2"
    assert [c.value for c in ws[1]] == ["short", "long_text"]  # no index column
    assert ws["A2"].value == 1
    assert ws.column_dimensions["B"].width == 60  # capped
    assert 6 <= ws.column_dimensions["A"].width < 20
    assert ws["A1"].font.b


def test_excel_named_index_is_kept_as_a_column(tmp_path: Path) -> None:
    df = pd.DataFrame({"date": pd.to_datetime(["2026-01-05"]), "score": [0.1]}).set_index("date")
    rows = sheet_rows(to_excel(df, tmp_path / "i.xlsx"))
    assert rows == [("date", "score"), (dt.datetime(2026, 1, 5), 0.1)]


def test_excel_never_stores_a_formula(tmp_path: Path) -> None:
    df = contract_frame()
    df["note"] = pd.Series(["=SUM(A1:A2)", "=1", "="], dtype="string")
    df['=HYPERLINK("http://x")'] = ["=a", "=b", "=c"]
    df.attrs["summary"]["=evil"] = "=cmd"
    path = to_excel({"a": df, "b": df}, tmp_path / "f.xlsx")
    cells = list(all_cells(path))
    assert len(cells) > 50
    assert all(c.data_type != "f" for c in cells)


@pytest.mark.parametrize("prefix", PREFIXES)
def test_excel_neutralises_every_formula_prefix(tmp_path: Path, prefix: str) -> None:
    text = prefix + PAYLOAD
    df = pd.DataFrame(
        {
            "text": pd.Series([text], dtype="string"),
            "obj": pd.Series([text], dtype=object),
            "cat": pd.Series([text], dtype="category"),
            "codes": [[text, "b"]],
            text: [1],
        }
    )
    df.attrs["summary"] = {"key": text}
    path = to_excel(df, tmp_path / "p.xlsx")
    safe = xml_text("'" + text)
    rows = sheet_rows(path)
    assert rows[0] == ("text", "obj", "cat", "codes", safe)  # headers too
    assert rows[1] == (safe, safe, safe, f"{safe}; b", 1)
    summary = sheet_rows(path, 1)
    assert summary == [("key", "value"), ("key", safe)]


def test_excel_neutralises_later_list_items_and_error_literals(tmp_path: Path) -> None:
    df = pd.DataFrame(
        {
            "codes": [["ok", "=bad", "-1"], [-3, 4]],
            "text": pd.Series(["#N/A", "a=b"], dtype="string"),
        }
    )
    rows = sheet_rows(to_excel(df, tmp_path / "l.xlsx"))
    assert rows[1] == ("ok; '=bad; -1", "'#N/A")  # a plain number is no formula
    # A bare negative number first in a list makes the text start with "-".
    assert rows[2] == ("'-3; 4", "a=b")


def test_excel_negative_numbers_stay_numbers(tmp_path: Path) -> None:
    df = pd.DataFrame(
        {
            "score": [-0.75, -1.0],
            "change": pd.array([-12, -1], dtype="Int64"),
            "flt": pd.array([-0.5, None], dtype="Float64"),
            "cat": pd.Series([-2, -3], dtype="category"),
            "obj": pd.Series([-7, np.int64(-8)], dtype=object),
        }
    )
    path = to_excel(df, tmp_path / "n.xlsx")
    ws = openpyxl.load_workbook(path).worksheets[0]
    assert [c.value for c in ws[2]] == [-0.75, -12, -0.5, -2, -7]
    assert [c.value for c in ws[3]] == [-1.0, -1, None, -3, -8]
    assert all(c.data_type == "n" for c in ws[2])


def test_excel_aware_timestamps_become_naive_utc(tmp_path: Path) -> None:
    # 09:30 in New York during daylight saving time is 13:30 UTC; in winter, 14:30 UTC.
    ny = pd.Series(
        pd.to_datetime(["2026-07-01 09:30", "2026-01-15 09:30"]).tz_localize("America/New_York")
    )
    tokyo = pd.Timestamp("2026-07-01 09:00", tz="Asia/Tokyo")
    df = pd.DataFrame({"ny": ny, "obj": pd.Series([tokyo, None], dtype=object)})
    rows = sheet_rows(to_excel(df, tmp_path / "t.xlsx"))
    assert rows[1] == (dt.datetime(2026, 7, 1, 13, 30), dt.datetime(2026, 7, 1, 0, 0))
    assert rows[2] == (dt.datetime(2026, 1, 15, 14, 30), None)


def test_excel_drops_control_characters_and_cuts_long_text(tmp_path: Path) -> None:
    df = pd.DataFrame({"t": ["a\x00b\x1fc\td", "z" * 40_000]})
    rows = sheet_rows(to_excel(df, tmp_path / "c.xlsx"))
    assert rows[1] == ("abc\td",)
    assert rows[2][0] == "z" * 32_767


def test_excel_inf_is_readable_text(tmp_path: Path) -> None:
    rows = sheet_rows(to_excel(pd.DataFrame({"x": [np.inf, -np.inf]}), tmp_path / "inf.xlsx"))
    assert rows[1:] == [("inf",), ("'-inf",)]


def test_summary_goes_to_its_own_sheet(tmp_path: Path) -> None:
    path = to_excel(contract_frame(), tmp_path / "s.xlsx")
    wb = openpyxl.load_workbook(path)
    assert wb.sheetnames == ["insider_trading", "insider_trading summary"]
    assert list(wb["insider_trading summary"].iter_rows(values_only=True)) == [
        ("key", "value"),
        ("total_tickers", 3),
        ("average_score", -0.05),
        ("top", "AAPL; MSFT"),
    ]


def test_single_frame_sheet_named_after_dataset(tmp_path: Path) -> None:
    df = pd.DataFrame({"a": [1]})
    df.attrs["dataset"] = "screener/congress/house"
    assert openpyxl.load_workbook(to_excel(df, tmp_path / "d.xlsx")).sheetnames == [
        "screener_congress_house"
    ]
    plain = pd.DataFrame({"a": [1]})
    assert openpyxl.load_workbook(to_excel(plain, tmp_path / "p.xlsx")).sheetnames == ["data"]


def test_sheet_names_cut_cleaned_and_deduplicated(tmp_path: Path) -> None:
    long = "a_very_long_dataset_name_that_goes_on_and_on"
    frames = {
        long: pd.DataFrame({"a": [1]}),
        long.upper(): pd.DataFrame({"a": [2]}),
        "x[1]:*?/\\y": pd.DataFrame({"a": [3]}),
        "": pd.DataFrame({"a": [4]}),
        "'quoted'": pd.DataFrame({"a": [5]}),
        "History": pd.DataFrame({"a": [6]}),
    }
    frames[long].attrs["summary"] = {"n": 1}
    path = to_excel(frames, tmp_path / "n.xlsx")
    names = openpyxl.load_workbook(path).sheetnames
    # Too long: whole trailing words are dropped, never a word cut in the middle.
    assert names == [
        "a_very_long_dataset_name_that",
        "a_very_long_dataset summary",
        "A_VERY_LONG_DATASET_NAME (2)",
        "x_1______y",
        "Sheet",
        "quoted",
        "History_",
    ]
    assert all(0 < len(n) <= 31 for n in names)
    assert len({n.casefold() for n in names}) == len(names)
    # Each sheet holds its own frame.
    assert sheet_rows(path, 2)[1] == (2,)


def test_sheet_names_function() -> None:
    assert sheet_names(["a", "A", "a", "b/c"]) == ["a", "A (2)", "a (3)", "b_c"]
    # One word longer than Excel allows is the only name that is cut inside a word.
    assert sheet_names(["x" * 40, "X" * 40]) == ["x" * 31, "X" * 27 + " (2)"]


def test_long_dataset_sheet_names_are_readable_abbreviations(tmp_path: Path) -> None:
    frames = {}
    for name in ("screener/government-contracts", "screener/professionalnet", "screener/news"):
        df = pd.DataFrame({"a": [1]})
        df.attrs["summary"] = {"n": 1}
        frames[name] = df
    names = openpyxl.load_workbook(to_excel(frames, tmp_path / "s.xlsx")).sheetnames
    assert names == [
        "screener_government-contracts",
        "screener_govt-contracts summary",
        "screener_professionalnet",
        "screener_profnet summary",
        "screener_news",
        "screener_news summary",
    ]
    every_word = {w for n in REGISTRY for w in re.split(r"[_/\-]", n)} | {"summary", "scr"}
    for name in names:
        for word in re.split(r"[_\s-]", name):
            assert word in every_word or word in ("govt", "profnet"), (name, word)


def test_excel_rejects_what_it_cannot_write(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one"):
        to_excel({}, tmp_path / "e.xlsx")
    with pytest.raises(TypeError):
        to_excel([pd.DataFrame()], tmp_path / "e.xlsx")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sheet 'a'"):
        to_excel({"a": [1, 2]}, tmp_path / "e.xlsx")  # type: ignore[dict-item]
    too_long = pd.DataFrame({"a": np.zeros(1_048_576, dtype=np.int8)})
    with pytest.raises(ValueError, match="Excel's limit"):
        to_excel(too_long, tmp_path / "e.xlsx")
    assert not (tmp_path / "e.xlsx").exists()


def test_excel_twenty_thousand_rows(tmp_path: Path) -> None:
    n = 20_000
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "symbol": pd.Series(rng.choice(["AAPL", "=X", "-B"], n), dtype="string"),
            "type": pd.Series(rng.choice(["Purchase", "Sale"], n), dtype="category"),
            "date": pd.date_range("2000-01-01", periods=n, freq="D"),
            "ts": pd.date_range("2000-01-01", periods=n, freq="h", tz="UTC"),
            "shares": pd.array(rng.integers(-5, 1000, n), dtype="Int64"),
            "score": rng.normal(size=n),
            "codes": [["TAX", "=DEF"]] * n,
            "x1": rng.normal(size=n),
            "x2": rng.normal(size=n),
            "cik": pd.Series(["0000320193"] * n, dtype="string"),
        }
    )
    path = to_excel(df, tmp_path / "big.xlsx")
    wb = openpyxl.load_workbook(path, read_only=True)
    ws = wb.worksheets[0]
    rows = ws.iter_rows(values_only=True)
    assert len(next(rows)) == 10
    count = 0
    for row in rows:
        count += 1
        assert not (isinstance(row[0], str) and row[0][0] in "=-")
    assert count == n
    wb.close()


# --- CSV ------------------------------------------------------------------------------------


def test_csv_follows_the_spreadsheet_rules(tmp_path: Path) -> None:
    df = contract_frame()
    df["note"] = pd.Series(["=1+1", "@SUM(A1)", "\tx"], dtype="string")
    path = to_csv(df, tmp_path / "out.csv")
    assert isinstance(path, Path)
    raw = path.read_bytes()
    assert not raw.startswith(b"\xef\xbb\xbf")
    text = raw.decode("utf-8")  # UTF-8, non-ASCII intact
    assert "Société Générale 日本" in text
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0][0] == "symbol"  # no index column
    assert rows[0][-1] == "note"
    assert rows[1] == [
        "AAPL",
        "Apple Inc.",
        "Purchase",
        "2026-01-05",
        "2026-01-05 14:30:00",
        "100",
        "-0.4",
        "TAX; DEF",
        '{"a":1,"b":[1,2]}',
        "0000320193",
        "'=1+1",
    ]
    assert rows[2][-1] == "'@SUM(A1)"
    assert rows[3][-1] == "'\tx"
    assert rows[3][1:4] == ["", "", ""]  # NA -> empty field


@pytest.mark.parametrize("prefix", PREFIXES)
def test_csv_neutralises_every_prefix(tmp_path: Path, prefix: str) -> None:
    text = prefix + PAYLOAD
    df = pd.DataFrame({text: pd.Series([text], dtype="string"), "codes": [[text]]})
    back = pd.read_csv(to_csv(df, tmp_path / "p.csv"), dtype=str, keep_default_na=False)
    safe = "'" + text
    assert list(back.columns) == [safe, "codes"]
    assert back.iloc[0].tolist() == [safe, safe]


def test_csv_numbers_and_times(tmp_path: Path) -> None:
    df = pd.DataFrame(
        {
            "score": [-0.5, 0.25],
            "n": pd.array([-3, None], dtype="Int64"),
            "at": pd.Series(
                pd.to_datetime(["2026-03-01 12:00", "2026-03-01 23:30"])
            ).dt.tz_localize("Europe/Berlin"),
        }
    )
    back = pd.read_csv(to_csv(df, tmp_path / "n.csv"))
    assert back["score"].tolist() == [-0.5, 0.25]  # read back as numbers, not text
    assert back["n"].iloc[0] == -3 and pd.isna(back["n"].iloc[1])
    # CSV keeps the frame's names (CONTRACT §6); the times are naive UTC.
    assert list(back.columns) == ["score", "n", "at"]
    assert back["at"].tolist() == ["2026-03-01 11:00:00", "2026-03-01 22:30:00"]


# Leading characters a spreadsheet may skip before a formula: line feed, spaces, no-break
# and ideographic space, BOM, zero-width space and joiners, and a mix of them.
BLANK_LEADS = ["\n", " ", "   ", "\u00a0", "\u3000", "\ufeff", "\u200b", "\u2060", " \n\u00a0"]


@pytest.mark.parametrize("lead", BLANK_LEADS)
@pytest.mark.parametrize("prefix", ["=", "+", "-", "@", "\uff1d"])
def test_formulas_behind_blank_characters_are_neutralised(
    tmp_path: Path, lead: str, prefix: str
) -> None:
    text = lead + prefix + PAYLOAD
    df = pd.DataFrame({"text": pd.Series([text], dtype="string"), "codes": [["ok", text]]})
    back = pd.read_csv(to_csv(df, tmp_path / "b.csv"), dtype=str, keep_default_na=False)
    assert back.iloc[0].tolist() == ["'" + text, f"ok; '{text}"]
    rows = sheet_rows(to_excel(df, tmp_path / "b.xlsx"))
    assert rows[1] == (xml_text("'" + text), xml_text(f"ok; '{text}"))
    assert all(c.data_type != "f" for c in all_cells(tmp_path / "b.xlsx"))


@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ("a;=1+1", "a;'=1+1"),
        ("a; =1+1", "a; '=1+1"),
        ("x;\u00a0@SUM(A1)", "x;\u00a0'@SUM(A1)"),
        ("a;b;-2+3", "a;b;'-2+3"),
        ("=1;=2", "'=1;'=2"),
        ("Buy; Sell", "Buy; Sell"),
        ("a=b;c", "a=b;c"),
    ],
)
def test_parts_after_a_semicolon_are_neutralised(tmp_path: Path, text: str, safe: str) -> None:
    # In a ';'-separator locale "a;=1+1" opens as two cells, the second a formula.
    df = pd.DataFrame({"text": [text]})
    raw = to_csv(df, tmp_path / "s.csv").read_text(encoding="utf-8")
    assert raw.splitlines()[1] == safe
    for locale_cell in raw.splitlines()[1].split(";"):
        assert not locale_cell.lstrip(" \u00a0").startswith(("=", "+", "-", "@"))


def test_csv_safe_false_writes_text_as_it_is(tmp_path: Path) -> None:
    texts = ["-3% on the day", "=1+1", "a;=b", "+44 20 7946 0000", "@handle"]
    df = pd.DataFrame(
        {
            "note": pd.Series(texts, dtype="string"),
            "tags": [["-x", "=y"]] * 5,
            "at": pd.Series(pd.to_datetime(["2026-03-01 12:00"] * 5)).dt.tz_localize("UTC"),
        }
    )
    back = pd.read_csv(to_csv(df, tmp_path / "raw.csv", safe=False), keep_default_na=False)
    assert back["note"].tolist() == texts
    assert back["tags"].tolist() == ["-x; =y"] * 5  # lists are still joined
    assert back["at"].tolist() == ["2026-03-01 12:00:00"] * 5  # times still UTC
    default = pd.read_csv(to_csv(df, tmp_path / "safe.csv"), keep_default_na=False)
    assert default["note"].tolist() == [
        "'" + texts[0],
        "'=1+1",
        "a;'=b",
        "'+44 20 7946 0000",
        "'@handle",
    ]


def test_utc_marker_only_on_converted_columns(tmp_path: Path) -> None:
    df = pd.DataFrame(
        {
            "naive": pd.to_datetime(["2026-01-05 10:00"]),
            "aware": pd.Series(pd.to_datetime(["2026-01-05 10:00"])).dt.tz_localize("Asia/Tokyo"),
            "mixed_object": pd.Series([pd.Timestamp("2026-01-05 10:00", tz="UTC")], dtype=object),
            "date": pd.to_datetime(["2026-01-05"]),
        }
    ).set_index(pd.Index([pd.Timestamp("2026-01-05", tz="UTC")], name="asof"))
    header = sheet_rows(to_excel(df, tmp_path / "u.xlsx"))[0]
    assert header == ("asof (UTC)", "naive", "aware (UTC)", "mixed_object (UTC)", "date")
    # CSV keeps the frame's names exactly (CONTRACT §6): only an Excel header says UTC.
    back = pd.read_csv(to_csv(df, tmp_path / "u.csv"))
    assert list(back.columns) == ["asof", "naive", "aware", "mixed_object", "date"]


def test_spreadsheet_frame_leaves_input_untouched() -> None:
    df = contract_frame()
    before = df.copy()
    out = spreadsheet_frame(df)
    pd.testing.assert_frame_equal(df, before)
    assert out.shape == df.shape
    assert all(dtype == np.dtype(object) for dtype in out.dtypes)


# --- Parquet --------------------------------------------------------------------------------


def test_parquet_round_trip_is_equal(tmp_path: Path) -> None:
    # Dict cells become Parquet structs whose keys are unioned over rows: not round-trippable.
    df = contract_frame().drop(columns="extra")
    df["str_default"] = pd.Series(["a", None, "c"], dtype="str")
    df["flag"] = pd.array([True, None, False], dtype="boolean")
    path = to_parquet(df, tmp_path / "out.parquet")
    assert isinstance(path, Path)
    back = pd.read_parquet(path)
    pd.testing.assert_frame_equal(back, df)
    assert back["transaction_type"].dtype == "category"
    assert back["shares"].dtype == "Int64"
    assert str(back["filed_at"].dtype) == "datetime64[ns, UTC]"
    assert list(back["issue_codes"].iloc[0]) == ["TAX", "DEF"]


def test_parquet_attrs_are_stored(tmp_path: Path) -> None:
    df = contract_frame().drop(columns="extra")
    before = dict(df.attrs)
    path = to_parquet(df, tmp_path / "a.parquet")
    assert df.attrs == before  # the caller's frame is untouched
    plain = pd.read_parquet(path).attrs
    assert plain["dataset"] == "insider_trading"
    assert plain["summary"] == df.attrs["summary"]
    assert plain["metadata"] == {"expected_short_term": 1.5}
    assert plain["failed"] == {"XYZ": "404 NOT_FOUND"}
    assert plain["last_updated"] == "2026-01-07T12:00:00+00:00"  # JSON: ISO text
    typed = read_parquet(path)
    assert typed.attrs == df.attrs  # read_parquet restores the Timestamp
    assert typed["issue_codes"].tolist() == [["TAX", "DEF"], [], None]
    pd.testing.assert_frame_equal(typed, df)


def test_parquet_attrs_reach_pandas_without_pyarrows_own_attrs(tmp_path: Path) -> None:
    # pyarrow < 21 keeps no attrs in its pandas metadata: the file as such a pyarrow writes
    # it (the "attributes" entry taken out) still gives pd.read_parquet the attrs, from
    # pandas' own PANDAS_ATTRS entry.
    import json

    import pyarrow.parquet as pq

    df = pd.DataFrame({"a": [1, 2]})
    df.attrs = {"dataset": "sentiment", "summary": {"rows": 2}}
    path = to_parquet(df, tmp_path / "a.parquet")
    table = pq.read_table(path)
    metadata = dict(table.schema.metadata)
    pandas_meta = json.loads(metadata[b"pandas"])
    pandas_meta.pop("attributes", None)
    metadata[b"pandas"] = json.dumps(pandas_meta).encode()
    pq.write_table(table.replace_schema_metadata(metadata), tmp_path / "old.parquet")
    assert pd.read_parquet(tmp_path / "old.parquet").attrs == df.attrs
    assert read_parquet(tmp_path / "old.parquet").attrs == df.attrs


def test_parquet_warns_about_attrs_it_cannot_store(tmp_path: Path) -> None:
    df = pd.DataFrame({"a": [1]})
    df.attrs = {"dataset": "x", "handle": object()}
    with pytest.warns(UserWarning, match="handle"):
        path = to_parquet(df, tmp_path / "w.parquet")
    assert pd.read_parquet(path).attrs == {"dataset": "x"}


def test_read_parquet_of_a_foreign_file(tmp_path: Path) -> None:
    df = pd.DataFrame({"a": [1, 2]})
    df.to_parquet(tmp_path / "f.parquet")
    pd.testing.assert_frame_equal(read_parquet(tmp_path / "f.parquet"), df)
    assert b"mdframes" not in (pq.read_schema(tmp_path / "f.parquet").metadata or {})


# --- public names and optional dependencies --------------------------------------------------


def test_package_exports() -> None:
    assert md.to_excel is to_excel and md.to_csv is to_csv and md.to_parquet is to_parquet


@pytest.mark.parametrize(
    ("module", "call", "extra"),
    [
        ("openpyxl", lambda p: to_excel(pd.DataFrame({"a": [1]}), p / "x.xlsx"), "mdframes[excel]"),
        (
            "pyarrow",
            lambda p: to_parquet(pd.DataFrame({"a": [1]}), p / "x.pq"),
            "mdframes[parquet]",
        ),
        ("pyarrow", lambda p: read_parquet(p / "x.pq"), "mdframes[parquet]"),
    ],
)
def test_missing_optional_dependency_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, call, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes "import module" raise ImportError
    with pytest.raises(
        ImportError, match=rf'pip install "{extra}"'.replace("[", r"\[").replace("]", r"\]")
    ):
        call(tmp_path)


# --- Excel number formats, and CSV/Parquet names (CONTRACT §6) -----------------------------------


def test_excel_cells_carry_number_and_date_formats(tmp_path: Path) -> None:
    df = pd.DataFrame(
        {
            "symbol": ["AAPL", "MSFT"],
            "date": pd.to_datetime(["2026-03-02", "2026-03-03"]),
            "shares": pd.array([1200, None], dtype="Int64"),
            "total_value": pd.array([1_234_567, 5], dtype="Int64"),
            "price_per_share": [182.5, 9.125],
            "ratio": [0.8571, 1.2],
            "score": [0.2883, -0.5],
            "year": pd.array([2026, 2025], dtype="Int64"),
            "filed_at": pd.Series(
                pd.to_datetime(["2026-03-02 13:30", "2026-03-03 09:00"])
            ).dt.tz_localize("UTC"),
            "flag": [True, False],
        }
    )
    path = to_excel(df, tmp_path / "f.xlsx")
    ws = openpyxl.load_workbook(path).worksheets[0]
    header = [c.value for c in ws[1]]
    assert header[-2] == "filed_at (UTC)"  # an Excel header may say UTC
    formats = {name: ws.cell(row=2, column=i + 1).number_format for i, name in enumerate(header)}
    assert formats == {
        "symbol": "General",
        "date": "yyyy-mm-dd",
        "shares": "#,##0",
        "total_value": "#,##0",
        "price_per_share": "#,##0.00",
        "ratio": "#,##0.00",
        "score": "0.00##",
        "year": "0",
        "filed_at (UTC)": "yyyy-mm-dd hh:mm:ss",
        "flag": "General",
    }
    # The values stay numbers and dates; an empty cell stays empty.
    assert ws.cell(row=2, column=4).value == 1_234_567
    assert ws.cell(row=3, column=3).value is None
    assert ws.cell(row=2, column=2).value == dt.datetime(2026, 3, 2)


def test_loaded_frames_export_with_formats_and_read_back_with_the_same_names(
    client: md.Client, tmp_path: Path
) -> None:
    df = md.load_insider_trading("AAPL", limit=5, client=client)
    ws = openpyxl.load_workbook(to_excel(df, tmp_path / "i.xlsx")).worksheets[0]
    header = [c.value for c in ws[1]]
    fmt = {h: ws.cell(row=2, column=i + 1).number_format for i, h in enumerate(header)}
    assert fmt["shares"] == "#,##0" and fmt["total_value"] == "#,##0"
    assert fmt["price_per_share"] == "#,##0.00" and fmt["date"] == "yyyy-mm-dd"
    assert list(pd.read_csv(to_csv(df, tmp_path / "i.csv")).columns) == list(df.columns)
    assert list(pd.read_parquet(to_parquet(df, tmp_path / "i.parquet")).columns) == list(df.columns)
    forecast = md.load_forecast("AAPL", client=client)
    back = pd.read_csv(to_csv(forecast, tmp_path / "f.csv"))
    assert list(back.columns) == list(forecast.columns) and "last_updated" in back.columns


def test_one_sheet_naming_rule(tmp_path: Path) -> None:
    from mdframes.cli import demo
    from mdframes.io import sheet_name

    assert demo.sheet_name is sheet_name
    df = pd.DataFrame({"a": [1]})
    df.attrs["dataset"] = "screener/congress/house"
    by_attrs = openpyxl.load_workbook(to_excel(df, tmp_path / "a.xlsx")).sheetnames
    by_key = openpyxl.load_workbook(
        to_excel({"screener/congress/house": df}, tmp_path / "k.xlsx")
    ).sheetnames
    assert by_attrs == by_key == [sheet_name("screener/congress/house")]
