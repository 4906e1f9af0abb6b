"""Fig. "model size hand-offs": median weight-update and trainer-offload times of two model sizes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ._common import colour, metric, new_figure, setting

RUNS_NEEDED = ("baseline-seed1", "qwen3-1.7b")
ALT = ("Grouped bars of the median weight update and trainer offload for the two model sizes: both grow with "
       "the model, the offload more than the update.")
METRICS = {"perf/update_weights_time": "weight update", "perf/sleep_time": "trainer offload (sleep)"}
HATCHES = ("", "///", "...", "xxx")


def draw(runs: Mapping[str, Any], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    rows = [{"run": run_id, "model_size": str(setting(summary, "model.size")), "metric": key,
             "median_s": float(metric(summary, key, summary.clean_steps).median())}
            for run_id, summary in runs.items() for key in METRICS]
    data = pd.DataFrame(rows)

    figure, ax = new_figure(height=2.8)
    sizes = list(dict.fromkeys(data["model_size"]))
    width = 0.8 / len(sizes)
    positions = np.arange(len(METRICS))
    for index, (size, hatch) in enumerate(zip(sizes, HATCHES, strict=False)):
        values = data[data["model_size"] == size].set_index("metric").loc[list(METRICS), "median_s"]
        bars = ax.bar(positions + (index - (len(sizes) - 1) / 2) * width, values, width * 0.95,
                      color=colour("lifecycle"), alpha=1.0 - 0.45 * index, hatch=hatch or None,
                      label=f"Qwen3-{size}")
        ax.bar_label(bars, fmt="%.1f s", fontsize=8, padding=2)
    ax.set_xticks(positions, list(METRICS.values()))
    ax.set_ylabel("median time per step (s)")
    ax.margins(y=0.15)
    ax.grid(axis="x", visible=False)
    ax.legend(loc="upper left")
    return figure, data
