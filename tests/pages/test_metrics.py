"""build_tools/pages/metrics.py: the Metrics page against the seed, word for word; its intro and cells follow
the runs and their configuration; a bad spec row is reported with its field."""

from __future__ import annotations

import copy

import pytest

from build_tools.core._exceptions import MetricsSpecError
from build_tools.pages._common import environment
from build_tools.pages.metrics import render_metrics
from build_tools.pages.metrics_table import load_spec
from build_tools.pages.wording import number
from tests.conftest import ROOT
from tests.page_text import CHAPTERS, METRICS_SEED, SPEC, markdown_tables, seed_tables, with_config


@pytest.fixture(scope="module")
def env():
    return environment(ROOT / "templates")


WHERE = "docs/data/metrics.yml"


def render(env, summaries: dict, spec_file=SPEC) -> str:
    return render_metrics(env, load_spec(spec_file), WHERE, summaries, CHAPTERS)


@pytest.fixture(scope="module")
def metrics_page(env, example_summaries) -> str:
    return render(env, example_summaries)


@pytest.mark.parametrize("title", ["Rollout", "Training", "Time", "Evaluation and async"])
def test_metrics_tables_match_the_seed_word_for_word(metrics_page, title):
    expected = seed_tables(METRICS_SEED)[title]
    assert markdown_tables(metrics_page)[title] == expected


def test_metrics_intro_facts_come_from_the_runs(metrics_page):
    assert ("Qwen3-0.6B on GSM8K on one GB10, 32 prompts with 8 answers each, a limit of 1,024 tokens."
            in metrics_page)
    assert "synthesized example runs, not from measurements" in metrics_page
    assert "our lab runs" not in metrics_page


def test_metrics_intro_follows_the_configuration(env, example_summaries):
    changed = with_config(example_summaries, **{"flags.rollout_max_response_len": 2048, "hardware.gpus": 2,
                                                "flags.rollout_batch_size": 64})
    page = render(env, changed)
    assert "on two GB10, 64 prompts with 8 answers each, a limit of 2,048 tokens" in page


def test_metrics_intro_says_measured_runs_are_ours(env, example_summaries):
    page = render(env, with_config(example_summaries, provenance="measured"))
    assert "The ranges come from our lab runs: Qwen3-0.6B" in page
    assert "synthesized" not in page


def test_time_values_read_only_clean_steps(env, example_summaries):
    """A heat-guard pause that touches ten steps takes them out of every time value, however slow they were."""
    run_id = next(r for r, s in example_summaries.items() if s.config["lab"]["heat_guard"] is False)
    changed = dict(example_summaries)
    clone = copy.copy(example_summaries[run_id])
    steps = clone.steps.copy()
    touched = steps.index[:10]
    steps.loc[touched, "heat_touched"] = True
    steps.loc[touched, "perf/step_time"] = 10_000.0
    clone.steps = steps
    changed[run_id] = clone
    page = render(env, changed)
    rows = {row[0]: row[2] for row in markdown_tables(page)["Time"][1:]}
    expected = number(steps.loc[~steps["heat_touched"], "perf/step_time"].median(), 1)
    assert rows["`perf/step_time`"] == f"{expected} s median of 38 steps, in a run made before the heat guard"
    assert "first two clean steps" in rows["`perf/sleep_time`"]


def test_a_cell_says_what_is_true_when_the_usual_wording_is_not(env, example_summaries):
    changed = dict(example_summaries)
    run_id = sorted(changed)[0]
    clone = copy.copy(changed[run_id])
    clone.steps = clone.steps.copy()
    clone.steps.loc[clone.steps.index[3], "perf/train_wait_time"] = float("nan")
    changed[run_id] = clone
    total = sum(len(s.steps) for s in changed.values())
    page = render(env, changed)
    rows = {row[0]: row[2] for row in markdown_tables(page)["Time"][1:]}
    assert rows["`perf/train_wait_time`"] == f"logged in {number(total - 1)} of {number(total)} steps"


def test_a_bad_spec_row_is_reported_with_its_field(env, example_summaries, tmp_path):
    spec = tmp_path / "metrics.yml"
    text = SPEC.read_text(encoding="utf-8").replace("runs: plain_baseline", "runs: no_such_set", 1)
    spec.write_text(text.replace("runs: all", "runs: no_other_set", 1), encoding="utf-8")
    with pytest.raises(MetricsSpecError) as caught:
        render(env, example_summaries, spec)
    message = str(caught.value)
    assert "2 problems in the Metrics page spec" in message
    assert "train/train_rollout_logprob_abs_diff: unknown run set 'no_such_set'" in message
    assert ": unknown run set 'no_other_set'" in message


def test_a_value_the_schema_refuses_is_named_with_its_line_before_any_cell(tmp_path):
    spec = tmp_path / "metrics.yml"
    spec.write_text(SPEC.read_text(encoding="utf-8").replace("stat: first_step", "stat: mode", 1), encoding="utf-8")
    with pytest.raises(MetricsSpecError) as caught:
        load_spec(spec)
    lines = str(caught.value).splitlines()
    assert lines[0] == "1 problem in the Metrics page spec:"
    assert lines[1].endswith("metrics.yml:88: tables[1].rows[4].stat: expected 'range', 'all_zero', 'first_step', "
                             "'median', 'median_head' or 'every_step', found 'mode'")
