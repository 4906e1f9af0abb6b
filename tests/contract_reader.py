"""A small reader of the manual's contract (site/contract.json), written from its documentation alone: the rules
the document carries (`rules`), its schema's field descriptions, and the dump format of
/work/shared/reference/miles-run-data.md (meta.json's args, metrics.jsonl records merged on step_key and step).

It imports nothing of build_tools: it is the "other tool" the contract is for, and tests/test_contract_reader.py
holds its verdicts to those of `manual watch` and `manual compare`. It reads a run folder (run.yaml beside a
dashboard dump) or a bare dump.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml

Verdict = str  # "inside", "outside", "not_applicable", "not_logged"


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


def records_of(run: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """Every metrics record of the dump (flat metrics.jsonl or hourly metrics/*.jsonl), merged on (step_key, step)."""
    dump = dump_of(run)
    flat = dump / "metrics.jsonl"
    files = [flat] if flat.is_file() else sorted((dump / "metrics").glob("*.jsonl"))
    merged: dict[tuple[str, int], dict[str, Any]] = {}
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            if record.get("step_key") is None or record.get("step") is None:
                continue
            merged.setdefault((record["step_key"], record["step"]), {}).update(record["metrics"])
    return merged


def equal(value: Any, allowed: Any) -> bool:
    """rules.envelope: numbers as numbers, true and false only as booleans, text as text."""
    if isinstance(value, bool) or isinstance(allowed, bool):
        return value is allowed
    return bool(value == allowed)


def field_of(setup: dict[str, Any], dotted: str) -> Any:
    node: Any = setup
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
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


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def judge_range(item: dict[str, Any], setup: dict[str, Any],
                records: dict[tuple[str, int], dict[str, Any]]) -> Verdict:
    if not applies(item, setup):
        return "not_applicable"
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
        # rules.median leaves out, for a time, the steps a heat-guard pause touched: this reader does not (it
        # would need the phases' times per step); on the example runs no verdict turns on them.
        held = inside(median([value for value in values.values() if math.isfinite(value)]), item)
    elif statistic == "logged_share":
        held = inside(len(values) / len(steps), item)
    else:
        raise ValueError(f"a statistic this reader does not know: {statistic}")
    return "inside" if held else "outside"


def judge_claim_envelope(claim: dict[str, Any], setup: dict[str, Any]) -> Verdict | None:
    """A claim's applicability (rules.envelope); its checks (rules.claims) are judged by the manual's registry."""
    return None if applies(claim, setup) else "not_applicable"


def read(contract: Path, run: Path) -> dict[str, Verdict | None]:
    """item id -> verdict, for every range and (its envelope only) every claim of the contract."""
    document = json.loads(contract.read_text(encoding="utf-8"))
    if document.get("format") != "miles-manual-contract" or document.get("version") != 2:
        raise ValueError("a contract this reader was not written for")
    setup, records = setup_of(run), records_of(run)
    found: dict[str, Verdict | None] = {item["id"]: judge_range(item, setup, records) for item in document["ranges"]}
    found |= {claim["id"]: judge_claim_envelope(claim, setup) for claim in document["claims"]}
    return found
