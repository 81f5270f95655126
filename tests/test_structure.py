"""The package's shape: no import cycles, and the registry stays the single source of what each
loader takes, so no loader can drift from the dataset it serves."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
            target = _import_target(node, package)
            candidates = [target] + [f"{target}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            candidates = [a.name for a in node.names]
        else:
            continue
        found.update(c for c in candidates if c in MODULES and c != me)
    return found


def _import_target(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


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


def _graph(*, type_only: bool) -> dict[str, set[str]]:
    # A package's __init__ importing its own submodules is how packages are built, not a cycle.
    graph = {
        name: {
            t
            for t in _imports(path, type_only=type_only)
            if not (path.name == "__init__.py" and t.startswith(name))
        }
        for name, path in MODULES.items()
    }
    return {n: {t for t in ts if t != "mdframes"} for n, ts in graph.items()}


# Type-only edges allowed to close a circle, as (importer, imported). Empty: the lake's
# five-module circle through the ``Lake`` facade went with issue 20 (inner modules take the
# storage and clock they use). An entry here must name the issue that removes it.
TYPE_ONLY_EXCEPTION: set[tuple[str, str]] = set()


def test_no_import_cycles() -> None:
    assert _cycles(_graph(type_only=False)) == []


def test_no_import_cycles_counting_type_only_imports() -> None:
    # An annotation-only import is still a dependency: a circle of them is a design circle.
    graph = _graph(type_only=True)
    runtime = _graph(type_only=False)
    for a, b in TYPE_ONLY_EXCEPTION:
        assert b not in runtime.get(a, set()), f"{a} -> {b} is a runtime import now"
        graph.get(a, set()).discard(b)
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

    from .conftest import KEY, check_contract

    monkeypatch.setitem(REGISTRY, GADGETS.name, GADGETS)
    # a loader through md.load, against a sandbox route (routes come from the registry)
    with Sandbox() as server:
        client = md.Client(api_key=KEY, base_url=server.url, cache=False)
        df = md.load("gadgets", ["AAPL", "MSFT"], client=client, start="2026-01-01")
        assert list(df.columns[:6]) == GADGETS.columns and len(df) > 0
        assert df["size"].dtype == "Int64" and isinstance(df["colour"].dtype, pd.CategoricalDtype)
        assert df.groupby("symbol", observed=True)["date"].is_monotonic_increasing.all()
        # the parametrised contract test runs on it unchanged
        check_contract("gadgets", client)
        client.close()
    # a docs page, a catalog row and an example, with no other edit
    pages = docgen.pages()
    assert (
        "datasets/v2/gadgets.md" in pages and 'md.load("gadgets"' in pages["datasets/v2/gadgets.md"]
    )
    assert "gadgets" in md.datasets()["name"].tolist()
    assert md.describe("gadgets")["column"].tolist() == GADGETS.columns
    assert example_arguments(GADGETS)["symbols"] == ["AAPL", "MSFT"]


# --- one home per concept ---------------------------------------------------------------------


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own_private_names(tree: ast.AST) -> set[str]:
    """Private names a module defines itself: functions, classes, assigned names and
    attributes, parameters, imports under a private alias and string names (``__slots__``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
    return {n for n in names if _private(n)}


def _private_reaches(name: str, path: Path) -> set[tuple[str, str]]:
    """(module, private name) for each private name of another module that ``name`` uses:
    imported from an mdframes module, read off an imported mdframes module, or read off any
    object other than ``self``/``cls`` when this module defines no such name itself."""
    tree = ast.parse(path.read_text())
    own = _own_private_names(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    modules: set[str] = set()  # local names bound to mdframes modules
    reaches: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _import_target(node, package)
            for a in node.names:
                if f"{target}.{a.name}" in MODULES:
                    modules.add(a.asname or a.name)
                elif target in MODULES and _private(a.name):
                    reaches.add((name, a.name))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        base = node.value
        if isinstance(base, ast.Name) and base.id in ("self", "cls"):
            continue
        if (isinstance(base, ast.Name) and base.id in modules) or node.attr not in own:
            reaches.add((name, node.attr))
    return reaches


# Private names of other libraries that mdframes reads on purpose, each for a reason.
THIRD_PARTY_PRIVATE = {
    # argparse has no public way to list a parser's subcommands (the CLI's help, docgen).
    ("mdframes.cli", "_actions"),
    ("mdframes.cli", "_SubParsersAction"),
    ("mdframes.docgen", "_subparsers"),
    ("mdframes.docgen", "_group_actions"),
    ("mdframes.docgen", "_SubParsersAction"),
    # matplotlib: the renderer that measures text before the figure is drawn.
    ("mdframes.plot.matplotlib_kit", "_get_renderer"),
}
# Reaches being removed by parallel work: temporary, each with the work that removes it.
BEING_REMOVED: set[tuple[str, str]] = set()  # empty: every reach went public (issues 19-21)


def test_no_module_reaches_another_modules_private_names() -> None:
    found = set().union(*(_private_reaches(n, p) for n, p in MODULES.items()))
    assert found - THIRD_PARTY_PRIVATE - BEING_REMOVED == set()


def test_the_private_reach_check_finds_each_kind_of_reach(tmp_path: Path) -> None:
    # The check itself must be able to fail: an import, a module attribute, an object's.
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from mdframes.progress import _kernel\n"
        "from mdframes import client as client_module\n"
        "def f(client):\n"
        "    return client._require(), client_module._default, _kernel()\n"
    )
    found = {attr for _, attr in _private_reaches("mdframes.probe", probe)}
    assert found == {"_kernel", "_require", "_default"}


DATE_PARAMETERS = {"start", "end", "as_of", "known_at", "date_from", "date_to", "day", "today"}
# Public functions that take dates typed otherwise: temporary, switched by their owners' work.
DATES_BEING_TYPED: set[str] = set()


def _public_callables() -> Iterator[tuple[str, Any]]:
    """The functions and methods of the public surface: ``md.*`` and the ``__all__`` of the
    public modules md exports (``md.v1``, ``md.pit``, ``md.features``, ``md.sandbox``, ...)."""
    spaces = [md, md.pit] + [
        importlib.import_module(f"mdframes.{n}") for n in md.__all__ if f"mdframes.{n}" in MODULES
    ]
    seen: set[int] = set()
    for space in spaces:
        for attr in getattr(space, "__all__", ()):
            obj = getattr(space, attr)
            found = [obj] if inspect.isfunction(obj) else []
            if inspect.isclass(obj):
                found = [m for n, m in vars(obj).items() if inspect.isfunction(m)]
                found = [m for m in found if m.__name__ == "__init__" or _public(m.__name__)]
            for fn in found:
                if id(fn) not in seen and fn.__module__.startswith("mdframes"):
                    seen.add(id(fn))
                    yield f"{fn.__module__}.{fn.__qualname__}", fn


def _public(name: str) -> bool:
    return not name.startswith("_")


def test_public_functions_type_dates_with_the_typing_aliases() -> None:
    from mdframes import _typing

    aliases = {"DateLike": _typing.DateLike, "TimeLike": _typing.TimeLike}
    wrong = []
    checked = 0
    for qualname, fn in _public_callables():
        module = sys.modules[fn.__module__]
        for p in inspect.signature(fn).parameters.values():
            if p.name not in DATE_PARAMETERS:
                continue
            checked += 1
            text = p.annotation if isinstance(p.annotation, str) else repr(p.annotation)
            names = set(re.findall(r"[A-Za-z_]+", text))
            ok = bool(names & aliases.keys()) and "Any" not in names
            ok = ok and all(getattr(module, n, None) is aliases[n] for n in names & aliases.keys())
            if not ok and qualname.removesuffix(".__init__") not in DATES_BEING_TYPED:
                wrong.append(f"{qualname}({p.name}: {text})")
    assert checked > 30  # the loaders' start/end at least: the walk finds the surface
    assert wrong == []


def test_type_aliases_have_one_home() -> None:
    from mdframes import _typing

    pending: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        if name == "mdframes._typing":
            continue
        defined = set()
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            targets += [node.target] if isinstance(node, ast.AnnAssign) else []
            defined |= {t.id for t in targets if isinstance(t, ast.Name)}
        clash = defined & set(_typing.__all__)
        assert clash <= pending.get(name, set()), f"{name} defines {clash}: import _typing's"


# Name resolution ("_" and "-", case, did-you-mean) lives in the registry; these modules are
# switching to it in parallel work (issue 20: the lake; issue 21: features).
DIFFLIB_BEING_REMOVED: set[str] = set()


def test_one_module_suggests_names() -> None:
    users = {
        name
        for name, path in MODULES.items()
        if re.search(r"^\s*(import difflib|from difflib import)", path.read_text(), re.M)
    }
    assert users - DIFFLIB_BEING_REMOVED == {"mdframes.registry"}


def _class_lengths(path: Path) -> dict[str, int]:
    tree = ast.parse(path.read_text())
    return {
        node.name: (node.end_lineno or node.lineno) - node.lineno + 1
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    }


def test_the_dataset_table_is_a_facade_over_roles() -> None:
    """``lake/table/table.py`` stays a facade: its roles (records, commit, health, sidecar files)
    live in their own modules, and no class there grows past 300 lines."""
    lengths = _class_lengths(PACKAGE / "lake" / "table" / "table.py")
    assert "DatasetTable" in lengths
    assert {name: n for name, n in lengths.items() if n > 300} == {}


def test_the_class_length_check_measures_whole_classes(tmp_path: Path) -> None:
    path = tmp_path / "big.py"
    path.write_text("class Big:\n" + "    x = 1\n" * 300 + "\n\nclass Small:\n    pass\n")
    assert _class_lengths(path) == {"Big": 301, "Small": 2}


def _fields_set_outside_init(path: Path) -> dict[str, set[str]]:
    """Class -> attributes of ``self`` a method other than ``__init__`` creates (assigns
    without ``__init__`` having set them)."""
    out: dict[str, set[str]] = {}
    for cls in ast.walk(ast.parse(path.read_text())):
        if not isinstance(cls, ast.ClassDef):
            continue
        methods = [f for f in cls.body if isinstance(f, ast.FunctionDef)]
        made: dict[str, set[str]] = {}
        for fn in methods:
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign):
                    targets = node.targets
                elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
                    targets = [node.target]
                elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                    targets = [node.optional_vars]
                else:
                    targets = []
                for t in targets:
                    if isinstance(t, ast.Attribute) and getattr(t.value, "id", "") == "self":
                        made.setdefault(fn.name, set()).add(t.attr)
        outside = set().union(*(v for k, v in made.items() if k != "__init__"))
        late = outside - made.get("__init__", set())
        if late:
            out[cls.name] = late
    return out


def test_the_sync_driver_and_dataset_runs_set_their_fields_in_init(tmp_path: Path) -> None:
    """``lake/sync/sync.py``: the driver and each dataset's run get what they need at
    construction (a context object, no calls back), never a field a later step creates."""
    assert _fields_set_outside_init(PACKAGE / "lake" / "sync" / "sync.py") == {}
    assert _fields_set_outside_init(PACKAGE / "lake" / "sync" / "state.py") == {}
    probe = tmp_path / "late.py"
    probe.write_text("class A:\n    def __init__(self):\n        self.a = 1\n    def run(self):\n"
                     "        self.a += 1\n        self.b = 2\n")  # fmt: skip
    assert _fields_set_outside_init(probe) == {"A": {"b"}}


# --- decisions on a dataset's mode made once (lake/sync/modes.py), facts in the registry ----------

# What names a dataset (or its mode) in a comparison: ``ds.name``, ``table.ds.lake``,
# ``mode_of(ds).name``, ``self.place.mode.name``, a variable ``d`` or ``dataset``; and the registry
# fields that decide a mode (``lake``, ``path``, ``scope``).
_DATASET_HOLDERS = re.compile(r"(^|\.)(ds|d|dataset|entry|mode)$|(^|\.)mode_of\(")
_DECIDING_FIELDS = {"name", "lake", "path", "scope"}
# Where the decisions live: the mode objects and the registry's declared facts.
MODE_HOMES = {"mdframes.lake.sync.modes", "mdframes.registry"}


def _names_a_dataset(node: ast.expr) -> bool:
    if isinstance(node, ast.Attribute) and node.attr in _DECIDING_FIELDS:
        return bool(_DATASET_HOLDERS.search(ast.unparse(node.value)))
    return isinstance(node, ast.Name) and node.id in ("d", "dataset", "ds_name")


def _literal_text(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(_literal_text(e) for e in node.elts)
    return False


def _mode_decisions(path: Path) -> list[str]:
    """``line: code`` of each place that branches on a dataset's name or storage mode (a
    comparison of its name, ``lake``, ``path`` or ``scope`` with text) or reads a ``cross``
    flag."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(map(_names_a_dataset, sides)) and any(map(_literal_text, sides)):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Attribute) and node.attr == "cross":
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.arg) and node.arg == "cross":
            found.append(f"{node.lineno}: parameter cross")
    return found


def test_mode_decisions_are_made_once_in_the_mode_objects() -> None:
    """No module of the lake or of the features branches on a dataset's name or on its
    storage mode (window, snapshot, cross section): it asks the dataset's mode object
    (``lake/sync/modes.py``) or reads a fact its registry entry declares (CONTRACT §10.1; the
    design note's "a decision about a mode is made once into an object")."""
    found = {
        name: hits
        for name, path in MODULES.items()
        if name.startswith(("mdframes.lake", "mdframes.features")) and name not in MODE_HOMES
        if (hits := _mode_decisions(path))
    }
    assert found == {}


def test_the_mode_decision_check_finds_each_kind(tmp_path: Path) -> None:
    # The check itself must be able to fail: each way the lake branched before issue 25.
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f(ds, table, self, d, cross):\n"
        "    a = ds.name == 'tickers'\n"
        "    b = mode_of(ds).name == 'window'\n"
        "    c = self.place.mode.cross\n"
        "    e = table.ds.lake != 'snapshot'\n"
        "    g = '{symbol}' in d.path\n"
        "    h = ds.scope in ('screener', 'recent')\n"
        "    i = {'app_ratings' if d == 'app_ratings_daily' else d for d in names}\n"
        "    ok = frame.index.name == 'date' or os.name == 'posix' or f.name in names\n"
    )
    found = [hit.split(":")[0] for hit in _mode_decisions(probe)]
    assert sorted(found, key=int) == ["1", "2", "3", "4", "5", "6", "7", "8"]


def test_the_package_still_names_its_modules_where_they_now_load_on_first_use() -> None:
    """``md.pit``, ``md.export``, ...: attributes of the package since it imported them at
    once; they now load on first use, and code (the docs pages too) still reaches them so. In
    a fresh interpreter, where no other test has imported them already."""
    code = (
        "import mdframes as md\n"
        "for name in ('registry', 'v1', 'appratings', 'catalog', 'client', 'errors', 'io',\n"
        "             'helpers', 'loaders', 'lookup', 'pit'):\n"
        "    assert getattr(md, name).__name__ == 'mdframes.' + name, name\n"
        "assert md.export is md.interop is md.io and md.export.to_excel is md.to_excel\n"
        "assert md.pit.point_in_time is md.point_in_time\n"
        "assert not hasattr(md, 'no_such_module') and not hasattr(md, '__no_such__')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# --- the house (DESIGN.md): rooms, named steps, public reaches, one name per class ----------

DESIGN = PACKAGE.parent / "DESIGN.md"


def _listed(section: str) -> dict[str, str]:
    """The exceptions DESIGN.md lists under ``section``: ``- `name`: reason`` lines."""
    text = DESIGN.read_text()
    body = text.split(f"### {section}\n", 1)[1].split("\n#", 1)[0]
    return dict(re.findall(r"^- `([^`]+)`: (.+)$", body, re.M))


# Declarative tables, not procedures: the registry, the schemas and the sandbox's data.
TABLES = ("mdframes/registry.py", "mdframes/schemas.py", "mdframes/sandbox/")


def _function_lengths(path: Path) -> dict[str, int]:
    """qualified name -> body lines, from the first statement after the docstring."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = child.body
                first = body[0]
                if len(body) > 1 and isinstance(first, ast.Expr):
                    body = body[1:] if isinstance(first.value, ast.Constant) else body
                out[prefix + child.name] = (child.end_lineno or 0) - body[0].lineno + 1
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(ast.parse(path.read_text()), "")
    return out


def _relative(path: Path) -> str:
    return path.relative_to(PACKAGE.parent).as_posix()


def test_no_room_of_features_or_lake_is_over_600_lines() -> None:
    listed = _listed("Rooms over 600 lines")
    big = {
        _relative(p): n
        for wing in ("features", "lake")
        for p in (PACKAGE / wing).rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 600
    }
    assert set(big) <= set(listed), big
    assert len(listed) <= 3


def test_no_function_is_over_60_lines() -> None:
    listed = _listed("Functions over 60 lines")
    long = {
        f"{_relative(p)}:{name}": n
        for p in PACKAGE.rglob("*.py")
        if not _relative(p).startswith(TABLES)
        for name, n in _function_lengths(p).items()
        if n > 60
    }
    assert set(long) <= set(listed), long
    assert len(listed) <= 3


def test_the_function_length_check_counts_the_body(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    body = "    x = 1\n" * 61
    probe.write_text(
        f'def f():\n    """Doc."""\n{body}\nclass C:\n    def g(self):\n'
        + body.replace("    ", "        ")
    )
    assert _function_lengths(probe) == {"f": 61, "C.g": 61}


def _lake_private_reaches(path: Path) -> list[str]:
    """``x._name`` where ``x`` names a lake (``lake``, ``self.lake``, ``table``...), and
    ``getattr(x, "_name")`` with any private name's string."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and not node.attr.startswith("__")
        ):
            base = ast.unparse(node.value)
            if re.search(r"lake|table", base, re.I):
                found.append((node.lineno, f"{path.name}:{node.lineno} {base}.{node.attr}"))
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("getattr", "hasattr"):
            args = node.args
            if (
                (
                    len(args) > 1
                    and isinstance(args[1], ast.Constant)
                    and isinstance(args[1].value, str)
                )
                and _private(args[1].value)
                and not args[1].value.startswith("__")
            ):
                found.append((node.lineno, f"{path.name}:{node.lineno} getattr {args[1].value}"))
    return [hit for _, hit in sorted(found)]


# Third-party objects without a public way to ask: listed by (module file, name).
PRIVATE_STRINGS_OF_OTHERS = {
    # concurrent.futures and distributed executors do not say how many workers they have.
    ("scale.py", "_max_workers"),
    ("scale.py", "_client"),
    ("scale.py", "_kwargs"),
    ("scale.py", "_mp_context"),
    ("sources.py", "_mp_context"),
}


def test_features_and_agents_reach_the_lake_through_public_names() -> None:
    found = [
        hit
        for wing in ("features", "agents")
        for p in (PACKAGE / wing).rglob("*.py")
        for hit in _lake_private_reaches(p)
    ]
    left = [
        h for h in found if (h.split(":")[0], h.rsplit(" ", 1)[1]) not in PRIVATE_STRINGS_OF_OTHERS
    ]
    assert left == []


def test_the_lake_reach_check_finds_each_kind(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f(lake, self):\n"
        "    a = lake._read_published('x')\n"
        "    b = self.lake._stored_rows\n"
        "    c = getattr(lake, '_kept_coverage', None)\n"
        "    d = lake.panels.read_published, self._own, lake.__class__\n"
    )
    assert [h.split(" ")[0] for h in _lake_private_reaches(probe)] == [
        "probe.py:2",
        "probe.py:3",
        "probe.py:4",
    ]


def _climbing_imports(name: str, path: Path) -> list[str]:
    """Imports of a name from an ancestor package's face (its ``__init__``), not a room."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    if path.name == "__init__.py":
        ancestors.discard(name)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _import_target(node, package)
            if target in ancestors:
                faces = [a.name for a in node.names if f"{target}.{a.name}" not in MODULES]
                found += [f"{name}:{node.lineno} {target}.{a}" for a in faces]
        elif isinstance(node, ast.Import):
            found += [f"{name}:{node.lineno} {a.name}" for a in node.names if a.name in ancestors]
    return found


def test_no_import_climbs_to_a_parent_face() -> None:
    # ``python -m`` runs a package's __main__, which is its face's own door.
    found = [
        hit
        for n, p in MODULES.items()
        if p.name != "__main__.py"
        for hit in _climbing_imports(n, p)
    ]
    assert found == []


def test_the_climbing_check_finds_a_climb(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from .. import __version__, registry\nimport mdframes\nfrom . import x\n")
    assert _climbing_imports("mdframes.cli.probe", probe) == [
        "mdframes.cli.probe:1 mdframes.__version__",
        "mdframes.cli.probe:2 mdframes",
        "mdframes.cli.probe:3 mdframes.cli.x",
    ]


def test_a_class_name_means_one_thing() -> None:
    seen: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                seen.setdefault(node.name, []).append(name)
    assert {c: ms for c, ms in seen.items() if len(ms) > 1} == {}


def test_type_ignores_are_few_and_give_their_reason() -> None:
    found = [
        (f"{_relative(p)}:{i}", line)
        for p in PACKAGE.rglob("*.py")
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if "type: ignore" in line
    ]
    assert len(found) <= 10, found
    # A reason: on the line after the ignore's bracket, or a comment line just above.
    for where, line in found:
        path, i = where.rsplit(":", 1)
        above = (PACKAGE.parent / path).read_text().splitlines()[int(i) - 2].strip()
        after = line.split("type: ignore", 1)[1].split("]", 1)[-1].strip(" #")
        assert after or above.startswith("#"), f"{where}: a type: ignore without its reason"
