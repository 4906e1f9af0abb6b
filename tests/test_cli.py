"""The command line's last line of defence: a bug is one line naming it and the file holding its traceback,
an unwritable build/ is one line naming the path; the console script `manual` returns the build's own code."""

from __future__ import annotations

import errno
import re
import subprocess
import sys
from pathlib import Path

import pytest

import build_tools.build
from build_tools.cli import main


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_bug_prints_one_line_and_saves_the_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    def broken(root: Path, settings: object = None) -> None:
        raise ValueError("the summary has no 'steps'\nsecond line")

    monkeypatch.setattr(build_tools.build, "build", broken)
    assert main(["--root", str(tmp_path), "check"]) == 1
    line = one_error_line(capsys)
    match = re.fullmatch(r"ERROR internal error \(a bug\): ValueError: the summary has no 'steps' second line; "
                         r"full traceback saved to (build/crash-\d{8}T\d{6}Z-\d+\.txt)", line)
    assert match, line
    saved = (tmp_path / match[1]).read_text()
    assert saved.startswith("Traceback (most recent call last):") and "in broken" in saved


def test_a_bug_with_an_unwritable_build_folder_saves_the_traceback_elsewhere(tmp_path: Path, monkeypatch, capsys):
    (tmp_path / "build").write_text("not a folder")
    monkeypatch.setattr(build_tools.build, "build", lambda root, settings=None: 1 / 0)
    assert main(["--root", str(tmp_path), "check"]) == 1
    line = one_error_line(capsys)
    assert line.startswith("ERROR internal error (a bug): ZeroDivisionError: division by zero; full traceback saved "
                           "to /") and "manual-crash-" in line
    Path(line.rsplit(" ", 1)[1]).unlink()


@pytest.mark.parametrize(("code", "strerror", "name", "shown"), [
    (errno.EROFS, "Read-only file system", "build/claims.json", "build/claims.json"),
    (errno.ENOSPC, "No space left on device", "build/cache/.f.svg.1-x.tmp", "build/cache/.f.svg.1-x.tmp"),
    (errno.EACCES, "Permission denied", ".site-12-abc/index.html", ".site-12-abc/index.html"),
    (errno.ENOSPC, "No space left on device", None, "build"),
])
def test_an_unwritable_output_is_one_line_naming_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str], code: int,
                                                          strerror: str, name: str | None, shown: str) -> None:
    def failing(root: Path, settings: object = None) -> None:
        raise OSError(code, strerror, *([str(tmp_path / name)] if name else []))

    monkeypatch.setattr(build_tools.build, "build", failing)
    assert main(["--root", str(tmp_path), "check"]) == 2
    assert one_error_line(capsys) == (f"ERROR {shown}: cannot write ({strerror}): the build writes only into build/ "
                                      "and site/, which must be writable and have free space")


def test_a_build_folder_that_is_a_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "build").write_text("not a folder")
    assert main(["--root", str(tmp_path), "build"]) == 2
    assert one_error_line(capsys) == ("ERROR build: cannot write (File exists): the build writes only into build/ "
                                      "and site/, which must be writable and have free space")


def test_the_console_script_returns_the_builds_own_exit_code(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("manual")
    done = subprocess.run([str(script), "--root", str(tmp_path), "publish", "2026.1"], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.splitlines()[0].startswith("ERROR '2026.1' is not an edition number")
    helped = subprocess.run([str(script), "--help"], capture_output=True, text=True)
    assert helped.stdout.startswith("usage: manual ") and "exit codes: 0 done, 2 bad input" in helped.stdout
