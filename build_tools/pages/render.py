"""Stage 6: render the pages the site is built from, into the staging folder `pages` (mkdocs' docs_dir).

Each kind of page is a module of build_tools/pages/: the chapters of docs/ (`chapters`, with the
troubleshooting table of `troubleshooting`), the Metrics page (`metrics`), the Index of figures
(`figure_index`), the front matter (`front_matter`), the claims' margins (`claim_health`), the edition's record
pages (`edition_pages`), and
`.manual.yml`, what the site stage adds to mkdocs.yml (`nav`). This module only puts them in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from build_tools.checking import contract, contract_odcs, miles_guidance
from build_tools.core._exceptions import display_path
from build_tools.core._layout import CLAIM_HEALTH_PAGE, FIGURES_PAGE, INDEX_PAGE, METRICS_PAGE
from build_tools.drawing import palette
from build_tools.editions.stamp import load_stamp
from build_tools.pages import chapters as chapter_pages
from build_tools.pages import claim_health, commands, edition_pages, figure_index, front_matter, metrics_table
from build_tools.pages import metrics as metrics_page
from build_tools.pages._common import environment, resolve
from build_tools.pages.nav import nav_order, numbered, write_page, write_site_settings
from build_tools.pages.wording import provenance
from build_tools.summarise import metric_rows

if TYPE_CHECKING:
    from build_tools.core._layout import Layout
    from build_tools.core._types import BuildResult


def render_pages(layout: Layout, pages: Path, result: BuildResult, tables: Mapping[str, Any], *,
                 edition: bool = False) -> None:
    """Write every page into pages/ (the runs' Miles commits were checked against the stamp in stage 2); `edition`
    for a published edition's build (the edition selector, the link to the print edition)."""
    stamp = load_stamp(layout.edition_yml)
    configs = {run_id: summary.config for run_id, summary in result.summaries.items()}
    env = environment(layout.templates)
    role_palette = palette.load_palette(layout.palette_yml)
    legend = palette.legend_sentences(role_palette)
    chapters = chapter_pages.chapter_files(layout.docs)
    figures = {figure.block_id: figure for figure in result.figures}
    verdicts = {verdict.block.id: verdict for verdict in result.verdicts}

    written = []
    # Every chapter's launch commands first, judged by Miles all at once (one process): a command Miles would
    # stop stops the rendering before any page is written.
    launches = {path: commands.chapter_launches(
        [block for block in result.blocks if Path(block.chapter_file).name == path.name], result.summaries)
        for path in chapters}
    commands.judge({display_path(path): found for path, found in launches.items()},
                   cache=None if edition else layout.cache / commands.VERDICTS)
    for path in chapters:
        section = commands.chapter_section(launches[path], result.summaries)
        text = chapter_pages.render_chapter(path, result.blocks, figures, verdicts, tables, configs, section)
        written.append(write_page(pages, path.name, numbered(text, path.name)))
    chapter_names = {int(path.name[:2]): path.name for path in chapters}  # "05-heat.md" is chapter 5
    where = display_path(layout.metrics_yml)
    spec = metrics_table.spec_of(tables, where)  # docs/data/metrics.yml, read once with the other tables
    # The runs the manual reads: those summarised, and those the Metrics page reads only the facts of.
    runs: dict[str, metric_rows.Run] = dict(sorted([*result.summaries.items(), *result.validated.items()]))
    read = dict(sorted([*result.summaries.items(),
                        *((run.run_id, run) for run in metrics_table.runs_read(spec, result.validated))]))
    metrics = metrics_page.render_metrics(env, spec, where, runs, chapter_names, layout.runs,
                                          tables.get("miles_guidance"),
                                          cache=None if edition else layout.cache / miles_guidance.ANSWERS,
                                          digests=None if edition or not result.runs_read else result.runs_read.digests)
    written.append(write_page(pages, METRICS_PAGE, numbered(metrics, METRICS_PAGE)))
    swatched = front_matter.legend_items(role_palette.roles, legend)  # the legend with its colours
    index_of_figures = figure_index.render_figure_index(env, result.blocks, result.summaries, swatched)
    written.append(write_page(pages, FIGURES_PAGE, index_of_figures))
    metrics_runs = [run.run_id for run in metrics_table.runs_read(spec, runs)]
    read_by = front_matter.readers(result.blocks, metrics_runs)
    links = {block.number: f"{Path(block.chapter_file).name}#{block.id}" for block in result.blocks}
    index = front_matter.render_index(layout.index_md, read, role_palette, written, read_by, stamp.edition,
                                      published=edition, links=links)
    written.insert(0, write_page(pages, INDEX_PAGE, resolve(index, result.blocks, Path(INDEX_PAGE))))
    health = claim_health.render_claim_health(result.verdicts, result.proven)
    written.append(write_page(pages, CLAIM_HEALTH_PAGE, health))
    # The ranges and claims as one machine-readable document (site/contract.json), for `watch` and other tools.
    guidance = miles_guidance.rules_of(tables.get(miles_guidance.TABLE))  # each range's Miles line, where it has one
    document = contract.build_contract(stamp, spec, runs, result.blocks, result.verdicts, guidance)
    contract.write_contract(pages, document)
    contract_odcs.write_odcs(pages, document)  # its ranges in the Open Data Contract Standard too
    for name, text in edition_pages.record_pages(stamp.edition).items():
        written.append(write_page(pages, name, text))
    (pages / "assets").mkdir(parents=True, exist_ok=True)
    (pages / "assets" / "palette.css").write_text(palette.css_variables(role_palette), encoding="utf-8")
    write_site_settings(pages, stamp, provenance({run_id: run.config for run_id, run in read.items()}),
                        nav_order(written), published=edition)
