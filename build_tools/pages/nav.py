"""Each page's title and place in the nav, and `.manual.yml`, what the site stage adds to mkdocs.yml: the nav
in chapter order, the edition stamp and the provenance note of the footer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from build_tools.core._escape import html_text
from build_tools.core._layout import CHAPTER, CLAIM_HEALTH_PAGE, FIGURES_PAGE, INDEX_PAGE, RECORD_PAGES, SITE_SETTINGS
from build_tools.core._types import Stamp
from build_tools.pages import edition_pages
from build_tools.pages.wording import Provenance

FRONT_MATTER = "Front matter"  # the nav's name for index.md, whose heading repeats the site name


@dataclass(frozen=True)
class Page:
    name: str  # file name in pages/
    title: str  # its first heading, for the nav


def write_page(pages: Path, name: str, text: str) -> Page:
    pages.mkdir(parents=True, exist_ok=True)
    (pages / name).write_text(text, encoding="utf-8")
    return Page(name, FRONT_MATTER if name == INDEX_PAGE else page_title(text, name))


def page_title(text: str, name: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return Path(name).stem


def numbered(text: str, name: str) -> str:
    """A chapter's first heading with its number, as its figures are numbered: '# 5. Heat' in 05-heat.md."""
    match = CHAPTER.match(name)
    if not match:
        return text
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line.startswith("# "):
            lines[index] = f"# {int(match.group(1))}. {line[2:].strip()}"
            break
    return "\n".join(lines)


def nav_order(written: Sequence[Page]) -> list[Page]:
    """index first, the chapters by number (the Metrics page is chapter 6), the Index of figures, Claim health,
    then the edition's record pages (manifest, changes)."""
    def key(page: Page) -> tuple[int, str]:
        if page.name == INDEX_PAGE:
            return (0, "")
        if page.name in RECORD_PAGES:  # the edition's record: manifest, then changes
            return (3, str(RECORD_PAGES.index(page.name)))
        after_chapters = {FIGURES_PAGE: "0", CLAIM_HEALTH_PAGE: "1"}
        return (2, after_chapters[page.name]) if page.name in after_chapters else (1, page.name)
    return sorted(written, key=key)


def write_site_settings(pages: Path, stamp: Stamp, source: Provenance, nav: Sequence[Page], *,
                        published: bool = False) -> None:
    """What the site stage merges into mkdocs.yml: computed, so it cannot live in the config file."""
    settings = {
        "copyright": stamp.text,
        "extra": {"provenance": source.kind, "provenance_note": source.footer(), "edition": stamp.edition,
                  **edition_pages.version_settings(published)},
        # Material prints nav titles into the HTML as they are: escaped here.
        "nav": [{html_text(page.title): page.name} for page in nav],
    }
    (pages / SITE_SETTINGS).write_text(yaml.safe_dump(settings, sort_keys=False, allow_unicode=True, width=1000),
                                       encoding="utf-8")
