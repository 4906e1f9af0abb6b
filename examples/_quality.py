"""Per-step learning metrics of a run (reward, length, gap, ...), before any timing."""

from __future__ import annotations

import numpy as np

from . import _series as S
from ._runs import RunSpec
from .targets import GAP_PLAIN, GAP_RANGE, GRAD_RANGE, KL_RANGE, LENGTH_RANGE, REWARD_RANGE

# The Metrics page's range ends (targets.py), each placed at one chosen step of a baseline: (metric, step, value).
PLACED = {
    "baseline-seed1": (("gap", 5, GAP_RANGE[0]), ("kl", 40, KL_RANGE[1]), ("length", 45, LENGTH_RANGE[0])),
    "baseline-seed2": (
        ("reward", 9, REWARD_RANGE[0]),
        ("gap", 30, GAP_RANGE[1]),
        ("grad", 2, GRAD_RANGE[1]),
        ("length", 0, LENGTH_RANGE[1]),
    ),
    "baseline-seed3": (("reward", 39, REWARD_RANGE[1]), ("kl", 12, KL_RANGE[0]), ("grad", 37, GRAD_RANGE[0])),
}
# Clip bounds, inside the Metrics ranges: the baselines may touch the range ends; every other run stays
# strictly inside them.
INNER = {
    "reward": (0.535, 0.865),
    "length": (398.0, 785.0),
    "gap": (0.01365, 0.01635),
    "kl": (0.000632, 0.000758),
    "grad": (0.37, 4.8),
}
OUTER = {
    "reward": (0.545, 0.855),
    "length": (405.0, 775.0),
    "gap": (0.0141, 0.0159),
    "kl": (0.00065, 0.00074),
    "grad": (0.4, 4.5),
}


def quality(spec: RunSpec, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Reward, length, truncation, gap, KL and the other train metrics for each step."""
    n, b = spec.steps, (INNER if spec.kind == "baseline" else OUTER)
    m = max(n, 48)  # a short run is the start of a 48-step trajectory
    q = {
        "reward": S.reward(rng, m, *spec.reward, *b["reward"])[:n],
        "length": S.lengths(rng, m, *spec.length, *b["length"])[:n],
    }
    q["gap"] = _gap(spec, rng, b)
    q["kl"] = _kl(spec, rng, q["gap"], b)
    q["grad"] = S.grad_norm(rng, n, *b["grad"])
    for metric, step, value in PLACED.get(spec.run_id, ()):
        q[metric] = S.place_at(q[metric], step, value)
    q["truncated"] = S.truncated(rng, q["length"])
    q["loss"] = S.loss(rng, n)
    q["ppo_kl"] = S.ppo_kl(rng, n)
    return q


def _gap(spec: RunSpec, rng: np.random.Generator, b: dict[str, tuple[float, float]]) -> np.ndarray:
    """Plain sampling keeps the gap near 0.015; other set-ups move its level (true on-policy: 0)."""
    centre, sd = spec.gap
    if spec.gap == GAP_PLAIN:
        return S.gap(rng, spec.steps, centre, sd, *b["gap"])
    return S.gap(rng, spec.steps, centre, sd, centre - 2 * sd, centre + 2 * sd)


def _kl(
    spec: RunSpec, rng: np.random.Generator, g: np.ndarray, b: dict[str, tuple[float, float]]
) -> np.ndarray:
    """KL tracks the gap; exactly 0 when the gap is 0."""
    centre = spec.gap[0]
    level = 0.000695 * (centre / 0.015) ** 2
    lo, hi = b["kl"] if spec.gap == GAP_PLAIN else (0.9 * level, 1.1 * level)
    return S.kl_from_gap(rng, g, centre, lo, hi)


def jitter(q: dict[str, np.ndarray], rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """A rerun of the same seed: the first n steps of q, nudged a little (sampling is not bitwise)."""
    out = {k: v[:n].copy() for k, v in q.items()}
    out["reward"] = S.squash(out["reward"] + rng.normal(0, 0.012, n), *OUTER["reward"])
    out["length"] = S.squash(out["length"] + rng.normal(0, 6, n), *OUTER["length"])
    out["truncated"] = S.truncated(rng, out["length"])
    out["gap"] = S.squash(out["gap"] + rng.normal(0, 0.0002, n), *OUTER["gap"])
    out["kl"] = S.kl_from_gap(rng, out["gap"], GAP_PLAIN[0], *OUTER["kl"])
    out["grad"] = S.squash(out["grad"] * np.exp(rng.normal(0, 0.1, n)), *OUTER["grad"])
    out["loss"] = S.loss(rng, n)
    out["ppo_kl"] = S.ppo_kl(rng, n)
    return out
