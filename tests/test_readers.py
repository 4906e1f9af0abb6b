"""The one reader of run summaries: run.yaml by dotted name, values per step under the heat rule, events,
series between events, counted phases, trends; every missing value named by run and value."""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd
import pytest

from build_tools import readers
from build_tools.core._exceptions import MissingValue
from build_tools.core._types import RunSummary


def run(**facts: object) -> RunSummary:
    """Four steps; a heat-guard pause touched step 2. Two events of each kind, a sampled series."""
    steps = pd.DataFrame({"perf/step_time": [10.0, 11.0, 40.0, 12.0], "rollout/raw_reward": [0.1, 0.3, 0.5, 0.7],
                          "heat_touched": [False, False, True, False]},
                         index=pd.Index([0, 1, 2, 3], name="step"))
    phases = pd.DataFrame({"name": ["rollout", "train_wait", "sleep", "rollout"], "t0": [0.0, 1.0, 2.0, 3.0],
                           "t1": [1.0, 2.0, 3.0, 4.0], "step": pd.array([0, 0, 0, None], dtype="Int64"),
                           "rank": [-1, 0, 1, -1]})
    events = pd.DataFrame({"kind": ["job_end", "engine_death", "heat_pause", "engine_death"],
                           "t0": [300.0, 250.0, 50.0, 100.0], "t1": [300.0, 250.0, 60.0, 100.0],
                           "detail": ["", "second", "", "first"]})
    gpu = pd.DataFrame({"ts": [40.0, 150.0, 200.0, 300.0, 310.0], "util": [95.0, 3.0, 1.0, 2.0, 0.0],
                        "empty": [math.nan] * 5})
    sampling = pd.DataFrame({"step": [0, 1, 1, 3], "batches": [1.0, 1.0, 2.0, 4.0]})
    config = {"flags": {"rollout_max_response_len": 1024, "colocate": True}, "model": {"size": "4B"}}
    return RunSummary("run-a", config, steps, phases, events, {"gpu_util": gpu, "sampling": sampling},
                      facts={"start_ts": 5.0, **facts})


def missing(call: Callable[..., object], *args: object, **kwargs: object) -> tuple[str | None, str]:
    """The run and the message of the MissingValue the call raises."""
    with pytest.raises(MissingValue) as caught:
        call(*args, **kwargs)
    return caught.value.run, str(caught.value)


# --- run.yaml ------------------------------------------------------------------------------------


def test_a_field_is_read_by_its_dotted_name() -> None:
    assert readers.config_value(run(), "flags.rollout_max_response_len") == 1024
    assert readers.config_value(run(), "flags.colocate") is True
    assert readers.config_value(run(), "model") == {"size": "4B"}


def test_an_absent_field_names_the_run_and_the_field_or_gives_the_default() -> None:
    assert missing(readers.config_value, run(), "flags.nope") == ("run-a", "run run-a has no flags.nope in run.yaml")
    # Below a value that is not a mapping there is no field either: no TypeError escapes.
    assert missing(readers.config_value, run(), "model.size.bytes")[1] == (
        "run run-a has no model.size.bytes in run.yaml")
    assert readers.config_value(run(), "flags.nope", "not recorded") == "not recorded"
    assert readers.config_value(run(), "model.size.bytes", None) is None


# --- values per step: the heat rule --------------------------------------------------------------


def test_a_time_is_read_on_the_clean_steps_only_and_any_other_value_on_every_step() -> None:
    assert list(readers.step_values(run(), "perf/step_time")) == [10.0, 11.0, 12.0]
    assert list(readers.step_values(run(), "rollout/raw_reward").index) == [0, 1, 2, 3]
    assert list(readers.step_values(run(), "perf/step_time", "all")) == [10.0, 11.0, 40.0, 12.0]
    assert list(readers.step_values(run(), "rollout/raw_reward", "clean").index) == [0, 1, 3]
    assert list(readers.steps_for(run(), "perf/step_time").index) == [0, 1, 3]
    assert list(readers.steps_for(run(), "rollout/raw_reward").index) == [0, 1, 2, 3]


def test_a_list_of_values_is_summed_per_step_and_a_series_field_is_read_by_step() -> None:
    summed = readers.step_values(run(), ["rollout/raw_reward", "perf/step_time"])  # one time: clean steps
    assert summed.to_dict() == pytest.approx({0: 10.1, 1: 11.3, 3: 12.7})
    assert readers.step_values(run(), "sampling.batches").to_dict() == {0: 1.0, 1: 2.0, 3: 4.0}  # last of a step


def test_a_value_the_run_lacks_is_named() -> None:
    assert missing(readers.step_values, run(), "perf/nope") == ("run-a", "run run-a has no per-step value 'perf/nope'")
    only_touched = run()
    only_touched.steps["heat_touched"] = True
    assert missing(readers.step_values, only_touched, "perf/step_time")[1] == (
        "run run-a has no clean steps with step_time")


def test_a_value_logged_as_nan_or_infinity_is_never_dropped_silently() -> None:
    logged = run(non_finite={"rollout/raw_reward": {"2": "NaN", "10": "Infinity", "1": "-Infinity", "3": "NaN",
                                                    "0": "NaN"}})
    assert missing(readers.step_values, logged, "rollout/raw_reward")[1] == (
        "run run-a has no finite rollout/raw_reward (it logged rollout/raw_reward = NaN at step 0, rollout/raw_reward "
        "= -Infinity at step 1, rollout/raw_reward = NaN at step 2 (and 1 more))")
    # Only the steps read count: step 2 is touched, so a time read on the clean steps does not see its NaN.
    clean_only = run(non_finite={"perf/step_time": {"2": "NaN"}})
    assert list(readers.step_values(clean_only, "perf/step_time")) == [10.0, 11.0, 12.0]


def test_a_trend_is_the_least_squares_line_through_the_finite_steps() -> None:
    values = pd.Series([1.0, 3.0, math.nan, 7.0], index=[0, 1, 2, 3], name="x")
    slope, intercept = readers.trend_line(values, "run-a")
    assert (slope, intercept) == (pytest.approx(2.0), pytest.approx(1.0))
    assert missing(readers.trend_line, values.iloc[:1], "run-a")[1] == (
        "run run-a has no trend of x (it needs at least two steps)")


# --- events, series, phases ----------------------------------------------------------------------


def test_events_of_a_kind_come_in_time_order_and_a_required_one_is_named_when_absent() -> None:
    assert list(readers.events_of(run(), "engine_death")["detail"]) == ["first", "second"]
    assert missing(readers.events_of, run(), "ray_oom_kill") == ("run-a", "run run-a has no ray_oom_kill event")
    assert readers.events_of(run(), "ray_oom_kill", required=False).empty


def test_a_series_between_two_events_holds_the_samples_from_the_first_to_the_next() -> None:
    assert readers.event_interval(run(), "engine_death", "job_end") == (100.0, 300.0)
    assert list(readers.series_between(run(), "gpu_util", "util", "engine_death", "job_end")) == [3.0, 1.0, 2.0]
    assert missing(readers.event_interval, run(), "job_end", "engine_death")[1] == (
        "run run-a has no engine_death event after its job_end event")
    assert missing(readers.series_between, run(), "gpu_util", "util", "heat_pause", "engine_death")[1] == (
        "run run-a has no gpu_util samples between heat_pause and engine_death")


def test_a_series_without_the_field_read_is_named() -> None:
    assert list(readers.series_of(run(), "gpu_util", "ts", "util").columns) == ["ts", "util", "empty"]
    assert missing(readers.series_of, run(), "host_memory")[1] == "run run-a has no host_memory series"
    assert missing(readers.series_of, run(), "gpu_util", "empty")[1] == "run run-a has no gpu_util series with 'empty'"


def test_phases_are_counted_once_per_step() -> None:
    assert list(readers.counted_phases(run())["name"]) == ["rollout", "train_wait"]  # not rank 1, not stepless
    assert list(readers.counted_phases(run(), ("train_wait",))["t0"]) == [1.0]
    assert missing(readers.counted_phases, run(), ("sleep",))[1] == "run run-a has no phases sleep"
    assert readers.counted_phases(run(), ("sleep",), required=False).empty


def test_a_time_axis_starts_at_the_run_start_or_else_at_its_first_phase() -> None:
    assert readers.start_ts(run()) == 5.0
    assert readers.start_ts(run(start_ts=math.nan)) == 0.0


def test_a_value_that_belongs_to_no_one_run_is_named_alone() -> None:
    error = MissingValue(None, "steps with phases")
    assert (error.run, error.what, str(error)) == (None, "steps with phases", "no steps with phases")
