"""Fig. "filter reward": the reward of all groups before the dynamic filter against the reward after it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ._common import PAPER, colour, metric, new_figure, stream

RUNS_NEEDED = ("dynamic-filter-seed1",)
ALT = ("Reward per step counted before the dynamic filter (all groups) and after it (the groups kept); "
       "steps where the reward before the filter was higher are marked.")
AFTER = "rollout/raw_reward"


def draw(runs: Mapping[str, Any], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    summary = next(iter(runs.values()))
    after = metric(summary, AFTER)
    before = stream(summary, "sampling", ("step", "reward_before_filter")).set_index("step")["reward_before_filter"]
    data = pd.DataFrame({"step": after.index.astype(int),
                         "reward_before_filter": before.reindex(after.index).to_numpy(dtype=float),
                         "reward_after_filter": after.to_numpy()})
    data["before_higher"] = data["reward_before_filter"] > data["reward_after_filter"]

    figure, ax = new_figure(height=2.8)
    ax.plot(data["step"], data["reward_before_filter"], color=colour("data"), ls="--", marker="o", ms=5,
            mfc=PAPER, label="before the filter (all groups)")
    ax.plot(data["step"], data["reward_after_filter"], color=colour("data"), marker="o", ms=5,
            label="after the filter (groups kept)")
    higher = data[data["before_higher"]]
    ax.plot(higher["step"], higher["reward_before_filter"], ls="none", marker="^", ms=7, color=colour("lifecycle"),
            label=f"before higher ({len(higher)} of {len(data)} steps)")
    ax.set_xlabel("step")
    ax.set_ylabel("mean raw reward")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncols=3)
    return figure, data
