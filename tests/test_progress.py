"""Progress bars: off when asked, text in a terminal, and in a real Jupyter kernel a widget
when ipywidgets is installed or a plain text bar (no TqdmWarning, nothing on stderr) when not."""

from __future__ import annotations

import importlib.util

import nbformat
import pytest
from nbclient import NotebookClient

import mdframes as md
from mdframes.progress import progress_bar, wanted

# Twelve symbols of the sandbox's universe: enough for a bar (10 or more).
SYMBOLS = [
    "AAPL",
    "MSFT",
    "NVDA",
    "TSLA",
    "AMZN",
    "GOOGL",
    "META",
    "JPM",
    "GME",
    "IBM",
    "AMD",
    "NFLX",
]


class _Terminal:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        return len(text)


@pytest.mark.parametrize("tty", [True, False])
def test_one_rule_decides_whether_a_bar_is_wanted(
    monkeypatch: pytest.MonkeyPatch, tty: bool
) -> None:
    import sys

    monkeypatch.setattr(sys, "stderr", _Terminal(tty))
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    assert wanted(True, 1) and not wanted(False, 100) and not wanted(True, 0)
    # Unset: a bar where someone watches, for enough steps.
    assert wanted(None, 10, threshold=10) is tty
    assert wanted(None, 9, threshold=10) is False
    monkeypatch.setitem(sys.modules, "ipykernel", sys)  # any module: a kernel is running
    assert wanted(None, 10, threshold=10) is True


def test_disabled_is_none() -> None:
    assert progress_bar(12, "sentiment", enabled=False) is None


def test_outside_a_kernel_a_text_bar_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    bar = progress_bar(3, "sentiment")
    assert type(bar).__module__ == "tqdm.std"
    bar.update(3)
    bar.close()
    out, err = capsys.readouterr()
    assert out == "" and "sentiment:" in err and "0/3" in err


def test_progress_false_draws_nothing(
    shared_sandbox: md.sandbox.Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    with md.Client(
        base_url=shared_sandbox.url, api_key=md.sandbox.SANDBOX_KEY, cache=False, progress=False
    ) as client:
        assert len(md.load_sentiment(SYMBOLS[:3] * 4, client=client)) > 0
    assert capsys.readouterr() == ("", "")


def _run_in_kernel(source: str) -> list[dict]:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source)]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    return nb.cells[0].outputs


def test_a_kernel_shows_no_tqdm_warning_and_nothing_on_stderr() -> None:
    outputs = _run_in_kernel(
        "import mdframes as md\n"
        "with md.sandbox.running(progress=True) as client:\n"
        f"    df = md.load_sentiment({SYMBOLS!r}, client=client)\n"
        "print('rows', len(df))\n"
    )
    text = "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")
    assert "TqdmWarning" not in text and "IProgress" not in text
    assert [o for o in outputs if o.get("name") == "stderr"] == []
    assert "rows " in text
    widgets = [
        o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    if importlib.util.find_spec("ipywidgets") is not None:  # the notebook extra is installed
        assert widgets
    else:  # a plain text bar on stdout, updated in place and cleared when done
        assert not widgets
        assert "sentiment:" in text and "/12" in text and "\r" in text
