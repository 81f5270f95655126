"""Coroutines for async code: ``await md.aio.load_insider_trading("AAPL")``.

One coroutine per public loader, made here from the registry (each v2 dataset names its
loader, :attr:`mdframes.registry.Dataset.loader`) plus the generic :func:`mdframes.load`: a
new dataset's loader gets its coroutine without an edit. Each coroutine has its loader's
signature and returns the same frame, with the same warnings (raised at the ``await``) and
errors.

The transport is the loaders' own: each call runs its loader in a worker thread, on the
client's one ``requests`` session, so coroutines and synchronous loaders share one HTTP
cache, one rate-limit gate and one connection pool (``max_workers`` per load), and every rule
of the transport (retries, the body read whole, cache eviction) holds for both. The event loop
only awaits the thread. Cancelling the task cancels the load's :class:`~mdframes.cancel.
LoadScope`: no request of it starts afterwards, its waits end, the sockets it is reading are
shut, and the cancellation completes once its threads have returned (no request left
running). See the docs' Async page for why this transport rather than a native async client.

Examples
--------
>>> import asyncio
>>> df = asyncio.run(md.aio.load_sentiment(["AAPL", "MSFT"]))
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import pandas as pd

from . import loaders
from .cancel import LoadScope, scoped
from .errors import held_warnings, warn
from .registry import REGISTRY

__all__ = ["coroutine", "loader_names"]


def loader_names() -> list[str]:
    """The public loaders that have a coroutine here: :func:`mdframes.load` and the loader
    of every v2 registry dataset, in the registry's order.

    Examples
    --------
    >>> "load_insider_trading" in loader_names()
    True
    """
    names = ["load"]
    for ds in REGISTRY.values():
        if ds.version == "v2" and ds.loader not in names:
            names.append(ds.loader)
    return names


def coroutine(loader: Callable[..., pd.DataFrame]) -> Callable[..., Awaitable[pd.DataFrame]]:
    """The coroutine function of a synchronous loader: same signature and docstring, runs
    the loader in a worker thread, cancellable (see the module docstring).

    Examples
    --------
    >>> import inspect
    >>> run = coroutine(md.load_news)
    >>> inspect.signature(run) == inspect.signature(md.load_news)
    True
    """

    @functools.wraps(loader)
    async def run(*args: Any, **kwargs: Any) -> pd.DataFrame:
        scope = LoadScope()
        held: list[tuple[str, type[Warning]]] = []

        def work() -> pd.DataFrame:
            nonlocal held
            with scoped(scope), held_warnings() as held:
                return loader(*args, **kwargs)

        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        future = loop.run_in_executor(None, context.run, work)
        try:
            frame = await asyncio.shield(future)
        except asyncio.CancelledError:
            scope.cancel()
            # The task ends once the load's threads have returned: nothing of it runs on
            # (a second cancel while waiting is taken as the same one).
            while not future.done():
                try:
                    await asyncio.shield(future)
                except asyncio.CancelledError:
                    continue
                except BaseException:  # the load's own end (Cancelled): the task's is this
                    break
            raise
        except BaseException:
            _raise_held(held, failed=True)
            raise
        _raise_held(held)
        return frame

    run.__signature__ = inspect.signature(loader)  # type: ignore[attr-defined]
    return run


def _raise_held(held: list[tuple[str, type[Warning]]], *, failed: bool = False) -> None:
    """The load's warnings, raised in the awaiting thread (they point at the ``await``); a
    warning filtered into an error does not hide the load's own error."""
    for message, category in held:
        try:
            warn(message, category)
        except Warning:
            if not failed:
                raise


def _build() -> dict[str, Callable[..., Awaitable[pd.DataFrame]]]:
    return {name: coroutine(getattr(loaders, name)) for name in loader_names()}


_COROUTINES = _build()
globals().update(_COROUTINES)
__all__ += list(_COROUTINES)


def __dir__() -> list[str]:
    return sorted(__all__)
