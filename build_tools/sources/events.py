"""The event files of `--dump-details` (`events/`: `{proc}.jsonl`).

A metric line: `{"timestamp": ISO-8601 UTC, "source": {...}, "type": "metric", "rollout_id": 3, "attempt": 0,
"metrics": {...}}`. Other record types share the files; they are skipped and counted. When a rollout was
retried, the last attempt's values are the ones read. The PyTorch pickles beside the events (`rollout_data/`,
`train_data/`) are never opened.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from .._exceptions import Problem
from ._common import STEP_KEYS, Found, MetricRecord, json_lines, step_key_of, text_files
from ._json import plain, value


def read(files: list[Path], problems: list[Problem], warnings: list[str]) -> Found:
    found = Found("events")
    for _path, where, lines in text_files(files, problems, found):
        latest: dict[Any, tuple[int, list[MetricRecord]]] = {}
        skipped: dict[str, int] = {}
        for number, doc in json_lines(lines, where, problems, warnings):
            kind = doc.get("type")
            if kind != "metric":
                skipped[str(kind)] = skipped.get(str(kind), 0) + 1
                continue
            records = _metric_records(doc, where, number, found, problems)
            if records is None:
                continue
            attempt = plain(doc.get("attempt")) or 0
            rollout = plain(doc.get("rollout_id"))
            key = (rollout, tuple(sorted((r.data["step_key"], r.data["step"]) for r in records)))
            if key not in latest or attempt >= latest[key][0]:
                latest[key] = (attempt if isinstance(attempt, int) else 0, records)
        for _, records in latest.values():
            for record in records:
                found.add("metrics", record)
        if skipped:
            counts = ", ".join(f"{count} {kind}" for kind, count in sorted(skipped.items()))
            warnings.append(f"{where}: skipped records of types not read here: {counts}")
    return found


def _metric_records(doc: dict[str, Any], where: str, number: int, found: Found,
                    problems: list[Problem]) -> list[MetricRecord] | None:
    try:
        ts = dt.datetime.fromisoformat(str(doc.get("timestamp"))).timestamp()
    except ValueError:
        problems.append(Problem(where, number, "timestamp",
                                f"expected an ISO-8601 time, found {doc.get('timestamp')!r}"))
        return None
    found.saw_time(ts)
    metrics = doc.get("metrics")
    if not isinstance(metrics, dict):
        problems.append(Problem(where, number, "metrics", "expected a mapping"))
        return None
    rollout = plain(doc.get("rollout_id"))
    groups: dict[tuple[str, int], MetricRecord] = {}
    for key, raw in metrics.items():
        parsed = value(raw)
        if parsed is None:
            continue  # strings and nested values are not metrics of the per-step table
        step_key = key if key in STEP_KEYS else step_key_of(key)
        if step_key is None:
            continue
        own = value(metrics.get(step_key))
        step = own[0] if own is not None and isinstance(own[0], int) else rollout
        if not isinstance(step, int):
            continue
        record = groups.setdefault((step_key, step), MetricRecord(
            {"ts": ts, "step_key": step_key, "step": step, "metrics": {}}, where, number))
        record.data["metrics"][key] = parsed[0]
        record.texts[key] = parsed[1]
    return list(groups.values())
