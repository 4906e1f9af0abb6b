"""What every source reader shares: the records it hands back, how it opens files, and how precise a value is."""

from __future__ import annotations

import difflib
import itertools
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np

from build_tools.core import _files
from build_tools.core._exceptions import InputProblem, Problem, display_path
from build_tools.core._types import Record
from build_tools.ingest import schemas, schemas_dump
from build_tools.ingest.sources._json import loads

# Keys Miles renamed between versions: the old name -> today's name (miles-outputs.md, section 1).
RENAMED = {"perf/total_train_time": "perf/step_time"}

# Which step key a metric is logged against, by its prefix (Miles' wandb_utils.define_metric calls).
STEP_KEY_OF_PREFIX = {"train": "train/step", "rollout": "rollout/step", "perf": "rollout/step",
                      "multi_turn": "rollout/step", "passrate": "rollout/step", "eval": "eval/step"}
STEP_KEYS = ("rollout/step", "train/step", "eval/step")
# The keys the manual reads (miles-run-data.md, section 3): a key one letter away from one of them is reported.
KNOWN_KEYS = ("rollout/raw_reward", "rollout/response_lengths", "rollout/truncated",
              "train/train_rollout_logprob_abs_diff", "train/train_rollout_kl", "train/grad_norm", "train/pg_clipfrac",
              "train/ppo_kl", "train/entropy_loss", "perf/step_time", "perf/rollout_time", "perf/log_probs_time",
              "perf/train_time", "perf/update_weights_time", "perf/sleep_time", "perf/wake_up_time",
              "perf/train_wait_time", "eval/lag_steps", *STEP_KEYS)
# Families of keys Miles logs with a character some writers replace by `_` (tensorboardX's `_clean_tag`, Miles'
# own MLflow `_sanitize_key`): `passrate/pass@{k}`, k a power of two (miles/utils/metric_utils.py,
# compute_pass_rate, at 31f1ca961). `{k}` stands for a whole number.
CLEANED_FAMILIES = ("passrate/pass@{k}",)


@dataclass
class MetricRecord(Record):
    """A `metrics` record (ts, step_key, step, metrics) with each value's text as its source printed it."""

    texts: dict[str, str] = field(default_factory=dict)
    # A field's name in the source, for messages: step -> Step; "metrics" words a value: "{key} value"
    names: dict[str, str] = field(default_factory=dict)
    # Half the unit a value was stored with, where the source is known to lose precision (a float32, a number
    # to_json cut to 10 decimals, a log line's :.2f): key -> half unit. Any other value is a printed double.
    units: dict[str, float] = field(default_factory=dict)


@dataclass
class Found:
    """What one source holds: records per stream, launch arguments, the first time it shows."""

    source: str
    streams: dict[str, list[Record]] = field(default_factory=dict)
    args: dict[str, tuple[Any, str, int]] = field(default_factory=dict)  # name -> (value, file, line)
    # What the source says of the job itself beyond its arguments: "miles_commit" -> (the commit, the file).
    origin: dict[str, tuple[str, str]] = field(default_factory=dict)
    start_ts: float | None = None
    files: list[str] = field(default_factory=list)
    blank: set[str] = field(default_factory=set)  # files read that hold nothing but white space
    unplaced: dict[str, set[str]] = field(default_factory=dict)  # file -> numeric keys of no known step key
    unit: str = "line"  # what a record's number counts: a line of a text file, a record of a binary one

    def add(self, stream: str, record: Record) -> None:
        self.streams.setdefault(stream, []).append(record)

    def saw_time(self, ts: float | None) -> None:
        if ts is not None and schemas.is_time(ts) and (self.start_ts is None or ts < self.start_ts):
            self.start_ts = ts

    def unplaced_key(self, where: str, key: str) -> None:
        """A number logged under a key whose prefix has no step key Miles defines: not read, told per file."""
        if key and not key.startswith("_"):
            self.unplaced.setdefault(where, set()).add(key)

    def read_file(self, where: str, empty: bool) -> None:
        self.files.append(where)
        if empty:
            self.blank.add(where)


def checked(found: Found, problems: list[Problem], warnings: list[str]) -> Found:
    """What a reader found, each record checked by the dump's rules for its stream (schemas_dump.SOURCE_RECORDS): a
    record with a wrong field is dropped, with a problem naming its file, line and field. A file that gave
    nothing and was reported nowhere is a warning: an empty or unreadable source is never silence."""
    for stream, records in found.streams.items():
        kept: list[Record] = []
        for where, group in itertools.groupby(records, key=lambda record: record.file):
            batch = list(group)
            valid, _ = schemas_dump.validate_records(stream, [r.data for r in batch], where, [r.line for r in batch],
                                                source=True)
            for record, data in zip(batch, valid, strict=True):
                if data is None:  # again on its own, for its problems in the source's words
                    problems += [_worded(problem, record, found.unit) for problem in
                                 schemas_dump.validate_record(stream, record.data, where, record.line, source=True)[1]]
                else:
                    record.data = data
                    kept.append(record)
        found.streams[stream] = kept
    prefixes = ", ".join(f"{prefix}/" for prefix in STEP_KEY_OF_PREFIX)
    for where, keys in sorted(found.unplaced.items()):
        shown = ", ".join(sorted(keys)[:5]) + (", ..." if len(keys) > 5 else "")
        warnings.append(f"{where}: {len(keys)} key(s) under no prefix Miles gives a step key ({prefixes}) not read: "
                        f"{shown}")
    _warn_silent_files(found, problems, warnings)
    return found


def _worded(problem: Problem, record: Record, unit: str) -> Problem:
    """A problem with the field as the source names it (Step, _timestamp), and in a binary file at its record:
    `file: record 3: step: ...`."""
    names = record.names if isinstance(record, MetricRecord) else {}
    field_name = names.get(problem.field or "", problem.field)
    if field_name and field_name.startswith("metrics.") and "metrics" in names:  # a value, under the key's name
        field_name = names["metrics"].format(key=field_name.removeprefix("metrics."))
    if unit == "line":
        return Problem(problem.file, problem.line, field_name, problem.message)
    return Problem(problem.file, None, f"{unit} {problem.line}" + (f": {field_name}" if field_name else ""),
                   problem.message)


def _warn_silent_files(found: Found, problems: list[Problem], warnings: list[str]) -> None:
    gave = {record.file for records in found.streams.values() for record in records}
    gave |= {file for _, file, _ in found.args.values()}
    gave |= {problem.file for problem in problems}
    gave |= {warning.split(":", 1)[0] for warning in warnings}
    for where in found.files:
        if where in gave:
            continue
        if where in found.blank:
            warnings.append(f"{where}: empty; nothing read from it")
        else:
            warnings.append(f"{where}: nothing read from it: no {WHAT_IS_READ[found.source]} (not a file of this "
                            "source, or one from before anything was logged)")


# What a source's reader reads, for the warning about a file it read nothing from.
WHAT_IS_READ = {"log": "metrics, Timer, [CPU memory], event or argument line",
                "events": "metric record with a known key", "ci_history": "series of a known key",
                "wandb": "value of a known key with its step", "tensorboard": "scalar of a known key",
                "mlflow": "value of a key under a known prefix"}


def number_of_text(text: str) -> float | None:
    """A number printed as text (a CSV cell): nan and inf as written, a number beyond a double as a plain infinity
    (the schema refuses it); None for what is not a number."""
    try:
        number = float(text)
    except ValueError:
        return None
    if "_" in text:  # Python reads 1_000; no exporter writes it
        return None
    return written(number) if text.strip().lstrip("+-").lower() in ("nan", "inf", "infinity") else number


def written(number: float) -> float:
    """A non-finite number as its source wrote it (nan, inf, a float32 infinity): kept, as the dump keeps a
    bare NaN, and told from a number too large for a double, which the schema refuses."""
    return number if math.isfinite(number) else schemas.WrittenNonFinite(number)


def read_bytes(path: Path, problems: list[Problem]) -> bytes | None:
    """A source file's bytes, gunzipped, with the loader's checks (size limit, truncated or fake gzip)."""
    try:
        return _files.read_bytes(path, _files.STREAM_LIMIT)
    except InputProblem as error:
        problems.append(error.problem)
        return None


def read_text(path: Path, problems: list[Problem]) -> list[str] | None:
    """The lines of a plain or gzipped text file; the last element is what follows the last newline. A byte
    that is not UTF-8 (a log is written by many programs) reads as U+FFFD rather than stopping the file."""
    raw = read_bytes(path, problems)
    return None if raw is None else raw.decode("utf-8", errors="replace").split("\n")


def text_files(files: list[Path], problems: list[Problem], found: Found) -> Iterator[tuple[Path, str, list[str]]]:
    """(path, its name for messages, its lines) of each file a reader can read, noted as read by `found`."""
    for path in files:
        lines = read_text(path, problems)
        if lines is None:
            continue
        where = display_path(path)
        found.read_file(where, not any(line.strip() for line in lines))
        yield path, where, lines


def json_lines(lines: list[str], where: str, problems: list[Problem], warnings: list[str],
               expected: str = "a JSON object") -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each complete line of a JSON-lines source, numbers kept as written; a line
    that is not JSON or not an object is a problem naming the line, and reading goes on."""
    if lines[-1].strip():
        warnings.append(f"{where}:{len(lines)}: last line has no newline (a writer mid-append); skipped")
    for number, text in enumerate(lines[:-1], start=1):
        if not text.strip():
            continue
        try:
            doc = loads(text)
        except (json.JSONDecodeError, RecursionError, ValueError) as err:
            problems.append(Problem(where, number, None, f"not valid JSON: {getattr(err, 'msg', err)}"))
            continue
        if not isinstance(doc, dict):
            problems.append(Problem(where, number, None, f"expected {expected}"))
            continue
        yield number, doc


def misread_of(key: str) -> str | None:
    """The known key an unknown one is probably a misreading of (a stray or swapped letter), else None."""
    if key in KNOWN_KEYS or key in RENAMED:
        return None
    close = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.9)
    return close[0] if close else None


def logged_key(written_key: str, clean: Callable[[str], str], warnings: list[str], where: str, writer: str) -> str:
    """The key Miles logged that a writer cleaned into `written_key` (`passrate/pass_1` -> `passrate/pass@1`):
    the one known key or family member `clean` turns into it; the key as written where none is, and where two are
    (which one was logged cannot be told), a warning."""
    logged = {key for key in KNOWN_KEYS if key != written_key and clean(key) == written_key}
    for family in CLEANED_FAMILIES:
        parts = [re.escape(clean(part)) for part in family.split("{k}")]
        match = re.fullmatch("([0-9]+)".join(parts), written_key)
        if match is not None:
            key = family.format(k=match[1])
            if key != written_key and clean(key) == written_key:
                logged.add(key)
    if len(logged) == 1:
        return logged.pop()
    if logged:
        warnings.append(f"{where}: {written_key} may be any of {', '.join(sorted(logged))} as {writer} writes them "
                        "(it replaces characters by _); read as written")
    return written_key


def step_key_of(metric: str) -> str | None:
    return STEP_KEY_OF_PREFIX.get(metric.split("/", 1)[0])


def precision(text: str) -> float:
    """Half a unit of the last digit a value was printed with: '0.53' -> 0.005, '61.7' -> 0.05, '3' -> 0.5."""
    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        return 0.0
    exponent = number.as_tuple().exponent
    if not isinstance(exponent, int):  # 'n', 'N' or 'F': not a finite number
        return 0.0
    return 0.5 * 10.0 ** exponent


def float32_unit(value: float) -> float:
    """Half a float32 ulp at a value stored as float32: how far the float64 it came from may lie."""
    return float(np.spacing(np.float32(abs(value)))) / 2 if math.isfinite(value) else 0.0


def json_decimals_unit(value: float, decimals: int = 10) -> float:
    """Half the last decimal pandas' to_json (double_precision=10) prints, or half a double's ulp if coarser."""
    return max(0.5 * 10.0 ** -decimals, math.ulp(value) / 2) if math.isfinite(value) else 0.0


def tolerance(text: str, unit: float | None = None) -> float:
    """How far a value may lie from what was logged: its stored unit where known, else its printed precision."""
    return unit if unit is not None else precision(text)


def agree(a: float, a_tolerance: float, b: float, b_tolerance: float) -> bool:
    """Two values of one logged number agree within the tolerance of the less precise one."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    tolerance = max(a_tolerance, b_tolerance)
    return abs(a - b) <= tolerance * (1 + 1e-9) + 1e-12 * max(abs(a), abs(b))


def number_text(value: Any) -> str:
    """How a JSON writer or Python printed a number: the shortest text that reads back as the same float."""
    if isinstance(value, bool):
        return str(int(value))
    return repr(value) if isinstance(value, int | float) else str(value)


def scalar(value: Any) -> bool:
    return isinstance(value, int | float | bool) or (isinstance(value, str) and value in ("NaN", "Infinity",
                                                                                         "-Infinity"))
