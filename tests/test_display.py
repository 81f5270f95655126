"""Notebook display (CONTRACT §14): SyncReport, TrainingSet, Lake and the frames of
lake.info() / lake.coverage() have a compact, escaped _repr_html_ with their key figures;
str() stays plain text."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

import mdframes as md
from mdframes.lake import SyncReport

pytest.importorskip("deltalake", reason="the lake needs the lake extra")

SYMBOLS = ["AAPL", "MSFT"]
HOSTILE = "<script>alert('x')</script> & <b>"


class Page(HTMLParser):
    """The text of every table cell (rows of cells per table) and all text."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.text: list[str] = []
        self.tags: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs) -> None:
        self.tags.append(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def figures(self) -> dict[str, str]:
        """Two-cell rows of every table, as name -> value."""
        return {row[0]: row[1] for table in self.tables for row in table if len(row) == 2}


def parse(markup: str) -> Page:
    page = Page()
    page.feed(markup)
    page.close()
    return page


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[md.Lake, SyncReport]]:
    root = tmp_path_factory.mktemp("display") / "lake"
    with md.sandbox.running() as client:
        lake = md.Lake(root, client=client)
        report = lake.sync(
            ["sentiment", "insider_trading", "put_call_ratio"], SYMBOLS, start="2026-10-01"
        )
        yield lake, report


def test_sync_report_html_has_its_figures_and_one_row_per_dataset(synced) -> None:
    _, report = synced
    text = str(report)
    page = parse(report._repr_html_())
    figures = page.figures()
    assert figures["requests"] == f"{report.requests:,}"
    assert figures["new records"] == f"{report.rows_added:,}"
    (per_dataset,) = [t for t in page.tables if t and t[0][:3] == ["dataset", "done", "pending"]]
    assert {row[0]: row[1] for row in per_dataset[1:]} == {
        name: str(len(symbols)) for name, symbols in report.done.items()
    }
    assert "done" in page.text
    assert str(report) == text and "<" not in text  # str() unchanged, plain text


def test_sync_report_html_shows_failures_escaped() -> None:
    report = SyncReport(
        requests=3,
        done={"sentiment": ["AAPL"]},
        pending={"news": ["MSFT", "NVDA"]},
        failed={"insider_trading": {"TSLA": HOSTILE}},
        requests_left_estimate=2,
        stopped="budget",
        sync_id="000002-x",
    )
    markup = report._repr_html_()
    assert "<script>" not in markup and "&lt;script&gt;" in markup
    page = parse(markup)
    rows = {row[0]: row[1:] for t in page.tables for row in t if len(row) == 5}
    assert rows["news"][:2] == ["–", "2"] and rows["insider_trading"][2] == "1"
    assert HOSTILE in rows["insider_trading"][3]  # the error text, as text
    assert page.figures()["requests left (at least)"] == "2"
    assert page.figures()["stopped"] == "budget"
    assert "failed" in page.text


def test_lake_and_its_info_and_coverage_frames_show_their_totals(synced) -> None:
    lake, report = synced
    info = lake.info()
    assert type(info) is pd.DataFrame  # still a plain frame: str(), equality, dtypes
    page = parse(info._repr_html_())
    caption = page.text[0]
    assert f"{len(info)} datasets" in caption
    assert f"{int(info['rows'].sum()):,} records" in caption
    header, *rows = page.tables[0]
    assert header == list(info.columns)
    assert [r[0] for r in rows] == list(info["dataset"])
    assert [r[1] for r in rows] == [f"{n:,}" for n in info["rows"]]

    coverage = lake.coverage(symbols=[*SYMBOLS, "ZZZZ"])
    page = parse(coverage._repr_html_())
    counts = coverage["status"].astype(str).value_counts()
    for status, n in counts.items():
        assert f"{n:,} {status}" in page.text[0]
    header, *rows = page.tables[0]
    assert len(rows) == len(coverage) and header[:3] == ["dataset", "symbol", "status"]
    assert [r[2] for r in rows] == list(coverage["status"].astype(str))

    page = parse(lake._repr_html_())
    assert page.figures()["root"] == str(lake.root)
    assert any(f"{len(info)} datasets" in t for t in page.text)
    assert repr(lake) == f"Lake({lake.root!r})"


def test_lake_html_says_what_went_wrong_instead_of_raising(tmp_path: Path) -> None:
    lake = md.Lake(tmp_path / "empty")
    page = parse(lake._repr_html_())
    assert page.figures()["root"] == str(lake.root)


def test_training_set_html_has_its_shape_span_and_label(synced) -> None:
    lake, _ = synced
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = md.features.training_set(
            SYMBOLS, "2026-10-05", "2026-11-06", ["sentiment_mean_7d"], source=lake
        )
    before = repr(ts)
    page = parse(ts._repr_html_())
    figures = page.figures()
    assert figures["rows"] == f"{len(ts.X):,}"
    assert figures["features"] == str(ts.X.shape[1])
    assert figures["symbols"] == str(len(SYMBOLS))
    assert figures["label"].startswith(f"{ts.y.name}: {int(ts.y.notna().sum()):,} rows known")
    dates = ts.X.index.get_level_values(0)
    assert figures["dates"] == f"{dates.min():%Y-%m-%d} .. {dates.max():%Y-%m-%d}"
    assert any("sentiment_mean_7d" in t for t in page.text)
    assert repr(ts) == before
