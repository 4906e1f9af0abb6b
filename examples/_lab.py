"""The 1-second streams: GPU utilisation and power, temperature, memory held by each side, host memory."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._timeline import Step
from .targets import HELD_IDLE_GIB, IDLE_BLIP_MAX_PCT, MEMORY_GIB

GIB_KIB = 1024 * 1024
TOTAL_KIB = round(MEMORY_GIB * GIB_KIB)  # MemTotal on a GB10
SETUP, LOW, ROLLOUT, TRAIN, HANDOFF, PAUSE, IDLE = range(7)
# Utilisation range (%) per activity: busy phases high, hand-offs middling, waiting low, idle 0.
UTIL = {SETUP: (0, 35), LOW: (2, 9), ROLLOUT: (86, 97), TRAIN: (87, 98), HANDOFF: (12, 40), PAUSE: (0, 1)}


def sample_ms(start_ms: int, end_ms: int) -> np.ndarray:
    """Sampling instants: every second from shortly after the job start to its end."""
    return np.arange(start_ms + 417, end_ms, 1000, dtype=np.int64)


def activity(steps: list[Step], start_ms: int, extra: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Breakpoints (ms, activity code): each code holds until the next breakpoint."""
    marks = [(start_ms, SETUP)]
    for b in steps:
        marks += [(b["train_wait"][0], LOW), (b["rollout"][0], ROLLOUT)]
        if "heat_pause" in b:
            marks += [(b["heat_pause"][0], PAUSE), (b["heat_pause"][1], ROLLOUT)]
        marks += [(b["rollout"][1], LOW), (b["wake_up"][0], HANDOFF), (b["log_probs"][0], TRAIN)]
        marks += [(b["sleep"][0], HANDOFF), (b["update_weights"][1], LOW)]
    marks += extra
    marks.sort(key=lambda m: m[0])
    return np.array([m[0] for m in marks]), np.array([m[1] for m in marks])


def codes_at(ts: np.ndarray, edges: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The activity code in force at each sample."""
    return codes[np.searchsorted(edges, ts, side="right") - 1]


def gpu_util_values(rng: np.random.Generator, ts: np.ndarray, code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Utilisation (%) and power (W) at each sample."""
    util = np.zeros(len(ts), np.int64)
    for c, (lo, hi) in UTIL.items():
        m = code == c
        util[m] = rng.integers(lo, hi + 1, m.sum())
    idle = code == IDLE  # a dead engine: 0 with the odd blip of 1 to IDLE_BLIP_MAX_PCT %
    util[idle] = np.where(rng.random(idle.sum()) < 0.03, rng.integers(1, IDLE_BLIP_MAX_PCT + 1, idle.sum()), 0)
    # NVML never reports a negative draw: the noise is clipped at 0 W.
    power = np.maximum(np.rint(9 + 0.82 * util + rng.normal(0, 2.5, len(ts))), 0).astype(np.int64)
    return util, power


def temperature(
    rng: np.random.Generator, ts: np.ndarray, code: np.ndarray, pauses: list[tuple[int, int]]
) -> np.ndarray:
    """First-order thermal model; before each heat pause the chip heats up to the guard's limit."""
    target = np.where(np.isin(code, (ROLLOUT, TRAIN)), 76.0, np.where(code == HANDOFF, 66.0, 58.0))
    for p0, p1 in pauses:
        target[(ts >= p0 - 150_000) & (ts < p0)] = 82.5  # a hot stretch trips the guard
        target[(ts >= p0) & (ts < p1)] = 38.0
    temp = np.empty(len(ts))
    t = 61.0
    for i, goal in enumerate(target.tolist()):
        t += (goal - t) / 80.0
        temp[i] = t
    return np.round(temp + rng.normal(0, 0.25, len(ts)), 1)


def held(
    steps: list[Step], ts: np.ndarray, engine_gib: float, trainer_gib: float
) -> tuple[np.ndarray, np.ndarray]:
    """GiB held by trainer and engine: each side loads during its hand-off and otherwise keeps HELD_IDLE_GIB.

    The trainer loads in wake_up and frees in sleep; the engine loads in the previous step's
    update_weights (step 0: at its first rollout) and frees when its rollout ends.
    """
    tx, ty, ex, ey = [0], [HELD_IDLE_GIB], [0], [HELD_IDLE_GIB]
    for k, b in enumerate(steps):
        w0, w1, s0, s1 = b["wake_up"][0], b["wake_up"][1], b["sleep"][0], b["sleep"][1]
        tx += [w0, w1, b["log_probs"][1], b["actor_train"][0] + 5000, s0, s1]
        ty += [HELD_IDLE_GIB, trainer_gib * 0.86, trainer_gib * 0.9, trainer_gib, trainer_gib * 1.02, HELD_IDLE_GIB]
        r0, r1 = b["rollout"]
        load = r0 - 1 if k == 0 else steps[k - 1]["update_weights"][0]
        ex += [load, (r0 if k == 0 else steps[k - 1]["update_weights"][1]), r1 - 1, r1]
        ey += [HELD_IDLE_GIB, engine_gib * 0.94, engine_gib, HELD_IDLE_GIB]
    tx.append(10**15)
    ty.append(HELD_IDLE_GIB)
    ex.append(10**15)
    ey.append(HELD_IDLE_GIB)
    return np.interp(ts, tx, ty), np.interp(ts, ex, ey)


def held_rows(ts: np.ndarray, trainer: np.ndarray, engine: np.ndarray) -> list[dict[str, Any]]:
    """Two records a second, trainer first."""
    rows = []
    for t, a, b in zip(ts.tolist(), np.round(trainer, 3).tolist(), np.round(engine, 3).tolist(), strict=True):
        rows.append({"ts": t / 1000, "side": "trainer", "gib": a})
        rows.append({"ts": t / 1000, "side": "engine", "gib": b})
    return rows


def host_rows(ts: np.ndarray, used_gib: np.ndarray) -> list[dict[str, Any]]:
    """/proc/meminfo: used = MemTotal - MemAvailable, the number Ray's monitor reads."""
    avail = TOTAL_KIB - np.rint(used_gib * GIB_KIB).astype(np.int64)
    return [
        {"ts": t / 1000, "total_kib": TOTAL_KIB, "available_kib": a}
        for t, a in zip(ts.tolist(), avail.tolist(), strict=True)
    ]


def temp_rows(ts: np.ndarray, temp: np.ndarray) -> list[dict[str, Any]]:
    """nvidia-smi temperature, one GPU."""
    return [{"ts": t / 1000, "gpu": 0, "temp_c": c} for t, c in zip(ts.tolist(), temp.tolist(), strict=True)]


def recorded_rows(ts: np.ndarray, temp: np.ndarray, util: np.ndarray, power: np.ndarray) -> list[dict[str, Any]]:
    """What `manual record` writes on a GB10: nvidia-smi's temperature, utilisation and power, one GPU (the memory
    NVML cannot read on unified memory is left out)."""
    return [{"ts": t / 1000, "gpu": 0, "temp_c": c, "util": u, "power_w": p}
            for t, c, u, p in zip(ts.tolist(), temp.tolist(), util.tolist(), power.tolist(), strict=True)]
