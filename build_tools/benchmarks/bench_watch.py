"""`make bench WHAT=watch`: issue 36's goals for `manual watch` (build_tools/commands/watch/), on bench_scale's
generated run of 10,000 steps with 1 Hz telemetry in every stream (SCALE 1x10000, reused from build/bench-runs/):

- caught up at start (every line already written read and judged) in no more time than a cold `check` of the
  project with that run beside the example runs takes (bench_scale's cold check, measured here in turn with the
  watch, REPEATS times each, judged by the medians);
- then followed, as the job goes on writing a step a second for FOLLOW_SECONDS, with the watcher's process tree
  under 300 MB (its PSS, summed, at its peak over the whole watch, catch-up included);
- and under 2 % of a core while idle (nothing written for IDLE_SECONDS).

The watcher is a fresh process running what `manual watch RUN --format jsonl` runs (cli._cmd_watch: the Watch
loop, its jsonl emitter) against the project's site/contract.json (`make` writes it), with a `ready` hook that
prints when the catch-up is done; the time is from the process started to that line. The latency figure
(commands/watch/latency.py) is printed after, as `make bench` prints it.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from build_tools.benchmarks import bench_history, bench_scale
from build_tools.benchmarks.bench_goals import Judged, verdict
from build_tools.benchmarks.bench_serve import idle_share
from build_tools.core._layout import PROJECT

ROOT = PROJECT.root
WATCH_SCALE = "1x10000"
MEMORY_GOAL_MB = 300.0
IDLE_GOAL_SHARE = 0.02
FOLLOW_SECONDS = 10
IDLE_SECONDS = 20.0
CAUGHT_UP = "caught up"
CATCH_UP_TIMEOUT_S = 900.0

# The watcher's process: `manual watch RUN --format jsonl`'s loop (cli._cmd_watch), saying when it caught up.
WATCHER = """
import sys
from pathlib import Path
from build_tools.checking.contract import read_contract
from build_tools.commands.watch import show
from build_tools.commands.watch.run import Watch
def write(line):
    sys.stdout.write(line + "\\n")
    sys.stdout.flush()
watch = Watch(Path(sys.argv[1]), read_contract(Path(sys.argv[2])), show.emitter("jsonl", write),
              lambda line: sys.stderr.write(line + "\\n"))
watch.run(None, lambda: write("CAUGHT_UP"))
""".replace("CAUGHT_UP", CAUGHT_UP)


@dataclass(frozen=True)
class WatchResults:
    cold_check_seconds: float  # median of REPEATS
    cold_check_times: list[float]
    catch_up_seconds: float  # median of REPEATS
    catch_up_times: list[float]
    peak_pss_mb: float  # the followed watcher's tree, at its peak
    peak_rss_mb: float
    idle_share: float  # of one core
    latency_s: list[float]


def watch_main() -> int:
    runs, steps = bench_scale.scaled_writer().parse_scale(WATCH_SCALE)
    contract = ROOT / "site" / "contract.json"
    if not contract.is_file():
        print(f"ERROR {contract}: no contract to watch against: run `make` first (it writes site/contract.json)",
              file=sys.stderr)
        return 2
    load_before = os.getloadavg()[0]
    other = bench_scale.OtherWork()
    other.start()
    generated, reused = bench_scale.scaled_set(ROOT / "build" / "bench-runs" / WATCH_SCALE, runs, steps)
    print(f"a run of {steps} steps with 1 Hz telemetry ({'reused' if reused else 'generated'})", flush=True)
    with tempfile.TemporaryDirectory(prefix="manual-bench-watch-") as tmp:
        work, (run_id, *_) = bench_scale.scaled_project(Path(tmp), generated, runs, steps)
        results = measure(work, work / "runs" / run_id, contract)
    load_after = os.getloadavg()[0]
    lines, code = report(results, load_before, load_after, other.stop())
    print(*lines, sep="\n")
    history = bench_history.append(ROOT, "watch", load_before, load_after, asdict(results))
    print(f"appended to {os.path.relpath(history)}")
    return code


def report(results: WatchResults, load_before: float, load_after: float,
           other_share: float) -> tuple[list[str], int]:
    """The figures, a line per issue 36 goal (met, missed or no verdict), the latency figure, and the exit code."""
    from build_tools.commands.watch import latency

    r = results
    busy = bench_scale.busy_machine(load_before, other_share)
    lines = [f"{'cold check, the run beside the examples (each time)':<60} "
             f"{', '.join(f'{t:.2f}' for t in r.cold_check_times)} s",
             f"{'watch caught up at start (each time)':<60} {', '.join(f'{t:.2f}' for t in r.catch_up_times)} s",
             f"{'peak RSS of the watcher, summed':<60} {r.peak_rss_mb:8.0f} MB",
             f"{'load average (1 min) before, after':<60} {load_before:8.2f}, {load_after:.2f} on "
             f"{os.cpu_count()} cores",
             f"{'other work while measuring, of the CPU':<60} {other_share:8.0%}"]
    goals = [Judged("watch caught up / cold check (medians)", round(r.catch_up_seconds / r.cold_check_seconds, 2)
                    if r.cold_check_seconds > 0 else None, 1.0, "x"),
             Judged("peak PSS of the watcher, summed, followed", r.peak_pss_mb, MEMORY_GOAL_MB, "MB", strict=True),
             Judged("idle watcher, CPU of one core", round(r.idle_share * 100, 2), IDLE_GOAL_SHARE * 100, "%",
                    strict=True)]
    judged, code = verdict(goals, busy)
    latency_line = latency.line(r.latency_s) if r.latency_s else "watch: latency not measured"
    if busy:  # the busy line last, as bench.py prints it
        return [*lines, *judged[:-1], latency_line, judged[-1]], code
    return [*lines, *judged, latency_line], code


def measure(work: Path, run: Path, contract: Path) -> WatchResults:
    from build_tools.commands.watch import latency

    def emptied() -> None:
        import shutil

        shutil.rmtree(work / "build", ignore_errors=True)

    checks: list[float] = []
    catch_ups: list[float] = []
    for _ in range(bench_scale.REPEATS):
        emptied()
        cold = bench_scale.measure(bench_scale.COLD, work, ["check"])
        if cold.exit_code != 0:
            raise RuntimeError("the cold check failed during the benchmark")
        checks.append(cold.seconds)
        print("measuring the watch's catch-up ...", flush=True)
        watcher, seconds = _start_watcher(run, contract, work)
        catch_ups.append(seconds)
        _stop(watcher)
    _own_metrics(run)
    watcher, seconds = _start_watcher(run, contract, work)
    sampler = bench_scale._TreeSampler(watcher.pid)
    sampler.start()  # from the catch-up's end: its peak is there or after (the catch-up's own is sampled below)
    try:
        print(f"following a step a second for {FOLLOW_SECONDS} s, then idle for {IDLE_SECONDS:.0f} s ...",
              flush=True)
        for step in range(FOLLOW_SECONDS):
            _append_step(run, 10_000 + step)
            time.sleep(1.0)
        time.sleep(2.0)
        idle = idle_share(watcher.pid, IDLE_SECONDS)
    finally:
        sampler.stop()
        peak_pss, peak_rss = max(sampler.peak_pss, watcher.peak_pss), max(sampler.peak, watcher.peak_rss)
        _stop(watcher)
    return WatchResults(round(statistics.median(checks), 2), checks, round(statistics.median(catch_ups), 2),
                        [round(t, 2) for t in catch_ups], round(peak_pss / 1e6, 1), round(peak_rss / 1e6, 1),
                        round(idle, 4), latency.measure())


class _Watcher(subprocess.Popen[str]):
    peak_pss = 0
    peak_rss = 0


def _start_watcher(run: Path, contract: Path, work: Path) -> tuple[_Watcher, float]:
    """The watcher started, and the seconds until it said it caught up (its tree's memory sampled meanwhile)."""
    started = time.perf_counter()
    watcher = _Watcher([sys.executable, "-c", WATCHER, str(run), str(contract)], cwd=work, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    sampler = bench_scale._TreeSampler(watcher.pid)
    sampler.start()
    caught = threading.Event()
    seconds: list[float] = []

    def read() -> None:
        for line in watcher.stdout or []:
            if line.strip() == CAUGHT_UP and not caught.is_set():
                seconds.append(time.perf_counter() - started)
                caught.set()

    threading.Thread(target=read, daemon=True).start()
    if not caught.wait(CATCH_UP_TIMEOUT_S):
        sampler.stop()
        watcher.kill()
        raise RuntimeError("the watcher did not catch up during the benchmark")
    sampler.stop()
    watcher.peak_pss, watcher.peak_rss = sampler.peak_pss, sampler.peak
    return watcher, seconds[0]


def _stop(watcher: subprocess.Popen[str]) -> None:
    watcher.terminate()
    watcher.wait(timeout=60)


def _own_metrics(run: Path) -> None:
    """The run's metrics file as a file of its own (not a hard link into the generated set), to be appended to."""
    metrics = run / "dashboard" / "metrics.jsonl"
    data = metrics.read_bytes()
    metrics.unlink()
    metrics.write_bytes(data)


def _append_step(run: Path, step: int) -> None:
    """A step as the job writes it: a metrics line appended to its dump."""
    record = {"ts": 1.0 + step, "step_key": "rollout/step", "step": step, "metrics": {"rollout/raw_reward": 0.6}}
    with (run / "dashboard" / "metrics.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")

