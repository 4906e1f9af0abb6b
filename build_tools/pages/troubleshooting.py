"""The troubleshooting table, from docs/data/troubleshooting.yml, where a chapter has
`<!-- troubleshooting-table -->`: one first check and one fix for each symptom."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from build_tools.core._escape import Markdown, md_code, md_part
from build_tools.core._exceptions import ChapterError, Problem

TROUBLESHOOTING_MARK = "<!-- troubleshooting-table -->"


def _code_spans(text: str) -> str:
    """Flags, paths and metric names as code, the rest escaped."""
    parts = re.split(r"(--[\w-]+|/?\w+(?:/\w+)+)", " ".join(str(text).split()))
    return Markdown("".join(md_code(part) if index % 2 else md_part(part) for index, part in enumerate(parts)))


def troubleshooting_table(tables: Mapping[str, Any]) -> str:
    """The symptoms of docs/data/troubleshooting.yml: one first check and one fix each."""
    data = tables.get("troubleshooting")
    rows = data.get("symptoms") if isinstance(data, Mapping) else data
    if not isinstance(rows, list) or not rows:
        raise ChapterError([Problem("docs/data/troubleshooting.yml", None, "symptoms",
                                    "expected a list of symptoms, each with symptom, check and fix")])
    lines = ["| Symptom | First check | Fix |", "|---|---|---|"]
    for row in rows:
        row = row if isinstance(row, Mapping) else getattr(row, "__dict__", {})
        lines.append(f"| {_code_spans(row.get('symptom', ''))} | {_code_spans(row.get('check', ''))}"
                     f" | {_code_spans(row.get('fix', ''))} |")
    return "\n".join(lines)
