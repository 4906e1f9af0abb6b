"""Miles' guidance (docs/data/miles_guidance.yml, build_tools/checking/miles_guidance.py): read again from Miles'
own files, set against the Metrics page's rows and the claims; each row past a line is a warning and a note
citing it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES
from page_text import CHAPTERS, METRICS_SEED, SPEC, markdown_tables, seed_tables

from build_tools.checking import miles_guidance
from build_tools.checking.blocks import load_tables, read_blocks
from build_tools.pages._common import environment
from build_tools.pages.metrics import render_metrics
from build_tools.pages.metrics_table import load_spec

GUIDANCE = ROOT / "docs" / "data" / "miles_guidance.yml"
MILES = SAMPLES / "miles"  # advisory.py and monitoring.md of Miles at 31f1ca961


def checkout(folder: Path) -> Path:
    """The two files laid out as in a Miles work tree."""
    (folder / "miles" / "dashboard").mkdir(parents=True)
    (folder / "docs" / "user-guide").mkdir(parents=True)
    shutil.copy(MILES / "advisory.py.txt", folder / "miles" / "dashboard" / "advisory.py")
    shutil.copy(MILES / "monitoring.md", folder / "docs" / "user-guide" / "monitoring.md")
    return folder


def test_refreshing_from_miles_at_the_pinned_commit_gives_the_file_as_kept(tmp_path: Path) -> None:
    kept = tmp_path / "miles_guidance.yml"
    shutil.copy(GUIDANCE, kept)
    assert miles_guidance.refresh(checkout(tmp_path / "miles"), kept) == []
    assert kept.read_bytes() == GUIDANCE.read_bytes()


def test_a_changed_threshold_or_row_of_miles_is_taken_and_said(tmp_path: Path) -> None:
    miles = checkout(tmp_path / "miles")
    advisory = miles / "miles" / "dashboard" / "advisory.py"
    advisory.write_text(advisory.read_text().replace("TRUNCATED_FRAC_WARN = 0.25", "TRUNCATED_FRAC_WARN = 0.3"))
    page = miles / "docs" / "user-guide" / "monitoring.md"
    page.write_text(page.read_text().replace("| `train/pg_clipfrac` | < 0.2 |", "| `train/pg_clipfrac` | < 0.15 |"))
    kept = tmp_path / "miles_guidance.yml"
    shutil.copy(GUIDANCE, kept)
    assert miles_guidance.refresh(miles, kept) == [
        "pg_clipfrac: threshold 0.2 -> 0.15",
        "pg_clipfrac: quote '`train/pg_clipfrac` | < 0.2 | > 0.5 means policy is moving fast → drop LR' -> "
        "'`train/pg_clipfrac` | < 0.15 | > 0.5 means policy is moving fast → drop LR'",
        "truncated_share: threshold 0.25 -> 0.3"]
    rules = {rule.metric: rule for rule in miles_guidance.rules_of(load_tables(tmp_path)["miles_guidance"])}
    assert (rules["train/pg_clipfrac"].threshold, rules["rollout/truncated"].threshold) == (0.15, 0.3)


def test_the_advisor_thresholds_are_read_without_running_it() -> None:
    constants = miles_guidance.advisor_constants((MILES / "advisory.py.txt").read_text())
    assert {name: constants[name] for name in ("ZERO_STD_FRAC_WARN", "TRUNCATED_FRAC_WARN", "DEFAULT_LOW_MFU",
                                               "KV_BOUND_TOKEN_USAGE")} == {
        "ZERO_STD_FRAC_WARN": 0.5, "TRUNCATED_FRAC_WARN": 0.25, "DEFAULT_LOW_MFU": 0.15, "KV_BOUND_TOKEN_USAGE": 0.9}


def test_a_folder_that_is_no_checkout_is_refused_in_one_line(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert miles_guidance.main([str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err == (f"ERROR MILES={tmp_path / 'nowhere'}: not a folder: expected the path of a "
                                       "Miles checkout (a git work tree or git folder, or a copy with its commit in a "
                                       "COMMIT file), e.g. make miles-guidance MILES=../miles\n")


def rules() -> list[miles_guidance.Rule]:
    return miles_guidance.rules_of(load_tables(ROOT / "docs" / "data")["miles_guidance"])


def test_each_metrics_row_and_claim_past_miles_line_is_named(example_summaries: dict) -> None:
    found = miles_guidance.of_metrics_rows(load_spec(SPEC), example_summaries, rules())
    blocks = read_blocks(ROOT / "docs", ROOT / "figures")
    found += miles_guidance.of_claims(blocks, example_summaries, rules())
    assert [d.warning() for d in found] == [
        "docs/data/metrics.yml tables[0].rows[2]: rollout/truncated reaches 0.43, under which Miles says it should "
        "stay: 0.25 (\"of samples in rollout are truncated — check --rollout-max-response-len\", "
        "miles/dashboard/advisory.py@31f1ca961)",
        "docs/data/metrics.yml tables[1].rows[2]: train/grad_norm reaches 4.95, under which Miles says it should "
        "stay: 1.0 (\"`grad_norm` | < `clip_grad` (1.0 by default) | Repeatedly hitting clip threshold\", "
        "docs/user-guide/monitoring.md@31f1ca961)",
        "docs/01-step.md:107 figure 1.5 checks[1] ('fewer answers hit the 1,024-token cap'): rollout/truncated "
        "reaches 0.43, under which Miles says it should stay: 0.25 (\"of samples in rollout are truncated — check "
        "--rollout-max-response-len\", miles/dashboard/advisory.py@31f1ca961)"]


def test_the_metrics_page_cites_miles_line_under_the_seeds_tables_kept_word_for_word(
        example_summaries: dict) -> None:
    guidance = load_tables(ROOT / "docs" / "data")["miles_guidance"]
    page = render_metrics(environment(ROOT / "templates"), load_spec(SPEC), "docs/data/metrics.yml",
                          example_summaries, CHAPTERS, guidance=guidance)
    for title, rows in seed_tables(METRICS_SEED).items():
        assert markdown_tables(page)[title] == rows
    notes = [line for line in page.splitlines() if line.startswith("    ") and "should stay" in line]
    assert notes == [
        "    rollout/truncated should stay under 0.25 (&quot;of samples in rollout are truncated — check "
        "--rollout-max-response-len&quot;, miles/dashboard/advisory.py@31f1ca961); our range reaches 0.43.",
        "    train/grad\\_norm should stay under 1.0 (&quot;\\`grad\\_norm\\` \\| &lt; \\`clip\\_grad\\` (1.0 by "
        "default) \\| Repeatedly hitting clip threshold&quot;, docs/user-guide/monitoring.md@31f1ca961); our range "
        "reaches 4.95."]
    assert page.count("!!! note \"Miles' guidance\"") == 2
