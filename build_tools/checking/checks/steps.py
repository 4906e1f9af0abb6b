"""Checks over steps: every / none / exactly k of n, comparisons between runs, rules, paired differences."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import pandas as pd

from build_tools.checking.checks import _margin
from build_tools.checking.checks._numbers import as_number
from build_tools.checking.checks._perturb import (
    PAST,
    PLAUSIBLE,
    CannotFail,
    Change,
    Data,
    Lever,
    Perturbation,
    Subject,
    add,
    by_lever,
    clean_steps,
    names,
    per_step,
    perturbation,
    pick,
    put,
)
from build_tools.checking.checks._registry import STEP_MODES, Ctx, Outcome, Param, register
from build_tools.checking.checks._words import fmt
from build_tools.core._exceptions import MissingValue
from build_tools.core._types import Margin, RunSummary
from build_tools.readers import join_note, label_of, names_of, step_values, use_clean, value_axes

OPS: dict[str, tuple[Callable[[float, float], bool], str]] = {
    "above": (operator.gt, "above"), "below": (operator.lt, "below"), "equal": (operator.eq, "equal to"),
    "at_least": (operator.ge, "at least"), "at_most": (operator.le, "at most"),
}
OP = Param("str", True, choices=tuple(OPS))
COUNT = Param("count", default="every", doc="`every`, `none`, or exactly this many")
OF = Param("int", doc="the number of steps compared, exactly (binds e.g. the 12 of 'in 8 of the 12')")
STEPS = Param("str", default="auto", choices=STEP_MODES)


# How far a step's left value is inside its comparison (positive) or outside it: left minus right for
# above / at least, right minus left for below / at most; equal is never inside by more than 0.
SIGNED: dict[str, Callable[[float, float], float]] = {
    "above": operator.sub, "at_least": operator.sub, "below": lambda a, b: b - a, "at_most": lambda a, b: b - a,
    "equal": lambda a, b: -abs(a - b)}


@dataclass(frozen=True)
class Step:
    """One compared step: its name for a report, how far its left value is inside the comparison, both values."""

    name: str
    inside: float
    left: float
    right: float


def _flip_margin(compared: list[Step], holds: pd.Series, want: Any, unit: str, fixed: bool) -> Margin | None:
    """How far a value can move before the count changes: for `every` (or `none`) the step nearest to failing
    (to holding); for exactly k, the step nearest to flipping either way, since any flip changes the count. A
    count already wrong: minus the nearest flip that would bring it one step closer. A fraction (over the
    limit) only when the right side is a number of the claim (`fixed`), not another observed value."""
    def at(step: Step, headroom: float) -> Margin | None:
        return _margin.make(headroom, step.right, unit, abs(step.right) if fixed else None, step.left, step.name)

    k, n = int(holds.sum()), len(compared)
    if want == "every":
        return _margin.worst(at(c, c.inside) for c in compared)
    if want == "none":
        return _margin.worst(at(c, -c.inside) for c in compared)
    flags = list(holds)
    if k == int(want):
        return _margin.worst(at(c, abs(c.inside)) for c in compared)
    # One step on the side with too many must flip: the nearest one says how far the count is from holding.
    surplus = [m for c, h in zip(compared, flags, strict=True) if h == (k > int(want))
               if (m := at(c, -abs(c.inside))) is not None]
    return max(surplus, key=lambda m: m.headroom) if surplus and n else None


def _count_bind(p: dict[str, Any]) -> list[Any]:
    return [v for v in (p.get("count"), p.get("of")) if isinstance(v, int) and not isinstance(v, bool)]


def _judge_count(holds: pd.Series, p: dict[str, Any], what: str, compared: list[Step], fixed: bool = False) -> Outcome:
    """Compare how many steps hold with `count` (every / none / k) and their number with `of`."""
    k, n = int(holds.sum()), len(holds)
    want = p["count"]
    target = n if want == "every" else 0 if want == "none" else int(want)
    ok = k == target and (p["of"] is None or n == p["of"])
    of_text = f" of {p['of']}" if p["of"] is not None else ""
    expected = {"every": f"every step{of_text}", "none": f"no step{of_text}"}.get(
        want, f"exactly {want}{of_text or f' of {n}'} steps")
    steps = zip(holds.index, holds, strict=True)  # the index is the step number
    failing = [int(s) for s, h in steps if not h] if want == "every" else [
        int(s) for s, h in steps if h] if want == "none" else []
    observed = {"holds": k, "steps": n, "exceptions": failing}
    extra = f" (not at steps {failing[:8]})" if want == "every" and failing else (
        f" (at steps {failing[:8]})" if want == "none" and failing else "")
    margin = _flip_margin(compared, holds, want, "", fixed)
    if p["of"] is not None and n != p["of"]:
        margin = _margin.of_count(n, p["of"], "steps")
    return Outcome(ok, observed, expected, {"label": what, "value": f"{k} of {n} steps{extra}"}, margin=margin)


def _operand(summary: RunSummary, value: Any, mode: str, joined: bool = False) -> pd.Series | float:
    number = as_number(value) if not isinstance(value, str) else None
    return float(number) if number is not None else step_values(summary, value, mode, joined=joined)


def _joined(summary: RunSummary, *values: Any) -> bool:
    """Whether values compared step by step are on different step axes of the run: then both are read by rollout."""
    return len(value_axes(summary, [n for v in values if isinstance(v, str) for n in names_of(v)])) > 1


@register("count_steps", "{label}: {value}",
          "a per-step comparison `left op right` holds at every / no / exactly k steps (pooled over runs)",
          _count_bind, left=Param("str", True), op=OP, right=Param("operand", True, doc="a value name or a number"),
          count=COUNT, of=OF, steps=STEPS)
def count_steps(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    fn, words = OPS[p["op"]]
    parts, compared, notes = [], [], []
    for run_id, summary in ctx.runs.items():
        mode = "clean" if use_clean([p["left"], *([p["right"]] if isinstance(p["right"], str) else [])],
                                    p["steps"]) else "all"
        joined = _joined(summary, p["left"], p["right"])
        notes += [f"{summary.run_id}: {join_note(summary)}"] if joined else []
        left = step_values(summary, p["left"], mode, joined=joined)
        right = _operand(summary, p["right"], mode, joined)
        if isinstance(right, pd.Series):
            left, right = left.align(right, join="inner")
        rights = list(right) if isinstance(right, pd.Series) else [right] * len(left)
        parts.append(pd.Series([fn(a, b) for a, b in zip(left, rights, strict=True)], index=left.index))
        compared += [Step(f"{run_id} step {int(s)}", SIGNED[p["op"]](float(a), float(b)), float(a), float(b))
                     for s, a, b in zip(left.index, left, rights, strict=True)]
    holds = pd.concat(parts)
    outcome = _judge_count(holds, p, f"{label_of(p['left'])} {words} {label_of(str(p['right']))}", compared,
                           fixed=not isinstance(p["right"], str))
    if notes:  # said in the output: two step axes joined
        outcome.fields["value"] += f" ({'; '.join(notes)})"
    return outcome


@register("compare_runs", "{label}: {value}",
          "step by step, a value of one run is above / below another run's, at every / no / exactly k steps "
          "(steps both runs have; clean in both for time values)",
          _count_bind, metric=Param("names", True), run=Param("run", True), op=OP, than=Param("run", True),
          count=COUNT, of=OF, steps=STEPS)
def compare_runs(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    fn, words = OPS[p["op"]]
    left = step_values(ctx.run(p["run"]), p["metric"], p["steps"])
    right = step_values(ctx.run(p["than"]), p["metric"], p["steps"])
    left, right = left.align(right, join="inner")
    holds = pd.Series([fn(a, b) for a, b in zip(left, right, strict=True)], index=left.index, dtype=bool)
    compared = [Step(f"{p['run']} step {int(s)}", SIGNED[p["op"]](float(a), float(b)), float(a), float(b))
                for s, a, b in zip(left.index, left, right, strict=True)]
    return _judge_count(holds, p, f"{label_of(p['metric'])} of {p['run']} {words} {p['than']}", compared)


@register("step_rule", "{label}: {value}",
          "at every step: `value` is `then` when `metric` is at most `at_most`, else `otherwise`",
          ("at_most", "then", "otherwise"), metric=Param("str", True), value=Param("str", True),
          at_most=Param("num", True), then=Param("num", True), otherwise=Param("num", True))
def step_rule(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    bad: list[str] = []
    total = 0
    margins: list[Margin | None] = []
    notes = []
    for run_id, summary in ctx.runs.items():
        joined = _joined(summary, p["metric"], p["value"])
        notes += [f"{run_id}: {join_note(summary)}"] if joined else []
        cause, effect = step_values(summary, p["metric"], "all", joined=joined).align(
            step_values(summary, p["value"], "all", joined=joined), join="inner")
        for step, (c, e) in enumerate(zip(cause, effect, strict=True)):
            total += 1
            want = p["then"] if c <= p["at_most"] else p["otherwise"]
            # The cause may move up to at_most (or down to just above it) before the rule asks another value.
            room = abs(float(c) - p["at_most"])
            margins.append(_margin.make(room if e == want else -room, p["at_most"], "", abs(p["at_most"]), float(c),
                                        f"{run_id} step {int(cause.index[step])}"))
            if e != want:
                bad.append(f"{run_id} step {int(cause.index[step])}: {fmt(c)} -> {fmt(e)}")
    if total == 0:
        raise MissingValue(None, f"steps with both {p['metric']} and {p['value']}")
    expected = (f"{label_of(p['value'])} {fmt(p['then'])} when {label_of(p['metric'])} <= {fmt(p['at_most'])}, "
                f"else {fmt(p['otherwise'])}, at every step")
    text = f"rule holds at {total - len(bad)} of {total} steps" + (f" (not {'; '.join(bad[:4])})" if bad else "")
    text += f" ({'; '.join(notes)})" if notes else ""  # said in the output: two step axes joined
    return Outcome(not bad, {"steps": total, "exceptions": bad}, expected,
                   {"label": label_of(p["value"]), "value": text}, margin=_margin.worst(margins))


@register("equal_at_step", "{label} at step {step}: {value}", "the runs' values at one step are equal",
          ("step",), metric=Param("names", True), step=Param("int", True),
          tolerance=Param("num", default=0.0, doc="largest difference still called equal (default: none)"))
def equal_at_step(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    values = {}
    for run_id, summary in ctx.runs.items():
        series = step_values(summary, p["metric"], "all")
        if p["step"] not in series.index:
            raise MissingValue(run_id, f"step {p['step']} with {label_of(p['metric'])}")
        values[run_id] = float(series.loc[p["step"]])
    spread = max(values.values()) - min(values.values())
    ok = len(values) >= 2 and spread <= p["tolerance"]
    text = ", ".join(f"{r} {v:.6g}" for r, v in values.items())
    expected = "equal" + (f" within {fmt(p['tolerance'])}" if p["tolerance"] else "")
    margin = _margin.of_limit(spread, float(p["tolerance"]), above=False)
    return Outcome(ok, values, expected, {"label": label_of(p["metric"]), "step": p["step"], "value": text},
                   margin=margin)


@register("paired_difference", "{label}: {value}",
          "`run` minus `minus`, step by step on the steps both have (clean in both for time values): the "
          "smallest and largest differences round to `low` and `high` as written (\"0.6 to 1.8\")",
          ("low", "high"), metric=Param("names", True), run=Param("run", True), minus=Param("run", True),
          low=Param("num", True), high=Param("num", True), unit=Param("str", default=""), steps=STEPS,
          word=Param("str", default="rounds", choices=("rounds", "about", "near")),
          tolerance=Param("num"), relative=Param("num"))
def paired_difference(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    left = step_values(ctx.run(p["run"]), p["metric"], p["steps"])
    right = step_values(ctx.run(p["minus"]), p["metric"], p["steps"])
    left, right = left.align(right, join="inner")
    if left.empty:
        raise MissingValue(None, f"step in common between {p['run']} and {p['minus']}")
    diff = left - right
    unit = f" {p['unit']}" if p["unit"] else ""
    lo, hi = float(diff.min()), float(diff.max())
    exp_lo, exp_hi = ctx.expect(p["word"], p["low"], p), ctx.expect(p["word"], p["high"], p)
    failures = [f"{name} difference is {fmt(x)}{unit}, expected {e.text}, {e.off_by(x)}"
                for name, x, e in (("smallest", lo, exp_lo), ("largest", hi, exp_hi)) if not e.holds(x)]
    fields = {"label": f"{label_of(p['metric'])} {p['run']} minus {p['minus']}",
              "value": f"{fmt(lo)} to {fmt(hi)}{unit} over {len(diff)} paired steps"}
    margin = _margin.worst([
        _margin.of_interval(lo, exp_lo, p["unit"], f"smallest difference, step {int(cast(int, diff.idxmin()))}"),
        _margin.of_interval(hi, exp_hi, p["unit"], f"largest difference, step {int(cast(int, diff.idxmax()))}")])
    return Outcome(not failures, {"min": lo, "max": hi, "steps": [int(s) for s in diff.index]},
                   f"smallest {exp_lo.text}, largest {exp_hi.text}", fields, "; ".join(failures) or None,
                   margin=margin)


# --- perturbations: a change of the data each check reads that makes it fail (checks/_perturb.py) --------


def _flipped(op: str, left: float, right: float) -> float:
    """A left value whose comparison with right comes out the other way."""
    delta = 0.01 * max(abs(left), abs(right), 1e-6)
    return next(v for v in (right - delta, right, right + delta) if OPS[op][0](v, right) != OPS[op][0](left, right))


def _shift_within(subject: Subject, name: str, gaps: pd.Series, runs: list[str]) -> Change | None:
    """Half the smallest gap between the compared values added to the left values: no comparison flips."""
    smallest = float(gaps.abs().min())
    if not smallest > 0:
        return None

    def change(data: Data) -> None:
        for run in runs:
            add(data.summaries[run], name, smallest / 2)
    return change


def _compares_some_step(subject: Subject) -> None:
    """A count over no step (a filter that selects none) holds whatever the data: nothing can fail it."""
    if subject.result().observed["steps"] == 0:
        raise CannotFail("it compares no step")


@perturbation("count_steps")
def count_steps_perturbation(subject: Subject) -> Perturbation:
    """One clean step's comparison flipped (a count of k becomes k - 1 or k + 1)."""
    p = subject.params
    _compares_some_step(subject)
    run = subject.runs[0]
    left = per_step(subject.summaries[run], p["left"])
    right_value = p["right"]
    right = per_step(subject.summaries[run], right_value) if isinstance(right_value, str) else pd.Series(
        float(right_value), index=left.index)
    step = int(clean_steps(subject.summaries[run]).intersection(left.index)[0])
    new = _flipped(p["op"], float(left[step]), float(right[step]))
    largest = float(left.abs().max())
    if abs(new - float(left[step])) > PLAUSIBLE * max(largest, 1e-12):
        # A comparison with a number no value comes near ("none above 1e9") selects no step, whatever the data.
        raise CannotFail(f"its comparison is out of reach: a step's {label_of(p['left'])} would have to move from "
                         f"{fmt(float(left[step]))} to {fmt(new)}, more than {fmt(PLAUSIBLE)} times the largest "
                         f"value ({fmt(largest)})")

    def false(data: Data) -> None:
        put(data.summaries[run], p["left"], step, new)

    gaps = pd.concat([per_step(subject.summaries[r], p["left"]) - (
        per_step(subject.summaries[r], right_value) if isinstance(right_value, str) else float(right_value))
        for r in subject.runs]).dropna()
    within = None if p["op"] == "equal" else _shift_within(subject, p["left"], gaps, subject.runs)
    return Perturbation(false, within)


@perturbation("compare_runs")
def compare_runs_perturbation(subject: Subject) -> Perturbation:
    """One step clean in both runs flipped; within: the run's values moved by half the smallest gap."""
    p = subject.params
    _compares_some_step(subject)
    metric = names(p["metric"])[0]
    run, than = subject.summaries[p["run"]], subject.summaries[p["than"]]
    left, right = per_step(run, metric).align(per_step(than, metric), join="inner")
    step = int(clean_steps(run).intersection(clean_steps(than)).intersection(left.index)[0])
    new = _flipped(p["op"], float(left[step]), float(right[step]))

    def false(data: Data) -> None:
        put(data.summaries[p["run"]], metric, step, new)

    within = None if p["op"] == "equal" else _shift_within(subject, metric, (left - right).dropna(), [p["run"]])
    return Perturbation(false, within)


@perturbation("step_rule")
def step_rule_perturbation(subject: Subject) -> Perturbation:
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


@perturbation("equal_at_step")
def equal_at_step_perturbation(subject: Subject) -> Perturbation:
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


@perturbation("paired_difference")
def paired_difference_perturbation(subject: Subject) -> Perturbation:
    """The run's value shifted at every paired step, so that the smallest or the largest difference (whichever is
    closer to failing) moves past the edge of its interval, either way."""
    p = subject.params
    observed = subject.result().observed
    metric = names(p["metric"])[0]

    def shift(data: Data, amount: float) -> None:
        add(data.summaries[p["run"]], metric, amount, observed["steps"])

    return by_lever(subject, *(Lever(shift, pick(key), *subject.interval(p["word"], p[end]))
                               for key, end in (("max", "high"), ("min", "low"))))
