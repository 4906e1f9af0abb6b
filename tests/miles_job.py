"""A small Miles job's tracking, written at test time by the libraries Miles calls, the way it calls them
(radixark/miles 31f1ca9): Python logging in Miles' format, TensorBoard's event writer as torch's SummaryWriter
drives it, wandb in offline mode, pydantic's model_dump_json of Miles' MetricEvent, and the CI history record as
miles/utils/tracking_utils/ci_history.py writes it (json.dumps of its whitelist's series).

`tracking.log(args, metrics, step_key)` (miles/utils/tracking_utils/tracking.py) fans one dict out to every
backend: wandb gets `wandb.log(metrics)` (no step), TensorBoard `add_scalar(key, value, step)` for every key but
the step key, the event logger a MetricEvent. The log lines are the ones the callers print beside it.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Discriminator, NonNegativeInt

ROLLOUTS = 4
# miles/utils/tracking_utils/ci_history.py TARGET_METRIC_KEYS (the two TITO mismatch rates left out: not logged here)
CI_KEYS = ("train/grad_norm", "train/ppo_kl", "train/train_rollout_logprob_abs_diff", "train/train_rollout_kl",
           "rollout/raw_reward")
STEPS_PER_ROLLOUT = 2  # train/step = rollout id x 2 + the step inside the rollout
T0 = 1789999200.0  # 2026-09-21 14:00:00 UTC


# --- Miles' event models (miles/utils/audit_utils/event_logger/models.py, process_identity.py, pydantic_utils.py) --


class FrozenStrictBaseModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _ProcessIdentityBase(FrozenStrictBaseModel):
    component: str


class MainProcessIdentity(_ProcessIdentityBase):
    component: Literal["main"] = "main"


class RolloutManagerProcessIdentity(_ProcessIdentityBase):
    component: Literal["rollout_manager"] = "rollout_manager"


class TrainProcessIdentity(_ProcessIdentityBase):
    component: Literal["actor", "critic"]
    cell_index: NonNegativeInt
    rank_within_cell: NonNegativeInt


ProcessIdentity = Annotated[MainProcessIdentity | RolloutManagerProcessIdentity | TrainProcessIdentity,
                            Discriminator("component")]


class EventBase(FrozenStrictBaseModel):
    timestamp: datetime
    source: ProcessIdentity


class MetricEvent(EventBase):
    type: Literal["metric"] = "metric"
    rollout_id: int | None = None
    attempt: int | None = None
    metrics: dict[str, Any]


# --- one process's backends ---------------------------------------------------------------------------------


class Process:
    """One Miles process (the rollout manager or a trainer rank) with the backends a job turned on."""

    def __init__(self, job: Job, name: str, source: Any) -> None:
        self.job, self.name, self.source = job, name, source
        self.context: dict[str, Any] = {}  # the event logger's context: rollout_id and attempt in actor.train
        self.logger = logging.getLogger(f"miles-job.{id(job)}.{name}")
        self.logger.propagate = False
        self.logger.setLevel(logging.INFO)
        self.tb: Any = None
        self.series: dict[str, list[tuple[int | None, float]]] = {}  # the CI history backend's, per process
        self.ci_path = job.ci_history / f"{os.getpid()}-{name}.jsonl" if job.ci_history else None
        if job.log is not None:
            handler = logging.FileHandler(job.log, encoding="utf-8")
            # miles/utils/logging_utils.py configure_logger_raw; the container logs in UTC.
            formatter = logging.Formatter(f"[%(asctime)s.%(msecs)03d {name}] %(filename)s:%(lineno)d - %(message)s",
                                          datefmt="%Y-%m-%d %H:%M:%S")
            formatter.converter = time.gmtime
            handler.setFormatter(formatter)
            self.logger.addHandler(handler)
        if job.tensorboard is not None:
            from tensorboard.summary.writer.event_file_writer import EventFileWriter

            self.tb = EventFileWriter(str(job.tensorboard))  # what torch's SummaryWriter(log_dir) opens

    def info(self, message: str) -> None:
        self.logger.info(message)

    def track(self, metrics: dict[str, Any], step_key: str) -> None:
        """miles/utils/tracking_utils/tracking.log."""
        step = metrics.get(step_key)
        self.job.logged.append((step_key, step, {k: v for k, v in metrics.items() if k != step_key}))
        if self.job.wandb:
            import wandb

            wandb.log(metrics)
        if self.tb is not None:
            self._add_scalars({k: v for k, v in metrics.items() if k != step_key}, step)
        if self.ci_path is not None:
            self._ci_history(metrics, step)
        if self.job.events is not None:
            event = MetricEvent(**{"metrics": metrics, "timestamp": datetime.now(UTC), "source": self.source,
                                   **self.context})
            with (self.job.events / f"{self.name}.jsonl").open("a", encoding="utf-8") as handle:
                handle.write(event.model_dump_json() + "\n")

    def _ci_history(self, metrics: dict[str, Any], step: int) -> None:
        """CiHistoryBackend.log: the whitelist's values appended, the whole record rewritten as a snapshot."""
        captured = [(key, float(metrics[key])) for key in CI_KEYS if key in metrics]
        for key, value in captured:
            self.series.setdefault(key, []).append((step, value))
        if captured and self.ci_path is not None:
            def encode(value: float) -> float | str:
                if math.isfinite(value):
                    return value
                return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"

            self.ci_path.write_text("".join(
                json.dumps({"metric": key, "series": [[s, encode(v)] for s, v in points]}, allow_nan=False) + "\n"
                for key, points in self.series.items()), encoding="utf-8")

    def _add_scalars(self, data: dict[str, Any], step: int) -> None:
        """torch.utils.tensorboard SummaryWriter.add_scalar(key, value, step) for each key: a simple_value."""
        from tensorboard.compat.proto import event_pb2, summary_pb2

        for key, value in data.items():
            summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=key, simple_value=float(value))])
            self.tb.add_event(event_pb2.Event(wall_time=time.time(), step=int(step), summary=summary))

    def close(self) -> None:
        for handler in list(self.logger.handlers):
            handler.close()
            self.logger.removeHandler(handler)
        if self.tb is not None:
            self.tb.close()


class Job:
    """A job of ROLLOUTS rollouts whose metrics go to the backends named; `logged` keeps every tracking.log call."""

    def __init__(self, folder: Path, *, log: bool = False, tensorboard: bool = False, wandb: bool = False,
                 events: bool = False, ci_history: bool = False, seed: int = 0, rollouts: int = ROLLOUTS) -> None:
        self.folder = folder
        self.rollouts = rollouts
        self.log = folder / "log" / "job.log" if log else None
        self.tensorboard = folder / "tensorboard" if tensorboard else None
        self.events = folder / "events" if events else None
        self.ci_history = folder / "ci_history" if ci_history else None
        self.wandb = wandb
        for path in (self.log.parent if self.log else None, self.tensorboard, self.events, self.ci_history):
            if path is not None:
                path.mkdir(parents=True, exist_ok=True)
        self.random = random.Random(seed)
        self.logged: list[tuple[str, int, dict[str, Any]]] = []

    def value(self, scale: float = 1.0) -> float:
        """A float64 with every digit used, as a mean of a batch is."""
        return self.random.uniform(0.1, 1.0) * scale

    def run(self, between: Callable[[int], None] | None = None) -> None:
        """The whole job; `between(rollout)` after each rollout (a test paces the writing with it)."""
        if self.wandb:
            self._init_wandb()
        manager = Process(self, "rollout_manager", RolloutManagerProcessIdentity())
        trainer = Process(self, "actor_cell0_rank0", TrainProcessIdentity(component="actor", cell_index=0,
                                                                          rank_within_cell=0))
        try:
            for rollout in range(self.rollouts):
                self._rollout(manager, rollout)
                trainer.context = {"rollout_id": rollout, "attempt": 0}  # actor.train's event_logger_context
                self._train(trainer, rollout)
                trainer.context = {}
                if rollout % 2 == 1:
                    self._eval(manager, rollout)
                if between is not None:
                    between(rollout)
        finally:
            manager.close()
            trainer.close()
            if self.wandb:
                import wandb

                wandb.finish()
                wandb.teardown()  # until wandb-core has closed the run's log (it writes its header last)

    def _init_wandb(self) -> None:
        """wandb_utils.init_wandb_primary in offline mode, then _init_wandb_common's define_metric calls."""
        import wandb

        (self.folder / "wandb").mkdir(parents=True, exist_ok=True)
        wandb.init(project="miles", group="miles-run", name="miles-run", dir=str(self.folder / "wandb"),
                   settings=wandb.Settings(mode="offline", init_timeout=300.0))
        for name, step in (("train", "train/step"), ("rollout", "rollout/step"), ("multi_turn", "rollout/step"),
                           ("passrate", "rollout/step"), ("eval", "eval/step"), ("perf", "rollout/step")):
            wandb.define_metric(step)
            wandb.define_metric(f"{name}/*", step_metric=step)

    def _rollout(self, manager: Process, rollout: int) -> None:
        """miles/ray/rollout/metrics.py log_rollout_data."""
        log_dict = {"rollout/response_len/mean": self.value(900), "rollout/zero_std/count": self.random.randrange(9),
                    "perf/rollout_time": self.value(60), "perf/tokens_per_gpu_per_sec": self.value(3000),
                    "passrate/pass@1": self.value()}
        manager.info(f"perf {rollout}: {log_dict}")
        manager.track({**log_dict, "rollout/step": rollout}, "rollout/step")

    def _train(self, trainer: Process, rollout: int) -> None:
        for step_id in range(STEPS_PER_ROLLOUT):  # training_utils/log_utils.py log_train_step
            train = {"train/loss": self.value(), "train/pg_clipfrac": self.value(0.1), "train/ppo_kl": self.value(1e-3),
                     "train/entropy_loss": self.value(), "train/train_rollout_logprob_abs_diff": self.value(1e-2),
                     "train/grad_norm": float(self.value(3))}
            if (rollout, step_id) == (2, 1):
                train["train/grad_norm"] = math.nan  # a diverged step: Miles logs the NaN it computed
            train["train/step"] = rollout * STEPS_PER_ROLLOUT + step_id
            trainer.track(train, "train/step")
            trainer.info(f"step {train['train/step']}: {train}")
        # gather_log_data("rollout", ...) then ("multi_turn", ...): printed, then logged with rollout/step.
        reduced = {"rollout/raw_reward": self.value(), "rollout/response_lengths": self.value(900),
                   "rollout/truncated": self.value(0.1)}
        trainer.info(f"rollout {rollout}: {reduced}")
        trainer.track({**reduced, "rollout/step": rollout}, "rollout/step")
        turns = {"multi_turn/multi_turn_metric/round_number_mean": np.mean(np.array([2, 3, 3])),
                 "multi_turn/raw_response_length/response_length_max": self.value(2000)}
        trainer.info(f"multi_turn {rollout}: {turns}")
        trainer.track({**turns, "rollout/step": rollout}, "rollout/step")
        # miles/utils/train_metric_utils.py log_perf_data_raw
        perf = {"perf/train_wait_time": self.value(40), "perf/train_time": self.value(20)}
        perf["perf/step_time"] = perf["perf/train_wait_time"] + perf["perf/train_time"]
        perf["perf/wait_time_ratio"] = perf["perf/train_wait_time"] / perf["perf/step_time"]
        trainer.info(f"perf {rollout}: {perf}")
        trainer.track({**perf, "rollout/step": rollout}, "rollout/step")
        # log_utils.py log_cpu_memory
        gb = self.value(60)
        trainer.info(f"[CPU memory] after_train: {gb:.2f} GB (rollout_id={rollout}, step={rollout})")
        trainer.track({"perf/cpu_memory_after_train_gb": gb, "rollout/step": rollout}, "rollout/step")

    def _eval(self, manager: Process, rollout: int) -> None:
        log_dict = {"eval/gsm8k": self.value(), "eval/gsm8k-truncated_ratio": self.value(0.1)}
        manager.info(f"eval {rollout}: {log_dict}")
        manager.track({**log_dict, "eval/step": rollout}, "eval/step")

    def expected(self) -> dict[tuple[str, int, str], float]:
        """Every value logged, at its own step key and step."""
        return {(step_key, step, key): float(value) for step_key, step, metrics in self.logged
                for key, value in metrics.items()}


def offline_env(tmp: Path) -> dict[str, str]:
    """wandb in offline mode, silent, with its settings and cache inside the test's folder."""
    return {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DIR": str(tmp), "WANDB_CACHE_DIR": str(tmp),
            "WANDB_CONFIG_DIR": str(tmp), "WANDB_DATA_DIR": str(tmp), "WANDB_DISABLE_CODE": "true",
            "WANDB_DISABLE_GIT": "true", "HOME": os.environ.get("HOME", str(tmp))}


def write_mlflow(made: Job, store: Path, run_name: str = "miles-run", args: dict[str, Any] | None = None,
                 between: Callable[[int], None] | None = None) -> Path:
    """Miles' MLflow backend (miles/utils/tracking_utils/mlflow_utils.py at 31f1ca961) given the job's calls, in
    order: set_tracking_uri, set_experiment, start_run(run_name, tags={"rank": ...}), log_params of the arguments
    flattened to text, then each tracking.log call's dict (its step key included) sanitized, as floats,
    `log_metrics(..., step=<the step key's value>)`; end_run. The run's folder (mlruns/<experiment>/<run id>/).
    `between(n)` after the n-th call (a test paces the writing with it)."""
    import re

    import mlflow

    def sanitize(key: str) -> str:  # mlflow_utils._sanitize_key
        return re.sub(r"[^a-zA-Z0-9_\-./\s]", "_", key)

    mlflow.set_tracking_uri(store.resolve().as_uri())
    mlflow.set_experiment("miles")
    run = mlflow.start_run(run_name=run_name, tags={"rank": "0"})
    mlflow.log_params({name: str(value) for name, value in (args or {"lr": 1e-6, "n_samples_per_prompt": 8}).items()})
    for number, (step_key, step, metrics) in enumerate(made.logged):
        mlflow.log_metrics({sanitize(k): float(v) for k, v in {**metrics, step_key: step}.items()}, step=int(step))
        if between is not None:
            between(number)
    mlflow.end_run()
    return store / run.info.experiment_id / run.info.run_id
