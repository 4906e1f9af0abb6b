"""Stage 4: every claim holds on the example runs; each perturbation that makes one false fails that figure
and only that one; a perturbation within the tolerance still passes; messages, reports and exit codes."""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from build_tools._exceptions import EXIT_BAD_INPUT, EXIT_CLAIM_FAILED, ChapterError, ClaimsFailed
from build_tools.blocks import load_tables, read_blocks
from build_tools.claims import check_claims, raise_if_failed, report_lines, write_reports
from build_tools.summary import summarise_runs

ROOT = Path(__file__).resolve().parent.parent
BASELINES = ("baseline-seed1", "baseline-seed2", "baseline-seed3")
GAP = "train/train_rollout_logprob_abs_diff"
ALL = slice(None)


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
# Each figure: (runs copied before changing, a change that makes the claim false, one within tolerance).
# A change takes the summaries (copies of those runs) and the tables (a copy).

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


def _phase_start(step: int, shift: float | None) -> Change:
    """Move the weight update of one step to start with training (None) or a little later."""
    def change(s: dict, _t: dict) -> None:
        ph = s["baseline-seed1"].phases
        at = ph[(ph["step"] == step) & (ph["name"] == "actor_train")].index[0]
        uw = ph[(ph["step"] == step) & (ph["name"] == "update_weights")].index[0]
        ph.loc[uw, "t0"] = ph.loc[at, "t0"] if shift is None else ph.loc[uw, "t0"] + shift
    return change


def _move_event(run: str, kind: str, seconds: float) -> Change:
    def change(s: dict, _t: dict) -> None:
        ev = s[run].events
        ev.loc[ev["kind"] == kind, ["t0", "t1"]] += seconds
    return change


def _reverse(run: str, column: str) -> Change:
    def change(s: dict, _t: dict) -> None:
        s[run].steps[column] = s[run].steps[column].to_numpy()[::-1]
    return change


def _config(run: str, dotted: str, value: Callable) -> Change:
    def change(s: dict, _t: dict) -> None:
        *path, key = dotted.split(".")
        node = s[run].config
        for part in path:
            node = node[part]
        node[key] = value(node[key])
    return change


def _add(run: str, column: str, amount: float, rows: slice | list = ALL) -> Change:
    def change(s: dict, _t: dict) -> None:
        steps = s[run].steps
        index = steps.index[rows] if isinstance(rows, slice) else rows
        steps.loc[index, column] = steps.loc[index, column] + amount
    return change


def _sampling(field: str, step: int | None, value: Callable) -> Change:
    def change(s: dict, _t: dict) -> None:
        frame = s["dynamic-filter-seed1"].series["sampling"]
        rows = frame.index if step is None else frame.index[frame["step"] == step]
        frame.loc[rows, field] = value(frame.loc[rows, field], s["dynamic-filter-seed1"].steps)
    return change


def _used_frac_at_kill(run: str, value: float) -> Change:
    def change(s: dict, _t: dict) -> None:
        kill = float(s[run].events.loc[s[run].events["kind"] == "ray_oom_kill", "t0"].iloc[0])
        frame = s[run].series["host_memory"]
        frame.loc[frame.index[frame["ts"] <= kill][-1], "used_frac"] = value
    return change


def _touched_steps(amount: float) -> Change:
    def change(s: dict, _t: dict) -> None:
        for run in ("baseline-seed2", "baseline-seed3"):
            steps = s[run].steps
            steps.loc[steps["heat_touched"], "perf/step_time"] += amount
    return change


def _gap_at(run: str, step: int, value: Callable) -> Change:
    def change(s: dict, _t: dict) -> None:
        s[run].steps.loc[step, GAP] = value(s)
    return change


def _table(edit: Callable[[list], None]) -> Change:
    def change(_s: dict, t: dict) -> None:
        edit(t["troubleshooting"]["symptoms"])
    return change


def _hashes(run: str, first_only: bool) -> Change:
    def change(s: dict, _t: dict) -> None:
        frame = s[run].series["repeat_probe"]
        if first_only:  # one repeat of one probe now answers differently
            frame.loc[frame.index[0], "output_sha256"] = "f" * 64
        else:  # every repeat of the first probe gives a new, but still shared, answer
            frame.loc[frame["probe"] == frame["probe"].iloc[0], "output_sha256"] = "e" * 64
    return change


def _engine_holds(gib: float) -> Change:
    """The engine holds memory in the middle of step 10's training."""
    def change(s: dict, _t: dict) -> None:
        run = s["baseline-seed1"]
        ph = run.phases
        t0, t1 = ph.loc[(ph["step"] == 10) & (ph["name"] == "actor_train"), ["t0", "t1"]].iloc[0]
        held = run.series["held_memory"]
        rows = held.index[(held["side"] == "engine") & (held["ts"] > t0 + 5) & (held["ts"] < t1 - 5)]
        held.loc[rows[:1], "gib"] = gib
    return change


def _gaps_scaled(factor: float) -> Change:
    return _each(*[_scale(r, GAP, factor) for r in ("det-triton-a", "det-triton-b", "nondet-a", "nondet-b")])


PERTURBATIONS: dict[str, tuple[tuple[str, ...], Change, Change]] = {
    "1.1": (("baseline-seed1",), _phase_start(5, None), _phase_start(5, 0.01)),
    "1.2": (BASELINES, _each(*[_scale(r, "perf/train_time", 0.85) for r in BASELINES]),
            _each(*[_scale(r, "perf/train_time", 0.98) for r in BASELINES])),
    "1.3": (("no-watchdog",), _move_event("no-watchdog", "job_end", 120), _move_event("no-watchdog", "job_end", 10)),
    "1.4": (("baseline-seed1",), _reverse("baseline-seed1", "rollout/raw_reward"),
            _scale("baseline-seed1", "rollout/raw_reward", 1.01)),
    "1.5": (BASELINES, _each(*[_scale(r, "rollout/response_lengths", 0.9, slice(0, 8)) for r in BASELINES]),
            _each(*[_scale(r, "rollout/response_lengths", 1.02) for r in BASELINES])),
    "2.1": (("qwen3-4b-a",), _config("qwen3-4b-a", "lab.trainer_bytes_per_parameter", lambda v: 12),
            _config("qwen3-4b-a", "model.parameters", lambda v: int(v * 1.02))),
    "2.2": (("kept-loaded-seed2",), _add("kept-loaded-seed2", "perf/rollout_time", 0.2, [1]),
            _add("kept-loaded-seed2", "perf/rollout_time", 0.03, [1])),
    "2.3": (("qwen3-4b-b",), _config("qwen3-4b-b", "hardware.memory_pools", lambda v: 2),
            _used_frac_at_kill("qwen3-4b-b", 0.951)),
    "2.4": (("qwen3-1.7b",), _scale("qwen3-1.7b", "perf/update_weights_time", 1.05),
            _scale("qwen3-1.7b", "perf/update_weights_time", 1.02)),
    "3.1": (("n16-seed1",), _add("n16-seed1", "rollout/raw_reward", 0.03, slice(-8, None)),
            _add("n16-seed1", "rollout/raw_reward", 0.01, slice(-8, None))),
    "3.2": (("dynamic-filter-seed1",), _sampling("batches", 0, lambda v, _: v + 1),
            _add("dynamic-filter-seed1", "rollout/dynamic_filter/drop_zero_std", 1, [0])),
    "3.3": (("dynamic-filter-seed1",),
            _sampling("reward_before_filter", 1, lambda v, steps: steps.loc[1, "rollout/raw_reward"] + 0.01),
            _sampling("reward_before_filter", None, lambda v, _: v + 0.001)),
    "4.1": (("replay-on-seed1",),
            _gap_at("replay-on-seed1", 5, lambda s: s["replay-off-seed1"].steps.loc[5, GAP] + 1e-4),
            _scale("replay-on-seed1", GAP, 1.1)),
    "4.2": (("det-triton-a", "det-triton-b", "nondet-a", "nondet-b"),
            _gap_at("det-triton-b", 0, lambda s: s["det-triton-b"].steps.loc[0, GAP] + 1e-6), _gaps_scaled(1.01)),
    "5.1": (("baseline-seed2", "baseline-seed3"), _touched_steps(10.0), _touched_steps(1.0)),
    "7.1": ((), _table(lambda rows: rows.pop()), _table(lambda rows: rows[0].update(fix="Use the watchdog"))),
    "8.1": (("onpolicy-det-inference", "onpolicy-true"), _hashes("onpolicy-det-inference", True),
            _hashes("onpolicy-true", False)),
    "8.2": (("baseline-seed1",), _engine_holds(40.0), _engine_holds(0.9)),
}


def perturbed(summaries: dict, tables: dict, runs: tuple[str, ...], change: Change) -> tuple[dict, dict]:
    """Copies of the changed runs (the others shared) and of the tables, with the change applied."""
    copies = dict(summaries)
    for run in runs:
        copies[run] = copy.deepcopy(summaries[run])
    table_copy = copy.deepcopy(tables)
    change(copies, table_copy)
    return copies, table_copy


def test_a_perturbation_for_each_of_the_eighteen(blocks) -> None:
    assert sorted(PERTURBATIONS) == sorted(b.number for b in blocks)


@pytest.mark.parametrize("number", sorted(PERTURBATIONS))
def test_a_false_claim_fails_that_figure_only(number, blocks, example_summaries, tables) -> None:
    runs, false, _ = PERTURBATIONS[number]
    summaries, table_copy = perturbed(example_summaries, tables, runs, false)
    verdicts = check_claims(blocks, summaries, table_copy)
    assert failing(verdicts) == [number]
    with pytest.raises(ClaimsFailed) as caught:
        raise_if_failed(verdicts)
    assert caught.value.exit_code == EXIT_CLAIM_FAILED
    lines = caught.value.report_lines
    assert lines and all(f" fig {number} FAIL " in line for line in lines)


@pytest.mark.parametrize("number", sorted(PERTURBATIONS))
def test_a_change_within_tolerance_still_passes(number, blocks, example_summaries, tables) -> None:
    runs, _, within = PERTURBATIONS[number]
    summaries, table_copy = perturbed(example_summaries, tables, runs, within)
    assert failing(check_claims(blocks, summaries, table_copy)) == []


# --- messages ---------------------------------------------------------------------------------------


def test_the_failure_message(blocks, example_summaries, tables) -> None:
    change = _each(*[_scale(r, "rollout/response_lengths", 0.9, slice(0, 8)) for r in BASELINES])
    summaries, _ = perturbed(example_summaries, tables, BASELINES, change)
    lines = report_lines(check_claims(blocks, summaries, tables))
    fail = [line for line in lines if "FAIL" in line]
    first = sum(summaries[r].steps["rollout/response_lengths"].iloc[:8].mean() for r in BASELINES) / 3
    assert fail == [f'docs/01-step.md:107 fig 1.5 FAIL "falls from about 720 to about 460 tokens": first-window '
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
    from build_tools.claims import says

    block = next(b for b in blocks if b.number == "2.4")
    assert says(block, {"binds": ["2.6"]}) == "the trainer offload grew 2.6 times"
    assert says(block, {"binds": []}) == block.claim.rstrip(".")
    assert says(block, {"says": "the weight update grew 1.4 times"}) == "the weight update grew 1.4 times"
