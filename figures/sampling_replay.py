"""Fig. "sampling replay": the trainer-engine gap per step without and with top-p/top-k replay."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from build_tools.core._types import RunSummary
from build_tools.readers import config_value, step_values

from ._common import PAPER, colour, fitted, new_figure

ALT = ("The trainer-engine gap per step of two runs with top-p and top-k sampling, each line named: the run "
       "that replays the sampling masks in the trainer (solid line, filled dots) lies below the run without "
       "replay (dashed line, hollow dots) at every step, and the title counts those steps.")
ALT_NAMES = {"drawn": ["with top-p and top-k replay", "without replay", "lower"], "axes": ["trainer-engine gap"]}
KEY = "train/train_rollout_logprob_abs_diff"


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    frames = []
    for run_id, summary in runs.items():
        gap = step_values(summary, KEY)
        replay = bool(config_value(summary, "lab.sampling_replay"))
        frames.append(pd.DataFrame({"run": run_id, "replay": replay, "step": gap.index.astype(int),
                                    "gap": gap.to_numpy()}))
    data = pd.concat(frames, ignore_index=True)

    figure, ax = new_figure(height=3.2)
    for replayed, run_data in data.groupby("replay", sort=True):
        text = "with top-p and top-k replay" if replayed else "without replay"
        ax.plot(run_data["step"], run_data["gap"], color=colour("trainer"), marker="o", ms=6, lw=1.6,
                ls="-" if replayed else (0, (4, 2)), mfc=None if replayed else PAPER, label=text)
        # Each line named on the plot: the lower one below it, the upper one above it.
        ax.annotate(text, xy=(float(run_data["step"].mean()), float(run_data["gap"].min() if replayed
                                                                     else run_data["gap"].max())),
                    xytext=(0, -8 if replayed else 8), textcoords="offset points", ha="center",
                    va="top" if replayed else "bottom")
    # The caption's "lower at every one of the 12 steps": the steps where replay gave the lower gap.
    paired = data.pivot(index="step", columns="replay", values="gap").dropna()
    lower = int((paired[True] < paired[False]).sum())
    ax.set_title(fitted(f"with replay, the gap was lower at {lower} of {len(paired)} steps"))
    ax.set_ylim(0, float(data["gap"].max()) * 1.25)
    ax.set_xlabel("step")
    ax.set_ylabel("trainer-engine gap\n(mean |Δ log p| per token)")
    return figure, data
