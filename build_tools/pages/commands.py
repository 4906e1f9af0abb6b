"""The launch commands behind a chapter's figures, rendered from the arguments each run recorded (run.yaml's
flags, the dump's meta.json `args`, or the arguments its log printed), never typed by hand: one highlighted block
to copy for each distinct command, naming the runs that ran it and the figures that read them.

A command is shown only when it is whole: every flag one of Miles' parser (ingest/miles_facts/miles_args.json,
read from the pinned Miles commit) with a value that parses, and the one-GPU rules below hold (one GPU,
colocated, the FSDP trainer, a model, prompts and a reward, batch accounting, SGLang's memory share inside
Miles' colocated limit, the dashboard writing its dump). Otherwise the run's known flags are listed, not as a
command, with one line naming what was not recorded. A whole command is then judged by Miles itself, as the
reader would paste it: its parse_args and the FSDP actor's start-up (build_tools/miles_code, the pinned copy of
Miles' code); a command Miles would stop stops the build, naming the chapter, the runs, Miles' file and line."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from build_tools import miles_code
from build_tools.core._escape import md_code, md_text
from build_tools.core._exceptions import LaunchError, Problem, display_path
from build_tools.core._staging import write_atomic
from build_tools.core._types import FigureBlock, RunSummary
from build_tools.ingest import miles_facts
from build_tools.ingest.schemas_dump import is_flag_name, value_problem_of_arg
from build_tools.pages.wording import join, provenance

# Miles' entry point (train.py; a log's launch line names it the same way, build_tools/ingest/sources/log.py).
ENTRY = "python3 train.py"
# What each run names by itself: its --wandb-group (meta.json's run_name) and its dump folder. Runs launched alike
# share one command, in which the run's name is the shell variable RUN where these values hold it.
PER_RUN = ("wandb_group", "dump_details")
RUN = "${RUN}"
# What may stand around ${RUN} inside double quotes without meaning anything to the shell.
_PLAIN = re.compile(r"[A-Za-z0-9_./:@%+,=-]*")
# Miles' guide on a colocated launch: the trainer takes memory first, so SGLang's static share "has to come down,
# typically to 0.8 or lower" (docs/user-guide/training-backend.md at the pinned commit).
COLOCATED_MEM_FRACTION = 0.8
# build/cache/: Miles' verdicts on the commands, by command and Miles' code (an edition's build judges afresh).
VERDICTS = "miles_launches.json"
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


@rule("batch accounting")
def batch_accounting(args: Mapping[str, Any]) -> list[str]:
    """The FSDP actor's start-up divides by the global batch size (its LR scheduler: train_iters), which Miles
    sets from --global-batch-size or derives from --num-steps-per-rollout: without either it stops there."""
    if args.get("global_batch_size") or args.get("num_steps_per_rollout"):
        return []
    return ["--num-steps-per-rollout or --global-batch-size"]


@rule("memory share")
def memory_share(args: Mapping[str, Any]) -> list[str]:
    """Colocated, SGLang's static share of the memory is set, and at most Miles' limit."""
    share = args.get("sglang_mem_fraction_static")
    if isinstance(share, int | float) and not isinstance(share, bool) and (
            not args.get("colocate") or share <= COLOCATED_MEM_FRACTION):
        return []
    return [f"--sglang-mem-fraction-static {COLOCATED_MEM_FRACTION} or lower"]


@rule("dashboard")
def dashboard(args: Mapping[str, Any]) -> list[str]:
    """Miles' dashboard writes the dump the chapters read, under --dump-details."""
    return [*_needs(args, "use_miles_dashboard", True), *([] if args.get("dump_details") else ["--dump-details"])]


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


@dataclass(frozen=True)
class ShellWord:
    """A value already written for the shell: a run's own value with its name as "${RUN}" (per_run_args)."""

    text: str


def flag_words(name: str, value: Any) -> list[str]:
    """One recorded argument as the command line takes it: `--name value`, `--name` for true, `--no-name` for a
    false --x/--no-x flag; nothing for null or a false store_true flag."""
    if is_flag_name(name) and isinstance(value, ShellWord):
        return [flag(name), value.text]
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


def _is_hub_name(value: str) -> bool:
    """A Hugging Face repository's name (ORG/NAME), which `hf download` fetches into its cache, where Miles and
    SGLang load it from; anything else is a path on the machine."""
    return re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*", value) is not None


def preparation(args: Mapping[str, Any], dataset: str | None) -> list[str]:
    """The lines that put the checkpoint and the prompts where the job reads them: `hf download` for a model named
    on the Hub, else a check that says MISSING, which a reader cannot miss, for what only they can put there."""
    lines = ["# The model and the prompts, where the job reads them:"]
    model = str(args["hf_checkpoint"])
    if _is_hub_name(model):
        lines.append(f"hf download {model}")
    else:
        lines += [f"test -e {shlex.quote(model)} ||",
                  f"{INDENT}echo 'MISSING: the checkpoint (--hf-checkpoint)' >&2"]
    what = f"the {dataset} prompts" if dataset else "the prompts file"
    lines += [f"test -f {shlex.quote(str(args['prompt_data']))} ||",
              f"{INDENT}echo {shlex.quote(f'MISSING: {what} (--prompt-data)')} >&2"]
    return lines


def launch_block(args: Mapping[str, Any], run: str | None, dataset: str | None) -> str:
    """What a reader pastes: the preparation, RUN (when a value holds the run's name), Ray's head and the job."""
    lines = preparation(args, dataset)
    if run is not None:
        lines += ["# The run's name: its wandb group and its dump folder", f"RUN={shlex.quote(run)}"]
    lines.append("# Ray's head node on the one GPU, then Miles' train.py as a Ray job:")
    return "\n".join(lines) + "\n" + command(args)


def launch_words(block: str) -> list[str]:
    """The words after `python3 train.py` of a launch block, as bash hands them to Miles: lines joined where a
    backslash continues them, ${RUN} replaced by the block's RUN."""
    joined = block.replace("\\\n", "")
    run = next((shlex.split(line)[0].split("=", 1)[1] for line in joined.splitlines() if line.startswith("RUN=")), "")
    job = next(line for line in joined.splitlines() if line.startswith("ray job submit"))
    words = shlex.split(_expand_run(job, run))
    return words[words.index(ENTRY.split()[-1]) + 1:]


def _expand_run(line: str, run: str) -> str:
    """The line with ${RUN} put in where bash expands it: inside double quotes (a per-run value, ShellWord), its
    value escaped as double quotes need; never inside single quotes, where a recorded value keeps its own text."""
    out, at, quote = [], 0, ""
    inside = run.replace("\\", "\\\\").replace('"', '\\"')
    while at < len(line):
        char = line[at]
        if char == "\\" and quote != "'":  # an escaped character, as it is
            out.append(line[at:at + 2])
            at += 2
            continue
        if quote == '"' and line.startswith(RUN, at):
            out.append(inside)
            at += len(RUN)
            continue
        if char in "'\"" and quote in ("", char):
            quote = "" if quote else char
        out.append(char)
        at += 1
    return "".join(out)


def launch(args: Mapping[str, Any]) -> tuple[dict[str, Any], list[str], list[str]]:
    """(the flags a command can carry, the flags left out with why, the flags the one-GPU rules still need)."""
    kept, left_out = {}, []
    for name, value in args.items():
        wrong = None if value is None or isinstance(value, ShellWord) else value_problem(name, value)
        if wrong is not None:
            left_out.append(f"{flag(name)} ({wrong})")
        elif value is not None:
            kept[name] = value
    missing = [need for check in RULES.values() for need in check(kept)]
    return kept, left_out, missing


# --- the section ---------------------------------------------------------------------------------------------


def code_block(text: str, language: str = "bash") -> str:
    """A fenced block that no run of backticks in the text can close."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}{language}\n{text}\n{fence}"


def per_run_args(args: Mapping[str, Any], run_id: str) -> dict[str, Any]:
    """The run's arguments with its own name, where a per-run value holds it, written as ${RUN} for the shell (in
    double quotes, when what stands around it is plain), so that runs launched alike share one command."""
    shared = dict(args)
    for name in PER_RUN:
        value = args.get(name)
        if isinstance(value, str) and run_id and run_id in value:
            around = value.split(run_id)
            if all(_PLAIN.fullmatch(part) for part in around):
                shared[name] = ShellWord('"' + RUN.join(around) + '"')
    return shared


@dataclass
class Launch:
    """One distinct command of a chapter: its runs, the figures that read them, and the block to show."""

    runs: list[str]
    args: dict[str, Any]
    figures: list[str] = field(default_factory=list)
    block: str = ""  # the launch block, when the command is whole; else the flags known, as text
    whole: bool = False
    notes: list[str] = field(default_factory=list)


def _key(args: Mapping[str, Any]) -> str:
    return json.dumps({k: v.text if isinstance(v, ShellWord) else v for k, v in sorted(args.items())}, default=str)


def chapter_launches(blocks: Sequence[FigureBlock], summaries: Mapping[str, RunSummary]) -> list[Launch]:
    """Each distinct command of the runs a chapter's figures read, in the order the figures name them."""
    groups: dict[str, Launch] = {}
    readers: dict[str, list[str]] = {}
    for block in blocks:
        for run in block.runs:
            if run in summaries and run not in readers:
                args = per_run_args(recorded_args(summaries[run]), run)
                groups.setdefault(_key(args), Launch([], args)).runs.append(run)
            readers.setdefault(run, [])
            if block.id not in readers[run]:
                readers[run].append(block.id)
    for found in groups.values():
        found.figures = list(dict.fromkeys(figure for run in found.runs for figure in readers[run]))
        _settle(found, summaries)
    return list(groups.values())


def _settle(found: Launch, summaries: Mapping[str, RunSummary]) -> None:
    """The block and the sentences under it for one group of runs."""
    kept, left_out, missing = launch(found.args)
    if unchecked := [flag(name) for name in kept if sglang_flag(name)]:
        found.notes.append(join([md_code(x) for x in unchecked]) + (" are" if len(unchecked) > 1 else " is")
                           + " SGLang's, passed on by Miles: typed by the flag definitions of SGLang "
                           + str(miles_code.manifest()["sglang"]["version"])
                           + " when Miles judges the command (the image builds its own SGLang).")
    if left_out:
        found.notes.insert(0, "Left out, as Miles' parser would refuse them: "
                           + join([md_code(x) for x in left_out]) + ".")
    if missing:
        found.notes.insert(0, "Not a whole command: these runs did not record " + join([md_code(x) for x in missing])
                           + ", so only the flags they recorded are listed.")
        found.block = code_block("\n".join(_flag_lines(kept)), "text")
        return
    per_run = any(isinstance(value, ShellWord) for value in kept.values())
    dataset = summaries[found.runs[0]].config.get("dataset")
    found.block = code_block(launch_block(kept, found.runs[0] if per_run else None,
                                          dataset if isinstance(dataset, str) else None))
    found.whole = True


def judge(chapters: Mapping[str, Sequence[Launch]], cache: Path | None = None) -> None:
    """Every whole command of every chapter, as a reader would paste it, through Miles' own parse_args and the FSDP
    actor's start-up (one process for all, each distinct command once). Adds what Miles derived to each; raises
    LaunchError naming every command Miles would stop, with Miles' file and line. `cache`: a JSON file of earlier
    verdicts by command and Miles' code (each takes Miles half a second), read and written again here."""
    whole = [(chapter, found) for chapter, launches in chapters.items() for found in launches if found.whole]
    words = [launch_words(_block_text(found.block)) for _, found in whole]
    problems = []
    for (chapter, found), verdict in zip(whole, _verdicts(words, cache), strict=True):
        if verdict["stopped"]:
            problems.append(Problem(display_path(chapter), None, f"the launch command of {', '.join(found.runs)}",
                                    f"Miles would stop it at {verdict['where']}: {verdict['message']}"))
        else:
            found.notes.append(
                f"Miles' own `parse_args` and its FSDP actor's start-up (commit `{miles_code.miles_commit()[:9]}`) "
                f"take this command: a global batch of {verdict['global_batch_size']} samples, "
                f"{verdict['train_iters']} optimizer steps in all.")
    if problems:
        raise LaunchError(problems)


def _code_key() -> bytes:
    """The Miles code that judges a command (its manifest, the harness), as one hash."""
    digest = hashlib.sha256()
    for path in (miles_code.MANIFEST, miles_code.RUN, miles_code.HERE / "stand_ins.py"):
        digest.update(path.read_bytes())
    return digest.digest()


def _verdicts(commands: Sequence[Sequence[str]], cache: Path | None) -> list[dict[str, Any]]:
    """Miles' verdict on each command: from the cache where it has it (by the command's words and the code that
    judges them), else judged now, each distinct command once."""
    code = _code_key()
    keys = [hashlib.sha256(code + json.dumps(list(words)).encode("utf-8")).hexdigest() for words in commands]
    known: dict[str, dict[str, Any]] = {}
    if cache is not None and cache.is_file():
        try:
            loaded = json.loads(cache.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            loaded = None  # a cache that cannot be read is judged again, never trusted
        if isinstance(loaded, dict):
            known = {key: value for key, value in loaded.items() if key in keys and isinstance(value, dict)
                     and isinstance(value.get("stopped"), bool)}
    todo = list(dict.fromkeys(key for key in keys if key not in known))
    if todo:
        first = {key: words for key, words in zip(keys, commands, strict=True)}
        known.update(zip(todo, miles_code.judge_launches([first[key] for key in todo]), strict=True))
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(cache, json.dumps({key: known[key] for key in sorted(set(keys))}).encode("utf-8"))
    return [known[key] for key in keys]


def _block_text(block: str) -> str:
    """A code block's text, without its fences."""
    return block.split("\n", 1)[1].rsplit("\n", 1)[0]


def chapter_section(launches: Sequence[Launch], summaries: Mapping[str, RunSummary]) -> str:
    """The section that ends a chapter: each distinct command of the runs its figures read. Empty when its
    figures read no run."""
    if not launches:
        return ""
    read = [run for found in launches for run in found.runs]
    source = provenance({run: summaries[run].config for run in read})
    note = (" These runs are synthesized examples: no job was launched with these commands; the generator "
            "recorded them as Miles records a launch." if source.examples and not source.measured else
            " Of these runs, " + join([md_code(run) for run in source.examples]) + " are synthesized examples."
            if source.examples else "")
    parts = ["", "## The commands behind these figures", "",
             "Each command is rendered from the arguments its runs recorded (`run.yaml`'s flags, the dump's "
             "`meta.json` `args`, or the arguments a log printed), every flag checked against Miles' parser at "
             f"commit `{miles_facts.commit()[:9]}`. `RUN` is the run's own name: each run sets its "
             "`--wandb-group` (Miles' `run_name`) and its dump folder by it." + note]
    for found in launches:
        image = {str(summaries[r].config.get("miles", {}).get("image", "")) for r in found.runs} - {""}
        where = f", in {join([md_code(name) for name in sorted(image)])}" if image else ""
        parts += ["", f"{md_text(join(list(found.runs)))}{where}, read by "
                  + join([f"[](#{figure})" for figure in found.figures]) + ":", "", found.block]
        if found.notes:
            parts += ["", " ".join(found.notes)]
    return "\n".join(parts) + "\n"


def chapter_commands(blocks: Sequence[FigureBlock], summaries: Mapping[str, RunSummary]) -> str:
    """One chapter's section, its commands judged by Miles (render.py judges every chapter's at once)."""
    launches = chapter_launches(blocks, summaries)
    judge({blocks[0].chapter_file if blocks else "": launches})
    return chapter_section(launches, summaries)
