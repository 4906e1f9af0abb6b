"""build_tools/core/_staging.py's atomic write: a file is the old one or the new one, never half of one, whatever
happens while it is written; what a killed writer left is swept by the next build."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from build_tools.core._staging import KILL_AT, atomic_file, clean_leftovers, staging, write_atomic

ROOT = Path(__file__).resolve().parents[2]


def test_a_write_replaces_the_file_whole_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    report = tmp_path / "build" / "claims.json"
    write_atomic(report, b"old")
    write_atomic(report, b"new")
    assert report.read_bytes() == b"new"
    assert [p.name for p in report.parent.iterdir()] == ["claims.json"]


def test_a_writer_failing_midway_leaves_the_old_file(tmp_path: Path) -> None:
    figure = tmp_path / "fig-x.svg"
    figure.write_text("<svg>old</svg>")
    with pytest.raises(OSError, match="No space left on device"), atomic_file(figure) as tmp:
        tmp.write_text("<svg>half")
        raise OSError(28, "No space left on device")
    assert figure.read_text() == "<svg>old</svg>"
    assert [p.name for p in tmp_path.iterdir()] == ["fig-x.svg"]


def test_a_kill_mid_write_leaves_the_old_file_and_the_next_build_sweeps_the_rest(tmp_path: Path) -> None:
    """SIGKILL after the new bytes are written and before they replace the file: no cleanup of any kind runs."""
    report = tmp_path / "build" / "claims.json"
    write_atomic(report, b"old")
    code = ("from pathlib import Path; from build_tools.core._staging import write_atomic; "
            f"write_atomic(Path({str(report)!r}), b'new')")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, KILL_AT: "atomic-write"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == -9
    assert report.read_bytes() == b"old"
    (left,) = [p for p in report.parent.iterdir() if p.name != "claims.json"]
    assert left.name.startswith(".claims.json.") and left.name.endswith(".tmp")
    assert clean_leftovers(tmp_path) == [left]
    assert [p.name for p in report.parent.iterdir()] == ["claims.json"]


def test_a_process_that_ended_but_was_not_reaped_counts_as_ended() -> None:
    """A leftover of a killed build is swept, and `manual record --until-exit` stops, once its process has ended,
    even while it is a zombie its parent has not waited for yet."""
    import subprocess
    import time

    from build_tools.core._staging import process_alive

    child = subprocess.Popen(["sleep", "30"])
    try:
        assert process_alive(child.pid) and process_alive(os.getpid())
        child.kill()
        deadline = time.monotonic() + 10
        while process_alive(child.pid) and time.monotonic() < deadline:  # the kernel makes it a zombie
            time.sleep(0.01)
        assert not process_alive(child.pid)
        assert child.poll() is not None  # now reaped: gone altogether
        assert not process_alive(child.pid)
    finally:
        child.kill()
        child.wait()


# --- modes: what the user's umask gives, not mkdtemp's 0700 ------------------------------------------------------


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_staged_folders_and_atomic_files_take_the_modes_the_umask_gives(umask: int, tmp_path: Path) -> None:
    previous = os.umask(umask)
    try:
        with staging(tmp_path / "site") as staged:
            (staged / "index.html").write_text("<p>page</p>")
        write_atomic(tmp_path / "build" / "claims.json", b"{}")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "site").stat().st_mode) == 0o777 & ~umask
    assert stat.S_IMODE((tmp_path / "build" / "claims.json").stat().st_mode) == 0o666 & ~umask


def _modes(folder: Path) -> dict[str, int]:
    return {path.relative_to(folder).as_posix(): stat.S_IMODE(path.lstat().st_mode)
            for path in [folder, *folder.rglob("*")] if not path.is_symlink()}


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_a_built_site_can_be_served_as_the_umask_allows(umask: int, tmp_path: Path) -> None:
    """A build (its own process, under the umask) leaves site/ and build/ with the modes the umask gives: under
    022 a web server's user reads every file and enters every folder; under 077 no other user does."""
    from tests.conftest import copy_project

    root = copy_project(tmp_path / "manual")
    done = subprocess.run(["sh", "-c", f"umask {umask:03o} && exec \"$0\" -m build_tools build", sys.executable],
                          cwd=root, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr
    modes = {f"{name}/{path}": mode for name in ("site", "build") for path, mode in _modes(root / name).items()}
    assert "site/." in modes and len(modes) > 100
    if umask == 0o022:
        assert {name: oct(mode) for name, mode in modes.items() if mode & 0o044 != 0o044} == {}
        folders = {name for name in modes if (root / name).is_dir()}
        assert {name: oct(modes[name]) for name in folders if modes[name] & 0o011 != 0o011} == {}
    else:
        assert {name: oct(mode) for name, mode in modes.items() if mode & 0o077} == {}
