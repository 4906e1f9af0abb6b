"""build_tools/pages/front_matter.py: the contents list the chapters by number; the home page credits measured
runs only to the pages that read them."""

from __future__ import annotations

from build_tools.pages.front_matter import METRICS_READER, contents, provenance_paragraph, runs_table
from build_tools.pages.nav import Page
from build_tools.pages.wording import provenance
from tests.page_text import with_config


def test_the_contents_list_the_chapters_by_number_then_the_other_pages():
    pages = [Page("figures.md", "Index of figures"), Page("06-metrics.md", "6. Metrics"),
             Page("01-step.md", "1. A step on one GPU"), Page("index.md", "Front matter")]
    assert contents(pages) == "\n".join([
        '<ol class="manual-contents" markdown="block">',
        '<li value="1" markdown="span">[A step on one GPU](01-step.md)</li>',
        '<li value="6" markdown="span">[Metrics](06-metrics.md)</li>',
        "</ol>", "", "[Index of figures](figures.md)"])


def test_the_home_page_credits_measured_runs_only_to_the_pages_that_read_them(example_summaries):
    first = sorted(example_summaries)[0]
    mixed = with_config(example_summaries, provenance=lambda rid: "measured" if rid == first else "example")
    source = provenance({rid: s.config for rid, s in mixed.items()})
    total = len(mixed)
    text = provenance_paragraph(source, "DGX Spark", {first: ["1.1", "1.2"], "other": ["2.1"]})
    assert f"This manual reads 1 measured and {total - 1} synthesized example runs" in text
    assert ("Figures 1.1 and 1.2 read measured runs; every other figure reads only synthesized examples. "
            "The Metrics page reads only synthesized examples.") in text
    table = runs_table(mixed, {first: ["1.1", "1.2", METRICS_READER]})
    assert f"| `{first}` |" in table and "| measured | 1.1, 1.2, [Metrics page](06-metrics.md) |" in table
    linked = runs_table(mixed, {first: ["1.1", "1.2", METRICS_READER]}, {"1.1": "01-step.md#fig-step-phases"})
    assert "| measured | [1.1](01-step.md#fig-step-phases), 1.2, [Metrics page](06-metrics.md) |" in linked
