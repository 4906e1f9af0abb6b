"""What `manual check` says of the claims' margins, read from build/claims.json (no pandas: a check with nothing
changed prints them too): the claims closest to failing, a warning for each claim whose margin is below a
threshold (`--warn-margin`, `warn_margin` in edition.yml), and GitHub workflow commands for a pull request.

A claim's margin is that of its check closest to failing among those with a fraction (build_tools/checking/checks/
_margin.py); an exact count and a limit of 0 have none and are never ranked.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_tools.core._escape import workflow_command
from build_tools.core._numbers import fmt

CLOSEST = 5  # how many claims `make check` lists as closest to failing


@dataclass(frozen=True)
class ClaimMargin:
    """The margin of one claim: its figure, where its block is, the words of its closest check, the margin."""

    number: str
    file: str
    line: int
    says: str
    check: str  # the check's name
    margin: Mapping[str, Any]  # as build/claims.json holds it

    @property
    def fraction(self) -> float:
        value: float = self.margin["fraction"]
        return value

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line} fig {self.number}"


def threshold_of(edition_yml: Path) -> float | None:
    """edition.yml's warn_margin, read without its schema (pydantic costs half a second): the check that wrote
    build/claims.json validated this very file (it is one of the inputs its key hashes), so a value here is one
    the schema accepted: a number above 0."""
    import yaml

    value = yaml.safe_load(edition_yml.read_text(encoding="utf-8")).get("warn_margin")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def read_report(path: Path) -> dict[str, Any]:
    """build/claims.json as written by the check that just ran (or the one whose report is printed again)."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def headroom_text(margin: Mapping[str, Any]) -> str:
    """"0.3 min": the headroom in the claim's unit."""
    unit = f" {margin['unit']}" if margin.get("unit") else ""
    return f"{fmt(margin['headroom'])}{unit}"


def claim_margins(report: Mapping[str, Any]) -> list[ClaimMargin]:
    """Each passing claim whose checks have a ranked margin, with the check closest to failing; in figure order."""
    found = []
    for figure in report.get("figures", []):
        if figure.get("status") != "pass":
            continue
        ranked = [c for c in figure.get("checks", []) if c.get("margin") and c["margin"].get("fraction") is not None]
        if ranked:
            check = min(ranked, key=lambda c: c["margin"]["fraction"])
            found.append(ClaimMargin(figure["number"], figure["file"], figure["line"], check["says"], check["name"],
                                     check["margin"]))
    return found


def closest(report: Mapping[str, Any], count: int = CLOSEST) -> list[ClaimMargin]:
    """The `count` passing claims with the smallest fractions, smallest first (ties in figure order)."""
    return sorted(claim_margins(report), key=lambda c: c.fraction)[:count]


def _details(margin: Mapping[str, Any]) -> str:
    worst = f"; worst: {margin['worst']}" if margin.get("worst") else ""
    return f"edge {fmt(margin['edge'])}, fraction {fmt(margin['fraction'])}{worst}"


def closest_lines(report: Mapping[str, Any], count: int = CLOSEST) -> list[str]:
    """The section that ends `make check`: the claims closest to failing, one line each."""
    claims = closest(report, count)
    if not claims:
        return []
    lines = [f"Closest to failing ({len(claims)} of {len(claim_margins(report))} claims with a margin; fraction: "
             "the headroom over the tolerance, 0 at the edge):"]
    lines += [f'  fig {c.number} "{c.says}": headroom {headroom_text(c.margin)} ({_details(c.margin)})'
              for c in claims]
    return lines


def below(report: Mapping[str, Any], threshold: float) -> list[ClaimMargin]:
    """The passing claims whose margin, as a fraction, is below the threshold; in figure order."""
    return [c for c in claim_margins(report) if c.fraction < threshold]


def _warning_body(claim: ClaimMargin, threshold: float) -> str:
    worst = f"; worst: {claim.margin['worst']}" if claim.margin.get("worst") else ""
    return (f'"{claim.says}": margin fraction {fmt(claim.fraction)} is below {fmt(threshold)} '
            f"(headroom {headroom_text(claim.margin)}, edge {fmt(claim.margin['edge'])}{worst})")


def warning_text(claim: ClaimMargin, threshold: float) -> str:
    """One warning: which claim, its words, its margin against the threshold."""
    return f"{claim.where} {_warning_body(claim, threshold)}"


# --- GitHub workflow commands -----------------------------------------------------------------------------


def failure_commands(report: Mapping[str, Any]) -> list[str]:
    """An `::error` for each failing check and claim problem, on the line of its figure block."""
    commands = []
    for figure in report.get("figures", []):
        if figure.get("status") != "fail":
            continue
        props = {"file": figure["file"], "line": str(figure["line"]), "title": f"Fig {figure['number']}"}
        texts = [f'"{c["says"]}": {c["message"]}' for c in figure.get("checks", []) if c.get("status") == "fail"]
        texts += list(figure.get("problems", []))
        commands += [workflow_command("error", text, props) for text in texts]
    return commands


def warning_commands(claims: Sequence[ClaimMargin], threshold: float) -> list[str]:
    """A `::warning` for each claim whose margin is below the threshold, on the line of its figure block."""
    return [workflow_command("warning", _warning_body(c, threshold),
                             {"file": c.file, "line": str(c.line), "title": f"Fig {c.number}"}) for c in claims]


def data_warning_commands(warnings: Iterable[str]) -> list[str]:
    """A `::warning` for each warning the runs gave (they name their own file)."""
    return [workflow_command("warning", text, {"title": "run data"}) for text in warnings]


def guidance_commands(warnings: Iterable[str]) -> list[str]:
    """A `::warning` for each Metrics row or claim past a line Miles' own guidance draws (each names its place)."""
    return [workflow_command("warning", text, {"title": "Miles' guidance"}) for text in warnings]
