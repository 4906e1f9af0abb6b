"""Fig. "model size hand-offs": median weight-update and trainer-offload times of two model sizes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from build_tools.core._types import RunSummary
from build_tools.readers import config_value, step_values

from ._common import PAPER, colour, figure_legend, new_figure

ALT = ("Grouped bars of the median weight update and trainer offload for the two model sizes, each labelled "
       "in seconds: both grow with the model, the offload more than the update, and above each pair the ratio "
       "of the larger model's time to the smaller one's.")
ALT_NAMES = {"drawn": ["weight update", "trainer offload", "Qwen3-0.6B", "Qwen3-1.7B", "grew"], "axes": []}
METRICS = {"perf/update_weights_time": "weight update", "perf/sleep_time": "trainer offload (sleep)"}
HATCHES = ("", "///", "...", "xxx")


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    rows = [{"run": run_id, "model_size": str(config_value(summary, "model.size")), "metric": key,
             "median_s": float(step_values(summary, key).median())}
            for run_id, summary in runs.items() for key in METRICS]
    data = pd.DataFrame(rows)

    sizes = list(dict.fromkeys(data["model_size"]))
    medians = data.pivot(index="metric", columns="model_size", values="median_s").loc[list(METRICS), sizes]
    ratios = medians[sizes[-1]] / medians[sizes[0]]
    data = pd.concat([data, pd.DataFrame({"run": f"{medians.columns[-1]} / {medians.columns[0]}", "model_size": "",
                                          "metric": list(METRICS), "ratio": ratios.to_numpy()})],
                     ignore_index=True)

    figure, ax = new_figure(height=3.4)
    width = 0.8 / len(sizes)
    positions = np.arange(len(METRICS))
    for index, (size, hatch) in enumerate(zip(sizes, HATCHES, strict=False)):
        bars = ax.bar(positions + (index - (len(sizes) - 1) / 2) * width, medians[size], width * 0.95,
                      color=colour("lifecycle") if index == 0 else PAPER, edgecolor=colour("lifecycle"),
                      hatch=hatch or None, lw=1.2,
                      label=f"Qwen3-{size}")
        ax.bar_label(bars, fmt="%.2f s", padding=2)
    # The caption's "grew 1.4 times": the ratio of the two medians, above each pair of bars.
    top = float(medians.to_numpy().max())
    for position, (key, ratio) in zip(positions, ratios.items(), strict=True):
        ax.annotate(f"grew {ratio:.2f} times", xy=(position, float(medians.loc[key].max())), xytext=(0, 20),
                    textcoords="offset points", ha="center", va="bottom")
    ax.set_xticks(positions, list(METRICS.values()))
    ax.set_ylim(0, top * 1.35)
    ax.set_ylabel("median time per step (s)")
    ax.grid(axis="x", visible=False)
    figure_legend(figure, *ax.get_legend_handles_labels(), ncols=len(sizes))
    return figure, data
