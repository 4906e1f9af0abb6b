"""The site stage: mkdocs --strict turns every warning into a failure that names the page; a no-op rebuild
is skipped; the built site asks nothing of any outside host."""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from build_tools import cli
from build_tools.core._exceptions import EXIT_BAD_INPUT, SiteError
from build_tools.website import site
from tests.conftest import ROOT

RUNS = len(list((ROOT / "runs").glob("*/run.yaml")))  # every shipped run is a synthesized example
STAMP = "Miles radixark/miles:latest, Miles main of 2026-10-15 · 08752a1 · 2026-10-15 · Edition 2026.10"


@pytest.fixture
def small_project(tmp_path: Path) -> Path:
    """The project's site config and theme overrides, with two tiny pages."""
    shutil.copy2(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "overrides", tmp_path / "overrides")
    pages = tmp_path / "build" / "docs"
    (pages / "assets").mkdir(parents=True)
    (pages / "assets" / "palette.css").write_text(":root {}\n", encoding="utf-8")
    (pages / "index.md").write_text("# Home\n\nSee [the chapter](01-one.md#a-part).\n", encoding="utf-8")
    (pages / "01-one.md").write_text("# One\n\n## A part\n\nText.\n", encoding="utf-8")
    return tmp_path


def _build(root: Path) -> bool:
    return site.build_site(root / "mkdocs.yml", root / "build" / "docs", root / "site")


def test_a_clean_build_then_a_no_op(small_project):
    assert _build(small_project) is True
    assert (small_project / "site" / "01-one.html").is_file()
    before = (small_project / "site" / "index.html").stat().st_mtime_ns
    assert _build(small_project) is False  # nothing changed: mkdocs is not run, site/ is kept
    assert (small_project / "site" / "index.html").stat().st_mtime_ns == before
    (small_project / "build" / "docs" / "01-one.md").write_text("# One\n\n## A part\n\nNew.\n", encoding="utf-8")
    assert _build(small_project) is True


def test_relative_paths_build_into_the_named_site(small_project, monkeypatch):
    # mkdocs resolves a relative site_dir against the config file's folder, not the working directory.
    monkeypatch.chdir(small_project)
    assert site.build_site(Path("mkdocs.yml"), Path("build/docs"), Path("site")) is True
    assert (small_project / "site" / "01-one.html").is_file()


def test_strict_build_fails_on_a_broken_link_naming_the_page(small_project):
    _build(small_project)
    (small_project / "build" / "docs" / "index.md").write_text(
        "# Home\n\nSee [gone](02-two.md) and [no part](01-one.md#no-such-part).\n", encoding="utf-8")
    with pytest.raises(SiteError) as caught:
        _build(small_project)
    message = str(caught.value)
    assert message.splitlines()[0] == "mkdocs build --strict found 2 problems in the pages:"
    assert "Doc file 'index.md' contains a link '02-two.md', but the target is not found" in message
    assert "Doc file 'index.md' contains a link '01-one.md#no-such-part', but the doc '01-one.md' does not " \
           "contain an anchor '#no-such-part'" in message
    assert caught.value.exit_code == EXIT_BAD_INPUT
    # The failed build left the last good site in place, and no staging folder behind.
    assert (small_project / "site" / "index.html").is_file()
    assert not [p for p in small_project.iterdir() if p.name.startswith(".site-")]


def test_a_page_missing_from_the_nav_fails(small_project):
    (small_project / "build" / "docs" / ".manual.yml").write_text("nav:\n- Home: index.md\n", encoding="utf-8")
    with pytest.raises(SiteError, match="01-one.md"):
        _build(small_project)


def test_the_cli_reports_a_site_failure_without_a_traceback(small_project, monkeypatch, capsys):
    def fail(root: Path, settings: object = None) -> None:
        raise SiteError(["Doc file 'index.md' contains a link 'x.md', but the target is not found."])

    monkeypatch.setattr("build_tools.build.build", fail)
    assert cli.main(["--root", str(small_project), "build"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "ERROR mkdocs build --strict found 1 problem" in err and "Traceback" not in err


def test_warnings_name_the_source_file(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "03-x.md").write_text("# X\n", encoding="utf-8")
    message = "Doc file '03-x.md' contains a link 'y.md', but the target is not found."
    assert site._with_source(message, tmp_path).endswith("(rendered from docs/03-x.md)")
    assert "templates/metrics.md.j2" in site._with_source(message.replace("03-x", "06-metrics"), tmp_path)


# --- the built manual ---------------------------------------------------------------------------


class _Resources(HTMLParser):
    """Every URL a page loads by itself: scripts, stylesheets, icons, fonts, images, frames, media."""

    LOADS = {"script": "src", "img": "src", "iframe": "src", "source": "src", "audio": "src", "video": "src",
             "embed": "src", "object": "data", "link": "href"}

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        attribute = self.LOADS.get(tag)
        # <link rel="canonical"> or an alternate is a reference, not something the browser fetches.
        if tag == "link" and not {"stylesheet", "icon", "preload", "prefetch", "preconnect", "manifest",
                                  "modulepreload"} & set((values.get("rel") or "").split()):
            return
        if attribute and values.get(attribute):
            self.urls.append(values[attribute] or "")
        if values.get("srcset"):
            self.urls += [part.split()[0] for part in (values["srcset"] or "").split(",") if part.strip()]
        self.urls += re.findall(r"url\(\s*['\"]?([^'\")]+)", values.get("style") or "")


def _outside(url: str) -> bool:
    return bool(re.match(r"^(https?:)?//", url.strip(), flags=re.I))


def test_built_site_loads_nothing_from_outside(built_manual):
    site_dir = built_manual / "site"
    pages = sorted(site_dir.rglob("*.html"))
    assert len(pages) >= 11
    found = []
    for page in pages:
        parser = _Resources()
        parser.feed(page.read_text(encoding="utf-8"))
        found += [f"{page.relative_to(site_dir)}: {url}" for url in parser.urls if _outside(url)]
    for sheet in site_dir.rglob("*.css"):
        urls = re.findall(r"(?:url\(\s*['\"]?|@import\s+['\"])([^'\")]+)", sheet.read_text(encoding="utf-8"))
        found += [f"{sheet.relative_to(site_dir)}: {url}" for url in urls if _outside(url)]
    assert found == []


def test_every_page_has_the_stamp_and_the_provenance_note(built_manual):
    for page in sorted((built_manual / "site").glob("*.html")):
        text = page.read_text(encoding="utf-8")
        assert STAMP in text, page.name
        assert f"Built from {RUNS} synthesized example runs, not measurements." in text, page.name


def test_nav_is_in_chapter_order(built_manual):
    import yaml

    config = yaml.safe_load((built_manual / "build" / "mkdocs.yml").read_text(encoding="utf-8"))
    files = [next(iter(item.values())) for item in config["nav"]]
    assert files[0] == "index.md" and files[-4:] == ["figures.md", "claim-health.md", "manifest.md", "changes.md"]
    assert [name[:2] for name in files[1:-4]] == ["01", "02", "03", "04", "05", "06", "07", "08"]
    assert files[6] == "06-metrics.md"
    titles = [next(iter(item)) for item in config["nav"]]
    assert titles[1] == "1. A step on one GPU" and titles[6] == "6. Metrics"  # numbered as the figures are


def test_no_op_rebuild_skips_mkdocs(built_manual):
    pages, site_dir = built_manual / "build" / "docs", built_manual / "site"
    before = (site_dir / "index.html").stat().st_mtime_ns
    assert site.build_site(built_manual / "mkdocs.yml", pages, site_dir) is False
    assert (site_dir / "index.html").stat().st_mtime_ns == before


def _tree(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file()}


def test_templates_compiled_by_an_earlier_build_of_the_process_build_the_same_site(built_manual, tmp_path,
                                                                                      monkeypatch):
    """make serve's rebuilds take the theme's templates as the process compiled them (site._CompiledTemplates):
    the second build compiles none, and its site is the bytes of one built with every template compiled afresh."""
    import jinja2

    config = site.write_config(built_manual / "mkdocs.yml", built_manual / "build" / "docs", tmp_path / "unused",
                               tmp_path / "mkdocs.yml")
    compiled: list[str] = []
    real = jinja2.Environment.compile

    def counted(self, source, name=None, filename=None, raw=False, defer_init=False):
        compiled.append(str(name))
        return real(self, source, name, filename, raw, defer_init)

    monkeypatch.setattr(jinja2.Environment, "compile", counted)
    monkeypatch.setattr(site, "_compiled", None)  # a process that has compiled nothing yet
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        site.run_mkdocs(config, tmp_path / name)
        if name == "first":
            first_compiled = len(compiled)
    assert first_compiled > 10 and len(compiled) == first_compiled  # the second compiled no template
    monkeypatch.setattr(site, "_compiled", None)
    (tmp_path / "afresh").mkdir()
    site.run_mkdocs(config, tmp_path / "afresh")
    assert len(compiled) == 2 * first_compiled
    assert _tree(tmp_path / "second") == _tree(tmp_path / "afresh") == _tree(tmp_path / "first")


def test_an_edited_template_is_compiled_again(tmp_path):
    """A template kept compiled is taken only while its source is the same (an override edited under make serve)."""
    import jinja2

    cache = site._CompiledTemplates().cache
    (tmp_path / "page.html").write_text("one {{ x }}")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(tmp_path)), bytecode_cache=cache)
    assert env.get_template("page.html").render(x=1) == "one 1"
    (tmp_path / "page.html").write_text("two {{ x }}")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(tmp_path)), bytecode_cache=cache)
    assert env.get_template("page.html").render(x=1) == "two 1"
