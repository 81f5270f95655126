"""What a client already knows about symbols: the ticker list it has read (kept here by
:func:`mdframes.search`) or holds in its HTTP cache, and the hint a 404 for a symbol gets.

A 404's hint never makes a request of its own: it uses that list, or an answer to
``load_tickers()`` already in the client's HTTP cache, or nothing.
"""

from __future__ import annotations

import threading
import time
import unicodedata
import weakref
from typing import TYPE_CHECKING, Any

import pandas as pd

from .registry import closest_names, get

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

__all__ = ["fold", "Tickers", "not_found_hint"]


class Tickers:
    """The ticker list as read, with its symbols and names folded once for matching."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.read_at = time.monotonic()
        self.frame = frame
        self.symbols = [fold(s) if isinstance(s, str) else "" for s in frame["symbol"]]
        self.names = [fold(n) if isinstance(n, str) else "" for n in frame["name"]]


# client -> its ticker list; weak: a dropped client is not kept alive.
HELD: weakref.WeakKeyDictionary[Any, Tickers] = weakref.WeakKeyDictionary()
HELD_LOCK = threading.Lock()


def fold(text: str) -> str:
    """``text`` compared without case or accents: ``"Nestlé"`` -> ``"nestle"``.

    Examples
    --------
    >>> fold(" Société Générale ")
    'societe generale'
    """
    bare = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return " ".join(bare.casefold().split())


# --- the hint of a 404 -----------------------------------------------------------------------


def _cached_symbols(client: Client) -> list[str] | None:
    """The ticker list's symbols if the client holds them already (in memory, or an answer to
    ``load_tickers()`` in its HTTP cache); None otherwise. Never sends a request."""
    with HELD_LOCK:
        held = HELD.get(client)
    if held is not None:
        return held.frame["symbol"].dropna().tolist()
    payload = client.cached(get("tickers").path, dataset="tickers")
    if payload is None:
        return None
    data = payload.data
    rows = data.get("tickers") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        return None
    return [r["symbol"] for r in rows if isinstance(r, dict) and isinstance(r.get("symbol"), str)]


def not_found_hint(client: Client, symbol: str) -> str:
    """What to say after a 404 for ``symbol``: the closest known symbols when the client holds
    the ticker list, and ``errors="skip"``.

    Examples
    --------
    >>> print(not_found_hint(client, "APPL"))
    'APPL' is not a symbol the service knows (md.search(text) finds a symbol by company name). ...
    """
    text = f"{symbol!r} is not a symbol the service knows"
    symbols = _cached_symbols(client)
    close = closest_names(symbol, symbols, n=3) if symbols else []
    if close:
        quoted = [repr(c) for c in close]
        listed = f"{', '.join(quoted[:-1])} or {quoted[-1]}" if len(quoted) > 1 else quoted[0]
        text += f" (did you mean {listed}?)"
    else:
        text += " (md.search(text) finds a symbol by company name)"
    return text + '. With errors="skip" a load leaves it out and returns the other symbols'
