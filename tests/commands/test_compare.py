"""`make compare`: a reader's own run set beside the ranges of the Metrics page."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from build_tools.cli import main
from build_tools.core._exceptions import EXIT_BAD_INPUT
from tests.conftest import MILES_SAMPLES, SAMPLES, copy_project


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_project(tmp_path_factory.mktemp("manual"))


def run_compare(project: Path, run: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["--root", str(project), "compare", str(run)]) == 0
    return capsys.readouterr().out.splitlines()


def scaled_dump(project: Path, target: Path, key: str, factor: float) -> Path:
    """A copy of an example run's dashboard with one metric scaled at every step."""
    shutil.copytree(project / "runs" / "baseline-seed1" / "dashboard", target)
    metrics = target / "metrics.jsonl"
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    for record in records:
        if key in record["metrics"]:
            record["metrics"][key] *= factor
    metrics.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    return target


def test_an_example_run_falls_inside_the_manual_ranges(project, capsys):
    lines = run_compare(project, project / "runs" / "baseline-seed1" / "dashboard", capsys)
    assert lines[0] == "Your run baseline-seed1 (48 steps) against the manual's Metrics page"
    assert "Your setup differs" not in "\n".join(lines)
    at = lines.index("rollout/raw_reward                    yours: 0.54 to 0.86")
    assert lines[at + 1:at + 3] == ["                                      ours:  0.53 to 0.87 per step over 48 steps",
                                    "                                      -> inside the manual's range"]
    verdicts = [line.strip() for line in lines if line.strip().startswith("->")]
    assert len(verdicts) == 17
    assert all("range" not in v or v == "-> inside the manual's range" for v in verdicts)
    # the run the time values come from: its medians in the middle half of its own steps
    assert ("-> inside the middle half of the manual's steps, 148.6 to 159.9 (1.00 times the manual's median)"
            in verdicts)


def test_values_outside_the_range_are_counted(project, tmp_path, capsys):
    dump = scaled_dump(project, tmp_path / "mine", "rollout/raw_reward", 1.1)
    lines = run_compare(project, dump, capsys)
    at = next(i for i, line in enumerate(lines) if line.startswith("rollout/raw_reward"))
    assert lines[at + 2].strip().startswith("-> ")
    assert lines[at + 2].strip().endswith("above the manual's range, of 48 steps")


def test_a_different_setup_is_named_first(project, capsys):
    lines = run_compare(project, MILES_SAMPLES / "open-phase-across-hours", capsys)
    assert lines[:6] == [
        "Your run miles-run (1 step) against the manual's Metrics page",
        "",
        "Your setup differs from the one the manual's ranges hold for:",
        "  model: yours is not recorded, the manual's runs have Qwen3-0.6B",
        "  prompts per step: yours is not recorded, the manual's runs have 32",
        "  length limit: yours is 4096, the manual's runs have 1024",
    ]
    assert "rollout/raw_reward                    yours: not logged" in lines


def test_a_folder_that_is_no_run_is_bad_input(project, tmp_path, capsys):
    assert main(["--root", str(project), "compare", str(tmp_path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"{tmp_path}: expected a Miles dashboard dump (with meta.json) or a run folder (with run.yaml)" in err


def test_a_four_gpu_dump_and_a_bare_log_are_compared_with_a_verdict(project, capsys):
    from tests.conftest import SAMPLES

    lines = run_compare(project, MILES_SAMPLES / "four-gpu-colocated", capsys)
    assert "  GPUs: yours is 4, the manual's runs have 1" in lines
    assert lines[-1].startswith("Verdict: ") and lines[-1].endswith("so the ranges may not apply")
    lines = run_compare(project, SAMPLES / "sources" / "log" / "job.log", capsys)
    assert lines[0] == "Your run job (3 steps) against the manual's Metrics page"
    # Its three medians are judged too (a band for every row): the log's steps are far from the manual's.
    assert lines[-1] == "Verdict: 3 of 17 rows as in the manual's runs, 9 differ, 5 not logged by your run"


def test_claims_of_the_same_setup_are_checked_on_your_run_with_their_margin(project, capsys):
    lines = run_compare(project, project / "runs" / "baseline-seed1", capsys)
    start = lines.index("The claims whose runs share your setup, checked on your run alone (6 of 10 supported):")
    section = lines[start + 1:lines.index("", start)]
    assert section[1] == ('  fig 1.2 "Training and rollout take almost all of a step": supported, headroom 0.07 '
                          "(edge 0.9, fraction 0.0778)")
    assert section[2] == ('  fig 1.3 "left the job running for 63 minutes": cannot check, run baseline-seed1 has no '
                          "engine_death event")
    # Checks of some of a block's runs, or across its runs (fig 2.2's paired difference, fig 4.1's runs): left out.
    assert not any(line.startswith(("  fig 2.2 ", "  fig 4.1 ", "  fig 2.4 ")) for line in section)
    assert lines[-1].startswith("Verdict: ")


def test_a_claim_your_run_does_not_support_says_why(project, tmp_path, capsys):
    lines = run_compare(project, scaled_dump(project, tmp_path / "slow", "perf/step_time", 1.5), capsys)
    line = next(line for line in lines if line.startswith("  fig 1.2 "))
    assert line.startswith('  fig 1.2 "Training and rollout take almost all of a step": not supported, median share '
                           "of step_time is 0.6")


@pytest.mark.parametrize(("name", "found"), [
    ("empty.log", "empty"), ("empty.txt", "empty"), ("empty.csv", "empty"), ("folder", "no metric read from it"),
    ("no-records.log", "no metric read from it")])
def test_a_run_with_no_metric_gets_no_verdict(name: str, found: str, project: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """tests/samples/empty: a log with nothing in it used to get a verdict (every row "not logged"); it is one
    line naming the file, exit 2."""
    from build_tools.core._exceptions import display_path

    src = SAMPLES / "empty" / name
    assert main(["--root", str(project), "compare", str(src)]) == EXIT_BAD_INPUT
    captured = capsys.readouterr()
    assert "Verdict" not in captured.out
    assert captured.err.splitlines()[:2] == [
        "ERROR 1 problem in the run data:",
        f"  {display_path(src)}: {found}: expected a dashboard dump (meta.json), a log (*.log, *.txt), a wandb export "
        "(*.csv, *.jsonl), TensorBoard event files, a CI history record, --dump-details event files, an MLflow run's "
        "folder (mlruns/<experiment id>/<run id>/), or a lab/ folder `manual record` wrote"]


def test_a_run_outside_a_ranges_envelope_is_not_judged_by_it(project, capsys):
    lines = run_compare(project, project / "runs" / "qwen3-1.7b", capsys)
    at = next(i for i, line in enumerate(lines) if line.startswith("perf/update_weights_time"))
    assert lines[at + 2].strip() == "-> not applicable: model: yours is Qwen3-1.7B, the manual's runs have Qwen3-0.6B"
    # The rows read over every run (the 1.7B one among them) still judge it.
    assert lines[-1] == ("Verdict: 2 of 17 rows as in the manual's runs, 0 differ, 15 not applicable to your setup; "
                         "your setup differs in 1 fact, so the ranges may not apply")


def test_a_run_folder_copied_under_another_name_keeps_its_identity(tmp_path: Path) -> None:
    """A reader's run is named by its run.yaml, not by its folder: a copy under any name is the same run, so the
    claims about it are still checked (its folder name used to be an error, and `watch` lost every claim)."""
    from build_tools.commands import compare
    from tests.conftest import ROOT

    copy = tmp_path / "my job, copied"
    shutil.copytree(ROOT / "runs" / "baseline-seed1", copy)
    assert compare.load_reader_run(copy).run_id == "baseline-seed1"
