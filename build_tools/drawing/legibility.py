"""The legibility check: no text of a figure is drawn smaller than MIN_TEXT_PX CSS pixels on the page, in each
variant at the width the page shows it at (build_tools/drawing/variants.py: a desktop's column, a phone's).

A figure is an <img> of its SVG in the content column, shown at its own width or the column's, whichever is
smaller. Its text is SVG text (svg.fonttype: none) whose font-size is in the units of the viewBox, so one
text is drawn at font-size * shown width / viewBox width CSS px.
"""

from __future__ import annotations

import functools
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_tools.core._exceptions import Problem
from build_tools.core._types import FigureBlock

# The content column of a chapter in Chromium at a 1440 px window, measured (tests/website/test_browser.py measures
# it again): Material for MkDocs' column with the navigation and the table of contents beside it.
CONTENT_WIDTH_PX = 688
MIN_TEXT_PX = 12.0
PX_PER_UNIT = {"px": 1.0, "": 1.0, "pt": 96 / 72, "in": 96.0, "cm": 96 / 2.54, "mm": 96 / 25.4}
LENGTH = re.compile(r"^\s*([0-9.]+)\s*([a-z]*)\s*$")
FONT_SIZE = re.compile(r"font-size\s*:\s*([0-9.]+)px")
FONT_SHORTHAND = re.compile(r"(?:^|;)\s*font\s*:[^;]*?([0-9.]+)px")


@dataclass(frozen=True)
class Text:
    text: str
    size: float  # font-size in viewBox units
    px: float  # drawn size in CSS px at the content width


def css_px(length: str) -> float:
    """An SVG length attribute ("518.4pt", "690px") in CSS px."""
    match = LENGTH.match(length or "")
    if not match or match[2] not in PX_PER_UNIT:
        raise ValueError(f"cannot read the SVG length {length!r}")
    return float(match[1]) * PX_PER_UNIT[match[2]]


def svg_size(svg: Path) -> tuple[float, float]:
    """The SVG's width and height in CSS px, from its root element alone (the rest of the file is not parsed);
    ValueError when it states no size css_px reads. Read once a process while the file keeps its stats (a figure
    not redrawn, under make serve's rebuilds)."""
    stat = os.stat(svg)
    return _svg_size(str(svg), stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)


@functools.lru_cache(maxsize=1024)
def _svg_size(svg: str, *stats: int) -> tuple[float, float]:
    for _, root in ET.iterparse(svg, events=("start",)):
        return css_px(root.get("width", "")), css_px(root.get("height", ""))
    raise ValueError(f"{os.path.basename(svg)} has no root element")


def shown_width(root: ET.Element, content_width: float) -> float:
    """The width the page shows the SVG at: its own width, at most the content column's."""
    return min(css_px(root.get("width", "")), content_width)


def texts(svg: Path, content_width: float = CONTENT_WIDTH_PX) -> list[Text]:
    """Every text element of the SVG with its drawn size at the content width, in document order."""
    root = ET.parse(svg).getroot()
    view_box = [float(v) for v in (root.get("viewBox") or "").replace(",", " ").split()]
    if len(view_box) != 4:
        raise ValueError(f"{svg.name} has no viewBox")
    scale = shown_width(root, content_width) / view_box[2]
    found = []
    for element in root.iter():
        if element.tag.rsplit("}", 1)[-1] != "text":
            continue
        style = element.get("style") or ""
        match = FONT_SIZE.search(style) or FONT_SHORTHAND.search(style)
        size = float(match[1]) if match else float(element.get("font-size", "nan"))
        found.append(Text("".join(element.itertext()).strip(), size, size * scale))
    return found


def smallest(svg: Path, content_width: float = CONTENT_WIDTH_PX) -> Text | None:
    """The smallest text of the SVG at the content width; None for an SVG without text."""
    found = texts(svg, content_width)
    return min(found, key=lambda t: t.px) if found else None


def check_figures(figures: Sequence[tuple[FigureBlock, Path]], content_width: float = CONTENT_WIDTH_PX,
                  variant: str = "") -> list[Problem]:
    """One problem per figure with text smaller than MIN_TEXT_PX in a column content_width px wide, naming the
    smallest text (and the variant, when the SVGs are one: "phone")."""
    problems = []
    which = f", {variant}" if variant else ""
    for block, svg in figures:
        small = [t for t in texts(svg, content_width) if not t.px >= MIN_TEXT_PX]
        if small:
            worst = min(small, key=lambda t: t.px)
            more = f" (and {len(small) - 1} more)" if len(small) > 1 else ""
            problems.append(Problem(block.chapter_file, block.line, None,
                                    f"fig {block.number} ({block.id}{which}): text {worst.text!r}{more} is drawn "
                                    f"{worst.px:.1f} px high in a {content_width:g} px column (expected at "
                                    f"least {MIN_TEXT_PX:g} px: a font size of at least "
                                    f"{MIN_TEXT_PX * worst.size / worst.px:.2f} in this figure)"))
    return problems


# --- labels that collide or leave the figure ----------------------------------------------------------

OVERLAP_PX = 1.0  # texts whose boxes share more than this, in both directions, overlap
# The room every label of the manual's figures keeps beyond that rule (tests/drawing/test_figure_text.py): a release of
# matplotlib measures text a few px wider or taller (3.11 did), and the build must not fail on it.
ROOM_PX = 4.0


@dataclass(frozen=True)
class Collision:
    first: str
    second: str | None  # None: the first text leaves the figure

    def __str__(self) -> str:
        if self.second is None:
            return f"text {self.first!r} is cut by the figure's edge"
        return f"texts {self.first!r} and {self.second!r} overlap"


def collisions(figure: Any) -> list[Collision]:
    """Every pair of a laid-out figure's visible texts whose boxes overlap, and every text that reaches past
    the figure's edge, as matplotlib's renderer measures them (the figure is drawn, without output, first).
    An annotation's box is its text's, without its arrow."""
    frame, boxes = _text_boxes(figure)
    found = [Collision(name, None) for name, box in boxes if _edge_room(box, frame) < 0]
    for index, (name, box) in enumerate(boxes):
        for other, other_box in boxes[index + 1:]:
            if _pair_room(box, other_box) < 0:
                found.append(Collision(name, other))
    return found


@dataclass(frozen=True)
class Room:
    """How far a figure's tightest label is from what `collisions` reports, in CSS px on the page: the text may
    move this far towards the other text (or the edge) before the build refuses the figure."""
    px: float
    first: str
    second: str | None  # None: the first text's room is to the figure's edge

    def __str__(self) -> str:
        where = "the figure's edge" if self.second is None else repr(self.second)
        return f"{self.px:.1f} px between {self.first!r} and {where}"


def room(figure: Any) -> Room | None:
    """The least room of any visible text of a laid-out figure before `collisions` finds it (None: no text).
    A figure is shown at its own width (build_tools/drawing/variants.py draws it the column's width at 96 px an inch),
    so the renderer's pixels, at the figure's dpi, are scaled to CSS px."""
    frame, boxes = _text_boxes(figure)
    css = 96.0 / float(figure.dpi)
    rooms = [Room(_edge_room(box, frame) * css, name, None) for name, box in boxes]
    rooms += [Room(_pair_room(box, other_box) * css, name, other)
              for index, (name, box) in enumerate(boxes) for other, other_box in boxes[index + 1:]]
    return min(rooms, key=lambda found: found.px) if rooms else None


def _text_boxes(figure: Any) -> tuple[Any, list[tuple[str, Any]]]:
    """The figure's frame and each shown text's box, in the renderer's pixels, the figure laid out first."""
    from matplotlib.text import Text

    figure.draw_without_rendering()
    renderer = figure._get_renderer()
    return figure.bbox, [(text.get_text(), Text.get_window_extent(text, renderer)) for text in shown_texts(figure)]


def _edge_room(box: Any, frame: Any) -> float:
    """How far a text's box may move towards the nearest edge of the figure before it is cut (negative: cut)."""
    return OVERLAP_PX + float(min(box.x0 - frame.x0, box.y0 - frame.y0, frame.x1 - box.x1, frame.y1 - box.y1))


def _pair_room(box: Any, other: Any) -> float:
    """How far two texts' boxes may move towards each other before they overlap (negative: they do): boxes
    overlap when they share more than OVERLAP_PX in both directions, so the room is the larger of the two."""
    overlap_x = min(box.x1, other.x1) - max(box.x0, other.x0)
    overlap_y = min(box.y1, other.y1) - max(box.y0, other.y0)
    return OVERLAP_PX - float(min(overlap_x, overlap_y))


def shown_texts(figure: Any) -> list[Any]:
    """The texts a reader sees in a drawn figure: its own (suptitle, legends), each axes' titles, labels,
    texts, annotations and legend, and the tick labels of the ticks matplotlib draws (those in view)."""
    texts = list(figure.texts) + [text for legend in figure.legends if legend.get_visible()
                                  for text in legend.get_texts()]
    for ax in figure.axes:
        if not ax.get_visible():
            continue
        texts += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        if ax.get_legend() is not None and ax.get_legend().get_visible():
            texts += ax.get_legend().get_texts()
        for axis in (ax.xaxis, ax.yaxis):
            if not ax.axison or not axis.get_visible():
                continue
            texts += [axis.label, axis.get_offset_text()]
            for tick in axis._update_ticks():  # the ticks drawn: those inside the view
                texts += [label for label in (tick.label1, tick.label2) if label.get_visible()]
    return [text for text in texts if text.get_visible() and text.get_text().strip()]
