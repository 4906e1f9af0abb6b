"""Fig. "step shares": how a clean step of each baseline seed splits into rollout, training, hand-offs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from build_tools.core._exceptions import MissingValue
from build_tools.core._types import RunSummary
from build_tools.readers import step_values

from ._common import INK, PAPER, colour, figure_legend, fitted, new_figure, on_phone, seed_label

ALT = ("Stacked bars, one per seed, splitting the median clean step into rollout, training, the hand-offs and "
       "the rest, on a share axis that ends at the whole step: rollout and training fill almost the whole bar, "
       "the hand-offs a thin sliver; beside each bar, the share of rollout and training and the seconds of the "
       "hand-offs.")
ALT_NAMES = {"drawn": ["rollout", "training", "hand-offs", "other", "seed"], "axes": ["share"]}

# part -> (the per-step times summed, as the claim's check reads them, role, legend text)
PARTS = {
    "rollout": (("perf/rollout_time",), "engine", "rollout"),
    "train": (("perf/train_time",), "trainer", "training"),
    "hand-offs": (("perf/sleep_time", "perf/wake_up_time", "perf/update_weights_time"), "lifecycle",
                  "hand-offs (sleep, wake-up, weight update)"),
}
WHOLE = "perf/step_time"


def _parts(summary: RunSummary) -> pd.DataFrame:
    """Seconds of each part for every clean step (readers' heat rule), plus `other`, the rest of the step, and
    `step`, the whole."""
    parts = pd.DataFrame({part: step_values(summary, list(keys)) for part, (keys, _, _) in PARTS.items()})
    if parts.empty:
        raise MissingValue(summary.run_id, "clean steps (every step was touched by a heat pause)")
    whole = step_values(summary, WHOLE)
    parts["other"] = (whole - parts.sum(axis=1)).clip(lower=0)
    parts["step"] = whole
    return parts.dropna()


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    rows, pooled = [], []
    for run_id, summary in runs.items():
        parts = _parts(summary)
        main = (parts["rollout"] + parts["train"]) / parts["step"]
        pooled.append(main)
        for part in [*PARTS, "other"]:
            rows.append({"run": run_id, "part": part, "median_s": float(parts[part].median()),
                         "share": float((parts[part] / parts["step"]).median())})
        rows.append({"run": run_id, "part": "rollout + training", "median_s": float("nan"),
                     "share": float(main.median())})
    # The caption's "almost all", as its check measures it: the median share over every clean step of the seeds.
    every_step = pd.concat(pooled)
    rows.append({"run": "all", "part": "rollout + training", "median_s": float("nan"),
                 "share": float(every_step.median())})
    data = pd.DataFrame(rows)

    figure, ax = new_figure(height=3.2, phone_height=3.9)
    labels = [seed_label(run_id) for run_id in runs]
    left = [0.0] * len(labels)
    for part, (_, role, text) in PARTS.items():
        shares = data[data["part"] == part]["share"].to_numpy() * 100
        ax.barh(labels, shares, left=left, color=colour(role), label=text, height=0.6)
        left = [a + b for a, b in zip(left, shares, strict=True)]
    # The rest of the step is no role's: a hatched outline in the text colour.
    ax.barh(labels, [100 - value for value in left], left=left, color=PAPER, edgecolor=INK, hatch="////", lw=0.6,
            label="other", height=0.6)
    # The numbers of the caption, per seed, beside its bar: rollout and training together, and the hand-offs.
    for y, run_id in enumerate(runs):
        of_run = data[data["run"] == run_id].set_index("part")
        share = of_run["share"].astype(float)["rollout + training"]
        seconds = of_run["median_s"].astype(float)["hand-offs"]
        text = (f"{share:.3f}\n{seconds:.1f} s" if on_phone()
                else f"rollout + training {share:.3f}\nhand-offs {seconds:.1f} s")
        ax.annotate(text, xy=(1, y), xycoords=("axes fraction", "data"), xytext=(6, 0), textcoords="offset points",
                    va="center")
    beside = "; beside each bar, that share and the hand-offs" if on_phone() else ""
    ax.set_title(fitted(f"rollout + training: {every_step.median():.3f} of a clean step (median of "
                        f"{len(every_step)} steps){beside}", 36))
    ax.set_xlim(0, 100)
    ax.set_xticks(range(0, 101, 50 if on_phone() else 20))
    ax.set_xlabel("median share of a clean step (%)")
    ax.invert_yaxis()
    ax.grid(axis="y", visible=False)
    figure_legend(figure, *ax.get_legend_handles_labels(), ncols=2)
    return figure, data
