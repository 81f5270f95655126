"""``mdframes agent-server``: the lake as MCP tools for an agent, clamped to a past time."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..cli.common import UsageError, add_command
from ..lake.cli import guarded, open_lake

__all__ = ["register"]

EPILOG = """\
examples:
  mdframes agent-server --lake research-lake --as-of 2026-06-30
  mdframes agent-server --lake research-lake --clock-file clock.txt

The server speaks the Model Context Protocol on stdin/stdout: an MCP client starts it.
A date alone means the end of that day; a clock file holds one time and may only move
forward. Without --as-of or --clock-file the clamp is now. It never calls the service.
"""


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "agent-server",
        help="serve the lake to an agent over MCP (stdio), clamped to a past time",
        description="Serve the lake's datasets, features, search and revisions as MCP tools "
        "over stdio, answering only with what was fetched and public by the clamp.",
        epilog=EPILOG,
        run=_run,
    )
    parser.add_argument("--lake", metavar="PATH", required=True, help="the lake root")
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--as-of", metavar="T", help="the clamp: a date or a UTC time")
    when.add_argument(
        "--clock-file", metavar="F", help="a file holding the clamp, re-read per call"
    )


@guarded  # the lake commands' errors: no credential of the root in any message
def _run(args: argparse.Namespace) -> int:
    from .._deps import require

    require("mcp", "agents", "mdframes agent-server")
    from ..errors import InvalidParameterError
    from .clamp import Clock, ClockError
    from .server import serve
    from .tools import Tools

    # Nothing here may reach the service: the key is dropped before anything is built.
    for name in ("MDFRAMES_API_KEY", "MDFRAMES_BASE_URL"):
        os.environ.pop(name, None)
    try:
        clock = Clock(as_of=args.as_of, clock_file=args.clock_file)
    except ClockError as exc:
        raise UsageError(str(exc)) from None
    except InvalidParameterError as exc:
        raise UsageError(f"--as-of: {exc}") from None
    serve(Tools(open_lake(args.lake, existing=True), clock))
    return 0
