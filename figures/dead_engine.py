"""Fig. "dead engine": GPU utilisation of the run without a watchdog, before and after the engine died."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from build_tools.core._types import RunSummary
from build_tools.readers import events_of, series_of, start_ts

from ._common import colour, mark_failure, new_figure, shade_heat_pauses, shaded

ALT = ("GPU utilisation over the run without a watchdog: busy until the engine died, then near zero until the "
       "job ended; the idle span between the two dashed lines is shaded, with its length in minutes.")
ALT_NAMES = {"drawn": ["engine died", "job ended", "GPU idle, job still running"], "axes": ["GPU utilisation"]}
MINUTE = 60.0


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    summary = next(iter(runs.values()))
    util = series_of(summary, "gpu_util", "ts", "util")
    death = events_of(summary, "engine_death").iloc[0]
    end = events_of(summary, "job_end").iloc[0]
    origin = start_ts(summary)
    data = pd.DataFrame({"series": "gpu_util", "minute": (util["ts"] - origin) / MINUTE,
                         "util_pct": util["util"].astype(float)})
    marks = pd.DataFrame({"series": ["engine_death", "job_end"],
                          "minute": [(death["t0"] - origin) / MINUTE, (end["t0"] - origin) / MINUTE]})
    data = pd.concat([data, marks], ignore_index=True)

    figure, ax = new_figure(height=3.0)
    samples = data[data["series"] == "gpu_util"]
    ax.plot(samples["minute"], samples["util_pct"], color=colour("outside"), lw=0.9, label="GPU utilisation")
    dead_at, end_at = marks["minute"]
    ax.axvspan(dead_at, end_at, **shaded("failure"))
    # The caption's number on the span itself: the minutes from the engine's death to the job's end.
    ax.annotate("", xy=(dead_at, 55), xytext=(end_at, 55),
                arrowprops={"arrowstyle": "<->", "color": colour("failure"), "lw": 1.2, "shrinkA": 0, "shrinkB": 0})
    ax.text((dead_at + end_at) / 2, 58, f"GPU idle, job still running: {end_at - dead_at:.0f} min", ha="center",
            va="bottom", color=colour("failure"))
    mark_failure(ax, dead_at, "engine died")
    mark_failure(ax, end_at, "job ended", side="left")
    shade_heat_pauses(ax, summary, origin, MINUTE)
    ax.set_ylim(0, 100)
    ax.set_xlim(0, float(data["minute"].max()) * 1.02)
    ax.set_xlabel("time since the run started (min)")
    ax.set_ylabel("GPU utilisation (%)")
    return figure, data
