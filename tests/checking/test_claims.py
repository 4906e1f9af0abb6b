"""Stage 4: every claim holds on the example runs; for every check of every figure, a perturbation derived
from the check that makes it false fails that figure, and one within its tolerance still passes; messages,
reports and exit codes."""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from build_tools.checking.blocks import load_tables, read_blocks
from build_tools.checking.checks import REGISTRY
from build_tools.checking.checks._perturb import PERTURBATIONS, Perturbation, Subject, derive
from build_tools.checking.claims import check_claims, raise_if_failed, report_lines, write_reports
from build_tools.core._exceptions import EXIT_BAD_INPUT, EXIT_CLAIM_FAILED, ChapterError, ClaimsFailed
from build_tools.core._types import FigureBlock
from build_tools.summarise.summary import summarise_runs
from tests.conftest import manual_blocks

ROOT = Path(__file__).resolve().parents[2]
BASELINES = ("baseline-seed1", "baseline-seed2", "baseline-seed3")
ALL = slice(None)
# Kinds of check that may have no change within them: exact facts and counts (a tie leaves no slack).
EXACT = frozenset({"exactly", "gpu_count", "config_equals", "runs_matching", "run_count", "step_count",
                   "equal_at_step", "count_steps", "compare_runs", "table_rows"})


@pytest.fixture(scope="module")
def blocks() -> list:
    return read_blocks(ROOT / "docs", ROOT / "figures")


@pytest.fixture(scope="module")
def tables() -> dict:
    return load_tables(ROOT / "docs" / "data")


def failing(verdicts: list) -> list[str]:
    return [v.block.number for v in verdicts if v.status == "fail"]


def test_every_claim_holds_on_the_example_runs(blocks, example_summaries, tables) -> None:
    verdicts = check_claims(blocks, example_summaries, tables)
    lines = report_lines(verdicts)
    assert failing(verdicts) == [], "\n".join(lines)
    assert len(lines) == len(blocks) and all(" pass  " in line for line in lines)
    assert lines[2].startswith("docs/01-step.md:53 fig 1.3 pass  flags.use_fault_tolerance is false; idle 63.2 min; ")


# --- the perturbations ------------------------------------------------------------------------------
# Derived from each figure's checks (build_tools/checking/checks/_perturb.py, registered beside each check):
# for every check of every block, a change of the data that makes it false must fail its figure; a change
# within its tolerance must leave it true.

CASES = [(block.number, index, params["check"]) for block in manual_blocks()
         for index, params in enumerate(block.checks)]
_DERIVED: dict[tuple[str, int], Perturbation] = {}


def derived(blocks: list, number: str, index: int, summaries: dict, tables: dict) -> tuple[FigureBlock, Perturbation]:
    block = next(b for b in blocks if b.number == number)
    if (number, index) not in _DERIVED:
        _DERIVED[number, index] = derive(block, index, summaries, tables)
    return block, _DERIVED[number, index]


def test_every_kind_of_check_has_a_derived_perturbation() -> None:
    assert sorted(PERTURBATIONS) == sorted(REGISTRY)


@pytest.mark.parametrize(("number", "index", "kind"), CASES, ids=[f"{n}-{i + 1}-{k}" for n, i, k in CASES])
def test_a_false_check_fails_its_figure(number, index, kind, blocks, example_summaries, tables) -> None:
    block, perturbation = derived(blocks, number, index, example_summaries, tables)
    data = Subject(block, index, example_summaries, tables).data(perturbation.false)
    verdicts = check_claims([data.block], data.summaries, data.tables)
    assert verdicts[0].checks[index].status == "fail", verdicts[0].checks[index].message
    with pytest.raises(ClaimsFailed) as caught:
        raise_if_failed(verdicts)
    assert caught.value.exit_code == EXIT_CLAIM_FAILED
    lines = caught.value.report_lines
    assert lines and all(f" fig {number} FAIL " in line for line in lines)


@pytest.mark.parametrize(("number", "index", "kind"), CASES, ids=[f"{n}-{i + 1}-{k}" for n, i, k in CASES])
def test_a_change_within_tolerance_still_passes(number, index, kind, blocks, example_summaries, tables) -> None:
    block, perturbation = derived(blocks, number, index, example_summaries, tables)
    if perturbation.within is None:  # an exact fact (a count, a run.yaml value): no change is within it
        assert kind in EXACT, f"{kind} has a tolerance: its derivation should give a change within it"
        return
    data = Subject(block, index, example_summaries, tables).data(perturbation.within)
    [verdict] = check_claims([data.block], data.summaries, data.tables)
    assert verdict.checks[index].status == "pass", verdict.checks[index].message


# --- hand-made changes, for the exact messages below --------------------------------------------------

Change = Callable[[dict, dict], None]


def _scale(run: str, column: str, factor: float, rows: slice = ALL) -> Change:
    def change(s: dict, _t: dict) -> None:
        steps = s[run].steps
        steps.loc[steps.index[rows], column] = steps[column].iloc[rows] * factor
    return change


def _each(*changes: Change) -> Change:
    def change(s: dict, t: dict) -> None:
        for one in changes:
            one(s, t)
    return change


def _move_event(run: str, kind: str, seconds: float) -> Change:
    def change(s: dict, _t: dict) -> None:
        ev = s[run].events
        ev.loc[ev["kind"] == kind, ["t0", "t1"]] += seconds
    return change


def perturbed(summaries: dict, tables: dict, runs: tuple[str, ...], change: Change) -> tuple[dict, dict]:
    """Copies of the changed runs (the others shared) and of the tables, with the change applied."""
    copies = dict(summaries)
    for run in runs:
        copies[run] = copy.deepcopy(summaries[run])
    table_copy = copy.deepcopy(tables)
    change(copies, table_copy)
    return copies, table_copy


# --- messages ---------------------------------------------------------------------------------------


def test_the_failure_message(blocks, example_summaries, tables) -> None:
    change = _each(*[_scale(r, "rollout/response_lengths", 0.9, slice(0, 8)) for r in BASELINES])
    summaries, _ = perturbed(example_summaries, tables, BASELINES, change)
    lines = report_lines(check_claims(blocks, summaries, tables))
    fail = [line for line in lines if "FAIL" in line]
    first = sum(summaries[r].steps["rollout/response_lengths"].iloc[:8].mean() for r in BASELINES) / 3
    assert fail == [f'docs/01-step.md:112 fig 1.5 FAIL "falls from about 720 to about 460 tokens": first-window '
                    f"mean is {first:.0f} tokens, expected 720 +/- 36, {684 - first:.1f} too low "
                    "(runs: baseline-seed1..3)"]


def test_the_failure_message_of_an_event_span(blocks, example_summaries, tables) -> None:
    summaries, _ = perturbed(example_summaries, tables, ("no-watchdog",),
                             _move_event("no-watchdog", "job_end", 120))
    lines = [line for line in report_lines(check_claims(blocks, summaries, tables)) if "FAIL" in line]
    assert lines == ['docs/01-step.md:53 fig 1.3 FAIL "left the job running for 63 minutes": idle 65.2 min, '
                     "expected 63 +/- 0.5, 1.7 too high (runs: no-watchdog)"]


def test_an_unbound_number_fails_the_claim(blocks, example_summaries, tables) -> None:
    block = next(b for b in blocks if b.number == "1.3")
    unbound = dataclasses.replace(block, checks=tuple({**c, "binds": []} for c in block.checks))
    [verdict] = check_claims([unbound], example_summaries, tables)
    assert verdict.status == "fail" and all(c.status == "pass" for c in verdict.checks)
    assert verdict.problems == ("unbound number 63 in the claim of figure 1.3",)
    assert report_lines([verdict]) == ["docs/01-step.md:53 fig 1.3 FAIL unbound number 63 in the claim of figure 1.3"]


def test_a_number_word_is_a_number_unless_an_idiom(blocks, example_summaries, tables) -> None:
    block = next(b for b in blocks if b.number == "4.1")
    [verdict] = check_claims([dataclasses.replace(block, prose=())], example_summaries, tables)
    assert verdict.problems == ("unbound number one in the claim of figure 4.1",)


def test_an_unknown_run_is_bad_input(blocks, example_summaries, tables) -> None:
    block = next(b for b in blocks if b.number == "1.3")
    with pytest.raises(ChapterError) as caught:
        check_claims([dataclasses.replace(block, runs=("no-such-run",))], example_summaries, tables)
    assert caught.value.exit_code == EXIT_BAD_INPUT
    assert str(caught.value.problems[0]) == (
        "docs/01-step.md:53: figure 1.3: run 'no-such-run' is not among the runs (no runs/no-such-run/)")


# --- reports ----------------------------------------------------------------------------------------


def test_reports_for_tools(blocks, example_summaries, tables, tmp_path) -> None:
    summaries, _ = perturbed(example_summaries, tables, ("no-watchdog",), _move_event("no-watchdog", "job_end", 120))
    verdicts = check_claims(blocks, summaries, tables)
    json_path, xml_path = write_reports(verdicts, tmp_path / "build")
    data = json.loads(json_path.read_text())
    assert (data["total"], data["passed"], data["failed"]) == (len(blocks), len(blocks) - 1, 1)
    figure = data["figures"][2]
    assert {"number", "id", "claim", "status", "checks", "runs"} <= set(figure)
    assert (figure["number"], figure["id"], figure["status"], figure["runs"]) == (
        "1.3", "fig-dead-engine", "fail", ["no-watchdog"])
    span = figure["checks"][1]
    assert {k: span[k] for k in ("name", "status", "expected")} == {
        "name": "event_span", "status": "fail", "expected": "63 +/- 0.5"}
    assert span["observed"]["no-watchdog"] == pytest.approx(65.2, abs=0.01)
    assert all({"name", "status", "observed", "expected", "message"} <= set(c) for f in data["figures"]
               for c in f["checks"])
    suite = ET.parse(xml_path).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert (suite.get("tests"), suite.get("failures"), len(cases)) == (str(len(blocks)), "1", len(blocks))
    failures = [(c.get("name"), c.find("failure")) for c in cases if c.find("failure") is not None]
    assert [name for name, _ in failures] == ["fig 1.3 fig-dead-engine"]
    assert failures[0][1].get("message").startswith('docs/01-step.md:53 fig 1.3 FAIL "left the job running')
    assert not list(tmp_path.glob("build/*.tmp"))  # written atomically


# --- end to end: edited copies of run files ----------------------------------------------------------


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("claims-cache")


def check_stage(root: Path, cache: Path) -> list:
    summaries = summarise_runs(root / "runs", cache)
    return check_claims(read_blocks(ROOT / "docs", ROOT / "figures"), summaries, load_tables(ROOT / "docs" / "data"))


def edit_lines(path: Path, edit: Callable[[dict], dict]) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(edit(rec)) + "\n" for rec in lines))


def test_end_to_end_a_later_job_end_fails_figure_1_3(tmp_path, cache) -> None:
    shutil.copytree(ROOT / "runs", tmp_path / "runs")
    edit_lines(tmp_path / "runs" / "no-watchdog" / "lab" / "events.jsonl",
               lambda r: {**r, "t0": r["t0"] + 120, "t1": r["t1"] + 120} if r["kind"] == "job_end" else r)
    verdicts = check_stage(tmp_path, cache)
    assert failing(verdicts) == ["1.3"]
    with pytest.raises(ClaimsFailed) as caught:
        raise_if_failed(verdicts)
    assert str(caught.value).splitlines()[0] == f"1 of {len(verdicts)} claims failed:"


def test_end_to_end_a_second_batch_fails_figure_3_2(tmp_path, cache) -> None:
    shutil.copytree(ROOT / "runs", tmp_path / "runs")
    edit_lines(tmp_path / "runs" / "dynamic-filter-seed1" / "lab" / "sampling.jsonl",
               lambda r: {**r, "batches": 2} if r["step"] == 0 else r)
    assert failing(check_stage(tmp_path, cache)) == ["3.2"]


def test_the_quoted_fragment_defaults_to_the_clause_of_the_bound_number(blocks) -> None:
    from build_tools.checking.claims import says

    block = next(b for b in blocks if b.number == "2.4")
    assert says(block, {"binds": ["2.6"]}) == "the trainer offload grew 2.6 times"
    assert says(block, {"binds": []}) == block.claim.rstrip(".")
    assert says(block, {"says": "the weight update grew 1.4 times"}) == "the weight update grew 1.4 times"
