"""Fig. "filter batches": groups the dynamic filter dropped per step, and the over-sampling batches drawn."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ._common import INK, colour, metric, new_figure, stream

RUNS_NEEDED = ("dynamic-filter-seed1",)
ALT = ("Two panels over the steps: the groups the filter dropped, with the split line, and the over-sampling "
       "batches drawn.")
DROPPED = "rollout/dynamic_filter/drop_zero_std"
DEFAULT_SPLIT = 16  # used when the figure block sets no `split` option
OPTIONS = {"split": "number"}  # the options a figure block may set (build_tools/_figure_modules.py)


def draw(runs: Mapping[str, Any], tables: Mapping[str, Any],
         options: Mapping[str, Any] | None = None) -> tuple[Figure, pd.DataFrame]:
    split = float((options or {}).get("split", DEFAULT_SPLIT))
    summary = next(iter(runs.values()))
    dropped = metric(summary, DROPPED)
    sampling = stream(summary, "sampling", ("step", "batches")).set_index("step")["batches"]
    data = pd.DataFrame({"step": dropped.index.astype(int), "dropped_groups": dropped.to_numpy(),
                         "batches": sampling.reindex(dropped.index).to_numpy(dtype=float), "split": split})

    figure, (top, bottom) = new_figure(2, 1, height=3.8, sharex=True)
    top.bar(data["step"], data["dropped_groups"], color=colour("data"), width=0.7, label="groups dropped")
    top.axhline(split, color=INK, ls="--", lw=1.0, label=f"{split:g} groups")
    top.set_ylabel("groups dropped")
    top.legend(loc="upper left", ncols=2)
    bottom.bar(data["step"], data["batches"], color=colour("engine"), width=0.7)
    bottom.set_yticks(range(0, int(data["batches"].max()) + 1))
    bottom.set_ylabel("batches drawn")
    bottom.set_xlabel("step")
    return figure, data
