"""Stage 2: reduce each run to the summary that figures, tables and claims read (never the raw files).

A summary is a per-step table (every metric, every phase's duration, whether a heat-guard pause touched
the step), the run's events and sampled series, and run-level facts. It is cached by the content of its
inputs, so an unchanged run is not read again.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import math
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from . import _fingerprint, _summary_cache, load
from ._exceptions import InputProblem, Problem, RunDataError, display_path
from ._files import FileStat, read_text, scan_tree
from ._staging import write_atomic
from ._types import Record, RunData
from ._yaml import load_yaml

# Trainer phases are counted once per step (rank 0); the rollout manager writes rank -1.
COUNTED_RANKS = (0, -1)
HAND_OFF_PHASES = ("sleep", "wake_up", "update_weights")


def is_time(name: str) -> bool:
    """Whether a value is a time: the one rule. Time values hold only for steps no heat-guard pause touched
    (the heat rule of chapter 5), so every reader of a time reads the clean steps."""
    return name.startswith(("perf/", "phase/")) or name.endswith("_time")


@dataclass
class RunSummary:
    """What the manual reads of one run; figures, checks and tables read its values through readers.py."""

    run_id: str
    config: dict[str, Any]
    steps: pd.DataFrame  # index `step`; metric keys, `phase/<name>` seconds, `t0`, `t1`, `heat_touched`
    phases: pd.DataFrame  # name, t0, t1, step, role, rank, node, gpus
    events: pd.DataFrame  # kind, t0, t1, detail
    series: dict[str, pd.DataFrame]  # the sampled streams (gpu_util, host_memory, held_memory, ...)
    facts: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    source_hash: str = ""

    @property
    def clean_steps(self) -> pd.DataFrame:
        """Steps no heat-guard pause touched: the only ones whose time values the manual quotes."""
        return self.steps[~self.steps["heat_touched"]]


# --- the stage --------------------------------------------------------------------------------


# Reads and summarises runs not in the cache: serially, in a local process pool, or as Ray tasks (_ray.py).
# Each result pairs with its path: (the summary, or None and the problems that rejected the run).
Summariser = Callable[[Sequence[Path]], Iterable[tuple[RunSummary | None, list[Problem]]]]
# Below this many runs to read, starting worker processes costs more than it saves.
POOL_FROM = 24


@dataclass(frozen=True)
class Wanted:
    """The runs to summarise: those a figure or check names (`ids`), and those whose run.yaml one of a
    table's run sets selects (`by_config`, for the site's Metrics page). Every other run is validated (every
    rule of the loader, its dates) but not summarised: nothing would read its summary."""

    ids: frozenset[str] = frozenset()
    by_config: Callable[[Mapping[str, Any]], bool] | None = None

    def wants(self, run_id: str, config: Mapping[str, Any] | None) -> bool:
        return run_id in self.ids or (self.by_config is not None and config is not None and self.by_config(config))


@dataclass
class ValidatedRun:
    """What is kept of a run that passed its checks without being summarised: enough for the edition's
    checks of every run (its Miles commit, its dates) and for deciding whether a table reads it."""

    run_id: str
    config: dict[str, Any]
    start_ts: float
    end_ts: float
    warnings: list[str] = field(default_factory=list)


def summarise_serially(paths: Sequence[Path]) -> list[tuple[RunSummary | None, list[Problem]]]:
    return [load_and_summarise(path) for path in paths]


def summarise_in_pool(paths: Sequence[Path], workers: int | None = None) -> Iterator[tuple[RunSummary | None,
                                                                                         list[Problem]]]:
    """Each run read and summarised in a worker process (a fresh interpreter, like draw.py's), the results
    handed on one at a time, so that a thousand runs are never all in memory at once."""
    return _in_pool(load_and_summarise, paths, workers)


def _read_run(job: tuple[Path, bool]) -> tuple[RunSummary | ValidatedRun | None, list[Problem]]:
    """One run summarised, or only validated: the local path's one task, so that one pool does both."""
    path, summarise_it = job
    return load_and_summarise(path) if summarise_it else load_and_validate(path)


def _in_pool(function: Callable[[Any], Any], jobs: Sequence[Any], workers: int | None = None) -> Iterator[Any]:
    count = min(workers or os.cpu_count() or 1, len(jobs))
    if count <= 1 or len(jobs) < POOL_FROM:
        yield from (function(job) for job in jobs)
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    with ProcessPoolExecutor(count, mp_context=context) as pool:
        yield from pool.map(function, jobs, chunksize=max(1, len(jobs) // (count * 8)))


def summarise_runs(runs_dir: Path, cache_dir: Path | None = None, *, warnings: list[str] | None = None,
                   latest: dt.date | None = None, summariser: Summariser | None = None,
                   wanted: Wanted | None = None,
                   validated: dict[str, ValidatedRun] | None = None) -> dict[str, RunSummary]:
    """Summaries of the runs under runs_dir, by run id; cached under cache_dir by input content.

    Warnings about the cache, and those of the runs validated only, go to `warnings`; `latest` is the
    edition's date, after which no run may end; `summariser` reads the runs to summarise that the cache does
    not hold (default: a local process pool for many runs). With `wanted`, only the runs it wants are
    summarised; every other one is validated (a local pool), remembered by its input hash in the cache, and
    handed back in `validated`. Every problem of every run is raised at once (RunDataError).
    """
    warnings = warnings if warnings is not None else []
    problems: list[Problem] = []
    listings: dict[str, list[FileStat]] = {}
    paths = load.run_folders(runs_dir, problems, listings)
    if problems:  # a link out of the project or a FIFO: nothing under runs/ is read
        raise RunDataError(problems)
    memo, known = _read_memo(cache_dir), _read_validated(cache_dir, warnings)
    memo_read = dict(memo) if memo is not None else None
    root = runs_dir.resolve()
    digests = {path: input_hash(path, memo, listings.get(path.name), key=f"{root}/{path.name}") for path in paths}
    runs = _Runs(digests, cache_dir)
    to_read = runs.plan(known, wanted, warnings)
    found = runs.read(to_read, summariser)
    if cache_dir is not None:
        if memo is not None and (memo := _present(memo, root, paths)) != memo_read:
            _write_memo(cache_dir, memo)
        records = _records(known, digests, {path.name for path, _ in to_read}, runs)
        if records != known:  # the records kept are known's own: comparing them costs nothing
            cache_dir.mkdir(parents=True, exist_ok=True)
            _summary_cache.write_validated(cache_dir, records)
    shown = Path(display_path(runs_dir))
    for path in paths:  # every problem in the order of the runs, each run's dates checked
        problems += found.get(path.name, [])
        if (run := runs.passed(path.name)) is not None:
            problems += load.time_problems(str(shown / path.name / "run.yaml"), run.config, *_window(run), latest)
    if problems:
        raise RunDataError(problems)
    warnings += [warning for run in runs.validated.values() for warning in run.warnings]
    if validated is not None:
        validated.update(sorted(runs.validated.items()))
    return dict(sorted(runs.summaries.items()))


class _Runs:
    """The runs of one summarise_runs: which are summarised, which only validated, and what came of each."""

    def __init__(self, digests: dict[Path, str], cache_dir: Path | None) -> None:
        self.digests, self.cache_dir = digests, cache_dir
        self.summaries: dict[str, RunSummary] = {}
        self.validated: dict[str, ValidatedRun] = {}

    def passed(self, run_id: str) -> RunSummary | ValidatedRun | None:
        return self.summaries.get(run_id) or self.validated.get(run_id)

    def plan(self, known: dict[str, dict[str, Any]], wanted: Wanted | None,
             warnings: list[str]) -> list[tuple[Path, bool]]:
        """Take what the cache holds; the runs to read, each with whether to summarise it (or only validate it)."""
        to_read: list[tuple[Path, bool]] = []
        for path, digest in self.digests.items():
            record = known.get(path.name)
            record = record if record is not None and record["digest"] == digest else None
            if wanted is not None and not wanted.wants(path.name, record["config"] if record else _peek(path, wanted)):
                if record is None:
                    to_read.append((path, False))
                else:
                    self.validated[path.name] = _validated(path.name, record)
            elif (cached := _read_cache(self.cache_dir, path, digest, warnings)) is not None:
                self.summaries[path.name] = cached
            else:
                to_read.append((path, True))
        return to_read

    def read(self, to_read: list[tuple[Path, bool]], summariser: Summariser | None) -> dict[str, list[Problem]]:
        """Read the runs (summarised ones written to the cache as they come); the problems of each, by run id."""
        found: dict[str, list[Problem]] = {}
        for (path, _), (result, problems) in zip(to_read, _read_runs(to_read, summariser), strict=True):
            found[path.name] = problems
            if isinstance(result, ValidatedRun):
                self.validated[path.name] = result
            elif result is not None:
                digest = self.digests[path]
                result.source_hash = digest
                _write_cache(self.cache_dir, path, digest, result)
                # Kept as the cache holds it, its tables decoded again only if a figure, check or table reads
                # them: the runs nobody reads cost memory only while they are summarised.
                self.summaries[path.name] = _read_cache(self.cache_dir, path, digest, []) or result
        return found


def _read_runs(jobs: Sequence[tuple[Path, bool]], summariser: Summariser | None) \
        -> Iterator[tuple[RunSummary | ValidatedRun | None, list[Problem]]]:
    """The results of the jobs in their order: the local path reads all of them in one pool; another
    summariser (Ray) summarises, and the runs only validated are read here."""
    if summariser is None:
        yield from _in_pool(_read_run, jobs)
        return
    summarised = iter(summariser([path for path, summarise_it in jobs if summarise_it]))
    validated = _in_pool(_read_run, [job for job in jobs if not job[1]])
    for _, summarise_it in jobs:
        yield next(summarised) if summarise_it else next(validated)


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


def _window(run: RunSummary | ValidatedRun) -> tuple[float, float]:
    if isinstance(run, ValidatedRun):
        return run.start_ts, run.end_ts
    return run.facts["start_ts"], run.facts["end_ts"]


def load_and_summarise(path: Path) -> tuple[RunSummary | None, list[Problem]]:
    """One run from disk to its summary; None with the problems when anything is wrong."""
    problems: list[Problem] = []
    run = load.load_run(path, problems)
    if not problems:
        return summarise(run, problems), problems
    try:  # still look for the problems only the summary finds (a step logged twice), to list them all at once
        summarise(run, problems)
    except Exception:  # noqa: BLE001 - the run is already rejected; what is missing from it may trip the summary
        pass
    return None, problems


def load_and_validate(path: Path) -> tuple[ValidatedRun | None, list[Problem]]:
    """One run from disk through every rule that could reject it, without summarising it: the loader's, and
    the summary's one rule of the data (a step logged twice with different values); None with the problems
    when anything is wrong."""
    problems: list[Problem] = []
    run = load.load_run(path, problems)
    try:
        _metric_table(run.streams.get("metrics", []), problems)
    except Exception:  # noqa: BLE001 - only ever reached for a run the loader rejected (as in load_and_summarise)
        if not problems:
            raise
    if problems:
        return None, problems
    return ValidatedRun(run.run_id, run.config, *run_window(run), warnings=list(run.warnings)), []


def run_window(run: RunData) -> tuple[float, float]:
    """The times of the run's first and last records, as its summary's facts `start_ts` and `end_ts` give
    them (meta.json's start if it has one; the end is the last closed phase, event or sample), read from the
    loaded records without summarising them."""
    closed: dict[tuple[Any, ...], float] = {}
    for rec in run.streams.get("phases", []):  # as _phases keeps them: a phase never closed is dropped
        data = rec.data
        key = (data["name"], data["t0"], data["rank"], data["role"])
        if data["t1"] != -1 or key not in closed:
            closed[key] = data["t1"]
    times = [time for (_, t0, _, _), t1 in closed.items() if t1 != -1 for time in (t0, t1)]
    times += [rec.data["t1"] for rec in run.streams.get("events", [])]
    for name in {*run.streams, *run.tables} - {"metrics", "phases", "events"}:
        stamps = [rec.data["ts"] for rec in run.streams.get(name, []) if "ts" in rec.data]
        stamps += [pc.max(table["ts"]).as_py() for table in run.tables.get(name, []) if "ts" in table.column_names]
        stamps = [stamp for stamp in stamps if stamp is not None and not math.isnan(stamp)]
        if stamps:
            times.append(max(stamps))
    return float(run.meta.get("start_ts", min(times, default=math.nan))), float(max(times, default=math.nan))


def summarise(run: RunData, problems: list[Problem]) -> RunSummary:
    """Reduce one loaded run; merge conflicts are appended to problems."""
    # A rollout left open by an engine death the lab recorded is explained by the data: no warning for it.
    deaths = [float(rec.data["t0"]) for rec in run.streams.get("events", []) if rec.data.get("kind") == "engine_death"]
    phases = _phases(run.streams.get("phases", []), run.warnings, deaths)
    steps, non_finite = _metric_table(run.streams.get("metrics", []), problems)
    events = _frame(run.streams.get("events", []), ["kind", "t0", "t1", "detail"])
    phases = _assign_steps(phases, first_step=int(steps.index.min()) if len(steps) else 0)
    steps = _add_phase_columns(steps, phases)
    steps = _add_heat_columns(steps, events)
    series = {name: _series(records, run.tables.get(name, [])) for name, records in run.streams.items()
              if name not in ("metrics", "phases", "events")}
    if "host_memory" in series:
        series["host_memory"] = _host_memory(series["host_memory"])
    summary = RunSummary(run.run_id, run.config, steps, phases, events, series, warnings=list(run.warnings))
    summary.facts = _facts(summary, run) | {"non_finite": non_finite}
    return summary


# --- metrics ----------------------------------------------------------------------------------


def _metric_table(records: Iterable[Record], problems: list[Problem]) -> tuple[pd.DataFrame, dict[str, dict[str, str]]]:
    """One row per step: the trainer's and the rollout manager's lines for the step merged.

    `rollout/*` and `perf/*` are logged against `rollout/step`, `train/*` against `train/step`; with one
    optimizer step per rollout (as in every run of this manual) both count the same steps.
    """
    rows: dict[int, dict[str, Any]] = {}
    origin: dict[tuple[int, str], tuple[str, int]] = {}
    non_finite: dict[str, dict[str, str]] = {}  # metric -> step -> "NaN" / "Infinity" / "-Infinity"
    for rec in records:
        key, step = rec.data["step_key"], rec.data["step"]
        if key not in ("rollout/step", "train/step") or step is None:
            continue
        row = rows.setdefault(step, {})
        for name, value in rec.data["metrics"].items():
            if isinstance(value, str) or name in ("rollout/step", "train/step"):
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
                non_finite.setdefault(name, {})[str(step)] = "NaN" if math.isnan(value) else \
                    ("Infinity" if value > 0 else "-Infinity")
    table = pd.DataFrame.from_dict(rows, orient="index").sort_index()
    table.index.name = "step"
    return table, non_finite


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


# --- phases -----------------------------------------------------------------------------------


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
    columns = ["name", "t0", "t1", "node", "gpus", "rank", "role"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values(["t0", "rank", "name"], kind="stable").reset_index(drop=True)


def _assign_steps(phases: pd.DataFrame, first_step: int) -> pd.DataFrame:
    """Number the steps: the k-th rollout and the k-th `train_wait` of rank 0 open step k.

    Every other trainer phase belongs to the step whose `train_wait` began last before it.
    """
    phases = phases.copy()
    steps = np.full(len(phases), -1, dtype=np.int64)
    rollouts = ((phases["name"] == "rollout") & (phases["role"] == "rollout_manager")).to_numpy()
    steps[rollouts] = np.arange(first_step, first_step + int(rollouts.sum()))
    trainer = (phases["role"] == "train").to_numpy()
    for rank in phases.loc[trainer, "rank"].unique():
        of_rank = trainer & (phases["rank"] == rank).to_numpy()
        waits = np.sort(phases.loc[of_rank & (phases["name"] == "train_wait").to_numpy(), "t0"].to_numpy())
        # How many of the rank's train_waits began at or before each phase: that count numbers its step.
        count = np.searchsorted(waits, phases.loc[of_rank, "t0"].to_numpy(), side="right")
        steps[of_rank] = np.where(count > 0, first_step + count - 1, -1)
    phases["step"] = pd.array(np.where(steps >= 0, steps, 0), dtype="Int64")
    phases.loc[steps < 0, "step"] = pd.NA
    return phases


def _add_phase_columns(steps: pd.DataFrame, phases: pd.DataFrame) -> pd.DataFrame:
    counted = phases[phases["rank"].isin(COUNTED_RANKS) & phases["step"].notna()]
    if counted.empty:
        return steps.assign(t0=math.nan, t1=math.nan)
    durations = (counted["t1"] - counted["t0"]).groupby([counted["step"], counted["name"]]).sum().unstack()
    durations.columns = [f"phase/{name}" for name in durations.columns]
    bounds = counted.groupby("step").agg(t0=("t0", "min"), t1=("t1", "max"))
    joined = steps.join(durations.join(bounds), how="outer")
    joined.index = joined.index.astype(int)
    joined.index.name = "step"
    return joined


def _add_heat_columns(steps: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """Whether a heat-guard pause overlapped the step, and by how many seconds."""
    pauses = events[events["kind"] == "heat_pause"] if len(events) else events
    overlap = pd.Series(0.0, index=steps.index)
    for _, pause in pauses.iterrows():
        start = steps["t0"].clip(lower=pause["t0"])
        end = steps["t1"].clip(upper=pause["t1"])
        overlap += (end - start).clip(lower=0).fillna(0)
    touched = pd.Series(False, index=steps.index)
    for _, pause in pauses.iterrows():
        touched |= (steps["t0"] <= pause["t1"]) & (steps["t1"] >= pause["t0"])
    return steps.assign(heat_touched=touched.astype(bool), heat_pause_s=overlap)


# --- series and facts -------------------------------------------------------------------------


def _series(records: list[Record], tables: list[pa.Table]) -> pd.DataFrame:
    """A sampled stream: its records read line by line and its files read as columns, in time order. The
    files' Arrow tables become one frame in one step (no copy per file)."""
    if not tables:
        return _frame(records)
    frame: pd.DataFrame = pa.concat_tables(tables, promote_options="permissive").to_pandas()
    if records:
        frame = pd.concat([frame, pd.DataFrame([rec.data for rec in records])], ignore_index=True)
    return frame.sort_values("ts", kind="stable").reset_index(drop=True)


def _frame(records: Iterable[Record], columns: list[str] | None = None) -> pd.DataFrame:
    frame = pd.DataFrame([rec.data for rec in records], columns=columns)
    order = "ts" if "ts" in frame.columns else "t0"
    return frame.sort_values(order, kind="stable").reset_index(drop=True) if order in frame.columns else frame


def _host_memory(frame: pd.DataFrame) -> pd.DataFrame:
    """Used memory as Ray reads it: MemTotal - MemAvailable."""
    kib_per_gib = 1024 * 1024
    used = frame["total_kib"] - frame["available_kib"]
    return frame.assign(used_gib=used / kib_per_gib, total_gib=frame["total_kib"] / kib_per_gib,
                        used_frac=used / frame["total_kib"])


def _facts(summary: RunSummary, run: RunData) -> dict[str, Any]:
    phases, steps = summary.phases, summary.steps
    # The run ends with its last record of any kind: an idle job still samples its GPU after the last step.
    times = [*phases["t0"], *phases["t1"], *summary.events.get("t1", [])]
    times += [t for frame in summary.series.values() if "ts" in frame for t in (frame["ts"].max(),)]
    gpus = sorted({(node, gpu) for node, gpus in zip(phases["node"], phases["gpus"], strict=True) for gpu in gpus})
    return {
        "provenance": run.config.get("provenance"),
        "steps": len(steps),
        "clean_steps": int((~steps["heat_touched"]).sum()) if len(steps) else 0,
        "start_ts": float(run.meta.get("start_ts", min(times, default=math.nan))),
        "end_ts": float(max(times, default=math.nan)),
        "gpus_used": gpus,
        "event_counts": summary.events["kind"].value_counts().sort_index().to_dict() if len(summary.events) else {},
    }


# --- cache ------------------------------------------------------------------------------------

_CODE_FILES = ("load.py", "summary.py", "schemas.py", "_files.py", "_yaml.py", "_summary_cache.py", "_columnar.py")


@functools.cache
def _code_digest() -> bytes:
    """The code that reads and summarises a run, and the library versions: a change makes every cached summary
    stale."""
    here = Path(__file__).parent
    readers = sorted((here / "sources").glob("*.py"))  # the readers of log/, tensorboard/, wandb/, ...
    return _fingerprint.Key("summary code").files(here, [*(here / name for name in _CODE_FILES), *readers]).digest()


def input_hash(run_dir: Path, memo: dict[str, Any] | None = None, listing: list[FileStat] | None = None,
               key: str | None = None) -> str:
    """Hash of every file of the run, of the code that reads it and of the library versions (`_fingerprint`).

    With a memo (kept in the cache folder), a run whose files have the same names, sizes and modification
    times as when it was last hashed is not read again: a warm check stats files instead of hashing gigabytes.
    `listing` is the run's files as load.run_folders found them (default: listed here), `key` the run's
    name in the memo (default: its resolved path).
    """
    files = listing if listing is not None else scan_tree(run_dir, run_dir.resolve())[1]
    stats = hashlib.sha256(repr(files).encode()).hexdigest()  # names, sizes and times, in a few bytes
    key, code = key or str(run_dir.resolve()), _code_digest().hex()
    if memo is not None and memo.get(key, {}).get("stats") == stats and memo[key].get("code") == code:
        return str(memo[key]["digest"])
    digest = _fingerprint.Key("run").add(_code_digest()).files(
        run_dir, [run_dir / relative for relative, _, _ in files]).hexdigest()
    if memo is not None:
        memo[key] = {"stats": stats, "code": code, "digest": digest}
    return digest


_MEMO = "input-hashes.json"


def _read_memo(cache_dir: Path | None) -> dict[str, Any] | None:
    """The memo of input hashes; empty when absent or unreadable (it is only ever a shortcut)."""
    if cache_dir is None:
        return None
    try:
        memo = json.loads((cache_dir / _MEMO).read_text(encoding="utf-8"))
        return memo if isinstance(memo, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_memo(cache_dir: Path | None, memo: dict[str, Any] | None) -> None:
    if cache_dir is None or memo is None:
        return
    cache_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(cache_dir / _MEMO, json.dumps(memo, sort_keys=True).encode())


def _read_validated(cache_dir: Path | None, warnings: list[str]) -> dict[str, dict[str, Any]]:
    """The runs that passed before, by run id (_summary_cache.read_validated); empty when damaged or absent."""
    if cache_dir is None:
        return {}
    try:
        return _summary_cache.read_validated(cache_dir)
    except ValueError as error:
        warnings.append(f"build/cache: a damaged cache file was discarded and the runs it held are validated "
                        f"again ({error})")
        return {}


def _validated(run_id: str, record: dict[str, Any]) -> ValidatedRun:
    return ValidatedRun(run_id, record["config"], float(record["start_ts"]), float(record["end_ts"]),
                        list(record["warnings"]))


def _record(digest: str, run: RunSummary | ValidatedRun) -> dict[str, Any]:
    start, end = _window(run)
    return {"digest": digest, "config": run.config, "start_ts": start, "end_ts": end, "warnings": list(run.warnings)}


def _present(memo: dict[str, Any], root: Path, paths: Sequence[Path]) -> dict[str, Any]:
    """The memo without the runs that are gone."""
    present = {f"{root}/{path.name}" for path in paths}
    return {key: value for key, value in memo.items() if key in present}


def _records(known: dict[str, dict[str, Any]], digests: dict[Path, str], read: set[str],
             runs: _Runs) -> dict[str, dict[str, Any]]:
    """What validated.json holds after this check: every run present that passed (whatever problems the others
    have: a run fixed later is the only one read again), the record already known when the run was not read."""
    records = {}
    for path, digest in digests.items():
        old = known.get(path.name)
        if path.name not in read and old is not None and old["digest"] == digest:
            records[path.name] = old
        elif (run := runs.passed(path.name)) is not None:
            records[path.name] = _record(digest, run)
    return records


class _CachedSummary(RunSummary):
    """A summary from the cache: its tables are decoded from Parquet the first time one is used."""

    def __getattr__(self, name: str) -> Any:  # only called for an attribute not yet set
        if name in ("steps", "phases", "events", "series") and "_tables" in self.__dict__:
            frames = self.__dict__.pop("_tables")()
            self.steps, self.phases, self.events = frames["steps"], frames["phases"], frames["events"]
            self.series = {key.removeprefix("series/"): frame for key, frame in frames.items()
                           if key.startswith("series/")}
            return getattr(self, name)
        raise AttributeError(name)


def _read_cache(cache_dir: Path | None, run_dir: Path, digest: str, warnings: list[str]) -> RunSummary | None:
    if cache_dir is None:
        return None
    try:
        entry = _summary_cache.read_entry(cache_dir, run_dir.name, digest)
    except ValueError as error:
        warnings.append(f"build/cache: a damaged cache entry was discarded and the run read again ({error})")
        return None
    if entry is None:
        return None
    tables, body = entry
    facts = dict(body["facts"])
    facts["gpus_used"] = [tuple(pair) for pair in facts["gpus_used"]]
    summary = _CachedSummary.__new__(_CachedSummary)
    summary.__dict__.update(run_id=body["run_id"], config=body["config"], facts=facts,
                            warnings=list(body["warnings"]), source_hash=digest, _tables=tables)
    return summary


def _write_cache(cache_dir: Path | None, run_dir: Path, digest: str, summary: RunSummary) -> None:
    if cache_dir is None:
        return
    frames = {"steps": summary.steps, "phases": summary.phases, "events": summary.events,
              **{f"series/{name}": frame for name, frame in summary.series.items()}}
    body = {"run_id": summary.run_id, "config": summary.config, "facts": summary.facts,
            "warnings": summary.warnings}
    _summary_cache.write_entry(cache_dir, run_dir.name, digest, frames, body)


def describe(summary: RunSummary) -> str:
    """One line per run for `make check`: what it is and how much of it there is."""
    facts, config = summary.facts, summary.config
    hours = (facts["end_ts"] - facts["start_ts"]) / 3600 if facts["steps"] else 0.0
    events = ", ".join(f"{count} {kind}" for kind, count in facts["event_counts"].items()) or "no events"
    return (f"{summary.run_id:<24} {facts['provenance']:<8} {config['model']['name']:<11} "
            f"{facts['steps']:>3} steps ({facts['clean_steps']} clean)  {hours:4.1f} h  {events}  "
            f"[{', '.join(config.get('tags', []))}]")
