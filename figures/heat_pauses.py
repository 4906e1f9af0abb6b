"""Fig. "heat pauses": step time per step, the steps a heat-guard pause touched highlighted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from build_tools.core._types import RunSummary
from build_tools.readers import step_values

from ._common import INK, SHADE_ALPHA, colour, figure_legend, new_figure, seed_label, shaded

ALT = ("One panel per seed, step time per step: the steps that overlapped a heat-guard pause, shaded, stand "
       "out above the clean steps; dashed lines give the median of each kind over both seeds, and an arrow "
       "between them gives the difference in seconds.")
ALT_NAMES = {"drawn": ["clean step", "touched by a heat pause", "median of the clean steps",
                       "median of the touched steps", "seed"],
             "axes": ["step time"]}
KEY = "perf/step_time"


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    frames = []
    for run_id, summary in runs.items():
        step_time = step_values(summary, KEY, "all")  # touched steps too: they are the point
        touched = summary.steps["heat_touched"].reindex(step_time.index, fill_value=False).astype(bool)
        frames.append(pd.DataFrame({"run": run_id, "series": np.where(touched, "touched", "clean"),
                                    "step": step_time.index.astype(float), "step_time_s": step_time.to_numpy()}))
    data = pd.concat(frames, ignore_index=True)
    # The caption's "about 45 s longer": the median of the touched steps minus the median of the clean steps,
    # each over the steps of both seeds together, as the claim's check reads them.
    medians = {kind: float(data[data["series"] == kind]["step_time_s"].median()) for kind in ("clean", "touched")}
    data = pd.concat([data, pd.DataFrame({"run": "all", "series": ["median_clean", "median_touched"],
                                          "step": np.nan, "step_time_s": list(medians.values())})],
                     ignore_index=True)

    figure, axes = new_figure(1, len(runs), height=3.6, sharey=True)
    for ax, run_id in zip(np.atleast_1d(axes), runs, strict=True):
        run_data = data[data["run"] == run_id]
        for step in run_data.loc[run_data["series"] == "touched", "step"]:
            ax.axvspan(step - 0.5, step + 0.5, **shaded("outside", SHADE_ALPHA * 2))
        for kind, role, marker, text in (("clean", "lifecycle", "o", "clean step"),
                                         ("touched", "outside", "^", "step touched by a heat pause")):
            points = run_data[run_data["series"] == kind]
            ax.plot(points["step"], points["step_time_s"], ls="none", marker=marker, ms=5, color=colour(role),
                    label=text)
        for kind, role, text in (("clean", "lifecycle", "median of the clean steps"),
                                 ("touched", "outside", "median of the touched steps")):
            ax.axhline(medians[kind], color=colour(role), ls=(0, (4, 2)), lw=1.2, label=f"{text} (both seeds)")
        ax.set_title(seed_label(run_id))
        ax.set_xlabel("step")
    last = np.atleast_1d(axes)[-1]
    last_step = float(data["step"].max())
    last.annotate("", xy=(last_step + 2, medians["clean"]), xytext=(last_step + 2, medians["touched"]),
                  arrowprops={"arrowstyle": "<->", "color": INK, "lw": 1.2, "shrinkA": 0, "shrinkB": 0})
    last.annotate(f"+{medians['touched'] - medians['clean']:.0f} s", xy=(last_step + 2, sum(medians.values()) / 2),
                  xytext=(-5, 0), textcoords="offset points", ha="right", va="center")
    first = np.atleast_1d(axes)[0]
    first.set_ylabel("step time (s)")
    figure_legend(figure, *first.get_legend_handles_labels(), ncols=2)
    return figure, data
