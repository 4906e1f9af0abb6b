"""The check registry: every approximate word, number tokens, parameter validation, checks on small runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from build_tools.checking.checks import REGISTRY, claim_numbers, evaluate, expect, half_unit, runs_text, validate, words
from build_tools.core._types import FigureBlock, RunSummary

# --- the approximate words ------------------------------------------------------------------------


@pytest.mark.parametrize(("word", "value", "written", "low", "high"), [
    ("about", 720, "720", 684, 756),          # 5 % of the value beats half a unit
    ("about", 2, "2", 1.5, 2.5),              # half a unit of the last digit beats 5 %
    ("about", 45, "45", 42.75, 47.25),
    ("about", 0.5, "half", 0.475, 0.525),     # a number word: only the relative part
    ("near", 0.015, "0.015", 0.0135, 0.0165),
    ("rounds", 63, "63", 62.5, 63.5),
    ("rounds", 1.4, "1.4", 1.35, 1.45),
    ("rounds", 0.6, "0.6", 0.55, 0.65),
])
def test_tolerance_words(word: str, value: float, written: str, low: float, high: float) -> None:
    exp = expect(word, value, written, {})
    assert exp.low == pytest.approx(low) and exp.high == pytest.approx(high)
    assert exp.holds(low) and exp.holds(high)
    assert not exp.holds(low - 1e-6 * max(1, abs(low)) - 1e-9) and not exp.holds(high + 1e-6 * max(1, high) + 1e-9)


def test_about_text_and_override() -> None:
    assert expect("about", 720, "720", {}).text == "720 +/- 36"
    assert expect("about", 720, "720", {"relative": 0.1}).text == "720 +/- 72"
    assert expect("about", 720, "720", {"tolerance": 5}).text == "720 +/- 5 (tolerance set)"


def test_exact_words() -> None:
    assert expect("exactly", 0, "0", {}).holds(0.0) and not expect("exactly", 0, "0", {}).holds(1e-9)
    assert expect("above", 0, "0", {}).holds(0.001) and not expect("above", 0, "0", {}).holds(0.0)
    assert expect("almost_all", 0, "", {}).holds(0.9) and not expect("almost_all", 0, "", {}).holds(0.899)
    assert expect("almost_all", 0, "", {}).text == "at least 0.9 (almost all)"


def test_every_word_has_one_documented_meaning() -> None:
    defined = words()
    for word in ("about", "near", "rounds", "almost_all", "jumps_around", "goes_up", "goes_down", "falls_from",
                 "idle"):
        assert defined[word]["meaning"]
    readme = (pytest.importorskip("pathlib").Path(__file__).resolve().parents[2] / "docs" / "README.md").read_text()
    for phrase in ("about", "near", "almost all", "jumps around", "goes up", "falls from about A to about B", "idle"):
        assert f"| {phrase}" in readme
    for name in REGISTRY:  # every check is documented for authors
        assert f"`{name}`" in readme


def test_half_unit() -> None:
    assert (half_unit("720"), half_unit("0.015"), half_unit("1,024"), half_unit("0.6B"), half_unit("half")) == (
        0.5, 0.0005, 0.5, 0.05, 0.0)


# --- numbers of a claim ----------------------------------------------------------------------------


def texts(claim: str, prose: tuple[str, ...] = ()) -> list[str]:
    return [t.text for t in claim_numbers(claim, prose)]


def test_numbers_digits_units_and_words() -> None:
    assert texts("The mean falls from about 720 to about 460 tokens, so fewer hit the 1,024-token cap.") == [
        "720", "460", "1,024"]
    assert texts("From 0.6B to 1.7B, the weight update grew 1.4 times.") == ["0.6B", "1.7B", "1.4"]
    assert texts("Both 4B runs took 45 s and half the machine; one of two.") == ["both", "4B", "45", "half", "one",
                                                                                "two"]
    assert texts("On a GB10 with Qwen3-4B and v1.2 nothing counts.") == []
    assert [t.value for t in claim_numbers("the 1,024-token cap, 0.015 and twelve")] == [1024, 0.015, 12]


def test_prose_idioms_are_not_numbers() -> None:
    claim = "With replay, the gap was lower at every one of the 12 steps."
    assert texts(claim) == ["one", "12"]
    assert texts(claim, ("every one of",)) == ["12"]
    assert texts("The engine half and both halves.", ("the engine half", "both halves")) == []


# --- small runs ------------------------------------------------------------------------------------


def summary(run_id: str = "run-a", **columns: list[float]) -> RunSummary:
    n = len(next(iter(columns.values())))
    steps = pd.DataFrame(columns, index=pd.Index(range(n), name="step"))
    steps["heat_touched"] = False
    empty = pd.DataFrame(columns=["name", "t0", "t1", "step", "role", "rank", "node", "gpus"])
    events = pd.DataFrame(columns=["kind", "t0", "t1", "detail"])
    config = {"flags": {"rollout_max_response_len": 1024, "use_fault_tolerance": False}, "model": {"size": "4B"}}
    return RunSummary(run_id, config, steps, empty, events, {})


def block(claim: str, runs: tuple[str, ...] = ("run-a",), prose: tuple[str, ...] = ()) -> FigureBlock:
    return FigureBlock(id="fig-x", number="1.3", chapter_file="docs/01-step.md", line=12, module="demo",
                        runs=runs, claim=claim, checks=(), prose=prose)


def run(check: dict, runs: dict[str, RunSummary], claim: str = "A claim.", prose: tuple[str, ...] = ()) -> tuple:
    blk = block(claim, tuple(runs), prose)
    params, problems = validate(check, blk, 1, prose)
    assert problems == []
    return evaluate(params, blk, runs, {}, prose)


def test_about_passes_inside_and_fails_outside() -> None:
    runs = {"run-a": summary(**{"perf/x_time": [2.2, 2.3, 2.4]})}
    check = {"check": "about", "metric": "perf/x_time", "value": 2, "unit": "s", "binds": ["2"]}
    result = run(check, runs, "It takes about 2 s.")
    assert (result.status, result.message, result.binds) == ("pass", "median x_time is 2.3 s", ("2",))
    runs["run-a"].steps["perf/x_time"] = [2.6, 2.7, 2.8]
    result = run(check, runs, "It takes about 2 s.")
    assert (result.status, result.message, result.expected) == (
        "fail", "median x_time is 2.7 s, expected 2 +/- 0.5, 0.2 too high", "2 +/- 0.5")


def test_time_values_read_clean_steps_only() -> None:
    runs = {"run-a": summary(**{"perf/x_time": [2.0, 2.0, 90.0]})}
    runs["run-a"].steps.loc[2, "heat_touched"] = True
    assert run({"check": "at_most", "metric": "perf/x_time", "stat": "max", "value": 2}, runs).status == "pass"
    assert run({"check": "at_most", "metric": "perf/x_time", "stat": "max", "value": 2, "steps": "all"},
               runs).status == "fail"


def test_trend_goes_up_by_least_squares_slope() -> None:
    rng = np.random.default_rng(1)
    rising = list(np.linspace(0.5, 0.8, 48) + rng.normal(0, 0.05, 48))
    runs = {"run-a": summary(**{"r": rising}), "run-b": summary("run-b", **{"r": rising[::-1]})}
    result = run({"check": "trend", "metric": "r", "direction": "up"}, runs)
    assert result.status == "fail" and result.observed["run-a"] > 0 > result.observed["run-b"]
    assert run({"check": "trend", "metric": "r", "direction": "up", "runs": ["run-a"]}, runs).status == "pass"


def test_jumps_around_is_noise_against_the_trend() -> None:
    rng = np.random.default_rng(2)
    trend = np.linspace(0.5, 0.8, 48)
    noisy = {"run-a": summary(**{"r": list(trend + rng.normal(0, 0.05, 48))})}
    smooth = {"run-a": summary(**{"r": list(trend + rng.normal(0, 0.001, 48))})}
    assert run({"check": "jumps_around", "metric": "r"}, noisy).status == "pass"
    assert run({"check": "jumps_around", "metric": "r"}, smooth).status == "fail"


def test_falls_from_window_means() -> None:
    values = [720.0] * 8 + [600.0] * 32 + [460.0] * 8
    runs = {"run-a": summary(**{"len": values})}
    check = {"check": "falls_from", "metric": "len", "first": 720, "last": 460, "unit": "tokens",
             "binds": ["720", "460"]}
    claim = "It falls from about 720 to about 460 tokens."
    assert run(check, runs, claim).status == "pass"
    runs["run-a"].steps["len"] = [655.0] * 8 + [600.0] * 32 + [460.0] * 8
    result = run(check, runs, claim)
    assert result.message == "first-window mean is 655 tokens, expected 720 +/- 36, 29 too low"
    runs["run-a"].steps["len"] = values[::-1]
    assert "is not above last-window mean" in run({"check": "falls_from", "metric": "len"}, runs).message


def test_almost_all_share() -> None:
    runs = {"run-a": summary(**{"perf/a_time": [9.0, 9.5], "perf/step_time": [10.0, 10.0]})}
    check = {"check": "share", "parts": ["perf/a_time"], "whole": "perf/step_time"}
    assert run(check, runs).status == "pass"
    runs["run-a"].steps["perf/a_time"] = [8.0, 8.9]
    assert run(check, runs).status == "fail"


def test_exact_counts() -> None:
    runs = {"run-a": summary(**{"a": [1.0, 2.0, 3.0, 4.0], "b": [0.0, 3.0, 0.0, 5.0]})}
    claim = "Higher in 2 of the 4 steps."
    check = {"check": "count_steps", "left": "a", "op": "above", "right": "b", "count": 2, "of": 4,
             "binds": ["2", "4"]}
    assert run(check, runs, claim).status == "pass"
    assert run({**check, "count": 3, "binds": []}, runs, claim).status == "fail"
    assert run({"check": "count_steps", "left": "a", "op": "above", "right": 0}, runs).status == "pass"
    assert run({"check": "count_steps", "left": "a", "op": "above", "right": 5, "count": "none"}, runs).status == "pass"


def test_config_facts() -> None:
    runs = {"run-a": summary(**{"a": [1.0]})}
    result = run({"check": "config_equals", "field": "flags.rollout_max_response_len", "value": 1024,
                  "binds": ["1,024"]}, runs, "The 1,024-token cap.")
    assert result.status == "pass" and result.message == "flags.rollout_max_response_len is 1024"
    assert run({"check": "config_equals", "field": "flags.use_fault_tolerance", "value": 0}, runs).status == "fail"
    missing = run({"check": "config_equals", "field": "flags.nope", "value": 1}, runs)
    assert (missing.status, missing.message) == ("fail", "run run-a has no flags.nope in run.yaml")


def test_data_is_never_evaluated_as_code() -> None:
    runs = {"run-a": summary(**{"a": [1.0]})}
    result = run({"check": "about", "metric": "__import__('os').system('false')", "value": 1}, runs)
    assert result.status == "fail" and "has no per-step value" in result.message


def test_validation_messages() -> None:
    blk = block("It ran for 63 minutes.")
    _, problems = validate({"check": "event_span", "from": "a", "to": "b", "value": "x", "binds": ["64"]}, blk, 2)
    assert problems == ["check 2 (event_span) value: expected a number, got 'x'",
                        "check 2 (event_span) binds: '64' is not a number of the claim of figure 1.3"]
    _, problems = validate({"check": "event_span", "from": "a", "to": "b", "value": 62, "binds": ["63"]}, blk, 1)
    assert problems == ["check 1 (event_span) binds: '63', but the values this check proves are 62"]
    _, problems = validate({"check": "about", "metric": "m", "value": 1, "says": "not there"}, blk, 1)
    assert problems == ["check 1 (about) says: 'not there' is not part of the claim of figure 1.3"]


def test_runs_text_shortens_numbered_families() -> None:
    assert runs_text(["baseline-seed1", "baseline-seed2", "baseline-seed3"]) == "baseline-seed1..3"
    assert runs_text(["baseline-seed2", "kept-loaded-seed2"]) == "baseline-seed2, kept-loaded-seed2"
    assert runs_text(["a1", "a2"]) == "a1, a2"
    assert runs_text([]) == "none"
