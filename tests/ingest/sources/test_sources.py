"""Every form of Miles output reads into the same records; dirty logs give warnings, never guessed values."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from build_tools.ingest import load, sources
from build_tools.ingest.sources import log
from build_tools.summarise.summary import summarise
from tests.conftest import SAMPLES

SOURCES = SAMPLES / "sources"
FORMS = ("dump", "log", "tensorboard", "wandb-csv", "wandb-jsonl", "ci_history", "events")
ALL_KEYS = ["perf/rollout_time", "perf/step_time", "perf/train_time", "perf/train_wait_time", "perf/wait_time_ratio",
            "rollout/raw_reward", "rollout/response_lengths", "rollout/truncated", "train/entropy_loss",
            "train/grad_norm", "train/pg_clipfrac", "train/ppo_kl", "train/train_rollout_logprob_abs_diff"]


def table(form: str) -> pd.DataFrame:
    problems: list = []
    run, _ = load.load_path(SOURCES / form, problems)
    assert [str(p) for p in problems] == []
    steps = summarise(run, problems).steps
    return steps[sorted(c for c in steps.columns if "/" in c and not c.startswith("phase/"))]


def test_every_form_gives_the_same_per_step_table_for_the_keys_it_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SOURCES)
    reference = table("dump")
    assert list(reference.columns) == ALL_KEYS and list(reference.index) == [0, 1, 2]
    held = {"wandb-csv": ALL_KEYS[:8],  # the chart export holds the rollout-step keys it was downloaded with
            "ci_history": ["rollout/raw_reward", "train/grad_norm", "train/ppo_kl",
                           "train/train_rollout_logprob_abs_diff"]}
    for form in FORMS[1:]:
        got = table(form)
        assert list(got.columns) == held.get(form, ALL_KEYS), form
        pd.testing.assert_frame_equal(got, reference[got.columns], check_names=False, obj=form)


def test_a_log_gives_phases_arguments_and_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SOURCES)
    run, found = load.load_path(Path("log"), [])
    assert found == {"log": [Path("log/job.log")]}
    assert run.meta["args"] == {"colocate": True, "hf_checkpoint": "Qwen/Qwen3-0.6B", "n_samples_per_prompt": 8,
                                "num_rollout": 3, "rollout_batch_size": 32, "rollout_max_response_len": 1024}
    assert run.meta["start_ts"] == 1789999200.0
    assert run.config["model"] == {"name": "Qwen3-0.6B"}
    phases = [(r.data["name"], r.data["t0"], r.data["t1"], r.data["role"]) for r in run.streams["phases"][:3]]
    # t0 from the start line (to the millisecond), not end minus the printed tenth of a second.
    assert phases == [("rollout", 1789999200.0, 1789999240.5, "rollout_manager"),
                      ("train_wait", 1789999200.0, 1789999241.25, "train"),
                      ("train", 1789999241.25, 1789999261.75, "train")]
    assert run.warnings == ["log/job.log:28: perf/total_train_time read as perf/step_time (its name in older Miles "
                            "versions)"]


def test_dirty_log_warns_about_every_line_it_cannot_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SOURCES)
    problems: list = []
    run, _ = load.load_path(Path("dirty"), problems)
    assert problems == []
    assert run.warnings == [
        "dirty/log/job.log:15: last line has no newline (cut off when the job ended); skipped",
        "dirty/log/job.log:3: step 1: payload not readable (it does not end with '}': wrapped, cut off, or another "
        "process's output inside it); its values are not read",
        "dirty/log/job.log:5: looks like a metrics line but is not 'perf|rollout|multi_turn|step|eval N: {...}' (a "
        "wrapped, misread or interleaved line); its values are not read",
        "dirty/log/job.log:6: key 'rollout/raw_rewarrd' looks like a misreading of 'rollout/raw_reward'; kept under "
        "the name it has, not read as that key",
        "dirty/log/job.log:7: rollout 1: payload not readable (it does not end with '}': wrapped, cut off, or another "
        "process's output inside it); its values are not read",
        "dirty/log/job.log:8: eval 1: payload not readable (\"__import__('os').system('touch /tmp/mile\" is not a "
        "plain value); its values are not read",
    ]
    by_line = {rec.line: rec.data for rec in run.streams["metrics"]}
    assert sorted(by_line) == [1, 2, 6, 9]  # nothing from the wrapped, misread, interleaved or hostile lines
    first = by_line[1]["metrics"]
    assert first["rollout/raw_reward"] == 0.53 and math.isnan(first["rollout/response_lengths"])
    assert first["perf/tokens_per_gpu_per_sec"] == math.inf and first["rollout/all_correct"] is True
    assert first["rollout/zero_std/count"] == 3 and "rollout/weight_version/mean" not in first  # None: no value
    assert by_line[9] == {"ts": 1790002965.0, "step_key": "rollout/step", "step": 1,
                          "metrics": {"perf/cpu_memory_after_train_gb": 37.42}}
    assert not Path("/tmp/miles-manual-pwned").exists()


def test_kills_deaths_and_the_end_become_lab_events_quoting_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SOURCES)
    run, _ = load.load_path(Path("dirty"), [])
    events = [(r.data["kind"], r.data["t0"], r.data["t1"], r.data["detail"][:80]) for r in run.streams["events"]]
    assert events == [
        ("ray_oom_kill", 1790002990.445, 1790002990.445,
         "dirty/log/job.log:10: (raylet) node_manager.cc:3049: 1 Workers (tasks / actors) "),
        ("engine_death", 1790003100.0, 1790003100.0,
         "dirty/log/job.log:12: Scheduler hit an exception: Traceback (most recent call la"),
        ("job_end", 1790003100.0, 1790003100.0, "dirty/log/job.log:14: Job 'raysubmit_4Xk2' failed"),
    ]


@pytest.mark.parametrize(("payload", "expected", "text"), [
    ("{'a/b': np.float64(0.5), 'a/c': np.int64(-3), 'a/d': -inf, 'a/e': False}",
     {"a/b": 0.5, "a/c": -3, "a/d": -math.inf, "a/e": False}, "0.5"),
    # np.float32 prints its shortest text: the value is that float32's, as the trackers got it.
    ("{'a/b': numpy.float32(1e-05), 'a/c': None, 'a/d': 'text'}",
     {"a/b": float(np.float32(1e-05)), "a/c": None, "a/d": "text"}, repr(float(np.float32(1e-05)))),
])
def test_payloads_are_read_as_literals(payload: str, expected: dict, text: str) -> None:
    values, texts = log.parse_payload(payload)
    assert values == expected
    assert texts["a/b"] == text


@pytest.mark.parametrize(("payload", "reason"), [
    ("{'a': open('/etc/passwd').read()}", "\"open('/etc/passwd').read()\" is not a plain value"),
    ("{'a': np.float64(1) + 2}", "'np.float64(1) + 2' is not a plain value"),
    ("{'a': 1,, }", "not a Python dict literal: invalid syntax"),
    ("[1, 2]", "it does not end with '}': wrapped, cut off, or another process's output inside it"),
    ("{1: 2}", "a key that is not a string"),
])
def test_a_payload_that_is_not_plain_literals_is_refused(payload: str, reason: str) -> None:
    with pytest.raises(log.PayloadError) as caught:
        log.parse_payload(payload)
    assert str(caught.value) == reason


# --- a run folder with several sources ------------------------------------------------------------


def run_folder(tmp_path: Path, log_text: str | None = None) -> Path:
    """A run folder sample-run/ with run.yaml, the sample dump and a log of the same steps."""
    root = tmp_path / "sample-run"
    shutil.copytree(SOURCES / "dump" / "dashboard", root / "dashboard")
    (root / "log").mkdir()
    text = (SOURCES / "log" / "job.log").read_text() if log_text is None else log_text
    (root / "log" / "job.log").write_text(text)
    yaml_text = (SAMPLES / "load" / "good" / "tiny-run" / "run.yaml").read_text()
    (root / "run.yaml").write_text(yaml_text.replace("run_id: tiny-run", "run_id: sample-run"))
    return root


def test_a_dump_and_a_log_of_the_same_steps_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    problems: list = []
    run = load.load_run(run_folder(tmp_path), problems)
    assert [str(p) for p in problems] == []
    # The log repeats every value of the dump: nothing is added twice, its phases give way to the dump's.
    assert len(run.streams["metrics"]) == 9 and len(run.streams["phases"]) == 9
    assert all(rec.file == "sample-run/dashboard/metrics.jsonl" for rec in run.streams["metrics"])


def test_two_sources_that_disagree_are_an_error_naming_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = (SOURCES / "log" / "job.log").read_text().replace("'train/grad_norm': 0.375", "'train/grad_norm': 0.39")
    problems: list = []
    load.load_run(run_folder(tmp_path, text), problems)
    # Megatron printed the step line twice: both copies disagree with the dump.
    assert [str(p) for p in problems] == [
        f"sample-run/log/job.log:{line}: metrics.train/grad_norm: step 0 is 0.39 here but 0.375 in "
        "sample-run/dashboard/metrics.jsonl:2; two sources of one run must agree within the precision they keep"
        for line in (15, 16)
    ]


def test_values_agree_within_the_precision_the_less_precise_source_prints(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    line = ("[2026-09-21 14:00:41.000 actor_cell0_rank0] log_utils.py:431 - [CPU memory] after_train: {} GB "
            "(rollout_id=0, step=0)\n")
    root = run_folder(tmp_path, line.format("37.42"))
    metrics = root / "dashboard" / "metrics.jsonl"
    metrics.write_text(metrics.read_text() + '{"ts":1789999300.0,"step_key":"rollout/step","step":0,'
                       '"metrics":{"perf/cpu_memory_after_train_gb":37.4213}}\n')
    problems: list = []
    load.load_run(root, problems)
    assert problems == []  # 37.42 is 37.4213 printed with two decimals
    (root / "log" / "job.log").write_text(line.format("37.43"))
    load.load_run(root, problems)
    assert [str(p) for p in problems] == [
        "sample-run/log/job.log:1: metrics.perf/cpu_memory_after_train_gb: step 0 is 37.43 here but 37.4213 in "
        "sample-run/dashboard/metrics.jsonl:10; two sources of one run must agree within the precision they keep",
    ]


def test_a_run_folder_with_only_a_log_needs_no_dump(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    root = run_folder(tmp_path)
    shutil.rmtree(root / "dashboard")
    problems: list = []
    run = load.load_run(root, problems)
    assert problems == []
    assert run.meta["start_ts"] == 1789999200.0 and len(run.streams["phases"]) == 9


def test_run_yaml_flags_must_agree_with_the_arguments_a_log_printed(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    root = run_folder(tmp_path)
    shutil.rmtree(root / "dashboard")
    (root / "run.yaml").write_text((root / "run.yaml").read_text().replace("n_samples_per_prompt: 8",
                                                                          "n_samples_per_prompt: 16"))
    problems: list = []
    load.load_run(root, problems)
    assert [str(p) for p in problems] == [
        "sample-run/run.yaml: flags.n_samples_per_prompt: is 16, but sample-run/log/job.log:4 printed 8"]
    (root / "run.yaml").write_text((root / "run.yaml").read_text().replace("n_samples_per_prompt: 16",
                                                                          "n_samples_per_prompt: 8")
                                   .replace("name: Qwen3-0.6B", "name: Qwen3-4B"))
    problems = []
    load.load_run(root, problems)
    assert [str(p) for p in problems] == [
        "sample-run/run.yaml: model.name: is 'Qwen3-4B', but sample-run/log/job.log:3 printed hf_checkpoint "
        "'Qwen/Qwen3-0.6B'"]


def test_tensorboard_float32_agrees_with_the_dump_it_rounds() -> None:
    from build_tools.ingest.sources._common import agree, float32_unit, precision

    stored = float(__import__("numpy").float32(0.53))  # 0.5299999713897705
    assert agree(0.53, precision("0.53"), stored, float32_unit(stored))
    assert not agree(0.53, precision("0.53"), 0.54, precision("0.54"))
    assert agree(math.nan, 0.0, math.nan, 0.0) and not agree(math.inf, 0.0, 1e308, 0.5e308)


@pytest.mark.parametrize("name", ["log", "tensorboard", "wandb", "ci_history", "events"])
def test_no_source_file_crashes_a_reader(name: str, tmp_path: Path) -> None:
    """Garbage, a broken gzip, NUL bytes, a truncated event file: each is a problem or a warning, never a crash."""
    folder = tmp_path / name
    folder.mkdir()
    tb = (SOURCES / "tensorboard" / "tb" / "events.out.tfevents.1789999200.spark.4242.sample").read_bytes()
    junk = {"a.log": b"\x00\xff{'x': 1}\n" * 3, "b.txt.gz": b"not gzip", "c.csv": b"Step,a/b\n\x00,\x00\n",
            "d.jsonl": b'{"metric": 1, "series": 2}\n[1]\n{"type": "metric", "timestamp": 3}\n\xff\n',
            "e.jsonl.gz": b"\x1f\x8b\x08broken", "events.out.tfevents.1.x": tb[: len(tb) // 2],
            "events.out.tfevents.2.x": b"\x00" * 40}
    for file, data in junk.items():
        (folder / file).write_bytes(data)
    problems: list = []
    warnings: list = []
    files = sorted(p for p in folder.iterdir() if sources.FILES[name].search(p.name))
    found = sources.READERS[name](files, problems, warnings)
    assert all(isinstance(p.message, str) for p in problems) and isinstance(found.streams, dict)


def test_the_launch_command_and_megatrons_argument_list_give_the_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SOURCES)
    run, _ = load.load_path(Path("launch"), [])
    assert run.meta["args"] == {"n_samples_per_prompt": 16, "offload_train": True, "hf_checkpoint": "Qwen/Qwen3-1.7B",
                                "rollout_max_response_len": 2048, "colocate": True, "offload_rollout": False,
                                "rollout_top_p": 0.9}
    assert run.config["model"] == {"name": "Qwen3-1.7B"} and run.meta["start_ts"] == 1790064005.25


def test_exports_keep_only_what_was_logged(monkeypatch: pytest.MonkeyPatch) -> None:
    """A downsampled chart's bucket, a value with no step, a retried rollout: never read as a logged value."""
    monkeypatch.chdir(SOURCES / "dirty-exports")
    problems: list = []
    warnings: list = []
    files = sources.source_files(Path("."))
    found = {name: sources.READERS[name](paths, problems, warnings) for name, paths in files.items()}
    rewards = [(r.data["step"], r.data["metrics"]["rollout/raw_reward"]) for r in found["wandb"].streams["metrics"]]
    assert rewards == [(0, 0.5), (3, 0.75)]
    norms = [(r.data["step"], r.data["metrics"]["train/grad_norm"]) for r in found["ci_history"].streams["metrics"]]
    assert norms[0] == (0, 0.375) and math.isnan(norms[1][1]) and norms[2] == (2, math.inf)
    (retried,) = found["events"].streams["metrics"]
    assert retried.data["metrics"] == {"train/grad_norm": 0.375, "train/step": 0}  # the last attempt's value
    assert [str(p) for p in problems] == [
        "ci_history/4242-aa.jsonl:2: train/ppo_kl: expected [step, number], found [0, 'high']"]
    assert warnings == [
        "events/actor_cell0_rank0.jsonl:1: rollout 0 attempt 0 was retried (attempt 1, line 2): its train/step 0 "
        "values are not read",
        "events/actor_cell0_rank0.jsonl: skipped records of types not read here: 1 cell_reconfigure, "
        "1 witness_allocate_id",
        "ci_history/4242-aa.jsonl:1: train/grad_norm: 1 value(s) with no step; not read",
        "wandb/downsampled.csv: 1 downsampled value(s) (min and max differ) not read; export the chart with every "
        "point, or the run history",
    ]


@pytest.mark.parametrize("name", ["log", "tensorboard", "wandb", "ci_history", "events"])
def test_a_truncated_gzip_source_is_the_loaders_one_line(name: str, tmp_path: Path) -> None:
    import gzip

    folder = tmp_path / name
    folder.mkdir()
    (folder / "part.jsonl.gz").write_bytes(gzip.compress(b'{"metric": "rollout/raw_reward"}\n' * 50)[:-12])
    problems: list = []
    sources.READERS[name](sorted(folder.iterdir()), problems, [])
    assert [str(p).split(": ", 1)[1] for p in problems] == ["is a truncated gzip file (it ends mid-stream)"]


def test_launch_flags_a_log_printed_are_typed_as_run_yaml_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/samples/sources/bad-args/job.log launches with 0 steps per rollout, a batch of 10**23 and "two" samples
    per prompt: each is one problem at the line that printed it, as in meta.json's args."""
    monkeypatch.chdir(SOURCES / "bad-args")
    problems: list = []
    load.load_path(Path("job.log"), problems)
    assert [str(problem) for problem in problems] == [
        "job.log:1: n_samples_per_prompt: expected a whole number, found 'two'",
        "job.log:1: num_steps_per_rollout: expected a value >= 1, found 0",
        "job.log:1: rollout_batch_size: expected a value <= 2147483647, found 100000000000000000000000"]


def test_a_logged_argument_that_is_no_flag_name_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A launch line or argument dump whose names would be shell syntax on a rendered command: one line each."""
    (tmp_path / "launch" / "log").mkdir(parents=True)
    text = (SOURCES / "launch" / "log" / "job.log").read_text(encoding="utf-8")
    text = text.replace("--rollout-top-p 0.9", "--rollout-top-p 0.9 '--x$(touch PWNED)' 1")
    text = text.replace("  offload_train ....", "  offload_trаin ....")  # a Cyrillic a: \w takes it, argparse not
    (tmp_path / "launch" / "log" / "job.log").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    problems: list = []
    load.load_path(Path("launch"), problems)
    assert sorted(str(p) for p in problems) == [
        "launch/log/job.log:1: args: key 'x$(touch PWNED)' is not a Miles flag's name: expected lowercase ASCII "
        "letters, digits and underscores ([a-z0-9_]+), as argparse stores a flag",
        "launch/log/job.log:5: args: key 'offload_tr\\u0430in' is not a Miles flag's name: expected lowercase "
        "ASCII letters, digits and underscores ([a-z0-9_]+), as argparse stores a flag"]
