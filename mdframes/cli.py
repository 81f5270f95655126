"""The ``mdframes`` command line.

Commands: ``demo``, ``load``, ``screen``, ``recent``, ``sandbox`` and ``cache``. The datasets
``load`` knows, and which options apply to each, are read from the public loaders'
signatures and the registry, so a new loader shows up here without edits.

Exit codes: 0 success, 1 an error from the service, the data, the configuration or the file
system, 2 bad input (unknown dataset, bad option value, bad symbol). Expected errors print one
line on stderr; only a bug prints a traceback.

>>> from mdframes.cli import main
>>> main(["load", "insider_trading", "AAPL", "--limit", "5"])  # doctest: +SKIP
0
"""

from __future__ import annotations

import argparse
import inspect
import os
import shutil
import sys
import textwrap
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InvalidParameterError, MdframesError, redact

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .client import Client

__all__ = ["main", "build_parser", "render", "load_names", "OUTPUT_SUFFIXES"]

PROG = "mdframes"
OUTPUT_SUFFIXES = (".csv", ".xlsx", ".parquet")
# Loader arguments that are not dataset options.
_NOT_OPTIONS = {"symbols", "client", "validate", "errors"}
# Loaders with their own command.
_OWN_COMMAND = {"load_screener", "load_recent"}
_OPTION_HELP = {
    "start": "first date, YYYY-MM-DD (inclusive)",
    "end": "last date, YYYY-MM-DD (inclusive)",
    "limit": "maximum number of records",
    "type": "forecast horizon",
    "chamber": "congress chamber",
    "view": "app_ratings layout: apps (one row per app per date) or daily",
    "market": "market name, e.g. 'S&P 500' (see `mdframes load markets`)",
    "region": "region, e.g. US",
}

EPILOG = """\
examples:
  mdframes demo --out-dir demo-output
  mdframes load insider_trading AAPL MSFT --start 2026-01-01 --out insider.xlsx
  mdframes load congress-trades NVDA --chamber senate --limit 50
  mdframes load forecast AAPL --type monthly
  mdframes load app_ratings AAPL --view daily --out apps.parquet
  mdframes load markets
  mdframes screen sentiment --region US --limit 100
  mdframes screen congress/house --out house.csv
  mdframes recent news --limit 20
  mdframes sandbox --port 8765
  mdframes cache info

environment:
  MDFRAMES_API_KEY   the API key (never printed)
  MDFRAMES_BASE_URL  the service root, e.g. https://api.example.com
  MDFRAMES_CACHE     the HTTP cache file (default: the user cache folder)

exit codes: 0 ok; 1 service, data, configuration or file error; 2 bad input
"""


class UsageError(InvalidParameterError):
    """Bad command-line input found by the CLI itself (exit code 2)."""


# --- what `load` knows, read from the loaders ------------------------------------------------


def _loaders() -> dict[str, Callable[..., Any]]:
    """CLI dataset name -> public loader, from ``mdframes.loaders.__all__``."""
    from . import loaders

    return {
        name.removeprefix("load_"): getattr(loaders, name)
        for name in loaders.__all__
        if name.startswith("load_") and name not in _OWN_COMMAND
    }


def load_names() -> list[str]:
    """The dataset names ``mdframes load`` accepts (the loader names without ``load_``).

    Examples
    --------
    >>> "insider_trading" in load_names()
    True
    """
    return list(_loaders())


def _options_of(loader: Callable[..., Any]) -> list[str]:
    return [p for p in inspect.signature(loader).parameters if p not in _NOT_OPTIONS]


def _takes_symbols(loader: Callable[..., Any]) -> bool:
    return "symbols" in inspect.signature(loader).parameters


def _registry_param(name: str) -> tuple[str, tuple[str, ...]]:
    """The kind and the union of choices of parameter ``name`` across the v2 registry."""
    from .registry import REGISTRY

    kind, choices = "str", []
    for ds in REGISTRY.values():
        p = ds.param(name)
        if p is None or ds.version != "v2":
            continue
        kind = p.kind
        choices += [c for c in p.choices if c not in choices]
    return kind, tuple(choices)


def _resolve_dataset(name: str) -> str:
    loaders = _loaders()
    for candidate in (name, name.replace("-", "_")):
        if candidate in loaders:
            return candidate
    raise UsageError(f"unknown dataset {name!r}; one of: {', '.join(loaders)}", parameter="dataset")


# --- parser ----------------------------------------------------------------------------------


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32)


def _add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        metavar="FILE",
        help="write to FILE; the format follows the suffix (.csv, .xlsx, .parquet). "
        "Without it a table is printed",
    )
    p.add_argument("--no-cache", action="store_true", help="bypass the HTTP cache")
    p.add_argument(
        "--no-validate", action="store_true", help="skip the pandera schema check of the frame"
    )


def _add_cross(p: argparse.ArgumentParser) -> None:
    p.add_argument("--market", help=_OPTION_HELP["market"])
    p.add_argument("--region", help=_OPTION_HELP["region"])
    p.add_argument("--limit", type=int, help="maximum number of records (1 to 20000)")
    _add_output(p)


def build_parser() -> argparse.ArgumentParser:
    """The ``mdframes`` argument parser (options of ``load`` derived from the loaders).

    Examples
    --------
    >>> build_parser().parse_args(["load", "sentiment", "AAPL", "--limit", "5"]).limit
    5
    """
    from .registry import RECENT_DATASETS, SCREENER_DATASETS

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Typed, validated pandas DataFrames from the market-data service.",
        epilog=EPILOG,
        formatter_class=_Formatter,
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser(
        "demo",
        help="run every dataset against the offline sandbox; write an .xlsx and a .png",
        description="Start the offline sandbox, load every dataset, apply the helpers, print a "
        "summary and write mdframes-demo.xlsx and mdframes-demo.png.",
        epilog="example:\n  mdframes demo --out-dir demo-output --symbols AAPL MSFT",
        formatter_class=_Formatter,
    )
    p.add_argument("--out-dir", default=".", metavar="DIR", help="output folder (default: .)")
    p.add_argument("--symbols", nargs="+", metavar="SYMBOL", help="symbols for per-symbol datasets")
    p.set_defaults(func=_cmd_demo)

    loaders = _loaders()
    options: list[str] = []
    for loader in loaders.values():
        options += [o for o in _options_of(loader) if o not in options]
    p = sub.add_parser(
        "load",
        help="load one dataset for one or more symbols",
        description=textwrap.fill(
            "Load one dataset. DATASET is a loader name without 'load_' ('-' and '_' are "
            f"interchangeable): {', '.join(loaders)}.",
            width=90,
        ),
        epilog="examples:\n"
        "  mdframes load insider_trading AAPL MSFT --start 2026-01-01 --out insider.csv\n"
        "  mdframes load congress_trades NVDA --chamber house\n"
        "  mdframes load tickers --market 'S&P 500' --limit 20",
        formatter_class=_Formatter,
    )
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument(
        "symbols", nargs="*", metavar="SYMBOL", help="symbols (space or comma separated)"
    )
    for name in options:
        kind, choices = _registry_param(name)
        text = _OPTION_HELP.get(name, f"the loader's {name!r} argument")
        if choices:
            text += f"; one of: {', '.join(choices)}"
        users = [d for d, f in loaders.items() if name in _options_of(f)]
        if len(users) < len(loaders) / 2:
            text += f" ({', '.join(users)})"
        p.add_argument(
            f"--{name.replace('_', '-')}", dest=name, type=int if kind == "int" else str, help=text
        )
    p.add_argument(
        "--errors",
        choices=("raise", "skip"),
        default="raise",
        help="what one failing symbol does (default: raise)",
    )
    _add_output(p)
    p.set_defaults(func=_cmd_load)

    # The two cross-ticker commands differ only in words and in the loader they call.
    cross = (
        (
            "screen",
            "load_screener",
            "one dataset across many tickers (screener)",
            "Screener",
            SCREENER_DATASETS,
            "examples:\n  mdframes screen sentiment --region US\n"
            "  mdframes screen insider-trading --limit 500 --out insider.xlsx",
        ),
        (
            "recent",
            "load_recent",
            "latest entries across all tickers",
            "Recent activity",
            RECENT_DATASETS,
            "example:\n  mdframes recent analyst-ratings --limit 50",
        ),
    )
    for command, loader_name, help_text, title, datasets, epilog in cross:
        p = sub.add_parser(
            command,
            help=help_text,
            description=textwrap.fill(
                f"{title}. DATASET is one of: {', '.join(datasets)}.", width=90
            ),
            epilog=epilog,
            formatter_class=_Formatter,
        )
        p.add_argument("dataset", metavar="DATASET")
        _add_cross(p)
        p.set_defaults(func=_cmd_cross, loader=loader_name)

    p = sub.add_parser(
        "sandbox",
        help="serve the offline sandbox on 127.0.0.1 until Ctrl-C",
        description="Serve the whole v1 and v2 interface with synthetic data on 127.0.0.1.",
        epilog="example:\n  mdframes sandbox --port 8765\n"
        "  # then: MDFRAMES_BASE_URL=http://127.0.0.1:8765 and the sandbox key",
        formatter_class=_Formatter,
    )
    p.add_argument("--port", type=int, default=8765, help="TCP port (default: 8765; 0: any free)")
    p.set_defaults(func=_cmd_sandbox)

    p = sub.add_parser(
        "cache",
        help="show or empty the HTTP cache",
        description="Show (info) or empty (clear) the HTTP cache file.",
        epilog="examples:\n  mdframes cache info\n  mdframes cache clear --expired",
        formatter_class=_Formatter,
    )
    p.add_argument("action", choices=("info", "clear"))
    p.add_argument("--expired", action="store_true", help="clear: only the expired entries")
    p.set_defaults(func=_cmd_cache)

    from .lake.cli import register as register_lake  # mdframes sync, mdframes lake ...

    register_lake(sub, _Formatter)
    return parser


# --- output ----------------------------------------------------------------------------------


def _dtype_summary(df: pd.DataFrame) -> str:
    counts = df.dtypes.astype(str).value_counts(sort=False)
    return ", ".join(f"{dtype}({n})" for dtype, n in counts.items())


def render(df: pd.DataFrame, *, max_rows: int = 20, width: int | None = None) -> str:
    """A terminal view of ``df``: a header with the shape, the first and last rows, the
    dtypes, and the screener/recent summary or failed symbols when present.

    Examples
    --------
    >>> import pandas as pd
    >>> print(render(pd.DataFrame({"a": [1, 2]})).splitlines()[0])
    2 rows x 1 columns
    """
    width = width or shutil.get_terminal_size((120, 24)).columns
    name = df.attrs.get("dataset")
    head = f"{name}: " if name else ""
    lines = [f"{head}{len(df)} rows x {df.shape[1]} columns"]
    if len(df):
        lines.append(df.to_string(max_rows=max_rows, min_rows=max_rows, line_width=width))
    lines.append(f"dtypes: {_dtype_summary(df)}")
    summary = df.attrs.get("summary")
    if isinstance(summary, dict) and summary:
        lines.append("summary: " + ", ".join(f"{k}={v}" for k, v in summary.items()))
    failed = df.attrs.get("failed")
    if failed:
        lines.append("failed: " + "; ".join(f"{k}: {v}" for k, v in failed.items()))
    return "\n".join(lines)


def _check_out(out: str | None) -> Path | None:
    """Reject an unknown suffix before any request is made."""
    if out is None:
        return None
    path = Path(out)
    if path.suffix.lower() not in OUTPUT_SUFFIXES:
        raise UsageError(
            f"cannot tell the format of {out!r}: use a {', '.join(OUTPUT_SUFFIXES)} suffix",
            parameter="out",
        )
    return path


def _emit(df: pd.DataFrame, out: Path | None) -> None:
    if out is None:
        print(render(df))
        return
    from . import export

    writer = {".csv": export.to_csv, ".xlsx": export.to_excel, ".parquet": export.to_parquet}
    try:
        writer[out.suffix.lower()](df, out)
    except OSError as exc:
        raise _CliError(f"cannot write {out}: {exc.strerror or exc}") from None
    except ImportError as exc:
        extra = "excel" if out.suffix.lower() == ".xlsx" else "parquet"
        raise _CliError(f"{exc}; install it with: pip install 'mdframes[{extra}]'") from None
    print(f"wrote {len(df)} rows x {df.shape[1]} columns to {out}")


class _CliError(MdframesError):
    """An expected failure outside the library proper (a file that cannot be written)."""


# --- commands --------------------------------------------------------------------------------


def _client(args: argparse.Namespace, n_requests: int = 1) -> Client:
    from .client import Client
    from .loaders import PROGRESS_THRESHOLD

    # A bar only helps where someone watches and the load takes a while.
    progress = n_requests >= PROGRESS_THRESHOLD and sys.stderr.isatty()
    return Client(cache=not args.no_cache, progress=progress)


def _split_symbols(values: Sequence[str]) -> list[str]:
    symbols = [s for value in values for s in value.split(",")]
    if any(not s for s in symbols):
        raise UsageError("empty symbol in the list", parameter="symbols")
    return symbols


def _cmd_load(args: argparse.Namespace) -> int:
    name = _resolve_dataset(args.dataset)
    loader = _loaders()[name]
    accepted = _options_of(loader)
    given = {
        o: getattr(args, o)
        for o in {o for f in _loaders().values() for o in _options_of(f)}
        if getattr(args, o, None) is not None
    }
    wrong = sorted(set(given) - set(accepted))
    if wrong:
        flags = ", ".join(f"--{o.replace('_', '-')}" for o in wrong)
        allowed = ", ".join(f"--{o.replace('_', '-')}" for o in accepted) or "none"
        raise UsageError(f"{flags} does not apply to {name} (its options: {allowed})")
    kwargs: dict[str, Any] = dict(given, validate=not args.no_validate)
    out = _check_out(args.out)
    symbols = _split_symbols(args.symbols)
    if _takes_symbols(loader):
        if not symbols:
            raise UsageError(f"{name} needs at least one SYMBOL", parameter="symbols")
        kwargs.update(symbols=symbols, errors=args.errors)
    elif symbols:
        raise UsageError(f"{name} takes no SYMBOL (got {' '.join(symbols)})", parameter="symbols")
    with _client(args, len(symbols)) as client:
        df = loader(client=client, **kwargs)
    _emit(df, out)
    return 0


def _cmd_cross(args: argparse.Namespace) -> int:
    from . import loaders

    out = _check_out(args.out)
    loader = getattr(loaders, args.loader)
    with _client(args) as client:
        df = loader(
            args.dataset,
            market=args.market,
            region=args.region,
            limit=args.limit,
            client=client,
            validate=not args.no_validate,
        )
    _emit(df, out)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    symbols = _split_symbols(args.symbols) if args.symbols else None
    result = run_demo(out_dir=args.out_dir, symbols=symbols, stream=sys.stdout)
    print(f"wrote {result['excel']}")
    print(f"wrote {result['chart']}")
    # The summary names what failed; the exit code lets a script notice it.
    return 1 if (result["summary"]["error"] != "").any() else 0


def _cmd_sandbox(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a TCP port (0 to 65535)", parameter="port")
    from .sandbox import serve

    try:
        serve(port=args.port)
    except OSError as exc:
        raise _CliError(f"cannot serve on port {args.port}: {exc.strerror or exc}") from None
    return 0


def _cmd_cache(args: argparse.Namespace) -> int:
    from .client import Client

    # Only the cache is used: an empty key and URL keep a half-configured environment
    # (or a refused http:// URL) from blocking housekeeping.
    client = Client(api_key="", base_url="", cache=True)
    path = client.cache_path
    assert path is not None  # cache=True always names a file
    if args.action == "info":
        print(f"path:    {path}")
        if not path.exists():
            print("size:    0 bytes (no cache file yet)")
            print("entries: 0")
            return 0
        with client:
            cache = client.session.cache  # type: ignore[attr-defined]
            entries = len(cache.responses)
            expired = sum(1 for _ in cache.filter(valid=False, expired=True))
        print(f"size:    {_size(path.stat().st_size)}")
        print(f"entries: {entries} ({expired} expired)")
        return 0
    if not path.exists():
        print(f"nothing to clear: {path} does not exist")
        return 0
    with client:
        cache = client.session.cache  # type: ignore[attr-defined]
        before = len(cache.responses)
        if args.expired:
            cache.delete(expired=True)
        else:
            cache.clear()
        removed = before - len(cache.responses)
    print(f"removed {removed} entries from {path}")
    return 0


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"  # pragma: no cover


# --- entry point -----------------------------------------------------------------------------


def _one_line_warnings(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    print(f"{PROG}: warning: {_clean(str(message))}", file=sys.stderr)


def _clean(text: str) -> str:
    return redact(text, os.environ.get("MDFRAMES_API_KEY")).replace("\n", " ")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mdframes`` command; returns the exit code.

    Parameters
    ----------
    argv : list of str, optional
        The arguments without the program name (default: ``sys.argv[1:]``).

    Examples
    --------
    >>> main(["cache", "info"])  # doctest: +SKIP
    0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and argparse's own usage errors
        return exc.code if isinstance(exc.code, int) else 2
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warnings
        try:
            return int(args.func(args))
        except InvalidParameterError as exc:
            print(f"{PROG} {args.command}: error: {_clean(str(exc))}", file=sys.stderr)
            return 2
        except MdframesError as exc:
            print(f"{PROG} {args.command}: error: {_clean(str(exc))}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print(f"{PROG}: interrupted", file=sys.stderr)
            return 130


if __name__ == "__main__":
    sys.exit(main())
