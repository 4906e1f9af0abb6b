"""build_tools/pages/metrics_table.py and the facts it reads (summary.metric_facts): a run only validated carries the
facts of every metric the Metrics page names, and they are its summary's, on every example run, every sample run
that loads, the scaled generator's runs, runs with other step axes and runs edited to take each other branch (a
step only the phases know, a metric missing at a step, a first value not 0, a NaN), whichever reader read them.
A page made of validated runs is the page made of summaries, word for word, with rows over every run; the rows
that need whole summaries say so."""

from __future__ import annotations

import copy
import json
import math
import shutil
from pathlib import Path

import pytest

from build_tools.core._exceptions import MetricsSpecError
from build_tools.core._types import RunSummary, ValidatedRun
from build_tools.ingest import load
from build_tools.pages import metrics_table
from build_tools.pages._common import environment
from build_tools.pages.metrics import render_metrics
from build_tools.pages.metrics_table import facts_of, load_spec
from build_tools.summarise import summary
from tests.conftest import ROOT, SAMPLES
from tests.page_text import CHAPTERS, SPEC

LINES, COLUMNS = math.inf, 0  # load_run's columns_from: every stream line by line, or every one as columns
EXAMPLES = sorted(path for path in (ROOT / "runs").iterdir() if path.is_dir())
# Every run folder of every sample scenario, broken ones included.
SAMPLE_RUNS = sorted(run for kind in ("hostile", "load") for scenario in (SAMPLES / kind).iterdir()
                     if scenario.is_dir() for run in scenario.iterdir() if run.is_dir())
NAMED = metrics_table.metrics_named(load_spec(SPEC))
NOT_LOGGED = "train/never_logged"
WHERE = "docs/data/metrics.yml"


def _logged(made: RunSummary) -> list[str]:
    """Every metric a summary's tables hold (not the columns the summary makes, nor an axis' rollout id)."""
    names = {*made.steps.columns,
             *(name for frame in made.axes.values() for name in frame.columns if name != "rollout")}
    return sorted(name for name in names if not summary.derived(name))


def _both_ways(path: Path, columns_from: float) -> tuple[RunSummary, summary.Validation, list[str]]:
    """The run summarised, and validated taking the facts of every metric it logs, the page's and one it lacks."""
    problems: list = []
    made = summary.summarise(load.load_run(path, problems, columns_from=columns_from), problems)
    checked: list = []
    metrics = sorted({*_logged(made), *NAMED, NOT_LOGGED})
    found = summary.validation(load.load_run(path, checked, keep=False, columns_from=columns_from), checked, metrics)
    assert problems == checked == [], path
    return made, found, metrics


def _loads(path: Path) -> bool:
    """Whether the run loads without a problem; a run that does not is rejected by validation alike."""
    summarised = summary.load_and_summarise(path)
    validated = summary.load_and_validate(path, NAMED)
    problems = [str(problem) for problem in summarised[1]]
    assert problems == [str(problem) for problem in validated[1]], path
    return not problems


def _assert_same_facts(path: Path, columns_from: float) -> None:
    if not _loads(path):
        return
    made, found, metrics = _both_ways(path, columns_from)
    assert found.steps == len(made.steps) == made.facts["steps"]
    validated = ValidatedRun(made.run_id, made.config, found.start_ts, found.end_ts, steps=found.steps,
                             metrics=found.metrics)
    for name in metrics:
        assert facts_of(validated, name) == facts_of(made, name), (path.name, name)
    assert not facts_of(made, NOT_LOGGED).logged and any(facts_of(made, name).logged for name in NAMED)


@pytest.mark.parametrize("columns_from", [LINES, COLUMNS], ids=["lines", "columns"])
@pytest.mark.parametrize("path", EXAMPLES + SAMPLE_RUNS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_validation_takes_the_facts_the_summary_gives(path: Path, columns_from: float) -> None:
    _assert_same_facts(path, columns_from)


def test_the_sample_runs_that_load_are_compared() -> None:
    assert {"bare-nan-is-kept", "bom-is-fine", "good"} <= {path.parent.name for path in SAMPLE_RUNS if _loads(path)}


@pytest.fixture(scope="module")
def scaled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The benchmark generator's runs: three of 40 steps, and one of 60 with telemetry in every stream."""
    from examples._scaled import write_scaled

    folder = tmp_path_factory.mktemp("scaled")
    write_scaled(folder / "many", 3, 40, workers=1)
    write_scaled(folder / "one", 1, 60, workers=1)
    return folder


@pytest.mark.parametrize("columns_from", [LINES, COLUMNS], ids=["lines", "columns"])
def test_validation_takes_the_facts_the_summary_gives_of_the_scaled_runs(scaled: Path, columns_from: float) -> None:
    runs = sorted(path for path in scaled.glob("*/*") if path.is_dir())
    assert len(runs) == 4
    for path in runs:
        _assert_same_facts(path, columns_from)


# --- runs edited to take every other branch ---------------------------------------------------------------------


def _edited(tmp_path: Path, name: str, change) -> Path:
    """A copy of baseline-seed2 whose metrics.jsonl lines (parsed) `change` rewrites (None drops a line)."""
    run = tmp_path / name
    shutil.copytree(ROOT / "runs" / "baseline-seed2", run)
    metrics = run / "dashboard" / "metrics.jsonl"
    lines = [change(json.loads(line)) for line in metrics.read_text(encoding="utf-8").splitlines()]
    metrics.write_text("".join(json.dumps(line) + "\n" for line in lines if line is not None), encoding="utf-8")
    (run / "run.yaml").write_text((run / "run.yaml").read_text(encoding="utf-8").replace(
        "run_id: baseline-seed2", f"run_id: {name}").replace("- baseline", "- edited"), encoding="utf-8")
    return run


def _gaps(line: dict) -> dict | None:
    """Step 47 known from its phases only; perf/train_wait_time missing at step 5; train/ppo_kl not 0 at first."""
    if line["step"] == 47:
        return None
    if line["step"] == 5:
        line["metrics"].pop("perf/train_wait_time", None)
    if line["step"] == 0 and "train/ppo_kl" in line["metrics"]:
        line["metrics"]["train/ppo_kl"] = 0.25
    return line


def _nan(line: dict) -> dict:
    if line["step"] in (7, 9) and "train/grad_norm" in line["metrics"]:
        line["metrics"]["train/grad_norm"] = math.nan if line["step"] == 7 else -math.inf
    return line


@pytest.mark.parametrize("columns_from", [LINES, COLUMNS], ids=["lines", "columns"])
def test_an_edited_run_has_the_same_facts_validated_as_summarised(tmp_path: Path, columns_from: float) -> None:
    gaps, nan = _edited(tmp_path, "gaps", _gaps), _edited(tmp_path, "nan", _nan)
    for path in (gaps, nan):
        _assert_same_facts(path, columns_from)
    made, found, _ = _both_ways(gaps, columns_from)
    assert 47 in made.steps.index and found.steps == 48  # a row, though no metric logs it
    wait = found.metrics["perf/train_wait_time"]
    assert (wait.present, wait.steps) == (46, 48)
    assert (found.metrics["train/ppo_kl"].first, found.metrics["train/ppo_kl"].first_step) == (0.25, 0)
    assert _both_ways(nan, columns_from)[1].metrics["train/grad_norm"].non_finite == {"7": "NaN", "9": "-Infinity"}


def test_the_facts_of_another_step_axis_are_the_summarys(tmp_path: Path) -> None:
    """train/step as an axis of its own (two optimizer steps a rollout, a NaN at its last step), read from a log;
    eval/step and a NaN in a dump."""
    from tests.ingest.test_step_axes import dump_with_eval, miles_log

    for path in (miles_log(tmp_path / "job.log"), dump_with_eval(tmp_path / "dump")):
        problems: list = []
        made = summary.summarise(load.load_path(path, problems)[0], problems)
        assert made.axes, path
        checked: list = []
        metrics = [*_logged(made), NOT_LOGGED]
        found = summary.validation(load.load_path(path, checked)[0], checked, metrics)
        assert found.steps == len(made.steps)
        for name in metrics:
            assert found.metrics[name] == facts_of(made, name), name
    assert found.metrics["eval/gsm8k"].steps == 1 and found.metrics["rollout/raw_reward"].non_finite == {"3": "NaN"}


# --- the page ---------------------------------------------------------------------------------------------------

ALL_RUNS = {"title": "Every run", "column": "Our range", "rows": []}


def _rows_over_every_run(metrics: list[str]) -> dict:
    """A table of rows over the run set `all`, each statistic the facts answer on each metric, every name its
    wording may use shown; range and all_zero only of values the heat rule leaves whole (no time)."""
    rows = []
    for metric in metrics:
        if not summary.is_time(metric):
            rows.append({"metric": metric, "meaning": "m", "runs": "all", "stat": "range", "decimals": 4,
                         "wording": "{low} to {high} over {steps} steps for {model}"})
            rows.append({"metric": metric, "meaning": "m", "runs": "all", "stat": "all_zero", "decimals": 3,
                         "wording": "zero ({steps})", "otherwise": "not zero: {low} to {high}"})
        rows.append({"metric": metric, "meaning": "m", "runs": "all", "stat": "first_step", "decimals": 5,
                     "wording": "0 at step {first}", "otherwise": "{low} to {high} at step {first}"})
        rows.append({"metric": metric, "meaning": "m", "runs": "all", "stat": "every_step",
                     "wording": "every step", "otherwise": "{present} of {total}"})
    return {**ALL_RUNS, "rows": rows}


def _validated(paths: list[Path], spec: dict) -> dict[str, ValidatedRun]:
    found = {}
    for path in paths:
        run, problems = summary.load_and_validate(path, metrics_table.metrics_named(spec))
        assert run is not None and problems == []
        found[run.run_id] = run
    return found


def _mixed(summaries: dict[str, RunSummary], validated: dict[str, ValidatedRun], spec: dict) -> dict:
    """The runs as a build gives them to the page: summarised where a row reads whole summaries, else validated."""
    whole = metrics_table.summarises(spec)
    mixed = {run_id: run if whole(run.config) else validated[run_id] for run_id, run in summaries.items()}
    assert any(isinstance(run, ValidatedRun) for run in mixed.values())
    assert any(isinstance(run, RunSummary) for run in mixed.values())
    return mixed


def test_a_page_of_validated_runs_is_the_page_of_their_summaries(tmp_path: Path, scaled: Path) -> None:
    """The example runs, the scaled ones and the edited ones: the shipped spec (two rows over every run) and a
    table of every statistic the facts answer over every run, on every metric; each wording branch is taken."""
    paths = [*EXAMPLES, *sorted(scaled.glob("many/*")), _edited(tmp_path, "gaps", _gaps)]
    summaries = {path.name: summary.load_and_summarise(path)[0] for path in paths}
    spec = load_spec(SPEC)
    spec["tables"].append(_rows_over_every_run(_logged(summaries["baseline-seed1"])))
    mixed = _mixed(summaries, _validated(paths, spec), spec)
    env = environment(ROOT / "templates")
    page = render_metrics(env, spec, WHERE, mixed, CHAPTERS)
    assert page == render_metrics(env, spec, WHERE, summaries, CHAPTERS)
    for taken in ("not zero: ", "zero (", "at step 0", "0 at step 0", "every step", " of "):
        assert taken in page
    # The scaled runs are validated, and read: the rows over every run count their steps.
    assert isinstance(mixed["scale-0000"], ValidatedRun) and "0 in our runs" in page


def test_a_non_finite_value_of_a_validated_run_is_reported_as_from_its_summary(tmp_path: Path) -> None:
    paths = [*EXAMPLES, _edited(tmp_path, "nan", _nan)]
    summaries = {path.name: summary.load_and_summarise(path)[0] for path in paths}
    spec = load_spec(SPEC)
    spec["tables"].append({**ALL_RUNS, "rows": [{"metric": "train/grad_norm", "meaning": "m", "runs": "all",
                                                 "stat": "range", "wording": "{low} to {high}"}]})
    mixed = _mixed(summaries, _validated(paths, spec), spec)
    assert isinstance(mixed["nan"], ValidatedRun)
    errors = []
    for runs in (mixed, summaries):
        with pytest.raises(MetricsSpecError) as error:
            metrics_table.build_tables(spec, runs, WHERE, {"chapter_5": "05-heat.md"})
        errors.append([str(problem) for problem in error.value.problems])
    assert errors[0] == errors[1] == [
        "docs/data/metrics.yml: tables[4].rows[0]: train/grad_norm: run nan has no finite train/grad_norm (it logged "
        "train/grad_norm = NaN at step 7, train/grad_norm = -Infinity at step 9)"]


# --- which rows read whole summaries -------------------------------------------------------------------------------


@pytest.mark.parametrize(("row", "whole"), [
    ({"metric": "train/entropy_loss", "stat": "all_zero"}, False),
    ({"metric": "rollout/raw_reward", "stat": "range"}, False),
    ({"metric": "perf/train_wait_time", "stat": "every_step"}, False),  # every step, clean or not
    ({"metric": "perf/step_time", "stat": "first_step"}, False),
    ({"metric": "perf/update_weights_time", "stat": "range"}, True),  # a time: its clean steps only
    ({"metric": "train/step_time", "stat": "all_zero"}, True),
    ({"metric": "train/grad_norm", "stat": "median"}, True),
    ({"metric": "perf/sleep_time", "stat": "median_head"}, True),
    ({"metric": "phase/rollout", "stat": "every_step"}, True),  # made by the summary, not logged
    ({"metric": "heat_touched", "stat": "first_step"}, True),
    ({"metric": "train/grad_norm", "stat": "mode"}, True),  # unknown: the page reports it
])
def test_a_row_reads_whole_summaries_only_when_the_facts_cannot_answer_it(row: dict, whole: bool) -> None:
    assert metrics_table.needs_summaries(row) is whole


def test_the_shipped_spec_summarises_the_runs_of_its_medians_and_times_only() -> None:
    spec = load_spec(SPEC)
    whole, reads = metrics_table.summarises(spec), metrics_table.reads(spec)
    benchmark = {"tags": ["benchmark"]}
    assert reads(benchmark) and not whole(benchmark)  # read by the rows over every run, from its facts
    assert whole({"tags": ["baseline"]}) and whole({"tags": ["baseline"], "lab": {"heat_guard": False}})
    assert NAMED[:3] == ("rollout/raw_reward", "rollout/response_lengths", "rollout/truncated")
    assert {"train/entropy_loss", "perf/train_wait_time"} <= set(NAMED) and len(NAMED) == len(set(NAMED))
    changed = copy.deepcopy(spec)
    changed["tables"][0]["rows"].append({"metric": "phase/rollout", "runs": "all", "stat": "range"})
    assert metrics_table.metrics_named(changed) == NAMED  # a column the summary makes is never validated
    assert metrics_table.summarises(changed)(benchmark)
