"""Issue 39, the batch readers: a file of an MLflow run (written by mlflow itself, as Miles' backend calls it) that
is a link out of the run, a link to /dev/zero, a FIFO, or a value in Arabic-Indic digits is one problem naming the
file, through `manual show` and `make compare` alike; nothing of a file outside the run reaches the output."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from build_tools.cli import main
from build_tools.core import _files
from build_tools.core._exceptions import EXIT_BAD_INPUT, InputProblem
from tests.conftest import copy_project
from tests.ingest.sources.test_sources_mlflow import mlflow_job

SECRET = "OUTSIDE-SECRET 1 2"  # the first line of a file outside the run: never printed
LINK_OUT = "is a symbolic link to outside the run; only files inside it are read: copy the file in instead"


@pytest.fixture(autouse=True)
def file_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_project(tmp_path_factory.mktemp("manual"))


def a_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run folder holding the MLflow run a job wrote (real mlflow), and a file outside it."""
    _, run = mlflow_job(tmp_path, monkeypatch)
    shutil.copytree(run, tmp_path / "job" / "mlflow")
    (tmp_path / "outside.txt").write_text(SECRET + "\n", encoding="utf-8")
    return tmp_path / "job"


def metric(job: Path) -> Path:
    return job / "mlflow" / "metrics" / "rollout" / "raw_reward"


def problem_lines(err: str) -> list[str]:
    return [line.strip() for line in err.splitlines() if line.startswith("  ")]


@pytest.mark.parametrize("make", ["link out", "dev zero", "fifo", "link to a folder out"])
def test_a_file_that_is_not_the_runs_own_is_one_problem_and_never_read(
        make: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    job = a_job(tmp_path, monkeypatch)
    target = metric(job)
    target.unlink()
    if make == "link out":
        target.symlink_to(tmp_path / "outside.txt")
        said = f"job/mlflow/metrics/rollout/raw_reward: {LINK_OUT}"
    elif make == "dev zero":
        target.symlink_to("/dev/zero")  # outside the run too (open_regular's test below: a device as such)
        said = f"job/mlflow/metrics/rollout/raw_reward: {LINK_OUT}"
    elif make == "fifo":
        os.mkfifo(target)  # opened to wait for a writer, it would hang the show
        said = ("job/mlflow/metrics/rollout/raw_reward: is a FIFO (named pipe), not a plain file; only plain files "
                "are read")
    else:
        target.parent.rename(tmp_path / "rollout-elsewhere")
        target.parent.symlink_to(tmp_path / "rollout-elsewhere")
        said = f"job/mlflow/metrics/rollout: {LINK_OUT}"
    assert main(["show", "job"]) == EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    assert problem_lines(err) == [said]
    assert "OUTSIDE-SECRET" not in out + err


def test_compare_names_the_link_out_and_quotes_nothing_of_it(project: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    job = a_job(tmp_path, monkeypatch)
    metric(job).unlink()
    metric(job).symlink_to(tmp_path / "outside.txt")
    assert main(["--root", str(project), "compare", "job"]) == EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    assert f"job/mlflow/metrics/rollout/raw_reward: {LINK_OUT}" in problem_lines(err)
    assert "OUTSIDE-SECRET" not in out + err


def test_a_link_inside_the_run_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Allow what is needed: a link to a file of the run itself is its file."""
    job = a_job(tmp_path, monkeypatch)
    (job / "mlflow" / "artifacts").mkdir(exist_ok=True)
    metric(job).rename(job / "mlflow" / "artifacts" / "raw_reward")
    metric(job).symlink_to(job / "mlflow" / "artifacts" / "raw_reward")
    assert main(["show", "job/mlflow"]) == 0
    assert "rollout/raw_reward" in capsys.readouterr().out


@pytest.mark.parametrize("digits", ["\u0660.\u0665", "\uff10.\uff15", "0_5", "\u06f1"])
def test_a_value_in_digits_other_than_ascii_is_refused(digits: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """float() reads Arabic-Indic ("٠.٥"), extended Arabic-Indic and full-width digits, and 1_000: MLflow writes
    none of them (Python's repr of a float)."""
    job = a_job(tmp_path, monkeypatch)
    lines = metric(job).read_text(encoding="utf-8").splitlines()
    stamp, _, step = lines[0].split(" ")
    metric(job).write_text("\n".join([f"{stamp} {digits} {step}", *lines[1:]]) + "\n", encoding="utf-8")
    assert main(["show", "job"]) == EXIT_BAD_INPUT
    said = f"job/mlflow/metrics/rollout/raw_reward:1: {f'{stamp} {digits} {step}'!r}: expected MLflow's metric line"
    assert any(line.startswith(said) for line in problem_lines(capsys.readouterr().err))


def test_open_regular_checks_the_file_it_opened(tmp_path: Path) -> None:
    """The one function every reader opens through: the kind by fstat of what was opened, the place by the
    kernel's path of it; each refusal names the file and quotes nothing of it."""
    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "outside.txt").write_text(SECRET, encoding="utf-8")
    (run / "out.txt").symlink_to(tmp_path / "outside.txt")
    (run / "loop.txt").symlink_to(run / "loop.txt")
    os.mkfifo(run / "pipe.txt")
    (run / "ok.txt").write_text("fine", encoding="utf-8")
    refusals = {name: _files.refusal(run / name, run) for name in ("out.txt", "loop.txt", "pipe.txt", "ok.txt")}
    assert {name: problem and problem.message for name, problem in refusals.items()} == {
        "out.txt": LINK_OUT, "loop.txt": "cannot be read (a symbolic link loop)",
        "pipe.txt": "is a FIFO (named pipe), not a plain file; only plain files are read", "ok.txt": None}
    with _files.confined(run), pytest.raises(InputProblem) as refused:
        _files.read_bytes(run / "out.txt")
    assert SECRET not in str(refused.value.problem)
    assert _files.read_bytes(tmp_path / "outside.txt") == SECRET.encode()  # unconfined: any plain file
    with pytest.raises(InputProblem) as refused:
        _files.read_bytes(Path("/dev/zero"))  # but never a device
    assert str(refused.value.problem) == "/dev/zero: is a device, not a plain file; only plain files are read"


# --- data that names itself, through show and check --format github ---------------------------------------------

HOSTILE_NAME = "job\n::set-env name=LD_PRELOAD::x\u009b31m\u009d0;t\u009c.log"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but tab and newline, DEL, C1
RUNNER_LINE = re.compile(r"^[ \t]*(::|##\[)", re.MULTILINE)


def no_data_command(text: str) -> None:
    """No control character, and no line starting a workflow command but those the command line builds (their
    data percent-encoded: `::warning file=...::`)."""
    assert not CONTROL.search(text)
    assert all(re.match(r"::(warning|error|notice)( [a-z]+=[^:\n]*)?::", line) and "set-env" not in line.split("::")[1]
               for line in text.splitlines() if RUNNER_LINE.match(line))


def test_show_names_a_hostile_file_on_one_harmless_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "job" / "log").mkdir(parents=True)
    (tmp_path / "job" / "log" / HOSTILE_NAME).write_text(
        "Timer train end (elapsed: 1.0s)\n[2026-10-15 10:00:02] train.py:1 - rollout 0: {'rollout/raw_reward': 0.5}\n",
        encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code = main(["show", "job"])
    out, err = capsys.readouterr()
    assert code in (0, 2) and "Traceback" not in err
    no_data_command(out)
    no_data_command(err)
    assert "job/log/job\\n::set-env name=LD_PRELOAD::x.log:1: Timer train end has no timestamp; phase not read" in \
        out + err  # one line, the name's line break written \n, its controls removed


def test_check_format_github_writes_no_command_of_the_data(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run's log named with a newline and `::set-env`: its warning is a ::warning with the name percent-encoded."""
    log = project / "runs" / "baseline-seed1" / "log"
    log.mkdir(exist_ok=True)
    (log / HOSTILE_NAME).write_text("Timer train end (elapsed: 1.0s)\n", encoding="utf-8")  # a warning naming it
    try:
        code = main(["--root", str(project), "check", "--format", "github"])
        out, err = capsys.readouterr()
    finally:
        shutil.rmtree(log)
    assert code in (0, 2, 3) and "Traceback" not in err
    no_data_command(out)
    no_data_command(err)
    where = f"{project}/runs/baseline-seed1/log/job"
    said = "::set-env name=LD_PRELOAD::x.log:1: Timer train end has no timestamp; phase not read"
    assert f"WARNING {where}\\n{said}" in err.splitlines()  # one line, the name's line break written \n
    assert f"::warning title=run data::{where}%0A{said}" in err.splitlines()  # the data percent-encoded
