"""`make bench SCALE=RUNSxSTEPS`: the loader, summaries and claims at scale, against issue 22's goals.

The scaled run set (examples/_scaled.py, the example generator's: RUNS runs of STEPS steps; one run carries 1 Hz
telemetry in every stream) is generated once into build/bench-runs/<SCALE>/ and reused while the generator's
code is unchanged. Each measurement runs `python -m build_tools` in a fresh process on a throw-away copy of
the project whose runs/ holds the 20 example runs (the chapters' checks read them by id) and, beside them,
the scaled runs (hard links into the generated set; the one run changed is replaced, never written through):

- JSON-parse floor: pyarrow's JSON reader parsing every metrics and phases file of the scaled set on one process
  a core (_json_floor.py), nothing checked, hashed or summarised: what reading the bytes costs at the least;
- cold check: `check` with an empty build/ (no figure reads a scaled run: each is validated, not summarised),
  judged by its ratio to the floor measured in the same run;
- warm check: `check` again, every summary and every validated run in the cache;
- touched check: `check` after one scaled run's run.yaml changed (only that run is read again);
- cold check ALL=1 (a scale of one run): `make check ALL=1`'s command with an empty build/, every run summarised;
- full build: `build` after those checks (figures, pages and site from scratch).

Each is timed on the wall clock, with the CPU seconds of its whole process tree (user + system) and the peak
memory of the tree, sampled every 100 ms from /proc: the sum of the resident memory of the process and all its
descendants, and the sum of their proportional set sizes (PSS: a page shared by several processes, as a fork
server's imported libraries are by its workers, counted once, split among them), which is what the goals judge;
and the peak of its largest process (the kernel's ru_maxrss). The floor and the checks are measured REPEATS
times each (a cold one from an empty build/ every time; the floor and the cold check in turn, so that both meet
the machine's same swings) and judged by their median, their fastest and slowest
beside it: this machine's speed was seen to swing by 1.6x from one minute to the next with nothing else running.
The table compares the medians with the goals, and build/bench.json keeps every number and the load average;
a busy machine gets no verdict (busy_machine: its load average above its cores at the start, or other
processes, OtherWork, using more than a tenth of its CPU while measuring).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib
import json
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType

from build_tools.benchmarks import bench_history
from build_tools.core._exceptions import EXIT_GOAL_MISSED
from build_tools.core._layout import PROJECT, copy_inputs

ROOT = PROJECT.root
GENERATOR = ROOT / "examples"  # the example generator: a tool beside the package, not part of it
PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1024 * 1024
# How often the tree's memory is sampled (each sample costs about a millisecond of the machine it measures).
SAMPLE_SECONDS = 0.1
# The floor and each check are measured this many times (the full build once: it takes minutes).
REPEATS = 3
FLOOR = "JSON-parse floor"
COLD = "cold check"
ALL_RUNS = "cold check ALL=1 (every run summarised)"


@dataclass(frozen=True)
class Goal:
    """A goal of issue 22 for one measurement: its time at most `seconds` (or under, `strict`), its time at most
    `floor_ratio` times the JSON-parse floor's, its process tree's peak memory under `mib`."""

    seconds: float | None = None
    mib: float | None = None
    floor_ratio: float | None = None
    strict: bool = False


# Issue 22's goals on this 2-core machine, by scale and measurement. Another measurement (a Ray summariser, in a
# module of its own) adds its own name here and to the measurements.
GOALS: dict[str, dict[str, Goal]] = {
    "1000x1000": {COLD: Goal(floor_ratio=1.5, mib=600.0), "warm check": Goal(seconds=0.5, strict=True),
                  "full build (after the checks)": Goal(seconds=12.0)},
    "1x10000": {ALL_RUNS: Goal(seconds=8.0, mib=400.0, strict=True)},
}


@dataclass
class Measurement:
    what: str
    seconds: float  # the median of the times measured
    peak_tree_mib: float  # the whole process tree, sampled (at least its largest process); the most of any time
    peak_process_mib: float  # the largest single process (ru_maxrss)
    exit_code: int
    times: list[float] = field(default_factory=list)  # every time measured, in order
    cpu_seconds: float = 0.0  # user + system time of the process tree (of the median run, for repeats)
    # The tree's proportional set size: each page counted once, split among the processes that share it (a fork
    # server's imports are its workers' too: the summed resident memory counts them once a process).
    peak_tree_pss_mib: float = 0.0


# Other work may use at most this share of the machine's CPU while the benchmark measures, for a verdict.
OTHER_SHARE_MOST = 0.1
OTHER_SAMPLE_SECONDS = 0.5  # other work is sampled less often than a measured tree: it only has to be seen
QUIET = "so the times say more about the other work than about the build; run make bench on a quiet machine"


def busy_machine(load_before: float, other_share: float) -> str | None:
    """The line that withholds a verdict when other work shared the machine: the 1-minute load average above the
    number of cores when the benchmark started, or other processes (OtherWork) using more than OTHER_SHARE_MOST of
    the machine's CPU while it measured. Not the load average at its end: on two cores the benchmark's own two
    workers make it about 2, whatever else runs. None on a quiet machine."""
    cores = os.cpu_count() or 1
    if load_before > cores:
        return (f"no verdict: the load average ({load_before:.2f}) exceeded this machine's {cores} cores when the "
                f"benchmark started, {QUIET}")
    if other_share > OTHER_SHARE_MOST:
        return (f"no verdict: other work used {other_share:.0%} of this machine's CPU while measuring (more than "
                f"{OTHER_SHARE_MOST:.0%}), {QUIET}")
    return None


class OtherWork(threading.Thread):
    """The CPU seconds that processes other than `root` and its descendants used while it measured, sampled every
    OTHER_SAMPLE_SECONDS from /proc (a process seen once among root's descendants stays root's, as a fork server does
    after its parent ends): the other work that slowed the measurements, which the load average cannot tell from
    the benchmark's own processes."""

    def __init__(self, root: int | None = None) -> None:
        super().__init__(daemon=True)
        self.root = root if root is not None else os.getpid()
        self.ours: set[int] = set()
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.started = time.perf_counter()
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(OTHER_SAMPLE_SECONDS):
            self.sample()

    def sample(self) -> None:
        processes = _processes()
        self.ours |= _descendants(self.root, processes)
        for pid, (_, cpu, _) in processes.items():
            self.first.setdefault(pid, cpu)
            self.last[pid] = cpu

    def stop(self) -> float:
        """Stop sampling; the share of the machine's CPU (every core, for the time sampled) the others used."""
        self.sample()
        self._done.set()
        self.join()
        capacity = (time.perf_counter() - self.started) * (os.cpu_count() or 1)
        return self.other_seconds() / capacity if capacity > 0 else 0.0

    def other_seconds(self) -> float:
        return sum(self.last[pid] - self.first[pid] for pid in self.last if pid not in self.ours)


def scaled_main(scale: str) -> int:
    """Generate (or reuse) the scaled set, measure, print the table, write build/bench.json.

    0 when every goal of this scale is met (or it has none), 1 when one is missed, 2 on a malformed SCALE."""
    try:
        runs, steps = scaled_writer().parse_scale(scale)
    except ValueError as error:
        print(f"ERROR {error}", file=sys.stderr)
        return 2
    scale = f"{runs}x{steps}"
    load_before = os.getloadavg()[0]
    other = OtherWork()
    other.start()
    started = time.perf_counter()
    generated, reused = scaled_set(ROOT / "build" / "bench-runs" / scale, runs, steps)
    generation = time.perf_counter() - started
    print(f"scaled set {scale}: {runs} run(s) of {steps} steps"
          f"{' with 1 Hz telemetry in every stream' if runs == 1 else ', metrics and phases'}; "
          f"{'reused' if reused else 'generated'} in {generation:.1f} s ({_size_mib(generated):.0f} MiB on disk)")
    with tempfile.TemporaryDirectory(prefix="manual-bench-scale-") as tmp:
        work, linked = scaled_project(Path(tmp), generated, runs, steps)
        measured = measure_all(work, generated, linked, scale)
    goals = _goal_lines(scale, measured)
    _print_table(measured, goals)
    # Other work on the machine slows every measurement: its load is kept beside the numbers, and a busy machine
    # gives no verdict.
    load = [round(value, 2) for value in os.getloadavg()]
    print(f"load average at the end (1, 5, 15 min): {load[0]}, {load[1]}, {load[2]} on {os.cpu_count()} CPUs")
    other_share = other.stop()
    print(f"other work while measuring: {other_share:.0%} of this machine's CPU")
    busy = busy_machine(load_before, other_share)
    report = {"scale": scale, "runs": runs, "steps": steps, "telemetry": runs == 1, "example_runs": 20,
              "generation_seconds": round(generation, 2), "generation_reused": reused,
              "cpus": os.cpu_count(), "load_average_at_start": round(load_before, 2), "load_average_at_end": load,
              "other_work_share": round(other_share, 3),
              "verdict": None if busy else all(goal["met"] for goal in goals),
              "measurements": [asdict(m) for m in measured], "goals": goals}
    out = ROOT / "build" / "bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {os.path.relpath(out)}")
    history = bench_history.append(ROOT, f"scale {scale}", load_before, os.getloadavg()[0], report)
    print(f"appended to {os.path.relpath(history)}")
    if any(m.exit_code != 0 for m in measured):
        return 1
    if busy:
        print(busy)
        return 0
    return 0 if all(goal["met"] for goal in goals) else EXIT_GOAL_MISSED


# --- the scaled set --------------------------------------------------------------------------------


def _write_scaled(folder: Path, runs: int, steps: int) -> None:
    scaled_writer().write_scaled(folder, runs, steps)


def scaled_writer() -> ModuleType:
    """examples/_scaled.py, imported from the project root (which `manual bench` may not have on its path)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module("examples._scaled")


def generator_digest(runs: int, steps: int) -> str:
    """What the generated set depends on: the scale, the generator's code and the edition's Miles build."""
    digest = hashlib.sha256(f"{runs}x{steps}\0".encode())
    for path in [*sorted(GENERATOR.glob("*.py")), ROOT / "edition.yml"]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def scaled_set(folder: Path, runs: int, steps: int) -> tuple[Path, bool]:
    """The generated runs in folder/runs, generated unless a complete set of this code is there."""
    marker = folder / "complete.key"
    key = generator_digest(runs, steps)
    if marker.is_file() and marker.read_text(encoding="utf-8") == key:
        return folder / "runs", True
    shutil.rmtree(folder, ignore_errors=True)
    # In a fresh interpreter: a process keeps, in the peak memory the kernel reports for it (ru_maxrss), what
    # its parent held when it was started, so a bench process grown by generating would inflate every measure.
    generator = multiprocessing.get_context("spawn").Process(target=_write_scaled, args=(folder / "runs", runs, steps))
    generator.start()
    generator.join()
    if generator.exitcode != 0:
        raise RuntimeError(f"generating the scaled set failed (exit code {generator.exitcode})")
    marker.write_text(key, encoding="utf-8")  # last: a set without it is incomplete, and made again
    return folder / "runs", False


def _date_after(edition_yml: Path, ends: dt.date) -> None:
    """The throw-away copy's edition dated on or after the day its longest scaled run ends: the runs start on the
    Miles commit's day (a run cannot use a commit from its future), and none may end after the edition's date."""
    text = edition_yml.read_text(encoding="utf-8")
    dated = re.search(r"^date: ([0-9]{4}-[0-9][0-9]-[0-9][0-9])", text, flags=re.M)
    if dated and dt.date.fromisoformat(dated[1]) < ends:
        edition_yml.write_text(text.replace(dated[0], f"date: {ends.isoformat()}"), encoding="utf-8")


def scaled_project(tmp: Path, generated: Path, runs: int, steps: int) -> tuple[Path, list[str]]:
    """A throw-away copy of the project in tmp with the generated runs beside the examples (its edition dated after
    the longest of them ends): the copy's root and the generated runs' ids."""
    work = copy_inputs(ROOT, tmp / "manual")
    _date_after(work / "edition.yml", scaled_writer().ends_by(runs, steps))
    return work, link_runs(generated, work / "runs")


def link_runs(generated: Path, runs_dir: Path) -> list[str]:
    """Hard-link every generated run into runs_dir (a copy where links cannot be made); their ids."""
    ids = sorted(path.name for path in generated.iterdir() if path.is_dir())
    for run_id in ids:
        for source in sorted((generated / run_id).rglob("*")):
            target = runs_dir / run_id / source.relative_to(generated / run_id)
            if source.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, target)
            except OSError:
                shutil.copyfile(source, target)
    return ids


def touch_run(run_dir: Path) -> str:
    """Change one run's title: a new file replaces the link, so the generated set is never changed."""
    run_yaml = run_dir / "run.yaml"
    lines = run_yaml.read_text(encoding="utf-8").splitlines(keepends=True)
    lines = [line.rstrip("\n") + " (touched)\n" if line.startswith("title:") else line for line in lines]
    run_yaml.unlink()
    run_yaml.write_text("".join(lines), encoding="utf-8")
    return run_dir.name


def _size_mib(folder: Path) -> float:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) / MIB


def measure_all(work: Path, generated: Path, linked: list[str], scale: str) -> list[Measurement]:
    """Every measurement of a scale, in order: the floor, the checks, the full build; a failed check stops them."""
    def emptied() -> None:
        shutil.rmtree(work / "build", ignore_errors=True)

    # The floor and the cold check in turn, so that both are measured at the machine's same speeds.
    measured = alternated([(FLOOR, floor_command(generated), lambda: None), (COLD, ["check"], emptied)], work)
    if measured[-1].exit_code != 0:
        return measured
    measured.append(repeated("warm check", work, ["check"]))
    touched = work / "runs" / linked[0]
    measured.append(repeated(f"check after touching runs/{touched.name}/run.yaml", work, ["check"],
                             before=lambda: touch_run(touched)))
    if ALL_RUNS in GOALS.get(scale, {}):
        measured.append(repeated(ALL_RUNS, work, all_runs_command(work), before=emptied))
    measured.append(measure("full build (after the checks)", work, ["build"]))
    return measured


def floor_command(generated: Path) -> list[str]:
    """The floor's process: _json_floor.main on the scaled set (its path given as a Python literal, no shell)."""
    return ["-c", "import sys; from build_tools.benchmarks._json_floor import main; "
                  f"sys.exit(main({str(generated)!r}))"]


# `make check ALL=1`'s command line, as make's front end makes it from the variable (_make.arguments; a test
# holds them equal).
ALL_RUNS_ARGUMENTS = ("check", "--all")


def all_runs_command(work: Path) -> list[str]:
    return ["-m", "build_tools", "--root", str(work), *ALL_RUNS_ARGUMENTS]


# --- measuring -------------------------------------------------------------------------------------


def repeated(what: str, work: Path, command: list[str], before: Callable[[], object] = lambda: None) -> Measurement:
    """REPEATS measurements of the command, each after `before`: the median time, the most memory."""
    return alternated([(what, command, before)], work)[0]


def alternated(commands: list[tuple[str, list[str], Callable[[], object]]], work: Path) -> list[Measurement]:
    """REPEATS measurements of each command (what, command, before), the commands taken in turn each round, so that
    a swing of the machine's speed meets all of them: each one's median time and most memory. A failed
    measurement ends the list there."""
    runs: list[list[Measurement]] = [[] for _ in commands]
    for _ in range(REPEATS):
        for (what, command, before), taken in zip(commands, runs, strict=True):
            before()
            taken.append(measure(what, work, command))
            if taken[-1].exit_code != 0:
                return [_median(done) for done in runs[:runs.index(taken)]] + [taken[-1]]
    return [_median(taken) for taken in runs]


def _median(runs: list[Measurement]) -> Measurement:
    """The measurements of one command as one: the median time (its CPU seconds), the most memory."""
    what = runs[0].what
    times = [run.seconds for run in runs]
    median = sorted(runs, key=lambda run: run.seconds)[len(runs) // 2]
    return Measurement(what, statistics.median(times), max(run.peak_tree_mib for run in runs),
                       max(run.peak_process_mib for run in runs), 0, times, median.cpu_seconds,
                       max(run.peak_tree_pss_mib for run in runs))


def measure(what: str, work: Path, command: list[str]) -> Measurement:
    """Run `python -m build_tools --root work COMMAND...` in a fresh process (or, for a command that starts with
    an option to python, `python COMMAND...`); its time, CPU seconds and memory."""
    print(f"measuring {what} ...", flush=True)
    argv = command if command[0].startswith("-") else ["-m", "build_tools", "--root", str(work), *command]
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, *argv], cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sampler = _TreeSampler(process.pid)
    sampler.start()
    stderr = process.stderr.read() if process.stderr else b""
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    sampler.stop()
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        tail = stderr.decode(errors="replace").strip().splitlines()[-5:]
        print(f"  {what} exited with {process.returncode}:", *tail, sep="\n  ")
    largest = usage.ru_maxrss * 1024  # KiB; the tree held at least its largest process, which sampling can miss
    cpu = usage.ru_utime + usage.ru_stime + sampler.unreaped_cpu()
    return Measurement(what, round(seconds, 2), round(max(sampler.peak, largest) / MIB, 1), round(largest / MIB, 1),
                       process.returncode, [round(seconds, 2)], round(cpu, 2), round(sampler.peak_pss / MIB, 1))


class _TreeSampler(threading.Thread):
    """The peak, over time, of the summed resident memory of a process and all its descendants (and of their summed
    proportional set sizes, which count a page the processes share once); and the CPU time
    of the descendants the process does not reap itself (a fork server's workers: a fork server outlives its
    parent, so the kernel never adds its time to the parent's), each as last sampled."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.peak_pss = pid, 0, 0
        self._done = threading.Event()
        self.cpu: dict[int, tuple[int, float]] = {}  # each descendant's parent and CPU seconds, as last sampled
        self.reaped: set[int] = set()  # the process's children that ended while it lived: in its own rusage

    def run(self) -> None:
        while not self._done.wait(SAMPLE_SECONDS):
            self.sample()

    def sample(self) -> None:
        tree = _tree(self.pid)
        self.peak = max(self.peak, sum(rss for _, rss, _, _ in tree.values()))
        self.peak_pss = max(self.peak_pss, sum(_pss(pid) for pid in tree))
        if self.pid not in tree or tree[self.pid][3] == "Z":  # ended: its children are the init process's now
            return
        gone = {pid for pid, (parent, _) in self.cpu.items() if parent == self.pid and pid not in tree}
        self.reaped |= gone
        self.cpu.update({pid: (parent, cpu) for pid, (parent, _, cpu, _) in tree.items() if pid != self.pid})

    def stop(self) -> None:
        self._done.set()
        self.join()

    def unreaped_cpu(self) -> float:
        """CPU seconds of the descendants whose time the process's rusage does not hold: those under a child it
        did not reap (the time each used after its last sample, at most SAMPLE_SECONDS, is missed)."""
        def reaped(pid: int) -> bool:
            while pid in self.cpu:
                parent = self.cpu[pid][0]
                if parent == self.pid:
                    return pid in self.reaped
                pid = parent
            return True  # not a descendant any more as far as seen: counted nowhere safely
        return sum(cpu for pid, (_, cpu) in self.cpu.items() if not reaped(pid))


TICKS = os.sysconf("SC_CLK_TCK")


def _tree(root: int) -> dict[int, tuple[int, int, float, str]]:
    """root and every process descending from it: its parent, resident bytes, own CPU seconds (user + system) and
    state (Z: ended, not yet reaped). Read with plain system calls: the sampler shares the machine with what it
    measures."""
    processes = _processes()
    found = {}
    for pid in _descendants(root, processes):
        try:
            rss = int(_proc_file(f"/proc/{pid}/statm").split()[1]) * PAGE
        except (ValueError, IndexError):
            rss = 0
        if pid in processes:
            parent, cpu, state = processes[pid]
            found[pid] = (parent, rss, cpu, state)
    return found


def _processes() -> dict[int, tuple[int, float, str]]:
    """Every process of the machine: its parent, own CPU seconds (user + system) and state (Z: ended, not yet
    reaped)."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (stat := _proc_file(f"/proc/{name}/stat")):
            fields = stat[stat.rindex(b")") + 2:].split()
            # parent (field 4), utime and stime (fields 14 and 15), state (field 3)
            found[int(name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS, fields[0].decode())
    return found


def _descendants(root: int, processes: dict[int, tuple[int, float, str]]) -> set[int]:
    """root and every process descending from it."""
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, (ppid, _, _) in processes.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier += children
    return tree


def _pss(pid: int) -> int:
    """The process's proportional set size in bytes (Linux's smaps_rollup): its own pages, plus each page it
    shares divided by the number of processes sharing it. 0 when it is gone."""
    for line in _proc_file(f"/proc/{pid}/smaps_rollup").splitlines():
        if line.startswith(b"Pss:"):
            return int(line.split()[1]) * 1024
    return 0


def _tree_rss(root: int) -> int:
    """Bytes resident in root and every process descending from it (0 for those gone meanwhile)."""
    return sum(rss for _, rss, _, _ in _tree(root).values())


def _proc_file(path: str) -> bytes:
    """A small /proc file's bytes; empty when its process is gone."""
    try:
        handle = os.open(path, os.O_RDONLY)
    except OSError:
        return b""
    try:
        return os.read(handle, 4096)
    except OSError:
        return b""
    finally:
        os.close(handle)


# --- the report ------------------------------------------------------------------------------------


def _goal_lines(scale: str, measured: list[Measurement]) -> list[dict[str, object]]:
    goals: list[dict[str, object]] = []
    by_what = {m.what: m for m in measured}
    floor = by_what.get(FLOOR)
    for what, goal in GOALS.get(scale, {}).items():
        m = by_what.get(what)
        if m is None or m.exit_code != 0:
            goals.append({"what": f"{what}: not measured", "value": None, "goal": None, "ratio": None,
                          "met": False})
            continue
        if goal.seconds is not None:
            goals.append(_goal(f"{what} time (s)", m.seconds, goal.seconds, strict=goal.strict))
        if goal.floor_ratio is not None:
            if floor is None or floor.exit_code != 0 or floor.seconds <= 0:
                goals.append({"what": f"{what} / {FLOOR}: no floor measured", "value": None, "goal": None,
                              "ratio": None, "met": False})
            else:
                goals.append(_goal(f"{what} time / {FLOOR} ({floor.seconds:.2f} s)",
                                   round(m.seconds / floor.seconds, 2), goal.floor_ratio, strict=goal.strict))
        if goal.mib is not None:
            goals.append(_goal(f"{what} peak PSS of the process tree (MiB)", m.peak_tree_pss_mib, goal.mib,
                               strict=True))
    return goals


def _goal(what: str, value: float, goal: float, *, strict: bool) -> dict[str, object]:
    """A goal line: `value` under the goal (strict) or at most it."""
    return {"what": what, "value": value, "goal": goal, "ratio": round(value / goal, 2),
            "met": value < goal if strict else value <= goal, "strict": strict}


def _print_table(measured: list[Measurement], goals: list[dict[str, object]]) -> None:
    print(f"{'measurement':<52} {'wall s':>8} {'CPU s':>7} {'tree MiB':>9} {'tree PSS':>9} {'max proc MiB':>13} "
          f"{'exit':>5}  every time (s)")
    for m in measured:
        print(f"{m.what:<52} {m.seconds:8.2f} {m.cpu_seconds:7.1f} {m.peak_tree_mib:9.0f} {m.peak_tree_pss_mib:9.0f} "
              f"{m.peak_process_mib:13.0f} "
              f"{m.exit_code:5d}  "
              f"{', '.join(f'{time:.2f}' for time in m.times)}")
    by_what = {m.what: m for m in measured}
    judged = any(str(goal["what"]).startswith(f"{COLD} time / {FLOOR}") for goal in goals)
    if judged and by_what[FLOOR].cpu_seconds > 0:  # the floor is of the streams of many runs, not of telemetry
        rounds = zip(by_what[COLD].times, by_what[FLOOR].times, strict=False)  # in turn: each round
        print(f"{COLD} / {FLOOR}: {by_what[COLD].seconds / by_what[FLOOR].seconds:.2f}x wall (each round: "
              f"{', '.join(f'{cold / floor:.2f}' for cold, floor in rounds)}), "
              f"{by_what[COLD].cpu_seconds / by_what[FLOOR].cpu_seconds:.2f}x CPU seconds")
    for goal in goals:
        if goal["value"] is None:
            print(f"{goal['what']:<52} missed")
            continue
        print(f"{goal['what']:<52} {goal['value']:8.2f}   goal {'<' if goal['strict'] else '<='} {goal['goal']:g}  "
              f"ratio {goal['ratio']:.2f}  {'met' if goal['met'] else 'missed'}")
    if not goals:
        print("no goal is set for this scale (issue 22 sets them for 1000x1000 and 1x10000)")
