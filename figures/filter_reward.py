"""Fig. "filter reward": the reward of all groups before the dynamic filter against the reward after it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from build_tools.core._types import RunSummary
from build_tools.readers import series_of, step_values

from ._common import INK, PAPER, colour, fitted, legend, new_figure

ALT = ("Two panels over the steps: above, the mean raw reward counted before the filter (all groups, a dashed "
       "dark line with hollow squares) and after it (the groups kept, a solid green line with dots); below, "
       "bars of the difference, before minus after, filled where the reward before the filter was higher, "
       "with the count of those steps.")
ALT_NAMES = {"drawn": ["before the filter", "after the filter", "all groups", "groups kept", "before minus after"],
             "axes": ["mean raw reward"]}
AFTER = "rollout/raw_reward"


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    summary = next(iter(runs.values()))
    after = step_values(summary, AFTER)
    before = series_of(summary, "sampling", "step", "reward_before_filter").set_index("step")["reward_before_filter"]
    data = pd.DataFrame({"step": after.index.astype(int),
                         "reward_before_filter": before.reindex(after.index).to_numpy(dtype=float),
                         "reward_after_filter": after.to_numpy()})
    data["before_higher"] = data["reward_before_filter"] > data["reward_after_filter"]

    data["before_minus_after"] = data["reward_before_filter"] - data["reward_after_filter"]

    figure, (ax, diff_ax) = new_figure(2, 1, height=4.8, sharex=True, height_ratios=(3, 2))
    # Two readings of the same reward: told apart by colour, line, marker and fill, and named below.
    ax.plot(data["step"], data["reward_before_filter"], color=INK, ls=(0, (4, 2)), lw=1.2, marker="s", ms=6,
            mfc=PAPER, label="before the filter (all groups)")
    ax.plot(data["step"], data["reward_after_filter"], color=colour("data"), lw=2.0, marker="o", ms=6,
            label="after the filter (groups kept)")
    ax.set_ylabel("mean raw reward")
    # The caption's "higher in 8 of the 12 steps": the difference of every step, and the count.
    higher = data["before_higher"]
    diff_ax.bar(data["step"], data["before_minus_after"], width=0.7, color=[colour("data") if h else PAPER
                                                                            for h in higher],
                edgecolor=colour("data"), lw=1.2)
    diff_ax.axhline(0, color=INK, lw=0.8)
    diff_ax.set_title(fitted(f"before minus after: above zero at {int(higher.sum())} of {len(data)} steps"))
    diff_ax.set_ylabel("difference")
    diff_ax.set_xlabel("step")
    diff_ax.set_xticks(data["step"])
    for axes in (ax, diff_ax):
        axes.grid(axis="x", visible=False)
    legend(ax, figure=figure, loc="outside lower center", ncols=2)
    return figure, data
