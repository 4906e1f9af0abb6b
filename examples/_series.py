"""Seeded per-step metric series, shaped to hit exact summary targets (ranges, window means, medians)."""

from __future__ import annotations

import numpy as np

from .targets import LENGTH_RANGE, TRUNCATED_RANGE, WINDOW


def sig(values: np.ndarray | list[float], digits: int = 6) -> list[float]:
    """Round to significant digits, as plain floats (json writes their repr)."""
    return [float(f"{v:.{digits}g}") for v in np.asarray(values, dtype=float)]


def squash(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """A soft clip into (lo, hi): values near an end are compressed, so no two runs pile up on a bound."""
    x = np.asarray(x, dtype=float)
    if hi <= lo:
        return np.full(len(x), lo)
    m = 0.08 * (hi - lo)
    top, bottom = hi - m, lo + m
    x = np.where(x > top, top + m * np.tanh((x - top) / m), x)
    return np.where(x < bottom, bottom - m * np.tanh((bottom - x) / m), x)


def curve(n: int, start: float, end: float, rate: float, horizon: int = 48) -> np.ndarray:
    """A saturating learning curve over a 48-step horizon; short runs see its first n steps."""
    k = np.arange(n)
    frac: np.ndarray = (1 - np.exp(-rate * k / (horizon - 1))) / (1 - np.exp(-rate))
    return start + (end - start) * frac


def fit_windows(x: np.ndarray, first: float, last: float, lo: float, hi: float) -> np.ndarray:
    """Add a linear ramp so the first-8 and last-8 means hit their targets, squashed into (lo, hi)."""
    k = np.arange(len(x), dtype=float)
    m1, m2 = k[:WINDOW].mean(), k[-WINDOW:].mean()
    y = squash(x, lo, hi)
    for _ in range(60):  # squashing moves the means a little; iterate to a fixed point
        e1, e2 = first - y[:WINDOW].mean(), last - y[-WINDOW:].mean()
        b = (e2 - e1) / (m2 - m1)
        x = x + (e1 - b * m1) + b * k
        y = squash(x, lo, hi)
    return y


def reward(rng: np.random.Generator, n: int, first: float, last: float, lo: float, hi: float) -> np.ndarray:
    """Noisy rising reward: step-to-step noise of about 0.05 around a saturating trend."""
    x = curve(n, first - 0.02, last + 0.01, rate=1.2) + rng.normal(0, 0.045, n)
    return fit_windows(x, first, last, lo, hi) if n >= 2 * WINDOW else squash(x, lo, hi)


def lengths(rng: np.random.Generator, n: int, first: float, last: float, lo: float, hi: float) -> np.ndarray:
    """Answer length falling fast then flattening, as the policy learns to stop."""
    x = curve(n, first + 45, last - 15, rate=3.0) + rng.normal(0, 14, n)
    return fit_windows(x, first, last, lo, hi) if n >= 2 * WINDOW else squash(x, lo, hi)


def truncated(rng: np.random.Generator, length: np.ndarray) -> np.ndarray:
    """Share of answers at the cap: tied to the mean length; the range's ends sit at the length's ends."""
    u = np.clip((length - LENGTH_RANGE[0]) / (LENGTH_RANGE[1] - LENGTH_RANGE[0]), 0, 1)
    x = squash(0.02 + 0.41 * u**1.4 + rng.normal(0, 0.008, len(length)), 0.0205, 0.4295)
    x[length == LENGTH_RANGE[0]] = TRUNCATED_RANGE[0]
    x[length == LENGTH_RANGE[1]] = TRUNCATED_RANGE[1]
    return x


def gap(rng: np.random.Generator, n: int, center: float, sd: float, lo: float, hi: float) -> np.ndarray:
    """Trainer-vs-engine log-probability gap: flat noise around a level set by the sampling setup."""
    return squash(center + rng.normal(0, sd, n), lo, hi)


def kl_from_gap(rng: np.random.Generator, g: np.ndarray, centre: float, lo: float, hi: float) -> np.ndarray:
    """KL at the sampled tokens: its level grows with the square of the gap's level, and it moves with g."""
    if centre == 0:
        return np.zeros(len(g))  # identical log-probabilities: no divergence at all
    level = 0.000695 * (centre / 0.015) ** 2
    return squash(level * (g / centre) + rng.normal(0, 0.008 * level, len(g)), lo, hi)


def grad_norm(rng: np.random.Generator, n: int, lo: float, hi: float) -> np.ndarray:
    """Heavy-tailed gradient norms, larger early in training."""
    k = np.arange(n)
    norms: np.ndarray = np.exp(squash(np.log(1.3) - 0.012 * k + rng.normal(0, 0.5, n), np.log(lo), np.log(hi)))
    return norms


def loss(rng: np.random.Generator, n: int) -> np.ndarray:
    """GRPO policy loss: small and centred on zero."""
    return rng.normal(0, 0.015, n)


def ppo_kl(rng: np.random.Generator, n: int) -> np.ndarray:
    """Old-vs-new KL: exactly 0 at step 0 (nothing has been updated yet), ~1e-5 after."""
    x = np.abs(rng.normal(1.0e-5, 0.5e-5, n)) + 1e-6
    x[0] = 0.0
    return x


def place_median(x: np.ndarray, target: int, frozen: np.ndarray | None = None) -> np.ndarray:
    """Shift integer values (ms) so the median is exactly target; frozen entries do not move."""
    x = x.astype(np.int64).copy()
    move = np.ones(len(x), bool) if frozen is None else ~frozen
    x[move] += int(round(target - np.median(x)))
    order = np.argsort(x, kind="stable")
    n = len(x)
    if n % 2:
        x[order[n // 2]] = target
    else:
        a, b = order[n // 2 - 1], order[n // 2]
        d = max(0, min(target - x[a], x[b] - target))  # move the middle pair inward: order is kept
        x[a], x[b] = target - d, target + d
    assert np.median(x) == target and not (frozen is not None and frozen[order[n // 2]])
    return x


def place_at(x: np.ndarray, index: int, value: float) -> np.ndarray:
    """Put one exact value (a range end) at a chosen step."""
    x = x.copy()
    x[index] = value
    return x
