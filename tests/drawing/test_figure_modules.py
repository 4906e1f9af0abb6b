"""A figure block names a module of figures/ and nothing else, and sets only the options that module declares."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from build_tools.checking.blocks import read_blocks
from build_tools.core._exceptions import EXIT_BAD_INPUT, ChapterError
from build_tools.core._layout import Layout
from build_tools.drawing import _figure_modules, draw
from tests.conftest import manual_blocks

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = Path(__file__).resolve().parents[1] / "samples" / "chapters"
FIGURES = CHAPTERS / "figures"


def test_a_module_outside_figures_or_an_undeclared_option_is_one_line_each() -> None:
    with pytest.raises(ChapterError) as caught:
        read_blocks(CHAPTERS / "bad_modules" / "docs", FIGURES)
    assert caught.value.exit_code == EXIT_BAD_INPUT
    assert [str(p) for p in caught.value.problems] == [
        "docs/01-first.md:5: module: unknown module 'os': there is no figures/os.py",
        "docs/01-first.md:20: module: expected a module name under figures/ (lower-case letters, digits, _), "
        "found '../x'",
        "docs/01-first.md:35: module: expected a module name under figures/ (lower-case letters, digits, _), "
        "found 'figures.sub.x'",
        "docs/01-first.md:50: module: expected a module name under figures/ (lower-case letters, digits, _), "
        "found 'build_tools.cli'",
        "docs/01-first.md:65: module: '_common' is a helper of figures/, not a figure module",
        "docs/01-first.md:80: module: '__init__' is a helper of figures/, not a figure module",
        "docs/01-first.md:95: module: figures/nodraw.py has no draw(runs, tables) function",
        "docs/01-first.md:113: options.colour: figures/demo.py declares no option 'colour' (it takes label, split)",
        "docs/01-first.md:113: options.label: expected a string, got 7",
        "docs/01-first.md:113: options.split: expected a number, got 'many'",
        "docs/01-first.md:113: options.splt: figures/demo.py declares no option 'splt' (did you mean split? it "
        "takes label, split)",
    ]


def test_a_module_file_that_links_out_of_figures_is_refused(tmp_path: Path) -> None:
    figures = tmp_path / "figures"
    figures.mkdir()
    outside = tmp_path / "elsewhere.py"
    outside.write_text("def draw(runs, tables):\n    raise SystemExit\n", encoding="utf-8")
    (figures / "linked.py").symlink_to(outside)
    assert _figure_modules.module_file(figures, "linked") is None
    assert _figure_modules.module_problem(figures, "linked") == (
        "figures/linked.py is not a file in figures/ (a link leading out of it, or not a file)")


def test_a_module_that_declares_no_option_takes_none() -> None:
    problems = _figure_modules.option_problems(ROOT / "figures", "dead_engine", {"split": 16})
    assert problems == [("options.split", "figures/dead_engine.py declares no option 'split' (it takes no option)")]
    assert _figure_modules.option_problems(ROOT / "figures", "filter_batches", {"split": 16}) == []
    assert _figure_modules.option_problems(ROOT / "figures", "filter_batches", {"split": True}) == [
        ("options.split", "expected a number, got True")]


def test_every_figure_module_has_draw_and_well_formed_options() -> None:
    modules = sorted(path.stem for path in (ROOT / "figures").glob("[a-z]*.py"))
    assert modules == sorted({block.module for block in manual_blocks()})  # every module drawn, none stray
    for name in modules:
        assert _figure_modules.module_problem(ROOT / "figures", name) is None, name
        _figure_modules.declared_options(ROOT / "figures" / f"{name}.py")  # raises when malformed


def test_draw_finds_modules_only_in_the_projects_figures(tmp_path: Path) -> None:
    project = Layout(ROOT)
    assert draw._module_file(project, "step_phases") == ROOT / "figures" / "step_phases.py"
    for name in ("os", "_common", "build_tools.cli", "../figures/step_phases", "json"):
        assert draw._module_file(project, name) is None, name


def test_a_build_names_the_chapter_line_of_an_undeclared_option(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    chapter = docs / "03-answers.md"
    text = chapter.read_text(encoding="utf-8")
    chapter.write_text(text.replace("options:\n  split: 16", "options:\n  split: 16\n  colour: red"), encoding="utf-8")
    with pytest.raises(ChapterError) as caught:
        read_blocks(docs, ROOT / "figures")
    changed = chapter.read_text(encoding="utf-8")
    line = changed[:changed.index("  colour: red")].count("\n") + 1  # the line of the option
    assert [str(p) for p in caught.value.problems] == [
        f"docs/03-answers.md:{line}: options.colour: figures/filter_batches.py declares no option 'colour' "
        "(it takes split)"]


def test_a_module_the_package_path_would_find_elsewhere_is_not_drawn(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import figures
    from build_tools.core._exceptions import FigureError
    from build_tools.core._layout import PROJECT
    from build_tools.core._types import FigureBlock

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "sneaky.py").write_text("raise SystemExit('ran')\n", encoding="utf-8")
    monkeypatch.setattr(figures, "__path__", [*figures.__path__, str(elsewhere)])
    block = FigureBlock(id="fig-sneaky", number="1.1", chapter_file="docs/01-x.md", line=3, module="sneaky",
                        runs=(), claim="c", checks=())
    with pytest.raises(FigureError) as caught:
        draw.draw_figures([block], {}, {}, tmp_path / "out", tmp_path / "cache", jobs=1, layout=PROJECT)
    assert str(caught.value).splitlines()[1:] == [
        "  docs/01-x.md:3: fig 1.1 (fig-sneaky): no figure module figures/sneaky.py"]
