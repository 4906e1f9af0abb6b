"""`manual show` (and every other output of the command line) prints data as text: the control sequences a log
line or a file name carries are stripped, and a bare path that cannot be read is one problem, never a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from build_tools.cli import main
from build_tools.core._escape import terminal_text
from build_tools.core._exceptions import EXIT_BAD_INPUT
from build_tools.core._progress import Progress
from build_tools.ingest import sources
from tests.conftest import ROOT, SAMPLES

SHOW = SAMPLES / "show"
OSC_52 = "\x1b]52;c;cm0gLXJmIH4K\x07"  # "write `rm -rf ~` to the clipboard", in terminals that allow it


@pytest.mark.parametrize(("text", "shown"), [
    (f"{OSC_52}Job failed", "Job failed"),
    ("\x1b[31mred\x1b[0m \x1b[2J\x1b[1;1Hcleared", "red cleared"),
    ("8-bit \u009b31mCSI\u009d0;title\u009c and OSC", "8-bit CSI and OSC"),
    ("a link \x1b]8;;https://evil.example\x1b\\here\x1b]8;;\x1b\\", "a link here"),
    ("never ended \x1b]0;title\nnext line", "never ended \nnext line"),
    ("reset\x1bc, bell\x07, backspace\x08, CR\r, DEL\x7f, NUL\x00", "reset, bell, backspace, CR, DEL, NUL"),
    ("tab\tand\nnewline are layout", "tab\tand\nnewline are layout"),
    ("Qwen3-0.6B › 40 °C, 中文", "Qwen3-0.6B › 40 °C, 中文"),
])
def test_terminal_text_strips_what_a_terminal_would_act_on(text: str, shown: str) -> None:
    assert terminal_text(text) == shown


def test_show_prints_a_log_line_without_its_control_sequences(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(SHOW)
    assert "\x1b]52;" in (SHOW / "control-sequences.log").read_text(encoding="utf-8")
    assert main(["show", "control-sequences.log"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == ("  job_end        2026-09-21 15:01:01  control-sequences.log:2: Job "
                                    "'raysubmit_4Xk2' failed      at 15:05")  # the tab, at rich's tab stop
    assert not any(ord(c) < 32 and c != "\n" or 0x7f <= ord(c) <= 0x9f for c in out)


def test_an_error_naming_a_path_prints_it_without_control_sequences(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", f"runs/no-{OSC_52}such-run"]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err.splitlines()[:2] == [
        "ERROR 1 problem in the run data:", "  runs/no-such-run: no such run id in runs/, file or folder"]


def test_a_warning_that_quotes_the_data_is_printed_without_control_sequences(
        capsys: pytest.CaptureFixture[str]) -> None:
    Progress().warn(f"phase '{OSC_52}\x1b[8mx' opened at 1 never closed; dropped")
    assert capsys.readouterr().err == "WARNING phase 'x' opened at 1 never closed; dropped\n"


UNREADABLE = ("{path}: cannot read {what} (Permission denied): expected a run id of runs/, a run folder, or a "
              "file or folder of Miles output that can be read")


@pytest.mark.parametrize("command", ["show", "compare"])
def test_a_bare_path_that_cannot_be_read_through_is_one_problem(command: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A folder holding one the user may not enter (as /proc holds /proc/1/cwd)."""
    (tmp_path / "job" / "private").mkdir(parents=True)

    def refused(path: Path, warnings: list[str], problems: object = None) -> dict[str, list[Path]]:
        raise PermissionError(13, "Permission denied", str(path / "private"))

    monkeypatch.setattr(sources, "classify", refused)
    monkeypatch.chdir(tmp_path)
    assert main(["--root", str(ROOT), command, "job"]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err.splitlines()[:2] == [
        "ERROR 1 problem in the run data:", "  " + UNREADABLE.format(path="job", what="job/private")]


@pytest.mark.skipif(os.access("/proc/1/cwd", os.R_OK, follow_symlinks=False) and os.path.isdir("/proc/1/cwd/"),
                    reason="this machine lets the tests read /proc/1/cwd")
def test_show_proc_is_one_problem(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(ROOT), "show", "/proc"]) == EXIT_BAD_INPUT
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "ERROR 1 problem in the run data:"
    assert lines[1].startswith("  /proc: cannot read /proc/") and lines[1].endswith(
        "(Permission denied): expected a run id of runs/, a run folder, or a file or folder of Miles output that "
        "can be read")
    assert len(lines) == 3  # and the hint


@pytest.mark.parametrize(("option", "lines"), [
    ("--csv", ["step_key,step,'\ttrain/tab,'train/cr,'+train/x,'-train/y,'=cmd|' /C calc'!A0,'@SUM(A1),train/plain",
               "train/step,0,1,7,2,-3e-05,0.41,-0.5,-1"]),
    ("--long", ["step_key,step,metric,value", "train/step,0,'\ttrain/tab,1", "train/step,0,'train/cr,7",
                "train/step,0,'+train/x,2", "train/step,0,'-train/y,-3e-05", "train/step,0,'=cmd|' /C calc'!A0,0.41",
                "train/step,0,'@SUM(A1),-0.5", "train/step,0,train/plain,-1"]),
])
def test_show_csv_writes_no_formula_and_numbers_as_logged(option: str, lines: list[str],
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """tests/samples/show/formula-metrics.log names metrics that start a spreadsheet formula (=, +, -, @, tab, CR):
    each gets a leading ' (OWASP); the negative numbers stay numbers. (The CR is gone: terminal_text.)"""
    monkeypatch.chdir(SHOW)
    assert main(["show", option, "formula-metrics.log"]) == 0
    assert capsys.readouterr().out.splitlines() == lines
