"""Fig. "sampling replay": the trainer-engine gap per step without and with top-p/top-k replay."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ._common import PAPER, colour, metric, new_figure, setting

RUNS_NEEDED = ("replay-off-seed1", "replay-on-seed1")
ALT = ("The trainer-engine log-probability gap per step of two runs with top-p and top-k sampling: the run "
       "that replays the masks in the trainer has the lower gap at every step.")
KEY = "train/train_rollout_logprob_abs_diff"


def draw(runs: Mapping[str, Any], tables: Mapping[str, Any]) -> tuple[Figure, pd.DataFrame]:
    frames = []
    for run_id, summary in runs.items():
        gap = metric(summary, KEY)
        replay = bool(setting(summary, "lab.sampling_replay"))
        frames.append(pd.DataFrame({"run": run_id, "replay": replay, "step": gap.index.astype(int),
                                    "gap": gap.to_numpy()}))
    data = pd.concat(frames, ignore_index=True)

    figure, ax = new_figure(height=2.8)
    for replay, run_data in data.groupby("replay", sort=True):
        ax.plot(run_data["step"], run_data["gap"], color=colour("trainer"), marker="o", ms=5,
                ls="-" if replay else "--", mfc=None if replay else PAPER,
                label="with top-p and top-k replay" if replay else "without replay")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("step")
    ax.set_ylabel("trainer-engine gap\n(mean |Δ log p| per token)")
    ax.legend(loc="lower right")
    return figure, data
