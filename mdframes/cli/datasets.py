"""``mdframes load``, ``screen`` and ``recent``: one dataset each, named and optioned by the
registry alone (``mdframes.registry``), so a new dataset needs no edit here."""

from __future__ import annotations

import argparse
import textwrap
from typing import TYPE_CHECKING, Any

from ..errors import InvalidParameterError
from ..registry import resolve_name
from .common import (
    PROG,
    UsageError,
    add_command,
    add_output_options,
    check_out,
    emit,
    split_symbols,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..registry import Dataset

__all__ = ["register", "load_names"]

# command -> (the registry scopes it serves, the registry name prefix of its datasets). `load`
# also serves the v1 datasets, under their registry names (`v1/sentiments`).
SCOPES = {
    "load": (("symbol", "discovery"), ""),
    "screen": (("screener",), "screener/"),
    "recent": (("recent",), "recent/"),
}
_OPTION_HELP = {
    "start": "first date, YYYY-MM-DD (inclusive)",
    "end": "last date, YYYY-MM-DD (inclusive)",
    "limit": "maximum number of records",
    "type": "forecast horizon",
    "chamber": "congress chamber",
    "market": "market name, e.g. 'S&P 500' (see `mdframes load markets`)",
    "region": "region, e.g. US",
}
# v1 parameters under the command line's words: the window is --start/--end as in v2, and the
# ticker is the SYMBOL argument.
_V1_OPTIONS = {"date_from": "start", "date_to": "end"}
_SYMBOL_PARAM = "ticker"
_EXAMPLES = {
    "load": "mdframes load insider_trading AAPL MSFT --start 2026-01-01 --out insider.csv\n"
    "  mdframes load congress-trades NVDA --chamber house\n"
    "  mdframes load app_ratings_daily AAPL --limit 30\n"
    "  mdframes load forecast AAPL --type monthly\n"
    "  mdframes load tickers --market 'S&P 500' --limit 20\n"
    "  mdframes load v1/sentiments AAPL --market 'S&P 500' --start 2026-01-01",
    "screen": "mdframes screen sentiment --region US\n"
    "  mdframes screen insider_trading --limit 500 --out insider.xlsx",
    "recent": "mdframes recent news --limit 20",
}
_TITLES = {
    "load": ("load one dataset for one or more symbols", "Load one dataset"),
    "screen": ("one dataset across many tickers (screener)", "Screener"),
    "recent": ("latest entries across all tickers", "Recent activity"),
}


def datasets(command: str) -> dict[str, Dataset]:
    """CLI name -> dataset for one command: registry names, without ``screener/`` or
    ``recent/`` (which ``screen`` and ``recent`` also accept)."""
    from ..registry import REGISTRY

    scopes, prefix = SCOPES[command]
    names = {
        ds.name.removeprefix(prefix): ds
        for ds in REGISTRY.values()
        if ds.version == "v2" and ds.scope in scopes
    }
    if command == "load":
        names.update({ds.name: ds for ds in REGISTRY.values() if ds.version == "v1"})
    return names


def load_names() -> list[str]:
    """The dataset names ``mdframes load`` accepts (registry names of the per-symbol and
    discovery datasets).

    Examples
    --------
    >>> "app_ratings_daily" in load_names()
    True
    """
    return list(datasets("load"))


def _spellings(command: str) -> dict[str, Dataset]:
    """Every name ``command`` accepts for a dataset: its CLI name and, for ``screen`` and
    ``recent``, the registry name with its prefix too."""
    names = datasets(command)
    prefix = SCOPES[command][1]
    return {**names, **{prefix + n: ds for n, ds in names.items()}} if prefix else names


def dataset(text: str, command: str) -> Dataset:
    """The dataset ``text`` names for ``command``, or a :class:`UsageError` that suggests
    a close name, or the command that serves it."""
    names = _spellings(command)
    what = f"{SCOPES[command][1].replace('/', ' ')}dataset"
    try:
        return names[resolve_name(text, names, what=what, parameter="dataset")]
    except InvalidParameterError:
        for other in SCOPES:
            if other == command:
                continue
            try:
                found = resolve_name(text, _spellings(other), what="dataset")
            except InvalidParameterError:
                continue
            bare = found.removeprefix(SCOPES[other][1])
            raise UsageError(
                f"{text!r} is not a {command} dataset; try: {PROG} {other} {bare}",
                parameter="dataset",
            ) from None
        try:  # the message names the CLI names alone, without their prefixed spellings
            resolve_name(text, datasets(command), what=what, parameter="dataset")
        except InvalidParameterError as exc:
            raise UsageError(str(exc), parameter="dataset") from None
        raise


def _option(param: str) -> str:
    """The command-line option of a registry parameter (without ``--``)."""
    return _V1_OPTIONS.get(param, param)


def _add_options(p: argparse.ArgumentParser, command: str) -> None:
    """One option per registry parameter of the command's datasets."""
    names = datasets(command)
    uses: dict[str, list[Any]] = {}
    for ds in names.values():
        for param in ds.params:
            if param.name != _SYMBOL_PARAM:
                uses.setdefault(_option(param.name), []).append(param)
    for name, params in uses.items():
        text = _OPTION_HELP.get(name, f"the dataset's {name!r} parameter")
        choices = list(dict.fromkeys(c for param in params for c in param.choices))
        if choices:
            text += f"; one of: {', '.join(choices)}"
        bounds = {(param.lo, param.hi) for param in params}
        lo, hi = next(iter(bounds))
        if len(bounds) == 1 and lo is not None and hi is not None:
            text += f" ({lo} to {hi:,})"
        if len(params) < len(names) / 2:  # a rare option: say where it applies
            where = [
                n for n, ds in names.items() if any(_option(q.name) == name for q in ds.params)
            ]
            text += f" [{', '.join(where)}]"
        kind = int if params[0].kind == "int" else str
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind, help=text)


def register(subcommands: Any) -> None:
    """Add ``load``, ``screen`` and ``recent``."""
    for command, (help_text, title) in _TITLES.items():
        what = "its registry name" if command == "load" else "one of"
        names = datasets(command)
        text = f"{title}. DATASET is {what} ('_' and '-' are interchangeable): {', '.join(names)}."
        needy = [n for n, ds in names.items() if ds.needs_market_or_region]
        if needy:
            text += f" {', '.join(needy)} need --market or --region."
        p = add_command(
            subcommands,
            command,
            help=help_text,
            description=textwrap.fill(text, width=90),
            epilog=f"examples:\n  {_EXAMPLES[command]}",
            run=_run,
        )
        p.add_argument("dataset", metavar="DATASET")
        if command == "load":
            p.add_argument(
                "symbols", nargs="*", metavar="SYMBOL", help="symbols (space or comma separated)"
            )
        _add_options(p, command)
        if command == "load":
            p.add_argument(
                "--errors",
                choices=("raise", "skip"),
                default="raise",
                help="what one failing symbol does (default: raise)",
            )
        add_output_options(p)


def _run(args: argparse.Namespace) -> int:
    """Check every argument, then make one ``md.load`` call."""
    from ..client import Client
    from ..loaders import load

    ds = dataset(args.dataset, args.command)
    options = {_option(p.name) for d in datasets(args.command).values() for p in d.params} - {
        _SYMBOL_PARAM
    }
    given = {o: getattr(args, o) for o in sorted(options) if getattr(args, o, None) is not None}
    own = {_option(p.name): p.name for p in ds.params if p.name != _SYMBOL_PARAM}
    wrong = [o for o in given if o not in own]
    if wrong:
        flags = ", ".join(f"--{o.replace('_', '-')}" for o in wrong)
        allowed = ", ".join(f"--{o.replace('_', '-')}" for o in own) or "none"
        raise UsageError(f"{flags} does not apply to {ds.name} (its options: {allowed})")
    given = {own[o]: value for o, value in given.items()}
    out = check_out(args.out, args.format)
    symbols = split_symbols(getattr(args, "symbols", ()))
    if ds.param(_SYMBOL_PARAM) is not None:  # a v1 dataset about one ticker
        if len(symbols) != 1:
            raise UsageError(f"{ds.name} needs exactly one SYMBOL", parameter="symbols")
        given[_SYMBOL_PARAM] = symbols[0]
    elif ds.scope == "symbol":
        if not symbols:
            raise UsageError(f"{ds.name} needs at least one SYMBOL", parameter="symbols")
        given.update(symbols=symbols, errors=args.errors)
    elif symbols:
        raise UsageError(
            f"{ds.name} takes no SYMBOL (got {' '.join(symbols)})", parameter="symbols"
        )
    missing = [
        p.name
        for p in ds.params
        if p.in_path and p.default is None and p.name != _SYMBOL_PARAM and p.name not in given
    ]
    if missing:
        flags = " and ".join(f"--{_option(m).replace('_', '-')}" for m in missing)
        see = f" (see `{PROG} load markets`)" if "market" in missing else ""
        raise UsageError(f"{ds.name} needs {flags}{see}", parameter=missing[0])
    # progress=None: the library draws a bar for many symbols when stderr is a terminal.
    with Client(cache=not args.no_cache) as client:
        df = load(ds.name, client=client, validate=not args.no_validate, **given)
    emit(df, out)
    return 0
