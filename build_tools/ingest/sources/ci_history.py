"""The CI history record (`ci_history/`): `{dir}/{pid}-{uuid}.jsonl`, one line per metric,
`{"metric": key, "series": [[step, value], ...]}`; non-finite values are "NaN", "Infinity", "-Infinity".

Written only when MILES_CI_GATE_RECORD_DIR is set, and only for a whitelist of metrics (Miles'
miles/utils/tracking_utils/ci_history.py). Files of several processes are read together; the agreement check
catches two processes that disagree about a step.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from build_tools.core._exceptions import Problem
from build_tools.ingest.sources._common import Found, MetricRecord, checked, json_lines, step_key_of, text_files
from build_tools.ingest.sources._json import plain, value


def read(files: list[Path], problems: list[Problem], warnings: list[str]) -> Found:
    found = Found("ci_history")
    for _path, where, lines in text_files(files, problems, found):
        for number, doc in json_lines(lines, where, problems, warnings,
                                      'a JSON object {"metric": key, "series": [[step, value], ...]}'):
            _read_line(doc, where, number, found, problems, warnings)
    return checked(found, problems, warnings)


def _read_line(doc: dict[str, Any], where: str, number: int, found: Found, problems: list[Problem],
               warnings: list[str]) -> None:
    metric, series = doc.get("metric"), doc.get("series")
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
            problems.append(Problem(where, number, metric, f"expected [step, number], found {repr(plain(point))[:60]}"))
            continue
        if step is None:
            unplaced += 1
            continue
        data = {"ts": math.nan, "step_key": step_key, "step": step[0], "metrics": {metric: parsed[0]}}
        names = {"step": f"{metric} step", "metrics": "{key} value"}
        found.add("metrics", MetricRecord(data, where, number, {metric: parsed[1]}, names))
    if unplaced:
        warnings.append(f"{where}:{number}: {metric}: {unplaced} value(s) with no step; not read")
