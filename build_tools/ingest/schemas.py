"""One typed schema per input file: the one validation vocabulary of the build.

Each schema is a pydantic v2 model in strict mode: a field has one type (a `1` is not `true`, a `"3"` is
not `3`), unknown keys are errors that suggest the closest known name, and the checks a single value or
record needs live beside its fields. `validate()` turns pydantic's errors into the build's one-line
problems: `file:line: field: what is wrong (what was expected)`.

runs/README.md's field tables are tested against these classes (tests/test_schemas.py).
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, NotRequired, TypeVar, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError
from typing_extensions import TypedDict

from build_tools.core._exceptions import Problem

# Markers Miles writes for non-finite numbers, since JSON has none; Python's json writes them bare.
NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
EVENT_KINDS = ("heat_pause", "engine_death", "watchdog_kill", "ray_oom_kill", "job_end")
PROVENANCES = ("measured", "example")
# Every time of a run falls between the epoch and the end of the last year an edition may carry (_edition):
# a later one is no run of this manual, and past year 9999 not even a date Python can show.
LATEST_TIME = dt.datetime(2201, 1, 1, tzinfo=dt.UTC).timestamp()


# --- value types ------------------------------------------------------------------------------


class WrittenNonFinite(float):
    """A NaN or infinity written as such (bare, as Python's json writes it), not a number that overflowed."""


# A decimal number, as JSON or Python would print one (surrounding spaces allowed, as float() allows them).
_NUMBER_TEXT = re.compile(r"\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\s*")


def number_in_text(text: str) -> bool:
    """A number written as a string ("0.5"): refused where a mapping may hold text (a metric), never read as a
    text and so as no value. The markers "NaN", "Infinity" and "-Infinity" are how Miles writes those numbers."""
    return _NUMBER_TEXT.fullmatch(text) is not None


def _number_text(text: str) -> PydanticCustomError:
    return PydanticCustomError("number_text", "expected a number, found the string {found} (write the number without "
                                              "quotes)", {"found": _shown(text)})


def _number(value: Any) -> int | float:
    """An int or float, never a bool; the NaN/Infinity markers become floats (kept, never dropped)."""
    if isinstance(value, str) and value in NON_FINITE:
        return NON_FINITE[value]
    if isinstance(value, str) and number_in_text(value):
        raise _number_text(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("number", "expected a number, found {found}", {"found": _shown(value)})
    if isinstance(value, float):
        if isinstance(value, WrittenNonFinite):
            return float(value)
        if math.isinf(value):  # json reads 1e999 as an infinity: a number beyond a double's range
            raise PydanticCustomError("range", "is a number beyond the range of a double")
    else:
        _int64(value)
    return value


def _int64(value: int) -> int:
    """An integer within 64 bits: the dump's JSON reader refuses a longer one (load._parse_int); a source reader
    that reads text itself (a log, a CSV) checks it here."""
    if not -(2**63) <= value < 2**63:
        raise PydanticCustomError("range", "is an integer beyond 64 bits")
    return value


def _time(value: Any) -> float | int:
    """Seconds since the epoch: finite and not negative."""
    number = _number(value)
    if not math.isfinite(number) or number < 0:
        raise PydanticCustomError("time", "expected a time in seconds, finite and not negative, found {found}",
                                  {"found": _shown(value)})
    if number >= LATEST_TIME:
        raise PydanticCustomError("time", "expected a time in seconds before the year 2201 (at most "
                                  f"{LATEST_TIME:.0f}), found {{found}}", {"found": _shown(value)})
    return number


def is_time(value: Any) -> bool:
    """Whether value is a time the schemas accept (epoch seconds inside the window)."""
    try:
        _time(value)
    except PydanticCustomError:
        return False
    return True


def _duration(value: Any) -> float | int:
    """Seconds something lasted: finite, not negative, and no longer than the window every time falls in."""
    number = _number(value)
    if not (math.isfinite(number) and 0 <= number < LATEST_TIME):
        raise PydanticCustomError("duration", "expected a duration in seconds, finite, not negative and shorter "
                                  f"than {LATEST_TIME:.0f} (the epoch to 2201), found {{found}}",
                                  {"found": _shown(value)})
    return number


def _iso_date(value: Any) -> str:
    """A real calendar date written YYYY-MM-DD, kept as that text (every consumer sees one type)."""
    if isinstance(value, str) and re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        try:
            dt.date.fromisoformat(value)
            return value
        except ValueError:
            pass
    raise PydanticCustomError("date", "expected a real date written YYYY-MM-DD, found {found}",
                              {"found": _shown(value)})


def _positive(value: Any) -> float | int:
    """A finite number above 0 (a margin's fraction to warn below)."""
    number = _number(value)
    if not math.isfinite(number) or number <= 0:
        raise PydanticCustomError("positive", "expected a number above 0, found {found}", {"found": _shown(value)})
    return number


def _non_empty(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("empty", "expected a non-empty string")
    return value


def _edition(value: Any) -> str:
    if isinstance(value, str) and (match := re.fullmatch(r"([0-9]{4})\.([0-9]{2})", value)):
        year, month = int(match[1]), int(match[2])
        if 2000 <= year <= 2200 and 1 <= month <= 12:
            return value
    raise PydanticCustomError("edition", "expected YEAR.MONTH with a real month, e.g. \"2026.10\", found {found}",
                              {"found": _shown(value)})


def _commit(value: Any) -> str:
    if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{7,40}", value):
        return value
    hint = " (quote it: YAML reads a commit of digits as a number)" if isinstance(value, int) else ""
    raise PydanticCustomError("commit", "expected text of 7 to 40 hex digits, found {found}" + hint,
                              {"found": _shown(value)})


Number = Annotated[int | float, PlainValidator(_number)]
Time = Annotated[int | float, PlainValidator(_time)]
Positive = Annotated[int | float, PlainValidator(_positive)]
IsoDate = Annotated[str, PlainValidator(_iso_date)]
Text = Annotated[str, AfterValidator(_non_empty)]
Count = Annotated[int, Field(ge=0)]
Step = Annotated[int, Field(ge=0)]
# What run.yaml and meta.json count (GPUs, samples, rollouts, steps, tokens): Miles, torch and SGLang hold these in
# a C int, so a larger one is a typo, never a run (YAML reads 10**23 as an int as readily as 8).
MOST_COUNT = 2**31 - 1
Whole = Annotated[int, Field(ge=1, le=MOST_COUNT)]
# The largest model a run may name: ten trillion parameters, five times the largest ever trained.
MOST_PARAMETERS = 10**13
# Memory of one machine, in GiB or GB: a pebibyte is far beyond any.
MOST_MEMORY = 2**20
Duration = Annotated[int | float, PlainValidator(_duration)]
Edition = Annotated[str, PlainValidator(_edition)]
Commit = Annotated[str, PlainValidator(_commit)]
# A phase still open when written has t1 == -1; any other end is a time.
def _phase_end(value: Any) -> int | float:
    return value if _number(value) == -1 else _time(value)


PhaseEnd = Annotated[int | float, PlainValidator(_phase_end)]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_STRICT = ConfigDict(strict=True, extra="forbid", frozen=True)


class Schema(BaseModel):
    """A mapping of known fields: strict types, unknown keys refused."""

    model_config = _STRICT


# --- run.yaml ---------------------------------------------------------------------------------


class Model(Schema):
    name: Text
    size: Text
    parameters: Annotated[int, Field(gt=0, le=MOST_PARAMETERS)]


class Miles(Schema):
    image: Text
    branch: Text
    commit: Commit
    commit_date: IsoDate


class SetupHardware(Schema):
    """The machine every run of the manual ran on (run.yaml's hardware, less the GPUs a run's phases name)."""

    machine: Text
    chip: Text
    memory_gib: Annotated[Number, Field(gt=0, le=MOST_MEMORY)]
    memory_gb: Annotated[Number, Field(gt=0, le=MOST_MEMORY)]
    memory_pools: Whole


class Hardware(SetupHardware):
    """run.yaml's hardware: the manual's machine, and how many GPUs the run used."""

    gpus: Whole


class Flags(Schema):
    """The Miles launch flags the manual reads (underscored, as meta.json's args spell them)."""

    n_samples_per_prompt: Whole | None = None
    rollout_batch_size: Whole | None = None
    over_sampling_batch_size: Whole | None = None
    rollout_max_response_len: Whole | None = None
    num_rollout: Whole | None = None
    num_steps_per_rollout: Whole | None = None
    global_batch_size: Whole | None = None
    wandb_always_use_train_step: bool | None = None
    colocate: bool | None = None
    offload_train: bool | None = None
    offload_rollout: bool | None = None
    offload_rollout_level: list[str] | None = None
    offload_train_target: Literal["cpu", "disk"] | None = None
    rollout_top_p: Annotated[Number, Field(ge=0, le=1)] | None = None
    rollout_top_k: Annotated[int, Field(ge=-1, le=MOST_COUNT)] | None = None  # Miles' default -1: no top-k
    deterministic_mode: bool | None = None
    true_on_policy_mode: bool | None = None
    sglang_enable_deterministic_inference: bool | None = None
    sglang_attention_backend: str | None = None
    sglang_watchdog_timeout: Duration | None = None
    dynamic_sampling_filter_path: str | None = None
    use_fault_tolerance: bool | None = None
    rollout_health_check_interval: Duration | None = None
    rollout_health_check_timeout: Duration | None = None
    rollout_health_check_first_wait: Duration | None = None
    entropy_coef: Number | None = None
    hf_checkpoint: str | None = None
    use_miles_dashboard: bool | None = None
    dump_details: str | None = None
    # What a whole launch command needs that meta.json does not keep: the trainer, the prompts, the reward.
    train_backend: Literal["megatron", "fsdp"] | None = None
    prompt_data: str | None = None
    input_key: str | None = None
    label_key: str | None = None
    apply_chat_template: bool | None = None
    rm_type: str | None = None
    custom_rm_path: str | None = None


class Lab(Schema):
    """Facts of the lab's setup that Miles does not record."""

    heat_guard: bool | None = None
    ray_memory_usage_threshold: Annotated[Number, Field(gt=0, le=1)] | None = None
    trainer_bytes_per_parameter: Annotated[Number, Field(gt=0)] | None = None
    sampling_replay: bool | None = None


class RunYaml(Schema):
    """runs/<run-id>/run.yaml: what the run was."""

    run_id: Text  # must be the run folder's name (checked by the loader); Miles' run_name may be anything
    provenance: Literal["measured", "example"]
    title: Text
    date: IsoDate
    tags: list[Text]
    seed: Annotated[int, AfterValidator(_int64)]
    model: Model
    dataset: Text
    miles: Miles
    hardware: Hardware
    flags: Flags
    lab: Lab


# --- the dashboard dump -----------------------------------------------------------------------


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


def _scalar(value: Any) -> int | float | str | bool:
    if isinstance(value, str):
        if number_in_text(value):
            raise _number_text(value)
        return NON_FINITE.get(value, value)
    return value if isinstance(value, bool) else _number(value)


Scalar = Annotated[int | float | str | bool, PlainValidator(_scalar)]

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


def _source_time(value: Any) -> float | int:
    """A time a source gives, or NaN where it printed none (a CSV, a log line before any timestamp); a NaN
    written as the time itself (WrittenNonFinite) is refused as the dump refuses it."""
    if isinstance(value, float) and math.isnan(value) and not isinstance(value, WrittenNonFinite):
        return value
    return _time(value)


# A source reads its own text (a log, a CSV), not through the dump's JSON reader that refuses an integer
# beyond 64 bits: its whole numbers are checked here.
SourceStep = Annotated[Step, AfterValidator(_int64)]
SourceCount = Annotated[Count, AfterValidator(_int64)]


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


# --- the manual's own files -------------------------------------------------------------------


class MilesStamp(Schema):
    image: Text
    branch: Text
    commit: Commit
    commit_date: IsoDate


class EditionYaml(Schema):
    """edition.yml: the edition this build makes, the stamp on every page."""

    edition: Edition
    date: IsoDate
    miles: MilesStamp
    warn_margin: Positive | None = None  # `manual check` warns of a claim whose margin's fraction is below it


class RunSet(Schema):
    """A named predicate on run.yaml: any of these tags, and every dotted field equal to its value."""

    tags: list[Text] = []
    where: dict[str, int | float | str | bool | None] = {}


STATS = ("range", "all_zero", "first_step", "median", "median_head", "every_step")


class MetricRow(Schema):
    """A row of the Metrics page; a table with a value column needs runs, stat and wording in each row."""

    metric: Text
    meaning: Text
    runs: Text | None = None
    stat: Literal[STATS] | None = None  # type: ignore[valid-type]
    wording: Text | None = None
    otherwise: Text | None = None
    decimals: Annotated[int, Field(ge=0, le=6)] = 2
    head: Whole | None = None
    head_decimals: Annotated[int, Field(ge=0, le=6)] | None = None
    code: bool | None = None


class MetricTable(Schema):
    title: Text
    column: Text | None = None
    rows: list[MetricRow]
    after: Text | None = None

    @model_validator(mode="after")
    def _rows_fill_the_column(self) -> MetricTable:
        for index, row in enumerate(self.rows):
            for name in ("runs", "stat", "wording"):
                if self.column and getattr(row, name) is None:
                    raise PydanticCustomError("row", "row {index} ({metric}) has no {name}, which a table with "
                                              "the column {column!r} needs",
                                              {"index": index, "metric": row.metric, "name": name,
                                               "column": self.column})
        return self


class MetricsYaml(Schema):
    """docs/data/metrics.yml: the Metrics page as data (rows, run sets, how each cell is computed)."""

    run_sets: dict[str, RunSet]
    intro_runs: Text
    tables: list[MetricTable]


class ShortSymptom(Schema):
    """A symptom's short forms, a few words each, for figure 7.1's quick-reference chart."""

    symptom: Text
    check: Text
    fix: Text


class Symptom(Schema):
    symptom: Text
    check: Text
    fix: Text
    short: ShortSymptom | None = None


class TroubleshootingYaml(Schema):
    """docs/data/troubleshooting.yml: the symptoms of chapter 7, one check and one fix each."""

    symptoms: Annotated[list[Symptom], Field(min_length=1)]


class SetupYaml(Schema):
    """docs/data/setup.yml: the manual's setup, which `make add-run` writes into a new run's run.yaml."""

    hardware: SetupHardware
    # a model's parameter count, by its name
    parameters: dict[Text, Annotated[int, Field(ge=1, le=MOST_PARAMETERS)]] = {}


# docs/data/<name>.yml -> its schema; a data file with no schema here is refused.
DATA_TABLES: dict[str, type[Schema]] = {"metrics": MetricsYaml, "troubleshooting": TroubleshootingYaml,
                                        "setup": SetupYaml}


class FigureBlockYaml(Schema):
    """A ```figure block of a chapter (docs/README.md documents each field)."""

    id: Annotated[str, Field(pattern=r"^fig-[a-z0-9-]+$")]
    module: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]*$")]
    runs: list[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")]]
    claim: Text
    checks: Annotated[list[dict[str, Any]], Field(min_length=1)]
    alt: Text | None = None
    tables: list[Text] | None = None
    options: dict[str, Any] | None = None
    prose: list[Text] | None = None


def _hex(value: Any) -> str:
    if isinstance(value, str) and re.fullmatch(r"#[0-9a-fA-F]{6}", value):
        return value.lower()
    raise PydanticCustomError("hex", "expected a colour as #rrggbb, found {found}", {"found": _shown(value)})


def _grey(value: Any) -> str:
    colour = _hex(value)
    if not colour[1:3] == colour[3:5] == colour[5:7]:
        raise PydanticCustomError("grey", "expected a grey (equal red, green and blue), found {found}",
                                  {"found": _shown(value)})
    return colour


Hex = Annotated[str, PlainValidator(_hex)]
Grey = Annotated[str, PlainValidator(_grey)]


class PaletteRole(Schema):
    name: Text
    colour_name: Text
    phrase: Text
    hex: Hex
    dark: Hex  # the role's shade in the dark scheme
    meaning: Text


class PaletteYaml(Schema):
    """figures/palette.yml: the role colours and the neutral greys (the one place a colour is defined); the
    dark scheme's shade of each, a neutral's at the same position of dark_neutrals."""

    roles: list[PaletteRole]
    neutrals: Annotated[list[Grey], Field(min_length=1)]
    dark_neutrals: Annotated[list[Grey], Field(min_length=1)]


def same_setting(actual: Any, wanted: Any) -> bool:
    """Two values of a run.yaml field or launch flag are the same: numbers by value (1024 == 1024.0),
    true and false only as themselves (true is not 1), anything else exactly. The one rule of the build."""
    if isinstance(actual, bool) or isinstance(wanted, bool):
        return actual is wanted
    if isinstance(actual, int | float) and isinstance(wanted, int | float):
        return float(actual) == float(wanted)
    return bool(actual == wanted)


# --- errors -----------------------------------------------------------------------------------

M = TypeVar("M", bound=BaseModel)


def validate(schema: type[M], data: Any, where: str,
             line_of: Callable[[tuple[Any, ...]], int | None]) -> tuple[M | None, list[Problem]]:
    """data checked against schema: (the model, []) or (None, one problem per wrong field)."""
    try:
        return schema.model_validate(data), []
    except ValidationError as error:
        return None, problems_of(error, where, line_of, schema)


def problems_of(error: ValidationError, where: str, line_of: Callable[[tuple[Any, ...]], int | None],
                schema: Any) -> list[Problem]:
    """pydantic's errors as the build's problems, one per field (a union's alternatives merged)."""
    problems: dict[tuple[Any, ...], Problem] = {}
    for item in error.errors(include_url=False):
        # An unknown key is the last part of its location whatever it is called ("int", "a[0]").
        loc = _field_path(item["loc"][:-1]) + item["loc"][-1:] if item["type"] == "extra_forbidden" \
            else _field_path(item["loc"])
        if loc in problems:
            continue
        field = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".") or None
        problems[loc] = Problem(where, line_of(loc), field, _message(item, loc, schema))
    return list(problems.values())


def _field_path(loc: Iterable[Any]) -> tuple[Any, ...]:
    """The fields of a pydantic location, without the names of union members and validators."""
    return tuple(part for part in loc if isinstance(part, int) or not (part in _MEMBER_NAMES or _TAG.match(part)))


_TAG = re.compile(r"^[a-z][a-z-]*\[.*\]$")  # pydantic's name of a validator or a union member


_MEMBER_NAMES = {"int", "float", "str", "bool", "none", "list", "dict", "literal", "nullable", "function-plain",
                 "function-after", "function-before", "constrained-int", "constrained-float"}

_PATTERN_WORDS = {
    r"^fig-[a-z0-9-]+$": "fig-<lower-case letters, digits, dashes>",
    r"^[a-z_][a-z0-9_]*$": "a module name under figures/ (lower-case letters, digits, _)",
    r"^[a-z0-9][a-z0-9.-]*$": "a run id (lower-case letters, digits, '.', '-')",
}

_EXPECTED = {
    "int_type": "a whole number", "int_from_float": "a whole number", "float_type": "a number",
    "string_type": "a string", "bool_type": "true or false", "list_type": "a list", "dict_type": "a mapping",
    "model_type": "a mapping of fields", "model_attributes_type": "a mapping of fields",
    "typed_dict_type": "a JSON object", "int_parsing": "a whole number", "none_required": "nothing (null)",
}


def _message(item: Any, loc: tuple[Any, ...], schema: Any) -> str:
    kind, found = item["type"], _shown(item.get("input"))
    if kind == "missing":
        return f"missing (expected {expected_of(schema, loc)})"
    if kind == "extra_forbidden":
        return "unknown field" + _did_you_mean(schema, loc)
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, found {found}"
    if kind == "literal_error":
        return f"expected {item['ctx']['expected']}, found {found}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        sign = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[kind]
        bound = next(iter(item["ctx"].values()))
        return f"expected a value {sign} {bound}, found {found}"
    if kind == "string_pattern_mismatch":
        pattern = item["ctx"]["pattern"]
        return f"expected {_PATTERN_WORDS.get(pattern, f'text matching {pattern}')}, found {found}"
    return item["msg"] if "found" in item["msg"] else f"{item['msg']}, found {found}"


def _fields_at(schema: Any, loc: tuple[Any, ...]) -> dict[str, Any]:
    """The declared fields (name -> annotation) of the mapping that holds loc's last part."""
    node = schema
    for part in loc[:-1]:
        fields = _declared(node)
        if isinstance(part, int) or part not in fields:
            node = _inner(node)
            continue
        node = _inner(fields[part])
    return _declared(node)


def _declared(node: Any) -> dict[str, Any]:
    if isinstance(node, type) and issubclass(node, BaseModel):
        return {name: Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
                for name, info in node.model_fields.items()}
    if hasattr(node, "__annotations__") and hasattr(node, "__total__"):
        return dict(node.__annotations__)
    return {}


def _inner(annotation: Any) -> Any:
    """Unwrap Optional, Annotated and list[...] down to the type that has fields."""
    for _ in range(5):
        if _declared(annotation):
            return annotation
        args = [a for a in get_args(annotation) if a is not type(None)]
        if not args:
            return annotation
        annotation = args[0]
    return annotation


def _did_you_mean(schema: Any, loc: tuple[Any, ...]) -> str:
    if not loc:
        return ""
    known = sorted(_fields_at(schema, loc))
    if not known:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f" (expected one of: {', '.join(known)})" if len(known) <= 12 else " (runs/README.md lists the fields)"


def expected_of(schema: Any, loc: tuple[Any, ...]) -> str:
    """A person's words for the type of the field at loc: 'a whole number', 'a date YYYY-MM-DD', ..."""
    return describe(_fields_at(schema, loc).get(str(loc[-1]) if loc else "", Any))


def describe(annotation: Any) -> str:
    """A person's words for an annotation (also used to write and test runs/README.md's tables)."""
    words = {int: "a whole number", float: "a number", str: "a string", bool: "true or false", Any: "any value"}
    if annotation in words:
        return words[annotation]
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        for meta in annotation.__metadata__:
            if isinstance(meta, PlainValidator | AfterValidator) and meta.func in _VALIDATOR_WORDS:
                return _VALIDATOR_WORDS[meta.func] + _bounds(annotation.__metadata__)
        return describe(args[0]) + _bounds(annotation.__metadata__)
    if origin is NotRequired:
        return f"{describe(args[0])} (may be left out)"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is list:
        return f"a list of {describe(args[0]).removeprefix('a ').removeprefix('an ')}s" if args else "a list"
    if origin is dict:
        return "a mapping"
    if type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return f"{describe(rest[0])}, or null" if len(rest) == 1 else "a value, or null"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "a mapping of fields"
    return "a value"


_VALIDATOR_WORDS: dict[Callable[..., Any], str] = {
    _number: "a number", _time: "a time (epoch seconds)", _iso_date: "a date YYYY-MM-DD", _edition: "YEAR.MONTH",
    _commit: "text of 7 to 40 hex digits", _int64: "a whole number within 64 bits", _non_empty: "a non-empty string",
    _phase_end: "a time, or -1 while open",
    _scalar: "a number, string or true/false", _duration: "a duration in seconds",
    _source_time: "a time (epoch seconds), or NaN where none was printed", _hex: "a colour #rrggbb",
    _grey: "a grey #rrggbb",
}


def _bounds(metadata: Iterable[Any]) -> str:
    """' >= 0', ' > 0 <= 1': the bounds annotated_types put on a field, in words."""
    words = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
    flat = [x for m in metadata for x in (getattr(m, "metadata", None) or [m])]  # a Field(...) holds its own
    found = [f" {sign} {getattr(m, name)}" for m in flat for name, sign in words.items()
             if type(m).__name__ == name.capitalize()]
    return "".join(found)


# --- the schemas as documentation --------------------------------------------------------------


def field_rows(schema: Any, prefix: str = "") -> list[tuple[str, str]]:
    """(dotted field, its type in words) for every field of a schema, nested mappings spelled out;
    runs/README.md's tables list exactly these (tests/test_schemas.py)."""
    rows: list[tuple[str, str]] = []
    for name, annotation in _declared(schema).items():
        inner = _inner(annotation)
        if isinstance(inner, type) and issubclass(inner, BaseModel) and inner is not schema:
            rows += field_rows(inner, f"{prefix}{name}.")
        else:
            rows.append((f"{prefix}{name}", describe(annotation)))
    return rows
