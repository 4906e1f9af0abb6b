"""Stage 1: load every run directory under runs/, in every form Miles writes, and validate it.

Every file is checked against its schema (build_tools/ingest/schemas_run.py, schemas_dump.py). All problems of
all runs are collected; the stage then fails once with the whole list.

A stream's files are read as columns where they can be (stream_columns.py), else line by line
(stream_lines.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from build_tools.core._exceptions import InputProblem, Problem, RunDataError, display_path
from build_tools.core._files import (
    FileStat,
    by_name,
    check_tree,
    confined,
    read_text,
    scan_runs,
)
from build_tools.core._layout import DASHBOARD_DOCUMENTS, DASHBOARD_STREAMS, JSONL, LAB_STREAMS, PARTITIONED
from build_tools.core._types import Record, RunData
from build_tools.core._yaml import parse_yaml
from build_tools.ingest import _columnar, schemas, schemas_dump, schemas_run
from build_tools.ingest.stream_columns import _ColumnReader
from build_tools.ingest.stream_lines import _parse_json, _read_stream

RUN_ID = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
PARTITION = re.compile(r"^(?P<hour>[0-9]{8}_[0-9]{2})\.jsonl(\.gz)?$")
LAB_ONLY = "{}: only lab/, no Miles output (a dashboard dump, a log, ...): the run has no steps"
# A run's records may start a little before the day its run.yaml names (a job launched before midnight).
DATE_SLACK = dt.timedelta(days=1)


def run_folders(runs_dir: Path, problems: list[Problem],
                listings: dict[str, list[FileStat]] | None = None) -> list[Path]:
    """The run directories under runs_dir, after checking that nothing in it leads outside the project.

    `listings`, when given, receives the plain files of each run folder found in that same walk (paths
    relative to the run folder, sizes, times, inodes): what a warm check compares instead of reading."""
    if not runs_dir.is_dir():
        problems.append(Problem(display_path(runs_dir), None, None, "no runs folder"))
        return []
    found, listed = scan_runs(runs_dir, runs_dir.resolve().parent)
    problems += found
    if listings is not None:
        listings.update(listed)
    bad = {Path(p.file) for p in problems}
    folders = [path for path in sorted(runs_dir.iterdir())
               if path.is_dir() and not (bad and Path(display_path(path)) in bad) and path.name != "__pycache__"]
    if not folders and not problems:
        problems.append(Problem(display_path(runs_dir), None, None, "no run directories found"))
    return folders


def load_runs(runs_dir: Path) -> list[RunData]:
    """Load every run under runs_dir; raise RunDataError listing every problem found in any of them."""
    problems: list[Problem] = []
    runs = [load_run(path, problems) for path in run_folders(runs_dir, problems)]
    if problems:
        raise RunDataError(problems)
    return runs


# Called with a run and the name of a sampled stream (_columnar.FLAT_STREAMS) as soon as the stream is read whole:
# summary._read_run makes its series and writes it to the cache entry there and then, so that one stream's
# samples at a time are in memory, not every stream's (the hook takes the stream: run.taken).
SampledHook = Callable[[RunData, str], None]


def load_run(root: Path, problems: list[Problem], *, keep: bool = True, columns_from: float | None = None,
             on_sampled: SampledHook | None = None, named_by_file: bool = False) -> RunData:
    """Load one run directory, appending what is wrong with it to problems. Its streams are reached through
    `records` (every record) whichever reader read them; a run with other sources than the dump has its metrics
    and phases as records (sources.merge checks each against the other sources'). `keep=False` is for a run
    only validated: every line is checked, but of a sampled stream (_columnar.FLAT_STREAMS) only the time of its
    last sample is kept (memory bounded by a batch, not by the run's hours of telemetry). `columns_from`: the
    bytes of a stream from which it is read as columns (None: _columnar.FAST_FROM_BYTES; 0: every stream that
    can be; math.inf: none), the same records and problems either way. `on_sampled` (SampledHook) is called for
    each sampled stream as it is read while the run has no problem, in a run with no other sources than the dump
    (theirs are merged into the streams after). `named_by_file`: a reader's run, whose folder may have any name
    (a copy, a job's output folder): its id is run.yaml's run_id, so a claim about it survives a renamed folder."""
    run_id = root.name
    if named_by_file:
        run_id = _own_id(root / "run.yaml") or run_id
    if not RUN_ID.match(run_id):
        problems.append(Problem(display_path(root), None, None,
                                f"run id {run_id!r} is not a plain name (lower-case letters, digits, '.', '-')"))
    from build_tools.ingest import (
        sources,  # log/, tensorboard/, wandb/, ci_history/, events/ (build_tools/ingest/sources/)
    )

    config, lines = _load_run_yaml(root / "run.yaml", run_id, problems)
    # What `manual record` wrote, and no Miles output yet: read, and said.
    lab_only = (root / "lab").is_dir() and not (root / "dashboard").is_dir() and not sources.source_files(root)
    meta = _load_meta(root / "dashboard" / "meta.json", problems) if sources.has_dump(root) and not lab_only else {}
    run = RunData(run_id=run_id, root=root, config=config, meta=meta)
    if lab_only:
        run.warnings.append(LAB_ONLY.format(display_path(root)))
    _check_flags_agree(root, config, lines, meta, problems)
    others = bool(sources.source_files(root))
    by_line = _columnar.NESTED_STREAMS if others else ()
    _read_streams(run, {root / "dashboard": DASHBOARD_STREAMS, root / "lab": LAB_STREAMS}, problems, by_line, keep,
                  columns_from, None if others or not keep else on_sampled)
    sources.add_streams(run, problems)  # the other sources' streams, checked against the dump's
    return run


def load_dump(dashboard: Path, problems: list[Problem]) -> RunData:
    """A bare Miles dashboard dump (no run.yaml, no lab/), e.g. a reader's own run to compare with the manual.

    Its configuration is what Miles recorded: meta.json's args as the flags, provenance measured. Its metrics
    and phases are records (its readers read each one).
    """
    problems += check_tree(dashboard, dashboard)
    if problems:
        return RunData(run_id=dashboard.name, root=dashboard, config={}, meta={})
    meta = _load_meta(dashboard / "meta.json", problems)
    recorded = meta.get("args")
    args = recorded if isinstance(recorded, dict) else {}
    checkpoint = str(args.get("hf_checkpoint") or "").rstrip("/")
    config: dict[str, Any] = {"run_id": str(meta.get("run_name", dashboard.name)), "provenance": "measured", "tags": [],
              "model": {"name": checkpoint.rsplit("/", 1)[-1] or "not recorded"}, "flags": dict(args), "lab": {}}
    run = RunData(run_id=config["run_id"], root=dashboard, config=config, meta=meta)
    _read_streams(run, {dashboard: DASHBOARD_STREAMS}, problems, _columnar.NESTED_STREAMS)
    return run


@contextlib.contextmanager
def readable(path: Path) -> Iterator[None]:
    """A bare path the sources cannot be looked for in (/proc, a folder it may not enter) is one problem naming
    it and what could not be read, never a traceback (`manual show`, `make compare`)."""
    try:
        yield
    except OSError as error:
        what = display_path(error.filename) if error.filename else display_path(path)
        reason = error.strerror or type(error).__name__
        raise RunDataError([Problem(display_path(path), None, None,
                                    f"cannot read {what} ({reason}): expected a run id of runs/, a run folder, or "
                                    "a file or folder of Miles output that can be read")]) from None


MILES_OUTPUT = ("a dashboard dump (meta.json), a log (*.log, *.txt), a wandb export (*.csv, *.jsonl), TensorBoard "
                "event files, a CI history record, --dump-details event files, an MLflow run's folder "
                "(mlruns/<experiment id>/<run id>/), or a lab/ folder `manual record` wrote")


def nothing_read(path: Path, what: str = "record") -> Problem:
    """A bare path whose files gave no `what` (record, metric) a run is made of: an empty file, or files that hold
    none (`make add-run`, `make compare` refuse it rather than add or judge a run with nothing in it)."""
    empty = path.is_file() and path.stat().st_size == 0
    found = "empty" if empty else f"no {what} read from it"
    return Problem(display_path(path), None, None, f"{found}: expected {MILES_OUTPUT}")


def load_path(path: Path, problems: list[Problem]) -> tuple[RunData, dict[str, list[Path]]]:
    """A run folder (with run.yaml), a dashboard dump, or a bare path holding any of the sources, loaded: only the
    plain files inside it are read (a link out of it, a FIFO or a device is a problem naming it, and nothing of
    it is read, `_files.open_regular`)."""
    with confined(path):
        return _load_path(path, problems)


def _load_path(path: Path, problems: list[Problem]) -> tuple[RunData, dict[str, list[Path]]]:
    from build_tools.ingest import sources

    warnings: list[str] = []
    if (path / "run.yaml").is_file():
        run = load_run(path, problems, named_by_file=True)
        found = {"dashboard": [path / "dashboard"]} if (path / "dashboard").is_dir() else {}
        found.update({k: v for k, v in sources.source_files(path).items() if v})
        return run, found
    found = sources.classify(path, warnings, problems)
    lab = path / "lab" if path.is_dir() and (path / "lab").is_dir() else None  # what `manual record` writes
    if not found and lab is None:
        problems.append(Problem(display_path(path), None, None, f"found no Miles output: expected {MILES_OUTPUT}"))
        run = RunData(run_id=path.name, root=path, config=_bare_config(path.name, {}), meta={})
        return run, found
    if "dashboard" in found:
        run = load_dump(found["dashboard"][0], problems)
    else:
        run_id = path.name.split(".")[0] if path.is_file() else path.name
        run = RunData(run_id=run_id, root=path, config={}, meta={})
    run.warnings += warnings
    if lab is not None:
        _read_streams(run, {lab: LAB_STREAMS}, problems)
        if not found:
            run.warnings.append(LAB_ONLY.format(display_path(path)))
        found["lab"] = [lab]
    founds = [read(found[name], problems, run.warnings) for name, read in sources.READERS.items() if found.get(name)]
    sources.merge(run, founds, problems)
    if "dashboard" not in found:
        run.config = _bare_config(run.run_id, run.meta.get("args") or {})
    return run, found


def _bare_config(run_id: str, args: dict[str, Any]) -> dict[str, Any]:
    checkpoint = str(args.get("hf_checkpoint") or "").rstrip("/")
    return {"run_id": run_id, "provenance": "measured", "tags": [],
            "model": {"name": checkpoint.rsplit("/", 1)[-1] or "not recorded"}, "flags": dict(args), "lab": {}}


def records(run: RunData, stream: str) -> list[Record]:
    """Every record of a stream in file order, whichever reader read its lines: the one way to a run's records
    (`manual show`, the summary's record path). A file read as columns is read again line by line, so that each
    value is as written (an integer the columns hold as a float, the order of a line's metrics); the columns
    accepted its every line, so it has no problem to tell."""
    if stream in run.taken:  # a bug: its records are asked for after the summary freed them
        raise RuntimeError(f"the summary of {run.run_id} took its {stream} stream; read its records before")
    batches = run.tables.get(stream)
    kept = run.streams.get(stream, [])
    if not batches:
        return kept
    as_columns = {path for columns in batches for path in columns.files}
    by_file: dict[str, list[Record]] = {}
    for record in kept:
        by_file.setdefault(record.file, []).append(record)
    found: list[Record] = []
    for path in run.files.get(stream, []):
        found += _read_stream(path, stream, [], []) if path in as_columns else by_file.pop(display_path(path), [])
    return found + [record for records in by_file.values() for record in records]  # not from a file of its own


def stream_names(run: RunData) -> list[str]:
    """The streams the run has, however they were read, in the order they were read."""
    return list(dict.fromkeys([*run.streams, *run.tables]))


def time_problems(where: str, config: dict[str, Any], first: float, last: float,
                  latest: dt.date | None) -> list[Problem]:
    """A run whose records start days before its run.yaml date, or end after the edition's date."""
    problems = []
    date = config.get("date")
    if isinstance(date, str) and math.isfinite(first):
        start = dt.datetime.fromtimestamp(first, dt.UTC)
        if start.date() < dt.date.fromisoformat(date) - DATE_SLACK:
            problems.append(Problem(where, None, "date", f"is {date}, but the run's records start on "
                                                         f"{start:%Y-%m-%d %H:%M} UTC (expected the day it ran)"))
    if latest is not None and math.isfinite(last):
        end = dt.datetime.fromtimestamp(last, dt.UTC)
        if end.date() > latest + DATE_SLACK:
            problems.append(Problem(where, None, None, f"the run's records end on {end:%Y-%m-%d %H:%M} UTC, after "
                                                       f"the edition's date {latest} (edition.yml date)"))
    return problems


def _read_streams(run: RunData, folders: dict[Path, tuple[str, ...]], problems: list[Problem],
                  by_line: tuple[str, ...] = (), keep: bool = True, columns_from: float | None = None,
                  on_sampled: SampledHook | None = None) -> None:
    """Every stream of the folders into run: as columns where it can be (_columnar.py), else line by line; each
    sampled one handed to `on_sampled` once read."""
    fast_from = _columnar.FAST_FROM_BYTES if columns_from is None else columns_from
    for name, files in _stream_files(folders, problems):
        run.streams[name] = []
        run.files[name] = files
        if _columnar.columnar(name) and name not in by_line and math.isfinite(fast_from):
            _ColumnReader(run, name, problems, keep, fast_from).read(files)
        else:
            for path in files:
                run.streams[name] += _read_stream(path, name, problems, run.warnings)
        if not keep and name in _columnar.FLAT_STREAMS:
            _keep_last_sample(run, name)
        elif on_sampled is not None and name in _columnar.FLAT_STREAMS and not problems:
            on_sampled(run, name)  # (a run already refused keeps its streams: it is not summarised)


def _keep_last_sample(run: RunData, stream: str) -> None:
    """A sampled stream of a run only validated: its samples dropped, the time of its last one kept (the run's
    window, as its summary's facts give it, ends with it)."""
    times = [float(rec.data["ts"]) for rec in run.streams.pop(stream, []) if rec.data.get("ts") is not None]
    if stream in run.last_samples:
        times.append(run.last_samples[stream])
    times = [time for time in times if not math.isnan(time)]
    if times:
        run.last_samples[stream] = max(times)
    else:
        run.last_samples.pop(stream, None)


# --- run.yaml and meta.json -------------------------------------------------------------------


def _own_id(path: Path) -> str | None:
    """run.yaml's run_id when it is a plain name (its problems, if any, are reported when it is read whole)."""
    try:
        found = re.search(r"^run_id:[ \t]*['\"]?([a-z0-9][a-z0-9.-]*)['\"]?[ \t]*$", read_text(path), re.MULTILINE)
    except (OSError, InputProblem, UnicodeDecodeError):
        return None
    return found[1] if found else None


def _load_run_yaml(path: Path, run_id: str, problems: list[Problem]) -> tuple[dict[str, Any], Any]:
    """run.yaml as plain data, and where its keys are (for messages)."""
    where = display_path(path)
    if not path.is_file():
        problems.append(Problem(where, None, None, "missing: every run needs a run.yaml (see runs/README.md)"))
        return {}, None
    try:
        doc = parse_yaml(read_text(path), where)
    except InputProblem as error:
        problems.append(error.problem)
        return {}, None
    if not isinstance(doc.value, dict):
        problems.append(Problem(where, 1, None, "expected a mapping of fields (runs/README.md)"))
        return {}, None
    _, found = schemas.validate(schemas_run.RunYaml, doc.value, where, doc.line_of)
    problems += found
    if not found:
        problems += _dated_after_commit(doc.value, where, doc.line_of)
    if isinstance(doc.value.get("run_id"), str) and doc.value["run_id"] != run_id:
        problems.append(Problem(where, doc.line_of(("run_id",)), "run_id",
                                f"expected {run_id!r}, the name of the run's directory, "
                                f"found {doc.value['run_id']!r}"))
    return doc.value, doc


read_run_yaml = _load_run_yaml  # `manual watch` checks a run.yaml it follows by the loader's own rules


def _dated_after_commit(config: dict[str, Any], where: str, line_of: Any) -> list[Problem]:
    """A run cannot use a Miles commit from its future: its date is on or after miles.commit_date."""
    date, commit_date = str(config["date"]), str(config["miles"]["commit_date"])
    if dt.date.fromisoformat(date) >= dt.date.fromisoformat(commit_date):
        return []
    return [Problem(where, line_of(("date",)), "date", f"is {date}, before the date of the Miles commit it names "
                                                       f"({commit_date}, miles.commit_date): a run cannot use a "
                                                       "commit from its future")]


def _load_meta(path: Path, problems: list[Problem]) -> dict[str, Any]:
    """meta.json as written; its run_name is Miles' (`wandb_group or "miles-run"`), kept and shown, never the run
    id (the run's folder name)."""
    where = display_path(path)
    if not path.is_file():
        problems.append(Problem(where, None, None, "missing: copy the run's Miles dashboard dump into dashboard/"))
        return {}
    try:
        meta = _parse_json(read_text(path), where, 1)
    except InputProblem as error:
        problems.append(error.problem)
        return {}
    if not isinstance(meta, dict):
        problems.append(Problem(where, 1, None, "expected a JSON object"))
        return {}
    _, found = schemas.validate(schemas_dump.Meta, meta, where, lambda loc: None)
    if isinstance(args := meta.get("args"), dict):  # the flags the manual reads, typed as in run.yaml
        _, wrong = schemas.validate(schemas_dump.MilesArgs, args, where, lambda loc: None)
        found += [dataclasses.replace(problem, field=f"args.{problem.field}") for problem in wrong]
        found += schemas_dump.arg_problems(args, where) + schemas_dump.meta_key_problems(args, where)
    problems += found
    return meta if not found else {k: v for k, v in meta.items() if k != "start_ts" or _is_timestamp(v)}


read_meta = _load_meta  # `manual watch` checks a meta.json it follows by the loader's own rules


def _is_timestamp(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _check_flags_agree(root: Path, config: dict[str, Any], doc: Any, meta: dict[str, Any],
                       problems: list[Problem]) -> None:
    """What Miles recorded (meta.json args) and what run.yaml says must agree: every shared flag, and the model."""
    flags, args = config.get("flags"), meta.get("args")
    where = display_path(root / "run.yaml")
    if isinstance(flags, dict):  # its flags become a launch command's too (pages/commands.py)
        for problem in schemas_dump.arg_problems(flags, where):
            name = str(problem.field).removeprefix("args.")
            problems.append(replace(problem, field=f"flags.{name}", line=doc.line_of(("flags", name)) if doc else None))
    if not isinstance(flags, dict) or not isinstance(args, dict):
        return
    for name in sorted(set(flags) & set(args)):
        if not schemas.same_setting(flags[name], args[name]):
            problems.append(Problem(where, doc.line_of(("flags", name)) if doc else None, f"flags.{name}",
                                    f"is {flags[name]!r}, but dashboard/meta.json args say {args[name]!r}"))
    # A hub checkpoint name (owner/model, e.g. Qwen/Qwen3-0.6B) names the model; a local path need not.
    checkpoint = str(args.get("hf_checkpoint") or "")
    model = config["model"].get("name") if isinstance(config.get("model"), dict) else None
    if checkpoint.count("/") == 1 and isinstance(model, str) and checkpoint.split("/")[1] != model:
        problems.append(Problem(where, doc.line_of(("model", "name")) if doc else None, "model.name",
                                f"is {model!r}, but dashboard/meta.json args say hf_checkpoint {checkpoint!r}"))


# --- streams ----------------------------------------------------------------------------------


def _stream_files(folders: dict[Path, tuple[str, ...]], problems: list[Problem]) -> Iterator[tuple[str, list[Path]]]:
    """Every known stream of the folders with its files, hourly partitions and flat files alike."""
    found: dict[str, list[Path]] = {}
    for base, streams in folders.items():
        if not base.is_dir():
            continue
        for path in sorted(base.iterdir()):
            if streams is DASHBOARD_STREAMS and path.name in DASHBOARD_DOCUMENTS:
                continue
            stream = _stream_of(path, streams)
            if stream is None:
                problems.append(Problem(display_path(path), None, None,
                                        f"unknown stream; expected one of {sorted(streams)} (runs/README.md)"))
                continue
            found.setdefault(stream, []).extend(_partition_files(path, problems))
    for files in found.values():
        problems += _twins(files)
    for name in sorted(found):
        yield name, found[name]


def _twins(files: list[Path]) -> list[Problem]:
    """One stream, one file: `x.jsonl` beside `x.jsonl.gz` would be read twice."""
    by_plain: dict[str, list[Path]] = {}
    for path in files:
        by_plain.setdefault(str(path).removesuffix(".gz"), []).append(path)
    return [Problem(display_path(pair[-1]), None, None,
                    f"the same stream file twice: {pair[0].name} and {pair[1].name}; keep one of them")
            for pair in by_plain.values() if len(pair) > 1]


def _stream_of(path: Path, streams: tuple[str, ...]) -> str | None:
    if path.is_dir():
        return path.name if path.name in streams and path.name in PARTITIONED else None
    match = JSONL.match(path.name)
    return match["stream"] if match and match["stream"] in streams else None


def _partition_files(path: Path, problems: list[Problem]) -> list[Path]:
    if path.is_file():
        return [path]
    files = []
    # By name, the order Paths of one folder sort in, and cheaper: 19 against 110 us for two days of hourly files.
    for part in sorted(path.iterdir(), key=by_name):
        if PARTITION.match(part.name):
            files.append(part)
        else:
            problems.append(Problem(display_path(part), None, None,
                                    "unknown file in an hourly stream; expected YYYYMMDD_HH.jsonl"))
    return files
