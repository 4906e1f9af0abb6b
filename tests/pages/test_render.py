"""build_tools/pages/render.py: the built pages, all of them, as the render stage writes them (each kind of page
is tested in tests/pages/)."""

from __future__ import annotations

import copy
from types import SimpleNamespace

from build_tools.checking.blocks import load_tables, read_blocks
from build_tools.core._layout import Layout
from build_tools.pages import render
from tests.conftest import ROOT
from tests.page_text import METRICS_SEED, markdown_tables, seed_tables


def test_built_pages(built_manual):
    pages = built_manual / "build" / "docs"
    metrics = (pages / "06-metrics.md").read_text(encoding="utf-8")
    for title, rows in seed_tables(METRICS_SEED).items():
        assert markdown_tables(metrics)[title] == rows
    index = (pages / "index.md").read_text(encoding="utf-8")
    assert "<!--" not in index and "Synthesized example runs, not measurements" in index
    chapters = sorted(p.name for p in pages.glob("[0-9][0-9]-*.md"))
    assert [name[:2] for name in chapters] == ["01", "02", "03", "04", "05", "06", "07", "08"]
    for name in chapters:
        text = (pages / name).read_text(encoding="utf-8")
        assert "```figure" not in text and "[](#fig-" not in text
    assert "| Symptom | First check | Fix |" in (pages / chapters[6]).read_text(encoding="utf-8")


def test_the_metrics_page_comes_from_the_tables_the_build_read(example_summaries, tmp_path):
    """docs/data/metrics.yml is read once, with the other tables (stage 3); the render stage reads no copy."""
    tables = copy.deepcopy(load_tables(ROOT / "docs" / "data"))
    tables["metrics"]["tables"][0]["title"] = "Rollout, as the build read it"
    result = SimpleNamespace(summaries=example_summaries, blocks=read_blocks(ROOT / "docs", ROOT / "figures"),
                             verdicts=[], figures=[], validated={}, proven=None, runs_read=None)
    render.render_pages(Layout(ROOT), tmp_path, result, tables)
    page = (tmp_path / "06-metrics.md").read_text(encoding="utf-8")
    assert "## Rollout, as the build read it" in page and "## Rollout\n" not in page
