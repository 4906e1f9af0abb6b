"""The engines the editions could move to after mkdocs-material's end of life, each building the same published
edition's pages as MkDocs 1.6 + Material: ProperDocs (the maintained fork of MkDocs 1.x; Material unchanged) and
Zensical (Material's successor). For each, compared with the mkdocs build: the text of every page, the search
index's entries, and the edition selector's configuration (maintaining/engine.md records the choice)."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from importlib.metadata import version
from pathlib import Path

import pytest

from build_tools.core._layout import Layout
from build_tools.core._settings import ENGINES, Settings
from build_tools.website import site as site_stage

pytest.importorskip("properdocs")
pytest.importorskip("zensical")

ALTERNATIVES = [engine for engine in ENGINES if engine != "mkdocs"]
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@pytest.fixture(scope="module")
def editions(built_manual: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The shared build's pages rendered as a published edition's (the edition selector on), each engine's site
    built from the same pages; the print edition left out (it is drawn from mkdocs' site, whatever the engine)."""
    from build_tools.build import build
    from build_tools.website import pdf

    root = tmp_path_factory.mktemp("engines") / "manual"
    shutil.copytree(built_manual, root, ignore=shutil.ignore_patterns("site", "inputs.key", "site.key"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pdf, "write_pdf", lambda *args, **kwargs: None)
        build(root, Settings(edition=True, quiet=True))
    layout = Layout(root)
    sites = {}
    for engine in ENGINES:  # each by the site stage alone, from the same pages
        sites[engine] = root.parent / f"site-{engine}"
        site_stage.build_site(layout.mkdocs_yml, layout.pages, sites[engine], Settings(engine=engine, edition=True))
    return sites


class _ArticleText(HTMLParser):
    """The words of a page's article (Material's `md-content__inner`), as a reader reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth and tag not in VOID:
            self.depth += 1
        elif not self.depth and tag == "article" and "md-content__inner" in (dict(attrs).get("class") or ""):
            self.depth = 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth and tag not in VOID:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.parts.append(data)


def page_text(path: Path) -> str:
    parser = _ArticleText()
    parser.feed(path.read_text(encoding="utf-8"))
    return " ".join(" ".join(parser.parts).split())


def selector(path: Path) -> object:
    """The edition selector's configuration: Material's `version` in the page's __config (mike's versions.json)."""
    found = re.search(r'<script id="__config" type="application/json">(.*?)</script>',
                      path.read_text(encoding="utf-8"), re.S)
    assert found, path
    return json.loads(found[1])["version"]


def search_entries(site: Path) -> list[tuple[str, str, str]]:
    """Each entry of the search index (MkDocs': search/search_index.json `docs`; Zensical's: search.json `items`)."""
    mkdocs_index = site / "search" / "search_index.json"
    if mkdocs_index.is_file():
        entries = json.loads(mkdocs_index.read_text(encoding="utf-8"))["docs"]
    else:
        entries = json.loads((site / "search.json").read_text(encoding="utf-8"))["items"]
    return [(entry["location"], entry["title"], " ".join(entry["text"].split())) for entry in entries]


def _pages(site: Path) -> list[str]:
    return sorted(path.name for path in site.glob("*.html"))


@pytest.mark.slow
@pytest.mark.parametrize("engine", ALTERNATIVES)
def test_every_page_reads_as_the_mkdocs_build(editions: dict[str, Path], engine: str) -> None:
    mkdocs, other = editions["mkdocs"], editions[engine]
    assert _pages(other) == _pages(mkdocs)
    assert len(_pages(mkdocs)) > 10
    for name in _pages(mkdocs):
        text = page_text(mkdocs / name)
        assert text, name  # the article was found
        assert page_text(other / name) == text, name


@pytest.mark.slow
@pytest.mark.parametrize("engine", ALTERNATIVES)
def test_the_search_index_holds_the_same_entries(editions: dict[str, Path], engine: str) -> None:
    entries = search_entries(editions["mkdocs"])
    assert any(location == "06-metrics.html#row-perf-step-time" for location, _, _ in entries)  # the rows too
    assert search_entries(editions[engine]) == entries


@pytest.mark.slow
@pytest.mark.parametrize("engine", ALTERNATIVES)
def test_the_edition_selector_is_configured_alike_on_every_page(editions: dict[str, Path], engine: str) -> None:
    for name in _pages(editions["mkdocs"]):
        assert selector(editions[engine] / name) == selector(editions["mkdocs"] / name) == {
            "provider": "mike", "default": "latest"}, name


@pytest.mark.slow
def test_properdocs_writes_mkdocs_bytes_but_its_name(editions: dict[str, Path]) -> None:
    """ProperDocs with Material is MkDocs 1.6 byte for byte: every file of the site, but the generator's name."""
    mkdocs, properdocs = editions["mkdocs"], editions["properdocs"]
    files = sorted(path.relative_to(mkdocs) for path in mkdocs.rglob("*") if path.is_file())
    assert files == sorted(path.relative_to(properdocs) for path in properdocs.rglob("*") if path.is_file())
    differ = [str(name) for name in files if (mkdocs / name).read_bytes() != (properdocs / name).read_bytes()]
    assert differ == [name for name in _pages(mkdocs)]  # the HTML pages alone, by their generator tag
    ours, theirs = f'content="mkdocs-{version("mkdocs")}, ', f'content="mkdocs-ProperDocs {version("properdocs")}, '
    for name in differ:
        page = (mkdocs / name).read_text(encoding="utf-8")
        assert ours in page, name
        assert (properdocs / name).read_text(encoding="utf-8") == page.replace(ours, theirs, 1), name
