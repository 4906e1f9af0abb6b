"""`make compare RUN=...`: a reader's own run against the manual's ranges, row by row of the Metrics page.

The reader's run is a Miles dashboard dump (or a run folder of runs/). Each row of the Metrics page is
computed for it with the same statistic, and set beside the manual's cell with a verdict. The manual's
ranges hold for its setup, so the setup facts that differ are listed first. Then each claim whose runs share
the reader's setup is checked on the reader's run alone, with its margin (`claims_on`): the checks that
compare the manual's runs with one another, or count them, are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from build_tools.checking import blocks as blocks_stage
from build_tools.checking import contract
from build_tools.commands.watch.judge import outside_envelope
from build_tools.core._exceptions import ChapterError, Problem, RunDataError, display_path
from build_tools.core._layout import Layout
from build_tools.core._numbers import fmt
from build_tools.core._types import FigureBlock, Margin, RunSummary
from build_tools.ingest.axes import join_of_summary
from build_tools.ingest.sources._common import RENAMED
from build_tools.pages import metrics_table
from build_tools.pages.wording import number
from build_tools.readers import SETUP, config_value, events_of, gpus_of, table_of
from build_tools.summarise import metric_rows
from build_tools.summarise.summary import Wanted, summarise, summarise_runs


@dataclass(frozen=True)
class ClaimOnYours:
    """A claim of the manual checked on the reader's run: holds or not, and its closest check's margin."""

    number: str
    says: str  # the words of its closest (or first failing) check
    holds: bool | None  # None: the reader's run lacks what the claim reads
    detail: str  # the margin, the failure, or what is missing
    margin: Margin | None = None


@dataclass(frozen=True)
class Comparison:
    metric: str
    ours: str  # the Metrics page's cell
    yours: str  # the same statistic over the reader's run
    verdict: str
    holds: bool | None = None  # by the contract's rule; None where it cannot be judged (not logged, another setup)


def load_reader_run(path: Path) -> RunSummary:
    """A run folder (with run.yaml), a dashboard dump, or a bare path holding any Miles output, summarised."""
    from build_tools.ingest import load, sources
    from build_tools.ingest.load import readable

    problems: list[Problem] = []
    with readable(path):
        if not (path / "run.yaml").is_file() and not (path / "meta.json").is_file() and not sources.classify(path, []):
            expected = ("expected a Miles dashboard dump (with meta.json) or a run folder (with run.yaml), or a log, "
                        "a wandb export, TensorBoard event files, a CI history record or --dump-details event files")
            raise RunDataError([Problem(display_path(path), None, None, expected)])
        run, _ = load.load_path(path, problems)
    summary = summarise(run, problems)
    if not problems and summary.steps.empty:  # no step logged a metric: every row would say "not logged"
        problems.append(load.nothing_read(path, "metric"))
    for old, new in RENAMED.items():  # a dump of an older Miles: the key under its name of today
        if old in summary.steps.columns and new not in summary.steps.columns:
            summary.steps = summary.steps.rename(columns={old: new})
    if problems:
        raise RunDataError(problems)
    return summary


def compare(layout: Layout, yours: RunSummary) -> tuple[list[str], list[Comparison]]:
    """The setup facts that differ, and one comparison per row of the Metrics page that has a value."""
    spec = metrics_table.load_spec(layout.metrics_yml)
    # Only the runs the Metrics page reads are summarised; the others are validated, as `make` does.
    ours = _our_runs(layout, metrics_table.reads(spec))
    sets = spec.get("run_sets") or {}
    rows = [row for table in spec["tables"] if table.get("column") for row in table.get("rows") or []]
    intro_runs = metric_rows.select(ours, sets.get(spec.get("intro_runs")) or {})
    # The contract's items (site/contract.json's ranges, built from the same runs): their bands and envelopes.
    items = {item.id: item for item in contract.range_items(spec, ours)}
    comparisons = [_compare_row(row, metric_rows.select(ours, sets.get(row.get("runs")) or {}), yours, ours, spec,
                                items.get(str(row.get("metric")))) for row in rows]
    return _setup_differences(intro_runs, yours), [_within_envelope(c, items, yours) for c in comparisons
                                                   if c is not None]


def _within_envelope(row: Comparison, items: Mapping[str, contract.RangeItem], yours: RunSummary) -> Comparison:
    """The contract's rule, as `watch` applies it: a run outside a row's envelope is not judged by its range."""
    item = items.get(row.metric)
    why = outside_envelope(item.envelope, yours.config) if item is not None else None
    if why is None or row.verdict.startswith("cannot compare"):
        return row
    return Comparison(row.metric, row.ours, row.yours, f"not applicable: {why}", None)


def _our_runs(layout: Layout, by_config: Any, ids: frozenset[str] = frozenset()) -> dict[str, RunSummary]:
    return summarise_runs(layout.runs, layout.cache / "summaries", wanted=Wanted(ids, by_config=by_config))


# Checks that compare the manual's runs with one another, or count them (the contract's one_run says it too).
ACROSS_RUNS = contract.ACROSS_RUNS


def claims_on(layout: Layout, yours: RunSummary) -> list[ClaimOnYours]:
    """Each claim whose runs all share the reader's setup (SETUP's facts), checked on the reader's run alone."""
    from build_tools.checking.checks import evaluate, validate

    try:
        blocks = blocks_stage.read_blocks(layout.docs, layout.figures_src, pages=False)  # make check's job
        tables = blocks_stage.load_tables(layout.data)
    except ChapterError:
        return []  # the chapters' problems are `make check`'s to report
    ours = _our_runs(layout, None, frozenset(run for block in blocks for run in block.runs))
    found = []
    for block in blocks:
        if not block.runs or not all(r in ours and not _setup_differences([ours[r]], yours) for r in block.runs):
            continue
        mine = FigureBlock(**{**block.__dict__, "runs": (yours.run_id,), "checks": ()})
        # A check of some of the block's runs (`runs:`) is about those runs, not about any run of the setup.
        checks = [c for c in block.checks if c["check"] not in ACROSS_RUNS and not c.get("runs")]
        results = [(c, evaluate(validate(c, mine, i)[0], mine, {yours.run_id: yours}, tables, block.prose))
                   for i, c in enumerate(checks, start=1)]
        if results:
            found.append(_judged(block, results))
    return found


def why_not_on(layout: Layout, yours: RunSummary, checked: set[str]) -> dict[str, str]:
    """Figure number -> why `claims_on` does not check the claim on the reader's run (figures not in `checked`)."""
    try:
        blocks = blocks_stage.read_blocks(layout.docs, layout.figures_src)
    except ChapterError:
        return {}
    ours = _our_runs(layout, None, frozenset(run for block in blocks for run in block.runs))
    reasons = {}
    for block in blocks:
        if block.number in checked or not block.checks:
            continue
        differs = sorted({line for run in block.runs if run in ours for line in _setup_differences([ours[run]], yours)})
        if differs:
            reasons[block.number] = f"its runs' setup is not yours ({differs[0]}): not judged on your run"
        else:
            names = sorted({str(check["check"]) for check in block.checks})
            reasons[block.number] = (f"none of its checks ({', '.join(names)}) judges one run alone: they set the "
                                     "manual's runs against one another, or read a table: nothing in it to judge on "
                                     "one run")
    return reasons


def _judged(block: FigureBlock, results: list[tuple[dict[str, Any], Any]]) -> ClaimOnYours:
    from build_tools.checking.checks._margin import worst
    from build_tools.checking.claims import says

    missing = [(c, r) for c, r in results if r.status == "fail" and r.observed is None]
    failing = [(c, r) for c, r in results if r.status == "fail" and r.observed is not None]
    if missing:
        return ClaimOnYours(block.number, says(block, missing[0][0]), None, missing[0][1].message)
    if failing:
        return ClaimOnYours(block.number, says(block, failing[0][0]), False, failing[0][1].message)
    closest = worst(r.margin for _, r in results)
    chosen = next(((c, r) for c, r in results if closest is not None and r.margin is closest), results[0])
    return ClaimOnYours(block.number, says(block, chosen[0]), True, _margin_text(closest), closest)


def _margin_text(margin: Margin | None) -> str:
    if margin is None:
        return "no number to hold it to"
    unit = f" {margin.unit}" if margin.unit else ""
    fraction = f", fraction {fmt(margin.fraction)}" if margin.fraction is not None else ""
    return f"headroom {fmt(margin.headroom)}{unit} (edge {fmt(margin.edge)}{fraction})"


def _setup_differences(ours: list[RunSummary], yours: RunSummary) -> list[str]:
    lines = []
    for what, dotted in SETUP:
        our_values = sorted({str(config_value(run, dotted, "not recorded")) for run in ours})
        your_value = str(config_value(yours, dotted, "not recorded"))
        if your_value not in our_values:
            lines.append(f"{what}: yours is {your_value}, the manual's runs have {' or '.join(our_values)}")
    for what, count in (("GPUs", _gpu_count), ("nodes", _node_count)):
        our_counts = sorted({count(run) for run in ours if count(run)})
        if count(yours) and our_counts and count(yours) not in our_counts:
            lines.append(f"{what}: yours is {count(yours)}, the manual's runs have "
                         f"{' or '.join(str(c) for c in our_counts)}")
    return lines


def _gpu_count(run: RunSummary) -> int:
    return len(gpus_of(run))


def _node_count(run: RunSummary) -> int:
    return len({node for node, _ in gpus_of(run)})


def verdict(setup: list[str], comparisons: list[Comparison]) -> str:
    """One line: how many rows hold as in the manual's runs, differ, or cannot be compared."""
    cannot = sum(c.verdict.startswith("cannot compare") for c in comparisons)
    same = sum(c.holds is True for c in comparisons)
    other_setup = sum(c.verdict.startswith("not applicable") for c in comparisons)
    differ = sum(c.holds is False for c in comparisons)
    words = [f"{same} of {len(comparisons)} rows as in the manual's runs", f"{differ} differ"]
    if other_setup:
        words.append(f"{other_setup} not applicable to your setup")
    if cannot:
        words.append(f"{cannot} not logged by your run")
    setup_words = (f"; your setup differs in {len(setup)} fact{'s' if len(setup) != 1 else ''}, so the ranges may "
                   "not apply") if setup else ""
    return "Verdict: " + ", ".join(words) + setup_words


def _compare_row(row: Mapping[str, Any], our_runs: list[RunSummary], yours: RunSummary,
                 ours: Mapping[str, RunSummary], spec: Mapping[str, Any],
                 item: contract.RangeItem | None) -> Comparison | None:
    """The row's statistic of your run beside the manual's cell, judged by the contract's rule (contract.RULES):
    low <= value <= high with the item's exact bounds, so that `compare`, `watch` and any reader of contract.json
    give one verdict."""
    metric = str(row.get("metric"))
    if not our_runs or not any(metric in table_of(run, metric).columns for run in our_runs):
        return None
    # The manual's cell, exactly as the Metrics page computes it.
    cell = metrics_table.build_tables({"run_sets": spec.get("run_sets"), "tables": [
        {"title": "", "column": "value", "rows": [row]}]}, ours, "docs/data/metrics.yml", {})
    our_cell = cell[0].rows[0].value or ""
    table = table_of(yours, metric)  # the metric's own step axis
    if metric not in table.columns or table[metric].dropna().empty:
        return Comparison(metric, our_cell, "not logged", "cannot compare: your run does not log it")
    decimals = int(row.get("decimals", 2))
    mine = metric_rows.row_values([yours], row)
    stat = row.get("stat")
    if item is None:
        return None
    band = (item.low, item.high)
    if stat == "range":
        shown = f"{number(mine.min(), decimals)} to {number(mine.max(), decimals)}"
        return _judged_row(metric, our_cell, shown, _range_verdict(mine, *band))
    if stat == "all_zero":
        nonzero = int((mine != 0).sum())
        return _judged_row(metric, our_cell, "0 at every step" if not nonzero else
                           f"not 0 at {nonzero} of {len(mine)} steps",
                           "as in the manual's runs" if not nonzero else "differs: the manual's runs log 0")
    if stat == "first_step":
        logged = table[metric].dropna()
        first = float(logged.iloc[0])
        return _judged_row(metric, our_cell, f"{number(first, decimals)} at step {int(logged.index[0])}",
                           "as in a healthy run" if _holds(first, band) else "differs: a healthy run starts at 0")
    if stat in ("median", "median_head"):
        median = float(mine.median())
        ratio = f"{median / item.expected:.2f} times the manual's median" if item.expected else "the manual's is 0"
        middle = f"the middle half of the manual's steps, {number(item.low, decimals)} to {number(item.high, decimals)}"
        verdict = f"inside {middle} ({ratio})" if _holds(median, band) else f"differs: outside {middle} ({ratio})"
        return _judged_row(metric, our_cell, f"{number(median, decimals)} s median of {len(mine)} steps", verdict)
    if stat == "every_step":
        present, total = int(table[metric].notna().sum()), len(table)
        return _judged_row(metric, our_cell, f"logged in {present} of {total} steps",
                           "as in the manual's runs" if _holds(present / total, band) else "missing at some steps")
    return None


def _holds(value: float, band: tuple[float, float]) -> bool:
    return band[0] <= value <= band[1]  # contract.RULES["bounds"]: as written, no rounding


def _judged_row(metric: str, ours: str, yours: str, verdict: str) -> Comparison:
    return Comparison(metric, ours, yours, verdict, holds=verdict.startswith(("inside", "as in")))


def _range_verdict(values: pd.Series, low: float, high: float) -> str:
    """Every value against the contract's exact bounds (the shown range widened by half its last digit)."""
    below, above = int((values < low).sum()), int((values > high).sum())
    if not below and not above:
        return "inside the manual's range"
    parts = [f"{count} {side}" for count, side in ((below, "below"), (above, "above")) if count]
    return f"{' and '.join(parts)} the manual's range, of {len(values)} steps"


def claims_lines(claims: list[ClaimOnYours]) -> list[str]:
    """The section of the claims whose runs share your setup: does your run support each, with what margin."""
    if not claims:
        return ["", "No claim of the manual reads runs of your setup: none to check on your run."]
    held = sum(c.holds is True for c in claims)
    lines = ["", f"The claims whose runs share your setup, checked on your run alone ({held} of {len(claims)} "
                 "supported):"]
    words = {True: "supported", False: "not supported", None: "cannot check"}
    lines += [f'  fig {c.number} "{c.says}": {words[c.holds]}, {c.detail}' for c in claims]
    return lines


def report(setup: list[str], comparisons: list[Comparison], yours: RunSummary,
           claims: list[ClaimOnYours] | None = None) -> list[str]:
    """The lines `make compare` prints."""
    steps = f"{len(yours.steps)} step" + ("" if len(yours.steps) == 1 else "s")
    lines = [f"Your run {yours.run_id} ({steps}) against the manual's Metrics page"]
    if setup:
        lines += ["", "Your setup differs from the one the manual's ranges hold for:"]
        lines += [f"  {line}" for line in setup]
    if yours.axes:  # each row reads its metric on its own step axis
        lines += ["", f"Your run's steps by axis: {len(yours.steps)} rollouts (rollout/step), "
                      + ", ".join(f"{len(frame)} {axis}" for axis, frame in yours.axes.items())
                      + f"; {join_of_summary(yours.facts, yours.config).sentence()}"]
    if events_of(yours, "heat_pause", required=False).empty:
        lines += ["", "Your run has no heat-guard record: every step counts as clean for the time rows."]
    width = max(len(c.metric) for c in comparisons) if comparisons else 0
    lines.append("")
    for c in comparisons:
        lines += [f"{c.metric:<{width}}  yours: {c.yours}", f"{'':<{width}}  ours:  {c.ours}",
                  f"{'':<{width}}  -> {c.verdict}"]
    lines += claims_lines(claims) if claims is not None else []
    lines += ["", verdict(setup, comparisons)]
    return lines
