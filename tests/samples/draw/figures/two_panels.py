"""A test figure: two panels side by side on a desktop, stacked on a phone, each panel one run."""

from __future__ import annotations

import pandas as pd

from build_tools.readers import step_values
from figures._common import colour, new_figure

ALT = "Reward per step, one panel per run."


def draw(runs, tables):
    data = pd.concat([pd.DataFrame({"run": run_id, "step": step_values(s, "rollout/raw_reward").index,
                                    "reward": step_values(s, "rollout/raw_reward").to_numpy()})
                      for run_id, s in runs.items()], ignore_index=True)
    figure, axes = new_figure(1, 2, height=2.5)
    for ax, (run_id, run_data) in zip(axes, data.groupby("run"), strict=True):
        ax.plot(run_data["step"], run_data["reward"], color=colour("engine"))
        ax.set_title(str(run_id))
    return figure, data
