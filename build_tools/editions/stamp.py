"""The edition stamp on every page's footer, from edition.yml, and the rule that every run used its commit."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from build_tools.core._exceptions import EditionFileError, InputProblem, Problem, commit_mismatch, display_path
from build_tools.core._files import read_text
from build_tools.core._types import Stamp
from build_tools.core._yaml import parse_yaml
from build_tools.ingest import schemas, schemas_manual


def load_stamp(path: Path) -> Stamp:
    """Read edition.yml against its schema; every wrong or missing field is reported at once."""
    where = display_path(path)
    if not path.is_file():
        raise EditionFileError([Problem(where, None, None, "file not found")])
    try:
        doc = parse_yaml(read_text(path), where)
    except InputProblem as error:
        raise EditionFileError([error.problem]) from None
    model, problems = schemas.validate(schemas_manual.EditionYaml, doc.value, where, doc.line_of)
    if model is None:
        raise EditionFileError(problems or [Problem(where, 1, None, "expected a mapping of fields")])
    miles = model.miles
    return Stamp(edition=model.edition, date=model.date, image=miles.image, branch=miles.branch,
                 commit=miles.commit, commit_date=miles.commit_date)


def same_commit(one: str, other: str) -> bool:
    """Two names of one commit: equal, or one the other's abbreviation (git's short form, 7 digits or more): a
    job's sources name its commit whole (an MLflow tag, git rev-parse), an edition may name it short."""
    one, other = one.strip().lower(), other.strip().lower()
    return one == other or (min(len(one), len(other)) >= 7 and (one.startswith(other) or other.startswith(one)))


def check_commits(configs: Mapping[str, Mapping[str, Any]], stamp: Stamp) -> None:
    """Fail with one line per run whose run.yaml miles.commit is not the stamp's commit."""
    others = []
    for run_id, config in sorted(configs.items()):
        miles = config.get("miles")
        commit = str(miles.get("commit") or "" if isinstance(miles, Mapping) else "").strip()
        if not same_commit(commit, stamp.commit):
            others.append((run_id, commit))
    if others:
        raise commit_mismatch(others, stamp.commit)
