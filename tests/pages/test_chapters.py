"""build_tools/pages/chapters.py: a figure as the reader sees it (anchor, caption, CSV, the checks' note, what
its runs are)."""

from __future__ import annotations

import re

import pytest

from build_tools.core._escape import html_attribute
from build_tools.core._types import DrawnFigure
from build_tools.pages.chapters import figure_markup, figure_source
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def blocks():
    from build_tools.checking.blocks import read_blocks

    return read_blocks(ROOT / "docs", ROOT / "figures")


def test_figure_markup_has_anchor_caption_csv_and_checks(blocks):
    from build_tools.core._types import CheckResult, ClaimVerdict

    block = blocks[0]
    verdict = ClaimVerdict(block, "pass", (CheckResult("order", "pass", 48, "every step",
                                                       "48 of 48 steps in order <ok>"),))
    markup = figure_markup(block, None, verdict)
    assert f'<figure class="manual-figure" id="{block.id}" markdown="1">' in markup
    assert (f'<a class="manual-zoom" href="figures/{block.id}.svg" title="Open Figure {block.number} full size">'
            in markup)
    assert f"<strong>Figure {block.number}.</strong> {block.claim}" in markup
    assert f"[data behind this figure](figures/{block.id}.csv)" in markup
    assert ('<li><q>in that order</q>: 48 of 48 steps in order &lt;ok&gt; '
            '<span class="manual-needs">(the claim needs every step)</span></li>') in markup
    assert f"<p>Runs: {', '.join(block.runs)}</p>" in markup


def test_each_figure_says_what_its_runs_are(blocks, example_summaries):
    block = blocks[0]
    configs = {rid: s.config for rid, s in example_summaries.items()}
    assert figure_source(block, configs) == f"{len(block.runs)} synthesized example runs"
    measured = {rid: {**cfg, "provenance": "measured"} for rid, cfg in configs.items()}
    markup = figure_markup(block, None, None, figure_source(block, measured))
    assert f'<span class="manual-source">{len(block.runs)} measured runs</span></figcaption>' in markup


def test_a_chapter_replaces_exactly_the_blocks_the_block_reader_read(tmp_path):
    """One rule for where a fenced block starts and ends (build_tools/checking/blocks.py): a figure block shown inside a
    longer fence, or a fence whose info string only starts with `figure`, stays code on the page."""
    import shutil

    from build_tools.checking.blocks import read_blocks
    from build_tools.pages.chapters import render_chapter

    samples = ROOT / "tests" / "samples" / "chapters"
    docs = shutil.copytree(samples / "good" / "docs", tmp_path / "docs")
    chapter = docs / "01-first.md"
    shown = "````markdown\n```figure\nid: fig-shown-as-code\n```\n````\n\n```figure{.demo}\nnot a block\n```\n"
    chapter.write_text(chapter.read_text(encoding="utf-8") + "\n" + shown, encoding="utf-8")
    blocks = read_blocks(docs, samples / "figures")
    text = render_chapter(chapter, blocks, {}, {}, {})
    assert text.count("<figure ") == 1 and 'id="fig-first"' in text
    assert text.endswith("\n" + shown)


def test_a_figure_is_served_for_each_scheme_with_the_phones_layout_below_45em(blocks):
    block = blocks[0]
    markup = figure_markup(block, None, None)
    image = next(line for line in markup.splitlines() if line.startswith('<a class="manual-zoom"'))
    alt = html_attribute(block.alt)
    media = '<source media="(max-width: 44.984375em)" srcset="figures/{}">'
    assert image == (
        f'<a class="manual-zoom" href="figures/{block.id}.svg" title="Open Figure {block.number} full size">'
        f'<picture class="manual-light">{media.format(block.id + ".phone.svg")}'
        f'<img src="figures/{block.id}.svg" alt="{alt}" data-manual-full="figures/{block.id}.svg" loading="lazy">'
        f'</picture><picture class="manual-dark">{media.format(block.id + ".phone.dark.svg")}'
        f'<img src="figures/{block.id}.dark.svg" alt="{alt}" data-manual-full="figures/{block.id}.dark.svg" '
        'loading="lazy">'
        "</picture></a>")


def test_each_image_and_source_carries_its_svgs_size_in_css_pixels(blocks, tmp_path):
    """A point is 4/3 of a CSS pixel, as a browser sizes an SVG; a variant missing or stating no size gets none."""
    block = blocks[0]
    sizes = {".svg": ('width="518.4pt" height="331.2pt"', ' width="691" height="442"'),
             ".dark.svg": ('width="518.4pt" height="331.2pt"', ' width="691" height="442"'),
             ".phone.svg": ('width="358px" height="614"', ' width="358" height="614"'),
             ".phone.dark.svg": ('viewBox="0 0 1 1"', "")}
    for ending, (attributes, _) in sizes.items():
        (tmp_path / f"{block.id}{ending}").write_text(f'<?xml version="1.0"?>\n<svg {attributes} '
                                                     'xmlns="http://www.w3.org/2000/svg"></svg>\n', encoding="utf-8")
    figure = DrawnFigure(block.id, block.number, tmp_path / f"{block.id}.svg", tmp_path / f"{block.id}.csv", "", False)
    markup = figure_markup(block, figure, None)
    for ending, (_, expected) in sizes.items():
        tag = "source" if ".phone" in ending else "img"
        attribute = "srcset" if tag == "source" else "src"
        found = re.search(rf'<{tag} [^>]*{attribute}="figures/{re.escape(block.id + ending)}"[^>]*>', markup)
        assert found is not None and ("width=" in found[0]) == bool(expected), ending
        assert expected in found[0], ending


def test_an_alt_text_reaches_the_html_escaped(blocks):
    from dataclasses import replace

    block = replace(blocks[0], alt='a "quoted" <b>bold</b> & [link](x) `code` C:\\temp')
    markup = figure_markup(block, None, None)
    assert markup.count('alt="a &quot;quoted&quot; &lt;b&gt;bold&lt;/b&gt; &amp; &#91;link&#93;(x) &#96;code&#96; '
                        'C:&#92;temp"') == 2
    assert "<b>" not in markup
