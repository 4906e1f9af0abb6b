"""Stage 2, a run's metrics: every numeric key of its metrics records, one table per step axis, joined by rollout
(record by record, or column by column for a stream read as columns)."""

from __future__ import annotations

import collections
import itertools
import math
from collections.abc import Collection, Iterable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from build_tools.core._exceptions import Problem, display_path
from build_tools.core._types import Columns, Record, RunData
from build_tools.ingest import _columnar, axes, load
from build_tools.summarise.summary_phases import _distinct_count

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
