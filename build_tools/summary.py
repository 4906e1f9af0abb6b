"""Stage 2: reduce each run to the summary that figures, tables and claims read (never the raw files).

A summary is a per-step table (every metric, every phase's duration, whether a heat-guard pause touched
the step), the run's events and sampled series, and run-level facts. It is cached by the content of its
inputs, so an unchanged run is not read again.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from . import _fingerprint, _summary_cache, load
from ._exceptions import Problem, RunDataError, display_path
from ._files import plain_files
from ._staging import write_atomic
from ._types import Record, RunData

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


def summarise_serially(paths: Sequence[Path]) -> list[tuple[RunSummary | None, list[Problem]]]:
    return [load_and_summarise(path) for path in paths]


def summarise_in_pool(paths: Sequence[Path], workers: int | None = None) -> Iterator[tuple[RunSummary | None,
                                                                                         list[Problem]]]:
    """Each run read and summarised in a worker process (a fresh interpreter, like draw.py's), the results
    handed on one at a time, so that a thousand runs are never all in memory at once."""
    count = min(workers or os.cpu_count() or 1, len(paths))
    if count <= 1 or len(paths) < POOL_FROM:
        yield from (load_and_summarise(path) for path in paths)
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    with ProcessPoolExecutor(count, mp_context=context) as pool:
        yield from pool.map(load_and_summarise, paths, chunksize=max(1, len(paths) // (count * 8)))


def summarise_runs(runs_dir: Path, cache_dir: Path | None = None, *, warnings: list[str] | None = None,
                   latest: dt.date | None = None, summariser: Summariser | None = None) -> dict[str, RunSummary]:
    """Summaries of every run under runs_dir, by run id; cached under cache_dir by input content.

    Warnings about the cache go to `warnings`; `latest` is the edition's date, after which no run may end;
    `summariser` reads the runs the cache does not hold (default: a local process pool for many runs).
    """
    problems: list[Problem] = []
    paths = load.run_folders(runs_dir, problems)
    if problems:  # a link out of the project or a FIFO: nothing under runs/ is read
        raise RunDataError(problems)
    summaries: dict[str, RunSummary] = {}
    to_load: list[tuple[Path, str]] = []
    memo = _read_memo(cache_dir)
    for path in paths:
        digest = input_hash(path, memo)
        cached = _read_cache(cache_dir, path, digest, warnings if warnings is not None else [])
        if cached is not None:
            summaries[path.name] = cached
        else:
            to_load.append((path, digest))
    results = (summariser or summarise_in_pool)([path for path, _ in to_load])
    for (path, digest), (summary, found) in zip(to_load, results, strict=True):
        problems += found
        if summary is not None:
            summary.source_hash = digest
            _write_cache(cache_dir, path, digest, summary)
            # Kept as the cache holds it, its tables decoded again only if a figure, check or table reads them:
            # the runs nobody reads cost memory only while they are summarised.
            summaries[path.name] = _read_cache(cache_dir, path, digest, []) or summary
    if memo is not None:  # forget runs that are gone
        present = {str(path.resolve()) for path in paths}
        memo = {key: value for key, value in memo.items() if key in present}
    _write_memo(cache_dir, memo)
    for run_id, summary in summaries.items():
        problems += load.time_problems(display_path(runs_dir / run_id / "run.yaml"), summary.config,
                                       summary.facts["start_ts"], summary.facts["end_ts"], latest)
    if problems:
        raise RunDataError(problems)
    return dict(sorted(summaries.items()))


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


def input_hash(run_dir: Path, memo: dict[str, Any] | None = None) -> str:
    """Hash of every file of the run, of the code that reads it and of the library versions (`_fingerprint`).

    With a memo (kept in the cache folder), a run whose files have the same names, sizes and modification
    times as when it was last hashed is not read again: a warm check stats files instead of hashing gigabytes.
    """
    files = plain_files(run_dir)
    stats = [[str(path.relative_to(run_dir)), *_stat(path)] for path in files]
    key = str(run_dir.resolve())
    if memo is not None and memo.get(key, {}).get("stats") == stats and memo[key].get("code") == _code_digest().hex():
        return str(memo[key]["digest"])
    digest = _fingerprint.Key("run").add(_code_digest()).files(run_dir, files).hexdigest()
    if memo is not None:
        memo[key] = {"stats": stats, "code": _code_digest().hex(), "digest": digest}
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


def _stat(path: Path) -> list[int]:
    info = path.stat()
    return [info.st_size, info.st_mtime_ns]


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
