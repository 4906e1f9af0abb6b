"""Fig. "engine kept loaded": rollout time saved per step by keeping the engine loaded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from build_tools.core._types import RunSummary
from build_tools.readers import step_values

from ._common import INK, PAPER, colour, fitted, legend, new_figure, on_phone

ALT = ("Bars per step: the rollout time saved by keeping the engine loaded, each labelled in seconds, on the "
       "steps clean in both runs, with the smallest and largest saving in the title; steps a heat pause "
       "touched in either run have no bar, only a hollow circle on the zero line.")
ALT_NAMES = {"drawn": ["clean in both runs", "heat pause touched in either run"], "axes": ["rollout time saved"]}
KEY = "perf/rollout_time"


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    offloaded, kept = runs.values()
    both = pd.DataFrame({"offloaded_s": step_values(offloaded, KEY, "all"),
                         "kept_loaded_s": step_values(kept, KEY, "all")}).dropna()
    touched = offloaded.steps["heat_touched"].reindex(both.index, fill_value=True) | \
        kept.steps["heat_touched"].reindex(both.index, fill_value=True)
    both["clean_in_both"] = ~touched.astype(bool)
    # A pause adds tens of seconds to a rollout: the saving is only read off steps clean in both runs.
    both["saving_s"] = (both["offloaded_s"] - both["kept_loaded_s"]).where(both["clean_in_both"])
    data = both.reset_index().rename(columns={"index": "step"})
    data["step"] = data["step"].astype(int)

    figure, ax = new_figure(height=3.2)
    clean = data[data["clean_in_both"]]
    bars = ax.bar(clean["step"], clean["saving_s"], color=colour("engine"), width=0.75,
                  label="saving on a step clean in both runs")
    ax.bar_label(bars, fmt="%.2f", padding=2)
    # Steps left out are not data: a hollow mark on the zero line, no bar.
    left_out = data[~data["clean_in_both"]]
    ax.plot(left_out["step"], [0.0] * len(left_out), ls="none", marker="o", ms=8, mfc=PAPER,
            mec=colour("outside"), mew=1.5, clip_on=False, zorder=3,
            label=fitted("step a heat pause touched in either run: left out"))
    ax.axhline(0, color=INK, lw=0.8)
    # The caption's "0.6 to 1.8 s": the smallest and the largest saving.
    ax.set_title(fitted(f"saving on the {len(clean)} steps clean in both runs: {clean['saving_s'].min():.2f} to "
                        f"{clean['saving_s'].max():.2f} s"))
    ax.set_xticks(data["step"])
    ax.grid(axis="x", visible=False)
    # Room above the tallest bar's label for it to stay clear of the title: more on a phone, whose narrower
    # axes make the title two lines and the label as tall against a shorter axes.
    ax.margins(y=0.2 if on_phone() else 0.12)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("step")
    ax.set_ylabel("rollout time saved (s)")
    legend(ax, figure=figure, loc="outside lower center", ncols=1)
    return figure, data
