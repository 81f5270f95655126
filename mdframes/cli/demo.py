"""``mdframes demo``: every dataset, end to end, against the offline sandbox.

The list of datasets is the registry itself, so a dataset added there is exercised here
without edits. Each entry's arguments are filled from its declared parameters: symbols for
per-symbol paths, a market or region where a screener needs one, and for v1 a ticker and the
market the sandbox lists it under.

>>> from mdframes.cli.demo import run_demo
>>> # every dataset end to end: about 40 s, run whole by tests/test_cli.py instead
>>> result = run_demo("demo-output")  # doctest: +SKIP
>>> result["summary"].head()  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import pandas as pd

from ..errors import MdframesError
from ..io import sheet_name  # the demo names sheets as to_excel and the CLI do
from ..registry import REGISTRY, Dataset
from .common import add_command, split_symbols

if TYPE_CHECKING:  # pragma: no cover
    from ..client import Client

__all__ = ["run_demo", "register", "DEFAULT_SYMBOLS", "EXCEL_NAME", "CHART_NAME", "sheet_name"]

DEFAULT_SYMBOLS = ("AAPL", "MSFT", "NVDA", "TSLA", "BTC-USD")
DEMO_REGION = "US"  # for screeners that need a market or region
EXCEL_NAME = "mdframes-demo.xlsx"
CHART_NAME = "mdframes-demo.png"
SUMMARY_COLUMNS = ["dataset", "rows", "columns", "seconds", "error"]


# --- arguments from the registry ---------------------------------------------------------------


def _v1_market(frames: dict[str, pd.DataFrame], ticker: str, client: Client) -> str:
    """The market the service lists ``ticker`` under (v1 paths need both)."""
    from ..loaders import load

    tickers = frames.get("v1/available_tickers")
    if tickers is None:
        tickers = load("v1/available_tickers", client=client)
    match = tickers.loc[tickers["symbol"] == ticker, "market"]
    if len(match):
        return str(match.iloc[0])
    markets = frames.get("v1/available_markets")
    if markets is not None and len(markets):
        return str(markets["market"].iloc[0])
    return str(tickers["market"].dropna().iloc[0])


def _arguments(
    ds: Dataset, symbols: Sequence[str], frames: dict[str, pd.DataFrame], client: Client
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if ds.per_symbol:
        kwargs["symbols"] = list(symbols)
        kwargs["errors"] = "skip"  # one symbol the service lacks should not hide the rest
    names = {p.name for p in ds.params}
    if "ticker" in names:
        kwargs["ticker"] = symbols[0]
    if ds.version == "v1" and "market" in names:
        kwargs["market"] = _v1_market(frames, kwargs.get("ticker", symbols[0]), client)
    if ds.needs_market_or_region:
        kwargs["region"] = DEMO_REGION
    return kwargs


# --- the run -------------------------------------------------------------------------------------


def _load_all(
    client: Client, symbols: Sequence[str], progress: bool | None
) -> tuple[dict[str, pd.DataFrame], list[dict[str, Any]]]:
    from tqdm import tqdm

    from ..loaders import load

    frames: dict[str, pd.DataFrame] = {}
    rows: list[dict[str, Any]] = []
    bar = tqdm(
        list(REGISTRY.values()),
        desc="mdframes demo",
        unit="dataset",
        file=sys.stderr,
        disable=None if progress is None else not progress,
    )

    def one(ds: Dataset) -> pd.DataFrame:
        return load(ds.name, client=client, **_arguments(ds, symbols, frames, client))

    for ds in bar:
        bar.set_postfix_str(ds.name)
        df = _step(rows, ds.name, one, ds)
        if df is not None:
            frames[ds.name] = df
            if df.attrs.get("failed"):
                rows[-1]["error"] = "skipped " + ", ".join(sorted(df.attrs["failed"]))
    return frames, rows


def _step(rows: list[dict[str, Any]], name: str, make: Any, arg: Any) -> pd.DataFrame | None:
    """``make(arg)``, or None if it fails; its summary row appended to ``rows``."""
    started = time.perf_counter()
    out, error = None, ""
    try:
        with warnings.catch_warnings():
            # Skipped symbols and failures are reported in the summary's error column instead.
            warnings.simplefilter("ignore")
            out = make(arg)
    except MdframesError as exc:
        error = str(exc)
    rows.append(
        {
            "dataset": name,
            "rows": 0 if out is None else len(out),
            "columns": 0 if out is None else out.shape[1],
            "seconds": time.perf_counter() - started,
            "error": error,
        }
    )
    return out


def _apply_helpers(frames: dict[str, pd.DataFrame]) -> tuple[dict[str, pd.DataFrame], list[dict]]:
    """The helpers on the loaded frames: amount bounds, insider groups, a point-in-time cut."""
    from ..helpers import congress_amount_bounds, insider_groups
    from ..pit import point_in_time

    derived: dict[str, pd.DataFrame] = {}
    rows: list[dict[str, Any]] = []

    def step(name: str, make: Any, needs: str) -> None:
        if needs in frames and (out := _step(rows, name, make, frames[needs])) is not None:
            derived[name] = out

    def groups(df: pd.DataFrame) -> pd.DataFrame:
        grouped = insider_groups(df).groupby(["symbol", "group"], observed=True)
        return grouped.agg(
            transactions=("group", "size"), total_value=("total_value", "sum")
        ).reset_index()

    def public_mid_window(df: pd.DataFrame) -> pd.DataFrame:
        # As of the median filing date, about half the rows were public: a visible cut.
        as_of = pd.Timestamp(pd.Series(df["filing_date"]).dropna().median())
        out = point_in_time(df, as_of)
        out.attrs["as_of"] = as_of
        return out

    step("helpers.congress_amount_bounds", congress_amount_bounds, "congress_trades")
    step("helpers.insider_groups", groups, "insider_trading")
    step("helpers.point_in_time", public_mid_window, "insider_trading")
    return derived, rows


def _chart(frames: dict[str, pd.DataFrame], path: Path, symbol: str) -> None:
    """A 2x2 figure: forecast fan, sentiment, insider activity, put/call."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from .. import plot

    # A bare Figure on the Agg canvas: no pyplot state, no GUI backend, nothing left open.
    fig = Figure(figsize=(14, 9), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 2).ravel()

    def one(name: str, days: int | None = None) -> pd.DataFrame:
        df = frames.get(name, pd.DataFrame())
        if "symbol" in df.columns and (df["symbol"] == symbol).any():
            df = df[df["symbol"] == symbol]
        if days is not None and len(df):
            # Two years of daily points are a solid smear; the recent months read better.
            df = df[df["date"] >= df["date"].max() - pd.Timedelta(days=days)]
        return df

    panels = [
        (plot.forecast_fan, one("forecast")),
        (plot.sentiment, one("sentiment", days=180)),
        (plot.insider_activity, one("insider_trading")),
        (plot.put_call, one("put_call_ratio", days=180)),
    ]
    for (draw, df), ax in zip(panels, axes, strict=True):
        if len(df):
            draw(df, ax=ax)
        else:
            ax.set_axis_off()
    fig.suptitle(f"mdframes demo (offline sandbox) - {symbol}")
    fig.savefig(path, dpi=100)


def run_demo(
    out_dir: str | Path = ".",
    symbols: Sequence[str] | None = None,
    stream: TextIO | None = None,
    *,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Load every registry dataset from a fresh sandbox, apply the helpers, write a workbook
    and a chart.

    Parameters
    ----------
    out_dir : str or Path
        Folder for ``mdframes-demo.xlsx`` and ``mdframes-demo.png`` (created if missing).
    symbols : list of str, optional
        Symbols for the per-symbol datasets (default: AAPL, MSFT, NVDA, TSLA, BTC-USD); the
        first is the v1 ticker and the chart's subject.
    stream : file-like, optional
        Where the summary table is printed (default: ``sys.stdout``).
    progress : bool, optional
        The tqdm bar over datasets; ``None``: only on a terminal.

    Returns
    -------
    dict
        ``excel`` and ``chart`` (paths), ``summary`` (a frame of dataset, rows, columns,
        seconds, error), ``frames`` (dataset name -> DataFrame) and ``lake`` (the DuckDB
        answer of the lake step, or None without the lake extra).

    Examples
    --------
    >>> # every dataset end to end: about 40 s, run whole by tests/test_cli.py instead
    >>> result = run_demo("out", symbols=["AAPL", "MSFT"])  # doctest: +SKIP
    >>> result["excel"]  # doctest: +SKIP
    PosixPath('out/mdframes-demo.xlsx')
    """
    from .._deps import require
    from ..io import to_excel
    from ..params import check_symbols
    from ..sandbox import running

    # The workbook and the chart are the demo's output: said before any dataset is loaded.
    require("openpyxl", "excel", "mdframes demo")
    require("matplotlib", "plot", "mdframes demo")
    stream = sys.stdout if stream is None else stream
    symbols = check_symbols(list(symbols) if symbols else list(DEFAULT_SYMBOLS), dataset="demo")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with running() as client:
        frames, rows = _load_all(client, symbols, progress)
    derived, helper_rows = _apply_helpers(frames)
    frames.update(derived)
    summary = pd.DataFrame(rows + helper_rows, columns=SUMMARY_COLUMNS)
    summary["rows"] = summary["rows"].astype("Int64")
    summary["columns"] = summary["columns"].astype("Int64")
    summary["seconds"] = summary["seconds"].round(3)

    excel = out / EXCEL_NAME
    chart = out / CHART_NAME
    # Whole frames, named by to_excel's one sheet-naming rule (export.sheet_name).
    to_excel({"summary": summary, **frames}, excel)
    _chart(frames, chart, symbols[0])

    ok = summary[summary["error"] == ""]
    print(summary.to_string(index=False), file=stream)
    print(
        f"\n{len(ok)} of {len(summary)} steps succeeded, {int(ok['rows'].sum())} rows, "
        f"{time.perf_counter() - started:.1f} s",
        file=stream,
    )
    pit = derived.get("helpers.point_in_time")
    if pit is not None and "insider_trading" in frames:
        as_of = pd.Timestamp(pit.attrs["as_of"]).date()
        print(
            f"point_in_time: {len(pit)} of {len(frames['insider_trading'])} insider "
            f"transactions were public on {as_of}",
            file=stream,
        )
    return {
        "excel": excel,
        "chart": chart,
        "summary": summary,
        "frames": frames,
        "lake": _lake_step(symbols[:3], stream),
    }


def _lake_step(symbols: Sequence[str], stream: TextIO) -> pd.DataFrame | None:
    """Three sandbox days synced into a temporary lake, then one DuckDB query over it."""
    import tempfile

    from ..sandbox import running

    try:
        with tempfile.TemporaryDirectory() as root, running() as client:
            from ..lake import Lake

            lake = Lake(root, client=client)  # its clock follows the sandbox's day
            for day in range(3):
                if day:
                    client.sandbox.advance(days=1)
                lake.sync(["congress_trades", "forecast"], symbols, progress=False)
            result = lake.sql(
                "select symbol, count(*) as forecasts, count(distinct _sync_id) as snapshots "
                "from forecast_history where type = 'daily' group by 1 order by 1"
            )
    except ImportError as exc:  # the lake extra is not installed
        print(f"\nlake: skipped ({exc})", file=stream)
        return None
    print("\nlake: 3 daily syncs of congress_trades and forecast; DuckDB says:", file=stream)
    print(result.to_string(index=False), file=stream)
    return result


# --- the command -------------------------------------------------------------------------------


def register(subcommands: Any) -> None:
    """Add ``demo`` (first in the help: it is where a new user starts)."""
    p = add_command(
        subcommands,
        "demo",
        help="run every dataset against the offline sandbox; write an .xlsx and a .png",
        description="Start the offline sandbox, load every dataset, apply the helpers, print a "
        "summary and write mdframes-demo.xlsx and mdframes-demo.png.",
        epilog="example:\n  mdframes demo --out-dir demo-output --symbols AAPL MSFT",
        run=_run,
    )
    p.add_argument("--out-dir", default=".", metavar="DIR", help="output folder (default: .)")
    p.add_argument("--symbols", nargs="+", metavar="SYMBOL", help="symbols for per-symbol datasets")


def _run(args: argparse.Namespace) -> int:
    symbols = split_symbols(args.symbols) if args.symbols else None
    result = run_demo(out_dir=args.out_dir, symbols=symbols, stream=sys.stdout)
    print(f"wrote {result['excel']}")
    print(f"wrote {result['chart']}")
    # The summary names what failed; the exit code lets a script notice it.
    return 1 if (result["summary"]["error"] != "").any() else 0
