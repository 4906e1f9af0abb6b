"""The one place figures, checks, the Metrics page, `compare` and `show` read a run summary's values from.

- `config_value`: a field of run.yaml by dotted name;
- `step_values`: a metric (or `<series>.<field>`) per step of its own step axis (axes.py; `table_of`), under the
  heat rule (`use_clean`: a time value, `summary.is_time`, holds only for the steps no heat-guard pause touched);
  values of two axes joined onto the rollout ids through the run's num_steps_per_rollout (`join_note` says so);
- `events_of`, `event_interval`: a run's events of one kind, and the span from one event to the next of another;
- `series_of`, `series_between`: a sampled stream, and its samples between two events;
- `counted_phases`, `start_ts`, `trend_line`: the phases counted once per step, the origin of a time axis,
  a least-squares line through a value's steps.

A value that is not there raises MissingValue(run, what), naming the run and the value: a check then fails
with that sentence, and draw.py reports the figure with it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from build_tools.core._exceptions import MissingValue
from build_tools.core._types import RunSummary
from build_tools.ingest import axes
from build_tools.summarise.summary import is_time
from build_tools.summarise.summary_phases import COUNTED_RANKS

_REQUIRED: Any = object()  # no default: a missing field raises
_SHOWN_NON_FINITE = 3  # non-finite values named in a message; the rest counted
RECORDED_UTIL = {"ts", "gpu", "util", "power_w"}  # what lab/gpu_temp holds of gpu_util (`manual record`)


# --- run.yaml ------------------------------------------------------------------------------------


def dotted_field(config: Mapping[str, Any], dotted: str, default: Any = None) -> Any:
    """A field of a run.yaml mapping by dotted name (`flags.rollout_max_response_len`); `default` when absent.
    The one dotted lookup: config_value reads a summary's run.yaml through it."""
    node: Any = config
    for key in dotted.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return default
        node = node[key]
    return node


# The setup a range or claim of the manual holds for: (fact in the manual's words, run.yaml field). A reader's
# run that differs in one is not judged by it: one list, read by the contract, compare and show alike.
SETUP: tuple[tuple[str, str], ...] = (
    ("model", "model.name"), ("answers per prompt", "flags.n_samples_per_prompt"),
    ("prompts per step", "flags.rollout_batch_size"), ("length limit", "flags.rollout_max_response_len"),
    ("colocated", "flags.colocate"))


def config_value(run: RunSummary, dotted: str, default: Any = _REQUIRED) -> Any:
    """A field of the run's run.yaml by dotted name; `default` when the field is absent, or MissingValue
    without one."""
    value = dotted_field(run.config, dotted, _REQUIRED)
    if value is _REQUIRED:
        if default is _REQUIRED:
            raise MissingValue(run.run_id, f"{dotted} in run.yaml")
        return default
    return value


# --- values per step -----------------------------------------------------------------------------


def names_of(metric: str | Sequence[str]) -> list[str]:
    """The names of a value: one name, or the names of a list whose values are summed per step."""
    return [metric] if isinstance(metric, str) else list(metric)


def label_of(metric: str | Sequence[str]) -> str:
    """A short name for a value: the metric without its group (`perf/sleep_time` -> `sleep_time`)."""
    return " + ".join(n.rsplit("/", 1)[-1] for n in names_of(metric))


def use_clean(metric: str | Sequence[str], steps: str = "auto") -> bool:
    """The heat rule: whether a value is read on the clean steps only (no heat-guard pause touched them).
    `steps` is `clean`, `all`, or `auto`: clean for a time value."""
    return steps == "clean" or (steps == "auto" and any(is_time(n) for n in names_of(metric)))


def table_of(run: RunSummary, metric: str) -> pd.DataFrame:
    """The table a metric is on: the per-step table (by rollout id), or the table of its own step axis when the run
    has it apart (`RunSummary.axes`); the per-step table when the run lacks the metric."""
    if metric in run.steps.columns:
        return run.steps
    return next((frame for frame in run.axes.values() if metric in frame.columns), run.steps)


def steps_for(run: RunSummary, metric: str | Sequence[str], steps: str = "auto") -> pd.DataFrame:
    """The rows of the metric's table (table_of; the first name's for a list) a value is read from under the heat
    rule: a step of another axis is clean when its rollout is."""
    table = table_of(run, names_of(metric)[0])
    if not use_clean(metric, steps):
        return table
    return run.clean_steps if table is run.steps else table[table["rollout"].isin(run.clean_steps.index)]


def step_values(run: RunSummary, metric: str | Sequence[str], steps: str = "auto", *,
                joined: bool = False) -> pd.Series:
    """A value per step, by step (a list of names is summed), on the clean steps when the heat rule says so.
    A step that did not log the value is left out; one that logged NaN or an infinity raises MissingValue.

    Each name is read on its own step axis (axes.py): the per-step table, by rollout id, or another axis of the
    run (eval/step; train/step when a rollout has several optimizer steps), whose step is clean when its rollout
    is. Names on different axes, or `joined`, are joined onto the rollout ids (a rollout's values averaged;
    `join_note` says how)."""
    names = names_of(metric)
    clean = use_clean(metric, steps)
    parts = [_column(run, name) for name in names]
    if clean:
        parts = [(part[_rollouts(run, axis, part.index).isin(run.clean_steps.index)], axis) for part, axis in parts]
    on = {axis for _, axis in parts}
    if len(on) > 1 or (joined and on != {""}):
        for (part, _), name in zip(parts, names, strict=True):
            require_finite(run, [name], part.index)  # at the steps of its own axis
        parts = [(_on_rollouts(run, part, axis), "") for part, axis in parts]
        on = set()
    values = parts[0][0]
    for part, _ in parts[1:]:
        values = values.add(part, fill_value=math.nan)
    if on:
        require_finite(run, names, values.index)
    values = values.dropna()
    if values.empty:
        raise MissingValue(run.run_id, f"{'clean ' if clean else ''}steps with {label_of(metric)}")
    return values


def heat_touched(run: RunSummary, metric: str | Sequence[str], steps: pd.Index) -> pd.Series:
    """Whether a heat-guard pause touched each step of a value's axis (a step of another axis: its rollout)."""
    axis = _column(run, names_of(metric)[0])[1]
    rollouts = _rollouts(run, axis, steps)
    return pd.Series(run.steps["heat_touched"].reindex(rollouts).astype(bool).to_numpy(), index=steps)


def value_axes(run: RunSummary, names: Iterable[str]) -> set[str]:
    """The step axes the named values are on ("" for the per-step table); a name the run lacks counts none."""
    found = set()
    for name in names:
        if name in run.steps.columns:
            found.add("")
        found |= {axis for axis, frame in run.axes.items() if name in frame.columns}
    return found


def join_note(run: RunSummary) -> str:
    """How the run's step axes are joined, for an output that joins them."""
    return axes.join_of_summary(run.facts, run.config).sentence() + "; a rollout's values averaged"


def _column(run: RunSummary, name: str) -> tuple[pd.Series, str]:
    """A column of the step table, of another step axis, or `<series>.<field>` of a series that has a step
    column; with its axis ("" for the step table and the series: their steps are rollout ids)."""
    if name in run.steps.columns:
        return run.steps[name].astype(float), ""
    for axis, frame in run.axes.items():
        if name in frame.columns and name != "rollout":
            return frame[name].astype(float), axis
    series_name, _, field = name.partition(".")
    series = run.series.get(series_name)
    if field and series is not None and field in series.columns and "step" in series.columns:
        return series.groupby("step")[field].last().astype(float), ""
    raise MissingValue(run.run_id, f"per-step value {name!r}")


def _rollouts(run: RunSummary, axis: str, steps: pd.Index) -> pd.Index:
    """The rollout id of each step of an axis."""
    return steps if not axis else pd.Index(run.axes[axis]["rollout"].reindex(steps))


def _on_rollouts(run: RunSummary, values: pd.Series, axis: str) -> pd.Series:
    """An axis' values by rollout id, the values of one rollout averaged."""
    if not axis:
        return values
    joined = values.groupby(_rollouts(run, axis, values.index).to_numpy()).mean()
    joined.index.name = "step"
    return joined


def require_finite(run: RunSummary, names: Iterable[str], steps: Iterable[int] | None = None) -> None:
    """MissingValue when the run logged NaN or an infinity for one of the metrics (at the given steps): a
    value that is not a number is never dropped silently."""
    error = non_finite_error(run.run_id, run.facts.get("non_finite", {}), names, steps)
    if error is not None:
        raise error


def non_finite_error(run_id: str, logged: Mapping[str, Mapping[str, str]], names: Iterable[str],
                     steps: Iterable[int] | None = None) -> MissingValue | None:
    """require_finite's error, from what a run logged that is not a number (metric -> step -> marker: a summary's
    facts, or a validated run's metric facts); None when there is none."""
    names = list(names)
    wanted = None if steps is None else {int(step) for step in steps}
    found = [f"{name} = {value} at step {step}" for name in names
             for step, value in sorted(logged.get(name, {}).items(), key=lambda kv: int(kv[0]))
             if wanted is None or int(step) in wanted]
    if not found:
        return None
    more = f" (and {len(found) - _SHOWN_NON_FINITE} more)" if len(found) > _SHOWN_NON_FINITE else ""
    return MissingValue(run_id, f"finite {' + '.join(names)} (it logged {', '.join(found[:_SHOWN_NON_FINITE])}{more})")


def trend_line(values: pd.Series, run_id: str) -> tuple[float, float]:
    """Slope (per step) and intercept of the least-squares line through a value's finite steps."""
    x, y = values.index.to_numpy(dtype=float), values.to_numpy(dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    if keep.sum() < 2:
        raise MissingValue(run_id, f"trend of {values.name or 'the value'} (it needs at least two steps)")
    slope, intercept = np.polyfit(x[keep], y[keep], 1)
    return float(slope), float(intercept)


# --- events, series and phases -------------------------------------------------------------------


def events_of(run: RunSummary, kind: str, *, required: bool = True) -> pd.DataFrame:
    """The run's events of one kind (heat_pause, engine_death, ray_oom_kill, job_end), in time order; when
    `required`, MissingValue if there is none."""
    frame = run.events
    found = frame[frame["kind"] == kind] if len(frame) else frame
    if found.empty:
        if required:
            raise MissingValue(run.run_id, f"{kind} event")
        return found
    return found.sort_values("t0", kind="stable")


def event_interval(run: RunSummary, start: str, end: str) -> tuple[float, float]:
    """From the first `start` event to the first `end` event that follows it (their t0)."""
    t0 = float(events_of(run, start)["t0"].iloc[0])
    later = events_of(run, end)
    later = later[later["t0"] >= t0]
    if later.empty:
        raise MissingValue(run.run_id, f"{end} event after its {start} event")
    return t0, float(later["t0"].iloc[0])


def series_of(run: RunSummary, name: str, *fields: str) -> pd.DataFrame:
    """A sampled series (gpu_util, host_memory, held_memory, ...) that holds values of every field named.

    GPU utilisation and power are read from `gpu_util` or, when the run has none (a GB10: NVML's memory query is
    not supported on unified memory, and Miles' sampler drops the whole sample), from `lab/gpu_temp`, where
    `manual record` writes them: whichever the run has."""
    frame = run.series.get(name)
    if name == "gpu_util" and _lacks(frame, fields) and set(fields) <= RECORDED_UTIL:
        recorded = run.series.get("gpu_temp")
        if recorded is not None and not _lacks(recorded, fields):
            return recorded
        if _lacks(frame, ()):
            raise MissingValue(run.run_id, "gpu_util series (nor GPU utilisation in lab/gpu_temp, which "
                                           "`manual record` writes)")
    if frame is None or frame.empty:
        raise MissingValue(run.run_id, f"{name} series")
    for field in fields:
        if field not in frame.columns or frame[field].isna().all():
            raise MissingValue(run.run_id, f"{name} series with {field!r}")
    return frame


def _lacks(frame: pd.DataFrame | None, fields: Sequence[str]) -> bool:
    """Whether a series is absent, empty, or holds no value of one of the fields."""
    return frame is None or frame.empty or any(field not in frame.columns or frame[field].isna().all()
                                               for field in fields)


def series_between(run: RunSummary, name: str, field: str, start: str, end: str) -> pd.Series:
    """The samples of a series' field from the first `start` event to the next `end` event, both included."""
    t0, t1 = event_interval(run, start, end)
    frame = series_of(run, name, field)
    inside = frame[(frame["ts"] >= t0) & (frame["ts"] <= t1)][field].astype(float)
    if inside.empty:
        raise MissingValue(run.run_id, f"{name} samples between {start} and {end}")
    return inside


def counted_phases(run: RunSummary, names: Sequence[str] | None = None, *, required: bool = True) -> pd.DataFrame:
    """The phases counted once per step (trainer rank 0 and the rollout manager), of the names given or all;
    when `required`, MissingValue if there is none."""
    frame = run.phases
    chosen = frame["rank"].isin(COUNTED_RANKS) & frame["step"].notna()
    if names is not None:
        chosen &= frame["name"].isin(names)
    found = frame[chosen]
    if required and found.empty:
        raise MissingValue(run.run_id, f"phases {', '.join(names or ())}".rstrip())
    return found


def start_ts(run: RunSummary) -> float:
    """The run's start, the origin of its time axes."""
    start = run.facts.get("start_ts", math.nan)
    return float(start) if start is not None and not math.isnan(start) else float(run.phases["t0"].min())


def gpus_of(run: RunSummary) -> set[tuple[str, int]]:
    """Every (node, GPU) the run shows: the phases' GPUs, the GPU samples, the engines of the topology."""
    gpus = {(str(node), int(gpu)) for node, gpu in run.facts.get("gpus_used") or []}
    util = run.series.get("gpu_util")
    if util is not None and len(util) and {"node", "gpu"} <= set(util.columns):
        gpus |= {(str(node), int(gpu)) for node, gpu in zip(util["node"], util["gpu"], strict=True)}
    topology = run.series.get("topology")
    if topology is not None and "engines" in topology.columns:
        for engines in topology["engines"]:
            for engine in engines if isinstance(engines, list) else []:
                gpus |= {(str(pair[0]), int(pair[1])) for pair in engine.get("gpus") or [] if len(pair) == 2}
    return gpus
