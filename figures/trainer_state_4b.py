"""Fig. "trainer state 4B": host memory of the two 4B runs against the machine, Ray's limit and the
estimated trainer state, with Ray's kills."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from build_tools.core._types import RunSummary
from build_tools.readers import config_value, events_of, series_of, start_ts

from ._common import INK, colour, fitted, legend, new_figure, shade_heat_pauses, shaded

ALT = ("One panel per large-model run: the host memory used over time climbs in steps to Ray's memory limit, drawn "
       "dashed just below the machine's memory, and Ray kills a worker there; a shaded band from zero is the "
       "estimated trainer state, with its share of the machine.")
ALT_NAMES = {"drawn": ["Ray memory limit", "machine memory", "Ray out-of-memory kill", "estimated trainer state",
                       "of the machine"],
             "axes": []}
GIB = 1024**3
MINUTE = 60.0


def _limits(summary: RunSummary) -> dict[str, float]:
    memory = float(config_value(summary, "hardware.memory_gib"))
    parameters = float(config_value(summary, "model.parameters"))
    per_parameter = float(config_value(summary, "lab.trainer_bytes_per_parameter"))
    threshold = float(config_value(summary, "lab.ray_memory_usage_threshold"))
    return {"machine_gib": memory, "ray_limit_gib": memory * threshold,
            "trainer_state_gib": parameters * per_parameter / GIB}


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    frames = []
    for run_id, summary in runs.items():
        memory = series_of(summary, "host_memory", "ts", "used_gib")
        origin = start_ts(summary)
        kills = events_of(summary, "ray_oom_kill")
        frames.append(pd.DataFrame({"run": run_id, "series": "host_memory_used",
                                    "minute": (memory["ts"] - origin) / MINUTE, "gib": memory["used_gib"]}))
        at_kill = [float(memory["used_gib"].iloc[(memory["ts"] - t0).abs().argmin()]) for t0 in kills["t0"]]
        frames.append(pd.DataFrame({"run": run_id, "series": "ray_oom_kill",
                                    "minute": (kills["t0"] - origin).to_numpy() / MINUTE, "gib": at_kill}))
    limits = _limits(next(iter(runs.values())))
    frames.append(pd.DataFrame({"run": "", "series": list(limits), "minute": float("nan"),
                                "gib": list(limits.values())}))
    data = pd.concat(frames, ignore_index=True)

    share = limits["trainer_state_gib"] / limits["machine_gib"]
    data = pd.concat([data, pd.DataFrame({"run": [""], "series": ["trainer_state_share_of_machine"],
                                          "minute": [float("nan")], "gib": [share]})], ignore_index=True)

    # One panel per run: the runs are told apart by their panel's title, not by a dash.
    figure, axes = new_figure(len(runs), 1, height=2.0 + 1.6 * len(runs), sharex=True, sharey=True)
    for ax, (run_id, summary) in zip(np.atleast_1d(axes), runs.items(), strict=True):
        ax.axhspan(0, limits["trainer_state_gib"], **shaded("trainer"))
        # The caption's "about half the machine", as the ratio of the two numbers.
        gib = limits["trainer_state_gib"]
        state = fitted(f"estimated trainer state: {gib:.0f} GiB, {share:.2f} of the machine", 31)
        ax.text(0.01, limits["trainer_state_gib"] / 2, state, transform=ax.get_yaxis_transform(), va="center")
        ax.axhline(limits["machine_gib"], color=INK, lw=1.0, label=f"machine memory ({limits['machine_gib']:.1f} GiB)")
        ax.axhline(limits["ray_limit_gib"], color=colour("failure"), lw=1.2, ls=(0, (4, 2)),
                   label=f"Ray memory limit ({limits['ray_limit_gib']:.1f} GiB)")
        run_data = data[(data["run"] == run_id) & (data["series"] == "host_memory_used")]
        ax.plot(run_data["minute"], run_data["gib"], color=colour("outside"), lw=1.3, label="host memory used")
        shade_heat_pauses(ax, summary, start_ts(summary), MINUTE)
        kills = data[(data["run"] == run_id) & (data["series"] == "ray_oom_kill")]
        ax.plot(kills["minute"], kills["gib"], ls="none", marker="X", ms=9, color=colour("failure"),
                label="Ray out-of-memory kill")
        ax.set_title(run_id)
        ax.set_ylabel("memory (GiB)")
    first, last = np.atleast_1d(axes)[0], np.atleast_1d(axes)[-1]
    first.set_ylim(0, limits["machine_gib"] * 1.08)
    first.set_xlim(left=0)
    last.set_xlabel("time since the run started (min)")
    legend(first, figure=figure, loc="outside lower center", ncols=2)
    return figure, data
