"""The role palette (figures/palette.yml): loaded and validated once, then turned into the matplotlib
style, the site's CSS variables and the front-matter legend.

Figure code asks for a role (`role_color("trainer")`), never for a colour. The palette and the style are a
project's files (Layout.palette_yml, Layout.style_file): the build passes its layout, and while it draws,
figure code reads the palette of that layout (`using`); otherwise the project this code came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from build_tools.core._exceptions import FigureFilesError, InputProblem, Problem, display_path
from build_tools.core._files import read_text
from build_tools.core._layout import PROJECT, Layout
from build_tools.core._yaml import YamlDoc, parse_yaml
from build_tools.ingest import schemas, schemas_manual

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn
    from matplotlib.typing import RcKeyType

_active = PROJECT  # whose palette figure code reads: the project's, or the drawing build's (`using`)

PAPER = "#ffffff"  # a light figure's background (figures/base.mplstyle)

# The seven roles of the manual, in legend order; palette.yml must define exactly these.
ROLE_NAMES = ("trainer", "engine", "data", "lifecycle", "durable", "failure", "outside")
ROLE_FIELDS = ("name", "colour_name", "phrase", "hex", "dark", "meaning")
HEX = re.compile(r"^#[0-9a-f]{6}$")
SCHEMES = ("light", "dark")  # every figure has a variant for each; the site shows the page's
_HEX_IN_SVG = re.compile(r"#[0-9a-f]{6}(?![0-9a-z])")


@dataclass(frozen=True)
class Role:
    name: str  # what figure code asks for
    colour_name: str  # the word for the colour ("violet")
    phrase: str  # the role in a sentence ("the rollout engine")
    hex: str  # "#rrggbb", lower case
    dark: str  # its shade in the dark scheme
    meaning: str  # what the role stands for in every figure

    @property
    def label(self) -> str:
        """What a figure's legend calls the role: the phrase without its article ("rollout engine")."""
        for article in ("the ", "a "):
            if self.phrase.startswith(article):
                return self.phrase[len(article):]
        return self.phrase

    @property
    def sentence(self) -> str:
        """The front-matter line: "violet is the rollout engine: the SGLang server that writes the answers"."""
        joiner = ", " if self.meaning.startswith("such as ") else ": "
        return f"{self.colour_name} is {self.phrase}{joiner}{self.meaning}"


@dataclass(frozen=True)
class Palette:
    roles: tuple[Role, ...]
    neutrals: tuple[str, ...]  # greys, "#rrggbb"
    path: Path  # the palette.yml it was read from
    dark_neutrals: tuple[str, ...] = ()  # the dark scheme's, each standing for the neutral at its position

    def role(self, name: str) -> Role:
        for role in self.roles:
            if role.name == name:
                return role
        known = ", ".join(r.name for r in self.roles)
        raise KeyError(f"no role {name!r} in {display_path(self.path)} (roles: {known})")

    @property
    def allowed(self) -> frozenset[str]:
        """Every colour a figure may use (its light variant: the one figure code draws)."""
        return self.allowed_in("light")

    def allowed_in(self, scheme: str) -> frozenset[str]:
        """Every colour a figure's variant for that scheme may use."""
        return frozenset(self.shades(scheme)) | frozenset(self.neutrals_of(scheme))

    def shades(self, scheme: str) -> tuple[str, ...]:
        """The roles' colours in a scheme, in legend order."""
        return tuple(role.dark if scheme == "dark" else role.hex for role in self.roles)

    def neutrals_of(self, scheme: str) -> tuple[str, ...]:
        return self.dark_neutrals if scheme == "dark" else self.neutrals

    def background(self, scheme: str) -> str:
        """A figure's background in a scheme: the style's (PAPER), or the dark neutral standing for it."""
        return self.dark_colours()[PAPER] if scheme == "dark" else PAPER

    def dark_colours(self) -> dict[str, str]:
        """Each colour of a light figure -> its colour in the dark variant."""
        return {**dict(zip(self.neutrals, self.dark_neutrals, strict=True)),
                **{role.hex: role.dark for role in self.roles}}

    def to_dark(self, svg: str) -> str:
        """A light figure's SVG as its dark variant: every colour replaced by its dark shade. Figure code
        draws only palette colours (palette_check), so every colour has one; nothing is laid out again."""
        colours = self.dark_colours()
        return _HEX_IN_SVG.sub(lambda match: colours.get(match[0], match[0]), svg)


# --- loading ----------------------------------------------------------------------------------


@contextmanager
def using(layout: Layout) -> Iterator[None]:
    """Figure code's roles come from this project's palette while it draws (build_tools/drawing/draw.py)."""
    global _active
    before, _active = _active, layout
    try:
        yield
    finally:
        _active = before


def load_palette(path: Path | None = None) -> Palette:
    """Read and validate a palette.yml (by default the one figure code reads, see `using`); FigureFilesError
    lists every problem with its line and field."""
    path = _active.palette_yml if path is None else path
    return _load_cached(path.resolve(), path.stat().st_mtime_ns if path.exists() else 0)


@lru_cache(maxsize=8)
def _load_cached(path: Path, _mtime: int) -> Palette:
    problems: list[Problem] = []
    where = display_path(path)
    doc = _read_yaml(path, where, problems)
    palette = _validate(doc, path, where, problems) if doc is not None else None
    if problems or palette is None:
        raise FigureFilesError(problems)
    return palette


def _read_yaml(path: Path, where: str, problems: list[Problem]) -> YamlDoc | None:
    if not path.is_file():
        problems.append(Problem(where, None, None, "file not found"))
        return None
    try:
        return parse_yaml(read_text(path), where)
    except InputProblem as error:
        problems.append(error.problem)
        return None


def _validate(doc: YamlDoc, path: Path, where: str, problems: list[Problem]) -> Palette | None:
    model, found = schemas.validate(schemas_manual.PaletteYaml, doc.value, where, doc.line_of)
    problems += found
    if model is None:
        return None
    roles = tuple(Role(r.name, r.colour_name, r.phrase, r.hex, r.dark, r.meaning) for r in model.roles)
    problems += _role_rules(roles, where, doc.line_of(("roles",)))
    if len(model.dark_neutrals) != len(model.neutrals):
        problems.append(Problem(where, doc.line_of(("dark_neutrals",)), "dark_neutrals",
                                f"expected one dark neutral for each of the {len(model.neutrals)} neutrals, "
                                f"found {len(model.dark_neutrals)}"))
    if PAPER not in model.neutrals:
        problems.append(Problem(where, doc.line_of(("neutrals",)), "neutrals",
                                f"expected the figures' background {PAPER} among the neutrals"))
    return Palette(roles, tuple(model.neutrals), path, tuple(model.dark_neutrals))


def _role_rules(roles: tuple[Role, ...], where: str, line: int | None) -> list[Problem]:
    """Every role once, no other role, no colour shared by two roles."""
    names = [role.name for role in roles]
    problems = [Problem(where, line, "roles", f"role {name!r} is missing") for name in ROLE_NAMES if name not in names]
    for name in sorted(set(names)):
        if names.count(name) > 1:
            problems.append(Problem(where, line, "roles", f"role {name!r} is defined twice"))
        if name not in ROLE_NAMES:
            problems.append(Problem(where, line, "roles",
                                    f"unknown role {name!r}; the roles are {', '.join(ROLE_NAMES)}"))
    for shades in ([role.hex for role in roles], [role.dark for role in roles]):
        problems += [Problem(where, line, "roles", f"colour {colour} is used by two roles")
                     for colour in sorted({h for h in shades if shades.count(h) > 1})]
    return problems


# --- what the build makes of it -------------------------------------------------------------------


def role_color(role: str) -> str:
    """The colour of a role, "#rrggbb"; KeyError naming the known roles if there is no such role."""
    return load_palette().role(role).hex


def role_label(role: str) -> str:
    """What a legend calls the role ("rollout engine")."""
    return load_palette().role(role).label


def rc_params(layout: Layout | None = None) -> dict[RcKeyType, Any]:
    """matplotlib rcParams: the project's figures/base.mplstyle plus a colour cycle of its palette's roles."""
    import matplotlib as mpl
    from cycler import cycler

    layout = _active if layout is None else layout
    params = dict(mpl.rc_params_from_file(str(layout.style_file), use_default_template=False, fail_on_error=True))
    params["axes.prop_cycle"] = cycler(color=[role.hex for role in load_palette(layout.palette_yml).roles])
    return params


def css_variables(palette: Palette | None = None) -> str:
    """A CSS file body: one custom property per role (`--role-trainer: #6c91f0;`) for the site, with the
    dark shades in the dark scheme (Material's `slate`, which its toggle sets)."""
    palette = load_palette() if palette is None else palette
    # Only what load_palette allows reaches the CSS (a known role, a #rrggbb colour): a value that could end a
    # declaration or a rule never gets here; a Palette made otherwise is a bug, and nothing is written.
    for role in palette.roles:
        if role.name not in ROLE_NAMES or not (HEX.fullmatch(role.hex) and HEX.fullmatch(role.dark)):
            raise ValueError(f"role {role.name!r} ({role.hex!r}, {role.dark!r}) is not one palette.yml allows")
    lines = [f"/* Generated from {palette.path.parent.name}/{palette.path.name} by build_tools/drawing/palette.py. */",
             ":root {"]
    lines += [f"  --role-{role.name}: {role.hex};" for role in palette.roles]
    lines += ["}", '[data-md-color-scheme="slate"] {']
    lines += [f"  --role-{role.name}: {role.dark};" for role in palette.roles]
    lines.append("}")
    return "\n".join(lines) + "\n"


def legend_rows(palette: Palette | None = None) -> list[tuple[str, str, str]]:
    """(role, hex, meaning) for the front-matter legend, in palette order."""
    return [(role.name, role.hex, role.meaning) for role in (load_palette() if palette is None else palette).roles]


def legend_sentences(palette: Palette | None = None) -> list[str]:
    """The palette legend as sentences, in palette order ("blue is the trainer: the FSDP actor, ...")."""
    return [role.sentence for role in (load_palette() if palette is None else palette).roles]
