"""The loader reads every form Miles writes and reports every problem, with file, line and field."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from build_tools.cli import main
from build_tools.core._exceptions import EXIT_BAD_INPUT, Problem, RunDataError
from build_tools.ingest import load
from tests.conftest import MILES_SAMPLES, ROOT, SAMPLES

LOAD = SAMPLES / "load"


def problems_of(scenario: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The problem lines for a broken sample, with paths relative to its runs folder."""
    monkeypatch.chdir(LOAD / scenario)
    with pytest.raises(RunDataError) as caught:
        load.load_runs(Path("."))
    return [str(problem) for problem in caught.value.problems]


def test_good_run_loads_every_form(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(LOAD / "good")
    (run,) = load.load_runs(Path("."))
    assert run.run_id == "tiny-run"
    assert run.config["miles"]["commit_date"] == "2026-09-15"
    # metrics.jsonl.gz (gzip), phases/ (hourly), gpu_util.jsonl (flat), lab streams
    assert sorted(run.streams) == ["events", "gpu_util", "host_memory", "metrics", "phases"]
    assert len(run.streams["metrics"]) == 7
    assert len(run.streams["phases"]) == 13  # the open record and its closing record both read here


def test_last_line_without_newline_is_skipped_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(LOAD / "good")
    (run,) = load.load_runs(Path("."))
    assert len(run.streams["gpu_util"]) == 5
    assert run.warnings == [
        "tiny-run/dashboard/gpu_util.jsonl:6: last line has no newline (a writer mid-append); skipped"
    ]


def test_non_finite_markers_become_floats(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(LOAD / "good")
    (run,) = load.load_runs(Path("."))
    values = [rec.data["metrics"].get("train/grad_norm") for rec in run.streams["metrics"]]
    assert math.isnan(values[2]) and values[5] == -math.inf
    assert run.streams["metrics"][3].data["metrics"]["rollout/response_lengths"] == math.inf


def test_gb10_null_gpu_memory_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(LOAD / "good")
    (run,) = load.load_runs(Path("."))
    assert all(rec.data["mem_mb"] is None for rec in run.streams["gpu_util"])


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("bad-json", ["tiny-run/dashboard/metrics.jsonl:2: not valid JSON: Expecting property name enclosed in "
                      "double quotes"]),
        ("missing-field", ["tiny-run/dashboard/phases/20260921_13.jsonl:1: t1: missing (expected a time, or -1 "
                           "while open)"]),
        ("wrong-type", ["tiny-run/dashboard/gpu_util/20260921_13.jsonl:1: util: expected a number, found 'high'"]),
        ("unknown-stream", ["tiny-run/lab/fan_speed.jsonl: unknown stream; expected one of ['events', 'gpu_temp', "
                            "'held_memory', 'host_memory', 'repeat_probe', 'sampling'] (runs/README.md)"]),
        ("bad-run-id", ["Tiny_Run: run id 'Tiny_Run' is not a plain name (lower-case letters, digits, '.', '-')"]),
        ("disagrees-with-meta", ["tiny-run/run.yaml:27: flags.rollout_max_response_len: is 1024, but "
                                 "dashboard/meta.json args say 4096"]),
        ("model-disagrees-with-meta", ["tiny-run/run.yaml:8: model.name: is 'Qwen3-0.6B', but dashboard/meta.json "
                                       "args say hf_checkpoint 'Qwen/Qwen3-1.7B'"]),
    ],
)
def test_each_problem_names_file_line_and_field(scenario: str, expected: list[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    assert problems_of(scenario, monkeypatch) == expected


def test_all_problems_of_all_runs_are_reported_together(monkeypatch: pytest.MonkeyPatch) -> None:
    assert problems_of("many-problems", monkeypatch) == [
        "run-a/dashboard/metrics.jsonl:1: not valid JSON: Expecting value",
        "run-b/lab/events.jsonl:1: kind: expected 'heat_pause', 'engine_death', 'watchdog_kill', "
        "'ray_oom_kill' or 'job_end', found 'meteor'",
        "run-b/run.yaml:27: flags.rollout_max_response_len: is 2048, but dashboard/meta.json args say 1024",
    ]


def test_run_yaml_fields_are_validated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "tiny-run"
    shutil.copytree(LOAD / "good" / "tiny-run", run)
    text = (run / "run.yaml").read_text()
    text = text.replace("provenance: example", "provenance: guessed").replace("  gpus: 1\n", "  gpus: one\n")
    (run / "run.yaml").write_text(text.replace("seed: 1\n", ""))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RunDataError) as caught:
        load.load_runs(Path("."))
    assert [str(p) for p in caught.value.problems] == [
        "tiny-run/run.yaml: seed: missing (expected a whole number within 64 bits)",
        "tiny-run/run.yaml:2: provenance: expected 'measured' or 'example', found 'guessed'",
        "tiny-run/run.yaml:19: hardware.gpus: expected a whole number, found 'one'",
    ]


def test_a_run_dated_before_its_miles_commit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    run = tmp_path / "tiny-run"
    shutil.copytree(LOAD / "good" / "tiny-run", run)
    text = (run / "run.yaml").read_text()
    commit_date = re.search(r"commit_date: (\S+)", text).group(1)
    (run / "run.yaml").write_text(re.sub(r"^date: \S+", "date: 2000-01-01", text, flags=re.M))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RunDataError) as caught:
        load.load_runs(Path("."))
    line = text.splitlines().index(next(x for x in text.splitlines() if x.startswith("date:"))) + 1
    assert [str(p) for p in caught.value.problems] == [
        f"tiny-run/run.yaml:{line}: date: is 2000-01-01, before the date of the Miles commit it names "
        f"({commit_date}, miles.commit_date): a run cannot use a commit from its future"]


def test_every_example_run_is_dated_on_or_after_its_miles_commit() -> None:
    import yaml

    for config in (yaml.safe_load(path.read_text()) for path in (ROOT / "runs").glob("*/run.yaml")):
        assert config["date"] >= config["miles"]["commit_date"], config["run_id"]


def test_invalid_yaml_names_the_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "tiny-run"
    shutil.copytree(LOAD / "good" / "tiny-run", run)
    (run / "run.yaml").write_text("run_id: tiny-run\ntags: [a, b\nseed: 1\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RunDataError) as caught:
        load.load_runs(Path("."))
    assert str(caught.value.problems[0]).startswith("tiny-run/run.yaml:3: not valid YAML:")


@pytest.mark.parametrize("sample", ["four-gpu-colocated", "open-phase-across-hours"])
def test_dumps_written_by_miles_load(sample: str, tmp_path: Path) -> None:
    run_name = {"four-gpu-colocated": "dummy-telemetry", "open-phase-across-hours": "miles-run"}[sample]
    run = tmp_path / run_name
    shutil.copytree(MILES_SAMPLES / sample, run / "dashboard")
    text = (LOAD / "good" / "tiny-run" / "run.yaml").read_text().replace("tiny-run", run_name)
    (run / "run.yaml").write_text(text.replace("  rollout_max_response_len: 1024\n", ""))
    (loaded,) = load.load_runs(tmp_path)
    assert loaded.streams["metrics"] and loaded.streams["phases"]
    assert loaded.warnings == []


def test_cli_prints_every_problem_and_exits_with_bad_input(capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shutil.copytree(LOAD / "many-problems", tmp_path / "runs")
    shutil.copy(ROOT / "edition.yml", tmp_path / "edition.yml")
    monkeypatch.chdir(tmp_path)
    code = main(["check"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT
    assert err.splitlines()[0] == "ERROR 3 problems in the run data:"
    assert "  runs/run-a/dashboard/metrics.jsonl:1: not valid JSON: Expecting value" in err.splitlines()
    assert "hint: fix the files named above; runs/README.md documents every field" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("set_by_user", "expected"), [(None, "0"), ("250", "250")])
def test_pyarrows_allocator_purges_freed_pages_at_once_unless_the_user_says(set_by_user: str | None,
                                                                             expected: str) -> None:
    """build_tools sets the option before pyarrow loads, so mimalloc reads it (it says so when verbose)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("MIMALLOC_")}
    env["MIMALLOC_VERBOSE"] = "1"
    if set_by_user is not None:
        env["MIMALLOC_PURGE_DELAY"] = set_by_user
    done = subprocess.run([sys.executable, "-c", "import build_tools.ingest.load"], env=env, capture_output=True,
                          text=True, check=True)
    assert f"option 'purge_delay': {expected}" in done.stderr


# Bytes of glibc's malloc held in blocks mapped on their own (mallinfo2's hblkhd), around an 8 MiB allocation.
_MAPPED = """
import ctypes, sys
if sys.argv[1] == "imported":
    import build_tools
class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
before = libc.mallinfo2().hblkhd
block = bytearray(8 << 20)
print(libc.mallinfo2().hblkhd - before)
"""


@pytest.mark.skipif(not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"), reason="glibc's malloc only")
@pytest.mark.parametrize(("imported", "mapped"), [("imported", False), ("not imported", True)])
def test_a_block_of_a_few_megabytes_comes_from_the_heap_once_build_tools_is_imported(imported: str,
                                                                                      mapped: bool) -> None:
    """build_tools raises glibc's mmap threshold: a batch's temporaries are not mapped (and faulted in) afresh."""
    done = subprocess.run([sys.executable, "-c", _MAPPED, imported], capture_output=True, text=True, check=True)
    assert (int(done.stdout) >= 8 << 20) is mapped


def test_hourly_files_are_read_in_the_order_their_paths_sort(tmp_path: Path) -> None:
    # _partition_files sorts by name (cheaper than comparing Paths): the same order, whatever order they were made in.
    folder = tmp_path / "phases"
    folder.mkdir()
    hours = ["20261016_00.jsonl", "20261015_23.jsonl.gz", "20261015_09.jsonl", "20261015_10.jsonl", "20261101_01.jsonl"]
    for name in hours:
        (folder / name).write_text("{}\n")
    problems: list[Problem] = []
    assert load._partition_files(folder, problems) == sorted(folder.iterdir())
    assert [path.name for path in load._partition_files(folder, problems)] == [
        "20261015_09.jsonl", "20261015_10.jsonl", "20261015_23.jsonl.gz", "20261016_00.jsonl", "20261101_01.jsonl"]
    assert problems == []
