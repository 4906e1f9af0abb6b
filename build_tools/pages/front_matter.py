"""The front matter (index.md): docs/index.md with its markers filled from the data: the contents, the
palette legend, where the data comes from, and the runs with the pages that read each."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from build_tools.core._escape import Markdown, html_text, md_code, md_text
from build_tools.core._layout import CHANGES_PAGE, CHAPTER, INDEX_PAGE, MANIFEST_PAGE, METRICS_PAGE, RECORD_PAGES
from build_tools.core._types import FigureBlock, RunSummary, ValidatedRun
from build_tools.drawing import palette
from build_tools.drawing.palette import Palette, Role
from build_tools.pages.wording import Provenance, join, provenance, words

from ._common import machine
from .nav import Page, nav_order

METRICS_READER = "the Metrics page"


def readers(blocks: Sequence[FigureBlock], metrics_runs: Sequence[str]) -> dict[str, list[str]]:
    """Which pages read each run: its figures' numbers, and the Metrics page."""
    found: dict[str, list[str]] = {}
    for block in blocks:
        for run in block.runs:
            found.setdefault(run, []).append(block.number)
    for run in metrics_runs:
        found.setdefault(run, []).append(METRICS_READER)
    return found


def render_index(path: Path, summaries: Mapping[str, RunSummary | ValidatedRun], role_palette: Palette,
                 pages: Sequence[Page], read_by: Mapping[str, Sequence[str]] | None = None,
                 edition: str = "", *, published: bool = False, links: Mapping[str, str] | None = None) -> str:
    """docs/index.md with its markers filled from the data and the palette; `summaries` every run the manual reads
    (summarised, or validated for the Metrics page); `published` for a published edition's build (it links its
    print edition)."""
    text = path.read_text(encoding="utf-8") if path.is_file() else "# Miles on one DGX Spark\n"
    source = provenance({run_id: summary.config for run_id, summary in summaries.items()})
    fills = {
        "<!-- contents -->": contents(pages) + (f"\n\n{edition_links(edition, published)}" if edition else ""),
        "<!-- palette-legend -->": legend_markup(role_palette.roles, palette.legend_sentences(role_palette)),
        "<!-- provenance -->": provenance_paragraph(source, machine(summaries), read_by),
        "<!-- runs-table -->": runs_table(summaries, read_by, links),
    }
    for mark, fill in fills.items():
        text = text.replace(mark, fill)
    return text


def contents(pages: Sequence[Page]) -> str:
    """The chapters as a numbered list (each item's number is its chapter's, from the file name; the title
    without the number its heading carries), then the pages that are not chapters."""
    ordered = [page for page in nav_order(pages) if page.name != INDEX_PAGE]
    items, others = [], []
    for page in ordered:
        match = CHAPTER.match(page.name)
        if match:
            number = int(match.group(1))
            title = re.sub(rf"^{number}\. ", "", page.title)
            items.append(f'<li value="{number}" markdown="span">[{md_text(title)}]({page.name})</li>')
        elif page.name not in RECORD_PAGES:
            others.append(f"[{md_text(page.title)}]({page.name})")
    parts = ['<ol class="manual-contents" markdown="block">', *items, "</ol>"] if items else []
    if others:
        parts += ["", " · ".join(others)]
    return "\n".join(parts)


def edition_links(edition: str, published: bool = False) -> str:
    """The home page's links to the edition's record and its print edition."""
    return (f"This is edition {edition}: [what it is built from]({MANIFEST_PAGE}) (the runs, "
            f"figures, claims and Metrics rows, with the hashes that let anyone rebuild and compare it) · "
            f"[what changed since the previous edition]({CHANGES_PAGE})"
            + (f' · <a href="{html_text(edition)}.pdf">the print edition (PDF)</a>' if published
               else "") + "\n{: .manual-web-only }")  # pages of the site only: the print edition leaves it out


def legend_markup(roles: Sequence[Role], lines: Sequence[str]) -> str:
    """The legend as a list with a swatch of each colour (the colour comes from the generated palette.css)."""
    return "\n".join(f"- {item}" for item in legend_items(roles, lines))


def legend_items(roles: Sequence[Role], lines: Sequence[str]) -> list[Markdown]:
    """Each sentence of the legend after a swatch of its colour (printed too: the print edition reads palette.css)."""
    return [Markdown(f'<span class="manual-swatch" style="background: var(--role-{role.name})"></span> '
                     f"{md_text(line)}") for role, line in zip(roles, lines, strict=True)]


def _measured_readers(source: Provenance, read_by: Mapping[str, Sequence[str]]) -> str:
    """Which pages read a measured run, so the home page never credits measurements to pages that read none."""
    pages = sorted({page for run in source.measured for page in read_by.get(run, ())},
                   key=lambda p: (p == METRICS_READER, [int(x) for x in p.split(".")] if p[0].isdigit() else []))
    figures = [page for page in pages if page != METRICS_READER]
    parts = []
    if figures:
        noun = "Figure" if len(figures) == 1 else "Figures"
        verb = "reads a measured run" if len(figures) == 1 else "read measured runs"
        parts.append(f"{noun} {join(figures)} {verb}; every other figure reads only synthesized examples.")
    else:
        parts.append("No figure reads a measured run: every figure reads only synthesized examples.")
    metrics_reads = METRICS_READER in pages
    parts.append("The Metrics page reads measured runs." if metrics_reads
                 else "The Metrics page reads only synthesized examples.")
    return " ".join(parts)


def provenance_paragraph(source: Provenance, machine: str,
                         read_by: Mapping[str, Sequence[str]] | None = None) -> str:
    """Where the data comes from, true of the runs the manual was built from (Markdown: the values escaped)."""
    machine = md_text(machine)
    readme = "Each run is a folder of `runs/`; `runs/README.md` in the project documents every field."
    if source.kind == "measured":
        return (f"Every number comes from measured runs: Miles runs on one {machine}, each with the dashboard "
                f"dump Miles wrote and the lab's own records of what Miles does not log. {readme}")
    if source.kind == "example":
        return ('!!! warning "Synthesized example runs, not measurements"\n\n'
                f"    Every run this manual was built from is a synthesized example, written by a seeded "
                f"generator that models Miles GRPO runs on one {machine} (`make examples`); none is a "
                "measurement. The figures and tables show how the manual reads a run, not what the machine "
                "did. A measured run replaces them: copy its dashboard dump into `runs/` with a `run.yaml` "
                f"that says `provenance: measured`.\n\n{readme}")
    which = f" {_measured_readers(source, read_by)}" if read_by is not None else ""
    return (f'!!! warning "Some runs are synthesized examples"\n\n    This manual reads '
            f"{source.counted()}; the synthesized ones are not measurements.{which} The run table below "
            f"says which run is which and what reads it.\n\n{readme}")


def runs_table(summaries: Mapping[str, RunSummary | ValidatedRun], read_by: Mapping[str, Sequence[str]] | None = None,
               links: Mapping[str, str] | None = None) -> str:
    """One row per run; under "Figures that read it", each figure's number links to the figure (`links`:
    number -> page#id) and the Metrics page to its page."""
    read_by = read_by if read_by is not None else {}
    links = links if links is not None else {}
    lines = ["| Run | What it is | Model | Steps | Data | Figures that read it |", "|---|---|---|---|---|---|"]
    for run_id, summary in summaries.items():
        config = summary.config
        kind = "measured" if config.get("provenance") == "measured" else "synthesized example"
        read = list(read_by.get(run_id, ()))
        pages = [_linked(page, links.get(page)) for page in read if page != METRICS_READER] + \
            [_linked("Metrics page", METRICS_PAGE) for page in read if page == METRICS_READER]
        model = config.get("model")
        lines.append(f"| {md_code(run_id)} | {md_text(config.get('title', ''))} | "
                     f"{md_text(model.get('name', '') if isinstance(model, Mapping) else '')} | "
                     f"{_steps(summary)} | {kind} | {', '.join(pages) or 'no page'} |")
    count = len(summaries)
    return f"The manual reads {words(count)} run{'s' if count != 1 else ''}:\n\n" + "\n".join(lines)


def _steps(run: RunSummary | ValidatedRun) -> int:
    """The rows of the run's per-step table (a validated run counted them as its summary would)."""
    return run.steps if isinstance(run, ValidatedRun) else len(run.steps)


def _linked(text: str, href: str | None) -> str:
    """A reader of a run as a link to it, when it has one; the text escaped."""
    return f"[{md_text(text)}]({href})" if href else md_text(text)
