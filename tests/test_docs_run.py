"""Every code block and command line of docs/*.md runs as written when its page is followed
top to bottom in a fresh folder (issue 29).

Each page runs in its own folder, in one interpreter (``tests/docs_runner.py``): its Python
blocks in one namespace, its ``bash`` lines one by one through ``bash -o pipefail`` with the
venv's ``mdframes`` first on ``PATH``, in page order. The sandbox is started the way the docs
say, once for the session: ``mdframes sandbox --port PORT`` in its own process, where the
docs' port 8765 reads as the free port it got; its ``export`` lines point the command lines
at it. ``MDFRAMES_CACHE`` and ``XDG_DATA_HOME`` (the default lake) are the page's own.

The command lines run in the shell the getting-started page sets up: its two ``export`` lines
(``MDFRAMES_BASE_URL`` at the sandbox, its public key) hold for every page.

The example lines of every command's ``--help`` run the same way, as one more page; a line
that a page already runs word for word (the lake page copies the lake commands' examples) is
not run twice.

What is not run: a ``mdframes sandbox`` or ``agent-server`` line (the session's sandbox is that), and a block
right after a marker line ``<!-- docs: no-run (the reason) -->``: a signature shown as code,
a real key or cluster, a server that runs until Ctrl-C, installing the package. Used
sparingly, each with its reason.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RUNNER = Path(__file__).with_name("docs_runner.py")
NO_RUN = "<!-- docs: no-run"  # then the reason, then "-->"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
DOC_PORT = "8765"


def steps(page: Path, port: int) -> list[dict[str, object]]:
    """The page's runnable steps in order: one per Python block, one per bash command."""
    text = page.read_text(encoding="utf-8")
    out: list[dict[str, object]] = []
    for match in FENCE.finditer(text):
        lang, body = match[1], match[2]
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        line = text[: match.start()].count("\n") + 1
        if lang not in ("python", "bash") or before.strip().startswith(NO_RUN):
            continue
        body = body.replace(DOC_PORT, str(port))
        if lang == "python":
            out.append({"kind": "python", "code": body, "line": line, "page": page.name})
            continue
        for offset, command in _commands(body):
            if re.match(r"mdframes sandbox\b", command):
                continue
            out.append({"kind": "bash", "code": command, "line": line + offset, "page": page.name})
    return out


def _commands(body: str) -> Iterator[tuple[int, str]]:
    """The block's commands: backslash-continued lines joined, comment lines left out."""
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        start, command = i, lines[i]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command[:-1].rstrip() + " " + lines[i].strip()
        i += 1
        if command.strip() and not command.lstrip().startswith("#"):
            yield start + 1, command.strip()


HELP = "mdframes --help examples"
PAGES = [*sorted(p.name for p in DOCS.glob("*.md")), HELP]
# Commands that serve until stopped: their examples are not run.
SERVERS = ("sandbox", "agent-server")


def help_steps(port: int) -> list[dict[str, object]]:
    """The example lines of every command's ``--help``, command by command as ``mdframes
    --help`` lists them, run like a page's bash block (from the first line starting with
    ``mdframes`` after "examples:" to the next blank line)."""
    import argparse

    from mdframes.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out: list[dict[str, object]] = []
    for name, command in sub.choices.items():
        if name in SERVERS:
            continue
        text = (command.epilog or "").split("example", 1)[-1].split(":", 1)[-1]
        block = text.strip("\n").split("\n\n", 1)[0]
        for offset, line in _commands(block.replace(DOC_PORT, str(port))):
            if line.startswith("mdframes "):
                out.append({"kind": "bash", "code": line, "line": offset, "page": f"{name} --help"})
    return out


@pytest.fixture(scope="module")
def sandbox_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """``mdframes sandbox --port PORT``, as the docs start it, for the whole module."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    bin_dir = str(Path(sys.executable).parent)
    proc = subprocess.Popen(
        [os.path.join(bin_dir, "mdframes"), "sandbox", "--port", str(port)],
        env=_env(tmp_path_factory.mktemp("sandbox"), port),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(400):
            try:
                socket.create_connection(("127.0.0.1", port), 0.1).close()
                break
            except OSError:
                assert proc.poll() is None, "mdframes sandbox exited"
                time.sleep(0.05)
        yield port
    finally:
        proc.kill()
        proc.wait()


def _env(folder: Path, port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(ROOT),
        MDFRAMES_CACHE=str(folder / "cache.sqlite"),
        XDG_DATA_HOME=str(folder / "xdg"),
        MPLBACKEND="Agg",
    )
    # docs/index.md: `export MDFRAMES_BASE_URL=http://127.0.0.1:8765`, and the sandbox's key.
    env.update(MDFRAMES_BASE_URL=f"http://127.0.0.1:{port}", MDFRAMES_API_KEY="sandbox-key")
    return env


def test_the_marker_and_the_steps_are_read_as_documented(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "```python\nx = 1\n```\n\n"
        f"{NO_RUN} (a reason) -->\n```python\nraise SystemExit\n```\n\n"
        "```bash\n# a comment\nmdframes sandbox --port 8765\n"
        "mdframes load a \\\n    --out b.csv\ncurl :8765\n```\n",
        encoding="utf-8",
    )
    assert [(s["kind"], s["code"]) for s in steps(page, 9999)] == [
        ("python", "x = 1\n"),
        ("bash", "mdframes load a --out b.csv"),
        ("bash", "curl :9999"),
    ]


@pytest.fixture(scope="module")
def runs(sandbox_port: int, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Every page followed at once, three at a time (most of a page's time is waiting: for
    the sandbox, for a command line's interpreter to start): page -> its finished process,
    or a reason to skip."""
    out: dict[str, object] = {}
    running: list[tuple[str, subprocess.Popen[str]]] = []

    def reap(limit: int) -> None:
        while len(running) > limit:
            page, proc = running.pop(0)
            stdout, stderr = proc.communicate(timeout=600)
            out[page] = (proc.returncode, stdout, stderr)

    on_pages = {
        step["code"]
        for page in PAGES
        if page != HELP
        for step in steps(DOCS / page, sandbox_port)
        if step["kind"] == "bash"
    }
    for page in PAGES:
        if page == HELP:
            todo = [s for s in help_steps(sandbox_port) if s["code"] not in on_pages]
        else:
            todo = steps(DOCS / page, sandbox_port)
        if not todo:
            out[page] = f"{page} has no code to run"
            continue
        folder = tmp_path_factory.mktemp(page.removesuffix(".md").replace(" ", "-"))
        plan = folder.parent / f"{folder.name}.steps.json"
        plan.write_text(json.dumps(todo), encoding="utf-8")
        proc = subprocess.Popen(
            [sys.executable, str(RUNNER), str(plan)],
            cwd=folder,
            env=_env(folder, sandbox_port),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        running.append((page, proc))
        reap(2)
    reap(0)
    return out


@pytest.mark.parametrize("page", PAGES)
def test_page_runs_top_to_bottom(page: str, runs: dict[str, object]) -> None:
    result = runs[page]
    if isinstance(result, str):
        pytest.skip(result)
    code, stdout, stderr = result  # type: ignore[misc]
    assert code == 0, f"{page}: {stdout[-4000:]}{stderr[-2000:]}"
