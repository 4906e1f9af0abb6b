"""Miles' guidance (docs/data/miles_guidance.yml, build_tools/checking/miles_guidance.py): read again from Miles'
own files, set against the Metrics page's rows and the claims; each row past a line is a warning and a note
citing it."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from build_tools import miles_code
from build_tools.checking import miles_guidance
from build_tools.checking.blocks import load_tables, read_blocks
from build_tools.core._exceptions import ManualError
from build_tools.pages._common import environment
from build_tools.pages.metrics import render_metrics
from build_tools.pages.metrics_table import load_spec
from tests.conftest import ROOT, SAMPLES
from tests.page_text import CHAPTERS, METRICS_SEED, SPEC, markdown_tables, seed_tables

GUIDANCE = ROOT / "docs" / "data" / "miles_guidance.yml"
MILES = SAMPLES / "miles"  # advisory.py and monitoring.md of Miles at 31f1ca961


def checkout(folder: Path) -> Path:
    """The two files laid out as in a Miles work tree."""
    (folder / "miles" / "dashboard").mkdir(parents=True)
    (folder / "docs" / "user-guide").mkdir(parents=True)
    shutil.copy(MILES / "advisory.py.txt", folder / "miles" / "dashboard" / "advisory.py")
    shutil.copy(MILES / "monitoring.md", folder / "docs" / "user-guide" / "monitoring.md")
    return folder


def test_refreshing_from_miles_at_the_pinned_commit_gives_the_file_as_kept(tmp_path: Path) -> None:
    kept = tmp_path / "miles_guidance.yml"
    shutil.copy(GUIDANCE, kept)
    assert miles_guidance.refresh(checkout(tmp_path / "miles"), kept) == []
    assert kept.read_bytes() == GUIDANCE.read_bytes()


def test_a_changed_threshold_or_row_of_miles_is_taken_and_said(tmp_path: Path) -> None:
    miles = checkout(tmp_path / "miles")
    advisory = miles / "miles" / "dashboard" / "advisory.py"
    advisory.write_text(advisory.read_text().replace("TRUNCATED_FRAC_WARN = 0.25", "TRUNCATED_FRAC_WARN = 0.3"))
    page = miles / "docs" / "user-guide" / "monitoring.md"
    page.write_text(page.read_text().replace("| `train/pg_clipfrac` | < 0.2 |", "| `train/pg_clipfrac` | < 0.15 |"))
    kept = tmp_path / "miles_guidance.yml"
    shutil.copy(GUIDANCE, kept)
    assert miles_guidance.refresh(miles, kept) == [
        "pg_clipfrac: threshold 0.2 -> 0.15",
        "pg_clipfrac: quote '`train/pg_clipfrac` | < 0.2 | > 0.5 means policy is moving fast → drop LR' -> "
        "'`train/pg_clipfrac` | < 0.15 | > 0.5 means policy is moving fast → drop LR'",
        "truncated_share: threshold 0.25 -> 0.3"]
    rules = {rule.metric: rule for rule in miles_guidance.rules_of(load_tables(tmp_path)["miles_guidance"])}
    assert (rules["train/pg_clipfrac"].threshold, rules["rollout/truncated"].threshold) == (0.15, 0.3)


def test_the_advisor_thresholds_are_read_without_running_it() -> None:
    constants = miles_guidance.advisor_constants((MILES / "advisory.py.txt").read_text())
    assert {name: constants[name] for name in ("ZERO_STD_FRAC_WARN", "TRUNCATED_FRAC_WARN", "DEFAULT_LOW_MFU",
                                               "KV_BOUND_TOKEN_USAGE")} == {
        "ZERO_STD_FRAC_WARN": 0.5, "TRUNCATED_FRAC_WARN": 0.25, "DEFAULT_LOW_MFU": 0.15, "KV_BOUND_TOKEN_USAGE": 0.9}


def test_a_folder_that_is_no_checkout_is_refused_in_one_line(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert miles_guidance.main([str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err == (f"ERROR MILES={tmp_path / 'nowhere'}: not a folder: expected the path of a "
                                       "Miles checkout (a git work tree or git folder, or a copy with its commit in a "
                                       "COMMIT file), e.g. make miles-guidance MILES=../miles\n")


def rules() -> list[miles_guidance.Rule]:
    return miles_guidance.rules_of(load_tables(ROOT / "docs" / "data")["miles_guidance"])


RUNS = ROOT / "runs"
TRUNCATED_SAID = (
    "Miles' advisor, run over each run as it was written, warns after rollouts 0 to 7 of baseline-seed1, "
    "baseline-seed2 and baseline-seed3, never after: first \"42% of samples in rollout 0 are truncated — check "
    "--rollout-max-response-len (1024): in multi-turn agentic runs the per-turn cap is usually the binding limit, not "
    "the context length\" (baseline-seed1), last \"27% of samples in rollout 7 are truncated — check "
    "--rollout-max-response-len (1024): in multi-turn agentic runs the per-turn cap is usually the binding limit, not "
    "the context length\" (baseline-seed3)")
GRAD_SAID = (
    "train/grad_norm is at or over 1.0 at 23 of 48 steps of baseline-seed1 (7 in a row at most), 22 of 48 steps of "
    "baseline-seed2 (4 in a row at most) and 16 of 48 steps of baseline-seed3 (4 in a row at most), up to 4.95: what "
    "Miles' Monitoring page calls unhealthy (\"`grad_norm` | < `clip_grad` (1.0 by default) | Repeatedly hitting "
    "clip threshold\")")


# What each warning adds: whether the author must act, and what a reader whose runs do this would change.
SHOWN = ("Nothing to do: this is Miles' advice on the runs, not a fault of the {what} (its numbers are measured), and "
         "the Metrics page shows it under its table \"{title}\"{row}, so the reader sees both. ")
TRUNCATED_CHANGE = ("A reader whose runs do this would change what Miles names: --rollout-max-response-len, which its "
                    "message says to check (in multi-turn agentic runs, the per-turn cap).")
GRAD_CHANGE = "A reader whose runs do this: Miles names no change for it, only the red flag."


def test_each_metrics_row_and_claim_miles_would_flag_is_named_with_its_steps_and_words(
        example_summaries: dict) -> None:
    """The three warnings a build of the manual prints, whole: where, what Miles says, and whether to act (nothing:
    the Metrics page shows each under its table, the claim's under the row of its metric) with what Miles names."""
    found = miles_guidance.of_metrics_rows(load_spec(SPEC), example_summaries, rules(), RUNS)
    blocks = read_blocks(ROOT / "docs", ROOT / "figures")
    found += miles_guidance.of_claims(blocks, example_summaries, rules(), RUNS, rows=list(found))
    assert [d.warning() for d in found] == BUILD_WARNINGS


# The warnings a build or check of the manual prints (after "WARNING "), whole (test_build sees them printed).
BUILD_WARNINGS = [
    f"docs/data/metrics.yml tables[0].rows[2]: {TRUNCATED_SAID} (miles/dashboard/advisory.py@31f1ca961). "
    + SHOWN.format(what="manual", title="Rollout", row="") + TRUNCATED_CHANGE,
    f"docs/data/metrics.yml tables[1].rows[2]: {GRAD_SAID} (docs/user-guide/monitoring.md@31f1ca961). "
    + SHOWN.format(what="manual", title="Training", row="") + GRAD_CHANGE,
    "docs/01-step.md:112 figure 1.5 checks[1] ('fewer answers hit the 1,024-token cap'): "
    f"{TRUNCATED_SAID} (miles/dashboard/advisory.py@31f1ca961). "
    + SHOWN.format(what="claim", title="Rollout", row=" (docs/data/metrics.yml tables[0].rows[2])")
    + TRUNCATED_CHANGE]


def test_a_claim_no_page_shows_the_advice_of_says_what_to_add(example_summaries: dict) -> None:
    """Without a Metrics row over its runs (the spec's row reads other runs, or there is none), the claim's warning
    says the reader is not told, and where to tell them."""
    blocks = read_blocks(ROOT / "docs", ROOT / "figures")
    rows = miles_guidance.of_metrics_rows(load_spec(SPEC), example_summaries, rules(), RUNS)
    elsewhere = [dataclasses.replace(row, runs=("baseline-seed1",)) for row in rows]  # not all the claim's runs
    for given in ([], elsewhere):
        found = miles_guidance.of_claims(blocks, example_summaries, rules(), RUNS, rows=given)
        assert [d.warning().split("@31f1ca961). ", 1)[1] for d in found] == [
            "To do: no page shows the reader this advice; add a row for rollout/truncated over these runs to "
            "docs/data/metrics.yml (the Metrics page then shows it under the row's table), or say it beside figure 1.5 "
            "in docs/01-step.md. " + TRUNCATED_CHANGE]


def test_each_rule_that_can_fire_says_what_miles_names_to_change_or_that_it_names_none() -> None:
    """Every rule of the yml: its `change` in the warning's sentence for a reader, or, empty, that Miles names none."""
    said = {rule.id: miles_guidance._for_a_reader(rule) for rule in rules()}
    assert said["grad_norm"] == GRAD_CHANGE and said["truncated_share"] == TRUNCATED_CHANGE
    assert said["pg_clipfrac"] == ("A reader whose runs do this would change what Miles names: the learning rate "
                                   "(--lr): \"> 0.5 means policy is moving fast → drop LR\", its Monitoring page says.")
    assert [rule.id for rule in rules() if not rule.change] == ["grad_norm"]  # the one rule Miles names no change for


def test_miles_advisor_speaks_after_each_rollout_at_or_over_its_line_and_not_of_a_run_under_it() -> None:
    """Miles' own advisor, followed over the dump as it was written: after rollouts 0 to 7 of baseline-seed1 (the
    truncated share still 0.25 or more), silent after; silent over the whole of a 4B run (under 0.25 throughout)."""
    followed = miles_guidance.follow({"baseline-seed1": RUNS / "baseline-seed1" / "dashboard",
                                      "qwen3-4b-a": RUNS / "qwen3-4b-a" / "dashboard"},
                                     ["rollout/truncated"], "rollout/truncated")
    seed1 = followed["baseline-seed1"]
    spoke = [step for step, said in seed1.said if said]
    assert spoke == list(range(8)) and seed1.last_rollout == 47 and len(seed1.said) == 49  # 48 rollouts, the end
    shares = dict(seed1.series["rollout/truncated"])
    assert min(shares[step] for step in spoke) >= 0.25 > max(shares[step] for step in range(8, 48))
    assert seed1.said[7][1] == ("26% of samples in rollout 7 are truncated — check --rollout-max-response-len (1024): "
                                "in multi-turn agentic runs the per-turn cap is usually the binding limit, not the "
                                "context length",)
    assert not any(said for _, said in followed["qwen3-4b-a"].said)


def test_a_line_reached_at_single_steps_is_not_repeatedly() -> None:
    rule = next(rule for rule in rules() if rule.id == "grad_norm")
    once = miles_guidance.Followed((), {"train/grad_norm": ((0, 1.2), (1, 0.4), (2, 1.0), (3, 0.9))}, 3)
    twice = miles_guidance.Followed((), {"train/grad_norm": ((0, 0.2), (1, 1.0), (2, 1.5), (3, 0.9))}, 3)
    assert miles_guidance._text(rule, {"run-a": once}, 2) is None
    assert miles_guidance._text(rule, {"run-a": twice}, 2) == (
        "train/grad_norm is at or over 1.0 at 2 of 4 steps of run-a (2 in a row at most), up to 1.50: what Miles' "
        "Monitoring page calls unhealthy (\"`grad_norm` | < `clip_grad` (1.0 by default) | Repeatedly hitting clip "
        "threshold\")")


def test_much_below_is_read_as_a_tenth_of_the_line() -> None:
    rule = next(rule for rule in rules() if rule.id == "train_rollout_logprob_abs_diff")
    small = miles_guidance.Followed((), {rule.metric: ((0, 0.015), (1, 0.099))}, 1)
    close = miles_guidance.Followed((), {rule.metric: ((0, 0.015), (1, 0.4))}, 1)
    assert miles_guidance._text(rule, {"run-a": small}, None) is None
    assert miles_guidance._text(rule, {"run-a": close}, None) == (
        "train/train_rollout_logprob_abs_diff should stay ≪ 1.0, read as under 0.1 "
        "(\"`train_rollout_logprob_abs_diff` | Stable and small (≪ 1.0) | Climbing without bound → train/inference "
        "precision drift\"); it reaches 0.4, at "
        "step 1 of run-a")


def test_the_metrics_page_cites_miles_under_the_seeds_tables_kept_word_for_word(example_summaries: dict) -> None:
    guidance = load_tables(ROOT / "docs" / "data")["miles_guidance"]
    page = render_metrics(environment(ROOT / "templates"), load_spec(SPEC), "docs/data/metrics.yml",
                          example_summaries, CHAPTERS, RUNS, guidance=guidance)
    for title, rows in seed_tables(METRICS_SEED).items():
        assert markdown_tables(page)[title] == rows
    notes = [line for line in page.splitlines() if line.startswith("    ") and "(miles/dashboard" in line
             or "(docs/user-guide" in line]
    assert notes[:2] == [
        "    " + TRUNCATED_SAID.replace('"', "&quot;") + " (miles/dashboard/advisory.py@31f1ca961).",
        "    " + GRAD_SAID.replace('"', "&quot;").replace("_", "\\_").replace("`", "\\`").replace("|", "\\|")
        .replace("<", "&lt;") + " (docs/user-guide/monitoring.md@31f1ca961)."]
    assert page.count("!!! note \"Miles' guidance\"") == 2
    cannot = page.split("!!! note \"Miles' guidance these runs cannot be judged by\"", 1)[1]
    assert [line.split(" also ", 1)[1].split(" (", 1)[0].split(";")[0] for line in cannot.splitlines()
            if line.startswith("    ")] == [
        "warns when half the groups of the newest rollout or more have rewards that all agree",
        "warns of a low model FLOPs utilisation",
        "judges the KV pool: a warning when the mean token usage is high while the running requests stay far under "
        "--sglang-max-running-requests"]
    assert "on a DGX Spark Miles never logs it: its table of peak FLOPs (miles/utils/device\\_flops.py) has no GB10" \
        in cannot


def test_the_advisors_kept_answer_is_keyed_by_the_dumps_content(tmp_path: Path) -> None:
    """An edit that keeps a file's time stamp (or touches meta.json, which the advisor reads) is another key: the
    answer kept for one dump is never served for another."""
    import os

    from build_tools.checking.miles_guidance import _dump_key

    dump = tmp_path / "dashboard"
    dump.mkdir()
    (dump / "metrics.jsonl").write_text('{"step": 0}\n', encoding="utf-8")
    (dump / "meta.json").write_text("{}", encoding="utf-8")
    def key() -> tuple[object, ...]:
        return _dump_key("r", dump, ["rollout/truncated"], "rollout/truncated")

    before = key()
    stamp = (dump / "metrics.jsonl").stat().st_mtime_ns
    (dump / "metrics.jsonl").write_text('{"step": 1}\n', encoding="utf-8")
    os.utime(dump / "metrics.jsonl", ns=(stamp, stamp))
    assert key() != before
    (dump / "metrics.jsonl").write_text('{"step": 0}\n', encoding="utf-8")
    assert key() == before
    (dump / "meta.json").write_text('{"args": {}}', encoding="utf-8")
    assert key() != before


def test_the_dump_walk_finds_what_rglob_finds(tmp_path: Path) -> None:
    """The advisor's key walks a dump with os.scandir (the fast path); it lists the same files, in the same order,
    as Path.rglob (the slow path it replaced): on every example run's dump, and on one with nested folders, a
    link to a file (followed) and a link to a folder (not entered)."""
    from build_tools.checking.miles_guidance import _dump_files

    def by_rglob(folder: Path) -> list[str]:
        return [str(f.relative_to(folder)) for f in sorted(folder.rglob("*")) if f.is_file()]

    dump = tmp_path / "dashboard"
    (dump / "lanes" / "deep").mkdir(parents=True)
    for name in ("meta.json", "a.jsonl", "lanes/z.jsonl.gz", "lanes/deep/b.jsonl", "lanes-file"):
        (dump / name).write_text(name, encoding="utf-8")
    (dump / "linked.jsonl").symlink_to(dump / "a.jsonl")
    (dump / "folder-link").symlink_to(dump / "lanes", target_is_directory=True)
    folders = [dump, *(path / "dashboard" for path in sorted(RUNS.iterdir()) if (path / "dashboard").is_dir())]
    assert len(folders) > 10
    for folder in folders:
        assert [name for name, _, _ in _dump_files(str(folder))[0]] == by_rglob(folder), folder
    assert "linked.jsonl" in by_rglob(dump) and "folder-link/z.jsonl.gz" not in by_rglob(dump)


def test_a_dump_kept_by_its_runs_input_hash_is_walked_again_when_anything_could_differ(tmp_path: Path) -> None:
    """A rebuild takes an unchanged dump's files by its run's input hash and its folders' stats (the fast path);
    the key is the walk's (the slow path) on every example dump, and again after each change that could hide
    behind the same hash: a file written (a new hash), a link added (not hashed: its folder's stats change), and
    a dump holding a link, walked every time."""
    from build_tools.checking import miles_guidance as guidance

    def key(folder: Path, digest: str | None) -> tuple[object, ...]:
        return guidance._dump_key("r", folder, ["rollout/truncated"], "rollout/truncated", digest)

    for path in sorted(RUNS.iterdir()):
        if (path / "dashboard").is_dir():
            assert key(path / "dashboard", "held") == key(path / "dashboard", "held") == key(path / "dashboard", None)
    dump = tmp_path / "dashboard"
    (dump / "lanes").mkdir(parents=True)
    (dump / "meta.json").write_text("{}", encoding="utf-8")
    (dump / "lanes" / "a.jsonl").write_text('{"step": 0}\n', encoding="utf-8")
    first = key(dump, "hash-1")
    assert guidance._DUMP_FILES[str(dump)][0] == "hash-1"
    (dump / "lanes" / "a.jsonl").write_text('{"step": 1}\n', encoding="utf-8")
    assert key(dump, "hash-2") == key(dump, None) != first
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text('{"step": 5}\n', encoding="utf-8")
    (dump / "lanes" / "linked.jsonl").symlink_to(outside)
    linked = key(dump, "hash-2")  # the same hash: the link is no plain file of the run
    assert linked == key(dump, None) and "lanes/linked.jsonl" in dict(linked[2])
    outside.write_text('{"step": 6}\n', encoding="utf-8")
    assert key(dump, "hash-2") == key(dump, None) != linked  # a dump with a link is walked every time


def test_miles_process_is_asked_once_about_each_run_and_its_kept_answers_are_its_fresh_ones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Callers asking about overlapping runs (each Metrics row's, then all of them) send Miles' process only the
    runs it has no answer for; what is kept equals what a fresh process answers for the same dumps."""
    dumps = {path.name: path / "dashboard" for path in sorted(RUNS.iterdir())
             if (path / "dashboard" / "meta.json").is_file()}
    first, second = dict(list(dumps.items())[:2]), dict(list(dumps.items())[1:4])
    metrics = ["rollout/truncated"]
    asked: list[list[str]] = []
    real = miles_guidance.follow_dumps

    def counted(requests: list[dict[str, object]]) -> dict[str, object]:
        asked.append([str(request["run_id"]) for request in requests])
        return real(requests)

    monkeypatch.setattr(miles_guidance, "_FOLLOWED", {})
    monkeypatch.setattr(miles_guidance, "follow_dumps", counted)
    kept = {**miles_guidance.follow(first, metrics, "rollout/truncated"),
            **miles_guidance.follow(second, metrics, "rollout/truncated")}
    assert miles_guidance.follow(second, metrics, "rollout/truncated") == {run: kept[run] for run in second}
    assert asked == [sorted(first), sorted(set(second) - set(first))]  # then nothing: every answer kept
    monkeypatch.setattr(miles_guidance, "_FOLLOWED", {})
    fresh = miles_guidance.follow({**first, **second}, metrics, "rollout/truncated")
    assert fresh == kept and any(seen.said for seen in fresh.values())


def test_answers_kept_in_build_cache_serve_the_next_build_and_a_broken_entry_is_asked_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build keeps Miles' answers in build/cache (by each dump's content and Miles' code): the next process asks
    Miles nothing and reads the same answers; an entry not of an answer's shape, or a file that is no JSON, is asked
    again, never trusted."""
    import json

    dumps = {path.name: path / "dashboard" for path in sorted(RUNS.iterdir())
             if (path / "dashboard" / "meta.json").is_file()}
    dumps = dict(list(dumps.items())[:2])
    cache = tmp_path / "cache" / miles_guidance.ANSWERS
    monkeypatch.setattr(miles_guidance, "_FOLLOWED", {})
    fresh = miles_guidance.follow(dumps, ["rollout/truncated"], "rollout/truncated", cache)
    assert len(json.loads(cache.read_text(encoding="utf-8"))) == len(dumps)
    asked: list[list[str]] = []
    real = miles_guidance.follow_dumps

    def counted(requests: list[dict[str, object]]) -> dict[str, object]:
        asked.append([str(request["run_id"]) for request in requests])
        return real(requests)

    monkeypatch.setattr(miles_guidance, "follow_dumps", counted)
    monkeypatch.setattr(miles_guidance, "_FOLLOWED", {})  # a new process
    assert miles_guidance.follow(dumps, ["rollout/truncated"], "rollout/truncated", cache) == fresh
    assert asked == []
    kept = json.loads(cache.read_text(encoding="utf-8"))
    first = sorted(kept)[0]
    kept[first] = {"said": [{"step": "0", "advisories": [{"message": 1}]}], "series": {}}
    cache.write_text(json.dumps(kept), encoding="utf-8")
    monkeypatch.setattr(miles_guidance, "_FOLLOWED", {})
    assert miles_guidance.follow(dumps, ["rollout/truncated"], "rollout/truncated", cache) == fresh
    assert len(asked) == 1 and len(asked[0]) == 1  # the broken entry's run, asked again
    cache.write_text("{not json", encoding="utf-8")
    monkeypatch.setattr(miles_guidance, "_FOLLOWED", {})
    assert miles_guidance.follow(dumps, ["rollout/truncated"], "rollout/truncated", cache) == fresh
    assert asked[1] == sorted(dumps)


# --- when Miles' process ends without an answer -------------------------------------------------------------------


def test_a_file_the_advisor_cannot_read_is_the_machines_one_line(tmp_path: Path) -> None:
    """An OSError in Miles' process (here a dump whose meta.json went away after the loader read it): the user's to
    fix, one line and a hint, exit 2; never the traceback of a bug."""
    dump = tmp_path / "dashboard"
    dump.mkdir()
    with pytest.raises(ManualError) as stopped:
        miles_guidance.follow({"gone": dump}, ["rollout/truncated"], "rollout/truncated")
    assert str(stopped.value) == (
        "Miles' own code stopped (build_tools/miles_code/run.py, task advise): FileNotFoundError: "
        f"[Errno 2] No such file or directory: '{dump / 'meta.json'}'")
    assert stopped.value.hint.startswith("free memory or room in TMPDIR")
    assert stopped.value.exit_code == 2


@pytest.mark.parametrize(("script", "said"), [
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "killed by SIGKILL"),  # as the OOM killer does
    ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", "killed by SIGTERM")])
def test_the_advisor_killed_by_a_signal_is_the_machines_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 script: str, said: str) -> None:
    (tmp_path / "run.py").write_text(script, encoding="utf-8")
    monkeypatch.setattr(miles_code, "RUN", tmp_path / "run.py")
    with pytest.raises(ManualError, match=f"run.py, task advise\\): {said}$"):
        miles_guidance.follow({"r": tmp_path}, ["a/b"], "a/b")


def test_the_advisor_failing_otherwise_is_a_bug(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Miles' pinned code failing on a dump the loader accepted, or a stand-in it lacks: the harness's fault, exit 1
    with its traceback."""
    (tmp_path / "run.py").write_text("raise KeyError('a stand-in lacks this')", encoding="utf-8")
    monkeypatch.setattr(miles_code, "RUN", tmp_path / "run.py")
    with pytest.raises(RuntimeError, match="(?s)run.py advise failed \\(1\\):\n.*KeyError: 'a stand-in lacks this'"):
        miles_guidance.follow({"r": tmp_path}, ["a/b"], "a/b")


def test_every_task_of_miles_process_is_one_run_py_serves() -> None:
    """Miles' code runs through one door (run.py's TASKS): the advisor and the dashboard writer are tasks there, not
    scripts of their own reading a request on stdin, and every task asked for (the doors of __init__.py,
    refresh.py's) is in the table."""
    import ast

    from build_tools.miles_code import run

    folder = ROOT / "build_tools" / "miles_code"
    asked = {value.value for path in folder.glob("*.py") if path.name != "run.py"
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(node, ast.Dict)
             for key, value in zip(node.keys, node.values, strict=True)
             if isinstance(key, ast.Constant) and key.value == "task" and isinstance(value, ast.Constant)}
    assert asked == set(run.TASKS) >= {"advise", "write_dump"}
    scripts = {path.name for path in folder.glob("*.py") if "sys.stdin" in path.read_text(encoding="utf-8")}
    assert scripts == {"run.py"}


def test_manual_check_with_miles_process_killed_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """What the user sees when the machine kills Miles' process mid-check: the ERROR line and its hint, exit 2."""
    from build_tools import cli
    from tests.conftest import copy_project

    (tmp_path / "run.py").write_text("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", encoding="utf-8")
    monkeypatch.setattr(miles_code, "RUN", tmp_path / "run.py")
    root = copy_project(tmp_path / "project")
    assert cli.main(["--root", str(root), "check"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-2:] == [
        "ERROR Miles' own code stopped (build_tools/miles_code/run.py, task advise): killed by SIGKILL",
        "hint: free memory or room in TMPDIR (Miles' advisor replays each dump into a scratch folder there) and check "
        "that the runs' files are readable, then run again"]
