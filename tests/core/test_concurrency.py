"""Two builds in one folder at once: the second waits for the first (one line), then finds the site up to date;
temporary names are the process's own, and what a killed build left is swept by the next one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from build_tools.core import _staging
from tests.conftest import copy_project

WAITING = ("waiting: another build is running in this project (build/.lock is held by another process); this one "
           "starts when it ends")


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_two_cold_builds_at_once_build_the_site_once(built_manual: Path, tmp_path: Path) -> None:
    root = copy_project(tmp_path / "manual")
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    manual = [str(Path(sys.executable).with_name("manual")), "--root", str(root), "build"]
    both = [subprocess.Popen(manual, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]
    results = [(process.wait(timeout=900), process.stderr.read()) for process in both]
    for process in both:
        process.stdout.close()
        process.stderr.close()
    assert [code for code, _ in results] == [0, 0], results
    built = [err for _, err in results if "Built the manual into" in err]
    waited = [err for _, err in results if "Nothing changed since the last build" in err]
    assert len(built) == 1 and len(waited) == 1, results
    assert waited[0].splitlines()[-1] == ("Nothing changed since the last build: site/ is up to date (make FORCE=1 "
                                          "builds it again).")
    assert waited[0].splitlines()[0] in (WAITING, waited[0].splitlines()[-1])
    assert tree(root / "site") == tree(built_manual / "site")
    assert not [p for p in root.iterdir() if p.name.startswith(".site-")]
    assert not [p for p in (root / "build").rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".docs-")]


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_temporary_names_are_unique_and_carry_the_process_id(tmp_path: Path) -> None:
    target = tmp_path / "site"
    with _staging.staging(target) as one, _staging.staging(target) as two:
        assert one != two
        assert one.name.startswith(f".site-{os.getpid()}-") and two.name.startswith(f".site-{os.getpid()}-")
        (one / "a.html").write_text("one")
        (two / "a.html").write_text("two")
    assert (target / "a.html").read_text() == "one"  # the last to finish wins, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_sweep_removes_what_dead_processes_left_and_keeps_live_work(tmp_path: Path) -> None:
    dead, live = dead_pid(), os.getpid()
    build = tmp_path / "build"
    (tmp_path / "site").mkdir()
    for name in (f".site-{dead}-abc", f".site-{live}-abc", ".site-k2j4h5g6", f".site-old-{dead}-xyz"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "index.html").write_text(name)
    (tmp_path / f".notes-{dead}-mine").write_text("a file of the user's: not the build's to remove")
    (build / "cache" / "figures").mkdir(parents=True)
    (build / "cache" / "figures" / f".fig.svg.{dead}-q1w2.tmp").write_text("half")
    (build / "cache" / "figures" / f".fig.svg.{live}-q1w2.tmp").write_text("being written")
    (build / "cache" / "figures" / f".fig.{dead}-e3r4.png.tmp").write_text("half")
    (build / "cache" / "figures" / "fig.svg").write_text("kept")
    (build / f".publish-{dead}-zz").mkdir()
    (build / ".docs-a1b2c3d4").mkdir()
    runs = tmp_path / "runs"
    for name in (f".add-run-{dead}-ab1", f".add-run-{live}-ab2", f".mine-{dead}-ab3", "my-run"):
        (runs / name / "log").mkdir(parents=True)
    removed = _staging.clean_leftovers(tmp_path)
    assert sorted(p.name for p in removed) == sorted([f".site-{dead}-abc", ".site-k2j4h5g6", f".site-old-{dead}-xyz",
                                                     f".fig.svg.{dead}-q1w2.tmp", f".fig.{dead}-e3r4.png.tmp",
                                                     f".publish-{dead}-zz",
                                                     ".docs-a1b2c3d4", f".add-run-{dead}-ab1"])
    # In runs/, only add-run's staging folders of ended processes: a live one's, and anything else, stays.
    assert sorted(p.name for p in runs.iterdir()) == sorted([f".add-run-{live}-ab2", f".mine-{dead}-ab3", "my-run"])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f".notes-{dead}-mine", f".site-{live}-abc", "build",
                                                                 "runs", "site"])
    assert sorted(p.name for p in (build / "cache" / "figures").iterdir()) == sorted(
        [f".fig.svg.{live}-q1w2.tmp", "fig.svg"])


def test_a_site_set_aside_by_a_killed_swap_is_put_back(tmp_path: Path) -> None:
    old = tmp_path / f".site-old-{dead_pid()}-abc"
    old.mkdir()
    (old / "index.html").write_text("the site as it was")
    (tmp_path / f".site-{dead_pid()}-def").mkdir()  # the new site, complete or not: never used
    _staging.clean_leftovers(tmp_path)
    assert (tmp_path / "site" / "index.html").read_text() == "the site as it was"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]
