"""`manual show RUN_ID_OR_PATH [--csv]`: what the manual reads from a run, source by source.

Works on a run id of runs/ and on a bare path holding any of the sources (no run.yaml needed). Values are
printed as their source printed them (the text of the number in the file), not as the summary rounds them.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
from pathlib import Path
from typing import TYPE_CHECKING

from ._exceptions import Problem, RunDataError, display_path
from ._layout import Layout
from .load import load_path, readable, records
from .sources._common import STEP_KEYS, MetricRecord, number_text

if TYPE_CHECKING:
    from ._types import RunData, RunSummary

SETUP = (("model", "model.name"), ("answers per prompt", "flags.n_samples_per_prompt"),
         ("prompts per step", "flags.rollout_batch_size"), ("length cap", "flags.rollout_max_response_len"),
         ("colocated", "flags.colocate"))


def resolve(root: Path, what: str) -> Path:
    """A run id of runs/ when there is one by that name, else the path as given."""
    candidate = Layout(root).runs / what
    if "/" not in what and candidate.is_dir():
        return candidate
    return Path(what)


def load(path: Path) -> tuple[RunData, RunSummary, dict[str, list[Path]]]:
    from .summary import summarise

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


def step_table(run: RunData) -> tuple[list[str], dict[int, dict[str, str]]]:
    """One row per step (rollout and train steps merged, as the summary does), each value's text as printed."""
    rows: dict[int, dict[str, str]] = {}
    keys: dict[str, None] = {}
    for record in records(run, "metrics"):
        data = record.data
        if data.get("step_key") not in ("rollout/step", "train/step") or not isinstance(data.get("step"), int):
            continue
        texts = record.texts if isinstance(record, MetricRecord) else {}
        row = rows.setdefault(data["step"], {})
        for key, value in data["metrics"].items():
            if key in STEP_KEYS or isinstance(value, str):
                continue
            keys[key] = None
            row.setdefault(key, texts.get(key, number_text(value)))
    return sorted(keys), dict(sorted(rows.items()))


def as_csv(run: RunData) -> str:
    keys, rows = step_table(run)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["step", *keys])
    for step, row in rows.items():
        writer.writerow([step, *(row.get(key, "") for key in keys)])
    return out.getvalue()


def report(run: RunData, summary: RunSummary, found: dict[str, list[Path]], path: Path) -> list[str]:
    from .compare import gpus_of
    from .readers import config_value

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
    start = facts.get("start_ts")
    if isinstance(start, float) and not math.isnan(start):
        lines.append(f"  {'started':<20} {dt.datetime.fromtimestamp(start, dt.UTC):%Y-%m-%d %H:%M:%S} UTC")
    keys, rows = step_table(run)
    lines += ["", f"Per-step table: {len(rows)} steps, {len(keys)} metrics (--csv prints all of it)"]
    lines += _table(keys, rows)
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


def _table(keys: list[str], rows: dict[int, dict[str, str]], shown: int = 6) -> list[str]:
    """A few metrics per step, as text: the first columns of the table, each as wide as its longest value."""
    if not rows:
        return ["  no steps"]
    lines = []
    for start in range(0, len(keys), shown):
        part = keys[start:start + shown]
        widths = [max(len(k), *(len(r.get(k, "")) for r in rows.values())) for k in part]
        lines.append("  " + "step".rjust(5) + "  " + "  ".join(k.rjust(w) for k, w in zip(part, widths, strict=True)))
        for step, row in rows.items():
            lines.append("  " + str(step).rjust(5) + "  "
                         + "  ".join(row.get(k, "-").rjust(w) for k, w in zip(part, widths, strict=True)))
        lines.append("")
    return lines[:-1]
