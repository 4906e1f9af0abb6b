"""What the page tests share: the seed pages (their tables, their Index rows, their footer stamp) and the
rendered Markdown parsed into tables, and copies of the example summaries with their configuration changed."""

from __future__ import annotations

import copy
import re
from pathlib import Path

from tests.conftest import ROOT, SEEDS

METRICS_SEED = SEEDS / "000_7fca0c65374092d8.txt"
INDEX_SEED = SEEDS / "003_f3e693af6112d108.txt"
SPEC = ROOT / "docs" / "data" / "metrics.yml"
CHAPTERS = {5: "05-heat.md"}
STAMP = "Miles radixark/miles:latest, Miles main of 2026-10-15 · 08752a1 · 2026-10-15 · Edition 2026.10"


def seed_tables(path: Path) -> dict[str, list[list[str]]]:
    """Tables of a seed page: the line before a `Metric\t...` header is the title; rows are tab-separated."""
    lines = path.read_text(encoding="utf-8").splitlines()
    tables: dict[str, list[list[str]]] = {}
    for index, line in enumerate(lines):
        if "\t" in line and "\t" not in lines[index - 1] and index > 1:
            title = lines[index - 2] if not lines[index - 1].strip() else lines[index - 1]
            rows = []
            for row in lines[index:]:
                if "\t" not in row:
                    break
                rows.append(row.split("\t"))
            tables[title.strip()] = rows
    return tables


def seed_index_rows() -> list[list[str]]:
    """The Index of figures seed's rows: the figure's number, then its claim."""
    return [line.split("\t") for line in INDEX_SEED.read_text(encoding="utf-8").splitlines()
            if re.match(r"^\d+\.\d+\t", line)]


def _unmarkdown(cell: str) -> str:
    """A Markdown cell as the reader reads it: link text without its target, escapes removed."""
    cell = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", cell)
    return re.sub(r"\\(.)", r"\1", cell).strip()


def markdown_tables(text: str) -> dict[str, list[list[str]]]:
    """`## Title` followed by a pipe table, as rows of cells (the separator row dropped)."""
    tables: dict[str, list[list[str]]] = {}
    title = None
    for line in text.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip()
        elif line.startswith("|") and title is not None:
            cells = [_unmarkdown(cell) for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if not all(set(cell) <= {"-", ":"} for cell in cells):
                tables.setdefault(title, []).append(cells)
    return tables


def with_config(summaries: dict, **changes) -> dict:
    """Copies of the summaries with run.yaml fields changed (dotted name -> value), for every run."""
    out = {}
    for run_id, summary in summaries.items():
        clone = copy.copy(summary)
        clone.config = copy.deepcopy(summary.config)
        for dotted, value in changes.items():
            node = clone.config
            *path, last = dotted.split(".")
            for key in path:
                node = node[key]
            node[last] = value(run_id) if callable(value) else value
        out[run_id] = clone
    return out
