"""Reading values out of run summaries: per-step values, clean steps, statistics, events and series."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, SupportsFloat

import numpy as np
import pandas as pd

from ..summary import RunSummary, is_time
from ._registry import Missing


def names_of(metric: str | Sequence[str]) -> list[str]:
    return [metric] if isinstance(metric, str) else list(metric)


def use_clean(metric: str | Sequence[str], mode: str) -> bool:
    """Whether to keep clean steps only: `auto` does so for time values."""
    return mode == "clean" or (mode == "auto" and any(is_time(n) for n in names_of(metric)))


def label_of(metric: str | Sequence[str]) -> str:
    """A short name for a value: the metric without its group (`perf/sleep_time` -> `sleep_time`)."""
    return " + ".join(n.rsplit("/", 1)[-1] for n in names_of(metric))


def _one(summary: RunSummary, name: str) -> pd.Series:
    """A per-step value: a column of the step table, or `<series>.<field>` of a series with a step column."""
    if name in summary.steps.columns:
        return summary.steps[name].astype(float)
    series_name, _, field = name.partition(".")
    frame = summary.series.get(series_name)
    if field and frame is not None and field in frame.columns and "step" in frame.columns:
        return frame.groupby("step")[field].last().astype(float)
    raise Missing(f"run {summary.run_id} has no per-step value {name!r}")


def step_values(summary: RunSummary, metric: str | Sequence[str], mode: str = "auto") -> pd.Series:
    """Per-step values by step (a list of names is summed), on the clean steps when the heat rule says so."""
    parts = [_one(summary, n) for n in names_of(metric)]
    values = parts[0]
    for part in parts[1:]:
        values = values.add(part, fill_value=math.nan)
    if use_clean(metric, mode):
        clean = summary.steps.index[~summary.steps["heat_touched"].astype(bool)]
        values = values[values.index.isin(clean)]
    # A step that did not log the metric is left out; one that logged NaN or an infinity fails the check.
    if (bad := summary.non_finite(names_of(metric), values.index)) is not None:
        raise Missing(bad)
    values = values.dropna()
    if values.empty:
        raise Missing(f"run {summary.run_id} has no {'clean ' if use_clean(metric, mode) else ''}steps "
                      f"with {label_of(metric)}")
    return values


def statistic(values: Iterable[float], stat: str) -> float:
    """median, mean, min, max, first, last or sum of the values (in step order)."""
    arr = np.asarray(list(values), dtype=float)
    if arr.size == 0:
        raise Missing("no values")
    funcs: dict[str, Callable[[np.ndarray], SupportsFloat]] = {
        "median": np.median, "mean": np.mean, "min": np.min, "max": np.max, "sum": np.sum,
        "first": lambda a: a[0], "last": lambda a: a[-1]}
    return float(funcs[stat](arr))


def slope(values: pd.Series) -> float:
    """Least-squares slope of the values against the step number."""
    if len(values) < 2:
        raise Missing("a trend needs at least two steps")
    return float(np.polyfit(values.index.to_numpy(dtype=float), values.to_numpy(dtype=float), 1)[0])


def events_of(summary: RunSummary, kind: str) -> pd.DataFrame:
    events = summary.events
    found = events[events["kind"] == kind] if len(events) else events
    if found.empty:
        raise Missing(f"run {summary.run_id} has no {kind} event")
    return found.sort_values("t0")


def series_of(summary: RunSummary, name: str, field: str) -> pd.DataFrame:
    frame = summary.series.get(name)
    if frame is None or frame.empty or field not in frame.columns:
        raise Missing(f"run {summary.run_id} has no {name} series with {field!r}")
    return frame


def config_of(summary: RunSummary, dotted: str) -> Any:
    try:
        return summary.config_value(dotted)
    except (KeyError, TypeError):
        raise Missing(f"run {summary.run_id} has no {dotted} in run.yaml") from None


def runs_text(run_ids: Sequence[str]) -> str:
    """Run ids for a report line, a numbered family shortened: baseline-seed1..3."""
    out: list[str] = []
    i = 0
    ids = list(run_ids)
    while i < len(ids):
        match = re.fullmatch(r"(.*?)(\d+)", ids[i])
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
