"""build_tools/editions/stamp.py: the edition stamp is the seeds' footer; the edition file's problems are listed; a run
made with another Miles commit fails with one line."""

from __future__ import annotations

import copy

import pytest

from build_tools.core._exceptions import EXIT_BAD_INPUT, EditionFileError, ManualError
from build_tools.editions.stamp import check_commits, load_stamp
from tests.conftest import ROOT
from tests.page_text import INDEX_SEED, METRICS_SEED, STAMP


def test_stamp_matches_the_seed_footer():
    stamp = load_stamp(ROOT / "edition.yml")
    assert stamp.text == STAMP
    for seed in (METRICS_SEED, INDEX_SEED):
        assert seed.read_text(encoding="utf-8").rstrip().splitlines()[-1].endswith(STAMP)


def test_stamp_file_problems_are_listed(tmp_path):
    path = tmp_path / "edition.yml"
    path.write_text("edition: '2026.10'\nmiles: {image: x, branch: main}\n", encoding="utf-8")
    with pytest.raises(EditionFileError) as caught:
        load_stamp(path)
    message = str(caught.value)
    assert "3 problems in the edition file" in message
    assert "edition.yml: date: missing (expected a date YYYY-MM-DD)" in message
    assert "edition.yml:2: miles.commit: missing (expected text of 7 to 40 hex digits)" in message
    assert "edition.yml:2: miles.commit_date: missing (expected a date YYYY-MM-DD)" in message


def test_a_run_with_another_miles_commit_fails_with_one_line(example_summaries):
    stamp = load_stamp(ROOT / "edition.yml")
    configs = {run_id: s.config for run_id, s in example_summaries.items()}
    check_commits(configs, stamp)  # the example runs all used the edition's commit
    other = copy.deepcopy(configs["baseline-seed1"])
    other["miles"]["commit"] = "1a2b3c4"
    with pytest.raises(ManualError) as caught:
        check_commits({**configs, "baseline-seed1": other}, stamp)
    assert str(caught.value) == ("run baseline-seed1 was made with Miles commit 1a2b3c4, but this edition is "
                                 "Miles commit 08752a1 (runs/baseline-seed1/run.yaml miles.commit)")
    assert caught.value.exit_code == EXIT_BAD_INPUT


def test_a_commit_named_whole_is_the_edition_s_short_one():
    from build_tools.editions.stamp import same_commit

    assert same_commit("31f1ca961a94cb860cec3b2dea34ec332bfa8f76", "31f1ca9")
    assert same_commit("31F1CA961", "31f1ca961a94cb860cec3b2dea34ec332bfa8f76")
    assert not same_commit("31f1ca961a94", "31f1ca8")
    assert not same_commit("31f1c", "31f1ca961a94")  # too short to name a commit
    assert not same_commit("", "08752a1")
