"""The dashboard dump of each example run, written by Miles' own writer (build_tools/miles_code/write_dump.py).

What a live job would push to Miles' dashboard collector is laid out here from the run's synthesized numbers: the
arguments its launch parses to (Miles' parse_args, with --use-miles-dashboard --dump-details), the tracking
payloads of each step, the Timer starts and ends of the rollout manager and the train rank, the engine topology
and the GPU sampler's ticks. Miles' code, run in a process of its own with inert stand-ins, writes the files:
meta.json, metrics.jsonl, phases/, topology.jsonl, lane_catalog.json (and no gpu_util/: NVML's memory query fails
on a GB10, and Miles' sampler drops the whole tick; the lab's recording, lab/gpu_temp, holds the utilisation).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import numpy as np

from build_tools.miles_code import dump_snapshots, write_dumps
from build_tools.pages.commands import flag_words

from ._timeline import TRAIN_PARTS, Step

DASHBOARD_FLAGS = {"use_miles_dashboard": True}  # and --dump-details: the run's folder, where Miles writes dashboard/
# Which process times each phase (the rollout manager times the rollout; the train rank the rest), and in what
# order phases that start or end at the same instant do: the outer one starts first and ends last.
TRAIN_NESTING = {"train_wait": 0, "train": 1, **{name: 2 for name in TRAIN_PARTS}, "update_weights": 1}


def argv(flags: dict[str, Any], dump_details: Path) -> list[str]:
    """The words after `train.py`: the run's flags as its launch block gives them, and the dashboard's."""
    words: list[str] = []
    for name, value in {**flags, **DASHBOARD_FLAGS, "dump_details": str(dump_details)}.items():
        words += shlex.split(" ".join(flag_words(name, value)))
    return words


def phase_actions(steps: list[Step], open_rollout_ms: int | None) -> list[tuple[int, int, list[Any]]]:
    """Timer starts and ends: (ms, tie order, action). At one instant ends come before starts; an inner phase
    ends before its outer one, an outer one starts before its inner ones."""
    out: list[tuple[int, int, list[Any]]] = []
    for b in steps:
        for name, (t0, t1) in b.items():
            if name == "heat_pause":
                continue  # the lab's guard, not a Miles phase (lab/events.jsonl)
            process = "rollout_manager" if name == "rollout" else "train"
            depth = TRAIN_NESTING.get(name, 0)
            out.append((t0, 10 + depth, [t0 / 1000, "begin", process, name]))
            out.append((t1, 5 - depth, [t1 / 1000, "end", process, name]))
    if open_rollout_ms is not None:
        out.append((open_rollout_ms, 10, [open_rollout_ms / 1000, "begin", "rollout_manager", "rollout"]))
    return out


def job(run_dir: Path, flags: dict[str, Any], start_ms: int, node: str, lines: list[dict[str, Any]],
        steps: list[Step], open_rollout_ms: int | None, topology: dict[str, Any],
        ticks: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> dict[str, Any]:
    """One run's job for the writer: its argv, its start, and its actions in time order."""
    actions = phase_actions(steps, open_rollout_ms)
    actions += [(round(line["ts"] * 1000), 0, [line["ts"], "log", line["step_key"], line["metrics"]])
                for line in lines]
    actions.append((round(topology["ts"] * 1000), 0, [topology["ts"], "topology", topology["engines"]]))
    actions.sort(key=lambda item: (item[0], item[1]))
    request: dict[str, Any] = {"argv": argv(flags, run_dir), "start_ts": start_ms / 1000, "node": node,
                               "actions": [action for _, _, action in actions]}
    if ticks is not None:
        ts, util, power = ticks
        request["gpu_ticks"] = [[t / 1000, u, p] for t, u, p in zip(ts.tolist(), util.tolist(), power.tolist(),
                                                                      strict=True)]
    return request


def write(jobs: list[dict[str, Any]]) -> None:
    """Run Miles' writer over the jobs, in one process of its own."""
    write_dumps(jobs)


def snapshots(argvs: list[list[str]]) -> list[dict[str, Any]]:
    """What Miles keeps of each launch in meta.json (run_name, args), by its own parse_args and CollectorConfig."""
    return dump_snapshots(argvs)
