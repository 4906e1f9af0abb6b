"""Checks on facts of the set-up: run.yaml fields, how many runs and steps, the data tables."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from build_tools.checking.checks import _margin
from build_tools.checking.checks._perturb import Data, Perturbation, Subject, other_value, perturbation, set_config
from build_tools.checking.checks._perturb import config as config_of
from build_tools.checking.checks._registry import Ctx, Outcome, Param, register
from build_tools.core._exceptions import MissingValue
from build_tools.core._types import RunSummary
from build_tools.ingest.schemas import same_setting
from build_tools.readers import config_value


def show(value: Any) -> str:
    """A run.yaml value as YAML writes it: true, false, null, 4B, 1024."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return str(value)


@register("config_equals", "{label} is {value}", "a run.yaml field has this value in every run of the check",
          ("value",), field=Param("str", True, doc="dotted run.yaml field, e.g. flags.rollout_max_response_len"),
          value=Param("scalar", True))
def config_equals(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    values = {r: config_value(s, p["field"]) for r, s in ctx.runs.items()}
    ok = bool(values) and all(same_setting(v, p["value"]) for v in values.values())
    distinct = sorted({show(v) for v in values.values()})
    return Outcome(ok, values, f"{show(p['value'])} in every run", {"label": p["field"], "value": ", ".join(distinct)})


@register("runs_matching", "runs with {label}: {value}",
          "exactly `count` of the check's runs match every field of `where` (binds the count and the values)",
          lambda p: [p["count"], *p["where"].values()], where=Param("mapping", True), count=Param("int", True))
def runs_matching(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    def matches(summary: RunSummary) -> bool:
        try:
            return all(same_setting(config_value(summary, f), v) for f, v in p["where"].items())
        except MissingValue:
            return False

    found = [r for r, s in ctx.runs.items() if matches(s)]
    label = ", ".join(f"{f} = {show(v)}" for f, v in p["where"].items())
    return Outcome(len(found) == p["count"], {"count": len(found), "runs": found}, f"exactly {p['count']}",
                   {"label": label, "value": f"{len(found)} ({', '.join(found) or 'none'})"},
                   margin=_margin.of_count(len(found), p["count"], "runs"))


@register("run_count", "runs read: {value}", "the check reads exactly `count` runs (\"both\", \"four runs\")",
          ("count",), count=Param("int", True))
def run_count(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    n = len(ctx.runs)
    return Outcome(n == p["count"], n, f"exactly {p['count']}", {"value": n},
                   margin=_margin.of_count(n, p["count"], "runs"))


@register("step_count", "steps per run: {value}", "every run of the check has exactly `count` steps",
          ("count",), count=Param("int", True))
def step_count(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    counts = {r: len(s.steps) for r, s in ctx.runs.items()}
    ok = bool(counts) and all(n == p["count"] for n in counts.values())
    text = ", ".join(sorted({str(n) for n in counts.values()}))
    margin = _margin.worst(_margin.of_count(n, p["count"], "steps", r) for r, n in counts.items())
    return Outcome(ok, counts, f"exactly {p['count']} in every run", {"value": text}, margin=margin)


@register("gpu_count", "GPUs used: {value}", "every run's phases ran on exactly `count` GPUs (node, index)",
          ("count",), count=Param("int", True))
def gpu_count(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    counts = {}
    for run_id, summary in ctx.runs.items():
        pairs = {(node, gpu) for node, gpus in zip(summary.phases["node"], summary.phases["gpus"], strict=True)
                 for gpu in gpus}
        counts[run_id] = len(pairs)
    ok = bool(counts) and all(n == p["count"] for n in counts.values())
    return Outcome(ok, counts, f"exactly {p['count']} in every run",
                   {"value": ", ".join(sorted({str(n) for n in counts.values()}))},
                   margin=_margin.worst(_margin.of_count(n, p["count"], "GPUs", r) for r, n in counts.items()))


@register("table_rows", "{label}: {value}",
          "a data table (docs/data/<table>.yml) has exactly `count` rows; each row holds exactly one value "
          "for every field of `single` (binds the count, and one)",
          lambda p: [p["count"], *([1] if p.get("single") else [])], table=Param("str", True),
          list=Param("str", doc="the key of the rows in the table (default: the table is the list)"),
          count=Param("int", True), single=Param("strs", default=[]))
def table_rows(ctx: Ctx, p: dict[str, Any]) -> Outcome:
    if p["table"] not in ctx.tables:
        raise MissingValue(None, f"table docs/data/{p['table']}.yml")
    rows = ctx.tables[p["table"]]
    rows = rows.get(p["list"]) if p["list"] and isinstance(rows, dict) else rows
    if not isinstance(rows, list):
        raise MissingValue(None, f"list of rows in table {p['table']}{' under ' + p['list'] if p['list'] else ''}")
    bad = [f"row {i + 1} {f}" for i, row in enumerate(rows) for f in p["single"]
           if not (isinstance(row, dict) and isinstance(row.get(f), str) and row[f].strip())]
    ok = len(rows) == p["count"] and not bad
    single = f", one {' and one '.join(p['single'])} each" if p["single"] else ""
    text = f"{len(rows)} rows" + (f" (not one value: {', '.join(bad[:4])})" if bad else "")
    return Outcome(ok, {"rows": len(rows), "not_single": bad}, f"exactly {p['count']} rows{single}",
                   {"label": p["table"], "value": text}, margin=_margin.of_count(len(rows), p["count"], "rows"))


# --- perturbations: a change of the data each check reads that makes it fail (checks/_perturb.py) --------


@perturbation("config_equals")
def config_equals_perturbation(subject: Subject) -> Perturbation:
    p = subject.params
    run = subject.runs[0]

    def false(data: Data) -> None:
        summary = data.summaries[run]
        set_config(summary, p["field"], other_value(config_of(summary, p["field"])))
    return Perturbation(false, None)


@perturbation("runs_matching")
def runs_matching_perturbation(subject: Subject) -> Perturbation:
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


@perturbation("run_count")
def run_count_perturbation(subject: Subject) -> Perturbation:
    """The check reads one more run: a copy of its first run, under a name no run of runs/ can have."""
    run = subject.runs[0]
    extra = f"{run} (copy)"

    def false(data: Data) -> None:
        data.summaries = {**data.summaries, extra: dataclasses.replace(copy.deepcopy(data.summaries[run]),
                                                                       run_id=extra)}
        runs = (*data.block.runs, extra)
        checks = tuple({**c, "runs": [*c["runs"], extra]} if c is subject.params and c.get("runs") else c
                       for c in data.block.checks)
        data.block = dataclasses.replace(data.block, runs=runs, checks=checks)
    return Perturbation(false, None)


@perturbation("step_count")
def step_count_perturbation(subject: Subject) -> Perturbation:
    """A run loses its last step."""
    run = subject.runs[0]

    def false(data: Data) -> None:
        summary = data.summaries[run]
        summary.steps = summary.steps.iloc[:-1]
    return Perturbation(false, None)


@perturbation("gpu_count")
def gpu_count_perturbation(subject: Subject) -> Perturbation:
    """One phase of a run ran on another node's GPU as well."""
    run = subject.runs[0]

    def false(data: Data) -> None:
        frame = data.summaries[run].phases
        row = next(i for i, gpus in enumerate(frame["gpus"]) if len(gpus))
        nodes = frame["node"].to_list()
        nodes[row] = f"{nodes[row]}-other"
        frame["node"] = nodes
    return Perturbation(false, None)


@perturbation("table_rows")
def table_rows_perturbation(subject: Subject) -> Perturbation:
    """The table loses its last row (within: a row's single value says something else)."""
    p = subject.params

    def rows(data: Data) -> list[Any]:
        table = data.tables[p["table"]]
        found: list[Any] = table[p["list"]] if p["list"] else table
        return found

    def false(data: Data) -> None:
        rows(data).pop()

    def within(data: Data) -> None:
        rows(data)[0][p["single"][0]] = "Something else, in one value"
    return Perturbation(false, within if p["single"] else None)
