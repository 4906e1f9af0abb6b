"""`make` installs what building imports, and nothing the tests alone need: every third-party module that
build_tools/ and figures/ import is installed by the project's own dependencies and its build extra (or what they
require), except the optional extras a command names (Ray for `--ray`, Zensical for ENGINE=zensical). The base
dependencies alone run the reader's commands (tests/test_reader_install.py installs them in a fresh venv)."""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib

from packaging.requirements import Requirement

from tests.conftest import ROOT, own_python_files

OPTIONAL = {"ray": "ray", "zensical": "zensical"}  # imported only by the command that asks for it
# `make miles-facts` imports Miles from the checkout it is given (build_tools/ingest/miles_facts/extract.py), never
# the build.
OPTIONAL["miles"] = "a Miles checkout"
# `make bench WHAT=serve` drives a browser with Playwright; its target installs the test extra that has it.
OPTIONAL["playwright"] = "playwright"


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _closure(names: set[str]) -> set[str]:
    """The distributions names require, transitively (the installed metadata's own requirements, no extras)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for requirement in map(Requirement, metadata.requires(name) or []):
            # Those that apply here: no extra, and markers this Python and platform meet (a backport's
            # `python_version < "3.10"` is not installed)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(_name(requirement.name))
    return seen


def _imported_modules() -> set[str]:
    found: set[str] = set()
    for folder in ("build_tools", "figures"):
        for path in own_python_files(ROOT / folder):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    found.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.add(node.module.split(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names and name not in ("build_tools", "figures")}


def _made(project: dict) -> set[str]:
    """What `make` installs: the base dependencies and the build extra, with what they require."""
    return _closure({_name(requirement) for requirement in [*project["dependencies"],
                                                            *project["optional-dependencies"]["build"]]})


def test_every_module_the_build_imports_is_installed_by_make() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    installed = _made(project)
    owners = metadata.packages_distributions()
    missing = {module: owners.get(module) for module in _imported_modules() - set(OPTIONAL)
               if not {d.lower().replace("_", "-") for d in owners.get(module, [])} & installed}
    assert missing == {}


def test_the_test_tools_are_not_installed_by_make() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    installed = _made(project)
    test_only = {_name(r) for r in project["optional-dependencies"]["test"]} - installed
    assert {"pytest", "playwright", "hypothesis", "ray", "mypy", "ruff"} <= test_only
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    # the build's set-up: the package and its build extra
    assert '$(UV) pip install --quiet --python $(PY) -c requirements.lock -e ".[build]"\n' in makefile


def test_the_reader_install_leaves_the_build_out() -> None:
    """The base dependencies (what `pip install` of the package brings) hold none of the build's own packages."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    base = _closure({_name(requirement) for requirement in project["dependencies"]})
    assert base.isdisjoint({"mkdocs", "mkdocs-material", "mike", "matplotlib", "weasyprint"})
