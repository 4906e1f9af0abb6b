"""The values that pass between the stages of the build."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Status = Literal["pass", "fail"]


@dataclass(frozen=True)
class FigureBlock:
    """A figure as declared in a chapter: what it draws, from which runs, and the claim its caption makes."""

    id: str  # for cross references: [](#fig-step-order) style links resolve to the number
    number: str  # "1.3": chapter number and position in the chapter, never typed by hand
    chapter_file: str  # the chapter's path as the user sees it (docs/01-step.md)
    line: int  # line of the block's opening fence in that file
    module: str  # figures/<module>.py draws it
    runs: tuple[str, ...]  # the run ids it reads
    claim: str  # the caption, verbatim; it lives here and nowhere else
    checks: tuple[dict[str, Any], ...]  # the declarative checks that prove the claim
    alt: str = ""  # alt text; the figure module's default is used when empty
    tables: tuple[str, ...] = ()  # data tables from docs/data/ it reads (e.g. troubleshooting)
    options: dict[str, Any] = field(default_factory=dict)  # extra, figure-specific settings
    prose: tuple[str, ...] = ()  # idioms where a number word is not a quantity ("every one of")


@dataclass(frozen=True)
class DrawnFigure:
    """Where a figure's files were written."""

    block_id: str
    number: str
    svg: Path
    png: Path
    csv: Path
    alt: str
    redrawn: bool  # False when the cache held it


@dataclass(frozen=True)
class CheckResult:
    name: str  # the check's registered name
    status: Status
    observed: Any  # JSON-serialisable; what the data shows
    expected: str  # what the claim needs, with its tolerance, in words
    message: str  # one line for a human, e.g. 'first-window mean is 655 tokens, expected 720 +/- 36'
    binds: tuple[str, ...] = ()  # the numbers of the claim text this check accounts for


@dataclass(frozen=True)
class ClaimVerdict:
    block: FigureBlock
    status: Status
    checks: tuple[CheckResult, ...]
    problems: tuple[str, ...] = ()  # claim-level failures that are not a check (unbound number, ...)
