"""The standard output and error of a Miles job (`log/`: `*.log`, `*.txt`, plain or gzipped).

What a line may look like (miles-outputs.md, sections 1 and 6):

    (MegatronTrainRayActor pid=4242, ip=10.0.0.5) [2026-08-21 18:09:36.123 actor_cell0_rank0] \
        train_metric_utils.py:56 - perf 3: {'perf/step_time': np.float64(61.7), ...} [repeated 2x across cluster]

The Ray prefix, the ANSI colours around it, the process name, the milliseconds and Ray's repeat note are all
optional. A payload is a Python dict repr: it is parsed as a literal tree (`ast.parse`, then only constants,
signs, `nan`/`inf` and `np.float64(...)`-style wrappers are accepted), never evaluated. A line that looks like a
metrics line but cannot be read is a warning naming file and line, and gives no value. Times are read as UTC
(the Miles images log in the container's time zone, UTC).
"""

from __future__ import annotations

import ast
import datetime as dt
import json
import math
import re
import shlex
from pathlib import Path
from typing import Any

import numpy as np

from build_tools.core._exceptions import Problem, display_path
from build_tools.core._types import Record
from build_tools.ingest import schemas_dump
from build_tools.ingest.sources._common import Found, MetricRecord, checked, misread_of, precision, read_text, written
from build_tools.ingest.sources._json import whole

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# The environment report a train actor or engine prints with --env-report (miles/utils/env_report.py
# _print_report): one JSON object after this prefix, whose git_repos name the commit of each editable package
# that is a git checkout; Miles' own is the job's Miles commit.
ENV_REPORT = "ENV_REPORT_JSON="
COMMIT = re.compile(r"[0-9a-f]{7,40}")
# Ray's prefix on a line an actor printed: "(RolloutManager pid=4243)", "(raylet, ip=10.0.6.140)".
RAY_PREFIX = re.compile(r"^\((?P<actor>[A-Za-z_][\w.:\-]*)(?: pid=(?P<pid>[0-9]+))?"
                        r"(?:, ip=(?P<ip>[0-9a-fA-F.:]+))?\)\s?")
# Every pattern that `search`es a line starts at a literal or the first digit of a number, and bounds what it
# skips: a search that could start anywhere and scan to the end is quadratic, minutes on a long line.
REPEATED = re.compile(r"\[repeated [0-9]+x across cluster\]\s*$")
# "[2026-08-21 18:09:36.123 actor_cell0_rank0]" (Miles), "[2026-08-21 18:09:36]" (older slime, SGLang),
# "[2025-03-29 18:56:25 TP0]" (SGLang), "[2023-04-09 07:23:59,445 E 395 395]" (the raylet).
STAMP = re.compile(r"\[(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2}) (?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2})"
                   r"(?:[.,](?P<frac>[0-9]{1,6}))?"
                   r"(?: (?P<proc>[^\]]*))?\]\s?")
SOURCE = re.compile(r"^(?P<file>[\w.]+\.py):[0-9]+ - ")
METRICS = re.compile(r"^(?:(?P<role>[a-z_]+)-)?(?P<kind>perf|rollout|multi_turn|step|eval) (?P<n>-?[0-9]+): "
                     r"(?P<payload>\{.*)$")
LOOKS_LIKE_METRICS = re.compile(r"(?:^|[\s\-])(?:perf|rollout|multi_turn|step|eval)\W?\S{0,60}\s{0,20}:\s*\{")
# multi_turn N: the trainer's --log-multi-turn means (training_utils/log_utils.py gather_log_data), on rollout/step.
STEP_KEY = {"perf": "rollout/step", "rollout": "rollout/step", "multi_turn": "rollout/step", "step": "train/step",
            "eval": "eval/step"}
TIMER_START = re.compile(r"^Timer (?P<name>\S+) start$")
TIMER_END = re.compile(r"^Timer (?P<name>\S+) end \(elapsed: (?P<elapsed>[0-9.]+)s\)$")
CPU_MEMORY = re.compile(r"^\[CPU memory\] (?P<label>.+?): (?P<gb>[0-9.]+) GB "
                        r"\(rollout_id=(?P<rollout>-?[0-9]+), step=(?P<step>-?[0-9]+)\)$")
# Megatron's _print_args: "---- arguments ----", "  name ...... value", "---- end of arguments ----".
ARGS_BEGIN = re.compile(r"^-+ arguments -+$")
ARGS_END = re.compile(r"^-+ end of arguments -+$")
ARG_LINE = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*) \.+ (?P<value>.*)$")
ROLLOUT_MANAGER_TIMERS = ("rollout", "eval_rollout")
# The launch command a script echoes (`set -x`, or `ray job submit ... -- python3 train.py --flag value ...`).
LAUNCH = re.compile(r"(?:^|\s)(?:\S*/)?train(?:_async)?\.py\s+(?P<args>--.*)$")
NEGATABLE = ("offload_train", "offload_rollout", "colocate", "use_fault_tolerance")  # flags with a --no- form

# The messages that mark a kill, a dead engine and the job's end, exactly as Ray and SGLang print them.
EVENT_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # Ray's raylet, src/ray/raylet/node_manager.cc (the worker-kill summary it sends to the driver), e.g.
    # "(raylet) node_manager.cc:3040: 1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers
    # crashed due to other reasons at node (ID: ..., IP: ...) over the last time period." as shown in
    # ray-project/ray doc/source/ray-core/scheduling/ray-oom-prevention.rst.
    ("ray_oom_kill", re.compile(r"(?<![0-9])(?P<count>[0-9]+) Workers \(tasks / actors\) killed due to memory pressure "
                                r"\(OOM\)")),
    # The error a caller gets (ray.exceptions.OutOfMemoryError), same .rst: "Task was killed due to the node
    # running low on memory." and the newer form "1 worker(s) were killed due to the node running low on memory."
    ("ray_oom_kill", re.compile(r"Task was killed due to the node running low on memory\.")),
    ("ray_oom_kill", re.compile(r"(?<![0-9])(?P<count>[0-9]+) worker\(s\) were killed due to the node running low on "
                                r"memory")),
    # SGLang, python/sglang/srt/managers/scheduler.py run_scheduler_process: logger.error(f"Scheduler hit an
    # exception: {traceback}"), then it sends SIGQUIT to its parent.
    ("engine_death", re.compile(r"Scheduler hit an exception: ")),
    # SGLang, python/sglang/srt/entrypoints/engine.py: the parent's sigquit_handler and sigchld_handler, and the
    # launch check in _launch_subprocesses.
    ("engine_death", re.compile(r"Received sigquit from a child process\. It usually means the child failed\.")),
    ("engine_death", re.compile(r"Child process unexpectedly failed with an exit code -?[0-9]+\. pid=[0-9]+")),
    ("engine_death", re.compile(r"Rank [0-9]+ scheduler is dead\. Please check if there are relevant logs\.")),
    # Ray's job CLI, python/ray/dashboard/modules/job/cli.py _log_job_status: "Job '{job_id}' succeeded",
    # "Job '{job_id}' was stopped", "Job '{job_id}' failed".
    ("job_end", re.compile(r"Job '(?P<job>[^']+)' (?:succeeded|failed|was stopped)")),
)
SAME_EVENT_WITHIN_S = 60.0  # one kill or one death prints several of these lines: one event for them all

MAX_PAYLOAD = 1_000_000
NUMPY_SCALARS = re.compile(r"^(?:float|int|uint)(?:8|16|32|64|128)?$|^bool_?$|^float_$|^longlong$|^double$")


class PayloadError(ValueError):
    """A metrics payload that is not a dict of plain literals."""


def read(files: list[Path], problems: list[Problem], warnings: list[str]) -> Found:
    found = Found("log")
    for path in files:
        _read_file(path, found, problems, warnings)
    return checked(found, problems, warnings)


def _read_file(path: Path, found: Found, problems: list[Problem], warnings: list[str]) -> None:
    lines = read_text(path, problems)
    if lines is None:
        return
    where = display_path(path)
    found.read_file(where, not any(line.strip() for line in lines))
    if lines[-1].strip():
        warnings.append(f"{where}:{len(lines)}: last line has no newline (cut off when the job ended); skipped")
    last_ts: float | None = None
    open_timers: dict[tuple[str, str], float] = {}
    events: list[tuple[str, float | None, str, int]] = []  # kind, ts, the line, line number
    in_args = False
    launched: dict[str, tuple[Any, str, int]] = {}
    for number, raw in enumerate(lines[:-1], start=1):
        text = ANSI.sub("", raw).rstrip("\r")
        prefix = RAY_PREFIX.match(text)
        ip = prefix["ip"] if prefix else None
        process = f"{prefix['actor']}:{prefix['pid']}" if prefix else ""
        body = _without_repeat(text[prefix.end():] if prefix else text)
        stamp = STAMP.match(body)
        ts = None
        if stamp:
            ts = _timestamp(stamp)
            if ts is None:
                warnings.append(f"{where}:{number}: timestamp {stamp.group(0).strip()} is not a valid date; "
                                "line skipped")
                continue
            if (wrong := schemas_dump.value_problem("time", ts)) is not None:
                problems.append(Problem(where, number, "timestamp", f"{stamp.group(0).strip()}: {wrong}"))
                continue
            last_ts = ts
            found.saw_time(ts)
            process = f"{process}/{stamp['proc'] or ''}"
            body = body[stamp.end():]
        source = SOURCE.match(body)
        message = body[source.end():] if source else body
        message = message.strip()
        if (launch := LAUNCH.search(message)) and not launched:
            launched = {name: (value, where, number) for name, value in _launch_args(launch["args"]).items()}
            continue
        if message.startswith(ENV_REPORT):
            _env_report(message.removeprefix(ENV_REPORT), f"{where}:{number}", found)
            continue
        if ARGS_BEGIN.match(message):
            in_args = True
            continue
        if in_args:
            if ARGS_END.match(message):
                in_args = False
            elif arg := ARG_LINE.match(message):
                found.args.setdefault(arg["name"], (_arg_value(arg["value"]), where, number))
            continue
        if match := METRICS.match(message):
            _metrics_line(match, ts if ts is not None else last_ts, where, number, found, warnings)
        elif match := TIMER_END.match(message):
            _timer_end(match, ts, open_timers, process, ip, where, number, found, problems, warnings)
        elif match := TIMER_START.match(message):
            if ts is not None:
                open_timers[(process, match["name"])] = ts
        elif match := CPU_MEMORY.match(message):
            _cpu_memory(match, ts if ts is not None else last_ts, where, number, found, warnings)
        elif LOOKS_LIKE_METRICS.search(message):
            warnings.append(f"{where}:{number}: looks like a metrics line but is not "
                            "'perf|rollout|multi_turn|step|eval N: {...}' (a wrapped, misread or interleaved line); "
                            "its values are not read")
        else:
            for kind, pattern in EVENT_PATTERNS:
                event = pattern.search(message)
                if event and event.groupdict().get("count") != "0":
                    events.append((kind, ts if ts is not None else last_ts, message, number))
                    break
    _add_events(events, last_ts, where, found, warnings)
    for name, item in launched.items():  # the resolved arguments Megatron prints win over the command line
        found.args.setdefault(name, item)


def _env_report(text: str, where: str, found: Found) -> None:
    """The Miles commit of an environment report, if it names one (a report that is not JSON says nothing)."""
    try:
        report = json.loads(text)
    except ValueError:
        return
    repos = report.get("git_repos") if isinstance(report, dict) else None
    for repo in repos if isinstance(repos, list) else []:
        commit = repo.get("commit") if isinstance(repo, dict) and repo.get("package_name") == "miles" else None
        if isinstance(commit, str) and COMMIT.fullmatch(commit):
            found.origin.setdefault("miles_commit", (commit, where))


def _without_repeat(text: str) -> str:
    """The line without Ray's "[repeated 2x across cluster]" note at its end."""
    note = REPEATED.search(text)
    return text[:note.start()].rstrip() if note else text


def _launch_args(text: str) -> dict[str, Any]:
    """`--n-samples-per-prompt 8 --colocate --no-offload-train` as {n_samples_per_prompt: 8, ...}."""
    try:
        words = shlex.split(text)
    except ValueError:
        return {}
    args: dict[str, Any] = {}
    name: str | None = None
    values: list[Any] = []
    for word in [*words, "--"]:
        if word.startswith("--"):
            if name:
                args[name] = True if not values else values[0] if len(values) == 1 else values
            name, values = word[2:].replace("-", "_") or None, []
            if name and name.startswith("no_") and name[3:] in NEGATABLE:
                args[name[3:]], name = False, None
        elif name:
            values.append(_arg_value(word))
    return args


def _timestamp(stamp: re.Match[str]) -> float | None:
    try:
        when = dt.datetime.fromisoformat(f"{stamp['date']}T{stamp['time']}").replace(tzinfo=dt.UTC)
    except ValueError:
        return None
    frac = stamp["frac"] or ""
    return when.timestamp() + (int(frac) / 10 ** len(frac) if frac else 0.0)


def _metrics_line(match: re.Match[str], ts: float | None, where: str, number: int, found: Found,
                  warnings: list[str]) -> None:
    kind, step = match["kind"], whole(match["n"])
    try:
        values, texts = parse_payload(match["payload"])
    except PayloadError as err:
        warnings.append(f"{where}:{number}: {kind} {step}: payload not readable ({err}); its values are not read")
        return
    metrics = {}
    for key, value in values.items():
        if value is None:
            continue
        if (known := misread_of(key)) is not None:
            warnings.append(f"{where}:{number}: key {key!r} looks like a misreading of {known!r}; kept under the "
                            "name it has, not read as that key")
        if isinstance(value, int | float | bool):
            metrics[key] = value
        else:
            warnings.append(f"{where}:{number}: {key}: {type(value).__name__} value is not a number; not read")
    step_key = STEP_KEY[kind]
    # The step Miles logs against: rollout/step and eval/step are the rollout id; step N is train/step itself.
    record_step = step
    if isinstance(metrics.get(step_key), int) and not isinstance(metrics.get(step_key), bool):
        record_step = int(metrics[step_key])
    data = {"ts": ts if ts is not None else math.nan, "step_key": step_key, "step": record_step, "metrics": metrics}
    found.add("metrics", MetricRecord(data, where, number, texts))


def parse_payload(text: str) -> tuple[dict[str, Any], dict[str, str]]:
    """A Python dict repr as plain values and each value's text; never evaluates anything."""
    if len(text) > MAX_PAYLOAD:
        raise PayloadError("longer than a million characters")
    text = text.strip()
    if not text.endswith("}"):
        raise PayloadError("it does not end with '}': wrapped, cut off, or another process's output inside it")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        raise PayloadError(f"not a Python dict literal: {getattr(err, 'msg', err)}") from None
    node = tree.body
    if not isinstance(node, ast.Dict):
        raise PayloadError("not a dict")
    encoded = text.encode("utf-8")
    values: dict[str, Any] = {}
    texts: dict[str, str] = {}
    for key_node, value_node in zip(node.keys, node.values, strict=True):
        if not (isinstance(key_node, ast.Constant) and isinstance(key_node.value, str)):
            raise PayloadError("a key that is not a string")
        values[key_node.value] = _literal(value_node)
        inner = _innermost(value_node)
        texts[key_node.value] = encoded[inner.col_offset:inner.end_col_offset].decode("utf-8")
        if isinstance(value_node, ast.Call) and isinstance(values[key_node.value], float) and \
                texts[key_node.value] != repr(values[key_node.value]) and _narrow(value_node):
            texts[key_node.value] = repr(values[key_node.value])  # np.float32(0.53): 0.5299999713897705
    return values, texts


def _innermost(node: ast.expr) -> ast.expr:
    """The number's own text: np.float64(0.5) -> 0.5; a sign stays with its number."""
    while isinstance(node, ast.Call):
        node = node.args[0]
    return node


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | bool | str | type(None)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _literal(node.operand)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise PayloadError("a sign before something that is not a number")
        return written(-value) if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Name) and node.id in ("nan", "inf", "NaN", "Infinity"):
        return written(math.nan if node.id.lower() == "nan" else math.inf)
    if (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords
            and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
            and node.func.value.id in ("np", "numpy") and NUMPY_SCALARS.match(node.func.attr)):
        value = _literal(node.args[0])
        # np.float32(0.53) prints its shortest text; the value the trackers got is that float32's.
        narrow = node.func.attr in ("float32", "float16")
        if narrow and isinstance(value, float) and math.isfinite(value):
            return float(getattr(np, node.func.attr)(value))
        return value
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(item) for item in node.elts]
    raise PayloadError(f"{ast.unparse(node)[:40]!r} is not a plain value")


def _narrow(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Attribute) and node.func.attr in ("float32", "float16")


def _arg_value(text: str) -> Any:
    text = text.strip()
    try:
        return _literal(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, PayloadError, RecursionError):
        return text


def _timer_end(match: re.Match[str], ts: float | None, open_timers: dict[tuple[str, str], float], process: str,
               ip: str | None, where: str, number: int, found: Found, problems: list[Problem],
               warnings: list[str]) -> None:
    name = match["name"]
    if ts is None:
        warnings.append(f"{where}:{number}: Timer {name} end has no timestamp; phase not read")
        return
    try:
        elapsed = float(match["elapsed"])
    except ValueError:
        warnings.append(f"{where}:{number}: Timer {name} end: elapsed {match['elapsed']!r} is not a number")
        return
    if (wrong := schemas_dump.value_problem("duration", elapsed)) is not None:
        problems.append(Problem(where, number, f"Timer {name} elapsed", wrong))
        return
    start = open_timers.pop((process, name), None)
    # The start line's time is exact to the millisecond; the printed elapsed only to a tenth of a second.
    t0 = start if start is not None and abs((ts - start) - elapsed) <= 0.05 + 1e-3 else ts - elapsed
    manager = name in ROLLOUT_MANAGER_TIMERS
    data: dict[str, Any] = {"name": name, "t0": t0, "t1": ts, "node": ip or "", "gpus": [],
                            "rank": -1 if manager else 0, "role": "rollout_manager" if manager else "train"}
    found.add("phases", Record(data, where, number))


def _cpu_memory(match: re.Match[str], ts: float | None, where: str, number: int, found: Found,
                warnings: list[str]) -> None:
    # Miles logs the same number to the trackers as perf/cpu_memory_{label}_gb against rollout/step.
    key = f"perf/cpu_memory_{match['label']}_gb"
    try:
        gb = float(match["gb"])
    except ValueError:
        warnings.append(f"{where}:{number}: [CPU memory] {match['gb']!r} GB is not a number; not read")
        return
    data = {"ts": ts if ts is not None else math.nan, "step_key": "rollout/step", "step": whole(match["step"]),
            "metrics": {key: gb}}
    # Printed with :.2f, the number the trackers got to full precision: a more precise source's value is kept.
    found.add("metrics", MetricRecord(data, where, number, {key: match["gb"]}, units={key: precision(match["gb"])}))


def _add_events(events: list[tuple[str, float | None, str, int]], last_ts: float | None, where: str, found: Found,
                warnings: list[str]) -> None:
    """One event per kill, death or end: lines of one kind close together in time are one event."""
    end_ts = max((ts for kind, ts, _, _ in events if kind == "job_end" and ts is not None), default=last_ts)
    previous: dict[str, float] = {}
    for kind, ts, line, number in events:
        if ts is None:
            warnings.append(f"{where}:{number}: {kind} line before any timestamp; not read")
            continue
        if kind in previous and ts - previous[kind] <= SAME_EVENT_WITHIN_S:
            previous[kind] = ts
            continue
        previous[kind] = ts
        if kind == "job_end" and ts != end_ts:
            continue
        t1 = max(end_ts, ts) if kind == "engine_death" and end_ts is not None else ts
        detail = f"{where}:{number}: {line}"[:500]
        found.add("events", Record({"kind": kind, "t0": ts, "t1": t1, "detail": detail}, where, number))
