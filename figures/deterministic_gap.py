"""Fig. "deterministic gap": the trainer-engine gap per step of two deterministic and two ordinary runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from build_tools.core._types import RunSummary
from build_tools.readers import step_values

from ._common import INK, PAPER, colour, figure_legend, new_figure

ALT = ("Two panels, the deterministic Triton runs and the default runs, on an axis from zero: the "
       "trainer-engine gap per step of each run stays close to the dotted mean of the four runs, and at the "
       "first step the two deterministic runs have the same value, written beside it.")
ALT_NAMES = {"drawn": ["deterministic Triton", "default", "mean of the", "step 0"], "axes": ["trainer-engine gap"]}
KEY = "train/train_rollout_logprob_abs_diff"
MARKERS = ("o", "s", "^", "D")


def draw(runs: Mapping[str, RunSummary], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    data = pd.concat([pd.DataFrame({"run": run_id, "step": step_values(summary, KEY).index.astype(int),
                                    "gap": step_values(summary, KEY).to_numpy()}) for run_id, summary in runs.items()],
                     ignore_index=True)

    mean = float(data["gap"].mean())
    data = pd.concat([data, pd.DataFrame({"run": ["mean of all runs"], "step": [pd.NA], "gap": [mean]})],
                     ignore_index=True)
    per_step = data[data["run"] != "mean of all runs"]

    # One panel per kind of run; in each, the two repeats told apart by marker, fill and name.
    # Deterministic inference is a mode of the engine (its role); the default runs are drawn in the text colour.
    kinds = {True: ("deterministic Triton", "engine"), False: ("default", None)}
    figure, axes = new_figure(1, 2, height=3.6, sharey=True)
    for ax, (deterministic, (title, role)) in zip(axes, kinds.items(), strict=True):
        of_kind = [run_id for run_id in dict.fromkeys(per_step["run"]) if _deterministic(run_id) == deterministic]
        for index, run_id in enumerate(of_kind):
            run_data = per_step[per_step["run"] == run_id]
            ax.plot(run_data["step"], run_data["gap"], color=INK if role is None else colour(role),
                    marker=MARKERS[index % len(MARKERS)],
                    ms=6, lw=1.2, ls="-" if index == 0 else (0, (4, 2)), mfc=None if index == 0 else PAPER,
                    label=str(run_id))
        ax.axhline(mean, color=INK, lw=1.0, ls=(0, (1, 2)), label=f"mean of the {len(runs)} runs: {mean:.4f}")
        ax.set_title(title)
        ax.set_xlabel("step")
        if deterministic and len(of_kind) > 1:
            # The caption's "the same gap at step 0": the two values, side by side.
            first = per_step[(per_step["run"].isin(of_kind)) & (per_step["step"] == per_step["step"].min())]
            shown = sorted({f"{value:.5f}" for value in first["gap"]})
            values = f"both {shown[0]}" if len(shown) == 1 else " and ".join(shown)
            ax.annotate(f"step {int(first['step'].iloc[0])}: {values}", xy=(float(first["step"].iloc[0]),
                        float(first["gap"].iloc[0])), xytext=(10, -40), textcoords="offset points", ha="left",
                        va="top", arrowprops={"arrowstyle": "-", "color": INK, "lw": 0.8})
    # From zero, so that "near" the mean looks near: the runs' swings against the size of the gap itself.
    axes[0].set_ylim(0, float(per_step["gap"].max()) * 1.3)
    axes[0].set_ylabel("trainer-engine gap\n(mean |Δ log p| per token)")
    handles = [h for ax in axes for h in ax.get_legend_handles_labels()[0]]
    labels = [t for ax in axes for t in ax.get_legend_handles_labels()[1]]
    unique = dict(zip(labels, handles, strict=True))
    order = sorted(unique, key=lambda text: text.startswith("mean"))  # the runs first, the mean last
    figure_legend(figure, [unique[text] for text in order], order, ncols=3)
    return figure, data


def _deterministic(run_id: str) -> bool:
    return str(run_id).startswith("det")
