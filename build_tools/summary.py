"""Stage 2: reduce each run to the summary that figures, tables and claims read (never the raw files).

A summary is a per-step table (every metric, every phase's duration, whether a heat-guard pause touched
the step), the run's events and sampled series, and run-level facts. It is cached by the content of its
inputs, so an unchanged run is not read again.
"""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import itertools
import math
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from . import _columnar, _workers, axes, load
from ._exceptions import InputProblem, Problem, RunDataError, cache_changed, display_path
from ._files import FileStat, Seen, hashing_reads, read_text, scan_tree
from ._types import Columns, MetricFacts, Record, RunData, RunsRead, RunSummary, ValidatedRun
from ._yaml import load_yaml
from .store import summary_cache
from .store.run_hash import input_hash, memo_stale, present, read_memo, write_memo

# Trainer phases are counted once per step (rank 0); the rollout manager writes rank -1.
COUNTED_RANKS = (0, -1)
HAND_OFF_PHASES = ("sleep", "wake_up", "update_weights")


def is_time(name: str) -> bool:
    """Whether a value is a time: the one rule. Time values hold only for steps no heat-guard pause touched
    (the heat rule of chapter 5), so every reader of a time reads the clean steps."""
    return name.startswith(("perf/", "phase/")) or name.endswith("_time")


# The per-step table's columns that are no metric a run logs: each phase's seconds (`phase/<name>`), the step's
# first start and last end, and the heat-guard pause it overlapped, made from the phases and events (validation
# does not tabulate them: metric_facts of them come from a summary only).
STEP_COLUMNS = ("t0", "t1", "heat_touched", "heat_pause_s")


def derived(name: str) -> bool:
    """Whether a column of the per-step table is made by the summary, not logged by the run."""
    return name.startswith("phase/") or name in STEP_COLUMNS


# --- the stage --------------------------------------------------------------------------------


# A worker is handed at most this many runs at a time: the last ones handed out end close together (a
# thousand runs in chunks of 62 left one worker idle for a chunk's time at the end).
CHUNK_MOST = 8


@dataclass(frozen=True)
class Wanted:
    """The runs to summarise: those a figure or check names (`ids`), and those whose run.yaml one of a
    table's run sets selects (`by_config`, for the rows of the site's Metrics page that read a whole summary).
    Every other run is validated (every rule of the loader, its dates) but not summarised: nothing would read its
    summary. Validating it takes the facts of the metrics named in `metrics` (those of the Metrics page, whose
    other rows read them, not a summary: metric_facts)."""

    ids: frozenset[str] = frozenset()
    by_config: Callable[[Mapping[str, Any]], bool] | None = None
    metrics: tuple[str, ...] = ()

    def wants(self, run_id: str, config: Mapping[str, Any] | None) -> bool:
        return run_id in self.ids or (self.by_config is not None and config is not None and self.by_config(config))


class Job(NamedTuple):
    """A run to read, in a worker of the local pool or a Ray task."""

    path: Path
    summarise: bool  # summarise it, or only validate it
    # Its files as the parent listed them, when the worker is to hash it (a run the cache knows nothing of)...
    listing: list[FileStat] | None
    digest: str | None  # ... else its input hash
    cache_dir: Path | None  # where the worker writes its summary
    metrics: tuple[str, ...] = ()  # the metrics whose facts validating it takes


@dataclass(frozen=True)
class Written:
    """A summary a worker wrote to the cache: the parent reads it back from there, lazily, not through a pipe."""


# What reading a run gives: its summary (or what validating it keeps, or Written), or None with its problems;
# and its memo entry when the worker hashed it (its digest alone when it is too new to remember).
Read = tuple[RunSummary | ValidatedRun | Written | None, list[Problem], dict[str, str] | None]


# Reads the runs the cache does not hold (each Job: hashed when asked, summarised or only validated), handing
# back each one's Read in the order of the jobs: in a local process pool (the default), serially, or as Ray
# tasks (_ray.py). Every one runs _read_run, so the results are the same whoever reads.
Summariser = Callable[[Sequence[Job]], Iterable[Read]]


def chunk_size(jobs: int, workers: int) -> int:
    """How many runs a worker is handed at once: about eight hand-outs a worker, at most CHUNK_MOST runs."""
    return max(1, min(CHUNK_MOST, jobs // (workers * 8)))


def summarise_serially(jobs: Sequence[Job]) -> list[Read]:
    return [_read_run(job) for job in jobs]


def summarise_in_pool(jobs: Sequence[Job], workers: int | None = None) -> Iterator[Read]:
    """Each run read in a worker process (a fresh interpreter, like draw.py's), the results handed on one at a
    time, so that a thousand runs are never all in memory at once."""
    return _in_pool(_read_run, jobs, workers)


def _read_run(job: Job) -> Read:
    """One run summarised (and its summary written to the cache) or only validated, and hashed when asked from
    the very bytes it was read from (each file read once; a file changed meanwhile is not remembered): the
    local path's one task, so that one pool does it all (a cold check reads each run's bytes in a worker, not
    first in the parent, and a thousand summaries are written by the workers, not one after another by it)."""
    hashed: dict[str, Any] | None = None
    digest = job.digest
    reading: contextlib.AbstractContextManager[dict[str, Seen]]
    reading = hashing_reads() if job.listing is not None else contextlib.nullcontext({})
    # Its cache entry written as it is read (a run summarised for the cache: the summary is handed back written).
    writing = job.summarise and (digest is not None or job.listing is not None)
    entry = summary_cache.EntryWriter(job.cache_dir, job.path.name) if writing and job.cache_dir else None
    with entry if entry is not None else contextlib.nullcontext():
        with reading as seen:
            result, problems = load_and_summarise(job.path, entry) if job.summarise else \
                load_and_validate(job.path, job.metrics)
        if job.listing is not None:
            memo: dict[str, Any] = {}
            digest = input_hash(job.path, memo, job.listing, key="run", seen=seen)
            hashed = memo.get("run", {"digest": digest})  # its digest alone when a file of it is too new to remember
        if isinstance(result, RunSummary) and entry is not None and digest is not None:
            result.source_hash = digest
            frames, body = summary_cache.summary_parts(result)
            for name, frame in frames.items():  # with the series written while it was read (_written_series)
                entry.add(name, frame)
            entry.commit(digest, body)
            return Written(), problems, hashed
    return result, problems, hashed


def _in_pool(function: Callable[[Any], Any], jobs: Sequence[Any], workers: int | None = None) -> Iterator[Any]:
    count = min(workers or os.cpu_count() or 1, len(jobs))
    if count <= 1 or len(jobs) < _workers.POOL_FROM:
        yield from (function(job) for job in jobs)
        return
    with ProcessPoolExecutor(count, mp_context=_workers.context([__name__]), initializer=load.share_cores,
                             initargs=(count,)) as pool:
        yield from pool.map(function, jobs, chunksize=chunk_size(len(jobs), count))


def summarise_runs(runs_dir: Path, cache_dir: Path | None = None, *, warnings: list[str] | None = None,
                   latest: dt.date | None = None, summariser: Summariser | None = None,
                   wanted: Wanted | None = None,
                   validated: dict[str, ValidatedRun] | None = None,
                   read: RunsRead | None = None) -> dict[str, RunSummary]:
    """Summaries of the runs under runs_dir, by run id; cached under cache_dir by input content.

    Warnings about the cache, and those of the runs validated only, go to `warnings`; `latest` is the
    edition's date, after which no run may end; `summariser` reads the runs that the cache does not hold
    (default: a local process pool for many runs; Summariser). With `wanted`, only the runs it wants are
    summarised; every other one is validated (by the same summariser), remembered by its input hash in the
    cache, and handed back in `validated`. `read` receives the listing of runs/ and each run's input hash (for
    the key of the inputs recorded after a check or build). Every problem of every run is raised at once
    (RunDataError).
    """
    warnings = warnings if warnings is not None else []
    problems: list[Problem] = []
    listings: dict[str, list[FileStat]] = {}
    paths = load.run_folders(runs_dir, problems, listings)
    if problems:  # a link out of the project or a FIFO: nothing under runs/ is read
        raise RunDataError(problems)
    memo, known = read_memo(cache_dir), _read_validated(cache_dir, warnings)
    memo_read = dict(memo) if memo is not None else None
    root = runs_dir.resolve()
    # A run the cache knows nothing of is hashed by the worker that reads it (a local one, or Ray's).
    unknown = _unknown_runs(cache_dir, known)
    runs = _Runs(cache_dir, memo, listings)
    for path in paths:
        runs.hash(path, f"{root}/{path.name}", defer=unknown(path.name))
    to_read = runs.plan(known, wanted, warnings)
    found = runs.read(to_read, summariser)
    digests = {path: runs.digests[path] for path in paths}  # every run hashed now, in the order of the runs
    if cache_dir is not None:
        if memo is not None and (memo := present(memo, root, paths)) != memo_read:
            write_memo(cache_dir, memo)
        records = _records(known, digests, {job.path.name for job in to_read}, runs)
        if records != known:  # the records kept are known's own: comparing them costs nothing
            cache_dir.mkdir(parents=True, exist_ok=True)
            summary_cache.write_validated(cache_dir, records)
    shown = Path(display_path(runs_dir))
    for path in paths:  # every problem in the order of the runs, each run's dates checked
        problems += found.get(path.name, [])
        if (run := runs.passed(path.name)) is not None:
            problems += load.time_problems(str(shown / path.name / "run.yaml"), run.config, *_time_span(run), latest)
    if problems:
        raise RunDataError(problems)
    # In the order of the runs, as afresh: those replayed from their records were taken before those read again.
    warnings += [warning for _, run in sorted(runs.validated.items()) for warning in run.warnings]
    if validated is not None:
        validated.update(sorted(runs.validated.items()))
    if read is not None:
        read.listings.update(listings)
        read.digests.update((path.name, digest) for path, digest in digests.items())
    return dict(sorted(runs.summaries.items()))


class _Runs:
    """The runs of one summarise_runs: their input hashes, which are summarised, which only validated, and what
    came of each."""

    def __init__(self, cache_dir: Path | None, memo: dict[str, Any] | None,
                 listings: dict[str, list[FileStat]]) -> None:
        self.cache_dir, self.memo, self.listings = cache_dir, memo, listings
        self.order: list[Path] = []  # the runs in the order they were found
        self.digests: dict[Path, str] = {}
        self.unhashed: dict[Path, str] = {}  # run -> its memo key, hashed when read
        self.summaries: dict[str, RunSummary] = {}
        self.validated: dict[str, ValidatedRun] = {}

    def hash(self, path: Path, key: str, *, defer: bool) -> None:
        """The run's input hash now (from the memo when its files are unchanged), or when it is read."""
        self.order.append(path)
        memo = self.memo
        if defer and (memo is None or memo_stale(memo, key, self._listing(path))):
            self.unhashed[path] = key
        else:
            self.digests[path] = input_hash(path, memo, self.listings.get(path.name), key=key)

    def _listing(self, path: Path) -> list[FileStat]:
        if path.name not in self.listings:
            self.listings[path.name] = scan_tree(path, path.resolve())[1]
        return self.listings[path.name]

    def passed(self, run_id: str) -> RunSummary | ValidatedRun | None:
        return self.summaries.get(run_id) or self.validated.get(run_id)

    def plan(self, known: dict[str, dict[str, Any]], wanted: Wanted | None, warnings: list[str]) -> list[Job]:
        """Take what the cache holds; the runs to read, each with whether to summarise it (or only validate it)."""
        to_read: list[Job] = []
        for path in self.order:
            metrics = wanted.metrics if wanted is not None else ()
            if path in self.unhashed:  # nothing cached for it: read, and hashed as it is
                wants = wanted is None or wanted.wants(path.name, _peek(path, wanted))
                to_read.append(Job(path, wants, self._listing(path), None, self.cache_dir, metrics))
                continue
            digest = self.digests[path]
            record = known.get(path.name)
            record = record if record is not None and record["digest"] == digest else None
            if wanted is not None and not wanted.wants(path.name, record["config"] if record else _peek(path, wanted)):
                # A record without the facts of a metric asked for (the spec names a new one) is not replayed.
                if record is None or not set(metrics) <= record["metrics"].keys():
                    to_read.append(Job(path, False, None, digest, self.cache_dir, metrics))
                else:
                    self.validated[path.name] = _validated(path.name, record, metrics)
            elif (cached := _read_cache(self.cache_dir, path, digest, warnings)) is not None:
                self.summaries[path.name] = cached
            else:
                to_read.append(Job(path, True, None, digest, self.cache_dir))
        return to_read

    def read(self, to_read: list[Job], summariser: Summariser | None) -> dict[str, list[Problem]]:
        """Read the runs (summarised ones written to the cache as they come); the problems of each, by run id."""
        found: dict[str, list[Problem]] = {}
        for job, (result, problems, hashed) in zip(to_read, _read_runs(to_read, summariser), strict=True):
            path = job.path
            found[path.name] = problems
            if hashed is not None:
                self.digests[path] = hashed["digest"]
                if self.memo is not None and "stats" in hashed:
                    self.memo[self.unhashed[path]] = hashed
            if isinstance(result, ValidatedRun):
                self.validated[path.name] = result
            elif result is not None:
                self.summaries[path.name] = self._kept(path, result)
        return found

    def _kept(self, path: Path, result: RunSummary | Written) -> RunSummary:
        """A summary as the cache holds it (written here unless its worker wrote it), its tables decoded again
        only if a figure, check or table reads them: the runs nobody reads cost memory only while summarised."""
        digest = self.digests[path]
        if isinstance(result, RunSummary):
            result.source_hash = digest
            _write_cache(self.cache_dir, path, digest, result)
        kept = _read_cache(self.cache_dir, path, digest, [])
        if kept is not None:
            return kept
        if isinstance(result, Written):  # gone between the worker's writing and this reading
            raise cache_changed(summary_cache.entry_dir(self.cache_dir or Path("."), path.name, digest))
        return result


def _unknown_runs(cache_dir: Path | None, known: dict[str, dict[str, Any]]) -> Callable[[str], bool]:
    """Whether the cache holds nothing for a run of that name (no record of it validated, no summary of it):
    whatever its input hash, the run is read."""
    try:
        entries = {entry.name.rsplit("-", 1)[0] for entry in os.scandir(cache_dir)} if cache_dir else set()
    except OSError:
        entries = set()
    return lambda run_id: run_id not in known and run_id not in entries


def _read_runs(jobs: Sequence[Job], summariser: Summariser | None) -> Iterable[Read]:
    """The results of the jobs in their order, from the summariser (default: the local pool)."""
    if not jobs:  # everything came from the cache: no pool, no Ray
        return []
    return (summariser or summarise_in_pool)(jobs)


def _peek(path: Path, wanted: Wanted) -> dict[str, Any] | None:
    """The run.yaml of a run not yet validated, when whether it is wanted depends on it (None otherwise, and
    for a run.yaml that cannot be read: validating the run reports why)."""
    if wanted.by_config is None or path.name in wanted.ids:
        return None
    try:
        value = load_yaml(read_text(path / "run.yaml"), display_path(path / "run.yaml"))
    except (InputProblem, OSError):
        return None
    return value if isinstance(value, dict) else None


def _time_span(run: RunSummary | ValidatedRun) -> tuple[float, float]:
    if isinstance(run, ValidatedRun):
        return run.start_ts, run.end_ts
    return run.facts["start_ts"], run.facts["end_ts"]


def load_and_summarise(path: Path, entry: summary_cache.EntryWriter | None = None) -> tuple[RunSummary | None,
                                                                                             list[Problem]]:
    """One run from disk to its summary; None with the problems when anything is wrong. With `entry` (its cache
    entry, being written), each sampled stream's series is written to it as soon as the stream is read, and the
    summary holds none of those series: only the entry has them all (at most one stream's samples in memory)."""
    problems: list[Problem] = []
    run = load.load_run(path, problems, on_sampled=None if entry is None else _written_series(entry))
    if not problems:
        summary = summarise(run, problems)  # its own rules may still refuse the run (a step logged twice)
        return (None if problems else summary), problems
    try:  # still look for the problems only the summary finds (a step logged twice), to list them all at once
        summarise(run, problems)
    except Exception:  # noqa: BLE001 - the run is already rejected; what is missing from it may trip the summary
        pass
    return None, problems


def load_and_validate(path: Path, metrics: Collection[str] = ()) -> tuple[ValidatedRun | None, list[Problem]]:
    """One run from disk through every rule that could reject it (the loader's, and the summary's: a step
    logged twice with different values), keeping only what the edition's checks of every run read: its
    run.yaml, its first and last record (as its summary's facts give them) and its warnings; and what the pages
    read of it without its summary: its per-step table's rows and the facts of `metrics` (validate). None with
    the problems when anything is wrong."""
    problems: list[Problem] = []
    run = load.load_run(path, problems, keep=False)  # its sampled streams not kept: their last times only
    try:
        found = validation(run, problems, metrics)
    except Exception:  # noqa: BLE001 - only ever reached for a run the loader rejected (as in load_and_summarise)
        if not problems:
            raise
    if problems:
        return None, problems
    return ValidatedRun(run.run_id, run.config, found.start_ts, found.end_ts, warnings=list(run.warnings),
                        steps=found.steps, metrics=found.metrics), []


def summarise(run: RunData, problems: list[Problem]) -> RunSummary:
    """Reduce one loaded run; merge conflicts are appended to problems."""
    join = _join(run)
    phases, ((metric_steps, metrics, non_finite), others) = _apply_rules(run, problems, join)
    events = _frame(load.records(run, "events"), ["kind", "t0", "t1", "detail"])
    phase_steps = _assign_steps(phases, _text_marks(phases["name"], phases["role"]),
                                first_step=int(metric_steps.min()) if len(metric_steps) else 0)
    steps = _step_table(metric_steps, metrics, phases, phase_steps, events)
    sampled = [name for name in load.stream_names(run) if name not in ("metrics", "phases", "events")]
    run.taken.update(name for name in sampled if run.tables.get(name))
    series = {name: _sampled_series(run, name) for name in sampled}
    summary = RunSummary(run.run_id, run.config, steps, _phase_frame(phases, phase_steps), events, series,
                         warnings=list(run.warnings), axes=_axis_frames(others, join))
    for _, _, more in others.values():  # each value's steps are those of its own axis
        for name, at in more.items():
            non_finite.setdefault(name, {}).update(at)
    summary.facts = _facts(summary, run, phases) | {"non_finite": non_finite}
    if join != axes.join_of(run.config):  # taken from the steps
        summary.facts["join"] = {"per_rollout": join.per_rollout, "source": join.source,
                                 "train_scaled": join.train_scaled}
    return summary


def _apply_rules(run: RunData, problems: list[Problem], join: axes.Join, *,
                 only: Collection[str] | None = None) -> tuple[dict[str, np.ndarray],
                                                               tuple[MetricTable, dict[str, MetricTable]]]:
    """Every rule of the summary applied: the closed phases (a phase never closed is warned of) and the metric
    table (a step logged twice with different values is a problem). A run only validated stops here, with `only`
    the metrics it takes the facts of: the phases' times and ranks and what numbering the steps reads of their
    texts (_step_marks) alone, in no order, and metric tables of those metrics only (every step still a row)."""
    # A rollout left open by an engine death the lab recorded is explained by the data: no warning for it.
    deaths = [float(rec.data["t0"]) for rec in load.records(run, "events") if rec.data.get("kind") == "engine_death"]
    phases = _phase_columns(run, deaths, times_only=only is not None)
    return phases, _metric_tables(run, problems, join, only=only)


class Validation(NamedTuple):
    """What validating a run gives besides its problems: its start and end, the rows of its per-step table, and the
    facts of the metrics asked for (those its summary would give: metric_facts)."""

    start_ts: float
    end_ts: float
    steps: int
    metrics: dict[str, MetricFacts]


def validate(run: RunData, problems: list[Problem]) -> tuple[float, float]:
    """Every rule of the summary applied to a run, without making its tables: the run's start and end (validation's
    window alone)."""
    start, end, _, _ = validation(run, problems)
    return start, end


def validation(run: RunData, problems: list[Problem], metrics: Collection[str] = ()) -> Validation:
    """Every rule of the summary applied to a run, without making its tables: the run's start and end, as its
    summary's facts give them (its sampled streams' last times among them, kept by the loader), and what the
    Metrics page reads of each metric named (its per-step table's rows and the metrics' columns, made as the
    summary makes them)."""
    join = _join(run)
    phases, (main, others) = _apply_rules(run, problems, join, only=frozenset(metrics))
    metric_steps = main[0]
    index = _step_index(metric_steps, phases["rank"],
                        _assign_steps(phases, phases, first_step=int(metric_steps.min()) if len(metric_steps) else 0))
    return Validation(*_window(run, phases, run.last_samples.values()), len(index),
                      {name: _facts_of(name, index, main, others) for name in metrics})


def _facts_of(name: str, index: np.ndarray, main: MetricTable, others: dict[str, MetricTable]) -> MetricFacts:
    """A metric's facts from the tables validation made: on the per-step table (index: its rows), or else on the
    first other step axis that has it (readers.table_of's choice), its non-finite values from every axis (as
    the summary's facts merge them)."""
    non_finite = dict(main[2].get(name, {}))
    for _, _, more in others.values():
        non_finite.update(more.get(name, {}))
    steps, metrics, _ = main
    if name in metrics:
        return metric_facts(index, _spread(metrics[name], steps, index), non_finite)
    for steps, metrics, _ in others.values():
        if name in metrics:
            return metric_facts(steps, metrics[name], non_finite)
    return metric_facts(index, None, non_finite)


def metric_facts(steps: np.ndarray, values: np.ndarray | None, non_finite: Mapping[str, str]) -> MetricFacts:
    """What the Metrics page reads of one metric of one run (_types.MetricFacts) from its table's rows: `steps`
    the table's step of each row, `values` the metric's column (None when the table has none), `non_finite` what
    the run logged that is not a number. The one reduction: metrics_table takes it of a summary's table, and
    validation of the same rows and column made from the run (validate)."""
    if values is None:
        return MetricFacts(False, len(steps), 0, None, None, 0, None, None, dict(non_finite))
    has = ~np.isnan(values)
    found = values[has]
    if not len(found):
        return MetricFacts(True, len(steps), 0, None, None, 0, None, None, dict(non_finite))
    return MetricFacts(True, len(steps), len(found), float(found.min()), float(found.max()), int((found == 0).sum()),
                       float(found[0]), int(steps[np.flatnonzero(has)[0]]), dict(non_finite))


def _window(run: RunData, phases: dict[str, np.ndarray], lasts: Iterable[float]) -> tuple[float, float]:
    """The run's start (meta.json's start_ts, else its first record) and end (its last record of any kind: an
    idle job still samples its GPU after the last step). Each sampled stream counts by its last sample."""
    times = [float(values.min()) for values in (phases["t0"], phases["t1"]) if len(values)]
    ends = [float(values.max()) for values in (phases["t0"], phases["t1"]) if len(values)]
    if event_ends := [float(rec.data["t1"]) for rec in load.records(run, "events")]:
        times.append(min(event_ends))
        ends.append(max(event_ends))
    for last in lasts:
        if not math.isnan(last):
            times.append(last)
            ends.append(last)
    return float(run.meta.get("start_ts", min(times, default=math.nan))), float(max(ends, default=math.nan))


# --- metrics ----------------------------------------------------------------------------------

STEP_KEYS = axes.AXES  # never a metric of a step: the step itself
# One step's metrics: the steps (ascending), each metric's value at each of them (NaN where not logged), and
# where a logged value was not finite (metric -> step -> "NaN" / "Infinity" / "-Infinity").
MetricTable = tuple[np.ndarray, dict[str, np.ndarray], dict[str, dict[str, str]]]


def _metric_tables(run: RunData, problems: list[Problem], join: axes.Join, *,
                   only: Collection[str] | None = None) -> tuple[MetricTable, dict[str, MetricTable]]:
    """The per-step table's metrics, by rollout id, and a table of each other step axis that has values.

    `rollout/*` and `perf/*` are logged against `rollout/step`, `train/*` against `train/step`, `eval/*` against
    `eval/step` (axes.py). With one optimizer step per rollout (as in every example run) rollout/step and
    train/step count the same steps and are merged into one table, the trainer's and the rollout manager's lines
    for a step together; with more, train/step is an axis of its own, each step joined to its rollout.
    With `only` (validation), each table keeps the columns of those metrics alone, in no particular order.
    """
    groups: list[tuple[str, ...]] = [(axes.ROLLOUT, axes.TRAIN)] if join.identity else [(axes.ROLLOUT,),
                                                                                         (axes.TRAIN,)]
    groups.append((axes.EVAL,))
    columns = run.tables.get("metrics")
    found = [_metric_columns(columns, keys, only=only) if columns else None for keys in groups]
    if any(table is None for table in found):  # read line by line, once for every axis that must be
        lines = load.records(run, "metrics")
        found = [table if table is not None else _only(_metric_rows(lines, problems, keys), only)
                 for table, keys in zip(found, groups, strict=True)]
    tables = [table for table in found if table is not None]
    main = _by_rollout(tables[0], join) if join.train_scaled else tables[0]
    return main, {keys[0]: table for keys, table in zip(groups[1:], tables[1:], strict=True) if len(table[0])}


def _only(table: MetricTable, only: Collection[str] | None) -> MetricTable:
    """The table with only the columns (and non-finite values) of the metrics named; whole when none is."""
    if only is None:
        return table
    steps, metrics, non_finite = table
    return (steps, {name: column for name, column in metrics.items() if name in only},
            {name: at for name, at in non_finite.items() if name in only})


def _join(run: RunData) -> axes.Join:
    """How the run's step axes join: its configuration's num_steps_per_rollout, else what its steps show (a warning
    then says so: Miles' dump does not record it)."""
    join = axes.join_of(run.config)
    if join.source != axes.NOT_RECORDED:
        return join
    counts = _axis_counts(run)
    taken = axes.inferred(join, counts.get(axes.TRAIN, 0), counts.get(axes.ROLLOUT, 0))
    if taken != join:
        run.warnings.append(f"{display_path(run.root)}: num_steps_per_rollout is {taken.source}, so "
                            f"{taken.per_rollout} (set flags.num_steps_per_rollout in run.yaml, or pass the log "
                            "that prints the launch arguments); train/step is read as an axis of its own")
    return taken


def _axis_counts(run: RunData) -> dict[str, int]:
    """How many distinct steps each step key logs."""
    keyed = [columns.table.select(["step_key", "step"]) for columns in run.tables.get("metrics", [])]
    keyed = [table for table in keyed if not any(pa.types.is_null(kind) for kind in table.schema.types)]
    pairs = {(record.data.get("step_key"), record.data.get("step"))  # the records not read as columns
             for record in run.streams.get("metrics", [])}
    if keyed:
        table = pa.concat_tables(keyed, promote_options="permissive").drop_null()
        if not pairs:  # all read as columns: each key's distinct steps counted in arrays, not pair by pair
            keys = table.column("step_key").combine_chunks().dictionary_encode()
            codes, steps = keys.indices.to_numpy(zero_copy_only=False), table.column("step").to_numpy()
            return {key: _distinct_count(steps[codes == code]) for code, key in enumerate(keys.dictionary.to_pylist())}
        pairs |= set(zip(*(table.group_by(["step_key", "step"]).aggregate([]).column(name).to_pylist()
                           for name in ("step_key", "step")), strict=True))
    return dict(collections.Counter(key for key, step in pairs if key is not None and step is not None))


def _by_rollout(table: MetricTable, join: axes.Join) -> MetricTable:
    """rollout/step counted in train steps (--wandb-always-use-train-step) made the rollout id."""
    steps, metrics, non_finite = table
    rollouts = steps // join.per_rollout
    if len(np.unique(rollouts)) < len(rollouts):
        return table  # not whole rollouts: the steps kept as logged
    return rollouts, metrics, {name: {str(int(step) // join.per_rollout): marker for step, marker in at.items()}
                               for name, at in non_finite.items()}


def _axis_frames(tables: dict[str, MetricTable], join: axes.Join) -> dict[str, pd.DataFrame]:
    """A frame per other step axis: index `step` (that axis' own), `rollout` (the rollout id it joins), metrics."""
    frames = {}
    for axis, (steps, metrics, _) in tables.items():
        rollout = np.array([join.rollout_of(axis, int(step)) for step in steps], dtype=np.int64)
        frames[axis] = pd.DataFrame({"rollout": rollout, **metrics}, index=pd.Index(steps, name="step"))
    return frames


def _metric_rows(records: Iterable[Record], problems: list[Problem], keys: tuple[str, ...]) -> MetricTable:
    """The metric table of the records logged against `keys`, one at a time."""
    rows: dict[int, dict[str, Any]] = {}
    origin: dict[tuple[int, str], tuple[str, int]] = {}
    non_finite: dict[str, dict[str, str]] = {}
    for rec in records:
        key, step = rec.data["step_key"], rec.data["step"]
        if key not in keys or step is None:
            continue
        row = rows.setdefault(step, {})
        for name, value in rec.data["metrics"].items():
            if isinstance(value, str) or name in STEP_KEYS:
                continue
            value = float(value)
            if name in row and not _same(row[name], value):
                file, line = origin[(step, name)]
                problems.append(Problem(rec.file, rec.line, f"metrics.{name}",
                                        f"step {step} logged twice with different values: {row[name]!r} "
                                        f"({file}:{line}) and {value!r}"))
                continue
            row[name] = value
            origin[(step, name)] = (rec.file, rec.line)
            if not math.isfinite(value):
                non_finite.setdefault(name, {})[str(step)] = _marker(value)
    # A step is a row once it has a value; columns in the order the steps' rows first hold them.
    names = list(dict.fromkeys(name for row in rows.values() for name in row))
    steps = np.array(sorted(step for step, row in rows.items() if row), dtype=np.int64)
    index = {step: at for at, step in enumerate(steps.tolist())}
    metrics = {name: np.full(len(steps), math.nan) for name in names}
    for step, row in rows.items():
        for name, value in row.items():
            metrics[name][index[step]] = value
    return steps, metrics, non_finite


def _metric_columns(tables: list[Columns], keys: tuple[str, ...], *,
                    only: Collection[str] | None = None) -> MetricTable | None:
    """The metric table from the stream's columns, or None when it must be read line by line: a step logged
    twice with different values, or two metrics a step first logs on one line whose order there the columns
    cannot tell. With `only` (validation), the columns of those metrics alone, in no particular order (so never
    None for that), every step that logs a metric still a row."""
    counted_steps = [_counted_steps(columns.table, keys) for columns in tables]
    if only is not None and len(tables) == 1 and (fast := _validated_columns(tables[0].table, *counted_steps[0],
                                                                            only)):
        return fast
    logged: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}  # name -> (rows, steps, values)
    first_row: dict[str, tuple[int, int]] = {}  # name -> (its first row in its first table, its place there)
    all_steps, offset = [], 0
    for columns, (counted, steps) in zip(tables, counted_steps, strict=True):
        table = columns.table
        all_steps.append(steps[counted])
        if only is not None and not counted.any():  # no row of these axes: validation reads nothing of it
            offset += table.num_rows
            continue
        mapping = table.column("metrics")
        for place in _metric_places(mapping.type):
            kind = mapping.type.field(place)
            child = _columnar._child(mapping, place)
            present = child.is_valid().to_numpy(zero_copy_only=False)
            values = pc.cast(child, pa.float64(), safe=False).to_numpy(zero_copy_only=False)
            rows = np.flatnonzero(present & counted)
            logged.setdefault(kind.name, []).append((rows + offset, steps[rows], values[rows]))
            if kind.name not in first_row and present.any():
                first_row[kind.name] = (int(np.argmax(present)) + offset, place)
        offset += table.num_rows
    order = _first_appearance(np.concatenate(all_steps) if all_steps else np.zeros(0, dtype=np.int64)) \
        if only is None else np.zeros((0, 2), dtype=np.int64)
    kept: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    placed: dict[str, tuple[int, int]] = {}  # name -> (rank of the first step holding it, the row it comes from)
    for name, parts in logged.items():
        rows, steps, values = (np.concatenate(part) for part in zip(*parts, strict=True))
        if not len(rows):
            continue
        if len(steps) < 2 or bool((steps[1:] > steps[:-1]).all()):  # each step once, in order: as np.unique gives
            kept[name] = (steps, values)
        else:
            unique, first = np.unique(steps, return_index=True)
            if len(unique) < len(steps) and not _repeats_agree(steps, values, unique, first):
                return None
            kept[name] = (unique, values[first])
        if only is not None:
            continue
        ranks = order[np.searchsorted(order[:, 0], steps), 1]
        at = int(np.argmin(ranks))
        placed[name] = (int(ranks[at]), int(rows[at]))
    names = _column_order(placed, first_row) if only is None else [name for name in kept if name in only]
    if names is None:
        return None
    # Every step that logs a metric is a row, whichever metrics are kept.
    steps = np.unique(np.concatenate([logged_at for logged_at, _ in kept.values()])) if kept else \
        np.zeros(0, np.int64)
    return _placed(steps, {name: kept[name] for name in names})


def _counted_steps(table: pa.Table, keys: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Which rows log against one of the step keys (with a step), and each row's step (0 where none is)."""
    key, steps = table.column("step_key"), table.column("step")
    counted = np.zeros(table.num_rows, dtype=bool) if pa.types.is_null(key.type) or pa.types.is_null(
        steps.type) else (pc.fill_null(pc.is_in(key, pa.array(keys)), False).to_numpy(zero_copy_only=False)
                          & steps.is_valid().to_numpy(zero_copy_only=False))
    values = pc.fill_null(steps, 0).to_numpy(zero_copy_only=False) if counted.any() else \
        np.zeros(table.num_rows, dtype=np.int64)
    return counted, values


def _metric_places(mapping: pa.DataType) -> list[int]:
    """The places of the metrics of a step in the struct of metrics: numbers and true/false, not a step key (strings
    are not metrics of a step)."""
    return [place for place, kind in enumerate(mapping) if kind.name not in STEP_KEYS and (
        pa.types.is_integer(kind.type) or pa.types.is_floating(kind.type) or pa.types.is_boolean(kind.type))]


def _placed(steps: np.ndarray, kept: dict[str, tuple[np.ndarray, np.ndarray]]) -> MetricTable:
    """The metric table of the steps: each metric's values (logged at its steps) placed in its column, NaN at the
    steps it did not log, and where it logged a value that is not finite."""
    metrics, non_finite = {}, {}
    for name, (logged_at, values) in kept.items():
        column = np.full(len(steps), math.nan)
        column[np.searchsorted(steps, logged_at)] = values
        metrics[name] = column
        bad = ~np.isfinite(values)
        if bad.any():
            non_finite[name] = {str(step): _marker(value) for step, value in zip(logged_at[bad].tolist(),
                                                                                 values[bad].tolist(), strict=True)}
    return steps, metrics, non_finite


# More lines than this for one step (Miles writes three: the rollout's, the trainer's, the step's times), and
# validation takes the metrics one at a time (_validated_columns compares each pair of a step's lines).
MOST_LINES_A_STEP = 8


def _validated_columns(table: pa.Table, counted: np.ndarray, steps: np.ndarray,
                       only: Collection[str]) -> MetricTable | None:
    """_metric_columns with `only` of one table whose steps are written in order, every metric at once: which rows
    log each metric, as one matrix of metrics by rows, checked in one pass for a step a metric logs twice (the
    values read of the metrics named alone). None when it cannot tell, and _metric_columns reads the metrics one
    by one: a step a metric logs again, steps out of order, no row of these axes, a name twice. `counted` and
    `steps`: _counted_steps of the table for the axes' keys."""
    mapping = table.column("metrics")
    places = _metric_places(mapping.type)
    names = [mapping.type.field(place).name for place in places]
    if not counted.any() or not places or mapping.num_chunks != 1 or len(set(names)) < len(names):
        return None
    steps = steps[counted]
    if len(steps) > 1 and bool((steps[1:] < steps[:-1]).any()):
        return None
    struct = mapping.chunk(0)
    children = [struct.field(place) for place in places]
    # Every metric's column as doubles, one chunk a metric (the values of the metrics named are read from it)
    every = pa.chunked_array([child if child.type == pa.float64() else pc.cast(child, pa.float64(), safe=False)
                              for child in children], type=pa.float64())
    logged = every.is_valid().to_numpy(zero_copy_only=False).reshape(len(children), table.num_rows)[:, counted]
    # Steps in order, a step's rows are together: a metric logs a step once when no two of its rows, `gap` rows
    # apart, hold the same step (gap up to the most rows a step has: 3 lines a step, as Miles writes them).
    firsts = np.flatnonzero(np.concatenate(([True], steps[1:] != steps[:-1])))
    widest = int(np.diff(np.append(firsts, len(steps))).max()) if len(steps) else 0
    if widest > MOST_LINES_A_STEP:
        return None
    for gap in range(1, widest):
        if bool((logged[:, gap:] & logged[:, :-gap] & (steps[gap:] == steps[:-gap])).any()):
            return None
    kept = {}
    for child, name, at in zip(every.chunks, names, logged, strict=True):
        if name in only and at.any():
            values = child.to_numpy(zero_copy_only=False)[counted]
            kept[name] = (steps[at], values[at])
    rows = steps[logged.any(axis=0)]
    return _placed(rows[np.concatenate(([True], rows[1:] != rows[:-1]))] if len(rows) else rows, kept)


def _first_appearance(steps: np.ndarray) -> np.ndarray:
    """(step, rank) rows sorted by step: rank numbers the steps in the order they first appear."""
    unique, first = np.unique(steps, return_index=True)
    ranks = np.empty(len(unique), dtype=np.int64)
    ranks[np.argsort(first, kind="stable")] = np.arange(len(unique))
    return np.stack([unique, ranks], axis=1) if len(unique) else np.zeros((0, 2), dtype=np.int64)


def _repeats_agree(steps: np.ndarray, values: np.ndarray, unique: np.ndarray, first: np.ndarray) -> bool:
    """Every value a step logs again equals its first (NaN equals NaN), as the record path requires."""
    firsts = values[first][np.searchsorted(unique, steps)]
    return bool(np.all((values == firsts) | (np.isnan(values) & np.isnan(firsts))))


def _column_order(placed: dict[str, tuple[int, int]], first_row: dict[str, tuple[int, int]]) -> list[str] | None:
    """The metrics in the order the record path makes its columns: by the first step (in order of appearance)
    holding each, then by the line that first logs it there, then by its place on that line. That place is the
    reader's field order when the line is where the reader first met each of them; otherwise None."""
    names = sorted(placed, key=lambda name: placed[name])
    for _, group in itertools.groupby(names, key=lambda name: placed[name]):
        tied = list(group)
        if len(tied) > 1 and any(first_row[name][0] != placed[name][1] for name in tied):
            return None
    return sorted(names, key=lambda name: (*placed[name], first_row[name][1]))


def _marker(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


# --- phases -----------------------------------------------------------------------------------

PHASE_COLUMNS = ["name", "t0", "t1", "node", "gpus", "rank", "role"]


def _phase_columns(run: RunData, deaths: Sequence[float], *, times_only: bool = False) -> dict[str, np.ndarray]:
    """The run's closed phases in time order (`_phases`), as one array per column (`times_only`: t0, t1, rank and
    the step marks of each phase (_step_marks) alone, in no order when read from columns)."""
    tables = run.tables.get("phases")
    if tables:
        columns = _closed_phases(tables, run.warnings, deaths, times_only=times_only)
        if columns is not None:
            return columns
    frame = _phases(load.records(run, "phases"), run.warnings, deaths)
    if times_only:
        return {name: frame[name].to_numpy() for name in ("t0", "t1", "rank")} | _text_marks(
            frame["name"].to_numpy(), frame["role"].to_numpy())
    return {name: frame[name].to_numpy() for name in PHASE_COLUMNS}


def _phases(records: Iterable[Record], warnings: list[str], deaths: Sequence[float] = ()) -> pd.DataFrame:
    """Closed phases; an open record (t1 == -1) is replaced by its closing record from any hour file. A phase
    that never closed is dropped with a warning, unless it is a rollout an engine death (at `deaths`) ended."""
    by_key: dict[tuple[str, float, int, str], dict[str, Any]] = {}
    where: dict[tuple[str, float, int, str], str] = {}
    for rec in records:
        data = rec.data
        key = (data["name"], data["t0"], data["rank"], data["role"])
        if data["t1"] == -1 and key in by_key:
            continue  # a closing record was read first (files are read in hour order, so rarely)
        by_key[key] = data
        where[key] = f"{rec.file}:{rec.line}"
    rows = []
    for key, data in by_key.items():
        if data["t1"] == -1:
            if data["name"] == "rollout" and any(death >= float(data["t0"]) for death in deaths):
                continue
            warnings.append(f"{where[key]}: phase {data['name']!r} opened at {data['t0']} never closed; dropped")
            continue
        rows.append({**data, "gpus": tuple(data["gpus"])})
    frame = pd.DataFrame(rows, columns=PHASE_COLUMNS)
    return frame.sort_values(["t0", "rank", "name"], kind="stable").reset_index(drop=True)


def _distinct_count(values: np.ndarray) -> int:
    """len(np.unique(values)), told without sorting when they are in order already (as a run logs its steps): 0.06
    against 0.25 ms for a run's two step keys of a thousand steps."""
    with np.errstate(invalid="ignore"):  # inf - inf is NaN: not in order, np.unique decides (and no numpy warning)
        changes = np.diff(values)
    if not (changes >= 0).all():
        return len(np.unique(values))
    return int(len(values) > 0) + int(np.count_nonzero(changes))


def _closed_phases(tables: list[Columns], warnings: list[str], deaths: Sequence[float], *,
                   times_only: bool = False) -> dict[str, np.ndarray] | None:
    """_phases, from the stream's columns. None when the lines must be read again: a phase that never closed
    (its warning quotes the time as written), or times all whole numbers in a column of floats (the record path
    keeps them as integers). With `times_only`, t0, t1, rank and the step marks (_step_marks) alone, in no order
    (what validation reads)."""
    table = pa.concat_tables([columns.table for columns in tables], promote_options="permissive")
    t0, t1 = (table.column(key).to_numpy(zero_copy_only=False) for key in ("t0", "t1"))
    rank = table.column("rank").to_numpy(zero_copy_only=False)
    # One row per (name, t0, rank, role), in the order each first appears: its last closed record, else its
    # first (the open one). Texts are told apart by their dictionary codes, any consistent numbering will do.
    names, roles = (table.column(key).combine_chunks().dictionary_encode() for key in ("name", "role"))
    codes = [_indices(names), t0, rank, _indices(roles)]
    order = np.lexsort(codes[::-1])
    ends = np.flatnonzero(np.any([np.diff(code[order]) != 0 for code in codes], axis=0)) + 1
    starts = np.concatenate(([0], ends)).astype(np.int64)
    firsts = order[starts]
    first_of_row = np.zeros(len(order), dtype=bool)
    first_of_row[firsts] = True
    candidate = np.where((t1 != -1) | first_of_row, np.arange(len(order)), -1)
    kept = np.maximum.reduceat(candidate[order], starts) if len(order) else np.zeros(0, dtype=np.int64)
    kept = kept[np.argsort(firsts, kind="stable")]
    if (t1[kept] == -1).any():
        return None
    if times_only:
        return {"t0": t0[kept], "t1": t1[kept], "rank": rank[kept]} | _coded_marks(names, codes[0][kept], roles,
                                                                                  codes[3][kept])
    name, role = _decoded(names, codes[0], kept), _decoded(roles, codes[3], kept)
    for values in (t0, t1):
        if values.dtype.kind == "f" and len(kept) and np.all(np.floor(values[kept]) == values[kept]):
            return None
    node = _texts(table.column("node"))[kept]
    columns = {"name": name, "t0": t0[kept], "t1": t1[kept], "node": node,
               "gpus": _tuples(table.column("gpus"))[kept], "rank": rank[kept], "role": role}
    by_time = np.lexsort((_codes(columns["name"]), columns["rank"], columns["t0"]))
    return {key: values[by_time] for key, values in columns.items()}


def _step_marks(name_is: Callable[[str], np.ndarray], role_is: Callable[[str], np.ndarray]) -> dict[str, np.ndarray]:
    """What numbering the steps reads of each phase's texts (_assign_steps): whether it opens a step (the rollout
    manager's rollout), is the trainer's, and is a train_wait. `name_is(text)`, `role_is(text)`: which phases have
    that name, that role."""
    return {"opens": name_is("rollout") & role_is("rollout_manager"), "trainer": role_is("train"),
            "waits": name_is("train_wait")}


def _text_marks(name: np.ndarray, role: np.ndarray) -> dict[str, np.ndarray]:
    """_step_marks of the phases' texts, row by row."""
    return _step_marks(lambda text: name == text, lambda text: role == text)


def _coded_marks(names: pa.DictionaryArray, name_codes: np.ndarray, roles: pa.DictionaryArray,
                 role_codes: np.ndarray) -> dict[str, np.ndarray]:
    """_step_marks of dictionary-encoded texts (the codes of the rows wanted): each distinct text compared once."""
    name, role = (np.asarray(encoded.dictionary.to_pylist(), dtype=object) for encoded in (names, roles))
    return _step_marks(lambda text: (name == text)[name_codes], lambda text: (role == text)[role_codes])


def _indices(encoded: pa.DictionaryArray) -> np.ndarray:
    """A number for each distinct text of a column (in no particular order): its dictionary code."""
    codes: np.ndarray = encoded.indices.to_numpy(zero_copy_only=False)
    return codes


def _decoded(encoded: pa.DictionaryArray, codes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The texts of some rows of a dictionary-encoded column, each distinct text made once and shared."""
    distinct: np.ndarray = np.asarray(encoded.dictionary.to_pylist(), dtype=object)
    texts: np.ndarray = distinct[codes[rows]]
    return texts


def _codes(texts: np.ndarray) -> np.ndarray:
    """Each text's rank among the distinct texts, in Python's order of strings."""
    return pd.factorize(texts, sort=True)[0]


def _texts(column: pa.ChunkedArray) -> np.ndarray:
    """A text column as objects, each distinct text made once and shared."""
    codes = column.combine_chunks().dictionary_encode()
    distinct = np.asarray(codes.dictionary.to_pylist(), dtype=object)
    texts: np.ndarray = distinct[codes.indices.to_numpy(zero_copy_only=False)]
    return texts


def _tuples(column: pa.ChunkedArray) -> np.ndarray:
    """A list column as tuples, each distinct list made once."""
    keys = pc.binary_join(pc.cast(column, pa.list_(pa.string())), ",").combine_chunks().dictionary_encode()
    made = np.empty(len(keys.dictionary), dtype=object)
    for at, text in enumerate(keys.dictionary.to_pylist()):
        made[at] = tuple(int(part) for part in text.split(",")) if text else ()
    tuples: np.ndarray = made[keys.indices.to_numpy(zero_copy_only=False)]
    return tuples


def _assign_steps(phases: dict[str, np.ndarray], marks: dict[str, np.ndarray], first_step: int) -> np.ndarray:
    """Number the steps: the k-th rollout and the k-th `train_wait` of rank 0 open step k; -1 for none.

    Every other trainer phase belongs to the step whose `train_wait` began last before it. `marks`: the phases'
    _step_marks.
    """
    rank, t0 = phases["rank"], phases["t0"]
    steps = np.full(len(rank), -1, dtype=np.int64)
    rollouts = marks["opens"]
    steps[rollouts] = np.arange(first_step, first_step + int(rollouts.sum()))
    trainer, waiting = marks["trainer"], marks["waits"]
    for one in np.unique(rank[trainer]):
        of_rank = trainer & (rank == one)
        waits = np.sort(t0[of_rank & waiting])
        # How many of the rank's train_waits began at or before each phase: that count numbers its step.
        count = np.searchsorted(waits, t0[of_rank], side="right")
        steps[of_rank] = np.where(count > 0, first_step + count - 1, -1)
    return steps


def _phase_frame(phases: dict[str, np.ndarray], steps: np.ndarray) -> pd.DataFrame:
    """The phases with their steps (Int64, missing where none)."""
    step = pd.arrays.IntegerArray(np.where(steps >= 0, steps, 0), steps < 0)
    if not len(steps):  # as pandas makes a frame of no rows: every column of objects
        return pd.DataFrame([], columns=PHASE_COLUMNS).assign(step=step)
    return pd.DataFrame({**phases, "step": step})


def _step_table(metric_steps: np.ndarray, metrics: dict[str, np.ndarray], phases: dict[str, np.ndarray],
                phase_steps: np.ndarray, events: pd.DataFrame) -> pd.DataFrame:
    """One row per step: its metrics, each phase's seconds (rank 0 and the rollout manager), its first start
    and last end, and the heat-guard pause it overlapped. Steps that only phases or only metrics know are rows too."""
    counted = _counted(phases["rank"], phase_steps)
    if not counted.any():
        index = pd.Index(metric_steps, name="step") if len(metric_steps) else pd.RangeIndex(0, name="step")
        columns = {**metrics, "t0": np.full(len(metric_steps), math.nan), "t1": np.full(len(metric_steps), math.nan)}
        return _with_heat(pd.DataFrame(columns, index=index), events)
    step, t0, t1 = phase_steps[counted], phases["t0"][counted], phases["t1"][counted]
    codes, names = pd.factorize(phases["name"][counted], sort=True)
    rows = np.unique(step)
    everything = _step_index(metric_steps, phases["rank"], phase_steps)
    columns = {key: _spread(values, metric_steps, everything) for key, values in metrics.items()}
    by_name = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[by_name], np.arange(len(names) + 1))
    sums = [_group_sum((t1 - t0)[of], step[of], rows) for of in (by_name[bounds[k]:bounds[k + 1]]
                                                                   for k in range(len(names)))]
    whole = all(found.all() for _, found in sums)
    for one, (total, found) in zip(names, sums, strict=True):
        columns[f"phase/{one}"] = _spread(total if whole else np.where(found, total, math.nan), rows, everything)
    first, last = np.full(len(rows), np.inf), np.full(len(rows), -np.inf)
    at = np.searchsorted(rows, step)
    np.minimum.at(first, at, t0)
    np.maximum.at(last, at, t1)
    columns["t0"] = _spread(first.astype(t0.dtype), rows, everything)
    columns["t1"] = _spread(last.astype(t1.dtype), rows, everything)
    return _with_heat(pd.DataFrame(columns, index=pd.Index(everything, name="step")), events)


def _counted(rank: np.ndarray, phase_steps: np.ndarray) -> np.ndarray:
    """Which phases the per-step table counts: rank 0's and the rollout manager's, of a step."""
    if not len(phase_steps):
        return np.zeros(0, dtype=bool)
    # One comparison a rank: np.isin sorts both arrays first, the slower for two ranks.
    counted: np.ndarray = np.logical_or.reduce([rank == one for one in COUNTED_RANKS]) & (phase_steps >= 0)
    return counted


def _step_index(metric_steps: np.ndarray, rank: np.ndarray, phase_steps: np.ndarray) -> np.ndarray:
    """The per-step table's steps, ascending: those that log a metric and those of a counted phase (a summary's
    table and a validated run's count of rows are both made here)."""
    counted = _counted(rank, phase_steps)
    return np.union1d(metric_steps, phase_steps[counted]) if counted.any() else metric_steps


def _group_sum(values: np.ndarray, groups: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each group's sum, added in row order as pandas' groupby adds (Kahan-compensated for floats), and which
    groups have any value."""
    at = np.searchsorted(rows, groups)
    found = np.zeros(len(rows), dtype=bool)
    found[at] = True
    if values.dtype.kind != "f":
        total = np.zeros(len(rows), dtype=values.dtype)
        np.add.at(total, at, values)
        return total, found
    total, compensation = np.zeros(len(rows)), np.zeros(len(rows))
    order = np.argsort(at, kind="stable")
    starts = np.searchsorted(at[order], np.arange(len(rows)))
    counts = np.bincount(at, minlength=len(rows))
    for k in range(int(counts.max()) if len(counts) else 0):  # the k-th value of every group at once
        has = counts > k
        value = values[order[starts[has] + k]]
        y = value - compensation[has]
        t = total[has] + y
        compensation[has] = np.where(np.isnan(t - total[has] - y), 0.0, t - total[has] - y)
        total[has] = t
    return total, found


def _spread(values: np.ndarray, rows: np.ndarray, everything: np.ndarray) -> np.ndarray:
    """Values at rows, placed at those rows of everything; NaN (and so floats) at the others."""
    if len(rows) == len(everything):
        return values
    spread = np.full(len(everything), math.nan)
    spread[np.searchsorted(everything, rows)] = values
    return spread


def _with_heat(steps: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """Whether a heat-guard pause overlapped the step, and by how many seconds."""
    pauses = events[events["kind"] == "heat_pause"] if len(events) else events
    t0, t1 = steps["t0"].to_numpy(dtype=float), steps["t1"].to_numpy(dtype=float)
    overlap, touched = np.zeros(len(steps)), np.zeros(len(steps), dtype=bool)
    for start, end in zip(pauses.get("t0", []), pauses.get("t1", []), strict=True):
        seconds = np.minimum(t1, end) - np.maximum(t0, start)
        overlap += np.where(np.isnan(seconds), 0.0, np.maximum(seconds, 0))
        touched |= (t0 <= end) & (t1 >= start)
    steps["heat_touched"] = touched
    steps["heat_pause_s"] = overlap
    return steps


# --- series and facts -------------------------------------------------------------------------


def _sampled_series(run: RunData, name: str) -> pd.DataFrame:
    """A sampled stream's series in the summary (its columns freed as it is made)."""
    frame = _series(run.streams.get(name, []), run.tables.get(name, []))
    return _host_memory(frame) if name == "host_memory" else frame


def _written_series(entry: summary_cache.EntryWriter) -> load.SampledHook:
    """load.SampledHook: a sampled stream's series written to the run's cache entry as soon as the stream is read,
    and the stream dropped from the run (taken); the time of its last sample kept for the run's window."""
    def write(run: RunData, name: str) -> None:
        frame = _sampled_series(run, name)
        run.taken.add(name)
        run.streams.pop(name, None)
        run.tables.pop(name, None)
        if "ts" in frame and len(frame):  # as _facts takes it from a series the summary holds
            run.last_samples[name] = float(frame["ts"].max())
        entry.add(f"series/{name}", frame)
        del frame
        pa.default_memory_pool().release_unused()
    return write


def _series(records: list[Record], tables: list[Columns]) -> pd.DataFrame:
    """A sampled stream: its records read line by line and its lines read as columns, in time order. The
    Arrow tables become one frame in one step, each column's batches freed once it is made (the caller's list of
    them is emptied), so a stream of millions of samples is never held twice."""
    if not tables:
        return _frame(records)
    table = pa.concat_tables([columns.table for columns in tables], promote_options="permissive")
    tables.clear()
    frame = _frame_of(table)
    if records:
        frame = pd.concat([frame, pd.DataFrame([rec.data for rec in records])], ignore_index=True)
    return _by_time(frame, "ts")


def _frame_of(table: pa.Table) -> pd.DataFrame:
    """table.to_pandas(), made a column at a time, each column's Arrow memory given back once it is made: a
    stream of millions of samples is never held twice. Texts read as codes (_columnar.with_text_codes) become
    text again, each distinct one shared."""
    arrays = {}
    while table.num_columns:
        name, column = table.column_names[0], table.column(0)
        table = table.remove_column(0)
        series = column.to_pandas()
        del column
        arrays[name] = np.asarray(series.cat.categories, dtype=object)[series.cat.codes.to_numpy()] \
            if isinstance(series.dtype, pd.CategoricalDtype) else series.to_numpy()
        del series
        pa.default_memory_pool().release_unused()
    return pd.DataFrame(arrays, copy=False)


def _by_time(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """The frame in the order of column (stable); as it is when it already is in that order (no copy)."""
    times = frame[column].to_numpy()
    if isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0 and frame.index.step == 1 \
            and times.dtype.kind in "if" and bool((times[1:] >= times[:-1]).all()):
        return frame
    return frame.sort_values(column, kind="stable").reset_index(drop=True)


def _frame(records: Iterable[Record], columns: list[str] | None = None) -> pd.DataFrame:
    frame = pd.DataFrame([rec.data for rec in records], columns=columns)
    if frame.empty:
        return frame  # nothing to sort (and sorting nothing costs a millisecond a run)
    order = "ts" if "ts" in frame.columns else "t0"
    return frame.sort_values(order, kind="stable").reset_index(drop=True) if order in frame.columns else frame


def _host_memory(frame: pd.DataFrame) -> pd.DataFrame:
    """Used memory as Ray reads it: MemTotal - MemAvailable."""
    kib_per_gib = 1024 * 1024
    used = frame["total_kib"] - frame["available_kib"]
    # Added in place (the frame is the summary's own): assign() would copy every column of every sample.
    frame["used_gib"] = used / kib_per_gib
    frame["total_gib"] = frame["total_kib"] / kib_per_gib
    frame["used_frac"] = used / frame["total_kib"]
    return frame


def _facts(summary: RunSummary, run: RunData, phases: dict[str, np.ndarray]) -> dict[str, Any]:
    steps, events = summary.steps, summary.events
    lasts = [float(frame["ts"].max()) for frame in summary.series.values() if "ts" in frame and len(frame)]
    lasts += run.last_samples.values()  # the series written to the cache as they were read (_written_series)
    start, end = _window(run, phases, lasts)
    nodes, node_names = pd.factorize(phases["node"])
    gpus, gpu_lists = pd.factorize(phases["gpus"])
    pairs = [(node_names[pair // len(gpu_lists)], gpu_lists[pair % len(gpu_lists)])
             for pair in np.unique(nodes * len(gpu_lists) + gpus).tolist()] if len(nodes) else []
    counts = collections.Counter(events["kind"].tolist()) if len(events) else {}
    return {
        "provenance": run.config.get("provenance"),
        "steps": len(steps),
        "clean_steps": int((~steps["heat_touched"]).sum()) if len(steps) else 0,
        "start_ts": start,
        "end_ts": end,
        "gpus_used": sorted({(node, gpu) for node, gpus in pairs for gpu in gpus}),
        "event_counts": {kind: counts[kind] for kind in sorted(counts)},
        # The launch arguments the run recorded (meta.json's args, or a log's): the chapters' commands.
        "args": dict(args) if isinstance(args := run.meta.get("args"), dict) else {},
    }


# --- cache ------------------------------------------------------------------------------------

def _read_validated(cache_dir: Path | None, warnings: list[str]) -> dict[str, dict[str, Any]]:
    """The runs that passed before, by run id (summary_cache.read_validated); empty when damaged or absent."""
    if cache_dir is None:
        return {}
    try:
        return summary_cache.read_validated(cache_dir)
    except ValueError as error:
        warnings.append(f"build/cache: a damaged cache file was discarded and the runs it held are validated "
                        f"again ({error})")
        return {}


def _validated(run_id: str, record: dict[str, Any], metrics: Collection[str]) -> ValidatedRun:
    """The run a record remembers, with the facts of the metrics asked for (the record holds them all)."""
    return ValidatedRun(run_id, record["config"], float(record["start_ts"]), float(record["end_ts"]),
                        list(record["warnings"]), steps=int(record["steps"]),
                        metrics={name: summary_cache.facts_from_record(record["metrics"][name]) for name in metrics})


def _record(digest: str, run: RunSummary | ValidatedRun, known: dict[str, Any]) -> dict[str, Any]:
    """What validated.json remembers of a run that passed: the metric facts already known of its input (`known`)
    and those taken now. A summarised run takes none (that would decode its table): it is validated again if it is
    ever read only for facts its record lacks."""
    start, end = _time_span(run)
    if isinstance(run, ValidatedRun):
        steps, metrics = run.steps, {**known, **{name: summary_cache.facts_record(facts)
                                                 for name, facts in run.metrics.items()}}
    else:
        steps, metrics = int(run.facts["steps"]), known
    return {"digest": digest, "config": run.config, "start_ts": start, "end_ts": end, "warnings": list(run.warnings),
            "steps": steps, "metrics": metrics, "facts_format": summary_cache.FACTS_FORMAT}


def _records(known: dict[str, dict[str, Any]], digests: dict[Path, str], read: set[str],
             runs: _Runs) -> dict[str, dict[str, Any]]:
    """What validated.json holds after this check: every run present that passed (whatever problems the others
    have: a run fixed later is the only one read again), the record already known when the run was not read. A run
    summarised now keeps the metric facts its record of the same input held (`make check ALL=1` forgets none)."""
    records = {}
    for path, digest in digests.items():
        old = known.get(path.name)
        same = old if old is not None and old["digest"] == digest else None
        if path.name not in read and same is not None:
            records[path.name] = same
        elif (run := runs.passed(path.name)) is not None:
            records[path.name] = _record(digest, run, same["metrics"] if same is not None else {})
    return records


class _CachedSummary(RunSummary):
    """A summary from the cache: each of its tables is decoded from Parquet the first time it is used."""

    def __getattr__(self, name: str) -> Any:  # only called for an attribute not yet set
        if name in ("steps", "phases", "events") and "_tables" in self.__dict__:
            setattr(self, name, self.__dict__["_tables"](name.__eq__)[name])
            return getattr(self, name)
        if name == "series" and "_tables" in self.__dict__:
            self.series = summary_cache.series_of(self.__dict__["_tables"](lambda table: table.startswith("series/")))
            return self.series
        if name == "axes" and "_tables" in self.__dict__:
            self.axes = summary_cache.axes_of(self.__dict__["_tables"](lambda table: table.startswith("axis/")))
            return self.axes
        raise AttributeError(name)


def _read_cache(cache_dir: Path | None, run_dir: Path, digest: str, warnings: list[str]) -> RunSummary | None:
    if cache_dir is None:
        return None
    try:
        entry = summary_cache.read_entry(cache_dir, run_dir.name, digest)
    except ValueError as error:
        warnings.append(f"build/cache: a damaged cache entry was discarded and the run read again ({error})")
        return None
    if entry is None:
        return None
    tables, body = entry
    summary = _CachedSummary.__new__(_CachedSummary)
    summary.__dict__.update(run_id=body["run_id"], config=body["config"], facts=summary_cache.facts_of(body),
                            warnings=list(body["warnings"]), source_hash=digest, _tables=tables)
    return summary


def _write_cache(cache_dir: Path | None, run_dir: Path, digest: str, summary: RunSummary) -> None:
    if cache_dir is None:
        return
    summary_cache.write_entry(cache_dir, run_dir.name, digest, *summary_cache.summary_parts(summary))


def describe(summary: RunSummary) -> str:
    """One line per run for `make check`: what it is and how much of it there is."""
    facts, config = summary.facts, summary.config
    hours = (facts["end_ts"] - facts["start_ts"]) / 3600 if facts["steps"] else 0.0
    events = ", ".join(f"{count} {kind}" for kind, count in facts["event_counts"].items()) or "no events"
    return (f"{summary.run_id:<24} {facts['provenance']:<8} {config['model']['name']:<11} "
            f"{facts['steps']:>3} steps ({facts['clean_steps']} clean)  {hours:4.1f} h  {events}  "
            f"[{', '.join(config.get('tags', []))}]")
