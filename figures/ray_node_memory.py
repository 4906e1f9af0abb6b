"""Fig. "Ray node memory": the node memory share Ray reads, up to its kill, against its threshold."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ._common import INK, colour, events, new_figure, setting, stream

RUNS_NEEDED = ("qwen3-4b-a", "qwen3-4b-b")
ALT = ("Node memory share of the large-model runs in the minutes before Ray's kill: both climb to Ray's "
       "threshold of the whole node's memory, and the kill comes there.")
MINUTE = 60.0
WINDOW_MIN = 10.0  # minutes before the kill shown
LINESTYLES = ("-", "--", ":", "-.")


def draw(runs: Mapping[str, Any], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    frames = []
    thresholds = []
    for run_id, summary in runs.items():
        memory = stream(summary, "host_memory", ("ts", "used_frac"))
        kill = float(events(summary, "ray_oom_kill", required=True)["t0"].iloc[0])
        thresholds.append(float(setting(summary, "lab.ray_memory_usage_threshold")))
        minute = (memory["ts"] - kill) / MINUTE
        shown = (minute >= -WINDOW_MIN) & (minute <= 0)
        frames.append(pd.DataFrame({"run": run_id, "series": "node_memory_used",
                                    "minute_to_kill": minute[shown], "used_pct": memory["used_frac"][shown] * 100}))
        at_kill = float(memory["used_frac"].iloc[(memory["ts"] - kill).abs().argmin()]) * 100
        frames.append(pd.DataFrame({"run": [run_id], "series": ["ray_oom_kill"], "minute_to_kill": [0.0],
                                    "used_pct": [at_kill]}))
    threshold = max(thresholds) * 100
    data = pd.concat(frames, ignore_index=True).assign(threshold_pct=threshold)

    figure, ax = new_figure(height=2.9)
    for run_id, style in zip(runs, LINESTYLES, strict=False):
        run_data = data[(data["run"] == run_id) & (data["series"] == "node_memory_used")]
        ax.plot(run_data["minute_to_kill"], run_data["used_pct"], color=colour("outside"), ls=style, lw=1.3,
                label=f"node memory used, {run_id}")
    ax.axhline(threshold, color=INK, ls="--", lw=1.0, label=f"Ray threshold ({threshold:.0f} % of the node)")
    kills = data[data["series"] == "ray_oom_kill"]
    ax.plot(kills["minute_to_kill"], kills["used_pct"], ls="none", marker="X", ms=8, color=colour("failure"),
            label="Ray kills a worker")
    ax.set_xlim(-WINDOW_MIN, 0.5)
    ax.set_ylim(top=100)
    ax.set_xlabel("time before Ray's kill (min)")
    ax.set_ylabel("node memory used (%)")
    ax.legend(loc="lower right")
    return figure, data
