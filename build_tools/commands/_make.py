"""make's door into the command line: make variables arrive as values, are checked, and become single arguments.

The Makefile exports EDITION, RUN, FROM, TO, BRANCH, REMOTE, PORT, PUSH, REPLACE, SRC, ID, RAY, ALL, WARN_MARGIN,
STRICT, FORMAT, FAIL_ON, UNTIL_IDLE, WHAT, PROVE and FORCE to the
environment as the exact text typed, and runs `python -m build_tools.commands._make TARGET`; no variable is ever written
into a recipe's shell line. Every value is checked here before anything happens, then passed to `manual` (cli.py)
as one argument. make reports every failure as its own exit 2, so this prints which outcome it was.
`python -m build_tools.commands._make --variables check` checks the variables of the targets named and runs
nothing: make runs it before it installs what a variable asks for (Ray, for RAY).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from build_tools.cli import _err, report
from build_tools.core._exceptions import (
    EXIT_BAD_INPUT,
    EXIT_CLAIM_FAILED,
    EXIT_DIFFERS,
    EXIT_GOAL_MISSED,
    EXIT_MARGIN,
    EXIT_OUTSIDE,
    ManualError,
    bench_without,
    missing_make_variable,
    not_a_bench,
    not_a_format,
    not_a_port,
    not_a_run_id,
    not_a_watch_choice,
    not_an_edition_variable,
)
from build_tools.core._settings import flag as _flag

OUTCOMES = {
    1: "a bug",
    EXIT_BAD_INPUT: "bad input",
    EXIT_CLAIM_FAILED: "a claim failed (or, with PROVE=1, was not shown able to fail)",
    EXIT_DIFFERS: "verify found a difference",
    EXIT_GOAL_MISSED: "a benchmark goal was missed",
    EXIT_MARGIN: "a claim's margin is below the warning threshold (STRICT=1)",
    EXIT_OUTSIDE: "something went outside the manual's ranges or claims (make watch)",
    130: "interrupted",
    143: "terminated",
}



def _edition(env: Mapping[str, str], name: str, example: str) -> str:
    from build_tools.editions.edition import EDITION_NUMBER

    value = env.get(name, "")
    if value and not EDITION_NUMBER.match(value):
        raise not_an_edition_variable(name, value, example)
    return value


def _branch(env: Mapping[str, str], root: Path) -> list[str]:
    from build_tools.editions import edition

    value = env.get("BRANCH", "")
    if not value:
        return []
    edition.check_branch(root, value)
    return [f"--branch={value}"]


def _remote(env: Mapping[str, str], root: Path) -> list[str]:
    from build_tools.editions import edition

    value = env.get("REMOTE", "")
    if not value:
        return []
    edition.check_remote(root, value)
    return [f"--remote={value}"]


def _port(env: Mapping[str, str]) -> list[str]:
    value = env.get("PORT", "")
    if not value:
        return []
    if not (value.isascii() and value.isdigit() and 1 <= int(value) <= 65535):
        raise not_a_port(value)
    return [f"--port={int(value)}"]


def _run(env: Mapping[str, str], target: str = "compare") -> list[str]:
    value = env.get("RUN", "")
    if not value:
        raise missing_make_variable("RUN", target)
    # A path, never an option: one that starts with '-' is made relative so that it cannot be read as one.
    return [f"./{value}" if value.startswith("-") else value]


def _source(env: Mapping[str, str]) -> list[str]:
    value = env.get("SRC", "")
    if not value:
        raise missing_make_variable("SRC")
    return [f"./{value}" if value.startswith("-") else value]


def _run_id(env: Mapping[str, str]) -> list[str]:
    value = env.get("ID", "")
    if value and not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", value):
        raise not_a_run_id(value)
    return [f"--id={value}"] if value else []


def _ray(env: Mapping[str, str]) -> list[str]:
    """RAY: auto, local or a head's HOST:PORT, checked here too, so that make can check it before it installs Ray
    (`make variables`, which the Ray extra's stamp waits for). Imported only when RAY is set: _ray.py imports the
    summaries' types (pandas), which the no-op `make check` must not pay for."""
    value = env.get("RAY", "")
    if not value:
        return []
    from build_tools.summarise._ray import check_address

    check_address(value, "RAY")
    return [f"--ray={value}"]


# WHAT: what `make bench` measures besides the build (bench.py): make serve's goals or manual watch's.
BENCHES = ("serve", "watch")


def _bench(env: Mapping[str, str]) -> list[str]:
    """bench reads RAY, SCALE, ALL and WHAT itself (bench.py); RAY, ALL and WHAT are checked here first."""
    _ray(env)
    _flag(env, "ALL")
    what = env.get("WHAT", "")
    if what and what not in BENCHES:
        raise not_a_bench(what, BENCHES)
    # WHAT=serve reads SCALE (its generated runs); neither reads RAY, nor watch SCALE: refused, not ignored.
    for name in ("RAY", *(["SCALE"] if what == "watch" else [])):
        if what and env.get(name):
            raise bench_without(what, name)
    return ["bench"]


def _margin_options(env: Mapping[str, str]) -> list[str]:
    """WARN_MARGIN (checked by the command, as --warn-margin), STRICT=1 and FORMAT=text|github."""
    value = env.get("FORMAT", "")
    if value and value not in ("text", "github"):
        raise not_a_format(value)
    return [*([f"--warn-margin={env['WARN_MARGIN']}"] if env.get("WARN_MARGIN") else []),
            *(["--strict"] if _flag(env, "STRICT") else []), *([f"--format={value}"] if value else [])]


WATCH_FORMATS = ("live", "jsonl", "github")
SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")  # ASCII digits: a number of seconds as make passes it


def _watch_options(env: Mapping[str, str]) -> list[str]:
    """FORMAT=live|jsonl|github, FAIL_ON=outside and UNTIL_IDLE=SECONDS, as `manual watch` takes them."""
    found = []
    if value := env.get("FORMAT", ""):
        if value not in WATCH_FORMATS:
            raise not_a_format(value, "watch")
        found.append(f"--format={value}")
    if value := env.get("FAIL_ON", ""):
        if value != "outside":
            raise not_a_watch_choice("FAIL_ON", value)
        found.append("--fail-on=outside")
    if value := env.get("UNTIL_IDLE", ""):
        if not SECONDS.fullmatch(value) or float(value) <= 0:
            raise not_a_watch_choice("UNTIL_IDLE", value)
        found.append(f"--until-idle={value}")
    return found


TARGETS = ("build", "pdf", "serve", "check", "bench", "compare", "watch", "add-run", "publish", "verify", "diff")


def arguments(target: str, env: Mapping[str, str], root: Path) -> list[str]:
    """The command line for a make target, from checked make variables (a ManualError when one is wrong)."""
    # PROVE=1: show every claim able to fail (checking/prove.py), in a build or a check
    prove = ["--prove"] if target in ("build", "check") and _flag(env, "PROVE") else []
    if target == "build":  # FORCE=1: build even when no input changed
        return ["build", *prove, *(["--force"] if _flag(env, "FORCE") else [])]
    if target == "pdf":
        return ["pdf"]
    builders: dict[str, Callable[[], list[str]]] = {
        "serve": lambda: ["serve", *_port(env)],
        # RAY: auto, local or a head's HOST:PORT, checked by the command before anything starts; ALL=1: every run
        # summarised
        "check": lambda: ["check", *_ray(env), *(["--all"] if _flag(env, "ALL") else []), *prove,
                          *_margin_options(env)],
        "bench": lambda: _bench(env),
        "compare": lambda: ["compare", "--", *_run(env)],
        "watch": lambda: ["watch", *_watch_options(env), "--", *_run(env, "watch")],
        "add-run": lambda: ["add-run", *_run_id(env), "--", *_source(env)],
        "publish": lambda: _publish(env, root),
        "verify": lambda: ["verify", *_branch(env, root), "--",
                           _edition(env, "EDITION", "make verify EDITION=2026.10")],
        "diff": lambda: ["diff", *_branch(env, root), "--", _edition(env, "FROM", "make diff FROM=2026.10 TO=2026.11"),
                         _edition(env, "TO", "make diff FROM=2026.10 TO=2026.11")],
    }
    return builders[target]()


def _publish(env: Mapping[str, str], root: Path) -> list[str]:
    edition = _edition(env, "EDITION", "make publish EDITION=2026.10")
    push, replace = _flag(env, "PUSH"), _flag(env, "REPLACE")
    return ["publish", *_branch(env, root), *_remote(env, root), *(["--push"] if push else []),
            *(["--replace"] if replace else []), "--", edition]


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    from build_tools.cli import main as manual

    words = list(sys.argv[1:] if argv is None else argv) or ["build"]
    only_check = words[0] == "--variables"  # `make variables`: check the variables of these targets, run nothing
    targets = [name for name in words[1:] if name in TARGETS] if only_check else words[:1]
    env = os.environ if env is None else env
    try:
        commands = [arguments(target, env, Path.cwd()) for target in targets]
    except ManualError as error:
        code = report(error)
    else:
        code = 0 if only_check else manual(commands[0])
    if code != 0:
        outcome = OUTCOMES.get(code, "unexpected")
        _err.print(f"manual exited {code}: {outcome} (make turns every failure into exit 2; .venv/bin/manual "
                   "returns the code itself)", markup=False)
    return code


if __name__ == "__main__":
    sys.exit(main())
