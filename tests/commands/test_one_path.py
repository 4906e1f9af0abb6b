"""One run model: whichever reader read a stream (line by line, or as columns), every reader of the run reaches
the same records, and the two paths give the same records and the same messages for every sample."""

from __future__ import annotations

import gzip
import math
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from build_tools.cli import main
from build_tools.commands import show
from build_tools.core._exceptions import EXIT_BAD_INPUT, Problem
from build_tools.ingest import _columnar, load, schemas, schemas_dump
from build_tools.summarise.summary import summarise
from tests.conftest import ROOT, SAMPLES, copy_project, own_python_files

LINES, COLUMNS = math.inf, 0  # load_run's columns_from: no stream as columns, every stream that can be
EXAMPLES = sorted(path.name for path in (ROOT / "runs").iterdir() if path.is_dir())
# Every run folder of every sample scenario: (the scenario, the run folder in it).
SAMPLE_RUNS = sorted((scenario.relative_to(SAMPLES).as_posix(), run.name)
                     for kind in ("hostile", "load") for scenario in (SAMPLES / kind).iterdir() if scenario.is_dir()
                     for run in scenario.iterdir() if run.is_dir())
NOT_METRICS = ("t0", "t1", "heat_touched", "heat_pause_s")


# --- show reads every run whole ----------------------------------------------------------------------


@pytest.mark.parametrize("run_id", EXAMPLES)
def test_show_gives_every_step_and_metric_the_summary_has(run_id: str) -> None:
    """baseline-seed1's metrics.jsonl (35 KB) is read as columns; show gave "0 steps, 0 metrics" for it."""
    run, summary, _ = show.load(ROOT / "runs" / run_id)
    tables = show.step_table(run)
    metrics = [key for key in summary.steps.columns if key not in NOT_METRICS and not key.startswith("phase/")]
    assert sorted(key for keys, _ in tables.values() for key in keys) == sorted(metrics)
    # One optimizer step per rollout: rollout/step and train/step count the summary's steps (its rollout ids).
    assert set(tables) <= {"rollout/step", "train/step"} and summary.facts["steps"] == len(summary.steps)
    assert sorted({step for _, rows in tables.values() for step in rows}) == summary.steps.index.tolist()
    for _, rows in tables.values():
        for step, row in rows.items():
            for key, text in row.items():
                value = summary.steps.at[step, key]
                assert float(text) == value or (math.isnan(float(text)) and math.isnan(value)), (step, key)


def test_a_metrics_stream_over_16_kib_is_shown_whole_from_its_columns() -> None:
    path = ROOT / "runs" / "baseline-seed1"
    assert (path / "dashboard" / "metrics.jsonl").stat().st_size > _columnar.FAST_FROM_BYTES
    run, summary, _ = show.load(path)
    assert run.tables["metrics"] and not run.streams["metrics"]  # read as columns, reached as records
    report = show.report(run, summary, {}, path)
    at = report.index("Per-step table: 18 metrics on 2 step axes (--csv prints all of it, --long one value a line)")
    assert report[at + 1:at + 3] == [
        "  train/step joined to rollout/step through num_steps_per_rollout = 1 (flags.num_steps_per_rollout): "
        "rollout id = train/step // 1",
        "  rollout/step: 48 steps, 11 metrics"]
    assert "  train/step: 48 steps, 7 metrics" in report
    lines = show.as_csv(run).splitlines()
    assert lines[:2] == [
        "step_key,step,perf/log_probs_time,perf/rollout_time,perf/sleep_time,perf/step_time,perf/train_time,"
        "perf/train_wait_time,perf/update_weights_time,perf/wake_up_time,rollout/raw_reward,rollout/response_lengths,"
        "rollout/truncated,train/entropy_loss,train/grad_norm,train/loss,train/pg_clipfrac,train/ppo_kl,"
        "train/train_rollout_kl,train/train_rollout_logprob_abs_diff",
        "rollout/step,0,25.544,61.225,3.7,172.493,106.851,65.642,0.643,0.842,0.571374,780.896,0.419488,,,,,,,"]
    assert lines[49] == "train/step,0,,,,,,,,,,,,0.0,0.451369,0.000385303,0.0,0.0,0.000698938,0.0150459"
    assert show.as_long(run).splitlines()[:3] == [  # each value as metrics.jsonl writes it
        "step_key,step,metric,value", "rollout/step,0,perf/log_probs_time,25.544",
        "rollout/step,0,perf/rollout_time,61.225"]


def test_the_cli_shows_the_full_table_of_a_run_read_as_columns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(ROOT), "show", "baseline-seed1", "--csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 97 and out[0].startswith("step_key,step,perf/log_probs_time,")
    assert out[48].startswith("rollout/step,47,") and out[96].startswith("train/step,47,")


def test_no_reader_of_a_run_reaches_past_the_one_accessor() -> None:
    """How the loader holds a stream (records, columns) is the loader's: a reader of a run asks load.records. Only
    the summary's column readers (its fast path) and sources/ (which reads runs whose metrics and phases are
    records, and adds its own) see the loader's fields."""
    allowed = {"load.py", "stream_columns.py", "summary.py", "summary_metrics.py", "summary_phases.py"}
    found = [f"{path.relative_to(ROOT)}:{number}" for path in own_python_files(ROOT / "build_tools")
             if path.name not in allowed and "sources" not in path.parts
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             if re.search(r"\brun\.(streams|tables)\b", line)]
    assert found == []


# --- both paths, every sample ------------------------------------------------------------------------


Records = dict[str, list[tuple[str, int, dict[str, Any]]]]
Rows = dict[str, dict[tuple[str, int], dict[str, Any]]]


def outcome(folder: Path, columns_from: float) -> tuple[list[str], list[str], Records, Rows]:
    """A run folder loaded and summarised, reading its streams one way: its problems, its warnings, the records
    of each stream and the rows of what was read as columns, by file and line (both taken before the summary
    takes the sampled streams' columns)."""
    problems: list[Problem] = []
    run = load.load_run(folder, problems, columns_from=columns_from)
    found = {name: [(rec.file, rec.line, rec.data) for rec in load.records(run, name)]
             for name in load.stream_names(run)}
    rows = {name: {columns.where(row): data for columns in batches
                   for row, data in enumerate(columns.table.to_pylist())} for name, batches in run.tables.items()}
    try:
        summarise(run, problems)
    except Exception:  # noqa: BLE001 - as load_and_summarise: a run already refused may trip the summary
        assert problems
    return [str(problem) for problem in problems], run.warnings, found, rows


def same(line: Any, column: Any) -> bool:
    """A value of a line as the record path read it, and as the columns hold it: a key a line leaves out is a
    null in the columns, an integer may be a float there."""
    if isinstance(line, dict):
        present = {key for key, value in column.items() if value is not None} if isinstance(column, dict) else set()
        return isinstance(column, dict) and all(same(line.get(key), column.get(key)) for key in {*line, *present})
    if isinstance(line, list):
        return isinstance(column, list) and len(line) == len(column) and all(map(same, line, column))
    if isinstance(line, float) and math.isnan(line):
        return isinstance(column, float) and math.isnan(column)
    return bool(line == column) and isinstance(line, bool) == isinstance(column, bool)


def assert_columns_hold_the_records(rows: Rows, records: Records) -> None:
    """Every row the columns accepted is its line as the record path read it, at the same file and line."""
    for name, found in rows.items():
        lines = {(file, line): data for file, line, data in records[name]}
        assert found.keys() <= lines.keys(), name
        for where, data in found.items():
            assert same(lines[where], data), (name, where, lines[where], data)


@pytest.mark.parametrize(("scenario", "run_id"), SAMPLE_RUNS)
def test_both_paths_give_the_same_records_and_messages_for_every_sample(scenario: str, run_id: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SAMPLES / scenario)
    by_lines, by_columns = outcome(Path(run_id), LINES), outcome(Path(run_id), COLUMNS)
    assert by_columns[:2] == by_lines[:2]
    assert repr(by_columns[2]) == repr(by_lines[2])  # repr: a NaN equals a NaN, an integer is not a float
    assert not by_lines[3]
    assert_columns_hold_the_records(by_columns[3], by_lines[2])


@pytest.mark.parametrize("run_id", EXAMPLES)
def test_both_paths_give_the_same_records_for_every_example_run(run_id: str) -> None:
    by_lines, by_columns = outcome(ROOT / "runs" / run_id, LINES), outcome(ROOT / "runs" / run_id, COLUMNS)
    assert by_columns[:2] == by_lines[:2] == ([], [])
    assert {"metrics", "phases"} <= set(by_columns[3])  # the columns were taken
    assert repr(by_columns[2]) == repr(by_lines[2])
    assert_columns_hold_the_records(by_columns[3], by_lines[2])


def test_a_sampled_stream_the_summary_took_is_not_read_as_if_empty() -> None:
    """The summary frees a sampled stream's columns as it makes its frame; asking for its records after is a bug,
    said as one (an empty stream would be a silent wrong answer)."""
    problems: list[Problem] = []
    run = load.load_run(ROOT / "runs" / "baseline-seed1", problems)
    held = len(load.records(run, "held_memory"))
    summarise(run, problems)
    assert held > 1000 and not problems and load.records(run, "metrics")
    with pytest.raises(RuntimeError, match="the summary of baseline-seed1 took its held_memory stream"):
        load.records(run, "held_memory")


def test_a_sample_run_read_as_columns_is_read_as_columns() -> None:
    """The parity above compares two paths: the samples' streams are taken as columns when forced (not its
    metrics, whose "NaN" markers only the record path reads)."""
    problems: list[Problem] = []
    run = load.load_run(SAMPLES / "load" / "good" / "tiny-run", problems, columns_from=COLUMNS)
    assert not problems and set(run.tables) == {"phases", "gpu_util", "host_memory"}


# --- what both paths refuse, in the words a user reads -----------------------------------------------


def metrics_run(tmp_path: Path, line: bytes) -> Path:
    """The good sample run with one line replaced (its third, step 0's train line), its metrics stream made
    larger than FAST_FROM_BYTES so that `manual show` reads it as columns."""
    run = tmp_path / "tiny-run"
    shutil.copytree(SAMPLES / "load" / "good" / "tiny-run", run)
    path = run / "dashboard" / "metrics.jsonl.gz"
    lines = gzip.decompress(path.read_bytes()).split(b"\n")
    lines[2] = line
    notes = [b'{"ts":1790002990.0,"step_key":"eval/step","step":%d,"metrics":{"eval/note":1.0}}' % step
             for step in range(400)]
    path.write_bytes(gzip.compress(b"\n".join(lines[:-1] + notes + [b""]), mtime=0))
    assert len(gzip.decompress(path.read_bytes())) > _columnar.FAST_FROM_BYTES
    return run


def show_cli(run: Path) -> tuple[int, list[str]]:
    """`manual show RUN` in a process of its own (a crash there is a return code, not the test run's end)."""
    done = subprocess.run([sys.executable, "-m", "build_tools", "show", run.name], cwd=run.parent,
                          capture_output=True, text=True, timeout=120, check=False)
    return done.returncode, done.stderr.splitlines()


DEEP = b'{"ts":1790002780.6,"step_key":"train/step","step":0,"metrics":{"train/ppo_kl":' + b"[" * 100_000 + \
    b"]" * 100_000 + b"}}"
STRING = b'{"ts":1790002780.6,"step_key":"train/step","step":0,"metrics":{"train/ppo_kl":"0.5"}}'
# Ten levels in a line short enough for pyarrow to parse safely: the table's types tell its depth, not a count.
SHORT_DEEP = b'{"ts":1790002780.6,"step_key":"train/step","step":0,"metrics":{"train/ppo_kl":' + b"[" * 8 + b"1" + \
    b"]" * 8 + b"}}"


@pytest.mark.parametrize(("line", "expected"), [
    (DEEP, "tiny-run/dashboard/metrics.jsonl.gz:3: nested more than 8 levels deep, deeper than any Miles record"),
    (STRING, "tiny-run/dashboard/metrics.jsonl.gz:3: metrics.train/ppo_kl: expected a number, found the string "
             "'0.5' (write the number without quotes)"),
    (SHORT_DEEP, "tiny-run/dashboard/metrics.jsonl.gz:3: nested more than 8 levels deep, deeper than any Miles "
                 "record"),
    # an id of the line itself would be 200 KB of brackets
], ids=["nested-100000-deep", "number-as-string", "nested-10-deep-short"])
def test_a_line_both_paths_refuse_is_one_line_at_its_file_and_line(line: bytes, expected: str, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    run = metrics_run(tmp_path, line)
    assert show_cli(run) == (EXIT_BAD_INPUT, ["ERROR 1 problem in the run data:", f"  {expected}",
                                              "hint: fix the files named above; runs/README.md documents every "
                                              "field"])
    monkeypatch.chdir(tmp_path)
    assert outcome(Path(run.name), LINES)[0] == outcome(Path(run.name), COLUMNS)[0] == [expected]


def test_a_line_nested_deeply_is_refused_before_pyarrow_parses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[int] = []
    real = _columnar._parse
    monkeypatch.setattr(_columnar, "_parse", lambda data: parsed.append(len(data)) or real(data))
    batch = DEEP + b"\n"
    assert _columnar.read_frame("metrics", batch, 1) is None and parsed == []
    assert _columnar.nesting(DEEP.decode()) == 9  # told as far as one level too deep
    short = SHORT_DEEP + b"\n"
    assert _columnar.read_frame("metrics", short, 1) is None and parsed == [len(short)]  # parsed, refused by its types
    assert _columnar.nesting('{"a":"[[[[[[[[[[[[","b":[[1]]}') == 3  # a bracket inside a string is text
    assert _columnar.nesting('{"a":"\\"[[[[[[[[[[","b":[]}') == 2  # so is one after an escaped quote


def test_telling_the_depth_of_a_long_line_of_escapes_takes_one_pass() -> None:
    """Eleven brackets, then a string of a million escaped quotes never closed: told in one pass (a pattern for a
    whole string tried again from each quote would take hours)."""
    text = '{"a":[],"b":[],"c":[],"d":[],"e":[],"f":"' + '\\"' * 1_000_000
    started = time.perf_counter()
    assert _columnar.nesting(text) == 2
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize(("stream", "record", "expected"), [
    ("engine_series", {"ts": 1.0, "addr": "http://e:1", "metric": "sglang_x", "labels": {}, "value": "0.5"},
     "f:4: value: expected a number, found the string '0.5' (write the number without quotes)"),
    ("metrics", {"ts": 1.0, "step_key": "train/step", "step": 1, "metrics": {"train/loss": "0.5"}},
     "f:4: metrics.train/loss: expected a number, found the string '0.5' (write the number without quotes)"),
    ("gpu_util", {"ts": 1.0, "node": "n", "gpu": 0, "util": " 50 ", "mem_mb": None, "power_w": None},
     "f:4: util: expected a number, found the string ' 50 ' (write the number without quotes)"),
])
def test_a_number_written_as_a_string_is_refused_in_one_line(stream: str, record: dict[str, Any],
                                                              expected: str) -> None:
    kept, problems = schemas_dump.validate_record(stream, record, "f", 4)
    assert kept is None and [str(problem) for problem in problems] == [expected]


def test_a_text_metric_and_a_marker_stay_what_they_are() -> None:
    record = {"ts": 1.0, "step_key": None, "step": None, "metrics": {"note": "a line", "train/loss": "NaN"}}
    kept, problems = schemas_dump.validate_record("metrics", record, "f", 4)
    assert not problems and kept is not None and kept["metrics"]["note"] == "a line"
    assert math.isnan(kept["metrics"]["train/loss"])


@pytest.mark.parametrize("text", ["0.5", "-1", "1e-3", " 7 ", ".5", "50."])
def test_a_number_written_as_a_string_is_told_from_a_text(text: str) -> None:
    assert schemas.number_in_text(text)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "a line with no step", "1.0.0", "0x10", "", "e5"])
def test_a_text_or_a_marker_is_not_a_number_written_as_a_string(text: str) -> None:
    assert not schemas.number_in_text(text)


# --- the palette ---------------------------------------------------------------------------------------


def test_a_missing_palette_is_one_line_naming_it_with_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """It was "internal error (a bug)", exit 1: the figures' cache key hashed a file that is not there."""
    monkeypatch.chdir(copy_project(tmp_path / "project"))
    Path("figures/palette.yml").unlink()
    Path("figures/base.mplstyle").unlink()
    assert main(["--root", ".", "build"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.splitlines()
    assert err[-4:] == [
        "ERROR 2 problems in the files every figure is drawn with:",
        "  figures/base.mplstyle: file not found: every figure is drawn with it",
        "  figures/palette.yml: file not found",
        "hint: figures/ needs palette.yml, base.mplstyle, __init__.py and _common.py (git checkout -- figures/ "
        "restores them); CONTRIBUTING.md, 'Change the palette', says what palette.yml holds"]
