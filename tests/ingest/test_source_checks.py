"""Every source reader checks what it yields by the dump's rules: a step, a time, a duration or a type that the
dump's schema refuses is one line naming the file, the line (or record) and the field; a damaged, empty or
unreadable source file is a warning naming it; random input is never anything but records and problems."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from build_tools.cli import main
from build_tools.core._exceptions import EXIT_BAD_INPUT, Problem
from build_tools.ingest import load, sources
from build_tools.ingest.sources import Found
from tests.conftest import SAMPLES

T0 = 1789999200.0  # 2026-09-21 14:00:00 UTC
STAMP = "[2026-09-21 14:00:00] log_utils.py:1 - "
HUGE = "99999999999999999999999"


def event_line(**fields: object) -> str:
    line = {"timestamp": "2026-09-21T14:00:00+00:00", "type": "metric", "rollout_id": 1, "attempt": 0,
            "metrics": {"train/grad_norm": 0.5}}
    return json.dumps({**line, **fields}) + "\n"


def read(tmp_path: Path, source: str, name: str, data: str | bytes) -> tuple[Found, list[str], list[str]]:
    """One file of a source read by its reader, in tmp_path (the working directory): what it found, its
    problems and warnings as the user sees them."""
    folder = tmp_path / source
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    problems: list[Problem] = []
    warnings: list[str] = []
    found = sources.READERS[source]([path.relative_to(tmp_path)], problems, warnings)
    return found, [str(problem) for problem in problems], warnings


@pytest.mark.parametrize(("source", "name", "data", "expected"), [
    ("log", "a.log", f"{STAMP}step {HUGE}: {{'train/grad_norm': 0.5}}\n",
     f"log/a.log:1: step: is an integer beyond 64 bits, found {HUGE}"),
    ("log", "a.log", f"{STAMP}step 1: {{'train/grad_norm': {HUGE}}}\n",
     f"log/a.log:1: metrics.train/grad_norm: is an integer beyond 64 bits, found {HUGE}"),
    ("log", "a.log", f"{STAMP}[CPU memory] after_train: 1.5 GB (rollout_id=0, step={HUGE})\n",
     f"log/a.log:1: step: is an integer beyond 64 bits, found {HUGE}"),
    ("wandb", "a.csv", f"train/step,train/grad_norm\n{'9' * 5000},0.5\n",
     "wandb/a.csv:2: train/step: is an integer beyond 64 bits, found an integer of 5000 digits"),
    ("log", "a.log", f"{STAMP}step -3: {{'train/grad_norm': 0.5}}\n",
     "log/a.log:1: step: expected a value >= 0, found -3"),
    ("log", "a.log", "[0001-01-01 00:00:00] log_utils.py:1 - step 3: {'train/grad_norm': 0.5}\n",
     "log/a.log:1: timestamp: [0001-01-01 00:00:00]: expected a time in seconds, finite and not negative, found "
     "-62135596800.0"),
    ("log", "a.log", f"{STAMP}Timer train end (elapsed: 100000000000000000000000.0s)\n",
     "log/a.log:1: Timer train elapsed: expected a duration in seconds, finite, not negative and shorter than "
     "7289654400 (the epoch to 2201), found 1e+23"),
    ("log", "a.log", f"{STAMP}step 1: {{'train/grad_norm': 1e999}}\n",
     "log/a.log:1: metrics.train/grad_norm: is a number beyond the range of a double, found inf"),
    ("events", "a.jsonl", event_line(rollout_id=10**30),
     "events/a.jsonl:1: rollout_id: is an integer beyond 64 bits, found 1000000000000000000000000000000"),
    ("events", "a.jsonl", event_line(rollout_id={"a": 1}),
     "events/a.jsonl:1: rollout_id: expected a whole number, found {'a': 1}"),
    ("events", "a.jsonl", event_line(rollout_id=True),
     "events/a.jsonl:1: rollout_id: expected a whole number, found True"),
    ("events", "a.jsonl", event_line(attempt="1"), "events/a.jsonl:1: attempt: expected a whole number, found '1'"),
    ("events", "a.jsonl", event_line(attempt=[1]), "events/a.jsonl:1: attempt: expected a whole number, found [1]"),
    ("events", "a.jsonl", event_line(timestamp="0001-01-01T00:00:00+05:00"),
     "events/a.jsonl:1: timestamp: 0001-01-01T00:00:00+05:00: expected a time in seconds, finite and not negative, "
     "found -62135614800.0"),
    ("events", "a.jsonl", event_line(timestamp="9999-12-31T23:59:59-05:00"),
     "events/a.jsonl:1: timestamp: 9999-12-31T23:59:59-05:00: expected a time in seconds before the year 2201 (at "
     "most 7289654400), found 253402318799.0"),
    ("events", "a.jsonl", event_line(metrics={"train/grad_norm": 0.5, "train/step": -2}),
     "events/a.jsonl:1: train/step: expected a value >= 0, found -2"),
    ("wandb", "a.csv", "train/step,train/grad_norm\n-1,0.5\n",
     "wandb/a.csv:2: train/step: expected a value >= 0, found -1"),
    ("wandb", "a.csv", f"train/step,train/grad_norm\n{HUGE},0.5\n",
     f"wandb/a.csv:2: train/step: is an integer beyond 64 bits, found {HUGE}"),
    ("wandb", "a.csv", "train/step,train/step,train/grad_norm\n1,2,0.5\n",
     "wandb/a.csv:1: train/step: 2 columns hold it (columns 1, 2); expected one (the CSV of one run's chart)"),
    ("wandb", "a.csv", "train/step,a - train/grad_norm,b - train/grad_norm\n1,2,0.5\n",
     "wandb/a.csv:1: train/grad_norm: 2 columns hold it (columns 2, 3); expected one (the CSV of one run's chart)"),
    ("wandb", "a.csv", "train/step,train/grad_norm\n1,1e999\n",
     "wandb/a.csv:2: train/grad_norm: is a number beyond the range of a double, found inf"),
    ("wandb", "a.jsonl", '{"_timestamp": 1e300, "train/step": 0, "train/grad_norm": 0.5}\n',
     "wandb/a.jsonl:1: _timestamp: expected a time in seconds before the year 2201 (at most 7289654400), found 1e+300"),
    ("wandb", "a.jsonl", '{"_timestamp": "NaN", "train/step": 0, "train/grad_norm": 0.5}\n',
     "wandb/a.jsonl:1: _timestamp: expected a time in seconds, finite and not negative, found nan"),
    ("wandb", "a.jsonl", '{"train/step": -4, "train/grad_norm": 0.5}\n',
     "wandb/a.jsonl:1: train/step: expected a value >= 0, found -4"),
    ("wandb", "a.jsonl", '{"train/step": true, "train/grad_norm": 0.5}\n',
     "wandb/a.jsonl:1: train/step: expected a whole number, found True"),
    ("ci_history", "a.jsonl", '{"metric": "train/grad_norm", "series": [[-1, 0.5]]}\n',
     "ci_history/a.jsonl:1: train/grad_norm step: expected a value >= 0, found -1"),
    ("ci_history", "a.jsonl", f'{{"metric": "train/grad_norm", "series": [[1, {HUGE}]]}}\n',
     f"ci_history/a.jsonl:1: train/grad_norm value: is an integer beyond 64 bits, found {HUGE}"),
])
def test_what_the_dumps_schema_refuses_is_one_line_naming_file_line_and_field(
        source: str, name: str, data: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    found, problems, _ = read(tmp_path, source, name, data)
    assert problems == [expected]
    assert found.streams.get("metrics", []) == [] and found.streams.get("phases", []) == []


def test_a_good_line_beside_a_bad_one_is_still_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    found, problems, warnings = read(tmp_path, "events", "a.jsonl", event_line(attempt="x") + event_line(attempt=2))
    assert problems == ["events/a.jsonl:1: attempt: expected a whole number, found 'x'"] and warnings == []
    assert [(r.line, r.data["step"], r.data["metrics"]) for r in found.streams["metrics"]] == [
        (2, 1, {"train/grad_norm": 0.5})]


def test_a_written_nan_or_infinity_is_kept_as_the_dump_keeps_it(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    found, problems, _ = read(tmp_path, "log", "a.log", f"{STAMP}step 1: {{'train/grad_norm': nan, 'train/x': -inf}}\n")
    assert problems == []
    (record,) = found.streams["metrics"]
    assert str(record.data["metrics"]) == "{'train/grad_norm': nan, 'train/x': -inf}"
    assert type(record.data["metrics"]["train/x"]) is float  # the schema's plain float, not the reader's marker


# --- TensorBoard: written with its own writer, then damaged ---------------------------------------


def tensorboard_file(folder: Path, steps: tuple[int, ...] = (0, 1, 2), wall_time: float = T0) -> Path:
    """An event file as TensorBoard writes it: its version record, then one scalar event per step."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    folder.mkdir(parents=True, exist_ok=True)
    writer = EventFileWriter(str(folder), filename_suffix=".t")
    for step in steps:
        value = summary_pb2.Summary.Value(tag="train/grad_norm", simple_value=0.5)
        writer.add_event(event_pb2.Event(wall_time=wall_time, step=step, summary=summary_pb2.Summary(value=[value])))
    writer.close()
    (path,) = folder.glob("events.out.tfevents.*")
    return path


def read_tensorboard(path: Path) -> tuple[Found, list[str], list[str]]:
    problems: list[Problem] = []
    warnings: list[str] = []
    found = sources.READERS["tensorboard"]([path], problems, warnings)
    return found, [str(problem) for problem in problems], warnings


def test_a_whole_tensorboard_file_gives_every_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    found, problems, warnings = read_tensorboard(tensorboard_file(Path("tensorboard")))
    assert problems == [] and warnings == []
    assert [r.data["step"] for r in found.streams["metrics"]] == [0, 1, 2]


@pytest.mark.parametrize(("damage", "expected"), [
    (lambda data: data[:-1], "ends inside a record after 3 whole record(s); only those are read (a file cut off or "
                             "damaged)"),
    (lambda data: flip(data, len(data) - 1), "a record fails its CRC check after 3 whole record(s); only those are "
                                             "read (a file cut off or damaged)"),
    (lambda data: data[:-30], "ends inside a record after 3 whole record(s); only those are read (a file cut off or "
                              "damaged)"),
    (lambda data: data[:len(data) // 2 + 3], None),
    (lambda data: flip(data, len(data) // 2), None),
    (lambda data: flip(data, 110), "a record fails its CRC check after 1 whole record(s); only those are read (a file "
                                   "cut off or damaged)"),
])
def test_a_damaged_tensorboard_file_is_a_warning_saying_how_much_was_read(damage: object, expected: str | None,
                                                                          tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = tensorboard_file(Path("tensorboard"))
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    found, problems, warnings = read_tensorboard(path)
    assert problems == []
    (warning,) = warnings
    kept = len(found.streams.get("metrics", []))
    assert warning.startswith(f"{path}: ") and f"after {kept + 1} whole record(s)" in warning  # + its version record
    if expected is not None:
        assert warning == f"{path}: {expected}"


def flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]


def test_a_tensorboard_step_the_schema_refuses_names_the_record(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = tensorboard_file(Path("tensorboard"), steps=(0, -1))
    found, problems, _ = read_tensorboard(path)
    assert problems == [f"{path}: record 3: step: expected a value >= 0, found -1"]
    assert [r.data["step"] for r in found.streams["metrics"]] == [0]
    path.unlink()
    path = tensorboard_file(Path("tensorboard"), wall_time=float("nan"))
    assert read_tensorboard(path)[1] == [
        f"{path}: record {n}: wall_time: expected a time in seconds, finite and not negative, found nan"
        for n in (2, 3, 4)]


# --- files that give nothing ------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "name", "data", "expected"), [
    ("log", "a.log", "", "log/a.log: empty; nothing read from it"),
    ("log", "a.log.gz", gzip.compress(b"\n\n", mtime=0), "log/a.log.gz: empty; nothing read from it"),
    ("log", "a.log", "\x00\x01 hello\n", "log/a.log: nothing read from it: no metrics, Timer, [CPU memory], event or "
     "argument line (not a file of this source, or one from before anything was logged)"),
    ("wandb", "a.csv", "train/step,train/grad_norm\n",
     "wandb/a.csv: nothing read from it: no value of a known key with its "
     "step (not a file of this source, or one from before anything was logged)"),
    ("ci_history", "a.jsonl", "", "ci_history/a.jsonl: empty; nothing read from it"),
    ("events", "a.jsonl", "", "events/a.jsonl: empty; nothing read from it"),
    ("tensorboard", "events.out.tfevents.1.x", "", "tensorboard/events.out.tfevents.1.x: empty; nothing read from it"),
    ("tensorboard", "events.out.tfevents.1.x", "garbage, not a TFRecord stream",
     "tensorboard/events.out.tfevents.1.x: not a TensorBoard event file (a record's length fails its CRC check at its "
     "first record); nothing read"),
])
def test_an_empty_or_unreadable_source_file_is_a_warning_naming_it(source: str, name: str, data: str | bytes,
                                                                   expected: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _, problems, warnings = read(tmp_path, source, name, data)
    assert problems == [] and warnings == [expected]


def test_a_source_file_at_a_runs_top_level_is_a_warning_saying_where_it_belongs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(SAMPLES / "load" / "good" / "tiny-run", "tiny-run")
    shutil.copy(SAMPLES / "sources" / "log" / "job.log", "tiny-run/job.log")
    Path("tiny-run/history.csv").write_text("Step,train/grad_norm\n")
    Path("tiny-run/metrics.jsonl").write_text("{}\n")
    Path("tiny-run/notes.md").write_text("not a source\n")
    problems: list[Problem] = []
    run = load.load_run(Path("tiny-run"), problems)
    assert problems == []
    assert [w for w in run.warnings if "top level" in w] == [
        "tiny-run/history.csv: a wandb export at the run's top level is not read; move it into tiny-run/wandb/",
        "tiny-run/job.log: a log at the run's top level is not read; move it into tiny-run/log/",
        "tiny-run/metrics.jsonl: a dashboard stream at the run's top level is not read; move it into "
        "tiny-run/dashboard/",
    ]


def test_the_cli_lists_every_source_problem_with_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job" / "log").mkdir(parents=True)
    (tmp_path / "job" / "log" / "job.log").write_text(f"{STAMP}step -3: {{'train/grad_norm': 0.5}}\n"
                                                      f"{STAMP}step {HUGE}: {{'train/grad_norm': 0.5}}\n")
    assert main(["show", "job"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "job/log/job.log:1: step: expected a value >= 0, found -3\n" in err
    assert f"job/log/job.log:2: step: is an integer beyond 64 bits, found {HUGE}\n" in err
    assert "Traceback" not in err


# --- any input: records that pass the schema, or problems; never another exception, never a hang -----------

FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "200")), deadline=2000,
                suppress_health_check=[HealthCheck.too_slow])
NAMES = {"log": "a.log", "events": "a.jsonl", "wandb": "a.csv", "ci_history": "a.jsonl",
         "tensorboard": "events.out.tfevents.1.x"}
odd_numbers = st.sampled_from([0, 1, -1, 2**63, -(2**63) - 1, 10**30, 10**400, 1.5, -0.0, 1e300, 1e-300, "NaN",
                               "Infinity", "-Infinity", True, None, "3", [], {}, [1], {"a": 1}])
odd_times = st.sampled_from(["2026-09-21T14:00:00+00:00", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00",
                             "2026-09-21T14:00:00", "2026-02-30T00:00:00", "x", 3, None, "2026-09-21 14:00:00+25:00"])
keys = st.sampled_from(["train/grad_norm", "rollout/raw_reward", "train/step", "rollout/step", "eval/step", "perf/x",
                        "_step", "_timestamp", "x"])


def check_read(source: str, data: bytes) -> None:
    """The reader gives validated records and Problems, whatever the bytes: any other exception fails the test."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / source / NAMES[source]
        path.parent.mkdir()
        path.write_bytes(data)
        problems: list[Problem] = []
        found = sources.READERS[source]([path], problems, [])
    assert all(isinstance(problem, Problem) for problem in problems)
    for record in found.streams.get("metrics", []):
        step = record.data["step"]
        assert type(step) is int and 0 <= step < 2**63
        ts = record.data["ts"]
        assert ts != ts or 0 <= ts < 7289654400  # NaN (no time printed) or inside the window


@FUZZ
@given(source=st.sampled_from(sorted(NAMES)), data=st.binary(max_size=400))
def test_any_bytes_give_records_or_problems(source: str, data: bytes) -> None:
    check_read(source, data)


@FUZZ
@given(step=odd_numbers, value=odd_numbers, key=keys, kind=st.sampled_from(["step", "perf", "rollout", "eval"]),
       stamp=st.sampled_from(["2026-09-21 14:00:00", "0001-01-01 00:00:00", "9999-12-31 23:59:59", "2026-13-01"]))
def test_near_valid_log_lines_give_records_or_problems(step: object, value: object, key: str, stamp: str,
                                                       kind: str) -> None:
    text = (f"[{stamp}] log_utils.py:1 - {kind} {step}: {{{key!r}: {value!r}, 'rollout/step': {step!r}}}\n"
            f"[{stamp}] x.py:1 - Timer train end (elapsed: {value}s)\n"
            f"[{stamp}] x.py:1 - [CPU memory] x: {value} GB (rollout_id={step}, step={step})\n")
    check_read("log", text.encode())


@FUZZ
@given(rollout=odd_numbers, attempt=odd_numbers, stamp=odd_times, key=keys, value=odd_numbers, own=odd_numbers)
def test_near_valid_event_lines_give_records_or_problems(rollout: object, attempt: object, stamp: object, key: str,
                                                         value: object, own: object) -> None:
    line = {"timestamp": stamp, "type": "metric", "rollout_id": rollout, "attempt": attempt,
            "metrics": {key: value, "train/step": own}}
    check_read("events", (json.dumps(line) + "\n" + json.dumps(line) + "\n").encode())


@FUZZ
@given(row=st.dictionaries(keys, odd_numbers, max_size=5), step=odd_numbers, value=odd_numbers,
       cells=st.lists(st.sampled_from(["Step", "train/grad_norm", "-1", HUGE, "1e999", "nan", "", "x", "0.5",
                                       "r - train/grad_norm", "train/grad_norm__MIN"]), min_size=1, max_size=4))
def test_near_valid_wandb_and_ci_history_rows_give_records_or_problems(row: dict[str, object], step: object,
                                                                       value: object, cells: list[str]) -> None:
    check_read("wandb", ",".join(cells).encode() + b"\n" + ",".join(reversed(cells)).encode() + b"\n")
    with tempfile.TemporaryDirectory() as tmp:  # the JSON-lines form of wandb, in a file of its own name
        path = Path(tmp) / "wandb" / "history.jsonl"
        path.parent.mkdir()
        path.write_text(json.dumps(row) + "\n")
        sources.READERS["wandb"]([path], [], [])
    series = [[step, value], [value, step], [step], step]
    check_read("ci_history", (json.dumps({"metric": "train/grad_norm", "series": series}) + "\n").encode())


@FUZZ
@given(steps=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=3),
       wall_time=st.floats(allow_nan=True, allow_infinity=True), cut=st.integers(0, 200), flip_at=st.integers(0, 200))
def test_near_valid_tensorboard_files_give_records_or_problems(steps: list[int], wall_time: float, cut: int,
                                                               flip_at: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = tensorboard_file(Path(tmp), tuple(steps), wall_time).read_bytes()
    check_read("tensorboard", data)
    check_read("tensorboard", data[:cut])
    check_read("tensorboard", flip(data, flip_at % len(data)))


def test_long_hostile_log_lines_are_read_in_linear_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines that make a searching pattern rescan to the end from every position (minutes, before) take moments."""
    import time

    monkeypatch.chdir(tmp_path)
    lines = ["-perf" * 60_000, "-perf" * 60_000 + ": {", " " * 300_000 + "x", "1" * 300_000,
             f"{STAMP}" + "step" + " " * 300_000, "Job '" * 60_000, "[CPU memory] " + ": 1" * 100_000]
    start = time.perf_counter()
    _, problems, warnings = read(tmp_path, "log", "a.log", "\n".join(lines) + "\n")
    assert time.perf_counter() - start < 10
    assert problems == []
    assert [warning[:40] for warning in warnings] == ["log/a.log:2: looks like a metrics line b"]


@FUZZ
@given(step=st.integers(-(2**64), 2**64), value=odd_numbers, stamp=st.datetimes(min_value=dt.datetime(1, 1, 2)),
       elapsed=st.floats(min_value=0))
def test_what_a_reader_passes_the_summary_can_read(step: int, value: object, stamp: dt.datetime,
                                                    elapsed: float) -> None:
    """Records that passed their reader's checks go through the merge and the summary: a summary or problems."""
    from build_tools.summarise.summary import summarise

    text = (f"[{stamp:%Y-%m-%d %H:%M:%S}] x.py:1 - step {step}: {{'train/grad_norm': {value!r}}}\n"
            f"[{stamp:%Y-%m-%d %H:%M:%S}] x.py:1 - Timer train end (elapsed: {elapsed}s)\n")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "log").mkdir()
        (Path(tmp) / "log" / "job.log").write_text(text)
        problems: list[Problem] = []
        run, _ = load.load_path(Path(tmp), problems)
        if not problems:
            summarise(run, problems)
    assert all(isinstance(problem, Problem) for problem in problems)
