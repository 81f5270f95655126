"""What one check of the audit found: its status, a line of detail, the rows it counted and
the offending rows (a few listed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

LISTED: Final = 50  # offending rows listed per check
NS_PER_DAY: Final = 86_400 * 10**9


@dataclass
class CheckResult:
    status: str
    detail: str
    rows: int
    failures: list[dict[str, Any]]


def skip(reason: str) -> CheckResult:
    return CheckResult("skipped", reason, 0, [])
