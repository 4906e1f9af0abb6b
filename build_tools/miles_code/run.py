"""The process Miles' own code runs in: `python -I -B run.py` with a JSON request on stdin, a JSON answer on stdout.

Started by __init__.py (the build) and refresh.py (`make miles-code`), never imported by them: it installs the
inert stand-ins (stand_ins.py) for its own process, so that no GPU stack, and no stand-in, reaches the build's.

Requests: {"task": "launch", "source": folder, "commands": [[word, ...], ...]}: each command (the words after
`python3 train.py`) goes through Miles' parse_args, as train.py calls it, then the start-up arithmetic of the
FSDP actor's init (its LR scheduler: get_lr_scheduler). {"task": "record", ...}: the same for one command, after
importing every entry module, answering which of the source's Miles files were imported. {"task":
"mlflow_params", ...}: the params Miles' MLflow backend logs for one command. {"task": "env_report",
"commands": [[checkout]]}: the environment report line a train actor prints when Miles is that git checkout.
{"task": "advise", "runs": [...]}: Miles' advisor over each run's dump as it was written (advise.py).
{"task": "write_dump", "jobs": [...]} writes each job's dashboard dump with Miles' own writer; {"task":
"write_dump", "snapshots": [argv, ...]} answers what Miles keeps of each launch in meta.json (write_dump.py).
An OSError (a file gone, TMPDIR full) is the machine's: one line on stderr, exit ENVIRONMENT_FAILED.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import sys
import traceback
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # -I leaves the script's folder off the path

from build_tools.miles_code import ENVIRONMENT_FAILED, advise, sources, stand_ins, write_dump  # noqa: E402


def _where(error: BaseException, source: Path) -> str:
    """The innermost line of Miles' (or SGLang's) code the error passed through, as `path:line` in the source."""
    found = ""
    for frame in traceback.extract_tb(error.__traceback__):
        path = Path(frame.filename)
        if path.is_relative_to(source):
            found = f"{path.relative_to(source).as_posix()}:{frame.lineno}"
    return found


def _message(error: BaseException, printed: str) -> str:
    """What Miles says when it stops: argparse's `error:` line, else the exception's first line."""
    if isinstance(error, SystemExit):
        said = [line.split(" error: ", 1)[1] for line in printed.splitlines() if " error: " in line]
        return f"SystemExit({error.code}): {said[-1]}" if said else f"SystemExit({error.code})"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def judge_launch(argv: list[str], source: Path) -> dict[str, Any]:
    """One launch as train.py starts it: parse_args() with these words as its argv, then the FSDP actor's
    `self.lr_scheduler = get_lr_scheduler(args, self.optimizer)` (actor.py FSDPTrainRayActor.init), which every
    start runs after loading the model. Where Miles stops it: the file and line, and what it said."""
    arguments = importlib.import_module("miles.utils.arguments")
    scheduler = importlib.import_module("miles.backends.fsdp_utils.lr_scheduler")
    sys.argv = ["train.py", *argv]
    printed = io.StringIO()
    try:
        with redirect_stderr(printed):
            args = arguments.parse_args()
            scheduler.get_lr_scheduler(args, stand_ins.inert_class("torch.optim.AdamW()"))
    except (Exception, SystemExit) as error:
        return {"stopped": True, "where": _where(error, source), "message": _message(error, printed.getvalue())}
    return {"stopped": False, "global_batch_size": args.global_batch_size, "train_iters": args.train_iters}


def mlflow_params(argv: list[str]) -> dict[str, str]:
    """What Miles' MLflow backend logs as the run's params for this launch: train.py's parse_args, then
    mlflow_utils._compute_config_for_logging of the arguments (every one, as text), as init_tracking does."""
    arguments = importlib.import_module("miles.utils.arguments")
    mlflow_utils = importlib.import_module("miles.utils.tracking_utils.mlflow_utils")
    sys.argv = ["train.py", *argv]
    with redirect_stderr(io.StringIO()):
        args = arguments.parse_args()
    params: dict[str, str] = mlflow_utils._compute_config_for_logging(args)
    return params


def env_report(checkout: str) -> str:
    """The line a train actor prints with --env-report when Miles is installed from this git checkout: Miles'
    own _collect_git_info (git rev-parse and diff in the checkout) and _print_report."""
    module = importlib.import_module("miles.utils.env_report")
    repo = module._collect_git_info(package_name="miles", location=checkout)
    report = module.NodeEnvReport(role="actor", rank=0, launcher_env_report=None, editable_packages=[],
                                  git_repos=[repo], full_pip_list=[])
    printed = io.StringIO()
    with redirect_stdout(printed):
        module._print_report(report)
    return printed.getvalue()


def record(argv: list[str], source: Path) -> list[str]:
    """The Miles files the entry modules import, and the launch imports as it runs."""
    for name in sources.MILES_ENTRIES:
        importlib.import_module(name)
    judge_launch(argv, source)
    # The paths as imported (through the source folder on sys.path), not resolved: the checkout may be linked in.
    found = {Path(file) for name, module in list(sys.modules.items())
             if name.split(".")[0] == "miles" and (file := getattr(module, "__file__", None))}
    return sorted(path.relative_to(source).as_posix() for path in found if path.is_relative_to(source))


# Each task: what it does with the request (its commands: lists of words) and the source folder. A new use of Miles'
# code is a function here and a door to it in __init__.py.
TASKS: dict[str, Callable[[dict[str, Any], Path], Any]] = {
    "launch": lambda request, source: [judge_launch(argv, source) for argv in request["commands"]],
    "record": lambda request, source: record(request["commands"][0], source),
    "mlflow_params": lambda request, source: mlflow_params(request["commands"][0]),
    "env_report": lambda request, source: env_report(request["commands"][0][0]),
    "advise": lambda request, source: {run["run_id"]: advise.follow_run(run) for run in request["runs"]},
    "write_dump": lambda request, source: write_dump.write(request),
}


def main() -> int:
    request = json.loads(sys.stdin.read())
    source = Path(request["source"]).resolve()
    answer_to = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever Miles prints goes to stderr; stdout carries the answer alone
    stand_ins.install(source, request.get("inert", ()))
    try:
        answer = TASKS[request["task"]](request, source)
    except OSError as error:  # the machine's doing (a file gone, TMPDIR full), not the harness's: said in one line
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        return ENVIRONMENT_FAILED
    answer_to.write(json.dumps(answer))
    answer_to.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
