"""build_tools/drawing/draw.py and build_tools/drawing/palette_check.py: figures are drawn deterministically, cached by
what they read, checked against the palette, and every problem names the figure, the run and the metric."""

from __future__ import annotations

import dataclasses
import importlib
import io
import json
import math
import os
import shutil
import sys
from pathlib import Path

import blake3
import pandas as pd
import pytest
import yaml

import figures
from build_tools.core._exceptions import FigureError
from build_tools.core._layout import PROJECT, Layout
from build_tools.core._types import FigureBlock, RunSummary
from build_tools.drawing import draw, palette_check, reads
from build_tools.store import summary_cache
from tests.conftest import manual_blocks

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "draw"
BASELINES = ("baseline-seed1", "baseline-seed2", "baseline-seed3")



def block(number: str, module: str, runs: tuple[str, ...], tables: tuple[str, ...] = (), line: int = 10,
          block_id: str | None = None) -> FigureBlock:
    return FigureBlock(id=block_id or f"fig-{module.replace('_', '-')}", number=number,
                       chapter_file=f"docs/0{number[0]}-chapter.md", line=line, module=module, runs=runs,
                       claim="", checks=(), tables=tables)


def fake_summary(run_id: str, rewards: list[float], source_hash: str = "v1") -> RunSummary:
    steps = pd.DataFrame({"rollout/raw_reward": rewards, "heat_touched": False},
                         index=pd.RangeIndex(len(rewards), name="step"))
    return RunSummary(run_id, {}, steps, pd.DataFrame(columns=["name", "t0", "t1", "step", "rank"]),
                      pd.DataFrame(columns=["kind", "t0", "t1", "detail"]), {}, source_hash=source_hash)


@pytest.fixture
def sample_figures(tmp_path_factory) -> Layout:
    """A project whose figures/ holds the test figure modules of tests/samples/draw/figures/ beside the
    project's helpers, palette and style: the figure modules the stage draws with."""
    root = tmp_path_factory.mktemp("project")
    shutil.copytree(ROOT / "figures", root / "figures", ignore=shutil.ignore_patterns("__pycache__"))
    for module in (SAMPLES / "figures").glob("*.py"):
        shutil.copy(module, root / "figures" / module.name)
    return Layout(root)


@pytest.fixture(scope="module")
def tables() -> dict:
    return {"troubleshooting": yaml.safe_load((ROOT / "docs" / "data" / "troubleshooting.yml").read_text())}


def files_of(out: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(out.iterdir())}


# --- the manual's figures -----------------------------------------------------------------------


def test_every_figure_of_the_chapters_draws_from_the_example_runs(example_summaries, tables, tmp_path):
    blocks = manual_blocks()
    drawn = draw.draw_figures(blocks, example_summaries, tables, tmp_path / "out", tmp_path / "cache", jobs=2,
                              layout=PROJECT)
    assert [d.number for d in drawn] == [b.number for b in blocks]
    assert all(d.redrawn and d.alt and d.svg.is_file() and d.csv.is_file() for d in drawn)
    assert not [path.name for path in (tmp_path / "out").iterdir() if path.suffix == ".png"]  # the SVGs serve
    for figure in drawn:
        csv = figure.csv.read_bytes()
        assert b"\r" not in csv and len(csv.splitlines()) > 1, figure.csv.name
    again = draw.draw_figures(blocks, example_summaries, tables, tmp_path / "out2", tmp_path / "cache", jobs=2,
                              layout=PROJECT)
    assert not any(d.redrawn for d in again)
    assert files_of(tmp_path / "out") == files_of(tmp_path / "out2")


def test_drawing_twice_serial_and_parallel_gives_the_same_bytes(example_summaries, tables, tmp_path):
    blocks = [b for b in manual_blocks() if b.module in ("reward_curves", "step_phases", "troubleshooting")]
    draw.draw_figures(blocks, example_summaries, tables, tmp_path / "a", tmp_path / "cache-a", jobs=1, layout=PROJECT)
    draw.draw_figures(blocks, example_summaries, tables, tmp_path / "b", tmp_path / "cache-b", jobs=2, layout=PROJECT)
    first, second = files_of(tmp_path / "a"), files_of(tmp_path / "b")
    assert len(first) == 3 * len(draw.OUTPUTS) and first == second
    svg = first["fig-reward-curves.svg"].decode()
    assert "<dc:date>" not in svg and "Matplotlib v" not in svg


def desktop_svg(block: FigureBlock, summaries: dict, tables: dict, lay_out, folder: Path) -> tuple[bytes, object]:
    """The desktop SVG of one of the manual's figures and the layout engine the figure has after: laid out by
    lay_out(figure) and saved with its engine off, as the build did until issue 22; or, with lay_out None, as
    draw._save saves it now."""
    from matplotlib import rc_context

    from build_tools.drawing import palette, variants

    job = draw._Job(block, {r: summaries[r] for r in block.runs}, {name: tables[name] for name in block.tables},
                    Path(), ROOT / "figures" / f"{block.module}.py", PROJECT)
    with palette.using(PROJECT), rc_context(palette.rc_params(PROJECT)):
        figures_, _ = draw._draw_screens(importlib.import_module(f"figures.{block.module}"), job, draw._provenance(job))
        figure = figures_[variants.DESKTOP.name]
        if lay_out is None:
            folder.mkdir()
            draw._save(figures_, "", folder / block.id, palette.load_palette(PROJECT.palette_yml))
            return (folder / f"{block.id}.svg").read_bytes(), figure.get_layout_engine()
        lay_out(figure)
        figure.set_layout_engine("none")
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata=draw.SVG_METADATA)
    return buffer.getvalue().encode(), figure.get_layout_engine()


@pytest.mark.parametrize("module", ["reward_curves", "step_phases", "troubleshooting"])
def test_the_layout_without_a_png_is_the_one_saving_the_png_made(module, example_summaries, tables, tmp_path):
    """Until issue 22 the PNG's rendering (at 200 dpi) laid the desktop figure out; _lay_out makes the same
    layout without rendering, so the SVGs keep their bytes."""
    (chosen,) = [b for b in manual_blocks() if b.module == module]
    by_png, _ = desktop_svg(chosen, example_summaries, tables,
                            lambda figure: figure.savefig(io.BytesIO(), format="png", dpi=200), tmp_path / "png")
    saved, engine = desktop_svg(chosen, example_summaries, tables, None, tmp_path / "saved")
    assert saved == by_png
    # no engine after saving either, so the label check measures this layout rather than laying the figure out anew
    assert engine is None
    # and the layout does depend on the resolution it is made at, so the test can tell them apart
    at_100_dpi, _ = desktop_svg(chosen, example_summaries, tables,
                                lambda figure: figure.savefig(io.BytesIO(), format="png", dpi=100), tmp_path / "100")
    assert at_100_dpi != by_png


# --- determinism, with the test figures -----------------------------------------------------------


def test_source_date_epoch_dates_the_files_and_never_their_content(sample_figures, monkeypatch, tmp_path):
    runs = {"run-a": fake_summary("run-a", [0.5, 0.6, 0.7])}
    blocks = [block("1.1", "tiny_reward", ("run-a",))]
    draw.draw_figures(blocks, runs, {}, tmp_path / "plain", tmp_path / "cache-plain", jobs=1, layout=sample_figures)
    drawn = draw.draw_figures(blocks, runs, {}, tmp_path / "dated", tmp_path / "cache-dated", jobs=1,
                              layout=sample_figures, epoch=1700000000)
    assert files_of(tmp_path / "plain") == files_of(tmp_path / "dated")
    assert {os.stat(path).st_mtime for path in (drawn[0].svg, drawn[0].csv)} == {1700000000}
    assert drawn[0].csv.read_text() == "run,step,reward\nrun-a,0,0.5\nrun-a,1,0.6\nrun-a,2,0.7\n"
    assert os.stat(drawn[0].csv.with_suffix(".json")).st_mtime == 1700000000


def test_synthesized_data_says_so_in_the_image_and_the_csv(sample_figures, tmp_path):
    run = fake_summary("run-a", [0.5, 0.6])
    blocks = [block("1.1", "tiny_reward", ("run-a",))]

    def drawn_with(provenance: str):
        summary = dataclasses.replace(run, config={"provenance": provenance})
        (figure,) = draw.draw_figures(blocks, {"run-a": summary}, {}, tmp_path / provenance,
                                      tmp_path / f"cache-{provenance}", jobs=1, layout=sample_figures)
        return figure

    shown, plain = drawn_with("example"), drawn_with("measured")
    # One header row, which pandas reads as the columns; the provenance is beside the CSV, in its .json.
    assert shown.csv.read_text() == plain.csv.read_text() == "run,step,reward\nrun-a,0,0.5\nrun-a,1,0.6\n"
    assert list(pd.read_csv(shown.csv).columns) == ["run", "step", "reward"]
    sidecar = json.loads(shown.csv.with_suffix(".json").read_text())
    assert sidecar["synthesized"] is True and sidecar["path"] == shown.csv.name
    assert sidecar["description"].startswith("synthesized example data, not measured: ")
    assert sidecar["sources"] == [{"title": "run-a", "provenance": "example"}]
    assert sidecar["schema"]["fields"] == [{"name": "run", "type": "string"}, {"name": "step", "type": "integer"},
                                           {"name": "reward", "type": "number"}]
    measured = json.loads(plain.csv.with_suffix(".json").read_text())
    assert measured["synthesized"] is False and measured["sources"][0]["provenance"] == "measured"
    # Same run, same numbers: the image differs only by the note drawn above the axes.
    assert shown.svg.read_bytes() != plain.svg.read_bytes()


# --- the palette check --------------------------------------------------------------------------


def test_an_off_palette_colour_fails_naming_figure_element_and_colour(sample_figures, tmp_path, monkeypatch):
    monkeypatch.chdir(sample_figures.root)
    runs = {"run-a": fake_summary("run-a", [0.5])}
    blocks = [block("1.4", "off_palette", ("run-a",), line=42, block_id="fig-reward"),
              block("1.5", "tiny_reward", ("run-a",), line=60)]
    with pytest.raises(FigureError) as caught:
        draw.draw_figures(blocks, runs, {}, tmp_path / "out", tmp_path / "cache", jobs=1, layout=sample_figures)
    assert str(caught.value) == (
        "1 problem in the figures:\n"
        '  docs/01-chapter.md:42: fig 1.4 (fig-reward): <path> in <g id="reward-line"> uses #ff7f0e, '
        "which is not in figures/palette.yml")
    assert (tmp_path / "out" / "fig-tiny-reward.svg").is_file()  # the other figure was still drawn


@pytest.mark.parametrize(("written", "colour"), [
    ("#FFF", "#ffffff"), ("#8CC96C", "#8cc96c"), ("rgb(255, 127, 14)", "#ff7f0e"), ("rgb(100%,0%,0%)", "#ff0000"),
    ("orange", "#ffa500"), ("Black", "#000000"), ("none", None), ("url(#hatch1)", None), ("currentColor", None),
])
def test_colours_are_read_in_every_svg_notation(written, colour):
    assert palette_check.normalise(written) == colour


def test_colours_in_style_attributes_and_stops_are_all_checked(tmp_path):
    svg = tmp_path / "f.svg"
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg"><g id="axes_1">'
                   '<rect style="fill: #ffffff; stroke: #123456"/><stop stop-color="red"/>'
                   '<path fill="#262626" fill-opacity="0.2"/></g></svg>')
    allowed = frozenset({"#ffffff", "#262626"})
    assert palette_check.off_palette_colours(svg, allowed) == [
        ("#123456", '<rect> in <g id="axes_1">', 0), ("#ff0000", '<stop> in <g id="axes_1">', 0)]


# --- the cache ----------------------------------------------------------------------------------


def test_changing_one_run_redraws_only_the_figures_that_read_it(sample_figures, tmp_path):
    runs = {"run-a": fake_summary("run-a", [0.5, 0.6]), "run-b": fake_summary("run-b", [0.2, 0.3])}
    blocks = [block("1.1", "tiny_reward", ("run-a",), block_id="fig-a"),
              block("1.2", "tiny_reward", ("run-b",), block_id="fig-b"),
              block("1.3", "tiny_reward", ("run-a", "run-b"), block_id="fig-ab")]

    def redrawn() -> dict[str, bool]:
        drawn = draw.draw_figures(blocks, runs, {}, tmp_path / "out", tmp_path / "cache", jobs=1, layout=sample_figures)
        return {d.block_id: d.redrawn for d in drawn}

    assert redrawn() == {"fig-a": True, "fig-b": True, "fig-ab": True}
    assert redrawn() == {"fig-a": False, "fig-b": False, "fig-ab": False}
    runs["run-b"] = fake_summary("run-b", [0.2, 0.4], source_hash="v2")
    assert redrawn() == {"fig-a": False, "fig-b": True, "fig-ab": True}


def test_a_figures_cache_entry_says_what_it_was_drawn_from(sample_figures, tmp_path):
    """As build/*.key records do: the kind, the tools' versions and each part with its digest, so a person can
    tell why a figure was, or was not, drawn again; of each run, each part draw() read (the steps, run.yaml's
    provenance, the facts' record of values that are not numbers), so a changed table shows as its new digest."""
    runs = {"run-a": fake_summary("run-a", [0.5, 0.6]), "run-b": fake_summary("run-b", [0.2, 0.3])}
    blocks = [block("1.3", "tiny_reward", ("run-a", "run-b"), block_id="fig-ab")]

    def record() -> dict:
        draw.draw_figures(blocks, runs, {}, tmp_path / "out", tmp_path / "cache", jobs=1, layout=sample_figures)
        return json.loads((tmp_path / "cache" / "fig-ab.key").read_text())

    first = record()
    module = blake3.blake3((sample_figures.figures_src / "tiny_reward.py").read_bytes()).hexdigest()
    assert first["kind"] == "figure" and first["tools"]["python"] == sys.version.split()[0]
    read = [f"run {run}: {part}" for run in ("run-a", "run-b") for part in ("config provenance", "facts non_finite",
                                                                          "steps")]
    assert sorted(first["made_from"]) == ["drawing code, figure helpers, palette and style", "figures/tiny_reward.py",
                                          *read, "the figure block"]
    assert first["made_from"]["figures/tiny_reward.py"] == module
    assert first["made_from"]["run run-a: config provenance"] == reads.ABSENT  # a fake summary says none
    assert first["made_from"]["run run-a: steps"] == summary_cache.frame_digest(runs["run-a"].steps)
    assert first["key"] == draw.figure_key(blocks[0], runs, {}, sample_figures,
                                           read=reads.from_lists(first["reads"], ("run-a", "run-b"))).hexdigest()
    runs["run-b"] = fake_summary("run-b", [0.2, 0.4], source_hash="v2")
    second = record()
    assert {name for name in first["made_from"] if first["made_from"][name] != second["made_from"][name]} == {
        "run run-b: steps"}
    assert second["key"] != first["key"]


def test_a_changed_run_whose_plotted_data_is_the_same_redraws_nothing(sample_figures, tmp_path):
    """The figure cache is keyed on what draw() returned and drew, not on the whole run: a metric no
    figure plots changes, the run's hash changes, and no figure is rendered again."""
    runs = {"run-a": fake_summary("run-a", [0.5, 0.6]), "run-b": fake_summary("run-b", [0.2, 0.3])}
    blocks = [block("1.1", "tiny_reward", ("run-a",), block_id="fig-a"),
              block("1.2", "tiny_reward", ("run-a", "run-b"), block_id="fig-ab")]

    def drawn() -> list[draw.DrawnFigure]:
        return draw.draw_figures(blocks, runs, {}, tmp_path / "out", tmp_path / "cache", jobs=1, layout=sample_figures)

    first = {d.block_id: d.svg.read_bytes() for d in drawn()}
    steps = runs["run-b"].steps.assign(**{"train/loss": [0.01, 0.02]})  # a metric tiny_reward does not plot
    runs["run-b"] = dataclasses.replace(runs["run-b"], steps=steps, source_hash="v2")
    again = drawn()
    assert [d.redrawn for d in again] == [False, False]
    assert {d.block_id: d.svg.read_bytes() for d in again} == first
    # the entry now answers for the new inputs: the next build takes it without calling draw() at all
    entry = json.loads((tmp_path / "cache" / "fig-ab.key").read_text())
    key = draw.figure_key(blocks[1], runs, {}, sample_figures, read=reads.from_lists(entry["reads"], blocks[1].runs))
    assert entry["key"] == key.hexdigest()
    runs["run-b"] = fake_summary("run-b", [0.2, 0.35], source_hash="v3")  # a plotted number changes
    assert [d.redrawn for d in drawn()] == [False, True]


def test_a_changed_option_or_a_lost_output_redraws(sample_figures, tmp_path):
    runs = {"run-a": fake_summary("run-a", [0.5])}
    first = block("1.1", "tiny_reward", ("run-a",))
    draw.draw_figures([first], runs, {}, tmp_path / "out", tmp_path / "cache", jobs=1, layout=sample_figures)
    changed = dataclasses.replace(first, options={"split": 12})
    assert draw.draw_figures([changed], runs, {}, tmp_path / "out", tmp_path / "cache", jobs=1,
                             layout=sample_figures)[0].redrawn
    (tmp_path / "cache" / "fig-tiny-reward.phone.dark.svg").unlink()
    assert draw.draw_figures([changed], runs, {}, tmp_path / "out", tmp_path / "cache", jobs=1,
                             layout=sample_figures)[0].redrawn


@pytest.mark.parametrize("damage", ["replace the svg", "garble the key"])
def test_a_tampered_cache_entry_is_redrawn_with_a_warning_never_published(damage, sample_figures, tmp_path):
    runs = {"run-a": fake_summary("run-a", [0.5])}
    first = block("1.1", "tiny_reward", ("run-a",))
    draw.draw_figures([first], runs, {}, tmp_path / "out", tmp_path / "cache", jobs=1, layout=sample_figures)
    if damage == "replace the svg":
        (tmp_path / "cache" / "fig-tiny-reward.svg").write_text("<svg><script>alert(1)</script></svg>")
    else:
        (tmp_path / "cache" / "fig-tiny-reward.key").write_text("{not json")
    warnings = []
    (again,) = draw.draw_figures([first], runs, {}, tmp_path / "out2", tmp_path / "cache", jobs=1,
                                 warnings=warnings, layout=sample_figures)
    assert again.redrawn
    assert warnings == ["build/cache: the cached files of fig-tiny-reward do not match their hashes; redrawn"]
    assert "<script>" not in again.svg.read_text()


# --- bad input ----------------------------------------------------------------------------------


def test_every_bad_figure_is_named_with_its_run_and_metric_and_the_rest_are_drawn(sample_figures, tmp_path,
                                                                                monkeypatch):
    monkeypatch.chdir(ROOT)
    runs = {"run-a": fake_summary("run-a", [0.5, 0.6]), "nan-run": fake_summary("nan-run", [math.nan, math.nan])}
    blocks = [block("1.1", "tiny_reward", ("ghost-run",), line=10, block_id="fig-missing"),
              block("1.2", "tiny_reward", ("nan-run",), line=20, block_id="fig-nan"),
              block("1.3", "raising", ("run-a",), line=30, block_id="fig-raises"),
              block("1.4", "no_such_module", ("run-a",), line=40, block_id="fig-nomodule"),
              block("1.5", "tiny_reward", ("run-a",), line=50, block_id="fig-good")]
    with pytest.raises(FigureError) as caught:
        # jobs=1: the test modules are importable in this process only
        draw.draw_figures(blocks, runs, {}, tmp_path / "out", tmp_path / "cache", jobs=1, layout=sample_figures)
    assert str(caught.value) == "\n".join([
        "4 problems in the figures:",
        "  docs/01-chapter.md:10: fig 1.1 (fig-missing): run ghost-run is not in runs/ (the figure reads it)",
        "  docs/01-chapter.md:20: fig 1.2 (fig-nan): run nan-run has no steps with raw_reward",
        "  docs/01-chapter.md:30: fig 1.3 (fig-raises): figures/raising.py:10 raised ZeroDivisionError: "
        "division by zero (reading run-a)",
        "  docs/01-chapter.md:40: fig 1.4 (fig-nomodule): no figure module figures/no_such_module.py",
    ])
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [
        "fig-good.csv", "fig-good.dark.svg", "fig-good.json", "fig-good.phone.dark.svg", "fig-good.phone.svg",
        "fig-good.svg"]


def test_a_figure_of_the_manual_names_the_run_and_metric_it_lacks(example_summaries, tables, tmp_path):
    broken = dict(example_summaries)
    seed2 = broken["baseline-seed2"]
    broken["baseline-seed2"] = dataclasses.replace(seed2, steps=seed2.steps.drop(columns=["rollout/raw_reward"]),
                                                   source_hash="broken")
    blocks = [block("1.4", "reward_curves", BASELINES, line=42, block_id="fig-reward")]
    with pytest.raises(FigureError) as caught:
        draw.draw_figures(blocks, broken, tables, tmp_path / "out", tmp_path / "cache", jobs=1, layout=PROJECT)
    assert [str(p) for p in caught.value.problems] == [
        "docs/01-chapter.md:42: fig 1.4 (fig-reward): run baseline-seed2 has no per-step value "
        "'rollout/raw_reward'"]


def test_default_alt_texts_type_no_number_the_data_has():
    # A module's ALT is shown when a block gives none; numbers from the runs belong in checked captions.
    import importlib
    import pkgutil
    import re

    for module in pkgutil.iter_modules(figures.__path__):
        if not module.name.startswith("_"):
            alt = importlib.import_module(f"figures.{module.name}").ALT
            assert not re.search(r"\d", alt), f"figures/{module.name}.py ALT types a number: {alt}"


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_project_draws_with_its_own_figures_package_and_palette(sample_figures, tmp_path, jobs):
    """A build of another folder (`--root`) draws with that folder's figure helpers and palette, in this
    process (jobs=1) and in the pool's workers; the figures package Python imports is put back after."""
    palette_yml = sample_figures.palette_yml
    palette_yml.write_text(palette_yml.read_text().replace('"#70975e"', '"#7cb95c"'))  # the data role
    common = sample_figures.figures_src / "_common.py"  # its helpers: every new figure carries a mark
    common.write_text(common.read_text().replace("def new_figure(", "def _new_figure(", 1)
                      + "\n\ndef new_figure(*args, **kwargs):\n    figure, ax = _new_figure(*args, **kwargs)\n"
                        "    figure.text(0, 0, 'drawn by the copy', va='bottom')\n    return figure, ax\n")
    runs = {"run-a": fake_summary("run-a", [0.5, 0.6])}
    blocks = [block("1.1", "tiny_reward", ("run-a",), block_id="fig-a"),
              block("1.2", "tiny_reward", ("run-a",), block_id="fig-b")]
    drawn = draw.draw_figures(blocks, runs, {}, tmp_path / "out", tmp_path / "cache", jobs=jobs,
                              layout=sample_figures)
    for figure in drawn:
        svg = figure.svg.read_text()
        assert "#7cb95c" in svg and "#8cc96c" not in svg
        assert "drawn by the copy" in svg
    assert [Path(folder) for folder in figures.__path__] == [ROOT / "figures"]
    assert "drawn by the copy" not in Path(importlib.import_module("figures._common").__file__).read_text()


# --- variants: a phone's layout, a dark scheme ----------------------------------------------------


def test_every_figure_has_a_phone_layout_and_a_dark_variant(sample_figures, tmp_path):
    import xml.etree.ElementTree as ET

    from build_tools.drawing import legibility, palette, palette_check, variants

    runs = {"run-a": fake_summary("run-a", [0.5, 0.6]), "run-b": fake_summary("run-b", [0.4, 0.7])}
    draw.draw_figures([block("1.1", "two_panels", ("run-a", "run-b"))], runs, {}, tmp_path / "out",
                      tmp_path / "cache", jobs=1, layout=sample_figures)
    out = tmp_path / "out"
    assert sorted(path.name for path in out.iterdir()) == [
        "fig-two-panels.csv", "fig-two-panels.dark.svg", "fig-two-panels.json", "fig-two-panels.phone.dark.svg",
        "fig-two-panels.phone.svg", "fig-two-panels.svg"]

    def axes_of(name: str) -> list[tuple[float, float]]:
        """Each panel's (left, top) in the SVG, from the axes' background patch."""
        root = ET.parse(out / name).getroot()
        found = []
        for group in root.iter():
            if (group.get("id") or "").startswith("axes_"):
                path = next(child for child in group.iter() if child.tag.endswith("path"))
                first = path.get("d", "").split("\n")[0].split()
                found.append((float(first[1]), float(first[2])))
        return found

    desktop, phone = axes_of("fig-two-panels.svg"), axes_of("fig-two-panels.phone.svg")
    assert desktop[0][1] == desktop[1][1] and desktop[0][0] < desktop[1][0]  # side by side
    assert phone[0][0] == phone[1][0] and phone[0][1] < phone[1][1]  # one above the other
    assert ET.parse(out / "fig-two-panels.phone.svg").getroot().get("width") == "246pt"  # 328 CSS px
    assert legibility.css_px("246pt") == variants.PHONE.content_px
    # The dark variants: the same drawing with the dark shades, on the dark background.
    light, dark = (out / "fig-two-panels.svg").read_text(), (out / "fig-two-panels.dark.svg").read_text()
    loaded = palette.load_palette(sample_figures.palette_yml)
    assert dark == loaded.to_dark(light) and "#a940ed" in dark and "#8d0dcd" not in dark
    assert palette_check.figure_background(out / "fig-two-panels.phone.dark.svg") == "#1f1f1f"


def test_a_phone_layout_that_plots_other_numbers_is_refused(sample_figures, tmp_path):
    with pytest.raises(FigureError) as caught:
        draw.draw_figures([block("1.1", "phone_numbers", ())], {}, {}, tmp_path / "out", tmp_path / "cache",
                          jobs=1, layout=sample_figures)
    assert [p.message for p in caught.value.problems] == [
        "fig 1.1 (fig-phone-numbers): figures/phone_numbers.py raised ValueError: draw() plots other numbers for "
        "the phone than for the desktop"]


def test_small_text_on_the_phone_is_named_with_its_variant(sample_figures, tmp_path):
    common = sample_figures.figures_src / "_common.py"
    common.write_text(common.read_text().replace("    figure = Figure()\n", "    figure = Figure()\n"
                                                 "    if variants.current().stacked:\n"
                                                 "        figure.text(0, 0, 'tiny', fontsize=6, va='bottom')\n", 1))
    runs = {"run-a": fake_summary("run-a", [0.5, 0.6])}
    with pytest.raises(FigureError) as caught:
        draw.draw_figures([block("1.1", "tiny_reward", ("run-a",))], runs, {}, tmp_path / "out", tmp_path / "cache",
                          jobs=1, layout=sample_figures)
    assert [p.message for p in caught.value.problems] == [
        "fig 1.1 (fig-tiny-reward, phone): text 'tiny' is drawn 8.0 px high in a 328 px column (expected at least "
        "12 px: a font size of at least 9.00 in this figure)"]


def test_labels_that_collide_on_any_screen_fail_the_figure(sample_figures, tmp_path):
    with pytest.raises(FigureError) as caught:
        draw.draw_figures([block("1.1", "crowded", ())], {}, {}, tmp_path / "out", tmp_path / "cache", jobs=1,
                          layout=sample_figures)
    assert [p.message for p in caught.value.problems] == [
        "fig 1.1 (fig-crowded): on the phone, texts 'first label' and 'second label' overlap"]
    assert not (tmp_path / "cache" / "fig-crowded.key").exists()  # drawn again next time, not cached


def test_the_workers_are_started_early_only_for_a_cold_cache_and_more_than_one_worker(sample_figures, tmp_path):
    blocks = [block("1.1", "tiny_reward", ("run-a",)), block("1.2", "tiny_reward", ("run-a",), block_id="fig-b")]
    cache = tmp_path / "cache"
    cache.mkdir()
    assert not draw.start_workers_early(blocks, cache, 1)  # one worker draws in this process
    assert not draw.start_workers_early(blocks[:1], cache, 2)  # one figure: no pool
    (cache / "fig-b.key").write_text("{}")
    assert not draw.start_workers_early(blocks, cache, 2)  # one figure to draw at most
    (cache / "fig-b.key").unlink()
    assert draw.start_workers_early(blocks, cache, 2)
    import multiprocessing.forkserver

    assert multiprocessing.forkserver._forkserver._forkserver_pid is not None


def test_make_serve_draws_a_few_figures_in_its_own_process_the_same_bytes(example_summaries, tables, tmp_path,
                                                                          monkeypatch):
    """A rebuild of make serve that redraws IN_PROCESS_UP_TO figures or fewer starts no worker, and draws what the
    pool draws; more, and the pool draws them."""
    blocks = [b for b in manual_blocks() if b.module in ("reward_curves", "step_phases", "troubleshooting")]
    assert len(blocks) <= draw.IN_PROCESS_UP_TO
    draw.draw_figures(blocks, example_summaries, tables, tmp_path / "pool", tmp_path / "cache-pool", jobs=2,
                      layout=PROJECT)

    def no_pool(*args, **kwargs):
        raise AssertionError("a worker was started")

    monkeypatch.setattr(draw, "ProcessPoolExecutor", no_pool)
    draw.draw_figures(blocks, example_summaries, tables, tmp_path / "served", tmp_path / "cache-served", jobs=2,
                      layout=PROJECT, serving=True)
    assert files_of(tmp_path / "served") == files_of(tmp_path / "pool")
    many = manual_blocks()[: draw.IN_PROCESS_UP_TO + 1]
    with pytest.raises(AssertionError, match="a worker was started"):
        draw.draw_figures(many, example_summaries, tables, tmp_path / "many", tmp_path / "cache-many", jobs=2,
                          layout=PROJECT, serving=True)


def test_an_svg_s_size_is_read_again_when_the_file_changes(tmp_path):
    """The rendered pages read each figure's size every build; kept for the process while the file's stats hold."""
    import os

    from build_tools.drawing.legibility import svg_size

    svg = tmp_path / "fig.svg"
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="100pt" height="50pt"></svg>')
    assert svg_size(svg) == (100.0 * (96 / 72), 50.0 * (96 / 72))
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="300px" height="20px"></svg>')
    os.utime(svg, ns=(1, 1))  # other stats, whatever the clock's tick
    assert svg_size(svg) == (300.0, 20.0)
