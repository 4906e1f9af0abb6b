"""The streams a run directory may hold, and the fields of each record (see runs/README.md)."""

from __future__ import annotations

from dataclasses import dataclass

# Field kinds: "num" is int or float (or a NaN/Infinity marker), "int", "str", "list", "dict", "bool";
# a trailing "?" allows null.
Fields = dict[str, str]


@dataclass(frozen=True)
class Stream:
    name: str
    fields: Fields
    partitioned: bool = False  # Miles splits it into hourly files {stream}/{YYYYMMDD_HH}.jsonl
    choices: tuple[tuple[str, tuple[str, ...]], ...] = ()  # fields restricted to a set of values


DASHBOARD_STREAMS: dict[str, Stream] = {
    s.name: s
    for s in (
        Stream("metrics", {"ts": "num", "step_key": "str?", "step": "int?", "metrics": "dict"}),
        Stream(
            "phases",
            {"name": "str", "t0": "num", "t1": "num", "node": "str", "gpus": "list", "rank": "int",
             "role": "str"},
            partitioned=True,
        ),
        Stream(
            "gpu_util",
            {"ts": "num", "node": "str", "gpu": "int", "util": "num", "mem_mb": "num?", "power_w": "num?"},
            partitioned=True,
        ),
        Stream(
            "gpu_processes",
            {"ts": "num", "node": "str", "gpu": "int", "pid": "int", "name": "str", "mem_mb": "num?"},
            partitioned=True,
        ),
        Stream(
            "engine_series",
            {"ts": "num", "addr": "str", "metric": "str", "labels": "dict", "value": "num"},
            partitioned=True,
        ),
        Stream(
            "trajectories",
            {"ts": "num", "kind": "str", "sample_index": "int", "group_index": "int", "turn": "int",
             "weight_version": "str", "detail": "str"},
            partitioned=True,
        ),
        Stream("topology", {"ts": "num", "engines": "list"}),
        Stream("data_buffer", {"ts": "num", "length": "int"}),
    )
}

# Written once as whole JSON documents, not JSON Lines.
DASHBOARD_DOCUMENTS = {"meta.json", "lane_catalog.json"}

EVENT_KINDS = ("heat_pause", "engine_death", "watchdog_kill", "ray_oom_kill", "job_end")

LAB_STREAMS: dict[str, Stream] = {
    s.name: s
    for s in (
        Stream("events", {"kind": "str", "t0": "num", "t1": "num", "detail": "str"},
               choices=(("kind", EVENT_KINDS),)),
        # `manual record` writes these two as Miles writes its high-rate streams: hourly files.
        Stream("host_memory", {"ts": "num", "total_kib": "int", "available_kib": "int"}, partitioned=True),
        Stream("gpu_temp", {"ts": "num", "gpu": "int", "temp_c": "num"}, partitioned=True),
        Stream("held_memory", {"ts": "num", "side": "str", "gib": "num"},
               choices=(("side", ("trainer", "engine")),)),
        Stream("sampling", {"ts": "num", "step": "int", "batches": "int", "reward_before_filter": "num"}),
        Stream("repeat_probe", {"ts": "num", "probe": "int", "repeat": "int", "output_sha256": "str"}),
    )
}

# Markers Miles writes for non-finite numbers, since JSON has none.
NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
