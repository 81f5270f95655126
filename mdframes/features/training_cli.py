"""``mdframes training-set SYMBOL... --start --end [--features a,b] [--lake PATH] [--known-at
T|row] [--errors skip] --label fwd_return_5 --out FILE``.

:func:`register` is listed in :data:`mdframes.cli.COMMANDS`. The file is
:meth:`~mdframes.features.TrainingSet.to_parquet`'s (X, y, t1 and info in one Parquet file),
read back with :func:`mdframes.features.read_training_set`.
"""

from __future__ import annotations

import argparse
import re
import textwrap
from typing import Any

__all__ = ["register", "register_audit"]

EPILOG = """\
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


def register(subcommands: Any) -> None:
    """Add the ``training-set`` command to the ``mdframes`` parser's subcommands.

    Examples
    --------
    >>> from mdframes.cli import build_parser
    >>> build_parser().parse_args(["training-set", "AAPL", "--start", "2026-01-05",
    ...                            "--end", "2026-02-27", "--out", "t.parquet"]).label
    'fwd_return_5'
    """
    from ..cli.common import add_command
    from .cli import add_panel_arguments

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
        epilog=EPILOG,
        run=run,
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


def run(args: argparse.Namespace) -> int:
    """Run ``mdframes training-set`` from parsed arguments; returns the exit code."""
    from pathlib import Path

    from ..cli.common import CommandError, UsageError, check_out
    from .cli import panel_request, panel_source
    from .labels import forward_return
    from .training import training_set

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
    with panel_source(args) as source:
        ts = training_set(
            symbols,
            args.start,
            args.end,
            names,
            label=label,
            source=source,
            known_at=args.known_at,
            errors=args.errors,
        )
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

exit codes: 0 every check passed or was skipped, 1 a check failed (or an error)
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
        help="check a training set for look-ahead, label copies, fold overlap, coverage",
        description=textwrap.fill(
            "Audit a training set written by `mdframes training-set` (or "
            "TrainingSet.to_parquet): recompute sampled rows from the lake cut at each row's "
            "knowledge, look for features that copy the label, measure the purged splitters' "
            "fold overlap, report coverage and knowledge. Exits 1 when a check fails.",
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
    from .audit import audit
    from .training import read_training_set

    if not Path(args.file).is_file():
        raise UsageError(f"{args.file}: no such file", parameter="file")
    if args.sample < 0:
        raise UsageError(f"--sample {args.sample}: a number of rows >= 0", parameter="sample")
    ts = read_training_set(args.file)
    source = None
    if args.lake is not None:
        from ..lake import Lake

        source = Lake(args.lake)
    report = audit(ts, source=source, sample=args.sample)
    print(report)
    return 0 if report.ok else 1
