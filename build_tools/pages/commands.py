"""The launch commands behind a chapter's figures, rendered from the arguments each run recorded (the dump's
meta.json `args`, or the arguments its log printed), never typed by hand: one highlighted block to copy for each
distinct command, naming the runs that ran it and the figures that read them."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from .._escape import md_code, md_text
from .._types import FigureBlock, RunSummary
from ..schemas import is_flag_name, value_problem_of_arg
from ..wording import join, provenance

# Miles' entry point (train.py; a log's launch line names it the same way, build_tools/sources/log.py).
ENTRY = "python3 train.py"
# The flags whose default is on (colocation turns them on), so false is written as their --no- form; any other
# false flag is left out, as Miles' store_true flags are.
NEGATABLE = ("offload_train", "offload_rollout")


def recorded_args(summary: RunSummary) -> dict[str, Any]:
    """What the run recorded of its launch; a run that recorded none falls back to run.yaml's flags."""
    args = summary.facts.get("args")
    if isinstance(args, Mapping) and args:
        return dict(args)
    flags = summary.config.get("flags")
    return dict(flags) if isinstance(flags, Mapping) else {}


def flag_words(name: str, value: Any) -> list[str]:
    """One recorded argument as the command line takes it: `--name value`, `--name` for true, `--no-name` for
    a false negatable flag; nothing for null or another false."""
    if not is_flag_name(name) or value_problem_of_arg(value) is not None:
        # The loader refuses such arguments with the file and key named (schemas.arg_problems): one here is a bug.
        raise ValueError(f"{ascii(name)}: not a Miles flag's name, or its value holds a control character")
    flag = "--" + name.replace("_", "-")
    if value is None or value is False:
        return [f"--no-{flag[2:]}"] if value is False and name in NEGATABLE else []
    if value is True:
        return [flag]
    values = value if isinstance(value, list) else [value]
    return [flag, *(shlex.quote(" ".join(str(item).split())) for item in values)]


def command(args: Mapping[str, Any]) -> str:
    """The launch command, one flag per line, in alphabetical order."""
    lines = [" ".join(words) for name, value in sorted(args.items()) if (words := flag_words(name, value))]
    return " \\\n    ".join([ENTRY, *lines])


def code_block(text: str) -> str:
    """A fenced shell block that no run of backticks in the text can close."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}bash\n{text}\n{fence}"


def chapter_commands(blocks: Sequence[FigureBlock], summaries: Mapping[str, RunSummary]) -> str:
    """The section that ends a chapter: each distinct command of the runs its figures read. Empty when its
    figures read no run."""
    groups: dict[str, list[str]] = {}
    readers: dict[str, list[str]] = {}
    for block in blocks:
        for run in block.runs:
            if run in summaries and run not in readers:
                groups.setdefault(command(recorded_args(summaries[run])), []).append(run)
            readers.setdefault(run, [])
            if block.id not in readers[run]:
                readers[run].append(block.id)
    if not groups:
        return ""
    read = [run for runs in groups.values() for run in runs]
    source = provenance({run: summaries[run].config for run in read})
    note = (" These runs are synthesized examples: no job was launched with these commands; the generator "
            "recorded them as Miles records a launch." if source.examples and not source.measured else
            " Of these runs, " + join([md_code(run) for run in source.examples]) + " are synthesized examples."
            if source.examples else "")
    parts = ["", "## The commands behind these figures", "",
             "Each command is rendered from the arguments its runs recorded (the dump's `meta.json` `args`, a "
             "subset of the command line, or the arguments a log printed)." + note]
    for text, runs in groups.items():
        figures = [block for run in runs for block in readers[run]]
        seen = list(dict.fromkeys(figures))
        image = {str(run.config.get("miles", {}).get("image", "")) for run in (summaries[r] for r in runs)} - {""}
        where = f", in {join([md_code(name) for name in sorted(image)])}" if image else ""
        parts += ["", f"{md_text(join(list(runs)))}{where}, read by "
                  + join([f"[](#{figure})" for figure in seen]) + ":", "", code_block(text)]
    return "\n".join(parts) + "\n"
