"""Follow one docs page top to bottom: run by tests/test_docs_run.py in the page's own fresh
folder, one interpreter per page.

Reads a JSON list of steps (``{"kind": "python" | "bash", "code": ..., "line": N}``) from the
file named by its one argument and runs them in order: Python blocks in one namespace (as a
reader pasting them into one session would), bash lines through ``bash -c`` with the page's
folder as the working directory and what earlier ``export`` lines set in the environment. The
first failure prints ``FAILED line N`` with its output or traceback and exits 1.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import traceback

EXPORT = re.compile(r"^export\s+([A-Za-z_][A-Za-z0-9_]*)=(\S*)")


def main(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        steps = json.load(f)
    namespace: dict[str, object] = {"__name__": "__main__"}
    for step in steps:
        line, code = step["line"], step["code"]
        if step["kind"] == "python":
            try:
                exec(compile(code, f"{step['page']}:{line}", "exec"), namespace)
            except BaseException:
                print(f"FAILED line {line} (python)\n{code}\n{traceback.format_exc()}")
                return 1
            continue
        export = EXPORT.match(code)
        if export:  # the environment of the later lines, as in one shell
            os.environ[export[1]] = export[2].strip("'\"")
            continue
        proc = subprocess.run(
            ["bash", "-o", "pipefail", "-c", code],
            capture_output=True,
            text=True,
            timeout=300,
        )
        # 141: a pipe closed early (`| head`), the way Unix tools end then; quietly.
        if proc.returncode != 0 and not (proc.returncode == 141 and not proc.stderr):
            print(
                f"FAILED line {line} (bash, exit {proc.returncode})\n{code}\n"
                f"stdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}"
            )
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
