"""The print edition: the whole manual as one PDF, `site/<edition>.pdf`, made by WeasyPrint from the built HTML.

`make pdf` (`manual pdf`) builds the manual and writes it; every `make publish` (and the rebuild of `make verify`)
writes it as part of the build, so the manifest lists it with its sha256. The PDF holds a title page with the
edition stamp and where the data comes from, a table of contents with page numbers, then the front matter, the
chapters (the figures as vectors, with their numbers and captions; the Metrics tables) and the Index of figures, in
the order of the site's navigation; every page carries the stamp, the provenance line and its number. The Index of
figures gives each figure's page, and every "Figure 5.1" of the text is followed by its page (CSS target-counter);
what only a web page has (a figure's CSV, the edition's record links, copy buttons) is left out, and an outside link
prints its address. It is the same bytes on every rebuild: its dates are the edition's (or SOURCE_DATE_EPOCH's), its
identifier a hash of its source, and only files of the built site are read (no outside request): every address the
book would load from elsewhere is refused before WeasyPrint runs (`boundary.outside_site`), and its URL fetcher
serves only regular files inside the site (`site_fetcher`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import html
import mimetypes
import re
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from build_tools.core._exceptions import (
    PrintEditionError,
    Problem,
    display_path,
    page_without_article,
    site_not_built,
    weasyprint_missing,
)
from build_tools.core._layout import RECORD_PAGES, SITE_SETTINGS, Layout
from build_tools.core._settings import library_environment, print_environment
from build_tools.core._staging import atomic_file
from build_tools.core._yaml import load_yaml
from build_tools.website import boundary

_ARTICLE = re.compile(r'<article class="md-content__inner md-typeset">(.*?)</article>', re.S)


def pdf_name(edition: str) -> str:
    return f"{edition}.pdf"


def write_pdf(pages: Path, site: Path, *, epoch: int | None = None,
              step: Callable[[str], AbstractContextManager[object]] | None = None) -> Path:
    """site/<edition>.pdf from the built site, dated epoch when given (an edition's); returns its path. Every address
    the book would load from outside the site is refused first, all at once (PrintEditionError, no PDF written); the
    URL fetcher refuses them too. `step(name)` wraps each of its two long steps (laying the book out, writing the
    file): `make pdf` shows them as progress (build_tools/core/_progress.py)."""
    html_document = _weasyprint_html()
    settings, document = _book_document(pages, site, epoch)
    target = site / pdf_name(str(settings["extra"]["edition"]))
    fetcher = site_fetcher(site)
    identifier = hashlib.sha256(document.encode("utf-8")).hexdigest()[:32].encode()
    stage = step or (lambda name: nullcontext())
    # Replaced only when whole and nothing was refused; the embedded fonts dated by the edition (fontTools reads the
    # date from the environment only), else by the time of printing.
    with atomic_file(target) as written, library_environment(print_environment(epoch)):
        # What HTML.write_pdf does, in its two steps: render with the options, then write with them.
        from weasyprint import DEFAULT_OPTIONS

        options = {**DEFAULT_OPTIONS, "pdf_identifier": identifier, "uncompressed_pdf": False}
        with stage("Laying out the print edition"):
            laid_out = html_document(string=document, base_url=str(site.resolve()) + "/",
                                     url_fetcher=fetcher).render(**options)
        with stage(f"Writing {display_path(target)} ({len(laid_out.pages)} pages)"):
            laid_out.write_pdf(str(written), **options)
        if fetcher.refused:
            raise PrintEditionError([Problem(display_path(site), None, None, f"WeasyPrint asked for {refused}: the "
                                             "print edition reads only the files of the built site")
                                     for refused in fetcher.refused])
    return target


def lay_out(pages: Path, site: Path) -> Any:
    """The book laid out by WeasyPrint as write_pdf prints it, its pages of boxes (weasyprint.Document), written
    nowhere: what lands on which page, and where, for the tests of the print layout."""
    html_document = _weasyprint_html()
    _, document = _book_document(pages, site, None)
    return html_document(string=document, base_url=str(site.resolve()) + "/", url_fetcher=site_fetcher(site)).render()


def _weasyprint_html() -> Any:
    try:
        from weasyprint import HTML
    except (ImportError, OSError) as error:  # OSError: pango, which WeasyPrint loads, is not installed
        raise weasyprint_missing(str(error).splitlines()[0]) from None
    return HTML


def _book_document(pages: Path, site: Path, epoch: int | None) -> tuple[dict[str, Any], str]:
    """The site's settings and the book as one HTML document, every address it would load from outside the site
    refused first (PrintEditionError)."""
    settings_file = pages / SITE_SETTINGS  # the nav, stamp and provenance note the render stage wrote
    settings = load_yaml(settings_file.read_text(encoding="utf-8")) if settings_file.is_file() else None
    if not settings or not (site / "index.html").is_file():
        raise site_not_built(site)
    sections = book_sections(site, settings)
    problems = boundary.outside_site(_scanned(site, settings, sections), site)
    if problems:
        raise PrintEditionError(problems)
    return settings, book(site, settings, sections, epoch)


def site_fetcher(site: Path) -> Any:
    """WeasyPrint's URL fetcher for the book: it serves only regular files inside site, after resolving their
    links and `..` (boundary.read_site_file), and refuses every other address, keeping each in `refused`.
    data: is refused too: WeasyPrint's own stylesheets are strings, and the manual names no data: address."""
    from weasyprint import URLFetcher
    from weasyprint.urls import URLFetcherResponse  # type: ignore[import-untyped]

    class SiteFetcher(URLFetcher):  # type: ignore[misc]  # WeasyPrint has no type hints
        def __init__(self) -> None:
            # A refusal is an exception WeasyPrint catches and logs; the build reads `refused` once it is done.
            super().__init__(allowed_protocols=("file",), fail_on_errors=False)
            self.refused: list[str] = []

        def fetch(self, url: str, headers: Any = None) -> Any:
            try:
                body = boundary.read_site_file(url, site)
            except boundary.Refused as refused:
                self.refused.append(f"{boundary.quoted(url)}, {refused}")
                raise
            kind = mimetypes.guess_type(urlsplit(url).path)[0] or "application/octet-stream"
            return URLFetcherResponse(url, body, {"Content-Type": kind})

    return SiteFetcher()


def book_sections(site: Path, settings: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(title, page name, the page's article made part of the book) of every page of the book, in nav order."""
    entries = [(str(title), str(name)) for item in settings.get("nav", []) for title, name in item.items()
               if name not in RECORD_PAGES]  # filled at publishing, not part of the book
    keys = {Path(name).stem for _, name in entries}
    sections = []
    for title, name in entries:
        page = site / (Path(name).stem + ".html")
        match = _ARTICLE.search(page.read_text(encoding="utf-8")) if page.is_file() else None
        if not match:
            raise page_without_article(page)
        sections.append((title, name, _local(match.group(1), Path(name).stem, keys)))
    return sections


def _scanned(site: Path, settings: dict[str, Any], sections: list[tuple[str, str, str]]) -> list[
        tuple[str, str, list[str]]]:
    """What the book loads from, for boundary.outside_site: each page's article named by its source (the
    chapter, with its lines), and the rest of the book (title page, contents, style) by the files it comes from."""
    layout = Layout(site.parent)
    scanned = []
    for _, name, body in sections:
        source = layout.page_source(name)
        chapter = layout.docs / name
        lines = chapter.read_text(encoding="utf-8", errors="replace").splitlines() if source == f"docs/{name}" else []
        scanned.append((source or f"{site.name}/{Path(name).stem}.html", body, lines))
    frame = book(site, settings, [])
    scanned.append((f"edition.yml and {site.name}/assets/palette.css (the title page and style)", frame, []))
    return scanned


def book(site: Path, settings: dict[str, Any], sections: list[tuple[str, str, str]], epoch: int | None = None) -> str:
    """The whole manual as one HTML document, ready for WeasyPrint."""
    extra = settings.get("extra", {})
    stamp, note = str(settings.get("copyright", "")), str(extra.get("provenance_note", ""))
    pages, contents = [], []
    for title, name, body in sections:
        key = Path(name).stem
        pages.append(f'<section class="page" id="{key}">\n{body}\n</section>')
        shown = "Front matter" if name == "index.md" else title
        contents.append(f'<li><a href="#{key}">{html.escape(shown)}</a></li>')
    date = _date(str(settings.get("extra", {}).get("edition", "")), stamp, epoch)
    title_page = (
        '<section class="title">\n<p class="kind">A field manual</p>\n'
        f"<h1 class=\"book\">{html.escape(_site_name(site))}</h1>\n"
        f'<p class="what">{html.escape(_description(site))}</p>\n'
        f'<p class="stamp">{html.escape(stamp)}</p>\n<p class="note">{html.escape(note)}</p>\n</section>\n'
        '<nav class="contents">\n<h2 class="contents-title">Contents</h2>\n<ol>\n' + "\n".join(contents)
        + "\n</ol>\n</nav>\n")
    return (f"<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(_site_name(site))}, edition {html.escape(str(extra.get('edition', '')))}</title>\n"
            f'<meta name="description" content="{html.escape(_description(site))}">\n'
            f'<meta name="dcterms.created" content="{date}">\n<meta name="dcterms.modified" content="{date}">\n'
            f"<style>\n{_palette(site)}{_stylesheet(stamp, note)}\n</style>\n</head>\n<body>\n{title_page}"
            + "\n".join(pages) + "\n</body>\n</html>\n")


def _date(edition: str, stamp: str, epoch: int | None) -> str:
    """The PDF's date: the edition's (every edition build has one), else the stamp's date."""
    if epoch is not None:
        return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    dates = re.findall(r"[0-9]{4}-[0-9][0-9]-[0-9][0-9]", stamp)
    return f"{dates[-1]}T00:00:00Z" if dates else "2000-01-01T00:00:00Z"


def _meta(site: Path, pattern: str) -> str:
    match = re.search(pattern, (site / "index.html").read_text(encoding="utf-8"))
    return html.unescape(match.group(1)) if match else ""


def _site_name(site: Path) -> str:
    title = _meta(site, r"<title>(.*?)</title>")
    return title.split(" - ")[-1] if title else "The manual"


def _description(site: Path) -> str:
    return _meta(site, r'<meta name="description" content="([^"]*)"')


def _local(body: str, key: str, keys: set[str]) -> str:
    """A page's article made part of the book: its ids prefixed with the page, links between pages made links
    inside the book, the permalink marks and the zoom link removed (the figure itself stays)."""
    body = re.sub(r'<a class="headerlink"[^>]*>.*?</a>', "", body, flags=re.S)
    body = re.sub(r'<a class="manual-zoom"[^>]*>(.*?)</a>', r"\1", body, flags=re.S)
    # A file of the site (a figure's CSV) is not in the PDF: its link text stays, the link goes.
    body = re.sub(r'<a href="(?:figures|assets)/[^"]*">(.*?)</a>', r"\1", body, flags=re.S)
    body = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{key}--{m.group(1)}"', body)

    def link(match: re.Match[str]) -> str:
        target = html.unescape(match.group(1))
        inner = re.match(r"^([\w.-]+)\.html(?:#(.*))?$", target)
        if target.startswith("#"):
            return f'href="#{key}--{target[1:]}"'
        if inner and inner.group(1) in keys:
            page, anchor = inner.group(1), inner.group(2)
            return f'href="#{page}--{anchor}"' if anchor else f'href="#{page}"'
        return match.group(0)

    body = re.sub(r'href="([^"]*)"', link, body)
    # A link to a page the book leaves out (the edition's record, the PDF itself): its text stays.
    body = re.sub(r'<a href="(?!#)(?!https?:)[^"]*">(.*?)</a>', r"\1", body, flags=re.S) if keys else body
    return _page_numbers(body)


def _page_numbers(body: str) -> str:
    """Where a figure is named, the page it is on (CSS target-counter): after each "Figure 5.1" of the text,
    and in a page column of the Index of figures, after each claim."""
    body = re.sub(r'<a href="(#[^"]+)">(Figure [0-9]+\.[0-9]+)</a>', r'<a class="manual-xref" href="\1">\2</a>', body)
    body = re.sub(r"(<th>Fig\.</th>\s*<th>[^<]*</th>)", r'\1<th class="manual-page">Page</th>', body)
    return re.sub(r'(<td><a href="(#[^"]+)">[0-9]+\.[0-9]+</a></td>\s*<td>.*?</td>)',
                  r'\1<td class="manual-page"><a href="\2"></a></td>', body, flags=re.S)


def _palette(site: Path) -> str:
    """The role colours (the palette legend's swatches read them)."""
    css = site / "assets" / "palette.css"
    return css.read_text(encoding="utf-8") + "\n" if css.is_file() else ""


# What a CSS string of the book's stylesheet keeps as it is: letters, digits, spaces and the punctuation a stamp
# or a note is written with, and any printable character beyond ASCII. Everything else (a quote, a backslash,
# braces, `<`, `;`, every line break CSS knows: \n, \r, \f) is written as a CSS escape, so a value from
# edition.yml or the provenance note can neither end its string nor its rule, nor close the <style>.
_CSS_STRING_KEPT = re.compile(r"[A-Za-z0-9 .,:·/()+=#%_@'!?-]")


def _css_string(text: str) -> str:
    """Text as one CSS string, every character outside _CSS_STRING_KEPT escaped as `\\hex ` (CSS Syntax 4.3.7)."""
    return '"' + "".join(character if _CSS_STRING_KEPT.fullmatch(character)
                         or (ord(character) > 0x7F and character.isprintable())
                         else f"\\{ord(character):x} " for character in text) + '"'


def _stylesheet(stamp: str, note: str) -> str:
    return f"""
@page {{
  size: A4;
  margin: 20mm 18mm 22mm 18mm;
  @top-right {{ content: {_css_string(note)}; font-size: 7.5pt; color: #555; }}
  @bottom-left {{ content: {_css_string(stamp)}; font-size: 7.5pt; color: #555; }}
  @bottom-right {{ content: counter(page); font-size: 9pt; }}
}}
@page :first {{ @top-right {{ content: none; }} @bottom-right {{ content: none; }} }}
html {{ font-family: "DejaVu Sans", "Liberation Sans", sans-serif; font-size: 10pt; line-height: 1.45;
        color: #111; }}
section.title {{ page: cover; text-align: left; padding-top: 60mm; break-after: page; }}
section.title .kind {{ text-transform: uppercase; letter-spacing: 0.1em; color: #555; }}
section.title h1.book {{ font-size: 28pt; margin: 0 0 6mm; font-weight: 600; }}
section.title .what {{ font-size: 13pt; max-width: 140mm; }}
section.title .stamp {{ margin-top: 30mm; font-weight: 600; }}
nav.contents {{ break-after: page; }}
nav.contents ol {{ list-style: none; padding: 0; }}
nav.contents li {{ margin: 2mm 0; }}
nav.contents a {{ color: inherit; text-decoration: none; }}
nav.contents a::after {{ content: leader(".") target-counter(attr(href), page); }}
section.page {{ break-before: page; }}
h1 {{ font-size: 20pt; font-weight: 600; margin: 0 0 5mm; bookmark-level: 1; }}
h2 {{ font-size: 14pt; font-weight: 600; margin: 7mm 0 3mm; bookmark-level: 2; break-after: avoid; }}
h3 {{ font-size: 11pt; bookmark-level: 3; break-after: avoid; }}
a {{ color: #1a3a9c; }}
code {{ font-family: "DejaVu Sans Mono", monospace; font-size: 0.88em; background: #f2f2f2; padding: 0 0.15em; }}
pre {{ background: #f2f2f2; padding: 3mm; white-space: pre-wrap; font-size: 8.5pt; }}
pre code {{ background: none; padding: 0; }}
table {{ border-collapse: collapse; width: 100%; margin: 3mm 0 5mm; font-size: 9pt; }}
th, td {{ border: 0.5pt solid #bbb; padding: 1.5mm 2mm; text-align: left; vertical-align: top; }}
th {{ background: #eee; }}
tr {{ break-inside: avoid; }}
figure.manual-figure {{ margin: 5mm 0; break-inside: avoid; }}
figure.manual-figure img {{ width: 100%; height: auto; }}
figure.manual-figure .manual-dark {{ display: none; }}
figcaption {{ font-size: 9.5pt; margin-top: 2mm; }}
.manual-data::before, .manual-source::before {{ content: "· "; }}
details.manual-checked {{ font-size: 8pt; color: #333; border-left: 1pt solid #bbb; padding-left: 3mm;
                          margin-top: 2mm; }}
details.manual-checked summary {{ font-weight: 600; }}
.manual-needs {{ color: #555; }}
.admonition {{ border-left: 2pt solid #c90; padding: 1mm 4mm; margin: 4mm 0; background: #fff8e6; }}
.admonition-title {{ font-weight: 600; }}
.manual-swatch {{ display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.3em;
                  vertical-align: -0.1em; border: 0.4pt solid #555; }}
a.manual-xref::after {{ content: " (page " target-counter(attr(href), page) ")"; }}
td.manual-page, th.manual-page {{ text-align: right; white-space: nowrap; }}
td.manual-page a {{ color: inherit; text-decoration: none; }}
td.manual-page a::after {{ content: target-counter(attr(href), page); }}
/* The Index of figures on as few pages as its rows need (no page of three rows). */
section#figures table {{ font-size: 8.5pt; margin: 2mm 0 0; }}
section#figures th, section#figures td {{ padding: 0.8mm 1.5mm; }}
section#figures ul {{ margin: 1mm 0; }}
/* A launch command is never split over two pages, nor parted from the line that says whose it is. */
div.highlight, pre {{ break-inside: avoid; }}
div.highlight {{ break-before: avoid; }}
/* A note (Miles' guidance under a Metrics table) is read whole: its title never left at a page's foot. */
.admonition {{ break-inside: avoid; }}
/* The Claim health table (build_tools/pages/claim_health.py): its nine columns within A4's width, in a smaller type
   with narrower cells; the observed value and what is allowed may break inside a long name (a flag), a figure's
   name stays whole. Paper does not scroll: the hint a phone shows is left out. */
.manual-claim-health table {{ font-size: 7pt; line-height: 1.3; }}
.manual-claim-health th, .manual-claim-health td {{ padding: 0.8mm 1mm; }}
.manual-claim-health td:nth-child(1) {{ white-space: nowrap; }}
.manual-claim-health td:nth-child(5), .manual-claim-health td:nth-child(6) {{ overflow-wrap: anywhere; }}
/* What only a web page can do: the figure's CSV, the edition's record pages, the copy buttons, a scroll hint. */
.manual-data, .manual-web-only, .md-clipboard, .manual-scroll-hint {{ display: none; }}
a[href^="http"]::after {{ content: " <" attr(href) ">"; font-size: 0.85em; word-break: break-all; }}
ol.manual-contents {{ list-style-type: decimal; }}
"""
