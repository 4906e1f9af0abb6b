"""Fig. "trainer state 4B": host memory of the two 4B runs against the machine, Ray's limit and the
estimated trainer state, with Ray's kills."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ._common import (
    INK,
    SHADE_ALPHA,
    colour,
    events,
    new_figure,
    setting,
    shade_heat_pauses,
    start_ts,
    stream,
)

RUNS_NEEDED = ("qwen3-4b-a", "qwen3-4b-b")
ALT = ("Host memory used by the large-model runs over time, against the estimated trainer state, the "
       "machine's memory and Ray's memory limit, where Ray kills a worker.")
GIB = 1024**3
MINUTE = 60.0
LINESTYLES = ("-", "--", ":", "-.")


def _limits(summary: Any) -> dict[str, float]:
    memory = float(setting(summary, "hardware.memory_gib"))
    parameters = float(setting(summary, "model.parameters"))
    per_parameter = float(setting(summary, "lab.trainer_bytes_per_parameter"))
    return {"machine_gib": memory, "ray_limit_gib": memory * float(setting(summary, "lab.ray_memory_usage_threshold")),
            "trainer_state_gib": parameters * per_parameter / GIB}


def draw(runs: Mapping[str, Any], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    frames = []
    for run_id, summary in runs.items():
        memory = stream(summary, "host_memory", ("ts", "used_gib"))
        origin = start_ts(summary)
        kills = events(summary, "ray_oom_kill", required=True)
        frames.append(pd.DataFrame({"run": run_id, "series": "host_memory_used",
                                    "minute": (memory["ts"] - origin) / MINUTE, "gib": memory["used_gib"]}))
        at_kill = [float(memory["used_gib"].iloc[(memory["ts"] - t0).abs().argmin()]) for t0 in kills["t0"]]
        frames.append(pd.DataFrame({"run": run_id, "series": "ray_oom_kill",
                                    "minute": (kills["t0"] - origin).to_numpy() / MINUTE, "gib": at_kill}))
    limits = _limits(next(iter(runs.values())))
    frames.append(pd.DataFrame({"run": "", "series": list(limits), "minute": float("nan"),
                                "gib": list(limits.values())}))
    data = pd.concat(frames, ignore_index=True)

    figure, ax = new_figure(height=3.4)
    ax.axhspan(0, limits["trainer_state_gib"], color=colour("trainer"), alpha=SHADE_ALPHA, lw=0,
               label=f"estimated trainer state ({limits['trainer_state_gib']:.0f} GiB)")
    ax.axhline(limits["machine_gib"], color=INK, lw=1.0, label=f"machine memory ({limits['machine_gib']:.1f} GiB)")
    ax.axhline(limits["ray_limit_gib"], color=colour("outside"), lw=1.2, ls="--",
               label=f"Ray memory limit ({limits['ray_limit_gib']:.1f} GiB)")
    for (run_id, summary), style in zip(runs.items(), LINESTYLES, strict=False):
        run_data = data[(data["run"] == run_id) & (data["series"] == "host_memory_used")]
        ax.plot(run_data["minute"], run_data["gib"], color=colour("outside"), lw=1.2, ls=style,
                label=f"host memory used, {run_id}")
        shade_heat_pauses(ax, summary, start_ts(summary), MINUTE)
    kills = data[data["series"] == "ray_oom_kill"]
    ax.plot(kills["minute"], kills["gib"], ls="none", marker="X", ms=8, color=colour("failure"),
            label="Ray out-of-memory kill")
    ax.set_ylim(0, limits["machine_gib"] * 1.12)
    ax.set_xlim(left=0)
    ax.set_xlabel("time since the run started (min)")
    ax.set_ylabel("memory (GiB)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2)
    return figure, data
