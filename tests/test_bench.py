"""build_tools/bench_scale.py and examples/_scaled.py: the scaled run sets of `make bench SCALE=...`
are the example generator's runs, written fast but byte for byte as its own writer writes them, and they load."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import copy_project

from build_tools import bench_scale
from build_tools.cli import main
from examples._build import prepare
from examples._output import write_run
from examples._scaled import parse_scale, scaled_spec, write_run_fast, write_scaled


def tree(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


@pytest.mark.parametrize(("index", "runs", "steps"), [(0, 3, 20), (1, 3, 20), (3, 5, 17), (4, 5, 40), (0, 1, 60)])
def test_a_scaled_run_is_written_byte_for_byte_as_the_generator_writes_it(index, runs, steps, tmp_path):
    spec = scaled_spec(index, runs, steps)
    write_run(prepare(spec), tmp_path / "generator")
    write_run_fast(spec, tmp_path / "fast")
    assert tree(tmp_path / "fast") == tree(tmp_path / "generator")


def test_one_scaled_run_carries_telemetry_in_every_stream_and_many_carry_none(tmp_path):
    write_scaled(tmp_path / "one", 1, 20, workers=1)
    files = set(tree(tmp_path / "one" / "scale-0000"))
    assert {"lab/gpu_temp.jsonl.gz", "lab/held_memory.jsonl.gz", "lab/host_memory.jsonl.gz"} <= files
    assert any(name.startswith("dashboard/gpu_util/") for name in files)
    write_scaled(tmp_path / "many", 3, 20, workers=2)
    assert sorted(path.name for path in (tmp_path / "many").iterdir()) == ["scale-0000", "scale-0001", "scale-0002"]
    assert not any(name.startswith(("lab/", "dashboard/gpu_util")) for name in tree(tmp_path / "many"))


def test_the_scaled_set_is_the_same_bytes_every_time(tmp_path):
    write_scaled(tmp_path / "a", 3, 20, workers=1)
    write_scaled(tmp_path / "b", 3, 20, workers=2)
    assert tree(tmp_path / "a") == tree(tmp_path / "b")


def test_a_scaled_set_beside_the_example_runs_passes_the_check(tmp_path, monkeypatch, capsys):
    project = copy_project(tmp_path / "manual")
    generated = tmp_path / "generated"
    write_scaled(generated, 3, 20, workers=1)
    ids = bench_scale.link_runs(generated, project / "runs")
    assert ids == ["scale-0000", "scale-0001", "scale-0002"]
    monkeypatch.chdir(project)
    assert main(["check"]) == 0  # no figure reads the scaled runs: validated, not summarised
    lines = capsys.readouterr().out.splitlines()
    assert ("3 runs validated but not summarised: no figure, check or table reads them (make check ALL=1 "
            "summarises every run)") in lines
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


def test_a_failed_repeat_stops_the_measurement_with_its_exit_code(monkeypatch, tmp_path):
    calls = iter([0, 2])
    monkeypatch.setattr(bench_scale, "measure", lambda what, work, command: bench_scale.Measurement(
        what, 1.0, 1.0, 1.0, next(calls), [1.0]))
    assert bench_scale.repeated("warm check", tmp_path, "check").exit_code == 2


def test_a_busy_machine_gets_no_verdict(monkeypatch) -> None:
    monkeypatch.setattr(bench_scale.os, "cpu_count", lambda: 2)
    assert bench_scale.busy_machine(1.5, 1.9) is None
    assert bench_scale.busy_machine(3.1, 1.0) == (
        "no verdict: the load average (3.10) exceeded this machine's 2 cores while measuring, so the times say more "
        "about the other work than about the build; run make bench on a quiet machine")


# --- build_tools/bench.py: the example runs' goals ------------------------------------------------------------


def example_results(cold: float, noop: float, bare: float = 2.0, serial: float = 8.0):
    from build_tools.bench import Results, Timing

    return Results(cold=Timing(cold, 20.0), noop=Timing(noop, 0.1), touched=Timing(3.0, 6.0), touched_run="a-run",
                   serial=Timing(serial, 8.0), parallel=Timing(5.0, None), bare=Timing(bare, 1.5), peak_mib=190.4)


def test_the_example_goals_are_judged_by_their_ratios_and_printed(monkeypatch) -> None:
    from build_tools import bench

    monkeypatch.setattr(bench_scale.os, "cpu_count", lambda: 2)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    lines, code = bench.report(example_results(cold=11.4, noop=0.12), 0.5, 1.2)
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
        f"{'no-op / bare mkdocs':<52}    0.06   goal <= 0.25  met",
        f"{'cold / (figures serially, warm + bare mkdocs)':<52}    1.14   goal <= 1.15  met",
        f"{'  the same in CPU seconds':<52}    2.11   (not judged: the cold build draws on every core)",
        f"{'no-op / 0.14 s':<52}    0.86   goal <= 1.0  met"]


@pytest.mark.parametrize(("cold", "noop", "missed"), [
    (11.6, 0.12, ["cold / (figures serially, warm + bare mkdocs)"]),  # 11.6 / (8 + 2) = 1.16
    (11.4, 0.7, ["no-op / bare mkdocs", "no-op / 0.14 s"]),  # 0.7 / 2 = 0.35
    (11.4, 0.15, ["no-op / 0.14 s"])])
def test_an_example_goal_missed_says_which_and_exits_5(cold, noop, missed, monkeypatch) -> None:
    from build_tools import bench

    monkeypatch.setattr(bench_scale.os, "cpu_count", lambda: 2)
    lines, code = bench.report(example_results(cold=cold, noop=noop), 0.5, 1.2)
    assert code == 5
    assert [line[:52].strip() for line in lines if line.endswith("missed")] == missed


def test_a_busy_machine_gets_no_verdict_on_the_example_goals(monkeypatch) -> None:
    from build_tools import bench

    monkeypatch.setattr(bench_scale.os, "cpu_count", lambda: 2)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    lines, code = bench.report(example_results(cold=30.0, noop=0.6), 3.4, 2.0)
    assert code == 0
    assert [line[-10:] for line in lines if "goal <=" in line] == ["no verdict"] * 3
    assert lines[-1].startswith("no verdict: the load average (3.40) exceeded this machine's 2 cores")


def test_builds_that_cannot_cache_their_bytecode_are_said_to(monkeypatch) -> None:
    from build_tools import bench

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    lines, _ = bench.report(example_results(cold=11.4, noop=0.12), 0.5, 1.2)
    assert lines[-1] == ("PYTHONDONTWRITEBYTECODE is set: every build compiled the build's code anew, which a user's "
                         "make does once")


# A process that starts a child burning half a second of CPU and exits at once, leaving it to init (or a subreaper).
LEAVES_A_BUSY_ORPHAN = ("import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time\\n"
                        "t = time.process_time()\\nwhile time.process_time() - t < 0.5: pass'])")


@pytest.mark.parametrize("adopt", [True, False])
def test_the_cpu_seconds_of_a_build_count_what_it_left_running(adopt: bool) -> None:
    """A build's fork server outlives it by a moment, its figure workers' CPU seconds with it: make bench adopts
    it (a Linux subreaper) and waits for it. In a fresh interpreter, since a subreaper stays one."""
    import subprocess
    import sys

    script = (f"import sys\nfrom pathlib import Path\nfrom build_tools import bench\nadopted = {adopt} and "
              "bench.adopt_orphans()\ntiming = bench.timed(lambda: bench.run_and_wait([sys.executable, '-c', "
              f"{LEAVES_A_BUSY_ORPHAN!r}], Path('.')))\nprint(adopted, timing.cpu)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parent.parent)
    adopted, cpu = done.stdout.split()
    assert adopted == str(adopt)
    assert (float(cpu) >= 0.5) is adopt
