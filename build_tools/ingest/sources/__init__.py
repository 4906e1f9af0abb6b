"""Every other form of output a Miles run leaves besides the dashboard dump, one reader per source.

A run folder may hold, beside `dashboard/` and `lab/`, any of these sub-folders (files plain or gzipped):

| sub-folder | reader | files |
|---|---|---|
| `events/` | `events.py` | the `--dump-details` event files, `{proc}.jsonl` |
| `log/` | `log.py` | standard output and error, `*.log`, `*.txt` |
| `ci_history/` | `ci_history.py` | the CI history record, `{pid}-{uuid}.jsonl` |
| `wandb/` | `wandb.py` | a chart's CSV, `scan_history()` or `history()` rows, an offline run's `run-<id>.wandb` |
| `tensorboard/` | `tensorboard.py` | `events.out.tfevents.*` |
| `mlflow/` | `mlflow.py` | an MLflow run's folder of the file store (`mlruns/<experiment id>/<run id>/`) |

Each reader yields the records the dashboard reader yields (`metrics`, `phases`, lab `events`), so nothing
after the loader knows where a value came from, each checked by the dump's rules (`_common.checked`,
`schemas_dump.SOURCE_RECORDS`): what they refuse is a problem naming the file, the line and the field.
`add_streams` adds them to a loaded run: a metric a source already holds for the same step is checked against
it, within the precision the less precise one keeps (its printed digits; half a float32 ulp for TensorBoard; 10
decimals for a history to_json wrote), and not added twice: the more precise value is kept; phases come
from the dump when it has any; an event already in `lab/events` (same kind within a minute) is not added again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_tools.core._exceptions import Problem, display_path
from build_tools.core._files import link_out, refusal
from build_tools.core._types import Record, RunData
from build_tools.ingest import schemas_dump
from build_tools.ingest.sources import ci_history, events, log, mlflow, tensorboard, wandb
from build_tools.ingest.sources._common import (
    RENAMED,
    STEP_KEYS,
    Found,
    MetricRecord,
    agree,
    number_text,
    read_text,
    tolerance,
)

Reader = Callable[[list[Path], list[Problem], list[str]], Found]

# In order of precedence: a value read first is the one kept when a later source repeats it.
READERS: dict[str, Reader] = {"events": events.read, "log": log.read, "ci_history": ci_history.read,
                              "wandb": wandb.read, "tensorboard": tensorboard.read, "mlflow": mlflow.read}
FILES = {
    "events": re.compile(r"\.jsonl(\.gz)?$"),
    "log": re.compile(r"\.(log|txt)(\.gz)?$"),
    "ci_history": re.compile(r"\.jsonl(\.gz)?$"),
    "wandb": re.compile(r"\.(csv|jsonl)(\.gz)?$|^run-.*\.wandb(\.gz)?$"),
    "tensorboard": re.compile(r"(^|\.)tfevents\.|^events\.out\."),
    "mlflow": re.compile(r""),  # a run folder's files have any name (metrics/<key>): the reader sorts them out
}
SAME_EVENT_WITHIN_S = 60.0


def source_files(root: Path, warnings: list[str] | None = None,
                 problems: list[Problem] | None = None) -> dict[str, list[Path]]:
    """The files of each source sub-folder of a run folder, in a fixed order: those `_files.open_regular` opens
    (each it refuses, a link out of the run, a FIFO, a device, is one of `problems`, never read)."""
    found: dict[str, list[Path]] = {}
    for name, pattern in FILES.items():
        folder = root / name
        if not folder.is_dir():
            continue
        files = readable_files(folder, problems, _named(pattern))
        found[name] = [p for p in files if pattern.search(p.name)]
        if warnings is not None:
            warnings += [f"{display_path(p)}: not a file the {name} reader reads; ignored"
                         for p in files if not pattern.search(p.name)]
    return found


def _named(pattern: re.Pattern[str]) -> Callable[[Path], bool]:
    """Whether a reader reads a file, by its name."""
    return lambda path: pattern.search(path.name) is not None


def readable_files(folder: Path, problems: list[Problem] | None,
                   read: Callable[[Path], bool] = lambda path: True) -> list[Path]:
    """Every entry under folder but its sub-folders, in order. Those a reader would `read` are opened first by
    open_regular, and what it refuses (a link out of the folder `_files.confined` names, a FIFO, a device, a broken
    link) goes to problems instead, never read; the others are listed unopened (a reader ignores them, with a
    warning). A link to a folder is not entered; one out of the folder is a problem too."""
    files, refused = [], []
    for path in folder.rglob("*"):  # each looked at as the walk finds it: a folder it cannot enter stops it there
        if path.is_dir():
            problem = link_out(path) if path.is_symlink() else None
        elif not read(path):
            files.append(path)
            continue
        else:
            problem = refusal(path)
            if problem is None:
                files.append(path)
        if problem is not None:
            refused.append((path, problem))
    if problems is not None:
        problems += [problem for _, problem in sorted(refused, key=lambda found: found[0])]
    return sorted(files)


def has_dump(root: Path) -> bool:
    """Whether the loader should ask for dashboard/meta.json: a dump is there, or there is nothing else."""
    return (root / "dashboard").is_dir() or not source_files(root)


def add_streams(run: RunData, problems: list[Problem]) -> None:
    """Read the run folder's other sources into run.streams, checked against what is already there."""
    check_placeholders(run.root / "run.yaml", run.config, problems)
    warn_loose_files(run.root, run.warnings)
    files = source_files(run.root, run.warnings, problems)
    if not files:
        return
    founds = [READERS[name](paths, problems, run.warnings) for name, paths in files.items() if paths]
    merge(run, founds, problems)


# What each kind of file is called in the warning about one left at a run's top level.
KIND_WORDS = {"log": "log", "wandb": "wandb export", "tensorboard": "TensorBoard event file",
              "ci_history": "CI history record", "events": "--dump-details event file",
              "dashboard": "dashboard stream", "lab": "lab stream", "mlflow": "MLflow run file"}


def warn_loose_files(root: Path, warnings: list[str]) -> None:
    """A source file directly in a run folder is read by no one (the loader reads a source only from its own
    sub-folder, the dump only from dashboard/ and lab/): a warning names it and where it belongs."""
    from build_tools.core._layout import DASHBOARD_STREAMS, JSONL, LAB_STREAMS

    for path in sorted(p for p in root.iterdir() if p.name != "run.yaml" and p.is_file()):
        stream = JSONL.match(path.name)
        kind = ("dashboard" if stream and stream["stream"] in DASHBOARD_STREAMS else
                "lab" if stream and stream["stream"] in LAB_STREAMS else _kind_of_file(path))
        if kind is not None:
            warnings.append(f"{display_path(path)}: a {KIND_WORDS[kind]} at the run's top level is not read; move it "
                            f"into {display_path(root / kind)}/")


PLACEHOLDER = "FILL IN"  # how `make add-run` marks a run.yaml field it could not know


def check_placeholders(path: Path, config: dict[str, Any], problems: list[Problem]) -> None:
    """Every field `make add-run` left for a person to fill is an error until it is filled."""
    unfilled: list[tuple[str, str]] = []

    def walk(node: Any, dotted: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{dotted}.{key}" if dotted else str(key))
        elif isinstance(node, str) and node.startswith(PLACEHOLDER):
            unfilled.append((dotted, node))

    walk(config, "")
    if not unfilled or not path.is_file():  # the common case: nothing more to read
        return
    lines = path.read_text(encoding="utf-8").split("\n")
    where, fields = display_path(path), {dotted for dotted, _ in unfilled}
    # One line per field, in one phrasing: the schema's "expected a whole number, found 'FILL IN...'" of the same
    # field says nothing more.
    problems[:] = [p for p in problems if not (p.file == where and p.field in fields)]
    for dotted, node in unfilled:
        line = next((n for n, text in enumerate(lines, start=1)
                     if node in text or node.replace("'", "''") in text), None)
        problems.append(Problem(where, line, dotted,
                                f"not filled in yet ({node.removeprefix(PLACEHOLDER).lstrip(': ')})"))


# --- merging ----------------------------------------------------------------------------------


@dataclass
class _Kept:
    """The value kept for one (step group, step, key): where it is and how far it may lie from what was logged."""

    value: float
    text: str
    tolerance: float
    unit: float | None  # set where the source lost precision: a later, more precise value replaces it
    record: Record


def merge(run: RunData, founds: list[Found], problems: list[Problem]) -> None:
    """Add what the sources found to the run: each value once, every repeat checked, the most precise kept."""
    seen: dict[tuple[str, int, str], _Kept] = {}
    for record in run.streams.get("metrics", []):
        _remember(record, seen)
    renamed: set[tuple[str, str]] = set()
    for found in founds:
        added = []
        for record in found.streams.get("metrics", []):
            kept = _new_values(record, seen, renamed, problems, run.warnings, found.unit)
            if kept is not None:
                added.append(kept)
        if added:
            run.streams.setdefault("metrics", []).extend(added)
    _merge_phases(run, founds)
    _merge_events(run, founds)
    _merge_meta(run, founds, problems)


def _remember(record: Record, seen: dict[tuple[str, int, str], _Kept]) -> None:
    data = record.data
    if data.get("step_key") not in STEP_KEYS or not isinstance(data.get("step"), int):
        return
    for key, value in data["metrics"].items():
        if key in STEP_KEYS or not isinstance(value, int | float):
            continue
        texts = record.texts if isinstance(record, MetricRecord) else {}
        units = record.units if isinstance(record, MetricRecord) else {}
        text = texts.get(key, number_text(value))
        seen.setdefault((_group(data["step_key"]), data["step"], key),
                        _Kept(float(value), text, tolerance(text, units.get(key)), units.get(key), record))


def _group(step_key: str) -> str:
    # A value is one logged number at its own step axis: train/step 3 is not rollout/step 3.
    return step_key


def _new_values(record: Record, seen: dict[tuple[str, int, str], _Kept], renamed: set[tuple[str, str]],
                problems: list[Problem], warnings: list[str], unit_word: str = "line") -> Record | None:
    data = record.data
    texts = record.texts if isinstance(record, MetricRecord) else {}
    units = record.units if isinstance(record, MetricRecord) else {}
    out = MetricRecord({**data, "metrics": {}}, record.file, record.line)  # what is new in it, as seen refers to it
    for key, value in data["metrics"].items():
        text, unit = texts.get(key, number_text(value)), units.get(key)
        if key in RENAMED:
            if (record.file, key) not in renamed:
                renamed.add((record.file, key))
                warnings.append(f"{record.file}:{record.line}: {key} read as {RENAMED[key]} (its name in older "
                                "Miles versions)")
            key = RENAMED[key]
        where = (_group(data["step_key"]), data["step"], key)
        if key in STEP_KEYS or not isinstance(value, int | float) or where not in seen:
            out.data["metrics"][key] = value
            out.texts[key] = text
            if unit is not None:
                out.units[key] = unit
            if key not in STEP_KEYS and isinstance(value, int | float):
                seen[where] = _Kept(float(value), text, tolerance(text, unit), unit, out)
            continue
        old = seen[where]
        if not agree(old.value, old.tolerance, float(value), tolerance(text, unit)):
            line, field = ((record.line, f"metrics.{key}") if unit_word == "line" else  # a binary file: its record
                           (None, f"{unit_word} {record.line}: metrics.{key}"))
            problems.append(Problem(record.file, line, field,
                                    f"step {data['step']} is {text} here but {old.text} in {old.record.file}:"
                                    f"{old.record.line}; two sources of one run must agree within the precision "
                                    "they keep"))
        elif old.unit is not None and (unit is None or unit < old.unit):
            _replace(old, key, value, text, unit)
    return out if any(key not in STEP_KEYS for key in out.data["metrics"]) else None


def _replace(old: _Kept, key: str, value: Any, text: str, unit: float | None) -> None:
    """A value a lossy source gave first (a float32, a to_json number, a :.2f line) gives way to a more precise one."""
    old.record.data["metrics"][key] = value
    old.value, old.text, old.tolerance, old.unit = float(value), text, tolerance(text, unit), unit
    if isinstance(old.record, MetricRecord):
        old.record.texts[key] = text
        if unit is None:
            old.record.units.pop(key, None)
        else:
            old.record.units[key] = unit


def _merge_phases(run: RunData, founds: list[Found]) -> None:
    if run.streams.get("phases"):
        return  # the dump's phases are exact; Timer lines print a tenth of a second
    for found in founds:
        if found.streams.get("phases"):
            run.streams["phases"] = list(found.streams["phases"])
            return


def _merge_events(run: RunData, founds: list[Found]) -> None:
    known = [(rec.data["kind"], rec.data["t0"]) for rec in run.streams.get("events", [])]
    for found in founds:
        for record in found.streams.get("events", []):
            kind, t0 = record.data["kind"], record.data["t0"]
            if any(k == kind and abs(t - t0) <= SAME_EVENT_WITHIN_S for k, t in known):
                continue
            known.append((kind, t0))
            run.streams.setdefault("events", []).append(record)


def _typed_args(args: dict[str, tuple[Any, str, int]]) -> list[Problem]:
    """The flags of run.yaml's table that a source printed, typed as run.yaml's (0 or 10**23 steps per rollout is
    a problem at the line that printed it, as it is in meta.json)."""
    from build_tools.ingest import schemas, schemas_dump, schemas_run

    problems: list[Problem] = []
    for name, (value, file, line) in sorted(args.items()):
        if name in schemas_run.Flags.model_fields:
            problems += schemas.validate(schemas_dump.MilesArgs, {name: value}, file, _at(line))[1]
    return problems


def _at(line: int) -> Callable[[tuple[Any, ...]], int | None]:
    return lambda _loc: line


def _merge_meta(run: RunData, founds: list[Found], problems: list[Problem]) -> None:
    """A run without a dump gets its start and arguments from the sources; run.yaml's flags must agree."""
    args: dict[str, tuple[Any, str, int]] = {}
    for found in founds:
        for name, item in found.args.items():
            args.setdefault(name, item)
    problems += _typed_args(args)
    for name, (value, file, line) in args.items():  # the log's names become flags on a command line
        problems += schemas_dump.arg_problems({name: value}, file, line)
    run.launched = {name: item[0] for name, item in args.items()}
    if not run.meta:
        starts = [f.start_ts for f in founds if f.start_ts is not None]
        run.meta = {"run_name": run.run_id, "args": {name: item[0] for name, item in args.items()},
                    "schema_version": 1, **({"start_ts": min(starts)} if starts else {})}
    model = run.config.get("model")
    if "hf_checkpoint" in args and isinstance(model, dict) and isinstance(model.get("name"), str):
        checkpoint, file, line = args["hf_checkpoint"]
        # A hub name (owner/model) names the model; a local path need not.
        if isinstance(checkpoint, str) and checkpoint.count("/") == 1 and checkpoint.split("/")[1] != model["name"]:
            problems.append(Problem(display_path(run.root / "run.yaml"), None, "model.name",
                                    f"is {model['name']!r}, but {file}:{line} printed hf_checkpoint {checkpoint!r}"))
    flags = run.config.get("flags")
    if not isinstance(flags, dict):
        return
    for name in sorted(set(flags) & set(args)):
        value, file, line = args[name]
        if flags[name] != value:
            problems.append(Problem(display_path(run.root / "run.yaml"), None, f"flags.{name}",
                                    f"is {flags[name]!r}, but {file}:{line} printed {value!r}"))


# --- a bare path: `manual show PATH`, `make compare RUN=PATH`, `make add-run SRC=PATH` ------------------


def classify(path: Path, warnings: list[str], problems: list[Problem] | None = None) -> dict[str, list[Path]]:
    """What a path holds, by source: 'dashboard' maps to the dump folder, every other source to its files (those
    open_regular opens: each it refuses is one of problems)."""
    if path.is_file():
        kind = _kind_of_file(path)
        if kind is None:
            warnings.append(f"{display_path(path)}: not a file any reader reads; ignored")
            return {}
        return {kind: [path]}
    if not path.is_dir():
        return {}
    if (path / "meta.json").is_file():
        return {"dashboard": [path]}
    found: dict[str, list[Path]] = {}
    if (path / "dashboard" / "meta.json").is_file():
        found["dashboard"] = [path / "dashboard"]
    named = source_files(path, warnings, problems)
    found.update({name: files for name, files in named.items() if files})
    skip = {path / "dashboard", path / "lab", *(path / name for name in FILES)}
    refused: list[Problem] = []
    for file in readable_files(path, refused):
        if any(parent in skip for parent in file.parents) or file.name == "run.yaml":
            continue
        kind = _kind_of_file(file)
        if kind is None:
            warnings.append(f"{display_path(file)}: not a file any reader reads; ignored")
        else:
            found.setdefault(kind, []).append(file)
    # Found by their names anywhere in a bare path (a wandb run's logs/debug-core.log links out of it): what
    # open_regular refuses there is said and not read; in a source's own folder it is a problem (source_files).
    skipped = tuple(f"{display_path(folder)}/" for folder in skip)
    warnings += [f"{problem}; not read" for problem in refused if not problem.file.startswith(skipped)]
    return found


def _kind_of_file(path: Path) -> str | None:
    name = path.name.removesuffix(".gz")
    if name in ("meta.yaml", "mlflow.db") or mlflow.run_folder(path) is not None:  # MLflow's file or database store
        return "mlflow"
    if FILES["tensorboard"].search(name):
        return "tensorboard"
    if re.search(r"\.(log|txt)$", name):
        return "log"
    if name.endswith(".csv") or re.fullmatch(r"run-.*\.wandb", name):
        return "wandb"
    if name.endswith(".jsonl"):
        return _sniff_jsonl(path)
    return None


def _sniff_jsonl(path: Path) -> str | None:
    lines = read_text(path, [])
    for line in lines or []:
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            return None
        if not isinstance(doc, dict):
            return None
        if "metric" in doc and "series" in doc:
            return "ci_history"
        if "type" in doc and "timestamp" in doc:
            return "events"
        if "_step" in doc or any("/" in key for key in doc):
            return "wandb"
        return None
    return None
