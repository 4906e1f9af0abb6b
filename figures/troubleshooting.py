"""Fig. "troubleshooting": each symptom we hit, its one first check and its one fix, as a drawn table."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from ._common import INK, SHADE_ALPHA, colour, new_figure

RUNS_NEEDED: tuple[str, ...] = ()
ALT = ("A table drawn as boxes, one row per symptom: each symptom, in rose, leads by an arrow to one first check, "
       "in amber, and from there to one fix, in teal.")
TABLE = "troubleshooting"
# column -> (heading, role)
COLUMNS = {"symptom": ("symptom", "failure"), "check": ("first check", "lifecycle"), "fix": ("fix", "durable")}
WRAP = 34  # characters per line inside a box
ROW_HEIGHT = 1.0
BOX_WIDTH, GAP = 3.0, 0.45


class TableError(Exception):
    """The troubleshooting table is not a list of {symptom, check, fix}."""


def _rows(tables: Mapping[str, Any]) -> list[dict[str, str]]:
    symptoms = tables.get(TABLE, {}).get("symptoms") if isinstance(tables.get(TABLE), Mapping) else None
    if not isinstance(symptoms, list) or not symptoms:
        raise TableError(f"table {TABLE} has no list `symptoms`")
    for index, row in enumerate(symptoms):
        missing = [key for key in COLUMNS if not isinstance(row, Mapping) or not str(row.get(key, "")).strip()]
        if missing:
            raise TableError(f"table {TABLE}: symptoms[{index}] has no {', '.join(missing)}")
    return [{key: str(row[key]).strip() for key in COLUMNS} for row in symptoms]


def draw(runs: Mapping[str, Any], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    rows = _rows(tables)
    data = pd.DataFrame([{"row": index + 1, "column": key, "text": row[key]}
                         for index, row in enumerate(rows) for key in COLUMNS])

    figure, ax = new_figure(height=0.75 + 0.95 * len(rows), width=7.2)
    for column, (key, (heading, role)) in enumerate(COLUMNS.items()):
        x = column * (BOX_WIDTH + GAP)
        ax.text(x + BOX_WIDTH / 2, 0.15, heading, ha="center", va="bottom", fontsize=9, weight="bold",
                color=colour(role))
        for index, row in enumerate(rows):
            y = -(index + 0.5) * ROW_HEIGHT
            ax.add_patch(FancyBboxPatch((x, y - 0.42 * ROW_HEIGHT), BOX_WIDTH, 0.84 * ROW_HEIGHT,
                                        boxstyle="round,pad=0,rounding_size=0.08", facecolor=colour(role),
                                        alpha=SHADE_ALPHA, lw=0))
            ax.add_patch(FancyBboxPatch((x, y - 0.42 * ROW_HEIGHT), BOX_WIDTH, 0.84 * ROW_HEIGHT,
                                        boxstyle="round,pad=0,rounding_size=0.08", facecolor="none",
                                        edgecolor=colour(role), lw=1.0))
            text = textwrap.fill(row[key], WRAP, break_long_words=False)
            ax.text(x + 0.1, y, text, ha="left", va="center", fontsize=7, color=INK)
            if column:
                ax.annotate("", xy=(x, y), xytext=(x - GAP, y),
                            arrowprops={"arrowstyle": "-|>", "color": INK, "lw": 0.8, "shrinkA": 1, "shrinkB": 1})
    ax.set_xlim(-0.05, len(COLUMNS) * (BOX_WIDTH + GAP) - GAP + 0.05)
    ax.set_ylim(-len(rows) * ROW_HEIGHT - 0.05, 0.55)
    ax.set_axis_off()
    return figure, data
