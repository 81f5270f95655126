"""Dataset reference pages, generated from the registry so the docs cannot drift from it.

``docs/gen_pages.py`` (an ``mkdocs-gen-files`` script) writes :func:`pages` into the site at
build time; ``tests/test_docs.py`` checks the pages against the registry, the loaders and the
sandbox. Everything a page states comes from :mod:`mdframes.registry`,
:func:`mdframes.schemas.describe` or a loader's signature; this module only lays it out.

>>> from mdframes import docgen
>>> sorted(docgen.pages())[:2]
['datasets/SUMMARY.md', 'datasets/discovery/markets.md']
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .catalog import describe as catalog_describe
from .kinds import KINDS
from .registry import REGISTRY, SEVERITY, Dataset, Param, example_arguments
from .schemas import RULE_DOCS

__all__ = [
    "DTYPES",
    "CHECKS",
    "GROUPS",
    "Example",
    "example",
    "page_path",
    "dataset_page",
    "screener_page",
    "index_page",
    "summary",
    "cache_table",
    "cli_help",
    "FILLS",
    "fill",
    "pages",
]

# Field.kind -> the dtype the frame column has (the one table in mdframes.kinds).
DTYPES: dict[str, str] = {name: kind.dtype for name, kind in KINDS.items()}

# Frame-level rules named in Dataset.checks (the rule texts of mdframes.schemas).
CHECKS: dict[str, str] = RULE_DOCS


@dataclass(frozen=True)
class Group:
    """One section of the dataset reference."""

    key: str
    title: str
    intro: str
    members: Callable[[Dataset], bool]


GROUPS: tuple[Group, ...] = (
    Group(
        "v2",
        "Per-symbol (v2)",
        "One symbol or a list of symbols; a list is fetched concurrently and concatenated. "
        'With `errors="skip"` a failing symbol is left out and named in `df.attrs["failed"]`.',
        lambda d: d.version == "v2" and d.scope == "symbol",
    ),
    Group(
        "discovery",
        "Discovery",
        "What can be asked for: tickers with forecasts, markets and regions.",
        lambda d: d.version == "v2" and d.scope == "discovery",
    ),
    Group(
        "screeners",
        "Screeners",
        "One dataset across many tickers, with a summary in `df.attrs['summary']`.",
        lambda d: d.scope == "screener",
    ),
    Group(
        "recent",
        "Recent activity",
        "The latest entries across all tickers, with a summary in `df.attrs['summary']`.",
        lambda d: d.scope == "recent",
    ),
    Group(
        "v1",
        "Legacy v1",
        "The `/v1/` interface (`mdframes.v1`), loaded into the v2 column names where the "
        "meaning is the same.",
        lambda d: d.version == "v1",
    ),
)


def group_of(ds: Dataset) -> Group:
    """The group a dataset is documented in."""
    for group in GROUPS:
        if group.members(ds):
            return group
    raise LookupError(f"dataset {ds.name!r} belongs to no documentation group")


def page_path(name: str) -> str:
    """Where a dataset's page lives inside ``docs/`` (screeners share one page)."""
    group = group_of(REGISTRY[name])
    if group.key == "screeners":
        return "datasets/screeners.md"
    tail = name.split("/", 1)[1] if "/" in name else name
    return f"datasets/{group.key}/{tail}.md"


# --- the loader that produces each dataset --------------------------------------------------


@dataclass(frozen=True)
class Example:
    """A loader call that produces a dataset: ``module.function(*args, **kwargs)``."""

    module: str  # "mdframes" or "mdframes.v1"
    function: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def prefix(self) -> str:
        return "md" if self.module == "mdframes" else self.module.rsplit(".", 1)[-1]

    def resolve(self) -> Callable[..., Any]:
        """The loader function itself."""
        return getattr(importlib.import_module(self.module), self.function)

    def call(self, extra: str = "") -> str:
        """The call as Python source, e.g. ``md.load_sentiment("AAPL", client=client)``."""
        parts = [repr(a) for a in self.args]
        parts += [f"{k}={v!r}" for k, v in self.kwargs.items()]
        if extra:
            parts.append(extra)
        text = ", ".join(parts).replace("'", '"')
        return f"{self.prefix}.{self.function}({text})"


def example(name: str) -> Example:
    """The loader call documented (and tested against the sandbox) for dataset ``name``,
    from the registry's example arguments."""
    ds = REGISTRY[name]
    kwargs = example_arguments(ds)
    module, _, function = ("mdframes." + ds.loader).rpartition(".")
    args: tuple[Any, ...] = ()
    if ds.scope in ("screener", "recent") and ds.version == "v2":
        args = (name.split("/", 1)[1],)
    if "symbols" in kwargs:
        args = (kwargs.pop("symbols"),)
    # Required path parts (v1 market and ticker) go positionally, in signature order.
    required = [p.name for p in ds.params if p.in_path and p.default is None]
    args += tuple(kwargs.pop(n) for n in required if n in kwargs)
    if ds.view_of is not None:
        kwargs["view"] = ds.view_of[1]
    if not hasattr(importlib.import_module(module), function):
        # A registry entry without a function of its own is loaded by name.
        return Example("mdframes", "load", (ds.name, *args), kwargs)
    return Example(module, function, args, kwargs)


def _literal(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _signature(ex: Example) -> str:
    """The loader's signature without annotations (they are on the API reference page)."""
    parts: list[str] = []
    star = False
    for p in inspect.signature(ex.resolve()).parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}")
        elif p.default is p.empty:
            parts.append(p.name)
        else:
            parts.append(f"{p.name}={_literal(p.default)}")
    head = f"{ex.prefix}.{ex.function}("
    if len(head) + sum(len(p) + 2 for p in parts) <= 78:
        return f"{head}{', '.join(parts)})"
    return head + "\n" + "".join(f"    {p},\n" for p in parts) + ")"


# --- formatting -------------------------------------------------------------------------------


def _lifetime(seconds: int) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} s"


def _code(values: Iterable[str]) -> str:
    return ", ".join(f"`{v}`" for v in values)


def _cell(text: str) -> str:
    return text.replace("|", "\\|") if text else ""


def _param_accepts(p: Param) -> str:
    if p.kind == "date":
        return "`str` (`YYYY-MM-DD`), `date`, `datetime` or `Timestamp`"
    if p.kind == "int":
        if p.lo is not None and p.hi is not None:
            return f"`int`, {p.lo:,} to {p.hi:,}"
        return f"`int`, >= {p.lo}" if p.lo is not None else "`int`"
    if p.kind == "choice":
        return "one of " + _code(p.choices)
    if p.name in ("symbol", "ticker"):
        return "a symbol"
    return "`str` (see `md.load_markets()`)" if p.name == "market" else "`str`"


def _param_wire(p: Param) -> str:
    return f"path segment `{p.wire}`" if p.in_path else f"query `{p.wire}`"


def params_table(ds: Dataset, *, notes: bool = True) -> str:
    """The dataset's parameters with their bounds, as a Markdown table."""
    rows = ["| argument | sent as | accepts | default |", "|---|---|---|---|"]
    if ds.per_symbol:
        rows.append(
            "| `symbols` | path segment `{symbol}` | one symbol or a list "
            "(`BRK.B`, `BTC-USD`, `^GSPC` are fine) | required |"
        )
    for p in ds.params:
        default = "required" if p.in_path and p.default is None else f"`{_literal(p.default)}`"
        rows.append(f"| `{p.name}` | {_param_wire(p)} | {_param_accepts(p)} | {default} |")
    if len(rows) == 2:
        return "No parameters.\n"
    note = ""
    if ds.needs_market_or_region and notes:
        note = "\n`market` or `region` is required: the service answers 400 without either.\n"
    if any(p.kind == "date" for p in ds.params):
        note += "\nThe window is inclusive; a start after the end is refused before any request.\n"
    return "\n".join(rows) + "\n" + note


def columns_table(name: str) -> str:
    """The columns the frame has, their dtypes and value rules, as a Markdown table."""
    ds = REGISTRY[name]
    rows = ["| column | dtype | API field | rules | description |", "|---|---|---|---|---|"]
    for row in catalog_describe(name).to_dict("records"):
        rows.append(
            f"| `{row['column']}` | `{row['dtype']}` | `{row['wire']}` | {_cell(row['rule'])} "
            f"| {_cell(row['description'])} |"
        )
    text = "\n".join(rows) + "\n"
    if ds.shape == "auto":
        text += (
            "\nThe spec does not show all record fields of this endpoint: every field the "
            "service returns is kept as a column, snake_cased and typed by its values "
            "(dates, UTC timestamps, `Int64`, `float64`, `string`, lists). The schema pins "
            "only the columns above.\n"
        )
    return text


def _window(ds: Dataset) -> str:
    if not ds.filter_field:
        return "the record date"
    wire = ds.filter_field
    column = next((f.name for f in ds.all_fields if f.wire == wire), wire)
    return f"`{wire}` (column `{column}`)" if column != wire else f"`{column}`"


def _facts(ds: Dataset) -> list[tuple[str, str]]:
    lo, hi = ds.limit_bounds
    facts = [
        ("Endpoint", f"`GET {ds.path}`"),
        ("Registry name", f"`{ds.name}`"),
        ("Point-in-time anchor", f"`{ds.anchor}`" if ds.anchor else "none (forward-looking)"),
    ]
    if ds.param("start") is not None or ds.param("date_from") is not None:
        facts.append(("Window filters on", _window(ds)))
    facts.append(("Record id", _code(ds.record_id) if ds.record_id else "—"))
    if ds.paged:
        paging = (
            f"with `limit=None` the whole window is walked in requests of {hi} and merged by "
            "the record id; an explicit `limit` is one request"
        )
    else:
        paging = "one request" + (" per symbol" if ds.per_symbol else "")
        if ds.param("chamber") is not None:
            paging += " per chamber (`both`: house and senate)"
    facts.append(("Paging", paging))
    facts.append(("Cache lifetime", _lifetime(ds.ttl)))
    if ds.checks:
        facts.append(("Frame checks", "; ".join(f"{CHECKS[c]} ({SEVERITY[c]})" for c in ds.checks)))
    return facts


def _facts_table(ds: Dataset) -> str:
    rows = ["| property | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in _facts(ds)]
    return "\n".join(rows) + "\n"


def _example_block(ex: Example) -> str:
    imports = "import mdframes as md\n" + ("from mdframes import v1\n" if ex.prefix == "v1" else "")
    return (
        "```python\n"
        f"{imports}\n"
        "with md.sandbox.running() as client:  # the offline sandbox\n"
        f"    df = {ex.call('client=client')}\n"
        "\n"
        "df.dtypes\n"
        "```\n"
    )


def _caveats(ds: Dataset) -> str:
    if not ds.caveats:
        return ""
    return "## Caveats\n\n" + "".join(f"- {c}\n" for c in ds.caveats) + "\n"


def dataset_page(name: str) -> str:
    """The Markdown page of one dataset."""
    ds, ex = REGISTRY[name], example(name)
    parts = [
        f"# {ds.name}\n",
        f"{ds.description}\n",
        _facts_table(ds),
        "## Loader\n",
        f"```python\n{_signature(ex)}\n```\n",
        _example_block(ex),
        "## Parameters\n",
        params_table(ds),
        "## Columns\n",
        columns_table(name),
        _caveats(ds),
    ]
    return "\n".join(p.rstrip("\n") + "\n" for p in parts if p)


def screener_page() -> str:
    """One page for every screener: a summary table, shared parameters, pinned columns."""
    names = [n for n, d in REGISTRY.items() if d.scope == "screener"]
    first = REGISTRY[names[0]]
    ex = example(names[0])
    rows = [
        "| `dataset` | endpoint | market or region | anchor | cache | pinned columns |",
        "|---|---|---|---|---|---|",
    ]
    for n in names:
        ds = REGISTRY[n]
        rows.append(
            f"| `{n.split('/', 1)[1]}` | `{ds.path}` | {'required' if ds.needs_market_or_region else 'optional'} "
            f"| `{ds.anchor}` | {_lifetime(ds.ttl)} | {_code(ds.columns)} |"
        )
    parts = [
        "# Screeners\n",
        "One dataset across many tickers, optionally filtered by market or region. The "
        "response's `summary` object goes to `df.attrs['summary']` with snake_case keys.\n",
        "## Loader\n",
        f"```python\n{_signature(ex)}\n```\n",
        _example_block(ex),
        "`dataset` is the path tail, one of the fifteen below. Each is also a registry "
        'dataset named `screener/<tail>` (`md.load("screener/sentiment", region="US")`).\n',
        "\n".join(rows) + "\n",
        "## Parameters\n",
    ]
    shared = all(REGISTRY[n].params == first.params for n in names)
    parts += [
        params_table(first, notes=False) if shared else "Per screener, below.\n",
        "`market` or `region` is required where the table above says so: the service answers "
        "400 without either, and mdframes refuses the call before sending it.\n",
        "## Columns\n",
        "Record fields are stated by the spec only for the sentiment and insider-trading "
        "screeners; the others keep every field the service returns, snake_cased and typed "
        "by value, and their schema pins only the columns listed in the table.\n",
    ]
    for n in names:
        ds = REGISTRY[n]
        if ds.shape != "auto" or not shared:
            parts.append(f"### `{n.split('/', 1)[1]}`\n")
            if not shared:
                parts.append(params_table(ds))
            parts.append(columns_table(n))
    return "\n".join(p.rstrip("\n") + "\n" for p in parts)


def _members(group: Group) -> list[str]:
    return [n for n, d in REGISTRY.items() if group_of(d) is group]


def index_page() -> str:
    """The datasets overview: every dataset, its loader call and endpoint, by group."""
    parts = [
        "# Datasets\n",
        "Every page below is generated from the dataset registry (`mdframes.registry`), so "
        "paths, parameters, bounds, columns, dtypes and rules are always those the code uses. "
        "Every loader also takes `client=` (default: `md.get_default_client()`) and "
        "`validate=True` (the pandera schema, `mdframes.schemas.get(name)`); "
        "`md.load(name, ...)` loads any dataset by its registry name.\n",
        "Column dtypes: text `string`, dates `datetime64[ns]` (naive), timestamps "
        "`datetime64[ns, UTC]`, integers `Int64` (nullable), numbers `float64`, closed "
        "vocabularies `category`, list fields Python lists, `cik` a zero-padded 10-digit "
        "`string`.\n",
    ]
    for group in GROUPS:
        parts += [f"## {group.title}\n", f"{group.intro}\n"]
        if group.key == "screeners":
            parts.append(
                f"All {len(_members(group))} screeners: [Screeners](screeners.md), "
                "`md.load_screener(dataset, ...)`.\n"
            )
            continue
        rows = ["| dataset | loader | endpoint | anchor |", "|---|---|---|---|"]
        for n in _members(group):
            ds, link = REGISTRY[n], page_path(n).removeprefix("datasets/")
            rows.append(
                f"| [`{n}`]({link}) | `{example(n).call()}` | `{ds.path}` "
                f"| {f'`{ds.anchor}`' if ds.anchor else '—'} |"
            )
        parts.append("\n".join(rows) + "\n")
    return "\n".join(p.rstrip("\n") + "\n" for p in parts)


def summary() -> str:
    """The literate-nav file of ``datasets/``: the overview, then each group's pages."""
    lines = ["* [Overview](index.md)"]
    for group in GROUPS:
        if group.key == "screeners":
            lines.append("* [Screeners](screeners.md)")
            continue
        lines.append(f"* {group.title}")
        for n in _members(group):
            link = page_path(n).removeprefix("datasets/")
            lines.append(f"    * [{n.split('/', 1)[-1]}]({link})")
    return "\n".join(lines) + "\n"


def cache_table() -> str:
    """Cache lifetime per dataset (grouped by lifetime), as a Markdown table."""
    by_ttl: dict[int, list[str]] = {}
    for n, ds in REGISTRY.items():
        by_ttl.setdefault(ds.ttl, []).append(n)
    rows = ["| lifetime | datasets |", "|---|---|"]
    rows += [f"| {_lifetime(ttl)} | {_code(by_ttl[ttl])} |" for ttl in sorted(by_ttl)]
    return "\n".join(rows) + "\n"


def cli_help() -> str:
    """The help text of ``mdframes`` and each of its commands, as Markdown."""
    import argparse
    import os

    from .cli import build_parser

    # argparse wraps to the terminal width; pin it so the page is the same everywhere.
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        parser = build_parser()
        parts = [f"```text\n$ mdframes --help\n{parser.format_help().rstrip()}\n```\n"]
        for action in parser._subparsers._group_actions if parser._subparsers else ():
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    text = sub.format_help().rstrip()
                    parts.append(f"### `mdframes {name}`\n\n```text\n{text}\n```\n")
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved
    return "\n".join(parts)


# Hand-written pages with a generated part: page -> (marker, generator).
def severity_table() -> str:
    """Every kind of rule with its severity (registry.SEVERITY), as a Markdown table."""
    words = {
        "type": "a column has its kind's dtype; a JSON value of the wrong type fails while typing",
        "required": "a record's id and date are present",
        "range": "values within the spec's range (score in [-1, 1], volumes >= 0, ...)",
        "cik": "`cik` is 10 digits or null",
        "list": "list fields hold lists",
        "not_null": "no null where the spec does not announce one",
        "vocabulary": "a value of a closed list outside the spec's list (kept, as an added category)",
        "duplicates": "the same record id twice in one answer",
    }
    words.update(CHECKS)
    rows = ["| rule | severity | what it checks |", "|---|---|---|"]
    for name, severity in SEVERITY.items():
        rows.append(f"| `{name}` | {severity} | {_cell(words.get(name, ''))} |")
    return "\n".join(rows) + "\n"


FILLS: dict[str, tuple[str, Callable[[], str]]] = {
    "frames.md": ("<!-- severities -->", severity_table),
    "caching.md": ("<!-- cache-lifetimes -->", cache_table),
    "cli.md": ("<!-- cli-help -->", cli_help),
}


def fill(page: str, text: str) -> str:
    """``text`` of hand-written ``page`` with its marker replaced by the generated part."""
    marker, make = FILLS[page]
    if marker not in text:
        raise ValueError(f"docs/{page} lost its {marker} marker")
    return text.replace(marker, make())


def pages() -> dict[str, str]:
    """Every generated page: path inside ``docs/`` -> Markdown text."""
    out = {"datasets/index.md": index_page(), "datasets/SUMMARY.md": summary()}
    out |= {page_path(n): dataset_page(n) for n, ds in REGISTRY.items() if ds.scope != "screener"}
    out["datasets/screeners.md"] = screener_page()
    return dict(sorted(out.items()))
