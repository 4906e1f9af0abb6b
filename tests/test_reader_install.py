"""The reader's install: `pip install` of the package (its base dependencies, from the pins) runs `manual show`,
`compare` and `watch` with none of the build's packages; a build verb without the `build` extra says so in one line."""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from test_watch_published import serve

from build_tools import cli

ROOT = Path(__file__).resolve().parent.parent


def build_extra() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower() for r in project["optional-dependencies"]["build"]}


def test_the_cli_knows_the_build_extra_by_its_modules() -> None:
    owners = metadata.packages_distributions()
    assert {name.lower() for name in cli.BUILD_MODULES.values()} == build_extra()
    for module, name in cli.BUILD_MODULES.items():
        assert name in owners[module]  # the module each package is imported as


def test_a_build_verb_without_the_build_extra_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("matplotlib", "weasyprint") else real(name, *a))
    assert cli.main(["--root", str(tmp_path), "build"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "ERROR manual build builds the manual, and its build dependencies are not installed here (matplotlib, "
        "weasyprint)",
        "hint: run `make` in a clone (it installs the build extra); the reader's commands (show, compare, watch) "
        "need only the package"]
    assert not (tmp_path / "build").exists()  # refused before anything ran


def test_the_reader_commands_modules_import_none_of_the_build() -> None:
    """A quick guard beside the slow test below: the modules of show, compare, watch and record, imported in a fresh
    interpreter, bring in no module of the build extra (their lazy imports are the slow test's to catch)."""
    modules = ["build_tools.cli", "build_tools.commands.record", "build_tools.commands.show",
               "build_tools.commands.compare", "build_tools.commands.watch.run",
               "build_tools.commands.watch.published", "build_tools.commands.watch.live_sources"]
    code = (f"import sys\nfor m in {modules!r}: __import__(m)\n"
            f"print(sorted(m for m in {sorted(cli.BUILD_MODULES)!r} if m in sys.modules))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert found.stdout.strip() == "[]"


def test_compare_outside_a_clone_is_one_line_and_writes_nothing(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--root", str(tmp_path), "compare", str(ROOT / "runs" / "baseline-seed1" / "dashboard")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"ERROR {tmp_path}: not a clone of the manual's project (no docs/data/metrics.yml): compare sets your run "
        "beside the manual's own runs, which a clone holds",
        "hint: run it in a clone (or name one with --root); `manual watch RUN --contract URL` holds a job against a "
        "published edition without one"]
    assert list(tmp_path.iterdir()) == []


# --- a fresh virtual environment, as a reader makes one -----------------------------------------------------------


def package_source(target: Path) -> Path:
    """What the package is built from (pyproject.toml and its packages), outside the project: building in place
    would write setuptools' build/ into the manual's own build/."""
    target.mkdir()
    shutil.copy2(ROOT / "pyproject.toml", target)
    for folder in ("build_tools", "figures"):
        shutil.copytree(ROOT / folder, target / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return target


@pytest.mark.slow
def test_the_readers_install_watches_a_job_against_a_published_contract(tmp_path: Path,
                                                                        built_manual: Path) -> None:
    from test_compare import scaled_dump

    from build_tools.editions import _manifest

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    # The reader's install as README says it: the base pins with their hashes, then the package without its
    # dependencies (pip checks every hash of a lock, and a source folder has none).
    pins = subprocess.run([python, "-m", "pip", "install", "--quiet", "--require-hashes", "-r",
                           str(ROOT / "requirements-reader.lock")], capture_output=True, text=True, timeout=1800)
    assert pins.returncode == 0, pins.stderr[-2000:]
    install = subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps",
                              str(package_source(tmp_path / "src"))], capture_output=True, text=True, timeout=1800)
    assert install.returncode == 0, install.stderr[-2000:]
    check = subprocess.run([python, "-m", "pip", "check"], capture_output=True, text=True)  # nothing missing
    assert check.returncode == 0, check.stdout
    for module in ("mkdocs", "matplotlib", "weasyprint"):
        found = subprocess.run([python, "-c", f"import {module}"], capture_output=True, text=True)
        assert found.returncode == 1 and f"No module named '{module}'" in found.stderr

    # An edition's folder as its site serves it: the built manual's contract beside a manifest that hashes it.
    edition = tmp_path / "site" / "2026.10"
    edition.mkdir(parents=True)
    for name in _manifest.CONTRACT_FILES:
        shutil.copy2(built_manual / "site" / name, edition / name)
    document = json.loads((edition / "contract.json").read_text(encoding="utf-8"))
    manifest = {"edition": document["edition"], _manifest.CONTRACT_SECTION: _manifest.contract_section(edition)}
    (edition / "manifest.json").write_text(_manifest.dumps(manifest), encoding="utf-8")
    served = (edition / "contract.json").read_bytes()
    assert manifest["contract"]["contract.json"] == hashlib.sha256(served).hexdigest()

    job = scaled_dump(built_manual, tmp_path / "job", "rollout/raw_reward", 1.1)  # a breach the manual's runs lack
    reader = tmp_path / "reader"  # the reader's own folder: no project, no build
    reader.mkdir()
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    for url in serve(tmp_path / "site"):
        watched = subprocess.run([str(venv / "bin" / "manual"), "watch", str(job), "--format", "jsonl",
                                  "--until-idle", "2", "--contract", f"{url}/2026.10/contract.json"],
                                 capture_output=True, text=True, cwd=reader, env=env, timeout=600)
        built = subprocess.run([str(venv / "bin" / "manual"), "build"], capture_output=True, text=True, cwd=reader,
                               env=env, timeout=600)
    assert watched.returncode == 7 and "Traceback" not in watched.stderr, watched.stderr  # the breach, kept
    changes = [json.loads(line) for line in watched.stdout.splitlines()]
    assert {"item": "rollout/raw_reward", "status": "outside"}.items() <= next(
        c for c in changes if c["item"] == "rollout/raw_reward" and c["status"] == "outside").items()
    summary = watched.stderr.splitlines()
    assert summary[0].startswith("WARNING the finished run not judged whole: claims and whole-run rows are checked "
                                 "with the manual's own runs")
    records = [json.loads(line) for line in (job / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    rollouts = {record["step"] for record in records if record.get("step_key") == "rollout/step"}
    assert summary[1].startswith(f"Watched baseline-seed1 against the manual's edition {document['edition']} ")
    assert f"{len(rollouts)} rollout steps (0 to {max(rollouts)})" in summary[1]  # every step of the job read
    # What the project's own watch says of the same job against the same contract file: the same changes.
    same = subprocess.run([sys.executable, "-m", "build_tools", "--root", str(reader), "watch", str(job), "--format",
                           "jsonl", "--until-idle", "2", "--contract", str(edition / "contract.json")],
                          capture_output=True, text=True, cwd=reader, timeout=600)
    assert same.stdout == watched.stdout
    assert built.returncode == 2 and built.stderr.splitlines()[0] == (
        "ERROR manual build builds the manual, and its build dependencies are not installed here (mkdocs, "
        "mkdocs-material, mike, matplotlib, Jinja2, weasyprint, tinyhtml5, tinycss2)")
