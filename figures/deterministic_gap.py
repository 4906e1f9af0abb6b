"""Fig. "deterministic gap": the trainer-engine gap per step of two deterministic and two ordinary runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ._common import colour, metric, new_figure

RUNS_NEEDED = ("det-triton-a", "det-triton-b", "nondet-a", "nondet-b")
ALT = ("The trainer-engine gap per step of the deterministic Triton runs and the default runs.")
KEY = "train/train_rollout_logprob_abs_diff"
MARKERS = ("o", "s", "^", "D")


def draw(runs: Mapping[str, Any], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    data = pd.concat([pd.DataFrame({"run": run_id, "step": metric(summary, KEY).index.astype(int),
                                    "gap": metric(summary, KEY).to_numpy()}) for run_id, summary in runs.items()],
                     ignore_index=True)

    figure, ax = new_figure(height=2.8)
    for (run_id, run_data), marker in zip(data.groupby("run", sort=False), MARKERS, strict=False):
        deterministic = str(run_id).startswith("det")
        ax.plot(run_data["step"], run_data["gap"], color=colour("trainer" if deterministic else "outside"),
                ls="-" if deterministic else "--", marker=marker, ms=4, lw=1.1, label=str(run_id))
    ax.set_ylim(bottom=0)
    ax.set_xlabel("step")
    ax.set_ylabel("trainer-engine gap\n(mean |Δ log p| per token)")
    ax.legend(loc="lower right", ncols=2)
    return figure, data
