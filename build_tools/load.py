"""Stage 1: load every run directory under runs/, in every form Miles writes, and validate it.

All problems of all runs are collected; the stage then fails once with the whole list.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML

from ._exceptions import Problem, RunDataError, display_path
from ._streams import DASHBOARD_DOCUMENTS, DASHBOARD_STREAMS, LAB_STREAMS, NON_FINITE, Stream
from ._yaml import load_yaml

RUN_ID = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
PARTITION = re.compile(r"^\d{8}_\d{2}\.jsonl(\.gz)?$")
JSONL = re.compile(r"^(?P<stream>[a-z_]+)\.jsonl(\.gz)?$")

# run.yaml: field -> kind, nested by dots. Kinds as in _streams, plus "date".
RUN_YAML_FIELDS: dict[str, str] = {
    "run_id": "str", "provenance": "str", "title": "str", "date": "date", "tags": "list", "seed": "int",
    "model": "dict", "model.name": "str", "model.size": "str", "model.parameters": "int",
    "dataset": "str",
    "miles": "dict", "miles.image": "str", "miles.branch": "str", "miles.commit": "str",
    "miles.commit_date": "date",
    "hardware": "dict", "hardware.machine": "str", "hardware.chip": "str", "hardware.gpus": "int",
    "hardware.memory_gib": "num", "hardware.memory_gb": "num", "hardware.memory_pools": "int",
    "flags": "dict", "lab": "dict",
}
PROVENANCES = ("measured", "example")


@dataclass
class Record:
    """One validated line of a stream, with where it came from (for messages further down)."""

    data: dict[str, Any]
    file: str
    line: int


@dataclass
class RunData:
    """A run as found on disk: its configuration and the validated records of each stream."""

    run_id: str
    root: Path
    config: dict[str, Any]
    meta: dict[str, Any]
    streams: dict[str, list[Record]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def load_runs(runs_dir: Path) -> list[RunData]:
    """Load every run under runs_dir; raise RunDataError listing every problem found in any of them."""
    problems: list[Problem] = []
    runs = [load_run(path, problems) for path in sorted(runs_dir.iterdir()) if path.is_dir()]
    if not runs and not problems:
        problems.append(Problem(display_path(runs_dir), None, None, "no run directories found"))
    if problems:
        raise RunDataError(problems)
    return runs


def load_run(root: Path, problems: list[Problem]) -> RunData:
    """Load one run directory, appending what is wrong with it to problems."""
    run_id = root.name
    if not RUN_ID.match(run_id):
        problems.append(Problem(display_path(root), None, None,
                                f"run id {run_id!r} is not a plain name (lower-case letters, digits, '.', '-')"))
    from . import sources  # log/, tensorboard/, wandb/, ci_history/, events/ (build_tools/sources/)

    config, lines = _load_run_yaml(root / "run.yaml", run_id, problems)
    meta = _load_meta(root / "dashboard" / "meta.json", run_id, problems) if sources.has_dump(root) else {}
    run = RunData(run_id=run_id, root=root, config=config, meta=meta)
    _check_flags_agree(root, config, lines, meta, problems)
    _read_streams(run, {root / "dashboard": DASHBOARD_STREAMS, root / "lab": LAB_STREAMS}, problems)
    sources.add_streams(run, problems)  # the other sources' streams, checked against the dump's
    return run


def load_dump(dashboard: Path, problems: list[Problem]) -> RunData:
    """A bare Miles dashboard dump (no run.yaml, no lab/), e.g. a reader's own run to compare with the manual.

    Its configuration is what Miles recorded: meta.json's args as the flags, provenance measured.
    """
    meta = _load_meta(dashboard / "meta.json", None, problems)
    args = meta.get("args") if isinstance(meta.get("args"), dict) else {}
    checkpoint = str(args.get("hf_checkpoint") or "").rstrip("/")
    config = {"run_id": str(meta.get("run_name", dashboard.name)), "provenance": "measured", "tags": [],
              "model": {"name": checkpoint.rsplit("/", 1)[-1] or "not recorded"}, "flags": dict(args), "lab": {}}
    run = RunData(run_id=config["run_id"], root=dashboard, config=config, meta=meta)
    _read_streams(run, {dashboard: DASHBOARD_STREAMS}, problems)
    return run


def _read_streams(run: RunData, folders: dict[Path, dict[str, Stream]], problems: list[Problem]) -> None:
    for name, stream, files in _stream_files(folders, problems):
        run.streams[name] = [rec for path in files for rec in _read_stream(path, stream, problems, run.warnings)]


# --- run.yaml and meta.json -------------------------------------------------------------------


class _YamlLines:
    """The line of a dotted key of run.yaml, found only when a message needs one (ruamel's parse is slow)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.doc: Any = None

    def of(self, dotted: str) -> int | None:
        """The line of the key, or of its nearest parent that exists."""
        if self.doc is None:
            self.doc = YAML(typ="rt").load(self.text)
        node, line = self.doc, None
        for key in dotted.split("."):
            if not isinstance(node, dict) or key not in node:
                return line
            line = node.lc.key(key)[0] + 1
            node = node[key]
        return line


def _load_run_yaml(path: Path, run_id: str, problems: list[Problem]) -> tuple[dict[str, Any], _YamlLines | None]:
    """run.yaml as plain data, and where its keys are (for messages)."""
    where = display_path(path)
    if not path.is_file():
        problems.append(Problem(where, None, None, "missing: every run needs a run.yaml (see runs/README.md)"))
        return {}, None
    text = path.read_text(encoding="utf-8")
    try:
        doc = load_yaml(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problems.append(Problem(where, mark.line + 1 if mark else None, None,
                                f"not valid YAML: {getattr(err, 'problem', err)}"))
        return {}, None
    if not isinstance(doc, dict):
        problems.append(Problem(where, 1, None, "expected a mapping of fields"))
        return {}, None
    lines = _YamlLines(text)
    for dotted, kind in RUN_YAML_FIELDS.items():
        found, value = _lookup(doc, dotted)
        if not found:
            parent_ok = "." not in dotted or _lookup(doc, dotted.rsplit(".", 1)[0])[0]
            if parent_ok:
                problems.append(Problem(where, lines.of(dotted) if "." in dotted else None, dotted,
                                        f"missing; expected {_kind_name(kind)}"))
        elif not _is_kind(value, kind):
            problems.append(Problem(where, lines.of(dotted), dotted, f"expected {_kind_name(kind)}, found {value!r}"))
    _check_value(doc, lines, where, "provenance", lambda v: v in PROVENANCES, f"expected one of {PROVENANCES}",
                 problems)
    _check_value(doc, lines, where, "run_id", lambda v: v == run_id,
                 f"expected {run_id!r}, the name of the run's directory", problems)
    return _plain(doc), lines


def _load_meta(path: Path, run_id: str | None, problems: list[Problem]) -> dict[str, Any]:
    where = display_path(path)
    if not path.is_file():
        problems.append(Problem(where, None, None, "missing: copy the run's Miles dashboard dump into dashboard/"))
        return {}
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        problems.append(Problem(where, err.lineno, None, f"not valid JSON: {err.msg}"))
        return {}
    kinds = {"run_name": "str", "start_ts": "num", "args": "dict", "schema_version": "int"}
    for name, kind in kinds.items():
        if name not in meta:
            problems.append(Problem(where, None, name, f"missing; expected {_kind_name(kind)}"))
        elif not _is_kind(meta[name], kind):
            problems.append(Problem(where, None, name, f"expected {_kind_name(kind)}, found {meta[name]!r}"))
    if run_id is not None and isinstance(meta.get("run_name"), str) and meta["run_name"] != run_id:
        problems.append(Problem(where, None, "run_name",
                                f"is {meta['run_name']!r}, but the run directory is {run_id!r}"))
    return meta


def _check_flags_agree(root: Path, config: dict[str, Any], lines: _YamlLines | None, meta: dict[str, Any],
                       problems: list[Problem]) -> None:
    """What Miles recorded (meta.json args) and what run.yaml says must agree: every shared flag, and the model."""
    flags, args = config.get("flags"), meta.get("args")
    if not isinstance(flags, dict) or not isinstance(args, dict):
        return
    where = display_path(root / "run.yaml")
    for name in sorted(set(flags) & set(args)):
        if flags[name] != args[name]:
            line = lines.of(f"flags.{name}") if lines else None
            problems.append(Problem(where, line, f"flags.{name}",
                                    f"is {flags[name]!r}, but dashboard/meta.json args say {args[name]!r}"))
    # A hub checkpoint name (owner/model, e.g. Qwen/Qwen3-0.6B) names the model; a local path need not.
    checkpoint = str(args.get("hf_checkpoint") or "")
    model = config["model"].get("name") if isinstance(config.get("model"), dict) else None
    if checkpoint.count("/") == 1 and isinstance(model, str) and checkpoint.split("/")[1] != model:
        problems.append(Problem(where, lines.of("model.name") if lines else None, "model.name",
                                f"is {model!r}, but dashboard/meta.json args say hf_checkpoint {checkpoint!r}"))


def _lookup(doc: Any, dotted: str) -> tuple[bool, Any]:
    """Find a dotted field in a document: (found, value)."""
    node = doc
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return False, None
        node = node[key]
    return True, node


def _check_value(doc: Any, lines: _YamlLines, where: str, dotted: str, ok: Any, expected: str,
                 problems: list[Problem]) -> None:
    found, value = _lookup(doc, dotted)
    if found and isinstance(value, str) and not ok(value):
        problems.append(Problem(where, lines.of(dotted), dotted, f"{expected}, found {value!r}"))


def _plain(node: Any) -> Any:
    """ruamel's round-trip types to plain Python; dates to ISO strings so every consumer sees one type."""
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    if isinstance(node, dt.date):
        return node.isoformat()
    if isinstance(node, bool):
        return bool(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    return node


# --- streams ----------------------------------------------------------------------------------


def _stream_files(folders: dict[Path, dict[str, Stream]],
                  problems: list[Problem]) -> Iterator[tuple[str, Stream, list[Path]]]:
    """Every known stream of the folders with its files, hourly partitions and flat files alike."""
    found: dict[str, tuple[Stream, list[Path]]] = {}
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
            found.setdefault(stream.name, (stream, []))[1].extend(_partition_files(path, problems))
    for name in sorted(found):
        yield name, *found[name]


def _stream_of(path: Path, streams: dict[str, Stream]) -> Stream | None:
    if path.is_dir():
        stream = streams.get(path.name)
        return stream if stream is not None and stream.partitioned else None
    match = JSONL.match(path.name)
    return streams.get(match["stream"]) if match else None


def _partition_files(path: Path, problems: list[Problem]) -> list[Path]:
    if path.is_file():
        return [path]
    files = []
    for part in sorted(path.iterdir()):
        if PARTITION.match(part.name):
            files.append(part)
        else:
            problems.append(Problem(display_path(part), None, None,
                                    "unknown file in an hourly stream; expected YYYYMMDD_HH.jsonl"))
    return files


def _read_stream(path: Path, stream: Stream, problems: list[Problem], warnings: list[str]) -> Iterator[Record]:
    where = display_path(path)
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    try:
        lines = raw.decode("utf-8").split("\n")
    except UnicodeDecodeError as err:
        problems.append(Problem(where, raw[: err.start].count(b"\n") + 1, None, "not UTF-8 text"))
        return
    if lines[-1].strip():
        warnings.append(f"{where}:{len(lines)}: last line has no newline (a writer mid-append); skipped")
    fields = _compiled_fields(stream)
    for number, text in enumerate(lines[:-1], start=1):
        if not text.strip():
            continue
        record = _parse_record(text, where, number, stream, fields, problems)
        if record is not None:
            yield Record(record, where, number)


# Field kind -> the exact Python types json gives for it (bool is not an int here); "?" adds null.
_TYPES: dict[str, frozenset[type]] = {
    "num": frozenset({int, float}), "int": frozenset({int}), "str": frozenset({str}),
    "list": frozenset({list}), "dict": frozenset({dict}), "bool": frozenset({bool}),
}
_DECODER = json.JSONDecoder()


def _compiled_fields(stream: Stream) -> tuple[tuple[str, str, frozenset[type]], ...]:
    """(name, kind, accepted types) per field, for the loader's hot loop."""
    compiled = []
    for name, kind in stream.fields.items():
        types = _TYPES[kind.rstrip("?")]
        compiled.append((name, kind, types | {type(None)} if kind.endswith("?") else types))
    return tuple(compiled)


def _parse_record(text: str, where: str, line: int, stream: Stream,
                  fields: tuple[tuple[str, str, frozenset[type]], ...], problems: list[Problem]) -> dict | None:
    try:
        record = _DECODER.decode(text)
    except json.JSONDecodeError as err:
        problems.append(Problem(where, line, None, f"not valid JSON: {err.msg}"))
        return None
    if not isinstance(record, dict):
        problems.append(Problem(where, line, None, "expected a JSON object"))
        return None
    ok = True
    for name, kind, types in fields:
        if type(record.get(name)) in types and name in record:
            continue  # the common case: present and of the right type
        if name not in record:
            problems.append(Problem(where, line, name, f"missing; expected {_kind_name(kind)}"))
            ok = False
            continue
        value = _finite_marker(record[name]) if kind.startswith("num") else record[name]
        if not _is_kind(value, kind):
            problems.append(Problem(where, line, name, f"expected {_kind_name(kind)}, found {record[name]!r}"))
            ok = False
        record[name] = value
    for name, allowed in stream.choices:
        if ok and record[name] not in allowed:
            problems.append(Problem(where, line, name, f"expected one of {allowed}, found {record[name]!r}"))
            ok = False
    if ok and stream.name == "metrics":
        ok = _clean_metric_values(record, where, line, problems)
    return record if ok else None


def _clean_metric_values(record: dict, where: str, line: int, problems: list[Problem]) -> bool:
    ok = True
    for key, value in record["metrics"].items():
        value = _finite_marker(value)
        if not isinstance(value, int | float | str | bool):
            problems.append(Problem(where, line, f"metrics.{key}",
                                    f"expected a number, string or boolean, found {value!r}"))
            ok = False
        record["metrics"][key] = value
    return ok


def _finite_marker(value: Any) -> Any:
    return NON_FINITE.get(value, value) if isinstance(value, str) else value


def _is_kind(value: Any, kind: str) -> bool:
    if kind.endswith("?"):
        return value is None or _is_kind(value, kind[:-1])
    if kind == "num":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "date":
        return isinstance(value, dt.date) or (isinstance(value, str) and _is_iso_date(value))
    types: dict[str, type | tuple[type, ...]] = {"str": str, "list": list, "dict": dict, "bool": bool}
    return isinstance(value, types[kind])


def _is_iso_date(text: str) -> bool:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _kind_name(kind: str) -> str:
    names = {"num": "a number", "int": "an integer", "str": "a string", "list": "a list", "dict": "a mapping",
             "bool": "true or false", "date": "a date (YYYY-MM-DD)"}
    base = names[kind.rstrip("?")]
    return f"{base} or null" if kind.endswith("?") else base


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)
