"""build_tools/benchmarks/bench_scale.py and examples/_scaled.py: the scaled run sets of `make bench SCALE=...`
are the example generator's runs, written fast but byte for byte as its own writer writes them, and they load."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from build_tools.benchmarks import _json_floor, bench_scale
from build_tools.cli import main
from examples import _miles_dump
from examples._build import prepare
from examples._output import write_run
from examples._scaled import parse_scale, scaled_spec, write_run_fast, write_scaled


def tree(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


@pytest.mark.parametrize(("index", "runs", "steps"), [(0, 3, 20), (1, 3, 20), (3, 5, 17), (4, 5, 40), (0, 1, 60)])
def test_a_scaled_run_is_written_byte_for_byte_as_the_generator_writes_it(index, runs, steps, tmp_path):
    spec = scaled_spec(index, runs, steps)
    _miles_dump.write([write_run(prepare(spec), tmp_path / "generator")])  # its dump by Miles' own writer
    write_run_fast(spec, tmp_path / "fast")
    assert tree(tmp_path / "fast") == tree(tmp_path / "generator")


def test_one_scaled_run_carries_telemetry_in_every_stream_and_many_carry_none(tmp_path):
    write_scaled(tmp_path / "one", 1, 20, workers=1)
    files = set(tree(tmp_path / "one" / "scale-0000"))
    assert {"lab/gpu_temp.jsonl.gz", "lab/held_memory.jsonl.gz", "lab/host_memory.jsonl.gz"} <= files
    assert not any(name.startswith("dashboard/gpu_util") for name in files)  # on a GB10, in the lab's recording
    recorded = gzip.decompress((tmp_path / "one" / "scale-0000" / "lab" / "gpu_temp.jsonl.gz").read_bytes())
    assert list(json.loads(recorded.split(b"\n", 1)[0])) == ["ts", "gpu", "temp_c", "util", "power_w"]
    write_scaled(tmp_path / "many", 3, 20, workers=2)
    assert sorted(path.name for path in (tmp_path / "many").iterdir()) == ["scale-0000", "scale-0001", "scale-0002"]
    assert not any(name.startswith(("lab/", "dashboard/gpu_util")) for name in tree(tmp_path / "many"))


def test_the_scaled_set_is_the_same_bytes_every_time(tmp_path):
    write_scaled(tmp_path / "a", 3, 20, workers=1)
    write_scaled(tmp_path / "b", 3, 20, workers=2)
    assert tree(tmp_path / "a") == tree(tmp_path / "b")


def test_a_scaled_set_beside_the_example_runs_passes_the_check(tmp_path, monkeypatch, capsys):
    generated = tmp_path / "generated"
    write_scaled(generated, 3, 20, workers=1)
    project, ids = bench_scale.scaled_project(tmp_path, generated, 3, 20)  # the copy every scaled bench measures
    assert ids == ["scale-0000", "scale-0001", "scale-0002"]
    monkeypatch.chdir(project)
    assert main(["check"]) == 0  # no figure reads the scaled runs: validated, not summarised
    lines = capsys.readouterr().out.splitlines()
    assert ("3 runs validated but not summarised: only the Metrics page reads them, by the facts validation takes "
            "(make check ALL=1 summarises every run)") in lines
    assert main(["check", "--all"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert {"scale-0000", "scale-0001", "scale-0002", "baseline-seed1"} <= set(listed)


def test_touching_a_linked_run_never_changes_the_generated_set(tmp_path):
    generated = tmp_path / "generated"
    write_scaled(generated, 1, 20, workers=1)
    before = tree(generated)
    (tmp_path / "runs").mkdir()
    bench_scale.link_runs(generated, tmp_path / "runs")
    assert bench_scale.touch_run(tmp_path / "runs" / "scale-0000") == "scale-0000"
    assert tree(generated) == before
    assert "(touched)" in (tmp_path / "runs" / "scale-0000" / "run.yaml").read_text()


def test_the_generated_set_is_reused_until_the_generator_changes(tmp_path):
    folder = tmp_path / "bench-runs" / "2x20"
    runs, reused = bench_scale.scaled_set(folder, 2, 20)
    assert not reused and sorted(path.name for path in runs.iterdir()) == ["scale-0000", "scale-0001"]
    assert bench_scale.scaled_set(folder, 2, 20) == (runs, True)
    (folder / "complete.key").write_text("another generator")
    shutil.rmtree(runs / "scale-0001")
    assert bench_scale.scaled_set(folder, 2, 20) == (runs, False)
    assert (runs / "scale-0001" / "run.yaml").is_file()


@pytest.mark.parametrize("scale", ["1000", "x10", "0x100", "10x5", "10 x 100", "1000x1000; rm -rf /"])
def test_a_malformed_scale_is_refused_saying_what_is_expected(scale, capsys, monkeypatch):
    with pytest.raises(ValueError, match="expected RUNSxSTEPS"):
        parse_scale(scale)
    monkeypatch.setenv("SCALE", scale)
    assert main(["bench"]) == 2
    assert capsys.readouterr().err == (f"ERROR SCALE={scale!r}: expected RUNSxSTEPS, e.g. 1000x1000 or 1x10000, "
                                       "with at least 16 steps\n")


def test_scales_parse_into_runs_and_steps():
    assert parse_scale("1000x1000") == (1000, 1000)
    assert parse_scale("1x10000") == (1, 10000)


def test_the_memory_of_a_process_tree_counts_its_children(tmp_path):
    import os
    import subprocess
    import sys

    alone = bench_scale._tree_rss(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "import sys, time; b = b'x' * 100_000_000; print('ready', "
                              "flush=True); time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        assert bench_scale._tree_rss(os.getpid()) - alone >= 95_000_000
        assert bench_scale._tree_rss(child.pid) >= 100_000_000
    finally:
        child.kill()
        child.wait()


def test_the_pss_of_a_tree_counts_what_a_forked_child_shares_once() -> None:
    """A parent touches 100 MB, then forks a child that only sleeps: both hold the pages (their resident memory
    sums to 200 MB), but they are one copy (their PSS sums to about 100 MB)."""
    import subprocess
    import sys
    import time

    script = ("import os, sys, time\nb = bytearray(100_000_000)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
              "if os.fork() == 0:\n    time.sleep(30)\n    os._exit(0)\nprint('ready', flush=True)\ntime.sleep(30)")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None and parent.stdout.readline() == "ready\n"
        time.sleep(0.2)  # the child's pages are mapped once it runs
        sampler = bench_scale._TreeSampler(parent.pid)
        sampler.sample()
        assert sampler.peak >= 190_000_000
        assert 95_000_000 <= sampler.peak_pss <= 140_000_000
    finally:
        for pid in bench_scale._tree(parent.pid):
            if pid != parent.pid:
                os.kill(pid, 9)
        parent.kill()
        parent.wait()


def test_a_check_is_judged_by_the_median_of_its_repeats_and_the_most_memory(monkeypatch, tmp_path):
    seen: list[str] = []
    results = iter([(31.0, 500.0), (28.0, 700.0), (29.5, 600.0)])

    def measure(what, work, command):
        seconds, mib = next(results)
        seen.append(f"measure {command}")
        return bench_scale.Measurement(what, seconds, mib, mib / 2, 0, [seconds])

    monkeypatch.setattr(bench_scale, "measure", measure)
    m = bench_scale.repeated("cold check", tmp_path, "check", before=lambda: seen.append("emptied build/"))
    assert seen == ["emptied build/", "measure check"] * 3
    assert (m.seconds, m.times, m.peak_tree_mib, m.peak_process_mib) == (29.5, [31.0, 28.0, 29.5], 700.0, 350.0)


def test_commands_alternated_are_measured_in_turn_and_each_judged_by_its_own_median(monkeypatch, tmp_path):
    seen: list[str] = []
    results = iter([10.0, 17.0, 14.0, 22.0, 12.0, 19.0])  # floor, check, floor, check, floor, check

    def measure(what, work, command):
        seconds = next(results)
        seen.append(f"measure {command}")
        return bench_scale.Measurement(what, seconds, 100.0, 50.0, 0, [seconds], seconds * 2)

    monkeypatch.setattr(bench_scale, "measure", measure)
    floor, cold = bench_scale.alternated([("floor", ["floor"], lambda: None),
                                          ("cold check", ["check"], lambda: seen.append("emptied build/"))], tmp_path)
    assert seen == ["measure ['floor']", "emptied build/", "measure ['check']"] * 3
    assert (floor.what, floor.seconds, floor.times, floor.cpu_seconds) == ("floor", 12.0, [10.0, 14.0, 12.0], 24.0)
    assert (cold.what, cold.seconds, cold.times, cold.cpu_seconds) == ("cold check", 19.0, [17.0, 22.0, 19.0], 38.0)


def test_a_failed_alternated_measurement_ends_the_list_with_its_exit_code(monkeypatch, tmp_path):
    codes = iter([0, 0, 0, 3])
    monkeypatch.setattr(bench_scale, "measure", lambda what, work, command: bench_scale.Measurement(
        what, 1.0, 1.0, 1.0, next(codes), [1.0]))
    measured = bench_scale.alternated([("floor", ["floor"], lambda: None), ("cold check", ["check"], lambda: None)],
                                      tmp_path)
    assert [(one.what, one.exit_code) for one in measured] == [("floor", 0), ("cold check", 3)]


def test_a_failed_repeat_stops_the_measurement_with_its_exit_code(monkeypatch, tmp_path):
    calls = iter([0, 2])
    monkeypatch.setattr(bench_scale, "measure", lambda what, work, command: bench_scale.Measurement(
        what, 1.0, 1.0, 1.0, next(calls), [1.0]))
    assert bench_scale.repeated("warm check", tmp_path, "check").exit_code == 2


def test_a_busy_machine_gets_no_verdict(monkeypatch) -> None:
    monkeypatch.setattr(bench_scale.os, "cpu_count", lambda: 2)
    assert bench_scale.busy_machine(1.5, 0.1) is None
    assert bench_scale.busy_machine(3.1, 0.0) == (
        "no verdict: the load average (3.10) exceeded this machine's 2 cores when the benchmark started, so the times "
        "say more about the other work than about the build; run make bench on a quiet machine")
    assert bench_scale.busy_machine(1.5, 0.35) == (
        "no verdict: other work used 35% of this machine's CPU while measuring (more than 10%), so the times say "
        "more about the other work than about the build; run make bench on a quiet machine")


def test_other_work_is_the_cpu_of_processes_outside_the_measured_tree() -> None:
    """A process (ours) whose child spins counts as ours; a spinning process beside it is other work."""
    import subprocess
    import sys
    import time

    spin = "x = 0\nwhile True: x += 1"
    ours = subprocess.Popen([sys.executable, "-c", f"import subprocess, sys, time; subprocess.Popen([sys.executable, "
                             f"'-c', {spin!r}]); print('ready', flush=True); time.sleep(30)"],
                            stdout=subprocess.PIPE, text=True)
    other = subprocess.Popen([sys.executable, "-c", spin])
    try:
        assert ours.stdout is not None and ours.stdout.readline() == "ready\n"
        sampler = bench_scale.OtherWork(ours.pid)
        sampler.sample()
        child = next(pid for pid in bench_scale._descendants(ours.pid, bench_scale._processes()) if pid != ours.pid)
        deadline = time.monotonic() + 20  # on a loaded machine (the suite's other workers) the spinners get less
        while True:
            time.sleep(0.5)
            sampler.sample()
            spun = {pid: sampler.last[pid] - sampler.first[pid] for pid in (child, other.pid)}
            if min(spun.values()) > 0.2 or time.monotonic() > deadline:
                break
        assert child in sampler.ours and other.pid not in sampler.ours
        assert spun[other.pid] > 0.2 and spun[child] > 0.2  # both spun
        assert sampler.other_seconds() >= spun[other.pid]  # (with whatever else the machine ran meanwhile)
    finally:
        for pid in bench_scale._descendants(ours.pid, bench_scale._processes()) - {ours.pid}:
            os.kill(pid, 9)
        ours.kill()
        other.kill()
        ours.wait()
        other.wait()


# --- build_tools/benchmarks/bench.py: the example runs' goals ---------------------------------------------------------


def example_results(cold: float, noop: float, bare: float = 2.0, serial: float = 8.0):
    from build_tools.benchmarks.bench import Results, Timing

    return Results(cold=Timing(cold, 20.0), noop=Timing(noop, 0.1), touched=Timing(3.0, 6.0), touched_run="a-run",
                   serial=Timing(serial, 8.0), parallel=Timing(5.0, None), bare=Timing(bare, 1.5), peak_mib=190.4)


def test_the_example_goals_are_judged_by_their_ratios_and_printed(monkeypatch) -> None:
    from build_tools.benchmarks import bench

    monkeypatch.setattr(bench_scale.os, "cpu_count", lambda: 2)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    lines, code = bench.report(example_results(cold=11.4, noop=0.12), 0.5, 1.2, 0.02)
    assert code == 0
    assert lines == [
        f"{'':<52}  wall s   CPU s",
        f"{'cold build (empty build/)':<52}   11.40    20.0",
        f"{'no-op rebuild (median of 5)':<52}    0.12     0.1",
        f"{'rebuild after touching runs/a-run/run.yaml':<52}    3.00     6.0",
        f"{'draw every figure, one warm process':<52}    8.00     8.0",
        f"{'draw every figure, warm, in parallel':<52}    5.00       -",
        f"{'bare mkdocs build of the same pages':<52}    2.00     1.5",
        f"{'peak memory of one build or figure process':<52}     190 MiB",
        f"{'load average (1 min) before, after':<52}    0.50, 1.20 on 2 cores",
        f"{'other work while measuring, of the CPU':<52}      2%",
        f"{'no-op / bare mkdocs':<52}    0.06   goal <= 0.25  met",
        f"{'cold / (figures serially, warm + bare mkdocs)':<52}    1.14   goal <= 1.15  met",
        f"{'  the same in CPU seconds':<52}    2.11   (not judged: the cold build draws on every core)",
        f"{'no-op / 0.14 s':<52}    0.86   goal <= 1.0  met"]


def test_the_proofs_cost_is_printed_beside_the_claims_check(monkeypatch) -> None:
    """Measured by make bench, judged by no goal: the ratio that keeps the proof out of the everyday build."""
    import dataclasses

    from build_tools.benchmarks import bench
    from build_tools.benchmarks.bench import Timing

    monkeypatch.setattr(bench_scale.os, "cpu_count", lambda: 2)
    results = dataclasses.replace(example_results(cold=11.4, noop=0.12), check=Timing(0.12, 0.12),
                                  proof=Timing(4.8, 4.7))
    lines, code = bench.report(results, 0.5, 1.2, 0.02)
    assert code == 0
    at = lines.index(f"{'bare mkdocs build of the same pages':<52}    2.00     1.5")
    assert lines[at + 1:at + 4] == [
        f"{'check every claim, one warm process':<52}    0.12     0.1",
        f"{'show every claim able to fail, one warm process':<52}    4.80     4.7",
        f"{'  proof / check of every claim':<52}   40.00   (no goal: PROVE=1 and every edition's build run it, an "
        "everyday build does not)"]


@pytest.mark.parametrize(("cold", "noop", "missed"), [
    (11.6, 0.12, ["cold / (figures serially, warm + bare mkdocs)"]),  # 11.6 / (8 + 2) = 1.16
    (11.4, 0.7, ["no-op / bare mkdocs", "no-op / 0.14 s"]),  # 0.7 / 2 = 0.35
    (11.4, 0.15, ["no-op / 0.14 s"])])
def test_an_example_goal_missed_says_which_and_exits_5(cold, noop, missed, monkeypatch) -> None:
    from build_tools.benchmarks import bench

    monkeypatch.setattr(bench_scale.os, "cpu_count", lambda: 2)
    lines, code = bench.report(example_results(cold=cold, noop=noop), 0.5, 1.2, 0.02)
    assert code == 5
    assert [line[:52].strip() for line in lines if line.endswith("missed")] == missed


def test_a_busy_machine_gets_no_verdict_on_the_example_goals(monkeypatch) -> None:
    from build_tools.benchmarks import bench

    monkeypatch.setattr(bench_scale.os, "cpu_count", lambda: 2)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    lines, code = bench.report(example_results(cold=30.0, noop=0.6), 1.0, 2.0, 0.3)
    assert code == 0
    assert [line[-10:] for line in lines if "goal <=" in line] == ["no verdict"] * 3
    assert lines[-1].startswith("no verdict: other work used 30% of this machine's CPU while measuring")


def test_builds_that_cannot_cache_their_bytecode_are_said_to(monkeypatch) -> None:
    from build_tools.benchmarks import bench

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    lines, _ = bench.report(example_results(cold=11.4, noop=0.12), 0.5, 1.2, 0.02)
    assert lines[-1] == ("PYTHONDONTWRITEBYTECODE is set here: the builds ran without it, as a user's make does "
                         "(with it, every build compiles the build's code anew)")


def test_the_builds_run_as_a_users_make_runs_them(monkeypatch, tmp_path: Path) -> None:
    from build_tools.benchmarks import bench

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("MANUAL_BENCH_PROBE", "kept")
    script = "import os; print(os.environ.get('PYTHONDONTWRITEBYTECODE'), os.environ.get('MANUAL_BENCH_PROBE'))"
    done = bench.run_and_wait([sys.executable, "-c", script], tmp_path)
    assert done.stdout == "None kept\n"


# A process that starts a child burning half a second of CPU and exits at once, leaving it to init (or a subreaper).
LEAVES_A_BUSY_ORPHAN = ("import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time\\n"
                        "t = time.process_time()\\nwhile time.process_time() - t < 0.5: pass'])")


@pytest.mark.parametrize("adopt", [True, False])
def test_the_cpu_seconds_of_a_build_count_what_it_left_running(adopt: bool) -> None:
    """A build's fork server outlives it by a moment, its figure workers' CPU seconds with it: make bench adopts
    it (a Linux subreaper) and waits for it. In a fresh interpreter, since a subreaper stays one."""
    import subprocess
    import sys

    script = (f"import sys\nfrom pathlib import Path\nfrom build_tools.benchmarks import bench\nadopted = {adopt} and "
              "bench.adopt_orphans()\ntiming = bench.timed(lambda: bench.run_and_wait([sys.executable, '-c', "
              f"{LEAVES_A_BUSY_ORPHAN!r}], Path('.')))\nprint(adopted, timing.cpu)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    adopted, cpu = done.stdout.split()
    assert adopted == str(adopt)
    assert (float(cpu) >= 0.5) is adopt

# --- issue 22's goals: the cold check against the JSON-parse floor measured in the same run -----------------


def m(what: str, seconds: float, mib: float = 100.0, cpu: float = 1.0, exit_code: int = 0) -> bench_scale.Measurement:
    """A measurement whose summed resident memory is half again its PSS: the goals read the PSS."""
    return bench_scale.Measurement(what, seconds, mib * 1.5, mib, exit_code, [seconds], cpu, mib)


def test_the_cold_check_is_judged_by_its_ratio_to_the_floor_and_the_rest_by_time_and_memory(capsys) -> None:
    measured = [m(bench_scale.FLOOR, 6.0, cpu=11.0), m("cold check", 8.4, 590.0, cpu=15.4), m("warm check", 0.5),
                m("full build (after the checks)", 12.0)]
    goals = bench_scale._goal_lines("1000x1000", measured)
    bench_scale._print_table(measured, goals)
    lines = capsys.readouterr().out.splitlines()
    assert lines[5:] == [
        "cold check / JSON-parse floor: 1.40x wall (each round: 1.40), 1.40x CPU seconds",
        "cold check time / JSON-parse floor (6.00 s)              1.40   goal <= 1.5  ratio 0.93  met",
        "cold check peak PSS of the process tree (MiB)          590.00   goal < 600  ratio 0.98  met",
        "warm check time (s)                                      0.50   goal < 0.5  ratio 1.00  missed",
        "full build (after the checks) time (s)                  12.00   goal <= 12  ratio 1.00  met",
    ]
    assert [goal["met"] for goal in goals] == [True, True, False, True]


def test_a_cold_check_without_a_floor_misses_its_goal() -> None:
    goals = bench_scale._goal_lines("1000x1000", [m(bench_scale.FLOOR, 6.0, exit_code=1), m("cold check", 8.0)])
    assert goals[0] == {"what": "cold check / JSON-parse floor: no floor measured", "value": None, "goal": None,
                        "ratio": None, "met": False}
    assert not any(goal["met"] for goal in goals if goal["value"] is None)


def test_the_long_run_is_judged_summarised(capsys) -> None:
    """Its floor (the metrics and phases of one run, not its telemetry) is shown, not compared with its check."""
    measured = [m(bench_scale.FLOOR, 1.0), m("cold check", 3.0, 900.0), m(bench_scale.ALL_RUNS, 7.9, 401.0)]
    goals = bench_scale._goal_lines("1x10000", measured)
    assert [(goal["what"], goal["met"]) for goal in goals] == [
        ("cold check ALL=1 (every run summarised) time (s)", True),
        ("cold check ALL=1 (every run summarised) peak PSS of the process tree (MiB)", False)]
    bench_scale._print_table(measured, goals)
    assert "cold check / JSON-parse floor" not in capsys.readouterr().out


def test_the_summarised_check_is_the_command_make_check_all_1_runs(tmp_path: Path) -> None:
    from build_tools.commands._make import arguments

    assert arguments("check", {"ALL": "1"}, tmp_path) == list(bench_scale.ALL_RUNS_ARGUMENTS)
    assert bench_scale.all_runs_command(tmp_path) == ["-m", "build_tools", "--root", str(tmp_path), "check", "--all"]


def test_the_floor_runs_in_a_fresh_process_on_the_set_named_as_a_literal(tmp_path: Path) -> None:
    import subprocess
    import sys

    folder = tmp_path / "it's a set"  # a quote in the name stays text
    write_scaled(folder, 2, 20, workers=1)
    done = subprocess.run([sys.executable, *bench_scale.floor_command(folder)], capture_output=True, text=True,
                          check=False, cwd=bench_scale.ROOT)
    rows = sum(len(path.read_bytes().splitlines()) for path in _json_floor.stream_files(folder))
    assert (done.returncode, done.stdout) == (0, f"parsed {len(_json_floor.stream_files(folder))} files, {rows} rows\n")


@pytest.mark.parametrize(("scale", "summarised"), [("1x10000", True), ("1000x1000", False)])
def test_the_floor_is_measured_first_and_the_summarised_check_where_a_goal_asks(scale, summarised, monkeypatch,
                                                                               tmp_path) -> None:
    commands: list[tuple[str, list[str]]] = []

    def measure(what, work, command):
        commands.append((what, command))
        return m(what, 1.0)

    monkeypatch.setattr(bench_scale, "measure", measure)
    monkeypatch.setattr(bench_scale, "touch_run", lambda run: run.name)
    bench_scale.measure_all(tmp_path, tmp_path / "generated", ["scale-0000"], scale)
    whats = list(dict.fromkeys(what for what, _ in commands))
    assert whats[:2] == [bench_scale.FLOOR, "cold check"] and whats[-1] == "full build (after the checks)"
    assert (bench_scale.ALL_RUNS in whats) == summarised
    assert commands[0][1] == bench_scale.floor_command(tmp_path / "generated")


def test_the_floor_parses_every_metrics_and_phases_file_and_nothing_else(tmp_path: Path) -> None:
    write_scaled(tmp_path / "set", 3, 20, workers=1)
    files = _json_floor.stream_files(tmp_path / "set")
    names = {path.relative_to(tmp_path / "set").as_posix() for path in files}
    expected = {name for name in tree(tmp_path / "set")
                if name.split("/")[1:3] in (["dashboard", "metrics.jsonl"], ["dashboard", "phases"])}
    assert names == expected and any("/phases/" in name for name in names)
    rows = sum(len(path.read_bytes().splitlines()) for path in files)
    assert _json_floor.parse_all(tmp_path / "set", workers=1) == _json_floor.parse_all(tmp_path / "set", 2) == (
        len(files), rows)


def test_the_floor_parses_a_runs_stream_as_the_loader_batches_it(tmp_path: Path, monkeypatch) -> None:
    """Each run's metrics, and its phases' hourly files joined, parsed once each (not a parser set up a file)."""
    import pyarrow.json as pajson

    write_scaled(tmp_path / "set", 3, 20, workers=1)
    parsed: list[int] = []
    real = pajson.read_json
    monkeypatch.setattr(pajson, "read_json", lambda source, **options: parsed.append(1) or real(source, **options))
    _json_floor.parse_all(tmp_path / "set", workers=1)
    assert len(parsed) == 6 < len(_json_floor.stream_files(tmp_path / "set"))
    monkeypatch.setattr(_json_floor, "BATCH_BYTES", 1)  # a parse a file when each fills a batch
    parsed.clear()
    _json_floor.parse_all(tmp_path / "set", workers=1)
    assert len(parsed) == len(_json_floor.stream_files(tmp_path / "set"))


def test_the_cpu_of_a_fork_servers_workers_is_added_to_the_process_own() -> None:
    """The measured process (1) reaped its child 4 (whose time, with 5's, is in its rusage), not the fork server 2,
    which outlived it with its worker 3."""
    sampler = bench_scale._TreeSampler(1)
    sampler.cpu = {2: (1, 0.25), 3: (2, 4.0), 4: (1, 8.0), 5: (4, 16.0)}
    sampler.reaped = {4}
    assert sampler.unreaped_cpu() == 4.25


# --- make bench WHAT=serve and WHAT=watch: issue 34's and issue 36's goals, on fake measurements ----------------


def serve_results(sentence: float | None = 0.8, title: float | None = 2.5, idle: float = 0.004,
                  anchor_sentence: float | None = 0.6, anchor_title: float | None = 2.0):
    from build_tools.benchmarks.bench_serve import ServeResults

    return ServeResults(runs=1020, start_seconds=95.0, sentence_seconds=sentence, title_seconds=title,
                        title_page="index.html", idle_share=idle, peak_tree_pss_mib=310.0,
                        anchor_sentence_seconds=anchor_sentence, anchor_title_seconds=anchor_title)


def test_the_serve_goals_are_the_ratios_to_bare_mkdocs_serve_a_line_each_exit_0(monkeypatch) -> None:
    from build_tools.benchmarks import bench_serve

    monkeypatch.setattr(bench_scale.os, "cpu_count", lambda: 2)
    lines, code = bench_serve.report(serve_results(), 0.5, 1.2, 0.02)
    assert code == 0
    assert lines[-7:] == [
        f"{'a sentence in 01-step.md to the open page: make serve':<60}     0.80 s (median of 3)",
        f"{'  the same in the rendered page: bare mkdocs serve':<60}     0.60 s (median of 3)",
        f"{'a title in run.yaml to index.html: make serve':<60}     2.50 s (median of 3)",
        f"{'  the same in the rendered page: bare mkdocs serve':<60}     2.00 s (median of 3)",
        "a chapter's sentence, make serve over bare mkdocs serve".ljust(60) + "     1.33 x   goal <= 1.5 x  met",
        "a run's title, make serve over bare mkdocs serve".ljust(60) + "     1.25 x   goal <= 1.5 x  met",
        f"{'idle server, 1020 runs, CPU of one core':<60}     0.40 %   goal < 2 %  met"]


@pytest.mark.parametrize(("results", "missed"), [
    ({"sentence": 0.91}, ["a chapter's sentence, make serve over bare mkdocs serve"]),  # 1.52 x
    ({"title": None}, ["a run's title, make serve over bare mkdocs serve"]),  # never shown: missed
    ({"anchor_title": None}, ["a run's title, make serve over bare mkdocs serve"]),  # no anchor, no ratio
    ({"idle": 0.02}, ["idle server, 1020 runs, CPU of one core"])])  # 2 % is not under 2 %
def test_a_serve_goal_missed_says_which_and_exits_5(results, missed, monkeypatch) -> None:
    from build_tools.benchmarks import bench_serve

    monkeypatch.setattr(bench_scale.os, "cpu_count", lambda: 2)
    lines, code = bench_serve.report(serve_results(**results), 0.5, 1.2, 0.02)
    assert code == 5
    assert [line[:60].strip() for line in lines if line.endswith("missed")] == missed
    assert any(line.endswith("not measured   goal <= 1.5 x  missed") for line in lines) == (
        None in results.values())


def test_a_busy_machine_gets_no_verdict_on_the_serve_goals(monkeypatch) -> None:
    from build_tools.benchmarks import bench_serve

    monkeypatch.setattr(bench_scale.os, "cpu_count", lambda: 2)
    lines, code = bench_serve.report(serve_results(sentence=9.0), 3.5, 3.0, 0.02)
    assert code == 0
    assert [line[-10:] for line in lines if " goal " in line] == ["no verdict"] * 3
    assert lines[-1].startswith("no verdict: the load average (3.50) exceeded this machine's 2 cores")


def watch_results(catch_up: float = 9.0, pss: float = 180.0, idle: float = 0.001):
    from build_tools.benchmarks.bench_watch import WatchResults

    return WatchResults(cold_check_seconds=10.0, cold_check_times=[10.0, 11.0, 9.5], catch_up_seconds=catch_up,
                        catch_up_times=[catch_up] * 3, peak_pss_mb=pss, peak_rss_mb=pss * 1.5, idle_share=idle,
                        latency_s=[0.002, 0.004])


def test_the_watch_goals_are_a_line_each_then_the_latency_figure(monkeypatch) -> None:
    from build_tools.benchmarks import bench_watch

    monkeypatch.setattr(bench_scale.os, "cpu_count", lambda: 2)
    lines, code = bench_watch.report(watch_results(), 0.5, 1.2, 0.02)
    assert code == 0
    assert lines[-4:] == [
        f"{'watch caught up / cold check (medians)':<60}     0.90 x   goal <= 1 x  met",
        f"{'peak PSS of the watcher, summed, followed':<60}   180.00 MB   goal < 300 MB  met",
        f"{'idle watcher, CPU of one core':<60}     0.10 %   goal < 2 %  met",
        "watch: a written step reported in 3.0 ms median, 4.0 ms at most, over 2 steps (no goal)"]


@pytest.mark.parametrize(("results", "missed"), [
    ({"catch_up": 10.5}, ["watch caught up / cold check (medians)"]),
    ({"pss": 300.0}, ["peak PSS of the watcher, summed, followed"]),
    ({"idle": 0.05}, ["idle watcher, CPU of one core"])])
def test_a_watch_goal_missed_says_which_and_exits_5(results, missed, monkeypatch) -> None:
    from build_tools.benchmarks import bench_watch

    monkeypatch.setattr(bench_scale.os, "cpu_count", lambda: 2)
    lines, code = bench_watch.report(watch_results(**results), 0.5, 1.2, 0.02)
    assert code == 5
    assert [line[:60].strip() for line in lines if line.endswith("missed")] == missed


def test_a_busy_machine_gets_no_verdict_on_the_watch_goals(monkeypatch) -> None:
    from build_tools.benchmarks import bench_watch

    monkeypatch.setattr(bench_scale.os, "cpu_count", lambda: 2)
    lines, code = bench_watch.report(watch_results(catch_up=30.0), 0.5, 1.2, 0.4)
    assert code == 0
    assert [line[-10:] for line in lines if " goal " in line] == ["no verdict"] * 3
    assert lines[-1].startswith("no verdict: other work used 40% of this machine's CPU while measuring")


@pytest.mark.parametrize("what", ["serve", "watch", ""])
def test_what_names_a_bench_or_nothing(what, tmp_path: Path) -> None:
    from build_tools.commands._make import arguments

    assert arguments("bench", {"WHAT": what}, tmp_path) == ["bench"]


def test_another_what_is_refused_naming_the_benches(tmp_path: Path) -> None:
    from build_tools.commands._make import arguments
    from build_tools.core._exceptions import ManualError

    with pytest.raises(ManualError) as error:
        arguments("bench", {"WHAT": "serve; rm -rf /"}, tmp_path)
    assert str(error.value) == ("WHAT='serve; rm -rf /' is not a benchmark: write WHAT=serve or WHAT=watch, or "
                                "leave it out for the build's")


@pytest.mark.parametrize(("env", "message"), [
    ({"WHAT": "watch", "SCALE": "1x10000"}, "WHAT=watch measures without SCALE: leave SCALE out, or WHAT out for "
                                            "SCALE's benchmark"),
    ({"WHAT": "serve", "RAY": "auto"}, "WHAT=serve measures without RAY: leave RAY out, or WHAT out for RAY's "
                                       "benchmark")])
def test_a_variable_what_does_not_read_is_refused_not_ignored(env, message, tmp_path: Path) -> None:
    from build_tools.commands._make import arguments
    from build_tools.core._exceptions import ManualError

    with pytest.raises(ManualError) as error:
        arguments("bench", env, tmp_path)
    assert str(error.value) == message
    assert arguments("bench", {"WHAT": "serve", "SCALE": "1000x16"}, tmp_path) == ["bench"]


def test_the_idle_cpu_of_a_process_tree_counts_a_spinning_child() -> None:
    """A process whose child spins uses about a core; one that only sleeps, about none."""
    import subprocess
    import sys

    from build_tools.benchmarks.bench_serve import idle_share

    spin = "x = 0\nwhile True: x += 1"
    busy = subprocess.Popen([sys.executable, "-c", f"import subprocess, sys, time; subprocess.Popen([sys.executable, "
                             f"'-c', {spin!r}]); print('ready', flush=True); time.sleep(30)"],
                            stdout=subprocess.PIPE, text=True)
    sleeping = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(30)"],
                                stdout=subprocess.PIPE, text=True)
    try:
        assert busy.stdout is not None and busy.stdout.readline() == "ready\n"
        assert sleeping.stdout is not None and sleeping.stdout.readline() == "ready\n"
        assert idle_share(busy.pid, 1.5) > 0.2  # a shared machine gives the spinning child less than a core
        assert idle_share(sleeping.pid, 1.5) < 0.05
    finally:
        for pid in bench_scale._descendants(busy.pid, bench_scale._processes()) - {busy.pid}:
            os.kill(pid, 9)
        busy.kill()
        sleeping.kill()
        busy.wait()
        sleeping.wait()


def test_the_benchs_watcher_catches_up_says_so_and_follows(tmp_path: Path) -> None:
    """The watcher make bench WHAT=watch times runs watch's loop on what is written, then goes on following."""
    from build_tools.benchmarks import bench_watch
    from build_tools.checking.contract import contract_of, range_item

    item = range_item("rollout/raw_reward", 0.5, 0.9, source="bench")
    (tmp_path / "contract.json").write_text(contract_of("t", "", "", [item]).model_dump_json(by_alias=True))
    run = tmp_path / "run"
    (run / "dashboard").mkdir(parents=True)
    for step in range(3):
        bench_watch._append_step(run, step)
    watcher, seconds = bench_watch._start_watcher(run, tmp_path / "contract.json", bench_watch.ROOT)
    try:
        assert seconds > 0 and watcher.peak_rss > 0
        assert watcher.poll() is None  # still following
    finally:
        bench_watch._stop(watcher)
