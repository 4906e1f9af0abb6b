"""Checks on time: the order of phases in a step, spans between events, series inside an interval."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from build_tools.checking.checks import _margin
from build_tools.checking.checks._perturb import (
    COUNTED_RANKS,
    PAST,
    Change,
    Data,
    Lever,
    Perturbation,
    Subject,
    by_lever,
    perturbation,
    pick,
)
from build_tools.checking.checks._registry import Ctx, Outcome, Param, register
from build_tools.checking.checks._words import fmt, setting
from build_tools.core._exceptions import MissingValue
from build_tools.core._types import Margin, RunSummary
from build_tools.readers import config_value, counted_phases, event_interval, events_of, series_between, series_of

UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0}
ENDPOINT = re.compile(r"^(?P<phase>[a-z_]+)\.(?P<edge>t0|t1)$")


def _step_intervals(summary: RunSummary, names: list[str], spans: dict[str, list[str]]
                    ) -> dict[int, dict[str, tuple[float, float] | None]]:
    """Per step: name -> (t0, t1) of the first counted phase of that name, and the derived spans."""
    first = counted_phases(summary, required=False).sort_values("t0", kind="stable").drop_duplicates(["step", "name"])
    found: dict[int, dict[str, tuple[float, float]]] = {}
    for step, name, t0, t1 in zip(first["step"], first["name"], first["t0"], first["t1"], strict=True):
        found.setdefault(int(step), {})[name] = (float(t0), float(t1))
    out: dict[int, dict[str, tuple[float, float] | None]] = {}
    for step, edges in sorted(found.items()):
        for name, (start, end) in spans.items():
            a, b = ENDPOINT.match(start), ENDPOINT.match(end)
            if a and b and a["phase"] in edges and b["phase"] in edges:
                edges[name] = (edges[a["phase"]][a["edge"] == "t1"], edges[b["phase"]][b["edge"] == "t1"])
        out[step] = {n: edges.get(n) for n in names}
    return out


@register("phase_order", "{value}",
          "at every step each phase of `order` occurs, lasts more than zero, and ends before the next starts; "
          "`spans` defines a phase from two edges of others (scoring: [rollout.t1, train_wait.t1])",
          order=Param("strs", True), spans=Param("spans", doc="name: [<phase>.t0|t1, <phase>.t0|t1]"))
def phase_order(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    spans = p["spans"] or {}
    bad: list[str] = []
    total = 0
    margins: list[Margin | None] = []
    for run_id, summary in ctx.runs.items():
        for step, iv in _step_intervals(summary, p["order"], spans).items():
            total += 1
            problem = _order_problem(iv, p["order"])
            if problem:
                bad.append(f"{run_id} step {step}: {problem}")
            margins += [_margin.of_limit(gap, 0.0, above=True, unit="s", worst=f"{run_id} step {step}, {what}")
                        for gap, what in _order_gaps(iv, p["order"])]
    if total == 0:
        raise MissingValue(None, "steps with phases")
    order = " -> ".join(p["order"])
    text = f"{order} in order at {total - len(bad)} of {total} steps" + (f" ({'; '.join(bad[:3])})" if bad else "")
    return Outcome(not bad, {"steps": total, "exceptions": bad}, f"{order}, without overlap, at every step",
                   {"value": text}, margin=_margin.worst(margins))


def _order_gaps(iv: dict[str, tuple[float, float] | None], order: list[str]) -> list[tuple[float, str]]:
    """The times in seconds that must stay above 0: each phase's length, each pause between two in order."""
    spans = [(name, iv[name]) for name in order]
    gaps = [(span[1] - span[0], f"{name} length") for name, span in spans if span is not None]
    gaps += [(b[0] - a[1], f"{na} to {nb}") for (na, a), (nb, b) in zip(spans, spans[1:], strict=False)
             if a is not None and b is not None]
    return gaps


def _order_problem(iv: dict[str, tuple[float, float] | None], order: list[str]) -> str | None:
    present: dict[str, tuple[float, float]] = {}
    for name in order:
        span = iv[name]
        if span is None:
            return f"no {name}"
        if span[1] <= span[0]:
            return f"{name} lasts {fmt(span[1] - span[0])} s"
        present[name] = span
    for a, b in zip(order, order[1:], strict=False):
        if present[a][1] > present[b][0] + 1e-6:
            return f"{a} ends {fmt(present[a][1] - present[b][0])} s after {b} starts"
    return None


EVENT_PARAMS = {"from": Param("str", True, doc="event kind that opens the span"),
                "to": Param("str", True, doc="event kind that closes it (the first after)")}


@register("event_span", "{label} {value}",
          "the time from an event to the next event of another kind, in `unit` (default word: rounds)",
          ("value",), **EVENT_PARAMS, unit=Param("str", default="min", choices=tuple(UNITS)),
          value=Param("num", True), word=Param("str", default="rounds", choices=("rounds", "about", "near")),
          tolerance=Param("num"), relative=Param("num"))
def event_span(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    exp = ctx.expect(p["word"], p["value"], p)
    spans = {}
    for run_id, summary in ctx.runs.items():
        t0, t1 = event_interval(summary, p["from"], p["to"])
        spans[run_id] = (t1 - t0) / UNITS[p["unit"]]
    ok = all(exp.holds(x) for x in spans.values())
    text = ", ".join(f"{fmt(x)} {p['unit']}" for x in spans.values())
    misses = "; ".join(exp.off_by(x) for x in spans.values() if exp.off_by(x))
    margin = _margin.worst(_margin.of_interval(x, exp, p["unit"], r) for r, x in spans.items())
    return Outcome(ok, spans, exp.text, {"label": f"{p['from']} to {p['to']}", "value": text}, off_by=misses,
                   margin=margin)


@register("series_during", "{label} {value}",
          "a sampled series stays within a bound between two events (default word: idle, from words.yml)",
          series=Param("str", True), field=Param("str", True), **EVENT_PARAMS,
          word=Param("str", default="idle", choices=("idle", "at_most", "at_least")),
          value=Param("num", doc="the bound, for at_most / at_least"), unit=Param("str", default="%"),
          at_most=Param("num", doc="override the bound `idle` means"))
def series_during(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    if p["word"] == "idle":
        bound, above = float(setting("idle", "at_most", p)), False
        expected = f"at most {fmt(bound)}{p['unit'] and ' ' + p['unit']} in every sample (idle)"
    else:
        if p["value"] is None:
            raise MissingValue(None, f"`value` for series_during with word {p['word']}")
        bound, above = float(p["value"]), p["word"] == "at_least"
        expected = f"{p['word'].replace('_', ' ')} {fmt(bound)}{p['unit'] and ' ' + p['unit']} in every sample"
    observed, ok, margins = {}, True, []
    for run_id, summary in ctx.runs.items():
        t0, t1 = event_interval(summary, p["from"], p["to"])
        inside = series_between(summary, p["series"], p["field"], p["from"], p["to"])
        worst = float(inside.min() if above else inside.max())
        ok &= worst >= bound if above else worst <= bound
        observed[run_id] = {"worst": worst, "samples": len(inside), "minutes": (t1 - t0) / 60}
        at = _sample_time(summary, p, inside.idxmin() if above else inside.idxmax(), t0)
        margins.append(_margin.of_limit(worst, bound, above=above, unit=p["unit"], worst=f"{run_id}, {at}"))
    first = next(iter(observed.values()))
    text = (f"{'min' if above else 'max'} {fmt(first['worst'])}{p['unit'] and ' ' + p['unit']} "
            f"over {first['samples']} samples "
            f"({fmt(first['minutes'])} min)")
    return Outcome(ok, observed, expected, {"label": f"{p['series']} {p['field']}", "value": text},
                   margin=_margin.worst(margins))


def _sample_time(summary: RunSummary, p: dict[str, Any], index: Any, t0: float) -> str:
    """Where a sample lies, for naming the worst one: "the sample 12.5 min after engine_death"."""
    ts = float(series_of(summary, p["series"], p["field"]).loc[index, "ts"])
    return f"the sample {fmt((ts - t0) / 60)} min after {p['from']}"


@register("series_at_event", "{label} at {event}: {value}",
          "the last sample of a series at or before an event is at least `at_least` (a number or a run.yaml "
          "field), in every run; a run without the event fails",
          series=Param("str", True), field=Param("str", True), event=Param("str", True),
          at_least=Param("limit", True))
def series_at_event(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    observed, ok, margins = {}, True, []
    for run_id, summary in ctx.runs.items():
        t0 = float(events_of(summary, p["event"])["t0"].iloc[0])
        frame = series_of(summary, p["series"], p["field"])
        before = frame[frame["ts"] <= t0]
        if before.empty:
            raise MissingValue(run_id, f"{p['series']} sample before its {p['event']} event")
        value = float(before[p["field"]].iloc[-1])
        limit = float(config_value(summary, p["at_least"])) if isinstance(p["at_least"], str) else float(p["at_least"])
        ok &= value >= limit
        observed[run_id] = {"value": value, "limit": limit}
        margins.append(_margin.of_limit(value, limit, above=True, worst=run_id))
    text = ", ".join(f"{fmt(v['value'])} (limit {fmt(v['limit'])})" for v in observed.values())
    limit_text = p["at_least"] if isinstance(p["at_least"], str) else fmt(p["at_least"])
    return Outcome(ok, observed, f"at least {limit_text} in every run",
                   {"label": f"{p['series']} {p['field']}", "event": p["event"], "value": text},
                   margin=_margin.worst(margins))


@register("held_by_one_side", "{value}",
          "outside the hand-off phases, at most `at_most_sides` sides hold more than `holding_gib` at any "
          "sample of the held_memory series, and every side holds memory at some time (binds at_most_sides)",
          ("at_most_sides",), at_most_sides=Param("int", default=1), holding_gib=Param("num", default=1.0),
          outside=Param("strs", default=["sleep", "wake_up", "update_weights"],
                        doc="phases whose intervals are skipped (memory moves during them)"))
def held_by_one_side(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    observed: dict[str, dict[str, Any]] = {}  # the report's JSON
    ok, margins = True, []
    for run_id, summary in ctx.runs.items():
        frame = series_of(summary, "held_memory", "gib")
        wide = frame.pivot_table(index="ts", columns="side", values="gib", aggfunc="max").fillna(0.0)
        phases = summary.phases[summary.phases["name"].isin(p["outside"])]
        ts = wide.index.to_numpy(dtype=float)
        skip = np.zeros(len(ts), dtype=bool)
        for t0, t1 in zip(phases["t0"], phases["t1"], strict=True):
            skip |= (ts >= t0) & (ts <= t1)
        holding = wide[~skip] > p["holding_gib"]
        sides = holding.sum(axis=1)
        never = [side for side in wide.columns if not holding[side].any()]
        worst = int(sides.max()) if len(sides) else 0
        ok &= worst <= p["at_most_sides"] and not never and len(wide.columns) >= 2
        observed[run_id] = {"max_sides": worst, "samples": int(len(sides)),
                            "both": int((sides > p["at_most_sides"]).sum()), "never_holding": never}
        margins += _holding_margins(run_id, wide[~skip], p)
    first = next(iter(observed.values()))
    text = (f"at most {first['max_sides']} side holding over {first['samples']} samples"
            + (f", {first['both']} with more" if first["both"] else "")
            + (f"; never holding: {', '.join(first['never_holding'])}" if first["never_holding"] else ""))
    return Outcome(ok, observed, f"at most {p['at_most_sides']} side above {fmt(p['holding_gib'])} GiB at a time, "
                   "each side holding at some time", {"value": text}, margin=_margin.worst(margins))


def _holding_margins(run_id: str, wide: Any, p: dict[str, Any]) -> list[Margin | None]:
    """The one-side rule's margin in GiB: the most memory a side beyond `at_most_sides` held at one sample (it
    may grow up to `holding_gib`), and each side's largest hold (it must stay above `holding_gib` once)."""
    limit, k = float(p["holding_gib"]), int(p["at_most_sides"])
    margins: list[Margin | None] = [_margin.of_limit(float(wide[side].max()), limit, above=True, unit="GiB",
                                                     worst=f"{run_id}, side {side} at its largest")
                                    for side in wide.columns]
    if len(wide.columns) > k and len(wide):
        extra = np.sort(wide.to_numpy(dtype=float), axis=1)[:, ::-1][:, k]  # the (k+1)-th largest at each sample
        at = int(np.argmax(extra))
        margins.append(_margin.of_limit(float(extra[at]), limit, above=False, unit="GiB",
                                        worst=f"{run_id}, sample at {fmt(float(wide.index[at]))}"))
    return margins


@register("repeats_identical", "{value}",
          "in the repeat_probe series, the repeats of each probe give identical answers (`identical: true`), "
          "or some probe's repeats differ (`identical: false`), in every run of the check",
          identical=Param("bool", True))
def repeats_identical(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    observed, ok = {}, True
    for run_id, summary in ctx.runs.items():
        frame = series_of(summary, "repeat_probe", "output_sha256")
        same = frame.groupby("probe")["output_sha256"].nunique() == 1
        all_same = bool(same.all())
        ok &= all_same == p["identical"]
        observed[run_id] = {"probes": int(len(same)), "identical": int(same.sum())}
    text = ", ".join(f"{r}: {v['identical']} of {v['probes']} probes identical" for r, v in observed.items())
    expected = "every probe's repeats identical" if p["identical"] else "some probe's repeats differing"
    return Outcome(ok, observed, expected, {"value": text})


# --- perturbations: a change of the data each check reads that makes it fail (checks/_perturb.py) --------


@perturbation("phase_order")
def phase_order_perturbation(subject: Subject) -> Perturbation:
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
        chosen = (frame["step"] == step) & (frame["name"] == name) & frame["rank"].isin(COUNTED_RANKS)
        found: pd.Index = frame.index[chosen.to_numpy()]
        return found

    def false(data: Data) -> None:
        frame = data.summaries[run].phases
        frame.loc[rows(frame, after), "t0"] = float(frame.loc[rows(frame, before), "t0"].min())

    def within(data: Data) -> None:
        frame = data.summaries[run].phases
        at = rows(frame, after)
        frame.loc[at, "t0"] = frame.loc[at, "t0"] + PAST * (frame.loc[at, "t1"] - frame.loc[at, "t0"])
    return Perturbation(false, within)


@perturbation("event_span")
def event_span_perturbation(subject: Subject) -> Perturbation:
    """A run's closing events moved by amount (in the check's unit)."""
    p = subject.params
    low, high = subject.interval(p["word"], p["value"])
    levers = []
    for run in subject.runs:
        def move(data: Data, amount: float, run: str = run) -> None:
            events = data.summaries[run].events
            events.loc[events["kind"] == p["to"], ["t0", "t1"]] += amount * UNITS[p["unit"]]
        levers.append(Lever(move, pick(run), low, high))
    return by_lever(subject, *levers)


@perturbation("series_during")
def series_during_perturbation(subject: Subject) -> Perturbation:
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
        levers.append(Lever(move, pick(run, "worst"), low, high))
    return by_lever(subject, *levers)


@perturbation("series_at_event")
def series_at_event_perturbation(subject: Subject) -> Perturbation:
    """Amount added to every sample of a run's series field: its sample at the event moves."""
    p = subject.params
    observed = subject.result().observed
    levers = []
    for run in subject.runs:
        def move(data: Data, amount: float, run: str = run) -> None:
            # the series as the check reads it: GPU utilisation from gpu_util or the lab's recording (a GB10's)
            frame = series_of(data.summaries[run], p["series"], p["field"])
            frame[p["field"]] = frame[p["field"]].astype(float) + amount
        levers.append(Lever(move, pick(run, "value"), observed[run]["limit"], math.inf))
    return by_lever(subject, *levers)


@perturbation("held_by_one_side")
def held_by_one_side_perturbation(subject: Subject) -> Perturbation:
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


@perturbation("repeats_identical")
def repeats_identical_perturbation(subject: Subject) -> Perturbation:
    """identical: one repeat answers differently (within: a probe's repeats all answer anew, alike);
    differing: every probe's repeats answer alike (within: one differing repeat answers anew)."""
    p = subject.params
    run = subject.runs[0]
    frame = subject.summaries[run].series["repeat_probe"]
    first_probe = frame["probe"].iloc[0]
    unique = frame.groupby("probe")["output_sha256"].nunique()
    differing = unique[unique > 1].index

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
