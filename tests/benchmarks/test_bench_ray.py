"""build_tools/benchmarks/bench_ray.py, `make bench RAY=...`: what it refuses, and what it measures of a command."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from build_tools.benchmarks import bench_ray, bench_scale


def test_a_malformed_address_is_one_line_before_anything_is_measured(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_ray.ray_main("head-node", "", False) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", "ERROR --ray: 'head-node' is not an address (expected HOST:PORT, ray://HOST:PORT, "
                              "auto or local)\n")
    assert bench_ray.ray_main("auto", "12", False) == 2
    assert capsys.readouterr().err.startswith("ERROR SCALE='12': expected RUNSxSTEPS")


def test_the_driver_reports_its_own_peak(tmp_path: Path) -> None:
    """The command runs in a driver that writes its ru_maxrss as it exits: a peak of its own, above nothing."""
    timed = bench_ray.measure("help", tmp_path, ["--help"])
    assert timed.exit_code == 0 and timed.what == "help"
    assert 10 < timed.driver_mib <= timed.tree_mib


def test_the_goals_are_issue_22s() -> None:
    pool = bench_ray.Timed("pool", 10.0, 5.0, 300, 200, 0)
    assert [goal["met"] for goal in bench_ray._goals(pool, bench_ray.Timed("Ray", 13.0, 5.0, 900, 599, 0), True)] \
        == [True, True]
    assert [goal["met"] for goal in bench_ray._goals(pool, bench_ray.Timed("Ray", 13.1, 5.0, 900, 600, 0), True)] \
        == [False, False]
    assert len(bench_ray._goals(pool, pool, False)) == 1  # the driver's goal is set for 1000x1000 with ALL=1 only


def test_the_tree_cpu_counts_a_grandchild_nobody_reaps() -> None:
    """As Ray's workers under its raylet: a process's child spins; its time is counted though no rusage holds it."""
    import subprocess
    import sys
    import time

    spin = "x = 0\nwhile True: x += 1"
    parent = subprocess.Popen([sys.executable, "-c", f"import subprocess, sys, time; subprocess.Popen([sys.executable, "
                               f"'-c', {spin!r}]); print('ready', flush=True); time.sleep(30)"],
                              stdout=subprocess.PIPE, text=True)
    sampler = bench_ray._TreeCPU(parent.pid)
    try:
        assert parent.stdout is not None and parent.stdout.readline() == "ready\n"
        sampler.start()
        time.sleep(1.0)
    finally:
        sampler.stop()
        for pid in bench_scale._descendants(parent.pid, bench_scale._processes()) - {parent.pid}:
            os.kill(pid, 9)
        parent.kill()
        parent.wait()
    assert len(sampler.cpu) == 2  # the parent and its spinning child
    assert sampler.seconds() >= 0.3


def test_a_measurement_says_which_path_read_the_runs(tmp_path: Path) -> None:
    """From the line the real command writes: `auto` on the 20 example runs does not start Ray (the pool reads)."""
    from tests.conftest import copy_project

    root = copy_project(tmp_path / "manual")
    timed = bench_ray.measure("RAY=auto", root, ["check", "--ray=auto"])
    assert (timed.exit_code, timed.path) == (0, "pool")
    assert bench_ray.path_taken(["check"], []) == "pool"
    assert bench_ray.path_taken(["check", "--ray=auto"], ["[1/2] Reading runs done in 9.0 s"]) == "Ray"


def _fake_measure(auto_path: str, calls: list[str]) -> object:
    def measure(what: str, work: Path, args: list[str]) -> bench_ray.Timed:
        calls.append(args[-1])
        path = bench_ray.path_taken(args, []) if args[-1] != "--ray=auto" else auto_path
        seconds = {"check": 2.0, "--ray=auto": 2.2 if auto_path == "pool" else 12.0, "--ray=local": 8.0}[args[-1]]
        return bench_ray.Timed(what, seconds, 3.0, 300, 200, 0, [seconds], path)
    return measure


def test_forced_ray_is_measured_in_turns_when_auto_did_not_start_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[str] = []
    monkeypatch.setattr(bench_ray, "measure", _fake_measure("pool", calls))
    pool, auto, forced = bench_ray._alternating(tmp_path, ["check"], ["check", "--ray=auto"], ["check", "--ray=local"])
    assert calls == ["check", "--ray=auto", "--ray=local"] * bench_ray.REPEATS
    assert forced is not None and (pool.path, auto.path, forced.path) == ("pool", "pool", "Ray")
    goals = bench_ray._goals(pool, auto, True, forced)
    assert [(goal["what"], goal["value"], goal["met"]) for goal in goals] == [
        ("RAY=auto (pool) wall time over the pool's", 1.1, True), ("RAY=local (Ray) driver peak (MiB)", 200, True)]
    reported = bench_ray._reported(pool, forced)
    bench_ray._print([pool, auto, forced], goals, reported)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:4] == ["pool       pool        2.00     3.0       300         200     0  2.00, 2.00, 2.00",
                          "RAY=auto   pool        2.20     3.0       300         200     0  2.20, 2.20, 2.20",
                          "RAY=local  Ray         8.00     3.0       300         200     0  8.00, 8.00, 8.00"]
    assert lines[-1] == "RAY=local (Ray) wall time over the pool's          4.0   reported, not judged"
    calls.clear()
    monkeypatch.setattr(bench_ray, "measure", _fake_measure("Ray", calls))
    _, auto, forced = bench_ray._alternating(tmp_path, ["check"], ["check", "--ray=auto"], ["check", "--ray=local"])
    assert calls == ["check", "--ray=auto"] * bench_ray.REPEATS and forced is None and auto.path == "Ray"
