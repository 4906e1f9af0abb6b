"""What `make bench WHAT=serve` and `make bench WHAT=watch` share: a goal's report line and the verdict over
several, judged as bench.py and bench_scale.py judge theirs (no verdict on a busy machine: busy_machine)."""

from __future__ import annotations

from dataclasses import dataclass

from build_tools.core._exceptions import EXIT_GOAL_MISSED

WIDTH = 60


@dataclass(frozen=True)
class Judged:
    """One goal's measurement: `value` (in `unit`) under `goal` (`strict`) or at most it; None: not measured."""

    what: str
    value: float | None
    goal: float
    unit: str
    strict: bool = False

    @property
    def met(self) -> bool:
        if self.value is None:
            return False
        return self.value < self.goal if self.strict else self.value <= self.goal


def goal_line(judged: Judged, busy: str | None) -> str:
    """`what  value unit   goal <= N unit  met|missed|no verdict`; a goal not measured is missed (or no verdict)."""
    sign = "<" if judged.strict else "<="
    verdict = "no verdict" if busy else "met" if judged.met else "missed"
    value = "not measured" if judged.value is None else f"{judged.value:8.2f} {judged.unit}"
    return f"{judged.what:<{WIDTH}} {value}   goal {sign} {judged.goal:g} {judged.unit}  {verdict}"


def verdict(goals: list[Judged], busy: str | None) -> tuple[list[str], int]:
    """A line per goal (then the busy line, when there is one) and the exit code: EXIT_GOAL_MISSED when a goal
    was missed on a quiet machine, else 0."""
    lines = [goal_line(judged, busy) for judged in goals]
    if busy:
        return [*lines, busy], 0
    return lines, 0 if all(judged.met for judged in goals) else EXIT_GOAL_MISSED
