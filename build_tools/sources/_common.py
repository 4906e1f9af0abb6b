"""What every source reader shares: the records it hands back, how it opens files, and how precise a value is."""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from .. import _files
from .._exceptions import InputProblem, Problem, display_path
from .._types import Record
from ._json import loads

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


@dataclass
class MetricRecord(Record):
    """A `metrics` record (ts, step_key, step, metrics) with each value's text as its source printed it."""

    texts: dict[str, str] = field(default_factory=dict)


@dataclass
class Found:
    """What one source holds: records per stream, launch arguments, the first time it shows."""

    source: str
    streams: dict[str, list[Record]] = field(default_factory=dict)
    args: dict[str, tuple[Any, str, int]] = field(default_factory=dict)  # name -> (value, file, line)
    start_ts: float | None = None
    files: list[str] = field(default_factory=list)

    def add(self, stream: str, record: Record) -> None:
        self.streams.setdefault(stream, []).append(record)

    def saw_time(self, ts: float | None) -> None:
        if ts is not None and math.isfinite(ts) and (self.start_ts is None or ts < self.start_ts):
            self.start_ts = ts


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
        found.files.append(where)
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


def agree(a: float, a_text: str, b: float, b_text: str) -> bool:
    """Two printings of one value agree within the precision of the less precise one."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    tolerance = max(precision(a_text), precision(b_text))
    return abs(a - b) <= tolerance * (1 + 1e-9) + 1e-12 * max(abs(a), abs(b))


def number_text(value: Any) -> str:
    """How a JSON writer or Python printed a number: the shortest text that reads back as the same float."""
    if isinstance(value, bool):
        return str(int(value))
    return repr(value) if isinstance(value, int | float) else str(value)


def scalar(value: Any) -> bool:
    return isinstance(value, int | float | bool) or (isinstance(value, str) and value in ("NaN", "Infinity",
                                                                                         "-Infinity"))
