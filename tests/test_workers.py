"""_workers.start_early: a first check of many runs starts its readers' fork server before importing them itself;
any other check does not start one (a warm check must stay light)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from build_tools import _workers

ROOT = Path(__file__).resolve().parent.parent
# Run in a fresh interpreter: a fork server started here would outlive the test in this process.
STARTS = """
import sys, multiprocessing.forkserver as fs
from pathlib import Path
from build_tools import _workers
started = _workers.start_early(["json"], Path(sys.argv[1]), Path(sys.argv[2]))
print(started, fs._forkserver._forkserver_pid is not None)
"""


def _start(runs: Path, cache: Path) -> str:
    done = subprocess.run([sys.executable, "-c", STARTS, str(runs), str(cache)], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    return done.stdout.strip()


def _runs(tmp_path: Path, count: int) -> Path:
    runs = tmp_path / "runs"
    for index in range(count):
        (runs / f"run-{index:03d}").mkdir(parents=True)
    (runs / "README.md").write_text("not a run\n")
    return runs


@pytest.mark.skipif((os.cpu_count() or 1) <= 1, reason="one core: no pool, so no server")
def test_a_first_check_of_many_runs_starts_the_server(tmp_path: Path) -> None:
    assert _start(_runs(tmp_path, _workers.POOL_FROM), tmp_path / "build" / "cache" / "summaries") == "True True"


@pytest.mark.parametrize(("count", "cached"), [(_workers.POOL_FROM - 1, False), (_workers.POOL_FROM, True)])
def test_few_runs_or_a_cache_start_nothing(tmp_path: Path, count: int, cached: bool) -> None:
    cache = tmp_path / "build" / "cache" / "summaries"
    if cached:
        cache.mkdir(parents=True)
    assert _start(_runs(tmp_path, count), cache) == "False False"


def test_no_runs_folder_starts_nothing(tmp_path: Path) -> None:
    assert _start(tmp_path / "missing", tmp_path / "cache") == "False False"
