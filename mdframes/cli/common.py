"""What every ``mdframes`` command shares: adding a subcommand, its output options, dataset
name matching, printing or writing a frame, and the errors that set the exit code.

A module that adds commands imports from here (or from :mod:`mdframes.cli`, which re-exports
these names) and lists its ``register(subcommands)`` hook in ``mdframes.cli.COMMANDS``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .._deps import MissingExtra
from ..errors import InvalidParameterError, MdframesError
from ..io import WRITER_NEEDS

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "PROG",
    "OUTPUT_SUFFIXES",
    "FORMATS",
    "STDOUT",
    "Output",
    "UsageError",
    "CommandError",
    "add_command",
    "add_output_options",
    "add_out_option",
    "check_out",
    "stdout_is_terminal",
    "cli_words",
    "split_symbols",
    "emit",
    "render",
]

PROG = "mdframes"
OUTPUT_SUFFIXES = (".csv", ".xlsx", ".parquet")
# What a frame written to standard output can be (--format), and --out's name for it.
FORMATS = ("csv", "json", "jsonl")
STDOUT = "-"


class UsageError(InvalidParameterError):
    """Bad command-line input found by the CLI itself (exit code 2)."""


class CommandError(MdframesError):
    """An expected failure outside the library proper, e.g. a file that cannot be written
    (exit code 1)."""


# --- parsers ---------------------------------------------------------------------------------


class Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32)


def _suggest(word: str, candidates: Iterable[str]) -> str:
    from ..registry import closest_names

    close = closest_names(word, candidates, n=1)
    return f" (did you mean {close[0]}?)" if close else ""


class Parser(argparse.ArgumentParser):
    """argparse with a "did you mean" for a misspelt command, choice or option."""

    def error(self, message: str) -> NoReturn:
        choice = re.search(r"invalid choice: '([^']*)'", message)
        if choice:
            choices = [c for a in self._actions if a.choices for c in a.choices]
            message += _suggest(choice.group(1), choices)
        elif message.startswith("unrecognized arguments:"):
            options = [o for o in self._option_string_actions if o.startswith("--")]
            words = [w for w in message.split(":", 1)[1].split() if w.startswith("-")]
            if words:
                message += _suggest(words[0].split("=")[0], options)
        super().error(message)


def add_command(
    subcommands: Any,
    name: str,
    *,
    help: str,
    description: str,
    epilog: str = "",
    run: Callable[[argparse.Namespace], int],
) -> argparse.ArgumentParser:
    """Add one subcommand whose ``run(args)`` returns the exit code; returns its parser.

    Examples
    --------
    >>> def register(subcommands):
    ...     p = add_command(subcommands, "hello", help="say hello", description="Say hello.",
    ...                     run=lambda args: print("hello") or 0)
    ...     p.add_argument("--loud", action="store_true")
    """
    p = subcommands.add_parser(
        name, help=help, description=description, epilog=epilog, formatter_class=Formatter
    )
    p.set_defaults(func=run)
    return p


def add_out_option(p: argparse.ArgumentParser) -> None:
    """``--out FILE|-`` and ``--format csv|json|jsonl``: where a printed frame goes."""
    p.add_argument(
        "--out",
        metavar="FILE|-",
        help="write to FILE; the format follows the suffix (.csv, .xlsx, .parquet). '-': the "
        "whole frame to standard output. Without it a terminal shows a table, a pipe gets "
        "the whole frame",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        help="the format of a frame written to standard output (default: csv, the CSV "
        "export's rules; json: an array of records; jsonl: one record per line)",
    )


def add_output_options(p: argparse.ArgumentParser) -> None:
    """``--out FILE|-``, ``--format``, ``--no-cache`` and ``--no-validate``, as every dataset
    command has."""
    add_out_option(p)
    p.add_argument("--no-cache", action="store_true", help="bypass the HTTP cache")
    p.add_argument(
        "--no-validate",
        action="store_true",
        help="skip the data checks of the frame (types, ranges, vocabularies)",
    )


# --- input -----------------------------------------------------------------------------------


def _sync_command(match: re.Match[str]) -> str:
    """``lake.sync(['news'], ['GOOGL'])`` -> ```mdframes sync news GOOGL --lake PATH```."""
    datasets = re.findall(r"'([^']*)'", match[1])
    symbols = re.findall(r"'([^']*)'", match[2]) or ["SYMBOL..."]
    return f"`{PROG} sync {' '.join([*datasets, *symbols])} --lake PATH`"


# The library's messages speak Python; on the command line they speak the command's words.
_PYTHON_TO_CLI: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"lake\.sync\((\[[^\]]*\]), (\[[^\]]*\]|err\.symbols)\)"), _sync_command),
    (re.compile(r"lake\.sync\('([^']*)', \.\.\.\)"), rf"`{PROG} sync \1 SYMBOL... --lake PATH`"),
    (re.compile(r" \(err\.symbols\)"), ""),
    (
        re.compile(
            r"'YYYY-MM-DD(THH:MM)?'( \(UTC\))?, (datetime\.date|datetime) or pandas\.Timestamp"
        ),
        r"YYYY-MM-DD\1\2",
    ),
    # What only Python holds (a Feature object, a frame's attrs) has no command-line form.
    (
        re.compile(
            r" \(or pass md\.features\.Feature\(\.\.\.\)\)| \(errors in panel\.attrs\['failed'\]\)"
            r"|; see panel\.attrs\['coverage'\]| \(see ts\.X\.attrs\['coverage'\]\)"
        ),
        "",
    ),
    (re.compile(r"\bmd\.Lake needs"), "the lake needs"),
    (re.compile(r"written by TrainingSet\.to_parquet"), f"written by `{PROG} training-set`"),
    (re.compile(r"lake\.repair\(\) \(or (`[^`]*`)\)| or lake\.upgrade\(\)"), r"\1"),
    (re.compile(r"\blake\.(info|upgrade)\(\)"), rf"`{PROG} lake \1`"),
    (re.compile(r"(?:md\.)?sandbox\.start\(\)"), f"`{PROG} sandbox`"),
    (re.compile(r"(?:md\.)?load_(markets|regions)\(\)"), rf"`{PROG} load \1`"),
    (re.compile(r"(?:md\.)?datasets\(\)"), f"`{PROG} load --help`"),
    (re.compile(r"(?:md\.)?search\(text\)"), f"`{PROG} search TEXT`"),
    (re.compile(r"""errors=["']skip["']"""), "--errors skip"),
    (re.compile(r"(?<![?&])\bwait=True\b"), "--wait"),
    # A snapshot's whole history has no command-line form: say where it is, and the option.
    (
        re.compile(r"(lake\.read\([^)]*history=True\))"),
        r"\1 in Python (the command line reads one version: --known-at)",
    ),
    (re.compile(r"(?<![?&])\b(known_at|as_of)=(?=\S)"), lambda m: f"--{m[1].replace('_', '-')} "),
    (re.compile(r"(?<![?&])\b(since|until)=(?=\S)"), r"--\1 "),
    (re.compile(r"(?<![\w-])known_at\b(?!=)"), "--known-at"),
    # The command line has no Client(...): the environment is its only way in.
    (re.compile(r"\bpass (?:base_url|api_key)= or "), ""),
    # Never inside a URL's query (``...?region=us-east-1``): only the library's own words.
    (re.compile(r"(?<![?&])\bdate_from="), "--start "),
    (re.compile(r"(?<![?&])\bdate_to="), "--end "),
    (re.compile(r"(?<![?&])\b(market|region|start|end|limit|chamber|type|view)=(?=\S)"), r"--\1 "),
    (re.compile(r"(?<![?&])\b(market|region|start|end|limit|chamber|type|view)=(?!\S)"), r"--\1"),
)


def cli_words(text: str) -> str:
    """A library message in the command line's words: ``market=`` -> ``--market``,
    ``md.sandbox.start()`` -> ``mdframes sandbox``, ``load_markets()`` -> ``mdframes load
    markets``, ``errors="skip"`` -> ``--errors skip``.

    Examples
    --------
    >>> cli_words("this screener needs market= or region= (see load_markets())")
    'this screener needs --market or --region (see `mdframes load markets`)'
    >>> cli_words("run lake.sync(['news'], ['GOOGL']) or pass errors='skip'")
    'run `mdframes sync news GOOGL --lake PATH` or pass --errors skip'
    >>> cli_words("run it again then, or pass wait=True to wait for it")
    'run it again then, or pass --wait to wait for it'
    >>> cli_words("sentiment: known_at=2026-01-01 is earlier than every stored version")
    'sentiment: --known-at 2026-01-01 is earlier than every stored version'
    """
    for pattern, words in _PYTHON_TO_CLI:
        text = pattern.sub(words, text)
    return text


def stdout_is_terminal() -> bool:
    """Whether standard output is a terminal (a person reading) rather than a pipe or file."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # no stdout, or a closed one
        return False


@dataclass(frozen=True)
class Output:
    """Where a command's frame goes, decided once from ``--out`` and ``--format``.

    ``path`` is a file (its suffix names the format), or ``None`` for standard output, where
    ``format`` is the format; with neither ``--out -`` nor ``--format``, a terminal gets the
    readable preview and a pipe the whole frame as CSV.
    """

    path: Path | None = None
    format: str | None = None

    def whole(self) -> str | None:
        """The format the whole frame is written to stdout in, or ``None`` (a file, or the
        terminal's preview)."""
        if self.path is not None or (self.format is None and stdout_is_terminal()):
            return None
        return self.format or "csv"


def check_out(out: str | None, format: str | None = None) -> Output:
    """``--out`` and ``--format`` as an :class:`Output`; an unknown suffix, or ``--format``
    with a file, is refused before any request is made.

    Examples
    --------
    >>> check_out("-", "jsonl")
    Output(path=None, format='jsonl')
    >>> check_out("insider.xlsx").path
    PosixPath('insider.xlsx')
    """
    if format is not None and format not in FORMATS:
        raise UsageError(
            f"--format {format!r}: use one of {', '.join(FORMATS)}", parameter="format"
        )
    if out is None or out == STDOUT:  # `--out -`: the whole frame, a terminal's too
        return Output(None, format or ("csv" if out == STDOUT else None))
    path = Path(out)
    if path.suffix.lower() not in OUTPUT_SUFFIXES:
        raise UsageError(
            f"cannot tell the format of {out!r}: use a {', '.join(OUTPUT_SUFFIXES)} suffix, "
            f"or --out {STDOUT} for standard output",
            parameter="out",
        )
    if format is not None:
        raise UsageError(
            f"--format {format} is for standard output; a file's format follows its suffix "
            f"({path.name})",
            parameter="format",
        )
    needs = WRITER_NEEDS.get(path.suffix.lower())
    if needs is not None:
        try:
            needs()  # a missing extra is said before the data is loaded, not after
        except MissingExtra as exc:
            raise CommandError(str(exc)) from None
    return Output(path)


def split_symbols(values: Sequence[str]) -> list[str]:
    """Symbols given space or comma separated, as one list."""
    symbols = [s for value in values for s in value.split(",")]
    if any(not s for s in symbols):
        raise UsageError("empty symbol in the list", parameter="symbols")
    return symbols


# --- output ----------------------------------------------------------------------------------


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
    lines = [f"{name + ': ' if name else ''}{len(df)} rows x {df.shape[1]} columns"]
    if len(df):
        lines.append(df.to_string(max_rows=max_rows, min_rows=max_rows, line_width=width))
    counts = df.dtypes.astype(str).value_counts(sort=False)
    lines.append("dtypes: " + ", ".join(f"{dtype}({n})" for dtype, n in counts.items()))
    summary = df.attrs.get("summary")
    if isinstance(summary, dict) and summary:
        lines.append("summary: " + ", ".join(f"{k}={v}" for k, v in summary.items()))
    failed = df.attrs.get("failed")
    if failed:
        lines.append("failed: " + "; ".join(f"{k}: {v}" for k, v in failed.items()))
    return "\n".join(lines)


def emit(df: pd.DataFrame, out: Output | Path | None, *, max_rows: int = 20) -> None:
    """Write ``df`` where ``out`` says: a file in the format of its suffix, the whole frame to
    standard output (a pipe, ``--out -`` or ``--format``), or a table for a terminal."""
    from .. import io as export

    if not isinstance(out, Output):
        out = Output(out)
    whole = out.whole()
    if whole is not None:
        stream = sys.stdout
        if whole == "csv":
            export.write_csv(df, stream)
        else:
            export.write_json(df, stream, lines=whole == "jsonl")
        return
    if out.path is None:
        print(render(df, max_rows=max_rows))
        return
    path = out.path
    writer: dict[str, Callable[[pd.DataFrame, Path], Path]] = {
        ".csv": export.to_csv,
        ".xlsx": export.to_excel,
        ".parquet": export.to_parquet,
    }
    try:
        writer[path.suffix.lower()](df, path)
    except BrokenPipeError:  # --out /dev/stdout | head: the reader left, see cli.main
        raise
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
    except MissingExtra as exc:  # it says which extra to install
        raise CommandError(str(exc)) from None
    print(f"wrote {len(df)} rows x {df.shape[1]} columns to {path}")
