"""A test figure: the reward of each step of each run, in the data role."""

from __future__ import annotations

import pandas as pd

from build_tools.readers import step_values
from figures._common import colour, new_figure

ALT = "Reward per step."
OPTIONS = {"split": "number"}  # accepted and not drawn: a changed option must still redraw the figure


def draw(runs, tables, options=None):
    frames = [pd.DataFrame({"run": run_id, "step": step_values(s, "rollout/raw_reward").index,
                            "reward": step_values(s, "rollout/raw_reward").to_numpy()}) for run_id, s in runs.items()]
    data = pd.concat(frames, ignore_index=True)
    figure, ax = new_figure()
    for run_id, run_data in data.groupby("run"):
        ax.plot(run_data["step"], run_data["reward"], color=colour("data"), label=run_id)
    ax.set_xlabel("step")
    ax.set_ylabel("mean raw reward")
    return figure, data
