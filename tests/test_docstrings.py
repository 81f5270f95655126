"""Every example in a docstring of mdframes runs as written against the sandbox.

The examples' documented setup (docs/index.md, "Examples in docstrings"): ``mdframes`` is
imported as ``md`` and pandas as ``pd``, ``client = md.sandbox.start()`` has been called (the
sandbox's client is the default one; ``MDFRAMES_BASE_URL`` and ``MDFRAMES_API_KEY`` point at it, as after the
exports ``mdframes sandbox`` prints), and the working folder is an empty scratch folder. The examples of a
class's methods (and the functions that take one) use the object its own example made:
``lake`` (the ``Lake`` example's: insider trades, congress trades and put/call ratios of AAPL
and MSFT, a fresh copy for each docstring) and ``ts`` (the ``TrainingSet`` example's, made
from that lake). Each docstring is one
doctest, run in a folder of its own, so no example depends on another's files. An example
that truly cannot run here (it serves forever, needs a real key) keeps ``# doctest: +SKIP``
with the reason next to it; :data:`ALLOWED_SKIPS` counts them so that a new skip is a
decision, not an accident.
"""

from __future__ import annotations

import contextlib
import copy
import doctest
import importlib
import pkgutil
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import mdframes as md

# ``__main__`` modules run the command line when imported.
_MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(md.__path__, prefix="mdframes.")
    if not info.name.endswith("__main__")
)

OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


class _Checker(doctest.OutputChecker):
    """The examples show dtypes as pandas 3 prints them: pandas 2.2 prints the same
    ``StringDtype`` as ``string[python]`` (the supported range starts at 2.2)."""

    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        if int(pd.__version__.split(".")[0]) < 3:
            got = got.replace("string[python]", "string")
        return super().check_output(want, got, optionflags)


def _doctests() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    found: dict[str, doctest.DocTest] = {}
    for name in _MODULES:
        module = importlib.import_module(name)
        for test in finder.find(module, name):
            if test.examples:
                found.setdefault(test.name, test)
    return [found[k] for k in sorted(found)]


DOCTESTS = _doctests()
SKIP = doctest.OPTIONFLAGS_BY_NAME["SKIP"]

# Examples that keep a skip, each with its reason in a comment next to it.
ALLOWED_SKIPS = {
    "mdframes.sandbox.serve": "serves in the foreground until Ctrl-C",
    "mdframes.cli.demo": "every dataset end to end (about 40 s); tests/test_cli.py runs it",
    "mdframes.cli.demo.run_demo": "the same run as the module's example",
}


def _skipped(test: doctest.DocTest) -> bool:
    return any(e.options.get(SKIP) for e in test.examples)


def _names(test: doctest.DocTest) -> set[str]:
    """The names the examples use (read or bound)."""
    names: set[str] = set()
    for example in test.examples:
        with contextlib.suppress(SyntaxError):  # a fragment: the runner reports it
            names.update(compile(example.source, "<doctest>", "single").co_names)
    return names


@pytest.fixture(scope="module")
def shared(sandbox_client: md.Client, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The documented objects the method examples use, made once: ``lake`` (the Lake
    example's lake, copied into each example's folder) and ``ts`` (the TrainingSet
    example's training set)."""
    home = tmp_path_factory.mktemp("doc-setup")
    lake = md.Lake(home / "lake")
    lake.sync(["insider_trading", "congress_trades", "put_call_ratio"], ["AAPL", "MSFT"])
    features = ["insider_net_value_90d", "congress_net_buy_90d"]
    ts = md.features.training_set(
        ["AAPL", "MSFT"], "2026-01-05", "2026-06-30", features, source=lake
    )
    return {"lake": home / "lake", "ts": ts}


@pytest.fixture(scope="module")
def sandbox_client() -> Iterator[md.Client]:
    previous = md.get_default_client(create=False)
    client = md.sandbox.start()
    try:
        yield client
    finally:
        md.sandbox.stop()
        md.set_default_client(previous)


def test_the_skips_are_the_allowed_ones() -> None:
    assert len(DOCTESTS) > 100  # the walk finds the package's docstrings
    assert {t.name for t in DOCTESTS if _skipped(t)} == set(ALLOWED_SKIPS)


@pytest.mark.parametrize("test", DOCTESTS, ids=[t.name for t in DOCTESTS])
def test_docstring_examples_run(
    test: doctest.DocTest,
    sandbox_client: md.Client,
    shared: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MDFRAMES_CACHE", str(tmp_path / "http-cache.sqlite"))
    # As after ``mdframes sandbox``'s two exports, for the command-line examples.
    client = md.sandbox.start()  # (re)started and the default again, whatever ran before
    monkeypatch.setenv("MDFRAMES_BASE_URL", client.base_url)
    monkeypatch.setenv("MDFRAMES_API_KEY", md.sandbox.SANDBOX_KEY)
    # A fresh copy of the module's names for each run, with the documented setup's.
    run = copy.copy(test)
    run.globs = {**test.globs, "md": md, "pd": pd, "client": client}
    names = _names(test)
    if "lake" in names:
        shutil.copytree(shared["lake"], tmp_path / "lake")
        run.globs["lake"] = md.Lake("lake")
    if "ts" in names:
        run.globs["ts"] = shared["ts"]
    runner = doctest.DocTestRunner(checker=_Checker(), optionflags=OPTIONS)
    report: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an example shows a frame, not the warnings on the way
        result = runner.run(run, out=report.append, clear_globs=True)
    assert result.failed == 0, "".join(report)
