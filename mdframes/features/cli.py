"""The features' commands: ``mdframes features``, ``mdframes training-set`` and ``mdframes audit``.

- ``mdframes features SYMBOL... --start --end [--features a,b] [--lake PATH] [--known-at T|row]
  [--errors skip] [--out FILE]``: the output follows the file suffix like the other commands
  (Parquet, CSV, Excel), with ``date`` and ``symbol`` as the first two columns.
- ``mdframes training-set SYMBOL... ... --label fwd_return_5 --out FILE``: the file is
  :meth:`~mdframes.features.TrainingSet.to_parquet`'s (X, y, t1 and info in one Parquet file),
  read back with :func:`mdframes.features.read_training_set`.
- ``mdframes audit FILE``: :func:`mdframes.features.audit` of such a file.
- ``mdframes evaluate FILE [--lake PATH] [--out report.html]``:
  :func:`mdframes.features.evaluate` of such a file, its summary printed, and a
  self-contained HTML report.

Their register hooks are listed in :data:`mdframes.cli.COMMANDS`.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import textwrap
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .panels.sources import Source

__all__ = ["register", "register_audit", "register_evaluate", "register_training_set"]

_T = TypeVar("_T")

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
        run=run_features,
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
    from .panels.definitions import resolve_features

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
    from .panels.sources import LakeSource, ServiceSource

    if args.known_at is not None and args.lake is None:
        raise UsageError(
            "--known-at needs --lake (only a lake knows when each row was fetched)",
            parameter="known_at",
        )
    if args.lake is not None:
        from ..lake.cli import open_lake

        yield LakeSource(open_lake(args.lake, existing=True))
        return
    with Client(cache=not args.no_cache) as client:
        yield ServiceSource(client)


def built(
    make: Callable[..., _T], args: argparse.Namespace, symbols: list[str], names: Any, **more: Any
) -> _T:
    """``make`` (:func:`~mdframes.features.panel` or :func:`~mdframes.features.training_set`)
    called with the panel's arguments of :func:`add_panel_arguments`, on its source."""
    with panel_source(args) as source:
        return make(
            symbols, args.start, args.end, names, source=source, known_at=args.known_at,
            errors=args.errors, **more,
        )  # fmt: skip


def run_features(args: argparse.Namespace) -> int:
    """Run ``mdframes features`` from parsed arguments; returns the exit code."""
    import sys

    from ..cli.common import PROG, check_out, cli_words, emit
    from .panels.build import panel

    out = check_out(args.out, args.format)
    df = built(panel, args, *panel_request(args))
    emit(df.reset_index(), out)
    failed = df.attrs.get("failed")
    if failed and (out.path is not None or out.whole()):  # a terminal's table names them
        why = "; ".join(f"{symbol}: {error}" for symbol, error in failed.items())
        print(f"{PROG} features: failed: {cli_words(why)}", file=sys.stderr)
    return 0


TRAINING_EPILOG = """\
examples:
  mdframes training-set AAPL MSFT --start 2026-01-05 --end 2026-06-30 \\
      --label fwd_return_5 --out train.parquet
  mdframes sync put_call_ratio news NVDA AMD --start 2025-12-01 --lake ./lake
  mdframes training-set NVDA AMD --start 2026-01-05 --end 2026-06-30 --lake ./lake \\
      --known-at row --features put_call_ratio_last,news_count_7d --out train.parquet

read it back:
  python -c "import mdframes as md; print(md.features.read_training_set('train.parquet'))"
"""
_LABEL = re.compile(r"fwd_return_([0-9]+)")


def register_training_set(subcommands: Any) -> None:
    """Add the ``training-set`` command to the ``mdframes`` parser's subcommands.

    Examples
    --------
    >>> from mdframes.cli import build_parser
    >>> build_parser().parse_args(["training-set", "AAPL", "--start", "2026-01-05",
    ...                            "--end", "2026-02-27", "--out", "t.parquet"]).label
    'fwd_return_5'
    """
    from ..cli.common import add_command

    p = add_command(
        subcommands,
        "training-set",
        help="features, a forward-return label and t1 per date and symbol, for a model",
        description=textwrap.fill(
            "Build a training set: the point-in-time feature panel of `mdframes features` "
            "for each business day from --start to --end and each SYMBOL, the forward return "
            "of each row (--label fwd_return_N: from the next day's closing price to N days "
            "later) and the last date each label reads. Written as one Parquet file.",
            width=90,
        ),
        epilog=TRAINING_EPILOG,
        run=run_training_set,
    )
    add_panel_arguments(p)
    p.add_argument(
        "--label",
        default="fwd_return_5",
        metavar="fwd_return_N",
        help="the label: the forward return over N business days (default fwd_return_5)",
    )
    p.add_argument(
        "--lag",
        type=int,
        default=1,
        metavar="N",
        help="business days from the row's date to the start of the return (default 1)",
    )
    p.add_argument("--out", required=True, metavar="FILE", help="the Parquet file to write")


def run_training_set(args: argparse.Namespace) -> int:
    """Run ``mdframes training-set`` from parsed arguments; returns the exit code."""
    from pathlib import Path

    from ..cli.common import CommandError, UsageError, check_out
    from .training.labels import forward_return
    from .training.trainset import training_set

    out = Path(args.out)
    if out.suffix.lower() != ".parquet":
        raise UsageError(
            f"--out {args.out!r}: a training set is written as Parquet (.parquet)",
            parameter="out",
        )
    check_out(args.out)  # pyarrow (the parquet extra) is there before anything is computed
    symbols, names = panel_request(args)
    match = _LABEL.fullmatch(args.label.strip())
    if match is None:
        raise UsageError(
            f"--label {args.label!r} is not a label: use fwd_return_N (N business days)",
            parameter="label",
        )
    label = forward_return(int(match[1]), lag=args.lag)
    ts = built(training_set, args, symbols, names, label=label)
    try:
        ts.to_parquet(out)
    except OSError as exc:
        raise CommandError(f"cannot write {out}: {exc.strerror or exc}") from None
    known = int(ts.y.notna().sum())
    print(f"wrote {out}: {len(ts.X):,} rows x {ts.X.shape[1]} features, {known:,} with a label")
    return 0


AUDIT_EPILOG = """\
examples:
  mdframes audit train.parquet                  # the set's own lake, as info records it
  mdframes audit train.parquet --lake ./lake --sample 500

exit codes: 0 every check passed, warned or was skipped, 1 a check failed, the file's rows
do not match its content hash or the lake could not be read, 2 bad input (a file that is not
a training set, an unknown option)
"""


def register_audit(subcommands: Any) -> None:
    """Add the ``audit`` command (CONTRACT §13).

    Examples
    --------
    >>> from mdframes.cli import build_parser
    >>> build_parser().parse_args(["audit", "t.parquet", "--sample", "50"]).sample
    50
    """
    from ..cli.common import add_command

    p = add_command(
        subcommands,
        "audit",
        help="check a training set for look-ahead, label copies and proxies, fold overlap, coverage",
        description=textwrap.fill(
            "Audit a training set written by `mdframes training-set` (or "
            "TrainingSet.to_parquet): recompute sampled rows from the lake cut at each row's "
            "knowledge, look for features that copy the label (or are too close to it: a "
            "warning), measure the purged splitters' fold overlap, report coverage and "
            "knowledge. Exits 1 when a check fails.",
            width=90,
        ),
        epilog=AUDIT_EPILOG,
        run=run_audit,
    )
    p.add_argument("file", metavar="TRAINING_SET_FILE", help="the set's Parquet file")
    p.add_argument(
        "--lake",
        metavar="PATH",
        help="the lake the set was made from (default: the one its info names, if local)",
    )
    p.add_argument(
        "--sample", type=int, default=200, metavar="N", help="rows to recompute (default 200)"
    )


def run_audit(args: argparse.Namespace) -> int:
    """Run ``mdframes audit``; 1 when a check fails."""
    from pathlib import Path

    from ..cli.common import UsageError
    from ..errors import InvalidParameterError
    from .proof.audit import audit
    from .training.trainset import read_training_set

    if not Path(args.file).is_file():
        raise UsageError(f"{args.file}: no such file", parameter="file")
    if args.sample < 0:
        raise UsageError(f"--sample {args.sample}: a number of rows >= 0", parameter="sample")
    try:
        ts = read_training_set(args.file)
    except (OSError, ValueError) as exc:  # pyarrow's: an empty file, or not Parquet at all
        if isinstance(exc, InvalidParameterError):
            raise
        why = re.sub(r"^Could not open Parquet input source '[^']*': ", "", str(exc))
        raise UsageError(
            f"{args.file} is not a training set file ({why.splitlines()[0]})"
        ) from None
    source = None
    if args.lake is not None:
        from ..lake.cli import open_lake

        source = open_lake(args.lake, existing=True)
    report = audit(ts, source=source, sample=args.sample)
    print(report)
    return 0 if report.ok else 1


def register_evaluate(subcommands: Any) -> None:
    """Add the ``evaluate`` command (CONTRACT §16).

    >>> from mdframes.cli import build_parser
    >>> build_parser().parse_args(["evaluate", "t.parquet", "--out", "r.html"]).out
    'r.html'
    """
    from ..cli.common import add_command

    p = add_command(
        subcommands,
        "evaluate",
        help="is a feature worth a model: rank IC, quantile returns, decay, revisions",
        description="Evaluate the features of a training set written by `mdframes "
        "training-set` (md.features.evaluate): print the summary and, with --out, write an "
        "HTML report.",
        epilog="example:\n  mdframes evaluate train.parquet --lake ./lake --out report.html\n",
        run=run_evaluate,
    )
    p.add_argument("file", metavar="TRAINING_SET_FILE", help="the set's Parquet file")
    p.add_argument(
        "--lake", metavar="PATH", help="the set's lake (default: the one its info names)"
    )
    p.add_argument("--out", metavar="FILE", help="write a self-contained HTML report here")


def run_evaluate(args: argparse.Namespace) -> int:
    """Run ``mdframes evaluate``."""
    from pathlib import Path

    from ..cli.common import UsageError
    from .proof.evaluate import evaluate, write_report
    from .training.trainset import read_training_set

    if not Path(args.file).is_file():
        raise UsageError(f"{args.file}: no such file", parameter="file")
    if args.out is not None and Path(args.out).suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"--out {args.out!r}: the report is HTML (.html)", parameter="out")
    source = None
    if args.lake is not None:
        from ..lake import Lake

        source = Lake(args.lake)
    ev = evaluate(read_training_set(args.file), source=source)
    for frame in (ev.summary, ev.revisions):
        if frame is not None:
            print(frame.round(4).to_string(index=False))
    if args.out is not None:
        print(f"wrote {write_report(ev, args.out, f'Feature evaluation of {args.file}')}")
    return 0
