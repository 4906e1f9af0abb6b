"""`make add-run` and `manual show`: a Miles job's outputs become a run, and the manual says what it reads."""

from __future__ import annotations

import errno
import gzip
import json
import os
import re
import shlex
import shutil
import socket
import stat
from pathlib import Path

import pytest
import yaml

from build_tools.cli import main
from build_tools.core._exceptions import EXIT_BAD_INPUT
from build_tools.ingest import load
from tests.conftest import ROOT, SAMPLES, copy_project

SOURCES = SAMPLES / "sources"
CSV = (SOURCES / "expected.csv").read_text()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the manual whose Miles commit predates the sample job (2026-09-21): a run cannot use a commit
    from its future, and add-run writes the edition's commit into the new run."""
    root = copy_project(tmp_path_factory.mktemp("manual"))
    edition = root / "edition.yml"
    edition.write_text(edition.read_text().replace("commit_date: 2026-10-15", "commit_date: 2026-09-15"))
    return root


def walkthrough() -> tuple[list[str], dict, list[str]]:
    """The commands and the fill-in of runs/README.md's walkthrough, as written there."""
    text = (ROOT / "runs" / "README.md").read_text()
    section = text.split("## Adding a run: from a finished Miles job to a page")[1].split("\n## ")[0]
    blocks = re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)
    assert [kind for kind, _ in blocks] == ["sh", "yaml", "sh"]
    commands = [line.split("#")[0].strip() for kind, body in blocks if kind == "sh" for line in body.splitlines()]
    return commands[:1], yaml.safe_load(blocks[1][1]), commands[1:]


def argv(command: str, home: Path) -> list[str]:
    """A command of the walkthrough as the arguments of `python -m build_tools` (make passes them on)."""
    words = shlex.split(command.replace("~", str(home)))
    if words[0] == "make":
        target, *assignments = words[1:]
        values = dict(a.split("=", 1) for a in assignments)
        if target == "add-run":
            return ["add-run", values["SRC"], "--id", values.get("ID", "")]
        if target == "compare":
            return ["compare", values["RUN"]]
        return [target, *(["--all"] if values.get("ALL") == "1" else [])]
    assert words[0] == ".venv/bin/manual"
    return words[1:]


def merge(into: dict, update: dict) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = value


def test_the_walkthrough_of_runs_readme_works_as_written(project: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    (add,), fill, then = walkthrough()
    home = tmp_path / "home"
    (home / "miles-job").mkdir(parents=True)
    shutil.copy(SOURCES / "log" / "job.log", home / "miles-job" / "output.log")
    monkeypatch.chdir(project)
    assert main(["--root", str(project), *argv(add, home)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Added runs/my-run from {home}/miles-job/output.log:\n"
                          "  log          1 file -> runs/my-run/log/")
    assert "  rollout/raw_reward                       has it at 3 of 3 steps; feeds it when tagged baseline" in out
    # A row that reads one run says which run it reads: a second one there would fail the build.
    assert ("  perf/step_time                           has it at 3 of 3 steps; reads one run only, run set "
            "'before_heat_guard' (tagged baseline and lab.heat_guard is false): baseline-seed1; a second one there "
            "fails the build") in out
    # Before the fill-in, make check names every placeholder.
    assert main(["--root", str(project), "check"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "runs/my-run/run.yaml:5: title: not filled in yet (a short human name for the run)" in err
    # One line per field left to fill, all in one phrasing: exactly the fields the walkthrough fills in.
    reported = [line for line in err.splitlines() if line.startswith("  runs/my-run/run.yaml:")]
    assert all(": not filled in yet (" in line for line in reported)
    assert sorted(line.split(": ")[1] for line in reported) == sorted(
        f"{key}.{inner}" if isinstance(value, dict) else key for key, value in fill.items()
        for inner in (value if isinstance(value, dict) else [None]))
    written = yaml.safe_load((project / "runs" / "my-run" / "run.yaml").read_text())
    edition = yaml.safe_load((project / "edition.yml").read_text())["miles"]
    setup = yaml.safe_load((project / "docs" / "data" / "setup.yml").read_text())
    # The job's own Miles commit is asked for (a bare log names none); the edition's build fills the rest.
    assert {k: v for k, v in written["miles"].items() if k != "commit"} == {
        k: v for k, v in edition.items() if k != "commit"}
    assert written["miles"]["commit"] == ("FILL IN: the Miles commit the job ran from (git -C <the job's Miles "
                                          "checkout> rev-parse --short HEAD); this edition's is 08752a1")
    assert {k: v for k, v in written["hardware"].items() if k != "gpus"} == setup["hardware"]
    assert written["model"]["parameters"] == setup["parameters"][written["model"]["name"]]
    config = yaml.safe_load((project / "runs" / "my-run" / "run.yaml").read_text())
    merge(config, fill)
    (project / "runs" / "my-run" / "run.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    outputs = []
    for command in then:
        assert main(["--root", str(project), *argv(command, home)]) == 0, command
        outputs.append(capsys.readouterr().out)
    assert "my-run                   measured Qwen3-0.6B    3 steps (3 clean)" in outputs[0]
    assert outputs[1].startswith("Run my-run (measured), read from runs/my-run\n\nSources:\n  log          "
                                 "runs/my-run/log/output.log.gz\n")
    assert outputs[2] == CSV  # the values exactly as the log printed them
    assert outputs[3].splitlines()[0] == "Your run my-run (3 steps) against the manual's Metrics page"
    assert outputs[3].splitlines()[-1].startswith("Verdict: ")


@pytest.mark.parametrize("form", ["dump/dashboard", "log/job.log", "tensorboard/tb", "wandb-jsonl/history.jsonl",
                                  "events/events"])
def test_each_source_form_becomes_a_run_that_shows_the_same_table(form: str, project: Path, tmp_path: Path,
                                                                   monkeypatch, capsys) -> None:
    monkeypatch.chdir(project)
    # A dump names its run (meta.json run_name); any other source takes the ID given.
    run_id = "sample-run" if form.startswith("dump") else "form-" + form.split("/")[0]
    assert main(["--root", str(project), "add-run", str(SOURCES / form), "--id", run_id]) == 0
    capsys.readouterr()
    request_cleanup = project / "runs" / run_id
    problems: list = []
    run = load.load_run(project / "runs" / run_id, problems)
    # Only the fields a person fills in are wrong: the copied sources read without a problem.
    assert all("run.yaml" in p.file for p in problems) and len(run.streams["metrics"]) > 0
    assert main(["--root", str(project), "show", run_id, "--csv"]) == 0
    assert capsys.readouterr().out == CSV
    copied = [p for p in (project / "runs" / run_id).rglob("*") if p.is_file() and p.name != "run.yaml"]
    assert all(p.name.endswith(".gz") or p.name == "meta.json" for p in copied)
    assert all(gzip.decompress(p.read_bytes()) for p in copied if p.name.endswith(".gz"))
    shutil.rmtree(request_cleanup)


def test_a_folder_holding_several_sources(project: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    job = tmp_path / "job"
    shutil.copytree(SOURCES / "dump" / "dashboard", job / "dashboard")
    shutil.copytree(SOURCES / "log", job / "log")
    shutil.copytree(SOURCES / "tensorboard" / "tb", job / "tensorboard_log" / "proj" / "exp")
    shutil.copy(SOURCES / "ci_history" / "4242-0f3a.jsonl", job / "4242-0f3a.jsonl")
    monkeypatch.chdir(project)
    assert main(["--root", str(project), "add-run", str(job)]) == 0
    out = capsys.readouterr().out
    target = project / "runs" / "sample-run"  # the dump's run_name
    assert out.splitlines()[1:5] == [
        "  dashboard    3 files -> runs/sample-run/dashboard/",
        "  log          1 file -> runs/sample-run/log/",
        "  ci_history   1 file -> runs/sample-run/ci_history/",
        "  tensorboard  1 file -> runs/sample-run/tensorboard/",
    ]
    assert (target / "tensorboard" / "tensorboard_log" / "proj" / "exp").is_dir()
    assert main(["--root", str(project), "show", "sample-run", "--csv"]) == 0
    assert capsys.readouterr().out == CSV
    written = yaml.safe_load((target / "run.yaml").read_text())
    assert written["flags"] == {"n_samples_per_prompt": 8, "rollout_batch_size": 32, "rollout_max_response_len": 1024,
                                "num_rollout": 3, "colocate": True, "hf_checkpoint": "Qwen/Qwen3-0.6B"}
    assert written["hardware"]["gpus"] == 1 and str(written["date"]) == "2026-09-21"
    # The same id given again is refused; derived again, it is numbered past the run that has it.
    assert main(["--root", str(project), "add-run", str(job), "--id", "sample-run"]) == EXIT_BAD_INPUT
    assert "runs/sample-run: already exists: choose another ID=, or remove the folder first" in capsys.readouterr().err
    assert main(["--root", str(project), "add-run", str(job)]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == (f"Added runs/sample-run-2 from {job} (Miles' run_name 'sample-run', kept "
                                            "in meta.json):")
    assert captured.out.splitlines()[-1] == ("1 warning reading the sources (on stderr; `manual show sample-run-2` "
                                             "lists them)")
    assert captured.err == (f"WARNING {job}/log/job.log:28: perf/total_train_time read as perf/step_time (its name "
                            "in older Miles versions)\n")
    shutil.rmtree(project / "runs" / "sample-run-2")


def test_show_on_a_bare_log_prints_sources_setup_steps_and_events(monkeypatch, capsys) -> None:
    monkeypatch.chdir(SOURCES)
    assert main(["show", "dirty/log/job.log"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:12] == [
        "Run job (measured), read from dirty/log/job.log",
        "",
        "Sources:",
        "  log          dirty/log/job.log",
        "",
        "Setup:",
        "  model                not recorded",
        "  answers per prompt   not recorded",
        "  prompts per step     not recorded",
        "  length limit         not recorded",
        "  colocated            not recorded",
        "  GPUs                 not recorded (no phase, GPU sample or topology names one)",
    ]
    assert "      0                               -              40.25                          inf" in "\n".join(lines)
    assert lines[lines.index("Events:") + 3] == "  job_end        2026-09-21 15:05:00  dirty/log/job.log:14: Job " \
                                                "'raysubmit_4Xk2' failed"


def test_an_id_other_than_the_dumps_run_name_is_the_run_id(project: Path, monkeypatch, capsys) -> None:
    """The folder is the run id; Miles' run_name (`wandb_group or "miles-run"`) is kept as written and shown."""
    monkeypatch.chdir(project)
    assert main(["--root", str(project), "add-run", str(SOURCES / "dump"), "--id", "other"]) == 0
    assert capsys.readouterr().out.startswith(f"Added runs/other from {SOURCES / 'dump'} (Miles' run_name "
                                              "'sample-run', kept in meta.json):\n")
    meta = json.loads((project / "runs" / "other" / "dashboard" / "meta.json").read_text())
    assert meta["run_name"] == "sample-run"
    problems: list = []
    load.load_run(project / "runs" / "other", problems)
    assert all(p.file.endswith("run.yaml") for p in problems)  # only the fields a person fills in
    assert main(["--root", str(project), "show", "other"]) == 0
    assert "  Miles run_name       sample-run" in capsys.readouterr().out.splitlines()
    shutil.rmtree(project / "runs" / "other")


def test_show_of_nothing_is_bad_input(tmp_path: Path, capsys) -> None:
    assert main(["show", str(tmp_path)]) == EXIT_BAD_INPUT
    assert "found no Miles output" in capsys.readouterr().err


# --- a sealed boundary: only plain files SRC holds are copied, none is lost, nothing half-written -------------


def job(tmp_path: Path, *names: str) -> Path:
    """A Miles job's folder holding the sample log under each name given (a name ending .gz gzipped)."""
    folder = tmp_path / "job"
    log = (SOURCES / "log" / "job.log").read_bytes()
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(gzip.compress(log) if name.endswith(".gz") else log)
    return folder


def runs_of(project: Path) -> list[str]:
    return sorted(p.name for p in (project / "runs").iterdir())


def test_links_fifos_and_sockets_inside_src_are_refused_before_anything_is_read(project: Path, tmp_path: Path,
                                                                                monkeypatch, capsys) -> None:
    src = job(tmp_path, "output.log")
    (tmp_path / "secret.txt").write_text("not a log\n")
    (src / "stolen.log").symlink_to(tmp_path / "secret.txt")  # to a file outside SRC
    (src / "sub").mkdir()
    (src / "sub" / "inside.log").symlink_to("../output.log")  # to a file inside SRC: refused all the same
    os.mkfifo(src / "pipe.log")  # opened, it would wait for a writer for ever
    with socket.socket(socket.AF_UNIX) as sock:
        monkeypatch.chdir(src)  # bound by a relative name: a socket's path must fit 107 bytes, a deep TMPDIR's may not
        sock.bind("sock")
        before = runs_of(project)
        monkeypatch.chdir(tmp_path)
        assert main(["--root", str(project), "add-run", "job", "--id", "linked"]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err.splitlines() == [
        "ERROR 4 problems in the run data:",
        "  job/pipe.log: is a FIFO (named pipe), not a plain file; only plain files are read",
        "  job/sock: is a socket, not a plain file; only plain files are read",
        "  job/stolen.log: is a symbolic link: only plain files are copied, never what a link points to; put the "
        "file itself there",
        "  job/sub/inside.log: is a symbolic link: only plain files are copied, never what a link points to; put "
        "the file itself there",
        "hint: fix the files named above; runs/README.md documents every field",
    ]
    assert runs_of(project) == before  # nothing written, not even a staging folder


def test_a_device_inside_src_is_refused(project: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    src = job(tmp_path, "output.log")
    try:
        os.mknod(src / "null.log", stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null: reads as an empty log
    except PermissionError:
        pytest.skip("creating a device file needs CAP_MKNOD")
    monkeypatch.chdir(tmp_path)
    assert main(["--root", str(project), "add-run", "job", "--id", "device"]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err.splitlines()[:2] == [
        "ERROR 1 problem in the run data:", "  job/null.log: is a device, not a plain file; only plain files are read"]
    assert not (project / "runs" / "device").exists()


@pytest.mark.parametrize(("names", "message"), [
    (("output.log", "log/output.log"),
     "job/output.log: would be copied to the same name as job/log/output.log ({runs}/clash/log/output.log.gz): "
     "rename or remove one of them"),
    (("a.log", "a.log.gz"),
     "job/a.log.gz: would be copied to the same name as job/a.log ({runs}/clash/log/a.log.gz): rename or remove "
     "one of them"),
])
def test_two_sources_that_would_get_one_name_are_refused_naming_both(names: tuple[str, str], message: str,
                                                                     project: Path, tmp_path: Path, monkeypatch,
                                                                     capsys) -> None:
    job(tmp_path, *names)
    before = runs_of(project)
    monkeypatch.chdir(tmp_path)
    assert main(["--root", str(project), "add-run", "job", "--id", "clash"]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err.splitlines()[:2] == ["ERROR 1 problem in the run data:",
                                                        "  " + message.format(runs=project / "runs")]
    assert runs_of(project) == before


def test_a_link_put_in_src_after_the_check_is_not_followed(project: Path, tmp_path: Path, monkeypatch,
                                                           capsys) -> None:
    """The copy opens each file without following a link at any step: one swapped in once SRC was checked (here:
    the check sees nothing) is refused, and nothing is added."""
    from build_tools.commands import add_run

    src = job(tmp_path, "log/output.log")
    shutil.copy(SOURCES / "log" / "job.log", tmp_path / "elsewhere.log")
    (src / "stolen.log").symlink_to(tmp_path / "elsewhere.log")
    monkeypatch.setattr(add_run, "scan_tree", lambda *args, **kwargs: ([], []))
    monkeypatch.chdir(tmp_path)
    assert main(["--root", str(project), "add-run", "job", "--id", "raced"]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err.splitlines()[:2] == [
        "ERROR 1 problem in the run data:",
        "  job/stolen.log: is a symbolic link to outside the run; only files inside it are read: copy the file in "
        "instead"]  # refused as it is read (_files.open_regular), before any copy
    assert not [name for name in runs_of(project) if name == "raced" or name.startswith(".")]


def test_a_failure_after_copying_leaves_no_run_folder(project: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    from build_tools.commands import add_run

    def disk_full(name: str) -> None:
        assert name == "add-run-copied"
        raise OSError(errno.ENOSPC, "No space left on device")

    job(tmp_path, "output.log")
    before = runs_of(project)
    monkeypatch.setattr(add_run, "checkpoint", disk_full)
    monkeypatch.chdir(project)
    assert main(["--root", str(project), "add-run", str(tmp_path / "job"), "--id", "half"]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err.splitlines() == [
        "ERROR runs/half: cannot write (No space left on device): nothing was added",
        "hint: runs/ must be writable and have free space; nothing was added, so the same command can simply run "
        "again"]
    assert runs_of(project) == before


def test_src_itself_may_be_a_link_and_only_what_it_holds_is_copied(project: Path, tmp_path: Path, monkeypatch,
                                                                    capsys) -> None:
    job(tmp_path, "log/output.log", "notes.md")
    (tmp_path / "latest").symlink_to(tmp_path / "job")
    monkeypatch.chdir(project)
    assert main(["--root", str(project), "add-run", str(tmp_path / "latest"), "--id", "via-link"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "  log          1 file -> runs/via-link/log/"
    target = project / "runs" / "via-link"
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()) == [
        "log/output.log.gz", "run.yaml"]
    problems: list = []
    run = load.load_run(target, problems)
    # Only the fields a person fills in are wrong: the copied log reads without a problem.
    assert all(p.file == "runs/via-link/run.yaml" for p in problems) and len(run.streams["metrics"]) > 0
    shutil.rmtree(target)


# --- nothing to add: an empty source, the project itself -------------------------------------------------------

EMPTY = SAMPLES / "empty"
EXPECTED_SOURCES = ("expected a dashboard dump (meta.json), a log (*.log, *.txt), a wandb export (*.csv, *.jsonl), "
                    "TensorBoard event files, a CI history record, --dump-details event files, an MLflow run's "
                    "folder (mlruns/<experiment id>/<run id>/), or a lab/ folder `manual record` wrote")


@pytest.mark.parametrize(("name", "found"), [
    ("empty.log", "empty"), ("empty.txt", "empty"), ("empty.csv", "empty"), ("empty.jsonl", "found no Miles output"),
    ("folder", "no record read from it"), ("no-records.log", "no record read from it")])
def test_a_source_with_nothing_in_it_adds_no_run(name: str, found: str, project: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """tests/samples/empty: an empty file (or one with no Miles record) is one line naming it, and runs/ is as it
    was (an empty log used to become a run with nothing in it)."""
    before = sorted(path.name for path in (project / "runs").iterdir())
    src = EMPTY / name
    assert main(["--root", str(project), "add-run", str(src)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.splitlines()
    assert err[:2] == ["ERROR 1 problem in the run data:", f"  {load.display_path(src)}: {found}: {EXPECTED_SOURCES}"]
    assert sorted(path.name for path in (project / "runs").iterdir()) == before


@pytest.mark.parametrize("relative", [".", "..", "runs/..", "./"])
def test_the_project_itself_as_src_is_refused_naming_src(relative: str, project: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(project)
    assert main(["add-run", relative]) == EXIT_BAD_INPUT
    shown = load.display_path(Path(relative))
    assert capsys.readouterr().err.splitlines()[:2] == [
        "ERROR 1 problem in the run data:",
        f"  {shown}: SRC: is the manual's project or a folder above it (runs/ would be copied into runs/): name what "
        "one Miles job left, e.g. make add-run SRC=path/to/job"]


# A one-GPU launch as the chapters give it: what Miles' MLflow backend logs of it is computed by Miles' own code.
MLFLOW_LAUNCH = ["--train-backend", "fsdp", "--hf-checkpoint", "Qwen/Qwen3-0.6B", "--prompt-data",
                 "/root/gsm8k/train.parquet", "--input-key", "messages", "--rm-type", "math", "--num-rollout", "3",
                 "--rollout-batch-size", "32", "--n-samples-per-prompt", "8", "--num-steps-per-rollout", "2",
                 "--colocate", "--actor-num-nodes", "1", "--actor-num-gpus-per-node", "1", "--num-gpus-per-node", "1",
                 "--sglang-mem-fraction-static", "0.4", "--seed", "7", "--use-mlflow"]
# Miles' train.py as far as MLflow sees it: its backend's calls (mlflow_utils.init_mlflow, log_metrics), run as a
# script of a git checkout, so that MLflow's own git context tags the run with the checkout's commit.
TRAIN_PY = """
import json, sys
import mlflow
params, store = json.loads(open(sys.argv[1]).read()), sys.argv[2]
mlflow.set_tracking_uri(store)
mlflow.set_experiment("miles")
run = mlflow.start_run(run_name="mlflow-job", tags={"rank": "0"})
mlflow.log_params(params)
for step in range(3):
    mlflow.log_metrics({"rollout/raw_reward": 0.25 * step, "rollout/step": step}, step=step)
mlflow.end_run()
print(run.info.experiment_id, run.info.run_id)
"""


def git_checkout(folder: Path) -> tuple[Path, str]:
    """A git checkout holding TRAIN_PY as train.py, and its commit."""
    import subprocess

    folder.mkdir()
    (folder / "train.py").write_text(TRAIN_PY)
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "train.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "train"], check=True)
    return folder, subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                                  check=True).stdout.strip()


def test_a_log_names_the_job_s_miles_commit_in_its_environment_report(project: Path, tmp_path: Path, monkeypatch,
                                                                      capsys) -> None:
    """A train actor started with --env-report prints Miles' git commit (Miles' own code writes the line here,
    from a real checkout); add-run takes it, and the edition's build stays out of the run's miles."""
    from build_tools import miles_code

    checkout, commit = git_checkout(tmp_path / "miles")
    report = miles_code.env_report(checkout)
    assert report.startswith("ENV_REPORT_JSON={") and commit in report
    lines = (SOURCES / "log" / "job.log").read_text().splitlines(keepends=True)
    log = tmp_path / "job" / "output.log"
    log.parent.mkdir()
    log.write_text("".join([lines[0], f"(FSDPTrainRayActor pid=4242) {report}", *lines[1:]]))
    monkeypatch.chdir(project)
    assert main(["--root", str(project), "add-run", str(log), "--id", "reported"]) == 0
    capsys.readouterr()
    written = yaml.safe_load((project / "runs" / "reported" / "run.yaml").read_text())
    assert written["miles"]["commit"] == commit and written["miles"]["image"].startswith("FILL IN")
    shutil.rmtree(project / "runs" / "reported")


def test_an_mlflow_run_fills_run_yaml_from_its_params_and_its_commit(project: Path, tmp_path: Path, monkeypatch,
                                                                     capsys) -> None:
    import json
    import subprocess
    import sys

    from build_tools import miles_code

    checkout, commit = git_checkout(tmp_path / "miles")
    params = tmp_path / "params.json"
    params.write_text(json.dumps(miles_code.mlflow_params(MLFLOW_LAUNCH)))
    store = tmp_path / "mlruns"
    done = subprocess.run([sys.executable, str(checkout / "train.py"), str(params), store.as_uri()],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true"})
    experiment, run_id = done.stdout.split()
    assert (store / experiment / run_id / "tags" / "mlflow.source.git.commit").read_text() == commit
    monkeypatch.chdir(project)
    assert main(["--root", str(project), "add-run", str(store / experiment / run_id), "--id", "mlflow-run"]) == 0
    out = capsys.readouterr().out
    written = yaml.safe_load((project / "runs" / "mlflow-run" / "run.yaml").read_text())
    assert written["model"]["name"] == "Qwen3-0.6B" and written["model"]["size"] == "0.6B"
    assert written["hardware"]["gpus"] == 1 and written["seed"] == 7
    flags = written["flags"]
    # As launched, and as Miles resolved them: 32 prompts x 8 answers // 2 steps a rollout.
    assert {name: flags[name] for name in ("rollout_batch_size", "n_samples_per_prompt", "num_rollout",
                                           "num_steps_per_rollout", "global_batch_size", "colocate",
                                           "sglang_mem_fraction_static", "train_backend", "hf_checkpoint",
                                           "prompt_data", "input_key", "rm_type")} == {
        "rollout_batch_size": 32, "n_samples_per_prompt": 8, "num_rollout": 3, "num_steps_per_rollout": 2,
        "global_batch_size": 128, "colocate": True, "sglang_mem_fraction_static": 0.4, "train_backend": "fsdp",
        "hf_checkpoint": "Qwen/Qwen3-0.6B", "prompt_data": "/root/gsm8k/train.parquet", "input_key": "messages",
        "rm_type": "math"}
    # The job's own commit, not the edition's; the image, branch and date of that commit are the user's to say.
    assert written["miles"] == {"image": "FILL IN: the Miles image the job ran in",
                                "branch": "FILL IN: the Miles branch of that commit", "commit": commit,
                                "commit_date": "FILL IN: the commit's date, YYYY-MM-DD"}
    assert "run.yaml: filled from the sources: date, seed, model.name, model.size, miles.commit, hardware.gpus, " in out
    assert "    miles.image: the Miles image the job ran in" in out
    shutil.rmtree(project / "runs" / "mlflow-run")
