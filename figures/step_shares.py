"""Fig. "step shares": how a clean step of each baseline seed splits into rollout, training, hand-offs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from build_tools._exceptions import MissingValue
from build_tools._types import RunSummary

from ._common import colour, figure_legend, new_figure, seed_label

ALT = ("Stacked bars, one per seed, splitting the median clean step into rollout, training, the hand-offs and "
       "the rest, on a share axis that ends at the whole step: rollout and training fill almost the whole bar, "
       "the hand-offs a thin sliver; beside each bar, the share of rollout and training and the seconds of the "
       "hand-offs.")
ALT_NAMES = {"drawn": ["rollout", "training", "hand-offs", "other", "seed"], "axes": ["share"]}

# part -> (phases summed, role, legend text)
PARTS = {
    "rollout": (("rollout",), "engine", "rollout"),
    "train": (("data_preprocess", "log_probs", "actor_train"), "trainer", "training"),
    "hand-offs": (("sleep", "wake_up", "update_weights"), "lifecycle", "hand-offs (sleep, wake-up, weight update)"),
}


def _parts(summary: RunSummary) -> pd.DataFrame:
    """Seconds of each part for every clean step, plus `other`: the rest of the step."""
    steps = summary.clean_steps
    if steps.empty:
        raise MissingValue(summary.run_id, "clean steps (every step was touched by a heat pause)")
    parts = pd.DataFrame(index=steps.index)
    for part, (names, _, _) in PARTS.items():
        for name in names:
            if f"phase/{name}" not in steps.columns:
                raise MissingValue(summary.run_id, f"phase {name}")
        parts[part] = steps[[f"phase/{name}" for name in names]].sum(axis=1)
    parts["other"] = ((steps["t1"] - steps["t0"]) - parts.sum(axis=1)).clip(lower=0)
    return parts


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    rows = []
    for run_id, summary in runs.items():
        parts = _parts(summary)
        total = parts.sum(axis=1)
        for part in parts.columns:
            rows.append({"run": run_id, "part": part, "median_s": float(parts[part].median()),
                         "share": float((parts[part] / total).median())})
    data = pd.DataFrame(rows)

    figure, ax = new_figure(height=3.0)
    roles = {**{part: (role, text) for part, (_, role, text) in PARTS.items()}, "other": ("outside", "other")}
    labels = [seed_label(run_id) for run_id in runs]
    left = [0.0] * len(labels)
    for part, (role, text) in roles.items():
        shares = data[data["part"] == part]["share"].to_numpy() * 100
        ax.barh(labels, shares, left=left, color=colour(role), label=text, height=0.6)
        left = [a + b for a, b in zip(left, shares, strict=True)]
    # The numbers of the caption, per seed, beside its bar: rollout and training together, and the hand-offs.
    for y, run_id in enumerate(runs):
        of_run = data[data["run"] == run_id].set_index("part")
        main = float(of_run.loc[["rollout", "train"], "share"].sum()) * 100
        hand = float(of_run["median_s"]["hand-offs"])
        ax.annotate(f"rollout + training {main:.0f} %\nhand-offs {hand:.1f} s", xy=(1, y),
                    xycoords=("axes fraction", "data"), xytext=(6, 0), textcoords="offset points", va="center")
    ax.set_xlim(0, 100)
    ax.set_xticks(range(0, 101, 20))
    ax.set_xlabel("median share of a clean step (%)")
    ax.invert_yaxis()
    ax.grid(axis="y", visible=False)
    figure_legend(figure, *ax.get_legend_handles_labels(), ncols=2)
    return figure, data
