"""A wandb export (`wandb/`), in each form a user can get without Miles' help.

Miles calls `wandb.log(metrics)` with no step, the dict holding its step key, and `define_metric` plots `train/*`
against `train/step`, `rollout/*`, `perf/*`, `passrate/*`, `multi_turn/*` against `rollout/step`, `eval/*` against
`eval/step` (miles/utils/tracking_utils/wandb_utils.py). wandb's own `_step` counts every `log()` call of every
process: it is no Miles step, and a value is read only at its own step key's value.

- `*.csv` a chart downloads: its first column is its x-axis. A chart plotted against its step key (`train/step`,
  ...) is read, one column per key (the run's name may stand in front: `my-run - rollout/raw_reward`); a
  downsampled chart adds `key__MIN` and `key__MAX` columns, and a row is read only where they equal the value (a
  bucket of one logged value), never a bucket's mean. A chart whose x-axis is wandb's `Step` is refused; the
  `<run> - _step` series wandb's UI adds to a chart on a step key is left out, with a warning.
- `*.csv` of `run.history()` written with pandas' `to_csv` (a `_step` column): a row per `log()` call, read as
  `scan_history` rows; its steps are floats (`0.0`) where a column has gaps.
- `*.jsonl`: JSON lines of `run.scan_history()` rows (`_step`, `_timestamp`, the step key and the logged keys), or
  of `run.history()` written with `to_json(orient="records", lines=True)`, whose numbers are cut to 10 decimals
  (two sources agree within that) and whose NaN and infinity are null.
- `run-<id>.wandb`, an offline run's log (`offline-run-*/`): read with wandb's own reader (`wandb leet inspect
  --json`, no network) where wandb is installed, else refused, saying how to export it.

A gap in a history export (a key with values at other steps but none at a step its rows have) may be a NaN or
infinity the export wrote as an empty cell or null: a warning counts them.
"""

from __future__ import annotations

import csv
import importlib.util
import math
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from build_tools.core._exceptions import Problem, display_path
from build_tools.ingest.sources._common import (
    STEP_KEYS,
    Found,
    MetricRecord,
    checked,
    json_decimals_unit,
    json_lines,
    number_of_text,
    read_bytes,
    step_key_of,
    text_files,
)
from build_tools.ingest.sources._json import Number, loads, plain, value, whole

WHOLE = re.compile(r"-?[0-9]+(\.0*)?")
EXPORT_HINT = ("export the chart with its x-axis set to the step key (train/step, rollout/step or eval/step), or "
               "the run's history with run.scan_history()")
# wandb's own reader of an offline run's log, run as its command line (no network, no wandb service).
WANDB_READER = ("-m", "wandb", "leet", "inspect", "--json")
WANDB_PIN = "wandb==0.31.0"


def read(files: list[Path], problems: list[Problem], warnings: list[str]) -> Found:
    found = Found("wandb")
    offline = [path for path in files if path.name.removesuffix(".gz").endswith(".wandb")]
    for path, where, lines in text_files([p for p in files if p not in offline], problems, found):
        name = path.name.removesuffix(".gz")
        if name.endswith(".csv"):
            _read_csv(lines, where, found, problems, warnings)
        else:
            _read_jsonl(lines, where, found, problems, warnings)
    for path in offline:
        _read_offline_run(path, found, problems, warnings)
    return checked(found, problems, warnings)


def _key_of(column: str) -> str:
    # "my-run - rollout/raw_reward" -> "rollout/raw_reward"
    return column.rsplit(" - ", 1)[1] if " - " in column and "/" in column.rsplit(" - ", 1)[1] else column


def _step_of(text: str) -> int | None:
    """A step as an export writes it: `3`, or `3.0` where pandas made the column floats."""
    text = text.strip()
    return whole(text.split(".", 1)[0]) if WHOLE.fullmatch(text) else None


def _read_csv(lines: list[str], where: str, found: Found, problems: list[Problem], warnings: list[str]) -> None:
    try:
        rows = list(csv.reader([line for line in lines if line.strip()]))
    except csv.Error as err:
        problems.append(Problem(where, None, None, f"not a CSV file: {err}"))
        return
    if not rows:
        return
    header = rows[0]
    if header[0] == "Step":
        problems.append(Problem(where, 1, "Step", "wandb's own _step (it counts every wandb.log call of every Miles "
                                f"process), not the step Miles logged these keys at; {EXPORT_HINT}"))
    elif "_step" in header or header[0] == "":  # a history as pandas writes it: _step, or its index column first
        _read_history_csv(header, rows[1:], where, found, problems, warnings)
    elif _key_of(header[0]) in STEP_KEYS:
        _read_chart(header, rows[1:], where, found, problems, warnings)
    else:
        problems.append(Problem(where, 1, None, f"first column {header[0][:60]!r}: expected a wandb chart's CSV "
                                "whose x-axis is a step key, or run.history() written with to_csv (a _step column)"))


def _read_chart(header: list[str], rows: list[list[str]], where: str, found: Found, problems: list[Problem],
                warnings: list[str]) -> None:
    axis = _key_of(header[0])
    if _twice(header, where, problems):
        return
    columns: dict[int, str] = {}
    for i, column in enumerate(header[1:], start=1):
        key = _key_of(column)
        if column.endswith(("__MIN", "__MAX")):
            continue
        if _is_wandb_step(column):
            warnings.append(f"{where}: column {column!r} left out: wandb adds its own _step to a chart's CSV (it "
                            "counts every wandb.log call, no Miles step); the other columns are read at "
                            f"{axis}")
            continue
        if step_key_of(key) != axis:
            problems.append(Problem(where, 1, key, f"logged against {step_key_of(key) or 'no step key'}, but the "
                                    f"chart's x-axis is {axis}; export it from a chart whose x-axis is its own step "
                                    "key"))
            continue
        columns[i] = key
    bounds = {i: (header.index(f"{header[i]}__MIN") if f"{header[i]}__MIN" in header else None,
                  header.index(f"{header[i]}__MAX") if f"{header[i]}__MAX" in header else None) for i in columns}
    bucketed = 0
    for number, row in enumerate(rows, start=2):
        if len(row) != len(header):
            warnings.append(f"{where}:{number}: {len(row)} cells for {len(header)} columns; row not read")
            continue
        step = _step_of(row[0])
        if step is None:
            warnings.append(f"{where}:{number}: {axis} {row[0][:40]!r} is not a whole number; row not read")
            continue
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
            data = {"ts": math.nan, "step_key": axis, "step": step, "metrics": {key: number_value}}
            found.add("metrics", MetricRecord(data, where, number, {key: text}, {"step": axis, "metrics": "{key}"}))
    if bucketed:
        warnings.append(f"{where}: {bucketed} downsampled value(s) (min and max differ) not read; export the chart "
                        "with every point, or the run history")


def _is_wandb_step(column: str) -> bool:
    """wandb's `_step` series, which its UI adds to a chart on a custom x-axis (`my-run - _step`; wandb issue
    #6474)."""
    return column == "_step" or column.endswith(" - _step")


def _twice(header: list[str], where: str, problems: list[Problem]) -> bool:
    """Two columns of one key (one key of two runs' charts): which to read is a guess."""
    columns: dict[str, list[int]] = {}
    for index, column in enumerate(header, start=1):
        if not column.endswith(("__MIN", "__MAX")):
            columns.setdefault(_key_of(column), []).append(index)
    for key, indexes in columns.items():
        if len(indexes) > 1:
            problems.append(Problem(where, 1, key, f"{len(indexes)} columns hold it (columns "
                                    f"{', '.join(map(str, indexes))}); expected one (the CSV of one run's chart)"))
    return any(len(indexes) > 1 for indexes in columns.values())


# --- history rows: scan_history, history() as CSV or JSON lines, an offline run's log -------------------------


@dataclass
class _Rows:
    """What the rows of one history file gave: for the warning about gaps and the refusal of a missing axis."""

    where: str
    keys: set[str] = field(default_factory=set)  # every step key a column or row holds
    logged: dict[str, set[int]] = field(default_factory=dict)  # metric -> steps it has a value at
    gaps: dict[str, set[int]] = field(default_factory=dict)  # metric -> steps a row of its axis left it empty
    no_axis: dict[str, int] = field(default_factory=dict)  # metric -> values in rows without its step key


def _read_row(row: dict[str, Any], number: int, found: Found, rows: _Rows, warnings: list[str],
              lossy: bool = False) -> None:
    """One logged row (dict of key -> (number, text) or None for an empty cell) as a record per step key."""
    stamp = row.get("_timestamp")
    ts = stamp[0] if isinstance(stamp, tuple) else math.nan
    found.saw_time(ts)
    groups: dict[tuple[str, int], MetricRecord] = {}
    for key, cell in row.items():
        step_key = step_key_of(key)
        if step_key is None and cell is not None:
            found.unplaced_key(rows.where, key)
        if key.startswith("_") or key in STEP_KEYS or step_key is None:
            continue
        own = row.get(step_key)
        step = own[0] if isinstance(own, tuple) and isinstance(own[0], int) else None
        if cell is None:
            if step is not None:
                rows.gaps.setdefault(key, set()).add(step)
            continue
        if step is None:
            rows.no_axis[key] = rows.no_axis.get(key, 0) + 1
            if step_key in rows.keys:
                warnings.append(f"{rows.where}:{number}: {key}: the row has no {step_key}; not read")
            continue
        rows.logged.setdefault(key, set()).add(step)
        record = groups.setdefault((step_key, step), MetricRecord(
            {"ts": ts, "step_key": step_key, "step": step, "metrics": {}}, rows.where, number,
            names={"ts": "_timestamp", "step": step_key, "metrics": "{key}"}))
        record.data["metrics"][key] = cell[0]
        record.texts[key] = cell[1]
        if lossy and isinstance(cell[0], float):
            record.units[key] = json_decimals_unit(cell[0])
    for record in groups.values():
        found.add("metrics", record)


def _end_rows(rows: _Rows, problems: list[Problem], warnings: list[str]) -> None:
    """A key whose step key the export left out is refused once; gaps are counted in one warning."""
    for key, count in sorted(rows.no_axis.items()):
        step_key = step_key_of(key)
        if step_key not in rows.keys:
            problems.append(Problem(rows.where, None, key, f"{count} value(s) but no {step_key} column, only wandb's "
                                    f"_step: export its step key too (keys=[..., '{step_key}'] in run.history() or "
                                    "run.scan_history())"))
    gaps = sorted((key, step) for key, steps in rows.gaps.items() for step in steps - rows.logged.get(key, set()))
    if gaps:
        shown = ", ".join(f"{key} at {step_key_of(key)} {step}" for key, step in gaps[:3])
        warnings.append(f"{rows.where}: {len(gaps)} value(s) empty at a step where the key has no other value ("
                        f"{shown}{', ...' if len(gaps) > 3 else ''}): history() exports write a NaN or infinity so; "
                        "not read (run.scan_history() keeps them)")


def _read_history_csv(header: list[str], body: list[list[str]], where: str, found: Found, problems: list[Problem],
                      warnings: list[str]) -> None:
    rows = _Rows(where, keys={c for c in header if c in STEP_KEYS})
    for number, cells in enumerate(body, start=2):
        if len(cells) != len(header):
            warnings.append(f"{where}:{number}: {len(cells)} cells for {len(header)} columns; row not read")
            continue
        row: dict[str, Any] = {}
        for column, text in zip(header, cells, strict=True):
            text = text.strip()
            if column in STEP_KEYS or column == "_step":
                step = _step_of(text) if text else None
                row[column] = None if step is None else (step, text)
                if text and step is None:
                    warnings.append(f"{where}:{number}: {column} {text[:40]!r} is not a whole number, not a step")
            elif not text:
                row[column] = None
            elif (number_value := number_of_text(text)) is None:
                if step_key_of(column) is not None:
                    warnings.append(f"{where}:{number}: {column}: {text[:40]!r} is not a number; not read")
            else:
                row[column] = (number_value, text)
        _read_row(row, number, found, rows, warnings)
    _end_rows(rows, problems, warnings)


def _read_jsonl(lines: list[str], where: str, found: Found, problems: list[Problem], warnings: list[str]) -> None:
    if _one_document(lines):
        problems.append(Problem(where, 1, None, "a history written as one JSON document (to_json's default layout, "
                                "or orient=\"records\" without lines): write it a row per line, "
                                "to_json(orient=\"records\", lines=True)"))
        return
    docs = list(json_lines(lines, where, problems, warnings,
                           "a JSON object (a row of run.scan_history() or of run.history())"))
    # history().to_json writes every column in every row (null where empty) and steps as floats (0.0).
    lossy = any(item is None or (key in STEP_KEYS and isinstance(item, Number) and "." in item)
                for _, doc in docs for key, item in doc.items())
    rows = _Rows(where, keys={key for _, doc in docs for key in doc if key in STEP_KEYS})
    for number, doc in docs:
        _read_row(_json_row(doc, where, number, warnings), number, found, rows, warnings, lossy)
    _end_rows(rows, problems, warnings)


def _one_document(lines: list[str]) -> bool:
    """pandas' to_json without lines=True: one document, a mapping per column or a list of rows."""
    texts = [line for line in lines if line.strip()]
    if len(texts) != 1 or not texts[0].lstrip().startswith(("{", "[")):
        return False
    try:
        doc = loads(texts[0])
    except (ValueError, RecursionError):
        return False
    return isinstance(doc, list) or (isinstance(doc, dict) and any(isinstance(item, dict) for item in doc.values()))


def _json_row(doc: dict[str, Any], where: str, number: int, warnings: list[str]) -> dict[str, Any]:
    """A JSON row as key -> (number, text), None for null; a step written 3.0 is step 3."""
    row: dict[str, Any] = {}
    for key, item in doc.items():
        if key in STEP_KEYS and isinstance(item, Number) and _step_of(item) is not None:
            row[key] = (_step_of(item), str(item))
        elif item is None:
            row[key] = None
        elif (parsed := value(item)) is not None:
            row[key] = parsed
        elif key == "_timestamp" or step_key_of(key) is not None:  # what a time or a value should be, checked
            row[key] = (plain(item), str(plain(item))[:40])
            if key != "_timestamp":
                warnings.append(f"{where}:{number}: {key}: {str(plain(item))[:40]!r} is not a number; not read")
                row[key] = None
    return row


# The log's first record, its header, holds the version of wandb that wrote it: `0.31.0+<40 hex digits>`.
WRITER_VERSION = re.compile(rb"([0-9]+\.[0-9]+\.[0-9]+(?:\.?[a-z]+[0-9]*)?)\+[0-9a-f]{40}")


def written_by(data: bytes) -> str | None:
    """The wandb version the header of an offline run's log names (its producer), or None where none shows."""
    match = WRITER_VERSION.search(data[:512])
    return match[1].decode("ascii") if match else None


def installed_wandb() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("wandb")
    except PackageNotFoundError:
        return "none"


def _wandb_reader(path: Path, data: bytes) -> subprocess.CompletedProcess[str]:
    """`wandb leet inspect --json` on the log (a gzipped one unpacked into a temporary folder first), offline."""
    with tempfile.TemporaryDirectory(prefix=f"manual-wandb-{os.getpid()}-") as tmp:
        # offline, silent, and its settings, cache and logs in the temporary folder: nothing written elsewhere
        env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DISABLE_CODE": "true",
               **{name: tmp for name in ("WANDB_DIR", "WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR")}}
        if path.name.endswith(".gz"):
            path = Path(tmp) / "run" / path.name.removesuffix(".gz")
            path.parent.mkdir()
            path.write_bytes(data)
        return subprocess.run([sys.executable, *WANDB_READER, str(path)], capture_output=True, text=True,
                              timeout=300, env=env, check=False)


def _read_offline_run(path: Path, found: Found, problems: list[Problem], warnings: list[str]) -> None:
    """An offline run's log, read by wandb's own reader where wandb is installed, else refused in one line."""
    where = display_path(path)
    data = read_bytes(path, problems)  # gunzipped (`make add-run` gzips what it copies), size-limited
    if data is None:
        return
    writer = written_by(data)
    pin = f"wandb=={writer}" if writer else WANDB_PIN
    export = f"`wandb sync {display_path(path.parent)}` and export the run with run.scan_history()"
    if importlib.util.find_spec("wandb") is None:
        problems.append(Problem(where, None, None, "a wandb offline run's log, which only wandb reads, and wandb is "
                                f"not installed here: install it (pip install {pin}) to read it, or {export}"))
        return
    found.read_file(where, not data)
    try:
        result = _wandb_reader(path, data)
    except (OSError, subprocess.TimeoutExpired) as err:
        problems.append(Problem(where, None, None, f"wandb could not read it ({err})"))
        return
    if result.returncode != 0:
        said = (result.stderr.strip() or result.stdout.strip() or f"exit status {result.returncode}").splitlines()
        installed = installed_wandb()
        if writer and installed != writer:  # e.g. an older wandb: "No such command 'leet'"
            problems.append(Problem(where, None, None, f"written by wandb {writer}, which the wandb installed here "
                                    f"({installed}) cannot read ({said[-1][:120]}): pip install {pin} to read it, or "
                                    f"{export}"))
            return
        problems.append(Problem(where, None, None, f"wandb could not read it: {said[-1][:200]}"))
        return
    for line in result.stderr.splitlines():  # e.g. the end of a log cut off when the job was killed
        if line.strip():
            warnings.append(f"{where}: {line.strip()[:300]}")
    history: list[tuple[int, dict[str, Any]]] = []
    for text in result.stdout.splitlines():  # one JSON object per record: {"num": 16, "type": "history", ...}
        doc = loads(text) if text.startswith("{") else None
        if isinstance(doc, dict) and doc.get("type") == "history" and isinstance(doc.get("history"), dict):
            item = doc["history"].get("item")
            history.append((int(doc.get("num") or 0), item if isinstance(item, dict) else {}))
    rows = _Rows(where, keys={key for _, item in history for key in item if key in STEP_KEYS})
    for number, item in history:
        _read_row(_json_row(item, where, number, warnings), number, found, rows, warnings)
    _end_rows(rows, problems, warnings)
