"""Perturbations: for every kind of check, a change of the data it reads that makes it false, just past the edge
its margin names, and, where it has a tolerance or some slack, a change within it that keeps it true.

No figure has an entry here: a block's checks say what each reads and what it claims, and each kind of check
registers beside itself (`@perturbation("name")` in its family's module) how to move what it reads. A number
compared with an interval (`about 720`, `near 0.015`, `above 0`, a slope, a share, a ratio, a span) is moved by
a lever, a change of the data by `amount` in one direction; the lever closest to failing by the margins' own rule
(checks/_margin.py: the smallest fraction, then headroom) is the check's margin, and the amount is solved
for so that the check's own observation lands past that end by a tenth of the headroom (it must fail), or short
of it by as much (it must still pass). A count, an order, a table or a run.yaml fact is changed by one step:
one step's comparison flipped, one phase moved, one row or step dropped, one run added, one field changed.
Where a change could also turn another claim, a kind offers alternatives (another part of a sum, one run fewer),
derived only when the proof asks for them. tests/checking/test_claims.py holds every registered kind to having one.

A change is made to copies of the summaries (RunSummary's tables, config and series), never to the files on
disk. A check whose change cannot be derived, or would have to move the data by more than PLAUSIBLE times its
own size, raises CannotFail: build_tools/checking/prove.py names it.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from build_tools.checking.checks._margin import _rank as rank
from build_tools.checking.checks._margin import of_interval
from build_tools.checking.checks._numbers import claim_numbers
from build_tools.checking.checks._registry import Ctx, evaluate
from build_tools.checking.checks._words import Expectation, fmt
from build_tools.core._types import CheckResult, FigureBlock, Margin, RunSummary

PAST = 0.1  # a moved value lands this share of its headroom past the edge, or short of it
# A check that fails only when its number moves by more than this many times its own size (or the claim's) is
# called unable to fail: its tolerance is so wide that no data of the runs' kind would leave it.
PLAUSIBLE = 10.0
COUNTED_RANKS = (0, -1)  # the phases the checks read: the trainer's rank 0 and the rollout manager


class CannotFail(Exception):
    """No change of the data that fails the check was found: the message says why (one line)."""


@dataclass
class Data:
    """Copies of what a check reads: summaries (every run it reads deep-copied), tables and block."""

    summaries: dict[str, RunSummary]
    tables: dict[str, Any]
    block: FigureBlock


Change = Callable[[Data], None]


@dataclass(frozen=True)
class Perturbation:
    false: Change  # makes the check fail
    within: Change | None  # within the check's tolerance: it still passes (None: an exact fact has none)
    # Other changes that fail it, derived when asked, moving other values (another part of a sum, fewer runs):
    # the proof takes the first that leaves every other claim's verdict as it was.
    alternatives: tuple[Callable[[], Perturbation], ...] = ()
    # A lever's: how far its number was from the edge (the margin's headroom); the change lands a tenth of it past.
    headroom: float | None = None


def one_of(candidates: list[Callable[[], Perturbation]]) -> Perturbation:
    """The first candidate that can be derived, the later ones (derived only when asked) its alternatives;
    CannotFail when none can."""
    for at, candidate in enumerate(candidates):
        try:
            found = candidate()
        except CannotFail:
            if at == len(candidates) - 1:
                raise
            continue
        return Perturbation(found.false, found.within, tuple(candidates[at + 1:]), found.headroom)
    raise CannotFail("nothing to change")


Derive = Callable[["Subject"], Perturbation]
PERTURBATIONS: dict[str, Derive] = {}


def perturbation(*names: str) -> Callable[[Derive], Derive]:
    """Register how to perturb the data of the checks named (beside each check, in its family's module)."""
    def decorate(fn: Derive) -> Derive:
        for name in names:
            PERTURBATIONS[name] = fn
        return fn
    return decorate


@dataclass(frozen=True)
class Subject:
    """One check of one figure block, and the data the claims are checked on."""

    block: FigureBlock
    index: int
    summaries: dict[str, RunSummary]
    tables: dict[str, Any]

    @property
    def params(self) -> dict[str, Any]:
        return self.block.checks[self.index]

    @property
    def runs(self) -> list[str]:
        return list(self.params.get("runs") or self.block.runs)

    @property
    def read(self) -> list[str]:
        """Every run the check reads: its runs and the runs it names (run, over, than, minus, reference)."""
        named = [self.params[key] for key in ("run", "over", "than", "minus") if self.params.get(key)]
        return list(dict.fromkeys([*self.runs, *named, *(self.params.get("reference") or [])]))

    def data(self, change: Change | None = None) -> Data:
        copies = dict(self.summaries)
        for run in self.read:
            copies[run] = copy.deepcopy(self.summaries[run])
        data = Data(copies, copy.deepcopy(self.tables), self.block)
        if change is not None:
            change(data)
        return data

    def result(self, change: Change | None = None) -> CheckResult:
        data = self.data(change)
        return evaluate(data.block.checks[self.index], data.block, data.summaries, data.tables, data.block.prose)

    def interval(self, word: str, value: float) -> tuple[float, float]:
        """The interval the claim's words give the value (the check's own rule, with its overrides)."""
        binds = {text.lower() for text in self.params.get("binds") or ()}
        tokens = [t for t in claim_numbers(self.block.claim, self.block.prose) if t.text.lower() in binds]
        expectation = Ctx(self.block, {}, {}, tokens).expect(word, value, self.params)
        return expectation.low, expectation.high


def derive(block: FigureBlock, index: int, summaries: dict[str, RunSummary], tables: dict[str, Any]) -> Perturbation:
    """The perturbations of the index-th check of block; CannotFail when its kind registered none."""
    subject = Subject(block, index, summaries, tables)
    for run in subject.read:
        if run in summaries:
            _ = summaries[run].steps  # decoded once here (a cached summary decodes on first use), not per copy
    name = subject.params["check"]
    if name not in PERTURBATIONS:
        raise CannotFail(f"the kind of check {name!r} registers no perturbation (@perturbation beside it)")
    return PERTURBATIONS[name](subject)


# --- reading and changing per-step values ------------------------------------------------------------------


def _frame_of(summary: RunSummary, name: str) -> tuple[pd.DataFrame, str]:
    """The table holding a value name, as float, and its column: the step table or `<series>.<field>`."""
    if name in summary.steps.columns:
        frame, column = summary.steps, name
    else:
        series, _, column = name.partition(".")
        frame = summary.series[series]
    frame[column] = frame[column].astype(float)
    return frame, column


def _rows(frame: pd.DataFrame, steps: Any) -> pd.Index:
    if steps is None:
        return frame.index
    wanted = list(steps)
    return frame.index[frame["step"].isin(wanted)] if "step" in frame.columns else frame.index[frame.index.isin(wanted)]


def add(summary: RunSummary, name: str, amount: float | pd.Series, steps: Any = None) -> None:
    """Add amount to a per-step value at the given steps (default every step)."""
    frame, column = _frame_of(summary, name)
    rows = _rows(frame, steps)
    shift = amount if not isinstance(amount, pd.Series) else amount.reindex(
        frame.loc[rows, "step"] if "step" in frame.columns else rows).to_numpy()
    frame.loc[rows, column] = frame.loc[rows, column] + shift


def scale(summary: RunSummary, name: str, factor: float) -> None:
    frame, column = _frame_of(summary, name)
    frame[column] = frame[column] * factor


def put(summary: RunSummary, name: str, step: int, value: float) -> None:
    frame, column = _frame_of(summary, name)
    frame.loc[_rows(frame, [step]), column] = value


def per_step(summary: RunSummary, name: str) -> pd.Series:
    """A per-step value by step, as the checks read it (a series' last sample of each step)."""
    if name in summary.steps.columns:
        return summary.steps[name].astype(float)
    series, _, column = name.partition(".")
    return summary.series[series].groupby("step")[column].last().astype(float)


def clean_steps(summary: RunSummary) -> pd.Index:
    """Steps no heat pause touched: read by every check, whatever its `steps` mode."""
    return summary.steps.index[~summary.steps["heat_touched"].astype(bool)]


def halves(summary: RunSummary) -> tuple[pd.Index, pd.Index]:
    """The steps of the first and the second half of a run: the first and last windows lie in them."""
    steps = summary.steps.index
    middle = steps[len(steps) // 2]
    return steps[steps < middle], steps[steps >= middle]


def names(metric: str | list[str]) -> list[str]:
    return [metric] if isinstance(metric, str) else list(metric)


def set_config(summary: RunSummary, dotted: str, value: Any) -> None:
    *path, key = dotted.split(".")
    node = summary.config
    for part in path:
        node = node[part]
    node[key] = value


def config(summary: RunSummary, dotted: str) -> Any:
    node: Any = summary.config
    for part in dotted.split("."):
        node = node[part]
    return node


def other_value(value: Any) -> Any:
    """A value of the same kind that differs: true for false, 5 for 4, '4B-other' for '4B'."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    return f"{value}-other"


def pick(*keys: str) -> Callable[[Any], float]:
    """What a lever reads of a check's observation: observed[keys[0]][keys[1]]..."""
    def observe(observed: Any) -> float:
        for key in keys:
            observed = observed[key]
        return float(observed)
    return observe


# --- levers: a number moved to just past, or just short of, the end of its interval -----------------------


@dataclass(frozen=True)
class Lever:
    move: Callable[[Data, float], None]  # changes the data by amount (0: no change)
    observe: Callable[[Any], float]  # the moved number, read from the check's observation
    low: float
    high: float
    outward: int = 0  # +1: moved up only, -1: down only (an extreme moves only away from the others); 0: either
    slope: float = 1.0  # about d(observation) / d(amount): the first guess of the solver


def _edge(lever: Lever, x0: float) -> tuple[Margin, int]:
    """The lever's margin by the margins' rule (the nearer end of its interval; only the end it moves towards
    where it moves one way), and the direction past its edge."""
    low = lever.low if lever.outward <= 0 else -math.inf
    high = lever.high if lever.outward >= 0 else math.inf
    margin = of_interval(x0, Expectation(low, high, ""))
    if margin is None:
        raise CannotFail("no end of its interval is a finite number")
    return margin, 1 if margin.edge == high else -1


def _size(lever: Lever, x0: float) -> float:
    """The size of the value and of what the claim allows: the interval's middle, or its one finite end."""
    ends = [v for v in (lever.low, lever.high) if math.isfinite(v)]
    claimed = (ends[0] + ends[1]) / 2 if len(ends) == 2 else ends[0] if ends else 0.0
    return max(abs(x0), abs(claimed), 1e-12)


def by_lever(subject: Subject, *levers: Lever) -> Perturbation:
    """The lever whose number is closest to failing by the margins' rule (the check's margin: the smallest
    fraction, then headroom), moved past its edge by a tenth of its headroom, and short of it by as much."""
    observed = subject.result().observed
    chosen = []
    for lever in levers:
        x0 = float(lever.observe(observed))
        chosen.append((*_edge(lever, x0), x0, lever))
    margin, direction, x0, lever = min(chosen, key=lambda c: rank(c[0]))
    distance, end = margin.headroom, margin.edge
    if distance < 0:
        raise CannotFail(f"it holds no more: {fmt(x0)} is past {fmt(end)}")
    tiny = 1e-6 * max(abs(end), 1e-3)  # past an exact value: any change is a miss
    target = end + direction * max(PAST * distance, tiny)
    if distance > PLAUSIBLE * _size(lever, x0):  # an exact comparison (no headroom) is never too wide
        raise CannotFail(f"its tolerance is too wide: {fmt(x0)} would have to move to {fmt(target)}, more than "
                         f"{fmt(PLAUSIBLE)} times its own size")
    false = _solve(subject, lever, x0, target)
    within = None if distance == 0 else _solve(subject, lever, x0, end - direction * PAST * distance)
    return Perturbation(_moved(lever, false), None if within is None else _moved(lever, within), headroom=distance)


def _moved(lever: Lever, amount: float) -> Change:
    def change(data: Data) -> None:
        lever.move(data, amount)
    return change


def _solve(subject: Subject, lever: Lever, x0: float, target: float) -> float:
    """The amount that moves the observation to target (secant steps; the levers are linear or near it)."""
    previous, seen = 0.0, x0
    amount = (target - x0) / (lever.slope or 1.0)
    for _ in range(60):
        observed = float(lever.observe(subject.result(_moved(lever, amount)).observed))
        if abs(observed - target) <= 1e-4 * abs(target - x0):
            return amount
        if observed == seen:
            raise CannotFail("changing the data it reads does not change what it observes")
        step = (observed - target) * (amount - previous) / (observed - seen)
        amount, previous, seen = amount - step, amount, observed
    raise CannotFail(f"no change of the data moves what it observes to {fmt(target)}")
