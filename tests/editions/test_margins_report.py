"""What `manual check` says of margins (build_tools/checking/margins.py, cli.py): the closest claims, --warn-margin and
edition.yml's warn_margin, --strict's exit 6, --format github's workflow commands; and fig 1.3 of the examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from build_tools.checking import margins
from build_tools.cli import main
from build_tools.core._escape import workflow_command
from build_tools.core._exceptions import EXIT_MARGIN
from tests.conftest import copy_project


def figure(number: str, line: int, says: str, margin: dict | None, status: str = "pass", name: str = "about") -> dict:
    return {"number": number, "file": "docs/01-step.md", "line": line, "claim": says + ".", "status": status,
            "checks": [{"name": name, "status": status, "says": says, "message": "m", "margin": margin}],
            "problems": []}


def margin(headroom: float, edge: float, fraction: float | None, unit: str = "", worst: str | None = None) -> dict:
    return {"headroom": headroom, "edge": edge, "unit": unit, "fraction": fraction, "value": 0, "worst": worst}


REPORT = {"figures": [
    figure("1.1", 5, "a count", margin(0, 48, None, "steps")),
    figure("1.2", 10, "about 2 s", margin(0.2, 2.5, 0.4, "s")),
    figure("1.3", 53, "left the job running for 63 minutes", margin(0.1, 63.5, 0.2, "min", "no-watchdog")),
    figure("1.4", 70, "near 0.015", margin(0.0003, 0.0165, 0.2, "", "run-a step 1")),
    figure("1.5", 90, "at least 0.9", margin(0.06, 0.9, 0.0667)),
    figure("1.6", 95, "broken", margin(-1, 2, -0.5), status="fail"),
    figure("1.7", 99, "x", margin(5, 10, 3.0)),
    figure("1.8", 120, "y", margin(5, 10, 2.0)),
]}


def test_the_closest_are_the_smallest_fractions_of_passing_claims() -> None:
    assert margins.closest_lines(REPORT) == [
        "Closest to failing (5 of 6 claims with a margin; fraction: the headroom over the tolerance, 0 at the edge):",
        '  fig 1.5 "at least 0.9": headroom 0.06 (edge 0.9, fraction 0.0667)',
        '  fig 1.3 "left the job running for 63 minutes": headroom 0.1 min (edge 63.5, fraction 0.2; '
        "worst: no-watchdog)",
        '  fig 1.4 "near 0.015": headroom 0.0003 (edge 0.0165, fraction 0.2; worst: run-a step 1)',
        '  fig 1.2 "about 2 s": headroom 0.2 s (edge 2.5, fraction 0.4)',
        '  fig 1.8 "y": headroom 5 (edge 10, fraction 2)',
    ]


def test_warnings_below_a_threshold() -> None:
    weak = margins.below(REPORT, 0.25)
    assert [c.number for c in weak] == ["1.3", "1.4", "1.5"]
    assert margins.warning_text(weak[0], 0.25) == (
        'docs/01-step.md:53 fig 1.3 "left the job running for 63 minutes": margin fraction 0.2 is below 0.25 '
        "(headroom 0.1 min, edge 63.5; worst: no-watchdog)")
    assert margins.warning_commands(weak[:1], 0.25) == [
        "::warning file=docs/01-step.md,line=53,title=Fig 1.3::\"left the job running for 63 minutes\": margin "
        "fraction 0.2 is below 0.25 (headroom 0.1 min, edge 63.5; worst: no-watchdog)"]


def test_failures_as_workflow_errors() -> None:
    assert margins.failure_commands(REPORT) == [
        '::error file=docs/01-step.md,line=95,title=Fig 1.6::"broken": m']


def test_workflow_commands_encode_what_data_may_hold() -> None:
    line = workflow_command("error", "50% done\nnext ::warning::x", {"file": "docs/a,b:c.md", "title": "Fig 1.3"})
    assert line == "::error file=docs/a%2Cb%3Ac.md,title=Fig 1.3::50%25 done%0Anext ::warning::x"
    assert "\x1b" not in workflow_command("warning", "\x1b]52;c;AAAA\x07bad", {})


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_project(tmp_path_factory.mktemp("margins"))


def fig_1_3(root: Path) -> dict:
    data = json.loads((root / "build" / "claims.json").read_text(encoding="utf-8"))
    block = next(f for f in data["figures"] if f["number"] == "1.3")
    return next(c for c in block["checks"] if c["name"] == "event_span")["margin"]


def test_fig_1_3_and_the_closest_claims(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(project), "check"]) == 0
    assert fig_1_3(project) == {"headroom": 0.3, "edge": 63.5, "unit": "min", "fraction": 0.6, "value": 63.2,
                                "worst": "no-watchdog"}
    out = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(out) if line.startswith("Closest to failing"))
    assert [line.split('"')[0] for line in out[start + 1:]] == [
        "  fig 3.2 ", "  fig 2.1 ", "  fig 2.3 ", "  fig 1.2 ", "  fig 4.2 "]


def test_warn_margin_and_strict(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(project), "check", "--warn-margin", "0.05"]) == 0
    err = capsys.readouterr().err
    assert 'WARNING docs/02-memory.md:6 fig 2.1 "both 4B runs reached the Ray limit": margin fraction 0.00869 is ' \
           "below 0.05 (headroom 0.00826, edge 0.95; worst: qwen3-4b-a)" in err
    assert main(["--root", str(project), "check", "--warn-margin", "0.05", "--strict"]) == EXIT_MARGIN
    assert "ERROR 3 claims hold with a margin fraction below 0.05 (--strict)" in capsys.readouterr().err
    assert main(["--root", str(project), "check", "--warn-margin", "0.001", "--strict"]) == EXIT_MARGIN
    # Fig 3.2's step 1 dropped exactly 16 groups: "16 or fewer" holds there at its edge, below any threshold.
    assert "ERROR 1 claim holds with a margin fraction below 0.001 (--strict)" in capsys.readouterr().err


def test_warn_margin_from_edition_yml_and_github_format(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edition = project / "edition.yml"
    original = edition.read_text(encoding="utf-8")
    try:
        edition.write_text(original + "warn_margin: 0.005\n", encoding="utf-8")
        assert main(["--root", str(project), "check", "--format", "github"]) == 0
        commands = [line.split("::") for line in capsys.readouterr().err.splitlines() if line.startswith("::")]
        # Miles' guidance is a workflow warning too, one for each line the check shows in text (build/'s record).
        advice = (project / "build" / "miles_guidance.txt").read_text(encoding="utf-8").splitlines()
        assert len(advice) == 3
        assert [body for _, head, body in commands if head == "warning title=Miles' guidance"] == [
            line.replace("%", "%25") for line in advice]  # a workflow command's data, as GitHub decodes it
        assert [head for _, head, _ in commands if head != "warning title=Miles' guidance"] == [
            "warning file=docs/03-answers.md,line=41,title=Fig 3.2"]
        edition.write_text(original + "warn_margin: 0.0086\n", encoding="utf-8")  # 0.00869 is not below it
        assert main(["--root", str(project), "check", "--strict", "--format", "github"]) == EXIT_MARGIN
        assert [line.split("::")[1] for line in capsys.readouterr().err.splitlines()
                if line.startswith("::") and "title=Miles' guidance" not in line] == [
            "warning file=docs/03-answers.md,line=41,title=Fig 3.2"]
        edition.write_text(original + "warn_margin: 0.0088\n", encoding="utf-8")
        assert main(["--root", str(project), "check", "--format", "github"]) == 0
        assert [line.split("::")[1] for line in capsys.readouterr().err.splitlines()
                if line.startswith("::") and "title=Miles' guidance" not in line] == [
            "warning file=docs/02-memory.md,line=6,title=Fig 2.1",
            "warning file=docs/02-memory.md,line=79,title=Fig 2.3",
            "warning file=docs/03-answers.md,line=41,title=Fig 3.2"]
        edition.write_text(original + "warn_margin: -1\n", encoding="utf-8")
        assert main(["--root", str(project), "check"]) == 2
        assert "edition.yml:11: warn_margin: expected a number above 0, found -1" in capsys.readouterr().err
    finally:
        edition.write_text(original, encoding="utf-8")


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "tenth", "٠.٥", "０.２", "0.2\u00b2", "1_0", " 0.2"])
def test_a_wrong_threshold_is_one_line(project: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    assert main(["--root", str(project), "check", "--warn-margin", value]) == 2
    assert capsys.readouterr().err.splitlines()[0] == (
        f"ERROR --warn-margin: '{value}' is not a number above 0 (a fraction of the tolerance), e.g. --warn-margin 0.2")


def test_strict_needs_a_threshold(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(project), "check", "--strict"]) == 2
    assert capsys.readouterr().err.splitlines()[-2] == (
        "ERROR --strict: no margin to hold the claims to: pass --warn-margin F or set warn_margin in "
        f"{project / 'edition.yml'}")


def stop_12_s_later(events: Path, original: str) -> None:
    """The no-watchdog job's end (its engine death and the job's end) 12 s later: fig 1.3's idle time grows 0.2 min."""
    lines = [json.loads(line) for line in original.splitlines()]
    end = lines[1]["t0"] + 12
    lines[0]["t1"], lines[1]["t0"], lines[1]["t1"] = end, end, end
    events.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def test_stopped_12_s_later_fig_1_3_is_closer(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = project / "runs" / "no-watchdog" / "lab" / "events.jsonl"
    original = events.read_text(encoding="utf-8")
    try:
        stop_12_s_later(events, original)
        assert main(["--root", str(project), "check"]) == 0
        assert fig_1_3(project)["headroom"] == pytest.approx(0.1) and fig_1_3(project)["edge"] == 63.5
        out = capsys.readouterr().out
        closest = out[out.index("Closest to failing"):]
        assert '  fig 1.3 "left the job running for 63 minutes": headroom 0.1 min (edge 63.5, fraction 0.2; ' \
               "worst: no-watchdog)" in closest
    finally:
        events.write_text(original, encoding="utf-8")


def test_junit_carries_the_margins(project: Path) -> None:
    import xml.etree.ElementTree as ET

    assert main(["--root", str(project), "check"]) == 0
    root = ET.parse(project / "build" / "claims.junit.xml").getroot()
    case = next(c for c in root.iter("testcase") if c.get("name") == "fig 1.3 fig-dead-engine")
    assert [(p.get("name"), p.get("value")) for p in case.iter("property")] == [
        ("margin", "0.6"),
        ("margin check 2 (event_span)", "headroom 0.3 min, edge 63.5, fraction 0.6, worst no-watchdog"),
        ("margin check 3 (series_during)", "headroom 3.0 %, edge 5.0, fraction 0.6, worst no-watchdog, the sample "
                                          "0.338 min after engine_death")]


def test_diff_of_editions_before_and_after_12_s(project: Path, tmp_path: Path) -> None:
    from build_tools.editions import _manifest

    events = project / "runs" / "no-watchdog" / "lab" / "events.jsonl"
    original = events.read_text(encoding="utf-8")
    assert main(["--root", str(project), "check"]) == 0
    before = {"edition": "2026.10", "claims": _manifest.claims_section(project / "build" / "claims.json")}
    try:
        stop_12_s_later(events, original)
        assert main(["--root", str(project), "check"]) == 0
        after = {"edition": "2026.11", "claims": _manifest.claims_section(project / "build" / "claims.json")}
    finally:
        events.write_text(original, encoding="utf-8")
    assert _manifest.margin_changes(before["claims"], after["claims"]) == [
        "Fig 1.3 'left the job running for 63 minutes': headroom 0.3 -> 0.1 min (fraction 0.6 -> 0.2)"]
    assert "  Fig 1.3 'left the job running for 63 minutes': headroom 0.3 -> 0.1 min (fraction 0.6 -> 0.2)\n" in (
        _manifest.changes_text(before, after))


def test_margin_changes_ordered_by_shrinkage_and_older_manifests_without_margins() -> None:
    from build_tools.editions import _manifest

    def claim(number: str, says: str, headroom: float, fraction: float | None) -> dict:
        return {"number": number, "verdict": "pass", "observed": {},
                "checks": {"about": {"says": says, "margin": margin(headroom, 1, fraction, "s")}}}

    old = {"fig-a": claim("1.1", "a", 0.5, 0.5), "fig-b": claim("1.2", "b", 0.5, 0.5),
           "fig-c": claim("1.3", "c", 2, None), "fig-d": claim("1.4", "d", 1, 1.0)}
    new = {"fig-a": claim("1.1", "a", 0.4, 0.4), "fig-b": claim("1.2", "b", 0.1, 0.1),
           "fig-c": claim("1.3", "c", 1, None), "fig-d": claim("1.4", "d", 1, 1.0)}
    assert _manifest.margin_changes(old, new) == [
        "Fig 1.2 'b': headroom 0.5 -> 0.1 s (fraction 0.5 -> 0.1)",
        "Fig 1.1 'a': headroom 0.5 -> 0.4 s (fraction 0.5 -> 0.4)",
        "Fig 1.3 'c': headroom 2 -> 1 s"]
    older = {key: {k: v for k, v in value.items() if k != "checks"} for key, value in old.items()}
    assert _manifest.margin_changes(older, new) == []


def test_run_changes_name_the_files() -> None:
    from build_tools.editions import _manifest

    old = {"r": {"sha256": "1", "file_sha256": {"run.yaml": "a", "lab/events.jsonl": "b", "x": "c"},
                 "provenance": {"date": "1"}}}
    new = {"r": {"sha256": "2", "file_sha256": {"run.yaml": "a", "lab/events.jsonl": "B", "y": "d"},
                 "provenance": {"date": "2"}}}
    assert _manifest.changes({"runs": old}, {"runs": new})["runs"] == [
        "run r: lab/events.jsonl changed; y added; x removed; provenance (date)"]
    older = {"r": {"sha256": "1", "provenance": {"date": "1"}}}  # a manifest from before files were listed
    assert _manifest.changes({"runs": older}, {"runs": new})["runs"] == ["run r changed (files; provenance (date))"]
