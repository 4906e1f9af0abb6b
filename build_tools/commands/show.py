"""`manual show RUN_ID_OR_PATH [--csv | --long]`: what the manual reads from a run, source by source.

Works on a run id of runs/ and on a bare path holding any of the sources (no run.yaml needed). Values are
printed as their source printed them (the text of the number in the file), not as the summary rounds them, each
at its own step key and step (`--long`: one value a line; `--csv`: a row per step key and step).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from build_tools.core._escape import csv_cell
from build_tools.core._exceptions import Problem, RunDataError, display_path
from build_tools.core._layout import Layout
from build_tools.ingest.axes import TRAIN, axis_order, join_of_summary
from build_tools.ingest.load import load_path, readable, records
from build_tools.ingest.schemas import NON_FINITE
from build_tools.ingest.sources._common import STEP_KEYS, MetricRecord, number_text

if TYPE_CHECKING:
    from build_tools.core._types import RunData, RunSummary



def resolve(root: Path, what: str) -> Path:
    """A run id of runs/ when there is one by that name, else the path as given."""
    candidate = Layout(root).runs / what
    if "/" not in what and candidate.is_dir():
        return candidate
    return Path(what)


def load(path: Path) -> tuple[RunData, RunSummary, dict[str, list[Path]]]:
    from build_tools.summarise.summary import summarise

    if not path.exists():
        raise RunDataError([Problem(display_path(path), None, None, "no such run id in runs/, file or folder")])
    problems: list[Problem] = []
    with readable(path):
        run, found = load_path(path, problems)
    summary = summarise(run, problems)
    # What run.yaml still lacks does not hide what the sources hold: it is shown, and `make check` refuses it.
    unfilled = [p for p in problems if Path(p.file).name == "run.yaml"]
    if len(unfilled) < len(problems):
        raise RunDataError(problems)
    run.warnings += [f"{p} (make check refuses the run until it is fixed)" for p in unfilled]
    return run, summary, found


class Value(NamedTuple):
    """One value a run logged: its step key and step (empty when logged without one), its metric, its text."""

    step_key: str
    step: int | None
    metric: str
    text: str
    number: bool  # a number, not a text metric (which is no value of a step)


def values(run: RunData) -> list[Value]:
    """Every value of the run's metrics, once per (step key, step, metric) (the trainer's and the rollout
    manager's lines merged), by axis, step and metric; the values logged without a step last, in file order.
    Text metrics are kept as written; a number's text is as its source printed it (nan, inf, -inf for the
    non-finite)."""
    stepped: dict[tuple[str, int, str], tuple[str, bool]] = {}
    unstepped: list[Value] = []
    for record in records(run, "metrics"):
        data = record.data
        key, step = data.get("step_key"), data.get("step")
        texts = record.texts if isinstance(record, MetricRecord) else {}
        for metric, value in data["metrics"].items():
            if metric in STEP_KEYS:
                continue
            text, number = _text(texts.get(metric), value), _is_number(value)
            if isinstance(key, str) and isinstance(step, int):
                stepped.setdefault((key, step, metric), (text, number))
            else:  # its step key kept when it has one
                unstepped.append(Value(key if isinstance(key, str) else "", None, metric, text, number))
    ordered = sorted(stepped.items(), key=lambda item: (axis_order(item[0][0]), item[0][1], item[0][2]))
    return [Value(key, step, metric, *found) for (key, step, metric), found in ordered] + unstepped


def _is_number(value: object) -> bool:
    return not isinstance(value, str) or value in NON_FINITE


def _text(printed: str | None, value: object) -> str:
    """A value's text as its source printed it; a non-finite number as Python prints it (nan, inf, -inf)."""
    text = printed if printed is not None else number_text(value)
    if not _is_number(value):
        return text
    try:
        number = float(text)
    except ValueError:
        return text
    return text if math.isfinite(number) else repr(number)


def step_table(run: RunData) -> dict[str, tuple[list[str], dict[int, dict[str, str]]]]:
    """Per step key: its metrics and one row per step, each value's text as printed (text metrics left out)."""
    axes: dict[str, tuple[list[str], dict[int, dict[str, str]]]] = {}
    for value in values(run):
        if value.step is None or not value.number:
            continue
        keys, rows = axes.setdefault(value.step_key, ([], {}))
        if value.metric not in keys:
            keys.append(value.metric)
        rows.setdefault(value.step, {})[value.metric] = value.text
    return {axis: (sorted(keys), rows) for axis, (keys, rows) in axes.items()}


def _cell(value: Any) -> Any:
    """A cell as csv_cell writes it, without a carriage return: the terminal drops it anyway (terminal_text), and
    Python 3.13's csv quotes a field that holds one where 3.11's does not: the same table on every Python."""
    cell = csv_cell(value)
    return cell.replace("\r", "") if isinstance(cell, str) else cell


def as_csv(run: RunData) -> str:
    """The wide table: one row per (step key, step), a column per metric, empty where the step logged none."""
    tables = step_table(run)
    keys = sorted({key for columns, _ in tables.values() for key in columns})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["step_key", "step", *map(_cell, keys)])  # metric names come from the data
    for axis, (_, rows) in tables.items():
        for step, row in rows.items():
            writer.writerow([_cell(axis), step, *(_cell(row.get(key, "")) for key in keys)])
    return out.getvalue()


def as_long(run: RunData) -> str:
    """The tidy table: `step_key,step,metric,value`, one row per value (a value logged without a step has an
    empty step key and step)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["step_key", "step", "metric", "value"])
    for value in values(run):
        writer.writerow([_cell(value.step_key), "" if value.step is None else value.step, _cell(value.metric),
                         _cell(value.text)])
    return out.getvalue()


def report(run: RunData, summary: RunSummary, found: dict[str, list[Path]], path: Path) -> list[str]:
    from build_tools.readers import SETUP, config_value, gpus_of

    facts = summary.facts
    lines = [f"Run {run.run_id} ({config_value(summary, 'provenance', 'not recorded')}), read from "
             f"{display_path(path)}",
             "", "Sources:"]
    for kind, files in found.items():
        shown = ", ".join(display_path(f) for f in files[:3]) + (f", ... ({len(files)} files)" if len(files) > 3
                                                                  else "")
        lines.append(f"  {kind:<12} {shown}")
    lines += ["", "Setup:"]
    for what, dotted in SETUP:
        lines.append(f"  {what:<20} {config_value(summary, dotted, 'not recorded')}")
    gpus = gpus_of(summary)
    nodes = {node for node, _ in gpus}
    lines.append(f"  {'GPUs':<20} " + (f"{len(gpus)} on {len(nodes)} node{'s' if len(nodes) != 1 else ''}" if gpus
                                        else "not recorded (no phase, GPU sample or topology names one)"))
    if "dashboard" in found and isinstance(run.meta.get("run_name"), str):  # wandb_group or "miles-run"
        lines.append(f"  {'Miles run_name':<20} {run.meta['run_name']}")
    start = facts.get("start_ts")
    if isinstance(start, float) and not math.isnan(start):
        lines.append(f"  {'started':<20} {dt.datetime.fromtimestamp(start, dt.UTC):%Y-%m-%d %H:%M:%S} UTC")
    lines += ["", *_steps_section(run, summary)]
    lines += ["", "Phases:"]
    if len(summary.phases):
        durations = (summary.phases["t1"] - summary.phases["t0"]).groupby(summary.phases["name"])
        for name, group in durations:
            lines.append(f"  {name:<16} {len(group):>4} times, {group.sum():.1f} s in all")
    else:
        lines.append("  none")
    lines += ["", "Events:"]
    for _, event in summary.events.iterrows():
        when = dt.datetime.fromtimestamp(float(event["t0"]), dt.UTC)
        lines.append(f"  {event['kind']:<14} {when:%Y-%m-%d %H:%M:%S}  {event['detail']}")
    if not len(summary.events):
        lines.append("  none")
    if run.warnings:
        lines += ["", "Warnings:", *(f"  {w}" for w in run.warnings)]
    return lines


def _steps_section(run: RunData, summary: RunSummary) -> list[str]:
    """The per-step table, axis by axis, and how the axes are joined when the run has more than one."""
    tables = step_table(run)
    metrics = {key for keys, _ in tables.values() for key in keys}
    lines = [f"Per-step table: {len(metrics)} metrics on {len(tables)} step "
             f"ax{'is' if len(tables) == 1 else 'es'} (--csv prints all of it, --long one value a line)"]
    if TRAIN in tables and len(tables) > 1:
        lines.append(f"  {join_of_summary(summary.facts, summary.config).sentence()}")
    if not tables:
        return [*lines, "  no steps"]
    for axis, (keys, rows) in tables.items():
        lines += [f"  {axis}: {len(rows)} steps, {len(keys)} metrics", *_table(axis, keys, rows)]
    return lines


def _table(axis: str, keys: list[str], rows: dict[int, dict[str, str]], shown: int = 6) -> list[str]:
    """A few metrics per step, as text: the first columns of the table, each as wide as its longest value."""
    lines = []
    width = max(len(axis), *(len(str(step)) for step in rows))
    for start in range(0, len(keys), shown):
        part = keys[start:start + shown]
        widths = [max(len(k), *(len(r.get(k, "")) for r in rows.values())) for k in part]
        lines.append("  " + axis.rjust(width) + "  "
                     + "  ".join(k.rjust(w) for k, w in zip(part, widths, strict=True)))
        for step, row in rows.items():
            lines.append("  " + str(step).rjust(width) + "  "
                         + "  ".join(row.get(k, "-").rjust(w) for k, w in zip(part, widths, strict=True)))
        lines.append("")
    return lines[:-1]


def csv_warnings(run: RunData, *, long: bool) -> list[str]:
    """What the wide table (--csv) leaves out, said: values logged without a step, text metrics."""
    if long:
        return []
    left = [value for value in values(run) if value.step is None or not value.number]
    many = len(left) != 1
    return [f"{len(left)} value{'s' if many else ''} logged without a step or as text {'are' if many else 'is'} "
            "not in the wide table (--long lists every value)"] if left else []
