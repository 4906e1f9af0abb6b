"""Fig. "on-policy": the engine half (repeats agree) and the trainer half (the gap) of three set-ups."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ._common import colour, metric, new_figure, stream

RUNS_NEEDED = ("onpolicy-plain", "onpolicy-det-inference", "onpolicy-true")
ALT = ("Two panels for three set-ups: the share of probes whose repeated answers were identical, all of them "
       "with deterministic inference; and the trainer-engine gap, zero only with the true on-policy mode.")
GAP = "train/train_rollout_logprob_abs_diff"
NAMES = {"onpolicy-plain": "plain", "onpolicy-det-inference": "deterministic\ninference",
         "onpolicy-true": "true\non-policy"}


def repeat_agreement(summary: Any) -> float:
    """Share of probes whose repeats all produced the same answer tokens."""
    probes = stream(summary, "repeat_probe", ("probe", "output_sha256"))
    return float((probes.groupby("probe")["output_sha256"].nunique() == 1).mean())


def draw(runs: Mapping[str, Any], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    rows = []
    for run_id, summary in runs.items():
        rows.append({"run": run_id, "measure": "repeat_agreement_pct", "value": repeat_agreement(summary) * 100})
        rows.append({"run": run_id, "measure": "mean_gap", "value": float(metric(summary, GAP).mean())})
    data = pd.DataFrame(rows)

    figure, (engine_ax, gap_ax) = new_figure(1, 2, height=2.8)
    names = [NAMES.get(run_id, run_id) for run_id in runs]
    agreement = data[data["measure"] == "repeat_agreement_pct"]["value"].to_numpy()
    gap = data[data["measure"] == "mean_gap"]["value"].to_numpy()
    engine_bars = engine_ax.bar(names, agreement, color=colour("engine"), width=0.6)
    engine_ax.bar_label(engine_bars, fmt="%.0f %%", fontsize=8, padding=2)
    engine_ax.set_ylim(0, 115)
    engine_ax.set_ylabel("probes whose repeats agree (%)")
    engine_ax.set_title("rollout engine: same answer twice?")
    gap_bars = gap_ax.bar(names, gap, color=colour("trainer"), width=0.6)
    gap_ax.bar_label(gap_bars, fmt="%.4f", fontsize=8, padding=2)
    gap_ax.margins(y=0.2)
    gap_ax.set_ylabel("mean trainer-engine gap\n(|Δ log p| per token)")
    gap_ax.set_title("trainer vs engine")
    for ax in (engine_ax, gap_ax):
        ax.grid(axis="x", visible=False)
        ax.tick_params(axis="x", labelsize=7.5)
    return figure, data
