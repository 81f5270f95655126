"""A leakage audit of a training set (CONTRACT §13, §13.1): recompute sampled rows from the
source cut at each row's knowledge, look for label copies and proxies, measure any splitter's
fold overlap, and report coverage and knowledge.

The checks live in their own modules: ``look_ahead`` (:mod:`.lookahead`, on the audit's own
engine :mod:`.recompute`), ``label_leak`` and ``proxy`` (:mod:`.leaks`), ``cv_overlap``
(:mod:`.folds`), ``coverage`` and ``knowledge`` (:mod:`.reports`); this face runs them and
holds :class:`AuditReport`.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

import pandas as pd

from ...errors import InvalidParameterError
from ...params import whole_number
from ..panels.sources import FramesSource, LakeLike, LakeSource, Source
from ..training.replay import features_of, pinned
from ..training.trainfile import FILES, check_content_hash
from .folds import cv_overlap, fold_overlaps, split_folds
from .leaks import label_checks
from .lookahead import look_ahead
from .outcome import skip
from .recompute import remember_row_rules
from .reports import coverage_report, knowledge_report

__all__ = ["AuditReport", "audit", "CHECKS", "fold_overlaps"]

CHECKS: Final = ("look_ahead", "label_leak", "cv_overlap", "coverage", "knowledge", "proxy")
CHECK_COLUMNS: Final = ["check", "status", "detail", "rows"]
FAILURE_COLUMNS: Final = ["check", "date", "symbol", "feature", "expected", "got"]


@dataclass
class AuditReport:
    """What :func:`audit` found.

    Attributes
    ----------
    ok : bool
        No check failed (a ``"warn"`` is not a failure).
    checks : DataFrame
        ``check, status`` (``"pass"``, ``"fail"``, ``"warn"`` or ``"skipped"``), ``detail``,
        ``rows`` (rows, cells or features that failed; what was examined when it passed).
    failures : DataFrame
        ``check, date, symbol, feature, expected, got``: every offending cell and row
        (``str()`` and the HTML show the first).
    """

    checks: pd.DataFrame
    failures: pd.DataFrame

    @property
    def ok(self) -> bool:
        return bool((self.checks["status"] != "fail").all())

    def __repr__(self) -> str:
        said = self.checks[self.checks["status"].isin(["fail", "warn"])]
        named = ", ".join(f"{c} {s}" for c, s in zip(said["check"], said["status"], strict=True))
        return f"<AuditReport ok={self.ok}{': ' + named if named else ''}>"

    def __str__(self) -> str:
        lines = [f"audit: {'ok' if self.ok else 'FAILED'}"]
        for row in self.checks.itertuples(index=False):
            lines.append(f"  {row.check:<11} {row.status:<7} {row.detail}")
        if len(self.failures):
            lines.append(f"failures ({len(self.failures)}, the first 10):")
            lines.extend(
                "  " + line for line in self.failures.head(10).to_string(index=False).splitlines()
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        colour = {"pass": "#1a7f37", "fail": "#cf222e", "warn": "#9a6700", "skipped": "#6e7781"}
        rows = "".join(
            f"<tr><td>{html.escape(str(check))}</td>"
            f"<td style='color:{colour.get(str(status), '')};font-weight:bold'>{status}</td>"
            f"<td style='text-align:left'>{html.escape(str(detail))}</td><td>{n}</td></tr>"
            for check, status, detail, n in self.checks[CHECK_COLUMNS].itertuples(index=False)
        )
        head = f"<b>AuditReport</b>: {'ok' if self.ok else 'failed'}"
        table = (
            "<table><tr><th>check</th><th>status</th><th>detail</th><th>rows</th></tr>"
            f"{rows}</table>"
        )
        more = ""
        if len(self.failures):
            more = (
                f"<details><summary>{len(self.failures)} failures (the first 20)</summary>"
                f"{self.failures.head(20).to_html(index=False)}</details>"
            )
        return f"<div>{head}{table}{more}</div>"


# --- the source ---------------------------------------------------------------------------------


def _open_source(ts: Any, source: Any) -> Source | None:
    """The source to cut: the one given (a lake read at the set's recorded versions), else
    the set's own lake when ``info`` names a local folder that is one; ``None``: none."""
    if source is None:
        root = str(ts.info.get("source") or "")
        if root in ("", "service", "frames") or "://" in root or "***" in root:
            return None
        import os

        if not os.path.isdir(root):
            return None
        from ...lake import Lake

        source = Lake(root)
    if isinstance(source, Source):
        return source
    if isinstance(source, dict):
        return FramesSource(source)
    if isinstance(source, LakeLike):
        return LakeSource(pinned(source, ts.info))
    raise InvalidParameterError(
        f"source must be a lake or a dict of frames, not {type(source).__name__}",
        parameter="source",
    )


# --- the audit ----------------------------------------------------------------------------------


def audit(
    ts: Any,
    *,
    source: Any = None,
    sample: int = 200,
    cv: Any = None,
    seed: int = 0,
) -> AuditReport:
    """Check a training set for leaks, without changing it (CONTRACT §13).

    - ``look_ahead``: ``sample`` rows drawn with ``seed`` are recomputed, one cell at a time,
      from the source cut to what each row may know (anchors on or before its date; with a
      lake, the versions fetched by the set's ``known_at``, by the end of the row's date for
      ``"row"``, read at the table versions the set recorded). A differing cell fails.
    - ``label_leak``: a feature equal to ``y``, with ``|corr| > 0.99`` over labelled rows, or
      equal to a price dated after its row (within the label's reach) fails.
    - ``cv_overlap``: per fold of ``cv`` (any scikit-learn splitter or list of ``(train,
      test)`` positions into ``ts.X``; default: the three purged splitters), the training
      rows whose ``[D, t1]`` overlaps a test row's or lies in the embargo. Any fails. A row
      whose ``t1`` is NaT (no label's end) is in no fold, whatever the splitter put it in.
    - ``coverage``: features NA on every training row of a fold and rows left NA for lack of
      the lake's coverage (reported); a feature NA on every row fails.
    - ``knowledge``: with ``known_at="row"``, the share of rows per dataset that relied on
      the first sync; fails when the lake counts otherwise than the set records.
    - ``proxy``: a feature whose mean per-date Spearman correlation with ``y`` is above 0.3,
      or whose correlation with ``y`` over labelled rows is above 0.5, in absolute value, is
      too good to be true for market data (a label proxy, a target encoding fitted on the
      whole set, a shifted label): ``"warn"``, which leaves ``ok`` True.

    ``failures`` lists every offending cell and row; a check's detail names every feature.
    A set read from a file is first checked against the content hash the file records.

    Parameters
    ----------
    ts : TrainingSet
    source : Lake or dict of frames, optional
        Where the set was made from (default: its lake, when ``info`` names a local one).
        Without one, ``look_ahead`` is skipped.
    sample : int
        Rows ``look_ahead`` recomputes.
    cv : splitter or list of (train, test), optional
    seed : int

    Returns
    -------
    AuditReport

    Raises
    ------
    DataValidationError
        A set read from a file whose rows do not match the content hash it records.

    Examples
    --------
    >>> from sklearn.model_selection import KFold
    >>> report = md.features.audit(ts, source=lake, cv=KFold(5, shuffle=True))
    >>> report.ok, report.checks.set_index("check")["status"]["cv_overlap"]
    (False, 'fail')
    """
    from ..training.trainset import TrainingSet

    if not isinstance(ts, TrainingSet):
        raise InvalidParameterError(
            f"audit takes a TrainingSet, not {type(ts).__name__}", parameter="ts"
        )
    if ts in FILES:  # read from a file: its rows first, as the file records them
        check_content_hash(ts, FILES[ts])
    whole_number(sample, "sample", what="a number of rows")
    if cv is not None and not (hasattr(cv, "split") or isinstance(cv, Iterable)):
        raise InvalidParameterError(
            "cv must be a scikit-learn splitter or a list of (train, test) positions",
            parameter="cv",
        )
    remember_row_rules()
    cut = _open_source(ts, source)
    features = features_of(ts)
    # The checks read X without its attrs (pandas copies them with every column taken).
    attrs: dict[str, Any] = {str(k): v for k, v in ts.X.attrs.items()}
    X = ts.X.copy(deep=False)
    X.attrs = {}
    view = TrainingSet(X, ts.y, ts.t1, ts.info, ts.features)
    splits = split_folds(cv, view) if len(view.X) else []
    leak, proxy = label_checks(view, cut)
    outcomes = {
        "look_ahead": look_ahead(view, attrs, cut, features, int(sample), int(seed)),
        "label_leak": leak,
        "cv_overlap": cv_overlap(view, splits) if len(view.X) else skip("no rows"),
        "coverage": coverage_report(view, attrs, splits, cv is not None),
        "knowledge": knowledge_report(view, attrs, cut),
        "proxy": proxy,
    }
    checks = pd.DataFrame(
        [(name, outcomes[name].status, outcomes[name].detail, outcomes[name].rows)
         for name in CHECKS],
        columns=CHECK_COLUMNS,
    ).astype({"rows": "int64"})  # fmt: skip
    found = [pd.DataFrame(o.failures, columns=FAILURE_COLUMNS) for o in outcomes.values()]
    found = [f for f in found if len(f)] or [pd.DataFrame(columns=FAILURE_COLUMNS)]
    return AuditReport(checks, pd.concat(found, ignore_index=True))
