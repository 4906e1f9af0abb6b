"""The palette check: every colour in every figure's SVG is a palette colour or a neutral.

SVG has no anti-aliasing of colours, so an exact match is right; transparency is written as separate
opacity attributes by matplotlib, so a shaded span keeps its role colour.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from pathlib import Path

from build_tools.core._exceptions import Problem, display_path
from build_tools.core._types import FigureBlock
from build_tools.drawing.palette import Palette

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


# --- contrast --------------------------------------------------------------------------------------

MIN_CONTRAST = 3.0  # WCAG 1.4.11: graphical objects against what is next to them


def contrast(a: str, b: str) -> float:
    """WCAG's contrast ratio of two "#rrggbb" colours."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _luminance(colour: str) -> float:
    channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def figure_background(svg: Path) -> str:
    """The colour of a matplotlib SVG's background: the fill of the figure's own patch."""
    root = ET.parse(svg).getroot()
    for group in root.iter():
        if group.get("id") == "patch_1":
            for element in group.iter():
                fill = _declarations(element).get("fill")
                if fill:
                    colour = normalise(fill)
                    if colour is not None:
                        return colour
    raise ValueError(f"{svg.name} has no figure background (patch_1)")


def low_contrast(svg: Path, neutrals: frozenset[str]) -> list[tuple[str, str, float]]:
    """(element, colour, ratio) for every paint of a colour that is no neutral (a role's) drawn below
    MIN_CONTRAST against the figure's background. A translucent fill is its colour over the background,
    unless its element has an opaque outline, which is then what must stand out."""
    background = figure_background(svg)
    found = []
    for element, declarations in _painted(ET.parse(svg).getroot()):
        opacity = float(declarations.get("opacity", 1))
        paints = {kind: (normalise(declarations.get(kind, "")), opacity * float(declarations.get(f"{kind}-opacity", 1)))
                  for kind in ("fill", "stroke")}
        outlined = (paints["stroke"][0] is not None and paints["stroke"][1] >= 1
                    and float(declarations.get("stroke-width", 1)) > 0)
        for kind, (colour, alpha) in paints.items():
            if colour is None or colour in neutrals or not HEX_LONG.match(colour):
                continue
            if alpha < 1 and kind == "fill" and outlined:
                continue
            seen = _over(colour, background, alpha)
            ratio = contrast(seen, background)
            if ratio < MIN_CONTRAST:
                found.append((element, colour if alpha >= 1 else f"{colour} at opacity {alpha:g}", round(ratio, 2)))
    return found


def _over(colour: str, background: str, alpha: float) -> str:
    """A colour drawn at `alpha` over the background, as the eye sees it (sRGB blending, as browsers do)."""
    mixed = [round(alpha * int(colour[i:i + 2], 16) + (1 - alpha) * int(background[i:i + 2], 16)) for i in (1, 3, 5)]
    return "#" + "".join(f"{channel:02x}" for channel in mixed)


def _declarations(element: ET.Element) -> dict[str, str]:
    """An element's presentation: its colour attributes and its style's declarations."""
    found = {name: element.get(name, "") for name in (*COLOUR_PROPERTIES, "opacity", "fill-opacity",
                                                      "stroke-opacity", "stroke-width") if element.get(name)}
    for match in CSS_DECLARATION.finditer((element.get("style") or "").lower()):
        found[match["prop"]] = match["value"].strip()
    return found


def _painted(root: ET.Element) -> Iterator[tuple[str, dict[str, str]]]:
    """(element description, declarations) of every drawn shape, outside definitions (clip paths, patterns)."""
    stack: list[tuple[ET.Element, str | None, bool]] = [(root, None, False)]
    while stack:
        element, owner, in_defs = stack.pop()
        tag = element.tag.rsplit("}", 1)[-1]
        in_defs = in_defs or tag in ("defs", "clipPath", "pattern", "marker")
        own_id = element.get("id")
        if not in_defs and tag in ("path", "rect", "circle", "ellipse", "line", "polyline", "polygon", "use"):
            yield (f'<{tag} id="{own_id}">' if own_id else f'<{tag}> in <g id="{owner}">'), _declarations(element)
        for child in reversed(list(element)):
            stack.append((child, own_id or owner, in_defs))
