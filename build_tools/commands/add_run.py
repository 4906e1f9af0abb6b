"""`make add-run SRC=path [ID=run-id]`: a finished Miles job's outputs become a run of runs/, in one command.

SRC may be a dashboard dump, a log file, a wandb export, a TensorBoard folder, or a folder holding several
(each in its own sub-folder, or loose). The files are copied into runs/<id>/ gzipped, under the sub-folder of
their source; run.yaml is written from what the sources say, with every field they cannot tell written as a
`FILL IN: ...` placeholder that `make check` reports until a person fills it in. Then it says what the run
can feed: which rows of the Metrics page and which figures, and what is missing for the others.
"""

from __future__ import annotations

import datetime as dt
import errno
import gzip
import os
import re
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

import yaml

from build_tools.core._exceptions import InputProblem, Problem, RunDataError, display_path, run_not_written
from build_tools.core._files import LINK_REFUSED, scan_tree
from build_tools.core._layout import Layout
from build_tools.core._staging import ADD_RUN, checkpoint, staging
from build_tools.ingest import load, schemas_run
from build_tools.ingest.sources import PLACEHOLDER

if TYPE_CHECKING:
    from build_tools.core._types import RunData, RunSummary

# The flags of run.yaml the manual reads (runs/README.md; its schema, schemas_run.Flags), copied from the launch
# arguments when found (a log's, meta.json's, an MLflow run's params).
FLAGS = tuple(schemas_run.Flags.model_fields)
STREAM_NAMES = ("gpu_util", "host_memory", "held_memory", "gpu_temp", "sampling", "repeat_probe", "engine_series",
                "gpu_processes", "topology", "trajectories", "data_buffer")
PHASE_NAMES = ("train_wait", "train", "data_preprocess", "log_probs", "ref_log_probs", "actor_train", "sleep",
               "wake_up", "update_weights", "rollout", "eval_rollout")
EVENT_KINDS = ("heat_pause", "engine_death", "watchdog_kill", "ray_oom_kill", "job_end")


def add_run(root: Path, src: Path, run_id: str | None = None) -> tuple[list[str], list[str]]:
    """Copy the sources at src into runs/<id>/ and write its run.yaml; the lines to print, and the warnings of
    reading the sources (for stderr; the lines end with their count).

    Nothing is read before SRC is checked whole, and nothing is written unless everything is right: the run
    is staged in a folder of its own and renamed into runs/ whole, run.yaml included."""
    from build_tools.summarise.summary import summarise

    layout = Layout(root)
    if not src.exists():
        raise RunDataError([Problem(display_path(src), None, None, "no such file or folder (SRC=...)")])
    if _holds_the_project(src, root):
        raise RunDataError([Problem(display_path(src), None, "SRC", "is the manual's project or a folder above it "
                                    "(runs/ would be copied into runs/): name what one Miles job left, e.g. make "
                                    "add-run SRC=path/to/job")])
    unsafe = scan_tree(src, Path(os.path.realpath(src)), links=False)[0]
    if unsafe:  # nothing in SRC is read then: a link is never followed, a FIFO never opened
        raise RunDataError(unsafe)
    problems: list[Problem] = []
    run, found = load.load_path(src, problems)
    run_id = _run_id(run, layout.runs, run_id, problems)
    target = layout.runs / run_id
    plan = _plan(found, src, target, problems)
    summary = summarise(run, problems) if not problems else None
    if summary is not None and _holds_nothing(summary):
        problems.append(load.nothing_read(src))
    if problems or summary is None:
        raise RunDataError(problems)
    _refuse_existing(target)
    config, filled, missing = run_yaml(run_id, run, summary, known(layout))
    _stage(layout, src, target, plan, _yaml_text(config))
    lines = [f"Added {display_path(target)} from {display_path(src)}:"]
    named = run.meta.get("run_name") if "dashboard" in found else None
    if isinstance(named, str) and named != run_id:
        lines[0] = f"Added {display_path(target)} from {display_path(src)} (Miles' run_name {named!r}, kept in " \
                   f"meta.json):"
    lines += [f"  {kind:<12} {len(copies)} file{'s' if len(copies) != 1 else ''} -> {display_path(target / kind)}/"
              for kind, copies in plan.items()]
    from_files = [field for field in filled if field.startswith(SHARED_FIELDS)]
    lines += ["", "run.yaml: filled from the sources: "
              + (", ".join(field for field in filled if field not in from_files) or "nothing"),
              f"  from {KNOWN_FROM}: {', '.join(from_files) or 'nothing'}",
              f"  to fill in by hand ({len(missing)} field{'s' if len(missing) != 1 else ''}; `make check` reports "
              "each until it is):", *(f"    {field}: {hint}" for field, hint in missing)]
    lines += ["", *feeds(layout, summary)]
    warnings = summary.warnings
    if warnings:
        lines += ["", f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''} reading the sources (on stderr; "
                      f"`manual show {run_id}` lists them)"]
    return lines, warnings


def _holds_the_project(src: Path, root: Path) -> bool:
    """SRC is the project's folder or one above it: copying it would copy runs/ into runs/."""
    real, project = Path(os.path.realpath(src)), Path(os.path.realpath(root))
    return project == real or real in project.parents


def _holds_nothing(summary: RunSummary) -> bool:
    """No step, phase, event or sampled series was read: a run with nothing in it (an empty log, say)."""
    return summary.steps.empty and summary.phases.empty and summary.events.empty and not summary.series


def _run_id(run: RunData, runs: Path, given: str | None, problems: list[Problem]) -> str:
    """The id given, else the dump's run_name or the source's name made plain, numbered (`-2`, `-3`, ...) past
    the runs that already have it (Miles names every run without a wandb group `miles-run`); what is wrong
    with a given one, in problems."""
    if given:
        if not load_run_id_ok(given):
            problems.append(Problem("ID", None, None, f"{given!r} is not a plain run id (lower-case letters, "
                                                      "digits, '.', '-')"))
        return given
    run_id = _plain_id(str(run.meta.get("run_name") or run.run_id))
    taken, number = run_id, 1
    while os.path.lexists(runs / run_id):
        number += 1
        run_id = f"{taken}-{number}"
    return run_id


def _refuse_existing(target: Path) -> None:
    """A run folder is never replaced (nor a file, or a link, of its name)."""
    if os.path.lexists(target):
        raise RunDataError([Problem(display_path(target), None, None,
                                    "already exists: choose another ID=, or remove the folder first")])


def load_run_id_ok(run_id: str) -> bool:
    from build_tools.ingest.load import RUN_ID

    return bool(RUN_ID.match(run_id))


def _plain_id(name: str) -> str:
    return re.sub(r"[^a-z0-9.-]+", "-", name.lower()).strip("-.") or "run"


# --- copying ----------------------------------------------------------------------------------


class _Copy(NamedTuple):
    """One source file to copy: where it is (as SRC names it), its path from the folder copying starts in
    (SRC, or SRC's folder when SRC is a file), and its name in the run folder (.gz added when compressed)."""

    source: Path
    parts: tuple[str, ...]
    destination: str
    compress: bool


def _plan(found: dict[str, list[Path]], src: Path, target: Path,
          problems: list[Problem]) -> dict[str, list[_Copy]]:
    """Every source file under <source>/ of the run, gzipped (JSON documents of a dump stay plain), by source;
    two files that would have one name in the run are problems, naming both."""
    plan: dict[str, list[_Copy]] = {}
    for kind, paths in found.items():
        if kind in ("dashboard", "lab"):  # a folder copied whole (lab/: what `manual record` wrote)
            dump = paths[0]
            plan[kind] = [_copy_of(src, file, Path(kind, file.relative_to(dump)),
                                   compress=file.name not in ("meta.json", "lane_catalog.json"))
                          for file in sorted(p for p in dump.rglob("*") if p.is_file())]
            continue
        base = src / kind if (src / kind).is_dir() else (src if src.is_dir() else src.parent)
        plan[kind] = [_copy_of(src, file, Path(kind, file.relative_to(base) if file.is_relative_to(base)
                                               else file.name), compress=True) for file in paths]
    seen: dict[str, Path] = {}
    for copy in (copy for copies in plan.values() for copy in copies):
        first = seen.setdefault(copy.destination, copy.source)
        if first != copy.source:
            problems.append(Problem(display_path(copy.source), None, None,
                                    f"would be copied to the same name as {display_path(first)} "
                                    f"({display_path(target / copy.destination)}): rename or remove one of them"))
    return plan


def _copy_of(src: Path, file: Path, destination: Path, *, compress: bool) -> _Copy:
    parts = file.relative_to(src).parts if src.is_dir() else (Path(os.path.realpath(src)).name,)
    compress = compress and not file.name.endswith(".gz")
    return _Copy(file, parts, destination.as_posix() + (".gz" if compress else ""), compress)


def _stage(layout: Layout, src: Path, target: Path, plan: dict[str, list[_Copy]], run_yaml_text: str) -> None:
    """Copy the plan and write run.yaml into a staging folder of runs/, renamed to target only when whole."""
    from build_tools.core._lock import build_lock

    # Under the build lock: a build never reads runs/ while a run is added, nor removes its staging folder.
    with build_lock(layout.build, lambda line: print(line, file=sys.stderr, flush=True)):
        _refuse_existing(target)
        try:
            with staging(target, name=ADD_RUN, replace=False) as staged:
                problems = _copy(plan, _start(src), staged)
                if problems:
                    raise RunDataError(problems)
                checkpoint("add-run-copied")
                (staged / "run.yaml").write_text(run_yaml_text, encoding="utf-8")
        except OSError as error:
            _refuse_existing(target)  # added by another program while this one copied
            raise run_not_written(display_path(target), error.strerror or str(error)) from None


def _copy(plan: dict[str, list[_Copy]], start: Path, staged: Path) -> list[Problem]:
    """Copy every file of the plan into staged; a source that cannot be read (or is no longer a plain file)
    is a problem, and the others are still tried so that all are reported together."""
    problems: list[Problem] = []
    for copy in (copy for copies in plan.values() for copy in copies):
        destination = staged / copy.destination
        destination.parent.mkdir(parents=True, exist_ok=True)
        try:
            with _open_plain(start, copy) as source:
                data = source.read()
        except InputProblem as problem:
            problems.append(problem.problem)
            continue
        # mtime 0: the same source gives the same bytes (an edition rebuilds byte for byte).
        destination.write_bytes(gzip.compress(data, mtime=0) if copy.compress else data)
    return problems


def _start(src: Path) -> Path:
    """The real folder copying starts in: SRC, or the folder of SRC when it is a file (SRC itself may be a link:
    it is what the user named)."""
    real = Path(os.path.realpath(src))
    return real if real.is_dir() else real.parent


def _open_plain(start: Path, copy: _Copy) -> BinaryIO:
    """The source file opened without following a link at any step of its path below start: a link put there
    since SRC was checked is refused, never followed."""
    folder = -1
    try:
        folder = os.open(start, os.O_RDONLY | os.O_DIRECTORY)
        for part in copy.parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
        # O_NONBLOCK: a FIFO put there opens at once (and is refused below) instead of waiting for a writer.
        handle = os.open(copy.parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError as error:
        message = LINK_REFUSED if error.errno == errno.ELOOP else f"cannot be read ({error.strerror})"
        raise InputProblem(Problem(display_path(copy.source), None, None, message)) from None
    finally:
        if folder >= 0:
            os.close(folder)
    if not stat.S_ISREG(os.fstat(handle).st_mode):
        os.close(handle)
        raise InputProblem(Problem(display_path(copy.source), None, None,
                                   "is no longer a plain file; only plain files are copied"))
    return os.fdopen(handle, "rb")


# --- run.yaml ---------------------------------------------------------------------------------


def _todo(what: str) -> str:
    return f"{PLACEHOLDER}: {what}"


KNOWN_FROM = "edition.yml and docs/data/setup.yml"
# The fields `known` fills: the same on every run of the manual (a run made elsewhere changes them by hand). The
# Miles commit is the job's own (_miles_of); the edition's build fills the rest when the job used its commit.
SHARED_FIELDS = ("miles.image", "miles.branch", "miles.commit_date", "hardware.machine", "hardware.chip",
                 "hardware.memory_", "model.parameters")


def known(layout: Layout) -> dict[str, Any]:
    """What every run of the manual shares: the Miles build edition.yml names (a run must be made with it) and
    the setup of docs/data/setup.yml (machine, chip, memory, pools; parameter counts by model). A file that is
    missing or wrong gives nothing: its fields are left to fill, and `make check` names the file's problem."""
    from build_tools.checking import blocks
    from build_tools.core._exceptions import EditionFileError
    from build_tools.editions.stamp import load_stamp

    found: dict[str, Any] = {}
    try:
        stamp = load_stamp(layout.edition_yml)
        found["miles"] = {"image": stamp.image, "branch": stamp.branch, "commit": stamp.commit,
                          "commit_date": dt.date.fromisoformat(str(stamp.commit_date))}
    except EditionFileError:
        pass
    setup = layout.data / "setup.yml"
    try:
        value, problems = blocks.read_table(setup, display_path(setup)) if setup.is_file() else (None, [])
    except InputProblem:
        value, problems = None, []
    if isinstance(value, dict) and not problems:
        found["hardware"], found["parameters"] = dict(value["hardware"]), dict(value.get("parameters") or {})
    return found


def run_yaml(run_id: str, run: Any, summary: Any, shared: dict[str, Any] | None = None
             ) -> tuple[dict[str, Any], list[str], list[tuple[str, str]]]:
    """run.yaml's fields from what the sources say and what every run shares (`known`); (config, fields filled,
    (field, what to write) of each field left to fill)."""
    shared = shared or {}
    hardware, miles = shared.get("hardware") or {}, shared.get("miles") or {}
    recorded = run.meta.get("args") if isinstance(run.meta.get("args"), dict) else {}
    args = {**run.launched, **recorded}  # what a log printed, and meta.json's few (they must agree)
    start = run.meta.get("start_ts")
    checkpoint = str(args.get("hf_checkpoint") or "").rstrip("/")
    model_name = checkpoint.rsplit("/", 1)[-1]
    size = re.search(r"([0-9]+(?:\.[0-9]+)?)[Bb]\b", model_name)
    from build_tools.readers import gpus_of

    gpus = sorted(gpus_of(summary))
    nodes = sorted({node for node, _ in gpus})
    gpu_count = len(gpus) or _gpus_launched(args)
    config: dict[str, Any] = {
        "run_id": run_id,
        "provenance": "measured",
        "title": _todo("a short human name for the run"),
        "date": (dt.datetime.fromtimestamp(float(start), dt.UTC).date() if isinstance(start, int | float)
                 else _todo("the day the run started, YYYY-MM-DD")),
        "tags": _todo("a list of the groups the run belongs to, e.g. [my-runs]"),
        "seed": args["seed"] if isinstance(args.get("seed"), int) else _todo("the run's seed, an integer"),
        "model": {
            "name": model_name or _todo("the model, e.g. Qwen3-0.6B"),
            "size": f"{size.group(1)}B" if size else _todo("the model size, e.g. 0.6B"),
            "parameters": (shared.get("parameters") or {}).get(model_name)
            or _todo("the parameter count, an integer (e.g. from the checkpoint's config)"),
        },
        "dataset": _todo("the data set, e.g. GSM8K" + (f" (prompt_data was {args['prompt_data']})"
                                                       if args.get("prompt_data") else "")),
        "miles": _miles_of(run, miles),
        "hardware": {
            "machine": hardware.get("machine") or _todo("the machine, e.g. DGX Spark"),
            "chip": hardware.get("chip") or _todo("the chip, e.g. GB10"),
            "gpus": gpu_count or _todo("the number of GPUs, an integer"),
            "memory_gib": hardware.get("memory_gib") or _todo("the memory the OS sees, GiB"),
            "memory_gb": hardware.get("memory_gb") or _todo("the nominal memory, GB"),
            "memory_pools": hardware.get("memory_pools") or _todo("1 for unified memory"),
        },
        "flags": {name: args[name] for name in FLAGS if name in args},
        "lab": {"heat_guard": _todo("true if the heat guard was running, else false")},
    }
    if len(nodes) > 1:
        config["hardware"]["nodes"] = len(nodes)
    filled: list[str] = []
    missing: list[tuple[str, str]] = []

    def walk(node: Any, dotted: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{dotted}.{key}" if dotted else key)
        elif isinstance(node, str) and node.startswith(PLACEHOLDER):
            missing.append((dotted, node.removeprefix(PLACEHOLDER).lstrip(": ")))
        else:
            filled.append(dotted)

    walk({k: v for k, v in config.items() if k not in ("run_id", "provenance")}, "")
    return config, filled, missing


def _miles_of(run: Any, edition: dict[str, Any]) -> dict[str, Any]:
    """run.yaml's miles: the commit the job ran from, as its sources say it (an MLflow run's tags, the environment
    report a log printed), else asked for; the image, branch and commit date of the edition's build when the job
    used its commit, else asked for too (they belong to the job's commit, which the edition does not know)."""
    from build_tools.editions.stamp import same_commit

    said = run.origin.get("miles_commit")
    commit = said[0] if said else None
    ours = bool(commit and edition.get("commit") and same_commit(commit, str(edition["commit"])))
    theirs = "" if not edition.get("commit") else f"; this edition's is {edition['commit']}"
    return {"image": edition.get("image") if ours or not commit else None,
            "branch": edition.get("branch") if ours or not commit else None,
            "commit": commit or _todo("the Miles commit the job ran from (git -C <the job's Miles checkout> "
                                      f"rev-parse --short HEAD){theirs}"),
            "commit_date": edition.get("commit_date") if ours or not commit else None} | {
        key: _todo(what) for key, what in (("image", "the Miles image the job ran in"),
                                           ("branch", "the Miles branch of that commit"),
                                           ("commit_date", "the commit's date, YYYY-MM-DD"))
        if not (edition.get(key) and (ours or not commit))}


def _gpus_launched(args: dict[str, Any]) -> int | None:
    """The GPUs a launch asked for, as Miles counts them: the trainer's (actor_num_nodes x
    actor_num_gpus_per_node, parse_args' world_size), and the rollout's beside them unless colocated."""
    nodes, per_node = args.get("actor_num_nodes"), args.get("actor_num_gpus_per_node")
    if not (isinstance(nodes, int) and isinstance(per_node, int)):
        return None
    rollout = args.get("rollout_num_gpus")
    return nodes * per_node + (rollout if isinstance(rollout, int) and not args.get("colocate") else 0)


def _yaml_text(config: dict[str, Any]) -> str:
    head = ("# Written by `make add-run`. Fill in every FILL IN field (make check lists them), then check the\n"
            "# rest: runs/README.md documents each field.\n")
    return head + yaml.safe_dump(config, sort_keys=False, allow_unicode=True, width=120)


# --- what the run can feed --------------------------------------------------------------------


def feeds(layout: Layout, summary: RunSummary) -> list[str]:
    """Which Metrics-page rows and figures the run has the data for, and what the others miss."""
    from build_tools.checking import blocks
    from build_tools.pages import metrics_table
    from build_tools.readers import table_of

    lines = ["Metrics page rows (a row reads the runs of its run set; tag the run to join it):"]
    spec = metrics_table.load_spec(layout.metrics_yml)
    sets = spec.get("run_sets") or {}
    others = _other_configs(layout, summary.run_id) if _reads_one_run(spec) else {}
    for table in spec["tables"]:
        for row in table.get("rows") or []:
            metric = str(row.get("metric"))
            if not table.get("column"):
                continue
            steps = table_of(summary, metric)  # the steps of the metric's own axis
            present = int(steps[metric].notna().sum()) if metric in steps.columns else 0
            need = _run_set_words(sets.get(row.get("runs")) or {})
            if row.get("stat") in metrics_table.ONE_RUN:
                need = _one_run_words(str(row.get("runs")), sets.get(row.get("runs")) or {}, need, others)
            state = f"has it at {present} of {len(steps)} steps" if present else "missing: no source logs it"
            lines.append(f"  {metric:<40} {state}; {need}")
    lines += ["", "Figures (the data each figure's code reads, against what the run has):"]
    for block in blocks.read_blocks(layout.docs, layout.figures_src):
        needs = _figure_needs(layout.figures_src / f"{block.module}.py")
        missing = [need for need in needs if not _has(summary, need)]
        tags = _tags_of(layout, block.runs)
        state = "has all it reads" if not missing else f"missing {', '.join(missing)}"
        lines.append(f"  figure {block.number} ({block.module}; runs tagged {', '.join(tags) or 'none'}): {state}")
    return lines


def _run_set_words(predicate: dict[str, Any]) -> str:
    parts = []
    if predicate.get("tags"):
        parts.append("tagged " + " or ".join(predicate["tags"]))
    for dotted, value in (predicate.get("where") or {}).items():
        parts.append(f"{dotted} is {str(value).lower() if isinstance(value, bool) else value}")
    return "feeds it when " + " and ".join(parts) if parts else "feeds it from every run"


def _reads_one_run(spec: dict[str, Any]) -> bool:
    from build_tools.pages import metrics_table

    return any(row.get("stat") in metrics_table.ONE_RUN for table in spec["tables"] for row in table.get("rows") or [])


def _other_configs(layout: Layout, run_id: str) -> dict[str, dict[str, Any]]:
    """The run.yaml of every other run in runs/ (one that cannot be read is left out: `make check` names it)."""
    from build_tools.core._exceptions import InputProblem
    from build_tools.core._yaml import load_yaml

    configs = {}
    for path in sorted(layout.runs.glob("*/run.yaml")):
        if path.parent.name == run_id or path.parent.name.startswith("."):  # a staging folder is no run
            continue
        try:
            doc = load_yaml(path.read_text(encoding="utf-8"), display_path(path))
        except (OSError, UnicodeDecodeError, InputProblem):
            continue
        if isinstance(doc, dict):
            configs[path.parent.name] = doc
    return configs


def _one_run_words(name: str, predicate: dict[str, Any], need: str, others: dict[str, dict[str, Any]]) -> str:
    """A row that reads exactly one run: joining its run set when a run is in it already fails the build."""
    from build_tools.summarise import metric_rows

    members = [run_id for run_id, config in others.items() if metric_rows.selects(predicate, config)]
    if not members:
        return f"{need} (the one run it reads: run set {name!r} has none yet)"
    condition = need.removeprefix("feeds it when ").removeprefix("feeds it from ")
    return (f"reads one run only, run set {name!r} ({condition}): {', '.join(members)}; a second one there "
            "fails the build")


_QUOTED = re.compile(r"""["']([a-z_]+(?:/[A-Za-z0-9_.]+)+|[a-z_]+)["']""")


def _figure_needs(module: Path) -> list[str]:
    """The metric keys, streams, phases and event kinds a figure module names (a reading of its code)."""
    if not module.is_file():
        return []
    needs = []
    for name in dict.fromkeys(_QUOTED.findall(module.read_text(encoding="utf-8"))):
        if "/" in name and name.split("/", 1)[0] in ("rollout", "train", "perf", "eval"):
            needs.append(name)
        elif name in STREAM_NAMES:
            needs.append(f"series {name}")
        elif name in EVENT_KINDS and name != "job_end":
            needs.append(f"events {name}")
        elif name in PHASE_NAMES:
            needs.append(f"phase {name}")
    return needs


def _has(summary: RunSummary, need: str) -> bool:
    from build_tools.core._exceptions import MissingValue
    from build_tools.readers import series_of, table_of

    if need.startswith("series "):
        try:  # as the figure reads it (GPU utilisation: gpu_util or lab/gpu_temp)
            return len(series_of(summary, need[7:], *(("util",) if need == "series gpu_util" else ()))) > 0
        except MissingValue:
            return False
    if need.startswith("events "):
        return bool(len(summary.events)) and need[7:] in set(summary.events["kind"])
    if need.startswith("phase "):
        return bool(len(summary.phases)) and need[6:] in set(summary.phases["name"])
    steps = table_of(summary, need)
    return need in steps.columns and bool(steps[need].notna().any())


def _tags_of(layout: Layout, run_ids: tuple[str, ...]) -> list[str]:
    from build_tools.core._yaml import load_yaml

    tags: dict[str, None] = {}
    for run_id in run_ids:
        path = layout.runs / run_id / "run.yaml"
        doc = load_yaml(path.read_text(encoding="utf-8"), display_path(path)) if path.is_file() else None
        for tag in (doc or {}).get("tags") or []:
            tags[str(tag)] = None
    return list(tags)
