"""build_tools/bench_ray.py, `make bench RAY=...`: what it refuses, and what it measures of a command."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from build_tools import bench_ray, bench_scale


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
