"""Margins (build_tools/checking/checks/_margin.py): every kind of numeric check against margins computed by hand.

Each case writes the hand computation beside it: the headroom (how far the observed value can move before the
check fails, negative past it), the edge (the value where it fails), the fraction (headroom over the
tolerance's half-width, or over the limit for a one-sided limit), and the worst run, step or sample named.
"""

from __future__ import annotations

import pandas as pd
import pytest

from build_tools.checking.checks import _margin
from build_tools.core._types import Margin, RunSummary
from tests.checking.test_checks import run, summary


def margin_of(check: dict, runs: dict[str, RunSummary], claim: str = "A claim.") -> Margin | None:
    return run(check, runs, claim).margin


def same(margin: Margin | None, headroom: float, edge: float, fraction: float | None, worst: str | None = None,
         unit: str = "") -> None:
    assert margin is not None
    assert margin.headroom == pytest.approx(headroom, abs=1e-9)
    assert margin.edge == pytest.approx(edge, abs=1e-9)
    if fraction is None:
        assert margin.fraction is None
    else:
        assert margin.fraction == pytest.approx(fraction, abs=1e-9)
    assert (margin.worst, margin.unit) == (worst, unit)


def with_events(run_id: str, span_s: float) -> RunSummary:
    """A run whose engine died at 1000 s and whose job ended span_s later; GPU utilisation sampled between."""
    base = summary(run_id, **{"x": [1.0]})
    base.events = pd.DataFrame({"kind": ["engine_death", "job_end"], "t0": [1000.0, 1000.0 + span_s],
                                "t1": [1000.0 + span_s, 1000.0 + span_s], "detail": ["", ""]})
    base.series["gpu_util"] = pd.DataFrame({"ts": [1000.0, 1060.0, 1120.0], "util": [1.0, 4.0, 2.0]})
    return base


SPAN = {"check": "event_span", "from": "engine_death", "to": "job_end", "unit": "min", "value": 63, "binds": ["63"]}
CLAIM = "A dead engine left the job running for 63 minutes."


def test_equals_with_tolerance_fig_1_3() -> None:
    # 63.2 min against 63 +/- 0.5: 63.5 - 63.2 = 0.3 to the nearer edge 63.5; 0.3 / 0.5 = 0.6.
    same(margin_of(SPAN, {"nw": with_events("nw", 3792)}, CLAIM), 0.3, 63.5, 0.6, "nw", "min")
    # Stopped 12 s later: 3804 s = 63.4 min, 0.1 from 63.5; 0.1 / 0.5 = 0.2.
    same(margin_of(SPAN, {"nw": with_events("nw", 3804)}, CLAIM), 0.1, 63.5, 0.2, "nw", "min")
    # 62.7 min: 62.7 - 62.5 = 0.2 above the lower edge; 0.4.
    same(margin_of(SPAN, {"nw": with_events("nw", 3762)}, CLAIM), 0.2, 62.5, 0.4, "nw", "min")
    # 63.7 min fails: 63.5 - 63.7 = -0.2 past the edge 63.5; -0.4.
    result = run(SPAN, {"nw": with_events("nw", 3822)}, CLAIM)
    assert result.status == "fail"
    same(result.margin, -0.2, 63.5, -0.4, "nw", "min")


def test_the_worst_of_several_runs_is_named() -> None:
    # a: 63.2 (headroom 0.3), b: 62.6 (62.6 - 62.5 = 0.1): b is the worst, 0.1 / 0.5 = 0.2.
    runs = {"a": with_events("a", 3792), "b": with_events("b", 3756)}
    same(margin_of(SPAN, runs, CLAIM), 0.1, 62.5, 0.2, "b", "min")


def test_about_pooled_has_no_worst_run() -> None:
    # median 2.3 s against about 2 (2 +/- 0.5): 2.5 - 2.3 = 0.2; 0.2 / 0.5 = 0.4.
    runs = {"run-a": summary(**{"perf/x_time": [2.2, 2.3, 2.4]})}
    check = {"check": "about", "metric": "perf/x_time", "value": 2, "unit": "s", "binds": ["2"]}
    same(margin_of(check, runs, "It takes about 2 s."), 0.2, 2.5, 0.4, None, "s")


def test_per_run_statistic_names_the_worst_run() -> None:
    # near 10 (10 +/- 1): a's median 10.5 (0.5 to 11), b's 9.2 (0.2 above 9): b; 0.2 / 1 = 0.2.
    runs = {"run-a": summary("run-a", v=[10.5, 10.5]), "run-b": summary("run-b", v=[9.2, 9.2])}
    check = {"check": "near", "metric": "v", "value": 10, "per": "run"}
    same(margin_of(check, runs), 0.2, 9.0, 0.2, "run-b")


@pytest.mark.parametrize(("name", "values", "limit", "headroom", "fraction"), [
    ("at_most", [1.0, 1.5], 2, 2 - 1.25, (2 - 1.25) / 2),        # median 1.25 may rise 0.75 to 2
    ("at_least", [0.95, 0.97], 0.9, 0.96 - 0.9, 0.06 / 0.9),     # median 0.96 may fall 0.06 to 0.9
    ("below", [3.0, 5.0], 5, 1.0, 1 / 5),                        # median 4, strictly below 5
    ("above", [-1.0, -3.0], -4, 2.0, 2 / 4),                     # median -2 above -4: 2, over |-4|
    ("at_most", [2.0, 2.0], 2, 0.0, 0.0),                        # at the limit: 0, still holding
    ("at_least", [0.8, 0.8], 0.9, -0.1, -0.1 / 0.9),             # past it: negative
])
def test_one_sided_limits_relative_to_the_limit(name: str, values: list[float], limit: float, headroom: float,
                                                 fraction: float) -> None:
    runs = {"run-a": summary(v=values)}
    same(margin_of({"check": name, "metric": "v", "value": limit}, runs), headroom, limit, fraction)


def test_a_limit_of_zero_and_an_exact_value_have_no_fraction() -> None:
    runs = {"run-a": summary(v=[0.2, 0.4])}
    same(margin_of({"check": "above", "metric": "v", "value": 0}, runs), 0.3, 0.0, None)
    same(margin_of({"check": "exactly", "metric": "v", "value": 0.3}, runs), 0.0, 0.3, None)
    same(margin_of({"check": "exactly", "metric": "v", "value": 0.5}, runs), -0.2, 0.5, None)


def test_every_value_names_the_worst_step() -> None:
    # near 0.015 (+/- 0.0015) at every step: 0.0162 is 0.0003 from 0.0165 (0.2), 0.0141 is 0.0006 from 0.0135.
    runs = {"run-a": summary(g=[0.015, 0.0162]), "run-b": summary("run-b", g=[0.0141, 0.015])}
    check = {"check": "near", "metric": "g", "stat": "each", "value": 0.015}
    same(margin_of(check, runs), 0.0003, 0.0165, 0.2, "run-a step 1")


def test_share_almost_all() -> None:
    # shares 0.95 and 0.97, median 0.96 against at least 0.9: 0.06, 0.06 / 0.9.
    runs = {"run-a": summary(**{"perf/a_time": [0.95, 0.97], "perf/step_time": [1.0, 1.0]})}
    check = {"check": "share", "parts": ["perf/a_time"], "whole": "perf/step_time"}
    same(margin_of(check, runs), 0.06, 0.9, 0.06 / 0.9)
    # stat each: the smallest share, 0.95, at run-a step 0: 0.05 / 0.9.
    same(margin_of({**check, "stat": "each"}, runs), 0.05, 0.9, 0.05 / 0.9, "run-a step 0")


def test_range_of_reference_runs() -> None:
    # gains (last 2 minus first 2): references 0.1 and 0.3 make [0.1, 0.3]; the run's 0.25 is 0.05 from 0.3,
    # over half the range's width 0.1: 0.5.
    runs = {"r1": summary("r1", v=[0.0, 0.0, 0.1, 0.1]), "r2": summary("r2", v=[0.0, 0.0, 0.3, 0.3]),
            "x": summary("x", v=[0.5, 0.5, 0.75, 0.75])}
    check = {"check": "gain_within", "metric": "v", "reference": ["r1", "r2"], "runs": ["x"], "window": 2}
    blk_runs = dict(runs)
    same(margin_of(check, blk_runs), 0.05, 0.3, 0.5, "x")


def test_paired_difference_names_its_worse_end() -> None:
    # differences 0.62, 1.0, 1.72: smallest rounds to 0.6 (0.65 - 0.62 = 0.03, 0.6), largest to 1.8 (1.72 - 1.75
    # = -0.03: it fails, and it is the worst).
    runs = {"a": summary("a", v=[1.62, 2.0, 2.72]), "b": summary("b", v=[1.0, 1.0, 1.0])}
    check = {"check": "paired_difference", "metric": "v", "run": "a", "minus": "b", "low": 0.6, "high": 1.8,
             "unit": "s"}
    same(margin_of(check, runs), -0.03, 1.75, -0.6, "largest difference, step 2", "s")


def test_counts_are_exact() -> None:
    # 48 steps, exactly 48: no room, no fraction; 47 of 48: one short.
    runs = {"run-a": summary(v=[1.0] * 48)}
    same(margin_of({"check": "step_count", "count": 48}, runs), 0.0, 48, None, "run-a", "steps")
    runs = {"run-a": summary(v=[1.0] * 48), "run-b": summary("run-b", v=[1.0] * 47)}
    same(margin_of({"check": "step_count", "count": 48}, runs), -1.0, 48, None, "run-b", "steps")
    same(margin_of({"check": "run_count", "count": 3}, runs), -1.0, 3, None, None, "runs")


def test_every_step_of_a_comparison_names_its_closest_step() -> None:
    # a below b at every step: b - a is 0.5, 0.1, 0.3: step 1 is closest; its edge, b at step 1 (0.6), is observed,
    # no number of the claim: no fraction.
    runs = {"a": summary("a", v=[1.0, 0.5, 0.2]), "b": summary("b", v=[1.5, 0.6, 0.5])}
    check = {"check": "compare_runs", "metric": "v", "run": "a", "op": "below", "than": "b", "count": "every"}
    same(margin_of(check, runs), 0.1, 0.6, None, "a step 1")


def test_exactly_k_steps_flip_either_way() -> None:
    # left above right (2.0) at exactly 2 of 3 steps: 2.5 (+0.5), 2.1 (+0.1), 1.7 (-0.3): any step flipping
    # changes the count, so the nearest, step 1 at 0.1 from 2.0: 0.1 / 2 = 0.05.
    runs = {"run-a": summary(v=[2.5, 2.1, 1.7])}
    check = {"check": "count_steps", "left": "v", "op": "above", "right": 2.0, "count": 2, "of": 3}
    same(margin_of(check, runs), 0.1, 2.0, 0.05, "run-a step 1")
    # exactly 1: one too many hold; the holding step nearest to flipping is step 1, 0.1 past: -0.1.
    same(margin_of({**check, "count": 1}, runs), -0.1, 2.0, -0.05, "run-a step 1")


def test_series_during_names_its_sample() -> None:
    # idle: at most 5 % in every sample; the largest, 4 % at 1 min after the engine died: 1 %, 1 / 5 = 0.2.
    check = {"check": "series_during", "series": "gpu_util", "field": "util", "from": "engine_death",
             "to": "job_end"}
    same(margin_of(check, {"nw": with_events("nw", 3792)}), 1.0, 5.0, 0.2,
         "nw, the sample 1 min after engine_death", "%")


def test_a_setting_carries_no_margin() -> None:
    runs = {"run-a": summary(v=[1.0])}
    assert margin_of({"check": "config_equals", "field": "model.size", "value": "4B"}, runs) is None


def test_worst_ranks_failures_first_then_fractions() -> None:
    holding = _margin.make(0.3, 63.5, "min", 0.5, 63.2, "a")
    close = _margin.make(0.01, 1.0, "", 1.0, 0.99, "b")
    exact = _margin.of_count(48, 48, "steps")
    failing = _margin.of_count(47, 48, "steps")
    assert _margin.worst([holding, close, exact]) == close
    assert _margin.worst([holding, exact]) == holding
    assert _margin.worst([holding, failing, close]) == failing
    assert _margin.worst([None]) is None


def test_margin_in_claims_json() -> None:
    from build_tools.checking.checks import validate
    from build_tools.checking.claims import judge, report_data
    from tests.checking.test_checks import block

    blk = block(CLAIM, ("nw",))
    params, _ = validate(SPAN, blk, 1)
    blk = type(blk)(**{**blk.__dict__, "checks": (params,)})
    data = report_data([judge(blk, {"nw": with_events("nw", 3792)}, {})])
    assert data["figures"][0]["checks"][0]["margin"] == {"headroom": 0.3, "edge": 63.5, "unit": "min",
                                                          "fraction": 0.6, "value": 63.2, "worst": "nw"}
