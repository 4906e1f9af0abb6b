"""Fig. "step phases": a timeline of a few steps of one baseline run, every phase on the one GPU."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from build_tools.core._types import RunSummary
from build_tools.readers import counted_phases

from ._common import INK, PAPER, colour, figure_legend, new_figure, on_phone, shade_heat_pauses

ALT = ("Three panels of one timeline: above, the first clean steps of one baseline seed, in one row for its one "
       "GPU; below, two close-ups of the first step: in each step the rollout comes first, then scoring, log "
       "probabilities, training, and the weight update, one after another without overlap, with the short "
       "wake-up and sleep between them.")
ALT_NAMES = {"drawn": ["baseline-seed1", "GPU 0", "clean steps", "from the rollout to the log probabilities",
                       "from training to the next step", "rollout", "scoring", "log probabilities", "training",
                       "weight update", "wake-up", "sleep"],
             "axes": []}
STEPS_SHOWN = 3
PAD_S = 1.5  # seconds shown either side of the short phases in the close-ups

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


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    summary = next(iter(runs.values()))
    shown = summary.clean_steps.index[:STEPS_SHOWN]
    chosen = counted_phases(summary, tuple(PHASES))
    chosen = chosen[chosen["step"].isin(shown)].sort_values("t0", kind="stable")
    origin = float(chosen["t0"].min())
    data = pd.DataFrame({"step": chosen["step"].astype(int).to_numpy(), "phase": chosen["name"].to_numpy(),
                         "t0": (chosen["t0"] - origin).to_numpy(), "t1": (chosen["t1"] - origin).to_numpy()})

    # The whole steps above; below, two close-ups of the first step's short phases, which are slivers above.
    figure, panels = new_figure(height=4.6, mosaic=[["all", "all"], ["after_rollout", "after_training"]],
                                phone_height=6.4)
    ax = panels["all"]
    first = data[data["step"] == data["step"].min()]
    following = data[data["step"] > data["step"].min()]
    end_of = dict(zip(first["phase"], first["t1"], strict=True))
    start_of = dict(zip(first["phase"], first["t0"], strict=True))
    next_start = float(following["t0"].min()) if not following.empty else float(first["t1"].max())
    # Close-up A's title on one line on a phone too (two would run into the gap's label): the words it needs.
    windows = {"after_rollout": ("A: rollout to log probabilities" if on_phone()
                                 else "A: from the rollout to the log probabilities",
                                 end_of["rollout"] - PAD_S, start_of["log_probs"] + PAD_S),
               "after_training": ("B: from training to the next step",
                                  end_of["actor_train"] - PAD_S, max(next_start, float(first["t1"].max())) + PAD_S)}
    for name, panel in panels.items():
        for phase, t0, t1 in zip(data["phase"], data["t0"], data["t1"], strict=True):
            text, role, hatch = PHASES[phase]
            panel.broken_barh([(t0, t1 - t0)], (0.1, 0.8), facecolors=colour(role),
                              edgecolor=PAPER, hatch=hatch or None, lw=0.4)
        shade_heat_pauses(panel, summary, origin, 1.0, labelled=False)
        panel.set_ylim(0, 1.25 if name == "all" else 1.0)
        panel.set_yticks([0.5], ["GPU 0"])
        panel.grid(axis="y", visible=False)
        if name in windows:
            title, start, end = windows[name]
            panel.set_xlim(start, end)
            panel.set_title(title)
            panel.set_xlabel("time (s)")
            ax.add_patch(Rectangle((start, 0.02), end - start, 0.96, fill=False, edgecolor=INK, lw=1.0))
            ax.annotate(title[0], xy=(end, 0.98), xytext=(2, 0), textcoords="offset points", va="top")
    for step, group in data.groupby("step"):
        ax.annotate(f"step {step}", xy=(group["t0"].min(), 1.0), xytext=(0, 2), textcoords="offset points",
                    va="bottom")
    # Close-up A's empty stretch: the time between the rollout's end and the next phase Miles times.
    after = float(first.loc[first["t0"] >= end_of["rollout"], "t0"].min())
    untimed = after - end_of["rollout"]
    close_up = panels["after_rollout"]
    close_up.annotate("", xy=(end_of["rollout"], 0.5), xytext=(after, 0.5),
                      arrowprops={"arrowstyle": "<->", "color": INK, "lw": 0.8, "shrinkA": 0, "shrinkB": 0})
    # Two lines, not three: on a phone a third would reach the close-up's title.
    close_up.text((end_of["rollout"] + after) / 2, 0.55, f"{untimed:.1f} s\nno phase timed", ha="center",
                  va="bottom", linespacing=1.1)
    # On a phone without "the": the title is as wide as the phone's figure, and a wider font would cut it.
    ax.set_title(f"{summary.run_id}: {'' if on_phone() else 'the '}first {len(shown)} clean steps")
    ax.set_xlim(0, float(data["t1"].max()))
    ax.set_xlabel("time since the first step began (s)")
    handles = [Patch(facecolor=colour(role), edgecolor=PAPER, hatch=hatch or None, label=text)
               for text, role, hatch in PHASES.values()]
    # A figure legend "outside" the axes is one that constrained layout makes room for.
    figure_legend(figure, handles, [str(handle.get_label()) for handle in handles], ncols=4)
    untimed_row = {"step": int(first["step"].iloc[0]), "phase": "untimed", "t0": end_of["rollout"], "t1": after}
    return figure, pd.concat([data, pd.DataFrame([untimed_row])], ignore_index=True)
