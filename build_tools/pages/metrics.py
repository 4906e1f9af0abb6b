"""The Metrics page (chapter 6, 06-metrics.md): templates/metrics.md.j2 filled with the tables of
docs/data/metrics.yml, each cell computed from the runs (build_tools/pages/metrics_table.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

from build_tools.checking import contract, miles_guidance
from build_tools.checking.contract_odcs import ODCS_FILE
from build_tools.pages import metrics_table
from build_tools.pages.wording import provenance
from build_tools.summarise import metric_rows


def render_metrics(env: jinja2.Environment, spec: Mapping[str, Any], where: str,
                   summaries: Mapping[str, metric_rows.Run], chapters: Mapping[int, str],
                   runs_dir: Path | None = None, guidance: Any = None, cache: Path | None = None,
                   digests: Mapping[str, str] | None = None) -> str:
    """The page from the spec (docs/data/metrics.yml, shown as where in its problems) and the runs: summarised, or
    validated for the rows that read only their facts (metrics_table.summarises); runs_dir, the runs' folder. Under
    a table, a note for each row whose values go past a line Miles draws (guidance: docs/data/miles_guidance.yml),
    citing it. cache: where Miles' advisor's answers are kept across builds (none for an edition); digests, each
    run's input hash as the build's walk of runs/ found it (an unchanged dump is not walked again)."""
    context = {f"chapter_{number}": name for number, name in chapters.items()}
    tables = metrics_table.build_tables(spec, summaries, where, context, runs_dir)
    intro = metrics_table.intro(spec, summaries, where)
    source = provenance({run.run_id: run.config for run in metrics_table.runs_read(spec, summaries)})
    folder = miles_guidance.RunsFolder(runs_dir, digests or {}) if runs_dir is not None else None
    notes = miles_guidance.notes_by_table(spec, summaries, guidance, folder, cache)
    read = {run.run_id: run for run in metrics_table.runs_read(spec, summaries)}
    cannot = miles_guidance.cannot_apply(read, guidance, folder, cache)
    return env.get_template("metrics.md.j2").render(tables=tables, intro=intro, source=source.source(), notes=notes,
                                                    cannot_apply=cannot, contract_file=contract.CONTRACT_FILE,
                                                    schema_file=contract.SCHEMA_FILE, odcs_file=ODCS_FILE)
