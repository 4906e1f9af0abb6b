"""Fig. "memory hand-offs": GPU memory held by the trainer and the engine over two steps, hand-offs shaded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from build_tools._types import RunSummary
from build_tools.readers import counted_phases, series_of, step_values

from ._common import SHADE_ALPHA, colour, label, legend, new_figure, shade_heat_pauses

ALT = ("GPU memory held by the trainer and by the rollout engine over two steps: one side holds the memory "
       "while the other holds almost none, and they swap during the short shaded hand-offs, whose seconds "
       "each step shown are written at the top, and the title gives the median over the run's clean steps.")
ALT_NAMES = {"drawn": ["trainer", "rollout engine", "hand-off", "median"], "axes": ["GPU memory held"]}
STEPS_SHOWN = 2
HAND_OFFS = ("sleep", "wake_up", "update_weights")


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    summary = next(iter(runs.values()))
    shown = summary.clean_steps.index[:STEPS_SHOWN]
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
        ax.fill_between(samples["t0_s"], samples["gib"], step="post", color=colour(role), alpha=SHADE_ALPHA * 1.5,
                        lw=0)
        ax.step(samples["t0_s"], samples["gib"], where="post", color=colour(role), lw=1.3, label=label(role))
    spans = data[data["series"].isin(HAND_OFFS)]
    for index, row in enumerate(spans.itertuples()):
        ax.axvspan(row.t0_s, row.t1_s, color=colour("lifecycle"), alpha=0.45, lw=0,
                   label="hand-off (sleep, wake-up, weight update)" if index == 0 else None)
    # The caption's "about 2 s of each step": the hand-offs of each step shown, added up.
    for _, of_step in spans.groupby("step"):
        total, step = float((of_step["t1_s"] - of_step["t0_s"]).sum()), int(of_step["step"].iloc[0])
        ax.annotate(f"hand-offs of step {step}: {total:.1f} s", xy=(float(of_step["t1_s"].max()), 1),
                    xycoords=("data", "axes fraction"), xytext=(-4, -3), textcoords="offset points", ha="right",
                    va="top")
    # ... and the run's typical step, as the claim's check reads it: the median over its clean steps.
    typical = step_values(summary, [f"perf/{name}_time" for name in HAND_OFFS])
    ax.set_title(f"hand-offs per step, median of the run's {len(typical)} clean steps: {typical.median():.1f} s")
    shade_heat_pauses(ax, summary, t0, 1.0)
    ax.set_xlim(0, t1 - t0)
    ax.set_ylim(0, float(data["gib"].max()) * 1.3)
    ax.set_xlabel("time since the first step began (s)")
    ax.set_ylabel("GPU memory held (GiB)")
    legend(ax, figure=figure, loc="outside lower center", ncols=3)
    data = pd.concat([data, pd.DataFrame({"series": ["median_hand_offs_per_clean_step"], "t0_s": [float("nan")],
                                          "t1_s": [float("nan")], "gib": [float("nan")],
                                          "seconds": [float(typical.median())]})], ignore_index=True)
    return figure, data
