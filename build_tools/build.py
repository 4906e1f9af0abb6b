"""The whole build as one ordered function: runs -> summaries -> claims -> figures -> pages -> site."""

from __future__ import annotations

import datetime as dt
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from build_tools.checking import blocks as blocks_stage
from build_tools.checking import claims as claims_stage
from build_tools.core._exceptions import (
    ChapterError,
    EditionFileError,
    MetricsSpecError,
    Problem,
    RunDataError,
    display_path,
)
from build_tools.core._layout import Layout
from build_tools.core._lock import build_lock
from build_tools.core._progress import Progress
from build_tools.core._settings import Settings
from build_tools.core._staging import clean_leftovers, staging, temporary_prefix, write_atomic
from build_tools.core._types import BuildResult, FigureBlock, RunsRead, Stamp, ValidatedRun
from build_tools.editions.stamp import check_commits, load_stamp
from build_tools.summarise.summary import Wanted, summarise_runs

from .store import uptodate


def _stamp_or_problems(layout: Layout) -> tuple[Stamp | None, list[Problem]]:
    try:
        return load_stamp(layout.edition_yml), []
    except EditionFileError as error:
        return None, list(error.problems)


GUIDANCE_FILE = "miles_guidance.txt"  # build/: the last check's warnings of Miles' lines, one a line


def _past_miles_lines(blocks: list[Any], tables: dict[str, Any], runs: dict[str, Any], runs_dir: Path,
                      read: RunsRead) -> list[str]:
    """A warning for each Metrics row and each claim whose runs Miles would flag by one of its rules
    (docs/data/miles_guidance.yml, its advisor run over each run's dump): Miles' advice, which the manual's runs
    do not follow."""
    from build_tools.checking import miles_guidance

    rules = miles_guidance.rules_of(tables.get(miles_guidance.TABLE))
    spec = tables.get("metrics")
    folder = miles_guidance.RunsFolder(runs_dir, read.digests)
    found = miles_guidance.of_metrics_rows(spec, runs, rules, folder) if isinstance(spec, dict) else []
    found += miles_guidance.of_claims(blocks, runs, rules, folder, rows=list(found))
    return [disagreement.warning() for disagreement in found]


def check(root: Path, settings: Settings | None = None) -> BuildResult:
    """Load, summarise and check every claim; no figures, no site (`make check`). Only the runs a figure or
    check reads are summarised, every other one validated, unless settings.all_runs (`make check ALL=1`)."""
    return build(root, replace(settings or Settings(), site=False))


def build(root: Path, settings: Settings | None = None) -> BuildResult:
    """Build the manual from the runs under root, as settings say. Raises a ManualError subclass on bad input or a
    false claim.

    One build at a time per project folder: a second one waits for the lock (build/.lock), saying so.
    """
    layout = Layout(root.resolve())
    with build_lock(layout.build, _say_waiting):
        clean_leftovers(layout.root)
        return _build(layout, settings or Settings())


def _say_waiting(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextmanager
def _state(layout: Layout, settings: Settings) -> Iterator[Path]:
    """Where this build keeps and reuses its state: build/cache/, or, for a build that trusts no earlier state
    (an edition's), a folder of this build's own, removed after it (summaries are then not cached at all)."""
    if settings.trust_state:
        yield layout.cache
        return
    layout.build.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=temporary_prefix("fresh-cache"), dir=layout.build) as fresh:
        yield Path(fresh)


def _build(layout: Layout, settings: Settings) -> BuildResult:
    with _state(layout, settings) as cache:
        return _stages(layout, settings, cache)


def _stages(layout: Layout, settings: Settings, cache: Path) -> BuildResult:
    site = settings.site
    proving = settings.prove or settings.edition  # every published edition shows its claims able to fail
    progress = Progress(quiet=settings.quiet, stages=((6 if settings.edition else 5) if site else 2) + proving,
                        shown=settings.warnings_shown)
    if site:  # `make check` leaves site/ alone: a site built from these same inputs stays current
        uptodate.forget(layout)
    uptodate.forget_check(layout)  # the claims reports are written again

    # 1-3. Read the figure blocks of the chapters and the data tables, first: they say which runs are read.
    #    Load and summarise those, validate the others; an unchanged run comes from the cache. No run may end
    #    after the edition's date, and every run must be made with the Miles build the edition's stamp names.
    #    A chapter's problems are reported after the runs' (as ever); then no run needs its summary.
    stamp, stamp_problems = _stamp_or_problems(layout)
    warnings: list[str] = []
    validated: dict[str, ValidatedRun] = {}
    read = RunsRead()  # what the walk of runs/ found: the inputs' key recorded at the end is made from it
    with progress.stage("Loading and summarising runs"):
        try:
            blocks = blocks_stage.read_blocks(layout.docs, layout.figures_src)
            tables = blocks_stage.load_tables(layout.data)
            chapter_error = None
        except ChapterError as error:
            blocks, tables, chapter_error = [], {}, error
        wanted = None if settings.all_runs else _wanted(layout, blocks, tables)
        if site:  # the drawing's workers get ready while the runs are summarised
            from build_tools.drawing import draw

            draw.start_workers_early(blocks, cache / "figures", settings.jobs, also=[summarise_runs.__module__])
        try:
            summaries = summarise_runs(layout.runs, cache / "summaries" if settings.trust_state else None,
                                       warnings=warnings,
                                       latest=dt.date.fromisoformat(stamp.date) if stamp else None,
                                       summariser=settings.summariser, wanted=wanted, validated=validated,
                                       read=read, keep=settings.serving and settings.trust_state)
        except RunDataError as error:  # the edition file's problems are listed with the runs'
            raise RunDataError([*error.problems, *stamp_problems]) from None
    if stamp is None:
        raise EditionFileError(stamp_problems)
    warnings += [warning for summary in summaries.values() for warning in summary.warnings]
    # Where the manual's numbers go past Miles' own lines: shown by every check, a replayed one too (they are
    # advice, not a fault of the inputs, so they do not stop a check being recorded: cli reads GUIDANCE_FILE).
    advice = _past_miles_lines(blocks, tables, {**validated, **summaries}, layout.runs,
                               read if settings.trust_state else RunsRead())  # an edition's: every dump walked
    for warning in warnings:
        progress.warn(warning)
    configs = {run_id: summary.config for run_id, summary in summaries.items()}
    check_commits({**configs, **{run_id: run.config for run_id, run in validated.items()}}, stamp)
    if chapter_error is not None:
        raise chapter_error
    unread = _unread(layout, tables, validated)
    if site and unread:
        progress.note(skipped_line(unread, check=False))

    # 4. Check every claim against the summaries; write the reports, then fail once if any claim is false.
    with progress.stage("Checking claims"):
        verdicts = claims_stage.check_claims(blocks, summaries, tables)
        claims_stage.write_reports(verdicts, layout.build)
        write_atomic(layout.build / GUIDANCE_FILE, "".join(f"{line}\n" for line in advice).encode("utf-8"))
    for warning in advice:  # after the claims' stage, where a replayed check shows them (before the margins)
        progress.warn(warning)
    result = BuildResult(summaries, blocks, verdicts, report_lines=claims_stage.report_lines(verdicts),
                         validated=validated, warnings=warnings, runs_read=read, unread=unread)
    claims_stage.raise_if_failed(verdicts)
    _prove(layout, result, tables, progress if proving else None)
    if not site:
        _render_unseen(layout, result, tables)
        return result

    # The stages below write into a fresh folder that replaces the old one only when all succeeded,
    # so a failed build never leaves half-written pages or a half-built site.
    from build_tools.drawing import draw
    from build_tools.pages import render
    from build_tools.website import site as site_stage

    figure_warnings: list[str] = []
    with staging(layout.pages) as pages:
        # 5. Draw the figures (cached; in parallel), then check that they use only palette colours.
        with progress.stage("Drawing figures"):
            result.figures = draw.draw_figures(blocks, summaries, tables, pages / "figures",
                                               cache / "figures", jobs=settings.jobs,
                                               warnings=figure_warnings, layout=layout, epoch=settings.epoch,
                                               serving=settings.serving)

        for warning in figure_warnings:
            progress.warn(warning)

        # 6. Render the chapters, the Metrics page and the Index of figures from the data.
        with progress.stage("Rendering pages"):
            render.render_pages(layout, pages, result, tables, edition=settings.edition)

    # 7. Build the site with mkdocs --strict into a folder that replaces site/ only on success (site.py
    #    stages it); skipped, site/ kept, when the pages, config and library versions are the last build's.
    with progress.stage("Building the site"):
        site_stage.build_site(layout.mkdocs_yml, layout.pages, layout.site, settings)
    # A published edition's build also writes its print edition (site/<edition>.pdf), which its manifest lists.
    if settings.edition:
        from build_tools.website import pdf

        with progress.stage("Writing the print edition"):
            pdf.write_pdf(layout.pages, layout.site, epoch=settings.epoch)
    if settings.trust_state:  # an edition's build leaves no key: the next everyday build starts afresh
        uptodate.record(layout, settings, read)
    progress.done(f"Built the manual into {os.path.relpath(layout.site)}")
    return result


def _prove(layout: Layout, result: BuildResult, tables: Mapping[str, Any], progress: Progress | None) -> None:
    """Show every claim able to fail (checking/prove.py), when asked: build/proof.json, then stop (exit 3) naming a
    check no change fails. Unasked, no proof of earlier inputs is left behind."""
    from build_tools.checking import prove

    if progress is None:
        prove.forget(layout.build)
        return
    with progress.stage("Showing every claim able to fail"):
        proofs = prove.prove_claims(result.verdicts, result.summaries, dict(tables))
        prove.write_proof(proofs, layout.build)
    result.proven = (sum(1 for proof in proofs if proof.shown), len(proofs))
    result.proof_lines = prove.report_lines(proofs)
    prove.raise_if_unproven(proofs)


def _render_unseen(layout: Layout, result: BuildResult, tables: Mapping[str, Any]) -> None:
    """A check's verdict on the pages: every page rendered as the build renders it (the Metrics page's run sets
    and statistics, the chapters, the front matter), without figures, into a folder removed afterwards. What would
    stop the build's rendering stops the check, with the same lines: one verdict."""
    from build_tools.pages import render

    layout.build.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=temporary_prefix("check-pages"), dir=layout.build) as pages:
        render.render_pages(layout, Path(pages), result, tables)


def _wanted(layout: Layout, blocks: list[FigureBlock], tables: Mapping[str, Any]) -> Wanted:
    """The runs to summarise: those the figure blocks name (their checks read only those), and those the Metrics
    page's run sets select for a row that reads whole summaries (a median, a time on its clean steps), at a check
    as at a build: the check computes the page too. Every other run is validated, taking the facts of the metrics
    the page names (the other rows read those): the site built after a check validates nothing again. A Metrics
    spec that cannot be read selects none (the page reports it when it is rendered)."""
    ids = frozenset(run for block in blocks for run in block.runs)
    spec = _metrics_spec(layout, tables)
    if spec is None:
        return Wanted(ids)
    from build_tools.pages import metrics_table

    return Wanted(ids, metrics_table.summarises(spec), metrics_table.metrics_named(spec))


def _metrics_spec(layout: Layout, tables: Mapping[str, Any]) -> dict[str, Any] | None:
    from build_tools.pages import metrics_table

    try:
        return metrics_table.spec_of(tables, display_path(layout.metrics_yml))
    except MetricsSpecError:
        return None


def _unread(layout: Layout, tables: Mapping[str, Any], validated: Mapping[str, ValidatedRun]) -> int:
    """How many of the runs validated but not summarised nothing reads: not even the Metrics page, from their
    facts."""
    spec = _metrics_spec(layout, tables) if validated else None
    if spec is None:
        return len(validated)
    from build_tools.pages import metrics_table

    return len(validated) - len(metrics_table.runs_read(spec, validated))


def skipped_line(count: int, *, check: bool = True, by_facts: bool = False) -> str:
    """The one line that says how many runs were validated but not summarised, and how to summarise them;
    `by_facts`, of those the Metrics page reads only by the facts validation took."""
    runs, them = ("1 run", "it") if count == 1 else (f"{count} runs", "them")
    how = " (make check ALL=1 summarises every run)" if check else ""
    why = (f"only the Metrics page reads {them}, by the facts validation takes" if by_facts
           else f"no figure, check or table reads {them}")
    return f"{runs} validated but not summarised: {why}{how}"
