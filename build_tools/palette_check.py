"""The palette check: every colour in every figure's SVG is a palette colour or a neutral.

SVG has no anti-aliasing of colours, so an exact match is right; transparency is written as separate
opacity attributes by matplotlib, so a shaded span keeps its role colour.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from pathlib import Path

from ._exceptions import Problem, display_path
from ._types import FigureBlock
from .palette import Palette

COLOUR_PROPERTIES = ("fill", "stroke", "stop-color", "flood-color", "lighting-color", "color")
NOT_A_COLOUR = {"none", "transparent", "currentcolor", "inherit", "initial", "unset", ""}
CSS_DECLARATION = re.compile(r"(?P<prop>[a-z-]+)\s*:\s*(?P<value>[^;}]+)")
HEX_SHORT = re.compile(r"^#([0-9a-f])([0-9a-f])([0-9a-f])$")
HEX_LONG = re.compile(r"^#[0-9a-f]{6}$")
RGB = re.compile(r"^rgba?\(\s*([^,\s]+)\s*,\s*([^,\s]+)\s*,\s*([^,\s)]+)")


def check_figures(figures: Sequence[tuple[FigureBlock, Path]], palette: Palette, scheme: str = "light",
                  variant: str = "") -> list[Problem]:
    """One problem per figure and colour not in the palette of the scheme, naming the first element that uses
    it (and the variant, when the SVGs are one: "phone, dark scheme")."""
    allowed = palette.allowed_in(scheme)
    which = f", {variant}" if variant else ""
    problems = []
    for block, svg in figures:
        for colour, element, more in off_palette_colours(svg, allowed):
            also = f" (and {more} more element{'s' if more > 1 else ''})" if more else ""
            problems.append(Problem(block.chapter_file, block.line, None,
                                    f"fig {block.number} ({block.id}{which}): {element}{also} uses {colour}, "
                                    f"which is not in {display_path(palette.path)}"))
    return problems


def off_palette_colours(svg: Path, allowed: frozenset[str]) -> list[tuple[str, str, int]]:
    """(colour, first element using it, how many more elements use it) for every colour not allowed."""
    found: dict[str, list[str]] = {}
    for element, value in _colour_uses(ET.parse(svg).getroot()):
        colour = normalise(value)
        if colour is not None and colour not in allowed:
            found.setdefault(colour, []).append(element)
    return [(colour, elements[0], len(elements) - 1) for colour, elements in found.items()]


def _colour_uses(root: ET.Element) -> Iterator[tuple[str, str]]:
    """(element description, colour value) for every colour property of every element, in document order."""
    stack: list[tuple[ET.Element, str | None]] = [(root, None)]
    while stack:
        element, owner = stack.pop()
        tag = element.tag.rsplit("}", 1)[-1]
        own_id = element.get("id")
        described = f'<{tag} id="{own_id}">' if own_id else f'<{tag}> in <g id="{owner}">' if owner else f"<{tag}>"
        for name in COLOUR_PROPERTIES:
            if element.get(name) is not None:
                yield described, element.get(name, "")
        for declarations in (element.get("style") or "", element.text if tag == "style" else ""):
            for match in CSS_DECLARATION.finditer((declarations or "").lower()):
                if match["prop"] in COLOUR_PROPERTIES:
                    yield described, match["value"]
        for child in reversed(list(element)):
            stack.append((child, own_id or owner))


def normalise(value: str) -> str | None:
    """A colour as "#rrggbb"; None for what is not a colour (none, url(#...)); unknown text as written."""
    text = value.strip().lower()
    if text in NOT_A_COLOUR or text.startswith("url("):
        return None
    if HEX_LONG.match(text):
        return text
    if short := HEX_SHORT.match(text):
        return "#" + "".join(2 * digit for digit in short.groups())
    if rgb := RGB.match(text):
        return "#" + "".join(f"{_channel(part):02x}" for part in rgb.groups())
    return _named(text)


def _channel(part: str) -> int:
    value = float(part[:-1]) * 255 / 100 if part.endswith("%") else float(part)
    return max(0, min(255, round(value)))


def _named(text: str) -> str:
    """A CSS colour name as hex; matplotlib (loaded only here) knows the CSS names."""
    from matplotlib.colors import CSS4_COLORS

    return str(CSS4_COLORS.get(text, text)).lower()  # its values are hex strings; the stubs say any colour
