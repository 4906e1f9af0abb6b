"""The "checked against the runs" note in words a reader follows: no configuration keys, no `+/-`, the unit
of the observation on the range the words allow; and the built pages hold no such notation."""

from __future__ import annotations

import re

from build_tools.pages import reader_note


def test_a_tolerance_is_the_range_the_words_allow_with_its_unit():
    item = reader_note.check_item("falls from about 720", "first-window mean is 721 tokens",
                                  "first-window mean 720 +/- 36", {})
    assert item == ("<li><q>falls from about 720</q>: first-window mean is 721 tokens "
                    '<span class="manual-needs">(the claim needs first-window mean between 684 and 756 tokens)'
                    "</span></li>")
    assert reader_note.plain("2 +/- 0.5", "s") == "between 1.5 and 2.5 s"
    assert reader_note.plain("0.015 +/- 0.0015 (near: 10 %)") == "between 0.0135 and 0.0165"
    assert reader_note.plain("63 +/- 0.5 (tolerance set)", "min") == "between 62.5 and 63.5 min"


def test_keys_become_words_and_flags_the_flag_a_reader_types():
    assert reader_note.plain("flags.use_fault_tolerance is false") == (
        "the flag <code>--use-fault-tolerance</code> is false")
    assert reader_note.plain("at least lab.ray_memory_usage_threshold in every run") == (
        "at least Ray&#x27;s memory limit in every run")
    assert reader_note.plain("lab.some_new_field is 3") == "some new field is 3"
    assert reader_note.plain("a -> b <x>") == "a → b &lt;x&gt;"


def test_built_notes_are_plain(built_manual):
    site = built_manual / "site"
    for page in sorted(site.glob("0*.html")):
        for note in re.findall(r'<details class="manual-checked"[^>]*>(.*?)</details>', page.read_text(), re.S):
            assert "+/-" not in note, page.name
            assert not re.search(r"\b(?:flags|lab|hardware|model|sampling)\.[a-z_]+", note), (page.name, note)


def test_phases_in_the_captions_words_and_metric_names_as_code():
    assert reader_note.plain("rollout -> scoring -> log_probs -> actor_train -> update_weights") == (
        "rollout → scoring → log probabilities → training → weight update")
    assert reader_note.plain("median update_weights_time is 1.4") == "median <code>update_weights_time</code> is 1.4"
