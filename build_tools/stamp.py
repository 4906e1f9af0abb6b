"""The edition stamp on every page's footer, from edition.yml, and the rule that every run used its commit."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ._exceptions import ManualError, Problem, ProblemsError, display_path

FIELDS = ("edition", "date", "miles.image", "miles.branch", "miles.commit", "miles.commit_date")


class EditionFileError(ProblemsError):
    what = "edition file"
    hint = "edition.yml needs edition, date and miles: {image, branch, commit, commit_date}"


class CommitMismatch(ManualError):
    """A run made with another Miles build than the edition describes: its numbers belong to another edition."""

    hint = "rebuild that run with the edition's Miles commit, move it out of runs/, or change edition.yml"

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class Stamp:
    edition: str
    date: str
    image: str
    branch: str
    commit: str
    commit_date: str

    @property
    def text(self) -> str:
        """The footer line, e.g. 'Miles radixark/miles:latest, Miles main of 2026-10-15 · 08752a1 · ...'."""
        return (f"Miles {self.image}, Miles {self.branch} of {self.commit_date} · {self.commit} · "
                f"{self.date} · Edition {self.edition}")


def load_stamp(path: Path) -> Stamp:
    """Read edition.yml; every missing or empty field is reported at once."""
    where = display_path(path)
    if not path.is_file():
        raise EditionFileError([Problem(where, None, None, "file not found")])
    try:
        # BaseLoader keeps every value a string: a commit such as 0123456 must not become a number.
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise EditionFileError([Problem(where, mark.line + 1 if mark else None, None,
                                        f"not valid YAML: {getattr(error, 'problem', error)}")]) from None
    values, problems = {}, []
    for name in FIELDS:
        value = _dotted(document, name)
        if not isinstance(value, str) or not value.strip():
            problems.append(Problem(where, None, name, "expected a non-empty value"))
        values[name.split(".")[-1]] = str(value).strip() if value is not None else ""
    if problems:
        raise EditionFileError(problems)
    return Stamp(**values)


def _dotted(document: Any, dotted: str) -> Any:
    node = document
    for key in dotted.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def check_commits(configs: Mapping[str, Mapping[str, Any]], stamp: Stamp) -> None:
    """Fail with one line per run whose run.yaml miles.commit is not the stamp's commit."""
    lines = []
    for run_id, config in sorted(configs.items()):
        commit = str(_dotted(config, "miles.commit") or "").strip()
        if commit != stamp.commit:
            shown = commit or "no commit"
            lines.append(f"run {run_id} was made with Miles commit {shown}, but this edition is Miles "
                         f"commit {stamp.commit} (runs/{run_id}/run.yaml miles.commit)")
    if lines:
        raise CommitMismatch(lines)
