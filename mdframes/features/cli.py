"""``mdframes features SYMBOL... --start --end [--features a,b] [--lake PATH] [--known-at T|row]
[--errors skip] [--out FILE]``.

:func:`register` is listed in :data:`mdframes.cli.COMMANDS`; the output follows the file
suffix like the other commands (Parquet, CSV, Excel), with ``date`` and ``symbol`` as the
first two columns.
"""

from __future__ import annotations

import argparse
import contextlib
import textwrap
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .sources import Source

__all__ = ["register"]

EPILOG = """\
examples:
  mdframes features AAPL MSFT --start 2026-01-01 --end 2026-06-30 --out features.parquet
  mdframes features NVDA --start 2026-01-01 --end 2026-03-31 \\
      --features insider_net_value_90d,news_count_7d
  mdframes sync sentiment put_call_ratio news AAPL MSFT --start 2025-12-01 --lake ./lake
  mdframes features AAPL --start 2026-01-01 --end 2026-06-30 --lake ./lake \\
      --features sentiment_mean_7d,put_call_ratio_last --out f.csv
  mdframes features AAPL MSFT NOPE --start 2026-01-01 --end 2026-06-30 --lake ./lake \\
      --features news_count_7d --known-at row --errors skip --out f.parquet
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
    from ..cli.common import add_command, add_out_option

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
    add_panel_arguments(p)
    add_out_option(p)


def add_panel_arguments(p: argparse.ArgumentParser) -> None:
    """The panel's arguments, shared by ``mdframes features`` and ``mdframes training-set``:
    SYMBOL..., --start, --end, --features, --lake, --known-at, --errors, --no-cache (read
    back by :func:`panel_request` and :func:`panel_source`)."""
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
        "--known-at",
        metavar="T|row",
        help="with --lake: only versions fetched by T (a date alone: the end of that day), "
        "or 'row': each row sees what was fetched by the end of its date",
    )
    p.add_argument(
        "--errors",
        choices=["raise", "skip"],
        default="raise",
        help="a symbol the service does not know: stop (raise, the default) or keep its rows "
        "with empty features (skip)",
    )
    p.add_argument("--no-cache", action="store_true", help="bypass the HTTP cache")


def panel_request(args: argparse.Namespace) -> tuple[list[str], list[str] | None]:
    """The symbols and feature names of :func:`add_panel_arguments`' arguments, checked
    before anything is loaded (an unknown feature name, an empty symbol)."""
    from ..cli.common import UsageError, split_symbols
    from .definitions import resolve_features

    symbols = split_symbols(args.symbols)
    names = None
    if args.features is not None:
        names = [n.strip() for n in args.features.split(",")]
        if not all(names):
            raise UsageError("empty name in --features", parameter="features")
    resolve_features(names)
    return symbols, names


@contextlib.contextmanager
def panel_source(args: argparse.Namespace) -> Iterator[Source]:
    """The source of the command's panel, decided once: the lake of ``--lake``, or the
    service through a client opened (and closed) here."""
    from ..cli.common import UsageError
    from ..client import Client
    from .sources import LakeSource, ServiceSource

    if args.known_at is not None and args.lake is None:
        raise UsageError(
            "--known-at needs --lake (only a lake knows when each row was fetched)",
            parameter="known_at",
        )
    if args.lake is not None:
        from ..lake import Lake

        yield LakeSource(Lake(args.lake))
        return
    with Client(cache=not args.no_cache) as client:
        yield ServiceSource(client)


def run(args: argparse.Namespace) -> int:
    """Run ``mdframes features`` from parsed arguments; returns the exit code."""
    from ..cli.common import check_out, emit
    from .panels import panel

    out = check_out(args.out, args.format)
    symbols, names = panel_request(args)
    with panel_source(args) as source:
        df = panel(
            symbols,
            args.start,
            args.end,
            names,
            source=source,
            known_at=args.known_at,
            errors=args.errors,
        )
    emit(df.reset_index(), out)
    return 0
