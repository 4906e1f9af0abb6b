"""A small reader of the manual's contract (site/contract.json), written from its documentation alone: the rules
the document carries (`rules`, one per kind of claim check as `check.<kind>`), its schema's field descriptions, and
the dump format of /work/shared/reference/miles-run-data.md (meta.json's args, metrics.jsonl records merged on
step_key and step, phases/*.jsonl).

It imports nothing of build_tools: it is the "other tool" the contract is for, and
tests/checking/test_contract_reader.py holds its verdicts to those of `manual watch` and `manual compare`. It
reads a run folder (run.yaml beside a dashboard dump, the lab's recordings under lab/) or a bare dump.
"""

from __future__ import annotations

import gzip
import json
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Verdict = str  # "inside", "outside", "not_applicable", "not_logged" (a range), "undecided" (a claim)
VERSION = 3


class Lacks(Exception):
    """The run lacks what a check reads (rules.claims: the claim is undecided)."""


def setup_of(run: Path) -> dict[str, Any]:
    """run.yaml when there is one; else the dump's meta.json: its args are the flags, its model the last part of
    hf_checkpoint (rules.envelope)."""
    if (run / "run.yaml").is_file():
        return yaml.safe_load((run / "run.yaml").read_text(encoding="utf-8"))
    meta = json.loads((dump_of(run) / "meta.json").read_text(encoding="utf-8"))
    args = meta.get("args") or {}
    checkpoint = str(args.get("hf_checkpoint") or "").rstrip("/")
    return {"model": {"name": checkpoint.rsplit("/", 1)[-1] or None}, "flags": args}


def dump_of(run: Path) -> Path:
    return run / "dashboard" if (run / "dashboard").is_dir() else run


def _lines(files: list[Path]) -> list[dict[str, Any]]:
    return [json.loads(line) for path in files for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def _stream(dump: Path, name: str) -> list[dict[str, Any]]:
    """A stream of the dump: flat <name>.jsonl or hourly <name>/*.jsonl."""
    flat = dump / f"{name}.jsonl"
    return _lines([flat] if flat.is_file() else sorted((dump / name).glob("*.jsonl")))


def records_of(run: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """Every metrics record of the dump, merged on (step_key, step)."""
    merged: dict[tuple[str, int], dict[str, Any]] = {}
    for record in _stream(dump_of(run), "metrics"):
        if record.get("step_key") is None or record.get("step") is None:
            continue
        merged.setdefault((record["step_key"], record["step"]), {}).update(record["metrics"])
    return merged


@dataclass
class Run:
    """What the rules read of a run: its setup, metrics, closed phases with their steps, and heat-touched steps."""

    folder: Path
    setup: dict[str, Any]
    records: dict[tuple[str, int], dict[str, Any]]
    phases: list[dict[str, Any]] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    touched: set[int] = field(default_factory=set)


def read_run(folder: Path) -> Run:
    run = Run(folder, setup_of(folder), records_of(folder))
    run.phases = closed_phases(dump_of(folder))
    number_steps(run)
    return run


def closed_phases(dump: Path) -> list[dict[str, Any]]:
    """rules.steps: a phase is closed when t1 is not -1 (its open record replaced, one never closed left out)."""
    closed: dict[tuple[Any, ...], dict[str, Any]] = {}
    for phase in _stream(dump, "phases"):
        if phase["t1"] != -1:
            closed[(phase["name"], phase["t0"], phase["rank"], phase["role"])] = dict(phase)
    return sorted(closed.values(), key=lambda phase: (phase["t0"], phase["rank"], phase["name"]))


def number_steps(run: Run) -> None:
    """rules.steps and rules.heat_touched: each phase's step, the run's steps, the steps a heat pause touched."""
    rollout_steps = sorted({step for key, step in run.records if key == "rollout/step"})
    first = rollout_steps[0] if rollout_steps else 0
    rollouts = [phase for phase in run.phases if phase["name"] == "rollout" and phase["role"] == "rollout_manager"]
    for k, phase in enumerate(rollouts):
        phase["step"] = first + k
    for phase in run.phases:
        if phase["role"] == "train":
            count = sum(1 for other in run.phases if other["role"] == "train" and other["rank"] == phase["rank"]
                        and other["name"] == "train_wait" and other["t0"] <= phase["t0"])
            phase["step"] = first + count - 1 if count else None
    spans: dict[int, tuple[float, float]] = {}
    for phase in run.phases:
        step = phase.get("step")
        if step is None or phase["rank"] not in (0, -1):
            continue
        low, high = spans.get(step, (math.inf, -math.inf))
        spans[step] = (min(low, phase["t0"]), max(high, phase["t1"]))
    run.steps = sorted(set(rollout_steps) | set(spans))
    events = run.folder / "lab" / "events.jsonl"
    pauses = [event for event in _lines([events]) if event.get("kind") == "heat_pause"] if events.is_file() else []
    run.touched = {step for step, (t0, t1) in spans.items()
                   if any(pause["t0"] <= t1 and pause["t1"] >= t0 for pause in pauses)}


# --- ranges ------------------------------------------------------------------------------------------


def equal(value: Any, allowed: Any) -> bool:
    """rules.envelope: numbers as numbers, true and false only as booleans, text as text."""
    if isinstance(value, bool) or isinstance(allowed, bool):
        return value is allowed
    return bool(value == allowed)


def field_of(setup: dict[str, Any], dotted: str, absent: Any = None) -> Any:
    node: Any = setup
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return absent
        node = node[part]
    return node


def applies(item: dict[str, Any], setup: dict[str, Any]) -> bool:
    for fact in item["envelope"]:
        value = field_of(setup, fact["field"])
        if fact["enforced"] and fact["values"] and value is not None and not any(
                equal(value, allowed) for allowed in fact["values"]):
            return False
    return True


def inside(value: float, item: dict[str, Any]) -> bool:
    """rules.bounds: low <= v <= high, as written; NaN never holds."""
    return item["low"] <= value <= item["high"]


def is_time(metric: str) -> bool:
    """rules.heat_touched: a time is a metric under perf/ or ending in _time."""
    return metric.startswith("perf/") or metric.endswith("_time")


def judge_range(item: dict[str, Any], run: Run) -> Verdict:
    if not applies(item, run.setup):
        return "not_applicable"
    records = run.records
    steps = sorted(step for key, step in records if key == item["step_key"])
    values = {step: float(records[(item["step_key"], step)][item["metric"]]) for step in steps
              if isinstance(records[(item["step_key"], step)].get(item["metric"]), int | float)}
    if not values:
        return "not_logged"
    statistic = item["statistic"]
    if statistic == "each_step":
        held = all(inside(value, item) for value in values.values())
    elif statistic == "first_value":
        held = inside(values[min(values)], item)
    elif statistic == "median":
        kept = [value for step, value in values.items() if math.isfinite(value)
                and not (is_time(item["metric"]) and step in run.touched)]  # rules.median: the heat rule
        if not kept:
            return "not_logged"
        held = inside(statistics.median(kept), item)
    elif statistic == "logged_share":
        held = inside(len(values) / len(steps), item)
    else:
        raise ValueError(f"a statistic this reader does not know: {statistic}")
    return "inside" if held else "outside"


# --- claims ------------------------------------------------------------------------------------------


def step_key(metric: str) -> str:
    """rules.values: train/ -> train/step, eval/ -> eval/step, others rollout/step."""
    prefix = metric.split("/", 1)[0]
    return {"train": "train/step", "eval": "eval/step"}.get(prefix, "rollout/step")


def names(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def one_value(run: Run, name: str) -> dict[int, float]:
    """One name's value at each step: a metric at its step key, or <series>.<field> of lab/<series>.jsonl."""
    if "/" in name or "." not in name:
        key = step_key(name)
        return {step: record[name] for (k, step), record in run.records.items()
                if k == key and isinstance(record.get(name), int | float) and not isinstance(record[name], bool)}
    series, _, column = name.partition(".")
    path = run.folder / "lab" / f"{series}.jsonl"
    found: dict[int, float] = {}
    for record in _lines([path]) if path.is_file() else []:
        if isinstance(record.get("step"), int) and isinstance(record.get(column), int | float):
            found[record["step"]] = record[column]  # the last record of the step
    return found


def clean(wanted: list[str], mode: str) -> bool:
    return mode == "clean" or (mode == "auto" and any(is_time(name) for name in wanted))


def values_of(run: Run, metric: str | list[str], mode: str = "auto") -> list[tuple[int, float]]:
    """rules.values: (step, value) in step order; Lacks when no step is left or a used step is not finite."""
    wanted = names(metric)
    parts = [one_value(run, name) for name in wanted]
    steps = sorted(set.intersection(*(set(part) for part in parts)))
    if clean(wanted, mode):
        steps = [step for step in steps if step not in run.touched]
    if not steps:
        raise Lacks(f"no step with {metric}")
    found = [(step, float(sum(part[step] for part in parts))) for step in steps]
    if not all(math.isfinite(value) for _, value in found):
        raise Lacks(f"a value of {metric} that is not a number")
    return found


def holds(x: float, interval: dict[str, Any]) -> bool:
    """rules.interval."""
    if x is None or not math.isfinite(x):
        return False
    low = -math.inf if interval["low"] is None else interval["low"]
    high = math.inf if interval["high"] is None else interval["high"]
    if interval["strict"]:
        return low < x < high
    slack = 1e-9 * max(1.0, abs(x)) if interval["slack"] and low != high else 0.0
    return low - slack <= x <= high + slack


def stat_of(values: list[float], stat: str) -> float:
    functions: dict[str, Callable[[list[float]], float]] = {
        "median": statistics.median, "mean": statistics.fmean, "min": min, "max": max, "sum": math.fsum,
        "first": lambda v: v[0], "last": lambda v: v[-1]}
    return float(functions[stat](values))


def slope(found: list[tuple[int, float]]) -> float:
    if len(found) < 2:
        raise Lacks("fewer than two values for a slope")
    xs, ys = [float(s) for s, _ in found], [v for _, v in found]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def config_number(run: Run, dotted: str) -> float:
    value = field_of(run.setup, dotted)
    if value is None:
        raise Lacks(f"{dotted} in run.yaml")
    return float(value)


def check_value(run: Run, c: dict[str, Any], p: dict[str, Any]) -> bool:
    values = [v for _, v in values_of(run, p["metric"], p["steps"])]
    if p["stat"] == "each":
        return all(holds(v, c["interval"]) for v in values)
    return holds(stat_of(values, p["stat"]), c["interval"])


def check_share(run: Run, c: dict[str, Any], p: dict[str, Any]) -> bool:
    parts = dict(values_of(run, p["parts"], p["steps"]))
    whole = dict(values_of(run, p["whole"], p["steps"]))
    shares = [parts[s] / whole[s] for s in sorted(set(parts) & set(whole)) if whole[s] != 0]
    if not shares:
        raise Lacks("no step with a share")
    return holds(min(shares) if p["stat"] == "each" else stat_of(shares, p["stat"]), c["interval"])


def check_jumps(run: Run, c: dict[str, Any], p: dict[str, Any]) -> bool:
    found = values_of(run, p["metric"], p["steps"])
    tilt = abs(slope(found))
    changes = [abs(b - a) for (_, a), (_, b) in zip(found, found[1:], strict=False)]
    return tilt == 0 or holds(statistics.median(changes) / tilt, c["interval"])


def check_windows(falls: bool) -> Callable[[Run, dict[str, Any], dict[str, Any]], bool]:
    def check(run: Run, c: dict[str, Any], p: dict[str, Any]) -> bool:
        values = [v for _, v in values_of(run, p["metric"], p["steps"])]
        window = c["window"]
        if len(values) < 2 * window:
            raise Lacks(f"two windows of {window} values")
        first, last = statistics.fmean(values[:window]), statistics.fmean(values[-window:])
        ok = first > last if falls else first < last
        for mean, key in ((first, "first"), (last, "last")):
            if c.get(key) is not None:
                ok &= holds(mean, c[key])
        return ok
    return check


ABSENT = object()


def check_config_equals(run: Run, c: dict[str, Any], p: dict[str, Any]) -> bool:
    value = field_of(run.setup, p["field"], ABSENT)
    if value is ABSENT:  # absent lacks it; null is a value (rules["check.config_equals"])
        raise Lacks(f"{p['field']} in run.yaml")
    if isinstance(value, bool) or isinstance(p["value"], bool):
        return value is p["value"]
    return bool(value == p["value"])


def check_config_ratio(run: Run, c: dict[str, Any], p: dict[str, Any]) -> bool:
    top = math.prod(config_number(run, name) for name in p["numerator"])
    bottom = math.prod(config_number(run, name) for name in p["denominator"]) * p["denominator_scale"]
    return holds(top / bottom, c["interval"])


def check_heat_difference(run: Run, c: dict[str, Any], p: dict[str, Any]) -> bool:
    found = values_of(run, p["metric"], "all")
    hot = [v for s, v in found if s in run.touched]
    cool = [v for s, v in found if s not in run.touched]
    if not hot or not cool:
        raise Lacks("touched and other steps")
    return holds(stat_of(hot, p["stat"]) - stat_of(cool, p["stat"]), c["interval"])


def events_of(run: Run, kind: str) -> list[dict[str, Any]]:
    """rules.events: the run's events of one kind, in t0 order."""
    path = run.folder / "lab" / "events.jsonl"
    found = [event for event in _lines([path]) if event.get("kind") == kind] if path.is_file() else []
    if not found:
        raise Lacks(f"a {kind} event")
    return sorted(found, key=lambda event: event["t0"])


def span_of(run: Run, start: str, end: str) -> tuple[float, float]:
    """rules.events: from the first start event's t0 to the t0 of the first end event not before it."""
    t0 = events_of(run, start)[0]["t0"]
    later = [event["t0"] for event in events_of(run, end) if event["t0"] >= t0]
    if not later:
        raise Lacks(f"a {end} event after the {start} event")
    return float(t0), float(later[0])


def series_of(run: Run, name: str, column: str) -> list[dict[str, Any]]:
    """rules.series: lab/<name>.jsonl or .jsonl.gz in ts order; host_memory's used_frac; gpu_util from gpu_temp."""
    lab = run.folder / "lab"
    records: list[dict[str, Any]] = []
    if (lab / f"{name}.jsonl").is_file():
        records = _lines([lab / f"{name}.jsonl"])
    elif (lab / f"{name}.jsonl.gz").is_file():
        with gzip.open(lab / f"{name}.jsonl.gz", "rt", encoding="utf-8") as text:
            records = [json.loads(line) for line in text if line.strip()]
    if name == "host_memory":
        for record in records:
            record["used_frac"] = (record["total_kib"] - record["available_kib"]) / record["total_kib"]
    if not any(record.get(column) is not None for record in records):
        if name == "gpu_util" and column in ("util", "power_w"):
            return series_of(run, "gpu_temp", column)
        raise Lacks(f"the {name} series with {column}")
    return sorted(records, key=lambda record: record["ts"])


UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0}


def check_event_span(run: Run, c: dict[str, Any], p: dict[str, Any]) -> bool:
    t0, t1 = span_of(run, p["from"], p["to"])
    return holds((t1 - t0) / UNITS[p["unit"]], c["interval"])


def check_series_during(run: Run, c: dict[str, Any], p: dict[str, Any]) -> bool:
    t0, t1 = span_of(run, p["from"], p["to"])
    samples = [float(r[p["field"]]) for r in series_of(run, p["series"], p["field"]) if t0 <= r["ts"] <= t1]
    if not samples:
        raise Lacks("samples in the span")
    return holds(min(samples) if p["word"] == "at_least" else max(samples), c["interval"])


def check_series_at_event(run: Run, c: dict[str, Any], p: dict[str, Any]) -> bool:
    t0 = events_of(run, p["event"])[0]["t0"]
    before = [r for r in series_of(run, p["series"], p["field"]) if r["ts"] <= t0]
    if not before:
        raise Lacks("a sample before the event")
    limit = config_number(run, p["at_least"]) if isinstance(p["at_least"], str) else float(p["at_least"])
    return float(before[-1][p["field"]]) >= limit


def check_held_by_one_side(run: Run, c: dict[str, Any], p: dict[str, Any]) -> bool:
    held: dict[float, dict[str, float]] = {}
    for record in series_of(run, "held_memory", "gib"):
        sides = held.setdefault(record["ts"], {})
        sides[record["side"]] = max(sides.get(record["side"], -math.inf), record["gib"])
    sides = {side for at in held.values() for side in at}
    skipped = [(ph["t0"], ph["t1"]) for ph in run.phases if ph["name"] in p["outside"]]
    kept = [at for ts, at in held.items() if not any(t0 <= ts <= t1 for t0, t1 in skipped)]
    holding = [{side for side in sides if at.get(side, 0.0) > p["holding_gib"]} for at in kept]
    return (len(sides) >= 2 and all(len(h) <= p["at_most_sides"] for h in holding)
            and all(any(side in h for h in holding) for side in sides))


def check_phase_order(run: Run, c: dict[str, Any], p: dict[str, Any]) -> bool:
    by_step: dict[int, dict[str, tuple[float, float]]] = {}
    for phase in run.phases:  # in t0 order: the first of each name is kept
        if phase.get("step") is not None and phase["rank"] in (0, -1):
            by_step.setdefault(phase["step"], {}).setdefault(phase["name"], (phase["t0"], phase["t1"]))
    if not by_step:
        raise Lacks("steps with phases")
    for edges in by_step.values():
        for name, (start, end) in (p["spans"] or {}).items():
            (a, a_edge), (b, b_edge) = start.split("."), end.split(".")
            if a in edges and b in edges:
                edges[name] = (edges[a][a_edge == "t1"], edges[b][b_edge == "t1"])
        spans = [edges.get(name) for name in p["order"]]
        if any(span is None or span[1] <= span[0] for span in spans):
            return False
        if any(x[1] > y[0] + 1e-6 for x, y in zip(spans, spans[1:], strict=False)):  # type: ignore[index]
            return False
    return True


def check_repeats_identical(run: Run, c: dict[str, Any], p: dict[str, Any]) -> bool:
    answers: dict[Any, set[str]] = {}
    for record in series_of(run, "repeat_probe", "output_sha256"):
        answers.setdefault(record["probe"], set()).add(record["output_sha256"])
    return all(len(found) == 1 for found in answers.values()) == p["identical"]


OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "above": lambda a, b: a > b, "below": lambda a, b: a < b, "equal": lambda a, b: a == b,
    "at_least": lambda a, b: a >= b, "at_most": lambda a, b: a <= b}


def check_count_steps(run: Run, c: dict[str, Any], p: dict[str, Any]) -> bool:
    named = [p["left"], *([p["right"]] if isinstance(p["right"], str) else [])]
    mode = "clean" if clean(named, p["steps"]) else "all"
    left = dict(values_of(run, p["left"], mode))
    right = dict(values_of(run, p["right"], mode)) if isinstance(p["right"], str) else dict.fromkeys(left, p["right"])
    compared = sorted(set(left) & set(right))
    held = sum(OPERATORS[p["op"]](left[s], right[s]) for s in compared)
    want = {"every": len(compared), "none": 0}.get(p["count"], p["count"])
    return held == want and (p["of"] is None or len(compared) == p["of"])


def check_step_rule(run: Run, c: dict[str, Any], p: dict[str, Any]) -> bool:
    cause, effect = one_value(run, p["metric"]), one_value(run, p["value"])
    steps = sorted(set(cause) & set(effect))
    if not steps:
        raise Lacks("steps with both values")
    return all(effect[s] == (p["then"] if cause[s] <= p["at_most"] else p["otherwise"]) for s in steps)


CHECKS: dict[str, Callable[[Run, dict[str, Any], dict[str, Any]], bool]] = {
    **dict.fromkeys(("about", "near", "rounds_to", "exactly", "above", "below", "at_least", "at_most"),
                    check_value),
    "share": check_share,
    "trend": lambda run, c, p: holds(slope(values_of(run, p["metric"], p["steps"])), c["interval"]),
    "jumps_around": check_jumps,
    "falls_from": check_windows(falls=True),
    "rises_from": check_windows(falls=False),
    "step_count": lambda run, c, p: len(run.steps) == p["count"],
    "gpu_count": lambda run, c, p: len({(ph["node"], gpu) for ph in run.phases for gpu in ph["gpus"]}) == p["count"],
    "config_equals": check_config_equals,
    "config_ratio": check_config_ratio,
    "heat_difference": check_heat_difference,
    "count_steps": check_count_steps,
    "step_rule": check_step_rule,
    "phase_order": check_phase_order,
    "event_span": check_event_span,
    "series_during": check_series_during,
    "series_at_event": check_series_at_event,
    "held_by_one_side": check_held_by_one_side,
    "repeats_identical": check_repeats_identical,
}


def gpus_shown(run: Run) -> set[tuple[str, int]]:
    """rules.gpus: the (node, gpu) pairs of the closed phases, of gpu_util samples with node and gpu, and of the
    dump's topology.jsonl engines."""
    gpus = {(str(phase["node"]), int(gpu)) for phase in run.phases for gpu in phase["gpus"]}
    try:
        gpus |= {(str(r["node"]), int(r["gpu"])) for r in series_of(run, "gpu_util", "gpu") if "node" in r}
    except Lacks:
        pass
    for record in _stream(dump_of(run.folder), "topology"):
        for engine in record.get("engines") or []:
            gpus |= {(str(pair[0]), int(pair[1])) for pair in engine.get("gpus") or [] if len(pair) == 2}
    return gpus


def claim_applies(claim: dict[str, Any], run: Run) -> bool:
    """rules.claims: some check is one_run, every enforced fact has exactly one value, the run's, and the run's
    numbers of GPUs and nodes are its runs' (where it shows GPUs)."""
    if not any(check["one_run"] for check in claim["checks"]):
        return False
    for fact in claim["envelope"]:
        if fact["enforced"] and (len(fact["values"]) != 1 or not _same(field_of(run.setup, fact["field"]),
                                                                         fact["values"][0])):
            return False
    gpus = gpus_shown(run)
    nodes = {node for node, _ in gpus}
    return not gpus or ((not claim["gpus"] or claim["gpus"] == [len(gpus)])
                        and (not claim["nodes"] or claim["nodes"] == [len(nodes)]))


def _same(value: Any, allowed: Any) -> bool:
    return value is None and allowed is None or (value is not None and allowed is not None and equal(value, allowed))


def judge_claim(claim: dict[str, Any], run: Run) -> Verdict | None:
    """rules.claims; None where a check has a reason (a reader of the files cannot evaluate it simply)."""
    if not claim_applies(claim, run):
        return "not_applicable"
    checks = [check for check in claim["checks"] if check["one_run"]]
    if any(check["reason"] is not None for check in checks):
        return None
    results = [check_result(check, run) for check in checks]
    return "undecided" if "lacks" in results else "outside" if "fail" in results else "inside"


def check_result(check: dict[str, Any], run: Run) -> str:
    """One check on one run by its rule: pass, fail, or lacks (the run lacks what it reads)."""
    try:
        return "pass" if CHECKS[check["check"]](run, check, check["parameters"]) else "fail"
    except Lacks:
        return "lacks"


def read(contract: Path, folder: Path) -> dict[str, Verdict | None]:
    """item id -> verdict, for every range and every claim of the contract (None: a claim with a reason)."""
    document = json.loads(contract.read_text(encoding="utf-8"))
    if document.get("format") != "miles-manual-contract" or document.get("version") != VERSION:
        raise ValueError("a contract this reader was not written for")
    unknown = sorted({check["check"] for claim in document["claims"] for check in claim["checks"]
                      if check["one_run"] and check["reason"] is None} - set(CHECKS))
    if unknown:
        raise ValueError(f"check kinds this reader does not evaluate: {', '.join(unknown)}")
    run = read_run(folder)
    found: dict[str, Verdict | None] = {item["id"]: judge_range(item, run) for item in document["ranges"]}
    found |= {claim["id"]: judge_claim(claim, run) for claim in document["claims"]}
    return found
