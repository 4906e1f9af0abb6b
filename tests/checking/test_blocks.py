"""Stage 3: figure blocks read from the chapters, numbered by position; cross references; every error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from build_tools.checking.blocks import load_tables, read_blocks, resolve_references
from build_tools.core._exceptions import EXIT_BAD_INPUT, ChapterError
from tests.conftest import SEEDS

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = Path(__file__).resolve().parents[1] / "samples" / "chapters"
FIGURES = CHAPTERS / "figures"
FENCE = re.compile(r"^```figure$", re.MULTILINE)  # a figure block opens the line


def problems_of(scenario: str) -> list[str]:
    with pytest.raises(ChapterError) as caught:
        read_blocks(CHAPTERS / scenario / "docs", FIGURES)
    assert caught.value.exit_code == EXIT_BAD_INPUT
    return [str(p) for p in caught.value.problems]


def test_the_manual_numbers_its_figures_by_chapter_and_position() -> None:
    blocks = read_blocks(ROOT / "docs", ROOT / "figures")
    expected = [f"{int(chapter.name[:2])}.{position}"
                for chapter in sorted((ROOT / "docs").glob("[0-9][0-9]-*.md"))
                for position in range(1, len(FENCE.findall(chapter.read_text(encoding="utf-8"))) + 1)]
    assert [b.number for b in blocks] == expected and expected
    assert len({b.id for b in blocks}) == len(blocks)
    seed = SEEDS / "003_f3e693af6112d108.txt"
    if seed.is_file():  # every figure of the seed's index is a block with its number and its claim verbatim
        rows = [line.split("\t", 1) for line in seed.read_text(encoding="utf-8").splitlines()
                if re.match(r"^\d+\.\d+\t", line)]
        claims = {block.number: block.claim for block in blocks}
        assert rows and all(claims.get(number) == claim for number, claim in rows)


def test_blocks_are_numbered_by_chapter_and_position() -> None:
    blocks = read_blocks(CHAPTERS / "good" / "docs", FIGURES)
    first, second = blocks
    assert (first.number, first.chapter_file, first.line, first.runs) == ("1.1", "docs/01-first.md", 5, ("run-a",))
    assert first.claim == "The value is about 10 over 3 steps."
    assert first.checks[0]["check"] == "about" and first.checks[0]["stat"] == "median"  # defaults filled in
    assert (second.number, second.tables, second.runs) == ("2.1", ("things",), ())


def test_references_resolve_to_numbers_and_relative_links() -> None:
    blocks = read_blocks(CHAPTERS / "good" / "docs", FIGURES)
    text = (CHAPTERS / "good" / "docs" / "01-first.md").read_text()
    out = resolve_references(text, blocks, "docs/01-first.md")
    assert "See [Figure 2.1](02-second.md#fig-second) and [Figure 1.1](#fig-first);" in out
    assert "`[](#fig-nope)`" in out and "[](#fig-inside-code)" in out  # code is left as written
    home = resolve_references("Start with [](#fig-first).", blocks, "index.md")
    assert home == "Start with [Figure 1.1](01-first.md#fig-first)."


def test_tables_load_by_stem() -> None:
    assert load_tables(CHAPTERS / "good" / "docs" / "data") == {"things": {"items": [{"name": "a"}, {"name": "b"}]}}


def test_bad_yaml_names_the_line() -> None:
    assert problems_of("bad_yaml") == [
        "docs/01-first.md:6: figure 1.1: not valid YAML: mapping values are not allowed in this context"]


def test_missing_and_unknown_fields_unknown_module_bad_id() -> None:
    assert problems_of("bad_fields") == [
        "docs/01-first.md:3: claim: missing (expected a non-empty string)",
        "docs/01-first.md:4: id: expected fig-<lower-case letters, digits, dashes>, found 'Fig_First'",
        "docs/01-first.md:5: module: unknown module 'nowhere': there is no figures/nowhere.py",
        "docs/01-first.md:7: colour: unknown field (expected one of: alt, checks, claim, id, module, options, prose, "
        "runs, tables)",
    ]


def test_duplicate_id_and_dangling_reference() -> None:
    assert problems_of("duplicate_and_dangling") == [
        "docs/02-memory.md:5: id: duplicate id fig-same: figure 1.1 (docs/01-first.md:3) has it too",
        "docs/02-memory.md:15: reference to #fig-nope: no figure block has this id",
    ]


def test_bad_check_parameters_are_all_reported_one_line_each() -> None:
    problems = problems_of("bad_checks")
    assert problems[:5] == [
        "docs/01-first.md:3: figure 1.1: check 1 (event_span) value: expected a number, got 'sixty'",
        "docs/01-first.md:3: figure 1.1: check 2 (about) binds: '63', but the values this check proves are 62",
        "docs/01-first.md:3: figure 1.1: check 2 (about) colour: unknown parameter; about takes binds, check, "
        "label, metric, per, relative, runs, says, stat, steps, tolerance, unit, value",
        "docs/01-first.md:3: figure 1.1: check 3 (run_count) binds: '64' is not a number of the claim of figure 1.1",
        "docs/01-first.md:3: figure 1.1: check 3 (run_count) runs: run 'run-z' is not among the block's runs "
        "(run-a)",
    ]
    assert problems[5].startswith("docs/01-first.md:3: figure 1.1: check 4 (teleport): unknown check; known checks:")
    assert problems[6] == "docs/01-first.md:8: prose: 'not in the claim' is not part of the claim"


def test_a_figure_block_outside_a_chapter_is_an_error() -> None:
    assert problems_of("not_a_chapter") == [
        "docs/index.md:3: a figure block belongs in a chapter, a file named docs/NN-name.md"]


def test_the_whole_error_message_lists_every_problem_once() -> None:
    with pytest.raises(ChapterError) as caught:
        read_blocks(CHAPTERS / "duplicate_and_dangling" / "docs", FIGURES)
    assert str(caught.value).splitlines()[0] == "2 problems in the chapters:"
