"""Fig. "on-policy": the engine half (repeats agree) and the trainer half (the gap) of three set-ups."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from build_tools.core._types import RunSummary
from build_tools.readers import series_of, step_values

from ._common import INK, colour, fitted, new_figure

ROOM = 1.15  # the axes' top over the tallest bar: room for its label

ALT = ("Two panels of bars for three set-ups, plain, deterministic inference and true on-policy, each bar "
       "labelled: on the left, the share of probes whose repeats agree, none for plain and all for the other "
       "two; on the right, the mean trainer-engine gap, zero only with true on-policy.")
ALT_NAMES = {"drawn": ["plain", "deterministic inference", "true on-policy"],
             "axes": ["probes whose repeats agree", "trainer-engine gap"]}
GAP = "train/train_rollout_logprob_abs_diff"
NAMES = {"onpolicy-plain": "plain", "onpolicy-det-inference": "deterministic\ninference",
         "onpolicy-true": "true\non-policy"}


def repeat_agreement(summary: RunSummary) -> float:
    """Share of probes whose repeats all produced the same answer tokens."""
    probes = series_of(summary, "repeat_probe", "probe", "output_sha256")
    return float((probes.groupby("probe")["output_sha256"].nunique() == 1).mean())


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    rows = []
    for run_id, summary in runs.items():
        rows.append({"run": run_id, "measure": "repeat_agreement_pct", "value": repeat_agreement(summary) * 100})
        rows.append({"run": run_id, "measure": "mean_gap", "value": float(step_values(summary, GAP).mean())})
    data = pd.DataFrame(rows)

    figure, (engine_ax, gap_ax) = new_figure(1, 2, height=3.6)
    names = [NAMES.get(run_id, run_id) for run_id in runs]
    agreement = data[data["measure"] == "repeat_agreement_pct"]["value"].to_numpy()
    gap = data[data["measure"] == "mean_gap"]["value"].to_numpy()
    engine_bars = engine_ax.bar(names, agreement, color=colour("engine"), width=0.6)
    _label_bars(engine_ax, engine_bars, [f"{value:.0f} %" for value in agreement])
    engine_ax.set_ylim(0, 100 * ROOM)
    engine_ax.set_yticks(range(0, 101, 20))
    engine_ax.set_ylabel("probes whose repeats agree (%)")
    engine_ax.set_title(fitted("rollout engine: same answer twice?"))
    gap_bars = gap_ax.bar(names, gap, color=colour("trainer"), width=0.6)
    _label_bars(gap_ax, gap_bars, ["0 (none)" if value == 0 else f"{value:.4f}" for value in gap])
    gap_ax.set_ylim(0, float(gap.max()) * ROOM)
    gap_ax.set_ylabel("mean trainer-engine gap\n(|Δ log p| per token)")
    gap_ax.set_title("trainer vs engine: a gap?")
    for ax in (engine_ax, gap_ax):
        ax.grid(axis="x", visible=False)
    return figure, data


def _label_bars(ax: Axes, bars: Any, texts: list[str]) -> None:
    """Each bar's value above it, in the text colour: text on a role's fill would be under 4.5:1 in one of the
    schemes (the axes leave room above the tallest bar)."""
    for bar, text in zip(bars, texts, strict=True):
        ax.annotate(text, xy=(bar.get_x() + bar.get_width() / 2, bar.get_height()), xytext=(0, 3),
                    textcoords="offset points", ha="center", va="bottom", color=INK)
