"""The documentation says what the code does.

Dataset pages are generated from the registry at build time (``docs/gen_pages.py``), so they
cannot go stale; these tests check that what they are generated *into* is true: every
dataset has a page, every documented column has the documented dtype in a real frame from
the sandbox, every documented loader call works, every link and ``:::`` target resolves,
and the hand-written pages keep what is copied from elsewhere (the README's commands).
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

import mdframes as md
from mdframes import docgen
from mdframes.registry import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = docgen.pages()
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _resolves(page: str, target: str) -> bool:
    """A relative link from ``page`` lands on a generated page or a file under docs/."""
    if "://" in target:
        return True
    path = (Path(page).parent / target).as_posix()
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    joined = "/".join(parts)
    return joined in PAGES or (DOCS / joined).is_file()


# --- generated pages vs the registry ----------------------------------------------------------


def test_every_dataset_has_exactly_one_page_that_names_its_endpoint() -> None:
    for name, ds in REGISTRY.items():
        page = PAGES[docgen.page_path(name)]
        assert f"`{ds.path}`" in page or f"`GET {ds.path}`" in page, name
        if ds.scope != "screener":  # one shared page; their descriptions are a template
            assert ds.description in page, name
    per_dataset = [p for p in PAGES if p not in ("datasets/index.md", "datasets/SUMMARY.md")]
    documented = {docgen.page_path(n) for n in REGISTRY}
    assert set(per_dataset) == documented


@pytest.mark.parametrize("name", list(REGISTRY))
def test_page_lists_every_column_with_its_dtype_and_rules(name: str) -> None:
    page = PAGES[docgen.page_path(name)]
    for row in md.schemas.describe(name):
        dtype = docgen.DTYPES[row["kind"]]
        line = next(
            (ln for ln in page.splitlines() if ln.startswith(f"| `{row['column']}` | `{dtype}")),
            None,
        )
        assert line is not None, f"{name}: column {row['column']} ({dtype}) missing"
        assert row["rules"].replace("|", "\\|") in line


def test_dataset_pages_state_anchor_record_id_paging_cache_and_caveats() -> None:
    for name, ds in REGISTRY.items():
        if ds.scope == "screener":
            continue
        page = PAGES[docgen.page_path(name)]
        anchor = f"| Point-in-time anchor | `{ds.anchor}` |" if ds.anchor else "none (forward"
        assert anchor in page, name
        for column in ds.record_id:
            assert f"`{column}`" in page.split("| Record id |", 1)[1].splitlines()[0], name
        if ds.paged:
            lo, hi = ds.limit_bounds
            assert f"requests of {hi}" in page and f"{lo:,} to {hi:,}" in page, name
        for caveat in ds.caveats:
            assert caveat in page, name
        for check in ds.checks:
            assert docgen.CHECKS[check] in page, name


def test_lifetimes_are_stated_in_human_units() -> None:
    assert docgen._lifetime(15 * 60) == "15 minutes"
    assert docgen._lifetime(3600) == "1 hour"
    assert docgen._lifetime(86400) == "1 day"
    assert docgen._lifetime(90) == "90 s"
    table = docgen.cache_table()
    for name, ds in REGISTRY.items():
        row = next(ln for ln in table.splitlines() if f"`{name}`" in ln)
        assert row.startswith(f"| {docgen._lifetime(ds.ttl)} |"), name


def test_screener_page_covers_all_fifteen_with_their_requirement() -> None:
    page = PAGES["datasets/screeners.md"]
    screeners = {n: d for n, d in REGISTRY.items() if d.scope == "screener"}
    assert len(screeners) == 15
    for name, ds in screeners.items():
        row = next(
            ln for ln in page.splitlines() if ln.startswith(f"| `{name.split('/', 1)[1]}` |")
        )
        assert ("required" in row) == ds.needs_market_or_region, name
    assert "`int`, 1 to 20,000" in page


def test_every_frame_check_has_a_description() -> None:
    used = {c for ds in REGISTRY.values() for c in ds.checks}
    assert used <= set(docgen.CHECKS)


def test_nav_file_and_overview_link_every_page_and_nothing_else() -> None:
    summary = PAGES["datasets/SUMMARY.md"]
    linked = {f"datasets/{t}" for t in LINK.findall(summary)}
    assert linked == set(PAGES) - {"datasets/SUMMARY.md"}
    for page, text in PAGES.items():
        for target in LINK.findall(text):
            assert _resolves(page, target), f"{page}: broken link {target}"


# --- the documented loader calls --------------------------------------------------------------


@pytest.mark.parametrize("name", list(REGISTRY))
def test_documented_call_binds_to_the_real_loader(name: str) -> None:
    ex = docgen.example(name)
    signature = inspect.signature(ex.resolve())
    signature.bind(*ex.args, client=None, **ex.kwargs)
    page = PAGES[docgen.page_path(name)]
    assert docgen._signature(ex) in page
    if REGISTRY[name].scope == "screener":  # one example on the shared page, a row per screener
        assert f"| `{ex.args[0]}` |" in page
    else:
        assert ex.call("client=client") in page


def test_documented_calls_load_the_documented_frames(client: md.Client) -> None:
    """Run every page's example against the sandbox: same dataset, same columns, same dtypes."""
    for name, ds in REGISTRY.items():
        ex = docgen.example(name)
        df = ex.resolve()(*ex.args, client=client, **ex.kwargs)
        assert df.attrs["dataset"] == name
        for f in ds.all_fields:
            assert f.name in df.columns, f"{name}: {f.name}"
            dtype = df[f.name].dtype
            documented = docgen.DTYPES[f.kind]
            if f.kind in ("str", "cik"):
                assert isinstance(dtype, pd.StringDtype), f"{name}.{f.name}: {dtype}"
            elif f.kind == "list":
                assert str(dtype) == "object", f"{name}.{f.name}: {dtype}"
                assert df[f.name].dropna().map(lambda v: isinstance(v, list)).all()
            else:
                assert str(dtype) == documented, f"{name}.{f.name}: {dtype} != {documented}"


# --- hand-written pages ----------------------------------------------------------------------


def _examples() -> list[tuple[str, str]]:
    """Python blocks that run offline: those using the sandbox, and self-contained ones that
    load nothing (the rest need the real service and its key)."""
    texts = {
        p.relative_to(DOCS).as_posix(): p.read_text(encoding="utf-8") for p in DOCS.rglob("*.md")
    }
    texts.update(PAGES)
    out = []
    for page, text in sorted(texts.items()):
        for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
            if "sandbox.running(" in block or (block.startswith("import") and "load" not in block):
                out.append((page, block))
    return out


EXAMPLES = _examples()


@pytest.mark.parametrize(
    ("page", "code"), EXAMPLES, ids=[f"{p}-{i}" for i, (p, _) in enumerate(EXAMPLES)]
)
def test_page_examples_run_offline(
    page: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    namespace: dict[str, object] = {"__name__": "docs_example"}
    try:
        exec(compile(code, page, "exec"), namespace)
    finally:
        md.set_default_client(None)  # an example may have set the sandbox client as default


def test_every_hand_written_page_with_code_has_a_runnable_example() -> None:
    pages = {page for page, _ in EXAMPLES}
    for name in ("index.md", "helpers.md", "point-in-time.md", "errors.md", "exports.md"):
        assert name in pages, name


def _bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_readme_two_commands_are_copied_exactly() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    commands = _bash_blocks(section)
    assert len(commands) == 2
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    for block in commands:
        assert f"```bash\n{block}```" in index


def test_generated_parts_of_hand_written_pages() -> None:
    for page in docgen.FILLS:
        text = (DOCS / page).read_text(encoding="utf-8")
        filled = docgen.fill(page, text)
        assert "<!--" not in filled
    help_text = docgen.cli_help()
    for command in ("demo", "load", "screen", "sandbox", "cache"):
        assert f"### `mdframes {command}`" in help_text
    with pytest.raises(ValueError, match="marker"):
        docgen.fill("cli.md", "# no marker here")


def _nav_files(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [f for item in node for f in _nav_files(item)]
    if isinstance(node, dict):
        return [f for value in node.values() for f in _nav_files(value)]
    return []


def test_nav_entries_and_page_links_resolve() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    for entry in _nav_files(config["nav"]):
        if entry.endswith("/"):  # a literate-nav section: its SUMMARY.md is generated
            assert f"{entry}SUMMARY.md" in PAGES, entry
        else:
            assert (DOCS / entry).is_file(), entry
    for path in DOCS.rglob("*.md"):
        page = path.relative_to(DOCS).as_posix()
        for target in LINK.findall(path.read_text(encoding="utf-8")):
            assert _resolves(page, target), f"{page}: broken link {target}"


def test_api_reference_targets_import() -> None:
    targets = [
        line.split(":::", 1)[1].strip()
        for path in (DOCS / "reference").glob("*.md")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith(":::")
    ]
    assert "mdframes.loaders" in targets and "mdframes.client.Client" in targets
    for target in targets:
        module, _, attr = target.rpartition(".")
        try:
            importlib.import_module(target)
        except ModuleNotFoundError:
            assert hasattr(importlib.import_module(module), attr), target


def test_stock_griffe_sees_every_loader_signature() -> None:
    griffe = pytest.importorskip("griffe", reason="griffe comes with the docs extra")
    extensions = griffe.load_extensions(str(DOCS / "griffe_runtime.py") + ":SphinxRoles")
    module = griffe.load(
        "mdframes.loaders",
        extensions=extensions,
        search_paths=[str(ROOT)],
        docstring_parser="numpy",
    )
    loader = module["load_lobbying"]
    assert loader.is_function
    assert "filing_uuid" in loader.docstring.value
    assert [p.name for p in loader.parameters][:4] == ["symbols", "start", "end", "limit"]
    assert ":func:" not in module.docstring.value
