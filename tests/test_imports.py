"""The package's shape: no import circle inside build_tools, and only the command line reads its arguments.

The import graph is read from the source with `ast` (no library needed for forty lines): every import counts,
at module level or inside a function (it runs when the function does), and under `if TYPE_CHECKING:` too (a
type named from a later stage ties the two as much as a call does). A package's own `__init__` is not counted
as imported by its submodules: Python runs it first, and it may import them.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

from tests.conftest import ROOT, own_python_files

PACKAGE = ROOT / "build_tools"
# Modules that may read the command line: the CLI itself and make's door into it. The example generator is a
# tool of its own with its own arguments.
# miles_facts.extract: `make miles-facts`, a maintainer's tool, hands Miles' parser the argv train.py would see.
# checking.miles_guidance: `make miles-guidance`, another maintainer's tool, takes the checkout as its argument.
# miles_code.run: the process Miles' own code runs in hands Miles' parse_args the argv of each launch it judges.
READS_ARGUMENTS = {"build_tools.cli", "build_tools.commands._make", "build_tools.ingest.miles_facts.extract",
                   "build_tools.checking.miles_guidance", "build_tools.miles_code.run",
                   # gives Miles' parse_args the launch's words as train.py's argv, in Miles' own process
                   "build_tools.miles_code.write_dump"}
TOOLS = ("examples",)


def _modules(package: Path = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """Every module of the package by dotted name: (its file, whether it is a package's __init__)."""
    found = {}
    for path in own_python_files(package):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _imported(name: str, path: Path, is_package: bool, modules: dict[str, tuple[Path, bool]]) -> set[str]:
    """The modules of the package that module `name` imports anywhere in its source."""
    here = name.split(".") if is_package else name.split(".")[:-1]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module or ""
            # `from . import x` imports the module x when there is one, else a name of the package.
            targets.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names)
    return {target for target in targets if target in modules and target != name}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    modules = _modules(package)
    return {name: _imported(name, path, is_package, modules) for name, (path, is_package) in modules.items()}


def circle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of the graph as [a, b, ..., a], or [] when imports flow one way."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return list(reversed(error.args[1]))
    return []


def test_no_module_of_build_tools_imports_itself_back() -> None:
    found = circle(import_graph())
    assert not found, "import circle: " + " -> ".join(found)


def test_the_stage_values_import_no_stage() -> None:
    """_types.py holds what passes between the stages (RunSummary among them): it imports none of them, even
    for type hints, so any stage may import it."""
    assert {name for name in import_graph()["build_tools.core._types"] if name.startswith("build_tools.")} <= {
        "build_tools.core._exceptions"}


def test_a_circle_is_found_and_named(tmp_path: Path) -> None:
    # made-up modules (second, third): none is a real one, whose name a move of the package would rewrite
    package = tmp_path / "build_tools"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "build.py").write_text("from . import second\n", encoding="utf-8")
    (package / "second.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                       "    from .build import BuildResult\n", encoding="utf-8")
    (package / "third.py").write_text("def serve():\n    from build_tools.build import build\n", encoding="utf-8")
    graph = import_graph(package)
    assert graph["build_tools.third"] == {"build_tools.build"}
    assert circle(graph) in (["build_tools.build", "build_tools.second", "build_tools.build"],
                             ["build_tools.second", "build_tools.build", "build_tools.second"])


def test_only_the_command_line_reads_arguments() -> None:
    readers = []
    for name, (path, _) in _modules().items():
        if name in READS_ARGUMENTS or name.startswith(TOOLS):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Import) and any(alias.name == "argparse" for alias in node.names)
                    or isinstance(node, ast.Attribute) and node.attr == "argv"):
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not readers, f"these read the command line, which belongs in cli.py: {', '.join(readers)}"


def test_the_checks_read_the_metrics_rows_from_below_the_pages() -> None:
    """The contract and Miles' guidance are made from the data the Metrics page reads (summarise/metric_rows.py),
    not from the page's renderer: no module of checking/ imports one of pages/, a later stage."""
    graph = import_graph()
    upward = sorted(f"{name} -> {target}" for name, targets in graph.items() if name.startswith("build_tools.checking")
                    for target in targets if target.startswith("build_tools.pages"))
    assert not upward, upward
