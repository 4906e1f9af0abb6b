"""Stage 3: read the figure blocks of the chapters and resolve cross references to their numbers.

A figure block is a fenced code block with the info string `figure` in a chapter `docs/NN-name.md`; it
holds YAML (fields in docs/README.md). Its number is the chapter's NN and its position in the chapter.
A cross reference is a link with empty text to the figure's id, `[](#fig-dead-engine)`, in any page.
Every problem of every chapter is collected, then ChapterError is raised once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from . import _figure_modules
from ._exceptions import ChapterError, Problem
from ._types import FigureBlock
from ._yaml import load_yaml
from .checks import validate
from .checks._numbers import masked_spans

CHAPTER = re.compile(r"^(?P<n>\d{2})-[a-z0-9-]+\.md$")
FIGURE_ID = re.compile(r"^fig-[a-z0-9-]+$")
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)")
REFERENCE = re.compile(r"\[\]\(#(?P<id>fig-[a-z0-9-]*)\)")
REQUIRED = ("id", "module", "runs", "claim", "checks")
OPTIONAL = ("alt", "tables", "options", "prose")


@dataclass(frozen=True)
class Fenced:
    info: str
    line: int  # of the opening fence, 1-based
    body: str


def fenced_blocks(text: str) -> Iterator[Fenced]:
    """Every fenced code block of a Markdown text (a fence closes with the same character, at least as long)."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence = match["fence"]
        end = i + 1
        while end < len(lines) and not re.match(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[end]):
            end += 1
        yield Fenced(match["info"], i + 1, "\n".join(lines[i + 1:end]))
        i = end + 1


def _lines_with_fences(text: str) -> Iterator[tuple[int, str, bool]]:
    """(line number, line, whether it is prose) for every line; fenced code blocks are not prose."""
    inside: str | None = None
    for number, line in enumerate(text.split("\n"), start=1):
        match = FENCE.match(line)
        if inside is None and match:
            inside = match["fence"]
            yield number, line, False
        elif inside is not None:
            if re.match(rf"^ {{0,3}}{re.escape(inside[0])}{{{len(inside)},}}\s*$", line):
                inside = None
            yield number, line, False
        else:
            yield number, line, True


def _prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of every line outside fenced code blocks."""
    return ((number, line) for number, line, prose in _lines_with_fences(text) if prose)


def _outside_code_spans(line: str) -> list[tuple[bool, str]]:
    """The line cut into (is_code, text) parts, so references shown as `code` are left alone."""
    parts: list[tuple[bool, str]] = []
    for i, part in enumerate(re.split(r"(`+[^`]*`+)", line)):
        parts.append((i % 2 == 1, part))
    return parts


# --- reading ------------------------------------------------------------------------------------


def read_blocks(docs_dir: Path, figures_dir: Path) -> list[FigureBlock]:
    """The figure blocks of every chapter, in chapter order; ChapterError lists every problem found."""
    problems: list[Problem] = []
    blocks: list[FigureBlock] = []
    tables_dir = docs_dir / "data"
    for path in sorted(docs_dir.glob("*.md")):
        shown = f"{docs_dir.name}/{path.name}"
        text = path.read_text(encoding="utf-8")
        chapter = CHAPTER.match(path.name)
        position = 0
        for fenced in fenced_blocks(text):
            if fenced.info != "figure":
                continue
            if not chapter:
                problems.append(Problem(shown, fenced.line, None,
                                        "a figure block belongs in a chapter, a file named docs/NN-name.md"))
                continue
            position += 1
            number = f"{int(chapter['n'])}.{position}"
            block = _block(fenced, shown, number, figures_dir, tables_dir, problems)
            if block is not None:
                blocks.append(block)
    problems += _duplicate_ids(blocks)
    problems += check_references(docs_dir, blocks)
    if problems:
        raise ChapterError(problems)
    return blocks


def _block(fenced: Fenced, shown: str, number: str, figures_dir: Path, tables_dir: Path,
           problems: list[Problem]) -> FigureBlock | None:
    """One block from its YAML; problems are appended (each names the file, the line and the field)."""
    try:
        data = load_yaml(fenced.body)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = fenced.line + 1 + mark.line if mark is not None else fenced.line
        reason = getattr(error, "problem", None) or str(error).splitlines()[0]
        problems.append(Problem(shown, line, None, f"figure {number}: bad YAML: {reason}"))
        return None
    if not isinstance(data, dict):
        problems.append(Problem(shown, fenced.line, None, f"figure {number}: expected a mapping of fields"))
        return None
    before = len(problems)

    def bad(field: str, message: str) -> None:
        problems.append(Problem(shown, fenced.line, field, message))

    for key in data:
        if key not in REQUIRED + OPTIONAL:
            bad(str(key), f"unknown field; a figure block has {', '.join(REQUIRED + OPTIONAL)}")
    for key in REQUIRED:
        if key not in data:
            bad(key, "missing (required)")
    _check_fields(data, bad, figures_dir, tables_dir)
    if len(problems) > before:
        return None
    block = FigureBlock(
        id=data["id"], number=number, chapter_file=shown, line=fenced.line, module=data["module"],
        runs=tuple(data["runs"]), claim=data["claim"].strip(), checks=(), alt=data.get("alt") or "",
        tables=tuple(data.get("tables") or ()), options=dict(data.get("options") or {}),
        prose=tuple(data.get("prose") or ()))
    checks = []
    for index, raw in enumerate(data["checks"], start=1):
        params, messages = validate(raw, block, index, block.prose)
        problems += [Problem(shown, fenced.line, f"figure {number}", message) for message in messages]
        checks.append(params)
    for phrase in block.prose:
        if not masked_spans(block.claim, [phrase]):
            bad("prose", f"{phrase!r} is not part of the claim")
    if len(problems) > before:
        return None
    return replace(block, checks=tuple(checks))


def _check_fields(data: dict[str, Any], bad: Any, figures_dir: Path, tables_dir: Path) -> None:
    """Types and values of the block's own fields (the checks are validated by the registry)."""
    if "id" in data and not (isinstance(data["id"], str) and FIGURE_ID.match(data["id"])):
        bad("id", f"expected fig-<lower-case letters, digits, dashes>, got {data['id']!r}")
    module = data.get("module")
    if "module" in data:  # only figures/<module>.py, with the options it declares (_figure_modules)
        problem = _figure_modules.module_problem(figures_dir, module)
        if problem:
            bad("module", problem)
        elif isinstance(data.get("options"), dict):
            for field, message in _figure_modules.option_problems(figures_dir, module, data["options"]):
                bad(field, message)
    if "runs" in data and not (isinstance(data["runs"], list) and all(isinstance(r, str) for r in data["runs"])):
        bad("runs", f"expected a list of run ids, got {data['runs']!r}")
    if "claim" in data and not (isinstance(data["claim"], str) and data["claim"].strip()):
        bad("claim", "expected the caption as a non-empty string")
    if "checks" in data and not (isinstance(data["checks"], list) and data["checks"]):
        bad("checks", "expected a non-empty list of checks")
    for key in ("tables", "prose"):
        value = data.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            bad(key, f"expected a list of strings, got {value!r}")
    for table in data.get("tables") or []:
        if isinstance(table, str) and not (tables_dir / f"{table}.yml").is_file():
            bad("tables", f"unknown table {table!r}: there is no docs/data/{table}.yml")
    if data.get("alt") is not None and not isinstance(data["alt"], str):
        bad("alt", f"expected a string, got {data['alt']!r}")
    if data.get("options") is not None and not isinstance(data["options"], dict):
        bad("options", f"expected a mapping, got {data['options']!r}")


def _duplicate_ids(blocks: list[FigureBlock]) -> list[Problem]:
    seen: dict[str, FigureBlock] = {}
    problems = []
    for block in blocks:
        if block.id in seen:
            first = seen[block.id]
            problems.append(Problem(block.chapter_file, block.line, "id",
                                    f"duplicate id {block.id}: figure {first.number} "
                                    f"({first.chapter_file}:{first.line}) has it too"))
        else:
            seen[block.id] = block
    return problems


def load_tables(data_dir: Path) -> dict[str, Any]:
    """The data tables docs/data/*.yml, by file stem; ChapterError if one is not valid YAML."""
    tables: dict[str, Any] = {}
    problems = []
    for path in sorted(data_dir.glob("*.yml")) if data_dir.is_dir() else []:
        try:
            tables[path.stem] = load_yaml(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            problems.append(Problem(f"{data_dir.parent.name}/{data_dir.name}/{path.name}",
                                    mark.line + 1 if mark else None, None, f"bad YAML: {error}"))
    if problems:
        raise ChapterError(problems)
    return tables


# --- cross references ---------------------------------------------------------------------------


def check_references(docs_dir: Path, blocks: list[FigureBlock]) -> list[Problem]:
    """A problem for every reference, in any page, to an id no figure block has."""
    known = {block.id for block in blocks}
    problems = []
    for path in sorted(docs_dir.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        for number, line in _prose_lines(text):
            for is_code, part in _outside_code_spans(line):
                for match in [] if is_code else REFERENCE.finditer(part):
                    if match["id"] not in known:
                        problems.append(Problem(f"{docs_dir.name}/{path.name}", number, None,
                                                f"reference to #{match['id']}: no figure block has this id"))
    return problems


def resolve_references(markdown: str, blocks: list[FigureBlock], source_file: str) -> str:
    """`[](#fig-x)` -> `[Figure 1.3](01-step.md#fig-x)`; on the figure's own page just `#fig-x`.

    source_file is the page the text comes from (docs/02-memory.md or 02-memory.md). References inside
    code are left as written; an unknown id is left too (read_blocks has reported it).
    """
    by_id = {block.id: block for block in blocks}
    page = Path(source_file).name

    def link(match: re.Match[str]) -> str:
        block = by_id.get(match["id"])
        if block is None:
            return match.group(0)
        target = Path(block.chapter_file).name
        href = f"#{block.id}" if target == page else f"{target}#{block.id}"
        return f"[Figure {block.number}]({href})"

    out = [
        "".join(part if is_code else REFERENCE.sub(link, part) for is_code, part in _outside_code_spans(line))
        if prose else line
        for _, line, prose in _lines_with_fences(markdown)
    ]
    return "\n".join(out)
