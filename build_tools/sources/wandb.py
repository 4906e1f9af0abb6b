"""A wandb history export (`wandb/`), in either of the two forms a user can get without Miles' help.

- `*.csv`: the CSV a wandb chart downloads. A `Step` column and one column per key; the key may carry the run's
  name in front (`my-run - rollout/raw_reward`). Miles plots every key against its own step key
  (`define_metric` in miles/utils/tracking_utils/wandb_utils.py), so `Step` is read as that step key. A
  downsampled chart adds `key__MIN` and `key__MAX` columns: a row is read only where they equal the value (a
  bucket of one logged value), never a bucket's mean.
- `*.jsonl`: JSON lines of the public API's `run.scan_history()`, one row per `log()` call: `_step`,
  `_timestamp`, the step key (`rollout/step`, `train/step`, `eval/step`) and the logged keys.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

from .._exceptions import Problem
from ._common import STEP_KEYS, Found, MetricRecord, checked, json_lines, number_of_text, step_key_of, text_files
from ._json import plain, value, whole

WHOLE = re.compile(r"-?\d+")


def read(files: list[Path], problems: list[Problem], warnings: list[str]) -> Found:
    found = Found("wandb")
    for path, where, lines in text_files(files, problems, found):
        name = path.name.removesuffix(".gz")
        if name.endswith(".csv"):
            _read_csv(lines, where, found, problems, warnings)
        else:
            _read_jsonl(lines, where, found, problems, warnings)
    return checked(found, problems, warnings)


def _key_of(column: str) -> str:
    # "my-run - rollout/raw_reward" -> "rollout/raw_reward"
    return column.rsplit(" - ", 1)[1] if " - " in column and "/" in column.rsplit(" - ", 1)[1] else column


def _read_csv(lines: list[str], where: str, found: Found, problems: list[Problem], warnings: list[str]) -> None:
    try:
        rows = list(csv.reader([line for line in lines if line.strip()]))
    except csv.Error as err:
        problems.append(Problem(where, None, None, f"not a CSV file: {err}"))
        return
    if not rows:
        return
    header = rows[0]
    if "Step" not in header:
        problems.append(Problem(where, 1, None, "expected a 'Step' column (the CSV a wandb chart downloads)"))
        return
    if _twice(header, where, problems):
        return
    step_at = header.index("Step")
    columns = {i: _key_of(c) for i, c in enumerate(header) if i != step_at and not c.endswith(("__MIN", "__MAX"))}
    bounds = {i: (header.index(f"{c}__MIN") if f"{c}__MIN" in header else None,
                  header.index(f"{c}__MAX") if f"{c}__MAX" in header else None) for i, c in
              ((i, header[i]) for i in columns)}
    bucketed = 0
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            warnings.append(f"{where}:{number}: {len(row)} cells for {len(header)} columns; row not read")
            continue
        if not WHOLE.fullmatch(row[step_at].strip()):
            warnings.append(f"{where}:{number}: Step {row[step_at][:40]!r} is not a whole number; row not read")
            continue
        step = whole(row[step_at].strip())
        for i, key in columns.items():
            text = row[i].strip()
            if not text:
                continue
            number_value = number_of_text(text)
            if number_value is None:
                warnings.append(f"{where}:{number}: {key}: {text[:40]!r} is not a number; not read")
                continue
            low, high = bounds[i]
            if low is not None and high is not None and not (row[low].strip() == row[high].strip() == text):
                bucketed += 1
                continue
            step_key = step_key_of(key) if key not in STEP_KEYS else None
            if step_key is None:
                continue
            data = {"ts": math.nan, "step_key": step_key, "step": step, "metrics": {key: number_value}}
            found.add("metrics", MetricRecord(data, where, number, {key: text}, {"step": "Step", "metrics": "{key}"}))
    if bucketed:
        warnings.append(f"{where}: {bucketed} downsampled value(s) (min and max differ) not read; export the chart "
                        "with every point, or the run history")


def _twice(header: list[str], where: str, problems: list[Problem]) -> bool:
    """Two columns of one key (two Step columns, or one key of two runs' charts): which to read is a guess."""
    columns: dict[str, list[int]] = {}
    for index, column in enumerate(header, start=1):
        if not column.endswith(("__MIN", "__MAX")):
            columns.setdefault(_key_of(column), []).append(index)
    for key, indexes in columns.items():
        if len(indexes) > 1:
            problems.append(Problem(where, 1, key, f"{len(indexes)} columns hold it (columns "
                                    f"{', '.join(map(str, indexes))}); expected one (the CSV of one run's chart)"))
    return any(len(indexes) > 1 for indexes in columns.values())


def _read_jsonl(lines: list[str], where: str, found: Found, problems: list[Problem], warnings: list[str]) -> None:
    for number, row in json_lines(lines, where, problems, warnings, "a JSON object (a row of run.scan_history())"):
        written_ts = row.get("_timestamp")
        stamp = value(written_ts)  # anything but a time: the schema says what is wrong with it
        ts = math.nan if written_ts is None else stamp[0] if stamp is not None else plain(written_ts)
        found.saw_time(ts)
        groups: dict[tuple[str, int], MetricRecord] = {}
        for key, raw in row.items():
            if key.startswith("_") or key in STEP_KEYS:
                continue
            parsed = value(raw)
            step_key = step_key_of(key)
            if parsed is None or step_key is None:
                continue
            own = value(row.get(step_key))
            if own is None or not isinstance(own[0], int):
                warnings.append(f"{where}:{number}: {key}: the row has no {step_key}; not read")
                continue
            record = groups.setdefault((step_key, own[0]), MetricRecord(
                {"ts": ts, "step_key": step_key, "step": own[0], "metrics": {}}, where, number,
                names={"ts": "_timestamp", "step": step_key, "metrics": "{key}"}))
            record.data["metrics"][key] = parsed[0]
            record.texts[key] = parsed[1]
        for record in groups.values():
            found.add("metrics", record)
