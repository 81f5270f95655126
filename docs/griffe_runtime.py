"""Griffe extension for the API reference: document functions a module builds at import time.

``mdframes.loaders`` creates most loaders with a factory (``load_news = _window_loader(...)``).
Static analysis sees those as undocumented attributes, and inspecting the whole package
instead would import every module (including ``__main__``). This extension inspects only the
named modules' attributes whose runtime value is a function, and puts that function (its real
signature and docstring) in the attribute's place.

:class:`SphinxRoles` turns the Sphinx roles some docstrings use (``:func:`load```) into
plain code spans, which is how mkdocstrings would otherwise print them, role and all, and
drops doctest directives (``# doctest: +SKIP``), which mean nothing to a reader.

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
_DOCTEST_DIRECTIVE = re.compile(r"[ \t]*#\s*doctest:[^\n]*")
# A run of doctest lines (">>> " and its "... " continuations, then output lines).
_DOCTEST_RUN = re.compile(r"^(>>> .*\n?(?:(?!\s*\n).*\n?)*)", re.M)
# A numpy section header: a title line underlined with dashes.
_SECTION = re.compile(r"^\S.*\n-{3,}\s*$", re.M)


def _fence_description_doctests(text: str) -> str:
    """Fence the doctest lines of a docstring's description (before its first section) as
    Python: Markdown would read ``>>>`` as three nested quotes. Sections such as Examples
    are left to the docstring parser, which handles them itself."""
    section = _SECTION.search(text)
    head, tail = (text[: section.start()], text[section.start() :]) if section else (text, "")
    head = _DOCTEST_RUN.sub(lambda m: f"```pycon\n{m.group(1).rstrip()}\n```\n", head)
    return head + tail


class SphinxRoles(griffe.Extension):
    """Rewrite ``:func:`name``` (and the other Python roles) as a code span ```name```, drop
    ``# doctest: ...`` directives, and fence doctests that stand outside an Examples
    section."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if obj.docstring is not None:
            text = _DOCTEST_DIRECTIVE.sub("", _ROLE.sub(r"`\1`", obj.docstring.value))
            obj.docstring.value = _fence_description_doctests(text)
