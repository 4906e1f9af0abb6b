"""An MLflow run (`mlflow/`): the folder a local run writes in MLflow's file store, read without mlflow.

Miles' MLflow backend (`--use-mlflow`, miles/utils/tracking_utils/mlflow_utils.py at 31f1ca961) starts one run
(`start_run(run_name=--mlflow-run-name or --wandb-group, tags={"rank": ...})`, `log_params` of its arguments
flattened to text) and gives every `tracking.log(metrics, step_key)` call to `mlflow.log_metrics(metrics,
step=<the step key's value>)`, each key sanitized (a character outside `[a-zA-Z0-9_-./ ]` becomes `_`:
`passrate/pass@1` is logged `passrate/pass_1`, read back as `passrate/pass@1`) and each value a float. The other
processes attach to the same run, so a job is one run.

Its params are Miles' whole argument namespace (`_compute_config_for_logging`: every argument, `str(value)`):
each one of Miles' flags is read back as the type Miles' parser gives it (ingest/miles_facts), so that `make
add-run` fills run.yaml's model, GPUs and flags from them. Its tags may name the Miles commit the job ran from
(`mlflow.source.git.commit`, which MLflow sets when the entry script is in a git checkout, as train.py is).

The file store (`mlruns/<experiment id>/<run id>/`) holds `meta.yaml` (run_id, run_name, start_time), `params/`,
`tags/` and `metrics/<key>`, a `/` of the key a sub-folder, one line per logged value: `<timestamp in ms> <value>
<step>`, the value as Python prints the float (`0.12345678901234568`, `nan`, `inf`): read exactly, at the step
its key's step key had (the step Miles passed). A database store (`mlflow.db`) is refused, saying what to do.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from build_tools.core._exceptions import Problem, display_path
from build_tools.ingest.sources._common import (
    STEP_KEYS,
    Found,
    MetricRecord,
    checked,
    logged_key,
    number_of_text,
    read_text,
    step_key_of,
)

# Miles' mlflow_utils._sanitize_key: what it replaces by `_` before log_metrics.
_MILES_UNSAFE = re.compile(r"[^a-zA-Z0-9_\-./\s]")
RUN_PARTS = ("metrics", "params", "tags", "artifacts")
LINE = re.compile(r"(-?[0-9]+) (\S+) (-?[0-9]+)")
DATABASE = re.compile(r"\.(db|sqlite|sqlite3)$")
# The tag MLflow's git context writes: the commit of the checkout the entry script (Miles' train.py) is in.
COMMIT_TAG = "mlflow.source.git.commit"
COMMIT = re.compile(r"[0-9a-f]{7,40}")
FILE_STORE_HINT = ("log the run to a file store (MLFLOW_TRACKING_URI=file:./mlruns, with MLFLOW_ALLOW_FILE_STORE=true "
                   "where mlflow asks for it) and copy its folder mlruns/<experiment id>/<run id>/")


def miles_sanitized(key: str) -> str:
    return _MILES_UNSAFE.sub("_", key)


def _name(path: Path) -> str:
    return path.name.removesuffix(".gz")


def run_folder(path: Path) -> Path | None:
    """The run folder a file of the store belongs to (the folder holding meta.yaml beside metrics/), or None."""
    for parent in path.parents:
        if parent.name in RUN_PARTS and _meta(parent.parent) is not None:
            return parent.parent
    if _name(path) == "meta.yaml" and (path.parent / "metrics").is_dir():
        return path.parent
    return None


def _meta(folder: Path) -> Path | None:
    return next((p for p in (folder / "meta.yaml", folder / "meta.yaml.gz") if p.is_file()), None)


def read(files: list[Path], problems: list[Problem], warnings: list[str]) -> Found:
    found = Found("mlflow")
    runs: dict[Path, list[Path]] = {}
    for path in files:
        if DATABASE.search(_name(path)):
            problems.append(Problem(display_path(path), None, None, "an MLflow database store, which only mlflow "
                                    f"reads: {FILE_STORE_HINT}"))
            continue
        folder = run_folder(path)
        if folder is not None:
            runs.setdefault(folder, []).append(path)
        elif _name(path) != "meta.yaml" and ".trash" not in path.parts:  # an experiment's meta.yaml says nothing
            warnings.append(f"{display_path(path)}: not a file of an MLflow run (mlruns/<experiment id>/<run id>/); "
                            "ignored")
    if len(runs) > 1:
        problems.append(Problem(display_path(min(runs)), None, None, f"one of {len(runs)} MLflow runs here ("
                                f"{', '.join(folder.name for folder in sorted(runs))}): a Miles job logs to one run; "
                                "copy only this job's run folder (mlruns/<experiment id>/<run id>/)"))
        return checked(found, problems, warnings)
    for folder, paths in runs.items():
        _read_run(folder, paths, found, problems, warnings)
    return checked(found, problems, warnings)


def _read_run(folder: Path, paths: list[Path], found: Found, problems: list[Problem], warnings: list[str]) -> None:
    metrics = folder / "metrics"
    for path in sorted(paths):
        if folder / "params" in path.parents:
            _read_param(path, found, problems)
            continue
        if path.parent == folder / "tags" and _name(path) == COMMIT_TAG:
            _read_commit(path, found, problems)
            continue
        if metrics not in path.parents:
            continue  # meta.yaml, the other tags: nothing the manual reads
        written_key = "/".join([*path.relative_to(metrics).parent.parts, _name(path)])
        where = display_path(path)
        key = logged_key(written_key, miles_sanitized, warnings, where, "Miles' MLflow backend")
        lines = read_text(path, problems)
        if lines is None:
            continue
        if key not in STEP_KEYS:  # Miles logs its step keys too: their lines are checked, nothing read from them
            found.read_file(where, not any(line.strip() for line in lines))
        _read_metric(key, lines, where, found, problems)


def param_value(text: str, spec: dict[str, Any]) -> Any:
    """One of Miles' arguments from MLflow's text of it (`str(value)`), typed as Miles' parser types the flag; None
    when the text is not a value of that type (it is then left out, as a log's unreadable argument is)."""
    if text == "None":
        return None
    try:
        if spec["action"] in ("store_true", "store_false", "boolean_optional"):
            return {"True": True, "False": False}[text]
        if spec["nargs"] in ("+", "*") or isinstance(spec["nargs"], int):
            items = ast.literal_eval(text)  # a list's repr: literals only, nothing evaluated
            return [param_value(str(item), {**spec, "nargs": None}) for item in items] \
                if isinstance(items, list) else None
        if spec["type"] == "int":
            return int(text) if re.fullmatch(r"-?[0-9]+", text) else None
        if spec["type"] == "float":
            return float(text) if re.fullmatch(r"-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|-?inf|nan", text) else None
    except (KeyError, ValueError, SyntaxError):
        return None
    return text


# SGLang's flags that run.yaml keeps (Miles registers them from SGLang's ServerArgs, so its parser data has none):
# typed as what their text reads as.
_PLAIN_SPEC = {"action": "store", "nargs": None, "type": None, "default": None}


def _spec_of(name: str) -> dict[str, Any] | None:
    from build_tools.ingest import miles_facts, schemas_run

    spec = miles_facts.flags().get(name)
    if spec is None and name.startswith("sglang_") and name in schemas_run.Flags.model_fields:
        return _PLAIN_SPEC
    return spec


def _plain_value(text: str) -> Any:
    for kind in ("int", "float"):
        if (value := param_value(text, {**_PLAIN_SPEC, "type": kind})) is not None:
            return value
    return {"True": True, "False": False}.get(text, text)


# The arguments run.yaml is filled from (make add-run), read even at their defaults: the run's own values.
RUN_YAML_READS = ("seed", "actor_num_nodes", "actor_num_gpus_per_node", "num_gpus_per_node", "rollout_num_gpus")


def _read_param(path: Path, found: Found, problems: list[Problem]) -> None:
    """A param that is one of Miles' flags, typed as a log's launch arguments are read: one run.yaml holds, or any
    other not at its default (Miles logs every argument; one at its default says nothing of the launch)."""
    from build_tools.ingest import schemas_run

    name = _name(path)
    spec = _spec_of(name)
    lines = read_text(path, problems)
    if spec is None or lines is None:
        return
    text = "\n".join(lines)
    value = _plain_value(text) if spec is _PLAIN_SPEC and text != "None" else param_value(text, spec)
    if value is not None and (value != spec["default"] or name in RUN_YAML_READS
                              or name in schemas_run.Flags.model_fields):
        found.args[name] = (value, display_path(path), 1)


def _read_commit(path: Path, found: Found, problems: list[Problem]) -> None:
    lines = read_text(path, problems)
    text = "\n".join(lines or []).strip()
    if COMMIT.fullmatch(text):
        found.origin["miles_commit"] = (text, display_path(path))


def _read_metric(key: str, lines: list[str], where: str, found: Found, problems: list[Problem]) -> None:
    step_key = step_key_of(key)
    if step_key is None:
        found.unplaced_key(where, key)
        return
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        match = LINE.fullmatch(text.strip())
        value = number_of_text(match[2]) if match else None
        if match is None or value is None:
            problems.append(Problem(where, number, None, f"{text.strip()[:60]!r}: expected MLflow's metric line, "
                                    "'<timestamp in ms> <value> <step>'"))
            continue
        if key in STEP_KEYS:
            continue  # Miles logs its step key too: the step of every line already says it
        ts = int(match[1]) / 1000
        found.saw_time(ts)
        data = {"ts": ts, "step_key": step_key, "step": int(match[3]), "metrics": {key: value}}
        found.add("metrics", MetricRecord(data, where, number, {key: match[2]},
                                          {"ts": "timestamp", "step": "step", "metrics": "{key}"}))
