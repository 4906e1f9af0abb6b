"""The columnar fast path reads every stream exactly as the line-by-line path does, and hands every batch it cannot
fully accept to that path, so every problem keeps its file:line message."""

from __future__ import annotations

import datetime as dt
import gzip
import math
import os
import re
import shutil
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from build_tools.core._exceptions import RunDataError
from build_tools.core._types import RunSummary
from build_tools.ingest import _columnar, load, schemas, stream_columns
from build_tools.summarise import summary
from build_tools.summarise.summary import summarise_runs, summarise_serially
from tests.conftest import ROOT, SAMPLES

RUN = "baseline-seed1"
HOSTILE = SAMPLES / "hostile"
GOOD = SAMPLES / "load" / "good"


def summaries(runs: Path) -> dict:
    return summarise_runs(runs, None, summariser=summarise_serially)


def outcome(runs: Path) -> tuple[list[str], dict[str, RunSummary]]:
    """The problem lines of a runs folder, or its summaries when it has none."""
    try:
        return [], summaries(runs)
    except RunDataError as error:
        return [str(problem) for problem in error.problems], {}


def line_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_columnar, "FLAT_STREAMS", ())
    monkeypatch.setattr(_columnar, "NESTED_STREAMS", ())


def every_line_as_columns(monkeypatch: pytest.MonkeyPatch, batch: int = 256) -> None:
    """Every stream as columns however small, in batches of a few lines (a file of several batches is read the
    way a large one is)."""
    monkeypatch.setattr(_columnar, "FAST_FROM_BYTES", 0)
    monkeypatch.setattr(_columnar, "BATCH_BYTES", batch)


def assert_same(fast: RunSummary, slow: RunSummary) -> None:
    assert fast.facts == slow.facts and fast.warnings == slow.warnings
    frames = [("steps", fast.steps, slow.steps), ("phases", fast.phases, slow.phases),
              ("events", fast.events, slow.events)]
    assert fast.series.keys() == slow.series.keys()
    frames += [(name, fast.series[name], frame) for name, frame in slow.series.items()]
    for name, one, other in frames:
        assert one.equals(other), name
        assert one.dtypes.equals(other.dtypes) and list(one.columns) == list(other.columns), name
        assert one.index.equals(other.index) and type(one.index) is type(other.index), name


def test_fast_and_line_by_line_paths_give_the_same_summaries(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / "runs" / RUN)
    read: list[str] = []
    real = _columnar.read_frame
    monkeypatch.setattr(_columnar, "read_frame", lambda stream, *data: read.append(stream) or real(stream, *data))
    fast = summaries(tmp_path / "runs")[RUN]
    assert {"host_memory", "gpu_temp", "held_memory", "metrics", "phases"} <= set(read)  # fast path taken
    line_by_line(monkeypatch)
    slow = summaries(tmp_path / "runs")[RUN]
    assert_same(fast, slow)


def test_a_run_read_in_many_small_batches_gives_the_same_summary(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / "runs" / RUN)
    slow_monkey = pytest.MonkeyPatch()
    line_by_line(slow_monkey)
    slow = summaries(tmp_path / "runs")[RUN]
    slow_monkey.undo()
    every_line_as_columns(monkeypatch, batch=4096)
    assert_same(summaries(tmp_path / "runs")[RUN], slow)


# The run's GPU utilisation is in the lab's recording (lab/gpu_temp): Miles' sampler writes no gpu_util on a GB10.
@pytest.mark.parametrize(("old", "new", "expected"), [
    (b'"temp_c":', b'"tmp_c":', "temp_c: missing (expected a number >= -50 <= 150)"),
    (b'"util":', b'"util":"high","x":', "util: expected a number, found 'high'"),
    (b'"ts":', b'"ts":-', "ts: expected a time in seconds, finite and not negative, found -"),
])
def test_a_bad_line_in_a_large_file_is_reported_at_its_line(old: bytes, new: bytes, expected: str,
                                                            tmp_path: Path) -> None:
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / "runs" / RUN)
    hour = tmp_path / "runs" / RUN / "lab" / "gpu_temp.jsonl.gz"
    lines = gzip.decompress(hour.read_bytes()).split(b"\n")
    lines[1000] = lines[1000].replace(old, new, 1)
    hour.write_bytes(gzip.compress(b"\n".join(lines), mtime=0))
    with pytest.raises(RunDataError) as caught:
        summaries(tmp_path / "runs")
    found = [str(problem) for problem in caught.value.problems]
    assert found and all(f"{hour.name}:1001: " in line for line in found), found
    assert any(expected in line for line in found), found


# --- metrics and phases as columns ----------------------------------------------------------------


def damage(path: Path, line: int, pattern: bytes, replacement: bytes) -> None:
    """Line `line` of path with the first match of pattern replaced."""
    lines = path.read_bytes().split(b"\n")
    changed = re.sub(pattern, replacement, lines[line - 1], count=1)
    assert changed != lines[line - 1]
    lines[line - 1] = changed
    path.write_bytes(b"\n".join(lines))


# Line 41 of the run's metrics.jsonl is step 13's train line; line 7 of its second phases hour file is a sleep.
@pytest.mark.parametrize(("file", "line", "pattern", "replacement", "expected"), [
    ("metrics.jsonl", 41, rb'"step":13', b'"step":-13', "step: expected a value >= 0, found -13"),
    ("metrics.jsonl", 41, rb'"step":13', b'"step":13.5', "step: expected a whole number, found 13.5"),
    ("metrics.jsonl", 41, rb'"step_key":"train/step",', b"", "step_key: missing (expected a string, or null)"),
    ("metrics.jsonl", 41, rb'"train/loss":[^,}]+', b'"train/loss":null',
     "metrics.train/loss: expected a number, found None"),
    ("metrics.jsonl", 41, rb'"train/loss":[^,}]+', b'"train/loss":12345678901234567890',
     "not valid JSON: the integer 12345678901234567890 is beyond 64 bits"),
    ("metrics.jsonl", 41, rb'"train/loss":[^,}]+', b'"train/loss":-NaN', "not valid JSON: Expecting value"),
    ("metrics.jsonl", 41, rb'"train/loss":[^,}]+', b'"train/loss":{"a":1}',
     "metrics.train/loss: expected a number, found {'a': 1}"),
    ("metrics.jsonl", 41, rb'"train/loss":[^,}]+', b'"train/loss":1e999',
     "metrics.train/loss: is a number beyond the range of a double, found inf"),
    ("metrics.jsonl", 41, rb'"ts":', b'"tss":', "tss: unknown field; did you mean 'ts'?"),
    ("phases/20261015_01.jsonl", 2, rb'"role":"train"', b'"role":"trainer"',
     "role: expected 'train' or 'rollout_manager', found 'trainer'"),
    ("phases/20261015_01.jsonl", 2, rb'"gpus":\[0\]', b'"gpus":[-1]', "gpus[0]: expected a value >= 0, found -1"),
    ("phases/20261015_01.jsonl", 2, rb'"gpus":\[0\]', b'"gpus":[null]',
     "gpus[0]: expected a whole number, found None"),
    ("phases/20261015_01.jsonl", 2, rb'"name":"sleep"', b'"name":" "',
     "name: expected a non-empty string, found ' '"),
    ("phases/20261015_01.jsonl", 2, rb'"t1":[^,]+', b'"t1":1',
     "t1: ends at 1 before it starts at 1792026003.813 (expected t1 >= t0, or -1 for a phase still open)"),
    ("phases/20261015_01.jsonl", 2, rb'"t1":[^,]+', b'"t1":-1.5',
     "t1: expected a time in seconds, finite and not negative, found -1.5"),
    ("phases/20261015_01.jsonl", 2, rb'"rank":0', b'"rank":true', "rank: expected a whole number, found True"),
])
def test_a_bad_value_in_metrics_or_phases_is_one_line_at_its_line(file: str, line: int, pattern: bytes,
                                                                   replacement: bytes, expected: str,
                                                                   tmp_path: Path) -> None:
    """metrics.jsonl (36 KB) and the phases (three hour files, 51 KB) are read as columns; a bad value sends the
    stream down the record path, which words it at its line, as it always did."""
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / "runs" / RUN)
    damage(tmp_path / "runs" / RUN / "dashboard" / file, line, pattern, replacement)
    problems, _ = outcome(tmp_path / "runs")
    assert problems and all(f"/{RUN}/dashboard/{file}:{line}: " in problem for problem in problems), problems
    assert any(problem.endswith(expected) for problem in problems), problems


def test_a_step_logged_twice_with_different_values_names_both_lines(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / "runs" / RUN)
    path = tmp_path / "runs" / RUN / "dashboard" / "metrics.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines.insert(60, re.sub(rb'"train/loss":[^,}]+', b'"train/loss":9', lines[40]))  # step 13's line again
    path.write_bytes(b"\n".join(lines))
    problems, _ = outcome(tmp_path / "runs")
    assert len(problems) == 1, problems
    assert f"/{RUN}/dashboard/metrics.jsonl:61: metrics.train/loss: step 13 logged twice with different values: " \
           f"0.0360529 (" in problems[0] and problems[0].endswith("metrics.jsonl:41) and 9.0"), problems


def test_bare_nan_in_metrics_is_read_as_columns_and_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / "runs" / RUN)
    damage(tmp_path / "runs" / RUN / "dashboard" / "metrics.jsonl", 41, rb'"train/loss":[^,}]+', b'"train/loss":NaN')
    read: list[str] = []
    real = load.records
    monkeypatch.setattr(load, "records", lambda run, stream: read.append(stream) or real(run, stream))
    fast = summaries(tmp_path / "runs")[RUN]
    assert fast.facts["non_finite"] == {"train/loss": {"13": "NaN"}} and "metrics" not in read  # not read again
    line_by_line(monkeypatch)
    assert_same(fast, summaries(tmp_path / "runs")[RUN])


SCENARIOS = sorted(path.name for path in HOSTILE.iterdir() if path.is_dir())


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_each_hostile_scenario_gives_exactly_its_lines_as_columns(scenario: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    every_line_as_columns(monkeypatch)
    monkeypatch.chdir(HOSTILE / scenario)
    expected = (HOSTILE / scenario / "expected.txt").read_text(encoding="utf-8").splitlines()
    try:
        summarise_runs(Path("."), None, summariser=summarise_serially, latest=dt.date(2026, 10, 15))
        found = []
    except RunDataError as error:
        found = [str(problem) for problem in error.problems]
    assert found == expected


@pytest.mark.parametrize("scenario", sorted(path.name for path in (SAMPLES / "load").iterdir() if path.is_dir()))
def test_each_load_sample_gives_the_same_lines_as_columns(scenario: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SAMPLES / "load" / scenario)
    slow_monkey = pytest.MonkeyPatch()
    line_by_line(slow_monkey)
    slow = outcome(Path("."))
    slow_monkey.undo()
    every_line_as_columns(monkeypatch)
    fast = outcome(Path("."))
    assert fast[0] == slow[0]
    for run_id, run in slow[1].items():
        assert_same(fast[1][run_id], run)


# --- random damage: the columns agree with the record path or hand the lines to it --------------------

FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
VALUE = rb'(?<=:)(-?\d+(\.\d+)?|"[^"]*"|\[[^\]]*\])(?=[,}])'  # a number, a string or a list, as a value
DAMAGE = [b"-1", b"0", b"1.5", b"1e999", b"NaN", b"-NaN", b"Infinity", b"null", b'"x"', b'"NaN"', b"true", b"[]",
          b"{}", b"[1]", b"12345678901234567890", b"9.3e18", b"-0", b'""', b'" "', b'"train"', b'"rollout"',
          b"[null]", b"[1.5]", b'"\\u00e9"', b'"\xc3\xa9"', b'"\xff"', b"1E2", b"-1.0"]


@FUZZ
@given(stream=st.sampled_from(["metrics", "phases", "gpu_util", "host_memory"]), line=st.integers(0, 30),
       value=st.integers(0, 12), more=st.booleans(), damage=st.sampled_from(DAMAGE), extra=st.sampled_from(
           [None, "blank line", "leading space", "no newline", "two objects", "key twice", "key dropped", "bom"]))
def test_random_damage_gives_what_the_record_path_gives(stream: str, line: int, value: int, more: bool,
                                                        damage: bytes, extra: str | None,
                                                        tmp_path_factory: pytest.TempPathFactory) -> None:
    runs = tmp_path_factory.mktemp("fuzz") / "runs"
    shutil.copytree(GOOD, runs)
    run = runs / "tiny-run"
    metrics = run / "dashboard" / "metrics.jsonl.gz"  # the markers as bare words, so the columns can read it
    metrics.write_bytes(gzip.compress(gzip.decompress(metrics.read_bytes()).replace(b'"NaN"', b"NaN").replace(
        b'"-Infinity"', b"-Infinity").replace(b'"Infinity"', b"Infinity"), mtime=0))
    path = {"metrics": metrics, "phases": sorted((run / "dashboard" / "phases").iterdir())[0],
            "gpu_util": run / "dashboard" / "gpu_util.jsonl", "host_memory": run / "lab" / "host_memory.jsonl"}[stream]
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    lines = data.split(b"\n")
    at = line % max(1, len(lines) - 1)
    numbers = list(re.finditer(VALUE, lines[at]))
    if numbers:
        hit = numbers[value % len(numbers)]
        lines[at] = lines[at][:hit.start()] + damage + lines[at][hit.end():]
    if more:  # the same damage on a second line
        other = (at + 3) % max(1, len(lines) - 1)
        found = list(re.finditer(VALUE, lines[other]))
        if found:
            hit = found[value % len(found)]
            lines[other] = lines[other][:hit.start()] + damage + lines[other][hit.end():]
    if extra == "blank line":
        lines.insert(at, b"")
    elif extra == "leading space":
        lines[at] = b" " + lines[at]
    elif extra == "two objects":
        lines[at] = lines[at] + lines[at]
    elif extra == "key twice" and lines[at].startswith(b'{"'):
        lines[at] = lines[at][:1] + lines[at][1:].split(b",", 1)[0] + b"," + lines[at][1:]
    elif extra == "key dropped" and b"," in lines[at]:
        head, rest = lines[at].split(b",", 1)
        lines[at] = b"{" + rest if head.count(b"{") == 1 else lines[at]
    data = b"\n".join(lines)
    if extra == "no newline":
        data = data.rstrip(b"\n")
    elif extra == "bom":
        data = b"\xef\xbb\xbf" + data
    path.write_bytes(gzip.compress(data, mtime=0) if path.name.endswith(".gz") else data)
    with pytest.MonkeyPatch.context() as slow_monkey:
        line_by_line(slow_monkey)
        slow = outcome(runs)
    with pytest.MonkeyPatch.context() as fast_monkey:
        every_line_as_columns(fast_monkey, batch=64)
        fast = outcome(runs)
    assert fast[0] == slow[0]
    if slow[1]:
        assert_same(fast[1]["tiny-run"], slow[1]["tiny-run"])


# --- large files, read a batch at a time -------------------------------------------------------------


def test_a_large_gzip_file_cut_short_is_reported_as_the_record_path_says(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / "runs" / RUN)
    held = tmp_path / "runs" / RUN / "lab" / "held_memory.jsonl.gz"
    held.write_bytes(held.read_bytes()[:-2000])
    monkeypatch.setattr(_columnar, "BATCH_BYTES", 64 * 1024)  # several batches read before the end is found
    problems, _ = outcome(tmp_path / "runs")
    assert len(problems) == 1
    assert problems[0].endswith(f"/{RUN}/lab/held_memory.jsonl.gz: is a truncated gzip file (it ends mid-stream)")


def test_memory_of_a_large_file_is_bounded_by_its_batches(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A file is read BATCH_BYTES at a time: no read asks for more than a batch, whatever the file's size."""
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / "runs" / RUN)
    monkeypatch.setattr(_columnar, "BATCH_BYTES", 32 * 1024)
    parsed: list[int] = []
    real = _columnar._parse
    monkeypatch.setattr(_columnar, "_parse", lambda data: parsed.append(len(data)) or real(data))
    summaries(tmp_path / "runs")
    held = len(gzip.decompress((tmp_path / "runs" / RUN / "lab" / "held_memory.jsonl.gz").read_bytes()))
    assert held > 20 * 32 * 1024 and max(parsed) < 2 * 32 * 1024


def test_a_file_of_many_batches_is_parsed_ahead_in_threads_and_summarised_as_line_by_line(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / "runs" / RUN)
    monkeypatch.setattr(_columnar, "BATCH_BYTES", 32 * 1024)
    threads: list[str] = []
    real = _columnar._parse
    monkeypatch.setattr(_columnar, "_parse", lambda data: threads.append(threading.current_thread().name) or real(
        data))
    fast = summaries(tmp_path / "runs")[RUN]
    ahead = sum(name.startswith("parse") for name in threads)  # a stream's last batch is parsed as it is used
    assert ahead > 10 * threads.count(threading.current_thread().name)
    line_by_line(monkeypatch)
    assert_same(fast, summaries(tmp_path / "runs")[RUN])


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_bad_line_in_a_file_parsed_ahead_is_reported_as_the_record_path_reports_it(
        where: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Batches after the bad one are already being parsed when it is checked: the problem is the record path's,
    with its line, and nothing of the file read as columns is kept."""
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / "runs" / RUN)
    held = tmp_path / "runs" / RUN / "lab" / "held_memory.jsonl.gz"
    lines = gzip.decompress(held.read_bytes()).split(b"\n")
    bad = {"first": 3, "middle": len(lines) // 2, "last": len(lines) - 3}[where]
    lines[bad] = lines[bad].replace(b'"gib":', b'"gib":"many",', 1)
    held.write_bytes(gzip.compress(b"\n".join(lines)))
    monkeypatch.setattr(_columnar, "BATCH_BYTES", 32 * 1024)
    fast = outcome(tmp_path / "runs")[0]
    line_by_line(monkeypatch)
    assert fast == outcome(tmp_path / "runs")[0] and len(fast) == 1
    assert f"held_memory.jsonl.gz:{bad + 1}:" in fast[0]


def test_a_run_with_other_sources_keeps_its_metrics_as_records(tmp_path: Path) -> None:
    """sources.merge checks each metric of the dump against the other sources', record by record."""
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / RUN)
    (tmp_path / RUN / "log").mkdir()
    (tmp_path / RUN / "log" / "train.log").write_text("nothing Miles printed\n")
    problems: list = []
    run = load.load_run(tmp_path / RUN, problems)
    assert run.streams["metrics"] and "metrics" not in run.tables and run.tables["gpu_temp"]


@pytest.mark.parametrize("bad", [False, True])
def test_validating_without_keeping_finds_the_same_problems_and_holds_no_column(bad: bool, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / RUN)
    if bad:
        damage(tmp_path / RUN / "dashboard" / "metrics.jsonl", 41, rb'"step":13', b'"step":-13')
    kept: list = []
    run = load.load_run(tmp_path / RUN, kept)
    checked: list = []
    validated = load.load_run(tmp_path / RUN, checked, keep=False)
    assert [str(p) for p in checked] == [str(p) for p in kept] and bool(kept) == bad
    # Of the sampled streams only their last times are kept; the metrics and phases the summary's rules read stay.
    assert not set(validated.tables) & set(_columnar.FLAT_STREAMS) and run.tables["held_memory"]
    assert validated.last_samples["held_memory"] == pc.max(run.tables["held_memory"][0].table.column("ts")).as_py()
    assert validated.warnings == run.warnings


@pytest.mark.parametrize("run_id", sorted(path.name for path in (ROOT / "runs").iterdir() if path.is_dir()))
def test_validation_read_as_columns_gives_the_summarys_first_and_last_record(run_id: str,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A run only validated applies the summary's rules to t0 and t1 alone, unordered; its start and end are still
    its summary's, and so are its problems and warnings."""
    monkeypatch.setattr(_columnar, "FAST_FROM_BYTES", 0)  # the phases and metrics as columns, however few
    problems: list = []
    run = load.load_run(ROOT / "runs" / run_id, problems)
    facts = summary.summarise(run, problems).facts
    checked: list = []
    validated = load.load_run(ROOT / "runs" / run_id, checked, keep=False)
    assert "phases" in validated.tables and "metrics" in validated.tables
    assert summary.validate(validated, checked) == (facts["start_ts"], facts["end_ts"])
    assert (checked, validated.warnings) == (problems, run.warnings)


def _open_first(data: bytes) -> bytes:
    """The first phase written twice: open (t1 = -1) while it ran, then closed (as Miles writes a long phase)."""
    first = data.split(b"\n", 1)[0]
    return re.sub(rb'"t1":[0-9.]+', b'"t1":-1', first, count=1) + b"\n" + data


def _left_open(data: bytes) -> bytes:
    return re.sub(rb'"t1":[0-9.]+(,"node":[^\n]*"role":"rollout_manager")', rb'"t1":-1\1', data, count=1)


def _step_twice(data: bytes) -> bytes:
    """The step's first line again, one value changed."""
    first = data.split(b"\n", 2)[1] + b"\n"
    return data + re.sub(rb'("train/grad_norm":)[0-9.]+', rb"\g<1>9.5", first, count=1)


@pytest.mark.parametrize(("stream", "change", "expected"), [
    ("phases", _open_first, None),
    ("phases", _left_open, "never closed; dropped"),
    ("metrics", _step_twice, "logged twice with different values"),
])
def test_validation_read_as_columns_finds_what_the_summary_finds(stream: str, change, expected: str | None,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    """A phase open then closed (one phase, from the columns), one left open (a warning, from the lines) and a
    step logged twice with different values (a problem): validation finds what the summary does."""
    monkeypatch.setattr(_columnar, "FAST_FROM_BYTES", 0)
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / RUN)
    dashboard = tmp_path / RUN / "dashboard"
    target = sorted((dashboard / "phases").glob("*.jsonl"))[0] if stream == "phases" else dashboard / "metrics.jsonl"
    target.write_bytes(change(target.read_bytes()))
    problems: list = []
    run = load.load_run(tmp_path / RUN, problems)
    facts = summary.summarise(run, problems).facts
    checked: list = []
    validated = load.load_run(tmp_path / RUN, checked, keep=False)
    window = summary.validate(validated, checked)
    found = [str(problem) for problem in checked] + validated.warnings
    assert any(expected in line for line in found) if expected else not checked
    assert (checked, validated.warnings) == (problems, run.warnings)
    assert problems or window == (facts["start_ts"], facts["end_ts"])


def _members(data: bytes) -> bytes:
    half = data.index(b"\n", len(data) // 2) + 1
    return gzip.compress(data[:half], mtime=0) + gzip.compress(data[half:], mtime=0)


def _bad_crc(data: bytes) -> bytes:
    packed = bytearray(gzip.compress(data, mtime=0))
    packed[-8] ^= 0xFF
    return bytes(packed)


def _bad_length(data: bytes) -> bytes:
    packed = bytearray(gzip.compress(data, mtime=0))
    packed[-4] ^= 0x01
    return bytes(packed)


ODD_GZIP = {
    "two members": _members,
    "zero padding after": lambda data: gzip.compress(data, mtime=0) + b"\0" * 64,
    "bytes after": lambda data: gzip.compress(data, mtime=0) + b"garbage",
    "a wrong checksum": _bad_crc,
    "a wrong length": _bad_length,
    "cut short": lambda data: gzip.compress(data, mtime=0)[:-20],
    "a deflate stream broken": lambda data: gzip.compress(data, mtime=0)[:40] + b"\xff" * 16
                                            + gzip.compress(data, mtime=0)[56:],
}


@pytest.mark.parametrize("batch", [4 * 1024 * 1024, 32 * 1024], ids=["one batch", "many batches"])
@pytest.mark.parametrize("odd", list(ODD_GZIP))
def test_the_column_reader_inflates_what_the_record_path_inflates_and_refuses_the_rest(
        odd: str, batch: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The column reader inflates with isal, the record path with Python's gzip: the same files pass, the same
    rows are read, and a file one refuses is worded by the record path."""
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / "runs" / RUN)
    held = tmp_path / "runs" / RUN / "lab" / "held_memory.jsonl.gz"
    held.write_bytes(ODD_GZIP[odd](gzip.decompress(held.read_bytes())))
    monkeypatch.setattr(_columnar, "BATCH_BYTES", batch)
    monkeypatch.setattr(_columnar, "FAST_FROM_BYTES", 0)
    fast_problems, fast = outcome(tmp_path / "runs")
    line_by_line(monkeypatch)
    slow_problems, slow = outcome(tmp_path / "runs")
    assert fast_problems == slow_problems
    assert (fast_problems == []) == (odd in ("two members", "zero padding after"))
    if not fast_problems:
        assert_same(fast[RUN], slow[RUN])


@pytest.mark.parametrize("batch", [4 * 1024 * 1024, 1024], ids=["smaller than a batch", "many batches"])
def test_a_plain_file_that_grows_after_it_is_sized_is_read_to_its_end(batch: int, monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    """A plain file smaller than a batch is read in one call of its size and a byte more: lines added between
    its stat and its reading are read too, as the record path reads them; one read whole asks nothing more."""
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / "runs" / RUN)
    path = tmp_path / "runs" / RUN / "dashboard" / "metrics.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-3]))
    monkeypatch.setattr(_columnar, "BATCH_BYTES", batch)
    # open_input's path (read_small's: test_hostile)
    monkeypatch.setattr(stream_columns, "read_small", lambda path, most: None)
    real_open, reads = stream_columns.open_input, []

    def grown_once_opened(opened: Path) -> object:
        handle = real_open(opened)
        if opened == path:
            path.write_bytes(b"".join(lines))  # written after _blocks' stat sized it, before its read
            real_read = handle.read
            handle.read = lambda size=-1: reads.append(size) or real_read(size)
        return handle

    monkeypatch.setattr(stream_columns, "open_input", grown_once_opened)
    fast = summaries(tmp_path / "runs")[RUN]
    monkeypatch.setattr(stream_columns, "open_input", real_open)
    line_by_line(monkeypatch)
    assert_same(fast, summaries(tmp_path / "runs")[RUN])
    assert len(fast.steps) == len(summaries(tmp_path / "runs")[RUN].steps)
    short = len(b"".join(lines[:-3]))
    assert reads[0] == (short + 1 if batch > short else batch) and len(reads) > 1


def test_a_plain_file_read_whole_is_read_in_one_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / "runs" / RUN)
    path = tmp_path / "runs" / RUN / "dashboard" / "metrics.jsonl"
    # open_input's path (read_small's: test_hostile)
    monkeypatch.setattr(stream_columns, "read_small", lambda path, most: None)
    real_open, reads = stream_columns.open_input, []

    def counted(opened: Path) -> object:
        handle = real_open(opened)
        if opened == path:
            real_read = handle.read
            handle.read = lambda size=-1: reads.append(size) or real_read(size)
        return handle

    monkeypatch.setattr(stream_columns, "open_input", counted)
    summaries(tmp_path / "runs")
    assert reads == [path.stat().st_size + 1]


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=64), at=st.integers(0, 64), null=st.booleans())
def test_holds_null_tells_what_in_tells(data: bytes, at: int, null: bool) -> None:
    """Every offset and length, `null` or a part of it at the start, the middle or the end."""
    if null:
        data = data[:at] + b"null" + data[at:]
    for text in (data, data[:3], data[1:], b"nul" + data, data + b"nul"):
        assert _columnar.holds_null(text) == (b"null" in text)


def test_holds_null_finds_it_at_each_of_the_four_offsets_of_a_word() -> None:
    for start in range(8):
        assert _columnar.holds_null(b"x" * start + b"null" + b"y" * 5)
    assert not _columnar.holds_null(b'{"a":nul}\n{"b":ull}\n' * 100)


def _starts_byte_by_byte(data: bytes) -> list[int]:
    """line_starts' definition: 0, then each byte after a newline."""
    return [0, *(at + 1 for at, byte in enumerate(data) if byte == ord("\n"))]


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.binary(max_size=20).map(lambda line: line.replace(b"\n", b"")), max_size=40),
       tail=st.binary(max_size=12))
def test_line_starts_finds_every_newline_in_words_as_byte_by_byte(lines: list[bytes], tail: bytes) -> None:
    """Lines shorter and longer than a word, empty ones, and bytes after the last newline (any offset of 8)."""
    data = b"".join(line + b"\n" for line in lines) + tail
    starts = _columnar.line_starts(data)
    assert starts.dtype == np.int64 and starts.tolist() == _starts_byte_by_byte(data)


@pytest.mark.parametrize("run_id", ["baseline-seed2", "qwen3-4b-a"])
def test_line_starts_of_a_runs_streams_are_its_newlines(run_id: str) -> None:
    for path in sorted((ROOT / "runs" / run_id / "dashboard").rglob("*.jsonl")):
        data = path.read_bytes()
        assert _columnar.line_starts(data).tolist() == _starts_byte_by_byte(data), path


# Times and phase ends, a third of them at the edges: NaN, the infinities, 0, -1, LATEST_TIME and just inside it.
_TIMES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.none(), st.integers(-3, 3).map(float),
                   st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, -1.0, schemas.LATEST_TIME,
                                     float(np.nextafter(schemas.LATEST_TIME, 0)), float(np.nextafter(0.0, -1))]))


@given(st.lists(st.lists(_TIMES, max_size=6), max_size=4))
@settings(max_examples=400, deadline=None)
def test_the_time_checks_tell_what_each_value_tells(chunks: list[list[float | None]]) -> None:
    """_time and _phase_end hold a column to what schemas' validators hold each value to (nulls left out)."""
    column = pa.chunked_array([pa.array(chunk, type=pa.float64()) for chunk in chunks], type=pa.float64())
    values = [value for chunk in chunks for value in chunk if value is not None]

    def each(value: float, open_end: bool) -> bool:
        return math.isfinite(value) and (value >= 0 or (open_end and value == -1)) and value < schemas.LATEST_TIME

    assert _columnar._time(column) is all(each(value, False) for value in values)
    assert _columnar._phase_end(column) is all(each(value, True) for value in values)
