"""build_tools/pages/figure_index.py: the Index of figures against the seed, word for word; its links, its
palette list and where it says its numbers come from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from build_tools.drawing import palette
from build_tools.pages._common import environment
from build_tools.pages.figure_index import render_figure_index
from tests.conftest import ROOT
from tests.page_text import INDEX_SEED, markdown_tables, seed_index_rows, with_config


@pytest.fixture(scope="module")
def env():
    return environment(ROOT / "templates")


@pytest.fixture(scope="module")
def blocks():
    from build_tools.checking.blocks import read_blocks

    return read_blocks(ROOT / "docs", ROOT / "figures")


@pytest.fixture(scope="module")
def index_page(env, blocks, example_summaries) -> str:
    return render_figure_index(env, blocks, example_summaries, palette.legend_sentences())


def test_index_rows_match_the_seed_word_for_word(index_page, blocks):
    """One row per block of the chapters, in order; the seed's rows are among them word for word (a figure an
    author adds, as CONTRIBUTING.md's recipe does, is a row the user's seed does not have yet)."""
    rows = markdown_tables(index_page)["Index of figures"]
    assert rows[0] == ["Fig.", "The claim it makes"]
    assert [number for number, _ in rows[1:]] == [block.number for block in blocks]
    seed = seed_index_rows()
    assert [row for row in rows[1:] if row in seed] == seed


def test_index_links_go_to_each_figure(index_page, blocks):
    links = re.findall(r"^\| \[([\d.]+)\]\(([^)#]+)#([\w-]+)\)", index_page, flags=re.M)
    assert links == [(b.number, Path(b.chapter_file).name, b.id) for b in blocks]


def test_palette_list_comes_from_the_palette_file(index_page):
    seed = INDEX_SEED.read_text(encoding="utf-8").splitlines()
    expected = [line for line in seed if re.match(r"^\w+ is ", line)]
    listed = [line[2:] for line in index_page.splitlines() if line.startswith("- ")]
    assert listed == expected and len(listed) == 7


def test_the_built_index_shows_each_colour_beside_its_role(env, blocks, example_summaries):
    from build_tools.pages.front_matter import legend_items

    roles = palette.load_palette().roles
    page = render_figure_index(env, blocks, example_summaries, legend_items(roles, palette.legend_sentences()))
    listed = [line for line in page.splitlines() if line.startswith("- ")]
    assert listed[0] == ('- <span class="manual-swatch" style="background: var(--role-' + roles[0].name
                         + ')"></span> ' + palette.legend_sentences()[0])
    assert len(listed) == len(roles) == 7


def test_index_says_where_its_numbers_come_from(env, blocks, example_summaries):
    def page(summaries: dict) -> str:
        return render_figure_index(env, blocks, summaries, palette.legend_sentences())

    example = page(example_summaries)
    assert ("Every number in a figure comes from synthesized example runs of one DGX Spark, not from "
            "measurements.") in example
    assert "our runs on one DGX Spark" not in example
    measured = page(with_config(example_summaries, provenance="measured"))
    assert "Every measured number in a figure comes from our runs on one DGX Spark." in measured
    first = sorted(example_summaries)[0]
    mixed = page(with_config(example_summaries, provenance=lambda rid: "measured" if rid == first else "example"))
    assert f"one measured run ({first})" in mixed
    assert "synthesized example runs" in mixed and "which are not measurements" in mixed
