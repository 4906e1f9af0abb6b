"""Fig. "memory hand-offs": GPU memory held by the trainer and the engine over two steps, hand-offs shaded.

The claim is about the run's typical step (its check takes the median of the hand-offs over the clean steps), so the
steps drawn are two in a row whose hand-offs are nearest that median, not the first ones: a run's first steps need
not be typical (in the example runs their hand-offs take longer), and would show steps the claim is not about."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from build_tools.core._types import RunSummary
from build_tools.readers import counted_phases, series_of, step_values

from ._common import SHADE_ALPHA, colour, fitted, label, legend, new_figure, on_phone, shade_heat_pauses, shaded

ALT = ("GPU memory held by the trainer and by the rollout engine over two typical steps, the two clean steps in a "
       "row whose hand-offs are nearest the run's median: one side holds the memory while the other holds almost "
       "none, and they swap during the short shaded hand-offs; the seconds of each step's hand-offs are written "
       "above it, and a label at the top gives the median over the run's clean steps.")
ALT_NAMES = {"drawn": ["trainer", "rollout engine", "hand-off", "median"], "axes": ["GPU memory held"]}
STEPS_SHOWN = 2
HAND_OFFS = ("sleep", "wake_up", "update_weights")


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    summary = next(iter(runs.values()))
    # What the claim's check reads: the hand-offs of each clean step (their median is the caption's "about 2 s").
    typical = step_values(summary, [f"perf/{name}_time" for name in HAND_OFFS])
    shown = nearest_run(typical, float(typical.median()), STEPS_SHOWN)
    window = summary.steps.loc[shown]
    t0, t1 = float(window["t0"].min()), float(window["t1"].max())
    held = series_of(summary, "held_memory", "ts", "side", "gib")
    held = held[(held["ts"] >= t0) & (held["ts"] <= t1)]
    hand_offs = counted_phases(summary, HAND_OFFS)
    hand_offs = hand_offs[hand_offs["step"].isin(shown)]
    data = pd.concat([
        pd.DataFrame({"series": held["side"].to_numpy(), "t0_s": (held["ts"] - t0).to_numpy(), "t1_s": float("nan"),
                      "gib": held["gib"].to_numpy()}),
        pd.DataFrame({"series": hand_offs["name"].to_numpy(), "t0_s": (hand_offs["t0"] - t0).to_numpy(),
                      "t1_s": (hand_offs["t1"] - t0).to_numpy(), "gib": float("nan"),
                      "step": hand_offs["step"].to_numpy()}),
    ], ignore_index=True)

    figure, ax = new_figure(height=3.4)
    for side, role in (("trainer", "trainer"), ("engine", "engine")):
        samples = data[data["series"] == side]
        ax.fill_between(samples["t0_s"], samples["gib"], step="post", **shaded(role, SHADE_ALPHA * 1.5))
        ax.step(samples["t0_s"], samples["gib"], where="post", color=colour(role), lw=1.3, label=label(role))
    spans = data[data["series"].isin(HAND_OFFS)]
    # The data and the hand-offs stay below `band_top` of the axes; the labels are above it, on white.
    band_top = 0.56 if on_phone() else 0.72
    for index, row in enumerate(spans.itertuples()):
        ax.axvspan(row.t0_s, row.t1_s, ymax=band_top, color=colour("lifecycle"), lw=0,
                   label="hand-off (sleep, wake-up, weight update)" if index == 0 else None)
    # Each step shown: its hand-offs as the check reads them, over the middle of the step.
    middles = window[["t0", "t1"]].astype(float).mean(axis=1) - t0
    for step in shown:
        total = float(typical[step])
        middle = float(middles[step])
        between = "\n" if on_phone() else " "  # a phone's two labels side by side: each on two lines
        ax.annotate(f"step {int(step)}:{between}{total:.1f} s", xy=(middle, band_top),
                    xycoords=("data", "axes fraction"), xytext=(0, 3), textcoords="offset points", ha="center",
                    va="bottom")
    # The caption's "about 2 s of each step": the run's typical step, as the claim's check reads it, the median
    # over its clean steps.
    # On a phone, two lines of at most 30 characters: short enough to keep clear of the figure's right edge.
    ax.text(0.01, 0.98, fitted(f"timed hand-offs: {typical.median():.1f} s a step, the median of {len(typical)} "
                               "clean steps", 30), transform=ax.transAxes, ha="left", va="top", weight="bold")
    shade_heat_pauses(ax, summary, t0, 1.0)
    ax.set_xlim(0, t1 - t0)
    ax.set_ylim(0, float(data["gib"].max()) / band_top * 1.02)
    ax.set_xlabel(f"time since step {int(shown[0])} began (s)")
    ax.set_ylabel("GPU memory held (GiB)")
    legend(ax, figure=figure, loc="outside lower center", ncols=3)
    labelled = pd.DataFrame({"series": "hand_offs_of_step", "t0_s": float("nan"), "t1_s": float("nan"),
                             "gib": float("nan"), "step": list(shown), "seconds": typical[shown].to_numpy()})
    median = pd.DataFrame({"series": ["median_hand_offs_per_clean_step"], "t0_s": [float("nan")],
                           "t1_s": [float("nan")], "gib": [float("nan")], "seconds": [float(typical.median())]})
    return figure, pd.concat([data, labelled, median], ignore_index=True)


def nearest_run(values: pd.Series, target: float, length: int) -> list[int]:
    """`length` consecutive steps of `values` (by step) whose values are all nearest `target`: the run of steps
    whose farthest value is the least far from it (the first such run on a tie). Fewer steps than `length`: all."""
    steps = [int(step) for step in values.index]
    runs = [steps[i:i + length] for i in range(len(steps) - length + 1)
            if steps[i + length - 1] - steps[i] == length - 1] or [steps]
    return min(runs, key=lambda run: max(abs(float(values[step]) - target) for step in run))
