"""The edition as readers meet it: its record pages (manifest and changes), the edition selector only where
editions are published, and the banner of an edition that is not the newest (overrides/main.html).

- The build renders two pages of the site's theme, `manifest.md` and `changes.md`, each holding a marked
  place (`<!-- edition-record -->`) that says the build is not published. `make publish` fills that place
  with the manifest's tables (runs, figures, claims, Metrics rows) and the changes since the previous
  edition, after the build (the manifest holds the hashes of the built pages, so it cannot be part of
  them); `manifest.json` stays beside them for machines.
- The edition selector (Material's `extra.version`, read from mike's `versions.json` one level up) is
  configured only when the build is for a published edition (its settings say so: `make publish`, and
  `make verify`): an unpublished build has no selector leading to an edition folder that does not exist.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from build_tools.core._layout import CHANGES_PAGE, MANIFEST_PAGE

MARK_START, MARK_END = "<!-- edition-record -->", "<!-- /edition-record -->"
_MARKED = re.compile(re.escape(MARK_START) + r".*?" + re.escape(MARK_END), re.S)


def version_settings(published: bool) -> dict[str, object]:
    """What `extra` gets for the edition selector (only in a published edition's build): mike's versions, `latest`
    the newest."""
    return {"version": {"provider": "mike", "default": "latest"}} if published else {}


def record_pages(edition: str) -> dict[str, str]:
    """The two record pages as the build renders them: a title, and the place publishing fills."""
    # Out of the search index: the build's index holds the unpublished text, not what publishing writes.
    meta = "---\nsearch:\n  exclude: true\n---\n\n"
    unpublished = ("This build is not a published edition, so it has no {what} yet: `make publish` writes it "
                   "here, and `manifest.json` beside it for machines.")
    return {
        MANIFEST_PAGE: meta + "\n".join([
            f"# Edition {edition}: what it is built from", "",
            "The runs, figures, claims and Metrics rows of this edition, each with the hash that lets anyone "
            "rebuild and compare it (`make verify`).", "",
            MARK_START, "", unpublished.format(what="manifest"), "", MARK_END, ""]),
        CHANGES_PAGE: meta + "\n".join([
            f"# Edition {edition}: what changed", "",
            "What changed since the previous edition: runs added, removed or changed, claims whose verdict or "
            "observed values moved, figures whose data or image changed, and Metrics rows whose values changed.",
            "", MARK_START, "", unpublished.format(what="list of changes"), "", MARK_END, ""]),
    }


def fill(page: Path, markdown_text: str, marks: tuple[str, str] = (MARK_START, MARK_END)) -> bool:
    """Put a record (Markdown) into a built page's marked place (the record pages' unless `marks` says another);
    False when the page has none."""
    import markdown

    if not page.is_file():
        return False
    text = page.read_text(encoding="utf-8")
    start, end = marks
    marked = _MARKED if marks == (MARK_START, MARK_END) else re.compile(re.escape(start) + r".*?" + re.escape(end),
                                                                         re.S)
    if not marked.search(text):
        return False
    body = markdown.markdown(_without_title(markdown_text), extensions=["tables", "build_tools.website.markdown_wbr"])
    filled = marked.sub(lambda _: f"{start}\n{body}\n{end}", text, count=1)
    page.write_text(filled, encoding="utf-8")
    return True


def _without_title(markdown_text: str) -> str:
    """The record without its first heading: the themed page has its own."""
    lines = markdown_text.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join(lines)


def write_record(page: Path, title: str, markdown_text: str) -> None:
    """Fill the themed page the build made; a site built without one gets a standalone page instead."""
    from build_tools.editions import _manifest

    if not fill(page, markdown_text):
        page.write_text(_manifest.html_page(html.escape(title), markdown_text), encoding="utf-8")


def first_edition_changes(edition: str) -> str:
    return f"# Edition {edition}: what changed\n\nThis is the first published edition: there is nothing to compare.\n"
