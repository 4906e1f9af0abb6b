"""The summary: one row per step with every metric and phase, the heat rule, and the content cache."""

from __future__ import annotations

import io
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from build_tools import readers
from build_tools.core._exceptions import ManualError, RunDataError
from build_tools.core._files import scan_tree
from build_tools.ingest import _columnar, load
from build_tools.store import fingerprint, run_hash, summary_cache
from build_tools.summarise import summary, summary_phases
from build_tools.summarise.summary import summarise_runs
from tests.conftest import MILES_SAMPLES, ROOT, SAMPLES

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
    assert readers.config_value(tiny, "flags.rollout_max_response_len") == 1024


def test_describe_is_one_line(tiny: summary.RunSummary) -> None:
    assert summary.describe(tiny) == (
        "tiny-run                 example  Qwen3-0.6B    2 steps (1 clean)   0.8 h  1 heat_pause  [test]")


def test_multi_rank_phases_are_counted_once(tmp_path: Path) -> None:
    run = tmp_path / "dummy-telemetry"
    shutil.copytree(MILES_SAMPLES / "four-gpu-colocated", run / "dashboard")
    text = (GOOD / "tiny-run" / "run.yaml").read_text().replace("tiny-run", "dummy-telemetry")
    (run / "run.yaml").write_text(text.replace("  rollout_max_response_len: 1024\n", "").replace(
        "  n_samples_per_prompt: 8\n", "").replace("date: 2026-09-21", "date: 1970-01-12")
        .replace("commit_date: 2026-09-15", "commit_date: 1970-01-01"))  # its records are of 1970
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
    assert not {"phases", "events", "series"} & set(vars(cached))  # each table decoded when it is read
    assert cached.phases.equals(fresh.phases) and cached.events.equals(fresh.events)
    assert list(cached.series) == list(fresh.series)
    assert all(cached.series[name].equals(frame) for name, frame in fresh.series.items())


def test_a_cached_summary_not_yet_decoded_travels_to_a_worker(tmp_path: Path) -> None:
    """The drawing stage pickles summaries to its worker processes; one still holding its Parquet tables undecoded
    must pickle too, and decode there."""
    import pickle

    runs = tmp_path / "runs"
    shutil.copytree(GOOD, runs)
    fresh = summarise_runs(runs, tmp_path / "cache")["tiny-run"]
    cached = summarise_runs(runs, tmp_path / "cache")["tiny-run"]
    copy = pickle.loads(pickle.dumps(cached))
    assert "steps" not in vars(copy) and copy.steps.equals(fresh.steps)


def test_an_unchanged_run_is_not_read_to_be_hashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(GOOD, runs)
    # The copy's ctimes are now: count them settled (a file changed in the last two seconds is never remembered).
    monkeypatch.setattr(fingerprint, "SETTLED_NS", -1)
    first = summarise_runs(runs, tmp_path / "cache")["tiny-run"]
    read: list[Path] = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self) or real(self))
    again = summarise_runs(runs, tmp_path / "cache")["tiny-run"]
    assert again.source_hash == first.source_hash
    assert not [path for path in read if runs in path.parents]  # stat()ed, not read


# --- read what is needed: a run nothing reads is validated, not summarised ------------------------------


def _two_runs(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    for run_id in ("baseline-seed1", "no-watchdog"):
        shutil.copytree(ROOT / "runs" / run_id, runs / run_id)
    return runs


READ = summary.Wanted(frozenset({"baseline-seed1"}))


def test_a_run_nothing_reads_is_validated_not_summarised(tmp_path: Path) -> None:
    runs, cache = _two_runs(tmp_path), tmp_path / "cache"
    validated: dict[str, summary.ValidatedRun] = {}
    summaries = summarise_runs(runs, cache, wanted=READ, validated=validated)
    assert list(summaries) == ["baseline-seed1"] and list(validated) == ["no-watchdog"]
    assert validated["no-watchdog"].config["run_id"] == "no-watchdog"
    assert [entry.name[:len("baseline-seed1")] for entry in cache.iterdir() if entry.is_dir()] == ["baseline-seed1"]
    everything = summarise_runs(runs, None)  # the same run summarised: the same first and last record
    assert (validated["no-watchdog"].start_ts, validated["no-watchdog"].end_ts) == (
        everything["no-watchdog"].facts["start_ts"], everything["no-watchdog"].facts["end_ts"])


def test_a_validated_run_is_read_again_only_when_it_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs, cache = _two_runs(tmp_path), tmp_path / "cache"
    summarise_runs(runs, cache, wanted=READ)
    calls: list[str] = []
    real = load.load_run
    monkeypatch.setattr(load, "load_run", lambda path, problems, **how: calls.append(path.name) or real(path, problems,
                                                                                                       **how))
    validated: dict[str, summary.ValidatedRun] = {}
    assert list(summarise_runs(runs, cache, wanted=READ, validated=validated)) == ["baseline-seed1"]
    assert calls == [] and list(validated) == ["no-watchdog"]  # remembered by its input hash
    run_yaml = runs / "no-watchdog" / "run.yaml"
    run_yaml.write_text(run_yaml.read_text().replace("title: ", "title: touched, "))
    summarise_runs(runs, cache, wanted=READ, validated=validated)
    assert calls == ["no-watchdog"]  # only the touched run, and only validated again
    assert validated["no-watchdog"].config["title"].startswith("touched, ")
    summarise_runs(runs, cache, validated=(none := {}))  # every run wanted: summarised once, then cached
    assert calls == ["no-watchdog", "no-watchdog"] and none == {}


def test_a_validated_record_is_replayed_only_with_the_facts_of_every_metric_asked_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The facts are kept by metric: a spec naming a metric the record lacks validates the run again (a stale record
    is never replayed), one naming fewer reads nothing; a record written before facts were taken is dropped
    without a warning, its run validated again."""
    runs, cache = _two_runs(tmp_path), tmp_path / "cache"
    grad = summary.Wanted(frozenset({"baseline-seed1"}), metrics=("train/grad_norm",))
    both = summary.Wanted(frozenset({"baseline-seed1"}), metrics=("train/grad_norm", "perf/step_time"))
    summarise_runs(runs, cache, wanted=grad)
    fresh = summary.load_and_validate(runs / "no-watchdog", both.metrics)[0]
    calls: list[str] = []
    real = load.load_run
    monkeypatch.setattr(load, "load_run", lambda path, problems, **how: calls.append(path.name) or real(path, problems,
                                                                                                       **how))
    validated: dict[str, summary.ValidatedRun] = {}
    summarise_runs(runs, cache, wanted=grad, validated=validated)
    assert calls == [] and list(validated["no-watchdog"].metrics) == ["train/grad_norm"]
    summarise_runs(runs, cache, wanted=both, validated=validated)
    assert calls == ["no-watchdog"] and list(validated["no-watchdog"].metrics) == ["train/grad_norm", "perf/step_time"]
    assert fresh is not None and validated["no-watchdog"].metrics == fresh.metrics
    summarise_runs(runs, cache, wanted=grad, validated=validated)
    assert calls == ["no-watchdog"] and list(validated["no-watchdog"].metrics) == ["train/grad_norm"]
    loss = summary.Wanted(frozenset({"baseline-seed1"}), metrics=("train/loss",))
    summarise_runs(runs, cache, wanted=loss, validated=validated)  # a new metric: validated again, ...
    assert calls == ["no-watchdog", "no-watchdog"] and list(validated["no-watchdog"].metrics) == ["train/loss"]
    summarise_runs(runs, cache, wanted=both, validated=validated)  # ... the facts known of its input kept
    assert calls == ["no-watchdog", "no-watchdog"]
    records = summary_cache.read_validated(cache)
    assert sorted(records["no-watchdog"]["metrics"]) == ["perf/step_time", "train/grad_norm", "train/loss"]
    assert records["baseline-seed1"]["metrics"] == {}  # summarised: its facts come from its summary
    summarise_runs(runs, cache)  # every run summarised (ALL=1): the facts known of the same input are kept
    assert summary_cache.read_validated(cache) == records
    summarise_runs(runs, cache, wanted=grad, validated=validated)
    assert calls == ["no-watchdog"] * 3  # summarised once above, then replayed
    for record in records.values():  # as written before validation took facts
        for key in ("steps", "metrics", "facts_format"):
            del record[key]
    summary_cache.write_validated(cache, records)
    warnings: list[str] = []
    summarise_runs(runs, cache, wanted=grad, validated=validated, warnings=warnings)
    assert calls == ["no-watchdog"] * 4 and warnings == []
    assert validated["no-watchdog"].steps == fresh.steps == 6  # no-watchdog is cut short by an engine death


def test_a_run_the_cache_knows_nothing_of_is_hashed_by_its_reader(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold check hashes each run in the task that reads it (not first in the parent); what it remembers is
    the hash the parent would have made, so a second check reads nothing."""
    runs, cache = _two_runs(tmp_path), tmp_path / "cache"
    monkeypatch.setattr(fingerprint, "SETTLED_NS", -1)  # the copy's ctimes are now: count them settled
    hashed_by: list[tuple[str, bool]] = []
    real_hash, real_read = summary.input_hash, summary._read_run
    reading: list[bool] = [False]

    def read_run(job: summary.Job) -> summary.Read:
        reading[0] = True
        try:
            return real_read(job)
        finally:
            reading[0] = False

    def input_hash(run_dir: Path, *args: object, **kwargs: object) -> str:
        hashed_by.append((run_dir.name, reading[0]))
        return real_hash(run_dir, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(summary, "input_hash", input_hash)
    monkeypatch.setattr(summary, "_read_run", read_run)
    summarise_runs(runs, cache, wanted=READ)
    assert hashed_by == [("baseline-seed1", True), ("no-watchdog", True)]
    expected = {run_id: real_hash(runs / run_id) for run_id in ("baseline-seed1", "no-watchdog")}
    assert summary_cache.read_validated(cache)["no-watchdog"]["digest"] == expected["no-watchdog"]
    memo = json.loads((cache / "input-hashes.json").read_text())
    assert {key.rsplit("/", 1)[1]: entry["digest"] for key, entry in memo.items()} == expected
    hashed_by.clear()
    summarise_runs(runs, cache, wanted=READ)  # warm: the memo answers, in the parent, and nothing is read
    assert hashed_by == [("baseline-seed1", False), ("no-watchdog", False)]


def test_a_worker_writes_the_summary_it_made_and_hands_back_only_that_it_did(tmp_path: Path) -> None:
    runs, cache = _two_runs(tmp_path), tmp_path / "cache"
    run = runs / "baseline-seed1"
    listing = scan_tree(run, run.resolve())[1]
    result, problems, hashed = summary._read_run(summary.Job(run, True, listing, None, cache))
    assert isinstance(result, summary.Written) and problems == [] and hashed is not None
    assert hashed["digest"] == summary.input_hash(run)
    written = summary._read_cache(cache, run, hashed["digest"], [])
    fresh = summarise_runs(runs, None)["baseline-seed1"]
    assert written is not None and written.facts == fresh.facts and written.steps.equals(fresh.steps)


def test_a_summary_gone_from_the_cache_before_it_is_read_back_is_one_error(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    runs, cache = _two_runs(tmp_path), tmp_path / "cache"
    monkeypatch.setattr(fingerprint, "SETTLED_NS", -1)  # the copy's ctimes are now: count them settled

    def written_then_removed(job: summary.Job) -> summary.Read:
        memo: dict = {}
        summary.input_hash(job.path, memo, job.listing, key="run")
        return summary.Written(), [], memo["run"]

    monkeypatch.setattr(summary, "_read_run", written_then_removed)
    with pytest.raises(ManualError) as caught:
        summarise_runs(runs, cache)
    assert str(caught.value).startswith("build/cache: baseline-seed1-") and str(caught.value).endswith(
        " changed while this build was reading it")


def test_a_broken_run_nothing_reads_still_fails_with_its_one_line_error(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _two_runs(tmp_path)
    monkeypatch.chdir(tmp_path)
    metrics = runs / "no-watchdog" / "dashboard" / "metrics.jsonl"
    lines = metrics.read_text().count("\n")
    metrics.write_text(metrics.read_text() + '{"ts": 1, "step_key": "x"\n')
    for cache in (None, tmp_path / "cache", tmp_path / "cache"):  # never remembered as validated
        with pytest.raises(RunDataError) as caught:
            summarise_runs(Path("runs"), cache, wanted=READ)
        assert [str(problem) for problem in caught.value.problems] == [
            f"runs/no-watchdog/dashboard/metrics.jsonl:{lines + 1}: not valid JSON: Expecting ',' delimiter"]


def test_a_step_logged_twice_is_found_in_a_run_only_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SAMPLES / "load")
    with pytest.raises(RunDataError) as everything:
        summarise_runs(Path("step-twice"), None)
    with pytest.raises(RunDataError) as validated:
        summarise_runs(Path("step-twice"), None, wanted=summary.Wanted())
    assert "logged twice with different values" in str(validated.value)
    assert validated.value.problems == everything.value.problems


def test_a_damaged_record_of_the_validated_runs_is_discarded_with_a_warning(tmp_path: Path) -> None:
    runs, cache = _two_runs(tmp_path), tmp_path / "cache"
    summarise_runs(runs, cache, wanted=READ)
    record = cache / "validated.json"
    record.write_bytes(record.read_bytes().replace(b'"no-watchdog"', b'"no-watchdug"'))
    warnings: list[str] = []
    summarise_runs(runs, cache, wanted=READ, warnings=warnings, validated=(validated := {}))
    assert warnings == ["build/cache: a damaged cache file was discarded and the runs it held are validated again "
                        "(validated.json: does not match its hash)"]
    assert list(validated) == ["no-watchdog"]
    assert summarise_runs(runs, cache, wanted=READ, warnings=(later := [])) and later == []  # written again, trusted


@pytest.mark.parametrize("index", [pd.RangeIndex(0, 2500), pd.RangeIndex(7, 2507, name="row")])
def test_a_long_frame_is_cached_a_row_group_at_a_time_byte_for_byte(index: pd.RangeIndex,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache writes a frame of millions of samples one row group at a time (memory); the file is the one
    pq.write_table writes."""
    monkeypatch.setattr(summary_cache, "ROW_GROUP", 1000)
    frame = pd.DataFrame({"ts": np.arange(2500) * 0.5, "node": np.array(["a", "b"] * 1250, dtype=object),
                          "gpu": np.arange(2500), "mem_mb": np.array([None] * 2500, dtype=object),
                          "power_w": np.where(np.arange(2500) % 3 == 0, np.nan, 60.0)}, index=index)
    table = pa.Table.from_pandas(frame)  # the RangeIndex kept as metadata
    expected = io.BytesIO()
    pq.write_table(table.replace_schema_metadata({**table.schema.metadata, b"manual_json_columns": b"[]"}),
                   expected, row_group_size=1000, use_dictionary=["node"], write_statistics=False)
    written = io.BytesIO()
    summary_cache._write_frame(frame, written)
    assert written.getvalue() == expected.getvalue()
    metadata = pq.ParquetFile(io.BytesIO(written.getvalue())).metadata
    assert metadata.num_row_groups == 3
    dictionary = {metadata.row_group(0).column(i).path_in_schema for i in range(metadata.num_columns)
                  if metadata.row_group(0).column(i).has_dictionary_page}
    assert dictionary == {"node"}  # text only: numbers seldom repeat
    assert not metadata.row_group(0).column(0).is_stats_set
    assert summary_cache._read_frame(io.BytesIO(written.getvalue())).equals(frame)


def test_a_validated_run_has_its_summarys_window_without_keeping_its_samples() -> None:
    """A run only validated keeps no sampled stream (hours of telemetry), yet its first and last record are the
    ones its summary's facts give: each stream's last sample counts, as it does in the summary."""
    with_samples = 0
    for run_dir in sorted(path for path in (ROOT / "runs").iterdir() if path.is_dir()):
        validated, problems = summary.load_and_validate(run_dir)
        fresh, _ = summary.load_and_summarise(run_dir)
        assert problems == [] and validated is not None and fresh is not None
        assert (validated.start_ts, validated.end_ts) == (fresh.facts["start_ts"], fresh.facts["end_ts"]), run_dir.name
        kept = load.load_run(run_dir, [], keep=False)
        sampled = set(fresh.series) & set(_columnar.FLAT_STREAMS)
        assert not {*kept.tables, *kept.streams} & sampled  # the samples themselves are not kept
        assert set(kept.last_samples) == sampled
        with_samples += bool(sampled)
    assert with_samples >= 10  # most example runs carry telemetry


def test_a_run_whose_last_record_is_a_sample_ends_with_it_when_only_validated(tmp_path: Path) -> None:
    import gzip

    run_dir = tmp_path / "baseline-seed1"
    shutil.copytree(ROOT / "runs" / "baseline-seed1", run_dir)
    fresh, _ = summary.load_and_summarise(run_dir)
    stream = run_dir / "lab" / "gpu_temp.jsonl.gz"
    lines = gzip.decompress(stream.read_bytes()).decode().splitlines()
    last = json.loads(lines[-1])
    later = fresh.facts["end_ts"] + 3600.0  # an idle job still samples its GPU an hour after its last step
    stream.write_bytes(gzip.compress(("\n".join([*lines, json.dumps({**last, "ts": later})]) + "\n").encode(),
                                     mtime=0))
    validated, problems = summary.load_and_validate(run_dir)
    assert problems == [] and validated is not None
    assert validated.end_ts == later == summary.load_and_summarise(run_dir)[0].facts["end_ts"]


def test_a_run_changed_a_moment_ago_is_hashed_but_not_remembered(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Its file could change again within one tick of the file system's clock, size and times unchanged (git's
    racily clean entries): the memo remembers it only once its files have settled, by mtime and by ctime (which
    no one can set back: putting the mtime back does not settle a file)."""
    import os
    import time

    monkeypatch.setattr(fingerprint, "SETTLED_NS", 500_000_000)
    runs, cache = _two_runs(tmp_path), tmp_path / "cache"
    time.sleep(0.6)  # the copy settles
    run_yaml = runs / "no-watchdog" / "run.yaml"
    run_yaml.write_text(run_yaml.read_text().replace("title: ", "title: touched, "))  # now
    os.utime(run_yaml, (time.time() - 60, time.time() - 60))  # its mtime put back: its ctime stays now
    written = run_yaml.stat().st_ctime_ns
    monkeypatch.setattr(run_hash, "_now", lambda: written + 250_000_000)  # a quarter second after the write
    summarise_runs(runs, cache, wanted=READ)
    memo = json.loads((cache / "input-hashes.json").read_text())
    assert [key.rsplit("/", 1)[1] for key in memo] == ["baseline-seed1"]
    assert summary_cache.read_validated(cache)["no-watchdog"]["digest"] == summary.input_hash(runs / "no-watchdog")
    monkeypatch.setattr(run_hash, "_now", lambda: written + 1_000_000_000)  # a second after: settled
    summarise_runs(runs, cache, wanted=READ)
    memo = json.loads((cache / "input-hashes.json").read_text())
    assert sorted(key.rsplit("/", 1)[1] for key in memo) == ["baseline-seed1", "no-watchdog"]


@given(st.lists(st.integers(-3, 40), max_size=60), st.booleans())
def test_distinct_count_is_the_count_of_unique_values(values: list[int], in_order: bool) -> None:
    # The shortcut for steps in order (most runs) against np.unique, on steps in order, repeated, and out of order.
    steps = np.array(sorted(values) if in_order else values, dtype=np.int64)
    assert summary_phases._distinct_count(steps) == len(np.unique(steps))


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=40), st.booleans())
def test_distinct_count_of_doubles_is_np_uniques(values: list[float], in_order: bool) -> None:
    # NaN and the infinities too (a NaN is never in order: np.unique, which counts the NaNs as one, decides).
    steps = np.array(sorted(values) if in_order else values, dtype=np.float64)
    assert summary_phases._distinct_count(steps) == len(np.unique(steps))


def test_distinct_count_of_equal_infinities_warns_nothing() -> None:
    # inf - inf is NaN: counted by np.unique, without numpy's "invalid value" warning reaching the user's terminal.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert summary_phases._distinct_count(np.array([-np.inf, -np.inf, 1.0, np.inf, np.inf])) == 3
