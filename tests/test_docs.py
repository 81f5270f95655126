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
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pandas as pd
import pytest
import yaml

import mdframes as md
from mdframes import docgen, plot
from mdframes.registry import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = docgen.pages()
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
# Pictures docs/gen_plots.py draws at build time (checked in the built site below).
DRAWN = set(re.findall(r"\]\((plots/[\w.-]+\.png)\)", (DOCS / "plots.md").read_text("utf-8")))


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
    return joined in PAGES or joined in DRAWN or (DOCS / joined).is_file()


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
    load nothing (the rest need the real service and its key); none marked no-run."""
    texts = {
        p.relative_to(DOCS).as_posix(): p.read_text(encoding="utf-8") for p in DOCS.rglob("*.md")
    }
    texts.update(PAGES)
    out = []
    for page, text in sorted(texts.items()):
        for match in re.finditer(r"(<!-- docs: no-run[^>]*-->\s*)?```python\n(.*?)```", text, re.S):
            block = match.group(2)
            if match.group(1):  # a reason is given beside it (a cluster, a bucket, a key)
                continue
            offline = "sandbox.running(" in block or "sandbox.start(" in block
            if offline or (block.startswith("import") and "load" not in block):
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
        md.sandbox.stop()  # an example may have started the process-wide sandbox
        md.set_default_client(None)  # an example may have set the sandbox client as default


def test_every_hand_written_page_with_code_has_a_runnable_example() -> None:
    pages = {page for page, _ in EXAMPLES}
    for name in (
        "index.md",
        "frames.md",
        "helpers.md",
        "point-in-time.md",
        "errors.md",
        "exports.md",
        "plots.md",
        "recipes.md",
    ):
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
    assert "mdframes.loaders.load_sentiment" in targets and "mdframes.client.Client" in targets
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


# --- the recipes page, run top to bottom --------------------------------------------------------


def test_recipes_page_runs_top_to_bottom_and_computes_what_it_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (DOCS / "recipes.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 6
    monkeypatch.chdir(tmp_path)
    ns: dict[str, object] = {"__name__": "docs_recipes"}
    try:
        for block in blocks:
            exec(compile(block, "recipes.md", "exec"), ns)
    finally:
        md.set_default_client(None)
    sentiment, insiders = ns["sentiment"], ns["insiders"]
    assert isinstance(sentiment, pd.DataFrame) and isinstance(insiders, pd.DataFrame)
    # Wide: one column per symbol, dates ascending, every score in its cell.
    wide = ns["wide"]
    assert list(wide.columns) == ["AAPL", "MSFT", "NVDA"]
    assert wide.index.is_monotonic_increasing and wide.index.is_unique
    assert wide.notna().sum().sum() == len(sentiment)
    row = sentiment.iloc[0]
    assert wide.loc[row["date"], row["symbol"]] == row["score"]
    prices, returns = ns["prices"], ns["returns"]
    pd.testing.assert_frame_equal(returns, prices / prices.shift(1) - 1)
    # MultiIndex: the rolling mean never crosses from one symbol to the next.
    panel = ns["panel"]
    assert panel.index.names == ["symbol", "date"]
    first_of_msft = panel.loc["MSFT"].head(4)
    assert first_of_msft["score_5d"].isna().all()
    pd.testing.assert_frame_equal(ns["same_as_wide"], wide)
    assert len(ns["latest"]) == 3
    # Weekly: Friday labels, each bin the mean of its days.
    weekly = ns["weekly"]
    assert (weekly.index.day_of_week == 4).all()
    friday = weekly.index[1]
    days = wide.loc[friday - pd.Timedelta(days=6) : friday]
    assert weekly.loc[friday].tolist() == pytest.approx(days.mean().tolist())
    # Net insider value per week by filing date: acquisitions minus dispositions.
    groups = md.insider_groups(insiders)
    sign = {"acquisition": 1, "disposition": -1, "neutral": 0}
    expected = sum(
        int(v) * sign[str(g)]
        for v, g in zip(groups["total_value"], groups["group"], strict=True)
        if pd.notna(v) and pd.notna(g)
    )
    assert int(ns["weekly_net"].to_numpy().sum()) == expected
    # As of a date: no row sees an insider filing made public after it.
    features = ns["features"]
    seen = features.dropna(subset=["filing_date"])
    assert len(seen) > 0 and (seen["filing_date"] <= seen["date"]).all()
    assert (seen["date_right"] <= seen["filing_date"]).all()


# --- the built site, read as HTML ---------------------------------------------------------------


class _Page(HTMLParser):
    """Headings, ids, links and images of one built page."""

    def __init__(self) -> None:
        super().__init__()
        self.headings: list[tuple[str, str]] = []
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.images: list[dict[str, str | None]] = []
        self._heading: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        if tag in ("h1", "h2", "h3"):
            self._heading, self._text = tag, []
        if tag == "a" and found.get("href"):
            self.links.append(str(found["href"]))
        if tag in ("link", "script") and (found.get("href") or found.get("src")):
            self.links.append(str(found.get("href") or found.get("src")))
        if tag == "img":
            self.images.append(found)

    def handle_data(self, data: str) -> None:
        if self._heading:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == self._heading:
            self.headings.append((tag, "".join(self._text).strip().rstrip("¶").strip()))
            self._heading = None


def _documented_build_environment() -> dict[str, str]:
    """The variables of the build command the docs give (they silence two banners)."""
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    command = next(line for line in index.splitlines() if "mkdocs build --strict" in line)
    pairs = [word.split("=", 1) for word in command.split() if "=" in word]
    assert pairs, command
    return dict(pairs)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    pytest.importorskip("mkdocs", reason="the site is built with the docs extra")
    out = tmp_path_factory.mktemp("site")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MDFRAMES_")}
    env.update(_documented_build_environment())
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out, done.stdout + done.stderr


def _read(site_dir: Path, page: str) -> _Page:
    parser = _Page()
    parser.feed((site_dir / page).read_text(encoding="utf-8"))
    return parser


def _target(site_dir: Path, page: str, link: str) -> tuple[Path, str] | None:
    """The file (and fragment) a link of ``page`` points to; None when it leaves the site."""
    parts = urlsplit(link)
    if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
        return None
    path = (site_dir / page).parent / unquote(parts.path) if parts.path else site_dir / page
    if path.is_dir():
        path = path / "index.html"
    return path.resolve(), parts.fragment


@pytest.mark.docs_site
def test_documented_build_command_prints_no_third_party_banner(site: tuple[Path, str]) -> None:
    _, output = site
    for banner in ("ProperDocs", "Zensical", "MkDocs 2.0", "version 2"):
        assert banner not in output


@pytest.mark.docs_site
def test_built_pages_have_their_headings(site: tuple[Path, str]) -> None:
    site_dir, _ = site
    index = _read(site_dir, "index.html").headings
    assert ("h1", "mdframes") in index
    for title in ("Two commands", "A first frame, offline", "Configuration"):
        assert ("h2", title) in index
    page = docgen.page_path("insider_trading").removesuffix(".md") + "/index.html"
    dataset = _read(site_dir, page).headings
    assert ("h1", "insider_trading") in dataset and ("h2", "Columns") in dataset
    plots = _read(site_dir, "plots/index.html").headings
    for title in ("Forecast fan", "Sentiment", "Put/call ratio", "Insider activity"):
        assert ("h2", title) in plots
    assert ("h2", "Congress trades") in plots and ("h2", "App ratings") in plots
    recipes = _read(site_dir, "recipes/index.html").headings
    for title in ("Wide: dates by symbols", "MultiIndex: symbol and date", "Weekly bins"):
        assert ("h2", title) in recipes


@pytest.mark.docs_site
def test_plots_page_shows_a_rendered_picture_per_chart(site: tuple[Path, str]) -> None:
    site_dir, _ = site
    images = _read(site_dir, "plots/index.html").images
    names = {Path(str(img["src"])).name for img in images}
    for chart in plot.__all__:
        if chart.islower() and chart not in ("chart", "write_html"):  # the six charts
            assert f"{chart}.png" in names, chart
    # The gallery: md.plot.chart's picture and interactive page of every dataset it draws.
    from mdframes.plot.table import CHARTS

    page = (site_dir / "plots/index.html").read_text(encoding="utf-8")
    for name in CHARTS:
        slug = "chart-" + name.replace("/", "-").replace("_", "-")
        assert f"{slug}.png" in names, name
        assert f'<iframe src="{slug}.html"' in page, name
        interactive = (site_dir / "plots" / f"{slug}.html").read_text(encoding="utf-8")
        assert 'src="plotly.min.js"' in interactive and "Plotly.newPlot" in interactive
    assert (site_dir / "plots/plotly.min.js").stat().st_size > 1_000_000  # one shared copy
    for img in images:
        assert img.get("alt"), img
        found = _target(site_dir, "plots/index.html", str(img["src"]))
        assert found is not None and found[0].is_file(), img
        data = found[0].read_bytes()
        # A gallery chart may be small (a screener whose rows all share one value: one bar).
        least = 4_000 if Path(str(img["src"])).name.startswith("chart-") else 10_000
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > least


@pytest.mark.docs_site
def test_no_stray_summary_page_and_no_internals_on_the_loaders_page(
    site: tuple[Path, str],
) -> None:
    site_dir, _ = site
    assert not any("SUMMARY" in p.as_posix() for p in site_dir.rglob("*.html"))
    text = (site_dir / "reference/loaders/index.html").read_text(encoding="utf-8")
    for internal in ("griffe", "factory", "pipeline", "_window_loader", "PROGRESS_THRESHOLD"):
        assert internal not in text, internal
    ids = _read(site_dir, "reference/loaders/index.html").ids
    from mdframes import loaders

    for name in loaders.__all__:
        assert f"mdframes.loaders.{name}" in ids, name
    assert "doctest" not in "".join(p.read_text(encoding="utf-8") for p in site_dir.rglob("*.html"))
    # A doctest outside an Examples section is fenced code, not ">>>" read as nested quotes.
    for page in (site_dir / "reference").rglob("*.html"):
        assert "<blockquote>" not in page.read_text(encoding="utf-8"), page


@pytest.mark.docs_site
def test_no_broken_internal_links(site: tuple[Path, str]) -> None:
    site_dir, _ = site
    # 404.html is served for any missing path, so its links are absolute by design.
    pages = {p.relative_to(site_dir).as_posix() for p in site_dir.rglob("*.html")} - {"404.html"}
    parsed = {page: _read(site_dir, page) for page in pages}
    broken = []
    checked = 0
    for page, parser in parsed.items():
        for link in parser.links + [str(i.get("src")) for i in parser.images]:
            found = _target(site_dir, page, link)
            if found is None:
                continue
            path, fragment = found
            checked += 1
            if not path.is_file():
                broken.append(f"{page}: {link}")
            elif fragment and path.suffix == ".html":
                target = parsed.get(path.relative_to(site_dir.resolve()).as_posix())
                if target is not None and fragment not in target.ids:
                    broken.append(f"{page}: {link} (no #{fragment})")
    assert checked > 500
    assert broken == []
