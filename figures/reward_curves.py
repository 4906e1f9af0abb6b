"""Fig. "reward curves": the reward of every step of each baseline seed, with its least-squares trend."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from build_tools.core._types import RunSummary
from build_tools.readers import step_values, trend_line

from ._common import INK, colour, legend, new_figure, seed_label

ALT = ("One panel per seed: the mean raw reward of each step jumps up and down around a dashed least-squares "
       "trend line that rises in every panel; each panel gives the trend's rise per step.")
ALT_NAMES = {"drawn": ["seed", "least-squares trend", "per step"], "axes": ["mean raw reward"]}
KEY = "rollout/raw_reward"


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    frames = []
    slopes = {}
    for run_id, summary in runs.items():
        reward = step_values(summary, KEY)
        steps = reward.index.to_numpy(dtype=float)
        slope, intercept = trend_line(reward, run_id)
        slopes[run_id] = slope
        frames.append(pd.DataFrame({"run": run_id, "step": reward.index.astype(int), "reward": reward.to_numpy(),
                                    "trend": intercept + slope * steps, "trend_per_step": slope}))
    data = pd.concat(frames, ignore_index=True)

    figure, axes = new_figure(1, len(runs), height=3.2, sharey=True)
    for ax, (run_name, run_data) in zip(np.atleast_1d(axes), data.groupby("run", sort=False), strict=True):
        ax.plot(run_data["step"], run_data["reward"], color=colour("data"), lw=1.0, marker="o", ms=2.5,
                label="reward of the step")
        ax.plot(run_data["step"], run_data["trend"], color=INK, lw=1.2, ls="--", label="least-squares trend")
        # The caption's "goes up": the slope of the trend, in the empty lower right of the panel.
        slope = slopes[str(run_name)]
        ax.text(0.97, 0.04, f"trend over {len(run_data)} steps:\n{slope:+.4f} per step", ha="right",
                va="bottom", transform=ax.transAxes)
        ax.set_title(seed_label(str(run_name)))
        ax.set_xlabel("step")
    first = np.atleast_1d(axes)[0]
    low, high = float(data["reward"].min()), float(data["reward"].max())
    first.set_ylim(low - 0.4 * (high - low), high + 0.05 * (high - low))  # room for the slope below the data
    first.set_ylabel("mean raw reward")
    legend(first, figure=figure, loc="outside lower center", ncols=2)
    return figure, data
