"""build_tools/pages/commands.py: each chapter ends with the launch commands of the runs its figures read,
rendered from what each run recorded; the troubleshooting rows are shown once, as text."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, manual_blocks

from build_tools.pages.commands import chapter_commands, command, flag_words


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
