"""make serve's rebuilds: summarise_runs(keep=True) serves its last outcome again only while nothing it read
changed (summarise/last_read.py), and what it serves equals what reading again gives."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from build_tools.core._types import RunsRead
from build_tools.pages import metrics_table
from build_tools.store import run_hash, summary_cache
from build_tools.summarise import last_read, summary
from build_tools.summarise.summary import summarise_runs
from tests.conftest import ROOT

WANTED = summary.Wanted(frozenset({"baseline-seed1"}))


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """Two example runs, copied over a clock tick before any call starts."""
    folder = tmp_path / "runs"
    for run_id in ("baseline-seed1", "no-watchdog"):
        shutil.copytree(ROOT / "runs" / run_id, folder / run_id)
    time.sleep(last_read.TICK_NS / 1e9 * 2)
    last_read.forget()  # no earlier test's outcome
    return folder


def _call(runs: Path, cache: Path, keep: bool = True, wanted: summary.Wanted = WANTED) -> dict[str, Any]:
    warnings: list[str] = []
    validated: dict[str, summary.ValidatedRun] = {}
    read = RunsRead()
    summaries = summarise_runs(runs, cache, warnings=warnings, wanted=wanted, validated=validated, read=read,
                               keep=keep)
    return {"summaries": {run_id: (s.source_hash, s.config, s.steps.to_dict()) for run_id, s in summaries.items()},
            "validated": validated, "warnings": warnings, "listings": read.listings, "digests": read.digests}


def _reading_counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The cache's files read: what a call that is not served reads first."""
    read: list[str] = []
    validated, memo = summary_cache.read_validated, run_hash.read_memo
    monkeypatch.setattr(summary_cache, "read_validated", lambda cache: read.append("validated") or validated(cache))
    monkeypatch.setattr(summary, "read_memo", lambda cache: read.append("memo") or memo(cache))
    return read


def test_nothing_changed_is_served_and_equals_reading_again(runs: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    first = _call(runs, cache)
    read = _reading_counted(monkeypatch)
    served = _call(runs, cache)
    assert read == []
    assert served == first == _call(runs, cache, keep=False)
    assert read == ["memo", "validated"]  # the call not kept read the cache


def test_a_run_written_is_read_again(runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    _call(runs, cache)
    run_yaml = runs / "no-watchdog" / "run.yaml"
    run_yaml.write_text(run_yaml.read_text(encoding="utf-8").replace("title: ", "title: retitled, "),
                        encoding="utf-8")
    read = _reading_counted(monkeypatch)
    after = _call(runs, cache)
    assert read == ["memo", "validated"]
    assert after["validated"]["no-watchdog"].config["title"].startswith("retitled, ")
    assert after == _call(runs, cache, keep=False)


@pytest.mark.parametrize("change", ["a file written as the call started", "other runs wanted",
                                    "the cache's file removed", "a run folder added", "not kept"])
def test_what_is_not_served(change: str, runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    _call(runs, cache)
    wanted, keep = WANTED, True
    if change == "a file written as the call started":  # its stats could hide a second write: never kept
        run_yaml = runs / "no-watchdog" / "run.yaml"
        run_yaml.write_text(run_yaml.read_text(encoding="utf-8") + "\n", encoding="utf-8")
        monkeypatch.setattr(last_read, "now", lambda: time.time_ns() - last_read.TICK_NS // 2)
        _call(runs, cache)
    elif change == "other runs wanted":
        wanted = summary.Wanted(frozenset({"no-watchdog"}))
    elif change == "the cache's file removed":
        (cache / summary_cache.VALIDATED).unlink()
    elif change == "a run folder added":
        shutil.copytree(ROOT / "runs" / "baseline-seed2", runs / "baseline-seed2")
    else:
        keep = False
    read = _reading_counted(monkeypatch)
    _call(runs, cache, keep=keep, wanted=wanted)
    assert read == ["memo", "validated"]


def test_the_run_sets_a_metrics_page_summarises_are_equal_when_the_spec_is() -> None:
    """Wanted.by_config is compared when a call is served: two readings of one spec select equally and compare
    equal; a spec with another run set does not."""
    import yaml

    spec = yaml.safe_load((ROOT / "docs" / "data" / "metrics.yml").read_text(encoding="utf-8"))
    again = yaml.safe_load((ROOT / "docs" / "data" / "metrics.yml").read_text(encoding="utf-8"))
    assert metrics_table.summarises(spec) == metrics_table.summarises(again)
    assert hash(metrics_table.summarises(spec)) == hash(metrics_table.summarises(again))
    name = next(iter(again["run_sets"]))
    again["run_sets"][name] = {"model": "another"}
    assert metrics_table.summarises(spec) != metrics_table.summarises(again)


def _retitle(runs: Path, run_id: str, title: str) -> None:
    run_yaml = runs / run_id / "run.yaml"
    lines = run_yaml.read_text(encoding="utf-8").splitlines(keepends=True)
    run_yaml.write_text("".join(f"title: {title}\n" if line.startswith("title:") else line for line in lines),
                        encoding="utf-8")
    time.sleep(last_read.TICK_NS / 1e9 * 2)


def test_a_call_reading_again_takes_every_unchanged_run_as_the_last_call_made_it(runs: Path, tmp_path: Path) -> None:
    """One run retitled: the call reads it again, and takes the other, by its unchanged input hash, as the last
    call made it (the same summary, its tables decoded once; the same validated run), equal to a fresh reading."""
    cache = tmp_path / "cache"
    summarise_runs(runs, cache, wanted=WANTED, keep=True)  # no-watchdog read and validated by a worker
    _retitle(runs, "baseline-seed1", "retitled")
    validated: dict[str, summary.ValidatedRun] = {}
    first = summarise_runs(runs, cache, wanted=WANTED, validated=validated, keep=True)  # replayed from its record
    _retitle(runs, "baseline-seed1", "retitled once")
    then: dict[str, summary.ValidatedRun] = {}
    second = summarise_runs(runs, cache, wanted=WANTED, validated=then, keep=True)
    assert then["no-watchdog"] is validated["no-watchdog"]  # unchanged: held
    assert second["baseline-seed1"] is not first["baseline-seed1"]
    assert second["baseline-seed1"].config["title"] == "retitled once"
    _retitle(runs, "no-watchdog", "retitled too")
    last: dict[str, summary.ValidatedRun] = {}
    third = summarise_runs(runs, cache, wanted=WANTED, validated=last, keep=True)
    assert third["baseline-seed1"] is second["baseline-seed1"]  # unchanged: held, its tables decoded once
    assert last["no-watchdog"] is not then["no-watchdog"] and last["no-watchdog"].config["title"] == "retitled too"
    fresh_validated: dict[str, summary.ValidatedRun] = {}
    fresh = summarise_runs(runs, cache, wanted=WANTED, validated=fresh_validated)
    assert third["baseline-seed1"].steps.equals(fresh["baseline-seed1"].steps)
    assert third["baseline-seed1"].config == fresh["baseline-seed1"].config
    assert last == fresh_validated
