"""What one check of the audit found: its status, a line of detail, the rows it counted and
every offending row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

NS_PER_DAY: Final = 86_400 * 10**9


@dataclass
class CheckResult:
    status: str
    detail: str
    rows: int
    failures: Any  # every offending row: dicts, or a DataFrame, of the audit's FAILURE_COLUMNS


def skip(reason: str) -> CheckResult:
    return CheckResult("skipped", reason, 0, [])
