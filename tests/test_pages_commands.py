"""build_tools/pages/commands.py: each chapter ends with the launch commands of the runs its figures read,
rendered from what each run recorded; the troubleshooting rows are shown once, as text."""

from __future__ import annotations

import html
import json
import re
import shlex
from pathlib import Path

import pytest
from conftest import ROOT, manual_blocks

from build_tools.pages.commands import NEGATABLE, chapter_commands, command, flag_words, recorded_args


def test_a_recorded_argument_as_the_command_line_takes_it():
    assert flag_words("rollout_batch_size", 32) == ["--rollout-batch-size", "32"]
    assert flag_words("colocate", True) == ["--colocate"]
    assert flag_words("offload_train", False) == ["--no-offload-train"]
    assert flag_words("use_fault_tolerance", False) == []  # a store_true flag left off
    assert flag_words("over_sampling_batch_size", None) == []
    assert flag_words("offload_rollout_level", ["kv_cache", "weight"]) == [
        "--offload-rollout-level", "kv_cache", "weight"]
    assert flag_words("hf_checkpoint", "a b;rm -rf") == ["--hf-checkpoint", "'a b;rm -rf'"]  # quoted for the shell
    assert command({"rollout_batch_size": 32, "colocate": True}) == (
        "python3 train.py \\\n    --colocate \\\n    --rollout-batch-size 32")


@pytest.fixture(scope="module")
def chapter_one(example_summaries):
    blocks = [block for block in manual_blocks() if block.chapter_file.endswith("01-step.md")]
    return blocks, chapter_commands(blocks, example_summaries)


def test_a_chapter_shows_the_command_its_runs_recorded(chapter_one):
    blocks, text = chapter_one
    args = json.loads((ROOT / "runs" / "baseline-seed1" / "dashboard" / "meta.json").read_text())["args"]
    expected = "```bash\n" + command(args) + "\n```"
    assert expected in text and f"--hf-checkpoint {args['hf_checkpoint']} \\" in text
    recorded = {run: json.loads((ROOT / "runs" / run / "dashboard" / "meta.json").read_text())["args"]
                for block in blocks for run in block.runs}
    assert text.count("```bash\n") == len({command(args) for args in recorded.values()})  # one per distinct command
    assert ("baseline-seed1, baseline-seed2 and baseline-seed3, in `radixark/miles:latest`, read by "
            "[](#fig-step-phases), [](#fig-step-shares), [](#fig-reward-curves) and [](#fig-response-length):") in text
    assert "These runs are synthesized examples: no job was launched with these commands" in text


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
    words = shlex.split(text.replace("\\\n", ""))  # bash drops a backslash-newline; shlex would keep it
    args: dict[str, object] = {}
    name = None
    for word in words[words.index("train.py") + 1:]:
        if word.startswith("--"):
            name = word[2:].replace("-", "_")
            if name.startswith("no_") and name[3:] in NEGATABLE:
                args[name[3:]], name = False, None
            else:
                args[name] = True
        else:
            assert name is not None, word
            args[name] = [*args[name], word] if isinstance(args[name], list) else (
                word if args[name] is True else [args[name], word])
    return args


def shown(args: dict[str, object]) -> dict[str, object]:
    """What a command line can carry of recorded arguments: nulls and plain false flags are left out."""
    return {name: value if isinstance(value, bool) else [str(v) for v in value] if isinstance(value, list)
            else str(value) for name, value in args.items()
            if value is not None and (value is not False or name in NEGATABLE)}


def test_every_command_on_every_page_parses_back_to_its_runs_arguments(built_manual, example_summaries):
    commands = site_commands(built_manual / "site")
    assert commands  # the chapters do show commands
    recorded = [shown(recorded_args(summary)) for summary in example_summaries.values()]
    for page, texts in commands.items():
        for text in texts:
            assert parsed(text) in recorded, (page, text)


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
