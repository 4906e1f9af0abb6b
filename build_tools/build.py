"""The whole build as one ordered function: runs -> summaries -> claims -> figures -> pages -> site."""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path

from . import _uptodate
from . import blocks as blocks_stage
from . import claims as claims_stage
from ._exceptions import EditionFileError, Problem, RunDataError
from ._layout import Layout
from ._lock import build_lock
from ._progress import Progress
from ._staging import clean_leftovers, staging
from ._types import BuildResult, Stamp
from .stamp import check_commits, load_stamp
from .summary import Summariser, summarise_runs


def _stamp_or_problems(layout: Layout) -> tuple[Stamp | None, list[Problem]]:
    try:
        return load_stamp(layout.edition_yml), []
    except EditionFileError as error:
        return None, list(error.problems)


def check(root: Path, *, quiet: bool = False, summariser: Summariser | None = None) -> BuildResult:
    """Load, summarise and check every claim; no figures, no site (`make check`)."""
    return build(root, site=False, quiet=quiet, summariser=summariser)


def build(root: Path, *, site: bool = True, jobs: int | None = None, quiet: bool = False,
          summariser: Summariser | None = None) -> BuildResult:
    """Build the manual from the runs under root. Raises a ManualError subclass on bad input or a false claim.

    One build at a time per project folder: a second one waits for the lock (build/.lock), saying so.
    """
    layout = Layout(root.resolve())
    with build_lock(layout.build, _say_waiting):
        clean_leftovers(layout.root)
        return _build(layout, site=site, jobs=jobs, quiet=quiet, summariser=summariser)


def _say_waiting(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _build(layout: Layout, *, site: bool, jobs: int | None, quiet: bool,
           summariser: Summariser | None) -> BuildResult:
    from .edition_pages import published

    progress = Progress(quiet=quiet, stages=(7 if published() else 6) if site else 3)
    if site:  # `make check` leaves site/ alone: a site built from these same inputs stays current
        _uptodate.forget(layout)

    # 1-2. Load and summarise every run; an unchanged run comes from the cache. No run may end after the
    #      edition's date, and every run must be made with the Miles build the edition's stamp names.
    stamp, stamp_problems = _stamp_or_problems(layout)
    warnings: list[str] = []
    with progress.stage("Loading and summarising runs"):
        try:
            summaries = summarise_runs(layout.runs, layout.cache / "summaries", warnings=warnings,
                                       latest=dt.date.fromisoformat(stamp.date) if stamp else None,
                                       summariser=summariser)
        except RunDataError as error:  # the edition file's problems are listed with the runs'
            raise RunDataError([*error.problems, *stamp_problems]) from None
    if stamp is None:
        raise EditionFileError(stamp_problems)
    for warning in warnings + [w for summary in summaries.values() for w in summary.warnings]:
        progress.warn(warning)
    check_commits({run_id: s.config for run_id, s in summaries.items()}, stamp)

    # 3. Read the figure blocks of the chapters and the data tables they read.
    with progress.stage("Reading figure blocks"):
        blocks = blocks_stage.read_blocks(layout.docs, layout.figures_src)
        tables = blocks_stage.load_tables(layout.data)

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

    figure_warnings: list[str] = []
    with staging(layout.pages) as pages:
        # 5. Draw the figures (cached; in parallel), then check that they use only palette colours.
        with progress.stage("Drawing figures"):
            result.figures = draw.draw_figures(blocks, summaries, tables, pages / "figures", layout.cache / "figures",
                                               jobs=jobs, warnings=figure_warnings, layout=layout)

        for warning in figure_warnings:
            progress.warn(warning)

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
