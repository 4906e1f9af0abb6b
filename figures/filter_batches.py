"""Fig. "filter batches": groups the dynamic filter dropped per step, and the over-sampling batches drawn."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from build_tools.core._types import RunSummary
from build_tools.readers import config_value, series_of, step_values

from ._common import INK, PAPER, colour, legend, new_figure

ALT = ("Bars of the groups dropped by the filter at each step, with a dashed line at the split: each bar "
       "filled where its step drew one over-sampling batch and hatched where it drew two; the filled bars stay "
       "at or under the line and the hatched ones rise above it.")
ALT_NAMES = {"drawn": ["16 groups", "one batch", "two batches"], "axes": ["groups dropped"]}
DROPPED = "rollout/dynamic_filter/drop_zero_std"
DEFAULT_SPLIT = 16  # used when the figure block sets no `split` option
OPTIONS = {"split": "number"}  # the options a figure block may set (build_tools/drawing/_figure_modules.py)


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

    # One panel: each step's bar says how many batches it drew, so no bar is matched across panels.
    figure, ax = new_figure(height=3.4)
    for batches, group in data.groupby("batches"):
        one = batches == 1
        ax.bar(group["step"], group["dropped_groups"], width=0.7, color=colour("data") if one else PAPER,
               edgecolor=colour("data"), hatch=None if one else "///", lw=1.2,
               label=f"{'one batch' if one else f'{batches:g} batches' if batches != 2 else 'two batches'} "
                     f"of {batch_size} prompts drawn")
    ax.axhline(split, color=INK, ls=(0, (4, 2)), lw=1.0)
    ax.annotate(f"{split:g} groups", xy=(1, split), xycoords=("axes fraction", "data"), xytext=(4, 0),
                textcoords="offset points", va="center")
    ax.set_ylabel("groups dropped")
    ax.set_ylim(0, float(data["dropped_groups"].max()) * 1.1)
    ax.set_xlabel("step")
    ax.set_xticks(data["step"])
    ax.grid(axis="x", visible=False)
    legend(ax, figure=figure, loc="outside lower center", ncols=2)
    return figure, data
