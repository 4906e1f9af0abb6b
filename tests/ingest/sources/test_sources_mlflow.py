"""An MLflow run written by mlflow itself as Miles' MLflow backend calls it (tests/miles_job.py write_mlflow): every
value read exactly at its own step key and step, from the run's folder, the whole store or a run folder's
`mlflow/`, without mlflow; what cannot be read is refused in one line saying what to do."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from build_tools.cli import main
from tests.conftest import copy_project
from tests.ingest.sources.test_sources_real import job, read, same
from tests.miles_job import Job, write_mlflow


@pytest.fixture(autouse=True)
def file_store(monkeypatch: pytest.MonkeyPatch) -> None:
    # mlflow 3 refuses a file store unless asked: what a user of Miles sets to get one
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")


def mlflow_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **backends: bool) -> tuple[Job, Path]:
    made = job(tmp_path, monkeypatch, **backends)
    return made, write_mlflow(made, tmp_path / "mlruns")


def test_an_mlflow_run_gives_every_value_exactly_at_its_own_step(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    made, run = mlflow_job(tmp_path, monkeypatch)
    assert (run / "metrics" / "passrate" / "pass_1").is_file()  # Miles' backend sanitized passrate/pass@1
    shutil.copytree(run, tmp_path / "job" / "mlflow")
    for folder in (Path("job"), run, tmp_path / "mlruns"):  # a run folder's mlflow/, the run, the whole store
        got, problems, warnings = read(folder)
        same(got, made.expected())
        assert (problems, warnings) == ([], [])


def test_an_mlflow_run_and_the_log_of_one_job_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made, run = mlflow_job(tmp_path, monkeypatch, log=True)
    shutil.copytree(run, tmp_path / "job" / "mlflow")
    got, problems, warnings = read(Path("job"))
    same(got, made.expected())  # MLflow's float64 kept over the log's two decimals of [CPU memory]
    assert (problems, warnings) == ([], [])


def test_the_file_store_is_read_without_mlflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made, run = mlflow_job(tmp_path, monkeypatch)
    script = ("import sys; sys.modules['mlflow'] = None\n"  # an import of mlflow fails
              "from pathlib import Path\nfrom build_tools.ingest import load\n"
              f"run, _ = load.load_path(Path({str(run)!r}), problems := [])\n"
              "print(len(problems), sum(len(r.data['metrics']) for r in load.records(run, 'metrics')))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["0", str(len(made.expected()))]


def test_two_runs_in_one_store_are_refused_saying_which_to_copy(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    made, first = mlflow_job(tmp_path, monkeypatch)
    second = write_mlflow(made, tmp_path / "mlruns", run_name="second")
    _, problems, _ = read(Path("mlruns"))
    assert problems == [f"mlruns/{first.parent.name}/{min(first.name, second.name)}: one of 2 MLflow runs here ("
                        f"{', '.join(sorted((first.name, second.name)))}): a Miles job logs to one run; copy only this "
                        "job's run folder (mlruns/<experiment id>/<run id>/)"]


def test_a_database_store_is_refused_saying_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job" / "mlflow").mkdir(parents=True)
    sqlite3.connect(tmp_path / "job" / "mlflow" / "mlflow.db").execute("create table runs (run_uuid text)").close()
    _, problems, _ = read(Path("job"))
    assert problems == [
        "job/mlflow/mlflow.db: an MLflow database store, which only mlflow reads: log the run to a file store "
        "(MLFLOW_TRACKING_URI=file:./mlruns, with MLFLOW_ALLOW_FILE_STORE=true where mlflow asks for it) and copy "
        "its folder mlruns/<experiment id>/<run id>/"]


def test_a_damaged_metric_line_is_refused_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made, run = mlflow_job(tmp_path, monkeypatch)
    norms = run / "metrics" / "train" / "grad_norm"
    lines = norms.read_text().splitlines()
    norms.write_text("\n".join([lines[0], lines[1].rsplit(" ", 1)[0], *lines[2:]]) + "\n")  # a line cut short
    got, problems, _ = read(run)
    assert problems == [f"{norms.relative_to(tmp_path)}:2: {lines[1].rsplit(' ', 1)[0]!r}: expected MLflow's "
                        "metric line, '<timestamp in ms> <value> <step>'"]


def test_add_run_copies_the_store_and_show_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    project = copy_project(tmp_path / "manual")
    edition = project / "edition.yml"  # a Miles commit from before the job (add-run writes it into the run)
    edition.write_text(edition.read_text().replace("commit_date: 2026-10-15", "commit_date: 2026-09-15"))
    made, _ = mlflow_job(tmp_path, monkeypatch)
    assert main(["--root", str(project), "add-run", str(tmp_path / "mlruns"), "--id", "mlflow-run"]) == 0
    out = capsys.readouterr().out
    files = [p for p in (tmp_path / "mlruns").rglob("*") if p.is_file()]  # the run's and the experiments' meta.yaml
    assert f"  mlflow       {len(files)} files -> manual/runs/mlflow-run/mlflow/" in out
    copied = sorted(p.relative_to(project / "runs" / "mlflow-run").as_posix()
                    for p in (project / "runs" / "mlflow-run" / "mlflow").rglob("*") if p.is_file())
    assert copied and all(name.endswith(".gz") for name in copied)
    got, problems, warnings = read(project / "runs" / "mlflow-run" / "mlflow")
    same(got, made.expected())
    assert (problems, warnings) == ([], [])
    assert main(["--root", str(project), "show", str(tmp_path / "mlruns"), "--long"]) == 0
    shown = capsys.readouterr().out
    assert "rollout/step,1,passrate/pass@1," in shown and "pass_1" not in shown
