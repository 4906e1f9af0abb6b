"""CONTRIBUTING.md's first recipe, followed as written: its example module and its example block, added to a
copy of the project (two files and nothing else), build: the figure is drawn and its claim checked."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from build_tools.cli import main
from build_tools.core._exceptions import EXIT_CLAIM_FAILED
from tests.conftest import ROOT, copy_project, manual_blocks

RECIPE = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    """One recipe: from its heading to the next."""
    start = RECIPE.index(f"\n## {title}\n")
    end = RECIPE.find("\n## ", start + 1)
    return RECIPE[start:end if end != -1 else None]


def example() -> tuple[str, str]:
    """The recipe's example: the module's source and the figure block, as CONTRIBUTING.md writes them."""
    text = section("Add a figure")
    [module] = re.findall(r"^```python\n(.*?)^```$", text, flags=re.M | re.S)
    [block] = re.findall(r"^(```figure\n.*?^```)$", text, flags=re.M | re.S)
    return module, block + "\n"


def module_of(block: str) -> str:
    return re.search(r"^module: (\w+)$", block, flags=re.M)[1]


def check_example() -> tuple[str, str, str]:
    """The check recipe's example: the check's source, its row of the checks table, its perturbation."""
    text = section("Add a kind of check")
    check, perturbation = re.findall(r"^```python\n(.*?)^```$", text, flags=re.M | re.S)
    [row] = re.findall(r"^```markdown\n(.*?)^```$", text, flags=re.M | re.S)
    return check, row, perturbation


def project_copy(target: Path) -> Path:
    """Every file git tracks (the tests, the Makefile, pyproject.toml too), as a fresh clone has them."""
    import shutil
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in tracked.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


def run_in(root: Path, *command: str) -> str:
    """A command of `make test` run in the copy: its own build_tools, figures and tests, not this checkout's."""
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, *command], cwd=root, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, f"{' '.join(command)} failed in the copy:\n{done.stdout[-4000:]}{done.stderr[-2000:]}"
    return done.stdout


def test_the_recipes_are_the_four_the_issue_asks_for() -> None:
    assert re.findall(r"^## (.+)$", RECIPE, flags=re.M) == [
        "Add a figure", "Add a kind of check", "Accept a new Miles metric key", "Change the palette"]


def test_every_file_a_recipe_names_exists() -> None:
    named = set(re.findall(r"`((?:build_tools|figures|docs|tests|examples)/[\w/.]+\.(?:py|yml|md|mplstyle))`",
                           RECIPE))
    assert {"figures/palette.yml", "build_tools/checking/checks/_perturb.py",
            "build_tools/ingest/sources/_common.py"} <= named
    assert sorted(path for path in named if not (ROOT / path).is_file()) == [f"figures/{module_of(example()[1])}.py"]


@pytest.fixture(scope="module")
def with_new_figure(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A copy of the project with the example module and block added, as the recipe says: the chapter's
    number and the block's position give the new figure's number."""
    module, block = example()
    root = copy_project(tmp_path_factory.mktemp("recipe"))
    (root / "figures" / f"{module_of(block)}.py").write_text(module, encoding="utf-8")
    chapter = root / "docs" / "01-step.md"
    text = chapter.read_text(encoding="utf-8")
    chapter.write_text(f"{text}\n{block}", encoding="utf-8")
    line = text.count("\n") + 2  # the block's opening fence, after the blank line that separates it
    return root, f"docs/01-step.md:{line}"


@pytest.fixture()
def in_copy(with_new_figure: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    root, where = with_new_figure
    monkeypatch.chdir(root)
    return root, where


def test_a_figure_added_as_the_recipe_says_is_drawn_and_its_claim_checked(in_copy, capsys) -> None:
    root, where = in_copy
    blocks = manual_blocks(root)
    chapter_one = [b for b in blocks if b.chapter_file == "docs/01-step.md"]
    new = chapter_one[-1]  # the last block of chapter 1: numbered by its position
    assert (new.id, new.number) == ("fig-grad-norm", f"1.{len(chapter_one)}")
    assert len(blocks) == len(manual_blocks()) + 1
    assert main(["build"]) == 0
    for suffix in (".svg", ".dark.svg", ".phone.svg", ".phone.dark.svg", ".csv", ".json"):
        assert (root / "site" / "figures" / f"fig-grad-norm{suffix}").is_file()
    csv = (root / "site" / "figures" / "fig-grad-norm.csv").read_text(encoding="utf-8").splitlines()
    assert csv[0] == "run,step,grad_norm" and len(csv) == 1 + 3 * 48  # header, 3 seeds x 48
    claims = {figure["id"]: figure for figure in json.loads((root / "build" / "claims.json").read_text())["figures"]}
    checked = claims["fig-grad-norm"]
    assert (checked["number"], checked["status"]) == (new.number, "pass")
    assert [(c["name"], c["status"]) for c in checked["checks"]] == [("below", "pass"), ("step_count", "pass")]
    index = (root / "site" / "figures.html").read_text(encoding="utf-8")
    assert new.claim in index and 'href="01-step.html#fig-grad-norm"' in index
    capsys.readouterr()

    # The claim is checked, not only shown: a bound the runs do not keep fails it, naming the figure.
    chapter = root / "docs" / "01-step.md"
    text = chapter.read_text(encoding="utf-8")
    chapter.write_text(text.replace("stays below 5 at", "stays below 4 at").replace(
        "    value: 5\n    binds: [\"5\"]", "    value: 4\n    binds: [\"4\"]"), encoding="utf-8")
    try:
        assert main(["check"]) == EXIT_CLAIM_FAILED
    finally:
        chapter.write_text(text, encoding="utf-8")
    failed = [line for line in capsys.readouterr().out.splitlines() if " FAIL " in line]
    assert len(failed) == 1, failed  # only the new figure
    assert failed[0].startswith(f'{where} fig {new.number} FAIL "The gradient norm stays below 4 at each of the '
                                '48 steps of every seed": every value grad_norm is from ')


def test_the_recipes_figure_module_passes_the_strict_type_check(with_new_figure: tuple[Path, str]) -> None:
    """`make test` type-checks figures/ strictly: the module an author copies from the recipe passes it."""
    import os
    import subprocess
    import sys

    root, _ = with_new_figure
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(ROOT / ".mypy_cache"), "figures"], cwd=root, capture_output=True,
                          text=True, check=False, env={**os.environ, "MYPYPATH": str(ROOT)})  # build_tools
    assert done.returncode == 0, done.stdout
    assert done.stdout.startswith("Success: no issues found")


@pytest.mark.slow
def test_the_figure_recipe_as_written_passes_ruff_and_the_figure_tests(tmp_path) -> None:
    """The two files of the recipe, copied from CONTRIBUTING.md, in a copy of the whole project: ruff (import
    order included), the build, and every test that counts or reads the chapters' figures pass there."""
    module, block = example()
    root = project_copy(tmp_path)
    (root / "figures" / f"{module_of(block)}.py").write_text(module, encoding="utf-8")
    chapter = root / "docs" / "01-step.md"
    chapter.write_text(f"{chapter.read_text(encoding='utf-8')}\n{block}", encoding="utf-8")
    run_in(root, "-m", "ruff", "check", "build_tools", "figures", "tests", "examples")
    run_in(root, "-m", "build_tools", "build")
    number = next(b.number for b in manual_blocks(root) if b.id == "fig-grad-norm")
    out = run_in(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                 "tests/drawing/test_figure_text.py", "tests/pages/test_figure_index.py", "tests/drawing/test_draw.py",
                 "tests/test_build.py", "tests/checking/test_claims.py",
                 "-k", f"alt or figure or index or redraws or every_kind or {number}-")
    assert re.search(r"^[0-9]+ passed", out.splitlines()[-1]) and "failed" not in out, out[-2000:]


@pytest.mark.slow
def test_the_check_recipe_as_written_passes_the_tests_that_require_its_two_files(tmp_path) -> None:
    """The check recipe's example, copied from CONTRIBUTING.md into its two files in a copy of the project:
    ruff passes, the check is registered and documented, and its perturbation is found (test_checks, test_claims)."""
    check, row, perturbation = check_example()
    root = project_copy(tmp_path)
    family = root / re.search(r"^The example: at the end of `([\w/]+\.py)`", section("Add a kind of check"), re.M)[1]
    family.write_text(f"{family.read_text(encoding='utf-8')}\n\n{check}\n\n{perturbation}", encoding="utf-8")
    readme = root / "docs" / "README.md"
    lines = readme.read_text(encoding="utf-8").splitlines(keepends=True)
    after = next(i for i, line in enumerate(lines) if line.startswith("| `step_count` |"))
    readme.write_text("".join([*lines[:after + 1], row, *lines[after + 1:]]), encoding="utf-8")
    run_in(root, "-m", "ruff", "check", "build_tools", "tests")
    registered = run_in(root, "-m", "build_tools", "check")  # the shipped claims still hold with the check added
    assert " FAIL " not in registered
    out = run_in(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                 "tests/checking/test_checks.py", "tests/checking/test_claims.py", "-k", "documented or every_kind")
    assert "2 passed" in out
    probe = ("from build_tools.checking.checks import REGISTRY; "
             "from build_tools.checking.checks._perturb import PERTURBATIONS; "
             "print(REGISTRY['first_step'].name, PERTURBATIONS['first_step'].__name__)")
    assert run_in(root, "-c", probe).strip() == "first_step first_step_perturbation"
