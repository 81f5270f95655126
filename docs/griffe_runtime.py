"""Griffe extension for the API reference: document functions a module builds at import time.

``mdframes.loaders`` creates most loaders with a factory (``load_news = _window_loader(...)``).
Static analysis sees those as undocumented attributes, and inspecting the whole package
instead would import every module (including ``__main__``). This extension inspects only the
named modules' attributes whose runtime value is a function, and puts that function (its real
signature and docstring) in the attribute's place.

:class:`SphinxRoles` turns the Sphinx roles some docstrings use (``:func:`load```) into
plain code spans, which is how mkdocstrings would otherwise print them, role and all.

Configured in mkdocs.yml::

    extensions:
      - docs/griffe_runtime.py:RuntimeFunctions:
          modules: [mdframes.loaders]
      - docs/griffe_runtime.py:SphinxRoles
"""

from __future__ import annotations

import re
from typing import Any

import griffe


_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|exc|data|obj):`~?([^`]+)`")


class SphinxRoles(griffe.Extension):
    """Rewrite ``:func:`name``` (and the other Python roles) as a code span ```name```."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(r"`\1`", obj.docstring.value)
