"""Fig. "Ray node memory": the node memory share Ray reads, up to its kill, against its threshold."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from build_tools.core._types import RunSummary
from build_tools.readers import config_value, events_of, series_of

from ._common import INK, colour, legend, new_figure, on_phone

ALT = ("Node memory used, as a share of the whole node, of the two large-model runs in the minutes before Ray's "
       "kill, each line named: both stay below Ray's threshold, drawn dashed, until they jump past it, and the "
       "kill comes there.")
ALT_NAMES = {"drawn": ["qwen3-4b-a", "qwen3-4b-b", "Ray threshold", "Ray kills a worker"],
             "axes": ["node memory used", "time before Ray's kill"]}
MINUTE = 60.0
WINDOW_MIN = 10.0  # minutes before the kill shown
LINESTYLES = ("-", "--", ":", "-.")


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    frames = []
    thresholds = []
    for run_id, summary in runs.items():
        memory = series_of(summary, "host_memory", "ts", "used_frac")
        kill = float(events_of(summary, "ray_oom_kill")["t0"].iloc[0])
        thresholds.append(float(config_value(summary, "lab.ray_memory_usage_threshold")))
        minute = (memory["ts"] - kill) / MINUTE
        shown = (minute >= -WINDOW_MIN) & (minute <= 0)
        frames.append(pd.DataFrame({"run": run_id, "series": "node_memory_used",
                                    "minute_to_kill": minute[shown], "used_pct": memory["used_frac"][shown] * 100}))
        at_kill = float(memory["used_frac"].iloc[(memory["ts"] - kill).abs().argmin()]) * 100
        frames.append(pd.DataFrame({"run": [run_id], "series": ["ray_oom_kill"], "minute_to_kill": [0.0],
                                    "used_pct": [at_kill]}))
    threshold = max(thresholds) * 100
    data = pd.concat(frames, ignore_index=True).assign(threshold_pct=threshold)

    figure, ax = new_figure(height=3.4)
    for index, (run_id, style) in enumerate(zip(runs, LINESTYLES, strict=False)):
        run_data = data[(data["run"] == run_id) & (data["series"] == "node_memory_used")]
        ax.plot(run_data["minute_to_kill"], run_data["used_pct"], color=colour("outside"), ls=style, lw=1.3,
                label="node memory used" if index == 0 else None)
        # Each run named on its own line, the upper one above it and the lower one below it.
        middle = run_data[run_data["minute_to_kill"] >= -WINDOW_MIN / 2].iloc[0]
        upper = middle["used_pct"] >= data[(data["series"] == "node_memory_used")
                                           & (data["minute_to_kill"] == middle["minute_to_kill"])]["used_pct"].max()
        ax.annotate(f"{run_id} ({'dashed' if style == '--' else 'solid'})", xy=(middle["minute_to_kill"],
                    middle["used_pct"]), xytext=(0, 5 if upper else -5), textcoords="offset points", ha="center",
                    va="bottom" if upper else "top", color=INK)
    ax.axhline(threshold, color=INK, ls=(0, (4, 2)), lw=1.0)
    # Above its line, or on a phone (where the kill's label takes the room above) below it.
    ax.annotate(f"Ray threshold: {threshold:.0f} % of the node", xy=(-WINDOW_MIN, threshold),
                xytext=(4, -4 if on_phone() else 4), textcoords="offset points", va="top" if on_phone() else "bottom")
    kills = data[data["series"] == "ray_oom_kill"]
    kill_labels = sorted({f"{value:.1f}" for value in kills["used_pct"]})
    ax.plot(kills["minute_to_kill"], kills["used_pct"], ls="none", marker="X", ms=9, color=colour("failure"),
            label="Ray kills a worker")
    ax.annotate(f"kill at {' and '.join(kill_labels)} %", xy=(0, float(kills["used_pct"].max())), xytext=(-10, 3),
                textcoords="offset points", ha="right", va="bottom", color=colour("failure"))
    ax.set_xlim(-WINDOW_MIN, 0.5)
    ax.set_ylim(top=100)
    ax.set_xlabel("time before Ray's kill (min)")
    ax.set_ylabel("node memory used (%)")
    legend(ax, figure=figure, loc="outside lower center", ncols=2)
    return figure, data
