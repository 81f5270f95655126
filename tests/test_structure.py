"""The package's shape: no import cycles, and the registry stays the single source of what each
loader takes, so no loader can drift from the dataset it serves."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pandas as pd
import pytest

import mdframes as md
from mdframes.registry import DATE_RANGE, REGISTRY, Dataset, Field, example_arguments, views
from mdframes.sandbox import Sandbox

PACKAGE = Path(md.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, *, type_only: bool = False) -> set[str]:
    """The mdframes modules ``path`` imports anywhere (functions included); those under
    ``if TYPE_CHECKING:`` (annotations only, never executed) with ``type_only=True``."""
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        if not type_only and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            candidates = [target] + [f"{target}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            candidates = [a.name for a in node.names]
        else:
            continue
        found.update(c for c in candidates if c in MODULES and c != me)
    return found


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def test_no_import_cycles() -> None:
    # A package's __init__ importing its own submodules is how packages are built, not a cycle.
    graph = {
        name: {t for t in _imports(path) if not (path.name == "__init__.py" and t.startswith(name))}
        for name, path in MODULES.items()
    }
    graph = {n: {t for t in ts if t != "mdframes"} for n, ts in graph.items()}
    assert _cycles(graph) == []


def test_no_import_cycles_through_type_only_imports_in_the_lake() -> None:
    """A ``TYPE_CHECKING`` import is a dependency too: the lake's inner modules take the
    storage and clock they use, never the ``Lake`` facade, so no circle hides there."""
    lake = {n: p for n, p in MODULES.items() if n.startswith("mdframes.lake")}
    graph = {
        name: {
            t
            for t in _imports(path, type_only=True)
            if t in lake and not (path.name == "__init__.py" and t.startswith(name))
        }
        for name, path in lake.items()
    }
    assert _cycles(graph) == []
    inner = [
        n for n in lake if n not in ("mdframes.lake", "mdframes.lake.core", "mdframes.lake.cli")
    ]
    assert [n for n in inner if "mdframes.lake.core" in graph[n]] == []


def test_the_cycle_check_finds_a_cycle() -> None:
    # The check itself must be able to fail.
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


# --- loaders against the registry ---------------------------------------------------------------


def _loader(ds: Dataset):
    obj: object = md
    for part in ds.loader.split("."):
        obj = getattr(obj, part)
    return obj


def _served_by_own_loader(ds: Dataset) -> bool:
    return ds.view_of is None


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_loader_matches_its_registry_entry(name: str) -> None:
    ds = REGISTRY[name]
    loader = _loader(ds)
    assert callable(loader), f"{name}: no public loader {ds.loader}"
    signature = inspect.signature(loader)
    params = signature.parameters
    assert signature.return_annotation in ("pd.DataFrame", "pandas.DataFrame"), name
    assert loader.__doc__ and "Examples" in loader.__doc__, f"{ds.loader} has no example"
    positional = [p.name for p in params.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
    keyword = {p.name for p in params.values() if p.kind is p.KEYWORD_ONLY}
    expected = [p.name for p in ds.params]
    if ds.per_symbol:
        expected = ["symbols", *expected]
    if ds.scope in ("screener", "recent") and ds.version == "v2":
        expected = ["dataset", *expected]
    extra = {"view"} if views(ds.view_of[0] if ds.view_of else ds.name).keys() - {""} else set()
    assert [p for p in positional if p not in extra] == expected, name
    assert {"client", "validate"} <= keyword
    assert ("errors" in keyword) == ds.per_symbol
    for p in ds.params:
        required = p.in_path and p.default is None  # a path part without default: no default
        default = inspect.Parameter.empty if required else p.default
        assert params[p.name].default == default, f"{ds.loader}({p.name}=...) drifts"
    lo, hi = ds.limit_bounds
    if hi is not None and ds.scope == "symbol":
        assert f"1 to {hi}" in (loader.__doc__ or ""), f"{ds.loader}: limit bounds not documented"
    if ds.view_of is not None or ds.view:
        view = params["view"]
        own = REGISTRY[ds.view_of[0]] if ds.view_of else ds
        assert view.default == own.view


def test_every_public_loader_serves_a_registry_dataset() -> None:
    served = {ds.loader for ds in REGISTRY.values()}
    public = {n for n in md.loaders.__all__ if n.startswith("load_")}
    public |= {f"v1.{n}" for n in md.v1.__all__}
    assert public == served


# --- one registry entry adds a dataset ------------------------------------------------------

GADGETS = Dataset(
    name="gadgets",
    path="/v2/gadgets/{symbol}",
    params=DATE_RANGE,
    records="gadgets",
    header=(Field("symbol", nullable=False), Field("name")),
    fields=(
        Field("date", "date"),
        Field("gadgetId"),
        Field("colour", "cat", ("red", "blue")),
        Field("size", "int", ge=1, le=9),
    ),
    record_id=("gadget_id",),
    filter_field="date",
    description="A dataset that exists only in this test.",
)


def test_a_registry_entry_is_all_a_new_dataset_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    from mdframes import docgen

    from . import test_loaders
    from .conftest import KEY

    monkeypatch.setitem(REGISTRY, GADGETS.name, GADGETS)
    # a loader through md.load, against a sandbox route (routes come from the registry)
    with Sandbox() as server:
        client = md.Client(api_key=KEY, base_url=server.url, cache=False)
        df = md.load("gadgets", ["AAPL", "MSFT"], client=client, start="2026-01-01")
        assert list(df.columns[:6]) == GADGETS.columns and len(df) > 0
        assert df["size"].dtype == "Int64" and isinstance(df["colour"].dtype, pd.CategoricalDtype)
        assert df.groupby("symbol", observed=True)["date"].is_monotonic_increasing.all()
        # the parametrised contract test runs on it unchanged
        test_loaders.test_every_dataset_has_contract_columns_and_dtypes("gadgets", client)
        client.close()
    # a docs page, a catalog row and an example, with no other edit
    pages = docgen.pages()
    assert (
        "datasets/v2/gadgets.md" in pages and 'md.load("gadgets"' in pages["datasets/v2/gadgets.md"]
    )
    assert "gadgets" in md.datasets()["name"].tolist()
    assert md.describe("gadgets")["column"].tolist() == GADGETS.columns
    assert example_arguments(GADGETS)["symbols"] == ["AAPL", "MSFT"]
