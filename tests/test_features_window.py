"""A panel costs its window (issue 27, item 4): it reads a dataset from its first date minus
the longest window only, and for features without a window (``*_last``, changes) each
symbol's latest value before that, however old, not the rest of the history. A short panel
equals the same dates cut from a long one: from a real lake (latest versions and a
``known_at``), and from frames.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

import mdframes as md
from mdframes.features import Feature
from mdframes.sandbox import Sandbox

from .conftest import KEY

SYMBOLS = ["AAPL", "KO", "GME", "MSFT"]
DATASETS = ["sentiment", "put_call_ratio", "news", "professionalnet"]
FIRST, SHORT, END = "2025-10-01", "2026-08-03", "2026-09-30"
SYNC_DAYS = pd.DatetimeIndex(["2026-09-26", "2026-09-30", "2026-10-04"])  # the lake fixture's
FEATURES: list[Any] = [
    "sentiment_mean_7d",
    "sentiment_change_30d",
    "put_call_ratio_last",
    "news_count_7d",
    "employee_count_last",
    # Its last value lies ten months before the short panel's first date.
    Feature(
        "old_ratio_last",
        "put_call_ratio",
        value="ratio",
        window=None,
        agg="last",
        where=lambda df: df["date"] < pd.Timestamp("2025-11-01"),
    ),
    Feature("sentiment_last_5d", "sentiment", value="score", window=5, agg="last"),
]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[md.Lake]:
    root = tmp_path_factory.mktemp("window") / "lake"
    with Sandbox(today="2026-09-26") as world:
        client = md.Client(api_key=KEY, base_url=world.url, cache=False, progress=False)
        client.sandbox = world
        lake = md.Lake(root, client=client)
        lake.sync(DATASETS, SYMBOLS, start="2025-06-02", progress=False)
        for _ in range(2):  # revisions stored as versions, read as the latest
            world.advance(days=4)
            lake.sync(DATASETS, SYMBOLS, progress=False)
        client.close()
    yield md.Lake(root)


@pytest.fixture(scope="module")
def compacted(lake: md.Lake, tmp_path_factory: pytest.TempPathFactory) -> md.Lake:
    """The same lake copied and compacted (its files rewritten sorted, one per dataset)."""
    import shutil

    root = tmp_path_factory.mktemp("compacted") / "lake"
    shutil.copytree(lake.root, root)
    copy = md.Lake(root)
    copy.compact()
    return copy


def _cut(panel: pd.DataFrame, first: str) -> pd.DataFrame:
    dates = panel.index.get_level_values("date")
    return panel[dates >= pd.Timestamp(first)]


def _same(short: pd.DataFrame, long: pd.DataFrame) -> None:
    expected = _cut(long, SHORT)
    pd.testing.assert_frame_equal(short, expected, check_flags=False)
    assert short.attrs["features"] == long.attrs["features"]
    assert short.attrs["failed"] == long.attrs["failed"]
    assert short.attrs.get("known_at") == long.attrs.get("known_at")
    for name, entry in short.attrs["coverage"].items():
        values = expected[name].notna().to_numpy()
        dates = expected.index.get_level_values("date")[values]
        first = dates.min().date().isoformat() if len(dates) else None
        assert entry["first"] == first, name
        assert entry["non_null"] == pytest.approx(values.mean()), name


def _found_up_to_known_at(panel: pd.DataFrame, name: str, known_at: Any) -> None:
    """``name`` has a value on every row the lake could know of: with a fixed ``known_at``,
    the rows dated up to its date, later rows NA (coverage as it stood then ends there); with
    ``"row"``, the rows before the first sync day and on the sync days."""
    values = np.isfinite(panel[name].to_numpy(dtype="float64"))
    dates = panel.index.get_level_values("date")
    known = np.ones(len(panel), dtype=bool)
    if known_at == "row":  # rows between two syncs reach past what the lake had then looked at
        known = np.asarray((dates < pd.Timestamp(SYNC_DAYS[0])) | dates.isin(SYNC_DAYS))
    elif known_at is not None:
        known = np.asarray(dates <= pd.Timestamp(known_at))
        assert (~known).any()  # the panel runs past known_at: those rows are NA
    assert values[known].all() and not values[~known].any()


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
@pytest.mark.parametrize("known_at", [None, "2026-09-27", "row"])
@pytest.mark.parametrize("state", ["synced", "compacted"])
def test_a_short_panel_from_a_lake_is_the_long_one_cut(
    lake: md.Lake, compacted: md.Lake, state: str, known_at: Any
) -> None:
    # Three syncs with revisions, never compacted (files overlap in symbols and dates), and
    # the same lake compacted: the short panel is the long one's rows, whatever the files.
    source = lake if state == "synced" else compacted
    long = md.features.panel(SYMBOLS, FIRST, END, FEATURES, source=source, known_at=known_at)
    short = md.features.panel(SYMBOLS, SHORT, END, FEATURES, source=source, known_at=known_at)
    _same(short, long)
    _found_up_to_known_at(short, "old_ratio_last", known_at)  # ten months back
    if state == "compacted":
        same = md.features.panel(SYMBOLS, SHORT, END, FEATURES, source=lake, known_at=known_at)
        pd.testing.assert_frame_equal(short, same)


def test_a_short_panel_computes_on_its_window_only(lake: md.Lake) -> None:
    # Of a year of sentiment, a two-month panel's engine sorts the rows public from its
    # first date minus the change's 30 days, and one latest row per symbol before that.
    from mdframes.features.panels.definitions import resolve_features
    from mdframes.features.panels.engine import Events, day_numbers
    from mdframes.features.panels.reach import reaches

    frame = lake.read("sentiment", SYMBOLS)
    wanted = resolve_features(["sentiment_mean_7d", "sentiment_change_30d"])
    reach = reaches(wanted)["sentiment"]
    first = int(day_numbers(np.array([np.datetime64(SHORT, "ns")]))[0])
    end = int(day_numbers(np.array([np.datetime64(END, "ns")]))[0])
    events = Events(frame, "sentiment", SYMBOLS, end, first - reach.days, reach.latest)
    days = day_numbers(frame["date"].to_numpy(dtype="datetime64[ns]"))
    window = int(((days >= first - reach.days) & (days <= end)).sum())
    assert reach.days == 30 and len(events.take) == window + len(SYMBOLS)
    assert len(events.take) < len(frame) / 3


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_a_short_panel_from_frames_is_the_long_one_cut(lake: md.Lake) -> None:
    frames = {name: lake.read(name, SYMBOLS) for name in DATASETS}
    long = md.features.panel(SYMBOLS, FIRST, END, FEATURES, source=frames)
    short = md.features.panel(SYMBOLS, SHORT, END, FEATURES, source=frames)
    _same(short, long)
    from_lake = md.features.panel(SYMBOLS, SHORT, END, FEATURES, source=lake)
    pd.testing.assert_frame_equal(short, from_lake)
    # A symbol the frames do not hold has no latest value near the windows nor before:
    # the engine keeps the window's rows it picked (no second pass over older rows).
    wider = [*SYMBOLS, "ZZZZ"]
    long = md.features.panel(wider, FIRST, END, FEATURES, source=frames)
    _same(md.features.panel(wider, SHORT, END, FEATURES, source=frames), long)


def test_the_cut_keeps_each_symbols_latest_value() -> None:
    # Rows public before the windows: only each symbol's latest carrying a value enters
    # (a null ratio is skipped; equal times: the frame's later row).
    from mdframes.features.panels.engine import Events, day_numbers

    frame = pd.DataFrame(
        {
            "symbol": pd.array(["A", "A", "A", "B", "B", "A"], dtype="string"),
            "date": pd.to_datetime(
                ["2026-01-02", "2026-01-05", "2026-01-05", "2026-01-09", "2026-01-03", "2026-02-02"]
            ),
            "ratio": [1.0, 2.0, 2.5, 3.0, 4.0, 5.0],
        }
    )
    frame.loc[2, "ratio"] = np.nan
    feature = Feature("r", "put_call_ratio", value="ratio", window=None, agg="last")
    cut, end = day_numbers(np.array(["2026-02-01", "2026-02-27"], dtype="datetime64[ns]"))
    events = Events(frame, "put_call_ratio", ["A", "B"], int(end), int(cut), (feature,))
    assert sorted(events.take.tolist()) == [1, 3, 5]
    both = frame.iloc[[0, 1]].assign(ratio=[7.0, 8.0], date=pd.Timestamp("2026-01-05"))
    events = Events(pd.concat([frame, both]), "put_call_ratio", ["A", "B"], int(end), int(cut),
                    (feature,))  # fmt: skip
    assert sorted(events.take.tolist()) == [3, 5, 7]  # the later of two equal times


def test_the_second_pass_takes_the_older_rows_of_a_lacking_feature_only() -> None:
    # A lacks "other" near the windows: its old value is found; its old ratio is not taken
    # (a ratio was found near them). B never has "other": its older rows carry nothing it
    # lacks, so none enters.
    from mdframes.features.panels.engine import Events, day_numbers

    dates = ["2025-06-01", "2025-07-01", "2026-01-10", "2025-05-01", "2026-01-15", "2026-02-10"]
    frame = pd.DataFrame(
        {
            "symbol": pd.array(["A", "A", "A", "B", "B", "A"], dtype="string"),
            "date": pd.to_datetime(dates),
            "ratio": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            "other": [9.0, np.nan, np.nan, np.nan, np.nan, np.nan],
        }
    )
    latest = tuple(
        Feature(name, "put_call_ratio", value=name, window=None, agg="last")
        for name in ("ratio", "other")
    )
    cut, end = day_numbers(np.array(["2026-02-01", "2026-02-27"], dtype="datetime64[ns]"))
    events = Events(frame, "put_call_ratio", ["A", "B"], int(end), int(cut), latest)
    kept = events.frame.iloc[np.asarray(events.take)]["date"].dt.strftime("%Y-%m-%d")
    assert sorted(kept) == ["2025-06-01", "2026-01-10", "2026-01-15", "2026-02-10"]


def test_an_engine_takes_rows_as_pandas_selects_them() -> None:
    # A short panel's engine takes the window's rows column by column: the frame pandas'
    # frame[columns].iloc[rows].reset_index(drop=True) gives, for every kind of column a
    # loader makes, and for a frame with a repeated label.
    from mdframes.features.panels.engine import take_rows

    frame = pd.DataFrame(
        {
            "symbol": pd.array(["A", "B", None, "A"], dtype="string"),
            "date": pd.to_datetime(["2026-01-02", "2026-01-03", None, "2026-01-05"], utc=True),
            "kind": pd.Categorical(["x", "y", "x", None]),
            "count": pd.array([1, None, 3, 4], dtype="Int64"),
            "ratio": [0.5, np.nan, 1.5, 2.0],
            "codes": [["a"], [], None, ["b", "c"]],
            "text": pd.Series(["a", "b", "c", "d"], dtype=object),
            "mixed": pd.Series(["a", 1, None, 2.5], dtype=object),
        },
        index=[10, 11, 12, 13],
    )
    rows = np.array([0, 2, 3])
    for columns in (None, ["ratio", "symbol", "codes", "mixed"]):
        expected = (frame if columns is None else frame[columns]).iloc[rows]
        got = take_rows(frame, rows, columns)
        pd.testing.assert_frame_equal(got, expected.reset_index(drop=True), check_column_type=True)
    # Object values stay objects (a frame's constructor would infer text of an array).
    text = pd.DataFrame({"text": pd.Series(["a", "b", "c"], dtype=object)})
    expected = text.iloc[[0, 2]].reset_index(drop=True)
    pd.testing.assert_frame_equal(take_rows(text, np.array([0, 2])), expected)
    twice = pd.concat([frame[["ratio"]], frame[["ratio"]]], axis=1)
    expected = twice.iloc[rows].reset_index(drop=True)
    pd.testing.assert_frame_equal(take_rows(twice, rows), expected)


def test_the_window_rows_found_by_runs_are_those_a_scan_finds() -> None:
    # A long frame's window rows are found by searching its runs of ascending anchors:
    # the same positions as a scan, with null anchors at a run's head or amid it, runs of
    # one row and empty runs of the window.
    from mdframes.features.panels.engine import NS_PER_DAY, _rows_by_runs

    nat = np.iinfo(np.int64).min
    rng = np.random.default_rng(7)
    for _ in range(200):
        runs = []
        for _ in range(int(rng.integers(1, 30))):
            run = np.sort(rng.integers(0, 100, int(rng.integers(1, 60)))) * NS_PER_DAY
            run[: int(rng.integers(0, 3))] = nat
            if rng.random() < 0.2:
                run[int(rng.integers(0, len(run)))] = nat
            runs.append(run)
        stamps = np.concatenate(runs)
        first, last = sorted(int(d) for d in rng.integers(-5, 110, 2))
        low, high = first * NS_PER_DAY, (last + 1) * NS_PER_DAY
        scan = np.flatnonzero((stamps >= low) & (stamps < high) | (stamps == nat))
        found = _rows_by_runs(stamps, low, high)
        assert found is None or np.array_equal(found, scan)


class _Recording:
    """A real lake whose reads are noted (dataset, symbols, start, end): which rows a short
    panel asks for, not only what it computes."""

    def __init__(self, lake: md.Lake) -> None:
        self.lake = lake
        self.reads: list[tuple[str, list[str], Any, Any]] = []

    def __getattr__(self, name: str) -> Any:
        # Coverage, versions, ...: the lake's own, so the panel judges it as the lake.
        return getattr(self.lake, name)

    def read(self, dataset: str, symbols: Any = None, **kw: Any) -> pd.DataFrame:
        self.reads.append((dataset, list(symbols or []), kw.get("start"), kw.get("end")))
        return self.lake.read(dataset, symbols, **kw)


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
@pytest.mark.parametrize("known_at", [None, "2026-09-27"])
def test_a_short_panel_seeks_the_latest_values_near_its_windows(
    lake: md.Lake, known_at: Any
) -> None:
    # Of a dataset with a last value, a short panel reads a few weeks before its windows;
    # only a symbol without a value there (KO's ratio, kept ten months old) reads its older
    # history, up to where the first read began. The panel is the long one's rows.
    def ko_old(df: pd.DataFrame) -> pd.Series:
        return (df["symbol"] != "KO") | (df["date"] < pd.Timestamp("2025-11-01"))

    ko_old.columns = ["symbol", "date"]  # type: ignore[attr-defined]
    features = [
        "put_call_ratio_last",
        Feature(
            "ko_old_ratio_last",
            "put_call_ratio",
            value="ratio",
            window=None,
            agg="last",
            where=ko_old,
        ),  # fmt: skip
    ]
    long = md.features.panel(SYMBOLS, FIRST, END, features, source=lake, known_at=known_at)
    recording = _Recording(lake)
    short = md.features.panel(SYMBOLS, SHORT, END, features, source=recording, known_at=known_at)
    _same(short, long)
    _found_up_to_known_at(short, "ko_old_ratio_last", known_at)
    (_, near, first, _), (_, older, oldest, before) = recording.reads
    assert near == SYMBOLS and older == ["KO"]
    assert first > pd.Timestamp(FIRST).date() and oldest is None
    assert before == first - pd.Timedelta(days=1)


@pytest.mark.parametrize("dataset", ["sentiment", "news"])  # a date, a timestamp
def test_a_read_wholly_outside_the_stored_dates_is_empty_and_typed(
    lake: md.Lake, dataset: str
) -> None:
    # The log's statistics show no row there (a seek before the lake's first row): nothing is
    # scanned, and the frame is the read's, no rows. The edges themselves still read.
    whole = lake.read(dataset, SYMBOLS)
    first, last = whole["date"].min(), whole["date"].max()
    for bounds in ({"end": first - pd.Timedelta(days=1)}, {"start": last + pd.Timedelta(days=1)}):
        empty = lake.read(dataset, SYMBOLS, **bounds)
        pd.testing.assert_frame_equal(empty, whole.iloc[:0], check_index_type=False)
    assert len(lake.read(dataset, SYMBOLS, end=first)) >= 1
    assert len(lake.read(dataset, SYMBOLS, start=last)) >= 1


def test_coverage_answers_each_universe_as_a_fresh_one(lake: md.Lake) -> None:
    # A panel's coverage keeps each dataset's per-symbol bounds for the universe last asked
    # (a chunk's, or the panel's): another universe, or the same again, is answered as anew.
    import pickle

    from mdframes.features.panels.definitions import resolve_features
    from mdframes.features.panels.engine import day_numbers
    from mdframes.features.panels.pinned import read_coverage
    from mdframes.features.panels.unseen import Coverage

    datasets = ["sentiment", "news"]
    universe = [*SYMBOLS, "NEVER"]
    table = read_coverage(lake, datasets, universe)
    assert table is not None
    features = resolve_features(["sentiment_mean_7d", "news_count_7d", "sentiment_change_30d"])
    edges = day_numbers(np.array([FIRST, END], dtype="datetime64[ns]"))
    days = np.arange(int(edges[0]) - 200, int(edges[1]) + 20)
    kept = Coverage(table, datasets, universe)
    for symbols in (universe, ["KO", "NEVER"], universe[::-1], universe):
        for f in features:
            got = kept.covered(f, symbols, days)
            assert got.any() and not got.all()
            np.testing.assert_array_equal(
                got, Coverage(table, datasets, universe).covered(f, symbols, days)
            )
            assert not got[:, symbols.index("NEVER")].any()
    shipped = pickle.loads(pickle.dumps(kept))
    np.testing.assert_array_equal(
        shipped.covered(features[0], SYMBOLS, days), kept.covered(features[0], SYMBOLS, days)
    )


@pytest.mark.filterwarnings("ignore::mdframes.DataQualityWarning")
def test_a_short_panel_from_frames_evaluates_old_rows_of_symbols_without_a_nearer_value(
    lake: md.Lake,
) -> None:
    # Frames hold the whole history: a short panel looks for each symbol's latest value
    # before its windows in widening bands of days going back, so a feature's function
    # sees the rows near the windows and, further back, only those of a symbol with no
    # value nearer (KO's ratio, kept ten months old). The panel is the long one's rows.
    seen: list[pd.DataFrame] = []

    def ko_old(df: pd.DataFrame) -> pd.Series:
        seen.append(df[["symbol", "date"]].copy())
        return (df["symbol"] != "KO") | (df["date"] < pd.Timestamp("2025-11-01"))

    features = [
        "put_call_ratio_last",
        Feature("ko_old_ratio_last", "put_call_ratio", value="ratio", window=None, agg="last",
                where=ko_old),
    ]  # fmt: skip
    frames = {"put_call_ratio": lake.read("put_call_ratio", SYMBOLS)}
    long = md.features.panel(SYMBOLS, FIRST, END, features, source=frames)
    seen.clear()
    short = md.features.panel(SYMBOLS, SHORT, END, features, source=frames)
    _same(short, long)
    _found_up_to_known_at(short, "ko_old_ratio_last", None)
    evaluated = pd.concat(seen)
    old = evaluated["date"] < pd.Timestamp(SHORT) - pd.Timedelta(days=40)
    assert old.any() and set(evaluated.loc[old, "symbol"]) == {"KO"}
    assert len(evaluated) < len(frames["put_call_ratio"]) / 2


def test_a_chunks_coverage_shipped_to_a_worker_answers_as_the_panels() -> None:
    # A chunk's coverage (part, then pickled) holds its symbols' spans flat: a symbol with
    # gaps (several spans) and one without must answer exactly as in the panel's coverage.
    import pickle

    from mdframes.features.panels.definitions import resolve_features
    from mdframes.features.panels.unseen import Coverage

    day = pd.Timestamp
    table = pd.DataFrame({
        "dataset": ["news", "news", "news", "sentiment"],
        "symbol": ["GAPS", "ONE", "FAILED", "ONE"],
        "status": ["synced", "synced", "failed", "synced"],
        "first": [day("2025-01-01"), day("2025-03-01"), pd.NaT, pd.NaT],
        "last": [day("2025-12-31"), day("2025-09-30"), pd.NaT, day("2025-06-30")],
        "gaps": [[(day("2025-02-01"), day("2025-02-10")), (day("2025-05-01"), day("2025-05-01"))],
                 [], [], []],
        "error": [None, None, "boom", None],
    })  # fmt: skip
    universe = ["ONE", "GAPS", "FAILED", "NEVER"]
    whole = Coverage(table, ["news", "sentiment"], universe)
    features = resolve_features(["news_count_7d", "sentiment_mean_7d"])
    days = np.arange(20000, 20500)
    for chunk in (["GAPS", "NEVER"], ["FAILED", "ONE", "GAPS"], universe):
        shipped = pickle.loads(pickle.dumps(whole.part(chunk)))
        for f in features:
            np.testing.assert_array_equal(
                shipped.covered(f, chunk, days), whole.covered(f, chunk, days)
            )
        for symbol in chunk:
            for a, b in zip(
                shipped.spans("news", symbol), whole.spans("news", symbol), strict=True
            ):
                np.testing.assert_array_equal(a, b)
        assert shipped.missing == {s: v for s, v in whole.missing.items() if s in chunk}
    assert len(whole.spans("news", "GAPS")[0]) == 3
