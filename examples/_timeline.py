"""Step durations (integer milliseconds, so phase times and perf metrics agree exactly) and phase layout."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._series import place_median
from .targets import BASELINE_MEDIANS_MS, FIRST_SLEEPS, SIZE_RATIOS

LEAD_MS = 100  # the rollout manager starts a rollout this long after the trainer starts waiting
TRAIN_PARTS = ("wake_up", "data_preprocess", "log_probs", "actor_train", "sleep")

Span = tuple[int, int]
Step = dict[str, Span]


@dataclass(frozen=True)
class Profile:
    """Median durations (ms) of one step for a model size, and the set-up time before step 0."""

    rollout: int
    overhead: int  # train_wait beyond the rollout: rewards, gathering samples
    wake_up: int
    data_preprocess: int
    log_probs: int
    train: int
    sleep: int
    update_weights: int
    setup: int


# The 1.7B run's medians of the two hand-offs fig. 2.4 compares: the 0.6B medians times the claimed ratios.
SIZE_MEDIANS_MS = {name: round(BASELINE_MEDIANS_MS[name] * ratio) for name, ratio in SIZE_RATIOS.items()}
_B, _S = BASELINE_MEDIANS_MS, SIZE_MEDIANS_MS
PROFILES = {
    "0.6B": Profile(_B["rollout"], 4800, _B["wake_up"], 1450, _B["log_probs"], _B["train"], _B["sleep"],
                    _B["update_weights"], 96000),
    "1.7B": Profile(88000, 5200, 2150, 1900, 61000, 236000, _S["sleep"], _S["update_weights"], 141000),
    "4B": Profile(171000, 6500, 5200, 2600, 142000, 548000, 4900, 2050, 212000),
}


def _noisy(rng: np.random.Generator, base: np.ndarray | float, sd: float, n: int) -> np.ndarray:
    """Multiplicative log-normal noise, rounded to whole milliseconds."""
    return np.rint(base * np.exp(rng.normal(0, sd, n))).astype(np.int64)


def durations(
    rng: np.random.Generator, prof: Profile, length: np.ndarray, work_rollout: np.ndarray | float,
    work_train: float
) -> dict[str, np.ndarray]:
    """Per-step durations; rollout and scoring scale with the answer length and the work per step."""
    n = len(length)
    rel = length / np.median(length)
    d = {
        "rollout": _noisy(rng, prof.rollout * work_rollout * (0.45 + 0.55 * rel), 0.03, n),
        "overhead": _noisy(rng, prof.overhead, 0.04, n),
        "wake_up": _noisy(rng, prof.wake_up, 0.03, n),
        "data_preprocess": _noisy(rng, prof.data_preprocess * work_train, 0.05, n),
        "log_probs": _noisy(rng, prof.log_probs * work_train * (0.8 + 0.2 * rel), 0.02, n),
        "train": _noisy(rng, prof.train * work_train * (0.85 + 0.15 * rel), 0.012, n),
        "sleep": _noisy(rng, prof.sleep, 0.03, n),
        "update_weights": np.rint(
            prof.update_weights * (1 + np.clip(rng.normal(0, 0.005, n), -0.012, 0.012))
        ),
    }
    # The first offloads allocate pinned host buffers, so the first two sleeps are slow.
    d["sleep"][:2] = np.round(np.array([prof.sleep * FIRST_SLEEPS[0], prof.sleep * FIRST_SLEEPS[1]])[: min(n, 2)], -2)
    d["update_weights"] = d["update_weights"].astype(np.int64)
    return d


def place(d: dict[str, np.ndarray], medians: dict[str, int]) -> dict[str, np.ndarray]:
    """Place exact medians; `step` is placed through the overhead, so it stays train_wait + train."""
    d = {k: v.copy() for k, v in d.items()}
    frozen = np.arange(len(d["sleep"])) < 2
    for key, target in medians.items():
        if key != "step":
            d[key] = place_median(d[key], target, frozen if key == "sleep" else None)
    if "step" in medians:
        step = place_median(d["rollout"] + d["overhead"] + d["train"], medians["step"])
        d["overhead"] = step - d["rollout"] - d["train"]
    return d


def derive(d: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Fill in the phases that are sums or remainders of others."""
    d = dict(d)
    d["actor_train"] = d["train"] - d["wake_up"] - d["data_preprocess"] - d["log_probs"] - d["sleep"]
    d["train_wait"] = d["rollout"] + d["overhead"]
    d["step"] = d["train_wait"] + d["train"]
    assert (d["actor_train"] > 0).all() and (d["overhead"] > LEAD_MS + 3000).all()
    return d


def layout(start_ms: int, d: dict[str, np.ndarray], pauses: dict[int, Span]) -> list[Step]:
    """Lay steps end to end: step k+1 starts when step k's weight update ends.

    pauses maps a step to (offset into its rollout, length), both ms; the pause is inside the rollout.
    """
    steps: list[Step] = []
    s = start_ms
    for k in range(len(d["step"])):
        tw = int(d["train_wait"][k])
        b: Step = {"train_wait": (s, s + tw), "rollout": (s + LEAD_MS, s + LEAD_MS + int(d["rollout"][k]))}
        if k in pauses:
            p0 = b["rollout"][0] + pauses[k][0]
            b["heat_pause"] = (p0, p0 + pauses[k][1])
        t = s + tw
        b["train"] = (t, t + int(d["train"][k]))
        for name in TRAIN_PARTS:
            b[name] = (t, t + int(d[name][k]))
            t = b[name][1]
        b["update_weights"] = (t, t + int(d["update_weights"][k]))
        s = b["update_weights"][1]
        steps.append(b)
    return steps


WRITE_ORDER = ("rollout", "train_wait", *TRAIN_PARTS, "train", "update_weights")


def phase_rows(
    steps: list[Step], node: str, open_rollout_ms: int | None
) -> list[tuple[float, dict[str, Any]]]:
    """Phase records as (hour time, record), in write order.

    A phase is written when it closes, in the hour of t1; one that spans an hour boundary was also
    flushed while open (t1 = -1) in the hour of t0, as Miles does. open_rollout_ms: a rollout that
    started and never closed (a dead engine).
    """
    items: list[tuple[int, int, float, dict[str, Any]]] = []
    for b in steps:
        for name in WRITE_ORDER:
            t0, t1 = b[name]
            for write, end in ((t0, -1.0), (t1, t1 / 1000)):
                if end == -1.0 and t0 // 3_600_000 == t1 // 3_600_000:
                    continue
                items.append((write, len(items), write / 1000, _phase(name, t0, end, node)))
    if open_rollout_ms is not None:
        rec = _phase("rollout", open_rollout_ms, -1.0, node)
        items.append((open_rollout_ms, len(items), open_rollout_ms / 1000, rec))
    items.sort(key=lambda it: (it[0], it[1]))
    return [(hour_ts, rec) for _, _, hour_ts, rec in items]


def _phase(name: str, t0_ms: int, t1: float, node: str) -> dict[str, Any]:
    """One phase record; the rollout manager has no GPU and rank -1."""
    manager = name == "rollout"
    return {
        "name": name,
        "t0": t0_ms / 1000,
        "t1": t1,
        "node": node,
        "gpus": [] if manager else [0],
        "rank": -1 if manager else 0,
        "role": "rollout_manager" if manager else "train",
    }
