"""The variants of every figure: a layout for each width a page shows figures at (a desktop's content column,
a phone's), each drawn for both colour schemes. Figure code draws the layout of the screen being drawn
(`current()`, read by figures/_common.py); build_tools/drawing/draw.py draws every screen and derives each dark
variant from its light one (palette.Palette.to_dark); the chapter pages serve each reader the variant of
their width and scheme (build_tools/pages/chapters.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from build_tools.drawing.legibility import CONTENT_WIDTH_PX
from build_tools.drawing.palette import SCHEMES

CSS_PX_PER_INCH = 96.0


@dataclass(frozen=True)
class Screen:
    name: str  # "desktop" or "phone"
    content_px: float  # the width of the page's content column the figure is drawn for, in CSS px
    stacked: bool  # panels one above the other, whatever the module's grid
    legend_columns: int  # at most this many columns in a legend
    ticks: int | None  # at most about this many ticks on an axis whose ticks are numbers; None: as drawn
    media: str | None  # the CSS media query under which the page shows this layout; None: otherwise

    @property
    def width_in(self) -> float:
        return self.content_px / CSS_PX_PER_INCH


# The content column of a chapter in Chromium, measured (tests/website/test_browser.py measures it again): at a
# 1440 px window, Material for MkDocs' column with the navigation and the table of contents beside it
# (legibility.CONTENT_WIDTH_PX); at a 360 px window (the narrowest common phone, held upright), the page less its
# 16 px margins: a phone's figure is drawn that wide and shown at its own width on a wider phone. The
# desktop figure keeps its text at 12 px or more down to a column of about 655 px, which Material's layout
# gives at every window from 720 px up; below that (Material's own breakpoint, 45em) the page shows the
# phone's layout, at its own width up to 719 px.
DESKTOP = Screen("desktop", CONTENT_WIDTH_PX, stacked=False, legend_columns=4, ticks=None, media=None)
PHONE = Screen("phone", 328.0, stacked=True, legend_columns=2, ticks=5, media="(max-width: 44.984375em)")
SCREENS = (DESKTOP, PHONE)

_active = DESKTOP


def current() -> Screen:
    """The screen whose layout figure code is drawing."""
    return _active


@contextmanager
def showing(screen: Screen) -> Iterator[None]:
    """Figure code draws `screen`'s layout for the time of the block."""
    global _active
    before, _active = _active, screen
    try:
        yield
    finally:
        _active = before


def suffix(screen: Screen, scheme: str) -> str:
    """The end of a variant's file name: `.svg` (desktop, light), `.dark.svg`, `.phone.svg`, `.phone.dark.svg`."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}")
    parts = ([] if screen is DESKTOP else [screen.name]) + ([] if scheme == "light" else [scheme])
    return "".join(f".{part}" for part in parts) + ".svg"


def describe(screen: Screen, scheme: str) -> str:
    """A variant as a problem names it: "" for the figure's own (desktop, light), else "phone, dark" and the like."""
    parts = ([] if screen is DESKTOP else [screen.name]) + ([] if scheme == "light" else [f"{scheme} scheme"])
    return ", ".join(parts)


def variant_suffixes() -> tuple[str, ...]:
    """Every variant's file ending, the desktop light one (the figure's own SVG) first."""
    return tuple(suffix(screen, scheme) for screen in SCREENS for scheme in SCHEMES)
