"""``mdframes sync`` and ``mdframes lake
info|coverage|check|repair|compact|upgrade|files|sql|read|changes``.

:func:`register` adds the two commands to the ``mdframes`` parser; nothing here imports
pyarrow until a command runs, so the core install's CLI stays light. Exit codes: 0 all done,
3 work left pending (budget or rate limit), 1 failures (a failed symbol, a problem ``lake
check`` found, a full disk or another OS error: one line ``mdframes sync: error: ...``, no
traceback), 2 bad input (a root that holds no lake, for anything but ``sync``). A lake root's
credentials never reach the output (see :func:`guarded`).
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register", "split_words", "open_lake", "guarded"]

SYNC_EPILOG = """\
examples:
  mdframes sync insider_trading congress_trades government_contracts AAPL MSFT NVDA \\
      --start 2025-01-01
  mdframes sync sentiment put_call_ratio --market "DOW 30" --budget 900
  mdframes sync screener/sentiment tickers --region US
  mdframes sync forecast AAPL --wait

An unfinished run (budget or rate limit spent, Ctrl-C, a crash) is kept per request: the
same DATASETs, SYMBOLs or --market/--region, --start and --end later resume it, whatever other
syncs ran in between, and ask nothing it finished again ("resumed" in the summary).

exit codes: 0 all done; 3 work left pending (budget or rate limit: run it again); 1 failures
"""
LAKE_EPILOG = """\
examples:
  mdframes lake info
  mdframes lake coverage insider_trading congress_trades AAPL MSFT
  mdframes lake read congress_trades NVDA --known-at 2026-10-01 --out nvda.csv
  mdframes lake changes government_contracts --since 2026-11-01 --out revised.csv
  mdframes lake sql "select symbol, count(*) from insider_trading group by 1"
  mdframes lake files insider_trading
  mdframes lake check
  mdframes lake repair
  mdframes lake compact
  mdframes lake upgrade

exit codes: 0 ok; 1 failures (lake check: problems found; a full disk or OS error); 2 bad input
(a malformed value, an unknown dataset, a --lake path that holds no lake)
"""
ACTIONS = tuple(
    ["info", "coverage", "check", "repair", "compact", "upgrade", "files", "sql", "read", "changes"]
)


def register(subcommands: Any) -> None:
    """Add ``sync`` and ``lake`` to the ``mdframes`` subcommands.

    Examples
    --------
    >>> from mdframes.cli import build_parser
    >>> build_parser().parse_args(["lake", "info"]).action
    'info'
    """
    from ..cli.common import add_command, add_out_option

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
        help="look into the lake: info, coverage, check, repair, compact, upgrade, files, sql, "
        "read, changes",
        description="Show, check, repair, compact, upgrade, query or read the lake, or what it "
        "covers. "
        "Times: a date alone (YYYY-MM-DD) means the end of that day, UTC.",
        epilog=LAKE_EPILOG,
        run=_cmd_lake,
    )
    p.add_argument("action", choices=ACTIONS)
    p.add_argument(
        "args",
        nargs="*",
        metavar="ARG",
        help="files: DATASET; sql: QUERY; read, changes: DATASET [SYMBOL...]; coverage: "
        "[DATASET...] [SYMBOL...] (status synced, pending, failed, not_found or never; the "
        "span first..last synced and its gaps), read from the lake's state, not its data",
    )
    p.add_argument(
        "--known-at",
        dest="known_at",
        help="read: versions known at this time; coverage: what was synced by then",
    )
    p.add_argument("--as-of", dest="as_of", help="read: rows public at this time")
    p.add_argument("--since", help="changes: revisions fetched after this time")
    p.add_argument("--until", help="changes: revisions fetched at or before this time")
    add_out_option(p)
    _lake_option(p)


def _lake_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lake", metavar="PATH", help="lake folder or URI (default: user data dir)")


def split_words(words: list[str]) -> tuple[list[str], list[str]]:
    """Leading words that name a lake dataset, then symbols.

    >>> split_words(["insider-trading", "sentiment", "AAPL", "MSFT"])
    (['insider-trading', 'sentiment'], ['AAPL', 'MSFT'])
    """
    from ..errors import InvalidParameterError
    from ..registry import resolve_name
    from .sync.plan import dataset_names

    names = dataset_names()
    datasets = []
    for word in words:
        try:
            resolve_name(word, names, what="lake dataset")
        except InvalidParameterError:
            break
        datasets.append(word)
    symbols = [s for w in words[len(datasets) :] for s in w.split(",") if s]
    return datasets, symbols


def open_lake(root: str | None, *, existing: bool = False) -> Any:
    """The lake a command's ``--lake`` names (None: the user data dir), for every command
    that reads or writes one. ``existing``: a command that only reads refuses a root that
    holds no lake, naming it without credentials. Run the command through :func:`guarded`,
    which keeps credentials out of its other errors."""
    try:
        from .._deps import require

        require("pyarrow", "lake", "the lake")  # names the extra, in no language's words
        from .core import Lake, require_lake
    except ImportError as exc:
        from ..errors import ConfigurationError

        raise ConfigurationError(str(exc)) from None
    lake = Lake(root)
    if existing:
        require_lake(lake)
    return lake


def _dataset(name: str) -> str:
    """A lake dataset's canonical name (``_``/``-`` and case aside), or a "did you mean"."""
    from ..registry import resolve_name
    from .sync.plan import dataset_names

    return resolve_name(name, dataset_names(), what="lake dataset", parameter="dataset")


def guarded(run: Any) -> Any:
    """Run a lake command so that an OS error (a full disk, a permission) is one line, exit
    1, and no message carries the lake root's credentials."""
    import functools

    @functools.wraps(run)
    def run_guarded(args: argparse.Namespace) -> int:
        from ..cli.common import CommandError
        from ..errors import MdframesError, scrub
        from .store.location import parse_root, redact_root

        try:
            secrets = parse_root(args.lake).secrets if args.lake else ()
        except MdframesError:
            secrets = ()
        try:
            return int(run(args))
        except MdframesError as exc:
            scrub(exc, *secrets)
            exc.args = tuple(
                _one_line(redact_root(a)) if isinstance(a, str) else a for a in exc.args
            )
            raise
        except BrokenPipeError:  # `| head`: the reader left; main ends quietly (141)
            raise
        except OSError as exc:
            raise CommandError(_one_line(redact_root(str(scrub(exc, *secrets))))) from None

    return run_guarded


def _one_line(text: str) -> str:
    """A message on one plain line: the object store's multi-line, coloured error chains
    (``Generic error \\n  ↳ File too large``) become ``Generic error: File too large``."""
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    text = re.sub(r"\s*↳\s*", ": ", text)
    return re.sub(r"\s+", " ", text).strip()


@guarded
def _cmd_sync(args: argparse.Namespace) -> int:
    from ..errors import InvalidParameterError

    datasets, symbols = split_words(args.words)
    if not datasets:
        _dataset(args.words[0])  # raises with a "did you mean"
    if not symbols and not (args.market or args.region):
        needs = [d for d in datasets if _per_symbol(d)]
        if needs:
            raise InvalidParameterError(
                f"{', '.join(needs)} need SYMBOLs, --market or --region", parameter="symbols"
            )
    lake = open_lake(args.lake)
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


def _gaps_text(gaps: list[tuple[Any, Any]]) -> str:
    """Gaps as ``2024-01-01..2024-03-31; ...`` (empty: none)."""
    return "; ".join(f"{a:%Y-%m-%d}..{b:%Y-%m-%d}" for a, b in gaps)


def _per_symbol(name: str) -> bool:
    from .sync.plan import resolve

    return resolve(name).per_symbol


@guarded
def _cmd_lake(args: argparse.Namespace) -> int:
    from ..cli.common import check_out, emit, render
    from ..errors import InvalidParameterError

    action, words = args.action, list(args.args)
    out = check_out(args.out, args.format)
    wants = {"files": "DATASET", "sql": "QUERY", "read": "DATASET", "changes": "DATASET"}
    if action in wants and not words:
        raise InvalidParameterError(f"lake {action} needs a {wants[action]}", parameter="args")
    if action not in ("read", "changes", "coverage") and len(words) > (1 if action in wants else 0):
        raise InvalidParameterError(
            f"lake {action} takes {'one ' + wants[action] if action in wants else 'no ARG'}"
            f"{' (quote it)' if action == 'sql' else ''}",
            parameter="args",
        )
    if action in ("files", "read", "changes"):
        words[0] = _dataset(words[0])
    lake = open_lake(args.lake)
    if action == "info":
        print(render(lake.info(), max_rows=200))
        return 0
    if action == "coverage":
        names, listed = split_words(words)
        table = lake.coverage(names or None, listed or None, known_at=args.known_at)
        table["gaps"] = table["gaps"].map(_gaps_text).astype("string")
        emit(table, out, max_rows=200)
        return 0
    if action == "check":
        found = lake.check()
        print(render(found, max_rows=200))
        return 0 if bool(found["ok"].all()) else 1
    if action == "repair":
        lost = lake.repair()
        print(render(lost, max_rows=200) if len(lost) else "nothing to repair")
        return 0
    if action == "compact":
        for name, (before, after) in lake.compact().items():
            print(f"{name}: {before} -> {after} files")
        return 0
    if action == "upgrade":
        done = lake.upgrade()
        print("\n".join(f"{name}: converted" for name in done) or "nothing to upgrade")
        return 0
    if action == "files":
        print("\n".join(lake.files(words[0])))
        return 0
    if action == "sql":
        emit(lake.sql(words[0]), out, max_rows=200)
        return 0
    dataset, *rest = words
    symbols = [s for w in rest for s in w.split(",") if s] or None
    if action == "read":
        frame = lake.read(dataset, symbols, known_at=args.known_at, as_of=args.as_of)
    else:
        frame = lake.changes(dataset, symbols, since=args.since, until=args.until)
    emit(frame, out)
    return 0
