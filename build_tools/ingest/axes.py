"""Miles' step axes, and how they are joined (miles-outputs.md; Miles `log_utils.py`, `metric_utils.py`).

Every value Miles logs carries one step key: `train/*` on `train/step`, `rollout/*`, `perf/*`, `passrate/*` and
`multi_turn/*` on `rollout/step`, `eval/*` on `eval/step`. `train/step` = rollout id x num_steps_per_rollout + the
step inside the rollout; `rollout/step` and `eval/step` are the rollout id (x num_steps_per_rollout with
`--wandb-always-use-train-step`). The summary's per-step table is by rollout id: a value of another axis joins it
through the run's num_steps_per_rollout, from its configuration (run.yaml flags, or the launch arguments).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ROLLOUT, TRAIN, EVAL = "rollout/step", "train/step", "eval/step"
AXES = (ROLLOUT, TRAIN, EVAL)
NOT_RECORDED = "not recorded, taken as 1"
AXIS_OF_PREFIX = {"train": TRAIN, "rollout": ROLLOUT, "perf": ROLLOUT, "multi_turn": ROLLOUT, "passrate": ROLLOUT,
                  "eval": EVAL}


def axis_of(metric: str) -> str:
    """The step key a metric is logged against, by its prefix (Miles' define_metric); rollout/step otherwise."""
    return AXIS_OF_PREFIX.get(metric.split("/", 1)[0], ROLLOUT)


def axis_order(key: str) -> tuple[int, str]:
    """Sort key of step keys: Miles' three first, in their order, then any other by name."""
    return (AXES.index(key), "") if key in AXES else (len(AXES), key)


@dataclass(frozen=True)
class Join:
    """How a run's step axes meet: num_steps_per_rollout, where it came from, and whether rollout/step and
    eval/step count train steps (`--wandb-always-use-train-step`)."""

    per_rollout: int
    source: str  # e.g. "flags.num_steps_per_rollout", or "not recorded, taken as 1"
    train_scaled: bool = False

    @property
    def identity(self) -> bool:
        """Whether every axis counts the same steps (one optimizer step per rollout, as in every example run)."""
        return self.per_rollout == 1

    def rollout_of(self, axis: str, step: int) -> int:
        """The rollout id a step of an axis belongs to."""
        if axis == TRAIN or self.train_scaled:
            return step // self.per_rollout
        return step

    def sentence(self) -> str:
        """The join, said in an output that uses it."""
        scaled = "; rollout/step and eval/step count train steps (--wandb-always-use-train-step)" \
            if self.train_scaled else ""
        return (f"train/step joined to rollout/step through num_steps_per_rollout = {self.per_rollout} "
                f"({self.source}): rollout id = train/step // {self.per_rollout}{scaled}")


def join_of(config: Mapping[str, Any]) -> Join:
    """The run's join, from its flags: `num_steps_per_rollout`, else rollout_batch_size x n_samples_per_prompt //
    global_batch_size (as Miles derives it), else 1, said to be taken."""
    flags = config.get("flags")
    flags = flags if isinstance(flags, Mapping) else {}
    scaled = flags.get("wandb_always_use_train_step") is True
    given = _whole(flags.get("num_steps_per_rollout"))
    if given:
        return Join(given, "flags.num_steps_per_rollout", scaled)
    batch, answers, gbs = (_whole(flags.get(k)) for k in ("rollout_batch_size", "n_samples_per_prompt",
                                                          "global_batch_size"))
    if batch and answers and gbs and batch * answers >= gbs:
        return Join(batch * answers // gbs, "flags.rollout_batch_size x n_samples_per_prompt // global_batch_size",
                    scaled)
    return Join(1, NOT_RECORDED, scaled)


def inferred(join: Join, train_steps: int, rollouts: int) -> Join:
    """A join not recorded, taken from the steps when train/step counts more steps than rollout/step: the train
    steps per rollout, rounded up (a job cut off mid-rollout trained fewer)."""
    if join.source != NOT_RECORDED or not rollouts or train_steps <= rollouts:
        return join
    return Join(-(-train_steps // rollouts), f"not recorded; taken from the steps: {train_steps} train/step over "
                                             f"{rollouts} rollout/step", join.train_scaled)


def join_of_summary(facts: Mapping[str, Any], config: Mapping[str, Any]) -> Join:
    """The join a summary was made with: taken from its steps (its facts say so), else from its configuration."""
    taken = facts.get("join")
    if isinstance(taken, Mapping):
        return Join(int(taken["per_rollout"]), str(taken["source"]), bool(taken["train_scaled"]))
    return join_of(config)


def _whole(value: Any) -> int:
    """A whole number from 1, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 0
