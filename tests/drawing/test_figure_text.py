"""What the figures say in words: every text of every variant of every figure is at least 12 CSS px in the
content column it is shown in, no label overlaps another or leaves the figure (build_tools/drawing/legibility.py),
and every alt text names only what its figure draws, in as many panels as it says."""

from __future__ import annotations

import importlib
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from matplotlib import rc_context
from matplotlib.figure import Figure

from build_tools import readers
from build_tools.checking.blocks import load_tables, read_blocks
from build_tools.core._exceptions import Problem
from build_tools.core._layout import PROJECT
from build_tools.core._types import FigureBlock
from build_tools.drawing import draw, legibility, variants
from build_tools.drawing.palette import rc_params
from tests.conftest import manual_blocks

ROOT = Path(__file__).resolve().parents[2]
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}



def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def drawn_text(figure: Figure) -> dict[str, list[str]]:
    """Every text the figure draws, as `axes` (axis labels) and `drawn` (all texts, axis labels included)."""
    texts = [text.get_text() for text in figure.findobj(lambda artist: hasattr(artist, "get_text"))]
    texts += [tick.get_text() for ax in figure.axes for tick in (*ax.get_xticklabels(), *ax.get_yticklabels())]
    labels = [label for ax in figure.axes for label in (ax.get_xlabel(), ax.get_ylabel())]
    return {"axes": [_plain(t) for t in labels if t], "drawn": [_plain(t) for t in texts if t]}


def panels_said(alt: str, block: FigureBlock) -> int:
    """How many panels the alt text says: "two panels", "one panel per seed" (one per run), else one."""
    text = alt.lower()
    if re.search(r"\bone panel per\b", text):
        return len(block.runs)
    match = re.search(r"\b(\w+) panels\b", text)
    return NUMBER_WORDS[match[1]] if match else 1


@pytest.fixture(scope="module")
def manual_figures(example_summaries) -> dict[str, tuple[FigureBlock, Figure]]:
    """Every figure of the manual drawn from the example runs, as matplotlib figures."""
    blocks = read_blocks(ROOT / "docs", ROOT / "figures")
    tables = load_tables(ROOT / "docs" / "data")
    drawn = {}
    with rc_context(rc_params()):
        for block in blocks:
            job = draw._Job(block, {r: example_summaries[r] for r in block.runs},
                            {name: tables[name] for name in block.tables}, Path("unused"),
                            ROOT / "figures" / f"{block.module}.py", PROJECT)
            module = importlib.import_module(f"figures.{block.module}")
            figure, _ = draw._call(module, job)
            figure.draw_without_rendering()  # lays the figure out and sets its tick labels, as saving does
            drawn[block.id] = (block, figure)
    return drawn


def alt_names(module: str) -> dict[str, list[str]]:
    """The names a figure module declares for what it draws (ALT_NAMES): texts anywhere in the figure
    (`drawn`: series, marks, panel titles, legend, tick labels) and axis labels (`axes`)."""
    return importlib.import_module(f"figures.{module}").ALT_NAMES


@pytest.mark.parametrize("module", sorted({block.module for block in manual_blocks()}))
def test_every_figure_module_declares_the_names_of_what_it_draws(module):
    names = alt_names(module)
    assert sorted(names) == ["axes", "drawn"] and names["drawn"], f"figures/{module}.py ALT_NAMES: {names}"
    assert all(isinstance(name, str) and name for kind in names.values() for name in kind)


@pytest.mark.parametrize("figure_id", [block.id for block in manual_blocks()])
def test_the_alt_text_names_only_what_the_figure_draws(manual_figures, figure_id):
    block, figure = manual_figures[figure_id]
    alt = _plain(block.alt)
    texts = drawn_text(figure)
    for kind, names in alt_names(block.module).items():
        for name in names:
            assert _plain(name) in alt, f"{figure_id}: the alt text does not name {name!r}: {block.alt}"
            assert any(_plain(name) in text for text in texts[kind]), \
                f"{figure_id}: the alt text names {name!r}, but no {kind} text of the figure does: {texts[kind]}"
    assert len(figure.axes) == panels_said(block.alt, block), \
        f"{figure_id}: the alt text says {panels_said(block.alt, block)} panel(s), the figure has {len(figure.axes)}"


def test_an_alt_text_that_names_another_figure_is_caught(manual_figures):
    # An alt text of one panel, "coloured" by kind of run; fig 4.2 has two panels and no such word.
    block, figure = manual_figures["fig-deterministic-gap"]
    wrong = "The gap per step of each run, coloured by the kind of run."
    assert panels_said(wrong, block) == 1 != len(figure.axes)
    assert not any("coloured" in text for text in drawn_text(figure)["drawn"])


# --- legibility ---------------------------------------------------------------------------------


@pytest.mark.parametrize("screen", variants.SCREENS, ids=lambda screen: screen.name)
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_built_figure_has_no_text_below_12_px_at_the_content_width(built_manual, screen, scheme):
    """Each variant at the width its page shows it at: the desktop's column, and the phone's at 390 px."""
    folder = built_manual / "site" / "figures"
    blocks = manual_blocks(built_manual)
    svgs = [folder / f"{block.id}{variants.suffix(screen, scheme)}" for block in blocks]
    assert all(svg.is_file() for svg in svgs) and len(svgs) == len(blocks)
    for svg in svgs:
        texts = legibility.texts(svg, screen.content_px)
        assert texts, f"{svg.name} has no SVG text (svg.fonttype must be none: text stays text)"
        smallest = min(texts, key=lambda t: t.px)
        assert smallest.px >= 12, f"{svg.name}: {smallest.text!r} is drawn {smallest.px:.2f} px high"
        # The SVG is at least as wide as the column, so the page shows it at the column's width.
        root = ET.parse(svg).getroot()
        assert legibility.shown_width(root, screen.content_px) == screen.content_px


@pytest.mark.parametrize("figure_id", [block.id for block in manual_blocks()])
def test_no_label_of_any_variant_overlaps_another_or_leaves_the_figure(example_summaries, figure_id):
    """Every screen's layout, measured by matplotlib's renderer (a dark variant has its light one's layout)."""
    block = next(block for block in manual_blocks() if block.id == figure_id)
    tables = load_tables(ROOT / "docs" / "data")
    found = draw.screen_measures(block, example_summaries, tables, PROJECT,
                                 lambda figure: (legibility.collisions(figure), legibility.room(figure)))
    assert sorted(found) == sorted(screen.name for screen in variants.SCREENS)
    assert {screen: [str(c) for c in collisions] for screen, (collisions, _) in found.items()} == \
        {screen.name: [] for screen in variants.SCREENS}
    # With room to spare, so that the next release of matplotlib, measuring text a little wider, does not fail it.
    tight = {screen: str(room) for screen, (_, room) in found.items()
             if room is not None and room.px < legibility.ROOM_PX}
    assert tight == {}, f"less than {legibility.ROOM_PX:g} px of room"


def test_overlapping_and_cut_labels_are_found():
    with rc_context(rc_params()):
        figure = Figure(figsize=(3, 2), layout="none")
        ax = figure.add_subplot()
        ax.text(0.1, 0.5, "one label")
        ax.text(0.12, 0.52, "another label")
        ax.text(0.95, 0.2, "past the edge of the figure")
        ax.annotate("arrowed", xy=(0.1, 0.9), xytext=(0.5, 0.9), arrowprops={"arrowstyle": "->"})
        assert [str(c) for c in legibility.collisions(figure)] == [
            "text 'past the edge of the figure' is cut by the figure's edge",
            "texts 'one label' and 'another label' overlap"]


def test_the_room_of_the_tightest_label_is_measured_in_css_px():
    """At 100 dpi a renderer pixel is 0.96 CSS px; the room is the gap, plus the OVERLAP_PX the rule allows."""
    with rc_context(rc_params()):
        figure = Figure(figsize=(3, 2), dpi=100, layout="none")  # 300 x 200 renderer px
        figure.text(0.5, 0.5, "above", ha="center", va="bottom")
        figure.text(0.5, 0.5 - 6 / 200, "below", ha="center", va="top")  # 6 px under "above"
        room = legibility.room(figure)
        assert room is not None and (room.first, room.second, round(room.px, 2)) == ("above", "below", 6.72)
        assert str(room) == "6.7 px between 'above' and 'below'"
        figure.text(1 - 3 / 300, 0.9, "edge", ha="right", va="top")  # 3 px from the right edge
        room = legibility.room(figure)
        assert room is not None and (room.first, room.second, round(room.px, 2)) == ("edge", None, 3.84)
        assert str(room) == "3.8 px between 'edge' and the figure's edge"
        assert legibility.room(Figure(figsize=(3, 2))) is None


def test_the_drawn_size_of_svg_text_follows_the_shown_width(tmp_path):
    svg = tmp_path / "f.svg"
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="460.8pt" height="100pt" viewBox="0 0 460.8 100">'
                   '<text style="font-size: 8px; font-family: sans-serif">tick</text>'
                   '<g><text style="font: 10px sans-serif">label</text></g></svg>')
    # 460.8 pt is 614.4 CSS px, narrower than a 688 px column: shown at its own width, 4/3 px per unit.
    assert [(t.text, round(t.px, 2)) for t in legibility.texts(svg, 688)] == [("tick", 10.67), ("label", 13.33)]
    # In a 390 px phone column it shrinks with the image.
    assert round(legibility.smallest(svg, 390).px, 2) == 6.77  # type: ignore[union-attr]


def test_a_figure_with_small_text_is_reported_with_the_size_it_needs(tmp_path):
    svg = tmp_path / "f.svg"
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="518.4pt" height="100pt" viewBox="0 0 518.4 100">'
                   '<text style="font-size: 8px">tiny</text><text style="font-size: 7px">tinier</text>'
                   '<text style="font-size: 10px">fine</text></svg>')
    block = FigureBlock(id="fig-x", number="9.1", chapter_file="docs/09-x.md", line=7, module="x", runs=(),
                        claim="", checks=())
    assert legibility.check_figures([(block, svg)]) == [Problem(
        "docs/09-x.md", 7, None, "fig 9.1 (fig-x): text 'tinier' (and 1 more) is drawn 9.3 px high in a 688 px "
        "column (expected at least 12 px: a font size of at least 9.04 in this figure)")]


# --- each figure shows its claim's number as its check measured it -------------------------------------------


def _figure_csv(built: Path, figure_id: str) -> pd.DataFrame:
    lines = (built / "build" / "docs" / "figures" / f"{figure_id}.csv").read_text(encoding="utf-8").splitlines()
    return pd.read_csv(io.StringIO("\n".join(line for line in lines if not line.startswith("#"))))


def _observed(built: Path, figure_id: str, check: str) -> Any:
    claims = json.loads((built / "build" / "claims.json").read_text(encoding="utf-8"))
    figure = next(figure for figure in claims["figures"] if figure["id"] == figure_id)
    return next(result["observed"] for result in figure["checks"] if result["name"] == check)


def test_fig_1_2_draws_the_share_its_check_measured(built_manual):
    data = _figure_csv(built_manual, "fig-step-shares")
    pooled = data[(data["run"] == "all") & (data["part"] == "rollout + training")]["share"]
    observed = _observed(built_manual, "fig-step-shares", "share")
    assert round(float(pooled.iloc[0]), 9) == round(float(observed), 9)
    svg = (built_manual / "site" / "figures" / "fig-step-shares.svg").read_text(encoding="utf-8")
    assert f"rollout + training: {float(observed):.3f} of a clean step" in svg
    assert "95 %" not in svg


def test_fig_8_2_labels_the_median_hand_off_its_check_measured(built_manual):
    data = _figure_csv(built_manual, "fig-memory-hand-offs")
    median = data[data["series"] == "median_hand_offs_per_clean_step"]["seconds"]
    observed = float(_observed(built_manual, "fig-memory-hand-offs", "about"))
    assert round(float(median.iloc[0]), 6) == round(observed, 6)
    for name in ("fig-memory-hand-offs.svg", "fig-memory-hand-offs.phone.svg"):
        texts = [t.text for t in legibility.texts(built_manual / "site" / "figures" / name)]
        assert any(f"timed hand-offs: {observed:.1f} s a step" in " ".join(texts[i:i + 2])
                   for i in range(len(texts)))


def test_fig_8_2_draws_two_steps_in_a_row_nearest_the_median_its_check_measured(built_manual, example_summaries):
    """The claim is about the typical step (the median over the clean steps): the steps drawn are the two clean
    steps in a row whose hand-offs are nearest it, each labelled with its hand-offs as the check reads them."""
    observed = float(_observed(built_manual, "fig-memory-hand-offs", "about"))
    per_step = readers.step_values(example_summaries["baseline-seed1"],
                                   ["perf/sleep_time", "perf/wake_up_time", "perf/update_weights_time"])
    assert round(float(per_step.median()), 9) == round(observed, 9)
    in_a_row = [(int(a), int(b)) for a, b in zip(per_step.index, per_step.index[1:], strict=False) if b == a + 1]
    farthest = {pair: max(abs(float(per_step[step]) - observed) for step in pair) for pair in in_a_row}
    nearest = min(in_a_row, key=lambda pair: (farthest[pair], pair))
    data = _figure_csv(built_manual, "fig-memory-hand-offs")
    labelled = data[data["series"] == "hand_offs_of_step"]
    assert [int(step) for step in labelled["step"]] == list(nearest)
    assert [round(float(v), 9) for v in labelled["seconds"]] == [round(float(per_step[s]), 9) for s in nearest]
    drawn = data[data["series"].isin(["sleep", "wake_up", "update_weights"])]
    assert sorted({int(step) for step in drawn["step"]}) == list(nearest)
    for name in ("fig-memory-hand-offs.svg", "fig-memory-hand-offs.phone.svg"):
        texts = [t.text for t in legibility.texts(built_manual / "site" / "figures" / name)]
        shown = {" ".join(texts[i:i + 2]) for i in range(len(texts))} | set(texts)  # a phone's label: two lines
        for step in nearest:
            assert f"step {step}: {float(per_step[step]):.1f} s" in shown
        assert f"time since step {nearest[0]} began (s)" in texts


def test_fig_4_2_reads_from_zero_and_says_the_equal_gaps_once(built_manual):
    svg = (built_manual / "site" / "figures" / "fig-deterministic-gap.svg").read_text(encoding="utf-8")
    observed = _observed(built_manual, "fig-deterministic-gap", "equal_at_step")
    value = f"{next(iter(observed.values())):.5f}"
    assert f"step 0: both {value}" in svg and f"{value} = {value}" not in svg
    texts = [t.text for t in legibility.texts(built_manual / "site" / "figures" / "fig-deterministic-gap.svg")]
    assert "0.000" in texts  # the gap axis starts at zero
