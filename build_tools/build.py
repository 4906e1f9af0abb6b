"""The whole build as one ordered function: runs -> summaries -> claims -> figures -> pages -> site."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from . import _uptodate
from . import blocks as blocks_stage
from . import claims as claims_stage
from ._layout import Layout
from ._progress import Progress
from ._staging import staging
from ._types import ClaimVerdict, DrawnFigure, FigureBlock
from .stamp import check_commits, load_stamp
from .summary import RunSummary, summarise_runs


@dataclass
class BuildResult:
    summaries: dict[str, RunSummary]
    blocks: list[FigureBlock]
    verdicts: list[ClaimVerdict]
    figures: list[DrawnFigure] = field(default_factory=list)
    report_lines: list[str] = field(default_factory=list)


def check(root: Path, *, quiet: bool = False) -> BuildResult:
    """Load, summarise and check every claim; no figures, no site (`make check`)."""
    return build(root, site=False, quiet=quiet)


def build(root: Path, *, site: bool = True, jobs: int | None = None, quiet: bool = False) -> BuildResult:
    """Build the manual from the runs under root. Raises a ManualError subclass on bad input or a false claim."""
    layout = Layout(root.resolve())
    from .edition_pages import published

    progress = Progress(quiet=quiet, stages=(7 if published() else 6) if site else 3)
    _uptodate.forget(layout)

    # 1-2. Load and summarise every run; an unchanged run comes from the cache.
    with progress.stage("Loading and summarising runs"):
        summaries = summarise_runs(layout.runs, layout.cache / "summaries")
    for summary in summaries.values():
        for warning in summary.warnings:
            progress.warn(warning)
    # Every run must be made with the Miles build the edition's stamp names; fail before the slow stages.
    check_commits({run_id: s.config for run_id, s in summaries.items()}, load_stamp(layout.edition_yml))

    # 3. Read the figure blocks of the chapters and the data tables they read.
    with progress.stage("Reading figure blocks"):
        blocks = blocks_stage.read_blocks(layout.docs, layout.figures_src)
        tables = blocks_stage.load_tables(layout.docs / "data")

    # 4. Check every claim against the summaries; write the reports, then fail once if any claim is false.
    with progress.stage("Checking claims"):
        verdicts = claims_stage.check_claims(blocks, summaries, tables)
        claims_stage.write_reports(verdicts, layout.build)
    result = BuildResult(summaries, blocks, verdicts, report_lines=claims_stage.report_lines(verdicts))
    claims_stage.raise_if_failed(verdicts)
    if not site:
        return result

    # The stages below write into a fresh folder that replaces the old one only when all succeeded,
    # so a failed build never leaves half-written pages or a half-built site.
    from . import draw, render
    from . import site as site_stage

    with staging(layout.pages) as pages:
        # 5. Draw the figures (cached; in parallel), then check that they use only palette colours.
        with progress.stage("Drawing figures"):
            result.figures = draw.draw_figures(blocks, summaries, tables, pages / "figures",
                                               layout.cache / "figures", jobs=jobs)

        # 6. Render the chapters, the Metrics page and the Index of figures from the data.
        with progress.stage("Rendering pages"):
            render.render_pages(layout, pages, result, tables)

    # 7. Build the site with mkdocs --strict into a folder that replaces site/ only on success (site.py
    #    stages it); skipped, site/ kept, when the pages, config and library versions are the last build's.
    with progress.stage("Building the site"):
        site_stage.build_site(layout.mkdocs_yml, layout.pages, layout.site)
    # A published edition's build also writes its print edition (site/<edition>.pdf), which its manifest lists.
    if published():
        from . import pdf

        with progress.stage("Writing the print edition"):
            pdf.write_pdf(layout.pages, layout.site)
    _uptodate.record(layout)
    progress.done(f"Built the manual into {os.path.relpath(layout.site)}")
    return result
