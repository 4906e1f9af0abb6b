"""build_tools/pages/nav.py: a chapter's heading carries its number, as its figures do."""

from __future__ import annotations

from build_tools.pages.nav import numbered


def test_a_chapter_heading_carries_its_number():
    assert numbered("# Heat and the heat guard\n\nText.\n", "05-heat.md") == (
        "# 5. Heat and the heat guard\n\nText.\n")
    assert numbered("# Index of figures\n", "figures.md") == "# Index of figures\n"
