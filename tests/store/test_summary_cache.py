"""The build's state read back from disk is data to check, never trusted: a damaged, deeply nested or hand-made
memo, validated-runs file or cache entry is discarded (with a warning where a person should know), and the run
read again. Nothing in it is executed, and nothing in it crashes the build."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from build_tools.store import fingerprint, run_hash, summary_cache
from build_tools.summarise.summary import summarise_runs
from tests.conftest import SAMPLES

GOOD = SAMPLES / "load" / "good"
DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.fixture()
def warm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, str]:
    """A summarised copy of the good sample and its cache; and the run's input hash."""
    monkeypatch.setattr(fingerprint, "SETTLED_NS", -1)
    runs, cache = tmp_path / "runs", tmp_path / "cache"
    shutil.copytree(GOOD, runs)
    digest = summarise_runs(runs, cache)["tiny-run"].source_hash
    return runs, cache, digest


@pytest.mark.parametrize("memo", [DEEP, b'{"x": 1, "y": [1], "z": {"stats": 5}}', b"\xff", b"[]"])
def test_a_damaged_memo_is_no_memo(warm: tuple[Path, Path, str], memo: bytes) -> None:
    runs, cache, digest = warm
    (cache / run_hash.MEMO).write_bytes(memo)
    assert summarise_runs(runs, cache)["tiny-run"].source_hash == digest


def _rehashed_validated(cache: Path, runs_value: object) -> None:
    """validated.json as a hostile hand would write it: its hash recomputed over what it holds."""
    text = json.dumps({"format": summary_cache.FORMAT, "runs": runs_value}).encode()
    (cache / summary_cache.VALIDATED).write_bytes(hashlib.sha256(text).hexdigest().encode() + b"\n" + text)


@pytest.mark.parametrize("record", [5, {"digest": 5}, {"digest": "x", "config": [], "warnings": [], "start_ts": 0,
                                                       "end_ts": 1}, {"digest": "x", "config": {}, "warnings": [1],
                                                                      "start_ts": 0, "end_ts": True}])
def test_a_validated_record_of_another_shape_is_dropped(tmp_path: Path, record: object) -> None:
    _rehashed_validated(tmp_path, {"tiny-run": record})
    assert summary_cache.read_validated(tmp_path) == {}


FACTS = {"logged": True, "steps": 3, "present": 2, "low": 0.0, "high": 1.5, "zeros": 1, "first": 0.0, "first_step": 0,
         "non_finite": {"2": "NaN"}}
RECORD = {"digest": "x", "config": {}, "warnings": [], "start_ts": 0, "end_ts": 1.5, "steps": 3,
          "facts_format": summary_cache.FACTS_FORMAT, "metrics": {"train/grad_norm": FACTS}}


def test_a_validated_record_with_its_facts_is_kept_as_written(tmp_path: Path) -> None:
    _rehashed_validated(tmp_path, {"tiny-run": RECORD})
    assert summary_cache.read_validated(tmp_path) == {"tiny-run": RECORD}
    facts = summary_cache.facts_from_record(FACTS)
    assert (facts.present, facts.high, facts.non_finite) == (2, 1.5, {"2": "NaN"})
    assert summary_cache.facts_record(facts) == FACTS


def test_validated_json_read_after_this_process_wrote_it_is_what_parsing_gives(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The file this process wrote last is read back without parsing (make serve's rebuild after a title changed):
    the records equal json's reading of the same bytes, a record held from the reading before is the same object,
    one not well formed is dropped all the same, and a file of other bytes is parsed."""
    kept = {**RECORD, "digest": "kept"}
    _rehashed_validated(tmp_path, {"kept-run": kept})
    read = summary_cache.read_validated(tmp_path)
    new = {**RECORD, "digest": "new", "warnings": ("a tuple",), "metrics": {"m": {**FACTS, "non_finite": {2: "NaN"}}}}
    broken = {**RECORD, "steps": -1}
    summary_cache.write_validated(tmp_path, {"kept-run": read["kept-run"], "new-run": new, "broken": broken}, read)
    parsed: list[bytes] = []
    loads = json.loads
    monkeypatch.setattr(summary_cache.json, "loads", lambda text: parsed.append(text) or loads(text))
    held = summary_cache.read_validated(tmp_path)
    assert [text for text in parsed if len(text) > 500] == []  # the file's body was not parsed
    assert held["kept-run"] is read["kept-run"] and "broken" not in held
    monkeypatch.setattr(summary_cache, "_written", None)
    assert held == summary_cache.read_validated(tmp_path)  # parsing the file gives the same
    assert held["new-run"]["warnings"] == ["a tuple"] and held["new-run"]["metrics"]["m"]["non_finite"] == {"2": "NaN"}
    _rehashed_validated(tmp_path, {"kept-run": kept})  # other bytes
    assert summary_cache.read_validated(tmp_path) == {"kept-run": kept}


@pytest.mark.parametrize("change", [
    {"steps": None, "metrics": None, "facts_format": None},  # a record written before validation took facts
    {"facts_format": summary_cache.FACTS_FORMAT + 1}, {"steps": -1}, {"steps": 2.5}, {"metrics": []},
    {"metrics": {"m": {**FACTS, "present": -1}}}, {"metrics": {"m": {**FACTS, "logged": 1}}},
    {"metrics": {"m": {**FACTS, "first_step": True}}}, {"metrics": {"m": {**FACTS, "low": "0"}}},
    {"metrics": {"m": {**FACTS, "non_finite": {"2": 1}}}}, {"metrics": {"m": {**FACTS, "extra": 1}}},
    {"metrics": {"m": {key: value for key, value in FACTS.items() if key != "zeros"}}},
])
def test_a_validated_record_whose_facts_are_of_another_shape_is_dropped(tmp_path: Path, change: dict) -> None:
    record = {key: value for key, value in {**RECORD, **change}.items() if value is not None}
    _rehashed_validated(tmp_path, {"tiny-run": record, "kept-run": RECORD})
    assert summary_cache.read_validated(tmp_path) == {"kept-run": RECORD}


def test_a_deeply_nested_validated_file_is_discarded_in_one_warning(warm: tuple[Path, Path, str]) -> None:
    runs, cache, digest = warm
    (cache / summary_cache.VALIDATED).write_bytes(hashlib.sha256(DEEP).hexdigest().encode() + b"\n" + DEEP)
    warnings: list[str] = []
    assert summarise_runs(runs, cache, warnings=warnings)["tiny-run"].source_hash == digest
    assert [w.split(":")[0] for w in warnings] == ["build/cache"]


def test_a_deeply_nested_cache_entry_is_discarded_and_the_run_read_again(warm: tuple[Path, Path, str]) -> None:
    runs, cache, digest = warm
    entry = summary_cache.entry_dir(cache, "tiny-run", digest) / "entry.json"
    entry.write_bytes(DEEP)
    warnings: list[str] = []
    again = summarise_runs(runs, cache, warnings=warnings)["tiny-run"]
    assert again.source_hash == digest and again.steps is not None
    assert len(warnings) == 1 and warnings[0].startswith("build/cache: a damaged cache entry was discarded")


# --- an entry written a table at a time, each table in the writer thread -------------------------------------


def test_a_table_is_written_in_the_writer_thread_while_the_caller_goes_on(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    go_on = threading.Event()
    real = summary_cache._write_frame

    def held_back(frame: pd.DataFrame, file: Path) -> None:
        assert go_on.wait(10)
        real(frame, file)

    monkeypatch.setattr(summary_cache, "_write_frame", held_back)
    frame = pd.DataFrame({"ts": [1.0, 2.0], "gib": [0.5, 0.25]})
    with summary_cache.EntryWriter(tmp_path, "run-a") as entry:
        entry.add("series/held_memory", frame)  # returns while the table is still unwritten
        assert not any(entry.tmp.iterdir())
        go_on.set()
        entry.commit("d" * 20, {})
    found = summary_cache.read_entry(tmp_path, "run-a", "d" * 20)
    assert found is not None
    assert found[0](lambda name: True)["series/held_memory"].equals(frame)


def test_a_table_that_fails_to_be_written_fails_the_commit_and_leaves_no_entry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(frame: pd.DataFrame, file: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(summary_cache, "_write_frame", failing)
    with pytest.raises(OSError, match="No space left"), summary_cache.EntryWriter(tmp_path, "run-a") as entry:
        entry.add("series/held_memory", pd.DataFrame({"ts": [1.0]}))
        entry.commit("d" * 20, {})
    assert list(tmp_path.iterdir()) == []


def test_an_entry_left_while_a_table_is_written_is_removed_once_written(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A run with problems drops its entry: the folder goes only after the writer thread is done with it."""
    real, written = summary_cache._write_frame, threading.Event()

    def slow(frame: pd.DataFrame, file: Path) -> None:
        time.sleep(0.3)
        real(frame, file)
        written.set()

    monkeypatch.setattr(summary_cache, "_write_frame", slow)
    with summary_cache.EntryWriter(tmp_path, "run-a") as entry:
        entry.add("series/held_memory", pd.DataFrame({"ts": [1.0]}))
    assert written.is_set() and list(tmp_path.iterdir()) == []


def test_the_same_validated_file_read_again_is_checked_once_and_reads_the_same(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """make serve's rebuilds read validated.json each time: the same bytes give the same records, their shapes
    checked once a process; other bytes (a record dropped, another added) are checked afresh."""
    checked: list[object] = []
    real = summary_cache._well_formed
    monkeypatch.setattr(summary_cache, "_well_formed", lambda record: checked.append(record) or real(record))
    _rehashed_validated(tmp_path, {"tiny-run": RECORD, "bad-run": {"digest": 5}})
    first = summary_cache.read_validated(tmp_path)
    assert first == {"tiny-run": RECORD} and len(checked) == 2
    assert summary_cache.read_validated(tmp_path) == first and len(checked) == 2
    _rehashed_validated(tmp_path, {"tiny-run": {"digest": 5}, "other-run": RECORD})
    assert summary_cache.read_validated(tmp_path) == {"other-run": RECORD} and len(checked) == 4
