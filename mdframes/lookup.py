"""Looking a symbol up: :func:`search` over the service's ticker list.

The ticker list is read through the client once and kept beside it
(:mod:`mdframes.known`) for the dataset's cache lifetime, where a 404's hint finds it too.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from .errors import InvalidParameterError
from .known import HELD, HELD_LOCK, Tickers, fold
from .params import whole_number
from .registry import closest_names, get

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

__all__ = ["search", "ranked_tickers", "MATCHES"]

# The kinds of match, best first: the `match` column's categories and the ranking.
MATCHES = ("symbol", "symbol prefix", "name word", "substring", "similar")
_WORD = re.compile(r"[^\W_]+")

# Similar spellings below this difflib ratio are noise in a list of thousands of tickers.
_SIMILAR = 0.75


def _tickers(client: Client) -> Tickers:
    """The whole ticker list, read at most once per cache lifetime per client."""
    from .loaders import load_tickers

    with HELD_LOCK:
        held = HELD.get(client)
    if held is not None and time.monotonic() - held.read_at < get("tickers").ttl:
        return held
    held = Tickers(load_tickers(client=client))
    with HELD_LOCK:
        HELD[client] = held
    return held


def search(text: str, *, limit: int = 10, client: Client | None = None) -> pd.DataFrame:
    """Find symbols by symbol or company name, as ``yf.Search`` or OpenBB's
    ``equity.search`` do.

    Matching ignores case and accents (``"nestle"`` finds ``Nestlé``). Results are ranked:
    the exact symbol, then symbols that start with ``text``, names with a word that starts with
    it, symbols or names that contain it anywhere, and last similar spellings (``"APPL"``
    finds ``AAPL``). Within a kind of match, shorter symbols come first.

    The ticker list (:func:`mdframes.load_tickers`) is read once per client and kept for its
    cache lifetime (a day), so repeated searches make no request.

    Parameters
    ----------
    text : str
        A symbol, a part of one, or words of a company name.
    limit : int, default 10
        The most rows returned (>= 1).
    client : Client, optional
        Defaults to :func:`mdframes.get_default_client`.

    Returns
    -------
    DataFrame
        The ticker list's columns (``symbol, name``) and ``match`` (``category``: ``symbol``,
        ``symbol prefix``, ``name word``, ``substring`` or ``similar``), best first.

    Examples
    --------
    >>> import mdframes as md
    >>> with md.sandbox.running() as client:
    ...     md.search("apple", client=client)
      symbol        name       match
    0   AAPL  Apple Inc.   name word
    """
    from .client import resolve_client

    if not isinstance(text, str) or not fold(text):
        raise InvalidParameterError(
            f"search text must be a non-empty string, got {text!r}", parameter="text"
        )
    limit = whole_number(limit, "limit", least=1, what="an integer")
    return ranked_tickers(_tickers(resolve_client(client)), text, limit)


def ranked_tickers(tickers: Tickers, text: str, limit: int) -> pd.DataFrame:
    """The best ``limit`` rows of a ticker list for ``text``, ranked as :func:`search` ranks
    them, with their ``match``; the ranking of any ticker list (a lake's, for an agent)."""
    ranked = _rank(fold(text), tickers.symbols, tickers.names, limit)
    out = tickers.frame.iloc[[i for i, _ in ranked]].reset_index(drop=True)
    out["match"] = pd.Categorical([MATCHES[t] for _, t in ranked], categories=list(MATCHES))
    return out


def _rank(
    key: str, symbols: Sequence[str], names: Sequence[str], limit: int
) -> list[tuple[int, int]]:
    """(row, kind of match) of the best ``limit`` rows for the folded ``key``, given the
    folded symbols and names."""
    key_words = key.split()
    found: dict[int, int] = {}
    folded = list(zip(symbols, names, strict=True))
    for i, (s, n) in enumerate(folded):
        if s == key:
            tier = 0
        elif s.startswith(key):
            tier = 1
        elif _words_start(n, key_words):
            tier = 2
        elif key in s or key in n:
            tier = 3
        else:
            continue
        found[i] = tier
    if len(found) < limit:
        # Similar spellings: of symbols for a one-word key, of names too for any key.
        by_symbol: dict[str, int] = {}
        by_name: dict[str, int] = {}
        for i, (s, n) in enumerate(folded):
            if i not in found:
                by_symbol.setdefault(s, i)
                by_name.setdefault(n, i)
        wanted = limit - len(found)
        rows: list[int] = []
        if " " not in key:
            rows += [by_symbol[c] for c in closest_names(key, by_symbol, n=wanted, cutoff=_SIMILAR)]
        rows += [by_name[c] for c in closest_names(key, by_name, n=wanted, cutoff=_SIMILAR)]
        for row in rows:
            found.setdefault(row, 4)
    order = sorted(found, key=lambda i: (found[i], len(folded[i][0]), folded[i][0], i))
    return [(i, found[i]) for i in order[:limit]]


def _words_start(name: str, key_words: list[str]) -> bool:
    """True when consecutive words of ``name`` start with the words of the key, the last one
    as a prefix (``"gen mot"`` matches ``General Motors``)."""
    words, k = _WORD.findall(name), len(key_words)
    return any(
        words[start : start + k - 1] == key_words[:-1]
        and words[start + k - 1].startswith(key_words[-1])
        for start in range(len(words) - k + 1)
    )
