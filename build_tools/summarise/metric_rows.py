"""The Metrics rows' runs and values: which runs a row of docs/data/metrics.yml reads, and what of them.

Below both the pages (pages/metrics_table.py renders the cells) and the checks (checking/contract.py turns the
rows into bands, checking/miles_guidance.py sets them against Miles' lines): each reads the rows through here,
so the contract is made from the data the page reads, not from the page's renderer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import pandas as pd

from build_tools.core._types import MetricFacts, RunSummary, ValidatedRun
from build_tools.ingest.schemas import same_setting
from build_tools.readers import dotted_field, steps_for, table_of, use_clean
from build_tools.summarise.summary import metric_facts

# A run the page reads: summarised, or only validated (its config and its metrics' facts).
Run = RunSummary | ValidatedRun
R = TypeVar("R", RunSummary, Run)


def select(summaries: Mapping[str, R], predicate: Mapping[str, Any]) -> list[R]:
    """The runs a run set names: any of its tags, and every `where` field equal."""
    return [summary for summary in summaries.values() if selects(predicate, summary.config)]


def selects(predicate: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    """Whether a run set names the run with this run.yaml."""
    tags = set(predicate.get("tags") or ())
    if tags and not tags & set(config.get("tags") or ()):
        return False
    return all(same_setting(dotted_field(config, key), value) for key, value in (predicate.get("where") or {}).items())


def valued_rows(spec: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """(table, row) of every row with a value ("Our range" / "Our value"), in the page's order."""
    return [(table, row) for table in spec["tables"] if table.get("column") for row in table.get("rows") or []]


def runs_of_row(spec: Mapping[str, Any], row: Mapping[str, Any], runs: Mapping[str, R]) -> list[R]:
    """The runs a row reads: those of its run set."""
    return select(runs, (spec.get("run_sets") or {}).get(row.get("runs")) or {})


def row_values(runs: list[RunSummary], row: Mapping[str, Any]) -> pd.Series:
    """Every value a row's statistic reads: the metric at every step, only clean steps for a time row (`compare`
    sets a reader's run beside them)."""
    metric = row["metric"]
    parts = [steps_for(run, metric)[metric].dropna() for run in runs if metric in table_of(run, metric).columns]
    return pd.concat(parts) if parts else pd.Series(dtype=float)


def facts_of(run: Run, metric: str, *, heat_rule: bool = False) -> MetricFacts:
    """What a statistic reads of a run's metric (summary.metric_facts): a summarised run's from its table, a
    validated run's as validation took them. With `heat_rule`, over the steps a value is read from under it (the
    clean steps only, for a time: readers.steps_for), which only a summary tells."""
    if isinstance(run, ValidatedRun):
        if (heat_rule and use_clean(metric)) or metric not in run.metrics:  # the build summarises such a run
            raise RuntimeError(f"{run.run_id} was only validated, without the facts a row reads of {metric}")
        return run.metrics[metric]
    table = steps_for(run, metric) if heat_rule else table_of(run, metric)
    values = table[metric].to_numpy(dtype=float) if metric in table.columns else None
    return metric_facts(table.index.to_numpy(), values, run.facts.get("non_finite", {}).get(metric, {}))
