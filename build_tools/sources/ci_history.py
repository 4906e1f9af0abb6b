"""The CI history record (`ci_history/`): `{dir}/{pid}-{uuid}.jsonl`, one line per metric,
`{"metric": key, "series": [[step, value], ...]}`; non-finite values are "NaN", "Infinity", "-Infinity".

Written only when MILES_CI_GATE_RECORD_DIR is set, and only for a whitelist of metrics (Miles'
miles/utils/tracking_utils/ci_history.py). Files of several processes are read together; the agreement check
catches two processes that disagree about a step.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from .._exceptions import Problem, display_path
from ._common import Found, MetricRecord, read_text, step_key_of
from ._json import loads, plain, value


def read(files: list[Path], problems: list[Problem], warnings: list[str]) -> Found:
    found = Found("ci_history")
    for path in files:
        lines = read_text(path, problems)
        if lines is None:
            continue
        where = display_path(path)
        found.files.append(where)
        if lines[-1].strip():
            warnings.append(f"{where}:{len(lines)}: last line has no newline; skipped")
        for number, text in enumerate(lines[:-1], start=1):
            if text.strip():
                _read_line(text, where, number, found, problems, warnings)
    return found


def _read_line(text: str, where: str, number: int, found: Found, problems: list[Problem],
               warnings: list[str]) -> None:
    try:
        doc = loads(text)
    except (json.JSONDecodeError, RecursionError) as err:
        problems.append(Problem(where, number, None, f"not valid JSON: {getattr(err, 'msg', err)}"))
        return
    metric, series = (doc.get("metric"), doc.get("series")) if isinstance(doc, dict) else (None, None)
    if not isinstance(metric, str) or not isinstance(series, list):
        problems.append(Problem(where, number, None, 'expected {"metric": key, "series": [[step, value], ...]}'))
        return
    step_key = step_key_of(metric)
    if step_key is None:
        warnings.append(f"{where}:{number}: {metric}: no step key for this prefix; not read")
        return
    unplaced = 0
    for point in series:
        parsed = value(point[1]) if isinstance(point, list) and len(point) == 2 else None
        step = value(point[0]) if isinstance(point, list) and len(point) == 2 and point[0] is not None else None
        if parsed is None or (point[0] is not None and (step is None or not isinstance(step[0], int))):
            problems.append(Problem(where, number, metric, f"expected [step, number], found {plain(point)!r}"))
            continue
        if step is None:
            unplaced += 1
            continue
        data = {"ts": math.nan, "step_key": step_key, "step": step[0], "metrics": {metric: parsed[0]}}
        found.add("metrics", MetricRecord(data, where, number, {metric: parsed[1]}))
    if unplaced:
        warnings.append(f"{where}:{number}: {metric}: {unplaced} value(s) with no step; not read")
