"""Errors a user can cause. Each class writes its own message; the CLI prints it without a traceback."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# Exit codes: 1 is left to Python for a crash (a bug), so a user's mistake and a false claim differ from it.
EXIT_BAD_INPUT = 2
EXIT_CLAIM_FAILED = 3
# `make verify` only: the rebuild differs from the edition's manifest; not a user mistake, not a false claim.
EXIT_DIFFERS = 4
# `make bench` only: every measurement ran, and at least one missed its goal (the table says which).
EXIT_GOAL_MISSED = 5


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong in one input file: where, which field, what was expected."""

    file: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        field = f" {self.field}:" if self.field else ""
        return f"{where}:{field} {self.message}"


def display_path(path: Path | str) -> str:
    """A path as the user would type it: relative to the working directory where possible."""
    # abspath, not resolve: a path may be a link loop or lead outside, and is shown as the user wrote it.
    absolute, here = Path(os.path.abspath(path)), Path(os.path.abspath(Path.cwd()))
    try:
        return str(absolute.relative_to(here))
    except ValueError:
        try:
            return str(absolute.relative_to(here.resolve()))
        except ValueError:
            return str(path)


class InputProblem(Exception):
    """One problem that stops reading one file; the stage collects it with the others and goes on."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        super().__init__(str(problem))


class ManualError(Exception):
    """Base of every error the CLI reports as `ERROR ...` with a hint, never as a traceback."""

    exit_code = EXIT_BAD_INPUT
    hint = ""


class ProblemsError(ManualError):
    """Several problems found together; the build stops once, listing all of them."""

    what = "input"

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = sorted(problems, key=lambda p: (p.file, p.line or 0, p.field or "", p.message))
        super().__init__(self._message())

    def _message(self) -> str:
        count = len(self.problems)
        noun = "problem" if count == 1 else "problems"
        lines = [f"{count} {noun} in the {self.what}:"]
        lines += [f"  {problem}" for problem in self.problems]
        return "\n".join(lines)


class RunDataError(ProblemsError):
    what = "run data"
    hint = "fix the files named above; runs/README.md documents every field"


class FigureError(ProblemsError):
    what = "figures"
    hint = "each line names the figure, the run and the metric it could not draw"


class ChapterError(ProblemsError):
    what = "chapters"
    hint = "fix the figure blocks named above; docs/README.md documents their fields"


class ClaimsFailed(ManualError):
    """At least one caption claim no longer matches the data."""

    exit_code = EXIT_CLAIM_FAILED
    hint = "the data no longer supports these captions: change the claim or look at the runs"

    def __init__(self, report_lines: Sequence[str], failed: int, total: int) -> None:
        self.report_lines = list(report_lines)
        super().__init__(f"{failed} of {total} claims failed:\n" + "\n".join(self.report_lines))


class EditionError(ManualError):
    """A publish, verify or diff that cannot go ahead; nothing was changed."""

    def __init__(self, message: str, hint: str = "") -> None:
        self.hint = hint
        super().__init__(message)


class RayError(ManualError):
    """`--ray` could not be used: Ray not installed, its cluster not reachable, or a worker lost."""

    def __init__(self, message: str, hint: str = "") -> None:
        self.hint = hint
        super().__init__(message)
