"""The summary: one row per step with every metric and phase, the heat rule, and the content cache."""

from __future__ import annotations

import io
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import MILES_SAMPLES, SAMPLES

from build_tools import _summary_cache, load, summary
from build_tools.summary import summarise_runs

GOOD = SAMPLES / "load" / "good"


@pytest.fixture()
def tiny() -> summary.RunSummary:
    return summarise_runs(GOOD)["tiny-run"]


def test_trainer_and_rollout_manager_rows_of_a_step_are_merged(tiny: summary.RunSummary) -> None:
    steps = tiny.steps
    assert list(steps.index) == [0, 1]
    assert steps.loc[0, "rollout/raw_reward"] == 0.5 and steps.loc[0, "perf/step_time"] == 150.0
    assert steps.loc[1, "perf/rollout_time"] == 46.9 and steps.loc[1, "train/ppo_kl"] == 0.001
    assert math.isnan(steps.loc[0, "train/grad_norm"])
    assert "rollout/note" not in steps.columns  # strings are not metrics of a step


def test_open_phase_is_replaced_by_its_closing_record(tiny: summary.RunSummary) -> None:
    rollouts = tiny.phases[tiny.phases["name"] == "rollout"]
    assert len(rollouts) == 2 and (rollouts["t1"] != -1).all()
    assert tiny.steps.loc[1, "phase/rollout"] == pytest.approx(46.9)


def test_phases_are_numbered_into_steps(tiny: summary.RunSummary) -> None:
    assert tiny.phases.groupby("step")["name"].apply(list).to_dict() == {
        0: ["train_wait", "rollout", "train", "log_probs", "actor_train", "update_weights"],
        1: ["train_wait", "rollout", "train", "log_probs", "actor_train", "update_weights"],
    }
    assert tiny.steps.loc[0, "phase/log_probs"] == pytest.approx(23.0)


def test_heat_pause_marks_the_step_it_touches(tiny: summary.RunSummary) -> None:
    assert list(tiny.steps["heat_touched"]) == [False, True]
    assert tiny.steps.loc[1, "heat_pause_s"] == pytest.approx(40.0)
    assert list(tiny.clean_steps.index) == [0]


def test_host_memory_used_is_total_minus_available(tiny: summary.RunSummary) -> None:
    memory = tiny.series["host_memory"]
    assert memory.loc[0, "used_gib"] == pytest.approx((127611699 - 100000000) / 1024**2)
    assert memory.loc[0, "total_gib"] == pytest.approx(121.7, abs=0.001)


def test_facts_and_config(tiny: summary.RunSummary) -> None:
    assert tiny.facts["steps"] == 2 and tiny.facts["clean_steps"] == 1
    assert tiny.facts["gpus_used"] == [("10.0.0.1", 0)]
    assert tiny.facts["event_counts"] == {"heat_pause": 1}
    assert tiny.config_value("flags.rollout_max_response_len") == 1024


def test_describe_is_one_line(tiny: summary.RunSummary) -> None:
    assert summary.describe(tiny) == (
        "tiny-run                 example  Qwen3-0.6B    2 steps (1 clean)   0.8 h  1 heat_pause  [test]")


def test_multi_rank_phases_are_counted_once(tmp_path: Path) -> None:
    run = tmp_path / "dummy-telemetry"
    shutil.copytree(MILES_SAMPLES / "four-gpu-colocated", run / "dashboard")
    text = (GOOD / "tiny-run" / "run.yaml").read_text().replace("tiny-run", "dummy-telemetry")
    (run / "run.yaml").write_text(text.replace("  rollout_max_response_len: 1024\n", "").replace(
        "  n_samples_per_prompt: 8\n", "").replace("date: 2026-09-21", "date: 1970-01-12"))
    result = summarise_runs(tmp_path)["dummy-telemetry"]
    assert result.steps.loc[0, "phase/actor_train"] == pytest.approx(39.0)  # rank 0 only, not 39 + 39.3
    assert result.steps.loc[0, "perf/step_time"] == 95.0


def test_unchanged_run_is_read_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(GOOD, runs)
    cache = tmp_path / "cache"
    first = summarise_runs(runs, cache)
    calls: list[Path] = []
    real = load.load_run
    monkeypatch.setattr(load, "load_run", lambda path, problems: calls.append(path) or real(path, problems))
    again = summarise_runs(runs, cache)
    assert calls == []
    assert again["tiny-run"].steps.equals(first["tiny-run"].steps)
    assert again["tiny-run"].source_hash == first["tiny-run"].source_hash


def test_a_changed_file_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(GOOD, runs)
    cache = tmp_path / "cache"
    before = summarise_runs(runs, cache)["tiny-run"]
    events = runs / "tiny-run" / "lab" / "events.jsonl"
    events.write_text(events.read_text().replace('"t0":1790002790.0', '"t0":1790002500.0'))
    after = summarise_runs(runs, cache)["tiny-run"]
    assert after.source_hash != before.source_hash
    assert list(after.steps["heat_touched"]) == [True, True]
    assert len(list(cache.glob("tiny-run-*"))) == 1  # the stale entry is gone


def test_a_cached_summary_decodes_its_tables_only_when_used(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(GOOD, runs)
    fresh = summarise_runs(runs, tmp_path / "cache")["tiny-run"]
    cached = summarise_runs(runs, tmp_path / "cache")["tiny-run"]
    assert "steps" not in vars(cached)  # nothing decoded yet: a check that never reads this run pays nothing
    assert cached.facts == fresh.facts
    assert cached.steps.equals(fresh.steps) and "steps" in vars(cached)


def test_an_unchanged_run_is_not_read_to_be_hashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(GOOD, runs)
    first = summarise_runs(runs, tmp_path / "cache")["tiny-run"]
    read: list[Path] = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self) or real(self))
    again = summarise_runs(runs, tmp_path / "cache")["tiny-run"]
    assert again.source_hash == first.source_hash
    assert not [path for path in read if runs in path.parents]  # stat()ed, not read


@pytest.mark.parametrize("index", [pd.RangeIndex(0, 2500), pd.RangeIndex(7, 2507, name="row")])
def test_a_long_frame_is_cached_a_row_group_at_a_time_byte_for_byte(index: pd.RangeIndex,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache writes a frame of millions of samples one row group at a time (memory); the file is the one
    pq.write_table writes."""
    monkeypatch.setattr(_summary_cache, "ROW_GROUP", 1000)
    frame = pd.DataFrame({"ts": np.arange(2500) * 0.5, "node": np.array(["a", "b"] * 1250, dtype=object),
                          "gpu": np.arange(2500), "mem_mb": np.array([None] * 2500, dtype=object),
                          "power_w": np.where(np.arange(2500) % 3 == 0, np.nan, 60.0)}, index=index)
    table = pa.Table.from_pandas(frame, preserve_index=True)
    expected = io.BytesIO()
    pq.write_table(table.replace_schema_metadata({**table.schema.metadata, b"manual_json_columns": b"[]"}),
                   expected, row_group_size=1000)
    written = io.BytesIO()
    _summary_cache._write_frame(frame, written)
    assert written.getvalue() == expected.getvalue()
    assert pq.ParquetFile(io.BytesIO(written.getvalue())).metadata.num_row_groups == 3
    assert _summary_cache._read_frame(io.BytesIO(written.getvalue())).equals(frame)
