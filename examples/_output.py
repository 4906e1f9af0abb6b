"""Write one run's directory: run.yaml, the dashboard dump, and the lab streams."""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from build_tools.editions.stamp import load_stamp

from . import _lab as L
from ._build import Run, finish
from ._miles_dump import job as dump_job
from ._runs import LAUNCH, MODELS, ONE_GPU, RunSpec, dump_folder, flags_for
from ._series import sig
from ._streams import write_jsonl, write_yaml
from ._timeline import Step
from .targets import (
    BEFORE_KILL_MAX_SHARE,
    IDLE_MS,
    KILL_USED_GIB,
    MEMORY_GIB,
    RAY_THRESHOLD,
    TRAINER_BYTES_PER_PARAMETER,
)

NODE = "192.168.1.42"
GUARD_C = 80  # the heat guard's limit
EDITION_YML = Path(__file__).resolve().parent.parent / "edition.yml"


@dataclass
class Tail:
    """How the job ended: its last instant, lab events, activity after the last step, an open phase."""

    end_ms: int
    events: list[dict[str, Any]] = field(default_factory=list)
    marks: list[tuple[int, int]] = field(default_factory=list)
    open_rollout: int | None = None
    kill_ms: int | None = None


def write_run(run: Run, root: Path) -> dict[str, Any]:
    """Replace root/<run_id> with the run's files but its dashboard dump; return the job that has Miles' writer
    write the dump (_miles_dump.write, for every run at once)."""
    spec = run.spec
    d, steps = finish(run)
    out = root / spec.run_id
    if out.exists():
        shutil.rmtree(out)
    tail = _tail(run, steps)
    write_yaml(out / "run.yaml", run_yaml(spec))
    ticks = _write_samples(run, steps, tail, out)
    _write_lab(run, steps, tail, out)
    return dump_job(out, launch_flags(spec), run.start_ms, NODE, metric_lines(run, d, steps), steps, tail.open_rollout,
                    _topology(run.start_ms + 52_311), ticks)


def launch_flags(spec: RunSpec) -> dict[str, Any]:
    """The run's launch, as its flags: what Miles' parse_args gets (with the dashboard's, _miles_dump.argv)."""
    return {**flags_for(spec), **LAUNCH, **ONE_GPU, "wandb_group": spec.run_id,
            "hf_checkpoint": f"Qwen/{MODELS[spec.size]['name']}"}


@cache
def miles() -> dict[str, Any]:
    """The Miles build every example run was made with: the edition's (edition.yml), so the runs always
    carry the commit the build checks them against."""
    stamp = load_stamp(EDITION_YML)
    return {"image": stamp.image, "branch": stamp.branch, "commit": stamp.commit,
            "commit_date": date.fromisoformat(stamp.commit_date)}


def run_yaml(spec: RunSpec) -> dict[str, Any]:
    """run.yaml fields in the contract's order."""
    return {
        "run_id": spec.run_id,
        "provenance": "example",
        "title": spec.title,
        "date": date.fromisoformat(spec.date[:10]),
        "tags": list(spec.tags),
        "seed": spec.seed,
        "model": dict(MODELS[spec.size]),
        "dataset": "GSM8K",
        "miles": dict(miles()),
        "hardware": {
            "machine": "DGX Spark",
            "chip": "GB10",
            "gpus": 1,
            "memory_gib": MEMORY_GIB,
            "memory_gb": 128,
            "memory_pools": 1,
        },
        "flags": {**flags_for(spec), **LAUNCH, "dump_details": dump_folder(spec.run_id)},
        "lab": {
            "heat_guard": spec.heat_guard,
            "ray_memory_usage_threshold": RAY_THRESHOLD,
            "trainer_bytes_per_parameter": TRAINER_BYTES_PER_PARAMETER,
            "sampling_replay": spec.replay,
        },
    }


def _secs(ms: np.ndarray | int) -> float:
    """Milliseconds to seconds, exact to the written 3 decimals."""
    return int(ms) / 1000


def metric_lines(run: Run, d: dict[str, np.ndarray], steps: list[Step]) -> list[dict[str, Any]]:
    """Per step: the rollout manager's line, the trainer's train/step line and its perf line, by time."""
    q = {k: sig(v) for k, v in run.q.items()}
    lines: list[tuple[int, dict[str, Any]]] = []
    for k, b in enumerate(steps):
        rollout = {
            "rollout/raw_reward": q["reward"][k],
            "rollout/response_lengths": q["length"][k],
            "rollout/truncated": q["truncated"][k],
        }
        if "dropped" in run.extra:
            rollout["rollout/dynamic_filter/drop_zero_std"] = int(run.extra["dropped"][k])
        train = {
            "train/train_rollout_logprob_abs_diff": q["gap"][k],
            "train/train_rollout_kl": q["kl"][k],
            "train/grad_norm": q["grad"][k],
            "train/pg_clipfrac": 0.0,
            "train/ppo_kl": q["ppo_kl"][k],
            "train/entropy_loss": 0.0,
            "train/loss": q["loss"][k],
            "train/step": k,
        }
        perf = {
            f"perf/{name}_time": _secs(d[name][k])
            for name in (
                "step",
                "rollout",
                "log_probs",
                "train",
                "update_weights",
                "sleep",
                "wake_up",
                "train_wait",
            )
        }
        rollout["rollout/step"] = k  # Miles' log functions add the step key last (log_rollout_data, log_perf_data_raw)
        perf["rollout/step"] = k
        lines.append((b["rollout"][1] + 300, _line(b["rollout"][1] + 300, "rollout/step", k, rollout)))
        lines.append((b["actor_train"][1] + 40, _line(b["actor_train"][1] + 40, "train/step", k, train)))
        lines.append(
            (b["update_weights"][1] + 15, _line(b["update_weights"][1] + 15, "rollout/step", k, perf))
        )
    lines.sort(key=lambda x: x[0])
    return [line for _, line in lines]


def _line(ts_ms: int, key: str, step: int, metrics: dict[str, Any]) -> dict[str, Any]:
    """One metrics.jsonl record."""
    return {"ts": ts_ms / 1000, "step_key": key, "step": step, "metrics": metrics}


def _topology(ts_ms: int) -> dict[str, Any]:
    """One colocated engine on the single GPU."""
    engine = {
        "addr": f"http://{NODE}:15000",
        "worker_type": "regular",
        "engine_rank": 0,
        "gpus": [[NODE, 0]],
        "gpu_uuids": [None],
    }
    return {"ts": ts_ms / 1000, "engines": [engine]}


def _tail(run: Run, steps: list[Step]) -> Tail:
    """The end of the job: a clean exit, a dead engine left running, or a Ray memory kill."""
    s = steps[-1]["update_weights"][1]
    kind = run.spec.kind
    if kind == "no_watchdog":
        death = s + 100 + 23_417
        end = death + IDLE_MS
        detail = f"SGLang engine http://{NODE}:15000 exited during the rollout of step {len(steps)}"
        events = [
            _event("engine_death", death, end, detail),
            _event("job_end", end, end, "job stopped by hand"),
        ]
        return Tail(end, events, [(s, L.LOW), (s + 100, L.ROLLOUT), (death, L.IDLE)], open_rollout=s + 100)
    if kind == "oom":
        kill = s + 100 + 38_000 + 583  # lands on a sampling instant (start + 417 ms + whole seconds)
        kill += (run.start_ms + 417 - kill) % 1000
        end = kill + 7_000
        events = [_event("job_end", end, end, "Ray job failed: an actor died unexpectedly")]
        return Tail(end, events, [(s, L.LOW), (s + 100, L.ROLLOUT), (kill, L.LOW)], kill_ms=kill)
    if kind == "onpolicy":
        return Tail(s + 15_000 + 20 * 2_600 + 3_000)  # the repeat probes run after the last step
    return Tail(s + 3_000)


def _event(kind: str, t0_ms: int, t1_ms: int, detail: str) -> dict[str, Any]:
    """One lab event."""
    return {"kind": kind, "t0": t0_ms / 1000, "t1": t1_ms / 1000, "detail": detail}


def _write_samples(
    run: Run, steps: list[Step], tail: Tail, out: Path
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The 1-second streams, and the heat-pause events whose details read the temperature; the GPU's utilisation
    and power (sample times, %, W) for Miles' GPU sampler, when the run has them (None when not).

    On a GB10 the sampler writes none of them (NVML's memory query fails, and it drops the whole tick): the lab's
    own recording (`manual record`: lab/gpu_temp, beside the temperature) is where the utilisation is kept."""
    spec = run.spec
    ts = L.sample_ms(run.start_ms, tail.end_ms)
    edges, codes = L.activity(steps, run.start_ms, tail.marks)
    code = L.codes_at(ts, edges, codes)
    rng = np.random.default_rng(spec.rng_seed + 10_000)  # the samplers' own stream: metrics stay put
    pauses = [steps[k]["heat_pause"] for k in sorted(run.pauses)]
    temp = L.temperature(rng, ts, code, pauses)
    for p0, p1 in pauses:
        at0, at1 = temp[np.searchsorted(ts, p0)], temp[np.searchsorted(ts, p1) - 1]
        detail = f"GPU 0 at {at0:.1f} C, above the {GUARD_C} C limit; resumed at {at1:.1f} C"
        tail.events.append(_event("heat_pause", p0, p1, detail))
    ticks = None
    if "gpu_util" in spec.streams:
        util, power = L.gpu_util_values(rng, ts, code)
        ticks = (ts, util, power)
        write_jsonl(out / "lab/gpu_temp.jsonl.gz", L.recorded_rows(ts, temp, util, power))
    elif "gpu_temp" in spec.streams:
        write_jsonl(out / "lab/gpu_temp.jsonl.gz", L.temp_rows(ts, temp))
    big = spec.size == "4B"
    trainer, engine = L.held(steps, ts, engine_gib=30.0 if big else 40.0, trainer_gib=72.0 if big else 30.0)
    if "held_memory" in spec.streams:
        write_jsonl(out / "lab/held_memory.jsonl.gz", L.held_rows(ts, trainer, engine))
    if "host_memory" in spec.streams:
        used = _host_used(run, rng, ts, trainer, engine, tail, engine_gib=30.0 if big else 40.0)
        write_jsonl(out / "lab/host_memory.jsonl.gz", L.host_rows(ts, used))
    return ticks


def _host_used(
    run: Run,
    rng: np.random.Generator,
    ts: np.ndarray,
    trainer: np.ndarray,
    engine: np.ndarray,
    tail: Tail,
    engine_gib: float,
) -> np.ndarray:
    """Host used memory: OS, Ray and processes, what each side holds, and offloaded copies in host RAM."""
    params = MODELS[run.spec.size]["parameters"]
    # The trainer's state (fig. 2.1's estimate) offloaded, and the engine's bf16 weight backup.
    state, weights = params * TRAINER_BYTES_PER_PARAMETER / 2**30, params * 2 / 2**30
    awake = np.clip(trainer / trainer.max(), 0, 1)
    loaded = np.clip(engine / engine_gib, 0, 1)
    used: np.ndarray = 8.1 + 11.4 + trainer + engine + state * (1 - awake) + weights * (1 - loaded)
    used = used + rng.normal(0, 0.05, len(ts))
    if tail.kill_ms is not None:  # pinned buffers leak a little each step, then the KV cache spike
        used = used + 1.3 * (ts - ts[0]) / 1_000_000
        i = int(np.searchsorted(ts, tail.kill_ms))
        assert ts[i] == tail.kill_ms and used[:i].max() / MEMORY_GIB < BEFORE_KILL_MAX_SHARE
        used[i : i + 2] = list(KILL_USED_GIB)
        used[i + 2 :] = 21.0 + rng.normal(0, 0.05, len(ts) - i - 2)  # the trainer actor is gone
        detail = (
            f"Ray memory monitor killed ray::MegatronTrainRayActor: node memory {used[i]:.1f} of "
            f"{MEMORY_GIB} GiB ({used[i] / MEMORY_GIB:.3f}) above the {RAY_THRESHOLD} threshold"
        )
        tail.events.insert(0, _event("ray_oom_kill", tail.kill_ms, tail.kill_ms, detail))
    return used


def _write_lab(run: Run, steps: list[Step], tail: Tail, out: Path) -> None:
    """Events, the dynamic filter's sampling log, and the repeat probes."""
    if tail.events:
        write_jsonl(out / "lab/events.jsonl", sorted(tail.events, key=lambda e: (e["t0"], e["t1"])))
    if "dropped" in run.extra:
        before = sig(run.extra["before"])
        rows = [
            {
                "ts": (b["rollout"][1] + 250) / 1000,
                "step": k,
                "batches": int(run.extra["batches"][k]),
                "reward_before_filter": before[k],
            }
            for k, b in enumerate(steps)
        ]
        write_jsonl(out / "lab/sampling.jsonl", rows)
    if run.spec.kind == "onpolicy":
        write_jsonl(
            out / "lab/repeat_probe.jsonl", _probes(run.spec, steps[-1]["update_weights"][1] + 15_000)
        )


def _probes(spec: RunSpec, t0_ms: int) -> list[dict[str, Any]]:
    """4 prompts x 5 repeats with the same seed; without deterministic inference some answers differ."""
    det = bool(flags_for(spec)["sglang_enable_deterministic_inference"])
    plain_variant = (0, 1, 0, 2, 1)  # which repeats came out alike in the plain engine
    rows = []
    for p in range(4):
        for r in range(5):
            variant = 0 if det else (plain_variant[r] + p) % 3
            digest = hashlib.sha256(f"{spec.run_id}/probe{p}/answer{variant}".encode()).hexdigest()
            ts = (t0_ms + (p * 5 + r) * 2_600) / 1000
            rows.append({"ts": ts, "probe": p, "repeat": r, "output_sha256": digest})
    return rows
