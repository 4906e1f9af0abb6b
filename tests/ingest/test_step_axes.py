"""Step axes as Miles has them (issue 19, items 4, 5, 6, 8): every value at its own step key and step, the axes
joined through num_steps_per_rollout and said so; run ids that are folder names; GPU utilisation from gpu_util or
lab/gpu_temp; warnings on stderr.

The log is written at test time by Python's logging in Miles' format (`miles/utils/logging_utils.py`), its
metrics lines as Miles prints them (`log_utils.py`: `step {train/step}: {dict}`; `metrics.py`: `perf {rollout id}:
{dict}`), its arguments as Megatron's `_print_args` does.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from build_tools import readers
from build_tools.cli import main
from build_tools.core._exceptions import MissingValue
from build_tools.core._types import RunSummary
from build_tools.ingest import axes, load
from build_tools.store import summary_cache, summary_wire
from build_tools.summarise.summary import summarise
from tests.conftest import ROOT, SAMPLES, copy_project

ARGS = {"hf_checkpoint": "Qwen/Qwen3-0.6B", "n_samples_per_prompt": 8, "rollout_batch_size": 32,
        "global_batch_size": 128, "num_rollout": 2}  # 32 x 8 // 128: two optimizer steps a rollout
REWARDS = [0.5, 0.625]
GRAD_NORMS = [0.375, 0.3125, 0.28125, math.nan]  # train/step 0 to 3; NaN as Miles prints it (nan)


def miles_log(path: Path, args: dict[str, Any] | None = ARGS) -> Path:
    """A job's output: Megatron's argument block, then the rollout manager's and the trainer's metrics lines."""
    with path.open("w", encoding="utf-8") as out:
        if args is not None:
            out.write("------------------------ arguments ------------------------\n")
            out.writelines(f"  {name} {'.' * (48 - len(name))} {value}\n" for name, value in sorted(args.items()))
            out.write("-------------------- end of arguments ---------------------\n")
    handler = logging.FileHandler(path, encoding="utf-8")
    formatter = logging.Formatter("[%(asctime)s.%(msecs)03d actor_cell0_rank0] %(filename)s:%(lineno)d - "
                                  "%(message)s", datefmt="%Y-%m-%d %H:%M:%S")
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    logger = logging.getLogger(f"miles-test-{path}")
    logger.propagate, logger.level = False, logging.INFO
    logger.addHandler(handler)
    try:
        for rollout, reward in enumerate(REWARDS):
            logger.info(f"perf {rollout}: {({'rollout/raw_reward': reward, 'perf/rollout_time': 40.5 - rollout})}")
            for inside in range(2):
                step = rollout * 2 + inside
                logger.info(f"step {step}: {({'train/grad_norm': GRAD_NORMS[step], 'train/step': step})}")
    finally:
        logger.removeHandler(handler)
        handler.close()
    return path


LONG = ["step_key,step,metric,value",
        "rollout/step,0,perf/rollout_time,40.5", "rollout/step,0,rollout/raw_reward,0.5",
        "rollout/step,1,perf/rollout_time,39.5", "rollout/step,1,rollout/raw_reward,0.625",
        "train/step,0,train/grad_norm,0.375", "train/step,1,train/grad_norm,0.3125",
        "train/step,2,train/grad_norm,0.28125", "train/step,3,train/grad_norm,nan"]


def test_every_value_comes_out_of_show_long_at_its_own_axis_and_step(tmp_path: Path, capsys) -> None:
    log = miles_log(tmp_path / "job.log")
    assert main(["show", str(log), "--long"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == LONG
    assert captured.err == ""


def test_show_csv_is_a_wide_table_with_the_step_key_first(tmp_path: Path, capsys) -> None:
    assert main(["show", str(miles_log(tmp_path / "job.log")), "--csv"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "step_key,step,perf/rollout_time,rollout/raw_reward,train/grad_norm",
        "rollout/step,0,40.5,0.5,", "rollout/step,1,39.5,0.625,",
        "train/step,0,,,0.375", "train/step,1,,,0.3125", "train/step,2,,,0.28125", "train/step,3,,,nan"]


def test_the_summary_keeps_train_step_apart_and_joins_it_through_num_steps_per_rollout(tmp_path: Path) -> None:
    problems: list = []
    run, _ = load.load_path(miles_log(tmp_path / "job.log"), problems)
    summary = summarise(run, problems)
    assert problems == [] and summary.warnings == []
    assert axes.join_of(summary.config) == axes.Join(2, "flags.rollout_batch_size x n_samples_per_prompt // "
                                                        "global_batch_size")
    assert summary.steps.index.tolist() == [0, 1] and "train/grad_norm" not in summary.steps.columns
    train = summary.axes["train/step"]
    assert train.index.tolist() == [0, 1, 2, 3] and train["rollout"].tolist() == [0, 0, 1, 1]
    # Read on its own axis, a NaN is never dropped silently; joined onto the rollouts, each rollout's mean.
    with pytest.raises(MissingValue, match=r"finite train/grad_norm \(it logged train/grad_norm = NaN at step 3\)"):
        readers.step_values(summary, "train/grad_norm")
    assert readers.step_values(summary, "rollout/raw_reward").to_dict() == {0: 0.5, 1: 0.625}
    assert readers.join_note(summary) == (
        "train/step joined to rollout/step through num_steps_per_rollout = 2 (flags.rollout_batch_size x "
        "n_samples_per_prompt // global_batch_size): rollout id = train/step // 2; a rollout's values averaged")


def test_show_says_how_the_axes_are_joined(tmp_path: Path, capsys) -> None:
    assert main(["show", str(miles_log(tmp_path / "job.log"))]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("Per-step table: 3 metrics on 2 step axes (--csv prints all of it, --long one value a line)")
    assert lines[at + 1:at + 11] == [
        "  train/step joined to rollout/step through num_steps_per_rollout = 2 (flags.rollout_batch_size x "
        "n_samples_per_prompt // global_batch_size): rollout id = train/step // 2",
        "  rollout/step: 2 steps, 2 metrics",
        "  rollout/step  perf/rollout_time  rollout/raw_reward",
        "             0               40.5                 0.5",
        "             1               39.5               0.625",
        "  train/step: 4 steps, 1 metrics",
        "  train/step  train/grad_norm",
        "           0            0.375",
        "           1           0.3125",
        "           2          0.28125"]


def test_a_run_that_records_no_join_takes_it_from_its_steps_and_warns(tmp_path: Path, capsys) -> None:
    log = miles_log(tmp_path / "job.log", args=None)
    assert main(["show", str(log), "--long"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == LONG
    assert captured.err.startswith(f"WARNING {tmp_path}/job.log: num_steps_per_rollout is not recorded; taken from ")
    problems: list = []
    run, _ = load.load_path(log, problems)
    summary = summarise(run, problems)
    assert summary.axes["train/step"]["rollout"].tolist() == [0, 0, 1, 1]
    assert summary.warnings == [
        f"{tmp_path}/job.log: num_steps_per_rollout is not recorded; taken from the steps: 4 train/step over 2 "
        "rollout/step, so 2 (set flags.num_steps_per_rollout in run.yaml, or pass the log that prints the launch "
        "arguments); train/step is read as an axis of its own"]


@pytest.mark.parametrize(("flags", "expected"), [
    ({"num_steps_per_rollout": 4, "global_batch_size": 64}, axes.Join(4, "flags.num_steps_per_rollout")),
    ({"rollout_batch_size": 32, "n_samples_per_prompt": 8, "global_batch_size": 256},
     axes.Join(1, "flags.rollout_batch_size x n_samples_per_prompt // global_batch_size")),
    ({"num_steps_per_rollout": None, "wandb_always_use_train_step": True},
     axes.Join(1, "not recorded, taken as 1", train_scaled=True)),
])
def test_the_join_comes_from_the_configuration(flags: dict[str, Any], expected: axes.Join) -> None:
    assert axes.join_of({"flags": flags}) == expected


def test_always_use_train_step_counts_rollouts_in_train_steps() -> None:
    join = axes.Join(2, "flags.num_steps_per_rollout", train_scaled=True)
    assert [join.rollout_of(key, 4) for key in axes.AXES] == [2, 2, 2]
    assert [axes.Join(2, "x").rollout_of(key, 4) for key in axes.AXES] == [4, 2, 4]


# --- a dump: eval/step kept; NaN printed as nan ------------------------------------------------------------------


def dump_with_eval(folder: Path) -> Path:
    """The sample dump with an eval/step line and a NaN line appended, as Miles' store writes a line (json.dumps)."""
    shutil.copytree(SAMPLES / "sources" / "dump" / "dashboard", folder / "dashboard")
    metrics = folder / "dashboard" / "metrics.jsonl"
    lines = [{"ts": 1790000000.0, "step_key": "eval/step", "step": 2, "metrics": {"eval/gsm8k": 0.71875,
                                                                                   "eval/step": 2}},
             {"ts": 1790000001.0, "step_key": "rollout/step", "step": 3, "metrics": {"rollout/raw_reward": math.nan,
                                                                                      "rollout/sample": "4 + 4"}},
             {"ts": 1790000002.0, "step_key": None, "step": None, "metrics": {"perf/startup_time": 12.5}}]
    with metrics.open("a", encoding="utf-8") as out:
        out.writelines(json.dumps(line) + "\n" for line in lines)
    return folder


def test_eval_values_and_values_without_a_step_are_shown_not_dropped(tmp_path: Path, capsys) -> None:
    folder = dump_with_eval(tmp_path / "job")
    assert main(["show", str(folder), "--long"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "rollout/step,3,rollout/raw_reward,nan" in out
    assert "rollout/step,3,rollout/sample,4 + 4" in out  # a text metric, as written
    assert out[-2:] == ["eval/step,2,eval/gsm8k,0.71875", ",,perf/startup_time,12.5"]
    assert main(["show", str(folder), "--csv"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1].startswith("eval/step,2,")
    assert "4 + 4" not in captured.out
    assert captured.err == ("WARNING 2 values logged without a step or as text are not in the wide table (--long "
                            "lists every value)\n")
    problems: list = []
    run, _ = load.load_path(folder, problems)
    summary = summarise(run, problems)
    assert summary.axes["eval/step"]["eval/gsm8k"].to_dict() == {2: 0.71875}
    assert readers.step_values(summary, "eval/gsm8k").to_dict() == {2: 0.71875}


# --- a folder holding only lab/; GPU utilisation from lab/gpu_temp ---------------------------------------------


def lab_only(folder: Path) -> Path:
    """What `manual record` writes on a GB10: temperature, utilisation and power in lab/gpu_temp, no gpu_util."""
    (folder / "lab").mkdir(parents=True)
    samples = [{"ts": 1790000000.0 + second, "gpu": 0, "temp_c": 61.0, "util": 90.0 + second, "power_w": 40.0}
               for second in range(3)]
    (folder / "lab" / "gpu_temp.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    return folder


def test_a_folder_holding_only_lab_is_shown(tmp_path: Path, capsys) -> None:
    folder = lab_only(tmp_path / "spark")
    assert main(["show", str(folder), "--long"]) == 0
    assert capsys.readouterr().out == "step_key,step,metric,value\n"
    assert main(["show", str(folder)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:4] == ["Sources:", f"  lab          {folder}/lab"]


def test_gpu_utilisation_is_read_from_lab_gpu_temp_when_the_run_has_no_gpu_util(tmp_path: Path) -> None:
    problems: list = []
    run, _ = load.load_path(lab_only(tmp_path / "spark"), problems)
    summary = summarise(run, problems)
    assert "gpu_util" not in summary.series
    assert readers.series_of(summary, "gpu_util", "ts", "util")["util"].tolist() == [90.0, 91.0, 92.0]
    with pytest.raises(MissingValue, match=r"gpu_util series \(nor GPU utilisation in lab/gpu_temp, which "):
        readers.series_of(summarise(load.load_path(SAMPLES / "sources" / "log" / "job.log", [])[0], []),
                          "gpu_util", "ts", "util")


# --- run ids: the folder is the run id; run_name as Miles wrote it --------------------------------------------------


def dump_named(folder: Path, run_name: str) -> Path:
    shutil.copytree(SAMPLES / "sources" / "dump" / "dashboard", folder / "dashboard")
    meta = folder / "dashboard" / "meta.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "run_name": run_name}, indent=1), encoding="utf-8")
    return folder


# What add-run leaves to fill (it takes miles.* from edition.yml, the machine and the parameter count from
# docs/data/setup.yml, the GPUs from the dump).
# The dumps name no Miles commit: the person adding them says it, here the edition's (edition.yml's commit).
FILL = {"title": "A run", "tags": ["my-runs"], "seed": 1, "dataset": "GSM8K", "miles": {"commit": "08752a1"},
        "lab": {"heat_guard": False}}


def fill(path: Path) -> None:
    config = yaml.safe_load(path.read_text())
    for key, value in FILL.items():
        config[key] = {**config[key], **value} if isinstance(value, dict) and isinstance(config.get(key), dict) \
            else value
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def test_default_named_dumps_and_a_named_one_become_runs_make_check_reads(tmp_path: Path, monkeypatch,
                                                                         capsys) -> None:
    project = copy_project(tmp_path / "manual")
    edition = project / "edition.yml"  # a Miles commit dated before the sample dumps (2026-09-21), which they used
    edition.write_text(edition.read_text().replace("commit_date: 2026-10-15", "commit_date: 2026-09-15"))
    monkeypatch.chdir(project)
    for number, name in enumerate(["miles-run", "miles-run", "Qwen3_GRPO"]):
        assert main(["add-run", str(dump_named(tmp_path / f"job{number}", name))]) == 0
    assert capsys.readouterr().out.count("Added runs/") == 3
    added = ["miles-run", "miles-run-2", "qwen3-grpo"]
    assert all((project / "runs" / run_id / "run.yaml").is_file() for run_id in added)
    assert main(["show", "qwen3-grpo"]) == 0
    assert "  Miles run_name       Qwen3_GRPO" in capsys.readouterr().out.splitlines()
    for run_id in added:
        fill(project / "runs" / run_id / "run.yaml")
    assert main(["check", "--all"]) == 0
    out = capsys.readouterr().out
    assert all(f"{run_id:<24} measured Qwen3-0.6B    3 steps (3 clean)" in out for run_id in added), out
    meta = json.loads((project / "runs" / "miles-run-2" / "dashboard" / "meta.json").read_text())
    assert meta["run_name"] == "miles-run"  # kept as Miles wrote it


def test_the_readme_documents_the_run_id_rule() -> None:
    text = (ROOT / "runs" / "README.md").read_text(encoding="utf-8")
    assert "| `run_id` | a non-empty string | the directory name (Miles' `run_name` in `meta.json` may be anything) |" \
        in text


# --- compare and the readers: each value on its own axis, a step clean when its rollout is --------------------------


def test_compare_reads_each_row_on_its_own_axis_and_says_how_the_axes_join(tmp_path: Path, capsys) -> None:
    assert main(["--root", str(ROOT), "compare", str(miles_log(tmp_path / "job.log"))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[lines.index("Your run's steps by axis: 2 rollouts (rollout/step), 4 train/step; train/step joined to "
                             "rollout/step through num_steps_per_rollout = 2 (flags.rollout_batch_size x "
                             "n_samples_per_prompt // global_batch_size): rollout id = train/step // 2") - 1] == ""
    at = lines.index("train/grad_norm                       yours: 0.28 to 0.38")
    assert lines[at + 2] == "                                      -> 2 below the manual's range, of 3 steps"


def two_axes() -> RunSummary:
    """A summary whose second rollout a heat pause touched, with two train steps a rollout."""
    steps = pd.DataFrame({"perf/step_time": [60.0, 90.0], "heat_touched": [False, True]},
                         index=pd.Index([0, 1], name="step"))
    train = pd.DataFrame({"rollout": [0, 0, 1, 1], "train/grad_norm": [0.5, 0.25, 1.0, 2.0],
                          "train/update_time": [1.0, 2.0, 3.0, 4.0]}, index=pd.Index([0, 1, 2, 3], name="step"))
    return RunSummary("two-axes", {"flags": {"num_steps_per_rollout": 2}}, steps, pd.DataFrame(), pd.DataFrame(), {},
                      axes={"train/step": train})


def test_a_value_of_another_axis_is_clean_when_its_rollout_is() -> None:
    run = two_axes()
    assert readers.step_values(run, "train/update_time").to_dict() == {0: 1.0, 1: 2.0}  # a time: clean steps
    assert readers.step_values(run, "train/grad_norm").to_dict() == {0: 0.5, 1: 0.25, 2: 1.0, 3: 2.0}
    assert readers.heat_touched(run, "train/grad_norm", pd.Index([0, 1, 2, 3])).tolist() == [False, False, True, True]
    assert readers.steps_for(run, "train/update_time").index.tolist() == [0, 1]
    assert readers.value_axes(run, ["perf/step_time", "train/grad_norm"]) == {"", "train/step"}


def test_values_of_two_axes_are_joined_onto_the_rollouts() -> None:
    run = two_axes()
    assert readers.step_values(run, "train/grad_norm", "all", joined=True).to_dict() == {0: 0.375, 1: 1.5}
    summed = readers.step_values(run, ["perf/step_time", "train/grad_norm"], "all")
    assert summed.to_dict() == {0: 60.375, 1: 91.5}
    assert readers.join_note(run) == ("train/step joined to rollout/step through num_steps_per_rollout = 2 "
                                      "(flags.num_steps_per_rollout): rollout id = train/step // 2; a rollout's "
                                      "values averaged")


def test_the_axes_cross_the_cache_and_the_wire(tmp_path: Path) -> None:
    problems: list = []
    run, _ = load.load_path(miles_log(tmp_path / "job.log"), problems)
    summary = summarise(run, problems)
    wired = summary_wire.decode(summary_wire.encode(summary))
    summary_cache.write_entry(tmp_path / "cache", "job", "0" * 64, *summary_cache.summary_parts(summary))
    tables, _ = summary_cache.read_entry(tmp_path / "cache", "job", "0" * 64) or (None, None)
    assert tables is not None
    cached = summary_cache.axes_of(tables(lambda name: name.startswith("axis/")))
    for axes_read in (wired.axes, cached):
        assert list(axes_read) == ["train/step"]
        pd.testing.assert_frame_equal(axes_read["train/step"], summary.axes["train/step"])


def big_dump(folder: Path, rollouts: int = 120) -> Path:
    """A dump of two optimizer steps a rollout, its metrics stream over 16 KiB (read as columns), as Miles' store
    writes a line (json.dumps); meta.json records no num_steps_per_rollout (Miles' snapshot has none)."""
    shutil.copytree(SAMPLES / "sources" / "dump" / "dashboard", folder / "dashboard")
    lines = []
    for rollout in range(rollouts):
        lines.append({"ts": 1790000000.0 + rollout, "step_key": "rollout/step", "step": rollout,
                      "metrics": {"rollout/raw_reward": rollout / 128, "rollout/step": rollout}})
        lines += [{"ts": 1790000000.5 + rollout, "step_key": "train/step", "step": step,
                   "metrics": {"train/grad_norm": step / 64, "train/step": step}}
                  for step in (2 * rollout, 2 * rollout + 1)]
    (folder / "dashboard" / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines),
                                                        encoding="utf-8")
    return folder


@pytest.mark.parametrize("columns_from", [0, math.inf], ids=["columns", "lines"])
def test_both_reading_paths_keep_the_axes_apart(columns_from: float, tmp_path: Path) -> None:
    folder = big_dump(tmp_path / "run")
    (folder / "run.yaml").write_text(yaml.safe_dump({"run_id": "run"}))
    problems: list = []
    run = load.load_run(folder, problems, columns_from=columns_from)
    assert bool(run.tables.get("metrics")) == (columns_from == 0)
    summary = summarise(run, problems)
    assert summary.steps.index.tolist() == list(range(120)) and "train/grad_norm" not in summary.steps
    train = summary.axes["train/step"]
    assert train.index.tolist() == list(range(240)) and train["rollout"].tolist() == [n // 2 for n in range(240)]
    assert train["train/grad_norm"].tolist() == [n / 64 for n in range(240)]
    assert summary.facts["join"] == {"per_rollout": 2, "source": "not recorded; taken from the steps: 240 "
                                                                  "train/step over 120 rollout/step",
                                     "train_scaled": False}


def test_show_long_of_a_stream_read_as_columns_gives_every_value(tmp_path: Path, capsys) -> None:
    folder = big_dump(tmp_path / "run")
    assert (folder / "dashboard" / "metrics.jsonl").stat().st_size > 16 * 1024
    assert main(["show", str(folder / "dashboard"), "--long"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 + 120 + 240
    assert out[120:122] == ["rollout/step,119,rollout/raw_reward,0.9296875", "train/step,0,train/grad_norm,0.0"]
    assert out[-1] == "train/step,239,train/grad_norm,3.734375"


def test_a_lab_only_folder_is_added_and_read_with_a_warning(tmp_path: Path, monkeypatch, capsys) -> None:
    project = copy_project(tmp_path / "manual")
    monkeypatch.chdir(project)
    assert main(["add-run", str(lab_only(tmp_path / "spark"))]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[:2] == [f"Added runs/spark from {tmp_path}/spark:",
                                             "  lab          1 file -> runs/spark/lab/"]
    assert captured.out.splitlines()[-1] == "1 warning reading the sources (on stderr; `manual show spark` lists them)"
    assert captured.err == (f"WARNING {tmp_path}/spark: only lab/, no Miles output (a dashboard dump, a log, ...): "
                            "the run has no steps\n")
    assert (project / "runs" / "spark" / "lab" / "gpu_temp.jsonl.gz").is_file()
    assert main(["show", "spark", "--long"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "step_key,step,metric,value\n"
    assert captured.err.splitlines()[0] == ("WARNING runs/spark: only lab/, no Miles output (a dashboard dump, a "
                                            "log, ...): the run has no steps")
