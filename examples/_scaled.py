"""Scaled run sets for `make bench SCALE=RUNSxSTEPS`: many runs, or long ones, from the example generator.

Each scaled run is an example run of the generator (the templates below, in turn) with its own run id
(`scale-0000`, ...), seed, random stream and number of steps, tagged `benchmark` so that no run set of the
manual picks it up. A set of one run carries 1 Hz telemetry in every stream (GPU utilisation and power,
temperature, host memory, memory held by each side), as a long lab run does; a set of many runs carries the
metrics and phases only. Its files are the bytes `write_run` writes for the same run (a test compares
them), formatted here in bulk: the generator's own writer builds a dict per record and takes minutes for a
thousand runs.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from . import _lab as L
from ._build import Run, finish, prepare
from ._output import NODE, Tail, _host_used, _tail, _topology, miles, run_yaml
from ._runs import RUNS, RunSpec, meta_args
from ._series import sig
from ._streams import write_bytes, write_jsonl, write_meta, write_yaml
from ._timeline import PROFILES, WRITE_ORDER, Step

SCALE = re.compile(r"^(?P<runs>[1-9][0-9]{0,5})x(?P<steps>[1-9][0-9]{0,6})$")
MIN_STEPS = 16  # the generator's learning curves fit their first and last 8 steps
# Kinds whose numbers the generator makes for any length, with no tie to another run and a plain ending.
TEMPLATE_KINDS = ("baseline", "answers", "size", "replay", "det")
TELEMETRY = ("gpu_util", "host_memory", "gpu_temp", "held_memory")
SPREAD = dt.timedelta(minutes=7)  # between the starts of two runs: not every run on the same second
HOUR_MS = 3_600_000


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
    args = meta_args(spec)
    write_meta(out / "dashboard/meta.json",
               {"run_name": args["wandb_group"] or "miles-run", "start_ts": run.start_ms / 1000, "args": args,
         "schema_version": 1})
    write_bytes(out / "dashboard/metrics.jsonl", _metrics(run.q, d, steps).encode())
    for hour, text in _phases(steps):
        write_bytes(out / f"dashboard/phases/{hour}.jsonl", text.encode())
    write_jsonl(out / "dashboard/topology.jsonl", [_topology(run.start_ms + 52_311)])
    if spec.streams:
        _samples(run, steps, tail, out)


# --- the dump: metrics and phases -----------------------------------------------------------------

_ROLLOUT = ('{"ts":%r,"step_key":"rollout/step","step":%d,"metrics":{"rollout/raw_reward":%r,'
            '"rollout/response_lengths":%r,"rollout/truncated":%r}}\n')
_TRAIN = ('{"ts":%r,"step_key":"train/step","step":%d,"metrics":{"train/train_rollout_logprob_abs_diff":%r,'
          '"train/train_rollout_kl":%r,"train/grad_norm":%r,"train/pg_clipfrac":0.0,"train/ppo_kl":%r,'
          '"train/entropy_loss":0.0,"train/loss":%r,"train/step":%d}}\n')
_PERF_NAMES = ("step", "rollout", "log_probs", "train", "update_weights", "sleep", "wake_up", "train_wait")
_PERF = ('{"ts":%r,"step_key":"rollout/step","step":%d,"metrics":{'
         + ",".join(f'"perf/{name}_time":%r' for name in _PERF_NAMES) + "}}\n")


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
        [_ROLLOUT % row for row in zip(ts[0], k, q["reward"], q["length"], q["truncated"], strict=True)],
        [_TRAIN % row for row in zip(ts[1], k, q["gap"], q["kl"], q["grad"], q["ppo_kl"], q["loss"], k,
                                     strict=True)],
        [_PERF % row for row in zip(ts[2], k, *perf, strict=True)],
    ]
    order = np.argsort(np.stack(at, axis=1).ravel(), kind="stable")  # the writer's stable sort by time
    flat = [line for step in zip(*lines, strict=True) for line in step]
    return "".join(flat[i] for i in order.tolist())


_PHASE = '{"name":"%s","t0":%r,"t1":%r,"node":"' + NODE + '","gpus":%s,"rank":%d,"role":"%s"}\n'


def _phases(steps: list[Step]) -> Iterator[tuple[str, str]]:
    """The phase records by hour file, as phase_rows and write_hourly lay them out (no open phase)."""
    write: list[int] = []
    records: list[str] = []
    for b in steps:
        for name in WRITE_ORDER:
            t0, t1 = b[name]
            manager = name == "rollout"
            gpus, rank, role = ("[]", -1, "rollout_manager") if manager else ("[0]", 0, "train")
            if t0 // HOUR_MS != t1 // HOUR_MS:  # flushed while open, in the hour of t0
                write.append(t0)
                records.append(_PHASE % (name, t0 / 1000, -1.0, gpus, rank, role))
            write.append(t1)
            records.append(_PHASE % (name, t0 / 1000, t1 / 1000, gpus, rank, role))
    yield from _by_hour(np.array(write, dtype=np.int64), records)


def _by_hour(write_ms: np.ndarray, records: list[str]) -> Iterator[tuple[str, str]]:
    """Records sorted (stably) by the time they were written, grouped into their UTC hour's file."""
    order = np.argsort(write_ms, kind="stable")
    hours = write_ms[order] // HOUR_MS
    cuts = np.flatnonzero(np.diff(hours)) + 1
    starts = [0, *cuts.tolist()]
    ends = [*cuts.tolist(), len(order)]
    index = order.tolist()
    for start, end in zip(starts, ends, strict=True):
        hour = dt.datetime.fromtimestamp(int(hours[start]) * 3600, dt.UTC).strftime("%Y%m%d_%H")
        yield hour, "".join(records[i] for i in index[start:end])


# --- the 1 Hz telemetry -----------------------------------------------------------------------------

_GPU_UTIL = '{"ts":%r,"node":"' + NODE + '","gpu":0,"util":%d,"mem_mb":null,"power_w":%d}\n'
_GPU_TEMP = '{"ts":%r,"gpu":0,"temp_c":%r}\n'
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
    if "gpu_util" in spec.streams:
        util, power = L.gpu_util_values(rng, ts, code)
        lines = [_GPU_UTIL % row for row in zip(seconds, util.tolist(), power.tolist(), strict=True)]
        for hour, text in _by_hour(ts, lines):
            write_bytes(out / f"dashboard/gpu_util/{hour}.jsonl.gz", text.encode())
    if "gpu_temp" in spec.streams:
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

