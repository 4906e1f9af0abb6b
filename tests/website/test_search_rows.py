"""build_tools/website/search_rows.py: each table row is its own search entry, and the checks' notes are left out."""

from __future__ import annotations

import json

import markdown

from build_tools.website.search_rows import index_rows, page_rows, row_id


def test_rows_get_ids_and_tables_leave_materials_index():
    page = markdown.markdown("| Metric | Meaning |\n|---|---|\n| `perf/step_time` | the full step |\n"
                             "| `perf/step_time` | again |\n| &lt;b&gt;x | y |\n| <b>z</b> | w |\n",
                             extensions=["tables", "build_tools.website.markdown_wbr",
                                         "build_tools.website.search_rows"])
    assert '<table data-search-exclude="">' in page
    assert '<tr id="row-perf-step-time">' in page and '<tr id="row-perf-step-time-2">' in page
    assert page_rows(page) == [("row-perf-step-time", ["perf/step_time", "the full step"]),
                               ("row-perf-step-time-2", ["perf/step_time", "again"]),
                               ("row-bx", ["<b>x", "y"]), ("row-z", ["z", "w"])]
    assert row_id("", set()) == "row-row"


def test_index_rows_adds_one_entry_per_row_after_its_page(tmp_path):
    (tmp_path / "search").mkdir()
    (tmp_path / "a.html").write_text('<table data-search-exclude=""><tbody><tr id="row-x"><td>x &lt;y&gt;</td>'
                                     "<td>one</td><td>two</td></tr></tbody></table>", encoding="utf-8")
    docs = [{"location": "a.html", "title": "A", "text": ""}, {"location": "a.html#s", "title": "S", "text": ""},
            {"location": "b.html", "title": "B", "text": ""}]
    (tmp_path / "search" / "search_index.json").write_text(json.dumps({"config": {}, "docs": docs}))
    index_rows(tmp_path)
    written = json.loads((tmp_path / "search" / "search_index.json").read_text())["docs"]
    assert [doc["location"] for doc in written] == ["a.html", "a.html#s", "a.html#row-x", "b.html"]
    assert written[2] == {"location": "a.html#row-x", "title": "x &lt;y&gt;", "text": "one · two"}


def test_index_rows_adds_zensicals_entries_with_their_pages_path_and_a_level(tmp_path):
    """Zensical's index is search.json's `items`, each with the navigation path above it; its pages keep the rows'
    ids but not the attribute that leaves their table out of the index."""
    (tmp_path / "a.html").write_text('<table><tbody><tr id="row-x"><td>x</td><td>one</td></tr>'
                                     "<tr><td>no id</td><td>two</td></tr></tbody></table>", encoding="utf-8")
    items = [{"location": "a.html", "level": 1, "title": "A", "text": "", "path": ["Part"], "tags": []},
             {"location": "b.html", "level": 1, "title": "B", "text": "", "path": ["Other"], "tags": []}]
    (tmp_path / "search.json").write_text(json.dumps({"config": {"lang": ["en"]}, "items": items}))
    index_rows(tmp_path)
    written = json.loads((tmp_path / "search.json").read_text())
    assert written["config"] == {"lang": ["en"]}
    assert written["items"] == [items[0], {"location": "a.html#row-x", "title": "x", "text": "one", "level": 3,
                                           "path": ["Part"], "tags": []}, items[1]]


def test_the_built_search_index_has_a_row_per_entry_and_no_check_notes(built_manual):
    docs = json.loads((built_manual / "site" / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    by_location = {doc["location"]: doc for doc in docs}
    assert by_location["06-metrics.html#row-perf-step-time"]["title"] == "perf/step_time"
    assert by_location["06-metrics.html#row-perf-step-time"]["text"].startswith("the full step · ")
    assert not any("perf/rollout_time" in doc["text"] for doc in docs)  # in no other row's or section's text
    assert not any("Checked against the runs" in doc["text"] for doc in docs)
    assert len(by_location) == len(docs)  # every location once: Material's search keys its entries by it
