"""build_tools/pages/commands.py: each chapter ends with the launch commands of the runs its figures read,
rendered from what each run recorded; the troubleshooting rows are shown once, as text."""

from __future__ import annotations

import html
import json
import re
import shlex
from pathlib import Path

import pytest

from build_tools import miles_code
from build_tools.cli import main
from build_tools.core._exceptions import EXIT_BAD_INPUT
from build_tools.ingest import miles_facts
from build_tools.pages.commands import (
    RULES,
    WIDTH,
    ShellWord,
    batch_accounting,
    chapter_commands,
    chapter_launches,
    command,
    dashboard,
    flag_words,
    fsdp,
    judge,
    launch,
    launch_block,
    launch_words,
    memory_share,
    one_gpu,
    per_run_args,
    preparation,
    recorded_args,
    value_problem,
)
from tests.conftest import ROOT, copy_project, manual_blocks


def test_a_recorded_argument_as_the_command_line_takes_it():
    assert flag_words("rollout_batch_size", 32) == ["--rollout-batch-size", "32"]
    assert flag_words("colocate", True) == ["--colocate"]
    assert flag_words("offload_train", False) == ["--no-offload-train"]  # a --x/--no-x flag in Miles' parser
    assert flag_words("use_fault_tolerance", False) == []  # a store_true flag left off
    assert flag_words("over_sampling_batch_size", None) == []
    assert flag_words("offload_rollout_level", ["kv_cache", "weight"]) == [
        "--offload-rollout-level", "kv_cache", "weight"]
    assert flag_words("hf_checkpoint", "a b;rm -rf") == ["--hf-checkpoint", "'a b;rm -rf'"]  # quoted for the shell
    # Spaces are the value's own: the command gives back exactly what was recorded (they were once folded).
    for value in ("two  spaces", " leading", "trailing ", "x'y"):
        assert shlex.split(" ".join(flag_words("hf_checkpoint", value))) == ["--hf-checkpoint", value]
    assert command({"rollout_batch_size": 32, "colocate": True}) == (
        "ray start --head --node-ip-address 127.0.0.1 \\\n    --num-gpus 1 --disable-usage-stats\n"
        "ray job submit --address=http://127.0.0.1:8265 \\\n"
        "    --runtime-env-json='{\"env_vars\":{\"PYTHONUNBUFFERED\":\"1\",\"no_proxy\":\"127.0.0.1\"}}' \\\n"
        "    -- python3 train.py \\\n    --colocate \\\n    --rollout-batch-size 32")


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("rollout_batch_size", 32, None),
    ("rolout_batch_size", 32, "not a flag of Miles' parser"),
    ("rollout_batch_size", "32", "expected int, found '32'"),
    ("rollout_batch_size", True, "expected int, found True"),
    ("train_backend", "deepspeed", "expected one of megatron, fsdp"),
    ("colocate", 1, "expected true or false"),
    ("hf_checkpoint", ["a", "b"], "a list, where the flag takes one value"),
    ("sglang_attention_backend", "flashinfer", None),  # SGLang's, passed on by Miles: not in Miles' source
])
def test_a_value_is_checked_against_miles_parser(name, value, expected):
    assert value_problem(name, value) == expected


WHOLE = {"hf_checkpoint": "Qwen/Qwen3-0.6B", "prompt_data": "/p.parquet", "input_key": "messages",
         "rm_type": "math", "train_backend": "fsdp", "colocate": True, "num_gpus_per_node": 1,
         "actor_num_nodes": 1, "actor_num_gpus_per_node": 1, "rollout_batch_size": 32, "n_samples_per_prompt": 8,
         "num_rollout": 4, "num_steps_per_rollout": 2, "sglang_mem_fraction_static": 0.4,
         "use_miles_dashboard": True, "dump_details": "/dumps/x"}


def test_each_one_gpu_rule_holds_on_a_whole_launch_and_fails_without_its_flags():
    assert RULES and all(check(WHOLE) == [] for check in RULES.values())
    for name, check in RULES.items():
        assert any(check({**WHOLE, key: None}) for key in WHOLE), name  # each rule reads a flag of the launch
    assert one_gpu({**WHOLE, "actor_num_gpus_per_node": 8}) == ["--actor-num-gpus-per-node 1"]
    assert fsdp({**WHOLE, "train_backend": "megatron"}) == ["--train-backend fsdp"]
    assert batch_accounting({**WHOLE, "num_steps_per_rollout": None}) == [
        "--num-steps-per-rollout or --global-batch-size"]
    assert batch_accounting({**WHOLE, "num_steps_per_rollout": None, "global_batch_size": 64}) == []
    # Colocated, SGLang's share at most Miles' 0.8; apart, any share it takes.
    assert memory_share({**WHOLE, "sglang_mem_fraction_static": 0.85}) == [
        "--sglang-mem-fraction-static 0.8 or lower"]
    assert memory_share({**WHOLE, "sglang_mem_fraction_static": 0.8}) == []
    assert memory_share({**WHOLE, "colocate": False, "sglang_mem_fraction_static": 0.85}) == []
    assert dashboard({**WHOLE, "use_miles_dashboard": False}) == ["--use-miles-dashboard"]


def test_the_preparation_fetches_a_hub_model_and_names_what_is_missing():
    assert preparation(WHOLE, "GSM8K") == [
        "# The model and the prompts, where the job reads them:", "hf download Qwen/Qwen3-0.6B",
        "test -f /p.parquet ||", "    echo 'MISSING: the GSM8K prompts (--prompt-data)' >&2"]
    assert preparation({**WHOLE, "hf_checkpoint": "/models/my model"}, None)[1:] == [
        "test -e '/models/my model' ||", "    echo 'MISSING: the checkpoint (--hf-checkpoint)' >&2",
        "test -f /p.parquet ||", "    echo 'MISSING: the prompts file (--prompt-data)' >&2"]


def test_the_words_judged_are_the_words_bash_hands_to_train_py(tmp_path):
    """launch_words reads a block as bash would run it: checked against bash itself, train.py a script printing
    its arguments."""
    # A recorded value that holds ${RUN} itself keeps it (single-quoted); RUN's own quotes are RUN's.
    block = launch_block({**WHOLE, "wandb_group": "a b", "dump_details": ShellWord('"/dumps/${RUN}"'),
                          "prompt_data": "it's ${RUN}", "input_key": 'say "${RUN}"'}, 'it\'s "x" \\', "GSM8K")
    script = tmp_path / "run.sh"
    body = block.split("ray job submit", 1)[1].split("-- python3 train.py", 1)[1]
    run_line = next(line for line in block.splitlines() if line.startswith("RUN="))
    script.write_text(f"{run_line}\nprintf '%s\\n' {body}\n")
    import subprocess
    printed = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=True).stdout.splitlines()
    assert launch_words(block) == printed
    assert printed[printed.index("--dump-details") + 1] == '/dumps/it\'s "x" \\'
    assert printed[printed.index("--prompt-data") + 1] == "it's ${RUN}"


def test_a_run_that_cannot_make_a_whole_command_lists_what_is_known(example_summaries):
    from dataclasses import replace

    block = manual_blocks()[0]
    summary = example_summaries[block.runs[0]]
    flags = {k: v for k, v in summary.config["flags"].items() if k not in ("train_backend", "prompt_data", "rm_type")}
    odd = replace(summary, config={**summary.config, "flags": flags})
    text = chapter_commands([replace(block, runs=(block.runs[0],))], {block.runs[0]: odd})
    assert "```text\n--actor-num-gpus-per-node 1\n" in text and "ray job submit" not in text
    assert ("Not a whole command: these runs did not record `--train-backend fsdp`, `--prompt-data` and "
            "`--rm-type or --custom-rm-path`, so only the flags they recorded are listed.") in text


@pytest.fixture(scope="module")
def chapter_one(example_summaries):
    blocks = [block for block in manual_blocks() if block.chapter_file.endswith("01-step.md")]
    return blocks, chapter_commands(blocks, example_summaries)


def _command_of(summary) -> str:
    return command(launch(per_run_args(recorded_args(summary), summary.run_id))[0])


def test_a_chapter_shows_the_command_its_runs_recorded(chapter_one, example_summaries):
    blocks, text = chapter_one
    expected = _command_of(example_summaries["baseline-seed1"]) + "\n```"
    meta = json.loads((ROOT / "runs" / "baseline-seed1" / "dashboard" / "meta.json").read_text())["args"]
    assert expected in text and f"    --hf-checkpoint {meta['hf_checkpoint']} \\" in text
    # The run's own name is RUN, set above the job: its dump folder and wandb group are written with it.
    assert "RUN=baseline-seed1\n" in text and '    --dump-details "/root/dumps/${RUN}" \\\n' in text
    assert '    --wandb-group "${RUN}"\n```' in text
    shown = {_command_of(example_summaries[run]) for block in blocks for run in block.runs}
    assert text.count("```bash\n") == len(shown)  # one per distinct command
    assert ("baseline-seed1, baseline-seed2 and baseline-seed3, in `radixark/miles:latest`, read by "
            "[](#fig-step-phases), [](#fig-step-shares), [](#fig-reward-curves) and [](#fig-response-length):") in text
    assert "These runs are synthesized examples: no job was launched with these commands" in text
    # --sglang-load-balance-method: its default, which Miles' dashboard keeps in meta.json as every launch's
    assert ("`--sglang-enable-deterministic-inference`, `--sglang-attention-backend`, `--sglang-mem-fraction-static` "
            "and `--sglang-load-balance-method` are SGLang's, passed on by Miles: typed by the flag definitions of "
            "SGLang 0.5.16 when Miles judges the command (the image builds its own SGLang).") in text
    # What Miles derived from the command, as its own code ran it: 32 prompts x 8 answers // 1 step; 48 rollouts.
    assert ("Miles' own `parse_args` and its FSDP actor's start-up (commit `31f1ca961`) take this command: a global "
            "batch of 256 samples, 48 optimizer steps in all.") in text


@pytest.mark.parametrize("name", ["x $(touch PWNED)", "y`touch PWNED`", "a;b", "a&&b", "a|b", "a>b", "a#b",
                                  "Colocate", "colocat\u0435", "n_samples\u0661", "", "--x", "a-b", "a\nb"])
def test_a_name_that_is_no_flag_never_becomes_one(name):
    with pytest.raises(ValueError, match="not a Miles flag's name"):
        flag_words(name, 1)


@pytest.mark.parametrize("value", ["Qwen\x00", ["kv_cache", "w\x1b[2J"], "a\u202eb"])
def test_a_value_with_a_control_character_never_reaches_a_command(value):
    with pytest.raises(ValueError):
        flag_words("hf_checkpoint", value)


def site_commands(site: Path) -> dict[str, list[str]]:
    """Every launch command the built site shows, page by page, as the reader copies it (the code block's text)."""
    found: dict[str, list[str]] = {}
    for page in sorted(site.glob("*.html")):
        blocks = re.findall(r'<div class="highlight"><pre>(?:<span></span>)?<code>(.*?)</code></pre>', page.read_text(
            encoding="utf-8"), flags=re.S)
        texts = [html.unescape(re.sub(r"<[^>]*>", "", block)) for block in blocks]
        if launches := [text for text in texts if "train.py" in text]:
            found[page.name] = launches
    return found


def parsed(text: str) -> dict[str, object]:
    """A command's flags after train.py, as argparse would read them back (`--no-x` false, bare flag true)."""
    # bash drops a backslash-newline, and puts RUN's value for ${RUN}
    words = shlex.split(text.replace("\\\n", "").split("-- python3 train.py", 1)[1].replace(
        "${RUN}", shlex.split(text.split("\nRUN=", 1)[1].split("\n", 1)[0])[0]))
    flags = miles_facts.flags()
    args: dict[str, object] = {}
    name = None
    for word in words:
        if word.startswith("--"):
            name = word[2:].replace("-", "_")
            if name.startswith("no_") and flags.get(name[3:], {}).get("action") == "boolean_optional":
                args[name[3:]], name = False, None
            else:
                args[name] = True
        else:
            assert name is not None, word
            args[name] = [*args[name], word] if isinstance(args[name], list) else (
                word if args[name] is True else [args[name], word])
    return args


def shown(args: dict[str, object]) -> dict[str, object]:
    """What a command line carries of launch arguments: nulls and false store_true flags are left out."""
    flags = miles_facts.flags()
    return {name: value if isinstance(value, bool) else [str(v) for v in value] if isinstance(value, list)
            else str(value) for name, value in args.items()
            if value is not None and (value is not False or flags.get(name, {}).get("action") == "boolean_optional")}


@pytest.fixture(scope="module")
def site_launches(built_manual):
    commands = site_commands(built_manual / "site")
    assert commands  # the chapters do show commands
    return [(page, text) for page, texts in commands.items() for text in texts]


def test_every_command_on_every_page_parses_back_to_its_runs_arguments(site_launches, example_summaries):
    recorded = [shown(launch(recorded_args(summary))[0]) for summary in example_summaries.values()]
    for page, text in site_launches:
        assert parsed(text) in recorded, (page, text)


def test_every_command_on_every_page_is_a_whole_one_gpu_fsdp_launch(site_launches):
    """Read from the page itself: Miles' flags with values its parser takes, one GPU, colocated, FSDP, and a
    model, prompts and a reward; Ray's head node started with the one GPU; every line but the last continued."""
    flags = miles_facts.flags()
    for page, text in site_launches:
        args = parsed(text)
        for name, value in args.items():
            assert name in flags or name.startswith("sglang_"), (page, name)
            spec = flags.get(name)
            if spec and spec["type"] in ("int", "float"):
                for item in value if isinstance(value, list) else [value]:
                    assert (float if spec["type"] == "float" else int)(str(item)) is not None
            if spec and spec["choices"]:
                assert value in spec["choices"], (page, name, value)
        assert (args["actor_num_nodes"], args["actor_num_gpus_per_node"], args["num_gpus_per_node"]) == ("1",) * 3
        assert args["colocate"] is True and args["train_backend"] == "fsdp", page
        assert args["hf_checkpoint"] and args["prompt_data"] and args["input_key"], page
        assert args.get("rm_type") or args.get("custom_rm_path"), page
        lines = text.rstrip("\n").split("\n")
        # Two commands (Ray's head node with one GPU, then the job), each line of one but its last continued:
        # no value is wrapped without a backslash.
        commands = [line for line in re.split(r"(?<! \\)\n", text.rstrip("\n")) if line.startswith("ray ")]
        assert [command.split()[:2] for command in commands] == [["ray", "start"], ["ray", "job"]], page
        assert text.rstrip("\n").split("\n")[-1].startswith("    --"), page  # the job is the block's last command
        assert "--num-gpus 1 --disable-usage-stats" in commands[0]
        assert [line for line in lines if len(line) > WIDTH and len(line.split()) > 2] == [], page


def test_every_command_on_every_page_starts_under_miles_own_code(site_launches):
    """Each block as the reader copies it from the page, through Miles' parse_args and its FSDP actor's start-up
    (the pinned copy, in its own process): none is stopped, and each has a global batch Miles derived."""
    verdicts = miles_code.judge_launches([launch_words(text) for _, text in site_launches])
    assert [(page, verdict) for (page, _), verdict in zip(site_launches, verdicts, strict=True)
            if verdict["stopped"] or not verdict["global_batch_size"] or not verdict["train_iters"]] == []


def test_a_command_miles_would_stop_fails_make_check_with_miles_file_and_line(tmp_path, capsys, monkeypatch):
    """A run records a global batch size that does not match its steps per rollout: the manual's own rules pass
    it (both are whole numbers), Miles' miles_validate_args stops it. make check says so and exits 2."""
    project = copy_project(tmp_path / "project")
    run_yaml = project / "runs" / "no-watchdog" / "run.yaml"
    run_yaml.write_text(run_yaml.read_text().replace("  num_steps_per_rollout: 1\n",
                                                     "  num_steps_per_rollout: 1\n  global_batch_size: 100\n"))
    monkeypatch.chdir(project)
    assert main(["--root", str(project), "check"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert ("ERROR 1 problem in the launch commands:\n"
            "  docs/01-step.md: the launch command of no-watchdog: Miles would stop it at "
            "miles/utils/arguments.py:3434: AssertionError: global_batch_size 100 is not equal to rollout_batch_size "
            "32 * n_samples_per_prompt 8 // num_steps_per_rollout 1\n") in err
    assert "hint: each command is rendered from its runs' recorded flags" in err


def test_a_kept_verdict_is_the_one_miles_gives_and_a_broken_cache_is_judged_again(tmp_path, example_summaries,
                                                                                    monkeypatch):
    blocks = [block for block in manual_blocks() if block.chapter_file.endswith("01-step.md")]
    cache = tmp_path / "cache" / "miles_launches.json"

    def judged() -> list[list[str]]:
        launches = chapter_launches(blocks, example_summaries)
        judge({"docs/01-step.md": launches}, cache)
        return [found.notes for found in launches]

    fresh = judged()
    assert any("a global batch of 256 samples" in " ".join(notes) for notes in fresh)
    with monkeypatch.context() as patched:  # from the cache: Miles' process is not started again
        patched.setattr(miles_code, "judge_launches", lambda commands: pytest.fail(f"judged again: {commands}"))
        assert judged() == fresh
    cache.write_text("{not json")
    assert judged() == fresh
    assert len(json.loads(cache.read_text())) == len(fresh)  # one verdict per distinct command


def test_the_no_watchdog_run_has_no_fault_tolerance_flag(chapter_one):
    _, text = chapter_one
    watchdog = text.split("no-watchdog, in")[1]
    assert "--use-fault-tolerance" not in watchdog and "--colocate" in watchdog


def test_a_run_id_in_the_commands_is_text(example_summaries):
    from dataclasses import replace

    block = manual_blocks()[0]
    summary = example_summaries[block.runs[0]]
    odd = replace(summary, run_id="<b>x</b>")
    text = chapter_commands([replace(block, runs=("<b>x</b>",))], {"<b>x</b>": odd})
    assert "&lt;b&gt;x&lt;/b&gt;, in" in text and "<b>" not in text


def test_the_troubleshooting_rows_are_shown_once_as_text(tmp_path):
    import yaml

    from build_tools.pages.chapters import render_chapter

    chapter = ROOT / "docs" / "07-troubleshooting.md"
    data = yaml.safe_load((ROOT / "docs" / "data" / "troubleshooting.yml").read_text(encoding="utf-8"))
    text = render_chapter(chapter, manual_blocks(), {}, {}, {"troubleshooting": data})
    for row in data["symptoms"]:
        assert text.count(row["symptom"]) == 1
    assert "<!-- troubleshooting-table -->" not in text and "![" not in text
    table = text.index("| Symptom | First check | Fix |")
    assert text.index('<figure class="manual-figure" id="fig-troubleshooting"') < table < text.index(
        "<strong>Figure 7.1.</strong>")
