"""build_tools/pages/wording.py: numbers as the pages write them, and what the runs are (example, measured, mixed)."""

from __future__ import annotations

from build_tools.pages.wording import number, provenance, words


def test_number_formatting():
    assert number(1024) == "1,024"
    assert number(0.000634, 5) == "0.00063"
    assert number(-0.0001, 2) == "0.00"
    assert number(152.60000000000002, 1) == "152.6"
    assert words(1) == "one" and words(2) == "two" and words(48) == "48"


def test_provenance_of_example_measured_and_mixed_runs():
    assert provenance({"a": {"provenance": "example"}}).kind == "example"
    assert provenance({"a": {"provenance": "measured"}}).kind == "measured"
    mixed = provenance({"a": {"provenance": "measured"}, "b": {"provenance": "example"}, "c": {}})
    assert mixed.kind == "mixed" and mixed.measured == ("a",) and mixed.examples == ("b", "c")
    # One short line: how many runs of each kind, never their ids.
    assert mixed.footer() == "Built from 1 measured and 2 synthesized example runs."
    assert provenance({"a": {"provenance": "example"}}).footer() == (
        "Built from 1 synthesized example run, not measurements.")
    many = provenance({f"r{i}": {"provenance": "measured" if i < 12 else "example"} for i in range(20)})
    assert many.footer() == "Built from 12 measured and 8 synthesized example runs."
    assert provenance({f"r{i}": {"provenance": "measured"} for i in range(3)}).footer() == (
        "Built from 3 measured runs.")
