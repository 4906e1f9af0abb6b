"""CONTRIBUTING.md's first recipe, followed as written: its example module and its example block, added to a
copy of the project (two files and nothing else), build: the figure is drawn and its claim checked."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import ROOT, copy_project, manual_blocks

from build_tools._exceptions import EXIT_CLAIM_FAILED
from build_tools.cli import main

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


def test_the_recipes_are_the_four_the_issue_asks_for() -> None:
    assert re.findall(r"^## (.+)$", RECIPE, flags=re.M) == [
        "Add a figure", "Add a kind of check", "Accept a new Miles metric key", "Change the palette"]


def test_every_file_a_recipe_names_exists() -> None:
    named = set(re.findall(r"`((?:build_tools|figures|docs|tests|examples)/[\w/.]+\.(?:py|yml|md|mplstyle))`",
                           RECIPE))
    assert {"figures/palette.yml", "tests/perturbations.py", "build_tools/sources/_common.py"} <= named
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
