"""Table rows in the site's search, one entry each, so that a result never runs one row into the next.

Material's search indexes a page by its headings: a table becomes one run of text under its heading, and a
snippet merges neighbouring rows (`perf/step_time the full step 152.6 s ... perf/rollout_time`). Two parts:

- a Python-Markdown extension (named in mkdocs.yml): each table is left out of Material's index
  (`data-search-exclude`) and each of its body rows gets an id (`row-perf-step-time`), a place a result can land;
- `index_rows(site)`, after mkdocs has built the site: one search entry per such row, its first cell the title
  and its other cells the text, after the entries of its page.

Zensical leaves the tables out of its own index as Material's does, and `index_rows` adds the rows to it too.
"""

from __future__ import annotations

import functools
import html
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from markdown import Extension, Markdown
from markdown.treeprocessors import Treeprocessor
from markdown.util import HTML_PLACEHOLDER_RE

EXCLUDE = "data-search-exclude"
ROW_PREFIX = "row-"


def row_id(text: str, used: set[str]) -> str:
    """'perf/step_time' -> 'row-perf-step-time', made unique on its page with -2, -3, ..."""
    base = ROW_PREFIX + (re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "row")
    found, count = base, 1
    while found in used:
        count += 1
        found = f"{base}-{count}"
    used.add(found)
    return found


class _Rows(Treeprocessor):
    def run(self, root: ET.Element) -> None:
        used: set[str] = set()
        for table in root.iter("table"):
            table.set(EXCLUDE, "")
            for body in table.iter("tbody"):
                for row in body.iter("tr"):
                    cells = list(row)
                    if cells:
                        text = HTML_PLACEHOLDER_RE.sub("", "".join(cells[0].itertext()))  # raw HTML: no id words
                        row.set("id", row_id(text, used))


class RowsExtension(Extension):
    def extendMarkdown(self, md: Markdown) -> None:  # noqa: N802 (Python-Markdown's name)
        # After markdown_wbr (15): the first cell's text is read whole, through its pieces.
        md.treeprocessors.register(_Rows(md), "manual_search_rows", 14)


def makeExtension(**kwargs: object) -> RowsExtension:  # noqa: N802 (Python-Markdown's entry point)
    return RowsExtension(**kwargs)


class _RowParser(HTMLParser):
    """The rows the extension gave an id (`row-...`), each as the text of its cells. Their tables are left out of
    the engine's index (Zensical drops the attribute that says so from its pages, and leaves tables out anyway)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[tuple[str, list[str]]] = []
        self._row: tuple[str, list[str]] | None = None
        self._cell: list[str] | None = None
        self._depth = 0  # inside a table

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table":
            self._depth += 1
        elif self._depth and tag == "tr" and (found.get("id") or "").startswith(ROW_PREFIX):
            self._row = (str(found["id"]), [])
        elif self._row is not None and tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self._depth:
            self._depth -= 1
        elif tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row[1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def page_rows(page_html: str) -> list[tuple[str, list[str]]]:
    return [(ident, list(cells)) for ident, cells in _rows_of(page_html)]


@functools.lru_cache(maxsize=64)
def _rows_of(page_html: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """A page's rows, kept for the process by its text: `make serve`'s rebuild parses again only the pages that
    changed."""
    parser = _RowParser()
    parser.feed(page_html)
    return tuple((ident, tuple(cells)) for ident, cells in parser.rows)


# Where each engine writes its search index, and the key of its list of entries: MkDocs' search plugin, Zensical.
INDEXES = ((Path("search", "search_index.json"), "docs"), (Path("search.json"), "items"))
# Zensical's entries say how deep each heading is (1 the page, 2 a section): a row is below its section.
ROW_LEVEL = 3


def index_rows(site: Path) -> None:
    """Add one entry per table row to the site's search index (MkDocs' or Zensical's, INDEXES), after its page's
    entries. A Zensical entry also carries its page's `path` (the navigation above it) and a level."""
    for relative, key in INDEXES:
        index_file = site / relative
        if index_file.is_file():
            index: dict[str, Any] = json.loads(index_file.read_text(encoding="utf-8"))
            index[key] = _with_rows(site, index[key])
            index_file.write_text(json.dumps(index, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")


def _with_rows(site: Path, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for position, entry in enumerate(entries):
        found.append(entry)
        page = str(entry["location"]).split("#")[0]
        following = entries[position + 1]["location"].split("#")[0] if position + 1 < len(entries) else None
        if following == page or not (site / page).is_file() or not page.endswith(".html"):
            continue
        zensical = {"level": ROW_LEVEL, "path": entry["path"], "tags": []} if "path" in entry else {}
        found += [{"location": f"{page}#{ident}", "title": html.escape(cells[0], quote=False),
                   "text": html.escape(" · ".join(cells[1:]), quote=False), **zensical}
                  for ident, cells in page_rows((site / page).read_text(encoding="utf-8")) if cells]
    return found
