"""``mdframes features SYMBOL... --start --end [--features a,b] [--lake PATH] [--out FILE]``.

:func:`register` is listed in :data:`mdframes.cli.COMMANDS`; the output follows the file
suffix like the other commands (Parquet, CSV, Excel), with ``date`` and ``symbol`` as the
first two columns.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

__all__ = ["register"]

EPILOG = """\
examples:
  mdframes features AAPL MSFT --start 2026-01-01 --end 2026-06-30 --out features.parquet
  mdframes features NVDA --start 2026-01-01 --end 2026-03-31 \\
      --features insider_net_value_90d,news_count_7d
  mdframes features AAPL --start 2026-01-01 --end 2026-06-30 --lake ./lake --out f.csv
"""


def register(subcommands: Any) -> None:
    """Add the ``features`` command to the ``mdframes`` parser's subcommands.

    Examples
    --------
    >>> from mdframes.cli import build_parser
    >>> build_parser().parse_args(["features", "AAPL", "--start", "2026-01-01",
    ...                            "--end", "2026-02-01"]).end
    '2026-02-01'
    """
    from ..cli.common import add_command

    p = add_command(
        subcommands,
        "features",
        help="point-in-time feature panel: one row per date and symbol",
        description=textwrap.fill(
            "Compute point-in-time features (the catalog, or --features) for each business "
            "day from --start to --end and each SYMBOL. Each row uses only what was public "
            "by the end of its date.",
            width=90,
        ),
        epilog=EPILOG,
        run=run,
    )
    p.add_argument(
        "symbols", nargs="+", metavar="SYMBOL", help="symbols (space or comma separated)"
    )
    p.add_argument("--start", required=True, help="first date, YYYY-MM-DD (inclusive)")
    p.add_argument("--end", required=True, help="last date, YYYY-MM-DD (inclusive)")
    p.add_argument(
        "--features",
        metavar="A,B",
        help="comma-separated catalog names (default: the whole catalog; see the docs' "
        "Features page)",
    )
    p.add_argument("--lake", metavar="PATH", help="read the inputs from this lake, not the service")
    p.add_argument(
        "--out",
        metavar="FILE",
        help="write to FILE; the format follows the suffix (.csv, .xlsx, .parquet). "
        "Without it a table is printed",
    )
    p.add_argument("--no-cache", action="store_true", help="bypass the HTTP cache")


def run(args: argparse.Namespace) -> int:
    """Run ``mdframes features`` from parsed arguments; returns the exit code."""
    from ..cli.common import CommandError, UsageError, check_out, emit, split_symbols
    from ..client import Client
    from .panel import panel, resolve_features

    out = check_out(args.out)
    symbols = split_symbols(args.symbols)
    names = None
    if args.features is not None:
        names = [n.strip() for n in args.features.split(",")]
        if not all(names):
            raise UsageError("empty name in --features", parameter="features")
    resolve_features(names)  # unknown names fail before anything is loaded
    if args.lake is not None:
        import mdframes

        lake_class = getattr(mdframes, "Lake", None)
        if lake_class is None:
            raise CommandError("--lake needs md.Lake, which this mdframes does not have")
        df = panel(symbols, args.start, args.end, names, source=lake_class(args.lake))
    else:
        with Client(cache=not args.no_cache) as client:
            df = panel(symbols, args.start, args.end, names, client=client)
    emit(df.reset_index(), out)
    return 0
