"""Stage 2: reduce each run to the summary that figures, tables and claims read (never the raw files).

A summary is a per-step table (every metric, every phase's duration, whether a heat-guard pause touched
the step), the run's events and sampled series, and run-level facts. It is cached by the content of its
inputs, so an unchanged run is not read again.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from build_tools.core import _workers
from build_tools.core._exceptions import InputProblem, Problem, RunDataError, cache_changed, display_path
from build_tools.core._files import FileStat, Seen, hashing_reads, read_text, scan_tree
from build_tools.core._types import MetricFacts, RunData, RunsRead, RunSummary, ValidatedRun
from build_tools.core._yaml import load_yaml
from build_tools.ingest import axes, load, stream_columns
from build_tools.store import summary_cache
from build_tools.store.run_hash import input_hash, memo_stale, present, read_memo, write_memo
from build_tools.summarise import last_read
from build_tools.summarise.summary_metrics import MetricTable, _axis_frames, _join, _metric_tables
from build_tools.summarise.summary_phases import (
    _assign_steps,
    _facts,
    _frame,
    _phase_columns,
    _phase_frame,
    _sampled_series,
    _spread,
    _step_index,
    _step_table,
    _text_marks,
    _window,
    _written_series,
)

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
    with ProcessPoolExecutor(count, mp_context=_workers.context([__name__]), initializer=stream_columns.share_cores,
                             initargs=(count,)) as pool:
        yield from pool.map(function, jobs, chunksize=chunk_size(len(jobs), count))


def summarise_runs(runs_dir: Path, cache_dir: Path | None = None, *, warnings: list[str] | None = None,
                   latest: dt.date | None = None, summariser: Summariser | None = None,
                   wanted: Wanted | None = None,
                   validated: dict[str, ValidatedRun] | None = None,
                   read: RunsRead | None = None, keep: bool = False) -> dict[str, RunSummary]:
    """Summaries of the runs under runs_dir, by run id; cached under cache_dir by input content.

    Warnings about the cache, and those of the runs validated only, go to `warnings`; `latest` is the
    edition's date, after which no run may end; `summariser` reads the runs that the cache does not hold
    (default: a local process pool for many runs; Summariser). With `wanted`, only the runs it wants are
    summarised; every other one is validated (by the same summariser), remembered by its input hash in the
    cache, and handed back in `validated`. `read` receives the listing of runs/ and each run's input hash (for
    the key of the inputs recorded after a check or build). Every problem of every run is raised at once
    (RunDataError). `keep` (`make serve`'s process, with a cache_dir and the local pool): the outcome is kept, and
    served again while the walk of runs/ and the cache files are as this call left them (last_read.py).
    """
    warnings = warnings if warnings is not None else []
    problems: list[Problem] = []
    listings: dict[str, list[FileStat]] = {}
    started = last_read.now()
    paths = load.run_folders(runs_dir, problems, listings)
    if problems:  # a link out of the project or a FIFO: nothing under runs/ is read
        raise RunDataError(problems)
    keep = keep and cache_dir is not None and summariser is None
    asked = last_read.asked(wanted, latest)
    if keep and (kept := last_read.served(last_read.key(runs_dir, cache_dir, paths, listings, asked))):
        return _replayed(kept, listings, warnings, validated, read)
    added_from = len(warnings)
    memo, known = read_memo(cache_dir), _read_validated(cache_dir, warnings)
    memo_read = dict(memo) if memo is not None else None
    root = runs_dir.resolve()
    # A run the cache knows nothing of is hashed by the worker that reads it (a local one, or Ray's).
    unknown = _unknown_runs(cache_dir, known)
    runs = _Runs(cache_dir, memo, listings, last_read.held if keep else None)
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
            summary_cache.write_validated(cache_dir, records, known)
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
    summaries = dict(sorted(runs.summaries.items()))
    if keep:
        last_read.held.let_go_of_unused()
        last_read.keep(last_read.key(runs_dir, cache_dir, paths, listings, asked), last_read.Outcome(
            summaries, dict(sorted(runs.validated.items())), {path.name: digest for path, digest in digests.items()},
            warnings[added_from:]), started)
    return summaries


def _replayed(kept: last_read.Outcome, listings: dict[str, list[FileStat]], warnings: list[str],
              validated: dict[str, ValidatedRun] | None, read: RunsRead | None) -> dict[str, RunSummary]:
    """The last call's outcome, told as that call told it (its warnings, the validated runs, the walk's listing)."""
    warnings += kept.warnings
    if validated is not None:
        validated.update(kept.validated)
    if read is not None:
        read.listings.update(listings)
        read.digests.update(kept.digests)
    return dict(kept.summaries)


class _Runs:
    """The runs of one summarise_runs: their input hashes, which are summarised, which only validated, and what
    came of each."""

    def __init__(self, cache_dir: Path | None, memo: dict[str, Any] | None,
                 listings: dict[str, list[FileStat]], held: last_read.Held | None = None) -> None:
        self.cache_dir, self.memo, self.listings = cache_dir, memo, listings
        self.held = held  # make serve's: the summaries and validated runs of the last call, by input hash
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
                    self.validated[path.name] = self._replayed(path.name, digest, record, metrics)
            elif (cached := self._cached(path, digest, warnings)) is not None:
                self.summaries[path.name] = cached
            else:
                to_read.append(Job(path, True, None, digest, self.cache_dir))
        return to_read

    def _replayed(self, run_id: str, digest: str, record: dict[str, Any], metrics: tuple[str, ...]) -> ValidatedRun:
        """The run its record remembers (of this input hash), as the last call of make serve's session made it."""
        if self.held is None:
            return _validated(run_id, record, metrics)
        held = self.held.validated(run_id, digest, metrics)
        return held or self.held.hold_validated(run_id, digest, metrics, _validated(run_id, record, metrics))

    def _cached(self, path: Path, digest: str, warnings: list[str]) -> RunSummary | None:
        """The summary the cache holds for this input hash, as the last call of make serve's session took it."""
        held = self.held.summary(path.name, digest) if self.held is not None else None
        if held is not None:
            return held
        cached = _read_cache(self.cache_dir, path, digest, warnings)
        return cached if cached is None or self.held is None else self.held.hold_summary(path.name, digest, cached)

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
            return kept if self.held is None else self.held.hold_summary(path.name, digest, kept)
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
                            warnings=list(body["warnings"]), source_hash=digest, _tables=tables,
                            **{summary_cache.TABLE_DIGESTS: summary_cache.table_digests(body)})
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
