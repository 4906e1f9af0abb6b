"""Scaled run sets for `make bench SCALE=RUNSxSTEPS`: many runs, or long ones, from the example generator.

Each scaled run is an example run of the generator (the templates below, in turn) with its own run id
(`scale-0000`, ...), seed, random stream and number of steps, tagged `benchmark` so that no run set of the
manual picks it up. A set of one run carries 1 Hz telemetry in every stream (GPU utilisation and power,
temperature, host memory, memory held by each side), as a long lab run does; a set of many runs carries the
metrics and phases only. Its files are the bytes `write_run` and Miles' writer (`_miles_dump`) write for the
same run (a test compares them), formatted here in bulk: Miles' writer replays each record through its
collector and takes minutes for a thousand runs. The arguments meta.json keeps are Miles' own (its parse_args,
once per template); the phase records come in the order Miles' phase sinks push them (each opened at once, the
closings batched: pushed with a later closing 2 s or more after the last push, or by the sink's 2 s flusher).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from . import _lab as L
from . import _miles_dump
from ._build import Run, finish, prepare
from ._output import NODE, Tail, _host_used, _tail, _topology, launch_flags, miles, run_yaml
from ._runs import RUNS, RunSpec
from ._series import sig
from ._streams import write_bytes, write_jsonl, write_yaml
from ._timeline import PROFILES, Step

SCALE = re.compile(r"^(?P<runs>[1-9][0-9]{0,5})x(?P<steps>[1-9][0-9]{0,6})$")
MIN_STEPS = 16  # the generator's learning curves fit their first and last 8 steps
# Kinds whose numbers the generator makes for any length, with no tie to another run and a plain ending.
TEMPLATE_KINDS = ("baseline", "answers", "size", "replay", "det")
TELEMETRY = ("gpu_util", "host_memory", "gpu_temp", "held_memory")
SPREAD = dt.timedelta(minutes=7)  # between the starts of two runs: not every run on the same second


def parse_scale(text: str) -> tuple[int, int]:
    """RUNSxSTEPS, e.g. 1000x1000; ValueError saying what is expected otherwise."""
    match = SCALE.match(text.strip())
    if match is None or int(match["steps"]) < MIN_STEPS:
        raise ValueError(f"SCALE={text!r}: expected RUNSxSTEPS, e.g. 1000x1000 or 1x10000, with at least "
                         f"{MIN_STEPS} steps")
    return int(match["runs"]), int(match["steps"])


def templates() -> list[RunSpec]:
    return [spec for spec in RUNS if spec.kind in TEMPLATE_KINDS]


def scaled_spec(index: int, runs: int, steps: int) -> RunSpec:
    """The index-th run of a set of `runs` runs of `steps` steps each."""
    base = templates()[index % len(templates())]
    start = _first_start() + SPREAD * (index % 97)  # on or after the day of the Miles commit the runs name
    return dataclasses.replace(
        base, run_id=f"scale-{index:04d}", title=f"{base.title}, scaled for the benchmark ({index})",
        date=start.replace(microsecond=0).isoformat(), tags=("benchmark",), rng_seed=100_000 + index,
        seed=1 + index, steps=steps, num_rollout=None, pauses=(), streams=TELEMETRY if runs == 1 else ())


def _first_start() -> dt.datetime:
    """A run cannot use a commit from its future: the first starts on the day of the edition's Miles commit."""
    commit_date = miles()["commit_date"]
    return dt.datetime(commit_date.year, commit_date.month, commit_date.day)


def ends_by(runs: int, steps: int) -> dt.date:
    """A day by which every run of a scaled set has ended (its longest run, started last)."""
    longest = max(_longest_ms(spec, steps) for spec in templates()[:runs])
    return (_first_start() + SPREAD * min(runs - 1, 96) + dt.timedelta(milliseconds=longest)).date()


def _longest_ms(spec: RunSpec, steps: int) -> int:
    """More than the run can last: its profile's step at three times the work, plus the set-up."""
    profile = PROFILES[spec.size]
    step = profile.rollout + profile.overhead + profile.train
    return profile.setup + 60_000 + steps * step * 3 * max(1, spec.n_samples // 8)


def write_scaled(outdir: Path, runs: int, steps: int, workers: int | None = None) -> list[str]:
    """Write the scaled set into outdir/<run-id>; the same bytes on every machine and every call."""
    outdir.mkdir(parents=True, exist_ok=True)
    chunks = [list(range(start, runs, max(1, workers or os.cpu_count() or 1))) for start in
              range(min(runs, max(1, workers or os.cpu_count() or 1)))]
    if len(chunks) <= 1:
        done = [_write_chunk(outdir, runs, steps, chunk) for chunk in chunks]
    else:
        with ProcessPoolExecutor(len(chunks)) as pool:
            done = list(pool.map(_write_chunk, [outdir] * len(chunks), [runs] * len(chunks),
                                 [steps] * len(chunks), chunks))
    return sorted(run_id for chunk in done for run_id in chunk)


def _write_chunk(outdir: Path, runs: int, steps: int, indices: Sequence[int]) -> list[str]:
    written = []
    for index in indices:
        spec = scaled_spec(index, runs, steps)
        write_run_fast(spec, outdir)
        written.append(spec.run_id)
    return written


def write_run_fast(spec: RunSpec, root: Path) -> None:
    """What `_output.write_run(prepare(spec), root)` writes, for a run of a template kind with no pauses."""
    assert spec.kind in TEMPLATE_KINDS and not spec.pauses, spec
    run = prepare(spec)
    d, steps = finish(run)
    out = root / spec.run_id
    tail = _tail(run, steps)
    assert not tail.events and not tail.marks and tail.open_rollout is None
    write_yaml(out / "run.yaml", run_yaml(spec))
    if spec.streams:
        _samples(run, steps, tail, out)
    kept = dict(_snapshot(spec))
    kept["args"] = {**kept["args"], "wandb_group": spec.run_id}  # Miles copies the flag; the template's is its own
    meta = {"run_name": spec.run_id, "start_ts": run.start_ms / 1000, "args": kept["args"], "schema_version": 1}
    write_bytes(out / "dashboard/meta.json", json.dumps(meta, indent=1).encode())  # MetricStore.write_meta's form
    write_bytes(out / "dashboard/metrics.jsonl", _metrics(run.q, d, steps).encode())
    for hour, text in _phases(steps, run.start_ms):
        write_bytes(out / f"dashboard/phases/{hour}.jsonl", text.encode())
    write_jsonl(out / "dashboard/topology.jsonl", [_topology(run.start_ms + 52_311)])
    write_bytes(out / "dashboard/lane_catalog.json", json.dumps({"version": 1, "lanes": {f"{NODE}:0": {
        "ranks": [0], "engine_addrs": [f"http://{NODE}:15000"], "roles": ["rollout", "train"]}}}).encode())


@cache
def _template_snapshot(template_id: str) -> dict[str, Any]:
    """meta.json's run name and args for a template's launch, from Miles' parse_args (once per template)."""
    template = next(spec for spec in RUNS if spec.run_id == template_id)
    words = _miles_dump.argv(launch_flags(template), Path("/dump"))
    return _miles_dump.snapshots([words])[0]


def _snapshot(spec: RunSpec) -> dict[str, Any]:
    """A scaled run's launch is its template's but for its name (scaled_spec changes nothing Miles keeps)."""
    template = templates()[int(spec.run_id.removeprefix("scale-")) % len(templates())]
    return _template_snapshot(template.run_id)


# --- the dump: metrics and phases -----------------------------------------------------------------

_ROLLOUT = ('{"ts":%r,"step_key":"rollout/step","step":%d,"metrics":{"rollout/raw_reward":%r,'
            '"rollout/response_lengths":%r,"rollout/truncated":%r,"rollout/step":%d}}\n')
_TRAIN = ('{"ts":%r,"step_key":"train/step","step":%d,"metrics":{"train/train_rollout_logprob_abs_diff":%r,'
          '"train/train_rollout_kl":%r,"train/grad_norm":%r,"train/pg_clipfrac":0.0,"train/ppo_kl":%r,'
          '"train/entropy_loss":0.0,"train/loss":%r,"train/step":%d}}\n')
_PERF_NAMES = ("step", "rollout", "log_probs", "train", "update_weights", "sleep", "wake_up", "train_wait")
_PERF = ('{"ts":%r,"step_key":"rollout/step","step":%d,"metrics":{'
         + ",".join(f'"perf/{name}_time":%r' for name in _PERF_NAMES) + ',"rollout/step":%d}}\n')


def _ends(steps: list[Step], name: str) -> np.ndarray:
    return np.array([b[name][1] for b in steps], dtype=np.int64)


def _metrics(quality: dict[str, np.ndarray], d: dict[str, np.ndarray], steps: list[Step]) -> str:
    """metrics.jsonl: per step the rollout, train and perf lines, in time order (as metric_lines)."""
    q = {k: sig(v) for k, v in quality.items()}
    n = len(steps)
    k = list(range(n))
    at = [_ends(steps, "rollout") + 300, _ends(steps, "actor_train") + 40, _ends(steps, "update_weights") + 15]
    ts = [(a / 1000).tolist() for a in at]  # int64 / 1000 is the float the writer's int / 1000 gives
    perf = [(d[name][:n] / 1000).tolist() for name in _PERF_NAMES]
    lines = [
        [_ROLLOUT % row for row in zip(ts[0], k, q["reward"], q["length"], q["truncated"], k, strict=True)],
        [_TRAIN % row for row in zip(ts[1], k, q["gap"], q["kl"], q["grad"], q["ppo_kl"], q["loss"], k,
                                     strict=True)],
        [_PERF % row for row in zip(ts[2], k, *perf, k, strict=True)],
    ]
    order = np.argsort(np.stack(at, axis=1).ravel(), kind="stable")  # the writer's stable sort by time
    flat = [line for step in zip(*lines, strict=True) for line in step]
    return "".join(flat[i] for i in order.tolist())


_PHASE = '{"name":"%s","t0":%r,"t1":%r,"node":"' + NODE + '","gpus":%s,"rank":%d,"role":"%s"}\n'
_SINK = {"rollout_manager": ("[]", -1), "train": ("[0]", 0)}
SINKS = ("rollout_manager", "train")  # the replay's flush order at one instant (write_dump.replay)
BATCH_MS, BATCH_MAX = 2000, 64  # hooks.BATCH_MAX_SECONDS and BATCH_MAX_EVENTS


def _phases(steps: list[Step], start_ms: int) -> Iterator[tuple[str, str]]:
    """The phase records by hour file, in the order Miles' phase sinks push them in the replay of
    write_dump.py: an open record at each start; closings batched per sink, pushed with a later closing at
    least 2 s after the sink's last push (or at the 64th), or by the flusher every 2 s from the start (after the
    actions of its instant), the rest at the end. A record's hour is its end's (an open one's, its start's)."""
    actions = sorted(_miles_dump.phase_actions(steps, None), key=lambda item: (item[0], item[1]))
    buffers: dict[str, list[tuple[float, str]]] = {sink: [] for sink in SINKS}
    last = dict.fromkeys(SINKS, start_ms)
    opened: dict[tuple[str, str], float] = {}
    tick = start_ms + BATCH_MS
    pushed: list[tuple[float, str]] = []  # (the time its hour is of, the record), in push order
    for at, _, (_, kind, sink, name) in actions:
        if tick < at:
            if any(buffers.values()):  # the first tick before `at` pushes them all, the others find nothing
                for each in SINKS:
                    pushed += buffers[each]
                    buffers[each] = []
            tick += -(-(at - tick) // BATCH_MS) * BATCH_MS  # the first tick at or after `at`
        gpus, rank = _SINK[sink]
        if kind == "begin":
            opened[(sink, name)] = at / 1000
            pushed.append((at / 1000, _PHASE % (name, at / 1000, -1.0, gpus, rank, sink)))
            continue
        t0 = opened.pop((sink, name))
        t1 = t0 + (at / 1000 - t0)  # Timer.end: start + (now - start)
        buffers[sink].append((t1, _PHASE % (name, t0, t1, gpus, rank, sink)))
        if len(buffers[sink]) >= BATCH_MAX or at - last[sink] >= BATCH_MS:
            pushed += buffers[sink]
            buffers[sink], last[sink] = [], at
    for sink in SINKS:
        pushed += buffers[sink]
    files: dict[str, list[str]] = {}
    for when, text in pushed:
        files.setdefault(time.strftime("%Y%m%d_%H", time.gmtime(when)), []).append(text)
    for hour in sorted(files):
        yield hour, "".join(files[hour])


# --- the 1 Hz telemetry -----------------------------------------------------------------------------

_GPU_TEMP = '{"ts":%r,"gpu":0,"temp_c":%r}\n'
_RECORDED = '{"ts":%r,"gpu":0,"temp_c":%r,"util":%d,"power_w":%d}\n'  # `manual record` on a GB10
_HELD = '{"ts":%r,"side":"trainer","gib":%r}\n{"ts":%r,"side":"engine","gib":%r}\n'
_HOST = '{"ts":%r,"total_kib":' + str(L.TOTAL_KIB) + ',"available_kib":%d}\n'


def _samples(run: Run, steps: list[Step], tail: Tail, out: Path) -> None:
    """The streams of `_output._write_samples`, drawing the same random numbers in the same order."""
    spec = run.spec
    ts = L.sample_ms(run.start_ms, tail.end_ms)
    edges, codes = L.activity(steps, run.start_ms, tail.marks)
    code = L.codes_at(ts, edges, codes)
    rng = np.random.default_rng(spec.rng_seed + 10_000)
    temp = L.temperature(rng, ts, code, [])
    seconds = (ts / 1000).tolist()
    if "gpu_util" in spec.streams:  # Miles' sampler writes none on a GB10: the lab's recording holds them
        util, power = L.gpu_util_values(rng, ts, code)
        rows = zip(seconds, temp.tolist(), util.tolist(), power.tolist(), strict=True)
        write_bytes(out / "lab/gpu_temp.jsonl.gz", "".join(_RECORDED % row for row in rows).encode())
    elif "gpu_temp" in spec.streams:
        text = "".join(_GPU_TEMP % row for row in zip(seconds, temp.tolist(), strict=True))
        write_bytes(out / "lab/gpu_temp.jsonl.gz", text.encode())
    big = spec.size == "4B"
    trainer, engine = L.held(steps, ts, engine_gib=30.0 if big else 40.0, trainer_gib=72.0 if big else 30.0)
    if "held_memory" in spec.streams:
        rows = zip(seconds, np.round(trainer, 3).tolist(), seconds, np.round(engine, 3).tolist(), strict=True)
        write_bytes(out / "lab/held_memory.jsonl.gz", "".join(_HELD % row for row in rows).encode())
    if "host_memory" in spec.streams:
        used = _host_used(run, rng, ts, trainer, engine, tail, engine_gib=30.0 if big else 40.0)
        avail = L.TOTAL_KIB - np.rint(used * L.GIB_KIB).astype(np.int64)
        text = "".join(_HOST % row for row in zip(seconds, avail.tolist(), strict=True))
        write_bytes(out / "lab/host_memory.jsonl.gz", text.encode())

