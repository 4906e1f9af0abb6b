"""Fig. "answers per prompt": reward gain against the number of answers per prompt."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ._common import SHADE_ALPHA, colour, metric, new_figure, setting

RUNS_NEEDED = ("baseline-seed1", "baseline-seed2", "baseline-seed3", "n4-seed1", "n16-seed1")
ALT = ("Reward gain of each run against its answers per prompt, with the shaded range of the baseline seeds.")
KEY = "rollout/raw_reward"
WINDOW = 8  # steps at each end whose mean reward gives the gain
REFERENCE_N = 8  # the setting whose seeds give the shaded range


def reward_gain(summary: Any) -> float:
    """Mean reward of the last WINDOW steps minus the mean of the first WINDOW steps."""
    reward = metric(summary, KEY).dropna()
    return float(reward.iloc[-WINDOW:].mean() - reward.iloc[:WINDOW].mean())


def draw(runs: Mapping[str, Any], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    data = pd.DataFrame([{"run": run_id, "n_samples_per_prompt": int(setting(summary, "flags.n_samples_per_prompt")),
                          "reward_gain": reward_gain(summary)} for run_id, summary in runs.items()])

    figure, ax = new_figure(height=2.8)
    reference = data[data["n_samples_per_prompt"] == REFERENCE_N]["reward_gain"]
    if not reference.empty:
        ax.axhspan(reference.min(), reference.max(), color=colour("data"), alpha=SHADE_ALPHA * 1.5, lw=0,
                   label=f"range of the seeds with {REFERENCE_N}")
    ax.plot(data["n_samples_per_prompt"], data["reward_gain"], ls="none", marker="o", ms=6,
            color=colour("data"), label="one run")
    ax.set_xscale("log", base=2)
    ticks = sorted(data["n_samples_per_prompt"].unique())
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlim(min(ticks) / 1.5, max(ticks) * 1.5)
    ax.set_xlabel("answers per prompt")
    ax.set_ylabel(f"reward gain (mean of last {WINDOW}\nminus first {WINDOW} steps)")
    ax.legend(loc="best")
    return figure, data
