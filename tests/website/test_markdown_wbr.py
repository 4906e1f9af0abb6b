"""build_tools/website/markdown_wbr.py: a metric name in a table cell breaks only after a slash or an underscore."""

from __future__ import annotations


def test_metric_names_in_table_cells_break_only_after_slash_and_underscore():
    import markdown

    html = markdown.markdown("| Metric |\n|---|\n| `perf/rollout_time` |\n\nNot `a/b_c` here.",
                             extensions=["tables", "build_tools.website.markdown_wbr"])
    assert ('<td><code><span class="manual-nobreak">perf/</span><wbr /><span class="manual-nobreak">rollout_</span>'
            '<wbr /><span class="manual-nobreak">time</span></code></td>') in html
    assert "<code>a/b_c</code>" in html  # outside a table cell: unchanged
