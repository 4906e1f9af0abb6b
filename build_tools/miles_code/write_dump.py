"""Miles' own dashboard writer, fed a run's numbers: run in Miles' process (run.py's task `write_dump`, which
__init__.write_dumps asks), whose path holds Miles' pinned source and the inert stand-ins (never the GPU stack), it
writes the dump Miles would write for each job.

The job replays, in time order, what a live job pushes to the dashboard collector: the tracking payloads
(`tracking.log`: the step key inside the dict, `step=metrics[step_key]`), the Timer starts and ends of the rollout
manager and of the train rank (each with its own Timer and PhaseSink, as each is its own process), the engine
topology, and the GPU sampler's ticks (NVML as a GB10 answers it: the memory query is not supported, so Miles'
sampler drops the whole tick). A fake clock stands in for the wall clock, so each record carries the job's time and
the collector's and sinks' cadences (5 s flushes, 2 s phase batches) run on the job's time: the bytes are the same
on every run. Nothing here formats a record: Miles' CollectorConfig, MetricStore, PhaseSink and GpuSampler do.
"""

from __future__ import annotations

import importlib
import sys
import time
from argparse import Namespace
from typing import Any

from build_tools.miles_code import UPSTREAM


class Clock:
    """The job's time: time.time() and time.monotonic() answer it; sleeping threads never wake (their work is
    driven from the replay at the job's time instead)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now


class Handle:
    """A Ray actor handle's stand-in: `handle.method.remote(*args)` calls the collector's method in this process."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._target, name)
        return Namespace(remote=method)


class Nvml:
    """pynvml answering with the job's readings. As a GB10 answers it by default: utilisation and power read, the
    memory query is not supported (unified memory); `memory_used_mib`, where a job gives one, is read instead."""

    class NVMLError_NotSupported(Exception):  # noqa: N801 - pynvml's own name
        pass

    def __init__(self, readings: dict[float, tuple[int, int]], clock: Clock, memory_used_mib: int | None) -> None:
        self._readings = readings
        self._clock = clock
        self._memory = memory_used_mib

    def nvmlInit(self) -> None:  # noqa: N802 - pynvml's names
        return None

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802
        return index

    def nvmlDeviceGetUUID(self, handle: int) -> str:  # noqa: N802
        return f"GPU-gb10-{handle}"

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> Namespace:  # noqa: N802
        return Namespace(gpu=self._readings[self._clock.now][0])

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Namespace:  # noqa: N802
        if self._memory is None:
            raise self.NVMLError_NotSupported("Not Supported")
        return Namespace(used=self._memory << 20)

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:  # noqa: N802
        return self._readings[self._clock.now][1] * 1000


def _miles(name: str) -> Any:
    """A module of Miles' (imported by name: this process's path holds upstream/, the type checker's does not)."""
    return importlib.import_module(name)


def _identity(process: str, node: str) -> Any:
    """What hooks._default_resolve_identity finds in each process: the rollout manager is a driver-side process
    (no GPU; torch.distributed not initialised there, so rank -1), the train actor is rank 0 on GPU 0."""
    hooks = _miles("miles.dashboard.hooks")
    return hooks._Identity(node=node, gpus=[], rank=-1) if process == "rollout_manager" else \
        hooks._Identity(node=node, gpus=[0], rank=0)


class Process:
    """One process of the job: its own Timer (a per-process singleton in Miles) with a PhaseSink attached."""

    def __init__(self, role: str, node: str, handle: Handle) -> None:
        hooks = _miles("miles.dashboard.hooks")
        Timer = _miles("miles.utils.timer").Timer  # noqa: N806 - Miles' class

        self.role, self.node = role, node
        self.sink = hooks.PhaseSink(handle, role)
        self.sink._flusher = "driven by the replay"  # its 2 s flush thread, run at the job's time by replay()
        self.timer = Timer.__new__(Timer)  # a process of its own: not the one singleton of this interpreter
        Timer.__init__(self.timer)
        self.timer.event_sinks.append(self.sink)

    def call(self, fn: Any, *args: Any) -> None:
        hooks = _miles("miles.dashboard.hooks")
        hooks._resolve_identity = lambda: _identity(self.role, self.node)
        fn(*args)


def parsed(words: list[str]) -> Namespace:
    """The job's arguments as train.py gets them: Miles' parse_args over its launch's words."""
    arguments = _miles("miles.utils.arguments")
    sys.argv = ["train.py", *words]
    args: Namespace = arguments.parse_args()
    return args


def replay(job: dict[str, Any]) -> None:
    """Write {--dump-details}/dashboard as Miles does, from the job's actions."""
    args = parsed(job["argv"])
    clock = Clock(float(job["start_ts"]))
    time.time, time.monotonic = clock.time, clock.monotonic

    backend, hooks, store = _miles("miles.dashboard.backend"), _miles("miles.dashboard.hooks"), \
        _miles("miles.dashboard.store")
    collector_config_from_args = _miles("miles.dashboard.args").collector_config_from_args
    DashboardCollector = _miles("miles.dashboard.collector").DashboardCollector  # noqa: N806 - Miles' classes
    GpuSampler = _miles("miles.dashboard.gpu_sampler").GpuSampler  # noqa: N806
    MilesDashboardBackend = _miles("miles.utils.tracking_utils.base").MilesDashboardBackend  # noqa: N806
    timer_module = _miles("miles.utils.timer")
    timer_module.time = clock.time  # Timer reads `from time import time`
    _all_vendored("miles.dashboard.args", "miles.dashboard.collector", "miles.dashboard.store", "miles.dashboard.hooks",
                  "miles.dashboard.backend", "miles.dashboard.gpu_sampler", "miles.utils.timer",
                  "miles.utils.tracking_utils.base")
    collector = DashboardCollector(collector_config_from_args(args, start_ts=clock.now))  # writes meta.json
    handle = Handle(collector)
    backend._handle = handle  # what resolve_collector finds in every process
    tracking = MilesDashboardBackend()
    processes = {role: Process(role, job["node"], handle) for role in ("rollout_manager", "train")}
    readings = {float(ts): (int(util), int(power)) for ts, util, power in job.get("gpu_ticks", [])}
    sampler = GpuSampler(lambda node, batch: handle.push_gpu_samples.remote(node, batch), node=job["node"],
                         nvml=Nvml(readings, clock, job.get("memory_used_mib")))
    flush_every = float(collector.config.flush_interval_seconds)
    cadences = {"collector": [clock.now + flush_every, flush_every, collector.flush],
                "sampler": [clock.now + sampler.FLUSH_INTERVAL_SECONDS, sampler.FLUSH_INTERVAL_SECONDS,
                            sampler.flush]}
    for process in processes.values():
        cadences[process.role] = [clock.now + hooks.BATCH_MAX_SECONDS, hooks.BATCH_MAX_SECONDS,
                                  _due_flush(process.sink)]
    for action in _timeline(job, readings):
        _run_cadences(clock, cadences, float(action[0]))
        clock.now = float(action[0])
        kind = action[1]
        if kind == "log":  # tracking.log(args, metrics, step_key): step = metrics.get(step_key)
            _, _, step_key, metrics = action
            tracking.log(metrics, step=metrics.get(step_key), step_key=step_key)
        elif kind == "begin":
            processes[action[2]].call(processes[action[2]].timer.start, action[3])
        elif kind == "end":
            processes[action[2]].call(processes[action[2]].timer.end, action[3])
        elif kind == "topology":  # hooks.register_engines' snapshot of the engine actors
            engines = [store.EngineInfo(**engine) for engine in action[2]]
            handle.update_topology.remote(store.TopologySnapshot(ts=clock.now, engines=engines))
        elif kind == "gpu_tick":
            sampler.sample_once(clock.now)
    _run_cadences(clock, cadences, clock.now)
    for process in processes.values():  # finish_dashboard: hooks.detach_and_flush, then the collector's shutdown
        process.sink.flush()
    sampler.flush()
    collector.shutdown()


def _all_vendored(*names: str) -> None:
    """Each module the writer runs is Miles' own file from upstream/, never an inert stand-in (which would write
    nothing and say nothing)."""
    stand_in = [name for name in names if not str(getattr(sys.modules[name], "__file__", "")).startswith(
        str(UPSTREAM))]
    if stand_in:
        raise RuntimeError(f"not in build_tools/miles_code/upstream (make miles-code copies them): {stand_in}")


def _due_flush(sink: Any) -> Any:
    """The phase sink's background flusher: every 2 s, flush what is buffered."""

    def flush() -> None:
        if sink._buffer:
            sink.flush()

    return flush


def _run_cadences(clock: Clock, cadences: dict[str, list[Any]], until: float) -> None:
    """Run every periodic flush due before `until`, in time order, at its own time."""
    while True:
        name = min(cadences, key=lambda key: (cadences[key][0], key))
        due, every, work = cadences[name]
        if due >= until:
            return
        clock.now = due
        work()
        cadences[name][0] = due + every


def _timeline(job: dict[str, Any], readings: dict[float, tuple[int, int]]) -> list[list[Any]]:
    """The job's actions and GPU ticks in time order (the job lists actions in its own order for equal times)."""
    ticks = [[ts, "gpu_tick"] for ts in sorted(readings)]
    actions = [list(action) for action in job["actions"]]
    merged = sorted(enumerate(actions + ticks), key=lambda item: (float(item[1][0]), item[0]))
    return [action for _, action in merged]


def snapshot(words: list[str]) -> dict[str, Any]:
    """What Miles keeps of a launch in meta.json: its CollectorConfig's run name and args snapshot."""
    config = _miles("miles.dashboard.args").collector_config_from_args(parsed(words), start_ts=0.0)
    return {"run_name": config.run_name, "args": config.args_snapshot}


def write(request: dict[str, Any]) -> list[dict[str, Any]] | None:
    """{"snapshots": [argv, ...]}: what Miles keeps of each launch in meta.json; {"jobs": [...]}: each job's dump
    written, the real clock put back after each."""
    if "snapshots" in request:
        return [snapshot(words) for words in request["snapshots"]]
    real_time, real_monotonic = time.time, time.monotonic
    for job in request["jobs"]:
        replay(job)
        time.time, time.monotonic = real_time, real_monotonic
    return None
