"""Fig. "reward curves": the reward of every step of each baseline seed, with its least-squares trend."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ._common import INK, colour, least_squares_trend, metric, new_figure, seed_label

RUNS_NEEDED = ("baseline-seed1", "baseline-seed2", "baseline-seed3")
ALT = ("One panel per seed: the reward of each step jumps up and down around a least-squares trend line that "
       "rises in every panel.")
KEY = "rollout/raw_reward"


def draw(runs: Mapping[str, Any], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    frames = []
    for run_id, summary in runs.items():
        reward = metric(summary, KEY)
        steps = reward.index.to_numpy(dtype=float)
        slope, intercept = least_squares_trend(steps, reward.to_numpy())
        frames.append(pd.DataFrame({"run": run_id, "step": reward.index.astype(int), "reward": reward.to_numpy(),
                                    "trend": intercept + slope * steps}))
    data = pd.concat(frames, ignore_index=True)

    figure, axes = new_figure(1, len(runs), height=2.6, sharey=True)
    for ax, (run_id, run_data) in zip(np.atleast_1d(axes), data.groupby("run", sort=False), strict=True):
        ax.plot(run_data["step"], run_data["reward"], color=colour("data"), lw=1.0, marker="o", ms=2.5,
                label="reward of the step")
        ax.plot(run_data["step"], run_data["trend"], color=INK, lw=1.2, ls="--", label="least-squares trend")
        ax.set_title(seed_label(str(run_id)))
        ax.set_xlabel("step")
    np.atleast_1d(axes)[0].set_ylabel("mean raw reward")
    np.atleast_1d(axes)[0].legend(loc="upper left")
    return figure, data
