"""Margins: how far a check's observed number is from failing it, in the claim's unit and as a fraction.

One rule for every check (docs/README.md, "Margins"): the headroom is how far the observed value can move
before the check fails (negative when it fails), the edge the value at which it fails (the nearer end of
the tolerance, or the limit), the fraction the headroom over the tolerance's half-width, or over the limit
for a one-sided limit. An exact comparison (tolerance 0) and a limit of 0 have no such scale: their fraction
is None, and they are not ranked among the closest claims; so is a comparison with another observed value
(another run's at the same step, the last window's mean), whose edge is no number of the claim. A check over
many runs, steps or samples keeps the margin of the worst one and names it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from build_tools.checking.checks._words import Expectation
from build_tools.core._types import Margin


def _clean(x: float) -> float:
    """12 significant digits: 63.5 - 63.2 is 0.3 in the report, not 0.29999999999999716."""
    return float(f"{x:.12g}")


def make(headroom: float, edge: float, unit: str, scale: float | None, value: float,
         worst: str | None = None) -> Margin | None:
    """A margin, its fraction over scale (none for a scale of 0); None when a number is not finite."""
    if not all(math.isfinite(v) for v in (headroom, edge, value)):
        return None
    fraction = _clean(headroom / scale) if scale is not None and math.isfinite(scale) and scale > 0 else None
    return Margin(_clean(headroom), _clean(edge), unit, fraction, _clean(value), worst)


def of_interval(x: float, exp: Expectation, unit: str = "", worst: str | None = None) -> Margin | None:
    """The margin of x against what a word stands for: a tolerance around a value, or a one-sided limit."""
    low, high = exp.low, exp.high
    if math.isinf(low) and math.isinf(high):
        return None
    if math.isinf(low):  # at most, below
        return make(high - x, high, unit, abs(high), x, worst)
    if math.isinf(high):  # at least, above, almost all
        return make(x - low, low, unit, abs(low), x, worst)
    to_low, to_high = x - low, high - x
    headroom, edge = (to_low, low) if to_low < to_high else (to_high, high)
    return make(headroom, edge, unit, (high - low) / 2, x, worst)


def of_limit(x: float, limit: float, *, above: bool, unit: str = "", worst: str | None = None,
             observed: bool = False) -> Margin | None:
    """The margin of x against a one-sided limit it must stay above (or below); fraction over the limit, none
    when the limit is itself an observed value (another run's, another window's): it is no scale of the claim."""
    return make(x - limit if above else limit - x, limit, unit, None if observed else abs(limit), x, worst)


def of_range(x: float, low: float, high: float, unit: str = "", worst: str | None = None) -> Margin | None:
    """The margin of x inside [low, high]; fraction over half the range's width."""
    return of_interval(x, Expectation(low, high, ""), unit, worst)


def of_count(count: float, target: float, unit: str, worst: str | None = None) -> Margin | None:
    """An exact count: no room (headroom 0) when it is met, minus the difference when not; no fraction."""
    return make(-abs(count - target), target, unit, None, count, worst)


def _rank(margin: Margin) -> tuple[bool, float, float]:
    """Worst first: failing before holding, then the smaller fraction, then the smaller headroom. A margin
    without a fraction ranks after every holding one that has one, before them when it fails."""
    fraction = margin.fraction
    if fraction is None:
        fraction = -math.inf if margin.headroom < 0 else math.inf
    return (margin.headroom >= 0, fraction, margin.headroom)


def worst(margins: Iterable[Margin | None]) -> Margin | None:
    """The margin closest to failing (or furthest past it) among several; None if there is none."""
    found = [m for m in margins if m is not None]
    return min(found, key=_rank) if found else None


def as_json(margin: Margin | None) -> dict[str, Any] | None:
    """What build/claims.json holds of a margin."""
    if margin is None:
        return None
    return {"headroom": margin.headroom, "edge": margin.edge, "unit": margin.unit, "fraction": margin.fraction,
            "value": margin.value, "worst": margin.worst}
