"""The launch commands behind a chapter's figures, rendered from the arguments each run recorded (run.yaml's
flags, the dump's meta.json `args`, or the arguments its log printed), never typed by hand: one highlighted block
to copy for each distinct command, naming the runs that ran it and the figures that read them.

A command is shown only when it is whole: every flag one of Miles' parser (ingest/miles_facts/miles_args.json,
read from the pinned Miles commit) with a value that parses, and the one-GPU rules below hold (one GPU,
colocated, the FSDP trainer, a model, prompts and a reward). Otherwise the run's known flags are listed, not as
a command, with one line naming what was not recorded."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from build_tools.core._escape import md_code, md_text
from build_tools.core._types import FigureBlock, RunSummary
from build_tools.ingest import miles_facts
from build_tools.ingest.schemas_dump import is_flag_name, value_problem_of_arg
from build_tools.pages.wording import join, provenance

# Miles' entry point (train.py; a log's launch line names it the same way, build_tools/ingest/sources/log.py).
ENTRY = "python3 train.py"
# Each run's --wandb-group is its own name (meta.json's run_name): said once in words, so that runs launched
# alike share one command.
PER_RUN = ("wandb_group",)
# The Ray job Miles' own launcher submits (miles/utils/external_utils/command_utils.py execute_train at the
# pinned commit): a head node with the run's GPUs, then `ray job submit` with the runtime environment it gives
# an FSDP job on one node (PYTHONUNBUFFERED, no_proxy; CUDA_DEVICE_MAX_CONNECTIONS is left out for FSDP).
RAY_ADDRESS = "http://127.0.0.1:8265"
RUNTIME_ENV = {"env_vars": {"PYTHONUNBUFFERED": "1", "no_proxy": "127.0.0.1"}}
INDENT = "    "
WIDTH = 80  # a launch command's lines fit the page and the paper at this width (the print CSS sets the font)

# --- the one-GPU rules: each a small named check of a run's launch arguments ---------------------------------

Rule = Callable[[Mapping[str, Any]], list[str]]
RULES: dict[str, Rule] = {}


def rule(name: str) -> Callable[[Rule], Rule]:
    """Register a rule: it returns the flags (as `--name`) a whole one-GPU command still needs."""
    def register(check: Rule) -> Rule:
        RULES[name] = check
        return check
    return register


def _needs(args: Mapping[str, Any], name: str, wanted: Any) -> list[str]:
    return [] if args.get(name) == wanted else [f"{flag(name)} {wanted}" if wanted is not True else flag(name)]


@rule("one GPU")
def one_gpu(args: Mapping[str, Any]) -> list[str]:
    """Miles' defaults ask for 8 GPUs a node; a DGX Spark has one."""
    return [*_needs(args, "actor_num_nodes", 1), *_needs(args, "actor_num_gpus_per_node", 1),
            *_needs(args, "num_gpus_per_node", 1)]


@rule("colocated")
def colocated(args: Mapping[str, Any]) -> list[str]:
    """The trainer and the rollout engine share the one GPU."""
    return _needs(args, "colocate", True)


@rule("FSDP trainer")
def fsdp(args: Mapping[str, Any]) -> list[str]:
    """The manual's trainer is Miles' FSDP backend; Miles' default is Megatron."""
    return _needs(args, "train_backend", "fsdp")


@rule("model")
def model(args: Mapping[str, Any]) -> list[str]:
    return [] if args.get("hf_checkpoint") else ["--hf-checkpoint"]


@rule("prompts")
def prompts(args: Mapping[str, Any]) -> list[str]:
    return [name for name in ("--prompt-data", "--input-key") if not args.get(name[2:].replace("-", "_"))]


@rule("reward")
def reward(args: Mapping[str, Any]) -> list[str]:
    return [] if args.get("rm_type") or args.get("custom_rm_path") else ["--rm-type or --custom-rm-path"]


# --- the arguments ---------------------------------------------------------------------------------------------


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def recorded_args(summary: RunSummary) -> dict[str, Any]:
    """What the run recorded of its launch: run.yaml's flags, then what Miles or a log recorded (they agree where
    both have a flag; the loader checks it)."""
    flags = summary.config.get("flags")
    args = summary.facts.get("args")
    return {**(dict(flags) if isinstance(flags, Mapping) else {}), **(dict(args) if isinstance(args, Mapping) else {})}


def sglang_flag(name: str) -> bool:
    """A flag Miles copies from SGLang's server arguments (`--sglang-*`, miles/backends/sglang_utils/arguments.py):
    defined by the SGLang the image installs, not by Miles' source, so not in the parser data to check."""
    return name.startswith("sglang_") and name not in miles_facts.flags()


def value_problem(name: str, value: Any) -> str | None:
    """Why Miles' parser would not take `value` for the flag, or None: the flag must be one of its flags, and the
    value of its type, among its choices, one word or a list as its nargs says."""
    spec = miles_facts.flags().get(name)
    if spec is None and sglang_flag(name):
        return None
    if spec is None:
        return "not a flag of Miles' parser"
    if spec["action"] in ("store_true", "store_false", "boolean_optional"):
        return None if isinstance(value, bool) else "expected true or false"
    values = value if isinstance(value, list) else [value]
    if isinstance(value, list) and spec["nargs"] not in ("+", "*") and not isinstance(spec["nargs"], int):
        return "a list, where the flag takes one value"
    for item in values:
        kind = spec["type"]
        if isinstance(item, bool) or (kind == "int" and not isinstance(item, int)) or (
                kind == "float" and not isinstance(item, int | float)):
            return f"expected {kind}, found {item!r}"
        if spec["choices"] is not None and item not in spec["choices"]:
            return f"expected one of {', '.join(map(str, spec['choices']))}"
    return None


def flag_words(name: str, value: Any) -> list[str]:
    """One recorded argument as the command line takes it: `--name value`, `--name` for true, `--no-name` for a
    false --x/--no-x flag; nothing for null or a false store_true flag."""
    if not is_flag_name(name) or value_problem_of_arg(value) is not None:
        # The loader refuses such arguments with the file and key named (schemas_dump.arg_problems): one here is a bug.
        raise ValueError(f"{ascii(name)}: not a Miles flag's name, or its value holds a control character")
    action = miles_facts.flags().get(name, {}).get("action")
    if value is None:
        return []
    if isinstance(value, bool):
        if action == "store_false":
            return [] if value else [flag(name)]
        if value:
            return [flag(name)]
        return ["--no-" + flag(name)[2:]] if action == "boolean_optional" else []
    values = value if isinstance(value, list) else [value]
    return [flag(name), *(shlex.quote(str(item)) for item in values)]  # the value as recorded, spaces and all


def _flag_lines(args: Mapping[str, Any]) -> list[str]:
    """One flag a line; a flag too long for the page has each of its values on a line of its own (a line break
    inside a value would change it)."""
    lines = []
    for name, value in sorted(args.items()):
        words = flag_words(name, value)
        if len(INDENT + " ".join(words) + " \\") <= WIDTH or len(words) < 2:
            lines += [" ".join(words)] if words else []
        else:
            lines += [words[0], *(INDENT + word for word in words[1:])]
    return lines


def _compact(value: Any) -> str:
    """JSON without spaces, so that the runtime environment's line fits the page."""
    return json.dumps(value, separators=(",", ":"))


def command(args: Mapping[str, Any]) -> str:
    """The whole launch, as Miles' launcher runs it: Ray's head node with the run's GPUs, then the job, one flag
    a line (alphabetical), each line but the last ended by ` \\`."""
    gpus = args.get("actor_num_gpus_per_node", 1)
    head = f"ray start --head --node-ip-address 127.0.0.1 \\\n{INDENT}--num-gpus {gpus} --disable-usage-stats"
    submit = [f"ray job submit --address={RAY_ADDRESS}",
              f"{INDENT}--runtime-env-json={shlex.quote(_compact(RUNTIME_ENV))}",
              f"{INDENT}-- {ENTRY}", *(INDENT + line for line in _flag_lines(args))]
    return head + "\n" + " \\\n".join(submit)


def launch(args: Mapping[str, Any]) -> tuple[dict[str, Any], list[str], list[str]]:
    """(the flags a command can carry, the flags left out with why, the flags the one-GPU rules still need)."""
    kept, left_out = {}, []
    for name, value in args.items():
        if name in PER_RUN or value is None:
            continue
        if (wrong := value_problem(name, value)) is None:
            kept[name] = value
        else:
            left_out.append(f"{flag(name)} ({wrong})")
    missing = [need for check in RULES.values() for need in check(kept)]
    return kept, left_out, missing


# --- the section ---------------------------------------------------------------------------------------------


def code_block(text: str, language: str = "bash") -> str:
    """A fenced block that no run of backticks in the text can close."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}{language}\n{text}\n{fence}"


def _shown(args: Mapping[str, Any]) -> tuple[str, str]:
    """(the block, the sentence under it) for one group of runs."""
    kept, left_out, missing = launch(args)
    notes = []
    if unchecked := [flag(name) for name in kept if sglang_flag(name)]:
        notes.append(join([md_code(x) for x in unchecked]) + (" are" if len(unchecked) > 1 else " is")
                     + " SGLang's, passed on by Miles: defined by the SGLang in the image, not checked here.")
    if left_out:
        notes.insert(0, "Left out, as Miles' parser would refuse them: " + join([md_code(x) for x in left_out]) + ".")
    if missing:
        known = "\n".join(_flag_lines(kept))
        notes.insert(0, "Not a whole command: these runs did not record " + join([md_code(x) for x in missing])
                     + ", so only the flags they recorded are listed.")
        return code_block(known, "text"), " ".join(notes)
    return code_block(command(kept)), " ".join(notes)


def chapter_commands(blocks: Sequence[FigureBlock], summaries: Mapping[str, RunSummary]) -> str:
    """The section that ends a chapter: each distinct command of the runs its figures read. Empty when its
    figures read no run."""
    groups: dict[str, list[str]] = {}
    arguments: dict[str, dict[str, Any]] = {}
    readers: dict[str, list[str]] = {}
    for block in blocks:
        for run in block.runs:
            if run in summaries and run not in readers:
                args = recorded_args(summaries[run])
                key = json.dumps({k: v for k, v in sorted(args.items()) if k not in PER_RUN}, default=str)
                groups.setdefault(key, []).append(run)
                arguments.setdefault(key, args)
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
             "Each command is rendered from the arguments its runs recorded (`run.yaml`'s flags, the dump's "
             "`meta.json` `args`, or the arguments a log printed), every flag checked against Miles' parser at "
             f"commit `{miles_facts.commit()[:9]}`. Each run sets `--wandb-group` to its own name (Miles' "
             "`run_name`)." + note]
    for key, runs in groups.items():
        figures = [block for run in runs for block in readers[run]]
        seen = list(dict.fromkeys(figures))
        image = {str(run.config.get("miles", {}).get("image", "")) for run in (summaries[r] for r in runs)} - {""}
        where = f", in {join([md_code(name) for name in sorted(image)])}" if image else ""
        shown, sentence = _shown(arguments[key])
        parts += ["", f"{md_text(join(list(runs)))}{where}, read by "
                  + join([f"[](#{figure})" for figure in seen]) + ":", "", shown]
        if sentence:
            parts += ["", sentence]
    return "\n".join(parts) + "\n"
