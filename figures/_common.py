"""What every figure module shares for drawing: a new figure in the manual's style, the roles' colours, and the
marks for heat-guard pauses and failures. Figures read the runs' values through build_tools/readers.py, whose
MissingValue names the run and the value a figure lacks.

Figures use the object API (matplotlib.figure.Figure), never pyplot state, so draws in one process do
not leak into each other. The style (rcParams) is applied by build_tools/drawing/draw.py around each draw.
"""

from __future__ import annotations

import textwrap
from typing import Any

from matplotlib.axes import Axes
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.typing import HashableList

from build_tools.checking.checks import words
from build_tools.core._types import RunSummary
from build_tools.drawing import variants
from build_tools.drawing.palette import load_palette, role_color, role_label
from build_tools.readers import events_of

# Colours that are not roles: only the neutrals of figures/palette.yml.
INK = "#262626"  # text, axes, reference lines
PAPER = "#ffffff"  # hollow markers, the background
SHADE_ALPHA = 0.18  # role-coloured spans behind the data


def window() -> int:
    """The steps at each end whose means a caption compares ("falls from about A to about B"): words.yml."""
    return int(words()["falls_from"]["window"])


# --- drawing ----------------------------------------------------------------------------------------


def new_figure(rows: int = 1, cols: int = 1, *, height: float | None = None,
               mosaic: list[HashableList[str]] | None = None, phone_height: float | None = None,
               **subplot_kw: Any) -> tuple[Figure, Any]:
    """A figure in the manual's style (the rcParams set by draw.py) and its axes. Its width is the style's, the
    width of the page's content column, so that its text keeps the style's size on the page; a module sets
    only the height. With `mosaic`, the axes are a dict by the mosaic's names.

    On a phone (build_tools/drawing/variants.py) the figure is the phone's column wide and its panels are stacked,
    one per row in reading order (a 1 x n grid becomes n x 1, indexed alike); `phone_height` is its height
    there (by default the desktop height, once per panel that was side by side)."""
    figure = Figure()
    screen = variants.current()
    width = figure.get_size_inches()[0]
    if screen.stacked:
        panels = len(_stacked(mosaic)) if mosaic is not None else cols
        width = screen.width_in
        height = phone_height or (height or figure.get_size_inches()[1]) * max(1.0, 0.8 * panels)
        if mosaic is not None:
            mosaic = _stacked(mosaic)
        elif cols > 1:
            rows, cols = rows * cols, 1
    figure.set_size_inches(width, height if height is not None else figure.get_size_inches()[1])
    if mosaic is not None:
        return figure, figure.subplot_mosaic(mosaic, **subplot_kw)
    axes = figure.subplots(rows, cols, squeeze=True, **subplot_kw)
    return figure, axes


def _stacked(mosaic: list[HashableList[str]]) -> list[HashableList[str]]:
    """A mosaic's panels one per row, in reading order."""
    names = list(dict.fromkeys(name for row in mosaic for name in row))
    return [[name] for name in names]


def fitted(text: str, chars: int = 33) -> str:
    """A title or label on the screen being drawn: on a phone, wrapped at about `chars` characters a line."""
    return textwrap.fill(text, chars, break_long_words=False, break_on_hyphens=False) if on_phone() else text


def on_phone() -> bool:
    """Whether the figure being drawn is the phone's layout (a module may place a label otherwise there)."""
    return variants.current().stacked


def colour(role: str) -> str:
    """The colour of a palette role; figure code names roles, never colours."""
    return role_color(role)


def shaded(role: str, alpha: float = SHADE_ALPHA) -> dict[str, Any]:
    """The keywords of an area shaded in a role's colour (a span, a band, a box): a translucent fill inside an
    opaque outline of the role's colour, which gives the area its 3:1 contrast on either scheme's background
    (build_tools/drawing/palette_check.py, low_contrast)."""
    return {"facecolor": to_rgba(colour(role), alpha), "edgecolor": colour(role), "linewidth": OUTLINE}


OUTLINE = 0.8  # the outline of a shaded area, in points


def text_on(fill: str) -> str:
    """The neutral (INK or PAPER) that reads best on a fill colour "#rrggbb" in both schemes: the higher of
    the lower WCAG contrasts, the dark variant's colours being the dark shades of the light ones."""
    def luminance(hex_colour: str) -> float:
        channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    def contrast(a: str, b: str) -> float:
        high, low = sorted((luminance(a), luminance(b)), reverse=True)
        return (high + 0.05) / (low + 0.05)

    dark = load_palette().dark_colours()
    return max((INK, PAPER), key=lambda text: min(contrast(text, fill),
                                                  contrast(dark.get(text) or text, dark.get(fill) or fill)))


def label(role: str) -> str:
    """What a legend calls a role."""
    return role_label(role)


def shade_heat_pauses(ax: Axes, summary: RunSummary, origin: float, scale: float, *, labelled: bool = True) -> int:
    """Shade the heat-guard pauses on a time axis (x = (ts - origin) / scale); returns how many."""
    pauses = events_of(summary, "heat_pause", required=False)
    for index, (_, pause) in enumerate(pauses.iterrows()):
        ax.axvspan((pause["t0"] - origin) / scale, (pause["t1"] - origin) / scale, **shaded("outside", SHADE_ALPHA * 2),
                   label="heat-guard pause" if labelled and index == 0 else None)
    return len(pauses)


def mark_failure(ax: Axes, x: float, text: str, *, y: float = 0.98, side: str = "right") -> None:
    """A failure event: a vertical rose line with its name at the top, on the `side` of the line."""
    ax.axvline(x, color=colour("failure"), lw=1.4, ls="--")
    ax.annotate(text, xy=(x, y), xycoords=("data", "axes fraction"), xytext=(3 if side == "right" else -3, 0),
                textcoords="offset points", ha="left" if side == "right" else "right", va="top",
                color=colour("failure"))


def legend(ax: Axes, *, figure: Figure | None = None, **kwargs: Any) -> None:
    """A legend without duplicate labels; with `figure`, a figure legend (loc="outside lower center" puts it
    below the axes, where constrained layout makes room, never over the data)."""
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    if unique:
        kwargs["ncols"] = legend_columns(list(unique), kwargs.get("ncols", 1))
        (figure or ax).legend(unique.values(), unique.keys(), **kwargs)


def figure_legend(figure: Figure, handles: list[Any], labels: list[str], *, ncols: int = 1, **kwargs: Any) -> None:
    """A legend below the figure's axes (constrained layout makes room), in as many columns as the screen
    has room for."""
    figure.legend(handles, labels, loc=kwargs.pop("loc", "outside lower center"),
                  ncols=legend_columns(labels, ncols), **kwargs)


def legend_columns(labels: list[str], wanted: int) -> int:
    """The columns of a legend on the screen being drawn: a phone has room for two short labels a row."""
    screen = variants.current()
    if screen.stacked and any(len(text) > PHONE_LABEL_CHARS for text in labels):
        return 1
    return max(1, min(wanted, screen.legend_columns))


PHONE_LABEL_CHARS = 16  # longer legend labels take a phone's whole width


def seed_label(run_id: str) -> str:
    """A run id as a legend writes it: "seed 2" for baseline-seed2, else the id."""
    prefix, _, seed = run_id.rpartition("-seed")
    return f"seed {seed}" if prefix and seed.isdigit() else run_id
