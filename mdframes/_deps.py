"""Optional dependencies: one rule for importing them and one message when they are missing
(as polars' ``dependencies.py``). The core install stays light; each extra brings its own."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

__all__ = ["require", "MissingExtra"]


class MissingExtra(ImportError):
    """An optional dependency is not installed (the message says which extra installs it),
    or is installed but does not import (the message says why); the command line prints
    it as one line, not a traceback."""


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` or raise ``ImportError`` saying which extra installs it.

    The command is double-quoted: it works as typed in POSIX shells and in Windows ``cmd``.

    >>> require("json", "core", "reading JSON").__name__
    'json'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        if _installed(top):  # e.g. a pyarrow built for NumPy 2 beside NumPy 1.26
            raise MissingExtra(
                f"{feature} needs {top}, which is installed but does not import: {exc}"
            ) from None
        raise MissingExtra(
            f'{feature} needs {top}: pip install "mdframes[{extra}]" ({exc})'
        ) from None


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
