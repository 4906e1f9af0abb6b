"""Miles' own code in the repository, pinned, and the one door the build runs it through.

upstream/ holds the Miles modules the manual needs (argument parsing and validation, the FSDP actor's start-up
arithmetic, the dashboard writer and advisor, the tracking backends), copied verbatim from the commit
upstream/MANIFEST.json names, with SGLang's and the router's flag definitions (sources.py says which and why;
`make miles-code MILES=checkout` copies them again). They run only in a process of their own (run.py: its TASKS
table, among them Miles' dashboard writer, write_dump.py, and its advisor, advise.py), every
module outside them (torch, Ray, NVML, transformers, ...) an inert stand-in (stand_ins.py): the build's process
never imports them, nor any GPU stack.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
UPSTREAM = HERE / "upstream"
MANIFEST = UPSTREAM / "MANIFEST.json"
RUN = HERE / "run.py"
# run.py's exit code when the machine, not the harness, stopped it: an OSError reading a run's file or
# writing its scratch copy (TMPDIR full, a file gone); its last line on stderr says which. sysexits' EX_TEMPFAIL.
ENVIRONMENT_FAILED = 75


@cache
def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return data


def miles_commit() -> str:
    """The Miles commit upstream/ was copied from."""
    return str(manifest()["miles"]["commit"])


def _ask(request: dict[str, Any]) -> Any:
    """Run one request in Miles' process (run.py) and return its answer. The process has none of the caller's
    MILES_* variables (Miles' parse_args reads them) and writes no bytecode into upstream/."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("MILES")}
    done = subprocess.run([sys.executable, "-I", "-B", str(RUN)], input=json.dumps(request), capture_output=True,
                          text=True, check=False, env=environment)
    _stopped(request["task"], done.returncode, done.stderr)
    return json.loads(done.stdout)


def _stopped(task: str, code: int, stderr: str) -> None:
    """Why Miles' process ended without an answer. The machine's doing is the user's to fix, in one line: a signal
    (the kernel's out-of-memory killer sends SIGKILL), or an OSError run.py caught. Anything else is Miles' pinned
    code failing where the harness should have caught it (a launch's own refusal is an answer), or a stand-in it
    lacks: the harness's fault, a bug."""
    from build_tools.core._escape import terminal_text
    from build_tools.core._exceptions import miles_process_stopped

    if code == 0:
        return
    if code < 0:
        name = next((known.name for known in signal.Signals if known == -code), f"signal {-code}")
        raise miles_process_stopped(task, f"killed by {name}")
    if code == ENVIRONMENT_FAILED:
        raise miles_process_stopped(task, terminal_text((stderr.strip().splitlines() or ["an OSError"])[-1]))
    raise RuntimeError(f"{RUN.name} {task} failed ({code}):\n{stderr[-4000:]}")


def judge_launches(commands: Sequence[Sequence[str]]) -> list[dict[str, Any]]:
    """Each command (the words after `python3 train.py`) as Miles starts it: its parse_args, then the FSDP actor's
    start-up arithmetic. For each: {"stopped": False, "global_batch_size", "train_iters"} or {"stopped": True,
    "where": "miles/...py:LINE", "message": what Miles said}."""
    if not commands:
        return []
    answer: list[dict[str, Any]] = _ask({"task": "launch", "source": str(UPSTREAM),
                                         "commands": [list(command) for command in commands]})
    return answer


def mlflow_params(command: Sequence[str]) -> dict[str, str]:
    """The params Miles' MLflow backend logs for this launch (its parse_args, then _compute_config_for_logging):
    every argument, as text. What a test writes with mlflow to give the reader an MLflow run as Miles makes it."""
    answer: dict[str, str] = _ask({"task": "mlflow_params", "source": str(UPSTREAM), "commands": [list(command)]})
    return answer


def env_report(checkout: Path) -> str:
    """The environment report a Miles train actor prints (--env-report) when Miles is installed from this git
    checkout, as Miles' own code writes it: what a test puts in a log to give the reader a job's Miles commit."""
    answer: str = _ask({"task": "env_report", "source": str(UPSTREAM), "commands": [[str(checkout)]]})
    return answer


def follow_dumps(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Miles' advisor over each run's dashboard dump as it was written (advise.py; the request's form there)."""
    answer: dict[str, Any] = _ask({"task": "advise", "source": str(UPSTREAM), "runs": list(runs)})
    return answer


def write_dumps(jobs: Sequence[dict[str, Any]]) -> None:
    """Each job's dashboard dump, written by Miles' own writer (write_dump.py; the job's form there)."""
    _ask({"task": "write_dump", "source": str(UPSTREAM), "jobs": list(jobs)})


def dump_snapshots(argvs: Sequence[Sequence[str]]) -> list[dict[str, Any]]:
    """What Miles keeps of each launch in meta.json (run_name, args), by its own parse_args and CollectorConfig."""
    answer: list[dict[str, Any]] = _ask({"task": "write_dump", "source": str(UPSTREAM),
                                         "snapshots": [list(words) for words in argvs]})
    return answer
