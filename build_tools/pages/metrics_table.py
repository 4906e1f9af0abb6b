"""The Metrics page's values: docs/data/metrics.yml says what each cell reads; this computes it from the runs.

Every "Our range" / "Our value" cell is a statistic of the runs, written at the row's rounding. Time rows read only
the steps no heat-guard pause touched (the heat rule of readers.steps_for).

Most statistics read only a few facts of each run's metric (its steps, how many values, the least, the greatest,
the zeros, the first: _types.MetricFacts, made by summary.metric_facts). A run only validated carries those facts
of every metric the page names (validation takes them: `metrics_named`), so a row whose run set is every run reads
a thousand runs without summarising one. A row that needs more (a median, or a time's values on the clean steps
only, which the per-step table's heat-guard column tells) reads summaries: `summarises` names the runs the build
must summarise for it.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_tools.checking.blocks import read_table
from build_tools.core._escape import Markdown, md_part, md_text
from build_tools.core._exceptions import InputProblem, MetricsSpecError, MissingValue, Problem, display_path
from build_tools.core._types import RunSummary, ValidatedRun
from build_tools.pages.wording import join, number, words
from build_tools.readers import dotted_field, non_finite_error, steps_for, table_of, use_clean
from build_tools.summarise.metric_rows import R, Run, facts_of, select, selects
from build_tools.summarise.summary import derived


@dataclass(frozen=True)
class Row:
    metric: str
    meaning: str
    value: str | None  # None in a table without ranges
    code: bool = True  # the metric is a metric name, shown as code


@dataclass(frozen=True)
class Table:
    title: str
    column: str | None
    rows: tuple[Row, ...]
    after: Markdown = Markdown("")  # the text under the table, escaped, with its links to pages


@dataclass(frozen=True)
class Intro:
    """The setup the ranges hold for, from the runs' configuration."""

    model: str
    dataset: str
    machine: str  # "one GB10"
    prompts: str
    answers: str
    max_tokens: str


def _counts(values: list[int]) -> str:
    """'48', or '12 to 48' when the runs differ."""
    low, high = min(values), max(values)
    return number(low) if low == high else f"{number(low)} to {number(high)}"


def _least(values: list[float | None]) -> float:
    """The least of the runs' values; NaN when none has one (as pandas' min of nothing)."""
    return min((value for value in values if value is not None), default=math.nan)


def _greatest(values: list[float | None]) -> float:
    return max((value for value in values if value is not None), default=math.nan)


def _stat_range(runs: list[Run], row: Mapping[str, Any]) -> tuple[bool, dict[str, str]]:
    facts = [facts_of(run, row["metric"], heat_rule=True) for run in runs]
    decimals = int(row.get("decimals", 2))
    return True, {"low": number(_least([f.low for f in facts]), decimals),
                  "high": number(_greatest([f.high for f in facts]), decimals),
                  "steps": _counts([f.steps for f in facts])}


def _stat_all_zero(runs: list[Run], row: Mapping[str, Any]) -> tuple[bool, dict[str, str]]:
    facts = [facts_of(run, row["metric"], heat_rule=True) for run in runs]
    _, shown = _stat_range(runs, row)
    return all(f.zeros == f.present for f in facts), shown


def _stat_first_step(runs: list[Run], row: Mapping[str, Any]) -> tuple[bool, dict[str, str]]:
    facts = [f for f in (facts_of(run, row["metric"]) for run in runs) if f.first is not None]
    values = [f.first for f in facts]
    steps = sorted({f.first_step for f in facts if f.first_step is not None})
    decimals = int(row.get("decimals", 2))
    return all(value == 0 for value in values), {"low": number(_least(values), decimals),
                                                "high": number(_greatest(values), decimals),
                                                "first": join(str(step) for step in steps)}


class TooManyRuns(ValueError):
    """A statistic of one run (ONE_RUN) whose run set matches several: the runs it matches."""

    def __init__(self, run_set: str, run_ids: list[str]) -> None:
        super().__init__(f"run set {run_set!r} matches {len(run_ids)} runs ({', '.join(run_ids)}); this statistic "
                         "reads exactly one run")
        self.run_set, self.run_ids = run_set, run_ids


def _one_run(runs: list[Run], row: Mapping[str, Any]) -> RunSummary:
    if len(runs) != 1:
        raise TooManyRuns(str(row["runs"]), [run.run_id for run in runs])
    return _summary(runs[0])


def _summary(run: Run) -> RunSummary:
    """The run's summary, for a statistic that reads more than its facts (the build summarises every run such a row
    reads: `summarises`)."""
    if isinstance(run, ValidatedRun):
        raise RuntimeError(f"{run.run_id} was only validated, yet a row reads its summary")
    return run


def _stat_median(runs: list[Run], row: Mapping[str, Any]) -> tuple[bool, dict[str, str]]:
    run = _one_run(runs, row)
    values = steps_for(run, row["metric"])[row["metric"]].dropna()
    return True, {"value": number(values.median(), int(row.get("decimals", 2))), "steps": number(len(values)),
                  "run_steps": number(len(table_of(run, row["metric"])))}


def _stat_median_head(runs: list[Run], row: Mapping[str, Any]) -> tuple[bool, dict[str, str]]:
    _, shown = _stat_median(runs, row)
    run = _summary(runs[0])
    count = int(row.get("head", 2))
    frame = steps_for(run, row["metric"])
    head = frame[row["metric"]].dropna().head(count)
    # The first steps of the run, unless a pause touched one: then the first clean ones, and it says so.
    first = list(head.index) == list(table_of(run, row["metric"]).index[:count])
    decimals = int(row.get("head_decimals", row.get("decimals", 2)))
    shown |= {"low": number(head.min(), decimals), "high": number(head.max(), decimals),
              "head": f"first {words(count)} steps" if first else f"first {words(count)} clean steps"}
    return True, shown


def _stat_every_step(runs: list[Run], row: Mapping[str, Any]) -> tuple[bool, dict[str, str]]:
    facts = [facts_of(run, row["metric"]) for run in runs]
    total, present = sum(f.steps for f in facts), sum(f.present for f in facts)
    return present == total, {"present": number(present), "total": number(total)}


STATS: dict[str, Callable[[list[Run], Mapping[str, Any]], tuple[bool, dict[str, str]]]] = {
    "range": _stat_range,
    "all_zero": _stat_all_zero,
    "first_step": _stat_first_step,
    "median": _stat_median,
    "median_head": _stat_median_head,
    "every_step": _stat_every_step,
}
# The statistics that read exactly one run: their run set must match one (`make add-run` warns of joining it).
ONE_RUN = {"median", "median_head"}
# The statistics that read each run's facts over the steps the heat rule leaves (range, all_zero): of a time, the
# clean steps, which only a summary tells. The others read the facts over every step (first_step, every_step),
# or a summary (a median).
HEAT_RULED = {"range", "all_zero"}
FROM_FACTS = {"range", "all_zero", "first_step", "every_step"}


def needs_summaries(row: Mapping[str, Any]) -> bool:
    """Whether a row's statistic reads more of its runs than validation takes (their logged metric's facts over
    every step): a median, a time's values on the clean steps, or a column the summary makes (summary.derived)."""
    stat, metric = row.get("stat"), row.get("metric")
    if stat not in FROM_FACTS or not isinstance(metric, str) or derived(metric):
        return True
    return stat in HEAT_RULED and use_clean(metric)


# --- the page ---------------------------------------------------------------------------------


def load_spec(path: Path) -> dict[str, Any]:
    """docs/data/metrics.yml on its own (`compare`, `add-run`); a build reads it once with the other tables and
    takes it from them (spec_of)."""
    where = display_path(path)
    if not path.is_file():
        raise MetricsSpecError([Problem(where, None, None, "file not found")])
    try:
        document, problems = read_table(path, where)
    except InputProblem as error:
        raise MetricsSpecError([error.problem]) from None
    if problems:
        raise MetricsSpecError(problems)
    return spec_of({"metrics": document}, where)


def spec_of(tables: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The Metrics page spec among the data tables (blocks.load_tables); where names its file."""
    document = tables.get("metrics")
    if document is None:
        raise MetricsSpecError([Problem(where, None, None, "file not found")])
    if not isinstance(document, dict) or not isinstance(document.get("tables"), list):
        raise MetricsSpecError([Problem(where, None, "tables", "expected a list of tables")])
    return document


def _models(runs: list[Run]) -> str:
    return join(sorted({str(dotted_field(run.config, "model.name")) for run in runs}))


def _cell(row: Mapping[str, Any], sets: Mapping[str, Any], summaries: Mapping[str, Run],
          context: Mapping[str, str]) -> str:
    """One cell, or ValueError saying why it cannot be computed."""
    if row.get("runs") not in sets:
        raise ValueError(f"unknown run set {row.get('runs')!r}; the run sets are {', '.join(sets)}")
    if row.get("stat") not in STATS:
        raise ValueError(f"unknown stat {row.get('stat')!r}; the stats are {', '.join(STATS)}")
    runs = select(summaries, sets[row["runs"]] or {})
    if not runs:
        raise ValueError(f"run set {row['runs']!r} matches no run")
    facts = [facts_of(run, row["metric"]) for run in runs]
    if not any(f.logged for f in facts):
        raise ValueError(f"no run of {row['runs']!r} logs {row['metric']}")
    for run, f in zip(runs, facts, strict=True):  # a NaN or an infinity in the runs is never dropped silently
        if (error := non_finite_error(run.run_id, {row["metric"]: f.non_finite}, [row["metric"]])) is not None:
            raise error
    holds, values = STATS[row["stat"]](runs, row)
    wording = row.get("wording", "") if holds else row.get("otherwise", row.get("wording", ""))
    return _fill(" ".join(str(wording).split()), {**context, "model": _models(runs), **values})


def _fill(template: str, values: Mapping[str, str]) -> str:
    """The text with each {name} replaced by its value; nothing else of str.format (no attribute, index, format
    spec or conversion), so a text of the spec can never reach into an object; ValueError when it tries."""
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError as error:  # a lone "{" or "}"
        raise ValueError(f"{error} (write {{{{ and }}}} for a brace)") from None
    out = []
    for literal, name, spec, conversion in fields:
        out.append(literal)
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            shown = f"{{{name}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}}"
            raise ValueError(f"the text uses {shown}, which is not a plain {{name}} (write {{{{ and }}}} for "
                             "a brace)")
        if name not in values:
            raise ValueError(f"the text uses {{{name}}}, which is not known here "
                             f"(known: {', '.join(sorted(values)) or 'nothing'})")
        out.append(str(values[name]))
    return "".join(out)


# A link of the text under a table: `[words]({chapter_5})`, to a page the build names.
_LINK = re.compile(r"\[(?P<label>[^\]]*)\]\(\{(?P<target>chapter_[0-9]+)\}\)")


def prose(template: str, values: Mapping[str, str]) -> Markdown:
    """Text of the spec, its values filled and escaped as Markdown; `[words]({chapter_N})` links to chapter N."""
    parts: list[str] = []
    position = 0
    for match in _LINK.finditer(template):
        parts.append(md_part(_fill(template[position:match.start()], values)))
        target = match["target"]
        if target not in values:
            raise ValueError(f"the text uses {{{target}}}, which is not known here "
                             f"(known: {', '.join(sorted(values)) or 'nothing'})")
        parts.append(f"[{md_text(_fill(match['label'], values))}]({values[target]})")
        position = match.end()
    parts.append(md_part(_fill(template[position:], values)))
    return Markdown("".join(parts))


def build_tables(spec: Mapping[str, Any], summaries: Mapping[str, Run], where: str,
                 context: Mapping[str, str], runs_dir: Path | None = None) -> list[Table]:
    """Every table of the page; every row that cannot be computed is reported at once. `summaries` holds every run
    the page reads: summarised, or only validated when no row that reads it needs its summary (`summarises`).
    With `runs_dir`, a run set that matches too many runs for a row is also reported at the run that joined it."""
    sets = spec.get("run_sets") or {}
    problems: list[Problem] = []
    crowded: dict[str, list[str]] = {}  # run set -> the metrics of its rows that read one run
    tables = []
    for t_index, table in enumerate(spec["tables"]):
        rows = []
        for r_index, row in enumerate(table.get("rows") or []):
            field = f"tables[{t_index}].rows[{r_index}]"
            value = None
            if table.get("column"):
                try:
                    value = _cell(row, sets, summaries, context)
                except (ValueError, KeyError, MissingValue) as error:
                    problems.append(Problem(where, None, field, f"{row.get('metric')}: {error}"))
                    if isinstance(error, TooManyRuns):
                        crowded.setdefault(error.run_set, []).append(str(row.get("metric")))
                    continue
            rows.append(Row(str(row.get("metric", "")), " ".join(str(row.get("meaning", "")).split()), value,
                            bool(row.get("code", True))))
        try:
            after = prose(" ".join(str(table.get("after") or "").split()), context)
        except ValueError as error:
            problems.append(Problem(where, None, f"tables[{t_index}].after", f"{error}; is that page missing?"))
            after = Markdown("")
        tables.append(Table(str(table.get("title", "")), table.get("column"), tuple(rows), after))
    if runs_dir is not None:
        problems += [_joined_last(runs_dir, name, select(summaries, sets[name] or {}), metrics, where)
                     for name, metrics in crowded.items()]
    if problems:
        raise MetricsSpecError(problems)
    return tables


def _joined_last(runs_dir: Path, run_set: str, runs: list[Run], metrics: list[str], where: str) -> Problem:
    """The run of a crowded run set whose run.yaml changed last (the one added or retagged last, as a rule: `make
    add-run` writes it, the author fills it in), named as the problem's file."""
    def changed(run: Run) -> int:
        try:
            return (runs_dir / run.run_id / "run.yaml").stat().st_mtime_ns
        except OSError:
            return 0

    last = max(runs, key=lambda run: (changed(run), run.run_id))
    others = ", ".join(run.run_id for run in runs if run is not last)
    rows = f"{len(metrics)} rows" if len(metrics) > 1 else "a row"
    return Problem(display_path(runs_dir / last.run_id / "run.yaml"), None, None,
                   f"joins run set {run_set!r} of {where}, which {others} is already in, and {rows} "
                   f"({', '.join(metrics)}) read exactly one run of it; this run.yaml changed last: change its tags "
                   "(or the fields the run set names), or give those rows a run set of their own")


def intro(spec: Mapping[str, Any], summaries: Mapping[str, Run], where: str) -> Intro:
    """The setup of the runs the intro names, from run.yaml: nothing typed by hand."""
    runs = select(summaries, (spec.get("run_sets") or {}).get(spec.get("intro_runs"), None) or {})
    if not runs:
        raise MetricsSpecError([Problem(where, None, "intro_runs", "names no run set that matches a run")])

    def fact(dotted: str, shown: Callable[[Any], str] = str) -> str:
        values = sorted({shown(dotted_field(run.config, dotted)) for run in runs})
        return join(values, "or")

    def count(value: Any) -> str:
        return number(value) if isinstance(value, int | float) and not math.isnan(value) else str(value)

    gpus = fact("hardware.gpus", lambda n: words(int(n)) if isinstance(n, int) else str(n))
    return Intro(model=fact("model.name"), dataset=fact("dataset"),
                 machine=f"{gpus} {fact('hardware.chip')}", prompts=fact("flags.rollout_batch_size", count),
                 answers=fact("flags.n_samples_per_prompt", count),
                 max_tokens=fact("flags.rollout_max_response_len", count))


def runs_read(spec: Mapping[str, Any], summaries: Mapping[str, R]) -> list[R]:
    """Every run some row or the intro of the page reads: the page's provenance is theirs."""
    chosen: dict[str, R] = {}
    for predicate in _sets_read(spec):
        for run in select(summaries, predicate):
            chosen[run.run_id] = run
    return [chosen[key] for key in sorted(chosen)]


def reads(spec: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool]:
    """Whether the page reads a run, from its run.yaml alone (runs_read's rule, before any run is summarised)."""
    return _any_of(_sets_read(spec))


def summarises(spec: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool]:
    """Whether the page reads a run's summary, from its run.yaml alone: a row that needs more than its metric's
    facts reads it (needs_summaries). Every other run the page reads is read from validation's facts."""
    return _any_of(_sets_read(spec, needs_summaries))


def metrics_named(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The metrics of the rows with a value, in the spec's order, each once: those whose facts validation takes
    (every logged one, whatever its row's statistic: a row changed to another statistic validates nothing again)."""
    return tuple(dict.fromkeys(row["metric"] for row in _valued_rows(spec)
                               if isinstance(row.get("metric"), str) and not derived(row["metric"])))


class _AnyOf:
    """Whether any of the run sets selects a run.yaml; equal to another of the same run sets (`make serve` keeps
    the last summarise_runs' outcome for the same runs wanted: summarise/last_read.py)."""

    def __init__(self, predicates: list[Mapping[str, Any]]) -> None:
        self.predicates = predicates

    def __call__(self, config: Mapping[str, Any]) -> bool:
        return any(selects(predicate, config) for predicate in self.predicates)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _AnyOf) and self.predicates == other.predicates

    def __hash__(self) -> int:
        return hash(repr(self.predicates))


def _any_of(predicates: list[Mapping[str, Any]]) -> Callable[[Mapping[str, Any]], bool]:
    return _AnyOf(predicates)


def _valued_rows(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [row for table in spec["tables"] if table.get("column") for row in table.get("rows") or []]


def _sets_read(spec: Mapping[str, Any],
               by: Callable[[Mapping[str, Any]], bool] | None = None) -> list[Mapping[str, Any]]:
    """The run sets the intro and the rows with a value read; with `by`, those of the rows it picks alone."""
    sets = spec.get("run_sets") or {}
    names = {row.get("runs") for row in _valued_rows(spec) if by is None or by(row)}
    if by is None:
        names.add(spec.get("intro_runs"))
    return [sets.get(name) or {} for name in sorted(names, key=str) if name in sets]
