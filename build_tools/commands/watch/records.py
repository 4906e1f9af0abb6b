"""Complete lines into metric values: a dump's metrics records and a log's `rollout N: {...}` lines."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_tools.core._exceptions import Problem
from build_tools.ingest.sources._common import RENAMED
from build_tools.ingest.sources.log import (
    ANSI,
    ARG_LINE,
    ARGS_BEGIN,
    ARGS_END,
    METRICS,
    RAY_PREFIX,
    SOURCE,
    STAMP,
    STEP_KEY,
    PayloadError,
    _arg_value,
    parse_payload,
)


@dataclass(frozen=True)
class Value:
    step_key: str
    step: int
    metric: str
    value: float


def dump_values(line: str) -> Iterator[Value]:
    """A metrics.jsonl record's numbers; ValueError for a line that is not one (the watch warns and goes on)."""
    if not line.strip():
        return
    try:
        record = json.loads(line)
    except RecursionError:  # nested deeper than the parser goes: no record Miles writes
        raise ValueError("nested too deep for a metrics record") from None
    if not isinstance(record, dict) or not isinstance(record.get("metrics"), dict):
        raise ValueError("expected a metrics record: an object with step_key, step and metrics")
    step_key, step = record.get("step_key"), record.get("step")
    if step_key is None and step is None:  # a record Miles logs with no step: nothing to judge at a step
        return
    if not isinstance(step_key, str) or not isinstance(step, int) or isinstance(step, bool):
        raise ValueError("expected step_key a text and step a whole number")
    if not 0 <= step < STEP_LIMIT:
        raise ValueError(f"expected step a whole number from 0 to {STEP_LIMIT - 1} (64 bits), found {_digits(step)}")
    yield from _numbers(step_key, step, record["metrics"])


def log_message(line: str) -> str:
    """A log line's message, without the Ray prefix, the time stamp and the source (as sources/log.py reads it)."""
    text = ANSI.sub("", line).rstrip("\r")
    prefix = RAY_PREFIX.match(text)
    body = text[prefix.end():] if prefix else text
    if stamp := STAMP.match(body):
        body = body[stamp.end():]
    source = SOURCE.match(body)
    return (body[source.end():] if source else body).strip()


class LogArguments:
    """The argument dump Megatron prints at launch (`---- arguments ----` ... `---- end of arguments ----`), read
    line by line as it arrives: at its end, the run's setup (the flags, the model from --hf-checkpoint)."""

    def __init__(self) -> None:
        self.inside = False
        self.args: dict[str, Any] = {}

    def take(self, message: str) -> dict[str, Any] | None:
        if ARGS_BEGIN.match(message):
            self.inside, self.args = True, {}
        elif self.inside and ARGS_END.match(message):
            self.inside = False
            checkpoint = str(self.args.get("hf_checkpoint") or "").rstrip("/")
            return {"model": {"name": checkpoint.rsplit("/", 1)[-1] or None}, "flags": dict(self.args)}
        elif self.inside and (arg := ARG_LINE.match(message)):
            self.args.setdefault(arg["name"], _arg_value(arg["value"]))
        return None


def log_values(line: str) -> Iterator[Value]:
    """A log line's metrics, read as sources/log.py reads them."""
    message = log_message(line)
    match = METRICS.match(message)
    if not match:
        return
    try:
        values, _ = parse_payload(match["payload"])
    except PayloadError:
        return
    step_key = STEP_KEY[match["kind"]]
    step = values.get(step_key, int(match["n"]))
    if isinstance(step, int) and not isinstance(step, bool):
        yield from _numbers(step_key, step, values)


def _numbers(step_key: str, step: int, metrics: Mapping[str, Any]) -> Iterator[Value]:
    """The numbers of a record, a NaN or an infinity among them; ValueError for an integer beyond a double (a
    400-digit value), which the loader refuses too."""
    if not 0 <= step < STEP_LIMIT:
        return
    for key, value in metrics.items():
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= DOUBLE_LIMIT:
            raise ValueError(f"{key}: a whole number of {_digits(value)}, beyond a double")
        # A NaN or an infinity is kept: the judge reports it the moment it arrives (Miles' own gate fails on one).
        if isinstance(value, int | float) and not isinstance(value, bool):
            yield Value(step_key, step, RENAMED.get(key, key), float(value))


STEP_LIMIT = 2**63
DOUBLE_LIMIT = 2**1024  # float() of an integer this large raises OverflowError


def _digits(number: int) -> str:
    """A whole number as the warning names it: itself when short, its count of digits when not (a warning is
    one line, and int's text of 4,300 digits or more is refused by Python itself)."""
    if -10**20 < number < 10**20:
        return str(number)
    return f"{number.bit_length() * 30103 // 100000 + 1} digits"


def setup_of_meta(path: Path, problems: list[Problem]) -> dict[str, Any] | None:
    """A dump's meta.json as the run.yaml fields the envelope reads (as load.py maps it), read and checked by the
    loader (load.read_meta: its size limit, its nesting limit, its schema); None when it has a problem."""
    from build_tools.ingest.load import read_meta

    found: list[Problem] = []
    meta = read_meta(path, found)
    problems += found
    args = meta.get("args")
    if found or not isinstance(args, dict):
        return None
    checkpoint = str(args.get("hf_checkpoint") or "").rstrip("/")
    return {"model": {"name": checkpoint.rsplit("/", 1)[-1] or None}, "flags": dict(args),
            "run_id": meta.get("run_name")}  # Miles' name for the run (the summary names it)


def setup_of_run_yaml(path: Path, problems: list[Problem]) -> dict[str, Any] | None:
    """A run folder's run.yaml, read and checked by the loader (load.read_run_yaml: its size limit, no alias
    expanded past its bound, its schema); None when it has a problem."""
    from build_tools.ingest.load import read_run_yaml

    found: list[Problem] = []
    from build_tools.ingest.load import _own_id

    # Its own run_id names the run, not its folder: a job copied under another name is the same run.
    config, _ = read_run_yaml(path, _own_id(path) or path.parent.name, found)
    problems += found
    return None if found or not config else config
