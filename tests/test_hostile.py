"""Hostile and broken input: every bad file is one clear line, nothing outside the tree is read, nothing in
the data or the cache runs, and random input never escapes as anything but the build's own input error."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import socket
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from build_tools.checking.blocks import read_blocks
from build_tools.cli import main
from build_tools.core import _files
from build_tools.core._exceptions import (
    EXIT_BAD_INPUT,
    ChapterError,
    EditionFileError,
    InputProblem,
    MissingValue,
    Problem,
    RunDataError,
)
from build_tools.core._files import FileStat, file_stat, loose_files, plain_files, scan_runs, scan_tree
from build_tools.core._yaml import parse_yaml
from build_tools.editions.stamp import load_stamp
from build_tools.ingest import schemas, schemas_dump, schemas_manual, schemas_run, stream_columns, stream_lines
from build_tools.readers import step_values
from build_tools.summarise.summary import summarise_runs
from tests.conftest import ROOT, SAMPLES, copy_project

HOSTILE = SAMPLES / "hostile"
GOOD = SAMPLES / "load" / "good"
EDITION_DATE = dt.date(2026, 10, 15)
SCENARIOS = sorted(path.name for path in HOSTILE.iterdir() if path.is_dir())


def problems_in(runs: Path, cache: Path | None = None) -> list[str]:
    try:
        summarise_runs(runs, cache, latest=EDITION_DATE)
    except RunDataError as error:
        return [str(problem) for problem in error.problems]
    return []


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_each_scenario_gives_exactly_its_lines(scenario: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(HOSTILE / scenario)
    expected = (HOSTILE / scenario / "expected.txt").read_text(encoding="utf-8").splitlines()
    assert problems_in(Path(".")) == expected


def test_every_refusal_names_the_file_and_what_was_expected() -> None:
    for scenario in SCENARIOS:
        for line in (HOSTILE / scenario / "expected.txt").read_text(encoding="utf-8").splitlines():
            assert line.startswith("tiny-run/"), line
            assert len(line.splitlines()) == 1


def test_a_duplicate_provenance_cannot_turn_an_example_into_a_measured_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(HOSTILE / "duplicate-key")
    assert problems_in(Path(".")) == [
        "tiny-run/run.yaml:3: provenance: given twice (first on line 2); YAML would keep only the last one"]


def test_the_cli_lists_every_problem_once_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = copy_project(tmp_path / "project")
    for scenario in ("unknown-flag", "not-utf8", "truncated-gzip"):
        shutil.copytree(HOSTILE / scenario / "tiny-run", root / "runs" / f"tiny-{scenario}")
    for run in ("tiny-unknown-flag", "tiny-not-utf8", "tiny-truncated-gzip"):
        yaml_file = root / "runs" / run / "run.yaml"
        yaml_file.write_text(yaml_file.read_text().replace("run_id: tiny-run", f"run_id: {run}"))
        meta = root / "runs" / run / "dashboard" / "meta.json"
        meta.write_text(meta.read_text().replace('"tiny-run"', f'"{run}"'))
    code = main(["--root", str(root), "check"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT
    assert "Traceback" not in err
    lines = err.splitlines()
    assert lines[0] == "ERROR 3 problems in the run data:"
    assert any(line.endswith("runs/tiny-unknown-flag/run.yaml:25: flags.colocat: unknown field; did you mean "
                             "'colocate'?") for line in lines)
    assert any(line.endswith("tiny-not-utf8/lab/host_memory.jsonl:1: not UTF-8 text") for line in lines)
    assert any(line.endswith("tiny-truncated-gzip/dashboard/metrics.jsonl.gz: is a truncated gzip file "
                             "(it ends mid-stream)") for line in lines)


# --- nothing outside the tree -------------------------------------------------------------------


@pytest.fixture
def tiny_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "project"
    shutil.copytree(GOOD, project / "runs")
    monkeypatch.chdir(project)
    return Path("runs")


def test_a_lab_file_linked_to_outside_is_refused_before_it_is_read(tiny_runs: Path) -> None:
    (tiny_runs / "tiny-run" / "lab" / "host_memory.jsonl").unlink()
    (tiny_runs / "tiny-run" / "lab" / "host_memory.jsonl").symlink_to("/etc/passwd")
    assert problems_in(tiny_runs) == ["runs/tiny-run/lab/host_memory.jsonl: is a symbolic link to outside the "
                                      "project; copy the file in instead"]


def test_a_run_folder_linked_to_outside_is_refused(tiny_runs: Path, tmp_path: Path) -> None:
    shutil.copytree(tiny_runs / "tiny-run", tmp_path / "elsewhere")
    (tiny_runs / "other-run").symlink_to(tmp_path / "elsewhere")
    assert problems_in(tiny_runs) == ["runs/other-run: is a symbolic link to outside the project; copy the "
                                      "file in instead"]


def test_fifo_socket_device_and_link_loop_are_refused(tiny_runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lab = tiny_runs / "tiny-run" / "lab"
    os.mkfifo(lab / "gpu_temp.jsonl")
    server = socket.socket(socket.AF_UNIX)
    with monkeypatch.context() as here:
        here.chdir(lab)  # bound by a relative name: a socket's path must fit 107 bytes, a deep TMPDIR's may not
        server.bind("sampling.jsonl")
    (lab / "held_memory.jsonl").symlink_to("held_memory.jsonl")
    (lab / "repeat_probe.jsonl").symlink_to("/dev/zero")
    try:
        found = problems_in(tiny_runs)
    finally:
        server.close()
    assert found == [
        "runs/tiny-run/lab/gpu_temp.jsonl: is a FIFO (named pipe), not a plain file; only plain files are read",
        "runs/tiny-run/lab/held_memory.jsonl: is a symbolic link loop",
        "runs/tiny-run/lab/repeat_probe.jsonl: is a symbolic link to outside the project; copy the file in instead",
        "runs/tiny-run/lab/sampling.jsonl: is a socket, not a plain file; only plain files are read",
    ]


def test_the_walk_that_checks_the_tree_lists_what_plain_files_lists(tiny_runs: Path) -> None:
    lab = tiny_runs / "tiny-run" / "lab"
    (lab / "host_memory.jsonl").rename(tiny_runs / "host_memory.keep")
    (lab / "host_memory.jsonl").symlink_to(Path("../../host_memory.keep"))  # read, but hashed as what it is
    problems, files = scan_tree(tiny_runs, tiny_runs.resolve().parent)
    assert problems == []
    assert files == [file_stat(path.relative_to(tiny_runs).as_posix(), path.stat()) for path in plain_files(tiny_runs)]
    assert "tiny-run/lab/host_memory.jsonl" not in [name for name, *_ in files] and len(files) == 8


def split_by_run(files: list[FileStat]) -> tuple[dict[str, list[FileStat]], list[str]]:
    """The plain way to scan_runs' listing and loose_files: scan_tree's files of runs/ split by their first folder."""
    listings: dict[str, list[FileStat]] = {}
    loose: list[str] = []
    for relative, *identity in files:
        run_id, _, inside = relative.partition("/")
        if inside:
            listings.setdefault(run_id, []).append((inside, *identity))  # type: ignore[arg-type]
        else:
            loose.append(relative)
    return listings, loose


def assert_listed_by_run_as_split(runs: Path) -> None:
    problems, files = scan_tree(runs, runs.resolve().parent)
    assert scan_runs(runs, runs.resolve().parent) == (problems, split_by_run(files)[0])
    assert loose_files(runs) == split_by_run(files)[1]


@pytest.mark.parametrize("runs", [ROOT / "runs", SAMPLES / "hostile", SAMPLES / "load" / "good"],
                         ids=["examples", "hostile", "good"])
def test_the_runs_are_listed_by_run_as_the_whole_listing_split(runs: Path) -> None:
    assert_listed_by_run_as_split(runs)


def test_the_runs_are_listed_by_run_as_split_whatever_runs_holds(tiny_runs: Path) -> None:
    """Links (to a file, to a run, out of the project, a loop), a FIFO, an empty run, a run of empty folders, a
    file and a __pycache__ folder beside the runs."""
    run = tiny_runs / "tiny-run"
    (run / "lab" / "host_memory.jsonl").rename(tiny_runs / "host_memory.keep")
    (run / "lab" / "host_memory.jsonl").symlink_to(Path("../../host_memory.keep"))
    (tiny_runs / "linked-run").symlink_to("tiny-run")
    (tiny_runs / "linked-file").symlink_to("host_memory.keep")
    (tiny_runs / "empty-run").mkdir()
    (tiny_runs / "hollow-run" / "a" / "b").mkdir(parents=True)
    (tiny_runs / "__pycache__").mkdir()
    (tiny_runs / "__pycache__" / "x.pyc").write_bytes(b"x")
    (run / "dashboard" / "deeper" / "still").mkdir(parents=True)
    (run / "dashboard" / "deeper" / "still" / "notes.txt").write_text("n")
    assert_listed_by_run_as_split(tiny_runs)
    os.mkfifo(run / "lab" / "fifo.jsonl")
    (tiny_runs / "outside").symlink_to("/etc")
    (tiny_runs / "loop").symlink_to("loop")
    os.mkfifo(tiny_runs / "fifo")
    problems, listings = scan_runs(tiny_runs, tiny_runs.resolve().parent)
    assert [problem.file for problem in problems] == ["runs/fifo", "runs/linked-run/lab/fifo.jsonl", "runs/loop",
                                                      "runs/outside", "runs/tiny-run"]  # reached first by linked-run
    assert sorted(listings) == ["__pycache__"] and loose_files(tiny_runs) == ["host_memory.keep"]
    assert_listed_by_run_as_split(tiny_runs)
    assert scan_runs(tiny_runs / "nowhere", tiny_runs.resolve().parent)[1] == {} == \
        split_by_run(scan_tree(tiny_runs / "nowhere", tiny_runs.resolve().parent)[1])[0]


def test_a_link_inside_the_project_is_read(tiny_runs: Path) -> None:
    lab = tiny_runs / "tiny-run" / "lab"
    (lab / "host_memory.jsonl").rename(tiny_runs / "host_memory.keep")
    (lab / "host_memory.jsonl").symlink_to(Path("../../host_memory.keep"))
    assert problems_in(tiny_runs) == []


def test_a_file_above_the_size_limit_is_refused(tiny_runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for reader in (stream_lines, stream_columns):  # the record path, and the columns that hand it such a file
        monkeypatch.setattr(reader, "STREAM_LIMIT", 200)
    assert "runs/tiny-run/lab/host_memory.jsonl: is 202 bytes, above the limit of 200 bytes for this kind of " \
           "file" in problems_in(tiny_runs)


def test_a_gzip_bomb_stops_at_the_limit(tmp_path: Path) -> None:
    import gzip

    bomb = tmp_path / "x.jsonl.gz"
    bomb.write_bytes(gzip.compress(b"\n" * 5_000_000))
    with pytest.raises(InputProblem) as caught:
        _files.read_bytes(bomb, limit=1_000_000)
    assert caught.value.problem.message == "unpacks to more than the limit of 1,000,000 bytes for this kind of file"


def test_docs_are_read_without_following_a_link_out_of_the_project(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    root = copy_project(tmp_path / "project")
    (root / "docs" / "99-passwd.md").symlink_to("/etc/passwd")
    os.mkfifo(root / "docs" / "98-fifo.md")
    assert main(["--root", str(root), "check"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "root:" not in err and "Traceback" not in err
    assert "docs/98-fifo.md: is a FIFO (named pipe), not a plain file; only plain files are read" in err
    assert "docs/99-passwd.md: is a symbolic link to outside the project; copy the file in instead" in err


def test_a_chapter_that_is_not_utf8_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = copy_project(tmp_path / "project")
    chapter = root / "docs" / "05-heat.md"
    chapter.write_bytes(chapter.read_bytes().replace(b"heat", b"h\xe9at", 1))
    assert main(["--root", str(root), "check"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "docs/05-heat.md:" in err and ": not UTF-8 text" in err and "Traceback" not in err


# --- a non-finite value is never dropped silently -----------------------------------------------


def test_nan_is_kept_and_a_check_reading_it_fails_naming_run_and_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(HOSTILE / "bare-nan-is-kept")
    summary = summarise_runs(Path("."), None)["tiny-run"]
    assert summary.facts["non_finite"]["train/grad_norm"] == {"0": "NaN", "1": "-Infinity"}
    with pytest.raises(MissingValue) as caught:
        step_values(summary, "train/grad_norm")
    assert (caught.value.run, str(caught.value)) == ("tiny-run", (
        "run tiny-run has no finite train/grad_norm (it logged train/grad_norm = NaN at step 0, "
        "train/grad_norm = -Infinity at step 1)"))


# --- the cache holds data only ------------------------------------------------------------------


def test_the_cache_holds_only_parquet_and_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(GOOD)
    summarise_runs(Path("."), tmp_path / "cache")
    files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert files and {p.suffix for p in files} == {".parquet", ".json"}


@pytest.mark.parametrize("damage", ["flip a byte of a table", "change entry.json", "truncate entry.json"])
def test_a_damaged_cache_entry_is_discarded_with_a_warning(damage: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(GOOD)
    cache = tmp_path / "cache"
    first = summarise_runs(Path("."), cache)["tiny-run"]
    (entry,) = [path for path in cache.iterdir() if path.is_dir()]
    if damage == "flip a byte of a table":
        table = sorted(entry.glob("*.parquet"))[0]
        data = bytearray(table.read_bytes())
        data[len(data) // 2] ^= 0xFF
        table.write_bytes(bytes(data))
    elif damage == "change entry.json":
        text = (entry / "entry.json").read_text()
        (entry / "entry.json").write_text(text.replace('"provenance": "example"', '"provenance": "measured"'))
    else:
        (entry / "entry.json").write_text("{")
    warnings: list[str] = []
    again = summarise_runs(Path("."), cache, warnings=warnings)["tiny-run"]
    assert len(warnings) == 1
    assert warnings[0].startswith("build/cache: a damaged cache entry was discarded and the run read again")
    assert again.config["provenance"] == "example"
    assert again.steps.equals(first.steps)
    assert summarise_runs(Path("."), cache, warnings=(later := [])) and later == []  # rebuilt, trusted again


def test_a_cached_summary_equals_a_fresh_one(tmp_path: Path) -> None:
    fresh = summarise_runs(ROOT / "runs", tmp_path / "cache")
    cached = summarise_runs(ROOT / "runs", tmp_path / "cache")
    for run_id, summary in fresh.items():
        other = cached[run_id]
        assert other.config == summary.config and other.facts == summary.facts
        for name in ("steps", "phases", "events"):
            assert getattr(other, name).equals(getattr(summary, name)), (run_id, name)
        assert other.series.keys() == summary.series.keys()
        for name, frame in summary.series.items():
            assert other.series[name].equals(frame), (run_id, name)


# --- the manual's own files ----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ('edition: "2026.13"\n', 'edition.yml:1: edition: expected YEAR.MONTH with a real month, e.g. "2026.10", '
                             "found '2026.13'"),
    ("edition: 2026.10\n", 'edition.yml:1: edition: expected YEAR.MONTH with a real month, e.g. "2026.10", '
                           "found 2026.1"),
    ('edition: "٢٠٢٦.10"\n', 'edition.yml:1: edition: expected YEAR.MONTH with a real month, e.g. "2026.10", '
                             "found '٢٠٢٦.10'"),
    ('edition: "２０２６.１０"\n', 'edition.yml:1: edition: expected YEAR.MONTH with a real month, e.g. "2026.10", '
                               "found '２０２６.１０'"),
    ('edition: "2026.10"\ndate: "２０２６-10-15"\n', "edition.yml:2: date: expected a real date written YYYY-MM-DD, "
                                                  "found '２０２６-10-15'"),
    ('edition: "2026.10"\ndate: 2026-10-32\n', "edition.yml:2: date: expected a real date written YYYY-MM-DD, "
                                               "found '2026-10-32'"),
    ('edition: "2026.10"\nedition: "2026.11"\n', "edition.yml:2: edition: given twice (first on line 1); YAML "
                                                 "would keep only the last one"),
    ('edition: "2026.10"\neditoin: x\n', "edition.yml:2: editoin: unknown field; did you mean 'edition'?"),
])
def test_edition_file_errors(text: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("edition.yml").write_text(text)
    with pytest.raises(EditionFileError) as caught:
        load_stamp(Path("edition.yml"))
    assert expected in [str(problem) for problem in caught.value.problems]


# --- random input: nothing but the build's own input error ---------------------------------------

# FUZZ_EXAMPLES=5000 searches harder than the default run of the suite.
FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "150")), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)
yaml_text = st.text(alphabet=string.printable + "äé\u2028\ufeff", max_size=200)


@FUZZ
@given(data=st.binary(max_size=300), stream=st.sampled_from(sorted(schemas_dump.STREAM_RECORDS)),
       gz=st.booleans())
def test_random_bytes_in_a_stream_file(data: bytes, stream: str, gz: bool, tmp_path_factory: pytest.TempPathFactory
                                       ) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / f"{stream}.jsonl{'.gz' if gz else ''}"
    path.write_bytes(data)
    problems: list[Problem] = []
    records = list(stream_lines._read_stream(path, stream, problems, []))
    assert all(isinstance(problem, Problem) for problem in problems)
    assert all(isinstance(record.data, dict) for record in records)


@FUZZ
@given(value=json_values, stream=st.sampled_from(sorted(schemas_dump.STREAM_RECORDS)))
def test_random_json_against_every_stream_schema(value: object, stream: str) -> None:
    text = json.dumps(value)
    problems: list[Problem] = []
    try:
        parsed = stream_lines._parse_json(text, "f.jsonl", 1)
    except InputProblem:
        return
    record, found = schemas_dump.validate_record(stream, parsed, "f.jsonl", 1) if isinstance(parsed, dict) \
        else (None, [Problem("f.jsonl", 1, None, "expected a JSON object")])
    problems += found
    assert (record is None) == bool(problems)


@FUZZ
@given(text=yaml_text)
def test_random_yaml_against_every_yaml_schema(text: str) -> None:
    try:
        doc = parse_yaml(text, "f.yml")
    except InputProblem as error:
        assert error.problem.file == "f.yml"
        return
    for schema in (schemas_run.RunYaml, schemas_manual.EditionYaml):
        model, problems = schemas.validate(schema, doc.value, "f.yml", doc.line_of)
        assert (model is None) == bool(problems)


@FUZZ
@given(body=yaml_text)
def test_random_figure_blocks(body: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    docs = tmp_path_factory.mktemp("docs")
    (docs / "01-x.md").write_text(f"# One\n\n```figure\n{body}\n```\n", encoding="utf-8")
    try:
        read_blocks(docs, ROOT / "figures")
    except ChapterError as error:
        assert all(problem.file.endswith("01-x.md") for problem in error.problems)


def test_read_small_keeps_what_open_input_keeps_of_a_file_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b'{"step": 1}\n' * 100)
    with _files.hashing_reads() as seen:
        assert _files.read_small(path, 10_000) == path.read_bytes()
    by_small = seen[str(path)]
    with _files.hashing_reads() as seen, _files.open_input(path) as handle:
        assert handle.read(10_000) == path.read_bytes()
    assert by_small == seen[str(path)] and by_small.identity is not None


def test_read_small_leaves_a_large_file_a_fifo_and_an_empty_one_as_it_should(tmp_path: Path) -> None:
    large, pipe, empty = tmp_path / "large.jsonl", tmp_path / "pipe.jsonl", tmp_path / "empty.jsonl"
    large.write_bytes(b"x" * 100)
    os.mkfifo(pipe)  # opened to wait for a writer, it would hang the test
    empty.write_bytes(b"")
    assert _files.read_small(large, 100) is None and _files.read_small(large, 101) == b"x" * 100
    assert _files.read_small(pipe, 100) is None
    assert _files.read_small(empty, 100) == b""


def test_read_small_gives_a_file_that_grew_after_it_was_sized_to_the_reader_of_blocks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines written between the file's stat and its read: read_small declines, and open_input reads the file to
    its end (tests/ingest/test_columnar.py), not to the size it had."""
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b'{"step": 1}\n')
    real_fstat, grown = os.fstat, []

    def grows_once_sized(handle: int) -> os.stat_result:
        info = real_fstat(handle)
        if not grown:
            grown.append(path.write_bytes(b'{"step": 1}\n{"step": 2}\n'))
        return info

    monkeypatch.setattr(_files.os, "fstat", grows_once_sized)
    with _files.hashing_reads() as seen:
        assert _files.read_small(path, 10_000) is None
    assert grown and seen == {}
