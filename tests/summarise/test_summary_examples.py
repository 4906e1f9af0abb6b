"""The example runs, read through the loader and the summary, give every number of the seed's Metrics page.

This recomputes the numbers directly with pandas, independently of the page renderer, and compares them
with the cells of the seed page at the seed's rounding.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from tests.conftest import SEEDS

METRICS_SEED = SEEDS / "000_7fca0c65374092d8.txt"


def seed_cells() -> dict[str, str]:
    """Metric name -> its "Our range" / "Our value" cell in the seed."""
    cells = {}
    for line in METRICS_SEED.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0].startswith("`"):
            cells[parts[0].strip("`")] = parts[2]
    return cells


def numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


def pooled(summaries: dict, tag: str, metric: str) -> pd.Series:
    frames = [s.steps[metric] for s in summaries.values() if tag in s.config["tags"]]
    return pd.concat(frames)


def fmt_range(values: pd.Series, decimals: int) -> list[float]:
    return [round(values.min(), decimals), round(values.max(), decimals)]


@pytest.fixture(scope="module")
def cells() -> dict[str, str]:
    return seed_cells()


@pytest.mark.parametrize(("metric", "decimals"), [
    ("rollout/raw_reward", 2), ("rollout/response_lengths", 0), ("rollout/truncated", 2),
    ("train/train_rollout_logprob_abs_diff", 4), ("train/train_rollout_kl", 5), ("train/grad_norm", 2),
])
def test_ranges_over_the_baseline_seeds(example_summaries: dict, cells: dict, metric: str, decimals: int) -> None:
    values = pooled(example_summaries, "baseline", metric)
    assert fmt_range(values, decimals) == numbers(cells[metric])[:2]


def test_reward_range_counts_the_steps_of_each_run(example_summaries: dict, cells: dict) -> None:
    steps = {len(s.steps) for s in example_summaries.values() if "baseline" in s.config["tags"]}
    assert steps == {int(numbers(cells["rollout/raw_reward"])[2])}


def test_gap_range_is_from_plain_sampling(example_summaries: dict, cells: dict) -> None:
    baselines = [s for s in example_summaries.values() if "baseline" in s.config["tags"]]
    assert all(s.config["flags"]["rollout_top_p"] == 1.0 and s.config["flags"]["rollout_top_k"] == -1
               for s in baselines)
    assert cells["train/train_rollout_logprob_abs_diff"].endswith("with plain sampling")


def test_exact_zero_metrics(example_summaries: dict, cells: dict) -> None:
    baselines = [s for s in example_summaries.values() if "baseline" in s.config["tags"]]
    assert all((s.steps["train/pg_clipfrac"] == 0).all() for s in baselines)
    assert all(s.steps["train/ppo_kl"].iloc[0] == 0 for s in baselines)
    assert all((s.steps["train/entropy_loss"] == 0).all() for s in example_summaries.values())
    assert cells["train/pg_clipfrac"] == "0 at every step"


@pytest.fixture(scope="module")
def before_heat_guard(example_summaries: dict):
    (run,) = [s for s in example_summaries.values()
              if "baseline" in s.config["tags"] and not s.config["lab"]["heat_guard"]]
    return run


@pytest.mark.parametrize("metric", ["perf/step_time", "perf/rollout_time", "perf/log_probs_time", "perf/train_time"])
def test_time_medians_of_the_run_before_the_heat_guard(before_heat_guard, cells: dict, metric: str) -> None:
    clean = before_heat_guard.clean_steps
    median, steps = numbers(cells[metric])
    assert round(clean[metric].median(), 1) == median
    assert len(clean) == steps


def test_hand_off_times(before_heat_guard, cells: dict) -> None:
    clean = before_heat_guard.clean_steps
    assert fmt_range(clean["perf/update_weights_time"], 2) == numbers(cells["perf/update_weights_time"])[:2]
    sleep = numbers(cells["perf/sleep_time"])  # 0.76, 48, (Qwen3-0.6B), 1.9, 3.7, 48
    assert round(clean["perf/sleep_time"].median(), 2) == sleep[0] and len(clean) == sleep[1]
    assert fmt_range(clean["perf/sleep_time"].iloc[:2], 1) == sleep[4:6]
    wake = numbers(cells["perf/wake_up_time"])
    assert round(clean["perf/wake_up_time"].median(), 2) == wake[0]


def test_train_wait_logged_in_every_step(example_summaries: dict, cells: dict) -> None:
    assert all(s.steps["perf/train_wait_time"].notna().all() for s in example_summaries.values())
    assert cells["perf/train_wait_time"] == "logged in every step"


def test_the_example_runs_give_no_warning(example_summaries):
    """A fresh clone's first build prints no warning: the one open rollout of the examples (no-watchdog) is
    ended by the engine death its lab events record, so the data explains it."""
    assert {run_id: s.warnings for run_id, s in example_summaries.items() if s.warnings} == {}
    assert not (example_summaries["no-watchdog"].phases["t1"] == -1).any()


def test_an_open_phase_no_death_explains_still_warns():
    from build_tools.ingest.load import Record
    from build_tools.summarise.summary_phases import _phases

    phase = {"name": "rollout", "t0": 10.0, "t1": -1, "rank": 0, "role": "engine", "node": "n", "gpus": [0]}
    warnings: list[str] = []
    _phases([Record(phase, "p.jsonl", 3)], warnings, deaths=[5.0])  # the death came before the phase opened
    assert warnings == ["p.jsonl:3: phase 'rollout' opened at 10.0 never closed; dropped"]
    warnings.clear()
    _phases([Record(phase, "p.jsonl", 3)], warnings, deaths=[12.0])
    assert warnings == []
