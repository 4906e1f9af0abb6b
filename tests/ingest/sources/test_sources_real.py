"""Files written at test time by the libraries Miles calls, as it calls them (tests/miles_job.py): every value
Miles logged is read at its own step key and step, exactly (float32-exactly where TensorBoard is the only source,
within to_json's 10 decimals for a history written so); what cannot be read is refused or warned in one line."""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from build_tools.ingest import load
from build_tools.ingest.sources import wandb as wandb_source
from build_tools.ingest.sources._common import STEP_KEYS
from tests.miles_job import Job, offline_env

Values = dict[tuple[str, int, str], float]
NAN_AT = ("train/step", 5, "train/grad_norm")  # the diverged step the job logs as NaN


def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **backends: bool) -> Job:
    monkeypatch.chdir(tmp_path)
    for name, value in offline_env(tmp_path / "wandb-home").items():
        monkeypatch.setenv(name, value)
    made = Job(tmp_path / "job", **backends)
    made.run()
    return made


def read(folder: Path) -> tuple[Values, list[str], list[str]]:
    """Every value the loader read, by (step key, step, key); the problems and warnings, as text."""
    problems: list = []
    run, _ = load.load_path(folder, problems)
    got: Values = {}
    for record in load.records(run, "metrics"):
        for key, value in record.data["metrics"].items():
            if key not in STEP_KEYS:
                got[(record.data["step_key"], record.data["step"], key)] = float(value)
    return got, [str(p) for p in problems], run.warnings


def same(got: Values, expected: Values) -> None:
    """Equal, NaN equal to NaN: every logged value once, at its own step, and nothing else."""
    assert sorted(got) == sorted(expected)
    wrong = {where: (got[where], value) for where, value in expected.items()
             if not (got[where] == value or (math.isnan(got[where]) and math.isnan(value)))}
    assert wrong == {}


def f32(values: Values) -> Values:
    return {where: float(np.float32(value)) for where, value in values.items()}


def test_a_log_gives_every_value_at_its_own_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = job(tmp_path, monkeypatch, log=True)
    got, problems, warnings = read(Path("job"))
    expected = made.expected()
    # [CPU memory] prints two decimals: the log holds no more.
    expected.update({w: float(f"{v:.2f}") for w, v in expected.items() if w[2].startswith("perf/cpu_memory")})
    same(got, expected)
    assert ("rollout/step", 3, "multi_turn/multi_turn_metric/round_number_mean") in got
    assert (problems, warnings) == ([], [])


def test_tensorboard_alone_gives_every_value_as_its_float32(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = job(tmp_path, monkeypatch, tensorboard=True)
    got, problems, warnings = read(Path("job"))
    same(got, f32(made.expected()))
    assert (problems, warnings) == ([], [])


def test_a_log_and_tensorboard_of_one_job_agree_and_the_more_precise_value_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = job(tmp_path, monkeypatch, log=True, tensorboard=True)
    got, problems, warnings = read(Path("job"))
    expected = made.expected()
    # The log's float64 where it printed one; the float32 over a [CPU memory] line's two decimals.
    expected.update({w: float(np.float32(v)) for w, v in expected.items() if w[2].startswith("perf/cpu_memory")})
    same(got, expected)
    assert (problems, warnings) == ([], [])


def test_a_float32_further_than_half_an_ulp_from_the_log_is_refused(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    made = job(tmp_path, monkeypatch, log=True)
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    (step_key, step, key), logged = next((w, v) for w, v in made.expected().items() if w[2] == "perf/step_time")
    stored = np.float32(logged)
    off = float(np.nextafter(stored, np.float32(np.inf)))  # one float32 ulp away: not the float32 of the log's
    writer = EventFileWriter(str(tmp_path / "job" / "tensorboard"))
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=key, simple_value=off)])
    writer.add_event(event_pb2.Event(wall_time=made.random.random() + 1.79e9, step=step, summary=summary))
    writer.close()
    (tb_file,) = (tmp_path / "job" / "tensorboard").iterdir()
    _, problems, _ = read(Path("job"))
    line = next(n for n, text in enumerate((tmp_path / "job" / "log" / "job.log").read_text().split("\n"), start=1)
                if f"perf {step}: {{'perf/train_wait_time'" in text)
    text = repr(off)  # the float32's value exactly
    assert problems == [
        f"job/tensorboard/{tb_file.name}: record 2: metrics.perf/step_time: step {step} is {text} here but "
        f"{logged!r} in job/log/job.log:{line}; two sources of one run must agree within the precision they keep"]


def test_event_files_give_both_of_the_trainers_events_of_a_step_and_warn_of_null(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = job(tmp_path, monkeypatch, events=True)
    got, problems, warnings = read(Path("job"))
    expected = made.expected()
    del expected[NAN_AT]  # pydantic writes NaN as null
    same(got, expected)
    lines = (tmp_path / "job" / "events" / "actor_cell0_rank0.jsonl").read_text().split("\n")
    line = next(n for n, text in enumerate(lines, start=1) if '"train/grad_norm":null' in text)
    assert problems == []
    assert warnings == [f"job/events/actor_cell0_rank0.jsonl:{line}: train/grad_norm: null (pydantic writes a NaN or "
                        "infinity as null); not read"]


def test_the_ci_history_record_gives_its_whitelist_at_its_own_steps(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.miles_job import CI_KEYS

    made = job(tmp_path, monkeypatch, ci_history=True)
    got, problems, warnings = read(Path("job"))
    same(got, {w: v for w, v in made.expected().items() if w[2] in CI_KEYS})
    assert (problems, warnings) == ([], [])


def test_a_retried_rollouts_earlier_attempt_is_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = job(tmp_path, monkeypatch, events=True)
    path = tmp_path / "job" / "events" / "actor_cell0_rank0.jsonl"
    lines = path.read_text().splitlines()
    retried = [json.loads(text) for text in lines if json.loads(text)["rollout_id"] == 0]
    for doc in retried:  # rollout 0 again, as attempt 1, with other values
        doc["attempt"] = 1
        doc["metrics"] = {k: (v if k in STEP_KEYS else 0.5) for k, v in doc["metrics"].items()}
    path.write_text("\n".join(lines + [json.dumps(doc) for doc in retried]) + "\n")
    got, _, warnings = read(Path("job"))
    assert got[("train/step", 1, "train/grad_norm")] == 0.5 and got[("rollout/step", 0, "perf/train_time")] == 0.5
    null = next(n for n, text in enumerate(lines, start=1) if '"train/grad_norm":null' in text)
    file = "job/events/actor_cell0_rank0.jsonl"
    assert warnings == [
        f"{file}:{null}: train/grad_norm: null (pydantic writes a NaN or infinity as null); not read",
        *(f"{file}:{n}: rollout 0 attempt 0 was retried (attempt 1, line {len(lines) + n}): its {axis} values are not "
          "read" for n, axis in ((1, "train/step 0"), (2, "train/step 1"), (3, "rollout/step 0")))]
    assert len(made.logged) > 0


# --- wandb ---------------------------------------------------------------------------------------------------


def history_rows(made: Job) -> list[dict[str, Any]]:
    """The run's history rows as wandb's public API serves them (each log() call: _step, _runtime, _timestamp and
    the keys logged), read back from the offline run with wandb's own reader."""
    (path,) = (made.folder / "wandb").rglob("run-*.wandb")
    out = subprocess.run([sys.executable, *wandb_source.WANDB_READER, str(path)], capture_output=True, text=True,
                         check=True).stdout
    rows = [json.loads(text)["history"]["item"] for text in out.splitlines() if '"type":"history"' in text]
    return [{k: (float(v) if v in ("NaN", "Infinity", "-Infinity") else v) for k, v in row.items()} for row in rows]


def test_an_offline_run_is_read_with_wandbs_own_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = job(tmp_path, monkeypatch, wandb=True)
    got, problems, warnings = read(Path("job"))
    same(got, made.expected())
    assert problems == []
    assert all("not a file the wandb reader reads" in w for w in warnings)  # wandb's logs and files beside it
    (path,) = Path("job/wandb").rglob("run-*.wandb")
    path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))  # as `make add-run` copies it
    path.unlink()
    got, problems, _ = read(Path("job"))
    same(got, made.expected())
    assert problems == []


def test_an_offline_run_without_wandb_installed_is_refused_in_one_line(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    job(tmp_path, monkeypatch, wandb=True)
    (path,) = Path("job/wandb").rglob("run-*.wandb")
    monkeypatch.setattr(wandb_source.importlib.util, "find_spec", lambda name: None)
    _, problems, _ = read(Path("job"))
    assert problems == [
        f"{path}: a wandb offline run's log, which only wandb reads, and wandb is not installed here: install it (pip "
        f"install wandb==0.31.0) to read it, or `wandb sync {path.parent}` and export the run with "
        "run.scan_history()"]


def test_history_exports_are_read_at_their_own_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = job(tmp_path, monkeypatch, wandb=True)
    rows = history_rows(made)
    frame = pd.DataFrame.from_records(rows)  # what run.history() returns
    export = tmp_path / "export" / "wandb"
    export.mkdir(parents=True)
    frame.to_csv(export / "history.csv")
    expected = made.expected()
    got, problems, warnings = read(export / "history.csv")
    nan_gap = ("history() exports write a NaN or infinity so; not read (run.scan_history() keeps them)")
    assert problems == [] and warnings == [
        f"export/wandb/history.csv: 1 value(s) empty at a step where the key has no other value (train/grad_norm "
        f"at train/step 5): {nan_gap}"]
    same(got, {w: v for w, v in expected.items() if w != NAN_AT})

    frame.to_json(export / "history.jsonl", orient="records", lines=True)
    got, problems, warnings = read(export / "history.jsonl")
    assert problems == [] and warnings == [
        f"export/wandb/history.jsonl: 1 value(s) empty at a step where the key has no other value (train/grad_norm "
        f"at train/step 5): {nan_gap}"]
    assert sorted(got) == sorted(w for w in expected if w != NAN_AT)
    assert all(abs(got[w] - v) <= 5e-11 for w, v in expected.items() if w != NAN_AT)

    (export / "scan.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))  # scan_history() rows
    got, problems, warnings = read(export / "scan.jsonl")
    same(got, expected)
    assert (problems, warnings) == ([], [])


def test_a_history_and_tensorboard_agree_within_what_to_json_keeps(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    made = job(tmp_path, monkeypatch, wandb=True, tensorboard=True)
    rows = history_rows(made)
    for offline in (tmp_path / "job" / "wandb").iterdir():
        offline.rename(tmp_path / offline.name)  # the offline run out of the way: only the export is read
    pd.DataFrame.from_records(rows).to_json(tmp_path / "job" / "wandb" / "history.jsonl", orient="records",
                                            lines=True)
    _, problems, _ = read(Path("job"))
    assert problems == []


def test_a_history_without_the_step_key_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = job(tmp_path, monkeypatch, wandb=True)
    rows = [{k: v for k, v in row.items() if k in ("_step", "train/grad_norm")} for row in history_rows(made)]
    path = tmp_path / "grad_norm.csv"
    pd.DataFrame.from_records([row for row in rows if "train/grad_norm" in row]).to_csv(path, index=False)
    _, problems, _ = read(Path("grad_norm.csv"))
    assert problems == ["grad_norm.csv: train/grad_norm: 7 value(s) but no train/step column, only wandb's _step: "
                        "export its step key too (keys=[..., 'train/step'] in run.history() or run.scan_history())"]


def chart(path: Path, axis: str, key: str, points: list[tuple[int, float]]) -> None:
    """A chart's CSV as wandb's web page downloads it (no library writes one): x-axis column, then the run's."""
    path.write_text(f'"{axis}","miles-run - {key}"\n' + "".join(f"{x},{v!r}\n" for x, v in points))


def test_a_chart_on_wandbs_own_step_is_refused_saying_how_to_export_it(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    chart(tmp_path / "grad_norm.csv", "Step", "train/grad_norm", [(2, 0.5), (3, 0.25)])
    _, problems, _ = read(Path("grad_norm.csv"))
    assert problems == [
        "grad_norm.csv:1: Step: wandb's own _step (it counts every wandb.log call of every Miles process), not the "
        "step Miles logged these keys at; export the chart with its x-axis set to the step key (train/step, "
        "rollout/step or eval/step), or the run's history with run.scan_history()"]


def test_a_chart_on_its_step_key_is_read_at_that_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = job(tmp_path, monkeypatch, wandb=True)
    norms = sorted((s, v) for (k, s, key), v in made.expected().items() if key == "train/grad_norm"
                   and not math.isnan(v))
    chart(tmp_path / "grad_norm.csv", "train/step", "train/grad_norm", norms)
    got, problems, warnings = read(Path("grad_norm.csv"))
    assert got == {("train/step", s, "train/grad_norm"): v for s, v in norms}
    assert (problems, warnings) == ([], [])
    chart(tmp_path / "reward.csv", "train/step", "rollout/raw_reward", [(0, 0.5)])
    _, problems, _ = read(Path("reward.csv"))
    assert problems == ["reward.csv:1: rollout/raw_reward: logged against rollout/step, but the chart's x-axis is "
                        "train/step; export it from a chart whose x-axis is its own step key"]


def test_a_history_by_its_step_key_with_pandas_index_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run.history(keys=["train/grad_norm"], x_axis="train/step") rows: no _step, the step key; to_csv's index."""
    made = job(tmp_path, monkeypatch, wandb=True)
    rows = [{k: v for k, v in row.items() if k in ("train/step", "train/grad_norm")} for row in history_rows(made)]
    pd.DataFrame.from_records([row for row in rows if "train/grad_norm" in row]).to_csv(tmp_path / "norm.csv")
    got, problems, warnings = read(Path("norm.csv"))
    assert got == {w: v for w, v in made.expected().items() if w[2] == "train/grad_norm" and w != NAN_AT}
    assert problems == [] and warnings == [
        "norm.csv: 1 value(s) empty at a step where the key has no other value (train/grad_norm at train/step 5): "
        "history() exports write a NaN or infinity so; not read (run.scan_history() keeps them)"]


def test_a_history_in_to_jsons_default_layout_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = job(tmp_path, monkeypatch, wandb=True)
    pd.DataFrame.from_records(history_rows(made)).to_json(tmp_path / "history.jsonl")  # orient="columns"
    _, problems, _ = read(Path("history.jsonl"))
    assert problems == ['history.jsonl:1: a history written as one JSON document (to_json\'s default layout, or '
                        'orient="records" without lines): write it a row per line, to_json(orient="records", '
                        'lines=True)']


def mid_record(log: bytes, near: int) -> int:
    """A cut inside the payload of the record of a .wandb log that holds byte `near` (cut at a record's edge, the
    log reads as whole, and wandb says nothing). Its format: a 7-byte header, then records in 32 KiB blocks,
    each with a 7-byte header (checksum, length little-endian in bytes 4-5, type); a block's last 6 bytes or
    fewer are padding."""
    at = 7
    while at < len(log):
        if 32768 - at % 32768 < 7:
            at += 32768 - at % 32768
            continue
        length = int.from_bytes(log[at + 4:at + 6], "little")
        if at + 7 + length > near and length >= 2:
            return at + 7 + length // 2
        at += 7 + length
    raise AssertionError(f"no record holds byte {near} of the log")


def test_an_offline_run_cut_off_gives_what_it_holds_and_wandbs_warning(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    made = job(tmp_path, monkeypatch, wandb=True)
    (path,) = Path("job/wandb").rglob("run-*.wandb")
    data = path.read_bytes()
    path.write_bytes(data[:mid_record(data, len(data) // 2)])  # the job killed mid-write
    got, problems, warnings = read(Path("job"))
    assert problems == [] and 0 < len(got) < len(made.expected())
    assert all(got[w] == made.expected()[w] for w in got)
    assert f"{path}: wandb leet inspect: reached the end of an incomplete .wandb file (the run may still be active " \
           "or was interrupted)" in warnings


def test_a_key_under_no_known_prefix_is_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A multi-LoRA adapter's metrics ride their own axis ({name}/step): not read here, never silently."""
    from tests.miles_job import MetricEvent, RolloutManagerProcessIdentity

    monkeypatch.chdir(tmp_path)
    (tmp_path / "events").mkdir()
    event = MetricEvent(timestamp=datetime.now(UTC), source=RolloutManagerProcessIdentity(),
                        metrics={"lora_a/loss": 0.5, "lora_a/step": 1, "rollout/raw_reward": 0.25, "rollout/step": 0})
    (tmp_path / "events" / "rollout_manager.jsonl").write_text(event.model_dump_json() + "\n")
    got, problems, warnings = read(Path("events"))
    assert got == {("rollout/step", 0, "rollout/raw_reward"): 0.25} and problems == []
    assert warnings == ["events/rollout_manager.jsonl: 2 key(s) under no prefix Miles gives a step key (train/, "
                        "rollout/, perf/, multi_turn/, passrate/, eval/) not read: lora_a/loss, lora_a/step"]


def test_every_source_of_one_job_together_agrees_and_gives_each_value_exactly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = job(tmp_path, monkeypatch, log=True, tensorboard=True, wandb=True, events=True, ci_history=True)
    got, problems, warnings = read(Path("job"))
    assert problems == []
    same(got, made.expected())  # events' null gap filled by the log's nan; float32 and two decimals give way
    assert [w for w in warnings if "not a file the wandb reader reads" not in w] == [
        w for w in warnings if "pydantic writes a NaN or infinity as null" in w]


def test_a_damaged_history_csv_warns_of_each_thing_it_cannot_read(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h.csv").write_text(",_step,train/step,train/grad_norm\n0,0,1.5,0.5\n1,1,2.0,\n2,2,3.0,0.25\n")
    got, problems, warnings = read(Path("h.csv"))
    assert got == {("train/step", 3, "train/grad_norm"): 0.25} and problems == []
    assert warnings == [
        "h.csv:2: train/step '1.5' is not a whole number, not a step",
        "h.csv:2: train/grad_norm: the row has no train/step; not read",
        "h.csv: 1 value(s) empty at a step where the key has no other value (train/grad_norm at train/step 2): "
        "history() exports write a NaN or infinity so; not read (run.scan_history() keeps them)"]


def test_a_tensorboard_folder_two_jobs_wrote_into_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reused --tensorboard-dir: each job's SummaryWriter opens its own event file, and both hold the same keys at
    the same steps. Which value is this run's cannot be told: one line says so, naming both files."""
    import time

    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    job(tmp_path, monkeypatch, log=True)
    folder = tmp_path / "job" / "tensorboard"
    for suffix, value in ((".first", 0.5), (".second", 0.25)):
        writer = EventFileWriter(str(folder), filename_suffix=suffix)
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="train/loss", simple_value=value)])
        writer.add_event(event_pb2.Event(wall_time=time.time(), step=0, summary=summary))
        writer.close()
    first, second = sorted(folder.iterdir())  # read in the order of their names
    _, problems, _ = read(Path("job"))
    assert [p for p in problems if "two jobs" in p] == [
        f"job/tensorboard/{second.name}: holds train/loss at train/step 0, as job/tensorboard/{first.name} does "
        "(record 2): two jobs wrote into one TensorBoard folder, and which value is this run's cannot be told; give "
        "each job its own --tensorboard-dir and copy only this job's event file"]


def write_with_tensorboardx(made: Job) -> None:
    """Miles' TensorBoard backend with tensorboardX's SummaryWriter in torch's place: add_scalar(key, value, step)
    for every key but the step key, each tag cleaned by tensorboardX itself (passrate/pass@1 -> passrate/pass_1)."""
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(made.folder / "tensorboard"))
    for step_key, step, metrics in made.logged:
        for key, value in metrics.items():
            if key != step_key:
                writer.add_scalar(key, value, step)
    writer.close()


def test_tensorboardx_cleaned_tags_are_read_as_the_keys_miles_logged(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    made = job(tmp_path, monkeypatch, log=True)
    write_with_tensorboardx(made)
    assert any("passrate/pass_1" in path.read_bytes().decode("latin-1")
               for path in (made.folder / "tensorboard").iterdir())  # tensorboardX did clean the tag
    got, problems, warnings = read(Path("job"))
    expected = made.expected()
    expected.update({w: float(np.float32(v)) for w, v in expected.items() if w[2].startswith("perf/cpu_memory")})
    same(got, expected)  # passrate/pass@1 once, under its own name: no passrate/pass_1 beside it
    assert (problems, warnings) == ([], [])


def test_a_cleaned_tag_two_keys_could_give_is_read_as_written_with_a_warning(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from build_tools.ingest.sources import _common

    made = job(tmp_path, monkeypatch)
    write_with_tensorboardx(made)
    monkeypatch.setattr(_common, "CLEANED_FAMILIES", ("passrate/pass@{k}", "passrate/pass#{k}"))
    got, problems, warnings = read(Path("job"))
    assert ("rollout/step", 0, "passrate/pass_1") in got
    tensorboard_file = next((made.folder / "tensorboard").iterdir()).name
    assert [w for w in warnings if "pass_1" in w] == [
        f"job/tensorboard/{tensorboard_file}: passrate/pass_1 may be any of passrate/pass#1, passrate/pass@1 as "
        "tensorboardX writes them (it replaces characters by _); read as written"]


def test_an_offline_run_another_wandb_cannot_read_names_the_version_that_wrote_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job(tmp_path, monkeypatch, wandb=True)
    (path,) = Path("job/wandb").rglob("run-*.wandb")
    assert wandb_source.written_by(path.read_bytes()) == "0.31.0"  # the pinned wandb wrote it
    # An older wandb, without `leet`: its own command line, asked for a command it does not have.
    monkeypatch.setattr(wandb_source, "installed_wandb", lambda: "0.19.11")
    monkeypatch.setattr(wandb_source, "WANDB_READER", ("-m", "wandb", "frobnicate", "inspect", "--json"))
    _, problems, _ = read(Path("job"))
    assert problems == [
        f"{path}: written by wandb 0.31.0, which the wandb installed here (0.19.11) cannot read (Error: No such "
        f"command 'frobnicate'.): pip install wandb==0.31.0 to read it, or `wandb sync {path.parent}` and export the "
        "run with run.scan_history()"]


def test_a_chart_on_its_step_key_with_wandbs_step_series_is_read_leaving_step_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The UI's download of a chart on train/step also carries `<run> - _step` (wandb issue #6474), min and max
    columns beside each series, as a downsampled chart has (here buckets of one value: min = max = the value)."""
    made = job(tmp_path, monkeypatch, wandb=True)
    norms = sorted((s, v) for (k, s, key), v in made.expected().items() if key == "train/grad_norm"
                   and not math.isnan(v))
    series = ("_step", "train/grad_norm")
    header = ",".join(f'"miles-run - {key}{end}"' for key in series for end in ("", "__MIN", "__MAX"))
    rows = "".join(",".join([str(s), *3 * [str(n)], *3 * [repr(v)]]) + "\n" for n, (s, v) in enumerate(norms))
    (tmp_path / "grad_norm.csv").write_text(f'"train/step",{header}\n{rows}')
    got, problems, warnings = read(Path("grad_norm.csv"))
    assert got == {("train/step", s, "train/grad_norm"): v for s, v in norms}
    assert problems == []
    assert warnings == ["grad_norm.csv: column 'miles-run - _step' left out: wandb adds its own _step to a chart's "
                        "CSV (it counts every wandb.log call, no Miles step); the other columns are read at "
                        "train/step"]
