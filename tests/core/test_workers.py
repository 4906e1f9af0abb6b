"""The summary stage's fork server started early: a check with no summary cache and at least POOL_FROM runs starts
it before importing the build (cli._start_readers_early, _workers.start_early); any other check starts none (a
warm or touched check must stay light)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from build_tools.core import _workers

ROOT = Path(__file__).resolve().parents[2]
# Run in a fresh interpreter: a fork server started here would outlive the test in this process.
STARTS = """
import sys, multiprocessing.forkserver as fs
from pathlib import Path
from build_tools import cli
from build_tools.core._layout import Layout
from build_tools.core._settings import Settings
cli._start_readers_early(Layout(Path(sys.argv[1])), Settings(trust_state=sys.argv[2] == "trusted"))
print(fs._forkserver._forkserver_pid is not None)
"""


def _started(root: Path, trust: str = "trusted") -> str:
    done = subprocess.run([sys.executable, "-c", STARTS, str(root), trust], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    return done.stdout.strip()


def _project(tmp_path: Path, runs: int) -> Path:
    for index in range(runs):
        (tmp_path / "runs" / f"run-{index:03d}").mkdir(parents=True)
    (tmp_path / "runs" / "README.md").write_text("not a run\n")
    return tmp_path


@pytest.mark.skipif((os.cpu_count() or 1) <= 1, reason="one core: no pool, so no server")
def test_a_first_check_of_many_runs_starts_the_server(tmp_path: Path) -> None:
    assert _started(_project(tmp_path, _workers.POOL_FROM)) == "True"


@pytest.mark.skipif((os.cpu_count() or 1) <= 1, reason="one core: no pool, so no server")
def test_an_editions_check_trusts_no_cache_and_starts_it(tmp_path: Path) -> None:
    project = _project(tmp_path, _workers.POOL_FROM)
    (project / "build" / "cache" / "summaries").mkdir(parents=True)
    assert _started(project, "fresh") == "True"


def test_few_runs_start_nothing(tmp_path: Path) -> None:
    assert _started(_project(tmp_path, _workers.POOL_FROM - 1)) == "False"


def test_a_summary_cache_starts_nothing(tmp_path: Path) -> None:
    project = _project(tmp_path, _workers.POOL_FROM)
    (project / "build" / "cache" / "summaries").mkdir(parents=True)
    assert _started(project) == "False"


def test_no_runs_folder_starts_nothing(tmp_path: Path) -> None:
    assert _started(tmp_path) == "False"


def test_a_pools_workers_parse_ahead_on_their_share_of_the_cores() -> None:
    from build_tools.ingest import stream_columns
    from build_tools.summarise import summary

    jobs = [None] * _workers.POOL_FROM
    shares = set(summary._in_pool(_parse_threads_of, jobs, workers=2))
    assert shares == {max(1, stream_columns.CORES // 2)}
    assert stream_columns.PARSE_AHEAD == stream_columns.CORES  # this process keeps all


def _parse_threads_of(job: None) -> int:
    from build_tools.ingest import stream_columns

    return stream_columns.PARSE_AHEAD
