"""The core install (``pip install mdframes``, no extra) does what it promises, and what needs
an extra says which one, before any request or write.

Each test runs a Python process in which the extras' packages (pyarrow, openpyxl, matplotlib,
plotly, polars, DuckDB, deltalake, boto3, scikit-learn, Dask, mcp) cannot be imported, as on
a machine where only the core is installed: a second environment with only the core's
packages cannot be had inside the test run, so an import hook refuses them (pandas then
makes its text columns without pyarrow too, as there). Checked on 2026-11-28 against a real
core-only virtualenv: the same 20 calls failed there and here before the fix, none after.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pandas as pd
import pytest

import mdframes as md
from mdframes.registry import REGISTRY, example_arguments
from mdframes.sandbox import Sandbox

from .conftest import KEY

EXTRAS = (
    "pyarrow",
    "openpyxl",
    "matplotlib",
    "plotly",
    "polars",
    "duckdb",
    "deltalake",
    "boto3",
    "botocore",
    "obstore",
    "sklearn",
    "dask",
    "distributed",
    "mcp",
)

# Runs first in the child: every import of an extra's package fails as an absent one does.
_NO_EXTRAS = f"""
import importlib.abc, sys

class _NoExtras(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {EXTRAS!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _NoExtras())
"""


def core_python(
    code: str, server: Sandbox, *args: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """``code`` run in a core-install process pointed at ``server``; it fails the test on a
    traceback unless the code expects one."""
    env = dict(os.environ, MDFRAMES_BASE_URL=server.url, MDFRAMES_API_KEY=KEY)
    return subprocess.run(
        [sys.executable, "-c", _NO_EXTRAS + textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=cwd,
    )


def core_cli(server: Sandbox, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return core_python(
        "import mdframes.cli\nsys.exit(mdframes.cli.main(sys.argv[1:]))", server, *args, cwd=cwd
    )


def _kind(dtype: object) -> str:
    # Text is text, whichever storage pandas gives it (pyarrow only where installed).
    return "text" if pd.api.types.is_string_dtype(dtype) else str(dtype)


def test_the_child_process_is_a_core_install(sandbox: Sandbox, tmp_path: Path) -> None:
    done = core_python(
        """
        import importlib.util
        import pandas as pd
        import mdframes as md
        for name in ("pyarrow", "openpyxl", "matplotlib", "duckdb", "sklearn"):
            try:
                importlib.util.find_spec(name)
            except ModuleNotFoundError:
                continue
            raise SystemExit(f"{name} importable")
        print(pd.StringDtype().storage, md.load_markets().shape[0] > 0)
        """,
        sandbox,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["python", "True"]


def test_every_dataset_loads_the_same_frame_on_the_core_install(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    done = core_python(
        """
        import json, sys, warnings
        import pandas as pd
        import mdframes as md
        from mdframes.registry import REGISTRY, example_arguments
        warnings.simplefilter("ignore")
        kinds = {}
        for name, ds in REGISTRY.items():
            df = md.load(name, **example_arguments(ds))
            md.to_csv(df, name.replace("/", "__") + ".csv")
            kinds[name] = {c: ("text" if pd.api.types.is_string_dtype(t) else str(t))
                           for c, t in df.dtypes.items()}
        json.dump(kinds, open("kinds.json", "w"))
        print(sorted(m for m in sys.modules if m.partition(".")[0] == "pyarrow"))
        """,
        sandbox,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # nothing even tried to load pyarrow's modules
    kinds = json.loads((tmp_path / "kinds.json").read_text())
    assert set(kinds) == set(REGISTRY)
    with md.Client(api_key=KEY, base_url=sandbox.url, cache=False) as client:
        for name, ds in REGISTRY.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                df = md.load(name, client=client, **example_arguments(ds))
            assert len(df), name
            here = tmp_path / "here.csv"
            md.to_csv(df, here)
            core = (tmp_path / (name.replace("/", "__") + ".csv")).read_text()
            assert core == here.read_text(), name
            assert kinds[name] == {c: _kind(t) for c, t in df.dtypes.items()}, name


def test_panels_and_training_sets_run_on_the_core_install(sandbox: Sandbox, tmp_path: Path) -> None:
    symbols, start, end = ["AAPL", "MSFT", "NVDA"], "2026-01-05", "2026-04-30"
    features = ["insider_net_value_90d", "sentiment_mean_7d", "news_count_7d"]
    done = core_python(
        f"""
        import pickle, warnings
        import mdframes as md
        warnings.simplefilter("ignore")
        args = ({symbols!r}, {start!r}, {end!r}, {features!r})
        panel = md.features.panel(*args)
        frames = {{"insider_trading": md.load_insider_trading({symbols!r}, start="2025-06-01"),
                   "sentiment": md.load_sentiment({symbols!r})}}
        framed = md.features.panel(*args[:3], {features[:2]!r}, source=frames)
        ts = md.features.training_set(*args)
        splits = ts.splits(n_splits=3)
        pickle.dump((panel, framed, ts.X, ts.y, ts.t1, ts.info["content_hash"], splits,
                     {{k: frame for k, frame in frames.items()}}), open("out.pkl", "wb"))
        """,
        sandbox,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    panel, framed, X, y, t1, digest, splits, frames = pd.read_pickle(tmp_path / "out.pkl")
    with md.Client(api_key=KEY, base_url=sandbox.url, cache=False) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = md.features.panel(symbols, start, end, features, client=client)
            ts = md.features.training_set(symbols, start, end, features, client=client)
    assert len(expected) and expected.notna().any().all()
    # The index's symbols are text in either storage: compared as values.
    pd.testing.assert_frame_equal(panel, expected, check_index_type=False, check_column_type=False)
    pd.testing.assert_frame_equal(X, ts.X, check_index_type=False, check_column_type=False)
    pd.testing.assert_series_equal(y, ts.y, check_index_type=False)
    pd.testing.assert_series_equal(t1, ts.t1, check_index_type=False)
    assert digest == ts.info["content_hash"]  # the same set, hashed the same, either way
    assert [(a.tolist(), b.tolist()) for a, b in splits] == [
        (a.tolist(), b.tolist()) for a, b in ts.splits(n_splits=3)
    ]
    # The child's own frames (text without pyarrow) as a source here: the same panel.
    again = md.features.panel(symbols, start, end, features[:2], source=frames)
    pd.testing.assert_frame_equal(framed, again, check_index_type=False, check_column_type=False)


def test_what_needs_an_extra_names_it(sandbox: Sandbox, tmp_path: Path) -> None:
    done = core_python(
        """
        import json, os
        import mdframes as md
        df = md.load_insider_trading("AAPL")
        frames = {"insider_trading": df}
        calls = {
            "excel": lambda: md.to_excel(df, "x.xlsx"),
            "parquet": lambda: md.to_parquet(df, "x.parquet"),
            "arrow": lambda: md.to_arrow(df),
            "polars": lambda: md.to_polars(df),
            "plot": lambda: md.plot.insider_activity(df),
            "lake": lambda: md.Lake("lake"),
            "write_panel": lambda: md.features.write_panel(
                "panel", "AAPL", "2026-01-05", "2026-02-27", ["insider_net_value_90d"],
                source=frames),
            "read_panel": lambda: md.features.read_panel("panel"),
            "set.to_parquet": lambda: md.features.training_set(
                "AAPL", "2026-01-05", "2026-02-27", ["insider_net_value_90d"]
            ).to_parquet("set.parquet"),
        }
        said = {}
        for name, call in calls.items():
            try:
                call()
                said[name] = None
            except ImportError as exc:
                said[name] = str(exc)
        md.to_csv(df, "x.csv")
        json.dump({"said": said, "files": sorted(os.listdir("."))}, open("said.json", "w"))
        """,
        sandbox,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "said.json").read_text())
    extra = {
        "excel": "excel",
        "parquet": "parquet",
        "arrow": "parquet",
        "polars": "polars",
        "plot": "plot",
        "lake": "lake",
        "write_panel": "parquet",
        "read_panel": "parquet",
        "set.to_parquet": "parquet",
    }
    for name, text in result["said"].items():
        assert text is not None and f'pip install "mdframes[{extra[name]}]"' in text, (name, text)
    # Nothing half-written: the CSV (core) is the only file.
    assert result["files"] == ["x.csv"]


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["load", "insider_trading", "AAPL", "--out", "x.xlsx"], "excel"),
        (["load", "insider_trading", "AAPL", "--out", "x.parquet"], "parquet"),
        (
            ["features", "AAPL", "--start", "2026-01-05", "--end", "2026-02-27", "--out", "p.parquet"],
            "parquet",
        ),
        (
            ["training-set", "AAPL", "--start", "2026-01-05", "--end", "2026-03-31", "--out", "t.parquet"],
            "parquet",
        ),
        (["demo", "--out-dir", "demo"], "excel"),
        (["sync", "insider_trading", "AAPL", "--lake", "lake"], "lake"),
        (["agent-server", "--lake", "lake"], "agents"),
    ],
)  # fmt: skip
def test_a_command_that_needs_an_extra_says_so_in_one_line_before_any_request(
    sandbox: Sandbox, tmp_path: Path, args: list[str], extra: str
) -> None:
    before = len(sandbox.requests)
    done = core_cli(sandbox, *args, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    line = done.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith(f"mdframes {args[0]}: error: ")
    assert f'pip install "mdframes[{extra}]"' in line
    assert len(sandbox.requests) == before  # said before any request
    assert list(tmp_path.iterdir()) == []  # and before any write


def test_the_command_line_loads_and_pipes_on_the_core_install(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    done = core_cli(sandbox, "load", "insider_trading", "AAPL", "--format", "csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with md.Client(api_key=KEY, base_url=sandbox.url, cache=False) as client:
        expected = md.load_insider_trading("AAPL", client=client)
    assert done.stdout.splitlines()[0].split(",") == list(expected.columns)
    assert len(done.stdout.splitlines()) == len(expected) + 1
    done = core_cli(
        sandbox, "features", "AAPL", "--start", "2026-01-05", "--end", "2026-01-09",
        "--features", "insider_net_value_90d", "--out", "p.csv", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(pd.read_csv(tmp_path / "p.csv")) == 5
