"""The dashboard dump's schemas: meta.json and its recorded flags (their names, Miles' own keys), every stream's
record and the rules across its fields; what the other sources (build_tools/ingest/sources/) yield; and the
checks of a file's records against them.

Its field types and error messages are schemas.py's.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Annotated, Any, Literal, NotRequired

from pydantic import (
    ConfigDict,
    Field,
    PlainValidator,
    TypeAdapter,
    ValidationError,
)
from typing_extensions import TypedDict

from build_tools.core._exceptions import Problem
from build_tools.ingest.schemas import (
    Count,
    Duration,
    Number,
    PhaseEnd,
    Scalar,
    Schema,
    SourceCount,
    SourceStep,
    Step,
    Text,
    Time,
    _message,
    _source_time,
    problems_of,
)
from build_tools.ingest.schemas_run import Flags

EVENT_KINDS = ("heat_pause", "engine_death", "watchdog_kill", "ray_oom_kill", "job_end")


class MilesArgs(Flags):
    """meta.json's args: the flags the manual reads typed as run.yaml's (checked apart from Meta, load._load_meta),
    every other flag Miles recorded kept as it is."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)


class Meta(Schema):
    """dashboard/meta.json, written once by Miles. `args` is Miles' own subset of its launch flags."""

    run_name: Text
    start_ts: Time
    args: dict[str, Any]
    schema_version: Literal[1]


# A recorded argument's name as argparse stores a Miles flag (its dest: `--rollout-batch-size` is
# rollout_batch_size). Only such a name may become `--name` on a command line a reader pastes into a shell:
# anything else (a space, `$(`, a backtick, `;`, a non-ASCII letter) could be read by the shell as syntax.
FLAG_NAME = re.compile(r"[a-z0-9_]+", re.ASCII)


def is_flag_name(name: object) -> bool:
    return isinstance(name, str) and FLAG_NAME.fullmatch(name) is not None


def _unprintable(text: str) -> int | None:
    """Where a value holds a character no command line should carry (NUL, a control or format character, a
    surrogate): Unicode's C categories. Letters, marks, digits, punctuation, symbols and spaces are allowed."""
    return next((i for i, char in enumerate(text) if unicodedata.category(char)[0] == "C"), None)


def value_problem_of_arg(value: Any) -> str | None:
    if isinstance(value, str):
        at = _unprintable(value)
        return None if at is None else (f"holds the unprintable character {ascii(value[at])} at character {at + 1}: "
                                        "expected printable text")
    if isinstance(value, list | tuple):
        return next((wrong for item in value if (wrong := value_problem_of_arg(item)) is not None), None)
    return None


def arg_problems(args: dict[Any, Any], where: str, line: int | None = None) -> list[Problem]:
    """The recorded arguments (meta.json's args, a log's dump) a launch command cannot be rendered from: a key
    that is not a flag's name, a value holding a control character. Each one line naming the file and key."""
    problems = []
    for name, value in args.items():
        if not is_flag_name(name):
            problems.append(Problem(where, line, "args", f"key {ascii(name)} is not a Miles flag's name: expected "
                                    "lowercase ASCII letters, digits and underscores ([a-z0-9_]+), as argparse "
                                    "stores a flag"))
        elif (wrong := value_problem_of_arg(value)) is not None:
            problems.append(Problem(where, line, f"args.{name}", wrong))
    return problems


def meta_key_problems(args: dict[Any, Any], where: str) -> list[Problem]:
    """meta.json's args keys Miles never writes: its dashboard keeps only its _SNAPSHOT_KEYS (the pinned list in
    build_tools/ingest/miles_facts/miles_args.json), so any other key was not written by Miles."""
    from build_tools.ingest.miles_facts import snapshot_keys

    keys = snapshot_keys()
    return [Problem(where, None, "args", f"key {name!r} is not one Miles writes to meta.json: expected one of "
                                         f"{', '.join(keys)} (miles/dashboard/args.py _SNAPSHOT_KEYS)")
            for name in args if is_flag_name(name) and name not in keys]


def _record(**fields: Any) -> type:
    """A stream record type: a TypedDict validated strictly, unknown keys refused (fast: stays a dict)."""
    record = TypedDict("Record", fields)  # type: ignore[misc]  # a TypedDict built from keywords at run time
    record.__pydantic_config__ = ConfigDict(strict=True, extra="forbid")  # type: ignore[attr-defined]
    return record


STREAM_RECORDS: dict[str, type] = {
    # dashboard/
    "metrics": _record(ts=Time, step_key=str | None, step=Step | None, metrics=dict[str, Scalar]),
    "phases": _record(name=Text, t0=Time, t1=PhaseEnd, node=str, gpus=list[Count], rank=int,
                      role=Literal["train", "rollout_manager"]),
    "gpu_util": _record(ts=Time, node=str, gpu=Count, util=Annotated[Number, Field(ge=0, le=100)],
                        mem_mb=Annotated[Number, Field(ge=0)] | None,
                        power_w=Annotated[Number, Field(ge=0)] | None),
    "gpu_processes": _record(ts=Time, node=str, gpu=Count, pid=Count, name=str,
                             mem_mb=Annotated[Number, Field(ge=0)] | None),
    "engine_series": _record(ts=Time, addr=str, metric=Text, labels=dict[str, str], value=Number),
    "trajectories": _record(ts=Time, kind=Text, sample_index=int, group_index=int, turn=int,
                            weight_version=str, detail=str),
    "topology": _record(ts=Time, engines=list[dict[str, Any]]),
    "data_buffer": _record(ts=Time, length=Count),
    # lab/
    "events": _record(kind=Literal[EVENT_KINDS], t0=Time, t1=Time, detail=str),
    "host_memory": _record(ts=Time, total_kib=Annotated[int, Field(gt=0)], available_kib=Count),
    "gpu_temp": _record(ts=Time, gpu=Count, temp_c=Annotated[Number, Field(ge=-50, le=150)],
                        # `manual record` adds what nvidia-smi reports beside the temperature
                        util=NotRequired[Annotated[Number, Field(ge=0, le=100)] | None],
                        power_w=NotRequired[Annotated[Number, Field(ge=0)] | None]),
    "held_memory": _record(ts=Time, side=Literal["trainer", "engine"], gib=Annotated[Number, Field(ge=0)]),
    "sampling": _record(ts=Time, step=Step, batches=Count, reward_before_filter=Number),
    "repeat_probe": _record(ts=Time, probe=Count, repeat=Count, output_sha256=Annotated[
        str, Field(pattern=r"^[0-9a-f]{64}$")]),
}

# Rules across the fields of one record (pandera-style: a tiny function and the message it explains).
RecordRule = tuple[Callable[[dict[str, Any]], bool], str, str]
RECORD_RULES: dict[str, list[RecordRule]] = {
    # `|`, not `or`: each rule also runs on whole columns (build_tools/ingest/_columnar.py)
    "phases": [(lambda r: (r["t1"] == -1) | (r["t1"] >= r["t0"]), "t1",
                "ends at {t1} before it starts at {t0} (expected t1 >= t0, or -1 for a phase still open)")],
    "events": [(lambda r: r["t1"] >= r["t0"], "t1", "ends at {t1} before it starts at {t0} (expected t1 >= t0)")],
    "host_memory": [(lambda r: r["available_kib"] <= r["total_kib"], "available_kib",
                     "is {available_kib}, above total_kib {total_kib} (expected available <= total)")],
}

_ADAPTERS: dict[str, TypeAdapter[Any]] = {name: TypeAdapter(record) for name, record in STREAM_RECORDS.items()}
# A whole file's records in one call: pydantic-core loops over them in Rust, not Python.
_BATCH_ADAPTERS: dict[str, TypeAdapter[Any]] = {name: TypeAdapter(list[record])  # type: ignore[valid-type]
                                                for name, record in STREAM_RECORDS.items()}


# --- what the other sources yield (build_tools/ingest/sources/) ----------------------------------------

def _source_record(stream: str) -> type:
    """The dump's record type of a stream, with the two things a source may do differently: a time it did
    not print (NaN), and a step it read from text (checked within 64 bits)."""
    fields = dict(STREAM_RECORDS[stream].__annotations__)
    if "ts" in fields:
        fields["ts"] = Annotated[int | float, PlainValidator(_source_time)]
    if "step" in fields:
        fields["step"] = SourceStep
    return _record(**fields)


SOURCE_RECORDS: dict[str, type] = {name: _source_record(name) for name in ("metrics", "phases", "events")}
_SOURCE_ADAPTERS: dict[str, TypeAdapter[Any]] = {name: TypeAdapter(record) for name, record in SOURCE_RECORDS.items()}
_SOURCE_BATCH_ADAPTERS: dict[str, TypeAdapter[Any]] = {name: TypeAdapter(list[record])  # type: ignore[valid-type]
                                                       for name, record in SOURCE_RECORDS.items()}
# The fields of an event file's metric line (sources/events.py) besides its metrics; null is "not given".
EVENT_LINE = _record(rollout_id=NotRequired[SourceStep | None], attempt=NotRequired[SourceCount | None])
_EVENT_LINE: TypeAdapter[Any] = TypeAdapter(EVENT_LINE)


def validate_event_line(data: dict[str, Any], where: str, line: int) -> list[Problem]:
    """An event file's rollout_id and attempt, exactly typed: one problem per wrong field."""
    try:
        _EVENT_LINE.validate_python(data)
    except ValidationError as error:
        return problems_of(error, where, lambda _loc: line, EVENT_LINE)
    return []


def validate_records(stream: str, records: list[Any], where: str, lines: list[int],
                     source: bool = False) -> tuple[list[dict[str, Any] | None], list[Problem]]:
    """Every record of a file against its stream's schema and rules, at once: the valid ones (None for a
    record with a problem), and one problem per wrong field, at its line. `source`: records a source reader
    made (SOURCE_RECORDS), not lines of the dump."""
    try:
        batch = (_SOURCE_BATCH_ADAPTERS if source else _BATCH_ADAPTERS)[stream]
        valid: list[dict[str, Any] | None] = list(batch.validate_python(records))
        problems: list[Problem] = []
    except ValidationError:  # rare: find which records, one at a time, for their messages
        valid, problems = [], []
        for record, line in zip(records, lines, strict=True):
            one, found = validate_record(stream, record, where, line, source)
            valid.append(one)
            problems += found
        return valid, problems
    for rule, field, message in RECORD_RULES.get(stream, ()):
        for index, record in enumerate(valid):
            if record is not None and not rule(record):
                problems.append(Problem(where, lines[index], field, message.format(**record)))
                valid[index] = None
    return valid, problems


def validate_record(stream: str, data: Any, where: str, line: int,
                    source: bool = False) -> tuple[dict[str, Any] | None, list[Problem]]:
    """One stream record checked against its schema and rules: (the record, []) or (None, problems)."""
    try:
        record = (_SOURCE_ADAPTERS if source else _ADAPTERS)[stream].validate_python(data)
    except ValidationError as error:
        schema = (SOURCE_RECORDS if source else STREAM_RECORDS)[stream]
        return None, problems_of(error, where, lambda _loc: line, schema)
    problems = [Problem(where, line, field, message.format(**record))
                for ok, field, message in RECORD_RULES.get(stream, ()) if not ok(record)]
    return (None, problems) if problems else (record, [])


_VALUE_ADAPTERS: dict[str, TypeAdapter[Any]] = {"time": TypeAdapter(Time), "duration": TypeAdapter(Duration),
                                                "step": TypeAdapter(SourceStep)}


def value_problem(kind: str, value: Any) -> str | None:
    """What is wrong with one value of a kind of these schemas ("time", "duration", "step"), or None."""
    try:
        _VALUE_ADAPTERS[kind].validate_python(value)
    except ValidationError as error:
        return _message(error.errors(include_url=False)[0], (), None)
    return None
