"""The ordered build and `make check`: what the user sees on the terminal, and what is left on disk."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from build_tools.build import build
from build_tools.cli import main
from build_tools.core._exceptions import EXIT_BAD_INPUT
from build_tools.core._layout import Layout
from build_tools.core._settings import Settings
from build_tools.store import uptodate
from tests.checking.test_miles_guidance import BUILD_WARNINGS
from tests.conftest import SAMPLES, copy_project, manual_blocks


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = copy_project(tmp_path / "manual")
    monkeypatch.chdir(root)
    return root


def test_check_prints_one_line_per_run_and_per_figure(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 0
    lines = capsys.readouterr().out.splitlines()
    runs = sorted(p.name for p in (project / "runs").iterdir() if p.is_dir())
    assert [line.split()[0] for line in lines[:len(runs)]] == runs
    blocks = len(manual_blocks(project))
    figures, closest = lines[len(runs):len(runs) + blocks], lines[len(runs) + blocks:]
    assert all(" fig " in line for line in figures)
    assert figures[0].startswith("docs/01-step.md:8 fig 1.1 pass  ")
    assert closest[0].startswith("Closest to failing (5 of ") and len(closest) == 6  # the five smallest margins
    assert (project / "build" / "claims.json").is_file() and not (project / "site").exists()


def test_a_run_made_with_another_miles_commit_stops_the_build(project: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    run_yaml = project / "runs" / "nondet-a" / "run.yaml"
    run_yaml.write_text(run_yaml.read_text().replace("commit: 08752a1", "commit: 1a2b3c4"))
    assert main(["check"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    error = err[err.index("ERROR"):]
    assert error.splitlines() == [
        "ERROR run nondet-a was made with Miles commit 1a2b3c4, but this edition is Miles commit 08752a1 "
        "(runs/nondet-a/run.yaml miles.commit)",
        "hint: rebuild that run with the edition's Miles commit, move it out of runs/, or change edition.yml",
    ]
    assert not (project / "build" / "claims.json").exists()  # stopped before the claims were checked


@pytest.fixture()
def built_copy(built_manual: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the built manual (inputs and outputs), to change without touching the shared one."""
    root = tmp_path / "built"
    shutil.copytree(built_manual, root)
    monkeypatch.chdir(root)
    return root


def test_a_no_op_build_stops_before_any_work(built_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site_before = (built_copy / "site" / "index.html").stat().st_mtime_ns
    assert main(["build"]) == 0
    assert capsys.readouterr().err.strip() == (
        "Nothing changed since the last build: site/ is up to date (make FORCE=1 builds it again).")
    assert (built_copy / "site" / "index.html").stat().st_mtime_ns == site_before


def test_a_changed_input_is_built_again(built_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert uptodate.is_current(Layout(built_copy), Settings())
    chapter = built_copy / "docs" / "05-heat.md"
    chapter.write_text(chapter.read_text() + "\nOne more sentence.\n")
    assert not uptodate.is_current(Layout(built_copy), Settings())
    assert main(["build"]) == 0
    assert "One more sentence." in (built_copy / "site" / "05-heat.html").read_text()
    assert uptodate.is_current(Layout(built_copy), Settings())


def test_a_failed_build_is_not_current(built_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_yaml = built_copy / "runs" / "nondet-a" / "run.yaml"
    run_yaml.write_text(run_yaml.read_text().replace("commit: 08752a1", "commit: 1a2b3c4"))
    assert main(["build"]) == EXIT_BAD_INPUT
    run_yaml.write_text(run_yaml.read_text().replace("commit: 1a2b3c4", "commit: 08752a1"))
    assert not uptodate.is_current(Layout(built_copy), Settings())  # back to the old inputs, but the key was dropped


def test_make_check_then_make_does_not_build_again(built_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site_before = (built_copy / "site" / "index.html").stat().st_mtime_ns
    assert main(["check"]) == 0
    assert uptodate.is_current(Layout(built_copy), Settings())
    capsys.readouterr()
    assert main(["build"]) == 0
    assert capsys.readouterr().err.strip() == (
        "Nothing changed since the last build: site/ is up to date (make FORCE=1 builds it again).")
    assert (built_copy / "site" / "index.html").stat().st_mtime_ns == site_before


def test_a_check_of_changed_inputs_leaves_the_site_to_be_built(built_copy: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    chapter = built_copy / "docs" / "05-heat.md"
    chapter.write_text(chapter.read_text() + "\nOne more sentence.\n")
    assert main(["check"]) == 0
    assert not uptodate.is_current(Layout(built_copy), Settings())
    assert main(["build"]) == 0
    assert "One more sentence." in (built_copy / "site" / "05-heat.html").read_text()


def test_a_changed_metric_no_figure_plots_redraws_no_figure(built_copy: Path) -> None:
    """baseline-seed2 is read by several figures (the chapters' blocks that name it), none of which plots
    train/loss: each is drawn again (cheaply) and found to show the same data, so none is rendered and every
    image stays byte for byte."""
    metrics = built_copy / "runs" / "baseline-seed2" / "dashboard" / "metrics.jsonl"
    lines = []
    for line in metrics.read_text().splitlines():
        record = json.loads(line)
        if "train/loss" in record["metrics"]:
            record["metrics"]["train/loss"] = round(record["metrics"]["train/loss"] + 0.001, 6)
        lines.append(json.dumps(record, separators=(",", ":")) + "\n")
    metrics.write_text("".join(lines))
    images = {path.name: path.read_bytes() for path in (built_copy / "site" / "figures").glob("*.svg")}
    result = build(built_copy, Settings(quiet=True))
    readers = [figure.id for figure in result.blocks if "baseline-seed2" in figure.runs]
    assert readers and readers == [block.id for block in manual_blocks(built_copy) if "baseline-seed2" in block.runs]
    assert [figure.block_id for figure in result.figures if figure.redrawn] == []
    assert {path.name: path.read_bytes() for path in (built_copy / "site" / "figures").glob("*.svg")} == images


def test_a_no_op_build_imports_neither_rich_nor_the_build(built_copy: Path) -> None:
    """What a no-op `make` costs is Python's start and hashing the inputs: nothing heavy is imported (nor the
    lock's filelock: a site found current is not waited for)."""
    import subprocess
    import sys

    heavy = "('rich', 'pandas', 'matplotlib', 'importlib.metadata', 'filelock')"
    code = ("import sys; from build_tools.cli import main; code = main(['build']); "
            f"print(code, sorted(m for m in {heavy} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=built_copy, capture_output=True, text=True, check=True)
    assert done.stdout == "0 []\n"
    assert done.stderr == "Nothing changed since the last build: site/ is up to date (make FORCE=1 builds it again).\n"


def test_a_no_op_build_does_not_wait_for_a_build_holding_the_lock(built_copy: Path) -> None:
    """Another build holds build/.lock (here this test): a site found current is said so at once; a build that
    starts forgets the recorded key first, so a site being replaced is never found current."""
    import subprocess
    import sys

    from filelock import FileLock

    with FileLock(str(built_copy / "build" / ".lock")):
        done = subprocess.run([sys.executable, "-m", "build_tools", "build"], cwd=built_copy, capture_output=True,
                              text=True, timeout=60)
    assert (done.returncode, done.stderr) == (
        0, "Nothing changed since the last build: site/ is up to date (make FORCE=1 builds it again).\n")


def test_a_build_of_another_folder_draws_with_its_figure_modules_and_palette(built_copy: Path, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`--root` moves every input: a copy whose figure module and palette differ from the project's is built
    with its own, from a working directory elsewhere."""
    module = built_copy / "figures" / "step_shares.py"
    module.write_text(module.read_text().replace("    return figure, data\n",
                                                 "    return figure, data.assign(drawn_by_the_copy=1)\n"))
    palette_yml = built_copy / "figures" / "palette.yml"
    palette_yml.write_text(palette_yml.read_text().replace('hex: "#6c91f0"', 'hex: "#5b84e8"'))  # the trainer
    monkeypatch.chdir(tmp_path)
    assert main(["--root", str(built_copy), "build"]) == 0
    assert "drawn_by_the_copy" in (built_copy / "site" / "figures" / "fig-step-shares.csv").read_text()
    assert "  --role-trainer: #5b84e8;" in (built_copy / "site" / "assets" / "palette.css").read_text()
    images = [path.read_text() for path in (built_copy / "site" / "figures").glob("*.svg")]
    assert any("#5b84e8" in svg for svg in images) and not any("#6c91f0" in svg for svg in images)


# --- read what is needed ------------------------------------------------------------------------------

SKIPPED = ("2 runs validated but not summarised: only the Metrics page reads them, by the facts validation takes "
           "(make check ALL=1 summarises every run)")


def test_check_validates_but_does_not_summarise_the_runs_nothing_reads(project: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from examples._scaled import write_scaled

    write_scaled(project / "runs", 2, 16, workers=1)  # scale-0000, scale-0001: no figure names them
    assert main(["check"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[20] == SKIPPED  # after the 20 runs the figures read, before the figures' lines
    assert [line.split()[0] for line in lines[:20]] == sorted(p.name for p in (project / "runs").iterdir()
                                                              if p.is_dir() and not p.name.startswith("scale-"))
    assert not [entry for entry in (project / "build" / "cache" / "summaries").iterdir()
                if entry.name.startswith("scale-")]
    assert main(["check", "--all"]) == 0  # every run summarised and described; nothing skipped
    lines = capsys.readouterr().out.splitlines()
    assert SKIPPED not in lines and [line.split()[0] for line in lines[20:22]] == ["scale-0000", "scale-0001"]


def test_a_broken_run_nothing_reads_fails_the_check_in_one_line(project: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from examples._scaled import write_scaled

    write_scaled(project / "runs", 2, 16, workers=1)
    run_yaml = project / "runs" / "scale-0001" / "run.yaml"
    run_yaml.write_text(run_yaml.read_text().replace("provenance: example", "provenance: guessed"))
    assert main(["check"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err[err.index("ERROR"):].splitlines()[:2] == [
        "ERROR 1 problem in the run data:",
        "  runs/scale-0001/run.yaml:2: provenance: expected 'measured' or 'example', found 'guessed'"]


def test_skipped_line_counts_the_runs() -> None:
    from build_tools.build import skipped_line

    assert skipped_line(1) == ("1 run validated but not summarised: no figure, check or table reads it (make check "
                               "ALL=1 summarises every run)")
    assert skipped_line(1000, check=False) == ("1000 runs validated but not summarised: no figure, check or table "
                                               "reads them")


def test_the_site_summarises_only_the_runs_a_metrics_row_reads_whole(project: Path) -> None:
    """The rows over every run (`all`: train/entropy_loss all_zero, perf/train_wait_time every_step) read the facts
    validation takes, at a check too; a row that reads whole summaries (a median) summarises its runs."""
    from build_tools.build import _wanted
    from build_tools.checking.blocks import load_tables, read_blocks
    from build_tools.pages import metrics_table

    layout = Layout(project)
    blocks = read_blocks(layout.docs, layout.figures_src)
    benchmark = {"run_id": "scale-0000", "tags": ["benchmark"]}
    tables = load_tables(layout.data)
    named = metrics_table.metrics_named(tables["metrics"])
    assert {"train/entropy_loss", "perf/train_wait_time"} <= set(named)
    wanted = _wanted(layout, blocks, tables)  # a check's and a build's alike: the check computes the page too
    assert not wanted.wants("scale-0000", benchmark) and wanted.metrics == named
    assert wanted.wants("scale-0000", {"tags": ["baseline"]})  # its medians
    spec = project / "docs" / "data" / "metrics.yml"
    spec.write_text(spec.read_text().replace("        runs: before_heat_guard\n        stat: median\n",
                                             "        runs: all\n        stat: median\n", 1))
    tables = load_tables(layout.data)
    assert _wanted(layout, blocks, tables).wants("scale-0000", benchmark)


def test_a_build_reads_the_runs_only_the_metrics_page_reads_by_their_facts(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """After a check, a build summarises no scaled run (only the `all` rows read them, from the facts the check
    took) and says nothing of runs nothing reads: the Metrics page reads them. Its pages are those of a build that
    summarises every run, byte for byte."""
    from build_tools.build import build
    from build_tools.core._settings import Settings
    from examples._scaled import write_scaled

    write_scaled(project / "runs", 2, 16, workers=1)
    assert main(["check"]) == 0
    assert SKIPPED in capsys.readouterr().out.splitlines()
    result = build(project, Settings())
    assert sorted(result.validated) == ["scale-0000", "scale-0001"]
    assert "validated but not summarised" not in capsys.readouterr().err
    assert not [entry for entry in (project / "build" / "cache" / "summaries").iterdir()
                if entry.name.startswith("scale-")]
    pages = {path.name: path.read_bytes() for path in (project / "build" / "docs").glob("*.md")}
    assert b"scale-0001" in pages["index.md"]
    everything = build(project, Settings(all_runs=True))
    assert sorted(everything.summaries)[-2:] == ["scale-0000", "scale-0001"] and not everything.validated
    assert {path.name: path.read_bytes() for path in (project / "build" / "docs").glob("*.md")} == pages


# --- an unchanged check -------------------------------------------------------------------------------

UNCHANGED = "Nothing changed since the last check: its report again (`make clean` checks afresh).\n"


def _checked_by_the_build(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each call of the build's check (whether it summarised every run)."""
    import build_tools.build

    calls: list[bool] = []
    real = build_tools.build.check
    monkeypatch.setattr(build_tools.build, "check", lambda root, settings: calls.append(settings.all_runs) or real(
        root, settings))
    return calls


def test_an_unchanged_check_prints_its_last_report_again(project: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _checked_by_the_build(monkeypatch)
    assert main(["check"]) == 0
    first = capsys.readouterr()
    assert main(["check"]) == 0
    again = capsys.readouterr()
    # The warnings of what Miles would flag (docs/data/miles_guidance.yml, its advisor run) are shown again
    guidance = "".join(line for line in first.err.splitlines(keepends=True) if line.startswith("WARNING"))
    # each whole, as the user reads it: where, what Miles says, and whether to act (test_miles_guidance.py)
    assert guidance == "".join(f"WARNING {warning}\n" for warning in BUILD_WARNINGS)
    assert calls == [False] and again.out == first.out and again.err == guidance + UNCHANGED
    assert main(["check", "--all"]) == 0  # another question: every run summarised
    assert calls == [False, True] and capsys.readouterr().err != UNCHANGED


def test_a_changed_run_or_chapter_is_checked_again(project: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _checked_by_the_build(monkeypatch)
    assert main(["check"]) == 0
    run_yaml = project / "runs" / "nondet-a" / "run.yaml"
    run_yaml.write_text(run_yaml.read_text().replace("title: ", "title: touched, "))
    assert main(["check"]) == 0
    chapter = project / "docs" / "05-heat.md"
    chapter.write_text(chapter.read_text() + "\nOne more sentence.\n")
    assert main(["check"]) == 0
    assert main(["check"]) == 0
    assert calls == [False, False, False] and capsys.readouterr().err.endswith(UNCHANGED)


def test_a_check_with_warnings_is_always_run_again(project: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _checked_by_the_build(monkeypatch)
    metrics = project / "runs" / "nondet-a" / "dashboard" / "metrics.jsonl"
    metrics.write_text(metrics.read_text() + '{"ts": 1')  # a writer mid-append: skipped with a warning
    for _ in range(2):
        assert main(["check"]) == 0
        assert "last line has no newline" in capsys.readouterr().err
    assert calls == [False, False] and not (project / "build" / "check.key").exists()


def test_a_build_forgets_the_last_checks_report(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 0
    assert (project / "build" / "check.key").is_file()
    (project / "docs" / "05-heat.md").write_text("# broken\n\n```figure\nid: nowhere\n```\n")
    assert main(["build"]) != 0
    assert not (project / "build" / "check.key").exists()


def test_an_unchanged_check_imports_nothing_heavy(project: Path) -> None:
    import subprocess
    import sys

    heavy = "('pandas', 'matplotlib', 'pyarrow', 'numpy')"
    code = ("import sys; from build_tools.cli import main; code = main(['check']); "
            f"print(code, sorted(m for m in {heavy} if m in sys.modules))")
    first = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=True)
    done = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=True)
    guidance = "".join(line for line in first.stderr.splitlines(keepends=True) if line.startswith("WARNING"))
    assert done.stdout.splitlines()[-1] == "0 []" and done.stderr == guidance + UNCHANGED


def test_a_replayed_check_imports_neither_rich_nor_yaml(project: Path) -> None:
    """The report and margins as rich wrote them, edition.yml's warn_margin as read, all kept with the record."""
    import subprocess
    import sys

    code = ("import sys; from build_tools.cli import main; code = main(['check']); "
            "print(code, sorted(m for m in ('rich', 'yaml') if m in sys.modules))")
    first = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=True)
    again = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=True)
    assert first.stdout.splitlines()[-1] == "0 ['rich', 'yaml']" and again.stdout.splitlines()[-1] == "0 []"
    guidance = "".join(line for line in first.stderr.splitlines(keepends=True) if line.startswith("WARNING"))
    assert again.stdout.splitlines()[:-1] == first.stdout.splitlines()[:-1] and again.stderr == guidance + UNCHANGED


def is_guidance(line: str) -> bool:
    """A warning of Miles' guidance: it cites Miles' file at its commit, then says whether to act."""
    return re.search(r"\.(py|md)@[0-9a-f]{7,40}\)\. (Nothing to do|To do): ", line) is not None


def test_a_replayed_check_warns_of_the_margins_as_edition_yml_asks(project: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    edition_yml = project / "edition.yml"
    edition_yml.write_text(edition_yml.read_text() + "warn_margin: 0.9\n")
    assert main(["check"]) == 0
    first = capsys.readouterr()
    assert main(["check"]) == 0
    again = capsys.readouterr()
    warned = [line for line in first.err.splitlines(keepends=True) if line.startswith("WARNING")]
    guidance = "".join(line for line in warned if is_guidance(line))  # replayed first, then the margins again
    margins = "".join(line for line in warned if not is_guidance(line))
    assert margins and again.err == guidance + UNCHANGED + margins
    assert again.out == first.out
    assert main(["check", "--strict"]) == 6 and "WARNING" in capsys.readouterr().err  # not replayed: --strict
    edition_yml.write_text(edition_yml.read_text().replace("warn_margin: 0.9", "warn_margin: 0.0001"))
    assert main(["check"]) == 0  # another edition.yml: checked again, the margins judged by the new threshold
    err = capsys.readouterr().err
    assert UNCHANGED not in err and "is below 0.9 " not in err and "is below 0.0001 " in err


@pytest.mark.parametrize("record", ["not json", "[]", '{"report": 1, "rendered": {}, "margin": {}}',
                                    '{"report": "x", "rendered": {"x": 2}, "margin": {}}',
                                    '{"report": "x", "rendered": {}, "margin": {"warn_margin": "0.2"}}'])
def test_a_check_whose_record_is_not_one_is_checked_again(project: Path, capsys: pytest.CaptureFixture[str],
                                                          record: str) -> None:
    assert main(["check"]) == 0
    first = capsys.readouterr()
    (project / "build" / uptodate.CHECK_OUTPUT).write_text(record)
    assert main(["check"]) == 0
    again = capsys.readouterr()
    assert again.out == first.out and UNCHANGED not in again.err


def test_a_replayed_record_writes_no_control_sequence(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A record edited in build/ (its renderings are printed as they are kept) cannot clear or retitle the
    terminal: the replay strips control sequences as a fresh check's printing does."""
    assert main(["check"]) == 0
    first = capsys.readouterr()
    path = project / "build" / uptodate.CHECK_OUTPUT
    record = json.loads(path.read_text())
    record["rendered"] = {text: "\x1b[2J\x1b]0;owned\x07" + shown for text, shown in record["rendered"].items()}
    path.write_text(json.dumps(record))
    assert main(["check"]) == 0
    again = capsys.readouterr()
    guidance = "".join(line for line in first.err.splitlines(keepends=True) if is_guidance(line))
    assert again.err.startswith(guidance + UNCHANGED) and again.out == first.out and "\x1b" not in again.out


def test_the_key_a_check_records_is_that_of_its_inputs_listed_afresh(project: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Made from the listing of runs/ and the input hashes the check took, not from a second walk of every file:
    the same key as a fresh walk gives, with scaled runs, a file and a folder the loader skips beside the runs."""
    from build_tools.core._settings import from_environment
    from examples._scaled import write_scaled

    write_scaled(project / "runs", 2, 16, workers=1)
    (project / "runs" / "__pycache__").mkdir()
    (project / "runs" / "__pycache__" / "x.pyc").write_bytes(b"x")
    walks: list[object] = []
    real = uptodate.scan_runs
    monkeypatch.setattr(uptodate, "scan_runs", lambda *args: walks.append(args) or real(*args))
    assert main(["check"]) == 0
    assert walks == []  # a cold check: no key was compared, and the recorded one was made from the check's walk
    recorded = json.loads((project / "build" / uptodate.CHECK_KEY_FILE).read_text())
    fresh = uptodate._check_key(Layout(project), from_environment(all_runs=False))
    assert walks and recorded["key"] == fresh.hexdigest() and recorded["made_from"] == fresh.made_from
    inputs = uptodate._inputs(Layout(project), from_environment(all_runs=False))
    assert recorded["made_from"]["inputs"] == inputs.hexdigest()
    assert {"runs/__pycache__/", "runs/scale-0001/", "runs/README.md"} <= inputs.made_from.keys()


def _keep_times_rewrite(path: Path) -> None:
    before = path.stat()
    data = path.read_bytes()
    path.write_bytes(data.replace(b"title: ", b"title= ", 1) if b"title: " in data else data[:-1] + b" ")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def _to_link(path: Path) -> None:
    keep = path.parent.parent / f"{path.name}.keep"
    path.rename(keep)
    path.symlink_to(Path("..") / keep.name)


CHANGES: dict[str, Callable[[Path], object]] = {
    "content (size and mtime kept)": _keep_times_rewrite,
    "size": lambda path: path.write_bytes(path.read_bytes() + b"\n"),
    "a new file": lambda path: (path.parent / "notes.txt").write_text("n"),
    "a deleted file": lambda path: path.unlink(),
    "a file replaced by a link": _to_link,
    "a file replaced by a FIFO": lambda path: (path.unlink(), os.mkfifo(path)),
}


def test_any_change_to_a_runs_file_makes_the_check_read_again(project: Path, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay's key lists every file of runs/: whatever changed, the check reads again (and says so, or fails);
    a file whose mtime alone changed is read again, and its run's report replayed (its bytes are the same)."""
    from build_tools.store import fingerprint
    from tests.conftest import ROOT

    run = project / "runs" / "nondet-a"
    assert main(["check"]) == 0
    for what, change in CHANGES.items():
        for name in ("run.yaml", "dashboard/metrics.jsonl"):
            capsys.readouterr()
            change(run / name)
            main(["check"])
            assert UNCHANGED not in capsys.readouterr().err, (what, name)
            shutil.rmtree(run)
            for keep in run.parent.glob("*.keep"):
                keep.unlink()
            shutil.copytree(ROOT / "runs" / "nondet-a", run)
            assert main(["check"]) == 0
    hashed: list[Path] = []
    real = fingerprint._content_digest
    monkeypatch.setattr(fingerprint, "_content_digest", lambda path, size: hashed.append(path) or real(path, size))
    path = run / "dashboard" / "metrics.jsonl"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert main(["check"]) == 0
    assert capsys.readouterr().err.endswith(UNCHANGED) and path in hashed


def test_a_run_changed_while_the_check_ran_is_checked_again(project: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The check is remembered under the key of its inputs as they were before it ran, not as they are after."""
    import build_tools.build

    assert main(["check"]) == 0
    chapter = project / "docs" / "05-heat.md"
    chapter.write_text(chapter.read_text() + "\nOne more sentence.\n")  # the next check runs again
    real = build_tools.build.check
    run_yaml = project / "runs" / "nondet-a" / "run.yaml"

    def check_then_change_a_run(root: Path, settings: object) -> object:
        result = real(root, settings)  # type: ignore[arg-type]
        run_yaml.write_text(run_yaml.read_text().replace("title: ", "title: changed meanwhile, "))
        return result

    monkeypatch.setattr(build_tools.build, "check", check_then_change_a_run)
    assert main(["check"]) == 0
    monkeypatch.setattr(build_tools.build, "check", real)
    capsys.readouterr()
    assert main(["check"]) == 0
    assert capsys.readouterr().err != UNCHANGED  # read again: the report it kept was of the run before the change


# --- one verdict: what the build finds wrong in the data, the check finds -----------------------------------------

# Every sample of broken (and odd but good) runs: each folder's runs are added to the project in turn.
RUN_SAMPLES = sorted(f"{kind}/{path.name}" for kind in ("hostile", "load") for path in (SAMPLES / kind).iterdir()
                     if path.is_dir())


@pytest.fixture(scope="module")
def verdict_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the manual, built once (its figures cached), whose Miles commit predates the sample runs
    (2026-09-21): each scenario adds its run, checks, builds, and takes the run out again."""
    root = copy_project(tmp_path_factory.mktemp("verdict"))
    edition = root / "edition.yml"
    edition.write_text(edition.read_text().replace("commit_date: 2026-10-15", "commit_date: 2026-09-15"))
    for run_yaml in (root / "runs").glob("*/run.yaml"):
        run_yaml.write_text(run_yaml.read_text().replace("commit_date: 2026-10-15", "commit_date: 2026-09-15"))
    assert main(["--root", str(root), "build"]) == 0
    return root


def _verdicts(root: Path, capsys: pytest.CaptureFixture[str]) -> list[tuple[int, list[str]]]:
    """The exit code and the problem lines (the error and its hint: what follows the progress) of a check, then
    of a build, of root (the current folder: files are named as from there)."""
    assert Path.cwd() == root
    verdicts = []
    for command in ("check", "build"):
        capsys.readouterr()
        code = main(["--root", str(root), command])
        err = capsys.readouterr().err
        verdicts.append((code, err[err.index("ERROR"):].splitlines() if "ERROR" in err else []))
    return verdicts


@pytest.mark.parametrize("sample", RUN_SAMPLES)
def test_check_and_build_give_one_verdict_on_each_sample_run(sample: str, verdict_project: Path,
                                                             capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The same exit code and the same problem lines; for a hostile sample, the lines its expected.txt holds."""
    monkeypatch.chdir(verdict_project)
    runs = [path for path in (SAMPLES / sample).iterdir() if path.is_dir()]
    for run in runs:
        shutil.copytree(run, verdict_project / "runs" / run.name)
    try:
        (check, build_verdict) = _verdicts(verdict_project, capsys)
    finally:
        for run in runs:
            shutil.rmtree(verdict_project / "runs" / run.name)
    assert check == build_verdict
    expected_file = SAMPLES / sample / "expected.txt"
    if expected_file.is_file():
        expected = expected_file.read_text(encoding="utf-8").splitlines()
        assert check[0] == (EXIT_BAD_INPUT if expected else 0)
        assert [line.strip().removeprefix("runs/") for line in check[1][1:1 + len(expected)]] == expected
    else:  # load/good loads; every other sample of load/ is broken
        assert check[0] == (0 if sample == "load/good" else EXIT_BAD_INPUT)


def test_a_run_that_joins_a_one_run_set_fails_the_check_as_the_build(verdict_project: Path,
                                                                    capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A second baseline run made before the heat guard (make add-run's advice once led there): the Metrics page's
    medians read exactly one run. The check finds it, as the build does, in the same lines, naming the run."""
    monkeypatch.chdir(verdict_project)
    added = verdict_project / "runs" / "baseline-seed9"
    shutil.copytree(verdict_project / "runs" / "baseline-seed1", added)
    for name in ("run.yaml", "dashboard/meta.json"):
        (added / name).write_text((added / name).read_text().replace("baseline-seed1", "baseline-seed9"))
    try:
        (check, build_verdict) = _verdicts(verdict_project, capsys)
    finally:
        shutil.rmtree(added)
    assert check == build_verdict
    assert check[0] == EXIT_BAD_INPUT
    assert check[1][:2] + check[1][-2:-1] == [
        "ERROR 7 problems in the Metrics page spec:",
        "  docs/data/metrics.yml: tables[2].rows[0]: perf/step_time: run set 'before_heat_guard' matches 2 runs "
        "(baseline-seed1, baseline-seed9); this statistic reads exactly one run",
        "  runs/baseline-seed9/run.yaml: joins run set 'before_heat_guard' of docs/data/metrics.yml, which "
        "baseline-seed1 is already in, and 6 rows (perf/step_time, perf/rollout_time, perf/log_probs_time, "
        "perf/train_time, perf/sleep_time, perf/wake_up_time) read exactly one run of it; this run.yaml changed last: "
        "change its tags (or the fields the run set names), or give those rows a run set of their own"]
