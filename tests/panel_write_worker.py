"""A process that writes one panel with ``md.features.write_panel``, for tests/test_panel_crash.py.

``python -m tests.panel_write_worker OUT``: the panel of :data:`ARGS` over :func:`frames` (news
made up from a fixed seed: no server needed), one part file per symbol, serially. The test
kills it with SIGKILL at a named checkpoint (``MDFRAMES_LAKE_CRASH``) or while it writes.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

import mdframes as md

SYMBOLS = [f"S{k:02d}" for k in range(24)]
ARGS = (SYMBOLS, "2025-01-01", "2026-06-30", ["news_count_7d", "news_sentiment_mean_7d"])


def frames() -> dict[str, pd.DataFrame]:
    """Per symbol, a few hundred news articles over two years (the same on every call)."""
    rng = np.random.default_rng(7)
    n = 300 * len(SYMBOLS)
    days = rng.integers(0, 730, n)
    return {
        "news": pd.DataFrame(
            {
                "symbol": pd.array(np.repeat(SYMBOLS, 300), dtype="string"),
                "date": pd.Timestamp("2024-10-01") + pd.to_timedelta(days, unit="D"),
                "sentiment": rng.normal(size=n),
            }
        )
    }


def main(out: str) -> None:
    md.features.write_panel(out, *ARGS, source=frames(), chunk=1)


if __name__ == "__main__":
    main(sys.argv[1])
