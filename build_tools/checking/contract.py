"""The manual's contract: its Metrics ranges and its claims, with their bands, envelopes and the edition, as one
versioned JSON document (site/contract.json) with a published JSON Schema (site/contract.schema.json).

The schema is generated from the pydantic model below, and validation is the model: the build writes the
document only through `Contract.model_validate`, so a document that does not fit its schema is never written.
`manual watch` and `manual compare` evaluate it, and so can any tool: RULES, written into every document, says
how each item is judged, in words a tool can follow without this code (tests/contract_reader.py does).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo
from pydantic_core import PydanticCustomError

from build_tools.checking.miles_guidance import Rule
from build_tools.core._types import ClaimVerdict, FigureBlock, RunSummary, Stamp
from build_tools.ingest.schemas_dump import value_problem_of_arg
from build_tools.readers import SETUP, dotted_field
from build_tools.summarise import metric_rows
from build_tools.summarise.summary import is_time

FORMAT: Literal["miles-manual-contract"] = "miles-manual-contract"
VERSION: Literal[3] = 3
CONTRACT_FILE = "contract.json"
SCHEMA_FILE = "contract.schema.json"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# The schema's own name: stable across editions and hosts (the site's address is not known when it is built).
SCHEMA_ID = f"https://miles-manual.invalid/contract/v{VERSION}/{SCHEMA_FILE}"
METRICS_LINK = "06-metrics.html"  # pages' METRICS_PAGE as the site serves it (core/_layout.py)

# How each kind of check a claim makes on one run is evaluated (rules["check.<kind>"]): what another tool
# implements to give the verdicts `compare` and `watch` give. The words' tolerances are resolved into each check's
# `interval` (and `first`, `last`, `window`), so a tool needs no words.yml.
VALUE_KINDS = ("about", "near", "rounds_to", "exactly", "above", "below", "at_least", "at_most")
_VALUE_RULE = ("The check's values (rules.values) of metric under steps; stat each: every value must lie in interval; "
               "else the statistic stat of the values must (rules.interval). per does not matter on one run.")
CHECK_RULES: dict[str, str] = {
    **dict.fromkeys(VALUE_KINDS, _VALUE_RULE),
    "share": "parts (summed per step) and whole, each read as rules.values with steps; at each step both have, "
             "parts / whole (a step where that is not a number is left out). stat each: the least of these shares "
             "must lie in interval; else their statistic stat must.",
    "trend": "The slope of the least-squares line of the values (rules.values) against their step numbers (at "
             "least two values) must lie in interval (up: above min_slope; down: below max_slope).",
    "jumps_around": "With the values (rules.values) in step order: the median of the absolute differences of "
                    "consecutive values over the absolute least-squares slope (as trend) must lie in interval "
                    "(at least factor); a slope of 0 holds.",
    "falls_from": "With the values (rules.values) in step order (at least 2 * window of them): the mean of the first "
                  "window values must lie in first and the mean of the last window values in last (each where "
                  "given), and the first mean must be greater than the last.",
    "rises_from": "As falls_from, but the first mean must be less than the last.",
    "step_count": "The number of the run's steps (rules.steps) equals count.",
    "gpu_count": "The number of distinct (node, gpu) pairs over the run's closed phases (rules.steps; each phase's "
                 "node and each of its gpus) equals count.",
    "config_equals": "The run's value of field (dotted, run.yaml) equals value, compared as rules.envelope compares "
                     "(absent: the check lacks it; null is a value, equal only to null).",
    "config_ratio": "The product of the numerator fields over the product of the denominator fields times "
                    "denominator_scale (each a run.yaml field, as a number) must lie in interval.",
    "heat_difference": "The values of metric at every step (steps all), split by rules.heat_touched: the statistic "
                       "stat of the touched steps' values minus that of the others must lie in interval (no "
                       "touched or no other step: the check lacks it).",
    "count_steps": "At each step (the heat rule when left or right is a time, as rules.values auto) that has left "
                   "and, when right names a value, right: whether left op right (above >, below <, equal ==, "
                   "at_least >=, at_most <=). The number of steps where it holds must be: all of them (count "
                   "every), none (none), or exactly count; and when of is given, the number of steps compared "
                   "must be of.",
    "phase_order": "At each step that has phases of rank 0 or -1 (rules.steps; no such step: the check lacks it): "
                   "the first of them of each name (least t0) gives that name's (t0, t1); each name of spans, "
                   "[<phase>.t0|t1, <phase>.t0|t1], gives (the first edge, the second) where both phases are there. "
                   "Holds when at every step each name of order has a span with t1 > t0, and each ends no later "
                   "than the next one in order starts, plus 1e-6 s.",
    "event_span": "The span from the event kind from to the kind to (rules.events), in unit (s; min: 60 s; h: 3600 "
                  "s), must lie in interval.",
    "series_during": "The samples of series (rules.series) with ts from the start of the span from from to to "
                     "(rules.events) to its end, both included (none: the check lacks it): with word at_least "
                     "their least value of field, else their greatest, must lie in interval.",
    "series_at_event": "The first event of kind event (rules.events; none: the check lacks it); the last sample of "
                       "series (rules.series) with ts <= its t0 (none: the check lacks it): its field must be at "
                       "least at_least (a number, or the value of that run.yaml field).",
    "held_by_one_side": "The series held_memory (rules.series): at each ts, each side's greatest gib (a side "
                        "without a sample at that ts: 0). Samples whose ts lies within [t0, t1] of any closed phase "
                        "(rules.steps, any rank) named in outside are left out. A side holds at a sample when its "
                        "gib > holding_gib. Holds when at no sample left more than at_most_sides sides hold, every "
                        "side (of all samples) holds at some sample left, and there are at least two sides.",
    "repeats_identical": "The series repeat_probe (rules.series, field output_sha256), grouped by probe: with "
                         "identical true, every probe's records must have one output_sha256; with false, some "
                         "probe's must have more than one.",
    "step_rule": "At each step (all steps) with both metric and value: value must equal then when metric <= "
                 "at_most, else otherwise; every step must hold (no such step: the check lacks it).",
}


# Checks a reader of the run's files cannot evaluate from them, and why (ClaimCheck.reason). Every other kind of
# check has its rule (CHECK_RULES) or compares runs (ACROSS_RUNS); one added with neither gets NO_RULE as its reason.
NOT_SIMPLE: dict[str, str] = {
    "table_rows": "it reads the manual's own data tables (docs/data/<table>.yml), not the run",
}
NO_RULE = "no rule for this kind of check is written in this version of the contract"

# Checks that compare the manual's runs with one another, or count them: they say nothing of one reader's run.
# (`gain_within` reads the reference runs; `equal_at_step` needs two runs.)
ACROSS_RUNS = frozenset({"ratio", "compare_runs", "paired_difference", "gain_within", "run_count",
                         "runs_matching", "equal_at_step"})


# How each item is judged, written into every document: what another tool implements to get the same verdicts.
RULES: dict[str, str] = {
    "bounds": "An item holds when its statistic v satisfies low <= v <= high: both bounds included, compared as the "
              "JSON numbers written, with no rounding (a range's bounds are already the page's shown range widened "
              "by half a unit of its last shown digit: what rounds to the shown range is inside).",
    "each_step": "Every value of the metric, at every step of step_key, is judged on its own as it arrives; the item "
                 "is outside from the first value outside, and stays so in the record (the steps outside are "
                 "counted). A value that is not a finite number (NaN, an infinity) is outside.",
    "first_value": "The value at the run's first step of step_key (the least step number that logs the metric); "
                   "judged as soon as that step is in.",
    "median": "The median of the metric's values over the run's steps of step_key (the mean of the two middle "
              "values for an even count); for a time (unit s), the steps rules.heat_touched marks are left out "
              "(the heat rule). expected is the manual's median; low and high the middle half (25th to 75th "
              "percentile, linear) of the manual's run's steps. Judged when the run has ended.",
    "steps": "A rollout step is numbered from the dump's phases (phases/*.jsonl or phases.jsonl). A phase is closed "
             "when its t1 is not -1; a record with t1 -1 is replaced by the closing record of the same name, t0, "
             "rank and role, and one never closed is left out. first is the least rollout/step of metrics.jsonl "
             "(0 without one). In t0 order, the k-th closed phase named rollout of role rollout_manager (k from 0) "
             "is of step first + k; a phase of role train is of step first + c - 1, where c counts the train_wait "
             "phases of its rank that began at or before its t0 (none: of no step). A step's span runs from the "
             "least t0 to the greatest t1 of its phases of rank 0 or -1. The run's steps are the rollout/step "
             "steps of metrics.jsonl together with the steps of those phases.",
    "heat_touched": "A step is heat-touched when its span (rules.steps) overlaps a heat-guard pause: a record of "
                    "kind heat_pause in the run folder's lab/events.jsonl with pause.t0 <= span end and pause.t1 >= "
                    "span start (ends included). A step without a span, or a run without that file, is not touched. "
                    "The heat rule: a time (a metric under perf/ or ending in _time, unit s) is read only on the "
                    "steps no pause touched (a train/ or eval/ step by the rollout of its number).",
    "logged_share": "The share of the run's steps of step_key at which the metric is logged (present / steps); "
                    "judged when the run has ended.",
    "envelope": "An item applies to a run only if, for every envelope fact with enforced true, the run's value of "
                "field (dotted, in run.yaml; a dump's meta.json args are the flags, its model the last part of "
                "hf_checkpoint) equals one of values, or the run does not record it (null or absent). Numbers "
                "compare as numbers (32 equals 32.0), true and false only as booleans, text as text. Otherwise it "
                "is not_applicable.",
    "claims": "A claim reads whole runs: it is judged when the run has ended, on the reader's run alone, by its "
              "checks with one_run true (the others set the manual's runs against one another or count them). "
              "It is not_applicable when none of its checks is one_run, or when an enforced envelope fact of it has "
              "other than exactly one value (its runs differ in it) or a value not the run's (not recorded counts as "
              "a value), or when the run shows GPUs (rules.gpus) and gpus is neither empty nor exactly [its "
              "number of GPUs], or nodes neither empty nor exactly [its number of nodes]. Otherwise each one_run "
              "check is evaluated by rules['check.' + check]: the claim is "
              "undecided when a check lacks what it reads (a value not logged at any step it reads, a run.yaml "
              "field absent, NaN or an infinity at a step it reads), else outside when a check fails, else inside. "
              "A check with a reason is one a reader of the run's files cannot evaluate simply; the reason says why.",
    "values": "A check's value per step: the metric (a list of metrics: their sum at the steps that log every one "
              "of them) at each step of its step key (train/ metrics: train/step, eval/: eval/step, others: "
              "rollout/step; one step a rollout, so a step number names its rollout), in step order; a name "
              "<series>.<field> is field of the last record of each step in the run folder's lab/<series>.jsonl. "
              "steps: all; clean (the heat rule's steps only, rules.heat_touched); auto: clean when any name is a "
              "time. No step left: the check lacks its value. stat: median (the mean of the two middle values for "
              "an even count), mean, min, max, first, last, sum.",
    "events": "The run's events are the records (kind, t0, t1) of the run folder's lab/events.jsonl, in t0 order. "
              "The span from kind A to kind B runs from the t0 of the first A to the t0 of the first B whose t0 is "
              "not before it (no such A or B: a check that reads it lacks it).",
    "series": "A sampled series <name> is the records of the run folder's lab/<name>.jsonl or lab/<name>.jsonl.gz "
              "(gzip), in ts order; host_memory's used_frac is (total_kib - available_kib) / total_kib. gpu_util's "
              "util and power_w, when the run has no gpu_util series with the field, are lab/gpu_temp's. No "
              "series, or none with the field: a check that reads it lacks it.",
    "gpus": "The GPUs a run shows: the (node, gpu) pairs of its closed phases (rules.steps; each phase's node with "
            "each of its gpus), of the samples of its series gpu_util (rules.series) that carry node and gpu, and "
            "of its dump's topology.jsonl (each engine's gpus, [node, gpu] pairs); its nodes, their distinct "
            "nodes.",
    "interval": "An interval holds x when x is a finite number and: with strict true, low < x < high; else low - e "
                "<= x <= high + e, where e = 1e-9 * max(1, |x|) when slack is true and low != high, else 0. A null "
                "end is no limit.",
    "severity": "error: an item outside fails `manual watch` (exit 7) and a GitHub job; warning: reported only.",
    "version": "version changes when a field is removed or renamed, a field's meaning or a rule here changes, or "
               "a statistic is added; editions with the same version read alike. New optional fields do not "
               "change it.",
    **{f"check.{kind}": text for kind, text in CHECK_RULES.items()},
}

# The setup a range or claim was measured on: (fact, run.yaml field, enforced). An enforced fact that differs
# in a reader's run makes the item not_applicable; the others are recorded so a reader can see them.
ENVELOPE_FACTS: tuple[tuple[str, str, bool], ...] = (
    *((fact, dotted, True) for fact, dotted in SETUP),
    ("attention backend", "flags.sglang_attention_backend", False),
    ("hardware", "hardware.chip", False),
    ("Miles commit", "miles.commit", False),
)

# The Metrics page's statistics as the contract judges them (metrics.yml's `stat` -> the contract's statistic).
STATISTICS: dict[str, str] = {"range": "each_step", "all_zero": "each_step", "first_step": "first_value",
                              "median": "median", "median_head": "median", "every_step": "logged_share"}
Statistic = Literal["each_step", "first_value", "median", "logged_share"]


def _printable(value: str, info: ValidationInfo) -> str:
    """A contract read (`read_contract`: watch's --contract) holds text as the loader takes a recorded value: no
    control, format or surrogate character (schemas_dump.value_problem_of_arg). The build's own contract is not
    held to it (a caption may hold what its chapter allows; every output channel escapes it)."""
    if info.context and info.context.get("read") and (wrong := value_problem_of_arg(value)) is not None:
        raise PydanticCustomError("unprintable", wrong)
    return value


def _shown(value: str) -> str:
    """A chapter's text as the contract carries it: each character of Unicode's C categories (a control, format
    or surrogate character, which a caption may hold and the contract's Text refuses) written as its Python escape,
    so the document stays printable and still says what the chapter held."""
    return "".join(char.encode("unicode_escape", "backslashreplace").decode("ascii")
                   if unicodedata.category(char)[0] == "C" else char for char in value)


def _decimals(value: int) -> int:
    """The rounding a value is shown at: what a double holds (round() of a 400-digit count is an OverflowError)."""
    if not 0 <= value <= MOST_DECIMALS:
        raise PydanticCustomError("decimals", "expected a whole number of decimals from 0 to {most}",
                                  {"most": MOST_DECIMALS})
    return value


MOST_DECIMALS = 17
# Text, numbers and roundings a contract may hold; the checks are validators, so the published schema is unchanged.
Text = Annotated[str, AfterValidator(_printable)]
Finite = Annotated[float, Field(allow_inf_nan=False)]  # a band of NaN or Infinity judges nothing
Decimals = Annotated[int, AfterValidator(_decimals)]


class _Strict(BaseModel):
    # strict: values typed as the schema says ("0.5" is no number)
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)


class EnvelopeFact(_Strict):
    fact: Text = Field(description="the fact in words, as `watch` names it")
    field: Text = Field(description="the dotted run.yaml field (a dump's meta.json args give the flags)")
    values: list[Text | int | Finite | bool | None] = Field(
        description="the values the manual's runs have, typed (numbers as numbers), sorted; null: not recorded")
    enforced: bool = Field(description="a reader's run with another value is not_applicable")


class Guidance(_Strict):
    """The line Miles' own guidance draws for the metric (docs/data/miles_guidance.yml)."""

    direction: Literal["below", "above"] = Field(description="the healthy side of threshold")
    threshold: Finite
    quote: Text = Field(description="Miles' words")
    source: Text = Field(description="the Miles file, at commit")


class RangeItem(_Strict):
    id: Text = Field(description="stable: the metric key")
    kind: Literal["range"] = "range"
    metric: Text = Field(description="the metric key as Miles logs it, e.g. rollout/raw_reward")
    title: Text = Field(description="what it is, in the Metrics page's words")
    unit: Text = Field(description="s, tokens, share (0 to 1), or '' for a plain number")
    statistic: Statistic = Field(description="what of the run is judged: rules.each_step, first_value, ...")
    step_key: Literal["rollout/step", "train/step", "eval/step"]
    low: Finite = Field(description="the least value that holds (included)")
    high: Finite = Field(description="the greatest value that holds (included)")
    expected: Finite | None = Field(default=None,
                                    description="the manual's own value, where the band is around one")
    decimals: Decimals = Field(description="the page writes values at this rounding (display only)")
    severity: Literal["error", "warning"]
    source: Text = Field(description="the page and table it comes from")
    link: Text = Field(description="the table on the site, relative to contract.json")
    guidance: Guidance | None = None
    envelope: list[EnvelopeFact]


class Interval(_Strict):
    """What holds of a number a check computes: rules.interval."""

    low: Finite | None = Field(description="the least value that holds; null: no least")
    high: Finite | None = Field(description="the greatest value that holds; null: no greatest")
    strict: bool = Field(description="true: low and high themselves do not hold (above, below)")
    slack: bool = Field(description="true: rules.interval's hair of slack for binary floats applies")


class ClaimCheck(_Strict):
    check: Text = Field(description="the registered check; rules['check.' + check] says how it is evaluated")
    says: Text = Field(description="the part of the caption it proves")
    parameters: dict[str, Any] = Field(description="its parameters as the chapter writes them, typed, the "
                                                   "registry's defaults filled in (null: not given)")
    tolerance: Text | None = Field(default=None,
                                   description="what holds, with its tolerance, in words (this edition)")
    edge: Finite | None = Field(default=None, description="the value at which it fails, on the manual's runs")
    headroom: Finite | None = Field(default=None, description="how far the manual's value is from edge, in unit")
    unit: Text | None = None
    one_run: bool = Field(default=False, description="judged on a reader's run alone (rules.claims); false: it sets "
                                                     "the manual's runs against one another, counts them, or reads "
                                                     "no run")
    reads: list[Text] = Field(default_factory=list, description="what it reads of a run: metric keys (as logged), "
                                                                "run.yaml:<field>, lab/<file>, phases")
    interval: Interval | None = Field(default=None, description="the comparison, this edition's words resolved")
    first: Interval | None = Field(default=None, description="falls_from, rises_from: the first window's mean")
    last: Interval | None = Field(default=None, description="falls_from, rises_from: the last window's mean")
    window: int | None = Field(default=None, description="falls_from, rises_from: the values each window means")
    reason: Text | None = Field(default=None, description="why a reader of the run's files cannot evaluate it "
                                                          "simply (no rules['check.' + check]); null: it can")


class ClaimItem(_Strict):
    id: Text = Field(description="stable: the chapter's figure id, e.g. fig-step-shares")
    kind: Literal["claim"] = "claim"
    number: Text = Field(description="the figure's number in this edition, e.g. 1.2 (moves when figures move)")
    says: Text = Field(description="the caption, verbatim")
    source: Text = Field(description="the chapter file and figure")
    link: Text = Field(description="the figure on the site, relative to contract.json")
    severity: Literal["error", "warning"]
    checks: list[ClaimCheck]
    headroom: Finite | None = Field(default=None, description="the closest check's headroom in this edition")
    fraction: Finite | None = Field(default=None, description="that headroom over the tolerance's half-width")
    envelope: list[EnvelopeFact]
    gpus: list[int] = Field(default_factory=list, description="the numbers of GPUs (rules.gpus) its runs show, "
                                                              "of those that show any (rules.claims)")
    nodes: list[int] = Field(default_factory=list, description="the numbers of nodes they show, likewise")


class Contract(_Strict):
    schema_: Text = Field(default=SCHEMA_ID, alias="$schema", description="the JSON Schema this document fits")
    format: Literal["miles-manual-contract"]
    version: Literal[3] = Field(description="rules.version says when it changes")
    edition: Text
    edition_date: Text
    miles_commit: Text
    rules: dict[str, Text] = Field(description="how every item is judged, in words; check.<kind>: how a claim's "
                                               "check of that kind is evaluated on one run")
    ranges: list[RangeItem]
    claims: list[ClaimItem]


# --- building it ------------------------------------------------------------------------------------------


def envelope_of(configs: Sequence[Mapping[str, Any]]) -> list[EnvelopeFact]:
    """The setup facts of the runs an item was measured on: each fact's values across them."""
    return [EnvelopeFact(fact=fact, field=dotted, enforced=enforced,
                         values=_sorted({_typed_fact(dotted_field(config, dotted)) for config in configs}))
            for fact, dotted, enforced in ENVELOPE_FACTS]


def _typed_fact(value: Any) -> Any:
    """A fact as JSON keeps it: a whole float as its integer (32.0 is 32), other text or numbers as they are."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if value is None or isinstance(value, bool | int | float | str) else str(value)


def _sorted(values: set[Any]) -> list[Any]:
    """Byte-identical across rebuilds: by kind, then value."""
    return sorted(values, key=lambda value: (type(value).__name__, str(value)))


def same_fact(value: Any, values: Sequence[Any]) -> bool:
    """rules.envelope: numbers compare as numbers (32 equals 32.0), true and false only as booleans, text as text."""
    for allowed in values:
        if isinstance(value, bool) or isinstance(allowed, bool):
            if value is allowed:
                return True
        elif isinstance(value, int | float) and isinstance(allowed, int | float):
            if value == allowed:
                return True
        elif value == allowed:
            return True
    return False


def _text(value: Any) -> str:
    """A fact as text, numbers compared as numbers (32 and 32.0 are one value)."""
    if value is None:
        return "not recorded"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def unit_of(metric: str) -> str:
    """A metric's unit: a time in seconds, an answer length in tokens, a share from 0 to 1, else a plain number."""
    if is_time(metric):
        return "s"
    if metric.endswith(("_lengths", "_len", "_tokens")):
        return "tokens"
    if metric.endswith(("truncated", "clipfrac", "_share", "_frac")):
        return "share (0 to 1)"
    return ""


def step_key_of(metric: str) -> str:
    from build_tools.ingest.sources._common import STEP_KEY_OF_PREFIX

    return STEP_KEY_OF_PREFIX.get(metric.split("/", 1)[0], "rollout/step")


def shown_bounds(low: float, high: float, decimals: int) -> tuple[float, float]:
    """The exact bounds of a range the page shows at `decimals`: what rounds to it (half a unit either side)."""
    half = Decimal(5).scaleb(-decimals - 1)
    shown_low, shown_high = (Decimal(f"{value:.{decimals}f}") for value in (low, high))
    return float(shown_low - half), float(shown_high + half)


def _anchor(title: str) -> str:
    """A heading's id as the site's table of contents makes it (lower case, words joined by '-')."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def range_items(spec: Mapping[str, Any], runs: Mapping[str, metric_rows.Run],
                rules: Sequence[Rule] = ()) -> list[RangeItem]:
    """One item per valued row of the Metrics page, each with a band: per-step rows over the rows' runs, whole-run
    statistics around the manual's own value."""
    guidance = {rule.metric: rule for rule in rules  # a line with a side and a number: one a tool can hold
                if rule.metric and rule.threshold is not None and rule.direction in ("below", "above")}
    items = []
    for table, row in metric_rows.valued_rows(spec):
        ours = metric_rows.runs_of_row(spec, row, runs)
        metric = str(row["metric"])
        logging = [run for run in ours if _logs(run, metric)]
        if not logging:
            continue
        band = _band(str(row.get("stat")), row, logging)
        if band is None:
            continue
        low, high, expected = band
        rule = guidance.get(metric)
        items.append(RangeItem(
            id=metric, metric=metric, title=" ".join(str(row.get("meaning", "")).split()), unit=unit_of(metric),
            statistic=STATISTICS[str(row.get("stat"))], step_key=step_key_of(metric),  # type: ignore[arg-type]
            low=low, high=high, expected=expected, decimals=int(row.get("decimals", 2)), severity="error",
            source=f"Metrics page, {table.get('title')}", link=f"{METRICS_LINK}#{_anchor(str(table.get('title')))}",
            guidance=Guidance(direction=rule.direction, threshold=rule.threshold, quote=rule.quote,  # type: ignore[arg-type]
                              source=rule.cited()) if rule else None,
            envelope=envelope_of([run.config for run in ours])))
    return items


def _band(stat: str, row: Mapping[str, Any], runs: list[metric_rows.Run]) -> tuple[float, float, float | None] | None:
    """(low, high, expected) of a row's statistic over the manual's runs; None where they give no number."""
    metric, decimals = str(row["metric"]), int(row.get("decimals", 2))
    if stat == "all_zero":  # as the page says it: every value 0
        return 0.0, 0.0, 0.0
    if stat == "first_step":  # a healthy run starts at 0 (the page's words): nothing else is expected
        return 0.0, 0.0, 0.0
    if stat == "every_step":
        return 1.0, 1.0, 1.0
    if stat == "range":
        facts = [metric_rows.facts_of(run, metric, heat_rule=True) for run in runs]
        lows = [f.low for f in facts if f.low is not None]
        highs = [f.high for f in facts if f.high is not None]
        if not lows or not highs or not math.isfinite(min(lows)) or not math.isfinite(max(highs)):
            return None
        low, high = shown_bounds(min(lows), max(highs), decimals)
        return low, high, None
    if stat in ("median", "median_head"):
        values = metric_rows.row_values([run for run in runs if isinstance(run, RunSummary)], row)
        if values.empty:
            return None
        return float(values.quantile(0.25)), float(values.quantile(0.75)), float(values.median())
    return None


def _logs(run: metric_rows.Run, metric: str) -> bool:
    try:
        facts = metric_rows.facts_of(run, metric, heat_rule=True)
    except RuntimeError:
        return False
    return facts.present > 0


# Parameters of a check that say where it sits in the caption, not what it measures.
_PLACE = ("check", "says", "binds")


def claim_items(blocks: Sequence[FigureBlock], verdicts: Sequence[ClaimVerdict],
                configs: Mapping[str, Mapping[str, Any]],
                summaries: Mapping[str, RunSummary] | None = None) -> list[ClaimItem]:
    """One item per figure with a claim: its checks with their parameters, this edition's margins, its envelope."""
    from build_tools.checking.checks._margin import worst

    by_block = {verdict.block.id: verdict for verdict in verdicts}
    items = []
    for block in blocks:
        if not block.checks:
            continue
        verdict = by_block.get(block.id)
        results = list(verdict.checks) if verdict else []
        closest = worst(check.margin for check in results) if verdict else None
        checks = []
        for index, check in enumerate(block.checks):
            result = results[index] if index < len(results) else None
            margin = result.margin if result is not None else None
            kind = str(check["check"])
            one_run = bool(block.runs) and kind not in ACROSS_RUNS and not check.get("runs")
            checks.append(ClaimCheck(
                check=kind, says=str(check.get("says", "")),
                parameters=_typed({key: value for key, value in check.items() if key not in _PLACE}),
                tolerance=result.expected if result is not None else None,
                edge=_finite(margin.edge) if margin else None, headroom=_finite(margin.headroom) if margin else None,
                unit=(margin.unit or None) if margin else None, one_run=one_run, reads=_reads(check),
                reason=_reason(kind) if one_run else None, **_resolved(block, check)))
        machines = _machines([run for name, run in (summaries or {}).items() if name in block.runs])
        items.append(ClaimItem(
            id=block.id, number=block.number, says=_shown(block.claim),
            source=f"{block.chapter_file}, fig {block.number}",
            link=f"{Path(block.chapter_file).stem}.html#{block.id}", severity="error", checks=checks,
            headroom=_finite(closest.headroom) if closest else None,
            fraction=_finite(closest.fraction) if closest else None,
            envelope=envelope_of([configs[run] for run in block.runs if run in configs]),
            gpus=machines["gpus"], nodes=machines["nodes"]))
    return items


def _machines(runs: Sequence[RunSummary]) -> dict[str, list[int]]:
    """The numbers of GPUs and of nodes a claim's runs show (rules.gpus), of those that show any, sorted."""
    from build_tools.readers import gpus_of

    shown = [gpus for gpus in (gpus_of(run) for run in runs) if gpus]
    return {"gpus": sorted({len(gpus) for gpus in shown}),
            "nodes": sorted({len({node for node, _ in gpus}) for gpus in shown})}


def _reason(kind: str) -> str | None:
    """Why a reader cannot evaluate a check judged on one run (ClaimCheck.reason); None when a rule says how."""
    return NOT_SIMPLE.get(kind) or (None if kind in CHECK_RULES else NO_RULE)


def _reads(check: Mapping[str, Any]) -> list[str]:
    """What a check reads of a run, in the words of ClaimCheck.reads (sorted: byte-identical rebuilds)."""
    from build_tools.readers import names_of

    found: set[str] = set()
    for key in ("metric", "parts", "whole", "left", "right", "value"):
        value = check.get(key)
        if isinstance(value, str) and (key != "value" or check["check"] == "step_rule"):
            found |= {name if "/" in name or "." not in name else f"lab/{name.split('.', 1)[0]}.jsonl"
                      for name in names_of(value)}
        elif isinstance(value, list) and key != "value":
            found |= set(names_of(value))
    for key in ("field", "numerator", "denominator"):
        value = check.get(key)
        fields = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        found |= {f"run.yaml:{field}" for field in fields if key != "field" or check["check"].startswith("config")}
    if check["check"] in ("gpu_count", "phase_order", "step_count", "held_by_one_side"):
        found.add("phases")
    if check["check"] in ("event_span", "series_during", "series_at_event"):
        found.add("lab/events.jsonl")
    if check["check"] in ("series_during", "series_at_event", "held_by_one_side"):
        found.add(f"lab/{check.get('series') or 'held_memory'}")
    if check["check"] == "series_at_event" and isinstance(check.get("at_least"), str):
        found.add(f"run.yaml:{check['at_least']}")
    if check["check"] == "heat_difference" or any(item.startswith("perf/") for item in found):
        found |= {"phases", "lab/events.jsonl"}  # the heat rule (rules.heat_touched)
    return sorted(found)


def _resolved(block: FigureBlock, check: Mapping[str, Any]) -> dict[str, Any]:
    """A check's comparison with this edition's words resolved (ClaimCheck.interval, first, last, window): the
    intervals its registered function holds its numbers to, so a tool needs no words.yml."""
    from build_tools.checking.checks import REGISTRY, Ctx, claim_numbers, validate
    from build_tools.checking.checks._words import setting

    kind = str(check["check"])
    if kind not in REGISTRY:
        return {}
    params, _ = validate(dict(check), block, 1, block.prose)
    binds = {text.lower() for text in params.get("binds") or ()}
    tokens = [token for token in claim_numbers(block.claim, block.prose) if token.text.lower() in binds]
    ctx = Ctx(block, {}, {}, tokens)

    def interval(word: str, value: float) -> Interval:
        found = ctx.expect(word, value, params)
        return Interval(low=_finite(found.low), high=_finite(found.high), strict=found.strict, slack=not found.strict)

    if kind == "series_during":
        bound = float(setting("idle", "at_most", params) if params["word"] == "idle" else params["value"])
        above = params["word"] == "at_least"
        return {"interval": Interval(low=bound if above else None, high=None if above else bound, strict=False,
                                     slack=False)}
    if params.get("word") is not None and "value" in REGISTRY[kind].params:
        return {"interval": interval(params["word"], params["value"] if params["value"] is not None else 0.0)}
    if kind in VALUE_KINDS:
        return {"interval": interval({"rounds_to": "rounds"}.get(kind, kind), params["value"])}
    if kind == "trend":
        up = params["direction"] == "up"
        bound = float(setting("goes_up", "min_slope", params) if up else setting("goes_down", "max_slope", params))
        return {"interval": Interval(low=bound if up else None, high=None if up else bound, strict=True, slack=False)}
    if kind == "jumps_around":
        return {"interval": Interval(low=float(setting("jumps_around", "factor", params)), high=None, strict=False,
                                     slack=False)}
    if kind in ("falls_from", "rises_from"):
        return {"window": int(setting("falls_from", "window", params)),
                **{key: interval("about", params[key]) for key in ("first", "last") if params[key] is not None}}
    return {}


def _typed(value: Any) -> Any:
    """A chapter's parameter as JSON keeps it: numbers as numbers, a date as its ISO text."""
    if isinstance(value, Mapping):
        return {str(key): _typed(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_typed(item) for item in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _finite(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def build_contract(stamp: Stamp, spec: Mapping[str, Any], runs: Mapping[str, metric_rows.Run],
                   blocks: Sequence[FigureBlock], verdicts: Sequence[ClaimVerdict],
                   rules: Sequence[Rule] = ()) -> Contract:
    configs = {run_id: run.config for run_id, run in runs.items()}
    summaries = {run_id: run for run_id, run in runs.items() if isinstance(run, RunSummary)}
    # validation is the model: the schema is generated from it
    return contract_of(stamp.edition, stamp.date, stamp.commit, range_items(spec, runs, rules),
                       claim_items(blocks, verdicts, configs, summaries))


def contract_of(edition: str, edition_date: str, miles_commit: str, ranges: Sequence[RangeItem],
                claims: Sequence[ClaimItem] = ()) -> Contract:
    """A contract of these items, with this version's format, rules and schema (the build's, a test's, a bench's)."""
    return Contract.model_validate({"$schema": SCHEMA_ID, "format": FORMAT, "version": VERSION, "edition": edition,
                                    "edition_date": edition_date, "miles_commit": miles_commit, "rules": RULES,
                                    "ranges": list(ranges), "claims": list(claims)})


def range_item(metric: str, low: float, high: float, envelope: Sequence[EnvelopeFact] = (), *,
               title: str = "", source: str = "", statistic: Statistic = "each_step") -> RangeItem:
    """One range item, its other fields from the metric (a test's or a bench's contract)."""
    return RangeItem(id=metric, metric=metric, title=title, unit=unit_of(metric), statistic=statistic,
                     step_key=step_key_of(metric), low=low, high=high, decimals=2,  # type: ignore[arg-type]
                     severity="error", source=source, link=METRICS_LINK, envelope=list(envelope))


def dumps(model: BaseModel) -> str:
    """Byte-identical across rebuilds: sorted keys, fixed indentation, a final newline."""
    return json.dumps(model.model_dump(mode="json", by_alias=True), indent=1, sort_keys=True,
                      ensure_ascii=False) + "\n"


def schema() -> dict[str, Any]:
    """The JSON Schema (Draft 2020-12) of the document, with its dialect and its own name."""
    found = Contract.model_json_schema(by_alias=True)
    found["required"] = sorted(set(found.get("required", [])) | {"format", "version"})
    return {"$schema": SCHEMA_DIALECT, "$id": SCHEMA_ID, **found}


def schema_text() -> str:
    return json.dumps(schema(), indent=1, sort_keys=True) + "\n"


def write_contract(pages: Path, contract: Contract) -> None:
    """contract.json and its schema beside the pages: mkdocs copies them into site/, so every edition has them
    (contract_odcs.write_odcs writes its ranges as an ODCS document beside them)."""
    text = dumps(contract)
    Contract.model_validate_json(text)  # what is written reads back as valid
    (pages / CONTRACT_FILE).write_text(text, encoding="utf-8")
    (pages / SCHEMA_FILE).write_text(schema_text(), encoding="utf-8")


def read_contract(path: Path) -> Contract:
    """The contract at path, read as every input is (_files.read_bytes: a plain file, within a document's size
    limit; InputProblem) and validated by the model (ValueError)."""
    from build_tools.core._files import read_bytes

    return parse_contract(read_bytes(path))


def parse_contract(data: bytes) -> Contract:
    """A contract read from outside the build (a file, a URL): validated with the rules for text read (no control
    character reaches a terminal or a CI log from it); ValueError naming each field."""
    return Contract.model_validate_json(data, context={"read": True})
