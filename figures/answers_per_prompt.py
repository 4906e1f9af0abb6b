"""Fig. "answers per prompt": reward gain against the number of answers per prompt."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from build_tools.core._types import RunSummary
from build_tools.readers import config_value, step_values

from ._common import SHADE_ALPHA, colour, legend, new_figure, shaded, window

ALT = ("Reward gain of each run, one dot per run, against its answers per prompt on an axis from zero: the "
       "dots of the runs with fewer and with more answers lie inside the shaded band of the range of the "
       "baseline seeds, whose ends are written at its right.")
ALT_NAMES = {"drawn": ["seeds with 8", "4", "16"], "axes": ["reward gain", "answers per prompt"]}
KEY = "rollout/raw_reward"
REFERENCE_N = 8  # the setting whose seeds give the shaded range


def reward_gain(summary: RunSummary) -> float:
    """Mean reward of the last steps minus the mean of the first steps (the window of words.yml)."""
    reward = step_values(summary, KEY)
    return float(reward.iloc[-window():].mean() - reward.iloc[:window()].mean())


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    data = pd.DataFrame([{"run": run_id,
                          "n_samples_per_prompt": int(config_value(summary, "flags.n_samples_per_prompt")),
                          "reward_gain": reward_gain(summary)} for run_id, summary in runs.items()])

    figure, ax = new_figure(height=3.4)
    reference = data[data["n_samples_per_prompt"] == REFERENCE_N]["reward_gain"]
    if not reference.empty:
        low, high = float(reference.min()), float(reference.max())
        ax.axhspan(low, high, **shaded("data", SHADE_ALPHA * 1.5),
                   label=f"range of the {len(reference)} seeds with {REFERENCE_N}")
        for edge in (low, high):
            ax.axhline(edge, color=colour("data"), lw=1.0, ls=(0, (4, 2)))
        # The caption's "inside the range": the range's two ends, written at its right.
        ax.annotate(f"range {low:.2f} to {high:.2f}", xy=(1, high), xycoords=("axes fraction", "data"),
                    xytext=(-4, 4), textcoords="offset points", ha="right", va="bottom")
    ax.plot(data["n_samples_per_prompt"], data["reward_gain"], ls="none", marker="o", ms=7,
            color=colour("data"), label="one run")
    for row in data[data["n_samples_per_prompt"] != REFERENCE_N].itertuples():
        ax.annotate(f"{row.reward_gain:.2f}", xy=(row.n_samples_per_prompt, row.reward_gain), xytext=(8, 0),
                    textcoords="offset points", va="center")
    ax.set_xscale("log", base=2)
    ticks = sorted(data["n_samples_per_prompt"].unique())
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlim(min(ticks) / 1.5, max(ticks) * 1.5)
    # From zero, so the seeds' range reads as a band among the values, not as the background.
    ax.set_ylim(0, float(data["reward_gain"].max()) * 1.3)
    ax.set_xlabel("answers per prompt")
    ax.set_ylabel(f"reward gain: mean of last {window()}\nminus mean of first {window()} steps")
    legend(ax, figure=figure, loc="outside lower center", ncols=2)
    return figure, data
