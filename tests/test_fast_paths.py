"""Every fast path gives exactly what the plain path gives, on every example run and every sample run (the
scenarios of tests/samples/hostile/ and tests/samples/load/, collected from the folders: a new one is covered).

- Columnar reading (a stream read as columns) against line by line: the records, problems and warnings are
  tests/commands/test_one_path.py's; here the summary and what validating keeps, each stream read either way.
- Memoised validation: a run nobody reads, replayed from its record in the cache (validated.json), against the
  run validated afresh: the same ValidatedRun, the same problems and date checks; validating against summarising;
  and the memo of input hashes against hashing afresh.
- Cached summaries: a summary read back from the cache (and one that crossed the Ray wire, in the cache's format)
  against the summary made afresh: every frame with its dtypes, index and column order, the configuration and
  facts in their order, warnings, series and step axes; and `check` from a warm cache, or after one run changed
  (the others from the cache), against a cold one.
- The replayed check (`make check` with nothing changed prints its last report, store/uptodate.py) against a
  fresh check: stdout, stderr and exit code; a check with warnings or a failing claim is never replayed, and
  says the same again.

"Afresh" is the plain path: summarise_runs with no cache (no memo, no records, no summaries).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import io
import json
import math
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from build_tools.build import check
from build_tools.cli import main
from build_tools.core._exceptions import EXIT_BAD_INPUT, EXIT_CLAIM_FAILED, EXIT_MARGIN, RunDataError
from build_tools.core._settings import Settings
from build_tools.core._types import RunSummary, ValidatedRun
from build_tools.ingest import _columnar, load
from build_tools.store import run_hash, summary_cache
from build_tools.summarise import summary_metrics
from build_tools.summarise.summary import Job, Wanted, Written, _read_run, load_and_summarise, summarise_runs
from tests.conftest import ROOT, SAMPLES, copy_project

EXAMPLES = sorted(path.name for path in (ROOT / "runs").iterdir() if path.is_dir())
# Every sample scenario: a runs folder of its own (tests/samples/hostile/README.md), and each run folder in it.
SCENARIOS = sorted(f"{kind}/{folder.name}" for kind in ("hostile", "load")
                   for folder in (SAMPLES / kind).iterdir() if folder.is_dir())
SAMPLE_RUNS = sorted((scenario, run.name) for scenario in SCENARIOS
                     for run in (SAMPLES / scenario).iterdir() if run.is_dir())
NOTHING = Wanted()  # no figure or table reads any run: each is validated, not summarised
EDITION_DATE = dt.date(2026, 10, 15)  # tests/test_hostile.py's: the samples ran in September 2026
EARLY = dt.date(2026, 1, 1)  # an edition dated before every example run ends: each fails its date check


# --- exactly: the same types, keys in the same order, frames to their dtypes and index ------------------------


def differences(fast: Any, plain: Any, where: str = "") -> list[str]:
    """Where two values differ, strictly: the same types (a tuple is not a list, an integer not a float), a
    mapping's keys in the same order, NaN the same as NaN; frames compared as `frame_differences` says."""
    if type(fast) is not type(plain):
        return [f"{where}: {type(fast).__name__} {fast!r:.60}, afresh {type(plain).__name__} {plain!r:.60}"]
    if isinstance(plain, pd.DataFrame):
        return frame_differences(fast, plain, where)
    if isinstance(plain, dict):
        if list(fast) != list(plain):
            return [f"{where}: keys {list(fast)}, afresh {list(plain)}"]
        return [found for key in plain for found in differences(fast[key], plain[key], f"{where}.{key}")]
    if isinstance(plain, list | tuple):
        if len(fast) != len(plain):
            return [f"{where}: {len(fast)} items, afresh {len(plain)}"]
        return [found for at, (one, other) in enumerate(zip(fast, plain, strict=True))
                for found in differences(one, other, f"{where}[{at}]")]
    if isinstance(plain, float) and math.isnan(plain) and math.isnan(fast):
        return []
    return [] if fast == plain else [f"{where}: {fast!r:.80}, afresh {plain!r:.80}"]


def frame_differences(fast: pd.DataFrame, plain: pd.DataFrame, where: str) -> list[str]:
    """The same columns in the same order, dtypes, index (its type, dtype and names too: a RangeIndex is not an
    index of integers) and values; each value of a column of objects compared as `differences` does."""
    if list(fast.columns) != list(plain.columns):
        return [f"{where}: columns {list(fast.columns)}, afresh {list(plain.columns)}"]
    found = [f"{where}.{name}: dtype {one}, afresh {other}"
             for name, one, other in zip(plain.columns, fast.dtypes, plain.dtypes, strict=True) if one != other]
    if (type(fast.index), fast.index.dtype, fast.index.names) != (type(plain.index), plain.index.dtype,
                                                                  plain.index.names) \
            or not fast.index.equals(plain.index):
        found.append(f"{where}: index {fast.index!r:.80}, afresh {plain.index!r:.80}")
    if found:
        return found
    if not fast.equals(plain):
        return [f"{where}.{name}: values differ" for name in plain.columns if not fast[name].equals(plain[name])]
    for name in plain.columns[[pd.api.types.is_object_dtype(dtype) for dtype in plain.dtypes]]:
        for at, (one, other) in enumerate(zip(fast[name], plain[name], strict=True)):
            if not (type(one) is str and type(other) is str):  # text equals() compared already
                found += differences(one, other, f"{where}.{name}[{at}]")
                if found:
                    return found
    return found


def summary_differences(fast: RunSummary, plain: RunSummary, *, besides: tuple[str, ...] = ()) -> list[str]:
    """Every field of the summary (a field added later is compared too), but those `besides`."""
    return [found for field in dataclasses.fields(RunSummary) if field.name not in besides
            for found in differences(getattr(fast, field.name), getattr(plain, field.name), field.name)]


def run_differences(fast: RunSummary | ValidatedRun, plain: RunSummary | ValidatedRun) -> list[str]:
    """Two summaries' differences, or two validated runs' (every field of ValidatedRun)."""
    if isinstance(plain, RunSummary) and isinstance(fast, RunSummary):
        return summary_differences(fast, plain)
    return [found for field in dataclasses.fields(ValidatedRun)
            for found in differences(getattr(fast, field.name), getattr(plain, field.name), field.name)]


def as_validated(summary: RunSummary | ValidatedRun) -> dict[str, Any]:
    """What validating a run keeps, as its summary gives it."""
    assert isinstance(summary, RunSummary)
    return {"run_id": summary.run_id, "config": summary.config, "start_ts": summary.facts["start_ts"],
            "end_ts": summary.facts["end_ts"], "warnings": summary.warnings}


def kept(validated: RunSummary | ValidatedRun) -> dict[str, Any]:
    """What validating a run kept (of a ValidatedRun's fields, those a summary has too)."""
    assert isinstance(validated, ValidatedRun)
    return {name: getattr(validated, name) for name in ("run_id", "config", "start_ts", "end_ts", "warnings")}


# --- the stage three ways: afresh, into an empty cache, from it ----------------------------------------------


@dataclasses.dataclass
class Outcome:
    """What summarise_runs gave: the problem lines it raised (none when it raised nothing), the runs it summarised
    and those it only validated, and the warnings it handed back."""

    problems: list[str]
    runs: dict[str, RunSummary | ValidatedRun]
    warnings: list[str]


def outcome(runs: Path, cache: Path | None, **options: Any) -> Outcome:
    validated: dict[str, ValidatedRun] = {}
    warnings: list[str] = []
    try:
        summaries = summarise_runs(runs, cache, warnings=warnings, validated=validated, **options)
    except RunDataError as error:
        return Outcome([str(problem) for problem in error.problems], {}, warnings)
    return Outcome([], {**summaries, **validated}, warnings)


@dataclasses.dataclass
class Ways:
    plain: Outcome  # no cache at all
    cold: Outcome  # into an empty cache (each run hashed as it is read, then read back from the cache)
    warm: Outcome  # from that cache: the memo, the records of the runs validated, the summaries
    cache: Path
    loaded: list[str]  # the runs the warm pass loaded (none: it took every run from the cache)


@contextlib.contextmanager
def loads_counted() -> Iterator[list[str]]:
    """The run folders load.load_run reads meanwhile (in this process: fewer runs than a pool is started for)."""
    found: list[str] = []
    real = load.load_run
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(load, "load_run", lambda root, *args, **kw: found.append(root.name) or real(root, *args, **kw))
        yield found


def three_ways(runs: Path, cache: Path, **options: Any) -> Ways:
    plain, cold = outcome(runs, None, **options), outcome(runs, cache, **options)
    with loads_counted() as loaded:
        warm = outcome(runs, cache, **options)
    return Ways(plain, cold, warm, cache, loaded)


def assert_the_same(ways: Ways, run_ids: list[str]) -> None:
    """The cold and warm passes give what the plain one gives: problems, warnings, and each run."""
    assert ways.cold.problems == ways.plain.problems and ways.warm.problems == ways.plain.problems
    assert ways.cold.warnings == ways.plain.warnings and ways.warm.warnings == ways.plain.warnings
    assert list(ways.warm.runs) == list(ways.cold.runs) == list(ways.plain.runs)
    for run_id in run_ids:
        for fast in (ways.cold, ways.warm):
            assert run_differences(fast.runs[run_id], ways.plain.runs[run_id]) == [], run_id


@pytest.fixture(scope="session")
def examples_summarised(tmp_path_factory: pytest.TempPathFactory) -> Ways:
    return three_ways(ROOT / "runs", tmp_path_factory.mktemp("fast-summaries"))


@pytest.fixture(scope="session")
def examples_validated(tmp_path_factory: pytest.TempPathFactory) -> Ways:
    return three_ways(ROOT / "runs", tmp_path_factory.mktemp("fast-validated"), wanted=NOTHING)


# --- cached summaries ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("run_id", EXAMPLES)
def test_a_cached_summary_is_the_summary_made_afresh(run_id: str, examples_summarised: Ways) -> None:
    ways = examples_summarised
    assert ways.plain.problems == [] and ways.loaded == []  # the warm pass read every summary from the cache
    assert_the_same(ways, [run_id])
    assert ways.warm.runs[run_id].source_hash == run_hash.input_hash(ROOT / "runs" / run_id)


def over_the_wire(summary: RunSummary) -> RunSummary:
    """A summary as a Ray task sends it back (store/summary_wire.py: in the cache's format)."""
    from build_tools.store import summary_wire  # imported here: no other test of this file needs the wire

    return summary_wire.decode(summary_wire.encode(summary))


@pytest.mark.parametrize("run_id", EXAMPLES)
def test_a_summary_that_crossed_the_ray_wire_is_the_summary_made_afresh(run_id: str,
                                                                         examples_summarised: Ways) -> None:
    plain = examples_summarised.plain.runs[run_id]
    assert isinstance(plain, RunSummary)
    # The wire carries no input hash: the driver sets it (the one it hashed).
    assert summary_differences(over_the_wire(plain), plain, besides=("source_hash",)) == []


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_sample_summarised_from_the_cache_is_what_it_is_afresh(scenario: str, tmp_path: Path) -> None:
    """Its summary, or its problems: a run refused once is refused again, whatever the cache holds (a run whose
    only problem its summary found, a step logged twice, passed the second check)."""
    ways = three_ways(SAMPLES / scenario, tmp_path / "cache", latest=EDITION_DATE)
    assert_the_same(ways, sorted(ways.plain.runs))
    assert ways.plain.problems or ways.loaded == []
    for summary in ways.plain.runs.values():
        assert isinstance(summary, RunSummary)
        assert summary_differences(over_the_wire(summary), summary, besides=("source_hash",)) == []
    # The memo holds every run's input hash (a run refused too), the one hashing afresh gives.
    memo = run_hash.read_memo(ways.cache)
    assert memo is not None
    runs = sorted(run for run in (SAMPLES / scenario).iterdir() if run.is_dir())
    assert sorted(entry["digest"] for entry in memo.values()) == sorted(run_hash.input_hash(run) for run in runs)


def entry_files(cache: Path) -> dict[str, bytes]:
    """Every file of the cache's one entry, by name, as bytes."""
    (entry,) = [folder for folder in cache.iterdir() if folder.is_dir()]
    return {file.name: file.read_bytes() for file in sorted(entry.iterdir())}


def entries_both_ways(run: Path, tmp_path: Path) -> tuple[dict[str, bytes], dict[str, bytes]] | None:
    """A run's cache entry as its worker writes it (each sampled series written as soon as its stream is read:
    summary._read_run) and as the summary made whole writes it; None for a run with problems (no entry)."""
    digest = run_hash.input_hash(run)
    result, problems, _ = _read_run(Job(run, True, None, digest, tmp_path / "streamed"))
    whole, whole_problems = load_and_summarise(run)
    assert problems == whole_problems
    if whole is None:
        assert result is None and list((tmp_path / "streamed").glob("*")) == []  # nothing half-written
        return None
    assert isinstance(result, Written)
    summary_cache.write_entry(tmp_path / "whole", run.name, digest, *summary_cache.summary_parts(whole))
    return entry_files(tmp_path / "streamed"), entry_files(tmp_path / "whole")


@pytest.mark.parametrize("way", ["as built", "columns", "batches"])
@pytest.mark.parametrize("run_id", EXAMPLES)
def test_a_cache_entry_written_as_the_run_is_read_is_the_entry_of_the_whole_summary(
        run_id: str, way: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if way != "as built":  # every stream that can be read as columns is (as a long run's telemetry is) ...
        monkeypatch.setattr(_columnar, "FAST_FROM_BYTES", 0)
    if way == "batches":  # ... and in many batches (its files joined up to a batch, a large one read in several)
        monkeypatch.setattr(_columnar, "BATCH_BYTES", 4096)
    found = entries_both_ways(ROOT / "runs" / run_id, tmp_path)
    assert found is not None
    streamed, whole = found
    assert any(name.endswith(".parquet") for name in whole)
    assert streamed == whole


@pytest.mark.parametrize(("scenario", "run_id"), SAMPLE_RUNS)
def test_a_sample_cache_entry_written_as_it_is_read_is_the_entry_of_the_whole_summary(
        scenario: str, run_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SAMPLES / scenario)  # problems name files as test_hostile's expected.txt does
    found = entries_both_ways(Path(run_id), tmp_path)
    if found is not None:
        assert found[0] == found[1]


# --- memoised validation and the memo of input hashes -------------------------------------------------------


def from_summaries(cache: Path, runs: Path, copy: Path, **options: Any) -> Outcome:
    """The runs only validated, from the records that summarising them left in `cache` (a copy of it): none
    loaded."""
    shutil.copytree(cache, copy)
    with loads_counted() as loaded:
        found = outcome(runs, copy, wanted=NOTHING, **options)
    assert loaded == [] or found.problems
    return found


@pytest.fixture(scope="session")
def examples_validated_from_summaries(tmp_path_factory: pytest.TempPathFactory, examples_summarised: Ways) -> Outcome:
    return from_summaries(examples_summarised.cache, ROOT / "runs", tmp_path_factory.mktemp("fast-left") / "cache")


@pytest.mark.parametrize("run_id", EXAMPLES)
def test_a_run_replayed_from_its_record_is_the_run_validated_afresh(run_id: str, examples_validated: Ways,
                                                                     examples_summarised: Ways,
                                                                     examples_validated_from_summaries: Outcome
                                                                     ) -> None:
    ways = examples_validated
    assert ways.plain.problems == [] and ways.loaded == []  # the warm pass validated no run again
    assert all(isinstance(run, ValidatedRun) for run in ways.warm.runs.values())
    assert_the_same(ways, [run_id])
    # ... and validating keeps what summarising gives; the record a summary left is the run validated afresh.
    assert differences(kept(ways.plain.runs[run_id]), as_validated(examples_summarised.plain.runs[run_id])) == []
    left = examples_validated_from_summaries
    assert (left.problems, left.warnings) == (ways.plain.problems, ways.plain.warnings)
    assert run_differences(left.runs[run_id], ways.plain.runs[run_id]) == []


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_sample_validated_from_its_record_is_what_it_is_afresh(scenario: str, tmp_path: Path) -> None:
    """The same problems (dates checked against the edition's too) and warnings, summarised or only validated."""
    ways = three_ways(SAMPLES / scenario, tmp_path / "cache", wanted=NOTHING, latest=EDITION_DATE)
    assert_the_same(ways, sorted(ways.plain.runs))
    assert ways.plain.problems or ways.loaded == []
    summarised = outcome(SAMPLES / scenario, None, latest=EDITION_DATE)
    assert ways.plain.problems == summarised.problems
    assert ways.plain.warnings == [line for run in summarised.runs.values() for line in run.warnings]
    for run_id, summary in summarised.runs.items():
        assert differences(kept(ways.plain.runs[run_id]), as_validated(summary)) == []
    # The records a summarising check left, replayed when nothing reads the runs: the runs validated afresh.
    summaries_cache = tmp_path / "summaries"
    outcome(SAMPLES / scenario, summaries_cache, latest=EDITION_DATE)
    left = from_summaries(summaries_cache, SAMPLES / scenario, tmp_path / "left", latest=EDITION_DATE)
    assert (left.problems, left.warnings, list(left.runs)) == (ways.plain.problems, ways.plain.warnings,
                                                                list(ways.plain.runs))
    for run_id, run in ways.plain.runs.items():
        assert run_differences(left.runs[run_id], run) == []


@pytest.fixture(scope="session")
def examples_dated(tmp_path_factory: pytest.TempPathFactory, examples_validated: Ways) -> dict[str, Outcome]:
    """Every example checked against an edition dated before it ends: validated afresh, from the records of
    `examples_validated` (a copy of its cache), and summarised afresh."""
    cache = tmp_path_factory.mktemp("fast-dated") / "cache"
    shutil.copytree(examples_validated.cache, cache)
    with loads_counted() as loaded:
        warm = outcome(ROOT / "runs", cache, wanted=NOTHING, latest=EARLY)
    assert loaded == []
    return {"afresh": outcome(ROOT / "runs", None, wanted=NOTHING, latest=EARLY), "from records": warm,
            "summarised": outcome(ROOT / "runs", None, latest=EARLY)}


@pytest.mark.parametrize("run_id", EXAMPLES)
def test_the_dates_of_a_run_replayed_from_its_record_are_checked_as_afresh(run_id: str,
                                                                           examples_dated: dict[str, Outcome]) -> None:
    found = {way: [line for line in ways.problems if f"/{run_id}/" in line] for way, ways in examples_dated.items()}
    assert len(found["afresh"]) == 1 and "after the edition's date 2026-01-01" in found["afresh"][0]
    assert found["from records"] == found["afresh"] == found["summarised"]


# The sample runs that load (a hostile scenario that must still load has an empty expected.txt), warnings and all.
LOADING = [(scenario, run_id) for scenario, run_id in SAMPLE_RUNS if scenario == "load/good" or (
    scenario.startswith("hostile/") and not (SAMPLES / scenario / "expected.txt").read_text(encoding="utf-8").strip())]


@pytest.mark.parametrize("wanted", [NOTHING, None], ids=["validated", "summarised"])
def test_runs_read_again_beside_runs_from_the_cache_are_told_in_the_order_of_the_runs(wanted: Wanted | None,
                                                                                      tmp_path: Path) -> None:
    """The first run touched, the others taken from the cache: their warnings in the order of the runs, as afresh
    (those replayed from their records came before those read again)."""
    runs = tmp_path / "runs"
    names = with_samples(runs, LOADING)
    assert outcome(runs, tmp_path / "cache", wanted=wanted).problems == []
    with (runs / names[0] / "run.yaml").open("a", encoding="utf-8") as run_yaml:
        run_yaml.write("# touched\n")
    with loads_counted() as loaded:
        fast = outcome(runs, tmp_path / "cache", wanted=wanted)
    plain = outcome(runs, None, wanted=wanted)
    assert loaded == names[:1]  # only the touched run read again
    told = plain.warnings if wanted else [line for run in plain.runs.values() for line in run.warnings]
    assert len({name for name in names for line in told if f"/{name}/" in line}) > 1  # more than one run warns
    assert (fast.problems, fast.warnings, list(fast.runs)) == (plain.problems, plain.warnings, list(plain.runs))
    for run_id, run in plain.runs.items():
        assert run_differences(fast.runs[run_id], run) == [], run_id


@pytest.mark.parametrize("run_id", EXAMPLES)
def test_the_memo_gives_the_input_hash_hashing_afresh_gives(run_id: str, examples_summarised: Ways,
                                                            examples_validated: Ways) -> None:
    afresh = run_hash.input_hash(ROOT / "runs" / run_id)
    for ways in (examples_summarised, examples_validated):
        memo = run_hash.read_memo(ways.cache)
        assert memo is not None and len(memo) == len(EXAMPLES)  # every run remembered: the warm pass read the memo
        assert afresh in {entry["digest"] for entry in memo.values()}
    cold = examples_summarised.cold.runs[run_id]
    assert isinstance(cold, RunSummary) and cold.source_hash == afresh  # hashed as it was read


# --- columnar reading ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def reading(way: str) -> Iterator[None]:
    """Every stream that can be read as columns read so ("columns"; "small batches": a few KiB at a time, so a
    file is read the way a large one is, its lines split across batches), none ("lines"), or as the build reads
    them ("as built": those above _columnar.FAST_FROM_BYTES, the size load.load_run reads a stream as columns
    from)."""
    with pytest.MonkeyPatch.context() as patch:
        if way != "as built":
            patch.setattr(_columnar, "FAST_FROM_BYTES", math.inf if way == "lines" else 0)
        if way == "small batches":
            patch.setattr(_columnar, "BATCH_BYTES", 4096)
        yield


WAYS = ("lines", "columns", "small batches", "as built")


def read_each_way(runs: Path) -> dict[tuple[str, str], Outcome]:
    """The runs summarised and only validated, read each way (dates checked against the samples' edition)."""
    found = {}
    for way in WAYS:
        with reading(way):  # in this process: fewer runs than a pool is started for
            found["summarised", way] = outcome(runs, None, latest=EDITION_DATE)
            found["validated", way] = outcome(runs, None, wanted=NOTHING, latest=EDITION_DATE)
    return found


def assert_read_alike(found: dict[tuple[str, str], Outcome]) -> None:
    for what in ("summarised", "validated"):
        plain = found[what, "lines"]
        for way in WAYS[1:]:
            fast = found[what, way]
            assert (fast.problems, fast.warnings) == (plain.problems, plain.warnings), (what, way)
            assert list(fast.runs) == list(plain.runs), (what, way)
            for run_id, run in plain.runs.items():
                assert run_differences(fast.runs[run_id], run) == [], (what, way, run_id)


@pytest.mark.parametrize("run_id", EXAMPLES)
def test_a_run_read_as_columns_is_summarised_and_validated_as_read_line_by_line(run_id: str,
                                                                                 tmp_path: Path) -> None:
    shutil.copytree(ROOT / "runs" / run_id, tmp_path / "runs" / run_id)
    found = read_each_way(tmp_path / "runs")
    assert found["summarised", "lines"].problems == [] and list(found["summarised", "lines"].runs) == [run_id]
    assert_read_alike(found)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_sample_read_as_columns_is_summarised_and_validated_as_read_line_by_line(
        scenario: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SAMPLES / scenario)  # problems name files as test_hostile's expected.txt does
    assert_read_alike(read_each_way(Path(".")))


# --- validation's metric tables: every metric at once against one at a time ---------------------------------

AXES = [("rollout/step", "train/step"), ("rollout/step",), ("train/step",), ("eval/step",)]


def metric_tables_both_ways(run_dir: Path) -> list[tuple[Any, Any]]:
    """Each axis group's metric table of the run's columns, as validation makes it (every metric at once) and one
    metric at a time (_validated_columns declined), for no metric named and for every metric the run logs; pairs
    where the fast path declines are left out (they are the same call)."""
    problems: list[Any] = []
    with reading("columns"):
        run = load.load_run(run_dir, problems, keep=False)
    tables = run.tables.get("metrics") or []
    names = frozenset(field.name for columns in tables for field in columns.table.column("metrics").type)
    pairs: list[tuple[Any, Any]] = []
    for keys in AXES:
        for only in (frozenset(), names):
            fast = summary_metrics._validated_columns(tables[0].table, *summary_metrics._counted_steps(
                tables[0].table, keys), only) if len(tables) == 1 else None
            if fast is not None:
                with pytest.MonkeyPatch.context() as patch:
                    patch.setattr(summary_metrics, "_validated_columns", lambda *_: None)
                    pairs.append((fast, summary_metrics._metric_columns(tables, keys, only=only)))
    return pairs


def same_table(fast: Any, plain: Any) -> bool:
    (steps, metrics, non_finite), (plain_steps, plain_metrics, plain_non_finite) = fast, plain
    return (steps.dtype == plain_steps.dtype and steps.tolist() == plain_steps.tolist()
            and list(metrics) == list(plain_metrics) and non_finite == plain_non_finite
            and all(np.array_equal(metrics[name], plain_metrics[name], equal_nan=True) for name in metrics))


@pytest.mark.parametrize("run_dir", [ROOT / "runs" / run_id for run_id in EXAMPLES]
                         + [SAMPLES / scenario / run for scenario, run in SAMPLE_RUNS], ids=str)
def test_validation_takes_every_metric_at_once_as_it_takes_them_one_at_a_time(run_dir: Path) -> None:
    for fast, plain in metric_tables_both_ways(run_dir):
        assert same_table(fast, plain), run_dir


def _again_later(lines: list[bytes]) -> list[bytes]:
    return lines[:5] + [lines[3]] + lines[5:]  # a step's line again after the next step's: out of order


def _again_at_once(lines: list[bytes]) -> list[bytes]:
    return lines[:4] + [lines[3]] + lines[4:]  # the same line twice in a row: one step, a metric logged twice


def _one_metric_a_line(lines: list[bytes]) -> list[bytes]:
    """The first step's trainer and times lines split into a line for each metric: more lines for a step than the
    one pass compares."""
    split = [json.dumps({**record, "metrics": {name: value}}).encode() + b"\n"
             for record in map(json.loads, lines[1:3]) for name, value in record["metrics"].items()]
    assert len(split) + 1 > summary_metrics.MOST_LINES_A_STEP  # with the rollout's line
    return lines[:1] + split + lines[3:]


@pytest.mark.parametrize("edit", [_again_later, _again_at_once, _one_metric_a_line])
def test_validation_takes_the_metrics_one_at_a_time_when_the_one_pass_cannot_tell(edit, tmp_path: Path) -> None:
    """A step logged again (the same values: no problem), later or at once, and a step of many lines: the one pass
    declines, and the plain path takes the table."""
    run = tmp_path / "baseline-seed2"
    shutil.copytree(ROOT / "runs" / run.name, run)
    metrics = run / "dashboard" / "metrics.jsonl"
    metrics.write_bytes(b"".join(edit(metrics.read_bytes().splitlines(keepends=True))))
    problems: list[Any] = []
    with reading("columns"):
        loaded = load.load_run(run, problems, keep=False)
    assert problems == [] and len(loaded.tables["metrics"]) == 1
    table = loaded.tables["metrics"][0].table
    counted = summary_metrics._counted_steps(table, AXES[0])
    assert summary_metrics._validated_columns(table, *counted, frozenset()) is None
    assert summary_metrics._metric_columns(loaded.tables["metrics"], AXES[0], only=frozenset()) is not None


# --- check: cold, warm, replayed ----------------------------------------------------------------------------

UNCHANGED = "Nothing changed since the last check: its report again (`make clean` checks afresh)."
STAGE = re.compile(r"\[\d+/\d+\] .+ done in \d+\.\d s")  # a stage's timing: a fresh check's own


@dataclasses.dataclass(frozen=True)
class Checked:
    code: int
    out: str
    err: str

    @property
    def shown(self) -> tuple[int, str, list[str]]:
        """What a user is told, as compared: stderr without the stages' timings (only a check that ran has them)
        and the line that says the report is the last one again (only a replay has it)."""
        return self.code, self.out, [line for line in self.err.splitlines()
                                     if not STAGE.fullmatch(line) and line != UNCHANGED]

    @property
    def replayed(self) -> bool:
        return UNCHANGED in self.err.splitlines()


def checked(root: Path, *options: str) -> Checked:
    """`manual check` on root, as the console script runs it."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--root", str(root), "check", *options])
    return Checked(code, out.getvalue(), err.getvalue())


def reports(root: Path) -> dict[str, bytes]:
    """The claims reports a check writes (the verdicts, each check with its margin)."""
    return {name: (root / "build" / name).read_bytes() for name in ("claims.json", "claims.junit.xml")}


@pytest.fixture(scope="module")
def checked_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Checked, dict[str, bytes]]:
    """A copy of the project checked once, cold: its report and the claims reports it wrote."""
    root = copy_project(tmp_path_factory.mktemp("fast-check"))
    cold = checked(root)
    assert cold.code == 0 and not cold.replayed
    return root, cold, reports(root)


def test_a_warm_check_and_its_replay_say_what_the_cold_check_said(
        checked_project: tuple[Path, Checked, dict[str, bytes]]) -> None:
    root, cold, cold_reports = checked_project
    (root / "build" / "check.key").unlink()  # checked again, from the cache
    with loads_counted() as loaded:
        warm = checked(root)
    assert not warm.replayed and loaded == []
    assert warm.shown == cold.shown and reports(root) == cold_reports
    replay = checked(root)
    assert replay.replayed and replay.shown == cold.shown and reports(root) == cold_reports
    # An edition's check trusts no earlier state: no memo, no cache, no replay. Its verdicts are the same bytes.
    edition = check(root, Settings(quiet=True, trust_state=False))
    assert "\n".join(edition.report_lines) in cold.out
    assert reports(root) == cold_reports


@pytest.mark.parametrize("options", [["--warn-margin", "0.9"], ["--strict", "--warn-margin", "0.9"],
                                     ["--format", "github", "--warn-margin", "0.9"], ["--all"]],
                         ids=["warn-margin", "strict", "github", "all"])
def test_a_replayed_check_says_what_a_fresh_check_says(options: list[str],
                                                       checked_project: tuple[Path, Checked, dict[str, bytes]]
                                                       ) -> None:
    root, _, cold_reports = checked_project
    (root / "build" / "check.key").unlink(missing_ok=True)
    fresh = checked(root, *options)
    replay = checked(root, *options)
    assert not fresh.replayed and replay.replayed
    assert replay.shown == fresh.shown and reports(root) == cold_reports
    if "--warn-margin" in options:  # the margins' warnings are said again, on stderr
        assert "WARNING" in fresh.err or "::warning" in fresh.err, fresh.err
    assert fresh.code == (EXIT_MARGIN if "--strict" in options else 0)


EVENTS = Path("runs/no-watchdog/lab/events.jsonl")
# Fig 1.3: the no-watchdog job left running 63 minutes; its end 400 s earlier makes it 69.9 (the claim fails).
KEPT, EARLIER = '"t0":1792032068.3,', '"t0":1792031668.3,'


def edit(root: Path, *, failing: bool) -> None:
    """A run given a warning (a writer mid-append), and with `failing` fig 1.3's claim made false."""
    metrics = root / "runs" / "nondet-a" / "dashboard" / "metrics.jsonl"
    metrics.write_text(metrics.read_text() + '{"ts": 1')
    if failing:
        events = root / EVENTS
        events.write_text(events.read_text().replace(KEPT, EARLIER, 1))


@pytest.mark.parametrize("failing", [False, True], ids=["a run with a warning", "and a failing claim"])
def test_a_check_that_warns_or_fails_is_checked_again_and_says_the_same(
        failing: bool, tmp_path: Path, checked_project: tuple[Path, Checked, dict[str, bytes]]) -> None:
    """Cold, then again (from the cache, never replayed: its warnings are shown again), then edited in a project
    whose cache holds every run as it was before (only the edited runs read again): the same each time."""
    root = copy_project(tmp_path / "manual")
    edit(root, failing=failing)
    cold = checked(root)
    assert cold.code == (EXIT_CLAIM_FAILED if failing else 0)
    assert "last line has no newline" in cold.err and ("fig 1.3 FAIL" in cold.out) == failing
    cold_reports = reports(root)
    warm = checked(root)
    assert not warm.replayed and warm.shown == cold.shown and reports(root) == cold_reports
    shutil.rmtree(root)  # the same path again (the messages name it), with the checked project's cache
    shutil.copytree(checked_project[0], root)
    edit(root, failing=failing)
    with loads_counted() as loaded:
        touched = checked(root)
    assert sorted(loaded) == (["no-watchdog", "nondet-a"] if failing else ["nondet-a"])
    assert not touched.replayed and touched.shown == cold.shown and reports(root) == cold_reports


def with_samples(runs: Path, samples: list[tuple[str, str]]) -> list[str]:
    """Sample runs copied into runs/, each named after its scenario; the names."""
    names = []
    for scenario, run_id in samples:
        name = f"{scenario.replace('/', '-')}-{run_id}"
        shutil.copytree(SAMPLES / scenario / run_id, runs / name)
        for file, old in (("run.yaml", f"run_id: {run_id}"), ("dashboard/meta.json", f'"{run_id}"')):
            path = runs / name / file
            if path.is_file() and old.encode() in (data := path.read_bytes()):
                path.write_bytes(data.replace(old.encode(), old.replace(run_id, name).encode(), 1))
        names.append(name)
    return names


@pytest.mark.parametrize("options", [[], ["--all"]], ids=["validated", "summarised"])
def test_a_check_of_every_sample_fails_alike_cold_and_warm(options: list[str], tmp_path: Path) -> None:
    """The samples that load are validated (or summarised) and remembered, the others refused: the second check,
    from the cache, lists the same problems."""
    root = copy_project(tmp_path / "manual")
    names = with_samples(root / "runs", SAMPLE_RUNS)
    cold = checked(root, *options)
    assert cold.code == EXIT_BAD_INPUT and "step 0 logged twice with different values" in cold.err
    assert {name for name in names if f"runs/{name}/" in cold.err} >= {name for name in names if "hostile-" in name
                                                                         and "-is-" not in name}
    warm = checked(root, *options)
    assert not warm.replayed and warm.shown == cold.shown
