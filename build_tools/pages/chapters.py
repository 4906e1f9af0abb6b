"""A chapter page: docs/NN-*.md with each figure block replaced by its figure (anchor, zoomable SVG, the
caption "Figure N.n. <claim>", the CSV behind it and a "checked against the runs" note), references
resolved, and the troubleshooting table where its marker stands."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from build_tools.checking import claims
from build_tools.checking.blocks import fenced_blocks
from build_tools.core._escape import html_attribute, html_text, md_text
from build_tools.core._exceptions import ChapterError, Problem, display_path
from build_tools.core._layout import CHAPTER, METRICS_PAGE
from build_tools.core._types import CheckResult, ClaimVerdict, DrawnFigure, FigureBlock
from build_tools.drawing.legibility import svg_size
from build_tools.drawing.palette import SCHEMES
from build_tools.drawing.variants import DESKTOP, SCREENS, suffix
from build_tools.pages import reader_note
from build_tools.pages.wording import provenance

from ._common import resolve
from .troubleshooting import TROUBLESHOOTING_MARK, troubleshooting_table


def chapter_files(docs: Path) -> list[Path]:
    """docs/NN-*.md in order; chapter 6 is generated, so a hand-written one is an error."""
    chapters = sorted(path for path in docs.glob("*.md") if CHAPTER.match(path.name))
    clash = [path for path in chapters if path.name.startswith("06-")]
    if clash:
        raise ChapterError([Problem(display_path(path), None, None,
                                    f"chapter 6 is the Metrics page, generated as {METRICS_PAGE} from "
                                    "docs/data/metrics.yml; rename or remove this file") for path in clash])
    return chapters


def render_chapter(path: Path, blocks: Sequence[FigureBlock], figures: Mapping[str, DrawnFigure],
                   verdicts: Mapping[str, ClaimVerdict], tables: Mapping[str, Any],
                   configs: Mapping[str, Mapping[str, Any]] | None = None, commands: str = "") -> str:
    """A chapter with its figure blocks replaced by figures, references resolved, data tables filled, and
    `commands` (the launch commands behind its figures, pages/commands.py) at its end."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    mine = sorted((b for b in blocks if Path(b.chapter_file).name == path.name), key=lambda b: b.line)
    # (first, last) 0-based lines of each figure block, found as the block reader found them
    spans = [(fenced.line - 1, fenced.last - 1) for fenced in fenced_blocks(source) if fenced.info == "figure"]
    if len(spans) != len(mine):
        raise ChapterError([Problem(display_path(path), None, None,
                                    f"{len(spans)} figure blocks in the file, but {len(mine)} were read")])
    for (first, last), block in reversed(list(zip(spans, mine, strict=True))):
        table = troubleshooting_table(tables) if shown_as_text(block) else None
        markup = figure_markup(block, figures.get(block.id), verdicts.get(block.id), figure_source(block, configs),
                               table=table)
        lines[first:last + 1] = markup.splitlines()
    text = "\n".join(lines) + "\n" + commands
    text = resolve(text, blocks, path)
    if TROUBLESHOOTING_MARK in text:  # the rows once: where the marker stands, unless a figure shows them
        shown = any(shown_as_text(block) for block in mine)
        text = text.replace(TROUBLESHOOTING_MARK, "" if shown else troubleshooting_table(tables))
    return text


def shown_as_text(block: FigureBlock) -> bool:
    """A figure of the troubleshooting rows (7.1, whose claim is checked against them) shows them as a table
    of text in place of its chart, so the page shows them once, as text; its SVG and CSV are still made."""
    return "troubleshooting" in block.tables


def figure_source(block: FigureBlock, configs: Mapping[str, Mapping[str, Any]] | None) -> str:
    """What the runs a figure reads are: '3 synthesized example runs', '2 measured runs', ..."""
    if not block.runs or configs is None:
        return ""
    return provenance({run: configs.get(run, {}) for run in block.runs}).counted()


def figure_markup(block: FigureBlock, figure: DrawnFigure | None, verdict: ClaimVerdict | None,
                  source: str = "", *, table: str | None = None) -> str:
    """The figure as the reader sees it. The CSV's link is Markdown, so mkdocs --strict checks it; the image is
    a <picture> per colour scheme (figure_image). A `table` (Markdown) is shown as text in place of the image."""
    stem = figure.svg.name.removesuffix(".svg") if figure else block.id
    csv = f"figures/{figure.csv.name if figure else block.id + '.csv'}"
    alt = (figure.alt if figure else "") or block.alt or block.claim
    return "\n".join([
        "",
        f'<figure class="manual-figure" id="{html_text(block.id)}" markdown="1">',
        "",
        table if table is not None else figure_image(stem, alt, block.number,
                                                     figure.svg.parent if figure else None),
        "",
        f'<figcaption markdown="span"><strong>Figure {block.number}.</strong> {md_text(block.claim)} '
        f'<span class="manual-data">[data behind this figure]({csv}) ([where it comes from]({csv[:-4]}.json))</span>'
        + (f' <span class="manual-source">{html_text(source)}</span>' if source else "") + "</figcaption>",
        "",
        checked_note(block, verdict),
        "",
        "</figure>",
        "",
    ])


def figure_image(stem: str, alt: str, number: str, drawn: Path | None = None) -> str:
    """The figure's variants (build_tools/drawing/variants.py) as the page serves them: a <picture> for each colour
    scheme, of which the page shows the one of the scheme its reader chose (manual.css: Material's palette
    toggle sets `data-md-color-scheme`, offline, with no request), each choosing the phone's layout below the
    phone's breakpoint (`<source media>`). Every image loads lazily, when shown: a reader fetches the figures
    of their own scheme and width alone, never the other scheme's (browsers load lazy images before printing).
    Each image and source carries its SVG's size (read from the variant in `drawn`, the folder the figures were
    drawn to), so the page keeps each figure's room before it loads and a link to a figure lands on it. The
    zoom link opens the desktop figure; zoom.js the scheme's."""
    pictures = []
    for scheme in SCHEMES:
        sources = "".join(f'<source media="{screen.media}" srcset="figures/{stem}{suffix(screen, scheme)}"'
                          f'{_size(drawn, stem, suffix(screen, scheme))}>' for screen in SCREENS if screen.media)
        desktop = f"figures/{stem}{suffix(DESKTOP, scheme)}"
        pictures.append(f'<picture class="manual-{scheme}">{sources}<img src="{desktop}" alt="{html_attribute(alt)}" '
                        f'data-manual-full="{desktop}"{_size(drawn, stem, suffix(DESKTOP, scheme))} '
                        'loading="lazy"></picture>')
    return (f'<a class="manual-zoom" href="figures/{stem}.svg" title="Open Figure {number} full size">'
            + "".join(pictures) + "</a>")


def _size(drawn: Path | None, stem: str, ending: str) -> str:
    """` width="W" height="H"`: the variant's size in CSS px as a browser sizes the SVG (legibility.svg_size: a
    point is 4/3 px); empty when there is no such file or it states no size (the image takes its room when it
    loads)."""
    if drawn is None:
        return ""
    try:
        width, height = svg_size(drawn / f"{stem}{ending}")
    except (OSError, ValueError, ET.ParseError):  # ValueError: no size css_px reads
        return ""
    return f' width="{round(width)}" height="{round(height)}"'


def checked_note(block: FigureBlock, verdict: ClaimVerdict | None) -> str:
    """The small note of what the claim's checks found in the runs (raw HTML: messages are not Markdown)."""
    checks: Sequence[CheckResult] = verdict.checks if verdict else ()
    # Each check as: the words of the claim it proves, what the runs show, and what the words need.
    items = "".join(reader_note.check_item(claims.says(block, params), check.message, check.expected, params)
                    for params, check in zip(block.checks, checks, strict=False)) or "<li>no checks</li>"
    runs = ", ".join(html_text(run) for run in block.runs) or "none"
    status = "holds" if verdict and verdict.status == "pass" else "was not checked"
    # Left out of the site's search (Material reads data-search-exclude): the notes would crowd every result.
    return (f'<details class="manual-checked" data-search-exclude=""><summary>{reader_note.CHECKED_SUMMARY} '
            f"the claim {status}</summary><ul>{items}</ul><p>Runs: {runs}</p></details>")
