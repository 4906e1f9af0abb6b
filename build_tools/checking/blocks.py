"""Stage 3: read the figure blocks of the chapters and resolve cross references to their numbers.

A figure block is a fenced code block with the info string `figure` in a chapter `docs/NN-name.md`; it
holds YAML (fields in docs/README.md). Its number is the chapter's NN and its position in the chapter.
A cross reference is a link with empty text to the figure's id, `[](#fig-dead-engine)`, in any page.
Each page's links and what it loads stay inside the manual (`boundary.chapter_problems`).
Every problem of every chapter is collected, then ChapterError is raised once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from build_tools.checking.checks import validate
from build_tools.checking.checks._numbers import masked_spans
from build_tools.core._exceptions import ChapterError, InputProblem, Problem
from build_tools.core._files import check_tree, read_text
from build_tools.core._layout import CHAPTER, INDEX_PAGE
from build_tools.core._types import FigureBlock
from build_tools.core._yaml import parse_yaml
from build_tools.drawing import _figure_modules
from build_tools.ingest import schemas, schemas_manual
from build_tools.website import boundary

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
    last: int  # of the closing fence, 1-based; the text's last line when no fence closes it

    def in_chapter(self, line: int | None) -> int:
        """A line of the block's body (1-based) as a line of the file; the opening fence when none is known."""
        return self.line + line if line is not None else self.line


def closes(fence: str, line: str) -> bool:
    """Whether the line closes a block opened by fence: the same character, at least as many, nothing after."""
    return re.match(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", line) is not None


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
        while end < len(lines) and not closes(fence, lines[end]):
            end += 1
        yield Fenced(match["info"], i + 1, "\n".join(lines[i + 1:end]), min(end, len(lines) - 1) + 1)
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
            if closes(inside, line):
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


def _svg_problems(docs_dir: Path) -> list[Problem]:
    """Every SVG file of docs/ held against the allowlist (boundary.svg_file_problems): the site serves it as it
    is, and a page may show it."""
    problems: list[Problem] = []
    for path in sorted(docs_dir.rglob("*")):
        if path.suffix.lower() == ".svg" and path.is_file():
            folder = path.parent.relative_to(docs_dir).as_posix()
            problems += boundary.svg_file_problems(f"{docs_dir.name}/{path.relative_to(docs_dir).as_posix()}",
                                                   path.read_bytes(), "" if folder == "." else folder)
    return problems


# --- reading ------------------------------------------------------------------------------------


def read_blocks(docs_dir: Path, figures_dir: Path, *, pages: bool = True) -> list[FigureBlock]:
    """The figure blocks of every chapter, in chapter order; ChapterError lists every problem found. `pages=False`
    leaves out what each chapter's page may hold (its HTML rendered as mkdocs renders it): `compare` reads only the
    blocks, and runs where the manual's build (mkdocs) is not installed."""
    problems: list[Problem] = []
    blocks: list[FigureBlock] = []
    tables_dir = docs_dir / "data"
    problems += check_tree(docs_dir, docs_dir.resolve().parent)
    if problems:  # a link out of the project, a FIFO: nothing under docs/ is read
        raise ChapterError(problems)
    render = boundary.markdown_renderer(docs_dir.parent / "mkdocs.yml") if pages else None
    for path in sorted(docs_dir.glob("*.md")):
        shown = f"{docs_dir.name}/{path.name}"
        try:
            text = read_text(path)
        except InputProblem as error:
            problems.append(error.problem)
            continue
        chapter = CHAPTER.match(path.name)
        if render is not None and (chapter or path.name == INDEX_PAGE):  # a page of the site: what it links to
            problems += boundary.chapter_problems(shown, text, render)
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
    problems += _svg_problems(docs_dir)
    problems += _duplicate_ids(blocks)
    problems += check_references(docs_dir, blocks)
    if problems:
        raise ChapterError(problems)
    return blocks


def _block(fenced: Fenced, shown: str, number: str, figures_dir: Path, tables_dir: Path,
           problems: list[Problem]) -> FigureBlock | None:
    """One block from its YAML; problems are appended (each names the file, the line and the field)."""
    try:
        doc = parse_yaml(fenced.body, shown)
    except InputProblem as error:
        found = error.problem
        problems.append(Problem(shown, fenced.in_chapter(found.line), found.field, f"figure {number}: {found.message}"))
        return None
    data = doc.value
    if not isinstance(data, dict):
        problems.append(Problem(shown, fenced.line, None, f"figure {number}: expected a mapping of fields"))
        return None
    before = len(problems)

    def line_of(loc: tuple[Any, ...]) -> int:
        return fenced.in_chapter(doc.line_of(loc))

    def bad(field: str, message: str) -> None:
        problems.append(Problem(shown, line_of(tuple(field.split("."))), field, message))

    problems += schemas.validate(schemas_manual.FigureBlockYaml, data, shown, line_of)[1]
    _check_files(data, bad, figures_dir, tables_dir)
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


def _check_files(data: dict[str, Any], bad: Any, figures_dir: Path, tables_dir: Path) -> None:
    """The module and tables a block names exist (its fields' types are the schema's)."""
    module = data.get("module")
    # only figures/<module>.py, with the options it declares (a name the schema refused is reported once)
    if isinstance(module, str) and re.fullmatch(r"[a-z_][a-z0-9_]*", module):
        problem = _figure_modules.module_problem(figures_dir, module)
        if problem:
            bad("module", problem)
        elif isinstance(data.get("options"), dict):
            for field, message in _figure_modules.option_problems(figures_dir, module, data["options"]):
                bad(field, message)
    tables = data.get("tables")
    for table in tables if isinstance(tables, list) else []:
        if isinstance(table, str) and table.isidentifier() and not (tables_dir / f"{table}.yml").is_file():
            bad("tables", f"unknown table {table!r}: there is no docs/data/{table}.yml")


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
        where = f"{data_dir.parent.name}/{data_dir.name}/{path.name}"
        try:
            value, found = read_table(path, where)
        except InputProblem as error:
            problems.append(error.problem)
            continue
        problems += found
        tables[path.stem] = value
    if problems:
        raise ChapterError(problems)
    return tables


def read_table(path: Path, where: str) -> tuple[Any, list[Problem]]:
    """One data table and the problems its schema finds in it (metrics, troubleshooting; a new table is plain
    data); InputProblem when it is not valid YAML. The one reader of docs/data/*.yml."""
    doc = parse_yaml(read_text(path), where)
    schema = schemas_manual.DATA_TABLES.get(path.stem)
    return doc.value, schemas.validate(schema, doc.value, where, doc.line_of)[1] if schema is not None else []


# --- cross references ---------------------------------------------------------------------------


def check_references(docs_dir: Path, blocks: list[FigureBlock]) -> list[Problem]:
    """A problem for every reference, in any page, to an id no figure block has."""
    known = {block.id for block in blocks}
    problems = []
    for path in sorted(docs_dir.glob("*.md")):
        try:
            text = read_text(path)
        except InputProblem:
            continue  # reported by read_blocks
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
