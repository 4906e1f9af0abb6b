"""build_tools/palette.py: the role palette loads, stays distinguishable under colour-vision deficiencies,
and becomes the CSS variables, the legend and the matplotlib style."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import colorspacious
import numpy as np
import pytest
import yaml
from conftest import SEEDS

from build_tools import palette
from build_tools._exceptions import FigureError
from build_tools._layout import PROJECT

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = Path(__file__).resolve().parent / "samples" / "palette"
SEED = SEEDS / "003_f3e693af6112d108.txt"
DEFICIENCIES = ("deuteranomaly", "protanomaly", "tritanomaly")
MIN_ROLE_DISTANCE = 15.0  # CAM02-UCS, between any two roles, in every simulated vision
MIN_NEUTRAL_DISTANCE = 10.0  # between a role and any neutral
# The roles as palette.yml writes them, read here without the loader: a new shade is one edit of that file.
FILE_ROLES = yaml.safe_load((ROOT / "figures" / "palette.yml").read_text(encoding="utf-8"))["roles"]


def _ucs(hexes: list[str], deficiency: str | None) -> np.ndarray:
    rgb = np.array([[int(h[i:i + 2], 16) / 255 for i in (1, 3, 5)] for h in hexes])
    if deficiency is not None:
        space = {"name": "sRGB1+CVD", "cvd_type": deficiency, "severity": 100}
        rgb = np.clip(colorspacious.cspace_convert(rgb, space, "sRGB1"), 0, 1)
    return colorspacious.cspace_convert(rgb, "sRGB1", "CAM02-UCS")


def test_palette_has_the_seven_roles_in_legend_order():
    loaded = palette.load_palette()
    assert [role.name for role in loaded.roles] == list(palette.ROLE_NAMES)
    assert [role.colour_name for role in loaded.roles] == ["blue", "violet", "green", "amber", "teal", "rose", "grey"]
    assert palette.role_color("trainer") == FILE_ROLES[0]["hex"]
    assert palette.role_label("engine") == "rollout engine"


def test_legend_sentences_are_the_seed_palette_verbatim():
    seed_lines = [line.strip() for line in SEED.read_text(encoding="utf-8").splitlines()]
    start = seed_lines.index("blue is the trainer: the FSDP actor, its weights, and its optimizer")
    assert palette.legend_sentences() == seed_lines[start:start + 7]


def test_legend_rows_give_role_hex_and_meaning():
    trainer, failure = FILE_ROLES[0]["hex"], FILE_ROLES[5]["hex"]
    assert palette.legend_rows()[0] == ("trainer", trainer, "the FSDP actor, its weights, and its optimizer")
    assert palette.legend_rows()[5] == ("failure", failure, "a dead engine, an out-of-memory kill, or a crash")


@pytest.mark.parametrize("deficiency", [None, *DEFICIENCIES])
def test_roles_stay_apart_under_colour_vision_deficiencies(deficiency):
    roles = palette.load_palette().roles
    points = _ucs([role.hex for role in roles], deficiency)
    for (a, pa), (b, pb) in itertools.combinations(zip(roles, points, strict=True), 2):
        distance = float(np.linalg.norm(pa - pb))
        assert distance >= MIN_ROLE_DISTANCE, f"{a.name} and {b.name}: ΔE {distance:.1f} ({deficiency})"


@pytest.mark.parametrize("deficiency", [None, *DEFICIENCIES])
def test_roles_stay_apart_from_the_neutrals(deficiency):
    loaded = palette.load_palette()
    roles, neutrals = _ucs([r.hex for r in loaded.roles], deficiency), _ucs(list(loaded.neutrals), deficiency)
    for role, point in zip(loaded.roles, roles, strict=True):
        for neutral, grey in zip(loaded.neutrals, neutrals, strict=True):
            distance = float(np.linalg.norm(point - grey))
            assert distance >= MIN_NEUTRAL_DISTANCE, f"{role.name} and {neutral}: ΔE {distance:.1f} ({deficiency})"


def test_a_bad_colour_gives_one_line_naming_file_line_and_field(monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(FigureError) as caught:
        palette.load_palette(SAMPLES / "bad_hex" / "palette.yml")
    assert str(caught.value) == (
        "1 problem in the files every figure is drawn with:\n"
        "  tests/samples/palette/bad_hex/palette.yml:16: roles[0].hex: expected a colour as #rrggbb, found 'blue'")


def test_a_neutral_must_be_a_grey(monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(FigureError) as caught:
        palette.load_palette(SAMPLES / "not_grey" / "palette.yml")
    assert [str(p) for p in caught.value.problems] == [
        "tests/samples/palette/not_grey/palette.yml:53: neutrals[2]: "
        "expected a grey (equal red, green and blue), found '#d9d9e0'"]


def test_a_missing_file_is_a_problem_not_a_crash(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FigureError) as caught:
        palette.load_palette(tmp_path / "palette.yml")
    assert [str(p) for p in caught.value.problems] == ["palette.yml: file not found"]


def test_css_variables_name_every_role():
    assert palette.css_variables() == (
        "/* Generated from figures/palette.yml by build_tools/palette.py. */\n"
        ":root {\n"
        + "".join(f"  --role-{name}: {role['hex']};\n"
                  for name, role in zip(palette.ROLE_NAMES, FILE_ROLES, strict=True))
        + "}\n")


def test_the_style_uses_only_neutrals_and_cycles_through_the_roles():
    params = palette.rc_params()
    allowed = palette.load_palette().allowed
    style_colours = {f"#{value.lower()}" for value in re.findall(r"^\S*color:\s*([0-9a-fA-F]{6})\s*$",
                                                                 PROJECT.style_file.read_text(), re.M)}
    assert style_colours and style_colours <= set(palette.load_palette().neutrals)
    assert [c["color"] for c in params["axes.prop_cycle"]] == [r.hex for r in palette.load_palette().roles]
    assert params["svg.hashsalt"] and params["font.family"] == ["sans-serif"]
    assert params["font.sans-serif"] == ["DejaVu Sans"] and params["svg.fonttype"] == "none"  # text stays text
    assert all(c["color"] in allowed for c in params["axes.prop_cycle"])


def test_figure_code_names_roles_never_colours():
    literal = re.compile(r"[\"']#[0-9a-fA-F]{3,8}[\"']")
    offenders = [path.name for path in (ROOT / "figures").glob("*.py")
                 if path.name != "_common.py" and literal.search(path.read_text(encoding="utf-8"))]
    assert offenders == []
