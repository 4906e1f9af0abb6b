"""The registry: small named checks with typed parameters, validated when the chapters are read.

A check is a function of (context, parameters) that returns an Outcome; it reads only run summaries and
tables, and its parameters are plain data (numbers, names), so nothing in a chapter is ever run as code.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from build_tools.checking.checks._numbers import Token, claim_numbers, same_number
from build_tools.checking.checks._words import Expectation, expect, fmt
from build_tools.core._exceptions import MissingValue
from build_tools.core._types import CheckResult, FigureBlock, Margin, RunSummary

EDGE = re.compile(r"^[a-z_]+\.(t0|t1)$")  # an edge of a phase: rollout.t1
STATS = ("median", "mean", "min", "max", "first", "last", "sum", "each")
STEP_MODES = ("auto", "clean", "all")


@dataclass(frozen=True)
class Param:
    """One parameter of a check: its kind (see KINDS), whether it is required, its default."""

    kind: str
    required: bool = False
    default: Any = None
    choices: tuple[Any, ...] = ()
    doc: str = ""


@dataclass(frozen=True)
class Outcome:
    """What a check found: whether the claim part holds, the observation (JSON) and the words for it."""

    ok: bool
    observed: Any
    expected: str
    fields: dict[str, Any]  # fills the check's template: the observation in words
    failure: str | None = None  # a fuller failure text than "<observation>, expected <expected>"
    off_by: str = ""  # by how much the observation misses, for a failure ("11 too low")
    margin: Margin | None = None  # how far from failing (checks/_margin.py); None where no number is compared


@dataclass
class Ctx:
    """What a check may read: the summaries of its runs, the tables, and the numbers it binds."""

    block: FigureBlock
    runs: dict[str, RunSummary]
    tables: dict[str, Any]
    bound: list[Token] = field(default_factory=list)
    block_runs: dict[str, RunSummary] = field(default_factory=dict)  # every run of the block, by id

    def written(self, value: Any) -> str:
        """The number as the claim writes it (for the precision of "about"), else as the check does."""
        for token in self.bound:
            if same_number(token, value):
                return token.text
        return repr(value) if isinstance(value, float) else str(value)

    def expect(self, word: str, value: float, params: dict[str, Any]) -> Expectation:
        return expect(word, float(value), self.written(value), params, params.get("unit") or "")

    def run(self, run_id: str) -> RunSummary:
        """A run the check names in a parameter (it may lie outside the check's `runs`)."""
        return self.block_runs.get(run_id) or self.runs[run_id]


CheckFn = Callable[[Ctx, dict[str, Any]], Outcome]


@dataclass(frozen=True)
class CheckSpec:
    name: str
    fn: CheckFn
    params: dict[str, Param]
    template: str  # the observation in words, filled from Outcome.fields
    doc: str
    bindable: Callable[[dict[str, Any]], list[Any]]  # the values a number bound by this check may equal


REGISTRY: dict[str, CheckSpec] = {}
COMMON: dict[str, Param] = {
    "check": Param("str", True, doc="the check's registered name"),
    "runs": Param("runlist", doc="a subset of the block's runs (default: all of them)"),
    "binds": Param("strs", default=[], doc="the numbers of the claim this check accounts for, as written"),
    "says": Param("str", doc="the fragment of the claim this check proves, verbatim (for the report)"),
    "label": Param("str", doc="what the value is called in the report (default: from the metric)"),
}


def register(name: str, template: str, doc: str, bindable: tuple[str, ...] | Callable[[dict[str, Any]], list[Any]] = (),
             /, **params: Param) -> Callable[[CheckFn], CheckFn]:
    """Add a check to the registry under name; bindable names the parameters a bound number must equal."""
    if callable(bindable):
        values = bindable
    else:
        names = bindable

        def values(p: dict[str, Any]) -> list[Any]:
            return [p[n] for n in names if p.get(n) is not None]

    def decorate(fn: CheckFn) -> CheckFn:
        REGISTRY[name] = CheckSpec(name, fn, {**COMMON, **params}, template, doc, values)
        return fn

    return decorate


# --- parameter validation ----------------------------------------------------------------------


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _is_strs(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _kind_error(kind: str, value: Any, runs: tuple[str, ...]) -> str | None:
    """Why value is not of the kind, or None."""
    checks: dict[str, tuple[Callable[[Any], bool], str]] = {
        "str": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
        "num": (_is_num, "a number"),
        "int": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "a whole number >= 0"),
        "bool": (lambda v: isinstance(v, bool), "true or false"),
        "names": (lambda v: (isinstance(v, str) and v != "") or (_is_strs(v) and len(v) > 0),
                  "a name or a list of names"),
        "strs": (_is_strs, "a list of strings"),
        "mapping": (lambda v: isinstance(v, dict) and len(v) > 0, "a mapping"),
        "scalar": (lambda v: isinstance(v, str | bool) or _is_num(v), "a number, string or true/false"),
        "count": (lambda v: v in ("every", "none") or (isinstance(v, int) and not isinstance(v, bool) and v >= 0),
                  "'every', 'none' or a whole number"),
        "limit": (lambda v: _is_num(v) or (isinstance(v, str) and v != ""), "a number or a run.yaml field"),
        "operand": (lambda v: _is_num(v) or (isinstance(v, str) and v != ""), "a number or a value name"),
        "run": (lambda v: isinstance(v, str), "a run id"),
        "spans": (lambda v: isinstance(v, dict) and all(
            isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) and EDGE.match(x) for x in e)
            for e in v.values()), "a mapping of name: [<phase>.t0|t1, <phase>.t0|t1]"),
        "runlist": (lambda v: _is_strs(v) and len(v) > 0, "a non-empty list of run ids"),
    }
    test, words = checks[kind]
    if not test(value):
        return f"expected {words}, got {value!r}"
    named = [value] if kind == "run" else value if kind == "runlist" else []
    strangers = [r for r in named if r not in runs]
    if strangers:
        return f"run {strangers[0]!r} is not among the block's runs ({', '.join(runs) or 'none'})"
    return None


def validate(raw: Any, block: FigureBlock, index: int, prose: tuple[str, ...] = ()) -> tuple[dict[str, Any], list[str]]:
    """The check's parameters with defaults filled in, and one-line problems as (field, message) text."""
    if not isinstance(raw, dict) or "check" not in raw:
        return {}, [f"check {index}: expected a mapping with a `check:` name, got {raw!r}"]
    name = raw["check"]
    spec = REGISTRY.get(name) if isinstance(name, str) else None
    if spec is None:
        known = ", ".join(sorted(REGISTRY))
        return {}, [f"check {index} ({name}): unknown check; known checks: {known}"]
    where = f"check {index} ({name})"
    problems = []
    for key in raw:
        if key not in spec.params:
            problems.append(f"{where} {key}: unknown parameter; {name} takes {', '.join(sorted(spec.params))}")
    params: dict[str, Any] = {}
    for key, param in spec.params.items():
        # A default (filled in when the block was read) needs no checking when validated again.
        if key not in raw or raw[key] is None or (param.default is not None and raw[key] == param.default):
            if param.required:
                problems.append(f"{where} {key}: missing (required)")
            params[key] = param.default
            continue
        value = raw[key]
        error = _kind_error(param.kind, value, block.runs)
        if error is None and param.choices and value not in param.choices:
            error = f"expected one of {', '.join(map(str, param.choices))}, got {value!r}"
        if error:
            problems.append(f"{where} {key}: {error}")
        params[key] = value
    try:
        problems += [f"{where} {msg}" for msg in _binding_problems(spec, params, block, prose)]
    except (TypeError, KeyError, AttributeError, ValueError):
        pass  # a parameter of the wrong kind, reported above, hides what it would bind
    return params, problems


def _binding_problems(spec: CheckSpec, params: dict[str, Any], block: FigureBlock,
                      prose: tuple[str, ...]) -> list[str]:
    """A bound number must be in the claim and equal to a value the check proves; `says` must be quoted."""
    problems = []
    if params.get("says") and params["says"] not in block.claim:
        problems.append(f"says: {params['says']!r} is not part of the claim of figure {block.number}")
    tokens = claim_numbers(block.claim, prose)
    values = spec.bindable(params)
    for text in params.get("binds") or []:
        found = [t for t in tokens if t.text.lower() == text.lower()]
        if not found:
            problems.append(f"binds: {text!r} is not a number of the claim of figure {block.number}")
        elif not any(same_number(found[0], v) for v in values):
            shown = ", ".join(fmt(v) if not isinstance(v, str) else v for v in values) or "none"
            problems.append(f"binds: {text!r}, but the values this check proves are {shown}")
    return problems


# --- evaluation ---------------------------------------------------------------------------------


def evaluate(params: dict[str, Any], block: FigureBlock, summaries: dict[str, RunSummary],
             tables: dict[str, Any], prose: tuple[str, ...] = ()) -> CheckResult:
    """Run one validated check on the summaries of its runs."""
    spec = REGISTRY[params["check"]]
    run_ids = params.get("runs") or list(block.runs)
    binds = tuple(params.get("binds") or ())
    tokens = [t for t in claim_numbers(block.claim, prose) if t.text.lower() in {b.lower() for b in binds}]
    ctx = Ctx(block, {r: summaries[r] for r in run_ids}, tables, tokens,
              {r: summaries[r] for r in block.runs if r in summaries})
    try:
        out = spec.fn(ctx, params)
    except MissingValue as missing:  # the claim cannot be shown, so the check fails
        return CheckResult(spec.name, "fail", None, "data to check", f"{missing}", binds)
    text = spec.template.format_map({**out.fields, "label": params.get("label") or out.fields.get("label", "")})
    message = text if out.ok else (out.failure or f"{text}, expected {out.expected}")
    if not out.ok and out.off_by:
        message += f", {out.off_by}"
    return CheckResult(spec.name, "pass" if out.ok else "fail", _jsonable(out.observed), out.expected,
                       message, binds, out.margin)


def _jsonable(value: Any) -> Any:
    """Observations as plain JSON: numpy scalars to Python, non-finite floats to strings."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return value
