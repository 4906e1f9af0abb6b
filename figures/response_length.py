"""Fig. "response length": mean answer length per step against the length cap, and the truncated share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from build_tools.core._types import RunSummary
from build_tools.readers import config_value, step_values

from ._common import INK, colour, legend, new_figure, on_phone, window

ALT = ("Two panels over the steps: the mean answer length falls, below the length cap drawn as a dashed line, "
       "and the share of answers cut at the cap falls with it; in both panels the first and the last steps are "
       "shaded, with their mean written on a bar across them.")
ALT_NAMES = {"drawn": ["length cap", "mean of the seeds", "mean"],
             "axes": ["mean answer length", "answers cut at the cap"]}
LENGTH, TRUNCATED = "rollout/response_lengths", "rollout/truncated"
CAP = "flags.rollout_max_response_len"


def _window_means(per_run: pd.DataFrame, column: str, size: int) -> tuple[float, float]:
    """Means of the first and the last `size` steps, pooled over the runs: what the caption's check reads."""
    firsts = [run_data[column].iloc[:size] for _, run_data in per_run.groupby("run", sort=False)]
    lasts = [run_data[column].iloc[-size:] for _, run_data in per_run.groupby("run", sort=False)]
    return float(pd.concat(firsts).mean()), float(pd.concat(lasts).mean())


def _mark_windows(ax: Axes, steps: pd.Series, means: tuple[float, float], size: int, text: str) -> None:
    """Shade the first and last windows of steps and draw each window's mean across it, with its value."""
    spans = ((float(steps.iloc[0]), float(steps.iloc[size - 1])), (float(steps.iloc[-size]), float(steps.iloc[-1])))
    for (start, end), mean, side in zip(spans, means, ("left", "right"), strict=True):
        ax.axvspan(start - 0.5, end + 0.5, color=INK, alpha=0.07, lw=0)
        ax.plot([start - 0.5, end + 0.5], [mean, mean], color=INK, lw=2.2, solid_capstyle="butt")
        # The value at the top of its window, above the data (the panels leave room there), from the window's
        # outer edge inwards, so that it stays inside the axes on a narrow screen too.
        ax.annotate(text.format(mean), xy=(start - 0.5 if side == "left" else end + 0.5, 1),
                    xycoords=("data", "axes fraction"), xytext=(2 if side == "left" else -2, -3),
                    textcoords="offset points", ha=side, va="top")


def _per_step(run_id: str, summary: RunSummary) -> pd.DataFrame:
    """The answer length of each step, and the share of answers cut at the cap (%) at the same steps."""
    lengths = step_values(summary, LENGTH)
    truncated = step_values(summary, TRUNCATED).reindex(lengths.index)
    return pd.DataFrame({"run": run_id, "step": lengths.index.astype(int), "response_length": lengths.to_numpy(),
                         "truncated_pct": truncated.to_numpy() * 100})


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    frames = [_per_step(run_id, summary) for run_id, summary in runs.items()]
    per_run = pd.concat(frames, ignore_index=True)
    mean = per_run.groupby("step", as_index=False)[["response_length", "truncated_pct"]].mean()
    caps = {int(config_value(summary, CAP)) for summary in runs.values()}
    cap = max(caps)
    size = window()
    length_means = _window_means(per_run, "response_length", size)
    cut_means = _window_means(per_run, "truncated_pct", size)
    windows = pd.DataFrame({"run": [f"mean of the first {size} steps", f"mean of the last {size} steps"],
                            "response_length": length_means, "truncated_pct": cut_means})
    data = pd.concat([per_run, mean.assign(run="mean"), windows], ignore_index=True).assign(cap_tokens=cap)

    figure, (top, bottom) = new_figure(2, 1, height=5.0, sharex=True, height_ratios=(3, 2))
    for run_id, run_data in per_run.groupby("run", sort=False):
        first = run_id == per_run["run"].iloc[0]
        top.plot(run_data["step"], run_data["response_length"], color=colour("data"), lw=0.6,
                 label="one seed" if first else None)
        bottom.plot(run_data["step"], run_data["truncated_pct"], color=colour("data"), lw=0.6)
    top.plot(mean["step"], mean["response_length"], color=colour("data"), lw=2.0, label="mean of the seeds")
    bottom.plot(mean["step"], mean["truncated_pct"], color=colour("data"), lw=2.0)
    top.axhline(cap, color=INK, ls="--", lw=1.0, label=f"length cap ({cap:,} tokens)")
    top.plot([], [], color=INK, lw=2.2, label=f"mean of the first and of the last {size} steps")
    # The caption's "from about A to about B": the windows the check averages, and their means.
    _mark_windows(top, mean["step"], length_means, size, "mean {:.0f}" if on_phone() else "mean {:.0f} tokens")
    _mark_windows(bottom, mean["step"], cut_means, size, "mean {:.0f} %")
    top.set_ylim(0, cap * 1.22)
    top.set_ylabel("mean answer length\n(tokens)")
    bottom.set_ylim(0, float(per_run["truncated_pct"].max()) * 1.45)
    bottom.set_ylabel("answers cut at\nthe cap (%)")
    bottom.set_xlabel("step")
    legend(top, figure=figure, loc="outside lower center", ncols=2)
    return figure, data
