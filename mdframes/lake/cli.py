"""``mdframes sync`` and ``mdframes lake info|compact|sql|read``.

:func:`register` adds the two commands to the ``mdframes`` parser; nothing here imports
pyarrow until a command runs, so the core install's CLI stays light. Exit codes of ``sync``:
0 all done, 3 work left pending (budget or rate limit), 1 failures.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register", "split_words"]

SYNC_EPILOG = """\
examples:
  mdframes sync insider_trading congress_trades AAPL MSFT --start 2025-01-01
  mdframes sync sentiment put_call_ratio --market "S&P 500" --budget 900
  mdframes sync screener/sentiment tickers --region US
  mdframes sync forecast AAPL --wait

exit codes: 0 all done; 3 work left pending (budget or rate limit: run it again); 1 failures
"""
LAKE_EPILOG = """\
examples:
  mdframes lake info
  mdframes lake read congress_trades NVDA --known-at 2026-10-01 --out nvda.csv
  mdframes lake sql "select symbol, count(*) from insider_trading group by 1"
  mdframes lake compact
"""


def register(subcommands: Any) -> None:
    """Add ``sync`` and ``lake`` to the ``mdframes`` subcommands.

    Examples
    --------
    >>> from mdframes.cli import build_parser
    >>> build_parser().parse_args(["lake", "info"]).action
    'info'
    """
    from ..cli.common import add_command

    p = add_command(
        subcommands,
        "sync",
        help="sync datasets into the local lake (a point-in-time history)",
        description="Fetch what is new into the lake. Leading words that name a dataset are "
        "datasets, the rest symbols.",
        epilog=SYNC_EPILOG,
        run=_cmd_sync,
    )
    p.add_argument("words", nargs="+", metavar="DATASET|SYMBOL")
    universe = p.add_mutually_exclusive_group()
    universe.add_argument("--market", help="symbols: this market's tickers, resolved now")
    universe.add_argument("--region", help="symbols: this region's tickers, resolved now")
    p.add_argument("--start", help="first date of a first sync, YYYY-MM-DD")
    p.add_argument("--end", help="last date, YYYY-MM-DD (default: today)")
    p.add_argument("--budget", type=int, metavar="N", help="most requests this run may send")
    p.add_argument("--wait", action="store_true", help="wait for rate-limit resets")
    _lake_option(p)

    p = add_command(
        subcommands,
        "lake",
        help="look into the lake: info, compact, sql QUERY, read DATASET",
        description="Show, compact, query or read the local lake.",
        epilog=LAKE_EPILOG,
        run=_cmd_lake,
    )
    p.add_argument("action", choices=("info", "compact", "sql", "read"))
    p.add_argument("args", nargs="*", metavar="ARG", help="sql: QUERY; read: DATASET [SYMBOL...]")
    p.add_argument("--known-at", dest="known_at", help="read: versions known at this time")
    p.add_argument("--as-of", dest="as_of", help="read: rows public at this time")
    p.add_argument("--out", metavar="FILE", help="write .csv, .xlsx or .parquet")
    _lake_option(p)


def _lake_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lake", metavar="PATH", help="lake folder or URI (default: user data dir)")


def split_words(words: list[str]) -> tuple[list[str], list[str]]:
    """Leading words that name a lake dataset, then symbols.

    >>> split_words(["insider-trading", "sentiment", "AAPL", "MSFT"])
    (['insider-trading', 'sentiment'], ['AAPL', 'MSFT'])
    """
    from ..registry import REGISTRY

    names = {n.replace("-", "_") for n, ds in REGISTRY.items() if ds.lake}
    datasets = []
    for word in words:
        if word.strip().lower().replace("-", "_") not in names:
            break
        datasets.append(word)
    symbols = [s for w in words[len(datasets) :] for s in w.split(",") if s]
    return datasets, symbols


def _open(args: argparse.Namespace) -> Any:
    try:
        from . import Lake
    except ImportError as exc:
        from ..errors import ConfigurationError

        raise ConfigurationError(str(exc)) from None
    return Lake(args.lake)


def _cmd_sync(args: argparse.Namespace) -> int:
    from ..errors import InvalidParameterError

    datasets, symbols = split_words(args.words)
    if not datasets:
        from .plan import resolve

        resolve(args.words[0])  # raises with a "did you mean"
    if not symbols and not (args.market or args.region):
        needs = [d for d in datasets if not _cross(d)]
        if needs:
            raise InvalidParameterError(
                f"{', '.join(needs)} need SYMBOLs, --market or --region", parameter="symbols"
            )
    lake = _open(args)
    report = lake.sync(
        datasets,
        symbols or None,
        market=args.market,
        region=args.region,
        start=args.start,
        end=args.end,
        budget=args.budget,
        wait=args.wait,
    )
    print(report)
    return report.exit_code()


def _cross(name: str) -> bool:
    from .modes import mode_of
    from .plan import resolve

    return mode_of(resolve(name)).cross


def _cmd_lake(args: argparse.Namespace) -> int:
    from ..cli.common import check_out, emit, render
    from ..errors import InvalidParameterError

    lake = _open(args)
    if args.action == "info":
        print(render(lake.info(), max_rows=200))
        return 0
    if args.action == "compact":
        for name, (before, after) in lake.compact().items():
            print(f"{name}: {before} -> {after} files")
        return 0
    out = check_out(args.out)
    if args.action == "sql":
        if len(args.args) != 1:
            raise InvalidParameterError("lake sql takes one QUERY (quote it)", parameter="query")
        emit(lake.sql(args.args[0]), out)
        return 0
    if not args.args:
        raise InvalidParameterError("lake read needs a DATASET", parameter="dataset")
    dataset, *symbols = args.args
    symbols = [s for w in symbols for s in w.split(",") if s]
    frame = lake.read(dataset, symbols or None, known_at=args.known_at, as_of=args.as_of)
    emit(frame, out)
    return 0
