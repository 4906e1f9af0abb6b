"""Writes the clean samples of tests/samples/sources/: one small run of three steps in every form Miles leaves.

Run from the project root with `.venv/bin/python tests/samples/sources/make_samples.py`. The values are
binary fractions, so a 32-bit TensorBoard scalar holds them exactly and every form gives the same table. The
dirty cases (`dirty/`) are written by hand. The output is committed; this script says how it was made.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
T0 = 1789999200.0  # 2026-09-21 14:00:00 UTC
STEP_S = 100.0

ROLLOUT = ("rollout/raw_reward", "rollout/response_lengths", "rollout/truncated", "perf/rollout_time")
TRAINER_PERF = ("perf/train_wait_time", "perf/train_time", "perf/step_time", "perf/wait_time_ratio")
TRAIN = ("train/grad_norm", "train/ppo_kl", "train/pg_clipfrac", "train/entropy_loss",
         "train/train_rollout_logprob_abs_diff")
VALUES = {
    0: (0.5, 412.25, 0.0625, 40.5, 41.25, 20.5, 61.75, 0.6875, 0.375, 0.0, 0.015625, 0.0, 0.0078125),
    1: (0.625, 388.5, 0.03125, 38.25, 39.5, 19.75, 59.25, 0.65625, 0.3125, 0.001953125, 0.0234375, 0.0, 0.005859375),
    2: (0.75, 365.75, 0.0, 36.0, 37.25, 19.0, 56.25, 0.625, 0.28125, 0.00390625, 0.03125, 0.0, 0.0048828125),
}
KEYS = ROLLOUT + TRAINER_PERF + TRAIN
ARGS = {"hf_checkpoint": "Qwen/Qwen3-0.6B", "n_samples_per_prompt": 8, "rollout_batch_size": 32,
        "rollout_max_response_len": 1024, "colocate": True, "num_rollout": 3}


def values(step: int, keys: tuple[str, ...]) -> dict[str, float]:
    row = dict(zip(KEYS, VALUES[step], strict=True))
    return {key: row[key] for key in keys}


def times(step: int) -> dict[str, float]:
    start = T0 + STEP_S * step
    row = dict(zip(KEYS, VALUES[step], strict=True))
    wait_end = start + row["perf/train_wait_time"]
    return {"start": start, "rollout_end": start + row["perf/rollout_time"], "wait_end": wait_end,
            "train_end": wait_end + row["perf/train_time"]}


def stamp(ts: float, millis: bool = True, proc: str | None = None) -> str:
    when = dt.datetime.fromtimestamp(ts, dt.UTC)
    text = when.strftime("%Y-%m-%d %H:%M:%S") + (f".{int(round(ts % 1 * 1000)):03d}" if millis else "")
    return f"[{text}{' ' + proc if proc else ''}]"


def write_dump(folder: Path) -> None:
    folder.mkdir(parents=True)
    # Miles' dashboard keeps only its _SNAPSHOT_KEYS of the arguments (num_rollout is not one of them).
    snapshot = {name: value for name, value in ARGS.items() if name != "num_rollout"}
    meta = {"run_name": "sample-run", "start_ts": T0, "args": snapshot, "schema_version": 1}
    (folder / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    lines, phases = [], []
    for step in VALUES:
        t = times(step)
        lines.append({"ts": t["rollout_end"], "step_key": "rollout/step", "step": step,
                      "metrics": {**values(step, ROLLOUT), "rollout/step": step}})
        lines.append({"ts": t["train_end"], "step_key": "train/step", "step": step,
                      "metrics": {**values(step, TRAIN), "train/step": step}})
        lines.append({"ts": t["train_end"], "step_key": "rollout/step", "step": step,
                      "metrics": {**values(step, TRAINER_PERF), "rollout/step": step}})
        phases.append({"name": "rollout", "t0": t["start"], "t1": t["rollout_end"], "node": "10.0.0.5", "gpus": [],
                       "rank": -1, "role": "rollout_manager"})
        phases.append({"name": "train_wait", "t0": t["start"], "t1": t["wait_end"], "node": "10.0.0.5", "gpus": [0],
                       "rank": 0, "role": "train"})
        phases.append({"name": "train", "t0": t["wait_end"], "t1": t["train_end"], "node": "10.0.0.5", "gpus": [0],
                       "rank": 0, "role": "train"})
    (folder / "metrics.jsonl").write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))
    (folder / "phases").mkdir()
    (folder / "phases" / "20260921_14.jsonl").write_text(
        "".join(json.dumps(p, separators=(",", ":")) + "\n" for p in phases))


def write_log(path: Path) -> None:
    """A log as a terminal shows it: three formats of line, Ray prefixes, colours, a doubled step line."""
    path.parent.mkdir(parents=True)
    trainer = "\x1b[36m(MegatronTrainRayActor pid=4242, ip=10.0.0.5)\x1b[0m "
    manager = "\x1b[33m(RolloutManager pid=4243, ip=10.0.0.5)\x1b[0m "
    out = [f"{trainer}------------------------ arguments ------------------------"]
    out += [f"{trainer}  {name} {'.' * (48 - len(name))} {value}" for name, value in sorted(ARGS.items())]
    out += [f"{trainer}-------------------- end of arguments ---------------------"]
    for step in VALUES:
        t = times(step)
        old = step == 1  # step 1 is printed the way older slime builds print: no milliseconds, no process
        tr = "(MegatronTrainRayActor pid=4242) " if old else trainer

        def line(prefix: str, ts: float, proc: str, source: str, message: str, *, old: bool = old) -> str:
            head = stamp(ts, millis=not old, proc=None if old else proc)
            return f"{prefix}{head} {source} - {message}"

        rollout = {k: f"np.float64({v!r})" if not old else repr(v) for k, v in values(step, ROLLOUT).items()}
        rollout_text = "{" + ", ".join(f"'{k}': {v}" for k, v in rollout.items()) + "}"
        perf = values(step, TRAINER_PERF)
        if old:
            perf = {("perf/total_train_time" if k == "perf/step_time" else k): v for k, v in perf.items()}
        train = {**values(step, TRAIN), "train/step": step}
        out.append(line(tr, t["start"], "actor_cell0_rank0", "timer.py:31", "Timer train_wait start"))
        out.append(line(manager, t["start"], "rollout_manager", "timer.py:31", "Timer rollout start"))
        out.append(line(manager, t["rollout_end"], "rollout_manager", "timer.py:42",
                        f"Timer rollout end (elapsed: {t['rollout_end'] - t['start']:.1f}s)"))
        out.append(line(manager, t["rollout_end"], "rollout_manager", "metrics.py:89", f"perf {step}: {rollout_text}"))
        out.append(line(tr, t["wait_end"], "actor_cell0_rank0", "timer.py:42",
                        f"Timer train_wait end (elapsed: {t['wait_end'] - t['start']:.1f}s)"))
        out.append(line(tr, t["wait_end"], "actor_cell0_rank0", "timer.py:31", "Timer train start"))
        step_line = line(tr, t["train_end"], "actor_cell0_rank0", "log_utils.py:542", f"step {step}: {train!r}")
        out.append(step_line + (" [repeated 2x across cluster]" if old else ""))
        # Megatron prints the step line a second time (megatron_utils/model.py).
        out.append(line(tr, t["train_end"], "actor_cell0_rank0", "model.py:701", f"step {step}: {train!r}"))
        out.append(line(tr, t["train_end"], "actor_cell0_rank0", "timer.py:42",
                        f"Timer train end (elapsed: {t['train_end'] - t['wait_end']:.1f}s)"))
        out.append(line(tr, t["train_end"], "actor_cell0_rank0", "train_metric_utils.py:56", f"perf {step}: {perf!r}"))
    path.write_text("\n".join(out) + "\n")


def write_tensorboard(folder: Path) -> None:
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    folder.mkdir(parents=True)
    writer = EventFileWriter(str(folder), filename_suffix=".sample")
    for step in VALUES:
        t = times(step)
        for keys, step_key, ts in ((ROLLOUT, "rollout/step", t["rollout_end"]), (TRAIN, "train/step", t["train_end"]),
                                   (TRAINER_PERF, "rollout/step", t["train_end"])):
            data = {**values(step, keys), step_key: float(step)}
            summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=k, simple_value=v)
                                                 for k, v in data.items()])
            writer.add_event(event_pb2.Event(wall_time=ts, step=step, summary=summary))
    writer.close()
    for written in folder.iterdir():  # a fixed name: the writer puts the host name and the time in it
        written.rename(folder / "events.out.tfevents.1789999200.spark.4242.sample")


def write_wandb(csv_path: Path, jsonl_path: Path) -> None:
    csv_path.parent.mkdir(parents=True)
    with csv_path.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["rollout/step", *(f"sample-run - {k}" for k in ROLLOUT + TRAINER_PERF)])  # x-axis: the step key
        for step in VALUES:
            out.writerow([step, *(repr(v) for v in values(step, ROLLOUT + TRAINER_PERF).values())])
    jsonl_path.parent.mkdir(parents=True)
    rows, n = [], 0
    for step in VALUES:
        t = times(step)
        for keys, step_key, ts in ((ROLLOUT, "rollout/step", t["rollout_end"]), (TRAIN, "train/step", t["train_end"]),
                                   (TRAINER_PERF, "rollout/step", t["train_end"])):
            rows.append({"_step": n, "_timestamp": ts, "_runtime": ts - T0, step_key: step, **values(step, keys)})
            n += 1
    jsonl_path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_ci_history(path: Path) -> None:
    path.parent.mkdir(parents=True)
    keys = ("train/grad_norm", "train/ppo_kl", "train/train_rollout_logprob_abs_diff", "rollout/raw_reward")
    lines = [{"metric": k, "series": [[step, dict(zip(KEYS, VALUES[step], strict=True))[k]] for step in VALUES]}
             for k in keys]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def write_events(folder: Path) -> None:
    folder.mkdir(parents=True)
    actor, manager = [], []
    for step in VALUES:
        t = times(step)
        iso = dt.datetime.fromtimestamp(t["train_end"], dt.UTC).isoformat()
        source = {"component": "actor", "cell_index": 0, "rank_within_cell": 0}
        actor.append({"timestamp": iso, "source": source, "type": "metric", "rollout_id": step, "attempt": 0,
                      "metrics": {**values(step, TRAIN), "train/step": step}})
        actor.append({"timestamp": iso, "source": source, "type": "metric", "rollout_id": step, "attempt": 0,
                      "metrics": {**values(step, TRAINER_PERF), "rollout/step": step}})
        actor.append({"timestamp": iso, "source": source, "type": "train_group_step_end", "rollout_id": step,
                      "cell_outcomes": {}})
        iso = dt.datetime.fromtimestamp(t["rollout_end"], dt.UTC).isoformat()
        manager.append({"timestamp": iso, "source": {"component": "rollout_manager"}, "type": "metric",
                        "rollout_id": step, "attempt": 0, "metrics": {**values(step, ROLLOUT), "rollout/step": step}})
    (folder / "actor_cell0_rank0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in actor))
    (folder / "rollout_manager.jsonl").write_text("".join(json.dumps(r) + "\n" for r in manager))


def main() -> None:
    for name in ("dump", "log", "tensorboard", "wandb-csv", "wandb-jsonl", "ci_history", "events"):
        shutil.rmtree(HERE / name, ignore_errors=True)
    write_dump(HERE / "dump" / "dashboard")
    write_log(HERE / "log" / "job.log")
    write_tensorboard(HERE / "tensorboard" / "tb")
    write_wandb(HERE / "wandb-csv" / "sample-run.csv", HERE / "wandb-jsonl" / "history.jsonl")
    write_ci_history(HERE / "ci_history" / "4242-0f3a.jsonl")
    write_events(HERE / "events" / "events")


if __name__ == "__main__":
    main()
