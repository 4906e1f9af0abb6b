"""What several kinds of page share: the templates' environment, the machine the runs ran on, and figure
references resolved to their numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import jinja2

from build_tools.checking.blocks import resolve_references
from build_tools.core._escape import md_code, md_text
from build_tools.core._types import FigureBlock, RunSummary, ValidatedRun
from build_tools.pages.wording import join


def environment(templates: Path) -> jinja2.Environment:
    """The templates write Markdown: every value they print is escaped as Markdown text (`finalize`), unless
    it is already Markdown the build wrote (`_escape.Markdown`). HTML autoescape does not apply to Markdown."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templates), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, autoescape=False, finalize=md_text)
    env.filters["cell"] = md_text
    env.filters["md"] = md_text
    env.filters["metric"] = lambda text, code=True: md_code(text) if code else md_text(text)
    return env


def machine(summaries: Mapping[str, RunSummary | ValidatedRun], run_ids: Sequence[str] | None = None) -> str:
    ids = run_ids if run_ids is not None else list(summaries)
    names = sorted({str(summaries[r].config.get("hardware", {}).get("machine", "")) for r in ids if r in summaries})
    return join([name for name in names if name], "or") or "machine"


def resolve(text: str, blocks: Sequence[FigureBlock], path: Path) -> str:
    """`[](#fig-x)` in a page of docs/ as a link to the figure, with its number."""
    return resolve_references(text, list(blocks), f"docs/{path.name}")
