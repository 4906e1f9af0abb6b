"""Stage 4: check the claim of every figure against the run summaries, then report and fail once.

Every check of every block runs; a claim fails when a check fails or when a number of its text is bound
by no check (see docs/README.md, "Number binding"). The reports for tools are build/claims.json and
build/claims.junit.xml; `raise_if_failed` ends the build with exit code 3 when any claim failed.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from build_tools.checking.checks import claim_numbers, evaluate, runs_text, validate
from build_tools.checking.checks._margin import as_json
from build_tools.core._escape import xml_text
from build_tools.core._exceptions import ChapterError, ClaimsFailed, Problem
from build_tools.core._staging import write_atomic
from build_tools.core._types import CheckResult, ClaimVerdict, FigureBlock, RunSummary


def check_claims(blocks: Sequence[FigureBlock], summaries: dict[str, RunSummary],
                 tables: dict[str, Any]) -> list[ClaimVerdict]:
    """A verdict for every claim; ChapterError (listing all) if a block names an unknown run or bad checks."""
    problems: list[Problem] = []
    for block in blocks:
        problems += _block_problems(block, summaries, tables)
    if problems:
        raise ChapterError(problems)
    return [judge(block, summaries, tables) for block in blocks]


def _block_problems(block: FigureBlock, summaries: dict[str, RunSummary], tables: dict[str, Any]) -> list[Problem]:
    where = f"figure {block.number}"
    problems = [Problem(block.chapter_file, block.line, where,
                        f"run {run!r} is not among the runs (no runs/{run}/)")
                for run in block.runs if run not in summaries]
    problems += [Problem(block.chapter_file, block.line, where, f"table {table!r} is not in docs/data/")
                 for table in block.tables if table not in tables]
    for index, params in enumerate(block.checks, start=1):
        _, messages = validate(params, block, index, block.prose)
        problems += [Problem(block.chapter_file, block.line, where, message) for message in messages]
    return problems


def judge(block: FigureBlock, summaries: dict[str, RunSummary], tables: dict[str, Any]) -> ClaimVerdict:
    """Run every check of one block and bind every number of its claim."""
    prose = block.prose
    results = tuple(evaluate(params, block, summaries, tables, prose) for params in block.checks)
    bound = {text.lower() for result in results for text in result.binds}
    unbound: list[str] = []
    for token in claim_numbers(block.claim, prose):
        if token.text.lower() not in bound and token.text not in unbound:
            unbound.append(token.text)
    problems = tuple(f"unbound number {text} in the claim of figure {block.number}" for text in unbound)
    failed = problems or any(result.status == "fail" for result in results)
    return ClaimVerdict(block, "fail" if failed else "pass", results, problems)


# --- what a failing check proves ----------------------------------------------------------------


def says(block: FigureBlock, params: dict[str, Any]) -> str:
    """The fragment of the claim a check proves: its `says`, else the clause holding its first bound number."""
    if params.get("says"):
        return str(params["says"])
    binds = params.get("binds") or []
    clauses = [c.strip() for c in re.split(r",\s+(?:and\s+)?|\s+and\s+", block.claim.rstrip(".")) if c.strip()]
    for clause in clauses:
        if binds and re.search(rf"(?<![\w.,]){re.escape(binds[0])}(?![\w])", clause, re.IGNORECASE):
            return clause
    return block.claim.rstrip(".")


def _check_runs(block: FigureBlock, params: dict[str, Any]) -> list[str]:
    return list(params.get("runs") or block.runs)


def report_lines(verdicts: Sequence[ClaimVerdict]) -> list[str]:
    """One line per passing figure; one line per failing check or claim problem of a failing one."""
    lines: list[str] = []
    for verdict in verdicts:
        block = verdict.block
        head = f"{block.chapter_file}:{block.line} fig {block.number}"
        if verdict.status == "pass":
            lines.append(f"{head} pass  " + "; ".join(result.message for result in verdict.checks))
            continue
        for params, result in zip(block.checks, verdict.checks, strict=True):
            if result.status == "fail":
                lines.append(f'{head} FAIL "{says(block, params)}": {result.message} '
                             f"(runs: {runs_text(_check_runs(block, params))})")
        lines += [f"{head} FAIL {problem}" for problem in verdict.problems]
    return lines


# --- reports for tools --------------------------------------------------------------------------


def _check_record(block: FigureBlock, params: dict[str, Any], result: CheckResult) -> dict[str, Any]:
    return {"name": result.name, "status": result.status, "says": says(block, params),
            "observed": result.observed, "expected": result.expected, "message": result.message,
            "binds": list(result.binds), "runs": _check_runs(block, params), "margin": as_json(result.margin)}


def report_data(verdicts: Sequence[ClaimVerdict]) -> dict[str, Any]:
    """What build/claims.json holds."""
    figures = []
    for verdict in verdicts:
        block = verdict.block
        figures.append({
            "number": block.number, "id": block.id, "file": block.chapter_file, "line": block.line,
            "claim": block.claim, "status": verdict.status, "runs": list(block.runs),
            "checks": [_check_record(block, p, r) for p, r in zip(block.checks, verdict.checks, strict=True)],
            "problems": list(verdict.problems),
        })
    failed = sum(1 for v in verdicts if v.status == "fail")
    return {"total": len(verdicts), "passed": len(verdicts) - failed, "failed": failed, "figures": figures}


def junit_xml(verdicts: Sequence[ClaimVerdict]) -> bytes:
    """One test case per claim; a failing claim has a failure element with its report lines. Every string from
    the chapters passes through _escape.xml_text, so a control character in a claim leaves the file XML."""
    failed = sum(1 for v in verdicts if v.status == "fail")
    suite = ET.Element("testsuite", name="claims", tests=str(len(verdicts)), failures=str(failed), errors="0")
    for verdict in verdicts:
        block = verdict.block
        case = ET.SubElement(suite, "testcase", classname=xml_text(block.chapter_file),
                             name=xml_text(f"fig {block.number} {block.id}"), file=xml_text(block.chapter_file),
                             line=str(block.line))
        _margin_properties(case, verdict)
        ET.SubElement(case, "system-out").text = xml_text(block.claim)
        if verdict.status == "fail":
            lines = [xml_text(line) for line in report_lines([verdict])]
            failure = ET.SubElement(case, "failure", message=lines[0] if lines else "claim failed", type="claim")
            failure.text = "\n".join(lines)
    root = ET.Element("testsuites", name="claims", tests=str(len(verdicts)), failures=str(failed))
    root.append(suite)
    ET.indent(root)
    xml: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)  # bytes for any encoding but "unicode"
    return xml + b"\n"


def _margin_properties(case: ET.Element, verdict: ClaimVerdict) -> None:
    """The margins as JUnit properties: `margin`, the claim's smallest fraction, and one `margin check N (name)`
    per check that has one ("headroom 0.3 min, edge 63.5, fraction 0.6, worst no-watchdog")."""
    found = [(index, result.name, result.margin) for index, result in enumerate(verdict.checks, start=1)
             if result.margin is not None]
    if not found:
        return
    properties = ET.SubElement(case, "properties")
    fractions = [m.fraction for _, _, m in found if m.fraction is not None]
    if fractions:
        ET.SubElement(properties, "property", name="margin", value=repr(min(fractions)))
    for index, name, m in found:
        text = (f"headroom {m.headroom!r}{' ' + m.unit if m.unit else ''}, edge {m.edge!r}, fraction "
                f"{'none' if m.fraction is None else repr(m.fraction)}" + (f", worst {m.worst}" if m.worst else ""))
        ET.SubElement(properties, "property", name=xml_text(f"margin check {index} ({name})"), value=xml_text(text))


def write_reports(verdicts: Sequence[ClaimVerdict], build_dir: Path) -> tuple[Path, Path]:
    """build/claims.json and build/claims.junit.xml; returns their paths."""
    json_path, xml_path = build_dir / "claims.json", build_dir / "claims.junit.xml"
    text = json.dumps(report_data(verdicts), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_atomic(json_path, text.encode("utf-8"))  # whole or not at all: a reader never sees half a report
    write_atomic(xml_path, junit_xml(verdicts))
    return json_path, xml_path


def raise_if_failed(verdicts: Sequence[ClaimVerdict]) -> None:
    """ClaimsFailed (exit code 3) naming every failing claim, if any failed."""
    failing = [v for v in verdicts if v.status == "fail"]
    if failing:
        raise ClaimsFailed(report_lines(failing), len(failing), len(verdicts))
