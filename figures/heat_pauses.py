"""Fig. "heat pauses": step time per step, the steps a heat-guard pause touched highlighted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ._common import SHADE_ALPHA, colour, metric, new_figure, seed_label

RUNS_NEEDED = ("baseline-seed2", "baseline-seed3")
ALT = ("Step time per step of two seeds: the steps that overlapped a heat-guard pause stand out above the "
       "clean steps; dashed lines give the median of each kind.")
KEY = "perf/step_time"


def draw(runs: Mapping[str, Any], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    frames = []
    for run_id, summary in runs.items():
        step_time = metric(summary, KEY)
        touched = summary.steps["heat_touched"].reindex(step_time.index, fill_value=False).astype(bool)
        frames.append(pd.DataFrame({"run": run_id, "series": np.where(touched, "touched", "clean"),
                                    "step": step_time.index.astype(float), "step_time_s": step_time.to_numpy()}))
        for kind, mask in (("median_clean", ~touched), ("median_touched", touched)):
            if mask.any():
                frames.append(pd.DataFrame({"run": [run_id], "series": [kind], "step": [np.nan],
                                            "step_time_s": [float(step_time[mask].median())]}))
    data = pd.concat(frames, ignore_index=True)

    figure, axes = new_figure(1, len(runs), height=2.8, sharey=True)
    for ax, run_id in zip(np.atleast_1d(axes), runs, strict=True):
        run_data = data[data["run"] == run_id]
        for row in run_data[run_data["series"] == "touched"].itertuples():
            ax.axvspan(row.step - 0.5, row.step + 0.5, color=colour("outside"), alpha=SHADE_ALPHA * 2, lw=0)
        for kind, role, text in (("clean", "lifecycle", "clean step"),
                                 ("touched", "outside", "step touched by a heat pause")):
            points = run_data[run_data["series"] == kind]
            ax.plot(points["step"], points["step_time_s"], ls="none", marker="o", ms=4, color=colour(role),
                    label=text)
        for kind, role, text in (("median_clean", "lifecycle", "median, clean"),
                                 ("median_touched", "outside", "median, touched")):
            median = run_data[run_data["series"] == kind]["step_time_s"]
            if not median.empty:
                ax.axhline(float(median.iloc[0]), color=colour(role), ls="--", lw=1.0, label=text)
        ax.set_title(seed_label(run_id))
        ax.set_xlabel("step")
    first = np.atleast_1d(axes)[0]
    first.set_ylabel("step time (s)")
    figure.legend(*first.get_legend_handles_labels(), loc="outside lower center", ncols=4)
    return figure, data
