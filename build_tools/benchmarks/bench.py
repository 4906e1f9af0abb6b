"""`make bench`: how long the build takes on this machine, against a bare `mkdocs build` of the same pages.

Every build runs as `python -m build_tools build` in a fresh process on a throw-away copy of the project
(runs, chapters, figures, templates), as a user's `make` would: a cold build (empty build/), a no-op
rebuild (which finds its inputs unchanged and stops), and a rebuild after one run changed. The
figures are then drawn in this one warm process, and the generated pages are built by mkdocs alone.
Goals (issue 22): no-op at most 0.25x bare mkdocs; cold at most 1.15x its floor, the figures drawn serially
plus bare mkdocs; no-op at most 0.14 s (issue 12). Wall seconds are judged, CPU seconds (user + system of
every process, a build's figure workers included) printed beside them; no verdict while the machine is busy
(bench_scale.busy_machine: its load at the start, or other processes' CPU while measuring).

`make bench SCALE=RUNSxSTEPS` (SCALE read from the environment) measures the loader at scale instead: see
`scaled_main`. `make bench RAY=auto` (or a head's HOST:PORT; with SCALE, and ALL=1) measures Ray's check against
the local pool's: bench_ray.py. `make bench WHAT=serve` measures `make serve` against issue 34's goals
(bench_serve.py), `make bench WHAT=watch` `manual watch` against issue 36's (bench_watch.py).
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from build_tools.benchmarks import bench_history
from build_tools.benchmarks.bench_scale import OtherWork, busy_machine
from build_tools.core._exceptions import EXIT_GOAL_MISSED
from build_tools.core._layout import PROJECT, copy_inputs

ROOT = PROJECT.root
NOOP_GOAL = 0.25  # no-op rebuild / bare mkdocs build
COLD_GOAL = 1.15  # cold build / (every figure drawn serially, warm + bare mkdocs build)
NOOP_SECONDS = 0.14  # the no-op rebuild of the example runs, issue 12: stays at or below this
# The no-op rebuild is timed this many times, and judged by the median: a tenth of a second swings by half with
# whatever else the machine's host does.
NOOP_REPEATS = 5
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
ORPHANS_WAIT_SECONDS = 30.0


@dataclass(frozen=True)
class Timing:
    seconds: float  # wall
    cpu: float | None  # user + system seconds of every process it ran; None when not all could be counted


@dataclass(frozen=True)
class Results:
    cold: Timing
    noop: Timing  # the median of NOOP_REPEATS
    touched: Timing
    touched_run: str
    serial: Timing  # every figure drawn in this process, one after the other: the floor's drawing
    parallel: Timing
    bare: Timing  # mkdocs alone on the generated pages
    peak_mib: float
    # Every claim checked, then every claim shown able to fail (checking/prove.py), in one warm process: why the
    # proof is asked for (make check PROVE=1, an edition's build) rather than run by every build. No goal.
    check: Timing | None = None
    proof: Timing | None = None


def main() -> int:
    """`make bench`; with SCALE=RUNSxSTEPS in the environment, the scaled benchmark (bench_scale.py)."""
    scale = os.environ.get("SCALE", "").strip()
    what = os.environ.get("WHAT", "")
    if what == "serve":
        from build_tools.benchmarks.bench_serve import serve_main

        return serve_main(scale)
    if what == "watch":
        from build_tools.benchmarks.bench_watch import watch_main

        return watch_main()
    if os.environ.get("RAY"):
        from build_tools.benchmarks.bench_ray import ray_main
        from build_tools.core._settings import flag

        return ray_main(os.environ["RAY"], scale, flag(os.environ, "ALL"))
    if scale:
        from build_tools.benchmarks.bench_scale import scaled_main

        return scaled_main(scale)
    return examples_main()


def examples_main() -> int:
    """Measure, print the timings and the ratios; 0 when every goal is met (or the machine was too busy to judge),
    EXIT_GOAL_MISSED when not."""
    load_before = os.getloadavg()[0]
    other = OtherWork()
    other.start()
    results = measure()
    load_after = os.getloadavg()[0]
    lines, code = report(results, load_before, load_after, other.stop())
    print(*lines, sep="\n")
    from build_tools.commands.watch import latency

    watched = latency.measure()  # a figure, no goal: a write to its report, file event to judgement
    print(latency.line(watched))
    recorded = {**asdict(results), "watch_latency_s": watched}
    print(f"appended to {bench_history.append(ROOT, 'examples', load_before, load_after, recorded)}")
    return code


def measure() -> Results:
    """Every build and mkdocs run the report compares, on a throw-away copy of the project."""
    whole = adopt_orphans()

    def build(work: Path) -> Timing:
        timing = timed(lambda: _build_in_new_process(work))
        return timing if whole else Timing(timing.seconds, None)

    with tempfile.TemporaryDirectory(prefix="manual-bench-") as tmp:
        work = copy_inputs(ROOT, Path(tmp) / "manual")
        cold = build(work)
        # The largest process of the builds so far: a build or one of its figure workers.
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        noops = sorted((build(work) for _ in range(NOOP_REPEATS)), key=lambda timing: timing.seconds)
        run_id = _touch_one_run(work)
        touched = build(work)
        # Last of what waits for orphans: this process's own figure workers come from a fork server that lives on.
        serial, parallel = _figures_warm(work, Path(tmp))
        bare = timed(lambda: _bare_mkdocs(work, Path(tmp) / "bare-site"))
        check, proof = _proof_warm(work)
    return Results(cold, noops[len(noops) // 2], touched, run_id, serial, parallel, bare, peak_mib, check, proof)


def report(results: Results, load_before: float, load_after: float,
           other_share: float) -> tuple[list[str], int]:
    """The table of timings, then each goal's ratio and verdict; and the exit code."""
    r = results
    floor = r.serial.seconds + r.bare.seconds
    noop_ratio, cold_ratio, noop_goal_ratio = r.noop.seconds / r.bare.seconds, r.cold.seconds / floor, \
        r.noop.seconds / NOOP_SECONDS
    busy = busy_machine(load_before, other_share)
    lines = [f"{'':<52} {'wall s':>7} {'CPU s':>7}"]
    for what, timing in [("cold build (empty build/)", r.cold), (f"no-op rebuild (median of {NOOP_REPEATS})", r.noop),
                         (f"rebuild after touching runs/{r.touched_run}/run.yaml", r.touched),
                         ("draw every figure, one warm process", r.serial),
                         ("draw every figure, warm, in parallel", r.parallel),
                         ("bare mkdocs build of the same pages", r.bare)]:
        lines.append(f"{what:<52} {timing.seconds:7.2f} {_cpu(timing.cpu):>7}")
    if r.check is not None and r.proof is not None:
        for what, timing in [("check every claim, one warm process", r.check),
                             ("show every claim able to fail, one warm process", r.proof)]:
            lines.append(f"{what:<52} {timing.seconds:7.2f} {_cpu(timing.cpu):>7}")
        lines.append(f"{'  proof / check of every claim':<52} {r.proof.seconds / r.check.seconds:7.2f}   (no goal: "
                     "PROVE=1 and every edition's build run it, an everyday build does not)")
    lines += [f"{'peak memory of one build or figure process':<52} {r.peak_mib:7.0f} MiB",
              f"{'load average (1 min) before, after':<52} {load_before:7.2f}, {load_after:.2f} on "
              f"{os.cpu_count()} cores",
              f"{'other work while measuring, of the CPU':<52} {other_share:7.0%}",
              _goal_line("no-op / bare mkdocs", noop_ratio, NOOP_GOAL, busy),
              _goal_line("cold / (figures serially, warm + bare mkdocs)", cold_ratio, COLD_GOAL, busy)]
    if r.cold.cpu is not None and r.serial.cpu is not None and r.bare.cpu is not None:
        lines.append(f"{'  the same in CPU seconds':<52} {r.cold.cpu / (r.serial.cpu + r.bare.cpu):7.2f}   "
                     "(not judged: the cold build draws on every core)")
    lines.append(_goal_line(f"no-op / {NOOP_SECONDS} s", noop_goal_ratio, 1.0, busy))
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        lines.append("PYTHONDONTWRITEBYTECODE is set here: the builds ran without it, as a user's make does (with "
                     "it, every build compiles the build's code anew)")
    if busy:
        return [*lines, busy], 0
    met = noop_ratio <= NOOP_GOAL and cold_ratio <= COLD_GOAL and noop_goal_ratio <= 1.0
    return lines, 0 if met else EXIT_GOAL_MISSED


def _goal_line(what: str, ratio: float, goal: float, busy: str | None) -> str:
    verdict = "no verdict" if busy else "met" if ratio <= goal else "missed"
    return f"{what:<52} {ratio:7.2f}   goal <= {goal}  {verdict}"


def _cpu(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.1f}"


def _cpu_seconds() -> float:
    """User and system seconds of this process and of every child process waited for so far."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def adopt_orphans() -> bool:
    """Make this process the subreaper of its descendants (Linux): a build's fork server, which ends a moment
    after its build, is then handed to this process rather than to init, and its CPU seconds, with those of the
    figure workers it waited for, are counted once it is waited for (_wait_for_orphans). False where that cannot
    be done: the builds' CPU seconds then miss their figure workers."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _wait_for_orphans() -> None:
    """Wait for every child left (a build's fork server, handed over when the build exited) until none is, or
    ORPHANS_WAIT_SECONDS have passed."""
    deadline = time.monotonic() + ORPHANS_WAIT_SECONDS
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # no child left
        if pid == 0:
            time.sleep(0.01)


def timed(action: Callable[[], object]) -> Timing:
    cpu, start = _cpu_seconds(), time.perf_counter()
    action()
    seconds = time.perf_counter() - start
    return Timing(seconds, _cpu_seconds() - cpu)


def run_and_wait(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run command (as a user's make would: users_environment), then wait for what it left behind (a build's fork
    server), so that all of it is counted."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False,
                          env=bench_history.users_environment())
    _wait_for_orphans()
    return done


def _build_in_new_process(work: Path) -> None:
    """`python -m build_tools build` in a fresh interpreter, as `make` runs it; fails loudly if it fails."""
    done = run_and_wait([sys.executable, "-m", "build_tools", "--root", str(work), "build"], work)
    if done.returncode != 0:
        raise RuntimeError(f"the build failed during the benchmark:\n{done.stdout}{done.stderr}")


def _touch_one_run(work: Path) -> str:
    """Change one run's title: new input bytes, same numbers; its summary and figures are redone."""
    run_yaml = sorted((work / "runs").glob("*/run.yaml"))[0]
    lines = run_yaml.read_text(encoding="utf-8").splitlines(keepends=True)
    lines = [line.rstrip("\n") + " (benchmark)\n" if line.startswith("title:") else line for line in lines]
    run_yaml.write_text("".join(lines), encoding="utf-8")
    return run_yaml.parent.name


def _figures_warm(work: Path, tmp: Path) -> tuple[Timing, Timing]:
    """Every figure drawn with an empty figure cache, after a warm-up: serially in this process, then in
    parallel (whose workers' CPU seconds cannot be counted: their fork server lives on)."""
    from build_tools.checking import blocks as blocks_stage
    from build_tools.core._layout import Layout
    from build_tools.drawing.draw import draw_figures
    from build_tools.summarise.summary import summarise_runs

    layout = Layout(work)
    summaries = summarise_runs(layout.runs, layout.cache / "summaries")
    blocks = blocks_stage.read_blocks(layout.docs, layout.figures_src)
    tables = blocks_stage.load_tables(layout.data)
    draw_figures(blocks[:1], summaries, tables, tmp / "warm-up", tmp / "warm-up-cache", jobs=1, layout=layout)
    serial = timed(lambda: draw_figures(blocks, summaries, tables, tmp / "serial", tmp / "serial-cache", jobs=1,
                                         layout=layout))
    parallel = timed(lambda: draw_figures(blocks, summaries, tables, tmp / "parallel", tmp / "parallel-cache",
                                           layout=layout))
    return serial, Timing(parallel.seconds, None)


def _proof_warm(work: Path) -> tuple[Timing, Timing]:
    """Every claim checked, then every claim shown able to fail, on summaries already read (the median of three)."""
    from build_tools.checking import blocks as blocks_stage
    from build_tools.checking.claims import check_claims
    from build_tools.checking.prove import prove_claims
    from build_tools.core._layout import Layout
    from build_tools.summarise.summary import summarise_runs

    layout = Layout(work)
    summaries = summarise_runs(layout.runs, layout.cache / "summaries")
    blocks = blocks_stage.read_blocks(layout.docs, layout.figures_src)
    tables = blocks_stage.load_tables(layout.data)
    verdicts = check_claims(blocks, summaries, tables)  # a warm-up: each summary decoded once

    def median(action: Callable[[], object]) -> Timing:
        return sorted((timed(action) for _ in range(3)), key=lambda timing: timing.seconds)[1]

    return (median(lambda: check_claims(blocks, summaries, tables)),
            median(lambda: prove_claims(verdicts, summaries, tables)))


def _bare_mkdocs(work: Path, site: Path) -> None:
    """mkdocs alone on the pages the build generated, with the config the build wrote."""
    config = work / "build" / "mkdocs.yml"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config), "-d", str(site)],
                          cwd=work, capture_output=True, text=True, check=False, env=bench_history.users_environment())
    if done.returncode != 0:
        raise RuntimeError(f"mkdocs build failed during the benchmark:\n{done.stdout}{done.stderr}")


if __name__ == "__main__":
    sys.exit(main())
