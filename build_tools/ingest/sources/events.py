"""The event files of `--dump-details` (`events/`: `{proc}.jsonl`).

A metric line: `{"timestamp": ISO-8601 UTC, "source": {...}, "type": "metric", "rollout_id": 3, "attempt": 0,
"metrics": {...}}`, each `MetricEvent.model_dump_json()` (pydantic v2, miles/utils/audit_utils/event_logger/): a
NaN or infinity is written as null, which is a warning naming the line and key. Other record types share the
files; they are skipped and counted. Every metric event of a step is read (the trainer writes its rollout/* and
perf/* as two events of one rollout id, attempt and step); when a rollout was retried, the last attempt's. The
PyTorch pickles beside the events (`rollout_data/`, `train_data/`) are never opened.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from build_tools.core._exceptions import Problem
from build_tools.ingest import schemas_dump
from build_tools.ingest.sources._common import (
    STEP_KEYS,
    Found,
    MetricRecord,
    checked,
    json_lines,
    step_key_of,
    text_files,
)
from build_tools.ingest.sources._json import plain, value


def read(files: list[Path], problems: list[Problem], warnings: list[str]) -> Found:
    found = Found("events")
    for _path, where, lines in text_files(files, problems, found):
        # (rollout id, step key, step) -> attempt -> the records of that attempt, in file order
        attempts: dict[tuple[Any, str, int], dict[int, list[MetricRecord]]] = {}
        skipped: dict[str, int] = {}
        for number, doc in json_lines(lines, where, problems, warnings):
            kind = doc.get("type")
            if kind != "metric":
                name = str(plain(kind))[:40]
                skipped[name] = skipped.get(name, 0) + 1
                continue
            # rollout_id and attempt exactly typed (a whole number, not text, a list or true), or the line is refused
            header: dict[str, Any] = {name: plain(doc[name]) for name in ("rollout_id", "attempt") if name in doc}
            wrong = schemas_dump.validate_event_line(header, where, number)
            if wrong:
                problems += wrong
                continue
            records = _metric_records(doc, header.get("rollout_id"), where, number, found, problems, warnings)
            for record in records or []:
                where_logged = (header.get("rollout_id"), record.data["step_key"], record.data["step"])
                attempts.setdefault(where_logged, {}).setdefault(header.get("attempt") or 0, []).append(record)
        _keep_last_attempts(attempts, where, found, warnings)
        if skipped:
            counts = ", ".join(f"{count} {kind}" for kind, count in sorted(skipped.items()))
            warnings.append(f"{where}: skipped records of types not read here: {counts}")
    return checked(found, problems, warnings)


def _keep_last_attempts(attempts: dict[tuple[Any, str, int], dict[int, list[MetricRecord]]], where: str,
                        found: Found, warnings: list[str]) -> None:
    """Every metric event of a step's last attempt (the trainer writes rollout/* and perf/* as two events of one
    step): all are read. An earlier attempt of a retried rollout is not, with a warning."""
    for (rollout, step_key, step), by_attempt in attempts.items():
        last = max(by_attempt)
        for attempt, records in sorted(by_attempt.items()):
            if attempt != last:
                warnings.append(f"{where}:{records[0].line}: rollout {rollout} attempt {attempt} was retried "
                                f"(attempt {last}, line {by_attempt[last][0].line}): its {step_key} {step} values "
                                "are not read")
        for record in by_attempt[last]:
            found.add("metrics", record)


def _timestamp(doc: dict[str, Any], where: str, number: int, problems: list[Problem]) -> float | None:
    """The line's time; one with no zone is UTC, as Miles writes it."""
    stamp = doc.get("timestamp")
    try:
        when = dt.datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
    except ValueError:
        when = None
    if when is None:
        problems.append(Problem(where, number, "timestamp",
                                f"expected an ISO-8601 time, found {str(plain(stamp))[:60]!r}"))
        return None
    ts = (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()
    if (wrong := schemas_dump.value_problem("time", ts)) is not None:
        problems.append(Problem(where, number, "timestamp", f"{stamp}: {wrong}"))
        return None
    return ts


def _metric_records(doc: dict[str, Any], rollout: int | None, where: str, number: int, found: Found,
                    problems: list[Problem], warnings: list[str]) -> list[MetricRecord] | None:
    ts = _timestamp(doc, where, number, problems)
    if ts is None:
        return None
    found.saw_time(ts)
    metrics = doc.get("metrics")
    if not isinstance(metrics, dict):
        problems.append(Problem(where, number, "metrics", "expected a mapping"))
        return None
    groups: dict[tuple[str, int], MetricRecord] = {}
    for key, raw in metrics.items():
        step_key = key if key in STEP_KEYS else step_key_of(key)
        parsed = value(raw)
        if parsed is None and raw is None and step_key is not None:
            warnings.append(f"{where}:{number}: {key}: null (pydantic writes a NaN or infinity as null); not read")
        if parsed is not None and step_key is None:
            found.unplaced_key(where, key)
        if parsed is None or step_key is None:
            continue  # strings and nested values are not metrics of the per-step table
        own = value(metrics.get(step_key))
        step = own[0] if own is not None and isinstance(own[0], int) else rollout  # true is refused as a step
        if not isinstance(step, int):
            continue
        record = groups.setdefault((step_key, step), MetricRecord(
            {"ts": ts, "step_key": step_key, "step": step, "metrics": {}}, where, number,
            names={"step": step_key if own is not None and isinstance(own[0], int) else "rollout_id"}))
        record.data["metrics"][key] = parsed[0]
        record.texts[key] = parsed[1]
    return list(groups.values())
