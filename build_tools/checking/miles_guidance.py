"""Miles' own guidance on its metrics (docs/data/miles_guidance.yml), set against the manual's numbers.

Miles' Monitoring page and its dashboard's advisor draw lines (`grad_norm` under `clip_grad`, 1.0 by default;
a truncated share under 0.25; ...). Each Metrics-page row and each figure check about a metric Miles draws a line
for is compared with it: where the manual's values go past the line, `make check` warns (naming the row or the
claim and Miles' line, file@commit), and the Metrics page writes a note under the row's table citing it. Nothing
here judges who is right: the manual's numbers are measured, Miles' line is its advice; the reader sees both.

`refresh` (make miles-guidance MILES=path) reads again, from a Miles checkout, what can be read mechanically:
the advisor's constants (ast, never executed) and the Monitoring table's rows.
"""

from __future__ import annotations

import ast
import math
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_tools.core._escape import Markdown, md_text, terminal_text
from build_tools.core._exceptions import ManualError, display_path
from build_tools.core._files import DOCUMENT_LIMIT
from build_tools.core._numbers import number
from build_tools.core._types import FigureBlock
from build_tools.ingest.miles_facts.checkout import EXPECTED, checkout_of, git_commit, python_of, refused, source_text

ADVISORY, MONITORING = "miles/dashboard/advisory.py", "docs/user-guide/monitoring.md"  # read of a Miles checkout
TABLE = "miles_guidance"  # docs/data/miles_guidance.yml, as blocks.load_tables names it
WORDS = {"below": "under", "above": "over"}


@dataclass(frozen=True)
class Rule:
    """One line Miles draws: the metric it is about, the side that is healthy, and Miles' own words."""

    metric: str
    direction: str  # "below": healthy under the threshold; "above": healthy over it
    threshold: float
    quote: str
    source: str
    commit: str

    def crossed_by(self, low: float, high: float) -> bool:
        return high > self.threshold if self.direction == "below" else low < self.threshold

    def cited(self) -> str:
        return f"{self.source}@{self.commit}"


@dataclass(frozen=True)
class Disagreement:
    """A row or claim of the manual whose values go past one of Miles' lines."""

    where: str  # docs/data/metrics.yml tables[1].rows[2], or docs/01-step.md:108 figure 1.3
    table: int | None  # the Metrics page's table the note goes under (None for a claim)
    rule: Rule
    low: float
    high: float
    decimals: int | None  # a row's rounding; None for a claim (its shortest form, six digits at most)

    def past(self) -> str:
        """The manual's value past the line, at the row's rounding."""
        value = self.high if self.rule.direction == "below" else self.low
        return f"{value:g}" if self.decimals is None else number(value, self.decimals)

    def warning(self) -> str:
        return (f"{self.where}: {self.rule.metric} reaches {self.past()}, {WORDS[self.rule.direction]} which Miles "
                f"says it should stay: {self.rule.threshold!r} (\"{self.rule.quote}\", {self.rule.cited()})")

    def note(self) -> Markdown:
        return md_text(f"{self.rule.metric} should stay {WORDS[self.rule.direction]} "
                       f"{self.rule.threshold!r} (\"{self.rule.quote}\", {self.rule.cited()}); our range reaches "
                       f"{self.past()}.")


def rules_of(table: Any) -> list[Rule]:
    """The rules that name a metric and a threshold: the ones a number of the manual can be set against."""
    rules = table.get("rules") if isinstance(table, Mapping) else None
    return [Rule(str(item["metric"]), str(item["direction"]), float(item["threshold"]), " ".join(str(
                 item.get("quote", "")).split()), str(item.get("source", "")), str(item.get("commit", "")))
            for item in rules or [] if isinstance(item, Mapping) and item.get("metric")
            and item.get("direction") in WORDS and isinstance(item.get("threshold"), int | float)]


def _span(runs: Iterable[Any], metric: str) -> tuple[float, float] | None:
    """The least and greatest value of the metric over the runs (every step), or None where none has it."""
    from build_tools.summarise.metric_rows import facts_of

    lows, highs = [], []
    for run in runs:
        try:
            facts = facts_of(run, metric, heat_rule=True)
        except (KeyError, RuntimeError):
            continue
        if facts.low is not None and facts.high is not None and math.isfinite(facts.low + facts.high):
            lows.append(facts.low)
            highs.append(facts.high)
    return (min(lows), max(highs)) if lows else None


def of_metrics_rows(spec: Mapping[str, Any], summaries: Mapping[str, Any], rules: Sequence[Rule],
                    where: str = "docs/data/metrics.yml") -> list[Disagreement]:
    """Each Metrics-page row with a range whose runs' values go past Miles' line for its metric."""
    from build_tools.summarise.metric_rows import select

    by_metric = {rule.metric: rule for rule in rules}
    sets = spec.get("run_sets") or {}
    found = []
    for t_index, table in enumerate(spec.get("tables") or []):
        for r_index, row in enumerate(table.get("rows") or []):
            rule = by_metric.get(str(row.get("metric")))
            if rule is None or not table.get("column") or row.get("runs") not in sets:
                continue
            span = _span(select(summaries, sets[row["runs"]] or {}), rule.metric)
            if span is not None and rule.crossed_by(*span):
                found.append(Disagreement(f"{where} tables[{t_index}].rows[{r_index}]", t_index, rule, *span,
                                          int(row.get("decimals", 2))))
    return found


def of_claims(blocks: Sequence[FigureBlock], summaries: Mapping[str, Any], rules: Sequence[Rule]) -> list[Disagreement]:
    """Each figure check about a metric Miles draws a line for whose runs' values go past it."""
    by_metric = {rule.metric: rule for rule in rules}
    found = []
    for block in blocks:
        for index, check in enumerate(block.checks):
            rule = by_metric.get(str(check.get("metric")))
            if rule is None:
                continue
            runs = check.get("runs") or block.runs
            span = _span([summaries[run] for run in runs if run in summaries], rule.metric)
            if span is not None and rule.crossed_by(*span):
                says = str(check.get("says", ""))
                found.append(Disagreement(f"{block.chapter_file}:{block.line} figure {block.number} checks[{index}] "
                                          f"({says!r})", None, rule, *span, None))
    return found


def notes_by_table(spec: Mapping[str, Any], summaries: Mapping[str, Any], table: Any) -> dict[int, list[Markdown]]:
    """The Metrics page's notes: under each table, one per row past Miles' line."""
    notes: dict[int, list[Markdown]] = {}
    for disagreement in of_metrics_rows(spec, summaries, rules_of(table)):
        if disagreement.table is not None:
            notes.setdefault(disagreement.table, []).append(disagreement.note())
    return notes


# --- make miles-guidance MILES=path: what a Miles checkout says, read again ------------------------------------


def _read(miles: Path, path: str) -> str:
    """A file of a Miles work tree (a plain UTF-8 file inside it), or of a bare git folder's HEAD (the snapshot the
    manual is checked against); ManualError naming it."""
    if os.path.lexists(miles / path) or not (miles / "HEAD").is_file():
        return source_text(miles, path)
    try:
        done = subprocess.run(["git", "-C", str(miles), "show", f"HEAD:{path}"], capture_output=True, check=False,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ManualError(f"{display_path(miles)}: cannot run git to read HEAD:{path} ({error})") from None
    where = f"{display_path(miles)}@HEAD:{path}"
    if done.returncode != 0:
        raise ManualError(f"{where}: not in this git folder: {EXPECTED}")
    if len(done.stdout) > DOCUMENT_LIMIT:
        raise ManualError(f"{where}: is {len(done.stdout):,} bytes, above the limit of {DOCUMENT_LIMIT:,} bytes")
    try:
        return done.stdout.decode("utf-8")
    except UnicodeDecodeError as error:
        line = done.stdout[:error.start].count(b"\n") + 1
        raise ManualError(f"{where}:{line}: not UTF-8 text") from None


def _commit(miles: Path) -> str | None:
    return git_commit(miles, "--short=9")


def advisor_constants(source: str, where: str = "miles/dashboard/advisory.py") -> dict[str, float]:
    """The module-level number constants of advisory.py (NAME = 0.5), read with ast: never run. A constant that is
    no finite double (a 400-digit integer, 1e999) is one line naming it (ManualError)."""
    found: dict[str, float] = {}
    for node in python_of(source, where).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, int | float)
                and not isinstance(node.value.value, bool)):
            found[node.targets[0].id] = _finite(node.value.value, f"{where}:{node.lineno}: {node.targets[0].id}")
    return found


def _finite(value: int | float, where: str) -> float:
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        shown = f"a whole number of {len(str(abs(value)))} digits" if isinstance(value, int) and \
            abs(value) < 10**4000 else repr(value) if isinstance(value, float) else "a whole number too large"
        raise ManualError(f"{where}: {shown} is no threshold: expected a finite number")
    return number


FIRST_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def watch_rows(markdown: str) -> dict[str, tuple[str, float | None]]:
    """The "What to watch" table: signal (its first cell, without backticks) -> (the row as written, the first
    number of its "Healthy pattern" cell)."""
    section = markdown.split("## What to watch", 1)[1].split("\n## ", 1)[0] if "## What to watch" in markdown else ""
    rows: dict[str, tuple[str, float | None]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not line.lstrip().startswith("|") or set(cells[0]) <= set("-: ") or cells[0] == "Signal":
            continue
        number_match = FIRST_NUMBER.search(cells[1])
        found = float(number_match[0]) if number_match else None  # ASCII digits: never an overflow, at most inf
        rows[cells[0].strip("`")] = (" | ".join(cells), found if found is None or math.isfinite(found) else None)
    return rows


def refresh(miles: Path, guidance: Path) -> list[str]:
    """docs/data/miles_guidance.yml with what the checkout says; the lines that changed, for the terminal."""
    import yaml

    text = guidance.read_text(encoding="utf-8")
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    doc = yaml.safe_load(text)
    constants = advisor_constants(_read(miles, ADVISORY), display_path(miles / ADVISORY))
    rows = watch_rows(_read(miles, MONITORING))
    commit = _commit(miles)
    changed: list[str] = []
    for rule in doc["rules"]:
        new = dict(rule)
        if rule.get("constant"):
            if rule["constant"] not in constants:
                changed.append(f"{rule['id']}: {rule['constant']} is no longer in advisory.py; kept as it was")
                continue
            new["threshold"] = constants[rule["constant"]]
        elif rule.get("signal"):
            if rule["signal"] not in rows:
                changed.append(f"{rule['id']}: no row {rule['signal']!r} in the Monitoring table; kept as it was")
                continue
            new["quote"], found = rows[rule["signal"]]
            if rule.get("threshold") is not None and found is not None:
                new["threshold"] = found
        if commit:
            new["commit"] = commit
        changed += [f"{rule['id']}: {key} {rule.get(key)!r} -> {new[key]!r}"
                    for key in new if new[key] != rule.get(key)]
        rule.update(new)
    body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=116)
    guidance.write_text(header + body, encoding="utf-8")
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    """`make miles-guidance MILES=path` (python -m build_tools.checking.miles_guidance PATH)."""
    args = list(sys.argv[1:] if argv is None else argv)
    where = args[0] if args else os.environ.get("MILES", "")
    try:
        changed = refresh(checkout_of(where, "miles-guidance"), Path("docs/data/miles_guidance.yml"))
    except ManualError as error:
        return refused(error)
    print(terminal_text("\n".join(changed) if changed else "docs/data/miles_guidance.yml: unchanged"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
