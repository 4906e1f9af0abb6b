"""The figure module a figure block names, and the options it declares: only `figures/<name>.py`, read as text.

A block names its module by a bare name; the module is the file `figures/<name>.py`, and nothing else: not a
helper (`_common`, `__init__`), not a dotted or relative name, not a file that is a link leading out of
`figures/`, not a module found elsewhere on Python's path. A module declares the options a block may set,
`OPTIONS = {"split": "number"}` (name -> kind), beside its `draw(runs, tables, options=None)`; a block that
sets any other option, or a value of another kind, is an error. Both are read from the file's syntax tree,
so nothing of a figure module runs while the chapters are read.
"""

from __future__ import annotations

import ast
import difflib
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# The kinds of value an option can declare, and what a block must give for each.
KINDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "number": ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)),
    "integer": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "text": ("a string", lambda v: isinstance(v, str)),
    "flag": ("true or false", lambda v: isinstance(v, bool)),
}


def module_file(figures_dir: Path, name: Any) -> Path | None:
    """figures/<name>.py when name names a figure module there (the file itself inside figures/), else None."""
    if not (isinstance(name, str) and NAME.match(name)):
        return None
    path = figures_dir / f"{name}.py"
    try:
        inside = path.is_file() and path.resolve().parent == figures_dir.resolve()
    except OSError:  # a link loop
        return None
    return path if inside else None


def module_problem(figures_dir: Path, name: Any) -> str | None:
    """Why a block's `module:` names no figure module, in words; None when it does."""
    if not (isinstance(name, str) and re.match(r"^[a-z_][a-z0-9_]*$", name)):
        return f"expected a module name under figures/, got {name!r}"
    if name.startswith("_"):
        return f"{name!r} is a helper of figures/, not a figure module"
    path = figures_dir / f"{name}.py"
    if not path.is_file() and not path.is_symlink():
        return f"unknown module {name!r}: there is no figures/{name}.py"
    if module_file(figures_dir, name) is None:
        return f"figures/{name}.py is not a file in figures/ (a link leading out of it, or not a file)"
    try:
        tree = _tree(path)
    except (SyntaxError, ValueError, UnicodeDecodeError) as error:
        return f"figures/{name}.py cannot be read: {error}"
    if not any(isinstance(node, ast.FunctionDef) and node.name == "draw" for node in tree.body):
        return f"figures/{name}.py has no draw(runs, tables) function"
    return None


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=path.name)


def declared_options(path: Path) -> dict[str, str]:
    """The module's OPTIONS (option name -> kind), {} when it declares none; ValueError when it is malformed."""
    for node in _tree(path).body:
        if not isinstance(node, ast.Assign | ast.AnnAssign):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(target, ast.Name) and target.id == "OPTIONS" for target in targets):
            value = ast.literal_eval(node.value) if node.value is not None else None
            if not (isinstance(value, dict) and all(isinstance(k, str) and v in KINDS for k, v in value.items())):
                raise ValueError(f"OPTIONS must map option names to one of {', '.join(KINDS)}")
            return dict(value)
    return {}


def option_problems(figures_dir: Path, name: str, options: Mapping[Any, Any]) -> list[tuple[str, str]]:
    """(field, message) for every option of a block the module does not declare or that has the wrong kind."""
    path = module_file(figures_dir, name)
    if path is None:
        return []  # module_problem has said why
    shown = f"figures/{name}.py"
    try:
        declared = declared_options(path)
    except (SyntaxError, ValueError) as error:
        return [("options", f"{shown}: {error}")]
    problems = []
    for key, value in options.items():
        if key not in declared:
            close = difflib.get_close_matches(str(key), list(declared), n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            takes = f"it takes {', '.join(sorted(declared))}" if declared else "it takes no option"
            problems.append((f"options.{key}", f"{shown} declares no option {str(key)!r} ({hint}{takes})"))
            continue
        what, accepts = KINDS[declared[key]]
        if not accepts(value):
            problems.append((f"options.{key}", f"expected {what}, got {value!r}"))
    return problems
