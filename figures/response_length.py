"""Fig. "response length": mean answer length per step against the length cap, and the truncated share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ._common import INK, colour, metric, new_figure, setting

RUNS_NEEDED = ("baseline-seed1", "baseline-seed2", "baseline-seed3")
ALT = ("Two panels over the steps: the mean answer length falls, below the length cap drawn as a line, and "
       "the share of answers cut at the cap falls with it.")
LENGTH, TRUNCATED = "rollout/response_lengths", "rollout/truncated"
CAP = "flags.rollout_max_response_len"


def draw(runs: Mapping[str, Any], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    frames = [pd.DataFrame({"run": run_id, "step": metric(summary, LENGTH).index.astype(int),
                            "response_length": metric(summary, LENGTH).to_numpy(),
                            "truncated_pct": metric(summary, TRUNCATED).to_numpy() * 100})
              for run_id, summary in runs.items()]
    per_run = pd.concat(frames, ignore_index=True)
    mean = per_run.groupby("step", as_index=False)[["response_length", "truncated_pct"]].mean()
    caps = {int(setting(summary, CAP)) for summary in runs.values()}
    cap = max(caps)
    data = pd.concat([per_run, mean.assign(run="mean")], ignore_index=True).assign(cap_tokens=cap)

    figure, (top, bottom) = new_figure(2, 1, height=4.2, sharex=True, height_ratios=(3, 2))
    for run_id, run_data in per_run.groupby("run", sort=False):
        first = run_id == per_run["run"].iloc[0]
        top.plot(run_data["step"], run_data["response_length"], color=colour("data"), alpha=0.35, lw=0.8,
                 label="one seed" if first else None)
        bottom.plot(run_data["step"], run_data["truncated_pct"], color=colour("data"), alpha=0.35, lw=0.8)
    top.plot(mean["step"], mean["response_length"], color=colour("data"), lw=2.0, label="mean of the seeds")
    bottom.plot(mean["step"], mean["truncated_pct"], color=colour("data"), lw=2.0)
    top.axhline(cap, color=INK, ls="--", lw=1.0, label=f"length cap ({cap:,} tokens)")
    top.set_ylim(0, cap * 1.1)
    top.set_ylabel("mean answer length\n(tokens)")
    top.legend(loc="lower left", ncols=3)
    bottom.set_ylim(bottom=0)
    bottom.set_ylabel("answers cut at\nthe cap (%)")
    bottom.set_xlabel("step")
    return figure, data
