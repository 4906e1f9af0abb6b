"""The reader's install: `pip install` of the package (its base dependencies, from the pins) runs `manual show`,
`compare` and `watch` with none of the build's packages; a build verb without the `build` extra says so in one line."""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from build_tools import cli
from tests.commands.watch.test_watch_published import serve

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


# --- a fresh install, as a reader makes one: README's own commands, run as written ------------------------------

README = ROOT / "README.md"
BUILD_ONLY = ("mkdocs", "matplotlib", "weasyprint")  # what the reader's install must not hold


def readme_command(start: str) -> list[str]:
    """The one line of README's shell blocks that starts with these words, as words (its comment left off)."""
    blocks = re.findall(r"^```sh\n(.*?)^```", README.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)
    lines = [line.split("  #", 1)[0].strip() for block in blocks for line in block.splitlines()]
    found = [line for line in lines if line.startswith(start)]
    assert len(found) == 1, (start, found)
    return shlex.split(found[0])


def package_source(target: Path) -> Path:
    """A clone as README's commands see it (pyproject.toml, its packages, the reader's lock), outside the project:
    building in place would write setuptools' build/ into the manual's own build/."""
    target.mkdir()
    for name in ("pyproject.toml", "requirements-reader.lock"):
        shutil.copy2(ROOT / name, target)
    for folder in ("build_tools", "figures"):
        shutil.copytree(ROOT / folder, target / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def reader_pins() -> dict[str, str]:
    """requirements-reader.lock's pins: name -> version."""
    text = (ROOT / "requirements-reader.lock").read_text(encoding="utf-8")
    return {normalized(name): version for name, version in re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", text, re.MULTILINE)}


def installed(python: Path) -> dict[str, str]:
    """Every distribution the interpreter's environment holds: name -> version."""
    code = ("import importlib.metadata as m, json\n"
            "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))")
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return {normalized(name): version for name, version in json.loads(done.stdout).items()}


def assert_no_build_modules(python: Path) -> None:
    for module in BUILD_ONLY:
        found = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True, text=True)
        assert found.returncode == 1 and f"No module named '{module}'" in found.stderr, (python, module)


def reader_env(**extra: str) -> dict[str, str]:
    """The environment of a reader's shell: none of the project's virtual environment."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, **extra}


def run(words: list[str], cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(words, capture_output=True, text=True, cwd=cwd, env=env, timeout=1800)
    assert done.returncode == 0, (words, done.stdout[-2000:], done.stderr[-2000:])


def watches_as_a_reader(manual: Path, tmp_path: Path, built_manual: Path) -> None:
    """The installed `manual` holds a job (a breach the manual's runs lack) against an edition's contract served
    beside its manifest, from the reader's own folder: what it prints matches the project's own watch, and a build
    verb says in one line that the build is not installed."""
    from build_tools.editions import _manifest
    from tests.commands.test_compare import scaled_dump

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
    env = reader_env()
    for url in serve(tmp_path / "site"):
        watched = subprocess.run([str(manual), "watch", str(job), "--format", "jsonl",
                                  "--until-idle", "2", "--contract", f"{url}/2026.10/contract.json"],
                                 capture_output=True, text=True, cwd=reader, env=env, timeout=600)
        built = subprocess.run([str(manual), "build"], capture_output=True, text=True, cwd=reader,
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


@pytest.mark.slow
def test_the_readers_pip_install_watches_a_job_against_a_published_contract(tmp_path: Path,
                                                                            built_manual: Path) -> None:
    """README's commands: a virtual environment, the pins with their hashes, then the package without its
    dependencies (pip checks every hash of a lock, and a source folder has none)."""
    clone, venv = package_source(tmp_path / "src"), tmp_path / "venv"
    made = readme_command("python3 -m venv")
    assert made[3:] == ["~/.manual"]
    run([sys.executable, *made[1:3], str(venv)], clone, reader_env())  # README's python3, as this Python
    for start in ("~/.manual/bin/pip install --require-hashes", "~/.manual/bin/pip install --no-deps"):
        words = readme_command(start)
        run([str(venv / "bin" / "pip"), *words[1:]], clone, reader_env())
    check = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout  # nothing missing
    assert_no_build_modules(venv / "bin" / "python")
    watches_as_a_reader(venv / "bin" / "manual", tmp_path, built_manual)


@pytest.mark.slow
def test_the_readers_uv_tool_install_watches_a_job_against_a_published_contract(tmp_path: Path,
                                                                                built_manual: Path) -> None:
    """README's `uv tool install` (uv pinned by the Makefile), into a tool folder of its own: the lock's versions
    exactly, none of the build's packages."""
    uv = ROOT / ".venv" / "uv" / "bin" / "uv"
    assert uv.is_file(), "uv is not installed: `make` installs it"
    words = readme_command("uv tool install")
    tools, bin_dir = tmp_path / "uv-tools", tmp_path / "uv-bin"
    run([str(uv), *words[1:]], package_source(tmp_path / "src"),
        reader_env(UV_TOOL_DIR=str(tools), UV_TOOL_BIN_DIR=str(bin_dir), UV_PYTHON=sys.executable,
                   UV_PYTHON_DOWNLOADS="never"))
    python = tools / "miles-spark-manual" / "bin" / "python"
    assert (bin_dir / "manual").resolve().is_relative_to(tools / "miles-spark-manual")  # the tool's own command
    assert_no_build_modules(python)
    pins, found = reader_pins(), installed(python)
    assert found == {**pins, "miles-spark-manual": found["miles-spark-manual"]}  # every pin, at its version
    # ... because the lock was its constraints (the newest releases may be the lock's too), kept for `uv tool upgrade`
    receipt = tomllib.loads((tools / "miles-spark-manual" / "uv-receipt.toml").read_text(encoding="utf-8"))["tool"]
    assert {normalized(c["name"]): c["specifier"] for c in receipt.get("constraints", [])} == \
        {name: f"=={version}" for name, version in pins.items()}
    watches_as_a_reader(bin_dir / "manual", tmp_path, built_manual)


@pytest.mark.slow
def test_the_readers_pipx_install_watches_a_job_against_a_published_contract(tmp_path: Path,
                                                                             built_manual: Path) -> None:
    """README's `pipx install` (pipx pinned in the test extra), into a pipx home of its own: the package's own
    pins exactly, none of the build's packages."""
    words = readme_command("pipx install")
    home, bin_dir = tmp_path / "pipx-home", tmp_path / "pipx-bin"
    run([str(ROOT / ".venv" / "bin" / "pipx"), *words[1:]], package_source(tmp_path / "src"),
        reader_env(PIPX_HOME=str(home), PIPX_BIN_DIR=str(bin_dir), PIPX_MAN_DIR=str(tmp_path / "pipx-man"),
                   PIPX_DEFAULT_PYTHON=sys.executable))
    venv = home / "venvs" / "miles-spark-manual"
    assert (bin_dir / "manual").resolve().is_relative_to(venv)
    assert_no_build_modules(venv / "bin" / "python")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pinned = dict(re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", requirement).groups()  # type: ignore[union-attr]
                  for requirement in project["dependencies"])
    found = installed(venv / "bin" / "python")
    assert {normalized(name): found.get(normalized(name)) for name in pinned} == \
        {normalized(name): version for name, version in pinned.items()}
    watches_as_a_reader(bin_dir / "manual", tmp_path, built_manual)
