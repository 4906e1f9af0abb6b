"""bench/history.jsonl: each `make bench` appends one line naming the machine, its load and the commit measured."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess

from build_tools.benchmarks import bench_history


def test_each_bench_appends_one_line_with_the_machine_the_load_and_the_commit(tmp_path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_text("a\n")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "a"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    when = dt.datetime(2026, 12, 4, 19, 0, tzinfo=dt.UTC)

    path = bench_history.append(tmp_path, "examples", 0.5, 1.25, {"cold": {"seconds": 12.5}}, when=when)
    (tmp_path / "a.txt").write_text("changed\n")  # measured on a work tree that differs from its commit
    bench_history.append(tmp_path, "scale 1000x1000", 2.0, 2.0, {"goals": []}, when=when)

    first, second = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())
    assert path == tmp_path / "bench" / "history.jsonl"
    assert (first["date"], first["bench"], first["commit"]) == ("2026-12-04T19:00:00+00:00", "examples", head)
    assert first["load_average"] == {"before": 0.5, "after": 1.25}
    assert first["results"] == {"cold": {"seconds": 12.5}}
    assert first["machine"]["cores"] == os.cpu_count()
    assert first["machine"]["tools"]["python"] == platform.python_version()
    assert (second["bench"], second["commit"]) == ("scale 1000x1000", head + "+")


def test_outside_a_git_checkout_the_commit_is_empty(tmp_path) -> None:
    assert bench_history.commit(tmp_path) == ""
