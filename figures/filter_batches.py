"""Fig. "filter batches": groups the dynamic filter dropped per step, and the over-sampling batches drawn."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from build_tools._types import RunSummary
from build_tools.readers import config_value, series_of, step_values

from ._common import INK, colour, new_figure

ALT = ("Two panels over the same steps: above, bars of the groups dropped by the filter at each step, with a "
       "dashed line at the split; below, bars of the over-sampling batches drawn, one where the bar above stays "
       "at or under the line and two where it rises above it.")
ALT_NAMES = {"drawn": ["16 groups"], "axes": ["groups dropped", "batches of 48 prompts"]}
DROPPED = "rollout/dynamic_filter/drop_zero_std"
DEFAULT_SPLIT = 16  # used when the figure block sets no `split` option
OPTIONS = {"split": "number"}  # the options a figure block may set (build_tools/_figure_modules.py)


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any],
         options: Mapping[str, Any] | None = None) -> tuple[Figure, pd.DataFrame]:
    split = float((options or {}).get("split", DEFAULT_SPLIT))
    summary = next(iter(runs.values()))
    dropped = step_values(summary, DROPPED)
    sampling = series_of(summary, "sampling", "step", "batches").set_index("step")["batches"]
    data = pd.DataFrame({"step": dropped.index.astype(int), "dropped_groups": dropped.to_numpy(),
                         "batches": sampling.reindex(dropped.index).to_numpy(dtype=float), "split": split})

    batch_size = int(config_value(summary, "flags.over_sampling_batch_size"))
    data["batch_size"] = batch_size

    figure, (top, bottom) = new_figure(2, 1, height=4.4, sharex=True)
    top.bar(data["step"], data["dropped_groups"], color=colour("data"), width=0.7)
    top.axhline(split, color=INK, ls=(0, (4, 2)), lw=1.0)
    top.annotate(f"{split:g} groups", xy=(1, split), xycoords=("axes fraction", "data"), xytext=(4, 0),
                 textcoords="offset points", va="center")
    top.set_ylabel("groups dropped")
    top.set_ylim(0, float(data["dropped_groups"].max()) * 1.1)
    bottom.bar(data["step"], data["batches"], color=colour("engine"), width=0.7)
    bottom.set_yticks(range(0, int(data["batches"].max()) + 1))
    bottom.set_ylabel(f"batches of {batch_size}\nprompts drawn")
    bottom.set_xlabel("step")
    bottom.set_xticks(data["step"])
    for ax in (top, bottom):
        ax.grid(axis="x", visible=False)
    return figure, data
