"""What checks compute from the values they read (build_tools/readers.py): statistics, and run ids for a report."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import SupportsFloat

import numpy as np

from build_tools.core._exceptions import MissingValue


def statistic(values: Iterable[float], stat: str) -> float:
    """median, mean, min, max, first, last or sum of the values (in step order)."""
    arr = np.asarray(list(values), dtype=float)
    if arr.size == 0:
        raise MissingValue(None, "values")
    funcs: dict[str, Callable[[np.ndarray], SupportsFloat]] = {
        "median": np.median, "mean": np.mean, "min": np.min, "max": np.max, "sum": np.sum,
        "first": lambda a: a[0], "last": lambda a: a[-1]}
    return float(funcs[stat](arr))


def runs_text(run_ids: Sequence[str]) -> str:
    """Run ids for a report line, a numbered family shortened: baseline-seed1..3."""
    out: list[str] = []
    i = 0
    ids = list(run_ids)
    while i < len(ids):
        match = re.fullmatch(r"(.*?)([0-9]+)", ids[i])
        j = i
        if match:
            stem, first = match.group(1), int(match.group(2))
            while j + 1 < len(ids) and ids[j + 1] == f"{stem}{first + j + 1 - i}":
                j += 1
        out.append(ids[i] if j - i < 2 else f"{ids[i]}..{int(match.group(2)) + j - i}")  # type: ignore[union-attr]
        if j - i == 1:
            out.append(ids[j])
        i = j + 1
    return ", ".join(out) or "none"
