"""Fig. "engine kept loaded": rollout time saved per step by keeping the engine loaded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ._common import INK, SHADE_ALPHA, colour, metric, new_figure

RUNS_NEEDED = ("baseline-seed2", "kept-loaded-seed2")
ALT = ("Bars per step: the rollout time saved by keeping the engine loaded, on the steps clean in both runs; "
       "steps a heat pause touched in either run are marked and left out.")
KEY = "perf/rollout_time"


def draw(runs: Mapping[str, Any], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    offloaded, kept = runs.values()
    both = pd.DataFrame({"offloaded_s": metric(offloaded, KEY), "kept_loaded_s": metric(kept, KEY)}).dropna()
    touched = offloaded.steps["heat_touched"].reindex(both.index, fill_value=True) | \
        kept.steps["heat_touched"].reindex(both.index, fill_value=True)
    both["clean_in_both"] = ~touched.astype(bool)
    # A pause adds tens of seconds to a rollout: the saving is only read off steps clean in both runs.
    both["saving_s"] = (both["offloaded_s"] - both["kept_loaded_s"]).where(both["clean_in_both"])
    data = both.reset_index().rename(columns={"index": "step"})
    data["step"] = data["step"].astype(int)

    figure, ax = new_figure(height=2.8)
    clean = data[data["clean_in_both"]]
    ax.bar(clean["step"], clean["saving_s"], color=colour("engine"), width=0.75,
           label="saving on a step clean in both runs")
    for index, step in enumerate(data[~data["clean_in_both"]]["step"]):
        ax.axvspan(step - 0.4, step + 0.4, color=colour("outside"), alpha=SHADE_ALPHA * 2, lw=0,
                   label="touched by a heat pause in either run (left out)" if index == 0 else None)
    ax.axhline(0, color=INK, lw=0.8)
    ax.set_xlabel("step")
    ax.set_ylabel("rollout time saved (s)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncols=2)
    return figure, data
