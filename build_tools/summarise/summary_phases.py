"""Stage 2, a run's time: its phases (each step's share of the trainer and the rollout), its sampled series
and its facts."""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from build_tools.core._types import Columns, Record, RunData, RunSummary
from build_tools.ingest import load
from build_tools.store import summary_cache

# Trainer phases are counted once per step (rank 0); the rollout manager writes rank -1.
COUNTED_RANKS = (0, -1)


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
