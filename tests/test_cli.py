"""The ``mdframes`` command line, in-process and through the real entry points, against a
sandbox server on loopback."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
import requests

import mdframes as md
from mdframes.cli import build_parser, load_names, main
from mdframes.cli.demo import CHART_NAME, EXCEL_NAME, run_demo, sheet_name
from mdframes.registry import REGISTRY
from mdframes.sandbox import Sandbox

from .conftest import into_closed_pipe

KEY = "sandbox-key"


@pytest.fixture
def env(shared_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    monkeypatch.setenv("MDFRAMES_BASE_URL", shared_sandbox.url)
    monkeypatch.setenv("MDFRAMES_API_KEY", KEY)
    return shared_sandbox


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    # Whatever happened, the key never reaches the terminal and no traceback is shown.
    assert KEY not in out and KEY not in err
    assert "Traceback" not in err
    return code, out, err


def direct(dataset: str, symbols: object = None, **params: object) -> pd.DataFrame:
    """The same load through the library, to compare the CLI's output with."""
    with md.Client(cache=False) as client:
        return md.load(dataset, symbols, client=client, **params)


# --- help and parser ----------------------------------------------------------------------------


def test_help_shows_every_command_and_examples(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in ("demo", "load", "screen", "recent", "sandbox", "cache"):
        assert command in out
    assert "examples:" in out and "mdframes load insider_trading" in out
    assert "MDFRAMES_API_KEY" in out and "MDFRAMES_BASE_URL" in out


def test_load_help_lists_datasets_and_options_from_the_registry(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "load", "--help")
    assert code == 0
    for name in load_names():
        assert name in out
    # v1 parameters go by the v2 words: the window is --start/--end, the ticker is SYMBOL.
    v1_words = {"date_from": "start", "date_to": "end"}
    params = {v1_words.get(p.name, p.name) for n in load_names() for p in REGISTRY[n].params}
    params -= {"ticker"}
    for name in params:
        assert f"--{name.replace('_', '-')}" in out
    # Every dataset option is a registry parameter; the rest are the fixed ones.
    flags = {a.dest for a in _subparser("load")._actions if a.option_strings}
    assert flags - params == {"help", "errors", "out", "format", "no_cache", "no_validate"}


def test_load_names_are_the_registry_names() -> None:
    from mdframes import loaders

    expected = {n for n, ds in REGISTRY.items() if ds.version == "v2" and ds.scope != "screener"}
    expected |= {n for n, ds in REGISTRY.items() if ds.version == "v1"}
    assert set(load_names()) == expected - {n for n in REGISTRY if n.startswith("recent/")}
    public = {n[5:] for n in loaders.__all__ if n.startswith("load_")} - {"screener", "recent"}
    assert public <= set(load_names())
    assert "app_ratings_daily" in load_names()


def _subparser(name: str):
    import argparse

    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def test_parser_types_limit_as_int() -> None:
    args = build_parser().parse_args(["load", "lobbying", "AAPL", "--limit", "7"])
    assert args.limit == 7 and args.symbols == ["AAPL"]


def test_words_after_an_option_are_the_commands_words() -> None:
    from mdframes.cli import _parse

    args = _parse(build_parser(), ["load", "lobbying", "AAPL", "--limit", "7", "MSFT"])
    assert args.limit == 7 and args.symbols == ["AAPL", "MSFT"]
    args = _parse(build_parser(), ["lake", "coverage", "--lake", "x", "sentiment", "AAPL"])
    assert (args.action, args.args, args.lake) == ("coverage", ["sentiment", "AAPL"], "x")


# --- load ----------------------------------------------------------------------------------------


def test_load_prints_a_table_with_rows_and_dtypes(
    env: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = direct("insider_trading", "AAPL", limit=5)
    code, out, err = run(capsys, "load", "insider_trading", "AAPL", "--limit", "5")
    assert code == 0, err
    assert f"insider_trading: {len(expected)} rows x {expected.shape[1]} columns" in out
    assert "dtypes:" in out and "Int64" in out
    assert "transaction_type" in out and "AAPL" in out


def test_load_accepts_dashes_and_comma_separated_symbols(
    env: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "x.csv"
    code, _, err = run(
        capsys, "load", "insider-trading", "AAPL,MSFT", "NVDA", "--limit", "3", "--out", str(target)
    )
    assert code == 0, err
    back = pd.read_csv(target)
    assert list(dict.fromkeys(back["symbol"])) == ["AAPL", "MSFT", "NVDA"]


@pytest.mark.parametrize("suffix", [".csv", ".xlsx", ".parquet"])
def test_load_out_writes_the_format_of_the_suffix(
    env: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    target = tmp_path / f"insider{suffix}"
    code, out, err = run(
        capsys,
        "load",
        "insider_trading",
        "AAPL",
        "MSFT",
        "--start",
        "2025-01-01",
        "--out",
        str(target),
    )
    assert code == 0, err
    expected = direct("insider_trading", ["AAPL", "MSFT"], start="2025-01-01")
    assert f"wrote {len(expected)} rows" in out
    if suffix == ".csv":
        back = pd.read_csv(target)
    elif suffix == ".xlsx":
        back = pd.read_excel(target, sheet_name=0)
    else:
        back = pd.read_parquet(target)
    assert len(back) == len(expected) > 0
    assert list(back["symbol"]) == list(expected["symbol"])
    assert list(back["insider"]) == list(expected["insider"].astype(object))
    if suffix == ".parquet":  # the typed frame survives the round trip
        assert str(back["shares"].dtype) == "Int64"


def test_load_passes_chamber(
    env: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "senate.parquet"
    code, _, err = run(
        capsys, "load", "congress_trades", "NVDA", "--chamber", "senate", "--out", str(target)
    )
    assert code == 0, err
    back = pd.read_parquet(target)
    assert len(back) > 0 and set(back["chamber"].astype(str)) == {"senate"}


def test_load_passes_type_and_reads_the_daily_app_view(
    env: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    daily = tmp_path / "daily.parquet"
    code, _, err = run(capsys, "load", "app_ratings_daily", "AAPL", "--out", str(daily))
    assert code == 0, err
    back = pd.read_parquet(daily)
    assert "ios_score" in back.columns
    assert len(back) == len(direct("app_ratings_daily", "AAPL")) > 0
    monthly = tmp_path / "monthly.parquet"
    code, _, err = run(
        capsys, "load", "forecast", "AAPL", "--type", "monthly", "--out", str(monthly)
    )
    assert code == 0, err
    assert set(pd.read_parquet(monthly)["type"].astype(str)) == {"monthly"}


def test_load_discovery_dataset_without_symbols(
    env: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "load", "markets")
    assert code == 0, err
    assert "markets: 20 rows" in out and "S&P 500" in out


# --- screen and recent ---------------------------------------------------------------------------


def test_screen_with_region_prints_the_summary(
    env: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "screen", "sentiment", "--region", "US", "--limit", "10")
    assert code == 0, err
    assert "screener/sentiment:" in out and "summary:" in out and "score" in out


def test_screen_nested_dataset_to_xlsx(
    env: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "house.xlsx"
    code, _, err = run(capsys, "screen", "congress/house", "--limit", "25", "--out", str(target))
    assert code == 0, err
    book = openpyxl.load_workbook(target)
    assert book.worksheets[0].max_row > 1


@pytest.mark.parametrize("dataset", ["news", "analyst-ratings"])
def test_recent(env: Sandbox, capsys: pytest.CaptureFixture[str], dataset: str) -> None:
    code, out, err = run(capsys, "recent", dataset, "--limit", "5")
    assert code == 0, err
    assert f"recent/{dataset}: 5 rows" in out


# --- dataset names: registry names, "_" and "-" alike, "did you mean" -----------------------


@pytest.mark.parametrize(
    ("argv", "dataset"),
    [
        (["screen", "insider_trading"], "screener/insider-trading"),
        (["screen", "insider-trading"], "screener/insider-trading"),
        (["screen", "screener/insider_trading"], "screener/insider-trading"),
        (["screen", "congress/house"], "screener/congress/house"),
        (["screen", "predictions/daily"], "screener/predictions/daily"),
        (["recent", "analyst_ratings"], "recent/analyst-ratings"),
        (["load", "app_ratings_daily", "AAPL"], "app_ratings_daily"),
        (["load", "app-ratings-daily", "AAPL"], "app_ratings_daily"),
        (["load", "Insider-Trading", "AAPL"], "insider_trading"),
        (["load", "put_call_ratio", "AAPL"], "put_call_ratio"),
    ],
)
def test_every_spelling_of_a_dataset_name_loads_it(
    env: Sandbox, capsys: pytest.CaptureFixture[str], argv: list[str], dataset: str
) -> None:
    code, out, err = run(capsys, *argv, "--limit", "3")
    assert code == 0, err
    expected = direct(dataset, argv[2:] or None, limit=3)
    assert len(expected) > 0
    assert out.startswith(f"{dataset}: {len(expected)} rows")


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["load", "insider_trade", "AAPL"], "did you mean 'insider_trading'"),
        (["load", "app_rating", "AAPL"], "did you mean 'app_ratings', "),
        (["screen", "insider_tradng"], "unknown screener dataset 'insider_tradng'; did you mean"),
        (["recent", "newz"], "unknown recent dataset 'newz'; did you mean 'news'?"),
        (["load", "congress/house"], "not a load dataset; try: mdframes screen congress/house"),
        (["load", "screener/sentiment"], "try: mdframes screen sentiment"),
        (["recent", "insider_trading"], "try: mdframes load insider_trading"),
    ],
)
def test_unknown_names_get_a_suggestion(
    capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert words in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "usage", "words"),
    [
        (["load", "sentiment", "AAPL", "--strat", "2026-01-01"], "mdframes load", "--start?"),
        (["screen", "sentiment", "--regoin", "US"], "mdframes screen", "--region?"),
        (["load", "app_ratings", "AAPL", "--view", "daily"], "mdframes load", "--view"),
        (["cache", "inf"], "mdframes cache", "did you mean info?"),
        (["lod", "sentiment"], "mdframes [-h]", "did you mean load?"),
    ],
)
def test_misspelt_option_shows_its_subcommand_usage(
    capsys: pytest.CaptureFixture[str], argv: list[str], usage: str, words: str
) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.startswith(f"usage: {usage}")
    assert words in err.splitlines()[-1]


def test_sandbox_help_names_the_key_and_the_variables(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Not through run(): the sandbox's own key is public and belongs in this help.
    assert main(["sandbox", "--help"]) == 0
    out = capsys.readouterr().out
    assert f"export MDFRAMES_API_KEY={md.sandbox.SANDBOX_KEY}" in out
    assert "export MDFRAMES_BASE_URL=http://127.0.0.1:8765" in out
    assert "md.sandbox.start()" in out


def test_a_module_registers_its_own_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mdframes import cli

    def register(sub) -> None:
        p = cli.add_command(
            sub, "hello", help="greet", description="Greet.", run=lambda a: print(a.who) or 0
        )
        p.add_argument("--who", default="world")

    monkeypatch.setattr(cli, "COMMANDS", [*cli.COMMANDS, register])
    assert run(capsys, "hello", "--who", "you")[:2] == (0, "you\n")
    assert "hello" in run(capsys, "--help")[1]
    code, _, err = run(capsys, "hello", "--woh", "x")
    assert code == 2 and err.startswith("usage: mdframes hello") and "--who?" in err


# --- bad input: exit 2, one line, nothing sent ---------------------------------------------------


@pytest.mark.parametrize(
    "argv, words",
    [
        (["load", "lobbying", "AAPL", "--limit", "501"], "--limit 501 is outside"),
        (["load", "sentiment", "AAPL", "--limit", "0"], "--limit 0 is outside"),
        (["load", "no_such_data", "AAPL"], "unknown dataset 'no_such_data'"),
        (["load", "sentiment", "A/B"], "invalid symbol 'A/B'"),
        (["load", "sentiment", "AAPL", "--start", "2026-02-01", "--end", "2026-01-01"], "after"),
        (["load", "sentiment", "AAPL", "--start", "yesterday"], "not a date"),
        (["load", "sentiment", "AAPL", "--chamber", "house"], "--chamber does not apply"),
        (["load", "congress_trades", "AAPL", "--chamber", "moon"], "unknown chamber 'moon'"),
        (["load", "forecast", "AAPL", "--type", "weekly"], "unknown type 'weekly'"),
        (["load", "sentiment"], "needs at least one SYMBOL"),
        (["load", "markets", "AAPL"], "takes no SYMBOL"),
        (["load", "sentiment", "AAPL", "--out", "x.json"], "suffix"),
        (["screen", "no-such-screen"], "unknown screener dataset"),
        (["screen", "sentiment"], "needs --market or --region (see `mdframes load markets`)"),
        (["recent", "patents"], "unknown recent dataset"),
        (["sandbox", "--port", "70000"], "not a TCP port"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    # No env: bad input is caught before any configuration or network is needed.
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert words in err
    assert len(err.strip().splitlines()) == 1 and out == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["load", "sentiment", "AAPL", "--limit", "abc"],
        ["load", "sentiment", "AAPL", "--limit", "5", "--bogus"],
        ["sandbox", "--port", "8765", "extra"],
        ["nonsense"],
        [],
    ],
)
def test_argparse_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2 and "usage:" in err


# --- configuration and service errors: exit 1 ----------------------------------------------------


def test_missing_key_names_the_variable(
    shared_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MDFRAMES_BASE_URL", shared_sandbox.url)
    code, _, err = run(capsys, "load", "sentiment", "AAPL")
    assert code == 1 and "MDFRAMES_API_KEY" in err
    assert len(err.strip().splitlines()) == 1
    assert "api_key=" not in err  # the command line's words: the variable, no Client argument


def test_missing_base_url_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MDFRAMES_API_KEY", KEY)
    code, _, err = run(capsys, "screen", "insider-trading")
    assert code == 1 and "MDFRAMES_BASE_URL" in err


def test_not_found_symbol_is_an_api_error(env: Sandbox, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "load", "sentiment", "NOTFOUND")
    assert code == 1 and out == ""
    assert err.startswith("mdframes load: error: 404")
    assert len(err.strip().splitlines()) == 1


def test_skip_errors_reports_the_failed_symbol(
    env: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "load", "sentiment", "AAPL", "NOTFOUND", "--errors", "skip")
    assert code == 0
    assert "failed: NOTFOUND" in out
    assert "mdframes: warning:" in err and "NOTFOUND" in err


def test_wrong_key_is_never_echoed(
    shared_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = "wrong-key-7f3a9c1e5b"
    monkeypatch.setenv("MDFRAMES_BASE_URL", shared_sandbox.url)
    monkeypatch.setenv("MDFRAMES_API_KEY", wrong)
    for argv in (
        ["load", "sentiment", "AAPL"],
        ["load", "v1_not_a_loader", "X"],
        ["recent", "news"],
    ):
        code, out, err = run(capsys, *argv)
        assert code in (1, 2)
        assert wrong not in out + err
    code, _, err = run(capsys, "load", "sentiment", "AAPL")
    assert code == 1 and "401" in err


# --- cache ---------------------------------------------------------------------------------------


def test_cache_info_and_clear(env: Sandbox, capsys: pytest.CaptureFixture[str]) -> None:
    path = os.environ["MDFRAMES_CACHE"]
    code, out, _ = run(capsys, "cache", "info")
    assert code == 0 and path in out and "entries: 0" in out
    assert run(capsys, "load", "sentiment", "AAPL", "MSFT")[0] == 0
    code, out, _ = run(capsys, "cache", "info")
    assert code == 0 and "entries: 2 " in out
    assert "size:    " in out and Path(path).stat().st_size > 0
    code, out, _ = run(capsys, "cache", "clear")
    assert code == 0 and "removed 2 entries" in out
    code, out, _ = run(capsys, "cache", "info")
    assert "entries: 0 " in out


def test_no_cache_leaves_the_cache_empty(env: Sandbox, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "load", "markets", "--no-cache")[0] == 0
    assert not Path(os.environ["MDFRAMES_CACHE"]).exists()


# --- demo ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("demo")
    return run_demo(out, stream=open(os.devnull, "w"))  # noqa: SIM115


@pytest.fixture(scope="module")
def demo_book(demo: dict) -> openpyxl.Workbook:
    """The demo's workbook as openpyxl reads it (seconds for every sheet: read once)."""
    return openpyxl.load_workbook(demo["excel"])


def test_demo_exercises_every_registry_dataset(demo: dict) -> None:
    summary = demo["summary"]
    assert set(REGISTRY) <= set(summary["dataset"])
    assert list(summary.columns[:4]) == ["dataset", "rows", "columns", "seconds"]
    failures = summary[summary["error"] != ""]
    assert failures.empty, failures.to_string()
    assert (summary.set_index("dataset").loc[list(REGISTRY), "rows"] > 0).all()


def test_demo_applies_the_helpers(demo: dict) -> None:
    frames = demo["frames"]
    bounds = frames["helpers.congress_amount_bounds"]
    assert {"amount_min", "amount_max"} <= set(bounds.columns) and bounds[
        "amount_min"
    ].notna().any()
    assert set(frames["helpers.insider_groups"]["group"].astype(str)) <= {
        "acquisition",
        "disposition",
        "neutral",
    }
    pit = frames["helpers.point_in_time"]
    assert 0 < len(pit) < len(frames["insider_trading"])
    assert (pit["filing_date"] <= pit.attrs["as_of"]).all()


def test_demo_workbook_is_safe_and_complete(demo: dict, demo_book: openpyxl.Workbook) -> None:
    book = demo_book
    names = set(book.sheetnames)
    assert "summary" in names
    assert {sheet_name(d) for d in REGISTRY} <= names
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                assert cell.data_type != "f", (sheet.title, cell.coordinate, cell.value)
    header = [c.value for c in book["summary"][1]]
    assert header[:4] == ["dataset", "rows", "columns", "seconds"]
    # Every sheet holds its whole frame (header row + one row per record): nothing is cut.
    for dataset, frame in demo["frames"].items():
        assert book[sheet_name(dataset)].max_row == len(frame) + 1, dataset


def test_demo_v1_sheets_are_oldest_first_and_formatted(demo_book: openpyxl.Workbook) -> None:
    # Issue 18: the demo showed v1 sheets upside down next to v2 sheets, all in General.
    book = demo_book
    for dataset in ("v1/sentiments", "v1/house_trades", "v1/insider_transactions", "sentiment"):
        sheet = book[sheet_name(dataset)]
        header = [c.value for c in sheet[1]]
        column, symbol = header.index("date") + 1, header.index("symbol") + 1
        rows = [
            (sheet.cell(r, symbol).value, sheet.cell(r, column).value)
            for r in range(2, sheet.max_row + 1)
        ]
        assert len(rows) > 1, dataset
        for (s1, d1), (s2, d2) in zip(rows, rows[1:], strict=False):
            assert s1 != s2 or d1 <= d2, (dataset, s1, d1, d2)  # oldest first per symbol
        assert sheet.cell(2, column).number_format == "yyyy-mm-dd", dataset
    insider = book[sheet_name("insider_trading")]
    header = [c.value for c in insider[1]]
    assert insider.cell(2, header.index("total_value") + 1).number_format == "#,##0"
    assert insider.cell(2, header.index("price_per_share") + 1).number_format == "#,##0.00"


def test_demo_chart_is_a_png(demo: dict) -> None:
    data = Path(demo["chart"]).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_demo_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "demo", "--out-dir", str(tmp_path / "d"), "--symbols", "MSFT")
    assert code == 0, err
    assert (tmp_path / "d" / EXCEL_NAME).is_file() and (tmp_path / "d" / CHART_NAME).is_file()
    for name in REGISTRY:
        assert name in out
    assert f"wrote {tmp_path / 'd' / EXCEL_NAME}" in out


# --- the real entry points -----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _subprocess_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MDFRAMES_")}
    env["PYTHONPATH"] = str(Path(md.__file__).resolve().parent.parent)
    env.update(extra)
    return env


def test_module_entry_point_loads_and_fails_cleanly(
    shared_sandbox: Sandbox, tmp_path: Path
) -> None:
    env = _subprocess_env(
        MDFRAMES_BASE_URL=shared_sandbox.url,
        MDFRAMES_API_KEY=KEY,
        MDFRAMES_CACHE=str(tmp_path / "c.sqlite"),
    )
    ok = subprocess.run(
        [sys.executable, "-m", "mdframes", "load", "markets"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    lines = ok.stdout.splitlines()  # a pipe gets the whole frame as CSV
    assert lines[0] == "name,region" and len(lines) == 21
    bad = subprocess.run(
        [sys.executable, "-m", "mdframes.cli", "load", "sentiment", "NOTFOUND"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1
    assert "404" in bad.stderr and "Traceback" not in bad.stderr
    assert KEY not in bad.stdout + bad.stderr


def test_sandbox_command_serves_until_stopped(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mdframes", "sandbox", "--port", str(port)],
        env=_subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        response = None
        for _ in range(200):
            try:
                response = requests.get(
                    f"http://127.0.0.1:{port}/v2/markets",
                    headers={"Authorization": f"Bearer {KEY}"},
                    timeout=2,
                )
                break
            except requests.ConnectionError:
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.05)
        assert response is not None and response.status_code == 200
        assert response.json()["data"]["markets"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_console_script_runs(tmp_path: Path) -> None:
    script = shutil.which("mdframes", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the mdframes console script is not installed beside this interpreter")
    result = subprocess.run(
        [script, "cache", "info"],
        env=_subprocess_env(MDFRAMES_CACHE=str(tmp_path / "c.sqlite")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert str(tmp_path / "c.sqlite") in result.stdout and "entries: 0" in result.stdout


def test_the_outputs_shown_on_the_cli_page_are_what_the_command_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text("utf-8")
    sessions = [
        block
        for block in re.findall(r"```text\n(.*?)```", page, flags=re.S)
        if "$ mdframes" in block
    ]
    shown = [part for block in sessions for part in block.split("$ ")[1:]]
    assert len(shown) >= 2
    for part in shown:
        command, *expected = part.strip().splitlines()
        code, out, err = run(capsys, *shlex.split(command)[1:])
        assert (out + err).strip().splitlines() == expected, command


# --- pipes, version, v1 and the command line's words ---------------------------------------------


def test_output_into_a_closed_pipe_ends_without_a_traceback(
    shared_sandbox: Sandbox, tmp_path: Path
) -> None:
    env = _subprocess_env(
        MDFRAMES_BASE_URL=shared_sandbox.url,
        MDFRAMES_API_KEY=KEY,
        MDFRAMES_CACHE=str(tmp_path / "c.sqlite"),
    )
    proc = into_closed_pipe(["load", "tickers"], env=env, timeout=60)
    assert proc.returncode in (0, 141)
    assert proc.stderr == ""


def test_piped_into_head_prints_the_first_line_quietly(
    shared_sandbox: Sandbox, tmp_path: Path
) -> None:
    env = _subprocess_env(
        MDFRAMES_BASE_URL=shared_sandbox.url,
        MDFRAMES_API_KEY=KEY,
        MDFRAMES_CACHE=str(tmp_path / "c.sqlite"),
    )
    # A table longer than `head` reads: the rest of it meets a closed pipe.
    command = f"{shlex.quote(sys.executable)} -m mdframes load sentiment AAPL MSFT NVDA | head -1"
    proc = subprocess.run(
        ["bash", "-c", command], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0  # head's; without pipefail
    assert proc.stdout == "symbol,name,date,score\n"  # a pipe gets the CSV (text mode: \n)
    assert proc.stderr == ""


def test_version_is_the_package_metadata(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.strip() == f"mdframes {version('mdframes')}" == f"mdframes {md.__version__}"


@pytest.mark.parametrize(
    ("argv", "call"),
    [
        (
            ["v1/sentiments", "AAPL", "--market", "S&P 500", "--start", "2026-10-01"],
            lambda c: md.v1.load_sentiments("S&P 500", "AAPL", date_from="2026-10-01", client=c),
        ),
        (
            ["v1/house-trades", "nvda", "--market", "s&p 500"],
            lambda c: md.v1.load_house_trades("S&P 500", "NVDA", client=c),
        ),
        (
            ["v1/insider_transactions", "AAPL", "--market", "S&P 500"],
            lambda c: md.v1.load_insider_transactions("S&P 500", "AAPL", client=c),
        ),
        (
            ["v1/app_ratings", "AAPL", "--market", "S&P 500", "--end", "2026-11-01"],
            lambda c: md.v1.load_app_ratings("S&P 500", "AAPL", date_to="2026-11-01", client=c),
        ),
        (
            ["v1/analyst_ratings", "AAPL", "--market", "S&P 500"],
            lambda c: md.v1.load_analyst_ratings("S&P 500", "AAPL", client=c),
        ),
        (
            ["v1/ticker_forecast", "AAPL", "--type", "monthly"],
            lambda c: md.v1.load_ticker_forecast("AAPL", "monthly", client=c),
        ),
        (
            ["v1/market_forecasts", "--market", "DOW 30"],
            lambda c: md.v1.load_market_forecasts("DOW 30", client=c),
        ),
        (
            ["v1/available_tickers", "--type", "daily"],
            lambda c: md.v1.load_available_tickers(client=c),
        ),
        (["v1/available_markets"], lambda c: md.v1.load_available_markets(client=c)),
    ],
)
def test_v1_datasets_load_from_the_command_line(
    env: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], call
) -> None:
    out = tmp_path / "v1.parquet"
    code, _, err = run(capsys, "load", *argv, "--out", str(out), "--no-cache")
    assert code == 0, err
    with md.Client(cache=False) as client:
        expected = call(client)
    pd.testing.assert_frame_equal(pd.read_parquet(out), expected, check_dtype=False)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (
            ["load", "v1/sentiments", "AAPL"],
            "v1/sentiments needs --market (see `mdframes load markets`)",
        ),
        (["load", "v1/sentiments", "AAPL", "MSFT", "--market", "S&P 500"], "exactly one SYMBOL"),
        (["load", "v1/sentiments", "AAPL", "--market", "S&P 50"], "did you mean 'S&P 500'"),
        (
            ["load", "v1/sentiments", "AAPL", "--market", "S&P 500", "--chamber", "house"],
            "--chamber does not apply",
        ),
        (["load", "sentiment", "AAPL", "--limit", "0"], "--limit 0 is outside"),
        (["screen", "sentiment"], "needs --market or --region (see `mdframes load markets`)"),
    ],
)
def test_errors_speak_the_command_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert words in err
    for python in ("market=", "region=", "load_markets()", "md.", "errors="):
        assert python not in err


def test_nothing_listening_hint_names_the_sandbox_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MDFRAMES_BASE_URL", f"http://127.0.0.1:{_free_port()}")
    monkeypatch.setenv("MDFRAMES_API_KEY", KEY)
    code, _, err = run(capsys, "load", "markets", "--no-cache")
    assert code == 1
    assert "`mdframes sandbox`" in err and "sandbox.start" not in err


def test_cli_words_translate_python_hints() -> None:
    from mdframes.cli import cli_words

    assert (
        cli_words("use errors='skip' or start=2026-01-01")
        == "use --errors skip or --start 2026-01-01"
    )
    assert cli_words("is the sandbox running? (md.sandbox.start())") == (
        "is the sandbox running? (`mdframes sandbox`)"
    )
    assert cli_words("no API key: pass api_key= or set the environment variable X") == (
        "no API key: set the environment variable X"
    )
    # A URL's query keeps its own words (a lake root in an error, say).
    root = "s3://***@bucket/lake?endpoint_override=127.0.0.1:9&region=us-east-1"
    assert cli_words(f"cannot open {root}") == f"cannot open {root}"
