"""Fig. "step phases": a timeline of a few steps of one baseline run, every phase on the one GPU."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ._common import PAPER, colour, new_figure, phases, shade_heat_pauses

RUNS_NEEDED = ("baseline-seed1", "baseline-seed2", "baseline-seed3")
ALT = ("Timeline of the first three clean steps of one baseline seed, in one row for its one GPU: in each step "
       "the rollout comes first, then scoring, log probabilities, training, and the weight update, one after "
       "another without overlap.")
STEPS_SHOWN = 3

# phase -> (legend text, role, hatch); the order is the order of a step.
PHASES = {
    "rollout": ("rollout", "engine", ""),
    "wake_up": ("wake-up", "lifecycle", "...."),
    "data_preprocess": ("scoring", "data", ""),
    "log_probs": ("log probabilities", "trainer", "////"),
    "actor_train": ("training", "trainer", ""),
    "sleep": ("sleep (offload)", "lifecycle", "xxxx"),
    "update_weights": ("weight update", "lifecycle", ""),
}


def draw(runs: Mapping[str, Any], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    summary = next(iter(runs.values()))
    shown = summary.clean_steps.index[:STEPS_SHOWN]
    chosen = phases(summary, tuple(PHASES))
    chosen = chosen[chosen["step"].isin(shown)].sort_values("t0", kind="stable")
    origin = float(chosen["t0"].min())
    data = pd.DataFrame({"step": chosen["step"].astype(int).to_numpy(), "phase": chosen["name"].to_numpy(),
                         "t0": (chosen["t0"] - origin).to_numpy(), "t1": (chosen["t1"] - origin).to_numpy()})

    figure, ax = new_figure(height=2.8)
    for row in data.itertuples():
        text, role, hatch = PHASES[row.phase]
        ax.broken_barh([(row.t0, row.t1 - row.t0)], (0.1, 0.8), facecolors=colour(role),
                       edgecolor=PAPER, hatch=hatch or None, lw=0.4)
    for step, group in data.groupby("step"):
        ax.annotate(f"step {step}", xy=(group["t0"].min(), 1.0), xytext=(0, 2), textcoords="offset points",
                    va="bottom")
    shade_heat_pauses(ax, summary, origin, 1.0)
    ax.set_title(f"{summary.run_id}: the first {len(shown)} clean steps")
    ax.set_ylim(0, 1.25)
    ax.set_yticks([0.5], ["GPU 0"])
    ax.set_xlim(0, float(data["t1"].max()))
    ax.set_xlabel("time since the first step began (s)")
    ax.grid(axis="y", visible=False)
    handles = [Patch(facecolor=colour(role), edgecolor=PAPER, hatch=hatch or None, label=text)
               for text, role, hatch in PHASES.values()]
    # A figure legend "outside" the axes is one that constrained layout makes room for.
    figure.legend(handles=handles, ncols=4, loc="outside lower center")
    return figure, data
