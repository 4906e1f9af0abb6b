"""The role palette (figures/palette.yml): loaded and validated once, then turned into the matplotlib
style, the site's CSS variables and the front-matter legend.

Figure code asks for a role (`role_color("trainer")`), never for a colour.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError

from ._exceptions import FigureError, Problem, display_path

FIGURES_DIR = Path(__file__).resolve().parent.parent / "figures"
PALETTE_FILE = FIGURES_DIR / "palette.yml"
STYLE_FILE = FIGURES_DIR / "base.mplstyle"

# The seven roles of the manual, in legend order; palette.yml must define exactly these.
ROLE_NAMES = ("trainer", "engine", "data", "lifecycle", "durable", "failure", "outside")
ROLE_FIELDS = ("name", "colour_name", "phrase", "hex", "meaning")
HEX = re.compile(r"^#[0-9a-f]{6}$")


@dataclass(frozen=True)
class Role:
    name: str  # what figure code asks for
    colour_name: str  # the word for the colour ("violet")
    phrase: str  # the role in a sentence ("the rollout engine")
    hex: str  # "#rrggbb", lower case
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

    def role(self, name: str) -> Role:
        for role in self.roles:
            if role.name == name:
                return role
        known = ", ".join(r.name for r in self.roles)
        raise KeyError(f"no role {name!r} in {display_path(PALETTE_FILE)} (roles: {known})")

    @property
    def allowed(self) -> frozenset[str]:
        """Every colour a figure may use."""
        return frozenset(r.hex for r in self.roles) | frozenset(self.neutrals)


# --- loading ----------------------------------------------------------------------------------


def load_palette(path: Path = PALETTE_FILE) -> Palette:
    """Read and validate palette.yml; FigureError lists every problem with its line and field."""
    return _load_cached(path.resolve(), path.stat().st_mtime_ns if path.exists() else 0)


@lru_cache(maxsize=8)
def _load_cached(path: Path, _mtime: int) -> Palette:
    problems: list[Problem] = []
    where = display_path(path)
    document = _read_yaml(path, where, problems)
    palette = _validate(document, where, problems) if not problems else None
    if problems or palette is None:
        raise FigureError(problems)
    return palette


def _read_yaml(path: Path, where: str, problems: list[Problem]) -> Any:
    if not path.is_file():
        problems.append(Problem(where, None, None, "file not found"))
        return None
    try:
        return YAML(typ="rt").load(path.read_text(encoding="utf-8"))
    except MarkedYAMLError as error:
        line = error.problem_mark.line + 1 if error.problem_mark else None
        problems.append(Problem(where, line, None, f"not valid YAML: {error.problem}"))
        return None


def _line(node: Any, key: str | int | None = None) -> int | None:
    """1-based line of a key (or item) of a ruamel mapping or sequence, when known."""
    lc = getattr(node, "lc", None)
    if lc is None:
        return None
    try:
        if key is None:
            return lc.line + 1
        return (lc.key(key) if isinstance(key, str) else lc.item(key))[0] + 1
    except (KeyError, IndexError, TypeError):
        return lc.line + 1


def _validate(document: Any, where: str, problems: list[Problem]) -> Palette | None:
    if not isinstance(document, dict):
        problems.append(Problem(where, None, None, "expected a mapping with `roles` and `neutrals`"))
        return None
    roles = _validate_roles(document, where, problems)
    neutrals = _validate_neutrals(document, where, problems)
    return Palette(tuple(roles), tuple(neutrals))


def _validate_roles(document: dict, where: str, problems: list[Problem]) -> list[Role]:
    entries = document.get("roles")
    if not isinstance(entries, list):
        problems.append(Problem(where, _line(document, "roles"), "roles", "expected a list of roles"))
        return []
    roles: list[Role] = []
    for index, entry in enumerate(entries):
        role = _validate_role(entry, index, where, _line(entries, index), problems)
        if role is not None:
            roles.append(role)
    # Names of every entry, valid or not, so that one bad field is reported once, not also as a missing role.
    names = [str(entry.get("name")) for entry in entries if isinstance(entry, dict) and entry.get("name")]
    for name in ROLE_NAMES:
        if name not in names:
            problems.append(Problem(where, _line(document, "roles"), "roles", f"role {name!r} is missing"))
    for name in sorted(set(names)):
        if names.count(name) > 1:
            problems.append(Problem(where, _line(document, "roles"), "roles", f"role {name!r} is defined twice"))
        if name not in ROLE_NAMES:
            problems.append(Problem(where, _line(document, "roles"), "roles",
                                    f"unknown role {name!r}; the roles are {', '.join(ROLE_NAMES)}"))
    hexes = [role.hex for role in roles]
    for colour in sorted({h for h in hexes if hexes.count(h) > 1}):
        problems.append(Problem(where, _line(document, "roles"), "roles", f"colour {colour} is used by two roles"))
    return roles


def _validate_role(entry: Any, index: int, where: str, line: int | None, problems: list[Problem]) -> Role | None:
    if not isinstance(entry, dict):
        problems.append(Problem(where, line, f"roles[{index}]", f"expected a mapping with {', '.join(ROLE_FIELDS)}"))
        return None
    before = len(problems)
    for key in ROLE_FIELDS:
        value = entry.get(key)
        if not isinstance(value, str) or not value.strip():
            problems.append(Problem(where, _line(entry, key) if key in entry else line, f"roles[{index}].{key}",
                                    f"expected a non-empty string, got {_shown(value)}"))
    hex_value = entry.get("hex")
    if isinstance(hex_value, str) and hex_value.strip() and not HEX.match(hex_value.lower()):
        problems.append(Problem(where, _line(entry, "hex"), f"roles[{index}].hex",
                                f"expected a colour as #rrggbb, got {hex_value!r}"))
    if len(problems) > before:
        return None
    return Role(*(str(entry[key]) if key != "hex" else str(entry[key]).lower() for key in ROLE_FIELDS))


def _validate_neutrals(document: dict, where: str, problems: list[Problem]) -> list[str]:
    entries = document.get("neutrals")
    if not isinstance(entries, list) or not entries:
        problems.append(Problem(where, _line(document, "neutrals") if "neutrals" in document else None,
                                "neutrals", "expected a list of grey colours as #rrggbb"))
        return []
    neutrals = []
    for index, value in enumerate(entries):
        text = value.lower() if isinstance(value, str) else ""
        if not HEX.match(text):
            problems.append(Problem(where, _line(entries, index), f"neutrals[{index}]",
                                    f"expected a colour as #rrggbb, got {_shown(value)}"))
        elif not text[1:3] == text[3:5] == text[5:7]:
            problems.append(Problem(where, _line(entries, index), f"neutrals[{index}]",
                                    f"expected a grey (equal red, green and blue), got {value!r}"))
        else:
            neutrals.append(text)
    return neutrals


def _shown(value: Any) -> str:
    return "nothing" if value is None else repr(value) if isinstance(value, str) else type(value).__name__


# --- what the build makes of it -------------------------------------------------------------------


def role_color(role: str) -> str:
    """The colour of a role, "#rrggbb"; KeyError naming the known roles if there is no such role."""
    return load_palette().role(role).hex


def role_label(role: str) -> str:
    """What a legend calls the role ("rollout engine")."""
    return load_palette().role(role).label


def rc_params() -> dict[str, Any]:
    """matplotlib rcParams: figures/base.mplstyle plus a colour cycle of the roles."""
    import matplotlib as mpl
    from cycler import cycler

    params = dict(mpl.rc_params_from_file(str(STYLE_FILE), use_default_template=False, fail_on_error=True))
    params["axes.prop_cycle"] = cycler(color=[role.hex for role in load_palette().roles])
    return params


def css_variables() -> str:
    """A CSS file body: one custom property per role (`--role-trainer: #6c91f0;`) for the site."""
    palette = load_palette()
    lines = [f"/* Generated from {PALETTE_FILE.parent.name}/{PALETTE_FILE.name} by build_tools/palette.py. */",
             ":root {"]
    lines += [f"  --role-{role.name}: {role.hex};" for role in palette.roles]
    lines.append("}")
    return "\n".join(lines) + "\n"


def legend_rows() -> list[tuple[str, str, str]]:
    """(role, hex, meaning) for the front-matter legend, in palette order."""
    return [(role.name, role.hex, role.meaning) for role in load_palette().roles]


def legend_sentences() -> list[str]:
    """The palette legend as sentences, in palette order ("blue is the trainer: the FSDP actor, ...")."""
    return [role.sentence for role in load_palette().roles]
