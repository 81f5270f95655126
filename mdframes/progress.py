"""Progress bars for loads of many symbols.

In a Jupyter kernel with ipywidgets (``pip install "mdframes[notebook]"``) the bar is a
widget; in a kernel without it, a plain text bar on stdout, so no ``TqdmWarning`` and no red
stderr box; elsewhere tqdm's text bar on stderr. ``md.Client(progress=False)`` turns bars off.
"""

from __future__ import annotations

import contextlib
import os
import sys
import weakref
from collections.abc import Iterator
from datetime import datetime
from typing import Any

__all__ = ["progress_bar", "wanted", "output", "waiting", "stage"]

_OPEN: weakref.WeakSet[Any] = weakref.WeakSet()  # the bars drawn now


def waiting(reset: datetime | None = None, *, over: bool = False) -> None:
    """Say on every open bar that the work waits for the rate-limit window to reset (at
    ``reset``, UTC, when known), or with ``over`` that it waits no longer: a bar that stood
    still through a reset looked hung."""
    text = "waiting for the rate-limit window to reset"
    text = "" if over else text + (f" at {reset:%H:%M:%S} UTC" if reset else "")
    for bar in list(_OPEN):
        bar.set_postfix_str(text)


def _kernel() -> bool:
    """A Jupyter kernel that shows rich output (not qtconsole or Spyder)."""
    if "ipykernel.zmqshell" not in sys.modules:
        return False
    return not any(k == "QT_API" or k.startswith("SPYDER") for k in os.environ)


def wanted(setting: bool | None, n: int, *, threshold: int = 1) -> bool:
    """Whether to draw a bar for ``n`` steps: never for none; as ``setting`` says when it is
    set (``Client(progress=...)``, ``Lake.sync(progress=...)``); otherwise for at least
    ``threshold`` steps where someone watches (a Jupyter kernel or a terminal).

    Examples
    --------
    >>> wanted(True, 3), wanted(False, 300), wanted(None, 0)
    (True, False, False)
    """
    if n <= 0:
        return False
    if setting is not None:
        return bool(setting)
    if n < threshold:
        return False
    return "ipykernel" in sys.modules or bool(getattr(sys.stderr, "isatty", lambda: False)())


def output() -> Any:
    """Where progress text goes: stdout in a Jupyter kernel (which shows stderr as an error
    box), else stderr.

    Examples
    --------
    >>> output() is sys.stderr
    True
    """
    return sys.stdout if _kernel() else sys.stderr


def _widgets() -> bool:
    from tqdm.notebook import IProgress  # None when ipywidgets is missing; never warns

    return IProgress is not None


def progress_bar(total: int, desc: str, enabled: bool = True) -> Any:
    """A tqdm bar of ``total`` steps, or ``None`` when ``enabled`` is false.

    The bar disappears when closed (``leave=False``); call ``bar.update(1)`` per step and
    ``bar.close()`` at the end.

    Examples
    --------
    >>> bar = progress_bar(3, "sentiment", enabled=False)
    >>> bar is None
    True
    """
    if not enabled:
        return None
    options: dict[str, Any] = {"total": total, "desc": desc, "unit": "req", "leave": False}
    if _kernel():
        if _widgets():
            from tqdm.notebook import tqdm as widget_bar

            bar = widget_bar(**options)
            _OPEN.add(bar)
            return bar
        options["file"] = output()
    from tqdm.std import tqdm as text_bar

    bar = text_bar(**options)
    _OPEN.add(bar)
    return bar


@contextlib.contextmanager
def stage(bar: Any, what: str) -> Iterator[None]:
    """The bar's label says ``what`` for the block (a step its count does not show, such as
    a commit of the units it counted); ``bar`` None: nothing."""
    if bar is None:
        yield
        return
    label = bar.desc
    bar.set_description_str(f"{label.rstrip(': ')}: {what}", refresh=True)
    try:
        yield
    finally:
        bar.set_description_str(label, refresh=False)
