"""Fig. "troubleshooting": each symptom we hit, its one first check and its one fix, as a drawn table."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from build_tools.core._types import RunSummary

from ._common import INK, new_figure, on_phone, shaded

ALT = ("A quick-reference chart of the symptoms, one row each: a symptom in a rose box leads by an arrow to "
       "one first check in an amber box, and from there to one fix in a box outlined in the text colour, each "
       "in a few words; the table above gives them in full.")
ALT_NAMES = {"drawn": ["symptom", "first check", "fix"], "axes": []}
TABLE = "troubleshooting"
# column -> (heading, role); a fix is no role's (teal is durable state), so its box is a neutral outline
COLUMNS: dict[str, tuple[str, str | None]] = {"symptom": ("symptom", "failure"), "check": ("first check", "lifecycle"),
                                              "fix": ("fix", None)}
WRAP = 25  # characters per line inside a box, at the style's font size
ROW_HEIGHT = 1.0
BOX_WIDTH, GAP = 3.0, 0.55
PHONE_LABEL = 1.25  # on a phone, the width left of the boxes for their column's name


class TableError(Exception):
    """The troubleshooting table is not a list of {symptom, check, fix, short: {symptom, check, fix}}."""


def _rows(tables: Mapping[str, Any]) -> list[dict[str, str]]:
    """The short form of every row (the chart reads at a glance; the page's table has the full text)."""
    symptoms = tables.get(TABLE, {}).get("symptoms") if isinstance(tables.get(TABLE), Mapping) else None
    if not isinstance(symptoms, list) or not symptoms:
        raise TableError(f"table {TABLE} has no list `symptoms`")
    rows = []
    for index, row in enumerate(symptoms):
        missing = [key for key in COLUMNS if not isinstance(row, Mapping) or not str(row.get(key, "")).strip()]
        short = row.get("short") if isinstance(row, Mapping) else None
        missing += [f"short.{key}" for key in COLUMNS
                    if not isinstance(short, Mapping) or not str(short.get(key, "")).strip()]
        if missing:
            raise TableError(f"table {TABLE}: symptoms[{index}] has no {', '.join(missing)}")
        rows.append({key: str(row[key]).strip() for key in COLUMNS}
                    | {f"short_{key}": str(short[key]).strip() for key in COLUMNS})  # type: ignore[index]
    return rows


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    rows = _rows(tables)
    data = pd.DataFrame([{"row": index + 1, "column": key, "short": row[f"short_{key}"], "text": row[key]}
                         for index, row in enumerate(rows) for key in COLUMNS])

    phone = on_phone()
    figure, ax = new_figure(height=0.6 + 0.72 * len(rows), phone_height=0.2 + 1.75 * len(rows))
    for column, (key, (heading, role)) in enumerate(COLUMNS.items()):
        x = PHONE_LABEL if phone else column * (BOX_WIDTH + GAP)
        if not phone:
            ax.text(x + BOX_WIDTH / 2, 0.12, heading, ha="center", va="bottom", weight="bold", color=INK)
        for index, row in enumerate(rows):
            # On a phone each row is its three boxes one above the other, each named at its left.
            y = -(index * (len(COLUMNS) + 0.5) + column + 0.5) * ROW_HEIGHT if phone else -(index + 0.5) * ROW_HEIGHT
            box = {"facecolor": "none", "edgecolor": INK, "linewidth": 1.0} if role is None else shaded(role)
            ax.add_patch(FancyBboxPatch((x, y - 0.43 * ROW_HEIGHT), BOX_WIDTH, 0.86 * ROW_HEIGHT,
                                        boxstyle="round,pad=0,rounding_size=0.08", **box))
            text = textwrap.fill(row[f"short_{key}"], WRAP, break_long_words=False, break_on_hyphens=False)
            ax.text(x + 0.12, y, text, ha="left", va="center", color=INK, linespacing=1.15)
            if phone:
                ax.text(0, y, heading, ha="left", va="center", weight="bold", color=INK)
            if column and phone:
                ax.annotate("", xy=(x + BOX_WIDTH / 2, y + 0.43 * ROW_HEIGHT),
                            xytext=(x + BOX_WIDTH / 2, y + 0.57 * ROW_HEIGHT),
                            arrowprops={"arrowstyle": "-|>", "color": INK, "lw": 0.8, "shrinkA": 0, "shrinkB": 0})
            elif column:
                ax.annotate("", xy=(x, y), xytext=(x - GAP, y),
                            arrowprops={"arrowstyle": "-|>", "color": INK, "lw": 0.8, "shrinkA": 1, "shrinkB": 1})
    if phone:
        ax.set_xlim(-0.05, PHONE_LABEL + BOX_WIDTH + 0.05)
        ax.set_ylim(-(len(rows) * (len(COLUMNS) + 0.5) - 0.5) * ROW_HEIGHT - 0.05, 0.05)
    else:
        ax.set_xlim(-0.05, len(COLUMNS) * (BOX_WIDTH + GAP) - GAP + 0.05)
        ax.set_ylim(-len(rows) * ROW_HEIGHT - 0.05, 0.5)
    ax.set_axis_off()
    return figure, data
