"""Checks on values: a statistic against a number, shares, ratios, trends, window means, noise."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from build_tools.checking.checks import _margin
from build_tools.checking.checks._data import statistic
from build_tools.checking.checks._perturb import (
    Data,
    Lever,
    Perturbation,
    Subject,
    add,
    by_lever,
    halves,
    names,
    one_of,
    per_step,
    perturbation,
    pick,
    scale,
    set_config,
)
from build_tools.checking.checks._perturb import config as config_of
from build_tools.checking.checks._registry import STATS, STEP_MODES, CheckFn, Ctx, Outcome, Param, register
from build_tools.checking.checks._words import fmt, setting
from build_tools.core._exceptions import MissingValue
from build_tools.readers import config_value, heat_touched, label_of, step_values, trend_line

METRIC = Param("names", True, doc="a per-step value (metric or `<series>.<field>`); a list is summed per step")
STAT = Param("str", default="median", choices=STATS, doc="the statistic over the steps; `each`: every value")
STEPS = Param("str", default="auto", choices=STEP_MODES,
              doc="`clean`: steps no heat pause touched; `all`; `auto`: clean for time values")
UNIT = Param("str", default="", doc="the unit, for the report")
TOL = {"tolerance": Param("num", doc="an absolute tolerance instead of the word's"),
       "relative": Param("num", doc="a relative tolerance instead of the word's")}


def _by_run(ctx: Ctx, p: dict[str, Any]) -> dict[str, pd.Series]:
    return {run_id: step_values(s, p["metric"], p["steps"]) for run_id, s in ctx.runs.items()}


def _pooled(values: dict[str, pd.Series], p: dict[str, Any]) -> dict[str, pd.Series]:
    """The values of each run, or all runs pooled into one group."""
    if p.get("per", "pooled") == "pooled":
        return {"pooled": pd.concat(list(values.values()))}
    return values


def _each_margin(values: dict[str, pd.Series], exp: Any, unit: str) -> Any:
    """Every value must hold: the margin of the worst step of any run, named by its run and step."""
    return _margin.worst(_margin.of_interval(float(v), exp, unit, f"{run_id} step {int(s)}")
                         for run_id, series in values.items() for s, v in zip(series.index, series, strict=True))


def _missed(key: str, off_by: str) -> str:
    """A miss named by its run where there are several ("baseline-seed2: 3 too low")."""
    return "" if not off_by else off_by if key == "pooled" else f"{key}: {off_by}"


def _join(misses: Iterable[str]) -> str:
    return "; ".join(m for m in misses if m)


def _value_check(word: str) -> CheckFn:
    def check(ctx: Ctx, p: dict[str, Any]) -> Outcome:
        exp = ctx.expect(word, p["value"], p)
        unit = f" {p['unit']}" if p["unit"] else ""
        observed: dict[str, Any] = {}
        parts, misses, ok, margins = [], [], True, []
        by_run = _by_run(ctx, p)
        for key, values in _pooled(by_run, p).items():
            if p["stat"] == "each":
                bad = [int(s) for s, v in zip(values.index, values, strict=True) if not exp.holds(float(v))]
                ok &= not bad
                observed[key] = {"min": float(values.min()), "max": float(values.max()), "outside": bad}
                text = f"from {fmt(values.min())} to {fmt(values.max())}{unit}"
                parts.append(text + (f", {len(bad)} outside (steps {bad[:5]})" if bad else ""))
            else:
                x = statistic(values, p["stat"])
                ok &= exp.holds(x)
                margins.append(_margin.of_interval(x, exp, p["unit"], None if key == "pooled" else key))
                misses.append(_missed(key, exp.off_by(x)))
                observed[key] = x
                parts.append(f"{fmt(x)}{unit}")
        shown = observed.get("pooled", observed)
        stat = "every value" if p["stat"] == "each" else p["stat"]
        where = "" if "pooled" in observed else " (" + ", ".join(observed) + ")"
        margin = _each_margin(by_run, exp, p["unit"]) if p["stat"] == "each" else _margin.worst(margins)
        return Outcome(ok, shown, exp.text, {"label": f"{stat} {label_of(p['metric'])}",
                                             "value": "; ".join(parts) + where}, off_by=_join(misses),
                       margin=margin)
    return check


for _word, _name, _doc in (
    ("about", "about", "a statistic of a value is about a number (tolerance: `about` in words.yml)"),
    ("near", "near", "a statistic of a value is near a number (tolerance: `near` in words.yml)"),
    ("rounds", "rounds_to", "a statistic rounds to the number as written (half a unit of its last digit)"),
    ("exactly", "exactly", "a statistic equals a number exactly"),
    ("above", "above", "a statistic is above a number"),
    ("below", "below", "a statistic is below a number"),
    ("at_least", "at_least", "a statistic is at least a number"),
    ("at_most", "at_most", "a statistic is at most a number"),
):
    register(_name, "{label} is {value}", _doc, ("value",), metric=METRIC, stat=STAT,
             value=Param("num", True, doc="the number of the claim"), unit=UNIT, steps=STEPS,
             per=Param("str", default="pooled", choices=("pooled", "run"),
                       doc="`pooled`: one statistic over all runs' steps; `run`: every run on its own"),
             **TOL)(_value_check(_word))


@register("share", "{label} is {value}",
          "the per-step share sum(parts) / whole; its statistic meets the word (default `almost_all`)",
          ("value",), parts=Param("names", True, doc="the values that make up the share, summed per step"),
          whole=Param("str", True, doc="the value they are a share of"), stat=STAT, steps=STEPS,
          word=Param("str", default="almost_all", choices=("almost_all", "about", "near", "at_least", "at_most")),
          value=Param("num", doc="the share the claim states (not for `almost_all`)"),
          at_least=Param("num", doc="override the share `almost all` means"), **TOL)
def share(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    shares = {}
    for run_id, summary in ctx.runs.items():
        parts = step_values(summary, p["parts"], p["steps"])
        whole = step_values(summary, p["whole"], p["steps"])
        shares[run_id] = (parts / whole).dropna()
    pooled = pd.concat(list(shares.values()))
    if p["word"] != "almost_all" and p["value"] is None:
        raise MissingValue(None, f"`value` for share with word {p['word']}")
    exp = ctx.expect(p["word"], p["value"] if p["value"] is not None else 0.0, p)
    if p["stat"] == "each":
        x = float(pooled.min())
        return Outcome(exp.holds(x), {"min": x, "steps": len(pooled)}, exp.text,
                       {"label": f"smallest share of {p['whole'].rsplit('/', 1)[-1]}", "value": fmt(x)},
                       off_by=exp.off_by(x), margin=_each_margin(shares, exp, ""))
    x = statistic(pooled, p["stat"])
    return Outcome(exp.holds(x), x, exp.text,
                   {"label": f"{p['stat']} share of {label_of(p['whole'])}", "value": fmt(x)}, off_by=exp.off_by(x),
                   margin=_margin.of_interval(x, exp))


@register("trend", "{label} least-squares slope per step {value}",
          "the least-squares slope of a value against the step is up (> 0) or down (< 0) for every run "
          "(`goes_up` / `goes_down` in words.yml)",
          metric=METRIC, steps=STEPS, direction=Param("str", True, choices=("up", "down")),
          min_slope=Param("num", doc="override: `up` needs a slope above this"),
          max_slope=Param("num", doc="override: `down` needs a slope below this"))
def trend(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    slopes = {r: trend_line(step_values(s, p["metric"], p["steps"]), r)[0] for r, s in ctx.runs.items()}
    if p["direction"] == "up":
        bound = setting("goes_up", "min_slope", p)
        ok = all(v > bound for v in slopes.values())
        expected = f"above {fmt(bound)} for every run (goes up)"
    else:
        bound = setting("goes_down", "max_slope", p)
        ok = all(v < bound for v in slopes.values())
        expected = f"below {fmt(bound)} for every run (goes down)"
    text = ", ".join(f"{r} {v:+.3g}" for r, v in slopes.items())
    margin = _margin.worst(_margin.of_limit(v, bound, above=p["direction"] == "up", unit="per step", worst=r)
                           for r, v in slopes.items())
    return Outcome(ok, slopes, expected, {"label": label_of(p["metric"]), "value": text}, margin=margin)


@register("jumps_around", "{label} median step-to-step change over trend per step: {value}",
          "the value is noisy from step to step (`jumps_around` in words.yml), for every run",
          metric=METRIC, steps=STEPS, factor=Param("num", doc="override the factor of words.yml"))
def jumps_around(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    factor = setting("jumps_around", "factor", p)
    ratios = {}
    for run_id, summary in ctx.runs.items():
        values = step_values(summary, p["metric"], p["steps"])
        change = float(np.median(np.abs(np.diff(values.to_numpy(dtype=float)))))
        trend_step = abs(trend_line(values, run_id)[0])
        ratios[run_id] = change / trend_step if trend_step > 0 else float("inf")
    ok = all(r >= factor for r in ratios.values())
    text = ", ".join(f"{r} {fmt(v)}" for r, v in ratios.items())
    margin = _margin.worst(_margin.of_limit(v, factor, above=True, worst=r) for r, v in ratios.items())
    return Outcome(ok, ratios, f"at least {fmt(factor)} for every run (jumps around)",
                   {"label": label_of(p["metric"]), "value": text}, margin=margin)


def _windows(ctx: Ctx, p: dict[str, Any], window: int) -> tuple[float, float]:
    """Means of the first and the last `window` steps, pooled over the runs."""
    firsts, lasts = [], []
    for summary in ctx.runs.values():
        values = step_values(summary, p["metric"], p["steps"])
        if len(values) < 2 * window:
            raise MissingValue(summary.run_id, f"two windows of {window} steps (it has {len(values)})")
        firsts.append(values.iloc[:window])
        lasts.append(values.iloc[-window:])
    return float(pd.concat(firsts).mean()), float(pd.concat(lasts).mean())


def _falls_or_rises(direction: str) -> CheckFn:
    def check(ctx: Ctx, p: dict[str, Any]) -> Outcome:
        window = int(setting("falls_from", "window", p))
        first, last = _windows(ctx, p, window)
        unit = f" {p['unit']}" if p["unit"] else ""
        failures, expected = [], []
        # The direction's edge is the last-window mean: the first one may move to it, not past it.
        margins = [_margin.of_limit(first, last, above=direction == "falls", unit=p["unit"],
                                    worst=f"first-window mean {'above' if direction == 'falls' else 'below'} the last",
                                    observed=True)]
        for name, x, target in (("first", first, p["first"]), ("last", last, p["last"])):
            if target is None:
                continue
            exp = ctx.expect("about", target, p)
            margins.append(_margin.of_interval(x, exp, p["unit"], f"{name}-window mean"))
            expected.append(f"{name}-window mean {exp.text}")
            if not exp.holds(x):
                failures.append(f"{name}-window mean is {fmt(x)}{unit}, expected {exp.text}, {exp.off_by(x)}")
        moved = first > last if direction == "falls" else first < last
        expected.append(f"first-window mean {'above' if direction == 'falls' else 'below'} the last "
                        f"(windows of {window} steps)")
        if not moved:
            failures.append(f"first-window mean {fmt(first)}{unit} is not "
                            f"{'above' if direction == 'falls' else 'below'} last-window mean {fmt(last)}{unit}")
        fields = {"label": label_of(p["metric"]),
                  "value": f"first-window mean is {fmt(first)}{unit}, last-window mean is {fmt(last)}{unit}"}
        return Outcome(not failures, {"first": first, "last": last, "window": window}, "; ".join(expected),
                       fields, "; ".join(failures) or None, margin=_margin.worst(margins))
    return check


for _direction, _name in (("falls", "falls_from"), ("rises", "rises_from")):
    register(_name, "{label}: {value}",
             f"\"{_direction} from about A to about B\": first- and last-window means pooled over the runs "
             "(`falls_from` in words.yml); A and B optional, the direction always checked",
             ("first", "last"), metric=METRIC, steps=STEPS, unit=UNIT,
             first=Param("num", doc="A: the first-window mean is about this"),
             last=Param("num", doc="B: the last-window mean is about this"),
             window=Param("int", doc="override the window of words.yml"), **TOL)(_falls_or_rises(_direction))


@register("ratio", "{label} {value}", "the ratio of a statistic between two runs (default word: rounds)",
          ("value",), metric=METRIC, stat=STAT, steps=STEPS,
          run=Param("run", True, doc="the numerator's run"), over=Param("run", True, doc="the denominator's run"),
          value=Param("num", True), word=Param("str", default="rounds", choices=("about", "near", "rounds")),
          **TOL)
def ratio(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    top = statistic(step_values(ctx.run(p["run"]), p["metric"], p["steps"]), p["stat"])
    bottom = statistic(step_values(ctx.run(p["over"]), p["metric"], p["steps"]), p["stat"])
    x = top / bottom
    exp = ctx.expect(p["word"], p["value"], p)
    fields = {"label": f"{p['stat']} {label_of(p['metric'])}",
              "value": f"{p['run']} / {p['over']} is {fmt(x)} ({fmt(top)} / {fmt(bottom)})"}
    return Outcome(exp.holds(x), {"ratio": x, "numerator": top, "denominator": bottom}, exp.text, fields,
                   off_by=exp.off_by(x), margin=_margin.of_interval(x, exp))


@register("config_ratio", "{label} is {value}",
          "a ratio of run.yaml facts (products of fields), for every run (default word: about)",
          ("value",), numerator=Param("strs", True, doc="run.yaml fields multiplied"),
          denominator=Param("strs", True, doc="run.yaml fields multiplied"),
          denominator_scale=Param("num", default=1, doc="multiplies the denominator (1073741824 for GiB)"),
          value=Param("num", True), word=Param("str", default="about", choices=("about", "near", "rounds")), **TOL)
def config_ratio(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    exp = ctx.expect(p["word"], p["value"], p)
    ratios = {}
    for run_id, summary in ctx.runs.items():
        top = float(np.prod([float(config_value(summary, f)) for f in p["numerator"]]))
        bottom = float(np.prod([float(config_value(summary, f)) for f in p["denominator"]])) * p["denominator_scale"]
        ratios[run_id] = top / bottom
    ok = all(exp.holds(x) for x in ratios.values())
    text = ", ".join(f"{fmt(x)} ({r})" for r, x in ratios.items())
    label = " x ".join(p["numerator"]) + " / " + " x ".join(p["denominator"])
    misses = _join(_missed(r, exp.off_by(x)) for r, x in ratios.items())
    margin = _margin.worst(_margin.of_interval(x, exp, worst=r) for r, x in ratios.items())
    return Outcome(ok, ratios, exp.text, {"label": label, "value": text}, off_by=misses, margin=margin)


@register("heat_difference", "{label} is {value}",
          "a statistic of a value on the steps a heat pause touched minus the same on the clean steps",
          ("value",), metric=METRIC, stat=STAT, value=Param("num", True), unit=UNIT,
          word=Param("str", default="about", choices=("about", "near", "rounds", "above", "at_least")), **TOL)
def heat_difference(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    touched, clean = [], []
    for summary in ctx.runs.values():
        values = step_values(summary, p["metric"], "all")
        flags = heat_touched(summary, p["metric"], values.index)  # a step of another axis: its rollout's
        touched.append(values[flags])
        clean.append(values[~flags])
    hot, cool = pd.concat(touched), pd.concat(clean)
    if hot.empty or cool.empty:
        raise MissingValue(None, f"{'touched' if hot.empty else 'clean'} steps in runs {', '.join(ctx.runs)}")
    diff = statistic(hot, p["stat"]) - statistic(cool, p["stat"])
    exp = ctx.expect(p["word"], p["value"], p)
    unit = f" {p['unit']}" if p["unit"] else ""
    fields = {"label": f"{p['stat']} {label_of(p['metric'])} touched minus clean",
              "value": f"{fmt(diff)}{unit} ({len(hot)} touched, {len(cool)} clean steps)"}
    return Outcome(exp.holds(diff), {"difference": diff, "touched": len(hot), "clean": len(cool)}, exp.text, fields,
                   off_by=exp.off_by(diff), margin=_margin.of_interval(diff, exp, p["unit"]))


@register("gain_within", "{label} gains {value}",
          "the gain (last-window mean minus first-window mean) of each of the runs lies within the range of "
          "the gains of the reference runs", metric=METRIC, steps=STEPS,
          reference=Param("runlist", True, doc="the runs whose gains make the range"),
          window=Param("int", doc="override the window of words.yml (falls_from)"))
def gain_within(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    window = int(setting("falls_from", "window", p))
    run_ids = [r for r in (p.get("runs") or ctx.runs) if r not in p["reference"]]

    def gain(run_id: str) -> float:
        values = step_values(ctx.run(run_id), p["metric"], p["steps"])
        return float(values.iloc[-window:].mean() - values.iloc[:window].mean())

    refs = {r: gain(r) for r in p["reference"]}
    gains = {r: gain(r) for r in run_ids}
    low, high = min(refs.values()), max(refs.values())
    ok = bool(gains) and all(low <= g <= high for g in gains.values())
    text = ", ".join(f"{r} {fmt(g)}" for r, g in gains.items())
    margin = _margin.worst(_margin.of_range(g, low, high, worst=r) for r, g in gains.items())
    return Outcome(ok, {"gains": gains, "reference": refs}, f"within [{fmt(low)}, {fmt(high)}] (reference gains)",
                   {"label": label_of(p["metric"]), "value": text}, margin=margin)


# --- perturbations: a change of the data each check reads that makes it fail (checks/_perturb.py) --------


def value_check(word: str) -> Callable[[Subject], Perturbation]:
    """about, near, rounds_to, exactly, above, below, at_least, at_most: a statistic (or every value) of a
    value, pooled or per run, shifted by adding amount to every step."""
    def derive_value(subject: Subject) -> Perturbation:
        runs, pooled = subject.runs, subject.params.get("per", "pooled") == "pooled"
        # Candidates: each value of a sum moved, in every run, then (pooled) in every run but one.
        groups = [runs, *([[r for r in runs if r != left_out] for left_out in runs] if pooled and len(runs) > 1
                          else [])]
        return one_of([partial(_shifted, subject, word, name, group) for group in groups
                       for name in names(subject.params["metric"])])
    return derive_value


def _shifted(subject: Subject, word: str, name: str, moved: list[str]) -> Perturbation:
    """A value check's statistic moved by adding amount to one of the values it sums, in the runs moved."""
    p = subject.params
    low, high = subject.interval(word, p["value"])
    pooled = p.get("per", "pooled") == "pooled"
    up = math.isfinite(high)  # every value: the largest moves up to the upper end, else the smallest down
    levers = []
    for group in [moved] if pooled else [[run] for run in moved]:
        def move(data: Data, amount: float, group: list[str] = group) -> None:
            for run in group:
                add(data.summaries[run], name, amount)

        def observe(observed: Any, key: str | None = None if pooled else group[0]) -> float:
            found = observed if key is None else observed[key]
            return float(found["max" if up else "min"] if p["stat"] == "each" else found)

        levers.append(Lever(move, observe, low, high, (1 if up else -1) if p["stat"] == "each" else 0))
    return by_lever(subject, *levers)


def window_means(direction: str) -> Callable[[Subject], Perturbation]:
    """falls_from, rises_from: the first half of every run shifted by amount (the first-window mean moves), or
    the second half (the last-window mean), whichever claimed mean is closer to failing; with neither claimed,
    the first half, against the direction."""
    def derive_windows(subject: Subject) -> Perturbation:
        p = subject.params
        first = names(p["metric"])[0]

        def mover(part: int) -> Callable[[Data, float], None]:
            def move(data: Data, amount: float) -> None:
                for run in subject.runs:
                    add(data.summaries[run], first, amount, halves(data.summaries[run])[part])
            return move

        levers = [Lever(mover(part), pick(key), *subject.interval("about", p[key]))
                  for part, key in ((0, "first"), (1, "last")) if p[key] is not None]
        if levers:
            return by_lever(subject, *levers)
        low, high = (0.0, math.inf) if direction == "falls" else (-math.inf, 0.0)
        return by_lever(subject, Lever(mover(0), lambda o: o["first"] - o["last"], low, high))
    return derive_windows


for _name, _word in (("about", "about"), ("near", "near"), ("rounds_to", "rounds"), ("exactly", "exactly"),
                     ("above", "above"), ("below", "below"), ("at_least", "at_least"), ("at_most", "at_most")):
    perturbation(_name)(value_check(_word))
for _name, _direction in (("falls_from", "falls"), ("rises_from", "rises")):
    perturbation(_name)(window_means(_direction))


@perturbation("share")
def share_perturbation(subject: Subject) -> Perturbation:
    """The parts of the share scaled by 1 + amount, in every run: all of them, or (alternatives) each alone."""
    parts = names(subject.params["parts"])
    alone = [[name] for name in parts] if len(parts) > 1 else []
    return one_of([partial(_scaled_share, subject, chosen) for chosen in [parts, *alone]])


def _scaled_share(subject: Subject, parts: list[str]) -> Perturbation:
    p = subject.params
    low, high = subject.interval(p["word"], p["value"] if p["value"] is not None else 0.0)
    observed = subject.result().observed
    x0 = observed["min"] if isinstance(observed, dict) else observed

    def move(data: Data, amount: float) -> None:
        for run in subject.runs:
            for name in parts:
                scale(data.summaries[run], name, 1 + amount)

    def observe(found: Any) -> float:
        return float(found["min"] if isinstance(found, dict) else found)

    return by_lever(subject, Lever(move, observe, low, high, slope=x0))


@perturbation("trend")
def trend_perturbation(subject: Subject) -> Perturbation:
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
        levers.append(Lever(move, pick(run), low, high))
    return by_lever(subject, *levers)


@perturbation("jumps_around")
def jumps_around_perturbation(subject: Subject) -> Perturbation:
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
        levers.append(Lever(move, pick(run), factor, math.inf, slope=observed[run]))
    return by_lever(subject, *levers)


@perturbation("ratio")
def ratio_perturbation(subject: Subject) -> Perturbation:
    """The numerator run's value scaled by 1 + amount."""
    p = subject.params
    low, high = subject.interval(p["word"], p["value"])

    def move(data: Data, amount: float) -> None:
        scale(data.summaries[p["run"]], names(p["metric"])[0], 1 + amount)

    return by_lever(subject, Lever(move, lambda o: o["ratio"], low, high, slope=p["value"]))


@perturbation("config_ratio")
def config_ratio_perturbation(subject: Subject) -> Perturbation:
    """A run's first numerator field scaled by 1 + amount."""
    p = subject.params
    low, high = subject.interval(p["word"], p["value"])
    levers = []
    for run in subject.runs:
        def move(data: Data, amount: float, run: str = run) -> None:
            summary = data.summaries[run]
            set_config(summary, p["numerator"][0], float(config_of(summary, p["numerator"][0])) * (1 + amount))
        levers.append(Lever(move, pick(run), low, high, slope=p["value"]))
    return by_lever(subject, *levers)


@perturbation("heat_difference")
def heat_difference_perturbation(subject: Subject) -> Perturbation:
    """Amount added to the value on the steps a heat pause touched."""
    p = subject.params
    low, high = subject.interval(p["word"], p["value"])

    def move(data: Data, amount: float) -> None:
        for run in subject.runs:
            summary = data.summaries[run]
            add(summary, names(p["metric"])[0], amount, summary.steps.index[summary.steps["heat_touched"].astype(bool)])

    return by_lever(subject, Lever(move, lambda o: o["difference"], low, high))


@perturbation("gain_within")
def gain_within_perturbation(subject: Subject) -> Perturbation:
    """Amount added to the second half of a run: its gain moves; the reference runs' gains stay."""
    p = subject.params
    reference = subject.result().observed["reference"]
    low, high = min(reference.values()), max(reference.values())
    levers = []
    for run in [r for r in subject.runs if r not in p["reference"]]:
        def move(data: Data, amount: float, run: str = run) -> None:
            add(data.summaries[run], names(p["metric"])[0], amount, halves(data.summaries[run])[1])
        levers.append(Lever(move, pick("gains", run), low, high))
    return by_lever(subject, *levers)
