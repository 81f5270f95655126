"""``mdframes search``, ``sandbox`` and ``cache``: the commands that are not one dataset."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..errors import redact
from .common import (
    PROG,
    CommandError,
    UsageError,
    add_command,
    add_out_option,
    check_out,
    emit,
)

__all__ = ["register", "SANDBOX_KEY"]

SANDBOX_KEY = "sandbox-key"  # = mdframes.sandbox.SANDBOX_KEY (a test checks); not a secret


def register(subcommands: Any) -> None:
    """Add ``search``, ``sandbox`` and ``cache``."""
    p = add_command(
        subcommands,
        "search",
        help="find a symbol by symbol or company name",
        description="Find symbols in the service's ticker list by symbol or company name "
        "(case and accents ignored), best match first.",
        epilog="examples:\n  mdframes search apple\n  mdframes search 'bank of' --limit 5",
        run=_search,
    )
    p.add_argument("text", nargs="+", metavar="TEXT", help="a symbol or words of a name")
    p.add_argument("--limit", type=int, default=10, help="most rows shown (default: 10)")
    add_out_option(p)
    p.add_argument("--no-cache", action="store_true", help="bypass the HTTP cache")

    p = add_command(
        subcommands,
        "sandbox",
        help="serve the offline sandbox on 127.0.0.1 until Ctrl-C",
        description="Serve the whole v1 and v2 interface with synthetic data on 127.0.0.1.\n"
        f"It accepts one key, {SANDBOX_KEY!r} (public, not a secret). Point mdframes at it\n"
        "in another terminal with:\n\n"
        "  export MDFRAMES_BASE_URL=http://127.0.0.1:8765   # the --port you chose\n"
        f"  export MDFRAMES_API_KEY={SANDBOX_KEY}\n\n"
        "In Python, md.sandbox.start() starts one and makes it the default in one line.",
        epilog="example:\n  mdframes sandbox --port 8765",
        run=_sandbox,
    )
    p.add_argument("--port", type=int, default=8765, help="TCP port (default: 8765; 0: any free)")

    p = add_command(
        subcommands,
        "cache",
        help="show or empty the HTTP cache",
        description="Show (info) or empty (clear) the HTTP cache file (MDFRAMES_CACHE).",
        epilog="examples:\n  mdframes cache info\n  mdframes cache clear --expired",
        run=_cache,
    )
    p.add_argument("action", choices=("info", "clear"))
    p.add_argument("--expired", action="store_true", help="clear: only the expired entries")


def _search(args: argparse.Namespace) -> int:
    from ..client import Client
    from ..lookup import search

    if args.limit < 1:
        raise UsageError(f"--limit {args.limit} must be 1 or more", parameter="limit")
    out = check_out(args.out, args.format)
    with Client(cache=not args.no_cache) as client:
        found = search(" ".join(args.text), limit=args.limit, client=client)
    if out.path is None and out.whole() is None:  # a terminal: the matches, nothing else
        if found.empty:
            print(f"no symbol matches {' '.join(args.text)!r}")
            return 1
        print(found.to_string(index=False))
        return 0
    emit(found, out)
    if found.empty:
        print(f"{PROG} search: no symbol matches {' '.join(args.text)!r}", file=sys.stderr)
        return 1
    return 0


def _sandbox(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a TCP port (0 to 65535)", parameter="port")
    from ..sandbox import serve

    try:
        serve(port=args.port)
    except OSError as exc:
        raise CommandError(f"cannot serve on port {args.port}: {exc.strerror or exc}") from None
    return 0


def _cache(args: argparse.Namespace) -> int:
    # Only the cache module: no key or URL is needed (a half-configured environment must not
    # block housekeeping), and a corrupt file is reported or deleted, never a traceback.
    from .. import cache

    path = cache.default_cache_path()
    if args.action == "info":
        info = cache.inspect(path)
        print(f"path:    {path}")
        if not info.exists:
            print("size:    0 bytes (no cache file yet)")
            print("entries: 0")
            return 0
        print(f"size:    {_size(info.size)}")
        if info.problem is not None:
            print(f"entries: unreadable ({_one_line(info.problem)})")
            print(f"the file cannot be used; `{PROG} cache clear` deletes it")
            return 1
        print(f"entries: {info.entries} ({info.expired} expired)")
        return 0
    if not path.exists():
        print(f"nothing to clear: {path} does not exist")
        return 0
    cleared = cache.clear(path, expired=args.expired)
    if cleared.removed is None:
        print(f"deleted {path}: it could not be read ({_one_line(cleared.problem or '')})")
    else:
        print(f"removed {cleared.removed} entries from {path}")
    return 0


def _one_line(text: str) -> str:
    return redact(text, os.environ.get("MDFRAMES_API_KEY")).replace("\n", " ")


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"
