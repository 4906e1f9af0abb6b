"""Perturbations derived from a figure block's checks: for every check, a change of the data that makes it
false, and, where the check has a tolerance or some slack, a change within it that keeps it true.

No figure has an entry here: a block's checks say what each reads and what it claims, and each kind of
check knows how to move what it reads. A number compared with an interval (`about 720`, `near 0.015`,
`above 0`, a slope, a share, a ratio, a span) is moved by a lever, a change of the data by `amount` in one
direction; the amount is solved for so that the check's own observation lands past the nearer end of the
interval the words give it (`checks.expect`, words.yml) by a tenth of its distance from that end (it must
fail), or short of the end by as much (it must still pass). A count, an order, a table or a run.yaml fact
is changed by one step: one step's comparison flipped, one phase moved, one row or step dropped, one run
added, one field changed.

A new kind of check adds its derivation to DERIVE (test_claims asserts every registered check has one).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from build_tools.checking.checks import Ctx, claim_numbers, evaluate, words
from build_tools.checking.checks.timeline import UNITS
from build_tools.core._types import CheckResult, FigureBlock, RunSummary
from build_tools.readers import series_of

PAST = 0.1  # a moved value lands this share of its distance from the interval's end past it, or short of it
# Kinds of check that may have no change within them: exact facts and counts (a tie leaves no slack).
EXACT = frozenset({"exactly", "gpu_count", "config_equals", "runs_matching", "run_count", "step_count",
                   "equal_at_step", "count_steps", "compare_runs", "table_rows"})
COUNTED_RANKS = (0, -1)  # the phases the checks read: the trainer's rank 0 and the rollout manager


@dataclass
class Data:
    """Copies of what a check reads: summaries (every run of the block deep-copied), tables and block."""

    summaries: dict[str, RunSummary]
    tables: dict[str, Any]
    block: FigureBlock


Change = Callable[[Data], None]


@dataclass(frozen=True)
class Perturbation:
    false: Change  # makes the check fail
    within: Change | None  # within the check's tolerance: it still passes (None: an exact fact has none)


@dataclass(frozen=True)
class Subject:
    """One check of one figure block, and the data the claims are checked on."""

    block: FigureBlock
    index: int
    summaries: dict[str, RunSummary]
    tables: dict[str, Any]

    @property
    def params(self) -> dict[str, Any]:
        return self.block.checks[self.index]

    @property
    def runs(self) -> list[str]:
        return list(self.params.get("runs") or self.block.runs)

    @property
    def read(self) -> list[str]:
        """Every run the check reads: its runs and the runs it names (run, over, than, minus, reference)."""
        named = [self.params[key] for key in ("run", "over", "than", "minus") if self.params.get(key)]
        return list(dict.fromkeys([*self.runs, *named, *(self.params.get("reference") or [])]))

    def data(self, change: Change | None = None) -> Data:
        copies = dict(self.summaries)
        for run in self.read:
            copies[run] = copy.deepcopy(self.summaries[run])
        data = Data(copies, copy.deepcopy(self.tables), self.block)
        if change is not None:
            change(data)
        return data

    def result(self, change: Change | None = None) -> CheckResult:
        data = self.data(change)
        return evaluate(data.block.checks[self.index], data.block, data.summaries, data.tables, data.block.prose)

    def interval(self, word: str, value: float) -> tuple[float, float]:
        """The interval the claim's words give the value (the check's own rule, with its overrides)."""
        binds = {text.lower() for text in self.params.get("binds") or ()}
        tokens = [t for t in claim_numbers(self.block.claim, self.block.prose) if t.text.lower() in binds]
        expectation = Ctx(self.block, {}, {}, tokens).expect(word, value, self.params)
        return expectation.low, expectation.high


def derive(block: FigureBlock, index: int, summaries: dict[str, RunSummary], tables: dict[str, Any]) -> Perturbation:
    """The perturbations of the index-th check of block."""
    subject = Subject(block, index, summaries, tables)
    for run in subject.read:
        _ = summaries[run].steps  # decoded once here (a summary from the cache decodes on first use), not per copy
    name = subject.params["check"]
    if name not in DERIVE:
        raise KeyError(f"no perturbation for the check {name!r}: add one to tests/perturbations.py DERIVE")
    return DERIVE[name](subject)


# --- reading and changing per-step values ------------------------------------------------------------------


def _frame_of(summary: RunSummary, name: str) -> tuple[pd.DataFrame, str]:
    """The table holding a value name, as float, and its column: the step table or `<series>.<field>`."""
    if name in summary.steps.columns:
        frame, column = summary.steps, name
    else:
        series, _, column = name.partition(".")
        frame = summary.series[series]
    frame[column] = frame[column].astype(float)
    return frame, column


def _rows(frame: pd.DataFrame, steps: Any) -> pd.Index:
    if steps is None:
        return frame.index
    wanted = list(steps)
    return frame.index[frame["step"].isin(wanted)] if "step" in frame.columns else frame.index[frame.index.isin(wanted)]


def add(summary: RunSummary, name: str, amount: float | pd.Series, steps: Any = None) -> None:
    """Add amount to a per-step value at the given steps (default every step)."""
    frame, column = _frame_of(summary, name)
    rows = _rows(frame, steps)
    shift = amount if not isinstance(amount, pd.Series) else amount.reindex(
        frame.loc[rows, "step"] if "step" in frame.columns else rows).to_numpy()
    frame.loc[rows, column] = frame.loc[rows, column] + shift


def scale(summary: RunSummary, name: str, factor: float) -> None:
    frame, column = _frame_of(summary, name)
    frame[column] = frame[column] * factor


def put(summary: RunSummary, name: str, step: int, value: float) -> None:
    frame, column = _frame_of(summary, name)
    frame.loc[_rows(frame, [step]), column] = value


def per_step(summary: RunSummary, name: str) -> pd.Series:
    """A per-step value by step, as the checks read it (a series' last sample of each step)."""
    if name in summary.steps.columns:
        return summary.steps[name].astype(float)
    series, _, column = name.partition(".")
    return summary.series[series].groupby("step")[column].last().astype(float)


def clean_steps(summary: RunSummary) -> pd.Index:
    """Steps no heat pause touched: read by every check, whatever its `steps` mode."""
    return summary.steps.index[~summary.steps["heat_touched"].astype(bool)]


def halves(summary: RunSummary) -> tuple[pd.Index, pd.Index]:
    """The steps of the first and the second half of a run: the first and last windows lie in them."""
    steps = summary.steps.index
    middle = steps[len(steps) // 2]
    return steps[steps < middle], steps[steps >= middle]


def names(metric: str | list[str]) -> list[str]:
    return [metric] if isinstance(metric, str) else list(metric)


def set_config(summary: RunSummary, dotted: str, value: Any) -> None:
    *path, key = dotted.split(".")
    node = summary.config
    for part in path:
        node = node[part]
    node[key] = value


def config(summary: RunSummary, dotted: str) -> Any:
    node: Any = summary.config
    for part in dotted.split("."):
        node = node[part]
    return node


def other_value(value: Any) -> Any:
    """A value of the same kind that differs: true for false, 5 for 4, '4B-other' for '4B'."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    return f"{value}-other"


def setting(word: str, key: str, params: dict[str, Any]) -> float:
    return params[key] if params.get(key) is not None else words()[word][key]


# --- levers: a number moved to just past, or just short of, the end of its interval -----------------------


@dataclass(frozen=True)
class Lever:
    move: Callable[[Data, float], None]  # changes the data by amount (0: no change)
    observe: Callable[[Any], float]  # the moved number, read from the check's observation
    low: float
    high: float
    outward: int = 0  # +1: moved up only, -1: down only (an extreme moves only away from the others); 0: either
    slope: float = 1.0  # about d(observation) / d(amount): the first guess of the solver


def by_lever(subject: Subject, *levers: Lever) -> Perturbation:
    """The lever whose number lies nearest the end of its interval, moved past that end and short of it."""
    chosen = []
    observed = subject.result().observed
    for lever in levers:
        x0 = float(lever.observe(observed))
        ends = [(lever.high - x0, lever.high, 1)] if math.isfinite(lever.high) and lever.outward >= 0 else []
        ends += [(x0 - lever.low, lever.low, -1)] if math.isfinite(lever.low) and lever.outward <= 0 else []
        distance, end, direction = min(ends)
        chosen.append((distance, end, direction, x0, lever))
    distance, end, direction, x0, lever = min(chosen, key=lambda c: c[0])
    assert distance >= 0, f"the check holds no more: {x0} is outside [{lever.low}, {lever.high}]"
    tiny = 1e-6 * max(abs(end), 1e-3)  # past an exact value: any change is a miss
    false = _solve(subject, lever, x0, end + direction * max(PAST * distance, tiny))
    within = None if distance == 0 else _solve(subject, lever, x0, end - direction * PAST * distance)
    return Perturbation(lambda data: lever.move(data, false),
                        None if within is None else (lambda data, amount=within: lever.move(data, amount)))


def _solve(subject: Subject, lever: Lever, x0: float, target: float) -> float:
    """The amount that moves the observation to target (secant steps; the levers are linear or near it)."""
    previous, seen = 0.0, x0
    amount = (target - x0) / (lever.slope or 1.0)
    for _ in range(60):
        observed = float(lever.observe(subject.result(lambda data, a=amount: lever.move(data, a)).observed))
        if abs(observed - target) <= 1e-4 * abs(target - x0):
            return amount
        if observed == seen:
            raise AssertionError(f"{subject.params['check']}: changing the data does not move what it observes")
        step = (observed - target) * (amount - previous) / (observed - seen)
        amount, previous, seen = amount - step, amount, observed
    raise AssertionError(f"{subject.params['check']}: no amount moves its observation to {target}")


def value_check(word: str) -> Callable[[Subject], Perturbation]:
    """about, near, rounds_to, exactly, above, below, at_least, at_most: a statistic (or every value) of a
    value, pooled or per run, shifted by adding amount to every step."""
    def derive_value(subject: Subject) -> Perturbation:
        p = subject.params
        low, high = subject.interval(word, p["value"])
        first = names(p["metric"])[0]
        pooled = p.get("per", "pooled") == "pooled"
        up = math.isfinite(high)  # every value: the largest moves up to the upper end, else the smallest down
        levers = []
        for group in [subject.runs] if pooled else [[run] for run in subject.runs]:
            def move(data: Data, amount: float, group: list[str] = group) -> None:
                for run in group:
                    add(data.summaries[run], first, amount)

            def observe(observed: Any, key: str | None = None if pooled else group[0]) -> float:
                found = observed if key is None else observed[key]
                return found["max" if up else "min"] if p["stat"] == "each" else found

            levers.append(Lever(move, observe, low, high, (1 if up else -1) if p["stat"] == "each" else 0))
        return by_lever(subject, *levers)
    return derive_value


def share(subject: Subject) -> Perturbation:
    """The parts of the share scaled by 1 + amount, in every run."""
    p = subject.params
    low, high = subject.interval(p["word"], p["value"] if p["value"] is not None else 0.0)
    observed = subject.result().observed
    x0 = observed["min"] if isinstance(observed, dict) else observed

    def move(data: Data, amount: float) -> None:
        for run in subject.runs:
            for name in names(p["parts"]):
                scale(data.summaries[run], name, 1 + amount)

    return by_lever(subject, Lever(move, lambda o: o["min"] if isinstance(o, dict) else o, low, high, slope=x0))


def trend(subject: Subject) -> Perturbation:
    """A run's values tilted by amount per step: its least-squares slope grows by amount."""
    p = subject.params
    if p["direction"] == "up":
        low, high = setting("goes_up", "min_slope", p), math.inf
    else:
        low, high = -math.inf, setting("goes_down", "max_slope", p)
    levers = []
    for run in subject.runs:
        def move(data: Data, amount: float, run: str = run) -> None:
            steps = data.summaries[run].steps.index.to_series()
            add(data.summaries[run], names(p["metric"])[0], amount * (steps - steps.mean()))
        levers.append(Lever(move, lambda o, run=run: o[run], low, high))
    return by_lever(subject, *levers)


def jumps_around(subject: Subject) -> Perturbation:
    """A run's step-to-step noise around its least-squares line scaled by 1 + amount."""
    p = subject.params
    factor = setting("jumps_around", "factor", p)
    first = names(p["metric"])[0]
    observed = subject.result().observed
    levers = []
    for run in subject.runs:
        values = per_step(subject.summaries[run], first).dropna()
        slope, intercept = np.polyfit(values.index.to_numpy(dtype=float), values.to_numpy(), 1)
        noise = values - (intercept + slope * values.index.to_numpy(dtype=float))

        def move(data: Data, amount: float, run: str = run, noise: pd.Series = noise) -> None:
            add(data.summaries[run], first, amount * noise)
        levers.append(Lever(move, lambda o, run=run: o[run], factor, math.inf, slope=observed[run]))
    return by_lever(subject, *levers)


def window_means(direction: str) -> Callable[[Subject], Perturbation]:
    """falls_from, rises_from: the first half of every run shifted by amount (the first-window mean moves),
    or the second half when only B is claimed; with neither, the first minus the last window mean."""
    def derive_windows(subject: Subject) -> Perturbation:
        p = subject.params
        first = names(p["metric"])[0]
        part = 1 if p["first"] is None and p["last"] is not None else 0

        def move(data: Data, amount: float) -> None:
            for run in subject.runs:
                add(data.summaries[run], first, amount, halves(data.summaries[run])[part])

        if p["first"] is not None or p["last"] is not None:
            key, value = ("first", p["first"]) if part == 0 else ("last", p["last"])
            low, high = subject.interval("about", value)
            return by_lever(subject, Lever(move, lambda o: o[key], low, high))
        low, high = (0.0, math.inf) if direction == "falls" else (-math.inf, 0.0)
        return by_lever(subject, Lever(move, lambda o: o["first"] - o["last"], low, high))
    return derive_windows


def ratio(subject: Subject) -> Perturbation:
    """The numerator run's value scaled by 1 + amount."""
    p = subject.params
    low, high = subject.interval(p["word"], p["value"])

    def move(data: Data, amount: float) -> None:
        scale(data.summaries[p["run"]], names(p["metric"])[0], 1 + amount)

    return by_lever(subject, Lever(move, lambda o: o["ratio"], low, high, slope=p["value"]))


def config_ratio(subject: Subject) -> Perturbation:
    """A run's first numerator field scaled by 1 + amount."""
    p = subject.params
    low, high = subject.interval(p["word"], p["value"])
    levers = []
    for run in subject.runs:
        def move(data: Data, amount: float, run: str = run) -> None:
            summary = data.summaries[run]
            set_config(summary, p["numerator"][0], float(config(summary, p["numerator"][0])) * (1 + amount))
        levers.append(Lever(move, lambda o, run=run: o[run], low, high, slope=p["value"]))
    return by_lever(subject, *levers)


def heat_difference(subject: Subject) -> Perturbation:
    """Amount added to the value on the steps a heat pause touched."""
    p = subject.params
    low, high = subject.interval(p["word"], p["value"])

    def move(data: Data, amount: float) -> None:
        for run in subject.runs:
            summary = data.summaries[run]
            add(summary, names(p["metric"])[0], amount, summary.steps.index[summary.steps["heat_touched"].astype(bool)])

    return by_lever(subject, Lever(move, lambda o: o["difference"], low, high))


def gain_within(subject: Subject) -> Perturbation:
    """Amount added to the second half of a run: its gain moves; the reference runs' gains stay."""
    p = subject.params
    reference = subject.result().observed["reference"]
    low, high = min(reference.values()), max(reference.values())
    levers = []
    for run in [r for r in subject.runs if r not in p["reference"]]:
        def move(data: Data, amount: float, run: str = run) -> None:
            add(data.summaries[run], names(p["metric"])[0], amount, halves(data.summaries[run])[1])
        levers.append(Lever(move, lambda o, run=run: o["gains"][run], low, high))
    return by_lever(subject, *levers)


def paired_difference(subject: Subject) -> Perturbation:
    """The largest difference made larger (or the smallest smaller) at its own step."""
    p = subject.params
    observed = subject.result().observed
    metric = names(p["metric"])[0]
    run, minus = subject.summaries[p["run"]], subject.summaries[p["minus"]]
    diff = (per_step(run, metric) - per_step(minus, metric)).reindex(observed["steps"])
    levers = []
    for key, value, step, up in (("max", p["high"], diff.idxmax(), True), ("min", p["low"], diff.idxmin(), False)):
        low, high = subject.interval(p["word"], value)

        def move(data: Data, amount: float, step: int = step) -> None:
            add(data.summaries[p["run"]], metric, amount, [step])
        levers.append(Lever(move, lambda o, key=key: o[key], low, high, 1 if up else -1))
    return by_lever(subject, *levers)


def event_span(subject: Subject) -> Perturbation:
    """A run's closing events moved by amount (in the check's unit)."""
    p = subject.params
    low, high = subject.interval(p["word"], p["value"])
    levers = []
    for run in subject.runs:
        def move(data: Data, amount: float, run: str = run) -> None:
            events = data.summaries[run].events
            events.loc[events["kind"] == p["to"], ["t0", "t1"]] += amount * UNITS[p["unit"]]
        levers.append(Lever(move, lambda o, run=run: o[run], low, high))
    return by_lever(subject, *levers)


def series_during(subject: Subject) -> Perturbation:
    """Amount added to every sample of a run's series field: its worst sample between the events moves."""
    p = subject.params
    if p["word"] == "idle":
        low, high = -math.inf, setting("idle", "at_most", p)
    else:
        low, high = (p["value"], math.inf) if p["word"] == "at_least" else (-math.inf, p["value"])
    levers = []
    for run in subject.runs:
        def move(data: Data, amount: float, run: str = run) -> None:
            # the series as the check reads it: GPU utilisation from gpu_util or the lab's recording (a GB10's)
            frame = series_of(data.summaries[run], p["series"], p["field"])
            frame[p["field"]] = frame[p["field"]].astype(float) + amount
        levers.append(Lever(move, lambda o, run=run: o[run]["worst"], low, high))
    return by_lever(subject, *levers)


def series_at_event(subject: Subject) -> Perturbation:
    """Amount added to every sample of a run's series field: its sample at the event moves."""
    p = subject.params
    observed = subject.result().observed
    levers = []
    for run in subject.runs:
        def move(data: Data, amount: float, run: str = run) -> None:
            # the series as the check reads it: GPU utilisation from gpu_util or the lab's recording (a GB10's)
            frame = series_of(data.summaries[run], p["series"], p["field"])
            frame[p["field"]] = frame[p["field"]].astype(float) + amount
        levers.append(Lever(move, lambda o, run=run: o[run]["value"], observed[run]["limit"], math.inf))
    return by_lever(subject, *levers)


# --- one step: counts, orders, facts ------------------------------------------------------------------------

OPS: dict[str, Callable[[float, float], bool]] = {
    "above": operator.gt, "below": operator.lt, "equal": operator.eq, "at_least": operator.ge, "at_most": operator.le}


def _flipped(op: str, left: float, right: float) -> float:
    """A left value whose comparison with right comes out the other way."""
    delta = 0.01 * max(abs(left), abs(right), 1e-6)
    return next(v for v in (right - delta, right, right + delta) if OPS[op](v, right) != OPS[op](left, right))


def _shift_within(subject: Subject, name: str, gaps: pd.Series, runs: list[str]) -> Change | None:
    """Half the smallest gap between the compared values added to the left values: no comparison flips."""
    smallest = float(gaps.abs().min())
    if not smallest > 0:
        return None

    def change(data: Data) -> None:
        for run in runs:
            add(data.summaries[run], name, smallest / 2)
    return change


def count_steps(subject: Subject) -> Perturbation:
    """One clean step's comparison flipped (a count of k becomes k - 1 or k + 1)."""
    p = subject.params
    run = subject.runs[0]
    left = per_step(subject.summaries[run], p["left"])
    right_value = p["right"]
    right = per_step(subject.summaries[run], right_value) if isinstance(right_value, str) else pd.Series(
        float(right_value), index=left.index)
    step = int(clean_steps(subject.summaries[run]).intersection(left.index)[0])
    new = _flipped(p["op"], float(left[step]), float(right[step]))

    def false(data: Data) -> None:
        put(data.summaries[run], p["left"], step, new)

    gaps = pd.concat([per_step(subject.summaries[r], p["left"]) - (
        per_step(subject.summaries[r], right_value) if isinstance(right_value, str) else float(right_value))
        for r in subject.runs]).dropna()
    within = None if p["op"] == "equal" else _shift_within(subject, p["left"], gaps, subject.runs)
    return Perturbation(false, within)


def compare_runs(subject: Subject) -> Perturbation:
    """One step clean in both runs flipped; within: the run's values moved by half the smallest gap."""
    p = subject.params
    metric = names(p["metric"])[0]
    run, than = subject.summaries[p["run"]], subject.summaries[p["than"]]
    left, right = per_step(run, metric).align(per_step(than, metric), join="inner")
    step = int(clean_steps(run).intersection(clean_steps(than)).intersection(left.index)[0])
    new = _flipped(p["op"], float(left[step]), float(right[step]))

    def false(data: Data) -> None:
        put(data.summaries[p["run"]], metric, step, new)

    within = None if p["op"] == "equal" else _shift_within(subject, metric, (left - right).dropna(), [p["run"]])
    return Perturbation(false, within)


def step_rule(subject: Subject) -> Perturbation:
    """One step's value made the other one; within: the cause moved halfway to the threshold, on its side."""
    p = subject.params
    run = subject.runs[0]
    cause = per_step(subject.summaries[run], p["metric"])
    step = int(cause.index[0])
    right = p["then"] if cause[step] <= p["at_most"] else p["otherwise"]
    wrong = p["otherwise"] if right == p["then"] else p["then"]

    def false(data: Data) -> None:
        put(data.summaries[run], p["value"], step, wrong if wrong != right else right + 1)

    def within(data: Data) -> None:
        for r in subject.runs:
            values = per_step(data.summaries[r], p["metric"])
            add(data.summaries[r], p["metric"], (p["at_most"] - values) / 2)
    return Perturbation(false, within)


def equal_at_step(subject: Subject) -> Perturbation:
    """One run's value at the step moved past the tolerance (within: short of it)."""
    p = subject.params
    run, metric, tolerance = subject.runs[0], names(p["metric"])[0], p["tolerance"]
    value = float(per_step(subject.summaries[run], metric)[p["step"]])
    past = tolerance * (1 + PAST) if tolerance else PAST * abs(value) or 1e-6

    def false(data: Data) -> None:
        add(data.summaries[run], metric, past, [p["step"]])

    def within(data: Data) -> None:
        add(data.summaries[run], metric, tolerance * (1 - PAST), [p["step"]])
    return Perturbation(false, within if tolerance else None)


def phase_order(subject: Subject) -> Perturbation:
    """At a middle step, a phase starts when the one before it starts (within: a little later than it did)."""
    p = subject.params
    real = [name for name in p["order"] if name not in (p["spans"] or {})]
    before, after = next((a, b) for a, b in reversed(list(zip(p["order"], p["order"][1:], strict=False)))
                         if a in real and b in real)
    run = subject.runs[0]
    phases = subject.summaries[run].phases
    steps = sorted(set(phases.loc[phases["name"] == after, "step"].dropna().astype(int)))
    step = steps[len(steps) // 2]

    def rows(frame: pd.DataFrame, name: str) -> pd.Index:
        return frame.index[(frame["step"] == step) & (frame["name"] == name) & frame["rank"].isin(COUNTED_RANKS)]

    def false(data: Data) -> None:
        frame = data.summaries[run].phases
        frame.loc[rows(frame, after), "t0"] = float(frame.loc[rows(frame, before), "t0"].min())

    def within(data: Data) -> None:
        frame = data.summaries[run].phases
        at = rows(frame, after)
        frame.loc[at, "t0"] = frame.loc[at, "t0"] + PAST * (frame.loc[at, "t1"] - frame.loc[at, "t0"])
    return Perturbation(false, within)


def gpu_count(subject: Subject) -> Perturbation:
    """One phase of a run ran on another node's GPU as well."""
    run = subject.runs[0]

    def false(data: Data) -> None:
        frame = data.summaries[run].phases
        row = next(i for i, gpus in frame["gpus"].items() if len(gpus))
        frame.loc[row, "node"] = f"{frame.loc[row, 'node']}-other"
    return Perturbation(false, None)


def held_by_one_side(subject: Subject) -> Perturbation:
    """Outside the hand-offs, at a sample where one side holds memory, the other side holds some too
    (within: just under what counts as holding)."""
    p = subject.params
    run = subject.runs[0]
    summary = subject.summaries[run]
    held = summary.series["held_memory"]
    wide = held.pivot_table(index="ts", columns="side", values="gib", aggfunc="max").fillna(0.0)
    skipped = summary.phases[summary.phases["name"].isin(p["outside"])]
    outside = pd.Series(True, index=wide.index)
    for t0, t1 in zip(skipped["t0"], skipped["t1"], strict=True):
        outside &= ~((wide.index >= t0) & (wide.index <= t1))
    holding = wide > p["holding_gib"]
    alone = wide.index[outside & (holding.sum(axis=1) == 1)]
    ts = alone[len(alone) // 2]
    idle_side = holding.columns[~holding.loc[ts]][0]

    def holds(gib: float) -> Change:
        def change(data: Data) -> None:
            frame = data.summaries[run].series["held_memory"]
            frame.loc[(frame["ts"] == ts) & (frame["side"] == idle_side), "gib"] = gib
        return change
    return Perturbation(holds(p["holding_gib"] * (1 + 2 * PAST) + 1), holds(p["holding_gib"] * (1 - PAST)))


def repeats_identical(subject: Subject) -> Perturbation:
    """identical: one repeat answers differently (within: a probe's repeats all answer anew, alike);
    differing: every probe's repeats answer alike (within: one differing repeat answers anew)."""
    p = subject.params
    run = subject.runs[0]
    frame = subject.summaries[run].series["repeat_probe"]
    first_probe = frame["probe"].iloc[0]
    differing = frame.groupby("probe")["output_sha256"].nunique()
    differing = differing[differing > 1].index

    def one_new(data: Data) -> None:
        probes = data.summaries[run].series["repeat_probe"]
        row = probes.index[0] if p["identical"] else probes.index[probes["probe"] == differing[0]][0]
        probes.loc[row, "output_sha256"] = "f" * 64

    def alike(data: Data) -> None:
        for r in subject.runs:
            probes = data.summaries[r].series["repeat_probe"]
            chosen = probes["probe"] == first_probe if p["identical"] else pd.Series(True, index=probes.index)
            probes.loc[chosen, "output_sha256"] = probes.loc[chosen, "probe"].map(lambda k: f"{k:064d}")
    return Perturbation(one_new, alike) if p["identical"] else Perturbation(alike, one_new)


def config_equals(subject: Subject) -> Perturbation:
    p = subject.params
    run = subject.runs[0]

    def false(data: Data) -> None:
        summary = data.summaries[run]
        set_config(summary, p["field"], other_value(config(summary, p["field"])))
    return Perturbation(false, None)


def runs_matching(subject: Subject) -> Perturbation:
    """A matching run's first `where` field changed (or, when none matches, one run made to match)."""
    p = subject.params
    matching = subject.result().observed["runs"]
    field, value = next(iter(p["where"].items()))

    def false(data: Data) -> None:
        if matching:
            set_config(data.summaries[matching[0]], field, other_value(value))
        else:
            for name, wanted in p["where"].items():
                set_config(data.summaries[subject.runs[0]], name, wanted)
    return Perturbation(false, None)


def run_count(subject: Subject) -> Perturbation:
    """The block reads one more run (the first example run it did not read)."""
    extra = next(run for run in sorted(subject.summaries) if run not in subject.block.runs)

    def false(data: Data) -> None:
        runs = (*data.block.runs, extra)
        checks = tuple({**c, "runs": [*c["runs"], extra]} if c is subject.params and c.get("runs") else c
                       for c in data.block.checks)
        data.block = dataclasses.replace(data.block, runs=runs, checks=checks)
    return Perturbation(false, None)


def step_count(subject: Subject) -> Perturbation:
    """A run loses its last step."""
    run = subject.runs[0]

    def false(data: Data) -> None:
        summary = data.summaries[run]
        summary.steps = summary.steps.iloc[:-1]
    return Perturbation(false, None)


def table_rows(subject: Subject) -> Perturbation:
    """The table loses its last row (within: a row's single value says something else)."""
    p = subject.params

    def rows(data: Data) -> list:
        table = data.tables[p["table"]]
        return table[p["list"]] if p["list"] else table

    def false(data: Data) -> None:
        rows(data).pop()

    def within(data: Data) -> None:
        rows(data)[0][p["single"][0]] = "Something else, in one value"
    return Perturbation(false, within if p["single"] else None)


DERIVE: dict[str, Callable[[Subject], Perturbation]] = {
    **{name: value_check(word) for name, word in (
        ("about", "about"), ("near", "near"), ("rounds_to", "rounds"), ("exactly", "exactly"), ("above", "above"),
        ("below", "below"), ("at_least", "at_least"), ("at_most", "at_most"))},
    "share": share, "trend": trend, "jumps_around": jumps_around, "falls_from": window_means("falls"),
    "rises_from": window_means("rises"), "ratio": ratio, "config_ratio": config_ratio,
    "heat_difference": heat_difference, "gain_within": gain_within, "count_steps": count_steps,
    "compare_runs": compare_runs, "step_rule": step_rule, "equal_at_step": equal_at_step,
    "paired_difference": paired_difference, "phase_order": phase_order, "gpu_count": gpu_count,
    "event_span": event_span, "series_during": series_during, "series_at_event": series_at_event,
    "held_by_one_side": held_by_one_side, "repeats_identical": repeats_identical,
    "config_equals": config_equals, "runs_matching": runs_matching, "run_count": run_count,
    "step_count": step_count, "table_rows": table_rows,
}
