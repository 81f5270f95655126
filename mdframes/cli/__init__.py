"""The ``mdframes`` command line.

Commands: ``demo``, ``load``, ``screen``, ``recent``, ``search``, ``sandbox`` and ``cache``. Dataset
names and their options come from the registry alone, so a new dataset shows up without
edits; ``_`` and ``-`` are interchangeable in names, and a misspelt name, command or option
gets a "did you mean".

A module adds its own commands with a ``register(subcommands)`` hook listed in
:data:`COMMANDS`; the hook calls :func:`~mdframes.cli.common.add_command` and adds its
arguments (``mdframes/cli/demo.py`` ends with a short example).

Exit codes (CONTRACT §6.2): 0 done, 1 the work failed (the service, the data, the file
system, a symbol the service does not know), 2 bad usage or input (an unknown dataset, feature
or option, a malformed value, a file that is not what the command reads), 3 (``sync``) work
left pending, 130 interrupted. Expected errors print one line on stderr, in the command line's
words; only a bug prints a traceback. A closed standard output ends quietly (141), a full one
with one line (1).

>>> from mdframes.cli import main
>>> main(["load", "insider_trading", "AAPL", "--limit", "2", "--format", "csv"])
symbol,name,date,...
AAPL,Apple Inc.,...
AAPL,Apple Inc.,...
0
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from .._deps import MissingExtra
from ..errors import InvalidParameterError, MdframesError, redact
from .common import (
    OUTPUT_SUFFIXES,
    PROG,
    CommandError,
    Formatter,
    Parser,
    UsageError,
    add_command,
    add_output_options,
    cli_words,
    emit,
    render,
)
from .datasets import load_names

__all__ = [
    "main",
    "build_parser",
    "COMMANDS",
    "add_command",
    "add_output_options",
    "cli_words",
    "emit",
    "render",
    "load_names",
    "UsageError",
    "CommandError",
    "OUTPUT_SUFFIXES",
]

# The subcommands, in `mdframes --help` order: "module:function" names of register hooks,
# imported when the parser is built. A module adds its commands with one line here.
COMMANDS: list[str | Callable[[Any], None]] = [
    "mdframes.cli.demo:register",  # first in the help: where a new user starts
    "mdframes.cli.datasets:register",
    "mdframes.cli.tools:register",
    "mdframes.features.cli:register",
    "mdframes.features.cli:register_training_set",
    "mdframes.features.cli:register_audit",
    "mdframes.features.cli:register_evaluate",
    "mdframes.lake.cli:register",  # mdframes sync, mdframes lake (needs the lake extra to run)
    "mdframes.agents.cli:register",  # mdframes agent-server (needs the agents extra to run)
]

EPILOG = """\
examples:
  mdframes demo --out-dir demo-output
  mdframes load insider_trading AAPL MSFT --start 2026-01-01 --out insider.xlsx
  mdframes load congress-trades NVDA --chamber senate --limit 50
  mdframes load app_ratings_daily AAPL --out apps.parquet
  mdframes load markets
  mdframes screen insider_trading --limit 100
  mdframes recent news --limit 20
  mdframes load v1/sentiments AAPL --market "S&P 500"
  mdframes search apple
  mdframes sandbox --port 8765
  mdframes cache info

environment:
  MDFRAMES_API_KEY   the API key (never printed)
  MDFRAMES_BASE_URL  the service root, e.g. https://api.example.com
  MDFRAMES_CACHE     the HTTP cache file (default: the user cache folder)

exit codes: 0 done; 1 the work failed (service, data or file error); 2 bad usage or input;
  3 (sync) work left pending; 130 interrupted
"""


def build_parser() -> argparse.ArgumentParser:
    """The ``mdframes`` argument parser, with the commands of :data:`COMMANDS`.

    Examples
    --------
    >>> build_parser().parse_args(["load", "sentiment", "AAPL", "--limit", "5"]).limit
    5
    """
    from .._version import __version__

    parser = Parser(
        prog=PROG,
        description="Typed, validated pandas DataFrames from the market-data service.",
        epilog=EPILOG,
        formatter_class=Formatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=Parser
    )
    for hook in COMMANDS:
        if isinstance(hook, str):
            module, _, name = hook.partition(":")
            hook = getattr(importlib.import_module(module), name)
        hook(sub)
    return parser


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    # An unknown option is reported by its subcommand's parser, so the usage shown is the
    # subcommand's (argparse alone shows the top-level usage).
    words = list(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(words)
    if extra:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        command = sub.choices[args.command]
        # argparse gives a list of words (symbols, datasets) only the words before the first
        # option: `lake coverage --lake PATH sentiment AAPL` left the last two unrecognized.
        # The subcommand's words are parsed again with options and words mixed, as a shell
        # user writes them.
        with contextlib.suppress(TypeError, ValueError):  # a subcommand that cannot mix them
            rest = words[words.index(args.command) + 1 :]
            args, extra = command.parse_known_intermixed_args(
                rest, namespace=argparse.Namespace(command=args.command)
            )
        if extra:
            command.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _clean(text: str) -> str:
    return cli_words(redact(text, os.environ.get("MDFRAMES_API_KEY")).replace("\n", " "))


# What a shell reports for a program stopped by SIGPIPE (128 + 13): `| head` closed the pipe.
EXIT_BROKEN_PIPE = 141


def _drop_stdout(code: int) -> int:
    """End with ``code`` once standard output failed (a closed pipe, a full disk): Python would
    report the failed flush of stdout again at exit; pointing stdout at the null device first
    makes that flush a no-op."""
    # Stdout may not be a real file (a test capture).
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return code


def _one_line_warnings(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    print(f"{PROG}: warning: {_clean(str(message))}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mdframes`` command; returns the exit code.

    Parameters
    ----------
    argv : list of str, optional
        The arguments without the program name (default: ``sys.argv[1:]``).

    Examples
    --------
    >>> main(["cache", "info"])
    path: ...
    0
    """
    if sys.stdout is None:  # started with stdout closed (`>&-`): the work, nothing shown
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stdout is open until exit
    try:
        try:
            args = _parse(build_parser(), argv)
        except SystemExit as exc:  # --help, --version and argparse's own usage errors
            return exc.code if isinstance(exc.code, int) else 2
        code = _run(args)
        sys.stdout.flush()  # a closed pipe shows here at the latest, not at interpreter exit
        return code
    except BrokenPipeError:  # the reader of our output (`| head`) went away: quietly, as Unix
        return _drop_stdout(EXIT_BROKEN_PIPE)
    except OSError as exc:  # a full standard output (/dev/full): one line, as `cat` says it
        print(f"{PROG}: error: {_clean(exc.strerror or str(exc))}", file=sys.stderr)
        try:
            sys.stdout.flush()  # stdout is what failed: Python's flush at exit would fail too
        except OSError:
            return _drop_stdout(1)
        return 1


def _run(args: argparse.Namespace) -> int:
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warnings
        try:
            return int(args.func(args))
        except (MdframesError, MissingExtra) as exc:  # bad input is a usage error (2)
            print(f"{PROG} {args.command}: error: {_clean(str(exc))}", file=sys.stderr)
            return 2 if isinstance(exc, InvalidParameterError) else 1
        except KeyboardInterrupt:
            print(f"{PROG}: interrupted", file=sys.stderr)
            return 130
