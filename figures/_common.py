"""What every figure module shares: reading a summary with errors that name the run and the metric,
a new figure in the manual's style, and the marks for heat-guard pauses and failures.

Figures use the object API (matplotlib.figure.Figure), never pyplot state, so draws in one process do
not leak into each other. The style (rcParams) is applied by build_tools/draw.py around each draw.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.typing import HashableList

from build_tools.checks import words
from build_tools.checks._data import step_values
from build_tools.palette import role_color, role_label
from build_tools.summary import RunSummary

# Colours that are not roles: only the neutrals of figures/palette.yml.
INK = "#262626"  # text, axes, reference lines
PAPER = "#ffffff"  # hollow markers, the background
SHADE_ALPHA = 0.18  # role-coloured spans behind the data


class MissingData(Exception):
    """The data a figure needs is not in a run; build_tools/draw.py reports it with the figure's number."""

    def __init__(self, run: str, what: str) -> None:
        self.run = run
        self.what = what
        super().__init__(f"run {run} has no {what}")


# --- reading summaries --------------------------------------------------------------------------


def metric(summary: RunSummary, key: str, steps: pd.DataFrame | None = None) -> pd.Series:
    """A metric per step (index `step`); MissingData if the run lacks it or every value is NaN."""
    table = summary.steps if steps is None else steps
    if key not in summary.steps.columns or summary.steps[key].isna().all():
        raise MissingData(summary.run_id, f"metric {key}")
    if (bad := summary.non_finite([key], table.index)) is not None:
        raise MissingData(summary.run_id, f"finite {key} ({bad})")
    return table[key].astype(float)


def stream(summary: RunSummary, name: str, columns: Iterable[str]) -> pd.DataFrame:
    """A sampled series (gpu_util, host_memory, ...) with the columns the figure reads."""
    frame = summary.series.get(name)
    if frame is None or frame.empty:
        raise MissingData(summary.run_id, f"series {name}")
    for column in columns:
        if column not in frame.columns or frame[column].isna().all():
            raise MissingData(summary.run_id, f"series {name}.{column}")
    return frame


def setting(summary: RunSummary, dotted: str) -> Any:
    """A field of the run's run.yaml by dotted name."""
    try:
        return summary.config_value(dotted)
    except (KeyError, TypeError):
        raise MissingData(summary.run_id, f"run.yaml field {dotted}") from None


def events(summary: RunSummary, kind: str, *, required: bool = False) -> pd.DataFrame:
    """The run's events of one kind (heat_pause, engine_death, ray_oom_kill, job_end), in time order."""
    frame = summary.events
    found = frame[frame["kind"] == kind] if len(frame) else frame
    if required and found.empty:
        raise MissingData(summary.run_id, f"event {kind}")
    return found.sort_values("t0", kind="stable") if len(found) else found


def phases(summary: RunSummary, names: Sequence[str]) -> pd.DataFrame:
    """Phases counted once per step (trainer rank 0 and the rollout manager) with one of names."""
    frame = summary.phases
    chosen = frame[frame["rank"].isin((0, -1)) & frame["name"].isin(names) & frame["step"].notna()]
    if chosen.empty:
        raise MissingData(summary.run_id, f"phases {', '.join(names)}")
    return chosen


def start_ts(summary: RunSummary) -> float:
    """The run's start, the origin of its time axes."""
    start = summary.facts.get("start_ts", math.nan)
    return float(start) if start is not None and not math.isnan(start) else float(summary.phases["t0"].min())


def least_squares_trend(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Slope and intercept of the least-squares line through the finite points."""
    keep = np.isfinite(x) & np.isfinite(y)
    slope, intercept = np.polyfit(x[keep], y[keep], 1)
    return float(slope), float(intercept)


def window() -> int:
    """The steps at each end whose means a caption compares ("falls from about A to about B"): words.yml."""
    return int(words()["falls_from"]["window"])


def checked_values(summary: RunSummary, key: str | Sequence[str]) -> pd.Series:
    """Per-step values exactly as the claim checks read them (clean steps only for time values)."""
    return step_values(summary, key)


def need(runs: Mapping[str, RunSummary], run_id: str) -> RunSummary:
    """A run the figure reads by name (draw.py has checked the block lists it)."""
    if run_id not in runs:
        raise MissingData(run_id, "summary (the run is not in runs/)")
    return runs[run_id]


# --- drawing ----------------------------------------------------------------------------------------


def new_figure(rows: int = 1, cols: int = 1, *, height: float | None = None,
               mosaic: list[HashableList[str]] | None = None, **subplot_kw: Any) -> tuple[Figure, Any]:
    """A figure in the manual's style (the rcParams set by draw.py) and its axes. Its width is the style's, the
    width of the page's content column, so that its text keeps the style's size on the page; a module sets
    only the height. With `mosaic`, the axes are a dict by the mosaic's names."""
    figure = Figure()
    if height is not None:
        figure.set_size_inches(figure.get_size_inches()[0], height)
    if mosaic is not None:
        return figure, figure.subplot_mosaic(mosaic, **subplot_kw)
    axes = figure.subplots(rows, cols, squeeze=True, **subplot_kw)
    return figure, axes


def colour(role: str) -> str:
    """The colour of a palette role; figure code names roles, never colours."""
    return role_color(role)


def text_on(fill: str) -> str:
    """The neutral (INK or PAPER) that reads best on a fill colour "#rrggbb": the higher WCAG contrast."""
    def luminance(hex_colour: str) -> float:
        channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    def contrast(a: str, b: str) -> float:
        high, low = sorted((luminance(a), luminance(b)), reverse=True)
        return (high + 0.05) / (low + 0.05)

    return max((INK, PAPER), key=lambda text: contrast(text, fill))


def label(role: str) -> str:
    """What a legend calls a role."""
    return role_label(role)


def shade_heat_pauses(ax: Axes, summary: RunSummary, origin: float, scale: float, *, labelled: bool = True) -> int:
    """Shade the heat-guard pauses on a time axis (x = (ts - origin) / scale); returns how many."""
    pauses = events(summary, "heat_pause")
    for index, (_, pause) in enumerate(pauses.iterrows()):
        ax.axvspan((pause["t0"] - origin) / scale, (pause["t1"] - origin) / scale, color=colour("outside"),
                   alpha=SHADE_ALPHA * 2, lw=0, label="heat-guard pause" if labelled and index == 0 else None)
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
        (figure or ax).legend(unique.values(), unique.keys(), **kwargs)


def seed_label(run_id: str) -> str:
    """A run id as a legend writes it: "seed 2" for baseline-seed2, else the id."""
    prefix, _, seed = run_id.rpartition("-seed")
    return f"seed {seed}" if prefix and seed.isdigit() else run_id
